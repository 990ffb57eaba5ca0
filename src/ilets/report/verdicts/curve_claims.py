"""The paper's claims on the learning curves (4-7): the cold start, convergence, cumulative
reward and oscillation, each judged from its components by the rule of
:mod:`ilets.report.verdicts.rule`.

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
"""

from __future__ import annotations

import warnings
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ilets.method_table import LEARNERS, learners_with
from ilets.report import stats as S
from ilets.report.verdicts.claims import Verdict, _evidence, _verdict
from ilets.report.verdicts.rule import HOLDS, REVERSES, _and, _label, component_effects, component_table


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
