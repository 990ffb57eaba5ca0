"""ILETS reproducible study: online cloud task scheduling with imitation-enabled deep RL."""

__version__ = "0.1.0"

#: The Gymnasium id of the scheduling environment (:class:`ilets.env.CloudSchedulingEnv`).
ENV_ID = "ilets/CloudScheduling-v0"


def register_env() -> None:
    """Register :data:`ENV_ID` with Gymnasium (idempotent).

    The entry point is a string, so registering imports neither the environment nor torch:
    ``import ilets`` is enough for ``gym.make(ENV_ID, ...)``, and the module loads on first use.
    """
    import gymnasium as gym

    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="ilets.env:CloudSchedulingEnv")


register_env()
