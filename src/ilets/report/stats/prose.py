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


# --- numbers for people -------------------------------------------------------------------
# One place for how the book prints a number it did not format itself (a table cell, a
# glued value): no raw float, no True/False, no nan, counts as integers.

#: What a table cell or sentence shows for a value that was not measured (NaN, None).
MISSING = "—"


def _missing(x) -> bool:
    try:
        return x is None or bool(pd.isna(x))
    except (TypeError, ValueError):  # an array or a list is not one missing value
        return False


def number_text(x, sig: int = 3) -> str:
    """``x`` as the book prints a number: :data:`MISSING` for NaN/None, a whole number (an
    int, or a float such as ``5000.0``) with thousands separators (``"5,000"``), any other
    number to at most ``sig`` significant digits, trailing zeros dropped (``0.03572...`` ->
    ``"0.0357"``, ``-10.5293`` -> ``"-10.5"``, ``1.50`` -> ``"1.5"``; large ones rounded to whole
    numbers, ``"12,346"``)."""
    if _missing(x):
        return MISSING
    v = float(x)
    if not np.isfinite(v):
        return "∞" if v > 0 else "-∞"
    if v == round(v) and abs(v) < 1e15:
        return f"{int(round(v)):,}"
    digits = max(0, sig - 1 - int(np.floor(np.log10(abs(v)))))
    text = f"{v:,.{digits}f}"
    if "." in text:  # significant digits, not padding: 1.50 -> 1.5
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def cell_text(value, sig: int = 3) -> str:
    """A table cell for people: ``"yes"``/``"no"`` for a bool, :data:`MISSING` for NaN/None,
    :func:`number_text` for a number, any other value (text) as it is."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if _missing(value):
        return MISSING
    if isinstance(value, (int, float, np.integer, np.floating)):
        return number_text(value, sig)
    return str(value)


def people_table(frame: pd.DataFrame, sig: int = 3) -> pd.DataFrame:
    """``frame`` with every cell as :func:`cell_text` prints it (headers unchanged)."""
    return frame.map(lambda v: cell_text(v, sig))


#: Counts the book writes in words (a larger count is written in digits).
_COUNT_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def count_text(n: int) -> str:
    """A count in words up to ten (``0`` -> ``"no"``, ``6`` -> ``"six"``), in digits above."""
    return _COUNT_WORDS[n] if 0 <= n < len(_COUNT_WORDS) else f"{n:,}"


#: Unit fractions the book writes in words.
_FRACTION_WORDS = {1: "the whole", 2: "half", 3: "a third", 4: "a quarter", 5: "a fifth", 10: "a tenth"}


def share_text(x: float) -> str:
    """A fraction of a whole in words: ``1`` -> ``"the whole"``, ``0.5`` -> ``"half"``,
    ``0.1`` -> ``"a tenth"``, ``0.02`` -> ``"1/50"``, ``0.4`` -> ``"2/5"``; a share that is no
    simple fraction as a percentage (``"3.7 %"``)."""
    from fractions import Fraction

    f = Fraction(float(x)).limit_denominator(1000)
    if f > 0 and abs(float(f) - float(x)) < 1e-9 * max(1.0, abs(float(x))):
        if f.numerator == 1 and f.denominator in _FRACTION_WORDS:
            return _FRACTION_WORDS[f.denominator]
        if f.denominator <= 1000 and f.numerator < f.denominator and f.numerator <= 9:
            return f"{f.numerator}/{f.denominator}"
    return f"{number_text(100 * float(x))} %"


def ratio_text(new: float, old: float, sig: int = 3) -> str:
    """How ``new`` compares with ``old`` where a percentage change would mislead (a change
    of +96,703 % or "by 100 %"): ``"967x"`` as large, ``"1/2,500"`` as large (a ratio under
    1/10 as its reciprocal), ``"0 (from 1.2)"`` for a zero, :data:`MISSING` without data."""
    if _missing(new) or _missing(old) or not np.isfinite(float(new)) or not np.isfinite(float(old)) or old == 0:
        return MISSING
    r = float(new) / float(old)
    if r == 0:
        return f"0 (from {number_text(old, sig)})"
    if abs(r) < 0.1:
        return f"1/{number_text(1 / r, sig)}"
    return f"{number_text(r, sig)}x"
