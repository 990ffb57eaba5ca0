"""Ground truth for small windows: the exact optimum by enumeration, and small loaded cases to check against."""

from __future__ import annotations

import itertools
import time

import numpy as np

from ilets.agents.experts.fitness import WindowFitness
from ilets.agents.experts.plans import DEFAULT_STATE, ExpertPlan, evaluate_plan
from ilets.agents.observation import StateSpec
from ilets.config import RewardConfig
from ilets.simulator.cloud import Cloud
from ilets.simulator.objective import Task


def exact_optimum(cloud: Cloud, window: list[Task], reward: RewardConfig, miss_penalty: float,
                  state: StateSpec = DEFAULT_STATE, max_plans: int = 200_000,
                  chunk: int = 8192) -> ExpertPlan:
    """The optimal plan by enumerating every feasible assignment (small windows only).

    Plans are scored with the exact batched :class:`WindowFitness` in chunks; the winner
    is replayed with :func:`evaluate_plan`. Raises ValueError beyond ``max_plans`` plans.
    """
    t0 = time.perf_counter()
    fitness = WindowFitness(cloud, window, reward, miss_penalty)
    choices = [np.flatnonzero(row) for row in fitness.feasible]
    total = int(np.prod([len(c) for c in choices], dtype=float))
    if total > max_plans:
        raise ValueError(f"{total} plans exceed max_plans={max_plans}; use a smaller window or fleet")
    chunk = max(1, min(chunk, 4_000_000 // (len(window) * fitness.snap_fin.shape[1])))  # bound (chunk, W, K)
    best, best_cost = None, np.inf
    plans = itertools.product(*choices)
    while True:
        block = np.array(list(itertools.islice(plans, chunk)), dtype=np.int64)
        if block.size == 0:
            break
        cost = fitness.costs(block)
        i = int(np.argmin(cost))
        if cost[i] < best_cost:
            best, best_cost = block[i], float(cost[i])
    plan = evaluate_plan(cloud, window, best, reward, miss_penalty, state, "exact")
    plan.evaluations = total
    plan.seconds = time.perf_counter() - t0
    return plan


def small_case(seed: int, servers: int = 4, window: int = 6, background: int = 12) -> tuple[Cloud, list[Task]]:
    """A small loaded snapshot and window, for checks against :func:`exact_optimum` [ours].

    ``background`` tasks arrive during the first second and go to random feasible servers,
    so queues and free CPU differ between servers; the window's tasks then arrive 0.1 s
    apart on average. CPU requests are large (1/16 to 1/2 of the largest machine) so that
    capacity and FCFS queueing bind, which is where planning a window beats one-step greedy.
    Deterministic in ``seed``.
    """
    from ilets.config import FleetConfig
    from ilets.simulator.cloud import make_fleet

    rng = np.random.default_rng(seed)
    fleet = make_fleet(FleetConfig(servers=servers), seed)
    n = background + window
    arrival = np.concatenate([np.sort(rng.uniform(0.0, 1.0, background)),
                              np.sort(rng.uniform(1.0, 1.0 + 0.1 * window, window))])
    cpu = rng.choice([0.0625, 0.125, 0.25, 0.5], n) * fleet.capacity.max()
    length = rng.uniform(500.0, 3000.0, n)
    deadline = rng.uniform(1.5, 4.5, n)
    tasks = [Task(i, float(arrival[i]), float(cpu[i]), float(length[i]), float(deadline[i])) for i in range(n)]
    cloud = Cloud(fleet, t0=0.0, record=False)
    for task in tasks[:background]:
        cloud.advance(task.arrival)
        server = int(rng.choice(np.flatnonzero(cloud.feasible(task.cpu))))
        cloud.assign(task.index, task.arrival, task.cpu, task.length, task.deadline, server)
    win = tasks[background:]
    cloud.advance(win[0].arrival)
    return cloud, win
