"""ILETS reproducible study: online cloud task scheduling with imitation-enabled deep RL.

The package is layered; a module imports only its own layer and the ones above it in this
list (``tests/test_layers.py`` checks it):

``ilets.config``, ``ilets.method_table``, ``ilets.lifecycle``
    the base: typed configuration, the method table, process-lifetime helpers.
``ilets.workloads``
    where tasks come from: the trace reader, the shard downloader, task tables.
``ilets.simulator``
    the data centre: the exact event-driven cloud, the cost formula, a SimPy twin.
``ilets.agents``
    who decides: observation blocks, the Gymnasium env, heuristics, GA/PSO experts, PPO,
    OINPT, OAIL and the four methods as one online pass.
``ilets.study``
    running it: profiles, one cell, the grid, the results store, the pilot, the CLI.
``ilets.report``
    what it shows: statistics, claim verdicts, findings, deviations, plots.
"""

from __future__ import annotations

# First, before anything loads numpy or torch: portable floating-point kernels (see the module).
from ilets import numerics as _numerics

_numerics.pin()

__version__ = "0.1.0"

#: The Gymnasium id of the scheduling environment (:class:`ilets.agents.env.CloudSchedulingEnv`).
ENV_ID = "ilets/CloudScheduling-v0"
#: The Gymnasium id of the grid-command scenario (:class:`ilets.gridcommand.env.GridCommandEnv`).
GRID_ENV_ID = "ilets/GridCommand-v0"


def register_env() -> None:
    """Register :data:`ENV_ID` and :data:`GRID_ENV_ID` with Gymnasium (idempotent).

    The entry point is a string, so registering imports neither the environment nor torch:
    ``import ilets`` is enough for ``gym.make(ENV_ID, ...)``, and the module loads on first use.
    """
    import gymnasium as gym

    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="ilets.agents.env:CloudSchedulingEnv")
    if GRID_ENV_ID not in gym.registry:
        gym.register(id=GRID_ENV_ID, entry_point="ilets.gridcommand.env:GridCommandEnv")


register_env()
