"""The window searches: a genetic algorithm and a particle swarm over candidate servers.

Why the GA and PSO are written here rather than taken from a library: pygad, pyswarms and
DEAP call a fitness function per individual in Python (or assume continuous variables), so
they cannot use the batched fitness (:class:`~ilets.agents.experts.fitness.WindowFitness`),
which is what makes an expert call take tens of milliseconds; and the genes here are server
indices restricted per task to feasible candidates, which those libraries do not model.
Both loops are a few dozen lines.

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
import time
from dataclasses import dataclass

import numpy as np

from ilets.agents.expert_kernels import decode_scores, keep_better, pso_move, pso_shake
from ilets.agents.experts.fitness import WindowFitness
from ilets.agents.experts.plans import DEFAULT_STATE, ExpertPlan, evaluate_plan, greedy_plan
from ilets.agents.observation import StateSpec
from ilets.config import ExpertConfig, RewardConfig
from ilets.simulator.cloud import Cloud
from ilets.simulator.objective import Task


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


# --- the searches -------------------------------------------------------------------------

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
