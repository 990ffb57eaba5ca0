"""Plans and their exact replay: what an expert returns, and the one exact evaluation of a plan.

An expert is called as ``expert.plan(cloud, window, rng)``: ``cloud`` is the live state at (or
before) the first task's arrival, which the expert clones and never mutates; ``window`` is a
list of :class:`~ilets.simulator.objective.Task` in arrival order. It returns an :class:`ExpertPlan`:
one server per task plus what imitation needs (the observation, mask and reward of every
decision), all produced by one exact sequential replay, :func:`evaluate_plan`.

Objective of a plan [ours]: the sum over the window of the reward's own cost
(:func:`ilets.simulator.objective.cost_of`, so the experts optimise exactly what PPO is rewarded for)
plus ``ExpertConfig.miss_penalty`` per task whose response exceeds its deadline. The
reward itself has no deadline term by default [code]; the penalty makes the experts respect
deadlines, which the paper's success rate measures.

The one-step greedy expert (:class:`GreedyExpert`, :func:`greedy_plan`) is here too: it is
one replay, and the searches of :mod:`ilets.agents.experts.search` start from its plan.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from ilets.agents.observation import StateSpec, build_observation
from ilets.agents.policies import GreedyCost
from ilets.config import ExpertConfig, RewardConfig
from ilets.simulator.cloud import Cloud, meets_deadline
from ilets.simulator.objective import Task, cost_of, costs
from ilets.workloads.workload import TaskTable

#: Default top of the task-length range, for the observation's length feature (env layout).
DEFAULT_STATE = StateSpec()


# --- results ------------------------------------------------------------------------------

@dataclass
class ExpertPlan:
    """A plan for a window and the demonstrations recorded while replaying it exactly.

    ``cost`` is the plan's objective: ``sum(task_costs)``, where a task's cost is
    :func:`~ilets.simulator.objective.cost_of` plus the miss penalty if its response exceeds its
    deadline. ``rewards`` are the environment's rewards (``-cost_of``, no miss penalty), so
    discounted returns of demonstrations match what PPO's critic sees online.
    """

    expert: str
    assignment: np.ndarray  #: int64 (W,), a server per task
    cost: float
    task_costs: np.ndarray  #: float64 (W,)
    rewards: np.ndarray  #: float64 (W,), ``-cost_of`` of each decision
    misses: int  #: tasks whose response exceeds their deadline
    observations: np.ndarray  #: float32 (W, 2M+2), at each decision point
    masks: np.ndarray  #: bool (W, M), ``cloud.feasible(task.cpu)``
    evaluations: int = 0  #: fitness evaluations (plans scored) spent finding the plan
    #: float64 (W, M), only when asked for (:func:`evaluate_plan` ``action_costs=True``): the
    #: cost (as ``task_costs``) every server would have had at each decision of the replay,
    #: ``inf`` where infeasible; what one-step deviations from the plan cost (cloning regret)
    action_costs: np.ndarray | None = None
    seconds: float = 0.0  #: wall time of the call (for reporting only)

    def __len__(self) -> int:
        return len(self.assignment)


class Expert(Protocol):
    """Anything that plans a window on a copy of the cloud."""

    name: str

    def plan(self, cloud: Cloud, window: list[Task], rng: np.random.Generator) -> ExpertPlan:
        """Plan ``window`` from the state ``cloud`` (not mutated)."""


def window_from_table(tasks: TaskTable, start: int, stop: int) -> list[Task]:
    """Rows ``start:stop`` of ``tasks`` as :class:`Task` tuples indexed by their row."""
    stop = min(stop, len(tasks))
    cols = (tasks.arrival[start:stop].tolist(), tasks.cpu[start:stop].tolist(),
            tasks.length[start:stop].tolist(), tasks.deadline[start:stop].tolist())
    return [Task(start + k, a, c, ln, d) for k, (a, c, ln, d) in enumerate(zip(*cols))]


# --- the exact replay ---------------------------------------------------------------------

Chooser = Callable[[int, Cloud, Task, np.ndarray], int]


def _replay(cloud: Cloud, window: list[Task], choose: Chooser, reward: RewardConfig,
            miss_penalty: float, state: StateSpec, expert: str, action_costs: bool = False) -> ExpertPlan:
    """Replay ``window`` on a clone of ``cloud``, ``choose(j, cloud, task, mask)`` picking servers.

    This is the single exact evaluation of a plan: the clone advances to each arrival, the
    observation and mask are recorded, the cost is ``cost_of`` at the exact FCFS start,
    then the task is assigned, exactly as :class:`ilets.agents.env.CloudSchedulingEnv` does.
    """
    if window and window[0].arrival < cloud.now:
        raise ValueError(f"the cloud is at t={cloud.now}, after the window's first arrival {window[0].arrival}")
    sim = cloud.clone()
    w, m = len(window), len(cloud.fleet)
    assignment = np.empty(w, np.int64)
    task_costs = np.empty(w)
    rewards = np.empty(w)
    obs = np.empty((w, state.size(m)), np.float32)
    masks = np.empty((w, m), bool)
    every = np.empty((w, m)) if action_costs else None
    misses = 0
    for j, task in enumerate(window):
        sim.advance(task.arrival)
        build_observation(sim, task, state, obs[j])
        masks[j] = sim.feasible(task.cpu)
        if every is not None:
            starts = sim.earliest_starts(task.cpu)
            late = ~meets_deadline(starts - task.arrival + task.length / sim.fleet.mips, task.deadline)
            every[j] = np.where(masks[j], costs(sim, task, starts, reward) + miss_penalty * late, np.inf)
        s = int(choose(j, sim, task, masks[j]))
        if not 0 <= s < m or not masks[j, s]:
            raise ValueError(f"task {task.index}: server {s} cannot hold CPU request {task.cpu}")
        start = sim.earliest_start(s, task.cpu)
        c = cost_of(sim, task, s, start, reward)
        rewards[j] = -c
        if not meets_deadline(start - task.arrival + task.length / sim.fleet.mips[s], task.deadline):
            misses += 1
            c += miss_penalty
        task_costs[j] = c
        assignment[j] = s
        sim.assign(task.index, task.arrival, task.cpu, task.length, task.deadline, s)
    return ExpertPlan(expert, assignment, float(task_costs.sum()), task_costs, rewards, misses, obs, masks,
                      action_costs=every)


def evaluate_plan(cloud: Cloud, window: list[Task], assignment, reward: RewardConfig,
                  miss_penalty: float, state: StateSpec = DEFAULT_STATE,
                  expert: str = "plan", action_costs: bool = False) -> ExpertPlan:
    """The exact cost and demonstrations of ``assignment`` replayed on a clone of ``cloud``.

    ``action_costs``: also record every server's cost at each decision (``ExpertPlan.action_costs``).

    Raises ValueError if the assignment's length differs from the window's or a server is
    too small for its task.
    """
    assignment = np.asarray(assignment, dtype=np.int64)
    if assignment.shape != (len(window),):
        raise ValueError(f"assignment has shape {assignment.shape}, the window has {len(window)} tasks")
    return _replay(cloud, window, lambda j, _c, _t, _m: int(assignment[j]), reward, miss_penalty,
                   state, expert, action_costs)


def greedy_plan(cloud: Cloud, window: list[Task], reward: RewardConfig, miss_penalty: float,
                state: StateSpec = DEFAULT_STATE) -> ExpertPlan:
    """One-step :class:`~ilets.agents.policies.GreedyCost` applied task by task, replayed exactly."""
    policy = GreedyCost(reward)
    return _replay(cloud, window, lambda _j, c, t, mask: policy.act(c, t, mask), reward, miss_penalty,
                   state, "greedy")


# --- the greedy expert ---------------------------------------------------------------------

class GreedyExpert:
    """The one-step greedy expert: :class:`~ilets.agents.policies.GreedyCost` task by task."""

    name = "greedy"

    def __init__(self, reward: RewardConfig | None = None, miss_penalty: float = ExpertConfig().miss_penalty,
                 state: StateSpec = DEFAULT_STATE) -> None:
        self.reward = reward or RewardConfig()
        self.miss_penalty = miss_penalty
        self.state = state

    def plan(self, cloud: Cloud, window: list[Task], rng: np.random.Generator | None = None) -> ExpertPlan:
        """Greedy plan of ``window``; ``rng`` is unused (kept for the common interface)."""
        t0 = time.perf_counter()
        plan = greedy_plan(cloud, window, self.reward, self.miss_penalty, self.state)
        plan.evaluations = 1
        plan.seconds = time.perf_counter() - t0
        return plan

    @classmethod
    def from_config(cls, cfg: ExpertConfig | None = None, reward: RewardConfig | None = None,
                    state: StateSpec = DEFAULT_STATE) -> "GreedyExpert":
        """The greedy expert as :func:`ilets.agents.experts.make_expert` builds every expert."""
        return cls(reward, (cfg or ExpertConfig()).miss_penalty, state)
