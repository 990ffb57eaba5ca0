"""The batched exact fitness: the costs of many plans of one window at once.

The ~950 plans a GA or PSO call scores would each need an exact replay of the window;
:class:`WindowFitness` replays a whole population at once instead
(``benchmarks/bench_experts.py`` times it). It is **exact**, not a surrogate: it reproduces the simulator's FCFS,
head-of-line start rule (``Cloud.earliest_start``) and the power term of ``cost_of`` (fleet
power at the task's arrival, which depends on which earlier window tasks are running then),
differing from the replay (:func:`ilets.agents.experts.plans.evaluate_plan`) only by
floating-point summation order (tests check 1e-9).
"""

from __future__ import annotations

import numpy as np

from ilets.agents.expert_kernels import schedule_plans, standalone_starts
from ilets.config import RewardConfig
from ilets.simulator.cloud import CPU_EPS, Cloud, meets_deadline
from ilets.simulator.objective import Task, costs_from


def _fcfs_start(t0: np.ndarray, fin: np.ndarray, cpu: np.ndarray, room: np.ndarray) -> np.ndarray:
    """``Cloud.earliest_start`` for many rows at once.

    Row ``r`` is a server with unfinished tasks ``(fin[r, k], cpu[r, k])`` (padding:
    ``fin = -inf``) and a new task that cannot start before ``t0[r]`` and fits when the CPU
    still held is at most ``room[r]`` (capacity + eps - request). The task starts at ``t0``
    if it fits then, else at the first pending finish (in time order) after which the CPU
    still held fits.
    """
    pend = fin > t0[:, None]
    held_k = np.where(pend, cpu, 0.0)
    held = held_k.sum(axis=1)
    start = t0.copy()
    late = np.flatnonzero(held > room)
    if late.size:  # only congested rows pay for a sort
        f = np.where(pend[late], fin[late], np.inf)
        order = np.argsort(f, axis=1)
        r = np.arange(late.size)[:, None]
        fs = f[r, order]
        ok = held[late, None] - np.cumsum(held_k[late][r, order], axis=1) <= room[late, None]
        # equal finishes may sort either way: the instant returned is the same
        k = ok.argmax(axis=1)
        # no instant fits only through float trouble; Cloud then returns the last finish
        k = np.where(ok[r[:, 0], k], k, pend[late].sum(axis=1) - 1)
        start[late] = fs[r[:, 0], k]
    return start


class WindowFitness:
    """Exact costs of many plans for one window and snapshot, vectorised over plans.

    Built once per expert call from the snapshot: each server's unfinished tasks (finish,
    CPU) padded to a common length, ``last_start``, and the fleet power at every arrival
    with no window task placed (the snapshot's own tasks start and finish at fixed times,
    whatever the plan). :meth:`costs` then walks the W tasks in order, each step vectorised
    over the plans: a plan's state on a server is the snapshot's tasks there plus the
    window tasks it already put there, so the start of the next task follows the same FCFS
    rule as :meth:`Cloud.earliest_start`, and the power at an arrival is the snapshot's
    plus the window tasks running at that instant.
    """

    def __init__(self, cloud: Cloud, window: list[Task], reward: RewardConfig, miss_penalty: float) -> None:
        if not window:
            raise ValueError("the window is empty")
        fleet = cloud.fleet
        self.reward = reward
        self.miss_penalty = float(miss_penalty)
        self.t = np.array([t.arrival for t in window])
        if self.t[0] < cloud.now or np.any(np.diff(self.t) < 0):
            raise ValueError("window tasks must be in arrival order, at or after the cloud's time")
        cpu = np.array([t.cpu for t in window])
        length = np.array([t.length for t in window])
        self.cpu = cpu
        self.deadline = np.array([t.deadline for t in window])
        self.exec = length[:, None] / fleet.mips[None, :]  # (W, M)
        self.delta_power = cpu[:, None] * cloud.act_per_cpu[None, :]  # (W, M), W
        self.room = fleet.capacity[None, :] + CPU_EPS - cpu[:, None]  # (W, M)
        self.feasible = self.room >= 0
        self.max_power = fleet.max_power
        self.last_start = cloud.last_start.copy()
        self.snap_fin, self.snap_cpu, self.snap_n = self._snapshot_queues(cloud)
        self.base_power = self._snapshot_power(cloud)

    @property
    def window_size(self) -> int:
        return len(self.t)

    @staticmethod
    def _snapshot_queues(cloud: Cloud) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per server, the unfinished tasks that can delay a new one, sorted by finish.

        A new task on server ``s`` cannot start before ``max(now, last_start[s])`` (FCFS), so
        only tasks finishing after that instant can be in its way: in a burst a handful per
        server instead of the whole queue. Returns ``(fin, cpu, n)``: (M, K) padded with
        ``-inf`` / 0 and the count per server.
        """
        cut = np.maximum(cloud.now, cloud.last_start).tolist()
        queues = [sorted(e for e in cloud.committed_after(s, cut[s])) for s in range(len(cloud.fleet))]
        n = np.array([len(q) for q in queues], dtype=np.int64)
        k = max(1, int(n.max()))
        fin = np.full((len(queues), k), -np.inf)
        cpu = np.zeros((len(queues), k))
        for s, q in enumerate(queues):
            if q:
                fin[s, :len(q)], cpu[s, :len(q)] = zip(*q)
        return fin, cpu, n

    def _snapshot_power(self, cloud: Cloud) -> np.ndarray:
        sim = cloud.clone()
        power = np.empty(len(self.t))
        for j, t in enumerate(self.t):
            sim.advance(float(t))
            power[j] = sim.power
        return power

    def standalone_costs(self) -> np.ndarray:
        """(W, M) exact cost of each task placed alone on each server of the snapshot.

        Ignores the other window tasks; used to rank candidate servers. Infeasible: inf.
        """
        w = self.window_size
        start = standalone_starts(self.t, self.room, self.last_start, self.snap_fin, self.snap_cpu, self.snap_n)
        cost = self._task_cost(np.arange(w)[:, None], start, self.exec, self.base_power[:, None] + self.delta_power)
        return np.where(self.feasible, cost, np.inf)

    def _task_cost(self, j, start: np.ndarray, execution: np.ndarray, power: np.ndarray) -> np.ndarray:
        """The objective's cost (:func:`ilets.simulator.objective.costs_from`) plus the miss penalty,
        elementwise; ``power`` is the fleet's, the task's own share included."""
        wait = start - self.t[j]
        response = wait + execution
        cost = costs_from(power / self.max_power, wait, response, self.deadline[j], self.reward)
        return cost + self.miss_penalty * ~meets_deadline(response, self.deadline[j])

    def _plans(self, plans: np.ndarray) -> np.ndarray:
        a = np.ascontiguousarray(plans, dtype=np.int64)
        if a.ndim != 2 or a.shape[1] != self.window_size:
            raise ValueError(f"plans have shape {a.shape}, expected (P, {self.window_size})")
        return a

    def costs(self, plans: np.ndarray, per_task: bool = False) -> np.ndarray:
        """Exact plan costs, (P,) (or (P, W) per task) for int plans of shape (P, W).

        The schedule comes from the compiled :func:`ilets.agents.expert_kernels.schedule_plans`;
        :meth:`reference_costs` is the same computation in numpy (tests compare them).
        """
        a = self._plans(plans)
        start, power = schedule_plans(a, self.t, self.cpu, self.exec, self.delta_power, self.room,
                                      self.last_start, self.snap_fin, self.snap_cpu, self.snap_n, self.base_power)
        task = np.arange(a.shape[1])
        out = self._task_cost(task, start, self.exec[task[None, :], a], power)
        return out if per_task else out.sum(axis=1)

    def reference_costs(self, plans: np.ndarray, per_task: bool = False) -> np.ndarray:
        """:meth:`costs` vectorised over plans in numpy, walking the tasks in Python."""
        a = self._plans(plans)
        p, w = a.shape
        m = len(self.last_start)
        task = np.arange(w)
        at = (task[None, :], a)  # (task, server) of every gene
        slot = np.arange(p)[:, None] * m + a  # each gene's server in the flat (P*M) state
        last_start = np.tile(self.last_start, p)
        same = a[:, :, None] == a[:, None, :]  # (P, W, W): genes on one server
        snap_fin, snap_cpu = self.snap_fin[a], self.snap_cpu[a]  # (P, W, K)
        room, execution = self.room[at], self.exec[at]
        # placed tasks only: unplaced ones never count as pending (-inf) or running (+inf)
        start = np.full((p, w), np.inf)
        finish = np.full((p, w), -np.inf)
        for j in range(w):
            t0 = np.maximum(self.t[j], last_start[slot[:, j]])
            mine = same[:, j, :j]
            fin = np.concatenate([snap_fin[:, j], np.where(mine, finish[:, :j], -np.inf)], axis=1)
            cpu = np.concatenate([snap_cpu[:, j], np.where(mine, self.cpu[:j], 0.0)], axis=1)
            st = _fcfs_start(t0, fin, cpu, room[:, j])
            start[:, j] = st
            finish[:, j] = st + execution[:, j]
            last_start[slot[:, j]] = st
        # fleet power at each arrival: the snapshot's + earlier window tasks running then
        share = self.delta_power[at]
        earlier = task[None, :] < task[:, None]  # (j, k): k placed before j
        running = earlier & (start[:, None, :] <= self.t[None, :, None]) & (finish[:, None, :] > self.t[None, :, None])
        power = self.base_power + (running * share[:, None, :]).sum(axis=2) + share
        out = self._task_cost(task, start, execution, power)
        return out if per_task else out.sum(axis=1)
