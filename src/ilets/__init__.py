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

from typing import Any

# First, before anything loads numpy or torch: portable floating-point kernels (see the module).
from ilets import numerics as _numerics

_numerics.pin()

__version__ = "0.1.0"

#: The Gymnasium id of the scheduling environment (:class:`ilets.agents.env.CloudSchedulingEnv`).
ENV_ID = "ilets/CloudScheduling-v0"
#: The Gymnasium id of the grid-command scenario (:class:`ilets.gridcommand.env.GridCommandEnv`).
GRID_ENV_ID = "ilets/GridCommand-v0"

# after pin(): gymnasium loads numpy
import gymnasium as _gym  # noqa: E402


class ActionMaskWrapper(_gym.Wrapper, _gym.utils.RecordConstructorArgs):
    """The outermost wrapper of ``gym.make(ENV_ID)`` and ``gym.make(GRID_ENV_ID)``: the
    environment's ``action_masks()`` read without Gymnasium 0.29's deprecation warning.

    ``gym.make`` wraps an environment (``PassiveEnvChecker``, ``OrderEnforcing``); reading
    ``action_masks`` through them goes through ``gymnasium.Wrapper.__getattr__``, which warns
    on every call in Gymnasium 0.29. This wrapper defines the method itself and finds the
    nearest layer below that defines it with ``get_wrapper_attr`` (no warning), so
    ``made.action_masks()`` and sb3-contrib's ``get_action_masks(made)`` are silent. Every
    step and reset also carries the mask in ``info["action_mask"]`` (Gymnasium's
    convention), which passes through any wrapper.

    sb3-contrib's ``MaskablePPO`` puts SB3's ``Monitor`` on top of an env that has none and
    reads the masks through it (the warning again, SB3 2.2); give it the Monitor inside this
    wrapper: ``MaskablePPO("MlpPolicy", ActionMaskWrapper(Monitor(gym.make(GRID_ENV_ID))))``.
    Nothing else changes: observations, rewards and infos are the environment's.
    """

    def __init__(self, env: _gym.Env) -> None:
        _gym.utils.RecordConstructorArgs.__init__(self)
        _gym.Wrapper.__init__(self, env)

    def action_masks(self) -> Any:
        """The allowed actions of the current decision (the environment's array)."""
        return self.env.get_wrapper_attr("action_masks")()


def register_env() -> None:
    """Register :data:`ENV_ID` and :data:`GRID_ENV_ID` with Gymnasium (idempotent).

    The entry point is a string, so registering imports neither the environment nor torch:
    ``import ilets`` is enough for ``gym.make(ENV_ID, ...)``, and the module loads on first use.
    ``gym.make`` puts :class:`ActionMaskWrapper` outermost (a warning-free ``action_masks()``).
    With no arguments each id builds a small declared episode (the environments' ``config=None``:
    the synthetic workload at scale 0.02, 5,187 tasks on 50 servers; see their docstrings).
    """
    masks = (ActionMaskWrapper.wrapper_spec(),)
    if ENV_ID not in _gym.registry:
        _gym.register(id=ENV_ID, entry_point="ilets.agents.env:CloudSchedulingEnv", additional_wrappers=masks)
    if GRID_ENV_ID not in _gym.registry:
        _gym.register(id=GRID_ENV_ID, entry_point="ilets.gridcommand.env:GridCommandEnv", additional_wrappers=masks)


register_env()
