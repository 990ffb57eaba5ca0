"""One component's status and one claim's verdict from the component effects (the rule below),
and the effects as the book prints them.

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
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ilets.method_table import METHOD_LABELS
from ilets.metric_table import names as metric_names
from ilets.report import stats as S


REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE = "reproduced", "partly", "not reproduced", "not testable"


VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE)


_MEASURE_LABELS = metric_names("short")  # ilets.metric_table


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


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
    return verdict_of([component_status(g)["status"] for _, g in effects.groupby("component", sort=False)])


def verdict_of(status: Sequence[str]) -> str:
    """The verdict on a claim from its components' statuses (:data:`COMPONENT_STATUSES`; the
    module docstring's rule): :data:`REPRODUCED` when every one :data:`HOLDS`,
    :data:`NOT_REPRODUCED` when one :data:`REVERSES`, :data:`PARTLY` when one is
    :data:`SUPPORTING`, else :data:`NOT_REPRODUCED`; :data:`NOT_TESTABLE` without components."""
    if not status:
        return NOT_TESTABLE
    if all(s == HOLDS for s in status):
        return REPRODUCED
    if any(s == REVERSES for s in status):
        return NOT_REPRODUCED
    if any(s in SUPPORTING for s in status):
        return PARTLY
    return NOT_REPRODUCED
