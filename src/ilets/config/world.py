"""The sections of a run's configuration that describe its world: the workload, the fleet and the reward."""

from __future__ import annotations

from dataclasses import dataclass

from ilets.config.strict import ConfigError, _Typed
from ilets.config.validate import Validated, bounded

#: run seeds go to numpy and torch, which take seeds in [0, 2**32)
SEED_MAX = 2**32 - 1

#: Task counts of the synthetic window's offline and online halves at scale 1 (the paper's;
#: ilets.workloads.trace.PAPER_OFFLINE_TASKS and PAPER_ONLINE_TASKS: this base module cannot
#: import them, a test checks that they agree). A scale gives ``round(count * scale)`` tasks.
SYNTHETIC_TASKS = {"offline": 330_632, "online": 259_368}


#: the largest event jitter, s: under half the smallest gap (310 s) between the synthetic
#: window's designed knots and bursts (ilets.workloads.workload.RATE_SHAPE), so that events
#: keep their order whatever the draw (a test checks the gap)
MAX_EVENT_JITTER_S = 150.0
#: where tasks come from (``workload.kind``): the embedded synthetic window or Google trace shards
WORKLOAD_KINDS = ("synthetic", "google")
#: where CPU requests come from (``workload.cpu_source``)
CPU_SOURCES = ("table", "sample")
#: the workload fields that shift the synthetic window (each at its default: the paper's)
SHIFT_FIELDS = ("rate_factor", "burst_factor", "trend_slope", "cpu_factor", "cpu_source")


@dataclass(frozen=True)
class WorkloadConfig(_Typed, Validated):
    """Where tasks come from and the parameters the trace lacks."""

    kind: str = bounded("synthetic", choices=WORKLOAD_KINDS)  #: "synthetic" (embedded default) or "google" (trace shards)
    scale: float = bounded(1.0, gt=0, le=1)  #: fraction of the paper's 590,000-task window (counts and duration)
    #: task length range, MI [lineage]
    length_mi: tuple[float, float] = bounded((500.0, 3000.0), gt=0, ordered=True)
    deadline_s: tuple[float, float] = bounded((1.5, 4.5), gt=0, ordered=True)  #: relative deadline range, s [ours]
    trace_dir: str = ""  #: folder with task_events shards (google only)
    #: trace time of the window start; -1: day 10 start [ours]
    window_start_s: float = bounded(-1.0, ge=0, also=(-1,), what="a number of seconds", note="-1: day 10")
    window_s: float = bounded(3000.0, gt=0)  #: window length, s (paper: 50 minutes)
    #: the synthetic window's designed events (bursts, trend knots) each move by a uniform draw
    #: in [-event_jitter_s, +event_jitter_s] seconds, drawn from the run seed, so that the event
    #: schedule changes with the seed ("worlds as replicates"); 0: the designed schedule [ours]
    event_jitter_s: float = bounded(0.0, ge=0, le=MAX_EVENT_JITTER_S, what="a number of seconds",
                                    note="events must keep their order in the window")
    # --- shifts of the synthetic window (issue "Beyond the paper"), each 1.0/0.0 = the paper's [ours] ---
    #: arrival rate x this: both halves' task counts multiply by it over the same window
    rate_factor: float = bounded(1.0, gt=0, le=10, what="a factor")
    #: each burst's rate multiplier m becomes 1 + (m - 1) x this (0: no bursts, 2: bursts twice as high)
    burst_factor: float = bounded(1.0, ge=0, le=10, what="a factor")
    #: a linear trend on top of the designed one: every trend knot's level at time t is multiplied
    #: by 1 + trend_slope x (t / window - 1/2), so the rate ends (1 + slope/2)/(1 - slope/2) x
    #: where it would have been relative to the start; in (-2, 2) so the rate stays positive
    trend_slope: float = bounded(0.0, gt=-2, lt=2, note="the rate must stay positive")
    #: every task's CPU request x this, capped at a whole machine (1.0): a heavier or lighter mix
    cpu_factor: float = bounded(1.0, gt=0, le=10, what="a factor")
    #: where CPU requests come from: "table" (inverse CDF of the shipped quantile table) or
    #: "sample" (resampled from the real Google sample beside the repository, which must be there)
    cpu_source: str = bounded("table", choices=CPU_SOURCES)

    def relations(self, where: str) -> None:
        """A synthetic scale that leaves a task in each half; jitter and shifts only for the
        synthetic window."""
        if self.kind == "synthetic":
            for half, count in SYNTHETIC_TASKS.items():
                if round(count * self.scale) < 1:  # every cell would fail late, or run on one task
                    raise ConfigError(f"{where}.scale: {self.scale} gives no task in the {half} half "
                                      f"({count:,} x scale rounds to 0); expected a scale above "
                                      f"{0.5 / count:.3g}")
        if self.event_jitter_s and self.kind != "synthetic":
            raise ConfigError(f"{where}.event_jitter_s: only the synthetic window has designed events; "
                              f"expected 0 with kind {self.kind!r}")
        shifted = [k for k in SHIFT_FIELDS if getattr(self, k) != WorkloadConfig.__dataclass_fields__[k].default]
        if shifted and self.kind != "synthetic":
            raise ConfigError(f"{where}.{shifted[0]}: only the synthetic window can be shifted; "
                              f"expected the default with kind {self.kind!r}")


@dataclass(frozen=True)
class FleetConfig(_Typed, Validated):
    """A heterogeneous fleet; ranges are [ours] (the paper does not publish them)."""

    servers: int = bounded(50, ge=1, le=100_000)  #: servers M (the paper runs 50, 100 and 200) [paper]
    #: the fleet is a fixed data centre: run seeds vary workload and learning
    seed: int = bounded(0, ge=0, le=SEED_MAX)
    #: CPU capacities in trace units (the 2011 trace: mostly 0.5, some 1.0, a few 0.25)
    #: [ours, trace-like]
    capacity_levels: tuple[float, ...] = bounded((0.25, 0.5, 1.0), nonempty=True, gt=0)
    #: each capacity level's share of the servers [ours, trace-like]
    capacity_probs: tuple[float, ...] = bounded((0.1, 0.7, 0.2), ge=0, what="a share")
    #: service rate range, MIPS, steps of 50; chosen so that in the paper's full online
    #: window 50 servers are loaded but not swamped (see the workload chapter's load table) [ours]
    mips: tuple[float, float] = bounded((600.0, 1800.0), gt=0, ordered=True)
    #: idle power per 0.5 capacity, W [ours]
    idle_w: tuple[float, float] = bounded((50.0, 100.0), ge=0, ordered=True)
    #: extra power at full use per 0.5 cap., W [ours]
    active_w: tuple[float, float] = bounded((70.0, 300.0), ge=0, ordered=True)

    def relations(self, where: str) -> None:
        """One share per capacity level, summing to 1; some power at full use."""
        if len(self.capacity_levels) != len(self.capacity_probs):
            raise ConfigError(f"{where}.capacity_probs: expected one share per capacity level "
                              f"({len(self.capacity_levels)}), got {len(self.capacity_probs)}")
        if abs(sum(self.capacity_probs) - 1) > 1e-9:
            raise ConfigError(f"{where}.capacity_probs: expected shares summing to 1, got {list(self.capacity_probs)}")
        if self.idle_w[1] + self.active_w[1] <= 0:
            raise ConfigError(f"{where}.idle_w/active_w: expected a fleet whose maximum power is > 0, "
                              f"got idle {self.idle_w} and active {self.active_w} W")


WAIT_FORMS = ("capped", "linear", "log")


@dataclass(frozen=True)
class RewardConfig(_Typed, Validated):
    """The scheduling cost of the authors' code, normalised [code + ours]."""

    theta: float = bounded(0.3, ge=0, le=1)  #: weight of power against waiting [code]
    #: estimated response is divided by this (then shaped by wait_form) [ours]
    wait_scale_s: float = bounded(10.0, gt=0)
    #: how the scaled response x = R / wait_scale_s enters the cost [ours, chosen by the pilot]:
    #: "capped" min(1, x), "linear" x, "log" log(1 + x)
    wait_form: str = bounded("log", choices=WAIT_FORMS)
    include_execution: bool = True  #: count the task's own execution time in the wait [ours]
    #: added to the cost when the estimate misses the deadline [ours]
    deadline_penalty: float = bounded(0.0, ge=0)
    infeasible_penalty: float = bounded(1.0, ge=0)  #: added when an action names a server too small
