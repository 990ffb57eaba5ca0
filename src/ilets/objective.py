"""The scheduling objective: one cost shared by the reward, Greedy-Cost and the experts.

Cost of putting a task on server ``s`` [code, normalised by us]::

    cost = theta * P_norm(s) + (1 - theta) * min(1, R_est(s) / wait_scale_s)
           + deadline_penalty * [R_est(s) > deadline]

* ``P_norm(s)``: total fleet power now, with the task counted as running on ``s``, divided
  by the fleet's maximum power. Only the task's own share depends on ``s``; it rewards
  servers that draw little power per unit of CPU.
* ``R_est(s)``: the task's exact response on ``s`` (its FCFS start is already determined at
  assignment, see :mod:`ilets.cloud`) when ``include_execution``, else its wait only (the
  authors' code estimated the wait; without the execution time the reward cannot see server
  speed, so we include it by default [ours]).

The reward of the environment is ``-cost``. Keeping the formula here means the reward, the
one-step greedy expert and the GA/PSO fitness cannot drift apart.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ilets.cloud import Cloud
from ilets.config import RewardConfig


class Task(NamedTuple):
    """One task as seen at its arrival."""

    index: int
    arrival: float
    cpu: float
    length: float
    deadline: float


def power_norm(cloud: Cloud, cpu: float) -> np.ndarray:
    """Normalised total power for each candidate server (the task counted as running)."""
    return (cloud.power + cloud.act_per_cpu * cpu) / cloud.fleet.max_power


def exec_time(cloud: Cloud, length: float) -> np.ndarray:
    """Execution time of a task of ``length`` MI on each server, s."""
    return length / cloud.fleet.mips


def cost_of(cloud: Cloud, task: Task, s: int, start: float, cfg: RewardConfig) -> float:
    """The exact cost of ``task`` on server ``s`` given its start time there."""
    execution = task.length / cloud.fleet.mips[s]
    response = start - task.arrival + execution
    est = response if cfg.include_execution else start - task.arrival
    p = (cloud.power + cloud.act_per_cpu[s] * task.cpu) / cloud.fleet.max_power
    cost = cfg.theta * p + (1 - cfg.theta) * min(1.0, est / cfg.wait_scale_s)
    if cfg.deadline_penalty and response > task.deadline:
        cost += cfg.deadline_penalty
    return float(cost)


def cost_lower_bounds(cloud: Cloud, task: Task, cfg: RewardConfig) -> np.ndarray:
    """A lower bound of :func:`cost_of` on every server, from the FCFS start bound.

    No task can start before the last one queued on its server, so
    ``max(now, last_start)`` bounds the start; the cost is non-decreasing in the start.
    """
    start = np.maximum(cloud.now, cloud.last_start)
    execution = exec_time(cloud, task.length)
    est = start - task.arrival + (execution if cfg.include_execution else 0.0)
    lb = cfg.theta * power_norm(cloud, task.cpu) + (1 - cfg.theta) * np.minimum(1.0, est / cfg.wait_scale_s)
    if cfg.deadline_penalty:
        lb = lb + cfg.deadline_penalty * (start - task.arrival + execution > task.deadline)
    return lb


def argmin_exact(lower: np.ndarray, exact, mask: np.ndarray) -> tuple[int, float]:
    """Branch and bound: the feasible index minimising ``exact(i)`` given lower bounds.

    Servers are tried in order of their bound and the search stops once the next bound
    cannot beat the best exact value, so usually only one or two exact evaluations (each a
    walk over a server's unfinished tasks) are needed instead of M. Ties go to the lowest
    index, as a full scan would give.
    """
    lb = np.where(mask, lower, np.inf)
    order = np.argsort(lb, kind="stable")
    best_i, best_v = -1, np.inf
    for i in order:
        if lb[i] > best_v or lb[i] == np.inf:
            break
        v = exact(int(i))
        if v < best_v or (v == best_v and i < best_i):
            best_i, best_v = int(i), v
    return best_i, best_v
