"""What every chapter's findings share: the measures they compare, the reference heuristic, a
variant's comparison, and a claim's components as a display table and a sentence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ilets.method_table import METHOD_LABELS
from ilets.metric_table import names as metric_names
from ilets.report import stats as S
from ilets.report import verdicts as V


#: Final metrics the chapters compare over the whole pass.
FINAL = ("mean_reward", "avg_response_s", "success_rate", "energy_kwh")

#: Curve columns compared over the first decisions.
FIRST = ("reward", "response", "success")


#: Directions of the measures that :data:`ilets.report.stats.HIGHER_IS_BETTER` does not know.
DIRECTIONS = {"var": False, "bc_agreement_after": True, "oail_applied": True}

#: The heuristic whose curve removes the workload's own swings (chapter 6; the claims' curve measures).
REFERENCE = S.GAP_REFERENCE


#: The faithful learner family, as the sentences name it.
FLAT_FAMILY = "the authors' flat policy"

#: The paper's three metrics, as the improvement table names them.
PAPER_LABELS = metric_names("label", S.PAPER_METRICS)


def _label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


def _no_data(comp: pd.DataFrame) -> pd.DataFrame:
    return comp[comp["verdict"] != "no data"].reset_index(drop=True) if len(comp) else comp


def says(row: Mapping | None) -> str:
    """:func:`ilets.report.stats.says` (a comparison row as prose)."""
    return S.says(row)


@dataclass(frozen=True)
class VariantFindings:
    """A variant against the main study: the comparison table and a sentence."""

    name: str
    table: pd.DataFrame = field(repr=False)
    text: str = ""

    @property
    def present(self) -> bool:
        return len(self.table) > 0


def component_display(components: pd.DataFrame) -> pd.DataFrame:
    """A claim's :func:`ilets.report.verdicts.component_table` as a display table: the comparison,
    its status (the summary's), its effect with the 95 % CI (pooled when every fleet size points
    the same way, else per fleet size: :func:`ilets.report.verdicts.effect_numbers`), the paper's
    figure where it gives one, and at how many fleet sizes the CI is above and below zero."""
    return pd.DataFrame({
        "comparison": components["component"],
        "status": components["status"],
        "effect (95 % CI)": [V.effect_numbers(r.same_sign, r.pooled, r.pooled_low, r.pooled_high, r.per_scale)
                             for r in components.itertuples()],
        "paper": ["" if not np.isfinite(p) else f"{p:+.2f} %" for p in components["paper_pct"]],
        "fleet sizes with CI above 0": [f"{r.scales_ok}/{r.scales}" for r in components.itertuples()],
        "below 0": [f"{r.scales_worse}/{r.scales}" for r in components.itertuples()]})


def claims_display(components: Mapping[int, pd.DataFrame], claims: Sequence[int]) -> pd.DataFrame:
    """:func:`component_display` of several claims stacked, with a ``claim`` column first."""
    parts = [component_display(components[c]).assign(claim=c) for c in claims if len(components.get(c, ()))]
    cols = ["claim", "comparison", "status", "effect (95 % CI)", "paper", "fleet sizes with CI above 0", "below 0"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


#: How one plain sentence names each status of a claim's comparisons: (status, one, several).
STATUS_PLAIN = ((V.HOLDS_POOLED, "holds only with the fleet sizes pooled", "hold only with the fleet sizes pooled"),
                (V.HOLDS_SOME, "holds at some fleet sizes only", "hold at some fleet sizes only"),
                (V.DIRECTION_ONLY, "leans the claimed way without being clear", "lean the claimed way without being clear"),
                (V.FAILS, "shows no clear effect", "show no clear effect"),
                (V.REVERSES, "goes against the claim", "go against the claim"))


def status_counts(components: pd.DataFrame | None) -> dict[str, int]:
    """How many of a claim's comparisons have each status (:data:`ilets.report.verdicts.COMPONENT_STATUSES`),
    and their ``"total"``: the numbers :func:`_status_counts` words."""
    c = components["status"].value_counts() if components is not None and len(components) else pd.Series(dtype=int)
    return {"total": int(c.sum()), **{s: int(c.get(s, 0)) for s in V.COMPONENT_STATUSES}}


def _status_counts(components: pd.DataFrame | None) -> str:
    """One plain sentence on :func:`status_counts`: ``"2 of the 4 comparisons hold at every fleet size; 2 go
    against the claim"`` (a status is named only when some comparison has it)."""
    n = status_counts(components)
    total, held = n["total"], n[V.HOLDS]
    if not total:
        return "no comparison could be measured"
    if total == 1:
        return "the one comparison " + next((one for s, one, _ in ((V.HOLDS, "holds at every fleet size", ""),
                                                                  *STATUS_PLAIN) if n[s]), "is not measured")
    if held == total:
        return f"all {total} comparisons hold at every fleet size"
    head = f"{held or 'none'} of the {total} comparisons {'hold' if held > 1 else 'holds'} at every fleet size"
    rest = [f"{n[s]} {one if n[s] == 1 else several}" for s, one, several in STATUS_PLAIN if n[s]]
    return head + ("; " + " and ".join([", ".join(rest[:-1]), rest[-1]] if len(rest) > 1 else rest) if rest else "")


def rows(table: pd.DataFrame, **where) -> pd.DataFrame:
    """The rows of ``table`` whose column equals each given value (or is in it, for a list or tuple);
    ``table`` itself when it is empty or lacks a column (a chapter's filter, without a branch)."""
    if table is None or table.empty or any(c not in table for c in where):
        return table
    keep = pd.Series(True, index=table.index)
    for col, value in where.items():
        keep &= table[col].isin(value) if isinstance(value, (list, tuple)) else table[col] == value
    return table[keep]
