"""A learned grid-command model as an ``(obs, env) -> action`` policy: sampled, as a learner
acts during its pass, or greedy, as the study's positive control scores a frozen clone.

Apart from the clone and the pipeline, which both play a model this way (a DAgger round, a
scored or held-out episode).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ilets.agents.per_server import PerServerPolicy
from ilets.agents.ppo import NumpyActor, numpy_actor_critic
from ilets.gridcommand.env import GridCommandEnv


def sampled_policy(model, seed: int, stream: int = 0) -> Callable[[np.ndarray, GridCommandEnv], int]:
    """The model's masked policy, sampled with a generator seeded from ``seed`` (how a
    learner acts during its pass), as an ``(obs, env) -> action`` policy. ``stream``: one
    independent stream per value (a DAgger round's training episodes each draw their own;
    stream 0 is the one a single episode has always drawn)."""
    actor = _numpy_actor(model)
    key = (0x424300,) if stream == 0 else (0x424300, stream)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))  # its own stream
    return lambda obs, env: actor.act(obs, env.action_masks(), rng)


def _numpy_actor(model) -> Any:
    """The model's policy as the numpy actor of its design (per-server or flat)."""
    return numpy_actor_critic(model.policy) if isinstance(model.policy, PerServerPolicy) else NumpyActor(model.policy)


def greedy_policy(model) -> Callable[[np.ndarray, GridCommandEnv], int]:
    """The model's most likely allowed action (first of ties), as an ``(obs, env) -> action``
    policy: how the study's positive control scores a frozen clone."""
    actor = _numpy_actor(model)
    return lambda obs, env: actor.act(obs, env.action_masks())
