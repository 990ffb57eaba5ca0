"""The Gymnasium view of the cloud: one arriving task per step, one server per action.

Observation (float32): the feature blocks of the run's layout, :mod:`ilets.agents.observation`
(``observation: paper``, size 2M+2, the authors' layout [code]: the task's CPU request and
length, each server's free CPU and task count; ``observation: rich`` [ours], size 5M+2, adds
each server's wait bound, speed share and power share). :class:`StateSpec` and
:func:`build_observation` are re-exported here.

Action: a server index, ``Discrete(M)``. A server whose capacity is below the request can
never run the task; :meth:`CloudSchedulingEnv.action_masks` (the sb3-contrib convention)
marks those False, and the same array is ``info["action_mask"]`` (Gymnasium's convention) of
:meth:`~CloudSchedulingEnv.reset` and of every step but the one that ends the segment (no
decision follows it); a made env (``gym.make(ENV_ID)``) also answers ``action_masks()``
without Gymnasium 0.29's deprecation warning (:class:`ilets.ActionMaskWrapper`). If a
masked action is taken anyway it is redirected to the least-loaded feasible server and
``reward.infeasible_penalty`` is added to the cost, with ``info["infeasible"] = True``; the
task is never dropped, so every method schedules the same tasks.

Reward: ``-cost`` of :mod:`ilets.simulator.objective`. An episode is one workload segment (the online
half by default); at its end every queued task is run to completion and ``info["final"]``
holds the segment's metrics.

No configuration (``CloudSchedulingEnv()``, ``gym.make(ENV_ID)`` with no arguments): the
study's settings (``RunConfig()``) with the synthetic workload at scale 0.02
(:data:`DEFAULT_SCALE`): the online segment is 5,187 tasks in the 30-s window, on 50 servers.
``RunConfig()`` itself is the paper's full window (259,368 online tasks): pass it to get that
episode.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ilets.agents.observation import StateSpec, build_observation
from ilets.agents.policies import LeastLoaded
from ilets.agents.scheduling_env import SchedulingEnv
from ilets.config import OBSERVATIONS, RunConfig, WorkloadConfig
from ilets.simulator.cloud import Fleet, make_fleet, meets_deadline
from ilets.simulator.objective import cost_of
from ilets.workloads.workload import TaskTable, load_workload

__all__ = ["CloudSchedulingEnv", "DEFAULT_SCALE", "OBSERVATIONS", "StateSpec", "build_observation", "register"]

#: The workload scale of an environment made without a configuration (module docstring).
DEFAULT_SCALE = 0.02


class CloudSchedulingEnv(SchedulingEnv):
    """Online task scheduling on a heterogeneous fleet (see the module docstring).

    Args:
        config: the run configuration (workload, fleet, reward). None (the default, and
            ``gym.make(ENV_ID)`` with no arguments): ``RunConfig()`` at workload scale
            :data:`DEFAULT_SCALE`, a small episode (module docstring).
        segment: ``"online"`` (the last 25 minutes) or ``"offline"`` (the first 25).
        tasks: use these tasks instead of generating the workload from ``config``.
        fleet: use this fleet instead of ``make_fleet(config.fleet)``.
    """

    def __init__(self, config: RunConfig | None = None, segment: str = "online",
                 tasks: TaskTable | None = None, fleet: Fleet | None = None) -> None:
        super().__init__()
        if config is not None and not isinstance(config, RunConfig):
            raise TypeError(f"config: expected a RunConfig (ilets.config), got {type(config).__name__}; "
                            f"build one with ilets.config.load_run_config(path, **overrides)")
        self.config = (config if config is not None
                       else RunConfig(workload=WorkloadConfig(scale=DEFAULT_SCALE))).validate()
        if segment not in ("online", "offline"):
            raise ValueError(f"segment must be 'online' or 'offline', got {segment!r}")
        self.segment = segment
        self.fleet = fleet if fleet is not None else make_fleet(self.config.fleet, self.config.fleet.seed)
        self._fixed_tasks = tasks
        self._workload_seed = self.config.seed
        self.tasks = tasks if tasks is not None else self._load_tasks(self._workload_seed)
        m = len(self.fleet)
        self.state = StateSpec.of(self.config)
        high = self.state.high(self.fleet)
        self.observation_space = spaces.Box(low=np.zeros_like(high), high=high, dtype=np.float32)
        self.action_space = spaces.Discrete(m)
        self._obs = np.zeros(len(high), np.float32)
        self._redirect = LeastLoaded()  # where an infeasible action's task goes instead

    # --- helpers ----------------------------------------------------------------------
    def _load_tasks(self, seed: int) -> TaskTable:
        workload = load_workload(self.config.workload, seed)
        return workload.online if self.segment == "online" else workload.offline

    def observe(self) -> np.ndarray:
        """The observation for the current task (a fresh array)."""
        assert self.cloud is not None, "reset() first"
        return build_observation(self.cloud, self._current, self.state, self._obs).copy()

    # --- gymnasium API --------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start the segment again; ``seed`` redraws the workload (unless tasks were given)."""
        super().reset(seed=seed)
        if seed is not None and self._fixed_tasks is None and seed != self._workload_seed:
            self._workload_seed = seed
            self.tasks = self._load_tasks(seed)
        if len(self.tasks) == 0:
            raise ValueError("the workload segment has no tasks")
        return self._start_episode()

    def _next_decision(self) -> None:
        """Hand over task ``t`` (tasks come in arrival order); the mask is True where the
        server's capacity can hold its request."""
        self._current = self._task(self.t)
        assert self.cloud is not None, "reset() first"
        self.cloud.advance(self._current.arrival)
        self._mask = self.cloud.feasible(self._current.cpu)

    def _episode_over(self) -> bool:
        return self.t >= len(self.tasks)

    def step(self, action):
        task, cloud, cfg = self._current, self.cloud, self.config.reward
        s = int(action)
        infeasible = not self._mask[s]
        if infeasible:
            self._infeasible += 1
            s = self._redirect.act(cloud, task, self._mask)
        # the cost reads the power before the task is added (cost_of adds the task's share)
        cost = cost_of(cloud, task, s, cloud.earliest_start(s, task.cpu), cfg)
        cost += cfg.infeasible_penalty if infeasible else 0.0
        start, finish = cloud.assign(task.index, task.arrival, task.cpu, task.length, task.deadline, s)
        response = finish - task.arrival
        info = {"server": s, "response": response, "success": bool(meets_deadline(response, task.deadline)),
                "cost": cost, "infeasible": infeasible}
        return self._end_step(cost, info)


def register() -> None:
    """Register :data:`ilets.ENV_ID` with Gymnasium (idempotent; ``import ilets`` already does it)."""
    from ilets import register_env

    register_env()


register()
