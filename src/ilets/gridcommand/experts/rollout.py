"""An expert of the ladder as a policy ``imitation``'s rollout tools can drive.

``imitation.data.rollout.generate_trajectories`` asks a policy for actions from observations
alone. The experts read the environment itself (what each reads beyond the observation is
declared: :data:`ilets.gridcommand.experts.reading.ENV_READS`, ``expert.reads``), so the
adapter hands each expert its own in-process environment: it needs a vectorised env whose
sub-environments live in this process (SB3's ``DummyVecEnv``), and resets an expert whenever
its environment starts a new episode. The observation is passed through unread.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ilets.gridcommand.experts.ladder import make_expert

#: imitation's ``PolicyCallable``: (observations, states, episode starts) -> (actions, states).
RolloutPolicy = Callable[[Any, Any, Any], tuple[np.ndarray, Any]]


def expert_rollout_policy(name: str, venv: Any, **expert_kw: Any) -> RolloutPolicy:
    """Expert ``name`` (:func:`make_expert`, ``expert_kw`` its options) acting on every
    sub-environment of ``venv`` (a ``DummyVecEnv`` of grid-command envs), as the callable
    ``imitation.data.rollout.generate_trajectories`` takes for its ``policy``."""
    envs = getattr(venv, "envs", None)
    if envs is None:
        raise TypeError(f"venv: an expert reads its environment itself, so it needs in-process environments "
                        f"(a DummyVecEnv); got {type(venv).__name__}")
    experts = [make_expert(name, **expert_kw) for _ in envs]
    for expert in experts:
        expert.reset()

    def act(observations: Any, states: Any, episode_starts: Any) -> tuple[np.ndarray, Any]:
        actions = np.empty(len(envs), np.int64)
        for i, (env, expert) in enumerate(zip(envs, experts)):
            if episode_starts is not None and episode_starts[i]:
                expert.reset()  # the VecEnv reset this environment after its episode ended
            actions[i] = int(expert.act(env.unwrapped))
        return actions, states

    return act
