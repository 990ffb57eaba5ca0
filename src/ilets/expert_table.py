"""The window-planning experts as one table: how each is built, printed and explained.

Everything that names the experts derives from :data:`EXPERT_SPECS`: configuration
validation (``oail.experts``, ``oinpt.expert``), :func:`ilets.agents.experts.make_expert`,
the expert tables of :mod:`ilets.study.expert_tables`, the labels of figures and tables,
and the experts chapter's expert and settings tables. Adding an expert is its own module
(a class with ``name`` and ``plan(cloud, window, rng)``, built as
``factory(cfg, reward, state)``) plus one row here.

The factory is named by its import path (``"module:attribute"``), resolved when an expert
is built: this base module, which :mod:`ilets.config` reads, imports no agent code (the
layers of ``tests/test_layers.py``); a test builds every row's expert.

An OINPT expert may be a *team*, registered names joined by ``+`` (the paper's
``"ga+pso"``): every member plans each window and the cheaper plan is kept (:func:`team`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class ExpertSpec:
    """How an expert is built, printed and explained."""

    label: str  #: how tables, figures and prose name it
    meaning: str  #: one line: what it does (the experts chapter's table)
    #: ``"module:attribute"`` of a callable ``(cfg: ExpertConfig, reward: RewardConfig | None,
    #: state: StateSpec) -> Expert`` (an attribute may be dotted: ``Class.method``)
    factory: str
    #: the expert's own ``ExpertConfig`` fields with a line each (the chapter's settings table)
    settings: Mapping[str, str] = field(default_factory=dict)
    #: the one-step reference: always timed beside the others, which are compared with it
    reference: bool = False


#: The experts by configuration name, in the study's order.
EXPERT_SPECS: MappingProxyType[str, ExpertSpec] = MappingProxyType({
    "ga": ExpertSpec(
        "GA", "genetic algorithm over each task's candidate servers: elites, tournament, uniform crossover, "
        "mutation", "ilets.agents.experts.search:GeneticAlgorithm",
        settings={"ga_population": "GA individuals", "ga_generations": "GA generations",
                  "ga_elite": "GA elites kept per generation", "ga_crossover": "probability a child mixes two parents",
                  "ga_mutation": "per-gene mutation probability (at least 1/W)"}),
    "pso": ExpertSpec(
        "PSO", "particle swarm over scores per (task, candidate server); a task takes its highest-scoring "
        "candidate", "ilets.agents.experts.search:ParticleSwarm",
        settings={"pso_particles": "PSO particles", "pso_iterations": "PSO iterations",
                  "pso_inertia": "PSO inertia weight", "pso_c1": "PSO pull to the particle's best",
                  "pso_c2": "PSO pull to the swarm's best", "pso_vmax": "PSO velocity clip (score units)",
                  "pso_turbulence": "per-task score redraw probability (at least 1/W)"}),
    "greedy": ExpertSpec(
        "greedy", "one-step greedy: each task, in order, on the server of least cost given those already placed "
        "(the searches' floor)", "ilets.agents.experts.plans:GreedyExpert.from_config", reference=True),
})

#: Names of the experts, in the study's order.
EXPERT_NAMES: tuple[str, ...] = tuple(EXPERT_SPECS)

#: Printed label of each expert.
EXPERT_LABELS: MappingProxyType[str, str] = MappingProxyType({name: s.label for name, s in EXPERT_SPECS.items()})

#: The reference expert (the row with ``reference``), and the experts compared with it.
REFERENCE_EXPERT: str = next(name for name, s in EXPERT_SPECS.items() if s.reference)
SEARCH_EXPERTS: tuple[str, ...] = tuple(name for name, s in EXPERT_SPECS.items() if not s.reference)

#: ``ExpertConfig`` fields every expert reads, with a line each (before the experts' own).
SHARED_SETTINGS: MappingProxyType[str, str] = MappingProxyType({
    "window": "tasks per expert call [code]",
    "candidates": "candidate servers per task (0: all feasible)",
    "miss_penalty": "plan cost per missed deadline",
})


def team(expert: str) -> tuple[str, ...]:
    """The members of an OINPT expert: ``"ga+pso"`` -> ``("ga", "pso")``, ``"greedy"`` -> ``("greedy",)``.

    Raises ValueError naming the problem for an unregistered member or one named twice."""
    names = tuple(expert.split("+"))
    unknown = [n for n in names if n not in EXPERT_SPECS]
    if unknown:
        raise ValueError(f"unknown expert(s) {unknown}; expected names from {list(EXPERT_NAMES)}, "
                         f"one or several joined by '+'")
    if len(set(names)) != len(names):
        raise ValueError(f"{expert!r} names an expert twice")
    return names


def expert_label(name: str) -> str:
    """The printed label of an expert or a team (``"ga+pso"`` -> ``"GA+PSO"``); other names as they are."""
    try:
        return "+".join(EXPERT_LABELS[n] for n in team(name))
    except ValueError:
        return name


def setting_meanings() -> dict[str, str]:
    """Every ``ExpertConfig`` field with its line: the shared ones, then each expert's own, in table order."""
    out = dict(SHARED_SETTINGS)
    for spec in EXPERT_SPECS.values():
        out.update(spec.settings)
    return out
