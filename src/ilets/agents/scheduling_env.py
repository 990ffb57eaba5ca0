"""The decision loop both scheduling environments share: one task handed over per step.

:class:`ilets.agents.env.CloudSchedulingEnv` (the paper's scenario) and
:class:`ilets.gridcommand.env.GridCommandEnv` (the grid-command one) differ in their actions,
costs and observations, but not in how a step ends once its action has been applied: the
cost is summed, the decision counted, and either the episode ends (every queued task run to
completion, the episode's metrics in ``info["final"]``) or the next task is handed over
(its observation returned, its mask in ``info["action_mask"]``). That tail is
:meth:`SchedulingEnv._end_step`, written once here so that the two environments cannot
drift apart: the grid-command episode with no command must stay the plain one bit for bit.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ilets.simulator.cloud import Cloud, Fleet
from ilets.simulator.objective import Task
from ilets.workloads.workload import TaskTable

#: What :meth:`gymnasium.Env.step` returns: observation, reward, terminated, truncated, info.
StepResult = tuple[np.ndarray, float, bool, bool, dict[str, Any]]

#: Joules per kilowatt-hour (``info["energy_kwh"]``).
_J_PER_KWH = 3.6e6


class SchedulingEnv(gym.Env):
    """Base of the scheduling environments: tasks handed over one at a time (module docstring).

    A subclass sets :attr:`fleet`, :attr:`tasks` and its spaces and an observation buffer
    :attr:`_obs` in its constructor, and provides :meth:`observe`, :meth:`_next_decision`
    (hand over the next task: set :attr:`_current` and :attr:`_mask`) and
    :meth:`_episode_over`; its :meth:`reset` ends with :meth:`_start_episode` and its
    :meth:`step` with :meth:`_end_step`.
    """

    metadata = {"render_modes": []}

    fleet: Fleet
    tasks: TaskTable
    cloud: Cloud | None = None
    #: decisions taken in the episode so far
    t: int = 0
    #: whether :meth:`_end_step` builds the next observation; a heuristic that reads the
    #: cloud itself switches it off (building it is most of a step's cost); the observation
    #: returned is then the last one built (zeros), and nothing else changes
    observing: bool = True
    _obs: np.ndarray
    _mask: np.ndarray
    _current: Task
    _cost_sum: float
    _infeasible: int

    # --- what a subclass provides ---------------------------------------------------------
    def observe(self) -> np.ndarray:
        """The observation for the current task (a fresh array)."""
        raise NotImplementedError

    def _next_decision(self) -> None:
        """Hand over the next task: set :attr:`_current` and its mask :attr:`_mask`."""
        raise NotImplementedError

    def _episode_over(self) -> bool:
        """Whether no task is left to hand over."""
        raise NotImplementedError

    def _final_metrics(self) -> dict[str, float]:
        """What the subclass adds to ``info["final"]`` after the shared metrics (none here)."""
        return {}

    # --- shared ---------------------------------------------------------------------------
    def _task(self, j: int) -> Task:
        """Row ``j`` of :attr:`tasks` as a :class:`Task`."""
        tb = self.tasks
        return Task(j, float(tb.arrival[j]), float(tb.cpu[j]), float(tb.length[j]), float(tb.deadline[j]))

    @property
    def current_task(self) -> Task:
        """The task waiting for a decision (its ``arrival`` is its first arrival, also when it
        is handed over again)."""
        return self._current

    def action_masks(self) -> np.ndarray:
        """The current decision's allowed actions (sb3-contrib's convention; the same array is
        ``info["action_mask"]``, Gymnasium's)."""
        return self._mask

    def _start_episode(self) -> tuple[np.ndarray, dict[str, Any]]:
        """A fresh cloud at the first arrival, the counters at zero and the first task handed
        over; returns what :meth:`reset` returns."""
        self.cloud = Cloud(self.fleet, t0=float(self.tasks.arrival[0]))
        self.t = 0
        self._cost_sum = 0.0
        self._infeasible = 0
        self._next_decision()
        return self.observe(), {"task": self._current.index, "action_mask": self._mask}

    def _end_step(self, cost: float, info: dict[str, Any], again: bool = False) -> StepResult:
        """Finish a step whose action has been applied at ``cost``: count it, then end the
        episode or hand over the next task (``again``: the same task once more, its masks
        already renewed: an action that placed nothing, the grid scenario's cap); returns what
        :meth:`step` returns.

        Adds to ``info`` the running ``decisions`` and ``mean_reward``, then ``final`` (the
        cloud's summary, the mean reward, the infeasible actions and
        :meth:`_final_metrics`) at the end or ``action_mask`` (the next decision's; none
        follows the last), and ``energy_kwh`` (used up to the next hand-over, or to the last
        finish once the episode is over).
        """
        cloud = self.cloud
        assert cloud is not None, "reset() first"
        self._cost_sum += cost
        self.t += 1
        info["decisions"] = self.t
        info["mean_reward"] = -self._cost_sum / self.t
        terminated = not again and self._episode_over()
        if terminated:
            cloud.run_to_completion()
            final = cloud.summary()
            final["mean_reward"] = -self._cost_sum / self.t
            final["infeasible_actions"] = self._infeasible
            final.update(self._final_metrics())
            info["final"] = final
            obs = self._obs.copy()
        else:
            if not again:
                self._next_decision()
            obs = self.observe() if self.observing else self._obs
            info["action_mask"] = self._mask
        info["energy_kwh"] = cloud.energy / _J_PER_KWH
        return obs, -cost, terminated, False, info
