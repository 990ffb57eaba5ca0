"""The Google cluster trace 2011 (clusterdata-2011-2): read and locate windows of ``task_events``.

The ``task_events`` table comes as 500 time-ordered shards
``task_events/part-00000-of-00500.csv.gz`` ... ``part-00499-of-00500.csv.gz``: gzip CSV, no
header, 13 columns (time in microseconds, missing info, job ID, task index, machine ID,
event type, user, scheduling class, priority, CPU request, memory request, disk request,
different-machine restriction); empty fields are missing values. A task arrives at its
SUBMIT event (event type 0); its CPU request is normalised to the largest machine (1.0).
Like the authors we skip (and count) SUBMIT rows with no CPU request.

This module only reads: it returns arrays of arrival times and CPU requests and draws
nothing. Task length and deadline are not in the trace; :func:`ilets.workloads.workload.load_task_events`
draws them and builds the :class:`~ilets.workloads.workload.TaskTable`. Fetching shards is
:mod:`ilets.workloads.download`.

Times in this module's arguments are seconds of trace time (the file's microseconds / 1e6);
day 10, 0-indexed as in the authors' scripts, is ``[864000, 950400)``.

Public functions (the ``ilets trace find-window`` CLI wraps :func:`find_window`):

``read_submits(trace_dir, t0, t1) -> SubmitEvents``
    SUBMIT rows with a CPU request whose time lies in ``[t0, t1)``: arrival (relative to
    ``t0``) and CPU arrays and the scan's :class:`TraceStats`. Only shards that can overlap
    the window are opened (binary search over the shards' first timestamps, then streaming
    until a timestamp reaches ``t1``).
``find_window(trace_dir, day_start=864000, day_end=950400, span_s=3000, step_s=60,
targets=(330632, 259368)) -> WindowFit``
    The ``span_s`` window (start on a ``step_s`` grid) whose two halves best match the
    paper's task counts (smallest worse-half relative error).

Smaller helpers: ``shard_name(index, total=500)``, ``list_shards(trace_dir)``,
``first_timestamp(path) -> int`` (microseconds), ``row_time(row, path, line)``,
``window_us(t0, t1, where)``, ``submit_counts(trace_dir, t0, t1) -> (per-second counts, TraceStats)``.

Every problem with the input raises :class:`TraceError` (a ``ValueError``) whose message
names the file (or folder), the line where there is one, and what was expected.
"""

from __future__ import annotations

import bisect
import csv
import gzip
import math
import re
import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


#: Day 10 of the trace, 0-indexed as in the authors' scripts, in seconds of trace time.
DAY10_START_S = 864_000.0
DAY10_END_S = 950_400.0
#: Number of ``task_events`` shards in clusterdata-2011-2.
SHARD_COUNT = 500
#: Tasks in the paper's 50-minute window of this trace (first 25 min offline, last 25 min
#: online) [paper]; :mod:`ilets.workloads.workload` builds its default window to these counts.
PAPER_OFFLINE_TASKS = 330_632
PAPER_ONLINE_TASKS = 259_368
PAPER_WINDOW_S = 3000.0

N_COLUMNS = 13
COL_TIME, COL_EVENT, COL_CPU = 0, 5, 9
EVENT_SUBMIT = 0
MAX_EVENT_TYPE = 8
_US = 1_000_000
_SHARD_RE = re.compile(r"^part-(\d{5})-of-(\d{5})\.csv\.gz$")


class TraceError(ValueError):
    """The trace (a file, a folder, a download or a window) is missing or malformed."""


@dataclass(frozen=True)
class TraceStats:
    """What a scan of the trace read.

    Attributes:
        rows_read: rows parsed, all event types, including rows before the window in the
            first shard read.
        kept: SUBMIT rows in the window with a CPU request (the tasks returned).
        skipped_no_cpu: SUBMIT rows in the window with an empty CPU request (skipped, as the
            authors did).
        zero_cpu: kept rows whose CPU request is exactly 0 (kept; reported because the
            embedded CPU distribution drops them).
        shards_read: names of the shards streamed, in order.
    """

    rows_read: int = 0
    kept: int = 0
    skipped_no_cpu: int = 0
    zero_cpu: int = 0
    shards_read: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, int | list[str]]:
        """Plain-dict form, for table metadata and JSON logs."""
        return {"rows_read": self.rows_read, "kept": self.kept, "skipped_no_cpu": self.skipped_no_cpu,
                "zero_cpu": self.zero_cpu, "shards_read": list(self.shards_read)}


@dataclass(frozen=True)
class WindowFit:
    """The best window found by :func:`find_window`.

    ``error`` is the objective: the larger of the two halves' relative errors against the
    targets (a window is only as good as its worse half).
    """

    start_s: float
    span_s: int
    first_half: int
    second_half: int
    rel_err_first: float
    rel_err_second: float
    error: float
    day_tasks: int
    stats: TraceStats = field(compare=False)


@dataclass(frozen=True)
class _Shard:
    index: int
    total: int
    path: Path


# --- shards on disk ---------------------------------------------------------------------

def shard_name(index: int, total: int = SHARD_COUNT) -> str:
    """The file name of shard ``index``, e.g. ``part-00007-of-00500.csv.gz``."""
    return f"part-{index:05d}-of-{total:05d}.csv.gz"


def _shard_folder(trace_dir: str | Path) -> Path:
    """``trace_dir/task_events`` if it exists, else ``trace_dir`` (either layout works)."""
    root = Path(trace_dir)
    if not str(trace_dir):
        raise TraceError("trace folder not set: expected a folder with task_events shards "
                         "(workload.trace_dir)")
    if not root.is_dir():
        raise TraceError(f"{root}: trace folder not found (expected a folder with task_events "
                         f"shards named like {shard_name(0)})")
    sub = root / "task_events"
    return sub if sub.is_dir() else root


def list_shards(trace_dir: str | Path) -> list[Path]:
    """The ``task_events`` shard files in ``trace_dir`` (or its ``task_events/``), by index.

    Partial downloads (``*.part``) and other files are ignored.
    """
    return [s.path for s in _find_shards(trace_dir)]


def _find_shards(trace_dir: str | Path) -> list[_Shard]:
    folder = _shard_folder(trace_dir)
    shards = []
    for p in folder.iterdir():
        m = _SHARD_RE.match(p.name)
        if m and p.is_file():
            shards.append(_Shard(int(m.group(1)), int(m.group(2)), p))
    if not shards:
        raise TraceError(f"{folder}: no task_events shards (expected files named like {shard_name(0)})")
    totals = {s.total for s in shards}
    if len(totals) > 1:
        raise TraceError(f"{folder}: shards from different splits {sorted(totals)} "
                         f"(expected one 'of-NNNNN' count)")
    return sorted(shards, key=lambda s: s.index)


# --- parsing one row --------------------------------------------------------------------

def _where(path: Path | str, line: int) -> str:
    return f"{path}: line {line}"


def _check_columns(row: list[str], path: Path | str, line: int) -> None:
    if len(row) != N_COLUMNS:
        raise TraceError(f"{_where(path, line)}: expected {N_COLUMNS} comma-separated columns "
                         f"(task_events format), got {len(row)}")


def _parse_time(text: str, where: str) -> int:
    """Microseconds of trace time: a non-negative integer (0 = before the trace start)."""
    try:
        t = int(text)
    except ValueError:
        raise TraceError(f"{where}: expected an integer time in microseconds (column 1), got {text!r}") from None
    if t < 0:
        raise TraceError(f"{where}: expected a time >= 0 microseconds (column 1), got {t}")
    return t


def _parse_event(text: str, where: str) -> int:
    try:
        e = int(text)
    except ValueError:
        raise TraceError(f"{where}: expected an integer event type 0-{MAX_EVENT_TYPE} (column 6), "
                         f"got {text!r}") from None
    if not 0 <= e <= MAX_EVENT_TYPE:
        raise TraceError(f"{where}: expected an event type 0-{MAX_EVENT_TYPE} (column 6), got {e}")
    return e


def _parse_cpu(text: str, where: str) -> float:
    try:
        c = float(text)
    except ValueError:
        raise TraceError(f"{where}: expected a number as CPU request (column 10), got {text!r}") from None
    # Requests are normalised to the largest machine, so anything outside [0, 1] (or nan)
    # means a wrong column or a corrupt file, not a big task.
    if not (math.isfinite(c) and 0.0 <= c <= 1.0):
        raise TraceError(f"{where}: expected a CPU request in [0, 1] (column 10), got {text!r}")
    return c


def row_time(row: list[str], path: Path | str, line: int) -> int:
    """The time (microseconds) of one ``task_events`` row, after checking its column count."""
    _check_columns(row, path, line)
    return _parse_time(row[COL_TIME], _where(path, line))


# --- reading shards ---------------------------------------------------------------------

def _open_rows(path: Path):
    """A gzip text stream and a csv reader over it (caller closes the stream)."""
    stream = gzip.open(path, "rt", encoding="ascii", newline="")
    return stream, csv.reader(stream)


def _stream_error(path: Path, line: int, err: Exception) -> TraceError:
    """Translate decompression/decoding failures into a TraceError naming file and line."""
    if isinstance(err, (EOFError, gzip.BadGzipFile, zlib.error)):
        what = "a complete gzip file (it is truncated or not gzip; delete it and download it again)"
    elif isinstance(err, UnicodeDecodeError):
        what = "ASCII CSV text"
    else:
        what = "a readable gzip CSV file"
    return TraceError(f"{_where(path, line)}: expected {what}: {type(err).__name__}: {err}")


_READ_ERRORS = (EOFError, OSError, zlib.error, csv.Error, UnicodeDecodeError)


def first_timestamp(path: str | Path) -> int:
    """The time (microseconds) of a shard's first row; reads only the first line."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: shard file not found")
    try:
        stream, reader = _open_rows(path)
        with stream:
            row = next(reader, None)
    except _READ_ERRORS as err:
        raise _stream_error(path, 1, err) from err
    if row is None:
        raise TraceError(f"{_where(path, 1)}: expected a first row, the shard is empty")
    return row_time(row, path, 1)


@dataclass
class _Scan:
    """Mutable state of one pass over consecutive shards (local to a single call)."""

    t0_us: int
    t1_us: int
    on_task: Callable[[int, float], None]
    rows_read: int = 0
    kept: int = 0
    skipped_no_cpu: int = 0
    zero_cpu: int = 0
    shards_read: list[str] = field(default_factory=list)
    last_t: int = -1
    last_file: str = ""
    reached_end: bool = False

    def stats(self) -> TraceStats:
        return TraceStats(self.rows_read, self.kept, self.skipped_no_cpu, self.zero_cpu, tuple(self.shards_read))


def _scan_shard(path: Path, scan: _Scan) -> None:
    """Stream one shard into ``scan``; stop at the first row at or after the window end."""
    scan.shards_read.append(path.name)
    line = 0
    try:
        stream, reader = _open_rows(path)
        with stream:
            for row in reader:
                line = reader.line_num
                if _scan_row(row, path, line, scan):
                    scan.reached_end = True
                    return
    except _READ_ERRORS as err:
        raise _stream_error(path, line + 1, err) from err


def _scan_row(row: list[str], path: Path, line: int, scan: _Scan) -> bool:
    """Account for one row; True once the window's end is reached (stop reading).

    Fields are checked where they are used: column count and time on every row read (the
    time order is what lets us stop early), event type inside the window, CPU request on
    SUBMIT rows inside the window.
    """
    _check_columns(row, path, line)
    t = _parse_time(row[COL_TIME], _where(path, line))
    if t < scan.last_t:
        prev = f"previous row of {scan.last_file}" if line == 1 else "previous row"
        raise TraceError(f"{_where(path, line)}: timestamps out of order: expected a time >= "
                         f"{scan.last_t} us ({prev}), got {t}; shards must be time-ordered")
    scan.last_t, scan.last_file = t, path.name
    scan.rows_read += 1
    if t >= scan.t1_us:
        return True
    if t < scan.t0_us or _parse_event(row[COL_EVENT], _where(path, line)) != EVENT_SUBMIT:
        return False
    if row[COL_CPU] == "":
        scan.skipped_no_cpu += 1
        return False
    cpu = _parse_cpu(row[COL_CPU], _where(path, line))
    scan.kept += 1
    scan.zero_cpu += int(cpu == 0.0)
    scan.on_task(t, cpu)
    return False


# --- choosing the shards of a window ----------------------------------------------------

def window_us(t0: float, t1: float, where: str) -> tuple[int, int]:
    """Validate ``[t0, t1)`` (seconds) and convert it to integer microseconds."""
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise TraceError(f"{where}: window [{t0}, {t1}): expected finite times in seconds")
    if t0 < 0:
        raise TraceError(f"{where}: window [{t0}, {t1}): expected a start >= 0 s of trace time")
    if t1 <= t0:
        raise TraceError(f"{where}: window [{t0}, {t1}): expected end > start")
    return round(t0 * _US), round(t1 * _US)


def _shards_for_window(shards: list[_Shard], t0_us: int, t1_us: int) -> tuple[list[_Shard], bool]:
    """The consecutive shards that can hold rows in ``[t0_us, t1_us)``.

    Shards are time-ordered, so shard i holds times in [first_i, first_{i+1}]. We
    binary-search the first timestamps (read lazily, one line each) for a = the first shard
    starting at or after t0 -- shard a-1 may still hold rows at or after t0 -- and e = the
    first shard starting at or after t1. Returns shards a-1 .. e-1 and whether shard e is
    present right after them (it proves the window ends inside them).
    """
    cache: dict[int, int] = {}

    def first(k: int) -> int:
        if k not in cache:
            cache[k] = first_timestamp(shards[k].path)
        return cache[k]

    keys = range(len(shards))
    a = bisect.bisect_left(keys, t0_us, key=first)
    e = bisect.bisect_left(keys, t1_us, lo=a, key=first)
    s = max(a - 1, 0)
    chosen = shards[s:e]
    if not chosen:  # the window ends before the first shard present starts
        _require_start(shards[0], first(0), t0_us)
        return [], False
    _require_start(chosen[0], first(s), t0_us)
    for prev, nxt in zip(chosen, chosen[1:]):
        if nxt.index != prev.index + 1:
            raise TraceError(f"{prev.path.parent}: shard {shard_name(prev.index + 1, prev.total)} is missing "
                             f"(expected consecutive shards {chosen[0].path.name} .. {chosen[-1].path.name} "
                             f"for window [{t0_us / _US}, {t1_us / _US}) s)")
    fence = e < len(shards) and shards[e].index == chosen[-1].index + 1
    return chosen, fence


def _require_start(shard: _Shard, first_us: int, t0_us: int) -> None:
    """The earliest shard read must start before t0, or be shard 0 (nothing precedes it)."""
    if shard.index > 0 and first_us >= t0_us:
        raise TraceError(f"{_where(shard.path, 1)}: the shard starts at {first_us / _US} s, not before the "
                         f"window start {t0_us / _US} s; expected the previous shard "
                         f"{shard_name(shard.index - 1, shard.total)} in {shard.path.parent}")


def _scan_window(trace_dir: str | Path, t0: float, t1: float, on_task: Callable[[int, float], None]) -> TraceStats:
    """Stream every SUBMIT-with-CPU row of ``[t0, t1)`` into ``on_task(time_us, cpu)``."""
    t0_us, t1_us = window_us(t0, t1, str(trace_dir))
    shards = _find_shards(trace_dir)
    chosen, fence = _shards_for_window(shards, t0_us, t1_us)
    scan = _Scan(t0_us, t1_us, on_task)
    for shard in chosen:
        _scan_shard(shard.path, scan)
    if chosen and not (scan.reached_end or fence or chosen[-1].index == chosen[-1].total - 1):
        last = chosen[-1]
        raise TraceError(f"{last.path}: the shard ends at {scan.last_t / _US} s, before the window end "
                         f"{t1} s; expected the next shard {shard_name(last.index + 1, last.total)} "
                         f"in {last.path.parent}")
    if scan.kept == 0:
        raise TraceError(f"{_shard_folder(trace_dir)}: window [{t0}, {t1}) s: expected SUBMIT tasks with a "
                         f"CPU request, found none (shards read: {', '.join(scan.shards_read) or 'none'}; "
                         f"skipped without CPU: {scan.skipped_no_cpu})")
    return scan.stats()


# --- public readers ---------------------------------------------------------------------

@dataclass(frozen=True)
class SubmitEvents:
    """The SUBMIT-with-CPU rows of one window, as arrays (what :func:`read_submits` returns).

    Attributes:
        arrival: seconds since the window start (float64, non-decreasing).
        cpu: CPU requests, normalised to the largest machine (float64).
        stats: what the scan read.
        folder: the shard folder read (for messages and provenance).
    """

    arrival: np.ndarray
    cpu: np.ndarray
    stats: TraceStats
    folder: Path


def read_submits(trace_dir: str | Path, t0: float, t1: float) -> SubmitEvents:
    """SUBMIT rows with a CPU request whose time lies in ``[t0, t1)`` (seconds of trace time).

    Arrival is relative to ``t0``. Raises :class:`TraceError` on a missing or malformed
    shard, a shard missing from the window's range, or an empty window.
    """
    times, cpus = array("q"), array("d")

    def collect(t_us: int, cpu: float) -> None:
        times.append(t_us)
        cpus.append(cpu)

    stats = _scan_window(trace_dir, t0, t1, collect)
    # Subtract in integer microseconds first so arrivals keep microsecond resolution.
    arrival = (np.frombuffer(times, dtype=np.int64) - round(t0 * _US)) / _US
    cpu = np.frombuffer(cpus, dtype=np.float64).copy()
    return SubmitEvents(arrival, cpu, stats, _shard_folder(trace_dir))


def submit_counts(trace_dir: str | Path, t0: float, t1: float) -> tuple[np.ndarray, TraceStats]:
    """Per-second counts of SUBMIT-with-CPU rows over ``[t0, t1)``: bin k is [t0+k, t0+k+1)."""
    t0_us = round(t0 * _US)
    n_bins = math.ceil(t1 - t0)
    bins = array("q")
    stats = _scan_window(trace_dir, t0, t1, lambda t_us, _cpu: bins.append((t_us - t0_us) // _US))
    return np.bincount(np.frombuffer(bins, dtype=np.int64), minlength=n_bins)[:n_bins], stats


def find_window(trace_dir: str | Path, day_start: float = DAY10_START_S, day_end: float = DAY10_END_S,
                span_s: int = 3000, step_s: int = 60,
                targets: tuple[int, int] = (PAPER_OFFLINE_TASKS, PAPER_ONLINE_TASKS)) -> WindowFit:
    """The ``span_s`` window in ``[day_start, day_end)`` whose halves best match ``targets``.

    Candidate starts are ``day_start + k * step_s``. The objective is the larger relative
    error of the two halves' task counts (SUBMIT rows with a CPU request, as the loader
    keeps); ties go to the earliest start. The paper's window start is not published, so
    this is our way of choosing one [ours].
    """
    where = str(trace_dir)
    if span_s <= 0 or span_s % 2:
        raise TraceError(f"{where}: span_s={span_s}: expected a positive even number of seconds")
    if step_s <= 0:
        raise TraceError(f"{where}: step_s={step_s}: expected a positive number of seconds")
    if min(targets) <= 0:
        raise TraceError(f"{where}: targets={targets}: expected two positive task counts")
    window_us(day_start, day_end, where)
    if day_end - day_start < span_s:
        raise TraceError(f"{where}: day [{day_start}, {day_end}) is shorter than span_s={span_s}")
    counts, stats = submit_counts(trace_dir, day_start, day_end)
    cum = np.concatenate([[0], np.cumsum(counts)])
    starts = np.arange(0, len(counts) - span_s + 1, step_s)
    half = span_s // 2
    first = cum[starts + half] - cum[starts]
    second = cum[starts + span_s] - cum[starts + half]
    err1 = np.abs(first - targets[0]) / targets[0]
    err2 = np.abs(second - targets[1]) / targets[1]
    err = np.maximum(err1, err2)
    k = int(np.argmin(err))
    return WindowFit(start_s=day_start + int(starts[k]), span_s=span_s, first_half=int(first[k]),
                     second_half=int(second[k]), rel_err_first=float(err1[k]), rel_err_second=float(err2[k]),
                     error=float(err[k]), day_tasks=int(cum[-1]), stats=stats)
