"""The scheduling objective: one cost shared by the reward, Greedy-Cost and the experts.

Cost of putting a task on server ``s`` [code, normalised by us]::

    cost = theta * P_norm(s) + (1 - theta) * W(R_est(s) / wait_scale_s)
           + deadline_penalty * [R_est(s) > deadline]

* ``P_norm(s)``: total fleet power now, with the task counted as running on ``s``, divided
  by the fleet's maximum power. Only the task's own share depends on ``s``; it rewards
  servers that draw little power per unit of CPU.
* ``R_est(s)``: the task's exact response on ``s`` (its FCFS start is already determined at
  assignment, see :mod:`ilets.simulator.cloud`) when ``include_execution``, else its wait only (the
  authors' code estimated the wait; without the execution time the reward cannot see server
  speed, so we include it by default [ours]).

``W`` is the wait form (:func:`wait_term`): ``log(1 + x)`` by default (``RewardConfig.wait_form``,
chosen by the pilot) [ours].

The reward of the environment is ``-cost``. Keeping the formula here means the reward, the
one-step greedy expert and the GA/PSO fitness cannot drift apart.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ilets.config import RewardConfig
from ilets.simulator.cloud import Cloud, meets_deadline


class Task(NamedTuple):
    """One task as seen at its arrival."""

    index: int  # type: ignore[assignment]  # the task's row: a field that shadows tuple.index on purpose
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


def wait_term(est, cfg: RewardConfig):
    """The waiting part of the cost for an estimated response (or wait) ``est``, s.

    ``x = est / wait_scale_s`` shaped by ``cfg.wait_form``: ``"capped"`` ``min(1, x)`` (every
    response beyond the scale costs the same), ``"linear"`` ``x``, ``"log"`` ``log(1 + x)``
    (keeps growing with the wait, more slowly).
    """
    x = est / cfg.wait_scale_s
    if cfg.wait_form == "capped":
        return np.minimum(1.0, x)
    if cfg.wait_form == "linear":
        return x
    return np.log1p(x)


def costs_from(p_norm, wait, response, deadline, cfg: RewardConfig):
    """The cost formula on scalars or arrays (one place for the reward, greedy and experts).

    ``p_norm`` normalised fleet power with the task counted, ``wait`` and ``response`` the
    task's exact wait and response, s.
    """
    est = response if cfg.include_execution else wait
    cost = cfg.theta * p_norm + (1 - cfg.theta) * wait_term(est, cfg)
    if cfg.deadline_penalty:
        cost = cost + cfg.deadline_penalty * ~meets_deadline(response, deadline)
    return cost


def cost_of(cloud: Cloud, task: Task, s: int, start: float, cfg: RewardConfig, speed: float = 1.0,
            power_factor: float = 1.0) -> float:
    """The exact cost of ``task`` on server ``s`` given its start time there; ``speed`` and
    ``power_factor`` as in :meth:`Cloud.assign` (a task run at another clock speed)."""
    wait = start - task.arrival
    # factors of 1.0 (the plain scenario) multiply exactly: the same numbers as without them
    p = (cloud.power + cloud.act_per_cpu[s] * task.cpu * power_factor) / cloud.fleet.max_power
    return float(costs_from(p, wait, wait + task.length / (cloud.fleet.mips[s] * speed), task.deadline, cfg))


def costs(cloud: Cloud, task: Task, starts: np.ndarray, cfg: RewardConfig) -> np.ndarray:
    """:func:`cost_of` on every server given each server's start time (inf stays inf)."""
    wait = starts - task.arrival
    return costs_from(power_norm(cloud, task.cpu), wait, wait + exec_time(cloud, task.length), task.deadline, cfg)


def tracking_term(p_after, target, max_power: float, weight: float = 0.0):
    """The grid-command tracking cost, added to :func:`costs_from`'s cost by its callers [ours].

    ``weight * |p_after - target| / max_power`` on scalars or arrays: ``p_after`` the fleet
    power now with the decision counted (as in :func:`power_norm`, W), ``target`` the grid
    operator's power target now (W; NaN where no event is scored, which costs 0),
    ``max_power`` the fleet's maximum power (W). Default off (``weight=0`` gives 0), so
    every existing cost is unchanged; only :mod:`ilets.gridcommand` passes a weight.
    """
    if not max_power > 0:
        raise ValueError(f"tracking_term: max_power must be > 0 W, got {max_power}")
    if not weight >= 0:
        raise ValueError(f"tracking_term: weight must be >= 0, got {weight}")
    if isinstance(p_after, float) and isinstance(target, float):  # the per-decision path, no arrays
        return 0.0 if target != target else weight * abs(p_after - target) / max_power
    gap = np.abs(np.asarray(p_after, dtype=float) - np.asarray(target, dtype=float))
    term = weight * np.where(np.isnan(gap), 0.0, gap) / max_power
    return float(term) if term.ndim == 0 else term
