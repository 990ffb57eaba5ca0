"""The per-server learner family in words: what its pilot chose, and how its grid compares.

README's paragraph on the per-server learners (between :data:`README_MARKERS`, written by
``python -m ilets.report.per_server --write README.md`` from the shipped folders, a test keeps
it equal) and chapter 13's findings come from here; the grid's coverage sentence, which chapter 1
shares, is :func:`ilets.report.report_context.coverage_sentence`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ilets.method_table import METHOD_LABELS, METHOD_SPECS
from ilets.metric_table import summary_columns
from ilets.report.report_context import ReportContext, coverage_sentence

README_MARKERS = ("<!-- per-server:start -->", "<!-- per-server:end -->")
#: the shipped folders the paragraph reads, relative to a ``shipped/`` root
PILOT, GRID, FAITHFUL = "pilot-per-server", "per-server", "paper"


#: the metrics chapter 13 tabulates: header, decimals (None: four significant figures), multiplier
METRICS = summary_columns()


@dataclass(frozen=True, kw_only=True)
class ChapterFindings:
    """What chapter 13 shows, computed with the book's resamples (``ctx.reps``)."""

    coverage: str  #: Markdown: how much of the per-server grid has finished, or that none has
    summaries: dict[int, pd.DataFrame] = field(repr=False)  #: fleet size -> summary display table
    gap: pd.DataFrame = field(repr=False)  #: :func:`ilets.report.heuristic_gap.gap_table`, for display
    gap_sentence: str
    heldout: pd.DataFrame = field(repr=False)  #: held-out change per method and fleet size, in percent
    #: the paper's improvement table with the per-server learners (ours over per-server DRL,
    #: :func:`ilets.report.findings.paper_tables` on the family's context), for display
    comparison: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: which fleet sizes the improvement table judges (the family's coverage rule), or why none
    judged: str = ""


def chapter_findings(ctx, folder: Path | None = None) -> ChapterFindings:
    """Chapter 13 from the per-server grid (``folder``, default
    :func:`ilets.study.results.per_server_dir`) and the faithful grid's heuristics (``ctx``)."""
    from ilets.report import findings as F
    from ilets.report import heuristic_gap as G
    from ilets.report import plots
    from ilets.report import stats as S
    from ilets.study.heldout import heldout_change
    from ilets.study.results import has_store, load_metrics, per_server_dir

    folder = Path(folder) if folder is not None else per_server_dir()
    has_grid = has_store(folder)
    learners = load_metrics(folder) if has_grid else ctx.metrics.iloc[0:0]
    metrics = G.family_metrics(learners, ctx.metrics)
    summary = S.summary_table(metrics, tuple(METRICS), reps=ctx.reps) if len(learners) else pd.DataFrame()
    summaries = {int(s): plots.summary_display(summary[summary["servers"] == s], METRICS)
                 for s in (sorted(summary["servers"].unique()) if len(summary) else [])}
    gap = G.gap_table(metrics, reps=ctx.reps)
    shown_gap = gap.assign(learner=gap["learner"].replace(METHOD_LABELS),
                           heuristic=gap["heuristic"].replace(METHOD_LABELS), measure=gap["measure"].map(G.MEASURE_NAMES))
    held = heldout_change(learners, ("method", "servers"))
    held = held.assign(method=held["method"].replace(METHOD_LABELS),
                       **{c: 100 * held[c].astype(float) for c in ("change", "change_low", "change_high")})
    absent = "The per-server grid has no results in this checkout yet."
    coverage = coverage_sentence(folder, learners) if has_grid else absent
    family = ReportContext.load_family(folder, ctx, "per-server") if has_grid else None
    comparison = (plots.comparison_display(F.paper_tables(family)[1], F.PAPER_LABELS)
                  if family is not None and {"drl", "drl+"} <= set(family.metrics["method"]) else pd.DataFrame())
    judged = family.coverage_text if family is not None else absent
    return ChapterFindings(coverage=coverage, summaries=summaries, gap=shown_gap,
                           gap_sentence=G.gap_sentence(gap, "the per-server policy"), heldout=held, comparison=comparison,
                           judged=judged)


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
    CPU seconds of a cell per method and fleet size for the methods that run OAIL's experts."""
    if learners.empty or "cpu_s" not in learners:
        return ""
    per = learners.groupby(["method", "servers"])["cpu_s"].mean()
    oail = [f"{METHOD_LABELS.get(m, m)} {int(s)} servers {per[(m, s)]:,.0f} s"
            for m, s in per.index if METHOD_SPECS.get(m) is not None and METHOD_SPECS[m].oail]
    text = f"The finished cells took {learners['cpu_s'].sum() / 3600:.2f} CPU-hours"
    if oail:
        text += f"; a cell with OAIL's experts took, in CPU seconds per cell: {', '.join(oail)}"
    return text + " (the cells' own records)."


def readme_block(shipped: Path, reps: int = 2000) -> str:
    """README's paragraph from the shipped folders under ``shipped``."""
    from ilets.report import heuristic_gap as G
    from ilets.study.results import has_store, load_metrics

    parts = [pilot_sentence(shipped / PILOT)]
    grid = shipped / GRID
    if has_store(grid):
        learners = load_metrics(grid)
        metrics = G.family_metrics(learners, load_metrics(shipped / FAITHFUL))
        parts += [coverage_sentence(grid, learners),
                  G.gap_sentence(G.gap_table(metrics, reps=reps), "the per-server policy"), cost_sentence(learners)]
    else:
        parts.append("The per-server grid is not shipped yet.")
    parts.append("Chapter 13 of the book (*The per-server learners*) has the tables.")
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
