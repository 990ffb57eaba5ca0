"""The per-server learner family in words: what its pilot chose, and how its grid compares.

The records appendix's paragraph on the per-server learners (between :data:`README_MARKERS`,
written by ``python -m ilets.report.per_server --write book/records.md`` from the shipped folders,
a test keeps it equal) and chapter 13's findings come from here; the grid's coverage sentence, which chapter 1
shares, is :func:`ilets.report.report_context.coverage_sentence`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ilets.method_table import METHOD_LABELS, learners_with
from ilets.report.report_context import ReportContext, and_join, coverage_sentence

README_MARKERS = ("<!-- per-server:start -->", "<!-- per-server:end -->")
#: the shipped folders the paragraph reads, relative to a ``shipped/`` root
PILOT, GRID, FAITHFUL = "pilot-per-server", "per-server", "paper"


#: the largest held-out change (percent, either way) of a pre-trained learner's online pass that
#: the chapter still reads as "the pass left the clone as it was"
CLONE_KEPT_PCT = 1.0


@dataclass(frozen=True, kw_only=True)
class ChapterFindings:
    """What chapter 13 shows, computed with the book's resamples (``ctx.reps``)."""

    coverage: str  #: Markdown: how much of the per-server grid has finished, or that none has
    lead: str = ""  #: the finding in at most three plain sentences (:func:`chapter_lead`)
    gap: pd.DataFrame = field(repr=False)  #: :func:`gap_display`: the best learner against the best heuristic
    heldout: pd.DataFrame = field(repr=False)  #: :func:`heldout_display`: the online pass's held-out change
    #: the paper's improvement table with the per-server learners (ours over per-server DRL,
    #: :func:`ilets.report.findings.paper_tables` on the family's context), for display
    comparison: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: which fleet sizes the improvement table judges (the family's coverage rule), or why none
    judged: str = ""


def _span(values, digits: int = 1) -> str:
    """``+7.6 to +41.0 %`` (one value: ``+7.6 %``), signed, with ``digits`` decimals."""
    lo, hi = (f"{v:+.{digits}f}" for v in (min(values), max(values)))
    return f"{lo} %" if lo == hi else f"{lo} to {hi} %"


def chapter_lead(comparison: pd.DataFrame, gap: pd.DataFrame, held: pd.DataFrame) -> str:
    """Chapter 13's finding in at most three plain sentences: how much DRL+ and ILETS- improve
    on DRL's response time across fleet sizes against the paper's figure (``comparison``:
    :func:`ilets.report.findings.paper_tables`' per-size comparison), the best learner's response
    time against the best heuristic's per fleet size (``gap``: :func:`ilets.report.heuristic_gap.gap_table`),
    and how far the online pass moved the pre-trained learners on held-out tasks (``held``:
    :func:`ilets.study.heldout.heldout_change` by method and fleet size, fractions)."""
    parts = []
    if not comparison.empty:
        rt = comparison[(comparison["metric"] == "avg_response_s") & (comparison["servers"].astype(str) != "all")]
        said = [(m, g) for m in ("drl+", "ilets-") for g in [rt[rt["method"] == m]] if len(g)]
        if said:
            first, rest = said[0], said[1:]
            parts.append("With a network that scores each server from that server's own row, "
                         f"{METHOD_LABELS[first[0]]} improves on DRL's response time by {_span(first[1]['ours_pct'])} "
                         "across fleet sizes" + "".join(f" and {METHOD_LABELS[m]} by {_span(g['ours_pct'])}"
                                                        for m, g in rest)
                         + " (the paper: " + " and ".join(f"{g['paper_pct'].iloc[0]:.2f} %" for _, g in said) + ").")
    rt_gap = gap[gap["measure"] == "avg_response_s"] if not gap.empty else gap
    if len(rt_gap):
        rows = list(rt_gap.itertuples())
        parts.append("Against the best heuristic on the same tasks, the best per-server learner's response time is "
                     + and_join([f"{rows[0].effect_pct:+.1f} % at {rows[0].servers} servers"]
                                + [f"{r.effect_pct:+.1f} % at {r.servers}" for r in rows[1:]])
                     + " (positive: the learner is faster).")
    cloned = held[held["method"].isin(learners_with(oinpt=True))] if not held.empty else held
    fresh = held[held["method"].isin(learners_with(oinpt=False))] if not held.empty else held
    if len(cloned):
        moved = 100 * cloned["change"].astype(float)
        text = (f"On held-out tasks the online pass moves {and_join(METHOD_LABELS[m] for m in dict.fromkeys(cloned['method']))} "
                f"by {_span(moved, 2)} from the expert's clone they start from")
        if len(fresh):
            text += (f", where {and_join(METHOD_LABELS[m] for m in dict.fromkeys(fresh['method']))} gain "
                     f"{_span(100 * fresh['change'].astype(float))} from scratch")
        if moved.abs().max() <= CLONE_KEPT_PCT:
            text += ": the pre-trained learners stay their expert's clone"
        parts.append(text + ".")
    return " ".join(parts) or "The per-server grid has no results in this checkout yet."


def gap_display(gap: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.report.heuristic_gap.gap_table` as chapter 13 shows it: per measure and fleet
    size the best learner, the best heuristic and the learner's improvement (%) with its 95 % interval."""
    from ilets.report import heuristic_gap as G

    return pd.DataFrame({
        "measure": gap["measure"].map(G.MEASURE_NAMES), "servers": gap["servers"],
        "best learner": gap["learner"].replace(METHOD_LABELS), "best heuristic": gap["heuristic"],
        "learner's improvement (%)": [f"{r.effect_pct:+.1f} [{r.ci_low_pct:+.1f}, {r.ci_high_pct:+.1f}]"
                                      for r in gap.itertuples()]})


def heldout_display(held: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.study.heldout.heldout_change` (fractions) as chapter 13 shows it: a row per
    method, a column per fleet size, each cell the mean change in percent with its 95 % t-interval."""
    if held.empty:
        return pd.DataFrame()
    cells = held.assign(cell=[f"{100 * r.change:+.2f} [{100 * r.change_low:+.2f}, {100 * r.change_high:+.2f}]"
                              for r in held.itertuples()])
    wide = cells.pivot(index="method", columns="servers", values="cell")
    wide = wide.reindex([m for m in METHOD_LABELS if m in wide.index])
    wide.columns = [f"{s} servers" for s in wide.columns]
    return wide.rename(index=METHOD_LABELS).rename_axis("method").reset_index()


def chapter_findings(ctx, folder: Path | None = None) -> ChapterFindings:
    """Chapter 13 from the per-server grid (``folder``, default
    :func:`ilets.study.results.per_server_dir`) and the faithful grid's heuristics (``ctx``)."""
    from ilets.report import findings as F
    from ilets.report import heuristic_gap as G
    from ilets.report import plots
    from ilets.study.heldout import heldout_change
    from ilets.study.results import has_store, load_metrics, per_server_dir

    folder = Path(folder) if folder is not None else per_server_dir()
    has_grid = has_store(folder)
    learners = load_metrics(folder) if has_grid else ctx.metrics.iloc[0:0]
    metrics = G.family_metrics(learners, ctx.metrics)
    gap = G.gap_table(metrics, reps=ctx.reps)
    held = heldout_change(learners, ("method", "servers"))
    absent = "The per-server grid has no results in this checkout yet."
    coverage = coverage_sentence(folder, learners) if has_grid else absent
    family = ReportContext.load_family(folder, ctx, "per-server") if has_grid else None
    raw = (F.paper_tables(family)[1] if family is not None and {"drl", "drl+"} <= set(family.metrics["method"])
           else pd.DataFrame())
    comparison = plots.comparison_display(raw, F.PAPER_LABELS) if len(raw) else pd.DataFrame()
    judged = family.coverage_text if family is not None else absent
    return ChapterFindings(coverage=coverage, lead=chapter_lead(raw, gap, held), gap=gap_display(gap),
                           heldout=heldout_display(held), comparison=comparison, judged=judged)


def pilot_sentence(folder: Path) -> str:
    """The per-server pilot's choice and what the chosen fine-tuning did to the clone."""
    from ilets.study.pilot import change_text, joint_report

    rep = joint_report(folder)
    if rep.chosen is None:
        return rep.summary
    row = rep.table.set_index("variant").loc[rep.chosen]
    return (f"The per-server pilot ({int(rep.table['cells'].sum())} DRL+ cells on pilot seeds, paper scale, two "
            f"declared rounds) chose {rep.chosen} ({row['settings']}): fine-tuned online, the clone ends its pass "
            f"{change_text(row)} from where it started on a held-out segment, frozen and greedy.")


def cost_sentence(learners: pd.DataFrame) -> str:
    """What the per-server cells cost, from their own records: CPU-hours in all, and the mean
    CPU seconds of a cell of the costliest method (the one running OAIL's experts, at its
    costliest fleet size)."""
    if learners.empty or "cpu_s" not in learners:
        return ""
    per = learners.groupby(["method", "servers"])["cpu_s"].mean()
    method, servers = per.idxmax()
    return (f"The finished cells took {learners['cpu_s'].sum() / 3600:.2f} CPU-hours (the cells' own records); the "
            f"costliest, {METHOD_LABELS.get(method, method)} at {servers} servers, {per.max():,.0f} CPU seconds per cell.")


def readme_block(shipped: Path, reps: int = 2000) -> str:
    """The records appendix's paragraph from the shipped folders under ``shipped``: what the
    pilot chose, how much of the grid has finished, the best learner against the best heuristic
    on response time (:func:`chapter_lead`'s sentence), and what the cells cost."""
    from ilets.report import heuristic_gap as G
    from ilets.study.results import has_store, load_metrics

    parts = [pilot_sentence(shipped / PILOT)]
    grid = shipped / GRID
    if has_store(grid):
        learners = load_metrics(grid)
        metrics = G.family_metrics(learners, load_metrics(shipped / FAITHFUL))
        parts += [coverage_sentence(grid, learners),
                  chapter_lead(pd.DataFrame(), G.gap_table(metrics, reps=reps), pd.DataFrame()),
                  cost_sentence(learners)]
    else:
        parts.append("The per-server grid is not shipped yet.")
    parts.append("Chapter 13 has the tables.")
    return " ".join(p for p in parts if p) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print README's per-server paragraph, or write it between :data:`README_MARKERS`."""
    from ilets.files import marked_block_main

    return marked_block_main(argv, "python -m ilets.report.per_server", main.__doc__,
                             ("shipped", Path("shipped"), "the shipped folders' root"),
                             lambda shipped: readme_block(shipped or Path("shipped")), README_MARKERS,
                             "the per-server paragraph")


if __name__ == "__main__":
    raise SystemExit(main())
