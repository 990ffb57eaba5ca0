"""The data-centre simulator: heterogeneous servers, FCFS queues, exact energy.

Model (the book's *Model* chapter, ``notebooks/02_model.py``):

* server ``i`` has CPU capacity ``C_i``, service rate ``mu_i`` (MIPS), idle power
  ``P_idle_i`` and active power ``P_act_i``; its power is ``P_idle_i + P_act_i * U_i(t)``
  with ``U_i`` the CPU in use divided by ``C_i``;
* one FCFS queue per server: tasks start in arrival order; a task starts as soon as the
  tasks ahead of it have started and the free CPU covers its request (head-of-line
  blocking: a waiting task blocks the ones behind it even if they would fit); running tasks
  share the server without slowing each other; execution time = length / ``mu_i``;
* response = waiting + execution; success = response <= the task's deadline
  (:func:`meets_deadline`, one test everywhere);
* energy = the exact integral of total power, accumulated between consecutive events.

Because queues are FCFS and nothing preempts, a task's start time is fixed the moment it is
assigned: later arrivals queue behind it and cannot change it. :meth:`Cloud.assign`
therefore computes start and finish at once (``_earliest_start``) and pushes the start and
finish onto a timeline heap; :meth:`Cloud.advance` pops events up to the next arrival and
updates the per-server arrays (free CPU, task counts, power) and the energy integral. Time
is simulated only; nothing reads the wall clock (the authors' code advanced time on timer
threads, which made results depend on host speed).
"""

from __future__ import annotations

import heapq
import math
from itertools import accumulate
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ilets.config import FleetConfig
from ilets.simulator.start_kernels import earliest_starts as start_kernel

#: Tolerance when comparing summed CPU requests with a capacity (float sums of trace values).
CPU_EPS = 1e-9

#: Absolute tolerance (s) of the deadline test: a response computed as ``finish - arrival``
#: from float times can exceed a deadline it meets exactly by one rounding step.
DEADLINE_TOL = 1e-12


def meets_deadline(response, deadline):
    """True where ``response <= deadline`` within :data:`DEADLINE_TOL`: the one success test
    of the study (summary, task frame, environment, reward penalty and experts all use it)."""
    return np.asarray(response) <= np.asarray(deadline) + DEADLINE_TOL

_FINISH, _START = 0, 1  # at equal times finishes free CPU before starts use it


@dataclass(frozen=True)
class Fleet:
    """Static server parameters as arrays of length M."""

    capacity: np.ndarray  #: CPU capacity, trace units
    mips: np.ndarray  #: service rate, MI per second
    p_idle: np.ndarray  #: W
    p_act: np.ndarray  #: W at full use, on top of idle

    def __post_init__(self) -> None:
        m = len(self.capacity)
        if m < 1:
            raise ValueError("Fleet needs at least one server")
        for name in ("mips", "p_idle", "p_act"):
            if len(getattr(self, name)) != m:
                raise ValueError(f"Fleet.{name} has {len(getattr(self, name))} entries, capacity has {m}")
        if np.any(self.capacity <= 0) or np.any(self.mips <= 0):
            raise ValueError("Fleet capacities and MIPS must be > 0")
        for name in ("p_idle", "p_act"):
            values = np.asarray(getattr(self, name), dtype=float)
            if not np.all(np.isfinite(values)) or np.any(values < 0):
                raise ValueError(f"Fleet.{name} must be finite and >= 0")
        # the reward normalises power by max_power: zero would make every reward NaN
        if not self.max_power > 0:
            raise ValueError("Fleet draws no power at all (max_power == 0): the reward's power term is undefined")

    def __len__(self) -> int:
        return len(self.capacity)

    @cached_property
    def speed_share(self) -> np.ndarray:
        """MIPS relative to the fastest server (in (0, 1])."""
        return self.mips / self.mips.max()

    @cached_property
    def power_share(self) -> np.ndarray:
        """Active power per CPU unit relative to the hungriest server (in [0, 1])."""
        w = self.p_act / self.capacity
        return w / w.max() if w.max() > 0 else np.zeros_like(w)

    @cached_property
    def max_power(self) -> float:
        """Total power with every server fully used, W."""
        return float(self.p_idle.sum() + self.p_act.sum())

    @cached_property
    def largest_server_power(self) -> float:
        """The largest full-load power of one server, W."""
        return float((self.p_idle + self.p_act).max())


def make_fleet(cfg: FleetConfig, seed: int) -> Fleet:
    """A seeded heterogeneous fleet of ``cfg.servers`` servers [ours: ranges in FleetConfig].

    Power scales with capacity (a 1.0 machine draws twice a 0.5 one); MIPS and power are
    drawn independently so that fast servers are not always the efficient ones, which is
    what makes response time and energy a trade-off.
    """
    if cfg.servers < 1:
        raise ValueError(f"fleet.servers must be >= 1, got {cfg.servers}")
    rng = np.random.default_rng(seed)
    m = cfg.servers
    capacity = rng.choice(np.asarray(cfg.capacity_levels, float), size=m, p=np.asarray(cfg.capacity_probs))
    steps = np.arange(cfg.mips[0], cfg.mips[1] + 1e-9, 50.0)
    mips = rng.choice(steps if len(steps) else np.array([cfg.mips[0]]), size=m)
    size = capacity / 0.5
    p_idle = rng.uniform(*cfg.idle_w, m) * size
    p_act = rng.uniform(*cfg.active_w, m) * size
    return Fleet(capacity.astype(float), mips.astype(float), p_idle, p_act)


class Cloud:
    """Live state of the fleet; tasks are assigned one at a time in arrival order.

    Public arrays (length M, read them, do not write): ``used`` CPU in use now, ``n_tasks``
    running plus waiting, ``load`` their summed CPU requests, ``last_start`` start time of the latest task queued (the earliest
    any new task can start, FCFS), ``drain`` time at which the server will be empty.
    """

    def __init__(self, fleet: Fleet, t0: float = 0.0, record: bool = True) -> None:
        m = len(fleet)
        self.fleet = fleet
        self.t_start = float(t0)
        self.now = float(t0)
        self.used = np.zeros(m)
        self.n_tasks = np.zeros(m, dtype=np.int64)
        self.last_start = np.full(m, float(t0))
        self.drain = np.full(m, float(t0))
        self.load = np.zeros(m)
        self._committed: list[list[tuple[float, float]]] = [[] for _ in range(m)]
        # (time, kind, seq, server, cpu, watts): watts is the task's active power, fixed at assignment
        self._events: list[tuple[float, int, int, int, float, float]] = []
        #: task -> its power factor, for tasks assigned at another speed than the nominal one
        #: (``assign``'s ``power_factor``; empty in the plain scenario)
        self.power_factors: dict[int, float] = {}
        self._seq = 0
        self._idle_power = float(fleet.p_idle.sum())
        self.act_per_cpu = fleet.p_act / fleet.capacity  # W per CPU unit in use
        self._active_power = 0.0
        self._until = np.inf  #: an emulator copy is exact only up to this time
        self.energy = 0.0  #: J from t_start to ``now``
        self.active_energy = 0.0  #: J committed by assigned tasks (exact, at assignment)
        self.record = record
        self.records: dict[str, list] = {k: [] for k in ("task", "server", "arrival", "start", "finish", "deadline")}
        # Start profiles for earliest_starts (see there); rows of servers assigned to since
        # the last call are stale and rebuilt lazily. An empty server's row (no held CPU,
        # level 0 from time -inf) needs no rebuild.
        self._rows = np.arange(m)
        self._room = fleet.capacity + CPU_EPS
        self._prof_level = np.zeros((m, 8))
        self._prof_time = np.full((m, 8), float(t0))  # time[0] = last_start = t0
        self._stale: set[int] = set()

    # --- state views --------------------------------------------------------------
    @property
    def free_cpu(self) -> np.ndarray:
        """CPU free now on each server."""
        return self.fleet.capacity - self.used

    @property
    def power(self) -> float:
        """Total power now, W."""
        return self._idle_power + self._active_power

    def server_power(self) -> np.ndarray:
        """Power of each server now, W."""
        return self.fleet.p_idle + self.act_per_cpu * self.used

    def feasible(self, cpu: float) -> np.ndarray:
        """Boolean mask of servers whose capacity can ever hold a task of this request."""
        return self.fleet.capacity + CPU_EPS >= cpu

    # --- time -----------------------------------------------------------------------
    def advance(self, t: float) -> None:
        """Process every event at or before ``t`` and move the clock to ``t``."""
        if t < self.now:
            raise ValueError(f"cannot move time back from {self.now} to {t}")
        if t > self._until:
            raise ValueError(f"this emulator copy is exact only up to t={self._until}, asked for {t}")
        events = self._events
        while events and events[0][0] <= t:
            te, kind, _, s, cpu, delta = heapq.heappop(events)
            self.energy += (self._idle_power + self._active_power) * (te - self.now)
            self.now = te
            if kind == _START:
                self.used[s] += cpu
                self._active_power += delta
            else:
                self.used[s] -= cpu
                self._active_power -= delta
                self.n_tasks[s] -= 1
                self.load[s] -= cpu
                if self.n_tasks[s] == 0:  # reset float drift on an empty server
                    self.used[s] = 0.0
                    self.load[s] = 0.0
        self.energy += (self._idle_power + self._active_power) * (t - self.now)
        self.now = t
        if not events and self._until == np.inf:  # reset float drift (not in a partial copy)
            self._active_power = 0.0

    def run_to_completion(self) -> float:
        """Finish every assigned task; returns the makespan (time of the last finish)."""
        last = max((e[0] for e in self._events), default=self.now)
        self.advance(last)
        return self.now

    # --- decisions ------------------------------------------------------------------
    def earliest_start(self, s: int, cpu: float, t: float | None = None) -> float:
        """When a task of ``cpu`` assigned to server ``s`` now would start (exact, FCFS).

        It cannot start before the task queued last (FCFS) nor before ``t`` (default: now).
        From then on only earlier tasks occupy the server and they only finish, so the
        start is the first of those instants (or a later finish) at which the CPU still held
        by unfinished earlier tasks leaves room for ``cpu``.
        """
        t0 = max(self.now if t is None else t, self.last_start[s])
        cap = self.fleet.capacity[s] + CPU_EPS - cpu
        if cap < 0:
            return float("inf")
        pending = [e for e in self._committed[s] if e[0] > t0]
        held = 0.0
        for _, c in pending:
            held += c
        if held <= cap:
            return t0
        pending.sort()
        for f, c in pending:
            held -= c
            if held <= cap:
                return f
        return pending[-1][0]  # unreachable unless float trouble: all earlier tasks done

    def earliest_starts(self, cpu: float, t: float | None = None) -> np.ndarray:
        """:meth:`earliest_start` on every server at once; ``inf`` where the task never fits.

        Policies that need every server's exact start (Earliest-Finish, Greedy-Cost) would
        otherwise call :meth:`earliest_start` for dozens of servers per task, since the
        fastest servers are usually full and the cheap bound ``max(now, last_start)`` cannot
        rule them out. Instead each server keeps a start profile of its unfinished tasks
        sorted by finish: ``level[k]``, the CPU still held once the first ``k`` have finished,
        reached at ``time[k]``. A task of ``cpu`` fits from the first ``k`` with
        ``level[k] <= capacity + CPU_EPS - cpu`` and, FCFS, not before ``last_start`` nor
        before now; that is one comparison over an (M x K) array. Only tasks finishing after
        ``max(now, last_start)`` can be in the way, so a row holds just those (the tasks
        running when the queue's last task starts, however long the queue) and starts at
        ``time[0] = last_start``. The profile changes only when a task is assigned to the
        server (time passing only moves ``now`` past some of its times), so a row is rebuilt
        only then. ``t`` as in :meth:`earliest_start` (not before now).
        """
        if self._stale:
            self._rebuild_profiles()
        # first k whose held level leaves room; level[n] = 0 fits any feasible request
        start = np.empty(len(self._rows))
        start_kernel(self._prof_level, self._prof_time, self._room, float(cpu), self.now if t is None else float(t),
                     start)
        return start

    def _rebuild_profiles(self) -> None:
        """Rebuild the start profiles of servers assigned to since the last rebuild."""
        width = self._prof_level.shape[1]
        for s in self._stale:
            first = self.last_start[s]  # FCFS: nothing new starts before the last start
            cut = first if first > self.now else self.now
            pending = sorted([e for e in self._committed[s] if e[0] > cut])
            n = len(pending)
            if n + 1 > width:  # more tasks in the way than ever before: widen every row
                extra = max(width, n + 1 - width)
                m = len(self._rows)
                self._prof_level = np.concatenate([self._prof_level, np.zeros((m, extra))], axis=1)
                self._prof_time = np.concatenate([self._prof_time, np.full((m, extra), np.inf)], axis=1)
                width += extra
            row = self._prof_level[s]
            # suffix sums: level[k] = CPU held by the tasks finishing after the k-th
            row[:n] = list(accumulate(c for _, c in reversed(pending)))[::-1]
            row[n:] = 0.0
            self._prof_time[s, 0] = first
            self._prof_time[s, 1:n + 1] = [f for f, _ in pending]
        self._stale.clear()

    def assign(self, task: int, arrival: float, cpu: float, length: float, deadline: float, s: int,
               *, release: float | None = None, speed: float = 1.0, power_factor: float = 1.0) -> tuple[float, float]:
        """Assign a task arriving at ``arrival`` to server ``s``; returns (start, finish).

        The clock is advanced to ``arrival`` first. Raises ValueError if the server can
        never hold the request, or if ``arrival`` is before the clock: the task would start
        at ``now`` at the earliest and its response would silently include time it did not
        exist (callers assign in arrival order, snapshots are taken before their window).

        ``release`` (keyword only, default None: the behaviour above, unchanged) is the
        extension boundary for scenarios that hold tasks back before assigning them (the
        grid-command scenario's deferral, :mod:`ilets.gridcommand`) [ours]: the time the task
        is handed to the cloud, ``release >= arrival``. The clock advances to ``release``
        instead (and ``release`` must not be before it); the start is computed from there,
        while the records and the response still use ``arrival``, so the time a task was held
        back counts against its deadline. A task's start is still fixed when it is assigned:
        deferral and admission caps act before assignment, never inside the simulator.

        ``speed`` and ``power_factor`` (keyword only, default 1.0: unchanged) run the task at
        another clock speed, the grid-command scenario's DVFS lever [ours]: it executes in
        ``length / (mips * speed)`` and draws ``power_factor`` times its nominal active power
        while it runs, both fixed at assignment (:attr:`power_factors` records the factor).
        """
        if release is not None:
            if not release >= arrival:
                raise ValueError(f"task {task}: release {release} is before its arrival {arrival}")
            if release > self.now:
                self.advance(release)
            elif release < self.now:
                raise ValueError(f"task {task}: release {release} is before the simulator's clock {self.now}")
        elif arrival > self.now:
            self.advance(arrival)
        elif arrival < self.now:
            raise ValueError(f"task {task}: arrival {arrival} is before the simulator's clock {self.now}")
        cap = self.fleet.capacity[s]
        if cpu > cap + CPU_EPS:
            raise ValueError(f"task {task}: CPU request {cpu} exceeds server {s}'s capacity {cap}")
        lst = self._committed[s]
        # Drop the tasks that can no longer delay a new one: those finishing by max(now,
        # last_start), since no new task starts before either (FCFS) and both only grow. Checked
        # on the oldest entry (a cheap amortised prune). Finished tasks alone would leave an
        # overloaded server's whole queue here, and every start is a scan of it.
        last = self.last_start[s]
        cut = last if last > self.now else self.now
        if lst and lst[0][0] <= cut:
            lst[:] = [e for e in lst if e[0] > cut]
        # the DVFS factors (1.0 in the plain scenario) are applied only when set: this is the
        # simulator's hot path, and a numpy-scalar product costs more than the comparison
        dvfs = speed != 1.0 or power_factor != 1.0
        if dvfs and not (0.0 < speed < math.inf and 0.0 < power_factor < math.inf):
            raise ValueError(f"task {task}: speed and power_factor must be positive finite factors, got {speed} "
                             f"and {power_factor}")
        start = self.earliest_start(s, cpu)
        mips = self.fleet.mips[s]
        finish = start + length / (mips * speed if dvfs else mips)
        watts = self.act_per_cpu[s] * cpu
        if dvfs:
            watts = watts * power_factor
            if power_factor != 1.0:
                self.power_factors[task] = power_factor
        lst.append((finish, cpu))
        self._stale.add(s)
        self.last_start[s] = start
        if finish > self.drain[s]:
            self.drain[s] = finish
        self.n_tasks[s] += 1
        self.load[s] += cpu
        self.active_energy += watts * (finish - start)
        self._seq += 1
        if start <= self.now:
            self.used[s] += cpu
            self._active_power += watts
        else:
            heapq.heappush(self._events, (start, _START, self._seq, s, cpu, watts))
        heapq.heappush(self._events, (finish, _FINISH, self._seq, s, cpu, watts))
        if self.record:
            r = self.records
            r["task"].append(task)
            r["server"].append(s)
            r["arrival"].append(arrival)
            r["start"].append(start)
            r["finish"].append(finish)
            r["deadline"].append(deadline)
        return start, finish

    def hold(self, s: int, until: float) -> None:
        """Start nothing on server ``s`` before ``until`` (a server waking from sleep, the
        grid-command scenario's sleep lever, :mod:`ilets.gridcommand.sleep`) [ours].

        FCFS already starts nothing before ``last_start``, the barrier every start rule reads
        (:meth:`earliest_start`, :meth:`earliest_starts`, the experts' emulators), so a hold
        raises it: the held server's next task, and every task queued behind it, starts at
        ``until`` at the earliest. A hold never lowers the barrier; nothing else changes (the
        plain scenario never calls it).
        """
        if not math.isfinite(until):
            raise ValueError(f"server {s}: hold until {until}: expected a finite time")
        if until > self.last_start[s]:
            self.last_start[s] = until
            self._stale.add(s)  # the start profile's row begins at last_start

    # --- copies for emulators ---------------------------------------------------------
    def clone(self, record: bool = False) -> "Cloud":
        """An independent copy of the live state (records are not copied).

        Emulators replay windows of tasks on clones thousands of times, so this copies
        only what changes: the small arrays, the per-server lists of unfinished tasks and
        the event heap (tuples are immutable and shared).
        """
        c = Cloud.__new__(Cloud)
        c.fleet = self.fleet
        c.t_start, c.now = self.t_start, self.now
        c.used = self.used.copy()
        c.n_tasks = self.n_tasks.copy()
        c.last_start = self.last_start.copy()
        c.drain = self.drain.copy()
        c.load = self.load.copy()
        c._committed = [lst.copy() for lst in self._committed]
        c._events = self._events.copy()
        c.power_factors = dict(self.power_factors)
        c._seq = self._seq
        c._idle_power = self._idle_power
        c.act_per_cpu = self.act_per_cpu
        c._active_power = self._active_power
        c.energy = self.energy
        c.active_energy = self.active_energy
        c.record = record
        c.records = {k: [] for k in self.records}
        c._rows, c._room = self._rows, self._room
        c._prof_level = self._prof_level.copy()
        c._prof_time = self._prof_time.copy()
        c._stale = set(self._stale)
        c._until = self._until
        return c

    def emulator_copy(self, until: float) -> "Cloud":
        """A small copy that is exact for planning tasks arriving up to ``until``.

        An emulator replays a window of tasks arriving in ``[now, until]``. Of the live state
        it needs only (a) the events up to ``until`` (starts and finishes that change free
        CPU, task counts and power between the window's arrivals) and (b) per server, the
        unfinished tasks that finish after the server's ``last_start``: a new task on that
        server cannot start before ``last_start`` (FCFS), so tasks finishing earlier can
        never be in its way (:meth:`earliest_start`). In a burst this is a few dozen tasks
        instead of thousands: the pickled copy shrinks from ~0.5 MB to a few KB and every
        start computation on it is shorter, with the same result.

        The copy is exact up to ``until`` only: later events are not kept, so its energy,
        task counts and power after ``until`` are not the live cloud's. Advancing it past
        ``until`` raises ValueError.
        """
        c = self.clone()
        c._events = [e for e in self._events if e[0] <= until]
        heapq.heapify(c._events)
        c._committed = [[e for e in lst if e[0] > ls] for lst, ls in zip(self._committed, self.last_start)]
        # the start profiles hold only tasks finishing after last_start already: keep them,
        # cut to the widest row in use (levels are positive up to each row's length)
        width = int((self._prof_level > 0).sum(axis=1).max()) + 1 if len(self.fleet) else 1
        c._prof_level = self._prof_level[:, :width].copy()
        c._prof_time = self._prof_time[:, :width].copy()
        c._until = float(until)
        return c

    def committed(self, s: int) -> list[tuple[float, float]]:
        """(finish, cpu) of server ``s``'s unfinished tasks that can still delay a new one
        (finishing after ``max(now, last_start[s])``, the only ones a start depends on), a copy."""
        return self.committed_after(s, float(self.last_start[s]))

    def committed_after(self, s: int, t: float) -> list[tuple[float, float]]:
        """(finish, cpu) of server ``s``'s tasks finishing after ``max(t, now)``, a copy."""
        t = max(t, self.now)
        return [e for e in self._committed[s] if e[0] > t]

    # --- results --------------------------------------------------------------------
    def task_frame(self):
        """Per-task records as a DataFrame with wait, response and success columns."""
        import pandas as pd

        df = pd.DataFrame(self.records)
        df["wait"] = df["start"] - df["arrival"]
        df["response"] = df["finish"] - df["arrival"]
        df["success"] = meets_deadline(df["response"].to_numpy(), df["deadline"].to_numpy())
        return df

    def summary(self) -> dict[str, float]:
        """Final metrics; call after :meth:`run_to_completion`."""
        r = self.records
        arrival = np.asarray(r["arrival"])
        response = np.asarray(r["finish"]) - arrival
        success = meets_deadline(response, r["deadline"])
        n = len(arrival)
        return {
            "tasks": n,
            "avg_response_s": float(response.mean()) if n else float("nan"),
            "avg_wait_s": float((np.asarray(r["start"]) - arrival).mean()) if n else float("nan"),
            "success_rate": float(success.mean()) if n else float("nan"),
            "energy_kwh": self.energy / 3.6e6,
            "makespan_s": self.now - self.t_start,
        }
