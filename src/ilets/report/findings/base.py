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


def _status_counts(components: pd.DataFrame) -> str:
    """``"2 of 3 components hold at every fleet size, ..."`` from :func:`ilets.report.verdicts.component_table`."""
    if components is None or components.empty:
        return "no component could be measured"
    c = components["status"].value_counts()

    def n(status: str, one: str, many: str) -> str:
        k = int(c.get(status, 0))
        return f"{k} {one if k == 1 else many}"

    held = int(c.get(V.HOLDS, 0))
    return (f"{held} of {len(components)} comparisons {'holds' if held == 1 else 'hold'} at every fleet size, "
            f"{n(V.HOLDS_POOLED, 'holds', 'hold')} pooled over fleet sizes only, "
            f"{n(V.HOLDS_SOME, 'is', 'are')} resolved the claimed way at some fleet sizes only, "
            f"{n(V.DIRECTION_ONLY, 'points', 'point')} the claimed way without being resolved, "
            f"{n(V.FAILS, 'is', 'are')} resolved nowhere and not the claimed way everywhere, and "
            f"{n(V.REVERSES, 'reverses', 'reverse')} (resolved against the claim at some fleet size)")
