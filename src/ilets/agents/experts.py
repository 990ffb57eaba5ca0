"""Optimisation experts: plan a window of tasks on a copy of the cloud (GA, PSO, greedy).

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

Fitness of a population: the ~950 plans a GA or PSO call scores would each need an exact
replay of the window; :class:`WindowFitness` replays a whole population at once instead
(``benchmarks/bench_experts.py`` times it). It is **exact**, not a surrogate: it reproduces the simulator's FCFS,
head-of-line start rule (``Cloud.earliest_start``) and the power term of ``cost_of`` (fleet
power at the task's arrival, which depends on which earlier window tasks are running then),
differing from the replay only by floating-point summation order (tests check 1e-9).

Why the GA and PSO are written here rather than taken from a library: pygad, pyswarms and
DEAP call a fitness function per individual in Python (or assume continuous variables), so
they cannot use the batched fitness, which is what makes an expert call take tens of
milliseconds; and the genes here are server indices restricted per task to feasible
candidates, which those libraries do not model. Both loops are a few dozen lines.

Search space [ours]: each task's genes range over its ``ExpertConfig.candidates`` cheapest
feasible servers, ranked by the exact cost the task would have alone on the snapshot (the
one-step greedy server is always among them); 0 means every feasible server. With 200
servers a uniformly random server is almost always a bad move: on loaded 50-server
snapshots the GA's gain over greedy fell from ~5% to ~2% without the restriction. Windows
whose tasks have at most ``candidates`` feasible servers (all the small exact-optimum
cases) are unaffected.

Never worse than greedy: the one-step greedy plan (:class:`~ilets.agents.policies.GreedyCost`
applied sequentially) is in the initial population / swarm, the GA keeps elites and the PSO
its global best, and the final plan is whichever of the search's best and the greedy plan
has the lower exact cost.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from ilets.agents.expert_kernels import decode_scores, keep_better, pso_move, pso_shake, schedule_plans, standalone_starts
from ilets.agents.observation import StateSpec, build_observation
from ilets.agents.policies import GreedyCost
from ilets.config import ExpertConfig, RewardConfig
from ilets.simulator.cloud import CPU_EPS, Cloud, meets_deadline
from ilets.simulator.objective import Task, cost_of, costs, costs_from
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


# --- the batched exact fitness ------------------------------------------------------------

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


# --- candidate servers --------------------------------------------------------------------

def _candidates(fitness: WindowFitness, greedy: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Per task, the servers genes may take: greedy's server first, then by standalone cost.

    Returns ``(cand, count)``: ``cand`` (W, C) server indices (rows padded by repeating
    their first entry) and ``count`` (W,) how many are valid.
    """
    cost = fitness.standalone_costs()
    w, m = cost.shape
    cost[np.arange(w), greedy] = -np.inf  # greedy's choice ranks first
    order = np.argsort(cost, axis=1, kind="stable")
    count = fitness.feasible.sum(axis=1)
    if limit > 0:
        count = np.minimum(count, limit)
    c = int(count.max())
    cand = order[:, :c].copy()
    pad = np.arange(c)[None, :] >= count[:, None]
    cand[pad] = np.broadcast_to(cand[:, :1], cand.shape)[pad]
    return cand, count


def _random_genes(rng: np.random.Generator, count: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Uniform candidate slots (column indices into ``cand``), shape (n, W)."""
    return (rng.random(shape) * count[None, :]).astype(np.int64)


@dataclass
class _Search:
    """What both population searches share: the snapshot's fitness and the candidate lists."""

    fitness: WindowFitness
    cand: np.ndarray  #: (W, C) server indices
    count: np.ndarray  #: (W,) valid candidates per task
    greedy: ExpertPlan

    def decode(self, slots: np.ndarray) -> np.ndarray:
        """Candidate slots (P, W) -> server indices (P, W)."""
        return self.cand[np.arange(self.cand.shape[0])[None, :], slots]


def _prepare(cloud: Cloud, window: list[Task], reward: RewardConfig, miss_penalty: float,
             candidates: int, state: StateSpec) -> _Search:
    greedy = greedy_plan(cloud, window, reward, miss_penalty, state)
    fitness = WindowFitness(cloud, window, reward, miss_penalty)
    cand, count = _candidates(fitness, greedy.assignment, candidates)
    return _Search(fitness, cand, count, greedy)


def _finish(search: _Search, cloud: Cloud, window: list[Task], best: np.ndarray, reward: RewardConfig,
            miss_penalty: float, state: StateSpec, name: str, evaluations: int, t0: float) -> ExpertPlan:
    """The exact plan of the search's best, or greedy's if that is no worse (it is exact)."""
    greedy = search.greedy
    plan = dataclasses.replace(greedy)  # the greedy plan may be shared by several experts
    if not np.array_equal(best, greedy.assignment):
        found = evaluate_plan(cloud, window, best, reward, miss_penalty, state, name)
        if found.cost < greedy.cost:
            plan = found
    plan.expert = name
    plan.evaluations = evaluations
    plan.seconds = time.perf_counter() - t0
    return plan


# --- the experts --------------------------------------------------------------------------

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


class _WindowSearch:
    """What GA and PSO share: the candidate restriction, the batched fitness and the exact
    final evaluation; subclasses implement ``_search`` (best candidate slots, evaluations)."""

    name = "search"

    def __init__(self, cfg: ExpertConfig | None = None, reward: RewardConfig | None = None,
                 state: StateSpec = DEFAULT_STATE) -> None:
        self.cfg = cfg or ExpertConfig()
        self.reward = reward or RewardConfig()
        self.state = state

    def prepare(self, cloud: Cloud, window: list[Task]) -> _Search:
        """The greedy plan, fitness and candidates of a window (shareable by searches whose
        :meth:`preparation_key` is equal)."""
        cfg = self.cfg
        return _prepare(cloud, window, self.reward, cfg.miss_penalty, cfg.candidates, self.state)

    def preparation_key(self) -> tuple:
        return (self.reward, self.cfg.miss_penalty, self.cfg.candidates, self.state)

    def plan(self, cloud: Cloud, window: list[Task], rng: np.random.Generator,
             prepared: _Search | None = None) -> ExpertPlan:
        """Plan ``window`` from ``cloud`` (cloned, not mutated); deterministic given ``rng``.

        ``prepared``: :meth:`prepare`'s result for the same cloud and window, if at hand.
        """
        t0 = time.perf_counter()
        cfg = self.cfg
        search = prepared or self.prepare(cloud, window)
        best_slots, evaluations = self._search(search, rng)
        best = search.decode(best_slots[None])[0]
        return _finish(search, cloud, window, best, self.reward, cfg.miss_penalty, self.state,
                       self.name, evaluations, t0)

    def _search(self, search: "_Search", rng: np.random.Generator) -> tuple[np.ndarray, int]:
        raise NotImplementedError


class GeneticAlgorithm(_WindowSearch):
    """A generational GA over server assignments, with an exact batched fitness.

    Genes: one candidate server per task. Initial population: the greedy plan plus
    random individuals drawn uniformly from each task's candidates. Each generation keeps
    the ``ga_elite`` best, fills the rest by binary tournament, uniform crossover
    (probability ``ga_crossover``) and per-gene mutation to a random candidate with
    probability ``max(ga_mutation, 1/W)`` (at least one gene per child on average: on
    windows of 4-6 tasks a rate of 0.1 left the GA short of the optimum in 13% of cases
    against 3-5%); only the offspring are evaluated.
    """

    name = "ga"

    def _search(self, search: _Search, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        """The best individual found (candidate slots) and the number of evaluations."""
        cfg = self.cfg
        n, w = cfg.ga_population, len(search.count)
        elite = min(cfg.ga_elite, n - 1)
        pop = _random_genes(rng, search.count, (n, w))
        pop[0] = 0  # slot 0 is greedy's server for every task
        fit = search.fitness.costs(search.decode(pop))
        evaluations = n
        best = int(np.argmin(fit))
        best_slots, best_fit = pop[best].copy(), fit[best]
        for _ in range(cfg.ga_generations):
            order = np.argsort(fit, kind="stable")
            kids = self._offspring(pop, fit, n - elite, search.count, rng)
            kid_fit = search.fitness.costs(search.decode(kids))
            evaluations += len(kids)
            pop = np.concatenate([pop[order[:elite]], kids])
            fit = np.concatenate([fit[order[:elite]], kid_fit])
            i = int(np.argmin(kid_fit))
            if kid_fit[i] < best_fit:  # kept apart from the population so ga_elite=0 loses nothing
                best_slots, best_fit = kids[i].copy(), kid_fit[i]
        return best_slots, evaluations

    def _offspring(self, pop: np.ndarray, fit: np.ndarray, k: int, count: np.ndarray,
                   rng: np.random.Generator) -> np.ndarray:
        cfg = self.cfg
        n, w = pop.shape

        def tournament() -> np.ndarray:
            a, b = rng.integers(0, n, (2, k))
            return np.where(fit[a] <= fit[b], a, b)

        mum, dad = pop[tournament()], pop[tournament()]
        cross = (rng.random((k, w)) < 0.5) & (rng.random((k, 1)) < cfg.ga_crossover)
        kids = np.where(cross, dad, mum)
        mutate = rng.random((k, w)) < max(cfg.ga_mutation, 1.0 / w)
        return np.where(mutate, _random_genes(rng, count, (k, w)), kids)


class ParticleSwarm(_WindowSearch):
    """Discrete PSO by score decoding ("random keys" over candidate servers).

    A particle holds a real score for every (task, candidate server); its plan puts each
    task on its highest-scoring candidate. Scores follow the standard inertia-weight PSO
    update (``pso_inertia``, ``pso_c1``, ``pso_c2``, velocities clipped to ``pso_vmax``)
    towards each particle's best and the swarm's best scores. We chose this encoding over
    rounding a position per task because server indices have no order (server 7 is not
    "between" 6 and 8), while scores let a particle move towards a server without passing
    through others. Particle 0 starts with the greedy plan (score 1 on greedy's server,
    0 elsewhere), the others with uniform random scores in [0, 1). After each move a
    particle's scores for a task are redrawn with probability ``max(pso_turbulence, 1/W)``
    ("turbulence"): plain PSO collapsed onto the greedy plan within a few iterations and
    stayed there when the optimum needed two tasks to move at once (e.g. a swap).
    """

    name = "pso"

    def _search(self, search: _Search, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        cfg = self.cfg
        n, (w, c) = cfg.pso_particles, search.cand.shape
        count = search.count.astype(np.int64)  # padded slots never win
        x = rng.random((n, w, c))
        x[0] = 0.0
        x[0, :, 0] = 1.0
        v = rng.uniform(-cfg.pso_vmax, cfg.pso_vmax, (n, w, c))
        fit = search.fitness.costs(search.decode(decode_scores(x, count)))
        evaluations = n
        pbest, pbest_fit = x.copy(), fit.copy()
        g = int(np.argmin(fit))
        for _ in range(cfg.pso_iterations):
            r1, r2 = rng.random((2, n, w, c))
            pso_move(x, v, pbest, g, r1, r2, cfg.pso_inertia, cfg.pso_c1, cfg.pso_c2, cfg.pso_vmax)
            shake = rng.random((n, w)) < max(cfg.pso_turbulence, 1.0 / w)
            pso_shake(x, shake, rng.random((int(shake.sum()), c)))
            fit = search.fitness.costs(search.decode(decode_scores(x, count)))
            evaluations += n
            keep_better(pbest, pbest_fit, x, fit)
            g = int(np.argmin(pbest_fit))
        return decode_scores(pbest[g][None], count)[0], evaluations


EXPERTS = ("ga", "pso", "greedy")


def plan_window(experts: list, cloud: Cloud, window: list[Task], rng: np.random.Generator) -> list[ExpertPlan]:
    """Every expert's plan of one window, in order, drawing from one ``rng`` in turn.

    GA and PSO with the same reward and candidate settings share one preparation (the greedy
    plan, the fitness tables and the candidate lists), which is a third of a call's cost on
    loaded states; the plans are the same as separate calls (tested).
    """
    prepared: dict = {}
    plans = []
    for expert in experts:
        if isinstance(expert, _WindowSearch):
            key = expert.preparation_key()
            if key not in prepared:
                prepared[key] = expert.prepare(cloud, window)
            plans.append(expert.plan(cloud, window, rng, prepared[key]))
        else:
            plans.append(expert.plan(cloud, window, rng))
    return plans


def make_expert(name: str, cfg: ExpertConfig | None = None, reward: RewardConfig | None = None,
                state: StateSpec = DEFAULT_STATE) -> Expert:
    """An expert by name: ``"ga"``, ``"pso"`` or ``"greedy"``.

    ``state`` is the observation layout; pass the run's (``StateSpec.of(config)``) so that
    demonstrations are recorded in the states the policy will see.
    """
    cfg = cfg or ExpertConfig()
    if name == "ga":
        return GeneticAlgorithm(cfg, reward, state)
    if name == "pso":
        return ParticleSwarm(cfg, reward, state)
    if name == "greedy":
        return GreedyExpert(reward, cfg.miss_penalty, state)
    raise ValueError(f"unknown expert {name!r}; expected one of {EXPERTS}")


_WARM = False  #: whether :func:`warm_up` has run in this process (a fork inherits it)


def warm_up() -> None:
    """Load the experts' compiled kernels into this process, once (later calls return at once).

    The numba kernels of :mod:`ilets.agents.expert_kernels` are loaded lazily, on their first
    call: from numba's on-disk cache (about 0.5 s on the project's 2-core machine) or, when
    that cache is missing or stale, compiled (3-6 s). OAIL calls this before it forks its
    emulators (:meth:`ilets.agents.oail.OAILCallback._new_pool`), so that they inherit loaded
    kernels instead of paying the load in their first request, where it was counted as the
    experts' CPU (``oail_expert_cpu_s``). It plans a tiny case with every expert and a fresh
    seeded generator of its own, so no caller's state, random stream or result changes; the
    kernels' signatures depend only on dtypes (float64 and int64), which the tiny case shares
    with real windows.
    """
    global _WARM
    if _WARM:
        return
    cloud, window = small_case(0, servers=3, window=4, background=6)
    cfg = ExpertConfig(ga_population=4, ga_generations=1, pso_particles=4, pso_iterations=1)
    plan_window([make_expert(name, cfg) for name in EXPERTS], cloud, window, np.random.default_rng(0))
    _WARM = True


# --- ground truth for small windows ---------------------------------------------------------

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
