"""A user's own task table from a file: CSV or parquet with arrival, CPU, length and deadline.

What ``ilets evaluate`` schedules (:mod:`ilets.study.evaluate`). One row per task:

=========  ==========================================================  ===========
column     meaning                                                     allowed
=========  ==========================================================  ===========
arrival    arrival time, s (any origin; rows in non-decreasing order)  |a| <= 2**53
cpu        CPU request in trace units (the largest machine is 1.0)     > 0, finite
length     task length, million instructions (MI)                      > 0, finite
deadline   relative deadline, s (response at most this succeeds)       > 0, finite
=========  ==========================================================  ===========

Other columns are ignored. Every malformed value is refused with one line that names the
file, the row and the column (:class:`TaskFileError`): the row is the file's line for CSV
(the header is line 1) and the 1-based data row for parquet. A parquet column must hold
numbers (a ``datetime64`` arrival, say, is refused: read as numbers it would be nanoseconds).

The arrivals are shifted so that the first is 0 (:func:`from_zero`), so any origin gives the
same schedule: the simulator adds seconds to arrival times, and at a far origin (a Unix time
in microseconds, 1.7e15) the 64-bit sum loses the task's length. The shift is exact: a CSV's
decimal text is subtracted in decimal arithmetic, a parquet integer column in integers.
Arrivals beyond :data:`MAX_ARRIVAL` are refused, where 64-bit floats no longer hold whole
seconds (the file itself then lost its arrivals' differences).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ilets.workloads.workload import TaskTable

if TYPE_CHECKING:
    import pandas as pd

#: The columns a task file must have, in the order of :class:`TaskTable`.
TASK_COLUMNS = ("arrival", "cpu", "length", "deadline")
#: Columns whose values must be strictly positive.
_POSITIVE = ("cpu", "length", "deadline")
#: The largest arrival time accepted, s (2**53, about 285 million years): past it 64-bit floats
#: no longer tell whole seconds apart, so a file's arrivals there have lost their spacing.
MAX_ARRIVAL = 2.0**53


class TaskFileError(ValueError):
    """A task file that cannot be read as a task table (the message names file, row and column)."""


def read_task_file(path: str | Path) -> TaskTable:
    """Read a CSV (``.csv``, ``.csv.gz``) or parquet (``.parquet``, ``.pq``) task table.

    Raises :class:`TaskFileError` on a missing or unreadable file, a missing column, and the
    first value that is not a finite number, not positive where it must be, or an arrival
    earlier than the row before it."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise TaskFileError(f"{path}: not found (expected a CSV or parquet task table)")
    name = path.name.lower()
    parquet = name.endswith((".parquet", ".pq"))
    if not parquet and not name.endswith((".csv", ".csv.gz")):
        raise TaskFileError(f"{path}: expected a .csv or .parquet file")
    try:
        frame = pd.read_parquet(path) if parquet else pd.read_csv(path, dtype=str, skipinitialspace=True)
    except Exception as err:  # pandas and pyarrow raise many kinds; the user's file is at fault
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise TaskFileError(f"{path}: cannot be read as {'parquet' if parquet else 'CSV'} ({first})") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in TASK_COLUMNS if c not in frame.columns]
    if missing:
        raise TaskFileError(f"{path}: column {missing[0]!r} is missing (expected columns {', '.join(TASK_COLUMNS)}; "
                            f"found {', '.join(frame.columns) or 'none'})")
    if frame.empty:
        raise TaskFileError(f"{path}: no rows (expected at least one task)")

    def where(i: int) -> str:
        return f"row {i + 1}" if parquet else f"line {i + 2}"

    values = {}
    for col in TASK_COLUMNS:
        raw = frame[col]
        if parquet and (not pd.api.types.is_numeric_dtype(raw) or pd.api.types.is_bool_dtype(raw)):
            raise TaskFileError(f"{path}: column {col!r}: expected numbers, got {raw.dtype} values"
                                + (" (convert times to seconds)" if col == "arrival" else ""))
        numbers = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(numbers)
        if col in _POSITIVE:
            bad |= ~(numbers > 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            want = "a finite number > 0" if col in _POSITIVE else "a finite number"
            raise TaskFileError(f"{path}: {where(i)}, column {col!r}: expected {want}, got {raw.iloc[i]!r}")
        values[col] = numbers
    back = np.flatnonzero(np.diff(values["arrival"]) < 0)
    if len(back):
        i = int(back[0]) + 1
        raise TaskFileError(f"{path}: {where(i)}, column 'arrival': expected arrivals in non-decreasing order, "
                            f"got {float(values['arrival'][i])!r} after {float(values['arrival'][i - 1])!r}")
    far = np.flatnonzero(np.abs(values["arrival"]) > MAX_ARRIVAL)
    if len(far):
        i = int(far[0])
        raise TaskFileError(f"{path}: {where(i)}, column 'arrival': {float(values['arrival'][i])!r} is beyond 2**53 s, "
                            "where 64-bit floats no longer tell whole seconds apart; expected arrivals from a nearer "
                            "origin (the first arrival subtracted, say)")
    values["arrival"] = from_zero(frame["arrival"], values["arrival"], text=not parquet)
    arrival, cpu, length, deadline = (values[c] for c in TASK_COLUMNS)
    return TaskTable(arrival, cpu, length, deadline, source=str(path))


def from_zero(raw: pd.Series, numbers: np.ndarray, text: bool) -> np.ndarray:
    """Arrival times ``numbers`` (read from the column ``raw``) shifted so that the first is 0,
    exactly where the file allows: decimal ``text`` (a CSV's) is subtracted in decimal
    arithmetic, so ``1700000000000000.123`` becomes ``0.123`` and not the float grid's
    ``0.125``; an integer column in integers; a float column in floats (exact for arrivals
    of one magnitude). The same table at any origin then gives the same floats."""
    import decimal

    import pandas as pd

    if text:
        with decimal.localcontext() as ctx:
            ctx.prec = 1000  # exact for any decimal text within MAX_ARRIVAL's reach
            first = decimal.Decimal(str(raw.iloc[0]).strip())
            return np.array([float(decimal.Decimal(str(v).strip()) - first) for v in raw], dtype=float)
    if pd.api.types.is_integer_dtype(raw):
        ints = raw.to_numpy(dtype=np.int64)
        return (ints - ints[0]).astype(float)
    return numbers - numbers[0]
