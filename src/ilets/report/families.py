"""Every claim judged twice: with the authors' flat learner (faithful) and with the per-server
learner (competent), side by side, and which conclusions depend on the learner.

The faithful verdicts are :func:`ilets.report.findings.summary_findings` of the book's context;
the competent ones are the same function on the per-server grid's context
(:meth:`ilets.report.report_context.ReportContext.load_family`: its learner cells at the fleet
sizes its coverage rule judges, beside the faithful grid's heuristic cells on the same fleet
sizes and seeds, judged with the same rule and the same resamples). A conclusion *depends on
the learner* when the claim is testable with both families and their verdicts differ; a claim
not testable with one of them cannot be compared yet, and is named as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ilets.method_table import LEARNERS
from ilets.report import verdicts as V
from ilets.report.findings.summary import SummaryFindings, summary_findings
from ilets.report.report_context import ReportContext, and_join

#: The two families as the claims table heads their columns.
FAITHFUL, COMPETENT = "faithful: the authors' flat learner", "competent: the per-server learner"
#: The table's column that says whether a claim's verdict depends on the learner.
DEPENDS = "depends on the learner"
#: Its values: the verdicts differ, they agree, or one side is not testable (or absent).
YES, NO, CANNOT_TELL = "yes", "no", "cannot tell yet"
#: What a family without results shows in its column.
NO_RESULTS = "no results yet"
COLUMNS = ["claim", "statement", FAITHFUL, COMPETENT, DEPENDS, "evidence, faithful", "evidence, competent"]


def families_table(flat: pd.DataFrame, per_server: pd.DataFrame | None) -> pd.DataFrame:
    """One row per claim of ``flat`` (:func:`ilets.report.verdicts.verdict_table` of the faithful
    family) with ``per_server``'s verdict and evidence beside it (None: the per-server family
    has no results, shown as :data:`NO_RESULTS`), and :data:`DEPENDS`."""
    rows = []
    other = per_server.set_index("claim") if per_server is not None else None
    for r in flat.itertuples(index=False):
        if other is not None and r.claim in other.index:
            has, v2, e2 = True, other.loc[r.claim, "verdict"], other.loc[r.claim, "evidence"]
        else:
            has, v2, e2 = False, NO_RESULTS, ""
        testable = has and V.NOT_TESTABLE not in (r.verdict, v2)
        rows.append({"claim": int(r.claim), "statement": r.statement, FAITHFUL: r.verdict, COMPETENT: v2,
                     DEPENDS: (YES if r.verdict != v2 else NO) if testable else CANNOT_TELL,
                     "evidence, faithful": r.evidence, "evidence, competent": e2})
    return pd.DataFrame(rows, columns=COLUMNS)


def _claims(numbers) -> str:
    numbers = [str(int(n)) for n in numbers]
    return f"claim{'s' if len(numbers) > 1 else ''} {and_join(numbers)}"


def dependence_sentence(table: pd.DataFrame) -> str:
    """Which conclusions depend on the learner, from :func:`families_table`: the claims whose
    verdicts differ between the families (with both verdicts), those that agree (grouped by
    verdict), and those that cannot be compared yet (and with which family not)."""
    if table.empty:
        return "There are no claims to compare."
    if (table[COMPETENT] == NO_RESULTS).all():
        return ("The per-server learner has no results here yet, so no conclusion can yet be said to depend on "
                "the learner.")
    parts = []
    differ = table[table[DEPENDS] == YES]
    same = table[table[DEPENDS] == NO]
    if len(differ):
        each = "; ".join(f"{'' if len(differ) == 1 else f'claim {r[0]}: '}{r[2]} with the flat learner, {r[3]} "
                         "with the per-server one" for r in differ.itertuples(index=False))
        parts.append(f"The verdict depends on the learner for {_claims(differ['claim'])} ({each})")
    elif len(same):
        parts.append("No verdict tested with both learners depends on the learner")
    if len(same):
        groups = "; ".join(f"{_claims(g['claim'])} {v}" for v, g in same.groupby(FAITHFUL, sort=False))
        parts.append(f"the same with either learner: {groups}")
    untested = table[table[DEPENDS] == CANNOT_TELL]
    if len(untested):
        sides = {}
        for label, col in (("the flat learner", FAITHFUL), ("the per-server learner", COMPETENT)):
            n = untested[untested[col].isin([V.NOT_TESTABLE, NO_RESULTS])]["claim"]
            if len(n):
                sides[label] = n
        if len(sides) == 1:
            label, n = next(iter(sides.items()))
            why = f": not testable with {label}"
        else:
            why = " (" + "; ".join(f"{_claims(n)} not testable with {label}" for label, n in sides.items()) + ")"
        parts.append(f"{_claims(untested['claim'])} cannot be compared yet{why}")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


@dataclass(frozen=True)
class FamiliesFindings:
    """The claims judged with both learner families (chapter 1)."""

    table: pd.DataFrame = field(repr=False)  #: :func:`families_table`
    sentence: str  #: :func:`dependence_sentence`
    source: str  #: Markdown: what the per-server verdicts are judged on, or that they are absent
    per_server: SummaryFindings | None = field(default=None, repr=False)

    @property
    def display(self) -> pd.DataFrame:
        """The table as chapter 1 shows it."""
        return self.table.rename(columns={"claim": "#", "statement": "the paper says"})


def per_server_context(ctx: ReportContext, folder: Path | str | None = None) -> ReportContext | None:
    """The per-server family's context beside ``ctx`` (the faithful one): the grid in ``folder``
    (default :func:`ilets.study.results.per_server_dir`); None when it has no store."""
    from ilets.study.results import has_store, per_server_dir

    folder = Path(folder) if folder is not None else per_server_dir()
    if not has_store(folder):
        return None
    return ReportContext.load_family(folder, ctx, "per-server")


def source_text(ps: ReportContext | None) -> str:
    """What the per-server verdicts are judged on (Markdown), or that there is no grid yet."""
    if ps is None:
        return "The per-server grid is not in this checkout yet, so its column is empty."
    where = f"`{ps.out.parent.name}/{ps.out.name}`"
    done = f"{ps.n_done:,} of {ps.planned_cells:,} planned cells finished"
    if ps.metrics.empty or not (ps.metrics["method"].isin(LEARNERS)).any():
        judged = f"none of its fleet sizes is judged yet ({ps.pending_text or 'no learner cell'})"
    else:
        judged = ps.coverage_text
    return (f"The per-server verdicts are judged on {where} ({done}) with the faithful grid's heuristic cells on the "
            f"same fleet sizes and seeds, by the same rule and resamples. {judged[0].upper() + judged[1:]}"
            f"{'' if judged.endswith('.') else '.'}")


def families_findings(ctx: ReportContext, summary: SummaryFindings | None = None,
                      folder: Path | str | None = None) -> FamiliesFindings:
    """Every claim with the faithful family's verdict (``summary``, :func:`summary_findings` of
    ``ctx`` if not given) beside the per-server family's (:func:`per_server_context`)."""
    flat = summary or summary_findings(ctx)
    ps = per_server_context(ctx, folder)
    other = summary_findings(ps) if ps is not None else None
    table = families_table(flat.table, other.table if other is not None else None)
    return FamiliesFindings(table, dependence_sentence(table), source_text(ps), other)
