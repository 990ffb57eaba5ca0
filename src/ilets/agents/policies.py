"""Scheduling policies behind one interface, and the loop that replays a workload.

A policy is anything with ``act(cloud, task, mask) -> server`` and ``reset(seed)``. The
heuristics here, the one-step greedy expert and the learned PPO policy
(:class:`ilets.agents.ppo.PPOPolicy`) all fit it, so every method runs through the same
:func:`schedule` loop and the same metrics.
"""

from __future__ import annotations

from typing import Callable, Protocol

import numpy as np

from ilets.config import HEURISTICS, RewardConfig
from ilets.simulator.cloud import Cloud, Fleet
from ilets.simulator.objective import Task, costs, exec_time
from ilets.workloads.workload import TaskTable


class Policy(Protocol):
    """Chooses a server for each arriving task."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Forget any state; reseed any randomness."""

    def act(self, cloud: Cloud, task: Task, mask: np.ndarray) -> int:
        """A server index for ``task``; ``mask[i]`` is False where the task can never fit."""


class RandomPolicy:
    """A uniformly random feasible server."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, cloud: Cloud, task: Task, mask: np.ndarray) -> int:
        return int(self.rng.choice(np.flatnonzero(mask)))


class RoundRobin:
    """The next feasible server after the one used last, cyclically."""

    name = "round-robin"

    def __init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self.last = -1

    def act(self, cloud: Cloud, task: Task, mask: np.ndarray) -> int:
        m = len(mask)
        for k in range(1, m + 1):
            i = (self.last + k) % m
            if mask[i]:
                self.last = i
                return i
        raise ValueError(f"task {task.index}: no feasible server")


class LeastLoaded:
    """The feasible server with the least committed CPU (running + waiting) per capacity."""

    name = "least-loaded"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, cloud: Cloud, task: Task, mask: np.ndarray) -> int:
        return int(np.argmin(np.where(mask, cloud.load / cloud.fleet.capacity, np.inf)))


class EarliestFinish:
    """The feasible server where the task would finish first (exact FCFS start + execution)."""

    name = "earliest-finish"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, cloud: Cloud, task: Task, mask: np.ndarray) -> int:
        finish = cloud.earliest_starts(task.cpu) + exec_time(cloud, task.length)
        return int(np.argmin(np.where(mask, finish, np.inf)))  # ties: lowest index


class MinEnergy:
    """The server where the task adds the least energy, among those that can start it now.

    The added energy is the power increase (``p_act / C * cpu``) times the execution time,
    so frugal-but-slow and fast-but-hungry servers are compared on the joules the task
    costs. A pure energy greedy would queue every task on the single most frugal server and
    never drain it, so only servers that can start the task at once are candidates; when
    none can, the task goes where it finishes earliest [ours].
    """

    name = "min-energy"

    def __init__(self) -> None:
        self._fallback = EarliestFinish()

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, cloud: Cloud, task: Task, mask: np.ndarray) -> int:
        now_ok = mask & (cloud.last_start <= cloud.now) & (cloud.free_cpu + 1e-9 >= task.cpu)
        if not now_ok.any():
            return self._fallback.act(cloud, task, mask)
        energy = cloud.act_per_cpu * task.cpu * exec_time(cloud, task.length)
        return int(np.argmin(np.where(now_ok, energy, np.inf)))


class GreedyCost:
    """The feasible server of least one-step cost (the reward's own cost, exact).

    This is also the one-step expert used for demonstrations.
    """

    name = "greedy-cost"

    def __init__(self, reward: RewardConfig | None = None) -> None:
        self.reward = reward or RewardConfig()

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, cloud: Cloud, task: Task, mask: np.ndarray) -> int:
        c = costs(cloud, task, cloud.earliest_starts(task.cpu), self.reward)
        return int(np.argmin(np.where(mask, c, np.inf)))


#: How each heuristic of :data:`ilets.config.HEURISTICS` (the names configs accept) is built.
FACTORIES: dict[str, Callable[..., Policy]] = {
    "random": lambda seed=None, reward=None: RandomPolicy(seed),
    "round-robin": lambda seed=None, reward=None: RoundRobin(),
    "least-loaded": lambda seed=None, reward=None: LeastLoaded(),
    "earliest-finish": lambda seed=None, reward=None: EarliestFinish(),
    "min-energy": lambda seed=None, reward=None: MinEnergy(),
    "greedy-cost": lambda seed=None, reward=None: GreedyCost(reward),
}
# one list of names: a heuristic a config accepts but nothing builds would fail mid-grid
if tuple(FACTORIES) != HEURISTICS:
    raise ImportError(f"ilets.agents.policies.FACTORIES {tuple(FACTORIES)} != ilets.config.HEURISTICS {HEURISTICS}")


def make_heuristic(name: str, seed: int | None = None, reward: RewardConfig | None = None) -> Policy:
    """A heuristic policy by name (one of :data:`ilets.config.HEURISTICS`)."""
    try:
        return FACTORIES[name](seed=seed, reward=reward)
    except KeyError:
        raise ValueError(f"unknown heuristic {name!r}; expected one of {list(HEURISTICS)}") from None


def schedule(tasks: TaskTable, fleet: Fleet | Cloud, policy: Policy,
             on_decision: Callable[[int, Cloud, Task, int], None] | None = None) -> Cloud:
    """Replay ``tasks`` in arrival order, ``policy`` choosing each server; returns the cloud.

    ``fleet`` may be a live :class:`Cloud` to continue from (an emulator's clone). The
    cloud is run to completion, so its summary covers every task.
    """
    cloud = fleet if isinstance(fleet, Cloud) else Cloud(fleet, t0=float(tasks.arrival[0]) if len(tasks) else 0.0)
    arrival, cpu, length, deadline = (a.tolist() for a in (tasks.arrival, tasks.cpu, tasks.length, tasks.deadline))
    for j in range(len(arrival)):
        task = Task(j, arrival[j], cpu[j], length[j], deadline[j])
        cloud.advance(task.arrival)
        mask = cloud.feasible(task.cpu)
        s = policy.act(cloud, task, mask)
        cloud.assign(j, task.arrival, task.cpu, task.length, task.deadline, s)
        if on_decision is not None:
            on_decision(j, cloud, task, s)
    cloud.run_to_completion()
    return cloud
