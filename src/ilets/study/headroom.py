"""How much room the RL stage has: bounds no scheduler can beat, per fleet size and seed.

Each online task, taken alone, has a best case: it starts the moment it arrives, on the
feasible server where its one-step cost is lowest, with every other server idle. No scheduler
does better on any task, so the mean over the online segment bounds every method:

* **response bound**: each task's execution time on the fastest server it fits (no wait);
* **reward bound**: each task's reward with no wait, on its best feasible server, with the
  fleet drawing only its idle power plus this task's share (the reward's power term counts the
  whole fleet's draw, which is never below that); the deadline penalty counts only when even
  that response misses the deadline.

The bounds are loose (queues and other tasks' power are ignored); they say how far the best
heuristic is from perfect, which is the room beyond it that a learner could take. They are
recorded by ``make artifacts`` (:mod:`ilets.study.book_measurements`, record ``headroom``)
with the results' settings; the chapter reads the record.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ilets.config import RewardConfig, RunConfig
from ilets.simulator.cloud import Fleet
from ilets.simulator.objective import costs_from
from ilets.workloads.workload import TaskTable

#: fleet sizes and seeds of the record: the paper grid's
HEADROOM_SERVERS = (50, 100, 200)
HEADROOM_SEEDS = tuple(range(10))
#: tasks per block of the vectorised computation (tasks x servers floats at a time)
_BLOCK = 20_000


def task_bounds(tasks: TaskTable, fleet: Fleet, reward: RewardConfig) -> dict[str, float]:
    """Mean response-time and mean-reward bounds of ``tasks`` on ``fleet`` (module docstring)."""
    idle = float(fleet.p_idle.sum())
    act_per_cpu = fleet.p_act / fleet.capacity
    response, rewards = [], []
    for lo in range(0, len(tasks), _BLOCK):
        hi = min(lo + _BLOCK, len(tasks))
        cpu, length, deadline = (a[lo:hi, None] for a in (tasks.cpu, tasks.length, tasks.deadline))
        fits = fleet.capacity[None, :] + 1e-9 >= cpu
        run = np.where(fits, length / fleet.mips[None, :], np.inf)
        p_norm = (idle + act_per_cpu[None, :] * cpu) / fleet.max_power
        cost = np.where(fits, costs_from(p_norm, np.zeros_like(run), run, deadline, reward), np.inf)
        response.append(run.min(axis=1))
        rewards.append(-cost.min(axis=1))
    r, w = np.concatenate(response), np.concatenate(rewards)
    if not (np.isfinite(r).all() and np.isfinite(w).all()):
        raise ValueError("a task fits no server of the fleet: no bound exists")
    return {"response_bound_s": float(r.mean()), "reward_bound": float(w.mean()), "tasks": int(len(tasks))}


def headroom_record(run: RunConfig) -> dict:
    """The bounds of every (fleet size, seed) of the paper grid with ``run``'s workload, fleet
    and reward: ``{"rows": [{"servers", "seed", "response_bound_s", "reward_bound", "tasks"}]}``."""
    from ilets.simulator.cloud import make_fleet
    from ilets.workloads.workload import load_workload

    rows = []
    for seed in HEADROOM_SEEDS:
        online = load_workload(run.workload, seed).online
        for m in HEADROOM_SERVERS:
            fleet = make_fleet(dataclasses.replace(run.fleet, servers=m), run.fleet.seed)
            rows.append({"servers": m, "seed": seed, **task_bounds(online, fleet, run.reward)})
    return {"servers": list(HEADROOM_SERVERS), "seeds": list(HEADROOM_SEEDS), "rows": rows}
