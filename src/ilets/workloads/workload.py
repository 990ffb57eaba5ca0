"""Task tables and the embedded default workload.

A workload is a :class:`TaskTable`: a struct of numpy arrays, one row per task, sorted by
arrival time. The trace (:mod:`ilets.workloads.trace`, a pure reader) gives arrival times and CPU
requests; task length and deadline are not in the trace and are drawn here (see
:func:`draw_length_and_deadline`), which is where trace windows become tables
(:func:`load_task_events`, :func:`google_workload`).

The embedded default (:func:`synthetic_workload`) is calibrated to the paper's 50-minute
window: 590,000 tasks, 330,632 in the first 25 minutes (offline, OINPT) and 259,368 in the
last 25 (online). Its arrival rate has a slow trend, a trend change in the online half and
short instant bursts; the exact shape is :data:`RATE_SHAPE` and is documented in the book.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from ilets.config import WorkloadConfig
# The paper's task counts are facts about its trace window; re-exported here, where the
# default window is built to them.
from ilets.workloads.trace import (DAY10_START_S, PAPER_OFFLINE_TASKS, PAPER_ONLINE_TASKS, PAPER_WINDOW_S, TraceError,
                         SubmitEvents, TraceStats, read_submits)


@dataclass(frozen=True)
class TaskTable:
    """Tasks as parallel arrays, sorted by arrival.

    Attributes:
        arrival: arrival time in seconds (float64), non-decreasing.
        cpu: CPU request in trace units (largest machine = 1.0).
        length: task length in million instructions (MI).
        deadline: relative deadline in seconds (a task succeeds if its response time,
            waiting plus execution, is at most this).
        source: a short description of where the tasks came from.
    """

    arrival: np.ndarray
    cpu: np.ndarray
    length: np.ndarray
    deadline: np.ndarray
    source: str = "unknown"
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        n = len(self.arrival)
        for name in ("cpu", "length", "deadline"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"TaskTable.{name} has {len(getattr(self, name))} rows, arrival has {n}")
        if n and np.any(np.diff(self.arrival) < 0):
            raise ValueError("TaskTable.arrival must be sorted (non-decreasing)")

    def __len__(self) -> int:
        return len(self.arrival)

    def slice(self, start: int, stop: int) -> "TaskTable":
        """Rows ``start:stop`` as a new table (arrays are views)."""
        return TaskTable(self.arrival[start:stop], self.cpu[start:stop], self.length[start:stop],
                         self.deadline[start:stop], self.source, dict(self.meta))

    def split_at(self, t: float) -> tuple["TaskTable", "TaskTable"]:
        """Split into the tasks arriving before ``t`` and those arriving at or after ``t``."""
        k = int(np.searchsorted(self.arrival, t, side="left"))
        return self.slice(0, k), self.slice(k, len(self))

    def to_frame(self):
        """The table as a pandas DataFrame (for plots and statistics)."""
        import pandas as pd

        return pd.DataFrame({"arrival": self.arrival, "cpu": self.cpu,
                             "length": self.length, "deadline": self.deadline})


@dataclass(frozen=True)
class Workload:
    """A workload split into the offline (OINPT) and online (scheduling) segments."""

    offline: TaskTable
    online: TaskTable
    split_time: float
    config: WorkloadConfig

    @property
    def events(self) -> dict[str, float]:
        """Times (s) of the designed instant bursts and the trend change, for plots."""
        return dict(self.online.meta.get("events", {}))


# --- CPU requests: the real Google distribution as a compact quantile table -------------

def cpu_quantile_table() -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and CPU-request quantiles shipped in ``ilets/data``.

    The table was derived from the real 33,302-task sample of the Google 2011 trace
    (``shared/data/google2011_task_requests_sample.csv``, see ``build_cpu_quantile_table``);
    its provenance is in the CSV's header comment. Requests of 0 are dropped as the authors
    skipped tasks with no CPU request.
    """
    text = resources.files("ilets.data").joinpath("google_cpu_quantiles.csv").read_text()
    rows = [r for r in csv.reader(line for line in text.splitlines() if not line.startswith("#"))]
    p = np.array([float(r[0]) for r in rows[1:]])
    q = np.array([float(r[1]) for r in rows[1:]])
    return p, q


def build_cpu_quantile_table(sample_csv: Path, n_points: int = 201) -> tuple[np.ndarray, np.ndarray]:
    """Quantiles of the CPU request (column 8) of the shared sample, zeros dropped."""
    cpu = np.loadtxt(sample_csv, delimiter=";", usecols=(8,))
    cpu = cpu[cpu > 0]
    p = np.linspace(0.0, 1.0, n_points)
    return p, np.quantile(cpu, p, method="inverted_cdf")


def sample_cpu(rng: np.random.Generator, n: int) -> np.ndarray:
    """Draw CPU requests by inverse-CDF sampling of the shipped quantile table.

    Interpolating linearly between quantiles would invent values the trace never has (its
    requests sit on a few discrete levels such as 0.0625), so we take the step inverse CDF.
    """
    p, q = cpu_quantile_table()
    u = rng.random(n)
    idx = np.minimum(np.searchsorted(p, u, side="left"), len(q) - 1)
    return q[idx]


def draw_length_and_deadline(rng: np.random.Generator, n: int, cfg: WorkloadConfig) -> tuple[np.ndarray, np.ndarray]:
    """Task length (MI) and relative deadline (s): the trace has neither [ours].

    Both uniform on the configured ranges, independent of the CPU request, following the
    group's earlier simulators (length 500-3000 MI) with deadlines rescaled to seconds.
    """
    length = rng.uniform(cfg.length_mi[0], cfg.length_mi[1], n)
    deadline = rng.uniform(cfg.deadline_s[0], cfg.deadline_s[1], n)
    return length, deadline


# --- the embedded default: a calibrated synthetic window --------------------------------

class RateShape(TypedDict):
    """The shape of the arrival rate (:data:`RATE_SHAPE` or a jittered copy of it)."""

    trend: list[tuple[float, float]]  #: (time s, level) knots of the piecewise-linear baseline
    bursts: list[tuple[float, float, float]]  #: (start s, duration s, multiplier)
    trend_change: float  #: time (s) of the trend change, one of the trend's knots


#: Shape of the arrival rate over the 3000 s window, relative units [ours].
#: ``trend``: piecewise-linear baseline (time s, level); ``bursts``: (start s, duration s,
#: multiplier). The online half has a trend change at 2250 s (the baseline turns from
#: rising to falling) and two instant bursts; the offline half has its own bursts so that
#: demonstrations include burst states.
RATE_SHAPE: RateShape = {
    "trend": [(0.0, 1.10), (750.0, 1.35), (1500.0, 0.80), (2250.0, 1.25), (3000.0, 0.70)],
    "bursts": [(400.0, 40.0, 2.2), (1100.0, 30.0, 2.0), (1850.0, 40.0, 2.5), (2600.0, 30.0, 2.2)],
    "trend_change": 2250.0,
}


def rate_shape(t: np.ndarray, shape: RateShape | None = None) -> np.ndarray:
    """Relative arrival rate at times ``t`` (s) of the 3000 s window (unnormalised), of
    ``shape`` (default :data:`RATE_SHAPE`)."""
    shape = RATE_SHAPE if shape is None else shape
    tt, lv = zip(*shape["trend"])
    rate = np.interp(t, tt, lv)
    for start, dur, mult in shape["bursts"]:
        rate = np.where((t >= start) & (t < start + dur), rate * mult, rate)
    return rate


#: the stream of the run seed that draws the event jitter, apart from the tasks' own draws
EVENT_STREAM = 0xE7E


def jittered_shape(jitter_s: float, seed: int) -> RateShape:
    """:data:`RATE_SHAPE` with each burst, each interior trend knot and the trend change moved
    by a uniform draw in ``[-jitter_s, +jitter_s]`` from ``default_rng([seed, EVENT_STREAM])``
    (the window's ends stay put); the shape itself when ``jitter_s`` is 0. The trend change
    moves with the knot it marks."""
    if not jitter_s:
        return RATE_SHAPE
    rng = np.random.default_rng([seed, EVENT_STREAM])
    trend = list(RATE_SHAPE["trend"])
    shifts = rng.uniform(-jitter_s, jitter_s, len(trend) - 2)
    moved = {t: t + d for (t, _), d in zip(trend[1:-1], shifts)}
    trend = [trend[0]] + [(moved[t], lv) for t, lv in trend[1:-1]] + [trend[-1]]
    bursts = [(s + d, dur, m) for (s, dur, m), d in
              zip(RATE_SHAPE["bursts"], rng.uniform(-jitter_s, jitter_s, len(RATE_SHAPE["bursts"])))]
    return {"trend": trend, "bursts": bursts, "trend_change": moved[RATE_SHAPE["trend_change"]]}


def shifted_shape(shape: RateShape, burst_factor: float = 1.0, trend_slope: float = 0.0,
                  window_s: float = PAPER_WINDOW_S) -> RateShape:
    """``shape`` with its bursts' excess rate scaled by ``burst_factor`` (multiplier m becomes
    ``1 + (m - 1) * burst_factor``; 0 removes the bursts) and a linear trend laid over its
    trend knots (a knot at time t has its level multiplied by ``1 + trend_slope * (t / window_s
    - 1/2)``); ``shape`` itself at the defaults, so the paper's window is drawn unchanged.
    The workload shifts of :class:`ilets.config.WorkloadConfig` [ours]."""
    if burst_factor == 1.0 and trend_slope == 0.0:
        return shape
    trend = [(t, lv * (1.0 + trend_slope * (t / window_s - 0.5))) for t, lv in shape["trend"]]
    bursts = [(s, d, 1.0 + (m - 1.0) * burst_factor) for s, d, m in shape["bursts"]]
    return {"trend": trend, "bursts": bursts, "trend_change": shape["trend_change"]}


def draw_cpu(rng: np.random.Generator, n: int, cfg: WorkloadConfig) -> np.ndarray:
    """CPU requests of ``n`` tasks: from the shipped quantile table (:func:`sample_cpu`) or,
    with ``cfg.cpu_source == "sample"``, resampled from the real Google sample beside the
    repository (:func:`real_cpu_sample`; an error names the file when it is absent); then
    multiplied by ``cfg.cpu_factor`` and capped at a whole machine."""
    if cfg.cpu_source == "sample":
        real = real_cpu_sample()
        if real is None:
            raise FileNotFoundError(f"{default_cpu_sample_path()}: workload.cpu_source 'sample' needs the real Google "
                                    "sample there (semicolon-separated task_events rows, CPU request in column 9)")
        cpu = rng.choice(real, n)
    else:
        cpu = sample_cpu(rng, n)
    return cpu if cfg.cpu_factor == 1.0 else np.minimum(cpu * cfg.cpu_factor, 1.0)


def _arrivals(rng: np.random.Generator, n: int, t0: float, t1: float, scale: float,
              shape: RateShape | None = None) -> np.ndarray:
    """``n`` sorted arrival times on [t0, t1) (window seconds) with density ∝ rate_shape.

    Given the count, a non-homogeneous Poisson process's points are i.i.d. draws from the
    normalised rate, so sampling the inverse of the cumulative rate gives exactly ``n``
    tasks per half (the paper's split) and the designed shape.
    """
    grid = np.linspace(t0, t1, 6001)
    mid = 0.5 * (grid[1:] + grid[:-1])
    cum = np.concatenate([[0.0], np.cumsum(rate_shape(mid, shape))])
    cum /= cum[-1]
    t = np.sort(np.interp(rng.random(n), cum, grid))
    return t * scale


def synthetic_workload(cfg: WorkloadConfig, seed: int) -> Workload:
    """The embedded default workload, scaled by ``cfg.scale``.

    ``scale`` multiplies both the task counts and the window length, so the arrival *rate*
    (hence the load on a fleet of a given size) and the shape of bursts and trend are the
    same at every scale; only the duration shrinks. ``scale=1`` is the paper's window.
    """
    if not 0 < cfg.scale <= 1:
        raise ValueError(f"workload.scale must be in (0, 1], got {cfg.scale}")
    rng = np.random.default_rng(seed)
    shape = shifted_shape(jittered_shape(cfg.event_jitter_s, seed), cfg.burst_factor, cfg.trend_slope)
    n_off = max(1, round(PAPER_OFFLINE_TASKS * cfg.scale * cfg.rate_factor))
    n_on = max(1, round(PAPER_ONLINE_TASKS * cfg.scale * cfg.rate_factor))
    half = PAPER_WINDOW_S / 2
    arrival = np.concatenate([_arrivals(rng, n_off, 0.0, half, cfg.scale, shape),
                              _arrivals(rng, n_on, half, PAPER_WINDOW_S, cfg.scale, shape)])
    n = n_off + n_on
    cpu = draw_cpu(rng, n, cfg)
    length, deadline = draw_length_and_deadline(rng, n, cfg)
    events = {f"burst_{i}": s * cfg.scale for i, (s, _, _) in enumerate(shape["bursts"])}
    events["trend_change"] = shape["trend_change"] * cfg.scale
    table = TaskTable(arrival, cpu, length, deadline, source=f"synthetic(scale={cfg.scale}, seed={seed})",
                      meta={"events": events, "bursts": [(s * cfg.scale, d * cfg.scale, m)
                                                         for s, d, m in shape["bursts"]]})
    split = half * cfg.scale
    off, on = table.split_at(split)
    return Workload(offline=off, online=on, split_time=split, config=cfg)


# --- the Google trace: windows read by ilets.workloads.trace, lengths and deadlines drawn here -----

def load_task_events(trace_dir: str | Path, t0: float, t1: float, cfg: WorkloadConfig | None = None,
                     seed: int = 0) -> tuple[TaskTable, TraceStats]:
    """Tasks submitted in ``[t0, t1)`` (seconds of trace time) with a CPU request.

    Arrival is in seconds relative to ``t0``; task length and deadline are drawn from
    ``cfg``'s ranges with ``numpy.random.default_rng(seed)``. Raises
    :class:`ilets.workloads.trace.TraceError` on a missing or malformed shard, a shard missing from
    the window's range, or an empty window.
    """
    table, found = _trace_table(trace_dir, t0, t1, cfg or WorkloadConfig(kind="google", trace_dir=str(trace_dir)),
                                seed)
    return table, found.stats


def _trace_table(trace_dir: str | Path, t0: float, t1: float, cfg: WorkloadConfig,
                 seed: int) -> tuple[TaskTable, SubmitEvents]:
    found = read_submits(trace_dir, t0, t1)
    length, deadline = draw_length_and_deadline(np.random.default_rng(seed), len(found.arrival), cfg)
    table = TaskTable(found.arrival, found.cpu, length, deadline,
                      source=f"google2011({found.folder}, [{t0}, {t1}) s, seed={seed})",
                      meta={"events": {}, "window_s": (t0, t1), "trace": found.stats.as_dict()})
    return table, found


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
    table, found = _trace_table(cfg.trace_dir, start, start + span, cfg, seed)
    split = span / 2
    offline, online = table.split_at(split)
    for half, part, (a, b) in (("offline", offline, (start, start + split)),
                               ("online", online, (start + split, start + span))):
        if len(part) == 0:  # OINPT or the online pass would fail deep inside with an index error
            raise TraceError(f"{found.folder}: the {half} half [{a}, {b}) s of the window has no "
                             f"SUBMIT tasks; expected tasks in both halves (widen workload.window_s or "
                             f"workload.scale, or move workload.window_start_s)")
    return Workload(offline=offline, online=online, split_time=split, config=cfg)


def load_workload(cfg: WorkloadConfig, seed: int) -> Workload:
    """The workload named by ``cfg.kind``: ``synthetic`` (default) or ``google`` (trace files)."""
    if cfg.kind == "synthetic":
        return synthetic_workload(cfg, seed)
    if cfg.kind == "google":
        return google_workload(cfg, seed)
    raise ValueError(f"workload.kind must be 'synthetic' or 'google', got {cfg.kind!r}")


def default_cpu_sample_path() -> Path:
    """Where :func:`real_cpu_sample` looks by default: ``shared/data`` beside the repository."""
    return Path(__file__).resolve().parents[4] / "shared" / "data" / "google2011_task_requests_sample.csv"


def real_cpu_sample(path: Path | None = None) -> np.ndarray | None:
    """CPU requests (> 0) of the real Google sample beside the repository, or None if absent.

    The sample (``../shared/data/google2011_task_requests_sample.csv``) is not part of the
    project; the book and the tests use it only when it is there.
    """
    path = Path(path) if path else default_cpu_sample_path()
    if not path.is_file():
        return None
    cpu = np.loadtxt(path, delimiter=";", usecols=(8,))
    return cpu[cpu > 0]
