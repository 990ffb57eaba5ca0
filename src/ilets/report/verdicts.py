"""Verdicts on the paper's claims: reproduced, partly, not reproduced, with the evidence.

Each of the paper's eight claims (its abstract and results, as the book's summary chapter
quotes them; :data:`CLAIMS`) is broken into
**components**: one comparison of a method ``a`` against a method ``b`` on one measure, e.g.
"DRL+ vs DRL, average response time". A component's **effect** at one scale (fleet size)
is the relative improvement of ``a`` over ``b`` in percent, signed so that **positive means
the way the paper claims** (``a`` better), exactly :func:`ilets.report.stats.improvement_table`:
``(b - a) / |b|`` of the seed means for lower-is-better measures, ``(a - b) / |b|`` for
higher-is-better ones. Its 95 % CI is that function's percentile bootstrap, **paired** by
seed (a seed fixes the workload for every method, so the seeds both methods have are
resampled jointly, as :func:`ilets.report.stats.compare` does by default); the **pooled** effect
is the unweighted mean of the per-scale effects over the scales where both methods have
results, with its CI from the same resamples. The direction of every measure is given to
that function explicitly, so convergence decisions and oscillation (lower is better) get
exactly ``(b - a) / |b|``. The resampler is the study's one (:func:`ilets.report.stats.seed_effect`):
a chapter's :func:`ilets.report.stats.compare` of the same pair, measure and seed gives the same
interval and per-scale verdict.

The rule
--------
At one scale a component is **resolved for** the claim if its effect and the lower end of
its 95 % CI are above zero, **resolved against** it (a significant reversal) if the upper
end is below zero; either needs at least two seeds for each method there (one seed gives no
interval). A component

* **reverses** if it is resolved against the claim at any scale, whatever the others say;
* otherwise **holds** if it is resolved for the claim at every scale, **holds pooled** if
  not, but every scale's effect is positive and the CI of the pooled effect is above zero,
  and **holds at some sizes** if neither, but it is resolved for the claim at some scale;
* otherwise points the claimed way at every scale (**direction only**) or not (**fails**).

A claim is

* ``"reproduced"``: every component holds;
* ``"partly"``: not that, at least one component holds or holds pooled, **and no component
  of the claim reverses at any scale** (a "partly" never rests on one measure while a
  sibling measure goes significantly the other way). "Holds at some sizes" does not count:
  one interval above zero among unresolved ones is what noise alone gives often enough;
* ``"not reproduced"``: otherwise (a component reverses, or none is resolved for the claim);
* ``"not testable"``: no component could be computed (a method, the curves, the reference
  heuristic or the workload event the claim needs is missing, or the reference itself does
  not settle, for claim 5), **or some could not**: a claim is judged whole, never on the
  comparisons a partial grid happens to hold (a per-server grid with DRL and DRL+ only would
  otherwise "reproduce" the cold-start claim on one of its four comparisons). The evidence
  names how many comparisons are missing and shows the measured ones.
  :func:`variant_verdicts` judges on the comparisons both of its sides hold, by design.

A component whose point estimate is positive but whose CIs include zero (per scale and
pooled) does not count towards "partly": with few seeds an effect of +0.1 % is as likely as
-0.1 %, and calling it part of a reproduction would be reading noise.

**Pooling.** The pooled effect is reported only when the effects at every scale have the
same sign; effects of opposite sign are reported per scale, never averaged into one number
(an average of +14.6 % and -36.4 % describes no fleet). "Holds pooled" needs the same sign.

The **magnitude** is not part of the verdict: where the paper gives numbers (claims 1 and 2,
:func:`paper_figure`) the evidence and the chapters' component tables set the paper's figure
beside our effect and say whether it lies inside our CI (the pooled one, or each scale's).
With 2-10 seeds the bootstrap CIs under-cover (see :mod:`ilets.report.stats`) and every cell
shares one fleet draw and one event schedule, so "resolved" is a descriptive threshold, not a
test at the 5 % level.

Families
--------
Every claim function takes a metrics or curves table; :func:`all_verdicts` records which
learner family's cells it was given (``family``, :data:`FAMILY_LABELS`), so the authors'
flat learner and the per-server learner are judged by the same code.

How the curve-based claims are measured (defaults; every one is a keyword argument)
--------------------------------------------------------------------------------------
* Claim 4 (from the very start): the mean reward over the first ``first_frac`` (10 %) of the
  online decisions (:func:`ilets.report.stats.cold_start_decisions`, whole curve windows, at least
  one; :func:`ilets.report.stats.first_n`), DRL+ and ILETS each against DRL and ILETS-: four
  components. The verdict depends on the window, so :func:`cold_start_windows` also judges
  it over the first :data:`COLD_START_WINDOWS` decisions.
* Claim 5 (converges faster): measured on the **gap** to a non-learning reference's windowed
  reward over the same tasks (:data:`ilets.report.stats.GAP_REFERENCE`, greedy-cost): the load's
  bursts and trend move every policy's reward, and a measure on the raw reward times the
  load, not the learning (heuristics would "converge" no better than learners). Decisions
  until the gap, smoothed over ``smooth`` (3) windows, enters a band of ``tol`` (5 %) of the
  reference's final reward around its own final level (the last 20 % of windows) and stays
  (:func:`ilets.report.stats.gap_convergence_table`): a heuristic whose reward tracks the load
  like the reference's settles at decision 0. Judged only on the fleet sizes and seeds where
  the reference itself settles within the same band (elsewhere the load never settles, and
  the claim is not testable there). A gap that never settles is censored at the run's total
  decisions. Fewer decisions is better.
* Claim 6 (highest cumulative reward fastest, every scale): the cumulative reward
  (:func:`ilets.report.stats.cumulative_reward`) at ``checkpoints`` (half-way and the end of the
  online pass) of ILETS against each other learner: six components. Higher is better
  (rewards are negative costs, the highest is the least negative).
* Claim 7 (oscillates least under the trend change): the mean absolute first difference of
  the gap to the reference's windowed reward (``mad`` of :func:`ilets.report.stats.oscillation`
  on :func:`ilets.report.stats.gap_oscillation_table`, so a policy whose reward moves with the
  load like the reference's scores 0, and the reward's level does not enter) over the decisions from
  the workload's trend change for the span of :func:`ilets.report.stats.online_event_ranges` (the
  shortest gap between online events, so the next burst is not included), ILETS against
  each other learner. Lower is better. Needs the workload's ``trend_change`` event
  (:func:`trend_change_ranges`).
* Claim 8 (beats every baseline): beating every heuristic on a metric is beating the best
  one, so one component per metric (response time, energy, success rate): ILETS against
  the heuristic with the best mean on that metric at each scale (chosen on the same data,
  which slightly favours the heuristics).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ilets.config import HEURISTICS
from ilets.method_table import LEARNERS, METHOD_LABELS, learners_with
from ilets.metric_table import names as metric_names
from ilets.report import stats as S

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE = "reproduced", "partly", "not reproduced", "not testable"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE)

#: The paper's claims, numbered as in this module and in the book's summary chapter.
_P = S.PAPER_IMPROVEMENTS
CLAIMS: dict[int, str] = {
    1: f"DRL+ (offline imitation only) improves on DRL in response time ({_P['drl+']['avg_response_s']:.2f} %), "
       f"energy ({_P['drl+']['energy_kwh']:.2f} %) and success rate ({_P['drl+']['success_rate']:.2f} %)",
    2: f"ILETS- (online imitation only) improves on DRL in response time ({_P['ilets-']['avg_response_s']:.2f} %), "
       f"energy ({_P['ilets-']['energy_kwh']:.2f} %) and success rate ({_P['ilets-']['success_rate']:.2f} %)",
    3: "DRL+ beats ILETS-: offline initialisation matters more than online correction",
    4: "DRL+ and ILETS are better than DRL and ILETS- from the very start",
    5: "ILETS- converges faster than DRL",
    6: "ILETS reaches the highest cumulative reward fastest at every scale",
    7: "under the trend change every method oscillates, ILETS least",
    8: "ILETS beats all heuristic baselines on response time, energy and success rate",
}

_MEASURE_LABELS = metric_names("short")  # ilets.metric_table


_LONG_NAMES = metric_names("long")


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


@dataclass(frozen=True)
class Verdict:
    """One claim's verdict: ``claim`` number, ``statement``, ``verdict`` (one of
    :data:`VERDICTS`), ``evidence`` (one line of text), ``effects``: the component
    effects behind it (the output of :func:`component_effects`, concatenated), and the
    learner ``family`` whose cells were judged."""

    claim: int
    statement: str
    verdict: str
    evidence: str
    effects: pd.DataFrame = field(repr=False, compare=False, default_factory=pd.DataFrame)
    family: str = "flat"  #: the learner family judged (a key of :data:`FAMILY_LABELS`)
    components: int = 0  #: comparisons the claim makes
    measured: int = 0  #: of them, those the results could measure


# --- components -------------------------------------------------------------------------

def component_effects(table: pd.DataFrame, a: str, b: str, column: str, higher_is_better: bool,
                      component: str | None = None, reps: int = S.DEFAULT_REPS, seed: int = 0,
                      level: float = 0.95, paired: bool = True) -> pd.DataFrame:
    """Effect of ``a`` over ``b`` on ``column`` per scale and pooled (``servers == "all"``).

    ``table`` has ``method``, ``servers``, ``seed`` and ``column``. Columns of the result:
    ``component``, ``a``, ``b``, ``measure``, ``servers``, ``effect_pct`` (positive = ``a``
    better), ``ci_low_pct``, ``ci_high_pct``, ``n_a``, ``n_b`` (seeds; summed for the pooled
    row), ``mean_a``, ``mean_b`` (seed means; NaN pooled) and ``verdict`` (per scale, the
    :func:`ilets.report.stats.effect_verdict` of the interval). Empty if either method is absent.
    It is :func:`ilets.report.stats.improvement_table` of ``a`` over ``b``, so the chapters'
    :func:`ilets.report.stats.compare` of the same pair, column and seed gives the same intervals.
    """
    cols = ["component", "a", "b", "measure", "servers", "effect_pct", "ci_low_pct", "ci_high_pct", "n_a", "n_b",
            "mean_a", "mean_b", "verdict"]
    component = component or f"{_label(a)} vs {_label(b)}: {_MEASURE_LABELS.get(column, column)}"
    t = table[table["method"].isin([a, b])] if "method" in table else table.iloc[0:0]
    if column not in t or t.loc[t["method"] == a, column].notna().sum() == 0 \
            or t.loc[t["method"] == b, column].notna().sum() == 0:
        return pd.DataFrame(columns=cols)
    imp = S.improvement_table(t, baseline=b, metrics_cols=(column,), methods=[a], level=level, reps=reps, seed=seed,
                              paired=paired, directions={column: higher_is_better})
    if imp.empty:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame({"component": component, "a": a, "b": b, "measure": column, "servers": imp["servers"],
                        "effect_pct": imp["improvement_pct"], "ci_low_pct": imp["ci_low_pct"],
                        "ci_high_pct": imp["ci_high_pct"], "n_a": imp["n_method"], "n_b": imp["n_base"],
                        "mean_a": imp["mean_method"], "mean_b": imp["mean_base"], "verdict": imp["verdict"]})
    return out[cols].reset_index(drop=True)


#: Status of one component (one vocabulary for the summary and every chapter).
HOLDS, HOLDS_POOLED, HOLDS_SOME = "holds", "holds pooled", "holds at some sizes"
DIRECTION_ONLY, FAILS, REVERSES, NO_DATA = "direction only", "fails", "reverses", "no data"
COMPONENT_STATUSES = (HOLDS, HOLDS_POOLED, HOLDS_SOME, DIRECTION_ONLY, FAILS, REVERSES, NO_DATA)
#: The statuses a "partly" may rest on (when no component of the claim :data:`REVERSES`). Not
#: :data:`HOLDS_SOME`: with three fleet sizes per component and several components per claim, one
#: interval above 0 among unresolved ones is what noise alone gives often enough.
SUPPORTING = (HOLDS, HOLDS_POOLED)

#: The statuses in words, for the chapters' sentences.
STATUS_WORDS = {HOLDS: "holds at every fleet size",
                HOLDS_POOLED: "holds pooled over fleet sizes only (same sign at every size)",
                HOLDS_SOME: "resolved in the claimed direction at some fleet sizes only, against it at none",
                DIRECTION_ONLY: "in the claimed direction at every fleet size, not resolved",
                FAILS: "not shown: resolved at no fleet size, not in the claimed direction at every one",
                REVERSES: "reverses: resolved against the claim at some fleet size", NO_DATA: "not measured"}

#: The learner families a claim can be judged on (item 3 of the issue judges every claim with both).
FAMILY_LABELS = {"flat": "the authors' flat policy (faithful)", "per-server": "the per-server policy (competent)"}


def paper_figure(a: str, b: str, measure: str) -> float | None:
    """The paper's reported improvement of ``a`` over ``b`` on ``measure`` in percent
    (:data:`ilets.report.stats.PAPER_IMPROVEMENTS`: DRL+ and ILETS- over DRL), None where the
    paper gives no number."""
    return S.PAPER_IMPROVEMENTS.get(a, {}).get(measure) if b == "drl" else None


def component_status(effects: pd.DataFrame) -> dict:
    """Status of one component from its :func:`component_effects` rows (the module's rule).

    A fleet size is *resolved for* the claim when the effect and the lower end of its 95 %
    CI are above 0, *resolved against* it (a significant reversal) when the upper end is
    below 0; both need >= 2 seeds per method there. ``status`` is one of
    :data:`COMPONENT_STATUSES`, in this order of precedence: :data:`NO_DATA` (no scale),
    :data:`REVERSES` (resolved against at some scale, whatever the others say),
    :data:`HOLDS` (resolved for at every scale), :data:`HOLDS_POOLED` (not that, but every
    scale's effect is positive and the pooled CI is above 0), :data:`HOLDS_SOME` (neither,
    but resolved for at some scale), :data:`DIRECTION_ONLY` (every scale's effect positive,
    nothing resolved), :data:`FAILS` (otherwise). ``same_sign``: every scale's effect has one sign, the only
    case in which a pooled number is reported (opposite signs are reported per size).

    Also ``holds``, ``reverses``, ``points`` (every scale positive), ``supported`` (the
    pooled CI above 0 with the same sign everywhere and enough seeds), ``scales``,
    ``scales_ok`` (resolved for), ``scales_worse`` (resolved against), ``scales_positive``,
    ``worse_at`` (the fleet sizes resolved against), ``pooled``, ``pooled_low``,
    ``pooled_high`` (percent) and ``per`` (the per-scale rows).
    """
    per = effects[effects["servers"].astype(str) != "all"]
    pooled = effects[effects["servers"].astype(str) == "all"]
    seeds_ok = (per["n_a"] >= 2) & (per["n_b"] >= 2)
    ok = (per["effect_pct"] > 0) & (per["ci_low_pct"] > 0) & seeds_ok
    worse = (per["ci_high_pct"] < 0) & seeds_ok
    p = pooled.iloc[0] if len(pooled) else None
    signs = np.sign(per["effect_pct"].to_numpy(dtype=float))
    same_sign = bool(len(per) > 0 and np.all(np.isfinite(signs)) and len(set(signs)) == 1 and signs[0] != 0)
    points = bool(len(per) > 0 and (per["effect_pct"] > 0).all())
    holds = bool(len(per) > 0 and ok.all())
    supported = bool(p is not None and points and p["ci_low_pct"] > 0 and seeds_ok.all())
    if len(per) == 0:
        status = NO_DATA
    elif worse.any():
        status = REVERSES
    elif holds:
        status = HOLDS
    elif supported:
        status = HOLDS_POOLED
    elif ok.any():
        status = HOLDS_SOME
    else:
        status = DIRECTION_ONLY if points else FAILS
    return {"status": status, "holds": holds, "reverses": bool(worse.any()), "points": points,
            "supported": supported, "same_sign": same_sign, "scales": int(len(per)), "scales_ok": int(ok.sum()),
            "scales_worse": int(worse.sum()), "scales_positive": int((per["effect_pct"] > 0).sum()),
            "worse_at": [int(s) for s in per.loc[worse, "servers"]],
            "pooled": float(p["effect_pct"]) if p is not None else np.nan,
            "pooled_low": float(p["ci_low_pct"]) if p is not None else np.nan,
            "pooled_high": float(p["ci_high_pct"]) if p is not None else np.nan,
            "per": per}


def effect_numbers(same_sign: bool, pooled: float, low: float, high: float,
                   per_scale: Sequence[tuple[int, float, float, float]]) -> str:
    """A component's effect with its 95 % CI: ``"+1.0 % [+0.8, +1.1] pooled"`` when every fleet
    size points the same way (``same_sign``), else each fleet size's ``(servers, effect, low,
    high)`` of ``per_scale``: ``"+14.6 % [+11.0, +18.0] at 50; ... at 200 servers (opposite
    signs: not pooled)"``. "not measured" without a fleet size."""
    if not per_scale:
        return "not measured"
    if same_sign:
        return f"{pooled:+.1f} % [{low:+.1f}, {high:+.1f}] pooled"
    return "; ".join(f"{e:+.1f} % [{lo:+.1f}, {hi:+.1f}] at {m}" for m, e, lo, hi in per_scale) \
        + " servers (opposite signs: not pooled)"


def _per_scale(per: pd.DataFrame) -> tuple[tuple[int, float, float, float], ...]:
    return tuple((int(r.servers), float(r.effect_pct), float(r.ci_low_pct), float(r.ci_high_pct))
                 for r in per.itertuples())


def effect_text(st: Mapping, paper: float | None = None) -> str:
    """A component's effect as the book prints it, from :func:`component_status`: the pooled
    effect and 95 % CI when every fleet size points the same way, else the effect at each
    fleet size (opposite signs are never pooled into one number); then where the CI is
    above and below 0, and the paper's figure beside ours where it gives one."""
    per = st["per"]
    if st["scales"] == 0:
        return "not measured"
    s = effect_numbers(st["same_sign"], st["pooled"], st["pooled_low"], st["pooled_high"], _per_scale(per))
    s += f", CI above 0 at {st['scales_ok']}/{st['scales']} sizes"
    if st["scales_worse"]:
        s += f", below 0 at {_and([str(x) for x in st['worse_at']])} servers"
    if paper is not None:
        if st["same_sign"]:
            inside = st["pooled_low"] <= paper <= st["pooled_high"]
            s += f" (paper {paper:+.2f} %, {'inside' if inside else 'outside'} our CI)"
        else:
            n_in = int(((per["ci_low_pct"] <= paper) & (paper <= per["ci_high_pct"])).sum())
            s += f" (paper {paper:+.2f} %, inside our CI at {n_in}/{len(per)} sizes)"
    return s


def component_table(effects: pd.DataFrame) -> pd.DataFrame:
    """One row per component of a claim's effects: ``component``, ``a``, ``b``, ``measure``,
    the :func:`component_status` fields, ``paper_pct`` (:func:`paper_figure`, NaN where the
    paper gives none), ``per_scale`` (``(servers, effect, low, high)`` per fleet size) and
    ``effect_text`` (:func:`effect_text`). What the chapters show next
    to the summary's verdict, so both state the same status for the same comparison."""
    cols = ["component", "a", "b", "measure", "status", "scales", "scales_ok", "scales_worse", "scales_positive",
            "same_sign", "pooled", "pooled_low", "pooled_high", "paper_pct", "per_scale", "effect_text"]
    if effects is None or effects.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for name, g in effects.groupby("component", sort=False):
        st = component_status(g)
        paper = paper_figure(g["a"].iloc[0], g["b"].iloc[0], g["measure"].iloc[0])
        rows.append({"component": name, "a": g["a"].iloc[0], "b": g["b"].iloc[0], "measure": g["measure"].iloc[0],
                     **{k: st[k] for k in cols[4:13]}, "paper_pct": np.nan if paper is None else paper,
                     "per_scale": _per_scale(st["per"]), "effect_text": effect_text(st, paper)})
    return pd.DataFrame(rows, columns=cols)


def judge(effects: pd.DataFrame) -> str:
    """The verdict on a claim from the effects of all its components (module docstring):
    a "partly" needs a supporting component (:data:`SUPPORTING`) and no component that
    :data:`REVERSES` at any fleet size."""
    if effects is None or effects.empty:
        return NOT_TESTABLE
    status = [component_status(g)["status"] for _, g in effects.groupby("component", sort=False)]
    if all(s == HOLDS for s in status):
        return REPRODUCED
    if any(s == REVERSES for s in status):
        return NOT_REPRODUCED
    if any(s in SUPPORTING for s in status):
        return PARTLY
    return NOT_REPRODUCED


def _evidence(effects: pd.DataFrame, paper: Mapping[str, float] | None = None, short: Callable | None = None) -> str:
    """Evidence line: every component's effect (:func:`effect_text`) with the paper's figure."""
    parts = []
    for name, g in effects.groupby("component", sort=False):
        st = component_status(g)
        label = short(g.iloc[0]) if short else name
        figure = (paper or {}).get(g["measure"].iloc[0])
        if figure is None:
            figure = paper_figure(g["a"].iloc[0], g["b"].iloc[0], g["measure"].iloc[0])
        parts.append(f"{label} {effect_text(st, figure)}")
    return "; ".join(parts)


def _verdict(claim: int, effects: list[pd.DataFrame], evidence: Callable[[pd.DataFrame], str],
             missing: str = "the methods it compares are not in the results") -> Verdict:
    eff = pd.concat([e for e in effects if len(e)], ignore_index=True) if any(len(e) for e in effects) \
        else pd.DataFrame()
    v = judge(eff)
    return Verdict(claim, CLAIMS[claim], v, missing if v == NOT_TESTABLE else evidence(eff), eff,
                   components=len(effects), measured=sum(bool(len(e)) for e in effects))


def whole(v: Verdict) -> Verdict:
    """``v`` if every comparison of its claim was measured (or none was); else not testable,
    with evidence naming how many comparisons are missing and showing the measured ones (the
    module's rule: a claim is judged whole)."""
    if v.verdict == NOT_TESTABLE or v.measured >= v.components:
        return v
    missing = v.components - v.measured
    return replace(v, verdict=NOT_TESTABLE,
                   evidence=f"{missing} of its {v.components} comparisons cannot be measured here (a method they "
                            f"need is not in the results); on the {v.measured} measured, it would be {v.verdict}: "
                            f"{v.evidence}")


# --- the claims ---------------------------------------------------------------------------

def claim_improves(metrics: pd.DataFrame, claim: int, a: str, b: str,
                   columns: Sequence[str] = S.PAPER_METRICS, reps: int = S.DEFAULT_REPS, seed: int = 0) -> Verdict:
    """Claims 1-3: ``a`` improves on ``b`` on each of ``columns`` (final metrics table).

    With ``b == "drl"`` and ``a`` in :data:`ilets.report.stats.PAPER_IMPROVEMENTS` the evidence
    quotes the paper's magnitude for each metric.
    """
    paper = S.PAPER_IMPROVEMENTS.get(a) if b == "drl" else None
    effects = [component_effects(metrics, a, b, c, S.HIGHER_IS_BETTER[c], reps=reps, seed=seed) for c in columns]
    return _verdict(claim, effects, lambda e: _evidence(e, paper, lambda r: _MEASURE_LABELS.get(r["measure"],
                                                                                               r["measure"])))


#: The cold-start windows the book shows (decisions from the start of the online pass): the
#: claim's verdict depends on the window, so every one is shown beside the verdict's own.
COLD_START_WINDOWS = (2_500, 10_000, 25_000)


def claim_cold_start(curves: pd.DataFrame, first_frac: float = 0.1, reps: int = S.DEFAULT_REPS,
                     seed: int = 0, n_decisions: int | None = None) -> Verdict:
    """Claim 4: DRL+ and ILETS beat DRL and ILETS- in mean reward over the first decisions:
    ``n_decisions`` of them if given, else ``first_frac`` of the pass
    (:func:`ilets.report.stats.cold_start_decisions`)."""
    if curves is None or curves.empty:
        return _verdict(4, [], str, "no learning curves in the results")
    learn = curves[curves["method"].isin(LEARNERS)]
    n = S.cold_start_decisions(learn, frac=first_frac) if n_decisions is None else int(n_decisions)
    fn = S.first_n(learn, n)
    effects = [component_effects(fn, a, b, "reward", True, reps=reps, seed=seed)
               for a in learners_with(oinpt=True) for b in learners_with(oinpt=False)]
    return _verdict(4, effects, lambda e: f"mean reward over the first {n:,} decisions: " + _evidence(e))


def cold_start_windows(curves: pd.DataFrame, windows: Sequence[int] = COLD_START_WINDOWS,
                       reps: int = S.DEFAULT_REPS, seed: int = 0) -> pd.DataFrame:
    """Claim 4 judged over each of ``windows`` first decisions (:func:`claim_cold_start`).

    One row per window: ``decisions``, ``verdict``, ``holds`` (components that hold at
    every fleet size), ``reverses`` (components resolved against the claim at some fleet
    size), ``components`` and ``evidence``."""
    rows = []
    for n in windows:
        v = claim_cold_start(curves, reps=reps, seed=seed, n_decisions=n)
        comp = component_table(v.effects)
        rows.append({"decisions": int(n), "verdict": v.verdict, "holds": int((comp["status"] == HOLDS).sum()),
                     "reverses": int((comp["status"] == REVERSES).sum()), "components": len(comp),
                     "evidence": v.evidence})
    return pd.DataFrame(rows, columns=["decisions", "verdict", "holds", "reverses", "components", "evidence"])


def convergence_cells(curves: pd.DataFrame, tol: float = 0.05, final_frac: float = 0.2, smooth: int = 3,
                      reference: str = S.GAP_REFERENCE) -> pd.DataFrame:
    """:func:`ilets.report.stats.gap_convergence_table` (the gap to ``reference``, which is kept)
    with never-settled gaps censored at the cell's total decisions (column
    ``convergence_decisions``; ``settled`` keeps the raw flag, ``testable`` says whether the
    reference settled on that fleet size and seed)."""
    conv = S.gap_convergence_table(curves, reference, tol=tol, final_frac=final_frac, smooth=smooth)
    if conv.empty:
        return conv
    conv["convergence_decisions"] = conv["convergence_decisions"].fillna(conv["decisions"].astype(float))
    return conv


def claim_convergence(curves: pd.DataFrame, tol: float = 0.05, final_frac: float = 0.2, smooth: int = 3,
                      reps: int = S.DEFAULT_REPS, seed: int = 0, reference: str = S.GAP_REFERENCE) -> Verdict:
    """Claim 5: ILETS- needs fewer decisions than DRL for its gap to ``reference`` to settle,
    judged on the fleet sizes and seeds where the reference itself settles (module docstring)."""
    if curves is None or curves.empty:
        return _verdict(5, [], str, "no learning curves in the results")
    if reference not in set(curves["method"]):
        return _verdict(5, [], str, f"no {reference} curve to measure the gap against")
    conv = convergence_cells(curves[curves["method"].isin(["drl", "ilets-", reference])], tol, final_frac, smooth,
                             reference)
    ref = conv[conv["method"] == reference].groupby("servers")["reference_settled"].agg(["sum", "size"])
    where = "; ".join(f"{int(r['sum'])}/{int(r['size'])} seeds at {s}" for s, r in ref.iterrows())
    judged = conv[conv["testable"] & conv["method"].isin(["drl", "ilets-"])]
    if judged.empty:
        return _verdict(5, [], str, f"not testable: {reference} itself never settles within {tol:.0%} of its final "
                        f"reward ({where} servers), so the load never settles")
    eff = component_effects(judged, "ilets-", "drl", "convergence_decisions", False, reps=reps, seed=seed)

    def evidence(e):
        settled = judged.groupby("method")["settled"].agg(["sum", "size"])
        means = judged.groupby("method")["convergence_decisions"].mean()
        sizes = _and([str(int(x)) for x in sorted(judged["servers"].unique())])
        return (f"decisions until the gap to {reference}'s reward settles within {tol:.0%} of {reference}'s final "
                f"reward, judged where {reference} itself settles ({where} servers), so at {sizes} servers: ILETS- "
                f"{means.get('ilets-', np.nan):,.0f} vs DRL {means.get('drl', np.nan):,.0f} on average (settled: "
                f"ILETS- {int(settled.loc['ilets-', 'sum'])}/{int(settled.loc['ilets-', 'size'])}, DRL "
                f"{int(settled.loc['drl', 'sum'])}/{int(settled.loc['drl', 'size'])} runs); " + _evidence(e))
    return _verdict(5, [eff], evidence)


def cumulative_at(curves: pd.DataFrame, fraction: float) -> pd.DataFrame:
    """Per cell: cumulative reward at the first curve window ending at or after ``fraction``
    of the cell's online decisions (column ``cum_reward``; ``decision_end`` says where)."""
    cum = S.cumulative_reward(curves)
    if cum.empty:
        return cum
    idx = []
    for _, g in cum.groupby("cell" if "cell" in cum else ["method", "servers", "seed"], sort=True):
        target = fraction * g["decision_end"].max()
        idx.append(g[g["decision_end"] >= target - 1e-9]["decision_end"].idxmin())
    return cum.loc[idx].reset_index(drop=True)


def claim_cumulative(curves: pd.DataFrame, checkpoints: Sequence[float] = (0.5, 1.0), reps: int = S.DEFAULT_REPS,
                     seed: int = 0) -> Verdict:
    """Claim 6: ILETS has the highest cumulative reward, at each checkpoint, at every scale."""
    if curves is None or curves.empty:
        return _verdict(6, [], str, "no learning curves in the results")
    effects = []
    for f in checkpoints:
        at = cumulative_at(curves[curves["method"].isin(LEARNERS)], f)
        for b in ("drl", "drl+", "ilets-"):
            effects.append(component_effects(at, "ilets", b, "cum_reward", True, reps=reps, seed=seed,
                                             component=f"ILETS vs {_label(b)} at {f:.0%}"))
    return _verdict(6, effects, lambda e: "cumulative reward, ILETS over each learner at a fraction of the pass: "
                    + _evidence(e))


def trend_change_ranges(profile: Mapping, out=None) -> Callable[[int], dict] | None:
    """``seed -> {"trend_change": (d, d_end)}``: the online decisions from the trend change
    over :func:`ilets.report.stats.online_event_ranges`' span, for the workload of ``profile`` (the
    results' ``profile.yaml``, see :func:`ilets.study.results.load_profile_info`) and a seed
    (:func:`ilets.report.events.online_event_ranges_for`, the function the chapters use).

    ``out``: the results folder, whose ``events.json`` (recorded by the grid) gives the events
    without rebuilding the workload; without it (or without this workload in it) the workload
    is rebuilt. None if the workload has no ``trend_change`` event or is neither recorded nor
    buildable here (e.g. trace files absent)."""
    from ilets.config import RunConfig, from_dict
    from ilets.report.events import online_event_ranges_for, recorded_seeds, workload_events_for

    try:
        wcfg = from_dict(RunConfig, dict(profile["run"]), "profile.run").workload
        recorded = recorded_seeds(out, wcfg)
        events = [r["events"] for r in recorded.values()] or [workload_events_for(wcfg, 0)]
    except Exception as err:  # noqa: BLE001 - any failure means: not testable here
        warnings.warn(f"trend_change_ranges: workload not rebuilt ({err}); claim 7 not testable", stacklevel=2)
        return None
    if not any("trend_change" in e for e in events):
        return None

    def ranges(seed: int) -> dict:
        r = online_event_ranges_for(wcfg, int(seed), out)
        return {"trend_change": r["trend_change"]} if "trend_change" in r else {}

    return ranges


def claim_oscillation(curves: pd.DataFrame, events: Callable[[int], dict] | Mapping | None,
                      reps: int = S.DEFAULT_REPS, seed: int = 0, reference: str = S.GAP_REFERENCE) -> Verdict:
    """Claim 7: ILETS's gap to ``reference``'s windowed reward swings least (``mad``) after
    the trend change (:func:`ilets.report.stats.gap_oscillation_table`).

    ``events``: a mapping ``{"trend_change": (d, d_end)}`` or a callable ``seed -> mapping``
    (:func:`trend_change_ranges`); None makes the claim not testable, and so does a missing
    reference.
    """
    if curves is None or curves.empty or events is None:
        return _verdict(7, [], str, "no learning curves or no trend-change event in this workload")
    if reference not in set(curves["method"]):
        return _verdict(7, [], str, f"no {reference} curve to measure the gap against")
    osc = S.gap_oscillation_table(curves[curves["method"].isin([*LEARNERS, reference])], events, reference)
    osc = osc[osc["event"] == "trend_change"] if len(osc) else osc
    if osc.empty or osc["mad"].notna().sum() == 0:
        return _verdict(7, [], str, "fewer than two curve windows after the trend change")
    effects = [component_effects(osc, "ilets", b, "mad", False, reps=reps, seed=seed)
               for b in ("drl", "drl+", "ilets-")]
    windows = int(osc["windows"].median())
    return _verdict(7, effects, lambda e: f"mean absolute change of the gap to {reference}'s windowed reward over "
                    f"the {windows} windows after the trend change (lower is better): " + _evidence(e))


BEST_HEURISTIC = "best-heuristic"


def best_heuristic_rows(metrics: pd.DataFrame, column: str, heuristics: Sequence[str] = HEURISTICS
                        ) -> tuple[pd.DataFrame, dict]:
    """The rows of the heuristic with the best seed mean on ``column`` at each scale,
    relabelled ``method == "best-heuristic"``; and ``{servers: heuristic}``. The choice is
    made on the same data it is then compared on, which slightly favours the heuristic (a
    conservative bias for claim 8)."""
    h = metrics[metrics["method"].isin(heuristics)]
    higher = S.HIGHER_IS_BETTER[column]
    chosen, parts = {}, []
    for s, g in h.groupby("servers", sort=True):
        means = g.groupby("method")[column].mean().dropna()
        if means.empty:
            continue
        chosen[s] = means.idxmax() if higher else means.idxmin()
        parts.append(g[g["method"] == chosen[s]].assign(method=BEST_HEURISTIC))
    return (pd.concat(parts, ignore_index=True) if parts else h.iloc[0:0]), chosen


def claim_beats_heuristics(metrics: pd.DataFrame, heuristics: Sequence[str] = HEURISTICS,
                           columns: Sequence[str] = S.PAPER_METRICS, reps: int = S.DEFAULT_REPS,
                           seed: int = 0) -> Verdict:
    """Claim 8: ILETS beats every heuristic in ``heuristics`` on each of ``columns``.

    "Beats every heuristic on a metric" is "beats the best one": one component per metric,
    ILETS against the heuristic with the best mean on that metric at each scale
    (:func:`best_heuristic_rows`). The evidence also counts the heuristics ILETS beats at
    every scale and names those better than ILETS.
    """
    present = [h for h in heuristics if h in set(metrics["method"])]
    effects, chosen = [], {}
    for c in columns:
        best, chosen[c] = best_heuristic_rows(metrics, c, present)
        effects.append(component_effects(pd.concat([metrics[metrics["method"] == "ilets"], best]), "ilets",
                                         BEST_HEURISTIC, c, S.HIGHER_IS_BETTER[c], reps=reps, seed=seed,
                                         component=f"ILETS vs best heuristic: {_MEASURE_LABELS[c]}"))

    def evidence(e):
        lines = []
        for c in columns:
            st_best = component_status(e[e["measure"] == c])
            names = sorted(set(chosen[c].values()))
            each = [component_status(component_effects(metrics, "ilets", h, c, S.HIGHER_IS_BETTER[c], reps=reps,
                                                       seed=seed)) for h in present]
            rev = {h: component_status(component_effects(metrics, h, "ilets", c, S.HIGHER_IS_BETTER[c], reps=reps,
                                                         seed=seed)) for h in present}
            beaten = sum(s["holds"] for s in each)
            better = [h for h, s in rev.items() if s["holds"]]
            lines.append(f"{_MEASURE_LABELS[c]}: vs the best heuristic ({_and(names)}) {effect_text(st_best)}; "
                         f"ILETS beats {beaten}/{len(present)} heuristics at every scale"
                         + (f", and {_and(better)} beat{'s' if len(better) == 1 else ''} ILETS at every scale"
                            if better else ""))
        return "; ".join(lines)

    return _verdict(8, effects, evidence, "no heuristic baselines or no ILETS in the results")


def all_verdicts(metrics: pd.DataFrame, curves: pd.DataFrame | None = None, profile: Mapping | None = None,
                 reps: int = 1000, seed: int = 0, out=None, claims: Sequence[int] | None = None,
                 family: str = "flat", partial: bool = False) -> list[Verdict]:
    """The verdict on each claim of :data:`CLAIMS` (or on ``claims`` only), in order.

    ``metrics``/``curves``: the main study's tables (:func:`ilets.study.results.load_metrics`,
    :func:`ilets.study.results.load_curves`); ``profile``: the results' profile (for claim 7's
    trend-change event; None makes claim 7 not testable); ``out``: the results folder, whose
    recorded events (``events.json``) spare rebuilding the workload (:func:`trend_change_ranges`).
    ``reps`` bootstrap resamples. ``family``: the learner family whose learner cells ``metrics``
    and ``curves`` hold (a key of :data:`FAMILY_LABELS`; the heuristic cells are the same for
    every family), recorded in each verdict, so one function judges either family.
    A claim with a comparison the tables cannot measure is not testable (:func:`whole`);
    ``partial`` judges it on the comparisons measured instead (:func:`variant_verdicts`).
    """
    judges = {
        1: lambda: claim_improves(metrics, 1, "drl+", "drl", reps=reps, seed=seed),
        2: lambda: claim_improves(metrics, 2, "ilets-", "drl", reps=reps, seed=seed),
        3: lambda: claim_improves(metrics, 3, "drl+", "ilets-", reps=reps, seed=seed),
        4: lambda: claim_cold_start(curves, reps=reps, seed=seed),
        5: lambda: claim_convergence(curves, reps=reps, seed=seed),
        6: lambda: claim_cumulative(curves, reps=reps, seed=seed),
        7: lambda: claim_oscillation(curves, trend_change_ranges(profile, out) if profile is not None else None,
                                     reps=reps, seed=seed),
        8: lambda: claim_beats_heuristics(metrics, reps=reps, seed=seed),
    }
    return [replace(v if partial else whole(v), family=family)
            for v in (judges[c]() for c in (CLAIMS if claims is None else claims))]


#: Verdicts from best to worst (a variant "improves" a verdict when it moves it left).
VERDICT_ORDER = (REPRODUCED, PARTLY, NOT_REPRODUCED)


def variant_verdicts(metrics: pd.DataFrame, curves: pd.DataFrame | None, variant_metrics: pd.DataFrame,
                     variant_curves: pd.DataFrame | None, kept: Sequence[str] = (), profile: Mapping | None = None,
                     reps: int = 1000, seed: int = 0, out=None, claims: Sequence[int] | None = None) -> pd.DataFrame:
    """Each claim judged on a variant's cells and on the main cells they replace.

    A variant reruns some methods with one reconstructed choice changed. Both sides are
    judged by :func:`all_verdicts` on the same methods, fleet sizes and seeds (the variant's),
    so a changed verdict is the choice's doing, not a change of coverage. ``kept``: main-grid
    methods the variant's change does not touch (:func:`ilets.method_table.reads_section`),
    whose main cells stand on both sides (DRL beside a variant of DRL+'s cloning); the claims'
    components that need any other method drop out on both sides. Columns: ``claim``,
    ``main`` and ``variant`` (the two verdicts), ``evidence`` (the variant's). Only claims
    (of ``claims``; default all) testable on both sides and comparing a method the variant
    ran are listed."""
    cols = ["claim", "main", "variant", "evidence"]
    if variant_metrics is None or variant_metrics.empty:
        return pd.DataFrame(columns=cols)
    ran = set(variant_metrics["method"])

    def at_variant(table, methods):
        if table is None or table.empty:
            return table
        keep = (table["method"].isin(methods) & table["servers"].isin(set(variant_metrics["servers"]))
                & table["seed"].isin(set(variant_metrics["seed"])))
        return table[keep].reset_index(drop=True)

    def with_kept(variant_table, main_table):
        if variant_table is None or main_table is None:
            return variant_table
        return pd.concat([variant_table, at_variant(main_table, set(kept) - ran)], ignore_index=True)

    main = all_verdicts(at_variant(metrics, ran | set(kept)), at_variant(curves, ran | set(kept)), profile,
                        reps=reps, seed=seed, out=out, claims=claims, partial=True)
    var = all_verdicts(with_kept(variant_metrics, metrics), with_kept(variant_curves, curves), profile, reps=reps,
                       seed=seed, out=out, claims=claims, partial=True)

    def touches(v: Verdict) -> bool:  # a claim judged on kept main cells alone is no test of the variant
        return bool(len(v.effects)) and bool((v.effects["a"].isin(ran) | v.effects["b"].isin(ran)).any())

    rows = [{"claim": a.claim, "main": a.verdict, "variant": b.verdict, "evidence": b.evidence}
            for a, b in zip(main, var) if NOT_TESTABLE not in (a.verdict, b.verdict) and touches(b)]
    return pd.DataFrame(rows, columns=cols)


def verdict_table(verdicts: Sequence[Verdict]) -> pd.DataFrame:
    """One row per claim: ``claim``, ``statement``, ``verdict``, ``evidence``, ``family``."""
    return pd.DataFrame([{"claim": v.claim, "statement": v.statement, "verdict": v.verdict, "evidence": v.evidence,
                          "family": v.family} for v in verdicts],
                        columns=["claim", "statement", "verdict", "evidence", "family"])


# --- plain-language helpers for the results chapters --------------------------------------

def describe_effect(effects: pd.DataFrame, servers="all", digits: int = 1) -> str:
    """One phrase for one component's effect (rows of :func:`component_effects`) at
    ``servers`` (``"all"``: pooled): "better than DRL by 12.3 % (95 % CI 10.1 to 14.2)",
    "worse than DRL by ...", or "indistinguishable from DRL (...)" when the CI includes 0.
    ``b``'s display name is used; "no results" if the row is missing."""
    rows = effects[effects["servers"].astype(str) == str(servers)]
    if rows.empty or not np.isfinite(rows["effect_pct"].iloc[0]):
        return "no results"
    r = rows.iloc[0]
    ci = f"95 % CI {r['ci_low_pct']:+.{digits}f} to {r['ci_high_pct']:+.{digits}f} %"
    verdict = r["verdict"] if "verdict" in r else S.effect_verdict(r["ci_low_pct"], r["ci_high_pct"], 2, 2)
    if verdict == "better":
        return f"better than {_label(r['b'])} by {r['effect_pct']:.{digits}f} % ({ci})"
    if verdict == "worse":
        return f"worse than {_label(r['b'])} by {-r['effect_pct']:.{digits}f} % ({ci})"
    return f"indistinguishable from {_label(r['b'])} ({r['effect_pct']:+.{digits}f} %, {ci})"


def heuristic_effects(metrics: pd.DataFrame, columns: Sequence[str] = S.PAPER_METRICS,
                      heuristics: Sequence[str] = HEURISTICS, learners: Sequence[str] = LEARNERS,
                      reps: int = S.DEFAULT_REPS, seed: int = 0) -> dict:
    """:func:`component_effects` of every heuristic over every learner on each of ``columns``
    present in ``metrics``, keyed ``(heuristic, column, learner)``: computed once for
    :func:`heuristics_vs_learners` and :func:`heuristics_per_fleet` (the bootstrap is the cost)."""
    present = set(metrics["method"])
    return {(h, c, L): component_effects(metrics, h, L, c, S.HIGHER_IS_BETTER[c], reps=reps, seed=seed)
            for c in columns for h in heuristics if h in present for L in learners if L in present}


def heuristics_vs_learners(metrics: pd.DataFrame, columns: Sequence[str] = S.PAPER_METRICS,
                           heuristics: Sequence[str] = HEURISTICS, learners: Sequence[str] = LEARNERS,
                           reps: int = S.DEFAULT_REPS, seed: int = 0, effects: dict | None = None) -> pd.DataFrame:
    """Where each heuristic stands against the learners, per metric.

    For heuristic ``h`` and metric ``c``, the components "``h`` vs learner ``L``" (module
    docstring). Columns: ``heuristic``, ``metric``, ``beats`` (learners ``h`` beats at every
    scale, i.e. the component holds), ``beaten_by`` (learners that beat ``h`` at every scale),
    ``beats_all`` (``h`` beats every learner present), ``best_learner`` (the learner ``h``
    compares worst against, pooled), ``vs_best_pct``, ``vs_best_low_pct``, ``vs_best_high_pct``
    (``h``'s pooled effect over that learner; positive = ``h`` better). ``effects``: the
    :func:`heuristic_effects` of the same arguments, if already computed.
    """
    present_l = [m for m in learners if m in set(metrics["method"])]
    effects = heuristic_effects(metrics, columns, heuristics, learners, reps, seed) if effects is None else effects
    rows = []
    for h in [x for x in heuristics if x in set(metrics["method"])]:
        for c in columns:
            higher = S.HIGHER_IS_BETTER[c]
            beats, beaten_by, best = [], [], None
            for L in present_l:
                e = effects[(h, c, L)]
                if e.empty:
                    continue
                st = component_status(e)
                rev = component_status(component_effects(metrics, L, h, c, higher, reps=reps, seed=seed))
                if st["holds"]:
                    beats.append(L)
                if rev["holds"]:
                    beaten_by.append(L)
                if best is None or st["pooled"] < best[1]["pooled"]:
                    best = (L, st)
            rows.append({"heuristic": h, "metric": c, "beats": beats, "beaten_by": beaten_by,
                         "beats_all": bool(present_l) and len(beats) == len(present_l),
                         "best_learner": best[0] if best else None,
                         "vs_best_pct": best[1]["pooled"] if best else np.nan,
                         "vs_best_low_pct": best[1]["pooled_low"] if best else np.nan,
                         "vs_best_high_pct": best[1]["pooled_high"] if best else np.nan})
    return pd.DataFrame(rows, columns=["heuristic", "metric", "beats", "beaten_by", "beats_all", "best_learner",
                                       "vs_best_pct", "vs_best_low_pct", "vs_best_high_pct"])


def heuristics_per_fleet(metrics: pd.DataFrame, columns: Sequence[str] = S.PAPER_METRICS,
                         heuristics: Sequence[str] = HEURISTICS, learners: Sequence[str] = LEARNERS,
                         reps: int = S.DEFAULT_REPS, seed: int = 0, effects: dict | None = None) -> pd.DataFrame:
    """Each heuristic against the best learner at each fleet size, per metric, with 95 % CIs.

    The best learner at a fleet size is the one with the best seed mean on the metric there
    (chosen on the same data, which favours the learners). Columns: ``heuristic``, ``metric``,
    ``servers``, ``learner``, ``effect_pct`` (the heuristic's relative improvement over that
    learner; positive = the heuristic is better), ``ci_low_pct``, ``ci_high_pct``, ``verdict``
    (:func:`ilets.report.stats.effect_verdict` of the interval) and ``seeds`` (paired seeds).
    The same effects as :func:`component_effects`, so the chapters' other tables agree
    (``effects``: their :func:`heuristic_effects`, if already computed).
    """
    effects = heuristic_effects(metrics, columns, heuristics, learners, reps, seed) if effects is None else effects
    cols = ["heuristic", "metric", "servers", "learner", "effect_pct", "ci_low_pct", "ci_high_pct", "verdict",
            "seeds"]
    present_l = [m for m in learners if m in set(metrics["method"])]
    rows = []
    for c in columns:
        higher = S.HIGHER_IS_BETTER[c]
        means = metrics[metrics["method"].isin(present_l)].groupby(["servers", "method"])[c].mean()
        for h in [x for x in heuristics if x in set(metrics["method"])]:
            for servers in sorted(metrics.loc[metrics["method"] == h, "servers"].unique()):
                at = means.xs(servers, level="servers") if servers in means.index.get_level_values(0) else None
                if at is None or at.dropna().empty:
                    continue
                best = at.idxmax() if higher else at.idxmin()
                e = effects[(h, c, best)]
                r = e[e["servers"].astype(str) == str(servers)]
                if r.empty:
                    continue
                r = r.iloc[0]
                rows.append({"heuristic": h, "metric": c, "servers": int(servers), "learner": best,
                             "effect_pct": r["effect_pct"], "ci_low_pct": r["ci_low_pct"],
                             "ci_high_pct": r["ci_high_pct"], "verdict": r["verdict"],
                             "seeds": int(min(r["n_a"], r["n_b"]))})
    return pd.DataFrame(rows, columns=cols)


def describe_heuristics(table: pd.DataFrame) -> str:
    """A plain sentence from :func:`heuristics_vs_learners`: which heuristics beat every
    learner, on which metrics, at every scale."""
    if table.empty:
        return "There are no heuristic baselines in these results."
    n_metrics = table["metric"].nunique()
    names = {c: _LONG_NAMES.get(c, c) for c in table["metric"].unique()}
    everything = [h for h, g in table.groupby("heuristic", sort=False) if g["beats_all"].all()]
    some = [(h, [names[c] for c in g.loc[g["beats_all"], "metric"]]) for h, g in table.groupby("heuristic", sort=False)
            if g["beats_all"].any() and not g["beats_all"].all()]
    parts = []
    if everything:
        who = _and(everything)
        verb = "is" if len(everything) == 1 else "are each"
        parts.append(f"{who} {verb} better than every learner on all {n_metrics} metrics "
                     f"({_and(list(names.values()))}) at every scale")
    for h, ms in some:
        parts.append(f"{h} is better than every learner on {_and(ms)} at every scale")
    if not parts:
        return "No heuristic is better than every learner on any metric at every scale."
    return "; ".join(parts) + "."
