"""The sections of a run's configuration that describe its world: the workload, the fleet and the reward."""

from __future__ import annotations

from dataclasses import dataclass

from ilets.config.strict import ConfigError, _Typed

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


@dataclass(frozen=True)
class WorkloadConfig(_Typed):
    """Where tasks come from and the parameters the trace lacks."""

    kind: str = "synthetic"  #: "synthetic" (embedded default) or "google" (trace shards)
    scale: float = 1.0  #: fraction of the paper's 590,000-task window (counts and duration)
    length_mi: tuple[float, float] = (500.0, 3000.0)  #: task length range, MI [lineage]
    deadline_s: tuple[float, float] = (1.5, 4.5)  #: relative deadline range, s [ours]
    trace_dir: str = ""  #: folder with task_events shards (google only)
    window_start_s: float = -1.0  #: trace time of the window start; -1: day 10 start [ours]
    window_s: float = 3000.0  #: window length, s (paper: 50 minutes)
    #: the synthetic window's designed events (bursts, trend knots) each move by a uniform draw
    #: in [-event_jitter_s, +event_jitter_s] seconds, drawn from the run seed, so that the event
    #: schedule changes with the seed ("worlds as replicates"); 0: the designed schedule [ours]
    event_jitter_s: float = 0.0
    # --- shifts of the synthetic window (issue "Beyond the paper"), each 1.0/0.0 = the paper's [ours] ---
    #: arrival rate x this: both halves' task counts multiply by it over the same window
    rate_factor: float = 1.0
    #: each burst's rate multiplier m becomes 1 + (m - 1) x this (0: no bursts, 2: bursts twice as high)
    burst_factor: float = 1.0
    #: a linear trend on top of the designed one: every trend knot's level at time t is multiplied
    #: by 1 + trend_slope x (t / window - 1/2), so the rate ends (1 + slope/2)/(1 - slope/2) x
    #: where it would have been relative to the start; in (-2, 2) so the rate stays positive
    trend_slope: float = 0.0
    #: every task's CPU request x this, capped at a whole machine (1.0): a heavier or lighter mix
    cpu_factor: float = 1.0
    #: where CPU requests come from: "table" (inverse CDF of the shipped quantile table) or
    #: "sample" (resampled from the real Google sample beside the repository, which must be there)
    cpu_source: str = "table"

    def validate(self, where: str) -> None:
        if self.kind not in ("synthetic", "google"):
            raise ConfigError(f"{where}.kind: expected 'synthetic' or 'google', got {self.kind!r}")
        if not 0 < self.scale <= 1:
            raise ConfigError(f"{where}.scale: expected a number in (0, 1], got {self.scale}")
        if self.kind == "synthetic":
            for half, count in SYNTHETIC_TASKS.items():
                if round(count * self.scale) < 1:  # every cell would fail late, or run on one task
                    raise ConfigError(f"{where}.scale: {self.scale} gives no task in the {half} half "
                                      f"({count:,} x scale rounds to 0); expected a scale above "
                                      f"{0.5 / count:.3g}")
        for key in ("length_mi", "deadline_s"):
            lo, hi = getattr(self, key)
            if not 0 < lo <= hi:
                raise ConfigError(f"{where}.{key}: expected 0 < low <= high, got {(lo, hi)}")
        if self.window_s <= 0:
            raise ConfigError(f"{where}.window_s: expected > 0, got {self.window_s}")
        if not 0 <= self.event_jitter_s <= MAX_EVENT_JITTER_S:
            raise ConfigError(f"{where}.event_jitter_s: expected a number of seconds in [0, {MAX_EVENT_JITTER_S:g}] "
                              f"(events must keep their order in the window), got {self.event_jitter_s}")
        if self.event_jitter_s and self.kind != "synthetic":
            raise ConfigError(f"{where}.event_jitter_s: only the synthetic window has designed events; "
                              f"expected 0 with kind {self.kind!r}")
        for key in ("rate_factor", "cpu_factor"):
            if not 0 < getattr(self, key) <= 10:
                raise ConfigError(f"{where}.{key}: expected a factor in (0, 10], got {getattr(self, key)}")
        if not 0 <= self.burst_factor <= 10:
            raise ConfigError(f"{where}.burst_factor: expected a factor in [0, 10], got {self.burst_factor}")
        if not -2 < self.trend_slope < 2:
            raise ConfigError(f"{where}.trend_slope: expected a number in (-2, 2) (the rate must stay positive), "
                              f"got {self.trend_slope}")
        if self.cpu_source not in ("table", "sample"):
            raise ConfigError(f"{where}.cpu_source: expected 'table' or 'sample', got {self.cpu_source!r}")
        shifted = {k: getattr(self, k) for k in ("rate_factor", "burst_factor", "trend_slope", "cpu_factor", "cpu_source")
                   if getattr(self, k) != WorkloadConfig.__dataclass_fields__[k].default}
        if shifted and self.kind != "synthetic":
            raise ConfigError(f"{where}.{next(iter(shifted))}: only the synthetic window can be shifted; "
                              f"expected the default with kind {self.kind!r}")
        if self.window_start_s < 0 and self.window_start_s != -1:
            raise ConfigError(f"{where}.window_start_s: expected -1 (day 10) or a time >= 0 s, "
                              f"got {self.window_start_s}")


@dataclass(frozen=True)
class FleetConfig(_Typed):
    """A heterogeneous fleet; ranges are [ours] (the paper does not publish them)."""

    servers: int = 50  #: servers M (the paper runs 50, 100 and 200) [paper]
    seed: int = 0  #: the fleet is a fixed data centre: run seeds vary workload and learning
    #: CPU capacities in trace units (the 2011 trace: mostly 0.5, some 1.0, a few 0.25)
    #: [ours, trace-like]
    capacity_levels: tuple[float, ...] = (0.25, 0.5, 1.0)
    capacity_probs: tuple[float, ...] = (0.1, 0.7, 0.2)  #: each capacity level's share of the servers [ours, trace-like]
    #: service rate range, MIPS, steps of 50; chosen so that in the paper's full online
    #: window 50 servers are loaded but not swamped (see the workload chapter's load table) [ours]
    mips: tuple[float, float] = (600.0, 1800.0)
    idle_w: tuple[float, float] = (50.0, 100.0)  #: idle power per 0.5 capacity, W [ours]
    active_w: tuple[float, float] = (70.0, 300.0)  #: extra power at full use per 0.5 cap., W [ours]

    def validate(self, where: str) -> None:
        if not 1 <= self.servers <= 100_000:
            raise ConfigError(f"{where}.servers: expected an integer in [1, 100000], got {self.servers}")
        if len(self.capacity_levels) != len(self.capacity_probs) or not self.capacity_levels:
            raise ConfigError(f"{where}.capacity_probs: expected one share per capacity level")
        if any(c <= 0 for c in self.capacity_levels):
            raise ConfigError(f"{where}.capacity_levels: capacities must be > 0")
        if abs(sum(self.capacity_probs) - 1) > 1e-9 or min(self.capacity_probs) < 0:
            raise ConfigError(f"{where}.capacity_probs: expected non-negative shares summing to 1")
        for key in ("mips", "idle_w", "active_w"):
            lo, hi = getattr(self, key)
            if not 0 <= lo <= hi or (key == "mips" and lo <= 0):
                raise ConfigError(f"{where}.{key}: expected 0 < low <= high, got {(lo, hi)}")
        if self.idle_w[1] + self.active_w[1] <= 0:
            raise ConfigError(f"{where}.idle_w/active_w: expected a fleet whose maximum power is > 0, "
                              f"got idle {self.idle_w} and active {self.active_w} W")
        if not 0 <= self.seed <= SEED_MAX:
            raise ConfigError(f"{where}.seed: expected an integer in [0, {SEED_MAX}], got {self.seed}")


WAIT_FORMS = ("capped", "linear", "log")


@dataclass(frozen=True)
class RewardConfig(_Typed):
    """The scheduling cost of the authors' code, normalised [code + ours]."""

    theta: float = 0.3  #: weight of power against waiting [code]
    wait_scale_s: float = 10.0  #: estimated response is divided by this (then shaped by wait_form) [ours]
    #: how the scaled response x = R / wait_scale_s enters the cost [ours, chosen by the pilot]:
    #: "capped" min(1, x), "linear" x, "log" log(1 + x)
    wait_form: str = "log"
    include_execution: bool = True  #: count the task's own execution time in the wait [ours]
    deadline_penalty: float = 0.0  #: added to the cost when the estimate misses the deadline [ours]
    infeasible_penalty: float = 1.0  #: added when an action names a server too small

    def validate(self, where: str) -> None:
        if not 0 <= self.theta <= 1:
            raise ConfigError(f"{where}.theta: expected a number in [0, 1], got {self.theta}")
        if self.wait_scale_s <= 0:
            raise ConfigError(f"{where}.wait_scale_s: expected > 0, got {self.wait_scale_s}")
        if self.wait_form not in WAIT_FORMS:
            raise ConfigError(f"{where}.wait_form: expected one of {WAIT_FORMS}, got {self.wait_form!r}")
        for key in ("deadline_penalty", "infeasible_penalty"):
            if not getattr(self, key) >= 0:
                raise ConfigError(f"{where}.{key}: expected a number >= 0, got {getattr(self, key)}")
