"""Comparison rows as the book's sentences print them: a relative change with its interval,
a verdict in words, a range over fleet sizes (no resampling here)."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd


def change_text(row: Mapping) -> str:
    """One :func:`compare` row's relative change as ``"+7.7% [+7.1, +8.4]"`` (positive =
    ``x`` better; the interval is the 95% bootstrap CI), ``"n/a"`` without data."""
    if not np.isfinite(row["rel_pct"]):
        return "n/a"
    return f"{row['rel_pct']:+.1f}% [{row['rel_ci_low']:+.1f}, {row['rel_ci_high']:+.1f}]"


#: Words for a comparison verdict in the book's sentences.
VERDICT_WORDS = {"better": "better", "worse": "worse", "unresolved": "not distinguishable with these seeds",
                 "no data": "not measured"}

def says(row: Mapping | None) -> str:
    """A comparison row as prose: ``"+7.7% [+7.1, +8.4] (better)"``, or "not measured"."""
    return "not measured" if row is None else f"{change_text(row)} ({VERDICT_WORDS[row['verdict']]})"


def comparison_row(comp: pd.DataFrame, **equals) -> dict | None:
    """The row of a comparison table whose columns equal ``equals`` (e.g. ``metric=``,
    ``method=``), at the smallest fleet size when several match; None when none does (a
    missing variant, method or metric), for sentences that must not crash on partial
    results."""
    if len(comp) == 0:
        return None
    rows = comp
    for col, value in equals.items():
        if col not in rows:
            return None
        rows = rows[rows[col] == value]
    if len(rows) == 0:
        return None
    return (rows.sort_values("servers") if "servers" in rows else rows).iloc[0].to_dict()


def range_text(values, spec: str = ".3g") -> str:
    """``"low to high"`` of the finite ``values`` in format ``spec``, a single value when
    they all print alike, ``"n/a"`` when none is finite (for sentences over fleet sizes)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return "n/a"
    lo, hi = f"{v.min():{spec}}", f"{v.max():{spec}}"
    return lo if lo == hi else f"{lo} to {hi}"
