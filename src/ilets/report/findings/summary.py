"""Chapter 1, the summary: the scope of the results, the verdict on every claim, whether any
learner beats the best heuristic, and what the authors' code fixes of the learner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ilets.report import heuristic_gap as G
from ilets.report import verdicts as V
from ilets.report.findings.base import FLAT_FAMILY
from ilets.report.report_context import ReportContext


#: Workload descriptions for the summary's scope.
WORKLOADS = {
    "synthetic": "the embedded synthetic window calibrated to the paper's (same counts, arrival rate, bursts "
                 "and trend change; CPU requests from the real trace's distribution), because the Google "
                 "trace cannot be downloaded where this book is built",
    "google": "a window of the Google cluster trace (May 2011) chosen to match the paper's task counts",
}

@dataclass(frozen=True, kw_only=True)
class SummaryFindings:
    """The summary chapter: the scope of the results and the verdict on every claim."""

    n_done: int
    n_failed: int
    cpu_hours: float
    workload_text: str
    verdicts: list = field(repr=False)
    table: pd.DataFrame = field(repr=False)
    counts: dict = field(default_factory=dict)


def summary_findings(ctx: ReportContext) -> SummaryFindings:
    """Scope counts (finished cells, failed attempts, CPU hours) and :func:`ilets.report.verdicts.all_verdicts`."""
    verdicts = V.all_verdicts(ctx.metrics, ctx.curves, ctx.profile, reps=ctx.reps, out=ctx.out, family=ctx.family)
    table = V.verdict_table(verdicts)
    counts = {v: int((table["verdict"] == v).sum()) for v in V.VERDICTS}
    kind = ctx.run.workload.kind
    return SummaryFindings(n_done=ctx.n_done, n_failed=ctx.n_failed, cpu_hours=ctx.cpu_hours,
                           workload_text=WORKLOADS.get(kind, kind), verdicts=verdicts, table=table, counts=counts)


def gap_texts(ctx: ReportContext, per_server=None) -> dict[str, str]:
    """The summary's "Does any learner beat the best heuristic?" for each learner family:
    ``gap_flat`` (``ctx``'s own learners, :func:`ilets.report.heuristic_gap.gap_sentence`) and
    ``gap_per_server`` (Markdown: the per-server grid, :func:`ilets.study.results.per_server_dir`
    unless ``per_server``, against the faithful grid's heuristic cells on the same seeds; a
    sentence saying it is not here yet when it has no store)."""
    from pathlib import Path

    from ilets.report.report_context import coverage_sentence
    from ilets.study.results import has_store, load_metrics, per_server_dir

    texts = {"gap_flat": G.gap_sentence(G.gap_table(ctx.metrics, reps=ctx.reps), FLAT_FAMILY)}
    folder = Path(per_server) if per_server is not None else per_server_dir()
    if has_store(folder):
        metrics = load_metrics(folder)
        gap = G.gap_table(G.family_metrics(metrics, ctx.metrics), reps=ctx.reps)
        texts["gap_per_server"] = (f"{G.gap_sentence(gap, 'the per-server policy')} "
                                   f"{coverage_sentence(folder, metrics)} The heuristics are the faithful grid's "
                                   "cells on the same seeds.")
    else:
        texts["gap_per_server"] = ("The per-server learners' grid is not in this checkout yet, so the per-server "
                                   "family is judged only by its positive control above: frozen and greedy, its "
                                   "clones match their experts (Earliest-Finish, Greedy-Cost and GA+PSO) to within "
                                   "the control's tolerance.")
    return texts


def sci(x: float) -> str:
    """A rate as the book writes it: ``2.5e-6``, ``3e-4`` (no padded exponent)."""
    mantissa, exponent = f"{x:e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def learner_settings_text(run) -> str:
    """What the authors' code fixes of the learner and what we changed (the summary's "What
    was easy"), from the results' run configuration (:class:`ilets.config.RunConfig`) and the
    authors' learning rate (:data:`ilets.report.deviations.AUTHORS_LEARNING_RATE`)."""
    from ilets.report.deviations import AUTHORS_LEARNING_RATE

    theta = run.reward.theta
    ours = run.ppo.learning_rate
    lr = (f"its learning rate ({sci(AUTHORS_LEARNING_RATE)}) we did not keep: PPO learns at {sci(ours)} here"
          if not np.isclose(ours, AUTHORS_LEARNING_RATE) else f"so does its learning rate ({sci(ours)}), which we keep")
    return (f"the authors' code fixes the reward's weights (power and wait weighted {theta:g}/{1 - theta:g}; their "
            f"scales are ours) and the state layout; {lr}")
