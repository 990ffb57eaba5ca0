"""Rungs 2 and 3 of the ladder, ``mpc-perfect`` and ``mpc-forecast``: the receding-horizon controller on the fluid LP."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ilets.gridcommand.experts.reading import (COMMON_READS, _best_in_class, _can_wait, _cfg, _earliest_finish, _Expert, _mask,
                                               committed_cpu, future_tasks, slot_inputs)
from ilets.gridcommand.fluid import FluidPlan, FluidProblem, solve_fluid
from ilets.gridcommand.milp import ServerClass, Weights, make_classes
from ilets.gridcommand.power import committed_profile
from ilets.simulator.objective import Task


class MPCExpert(_Expert):
    """Receding-horizon fluid LP, re-solved every ``dt`` s; first slot applied as budgets.

    ``forecast="perfect"``: the LP sees the true arrivals of the next ``horizon`` slots
    (from ``env.tasks``). ``forecast="ewma"`` (the realistic rung) [ours]: per slot and
    deadline cohort, an exponential moving average (weight ``alpha`` of the latest slot)
    of the work that arrived, persisted flat over the horizon; before the first full slot
    the forecast is the work seen so far in the current slot.

    Cohort of a task: how many whole slots it can wait and still meet its deadline on the
    fastest class (capped by its remaining deferrals). Work the controller deferred is
    known exactly in both modes (it is backlog, not forecast) and enters the slot of its
    re-arrival.
    """

    def __init__(self, forecast: str = "perfect", horizon: int = 12, dt: float | None = None, n_classes: int = 3,
                 alpha: float = 0.3, weights: Weights | None = None, time_limit: float | None = 2.0) -> None:
        if forecast not in ("perfect", "ewma"):
            raise ValueError(f"forecast: expected 'perfect' or 'ewma', got {forecast!r}")
        if horizon < 1:
            raise ValueError(f"horizon: expected >= 1 slot, got {horizon}")
        if dt is not None and not dt > 0:
            raise ValueError(f"dt: expected > 0 s, got {dt}")
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha: expected a weight in (0, 1], got {alpha}")
        self.forecast, self.horizon, self.dt, self.n_classes, self.alpha = forecast, horizon, dt, n_classes, alpha
        self.weights = weights or Weights()
        self.time_limit = time_limit
        self.name = "mpc-perfect" if forecast == "perfect" else "mpc-forecast"
        #: the perfect forecast is the episode's future arrivals; the realistic one, its own
        self.reads = COMMON_READS + ("deferrals_of_current",) + (("tasks",) if forecast == "perfect" else ())
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self._classes: tuple[ServerClass, ...] | None = None
        self._order: np.ndarray | None = None  # classes cheapest energy first
        self._t0: float | None = None
        self._slot = -1
        self._budget = np.zeros(0)
        self._pending: dict[int, tuple[float, float, int]] = {}  # index -> (re-arrival, work, cohort)
        self._seen: set[int] = set()
        self._ewma: np.ndarray | None = None
        self._current = np.zeros(0)  # work observed in the current slot per cohort
        self._mean_length = 0.0
        self._work_mean = 0.0
        self._n_seen = 0
        self._solved_slot: int | None = None
        self.last_plan: FluidPlan | None = None
        self.solve_times: list[float] = []  #: wall s per solve
        self.solve_cpu_times: list[float] = []  #: CPU s per solve
        self.statuses: list[str] = []

    # cohorts: d = 0..D where D = the most deferrals a task may use, in slots
    def _cohorts(self, env: Any) -> int:
        return int(math.floor(int(_cfg(env, "max_deferrals")) * float(_cfg(env, "defer_s")) / self._dt(env) + 1e-9)) + 1

    def _dt(self, env: Any) -> float:
        return float(self.dt or _cfg(env, "defer_s"))

    def _cohort(self, env: Any, task: Task, slot_start: float, used: int) -> int:
        assert self._classes is not None, "act() sets the classes before any cohort is asked for"
        fastest = max(c.mips for c in self._classes)
        slack = task.arrival + task.deadline - task.length / fastest - slot_start
        cap = int(math.floor(max(0, int(_cfg(env, "max_deferrals")) - used) * float(_cfg(env, "defer_s"))
                             / self._dt(env) + 1e-9))
        return int(np.clip(math.floor(slack / self._dt(env)), 0, min(cap, self._cohorts(env) - 1)))

    def _observe(self, env: Any, task: Task, slot: int) -> None:
        """Record a first arrival for the forecast (work per cohort in the current slot)."""
        if task.index in self._seen:
            return
        self._seen.add(task.index)
        self._n_seen += 1
        self._mean_length += (task.length - self._mean_length) / self._n_seen
        self._work_mean += (task.cpu * task.length - self._work_mean) / self._n_seen
        assert self._t0 is not None, "act() sets the start time before observing"
        start = self._t0 + slot * self._dt(env)
        self._current[self._cohort(env, task, start, 0)] += task.cpu * task.length

    def _roll(self, n_slots: int) -> None:
        """Close ``n_slots`` slots of observations into the moving average (empty ones count 0)."""
        for i in range(n_slots):
            obs = self._current if i == 0 else np.zeros_like(self._current)
            self._ewma = obs.copy() if self._ewma is None else (1 - self.alpha) * self._ewma + self.alpha * obs
        self._current = np.zeros_like(self._current)

    def problem(self, env: Any, slot: int) -> FluidProblem:
        """The fluid LP for the horizon starting at ``slot``."""
        dt, h_n, d_n = self._dt(env), self.horizon, self._cohorts(env)
        assert self._classes is not None and self._t0 is not None, "act() sets the classes and start time first"
        start = self._t0 + slot * dt
        edges = start + dt * np.arange(h_n + 1)
        demand = np.zeros((h_n, d_n))
        for t_re, work, d in self._pending.values():  # backlog: known exactly
            h = int(np.clip(math.floor((t_re - start) / dt), 0, h_n - 1))
            demand[h, min(d, d_n - 1)] += work
        cur = env.current_task
        if self.forecast == "perfect":
            if cur.index not in self._pending:
                demand[0, self._cohort(env, cur, start, int(env.deferrals_of_current))] += cur.cpu * cur.length
            for t in future_tasks(env, cur.index + 1, len(env.tasks), until=float(edges[-1])):
                h = int(math.floor((t.arrival - start) / dt))
                # before now: handed over already (placed: committed; deferred: backlog)
                if 0 <= h < h_n and t.arrival >= float(env.now):
                    demand[h, self._cohort(env, t, edges[h], 0)] += t.cpu * t.length
        else:
            rate = self._ewma if self._ewma is not None else self._current
            demand[0] += np.maximum(rate, self._current)  # at least what already came this slot
            demand[1:] += rate[None, :]
        base = committed_profile(env.cloud, edges)
        base = np.where(np.isnan(base), env.power_now, base)
        spare = np.array([c.capacity for c in self._classes])[:, None] - committed_cpu(env.cloud, edges, self._classes)
        target, band, scored = slot_inputs(env, edges)
        mean_len = self._mean_length if self._n_seen else float(cur.length)
        # misses and waits are priced per task: the LP divides its work by the mean task's
        work_per_task = self._work_mean if self._work_mean > 0 else cur.cpu * cur.length
        return FluidProblem(dt=dt, demand=demand, classes=self._classes, mean_length=max(mean_len, 1e-9),
                            work_per_task=max(work_per_task, 1e-12), spare_cpu=np.maximum(spare, 0.0),
                            base_power=base, target=target, scored=scored, band=band,
                            p_ref=float(env.cloud.fleet.max_power), weights=self.weights)

    def act(self, env: Any) -> int:
        if self._classes is None:
            self._classes = make_classes(env.cloud.fleet, self.n_classes)
            energy = [c.w_per_cpu / c.mips for c in self._classes]
            self._order = np.argsort(energy, kind="stable")
            self._t0 = float(env.now)
            self._current = np.zeros(self._cohorts(env))
        assert self._t0 is not None and self._order is not None, "set above with the classes"
        task, now, dt = env.current_task, float(env.now), self._dt(env)
        slot = int(math.floor((now - self._t0) / dt + 1e-12))
        if slot != self._slot:
            if self._slot >= 0:
                self._roll(slot - self._slot)
            self._slot = slot
        self._observe(env, task, slot)
        if self._solved_slot != slot:
            plan = solve_fluid(self.problem(env, slot), time_limit=self.time_limit)
            self.last_plan, self._solved_slot = plan, slot
            self._budget = plan.admit.copy()
            self.solve_times.append(plan.solve_s)
            self.solve_cpu_times.append(plan.solve_cpu_s)
            self.statuses.append(plan.status)
        assert self._classes is not None and self.last_plan is not None, "set above on the first call"
        servers, defer_ok = _mask(env)
        work = task.cpu * task.length
        self._pending.pop(task.index, None)
        for k in self._order:
            members = self._classes[k].members
            # a budget covers a task when at least half of its work fits: rounding the fluid
            # plan to whole tasks without a systematic bias [ours]
            if self._budget[k] >= 0.5 * work and servers[members].any():
                s, ok = _best_in_class(env, servers, members)
                if ok:  # else try the next class: a miss is not what the LP planned [ours]
                    self._budget[k] -= work
                    return s
        # the LP deferred nothing of this slot: budgets only round a plan that admits all,
        # so a task past them (rounding, or more arrivals than forecast) is placed [ours]
        if defer_ok and self.last_plan.admit_share < 1.0 - 1e-6 and _can_wait(env, task, float(_cfg(env, "defer_s"))):
            self._pending[task.index] = (now + float(_cfg(env, "defer_s")), work,
                                         self._cohort(env, task, now + float(_cfg(env, "defer_s")),
                                                      int(env.deferrals_of_current) + 1))
            return int(env.defer_action)
        return _earliest_finish(env, servers, defer_ok)
