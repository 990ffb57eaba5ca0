"""Every claim judged at once for one learner family (the summary's table), and a variant's
verdicts beside those of the main cells it replaces.

Families
--------
Every claim function takes a metrics or curves table; :func:`all_verdicts` records which
learner family's cells it was given (``family``, :data:`FAMILY_LABELS`), so the authors'
flat learner and the per-server learner are judged by the same code.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

import pandas as pd

from ilets.report.verdicts.claims import CLAIMS, Verdict, claim_beats_heuristics, claim_improves, whole
from ilets.report.verdicts.curve_claims import (claim_cold_start, claim_convergence, claim_cumulative,
                                                claim_oscillation, trend_change_ranges)
from ilets.report.verdicts.rule import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED


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
