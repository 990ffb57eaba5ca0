"""The experts by name: :func:`make_expert` builds one from its row of :data:`ilets.expert_table.EXPERT_SPECS`,
:func:`plan_window` runs several on one window (sharing what they can), :func:`warm_up` loads
their compiled kernels before OAIL forks its emulators."""

from __future__ import annotations

import functools
import importlib
from typing import Any, Callable

import numpy as np

from ilets.agents.experts.optimum import small_case
from ilets.agents.experts.plans import DEFAULT_STATE, Expert, ExpertPlan
from ilets.agents.experts.search import _WindowSearch
from ilets.agents.observation import StateSpec
from ilets.config import ExpertConfig, RewardConfig
from ilets.expert_table import EXPERT_NAMES, EXPERT_SPECS
from ilets.simulator.cloud import Cloud
from ilets.simulator.objective import Task

#: The experts' names, in the study's order (the table's).
EXPERTS = EXPERT_NAMES


def plan_window(experts: list[Expert], cloud: Cloud, window: list[Task], rng: np.random.Generator) -> list[ExpertPlan]:
    """Every expert's plan of one window, in order, drawing from one ``rng`` in turn.

    GA and PSO with the same reward and candidate settings share one preparation (the greedy
    plan, the fitness tables and the candidate lists), which is a third of a call's cost on
    loaded states; the plans are the same as separate calls (tested).
    """
    prepared: dict[tuple[Any, ...], Any] = {}  # preparation_key() -> prepare()'s tables
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
    """An expert by name (one of :data:`EXPERTS`), built by its row's factory in :data:`ilets.expert_table.EXPERT_SPECS`.

    ``state`` is the observation layout; pass the run's (``StateSpec.of(config)``) so that
    demonstrations are recorded in the states the policy will see.
    """
    spec = EXPERT_SPECS.get(name)
    if spec is None:
        raise ValueError(f"unknown expert {name!r}; expected one of {EXPERTS}")
    return factory(spec.factory)(cfg or ExpertConfig(), reward, state)


@functools.lru_cache(maxsize=None)
def factory(path: str) -> Callable[..., Expert]:
    """The callable a factory path names: ``"module:attribute"``, the attribute possibly dotted."""
    module, _, attribute = path.partition(":")
    found: Any = importlib.import_module(module)  # the module, then its attributes down the dotted path
    for part in attribute.split("."):
        found = getattr(found, part)
    return found


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
