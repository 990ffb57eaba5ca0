"""The heuristic baselines against the learners: the best heuristic at each fleet size (claim 8
compares ILETS with it), and every heuristic against every learner, with the same component
effects and statuses as the claims (:mod:`ilets.report.verdicts.rule`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ilets.config import HEURISTICS
from ilets.method_table import LEARNERS
from ilets.report import stats as S
from ilets.report.verdicts.rule import component_effects, component_status


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
