"""What each expert reads of the environment is declared (observed, static or privileged) and
held to it by a recording proxy; ``imitation``'s rollout tools drive an expert through the
adapter and record exactly the expert's own episode."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from ilets.gridcommand.config import load_gridcommand_config
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts import (DECIDING, ENV_READS, ReferenceExpert, expert_rollout_policy, make_expert,
                                       privileged_reads)
from ilets.gridcommand.teacher import demonstrate

#: the smoke episode with the levers on, so the sleep, batch and cap paths are read too
LEVERS = {"sleep_fraction": 0.1, "sleep_after_s": 0.1, "wake_s": 0.3, "batch_share": 0.3, "cap_levels": (0.8, 0.9, 1.0)}
OPTIONS = {"oracle": {"window": 10, "node_limit": 50}}


class Recorder:
    """Forwards every attribute to the environment and remembers which were asked for."""

    def __init__(self, env: GridCommandEnv) -> None:
        object.__setattr__(self, "_env", env)
        object.__setattr__(self, "seen", set())

    def __getattr__(self, name: str):
        self.seen.add(name)
        return getattr(self._env, name)


@pytest.mark.parametrize("name", [*DECIDING, "reference"])
def test_every_expert_reads_exactly_what_it_declares(name):
    cfg = dataclasses.replace(load_gridcommand_config("smoke"), **LEVERS)
    env = GridCommandEnv(cfg)
    env.reset(seed=0)
    expert = ReferenceExpert() if name == "reference" else make_expert(name, **OPTIONS.get(name, {}))
    expert.reset(0)
    proxy, done = Recorder(env), False
    while not done:
        _, _, term, trunc, _ = env.step(expert.act(proxy))
        done = term or trunc
    assert set(expert.reads) <= set(ENV_READS)
    assert proxy.seen == set(expert.reads)


def test_the_privileged_reads_separate_the_rungs():
    def privileged(name: str) -> set[str]:
        return set(privileged_reads(make_expert(name).reads))

    assert privileged("rule") == {"cloud", "baseline_at", "target_at", "schedule"}
    assert privileged("mpc-perfect") - privileged("mpc-forecast") == {"tasks"}  # the perfect forecast is hindsight
    assert privileged("oracle") >= {"tasks"} and privileged("hindsight") == {"*"}
    assert "current_task" not in privileged("lyapunov") and "power_now" not in privileged("lyapunov")
    with pytest.raises(ValueError, match="not declared"):
        privileged_reads(("cloud", "mind"))


def test_imitations_rollout_drives_an_expert_through_the_adapter():
    from imitation.data import rollout
    from imitation.data.wrappers import RolloutInfoWrapper
    from stable_baselines3.common.vec_env import DummyVecEnv

    import ilets  # registers the environment

    cfg = load_gridcommand_config("smoke")
    venv = DummyVecEnv([lambda: RolloutInfoWrapper(gym.make(ilets.GRID_ENV_ID, config=cfg))])
    trajectories = rollout.generate_trajectories(expert_rollout_policy("lyapunov", venv), venv,
                                                 rollout.make_sample_until(min_episodes=1),
                                                 rng=np.random.default_rng(0))
    own = demonstrate(GridCommandEnv(cfg), "lyapunov")
    assert np.array_equal(trajectories[0].acts, own.acts)
    assert np.allclose(trajectories[0].obs[:-1], own.obs)
    with pytest.raises(TypeError, match="DummyVecEnv"):
        expert_rollout_policy("rule", object())


def test_the_book_tables_name_every_rung_and_every_privileged_read():
    from ilets.gridcommand.experts import EXPERTS
    from ilets.gridcommand.report import results as R

    reads = R.reads_table()
    assert len(reads) == len(EXPERTS)
    row = dict(zip(reads["expert"], reads["privileged reads"]))
    assert "`tasks`" in row["MPC, perfect forecast"] and "`tasks`" not in row["MPC, realistic forecast"]
    legend = R.privileged_table()
    assert set(legend["read"]) == {f"`{n}`" for n, (_, kind) in ENV_READS.items() if kind == "privileged"}
