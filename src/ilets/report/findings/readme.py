"""README's headline: every learner of both families against the best heuristic, then the paper's
improvement table beside ours (written by :mod:`ilets.report.headline`).
"""

from __future__ import annotations

from pathlib import Path

from ilets.report import heuristic_gap as G
from ilets.report.findings.base import FLAT_FAMILY, PAPER_LABELS
from ilets.report.findings.results import paper_tables
from ilets.report.report_context import ReportContext


#: README's headline table sits between these markers (written by :mod:`ilets.report.headline`).
HEADLINE_MARKERS = ("<!-- headline:start -->", "<!-- headline:end -->")

#: The learner families as README's headline table names them.
HEADLINE_FAMILIES = {"flat": "faithful (flat)", "per-server": "competent (per-server)"}


def shipped_per_server(ctx: ReportContext):
    """The per-server grid shipped beside ``ctx``'s folder (``shipped/per-server`` beside
    ``shipped/paper``), None when ``ctx`` is not a shipped folder or nothing is shipped there:
    README is written from shipped folders only, never from a local ``results/`` grid."""
    from ilets.study.results import PER_SERVER_SEARCH, has_store

    folder = Path(ctx.out).parent / Path(PER_SERVER_SEARCH[-1]).name
    shipped = Path(ctx.out).parent.name == "shipped"
    return folder if shipped and has_store(folder) else None


def headline_gap_markdown(ctx: ReportContext, per_server=None) -> str:
    """README's lead: how every learner of both families compares with the best heuristic at
    each fleet size (:func:`ilets.report.heuristic_gap.learner_gaps`, the book's resamples), a
    sentence per family and one table. ``per_server``: the per-server grid's folder (judged
    beside ``ctx``'s heuristic cells, :meth:`ReportContext.load_family`); None: not shipped yet."""
    flat = G.learner_gaps(ctx.metrics, reps=ctx.reps)
    tables = {HEADLINE_FAMILIES["flat"]: flat}
    lines = [G.every_learner_sentence(flat, FLAT_FAMILY)]
    if per_server is None:
        lines.append("The per-server learners' grid is not shipped yet (`shipped/per-server`), so only the authors' "
                     "flat learners are compared here.")
    else:
        ps = ReportContext.load_family(per_server, ctx, "per-server")
        gaps = G.learner_gaps(ps.metrics, reps=ctx.reps)
        tables[HEADLINE_FAMILIES["per-server"]] = gaps
        pending = f" {ps.coverage_text}" if ps.pending_text else ""
        lines.append(f"{G.every_learner_sentence(gaps, 'the per-server policy')} (Read from "
                     f"`{Path(per_server).parent.name}/{Path(per_server).name}` beside the faithful grid's heuristic "
                     f"cells on the same seeds.{pending})")
    head = f"**Every learner against the best heuristic.** {' '.join(lines)}\n"
    table = G.learner_gaps_markdown(tables)
    if not table:
        return head
    return (f"{head}\nEach learner's improvement over the best heuristic (by seed mean) at each fleet size (%, "
            f"positive: the learner is better; 95 % bootstrap CI over seeds, paired).\n\n{table}\n")


def headline_markdown(ctx: ReportContext, per_server=None) -> str:
    """README's headline: how every learner of both families compares with the best heuristic
    (:func:`headline_gap_markdown`; the per-server grid shipped beside ``ctx``'s folder unless
    ``per_server``, :func:`shipped_per_server`), then the paper's improvement table beside ours
    (per fleet size and pooled, 95 % CIs), with what the results are (:attr:`ReportContext.banner`)."""
    from ilets.report import plots

    table = plots.comparison_display(paper_tables(ctx)[1], PAPER_LABELS).reset_index()
    gap = headline_gap_markdown(ctx, per_server if per_server is not None else shipped_per_server(ctx))
    return (f"{gap}\n"
            f"Improvement over DRL (%), the paper's and ours with 95 % bootstrap CIs over seeds "
            f"(paired; `ilets.report.stats.improvement_table`).\n\n{table.to_markdown(index=False)}\n\n"
            f"{ctx.banner}\n")
