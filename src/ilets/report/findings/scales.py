"""The main results' verdicts beside a reduced-scale run's (chapter 1), and what a book build
reads and re-runs (chapters 1 and 10).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ilets.report.findings.summary import SummaryFindings, summary_findings
from ilets.report.report_context import ReportContext


def scale_comparison(main: SummaryFindings, small: SummaryFindings | None, main_label: str,
                     small_label: str) -> pd.DataFrame:
    """The verdicts of the main results beside those of a reduced-scale run of the same claims,
    one row per claim, with a column that says whether the verdict depends on the scale.

    ``small`` None (no reduced-scale results at hand) gives the main verdicts alone.
    """
    table = main.table[["claim", "statement", "verdict"]].rename(columns={"verdict": main_label})
    if small is None:
        return table
    other = small.table[["claim", "verdict"]].rename(columns={"verdict": small_label})
    table = table.merge(other, on="claim", how="left")
    table["same at both scales"] = np.where(table[main_label] == table[small_label], "yes", "no")
    return table


def _small_results(ctx: ReportContext, small_out=None):
    """The reduced-scale results folder shown beside ``ctx`` (:func:`ilets.study.results.scale_dir`
    unless ``small_out``), or None when it has no store or is ``ctx``'s own folder."""
    from pathlib import Path

    from ilets.study.results import has_store, scale_dir

    small_out = Path(small_out) if small_out else scale_dir()
    has_small = has_store(small_out) and small_out.resolve() != ctx.out.resolve()
    return small_out if has_small else None


def _small_context(ctx: ReportContext, small_out=None) -> ReportContext | None:
    """The context of :func:`_small_results` (with ``ctx``'s resamples), or None."""
    small_dir = _small_results(ctx, small_out)
    return ReportContext.load(small_dir, reps=ctx.reps) if small_dir is not None else None


@dataclass(frozen=True, kw_only=True)
class ScaleFindings:
    """The main verdicts beside a reduced-scale run's, and what the build read."""

    table: pd.DataFrame
    small_name: str  #: profile of the reduced-scale results ("" when there are none)
    sentence: str  #: how many verdicts depend on the scale
    read_text: str  #: the folders this build read


def _at_servers(table: pd.DataFrame, servers) -> pd.DataFrame:
    return table[table["servers"].isin(list(servers))].reset_index(drop=True)


def scale_sentence(table: pd.DataFrame, main_label: str, small_label: str) -> str:
    """How many of the claims in :func:`scale_comparison`'s ``table`` get another verdict at the
    reduced scale, naming each with both verdicts (the summary shows no numbered claim list)."""
    differ = table[table["same at both scales"] == "no"]
    moved = "; ".join(f"{r['statement']} ({r[main_label]} in the main results, {r[small_label]} at the reduced scale)"
                      for r in differ.to_dict("records"))
    return (f"With the authors' flat learner, {len(differ)} of the paper's {len(table)} claims get another verdict "
            "at the reduced scale" + (f", so they depend on the scale they are judged at: {moved}." if len(differ) else "."))


def scale_findings(ctx: ReportContext, small_out=None, summary: SummaryFindings | None = None) -> ScaleFindings:
    """Verdicts at the main results' scale beside those of the reduced-scale results
    (:func:`ilets.study.results.scale_dir` unless ``small_out``), judged on the main results'
    fleet sizes only; the reduced results are left out when they are the main results
    themselves or have no store. ``summary``: :func:`summary_findings` of ``ctx``, if already
    computed."""
    small = _small_context(ctx, small_out)
    if small is not None and set(small.scales) - set(ctx.scales):
        # the same fleet sizes at both scales, so a difference is one of scale, not of coverage
        small = replace(small, metrics=_at_servers(small.metrics, ctx.scales),
                                    curves=_at_servers(small.curves, ctx.scales))
    main_label = f"verdict ({ctx.name}, {ctx.scale_pct} scale, {ctx.scales_text} servers, {ctx.seeds_text} seeds)"
    small_label = (f"verdict at the reduced scale ({small.name}, {small.scale_pct}, {small.scales_text} servers, "
                   f"{small.seeds_text} seeds)" if small else "")
    table = scale_comparison(summary or summary_findings(ctx), summary_findings(small) if small else None, main_label,
                             small_label)
    if small is None:
        sentence = "No reduced-scale results are at hand, so no verdict here can be set beside another scale's."
    else:
        sentence = scale_sentence(table, main_label, small_label)
    read = f"`{ctx._shown_path}` ({ctx.name} profile)"
    if small is not None:
        read += f" and `{small._shown_path}` ({small.name} profile)"
    return ScaleFindings(table=table, small_name=small.name if small else "", sentence=sentence, read_text=read)
