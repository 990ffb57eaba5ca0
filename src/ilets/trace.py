"""The Google cluster trace 2011 (clusterdata-2011-2): load, locate and download windows.

The ``task_events`` table comes as 500 time-ordered shards
``task_events/part-00000-of-00500.csv.gz`` ... ``part-00499-of-00500.csv.gz``: gzip CSV, no
header, 13 columns (time in microseconds, missing info, job ID, task index, machine ID,
event type, user, scheduling class, priority, CPU request, memory request, disk request,
different-machine restriction); empty fields are missing values. A task arrives at its
SUBMIT event (event type 0); its CPU request is normalised to the largest machine (1.0).
Like the authors we skip (and count) SUBMIT rows with no CPU request. Task length and
deadline are not in the trace and are drawn by
:func:`ilets.workload.draw_length_and_deadline`.

Times in this module's arguments are seconds of trace time (the file's microseconds / 1e6);
day 10, 0-indexed as in the authors' scripts, is ``[864000, 950400)``.

Public functions (the ``ilets trace download|find-window`` CLI wraps these):

``load_task_events(trace_dir, t0, t1, cfg=WorkloadConfig(), seed=0) -> (TaskTable, TraceStats)``
    SUBMIT tasks with a CPU request whose time lies in ``[t0, t1)``; arrival is relative
    to ``t0``. Only shards that can overlap the window are opened (binary search over the
    shards' first timestamps, then streaming until a timestamp reaches ``t1``).
``google_workload(cfg: WorkloadConfig, seed: int) -> Workload``
    ``load_workload``'s ``kind: google``: the window ``[start, start + window_s * scale)``
    with ``start = cfg.window_start_s`` (or day 10's start when it is negative), split at
    its half into offline (OINPT) and online tasks.
``find_window(trace_dir, day_start=864000, day_end=950400, span_s=3000, step_s=60,
targets=(330632, 259368)) -> WindowFit``
    The ``span_s`` window (start on a ``step_s`` grid) whose two halves best match the
    paper's task counts (smallest worse-half relative error).
``download_shards(indices, dest, base_url=BASE_URL, checksums=None, *, total=500,
attempts=5, timeout_s=60.0, backoff_s=1.0) -> list[Path]``
    Download shards by index into ``dest``; resumable, sha256-verified when known.
``download_window_shards(t0, t1, dest, base_url=BASE_URL, checksums=None, *, total=500,
attempts=5, timeout_s=60.0, backoff_s=1.0) -> list[Path]``
    Download just the shards a window needs (plus one "fence" shard, see its docstring),
    found by probing the head of remote shards; no full scan from shard 0.

Smaller helpers: ``shard_name(index, total=500)``, ``list_shards(trace_dir)``,
``first_timestamp(path) -> int`` (microseconds), ``probe_first_timestamp(url)``,
``submit_counts(trace_dir, t0, t1) -> (per-second counts, TraceStats)``.

Every problem with the input raises :class:`TraceError` (a ``ValueError``) whose message
names the file (or URL, or folder), the line where there is one, and what was expected.
"""

from __future__ import annotations

import bisect
import csv
import gzip
import hashlib
import http.client
import io
import math
import os
import re
import time
import urllib.error
import urllib.request
import zlib
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ilets.config import WorkloadConfig
from ilets.workload import (PAPER_OFFLINE_TASKS, PAPER_ONLINE_TASKS, TaskTable, Workload,
                            draw_length_and_deadline)

#: Day 10 of the trace, 0-indexed as in the authors' scripts, in seconds of trace time.
DAY10_START_S = 864_000.0
DAY10_END_S = 950_400.0
#: Number of ``task_events`` shards in clusterdata-2011-2.
SHARD_COUNT = 500
BASE_URL = "https://commondatastorage.googleapis.com/clusterdata-2011-2/task_events/"
#: sha256 of shards whose digest is known (the brief: part-00000 is 4,139,742 bytes).
KNOWN_SHA256: dict[str, str] = {
    "part-00000-of-00500.csv.gz": "eae977d521bc6ed5d8deef56f1e06009d41844d4eb9a7e308e610d68e1b10f18",
}

N_COLUMNS = 13
COL_TIME, COL_EVENT, COL_CPU = 0, 5, 9
EVENT_SUBMIT = 0
MAX_EVENT_TYPE = 8
_US = 1_000_000
_SHARD_RE = re.compile(r"^part-(\d{5})-of-(\d{5})\.csv\.gz$")
_CHUNK = 1 << 16


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

    def as_dict(self) -> dict:
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
    _check_columns(row, path, 1)
    return _parse_time(row[COL_TIME], _where(path, 1))


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

def _window_us(t0: float, t1: float, where: str) -> tuple[int, int]:
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
    t0_us, t1_us = _window_us(t0, t1, str(trace_dir))
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


# --- public loaders ---------------------------------------------------------------------

def load_task_events(trace_dir: str | Path, t0: float, t1: float, cfg: WorkloadConfig | None = None,
                     seed: int = 0) -> tuple[TaskTable, TraceStats]:
    """Tasks submitted in ``[t0, t1)`` (seconds of trace time) with a CPU request.

    Arrival is in seconds relative to ``t0``; task length and deadline are drawn from
    ``cfg``'s ranges with ``numpy.random.default_rng(seed)``. Raises :class:`TraceError`
    on a missing or malformed shard, a shard missing from the window's range, or an empty
    window.
    """
    cfg = cfg or WorkloadConfig(kind="google", trace_dir=str(trace_dir))
    times, cpus = array("q"), array("d")

    def collect(t_us: int, cpu: float) -> None:
        times.append(t_us)
        cpus.append(cpu)

    stats = _scan_window(trace_dir, t0, t1, collect)
    # Subtract in integer microseconds first so arrivals keep microsecond resolution.
    arrival = (np.frombuffer(times, dtype=np.int64) - round(t0 * _US)) / _US
    cpu = np.frombuffer(cpus, dtype=np.float64).copy()
    length, deadline = draw_length_and_deadline(np.random.default_rng(seed), len(arrival), cfg)
    table = TaskTable(arrival, cpu, length, deadline,
                      source=f"google2011({_shard_folder(trace_dir)}, [{t0}, {t1}) s, seed={seed})",
                      meta={"events": {}, "window_s": (t0, t1), "trace": stats.as_dict()})
    return table, stats


def google_workload(cfg: WorkloadConfig, seed: int) -> Workload:
    """The ``kind: google`` workload: a trace window split at its half.

    The window starts at ``cfg.window_start_s`` (day 10's start, 864000 s, when negative)
    and lasts ``cfg.window_s * cfg.scale`` seconds: ``scale`` shortens the window as it does
    for the synthetic workload, keeping the real arrival rate. The first half is offline
    (OINPT), the rest online; ``split_time`` is relative to the window start.
    """
    if not 0 < cfg.scale <= 1:
        raise TraceError(f"workload.scale: expected a number in (0, 1], got {cfg.scale}")
    start = cfg.window_start_s if cfg.window_start_s >= 0 else DAY10_START_S
    span = cfg.window_s * cfg.scale
    table, _ = load_task_events(cfg.trace_dir, start, start + span, cfg, seed)
    split = span / 2
    offline, online = table.split_at(split)
    for half, part, (a, b) in (("offline", offline, (start, start + split)),
                               ("online", online, (start + split, start + span))):
        if len(part) == 0:  # OINPT or the online pass would fail deep inside with an index error
            raise TraceError(f"{_shard_folder(cfg.trace_dir)}: the {half} half [{a}, {b}) s of the window has no "
                             f"SUBMIT tasks; expected tasks in both halves (widen workload.window_s or "
                             f"workload.scale, or move workload.window_start_s)")
    return Workload(offline=offline, online=online, split_time=split, config=cfg)


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
    _window_us(day_start, day_end, where)
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


# --- downloading ------------------------------------------------------------------------

def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _gzip_problem(path: Path) -> str | None:
    """Why ``path`` is not a whole gzip file (truncated, corrupt, not gzip), or None."""
    try:
        with gzip.open(path, "rb") as f:
            while f.read(1 << 20):
                pass
    except (OSError, EOFError, zlib.error) as err:  # BadGzipFile is an OSError
        return f"{type(err).__name__}: {err}"
    return None


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, total size) from ``bytes a-b/N`` or ``bytes */N``; None where absent."""
    m = re.match(r"bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)", value or "")
    if not m:
        return None, None
    start = int(m.group(1)) if m.group(1) else None
    total = int(m.group(2)) if m.group(2) != "*" else None
    return start, total


def _fetch_into(url: str, part: Path, timeout_s: float) -> bool:
    """One HTTP attempt appending to ``part``; True when ``part`` holds the whole file.

    Resumes with a Range request when ``part`` has bytes. A 200 answer (server ignored the
    range) restarts the file; a 416 (range past the end) means ``part`` is already whole
    or is longer than the file, in which case it is discarded.
    """
    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout_s)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:
            _, total = _content_range(err.headers.get("Content-Range"))
            if total == have:
                return True
            part.unlink()
            return False
        if 400 <= err.code < 500:  # not found / forbidden: retrying will not help
            raise TraceError(f"{url}: HTTP {err.code} {err.reason}: expected the shard file") from err
        raise
    with resp:
        if resp.status == 206:
            start, total = _content_range(resp.headers.get("Content-Range"))
            if start != have:  # not the range we asked for: start again from scratch
                part.unlink()
                return False
            mode = "ab"
        else:
            length = resp.headers.get("Content-Length")
            total, mode = (int(length) if length else None), "wb"
        with open(part, mode) as f:
            for block in iter(lambda: resp.read(_CHUNK), b""):
                f.write(block)
    size = part.stat().st_size
    if total is not None and size > total:
        part.unlink()
        return False
    # Without a known size, a cleanly ended body is the whole file (http.client raises on a
    # cut chunked body); with one, a short body (connection dropped) is resumed next time.
    return total is None or size == total


def _download_one(url: str, final: Path, sha256: str | None, attempts: int, timeout_s: float,
                  backoff_s: float) -> Path:
    """Download ``url`` to ``final`` via ``final.part`` (resumable), verify, rename."""
    if final.exists():
        if sha256 is None or _sha256(final) == sha256:
            return final  # complete: only whole downloads are ever renamed to the final name
        final.unlink()  # a bad copy with a known digest: fetch it again
    part = final.with_name(final.name + ".part")
    last_err: Exception | None = None
    complete = False
    for attempt in range(attempts):
        if attempt:
            time.sleep(backoff_s * attempt)
        try:
            complete = _fetch_into(url, part, timeout_s)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            last_err = err  # network trouble (or 5xx): keep the partial file and resume
            continue
        if complete:
            break
    if not complete:
        have = part.stat().st_size if part.exists() else 0
        raise TraceError(f"{url}: download incomplete after {attempts} attempt(s): {have} bytes in {part}; "
                         f"run again to resume (last error: {last_err})")
    if sha256 is not None:
        got = _sha256(part)
        if got != sha256:
            part.unlink()
            raise TraceError(f"{final}: sha256 mismatch: expected {sha256}, got {got}; the download "
                             f"was deleted")
    else:
        # No known digest (every shard but part-00000): the gzip stream is the only check
        # there is, so read it to the end (its CRC32 and length trailer) before renaming.
        problem = _gzip_problem(part)
        if problem is not None:
            part.unlink()
            raise TraceError(f"{final}: the download is not a complete gzip file ({problem}); it was "
                             f"deleted, run again to fetch it anew")
    os.replace(part, final)  # atomic: a file under the final name is always whole
    return final


def download_shards(indices: Iterable[int], dest: str | Path, base_url: str = BASE_URL,
                    checksums: dict[str, str] | None = None, *, total: int = SHARD_COUNT,
                    attempts: int = 5, timeout_s: float = 60.0, backoff_s: float = 1.0) -> list[Path]:
    """Download ``task_events`` shards ``indices`` into ``dest``; return their paths.

    Each file is written to ``NAME.part`` and renamed when complete; an interrupted
    download is resumed (HTTP Range) on the next attempt or the next call. Files already in
    ``dest`` are skipped (after re-checking their sha256 when known). ``checksums`` maps
    file names to sha256; ``None`` uses :data:`KNOWN_SHA256`. A mismatch deletes the file
    and raises :class:`TraceError`.
    """
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise TraceError(f"{dest}: expected a folder to download shards into, but it is a file")
    dest.mkdir(parents=True, exist_ok=True)
    known = KNOWN_SHA256 if checksums is None else checksums
    paths = []
    for i in indices:
        if not 0 <= i < total:
            raise TraceError(f"shard index {i}: expected 0 <= index < {total}")
        name = shard_name(i, total)
        paths.append(_download_one(base_url.rstrip("/") + "/" + name, dest / name, known.get(name),
                                   attempts, timeout_s, backoff_s))
    return paths


def probe_first_timestamp(url: str, timeout_s: float = 60.0, probe_bytes: int = _CHUNK) -> int:
    """First row's time (microseconds) of a remote shard, from its first ``probe_bytes``.

    A Range request fetches the head of the gzip file and zlib decompresses it as far as
    it goes (a gzip prefix decodes without error); a server that ignores Range sends the
    whole file, of which we read only the head.
    """
    req = urllib.request.Request(url, headers={"Range": f"bytes=0-{probe_bytes - 1}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            head = resp.read(probe_bytes)
    except urllib.error.HTTPError as err:
        raise TraceError(f"{url}: HTTP {err.code} {err.reason}: expected the shard file") from err
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        raise TraceError(f"{url}: could not read the shard's head: {err}") from err
    try:
        text = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(head)
    except zlib.error as err:
        raise TraceError(f"{_where(url, 1)}: expected a gzip file: {err}") from err
    if b"\n" not in text and len(head) >= probe_bytes:
        raise TraceError(f"{_where(url, 1)}: expected a first row within {probe_bytes} bytes")
    first = text.split(b"\n", 1)[0].decode("ascii", "replace")
    if not first:
        raise TraceError(f"{_where(url, 1)}: expected a first row, the shard is empty")
    row = next(csv.reader(io.StringIO(first)))
    _check_columns(row, url, 1)
    return _parse_time(row[COL_TIME], _where(url, 1))


def download_window_shards(t0: float, t1: float, dest: str | Path, base_url: str = BASE_URL,
                           checksums: dict[str, str] | None = None, *, total: int = SHARD_COUNT,
                           attempts: int = 5, timeout_s: float = 60.0, backoff_s: float = 1.0) -> list[Path]:
    """Download the shards that overlap ``[t0, t1)`` (seconds of trace time) into ``dest``.

    Which shards these are depends on data, so we look: a shard's first timestamp comes
    from probing its first 64 KiB (:func:`probe_first_timestamp`; a shard already in
    ``dest`` is read locally instead), and since shards are time-ordered a binary search
    over the ``total`` first timestamps finds them in about 2*log2(500) = 18 probes -- not
    a download of every shard from part-00000 on. Downloaded: shard a-1 .. e-1, where a is
    the first shard starting at or after t0 and e the first starting at or after t1, plus
    shard e itself as a "fence": it holds no window rows, but its presence proves to
    :func:`load_task_events` that the window ends inside the shards present (~4 MB extra).
    """
    t0_us, t1_us = _window_us(t0, t1, base_url)
    dest = Path(dest)
    cache: dict[int, int] = {}

    def first(k: int) -> int:
        if k not in cache:
            local = dest / shard_name(k, total)
            url = base_url.rstrip("/") + "/" + local.name
            cache[k] = first_timestamp(local) if local.is_file() else probe_first_timestamp(url, timeout_s)
        return cache[k]

    keys = range(total)
    a = bisect.bisect_left(keys, t0_us, key=first)
    e = bisect.bisect_left(keys, t1_us, lo=a, key=first)
    if e == 0:
        raise TraceError(f"{base_url}: window [{t0}, {t1}) s ends before the first shard starts "
                         f"({first(0) / _US} s)")
    wanted = list(range(max(a - 1, 0), min(e + 1, total)))
    return download_shards(wanted, dest, base_url, checksums, total=total, attempts=attempts,
                           timeout_s=timeout_s, backoff_s=backoff_s)
