"""Rung 1 of the ladder, ``oracle``: the exact hindsight MILP over windows of tasks, executed task by task."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ilets.gridcommand.experts.reading import (COMMON_READS, _best_in_class, _can_wait, _cfg, _earliest_finish, _Expert, _mask,
                                               committed_cpu, future_tasks, slot_inputs)
from ilets.gridcommand.milp import (PlanTask, ServerClass, TrackingProblem, Weights, WindowPlan, deferral_starts,
                                    make_classes, overlap_fraction, solve_window)
from ilets.gridcommand.power import committed_profile, interval_energy
from ilets.simulator.objective import Task


@dataclass
class _Planned:
    cls: int  #: -1: left out of the plan (placed earliest-finish)
    start: float  #: planned start time, s


class OracleExpert(_Expert):
    """Exact hindsight MILP over windows of ``window`` tasks, executed task by task.

    A new window is planned whenever the current task has no plan: the current task and
    the next ``window - 1`` arrivals. Tasks deferred under an earlier plan keep it and enter
    the new window as fixed load (power and class CPU at their planned start); the arrivals
    after the window inside its horizon enter as fluid background load (hindsight, see
    :meth:`problem`). Planning slots are ``plan_slot_s`` wide (default ``2 * defer_s``) from
    ``now`` to the last possible finish; the oracle prices tracking per planning slot
    (finer than the scored slot, so it also tracks inside a slot) [ours].

    Execution: defer while the planned start is ahead (and the real queues leave the slack),
    then place on a member of the planned class (:func:`_best_in_class`: chosen by the
    tracking error now), falling back to earliest-finish where the class would miss.

    ``time_limit`` bounds each solve (``mip_rel_gap`` 0: prove optimality), or
    ``node_limit`` (branch-and-bound nodes: reproducible on any machine, a time limit is
    not); the statuses of all solves are kept in ``statuses``: a window that hits a limit is
    executed with the best plan found (status "limit"). Binding class capacity is what makes
    windows hard (a packing problem): on a loaded 50-server fleet some 60-task windows hit a
    2 s limit, on 200 servers they solve in tens of milliseconds (busy machine).
    """

    reads = COMMON_READS + ("deferrals_of_current", "tasks")

    name = "oracle"

    def __init__(self, window: int = 60, n_classes: int = 3, time_limit: float | None = 2.0,
                 plan_slot_s: float | None = None, weights: Weights | None = None, mip_rel_gap: float = 0.0,
                 node_limit: int | None = None) -> None:
        if window < 1:
            raise ValueError(f"window: expected >= 1 task, got {window}")
        if n_classes < 1:
            raise ValueError(f"n_classes: expected >= 1, got {n_classes}")
        if plan_slot_s is not None and not plan_slot_s > 0:
            raise ValueError(f"plan_slot_s: expected > 0 s, got {plan_slot_s}")
        self.window, self.n_classes, self.time_limit = window, n_classes, time_limit
        if not 0 <= mip_rel_gap < 1:
            raise ValueError(f"mip_rel_gap: expected a relative gap in [0, 1), got {mip_rel_gap}")
        self.plan_slot_s = plan_slot_s
        self.weights = weights or Weights()
        self.mip_rel_gap = mip_rel_gap
        self.node_limit = node_limit
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self._plan: dict[int, _Planned] = {}
        self._pending: dict[int, tuple[Task, float, int]] = {}  # index -> (task, re-arrival, deferrals used)
        self._classes: tuple[ServerClass, ...] | None = None
        self.statuses: list[str] = []
        self.solve_times: list[float] = []  #: wall s per solve
        self.solve_cpu_times: list[float] = []  #: CPU s per solve
        self.solve_nodes: list[int] = []  #: branch-and-bound nodes per solve
        self.last_plan: WindowPlan | None = None

    def problem(self, env: Any) -> tuple[TrackingProblem, list[int]]:
        """The window MILP at the current decision (and the task indices of its rows)."""
        if self._classes is None:
            self._classes = make_classes(env.cloud.fleet, self.n_classes)
        defer_s = float(_cfg(env, "defer_s"))
        max_def = int(_cfg(env, "max_deferrals"))
        now, cur = float(env.now), env.current_task
        # rows: the current task and the next arrivals; tasks deferred under an earlier plan
        # keep it and enter as fixed load (re-planning them made windows of old tasks) [ours]
        rows: list[tuple[Task, float, int]] = [(cur, now, int(env.deferrals_of_current))]
        # arrivals not handed over yet (hand-over is in time order, so those at or after now)
        rows += [(t, t.arrival, 0) for t in future_tasks(env, cur.index + 1, self.window - 1)
                 if t.index not in self._pending and t.arrival >= now]
        plan_tasks = [PlanTask(t.index, t.arrival, t.cpu, t.length, t.deadline,
                               deferral_starts(release, defer_s, max(0, max_def - used)))
                      for t, release, used in rows]
        slowest = min(c.mips for c in self._classes)
        fixed = [(t, self._plan[j]) for j, (t, _, _) in sorted(self._pending.items())
                 if j in self._plan and self._plan[j].cls >= 0]
        end = max([max(p.starts) + p.length / slowest for p in plan_tasks]
                  + [pl.start + t.length / slowest for t, pl in fixed])
        step = self.plan_slot_s or 2.0 * defer_s
        edges = np.append(np.arange(now, end, step), end + 1e-9)
        if len(edges) < 2 or edges[-1] <= edges[-2]:
            edges = np.array([now, now + step])
        base = committed_profile(env.cloud, edges)
        used_cpu = committed_cpu(env.cloud, edges, self._classes)
        for t, pl in fixed:
            c = self._classes[pl.cls]
            occ = overlap_fraction(max(pl.start, now), c.duration(t.length), edges)
            base = base + c.w_per_cpu * t.cpu * occ
            used_cpu[pl.cls] += t.cpu * occ
        # Hindsight beyond the window: the tasks arriving after it inside the horizon, as
        # fluid load started on arrival at the fleet's mean speed and power, spread over the
        # classes by capacity. Without it the later slots look empty and the plan defers
        # the window into them, where those arrivals will land anyway [ours].
        last = max(t.index for t, _, _ in rows)
        table = env.tasks
        stop = int(np.searchsorted(table.arrival, edges[-1], side="left"))
        cap = np.array([c.capacity for c in self._classes])
        if stop > last + 1:
            w_mean = float(np.dot([c.w_per_cpu for c in self._classes], cap) / cap.sum())
            mips_mean = float(np.dot([c.mips for c in self._classes], cap) / cap.sum())
            a, cpu = table.arrival[last + 1:stop], table.cpu[last + 1:stop]
            # CPU-seconds per slot of runs [arrival, arrival + length / mean speed), exact
            bg_cpu = interval_energy(a, a + table.length[last + 1:stop] / mips_mean, cpu, edges) / np.diff(edges)
            base = base + w_mean * bg_cpu
            used_cpu = used_cpu + (cap / cap.sum())[:, None] * bg_cpu[None, :]
        spare = cap[:, None] - used_cpu
        target, band, scored = slot_inputs(env, edges)
        prob = TrackingProblem(tuple(plan_tasks), edges, self._classes, np.maximum(spare, 0.0), base, target,
                               scored, band, float(env.cloud.fleet.max_power), self.weights)
        return prob, [t.index for t, _, _ in rows]

    def _replan(self, env: Any) -> None:
        prob, indices = self.problem(env)
        plan = solve_window(prob, time_limit=self.time_limit, mip_rel_gap=self.mip_rel_gap,
                            node_limit=self.node_limit)
        self.statuses.append(plan.status)
        self.solve_times.append(plan.solve_s)
        self.solve_cpu_times.append(plan.solve_cpu_s)
        self.solve_nodes.append(plan.nodes)
        self.last_plan = plan
        for row, j in enumerate(indices):
            self._plan[j] = _Planned(int(plan.cls[row]), float(plan.start[row]) if plan.cls[row] >= 0 else -np.inf)

    def act(self, env: Any) -> int:
        task = env.current_task
        if task.index not in self._plan:
            self._replan(env)
        planned = self._plan[task.index]
        servers, defer_ok = _mask(env)
        defer_s = float(_cfg(env, "defer_s"))
        # re-arrivals land on the planned grid; half a step absorbs float drift [ours]
        # ... and only while the real queues leave the slack for it: the plan's class model
        # ignores per-server queues, so a planned wait could turn into a miss [ours]
        if defer_ok and planned.cls >= 0 and env.now < planned.start - 0.5 * defer_s \
                and _can_wait(env, task, defer_s):
            self._pending[task.index] = (task, env.now + defer_s, int(env.deferrals_of_current) + 1)
            return int(env.defer_action)
        self._pending.pop(task.index, None)
        self._plan.pop(task.index, None)
        if planned.cls < 0 or self._classes is None:
            return _earliest_finish(env, servers, defer_ok)
        s, ok = _best_in_class(env, servers, self._classes[planned.cls].members)
        # the planned class's queues would make it miss: earliest-finish instead [ours]
        return s if ok else _earliest_finish(env, servers, defer_ok)
