"""A user's own task table from a file: CSV or parquet with arrival, CPU, length and deadline.

What ``ilets evaluate`` schedules (:mod:`ilets.study.evaluate`). One row per task:

=========  ==========================================================  ===========
column     meaning                                                     allowed
=========  ==========================================================  ===========
arrival    arrival time, s (any origin; rows in non-decreasing order)  finite
cpu        CPU request in trace units (the largest machine is 1.0)     > 0, finite
length     task length, million instructions (MI)                      > 0, finite
deadline   relative deadline, s (response at most this succeeds)       > 0, finite
=========  ==========================================================  ===========

Other columns are ignored. Every malformed value is refused with one line that names the
file, the row and the column (:class:`TaskFileError`): the row is the file's line for CSV
(the header is line 1) and the 1-based data row for parquet.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ilets.workloads.workload import TaskTable

#: The columns a task file must have, in the order of :class:`TaskTable`.
TASK_COLUMNS = ("arrival", "cpu", "length", "deadline")
#: Columns whose values must be strictly positive.
_POSITIVE = ("cpu", "length", "deadline")


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
    arrival, cpu, length, deadline = (values[c] for c in TASK_COLUMNS)
    return TaskTable(arrival, cpu, length, deadline, source=str(path))
