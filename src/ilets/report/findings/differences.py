"""Where we differ from the paper (chapter 9): for each claim not reproduced, the variants that
test a reconstruction choice behind it, and the claim's verdict under each choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd

from ilets.report import verdicts as V
from ilets.report.findings.scales import _small_context
from ilets.report.findings.summary import SummaryFindings, summary_findings
from ilets.report.report_context import ReportContext, and_join


@dataclass(frozen=True, kw_only=True)
class DifferenceFindings:
    """The summary's "where we differ" section: for each claim the main results do not
    reproduce, every variant that can test a reconstruction choice behind it, with the claim's
    verdict under the main choice and under the variant's (:func:`ilets.report.verdicts.variant_verdicts`)."""

    table: pd.DataFrame = field(repr=False)  #: one row per (claim, variant)
    sentence: str  #: which variants change which verdicts
    untested: str  #: the variants with no results to test (not run, or not judged yet)

    @property
    def untested_text(self) -> str:
        """The untested variants as a sentence (or that every variant has results)."""
        if self.untested:
            return f"No results test these variants yet: {self.untested}."
        return "Every variant of the study has results at one scale or the other."


def difference_findings(ctx: ReportContext, small_out=None, summary: SummaryFindings | None = None
                        ) -> DifferenceFindings:
    """For each claim not reproduced in ``ctx``, the variants of :data:`ilets.report.deviations.DEVIATIONS`
    that can test it: from ``ctx`` where the variant is judged there, else from the
    reduced-scale results (:func:`ilets.study.results.scale_dir` unless ``small_out``),
    labelled as a quick look. A main-grid method the variant's change does not touch
    (:func:`ilets.method_table.reads_section` of the sections :meth:`ReportContext.variant_sections`
    finds changed) keeps its main cells on both sides. ``summary``: :func:`summary_findings`
    of ``ctx``, if already computed."""
    from ilets.method_table import reads_section
    from ilets.report.deviations import DEVIATIONS

    cols = ["claim", "verdict here", "variant", "choice it tests", "results", "verdict, our choice",
            "verdict, the variant's"]
    verdicts = (summary or summary_findings(ctx)).table.set_index("claim")["verdict"]
    failing = [int(c) for c, v in verdicts.items() if v != V.REPRODUCED]
    small = _small_context(ctx, small_out)
    rows, untested = [], []
    for dev in (d for d in DEVIATIONS if d.variant and failing):
        source = ctx if len(ctx.variant_metrics(dev.variant)) else \
            small if small is not None and len(small.variant_metrics(dev.variant)) else None
        if source is None:
            untested.append(f"{ctx.variant_missing_text(dev.variant)} ({dev.topic.lower()})")
            continue
        vm = source.variant_metrics(dev.variant)
        sections = source.variant_sections(dev.variant)
        kept = [m for m in source.metrics["method"].unique()
                if m not in set(vm["method"]) and not any(reads_section(m, s) for s in sections)]
        vv = V.variant_verdicts(source.metrics, source.curves, vm, source.variant_curves(dev.variant), kept,
                                source.profile, reps=ctx.reps, out=source.out, claims=failing)
        where = (f"{'' if source is ctx else 'quick look, '}{source.scale_pct} of the window, "
                 f"{and_join(sorted(int(s) for s in vm['servers'].unique()))} servers, "
                 f"{vm['seed'].nunique()} seeds")
        for r in vv[vv["claim"].isin(failing)].itertuples():
            rows.append({"claim": r.claim, "verdict here": verdicts[r.claim], "variant": f"`{dev.variant}`",
                         "choice it tests": dev.topic, "results": where, "verdict, our choice": r.main,
                         "verdict, the variant's": r.variant})
    table = pd.DataFrame(rows, columns=cols).sort_values(["claim", "variant"], kind="stable").reset_index(drop=True)
    return DifferenceFindings(table=table, sentence=difference_sentence(table, failing), untested="; ".join(untested))


def difference_sentence(table: pd.DataFrame, failing: Sequence[int]) -> str:
    """Which variants move a verdict towards the paper (or away), claim by claim, from
    :func:`difference_findings`' table; claims no variant tests are named too."""
    if not failing:
        return "Every claim is reproduced here, so no reconstruction choice is needed to explain a difference."
    rank = {v: i for i, v in enumerate(V.VERDICT_ORDER)}
    parts = []
    for claim in failing:
        t = table[table["claim"] == claim]
        if t.empty:
            parts.append(f"no variant tests claim {claim}")
            continue
        better = [f"{r.variant} ({r[5]} → {r[6]})" for r in t.itertuples(index=False)
                  if rank.get(r[6], 9) < rank.get(r[5], 9)]
        worse = [f"{r.variant} ({r[5]} → {r[6]})" for r in t.itertuples(index=False)
                 if rank.get(r[6], 9) > rank.get(r[5], 9)]
        words = f"claim {claim}: " + (f"closer to the paper with {and_join(better)}" if better else
                                      f"no tested variant brings it closer to the paper ({and_join(t['variant'])})")
        if worse:
            words += f", further from it with {and_join(worse)}"
        parts.append(words)
    return "By claim, " + "; ".join(parts) + "."


def verdict_changes(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`difference_findings`' table whose verdict the variant changes, for
    people: the claim as the paper states it, the choice tested (no profile names), the results
    it was judged on and both verdicts. Empty when no variant changes a verdict."""
    from ilets.report.verdicts.claims import CLAIMS

    cols = ["claim", "choice it tests", "results", "our choice", "the variant's"]
    if table.empty:
        return pd.DataFrame(columns=cols)
    moved = table[table["verdict, our choice"] != table["verdict, the variant's"]]
    return pd.DataFrame({"claim": [f"{c}. {CLAIMS[int(c)]}" for c in moved["claim"]],
                         "choice it tests": moved["choice it tests"].to_numpy(),
                         "results": moved["results"].to_numpy(),
                         "our choice": moved["verdict, our choice"].to_numpy(),
                         "the variant's": moved["verdict, the variant's"].to_numpy()}, columns=cols)


def verdict_changes_sentence(table: pd.DataFrame) -> str:
    """How many of the (claim, variant) pairs judged change the claim's verdict, in one sentence."""
    from ilets.report.stats.prose import count_text

    changed = int((table["verdict, our choice"] != table["verdict, the variant's"]).sum()) if len(table) else 0
    return (f"Of the {len(table):,} pairs of a claim not reproduced and a variant that tests a choice behind it, "
            f"{count_text(changed)} change the claim's verdict; the table lists them.")
