"""Optimisation experts: plan a window of tasks on a copy of the cloud (GA, PSO, greedy).

The package's modules, from the bottom up:

* :mod:`~ilets.agents.experts.plans`: :class:`ExpertPlan`, the exact replay of a plan
  (:func:`evaluate_plan`) and the one-step greedy expert;
* :mod:`~ilets.agents.experts.fitness`: :class:`WindowFitness`, the exact costs of a
  population of plans at once;
* :mod:`~ilets.agents.experts.search`: the GA and the PSO over each task's candidate servers;
* :mod:`~ilets.agents.experts.optimum`: the exact optimum of small windows and small cases;
* :mod:`~ilets.agents.experts.registry`: :func:`make_expert` by name (the rows of
  :data:`ilets.expert_table.EXPERT_SPECS`), :func:`plan_window`, :func:`warm_up`.

Their public names are importable from here.
"""

from ilets.agents.experts.fitness import WindowFitness
from ilets.agents.experts.optimum import exact_optimum, small_case
from ilets.agents.experts.plans import (DEFAULT_STATE, Expert, ExpertPlan, GreedyExpert, evaluate_plan, greedy_plan,
                                        window_from_table)
from ilets.agents.experts.registry import EXPERTS, make_expert, plan_window, warm_up
from ilets.agents.experts.search import GeneticAlgorithm, ParticleSwarm

__all__ = ["DEFAULT_STATE", "EXPERTS", "Expert", "ExpertPlan", "GeneticAlgorithm", "GreedyExpert", "ParticleSwarm",
           "WindowFitness", "evaluate_plan", "exact_optimum", "greedy_plan", "make_expert", "plan_window",
           "small_case", "warm_up", "window_from_table"]
