"""The drift-plus-penalty queues shown to a learner (``observe_queues``): the environment keeps
exactly the Lyapunov expert's queues along the episode, writes them as one more block, and
at the default leaves the observation and every cell's settings digest as they were."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from ilets.config import ConfigError
from ilets.gridcommand import episodes as EP
from ilets.gridcommand.config import load_gridcommand_config, settings_plain
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts.ladder import make_expert
from ilets.gridcommand.features import TRACK_SCALE, grid_size
from ilets.gridcommand.queues import VirtualQueues
from test_gridcommand_pipeline import SCENARIO as PIPELINE_SCENARIO

#: one event the tiny fleet cannot fully follow (no envelope), so a tracking debt builds up
SCENARIO = {**PIPELINE_SCENARIO, "regime": "shallow-long", "envelope": "off"}


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    return path


def test_the_env_keeps_the_lyapunov_experts_queues_and_shows_them(scenario):
    base = load_gridcommand_config(scenario, observe_queues=True)
    cfg = EP.evaluation_config(base, "shallow-long", 6, 0)
    env = GridCommandEnv(cfg)
    assert env.observation_space.shape == (2 * 6 + 2 + grid_size(observe_queues=True),)
    expert = make_expert("lyapunov")
    obs, _ = env.reset(seed=0)
    expert.reset()
    seen_debt = seen_misses = False
    done = False
    while not done:
        shown = np.float32([np.log1p(TRACK_SCALE * env.queues.q_track), np.log1p(env.queues.q_deadline)])
        np.testing.assert_array_equal(obs[-2:], shown)
        a = expert.act(env)  # its tracking step at this decision, as the env took it
        assert env.queues.q_track == expert.q_track
        seen_debt |= expert.q_track > 0
        obs, _, term, trunc, info = env.step(a)
        assert env.queues.q_deadline == expert.q_deadline  # both counted this placement's miss
        seen_misses |= not info.get("success", True)
        done = term or trunc
    assert seen_debt and seen_misses  # the test episode runs up both queues


@pytest.mark.parametrize("flag", ["observe_queues", "observe_slot", "observe_energy"])
def test_at_the_default_nothing_is_shown_and_digests_stay(scenario, flag):
    """Each opt-in block (the queues, the slot's meter): off by default, the observation as it
    was, left out of the settings at the default and counted when set."""
    base = load_gridcommand_config(scenario)
    assert getattr(base, flag) is False
    env = GridCommandEnv(EP.evaluation_config(base, "shallow-long", 6, 0))
    assert env.observation_space.shape == (2 * 6 + 2 + grid_size(),)
    assert flag not in settings_plain(base)
    assert settings_plain(dataclasses.replace(base, **{flag: True}))[flag] is True


@pytest.mark.parametrize("flag", ["observe_queues", "observe_slot", "observe_energy"])
def test_a_bad_flag_is_named(scenario, flag):
    with pytest.raises(ConfigError, match=flag):
        load_gridcommand_config(scenario, **{flag: "yes"})


def test_the_queues_recursion():
    q = VirtualQueues(miss_budget=0.5)
    q.decide(10.0, 1200.0, 1000.0, 50.0, 1.0, 1000.0)
    assert q.q_track == 0.0 and q.last_t == 10.0  # no time has passed at the first decision
    q.decide(12.0, 1200.0, 1000.0, 50.0, 1.0, 1000.0)
    assert q.q_track == pytest.approx(0.3)  # (200 - 50) W * 2 s / 1000 W
    q.decide(13.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    assert q.q_track == 0.0  # no event: no debt
    q.update_deadline(True)
    q.update_deadline(False)
    assert q.q_deadline == pytest.approx(0.0)  # +1 - 0.5, then -0.5
    q.reset()
    assert (q.q_track, q.q_deadline, q.last_t) == (0.0, 0.0, None)


@pytest.mark.parametrize("folder", ["gridcommand", "gridcommand-per-server-episodes", "gridcommand-per-server-terms"])
def test_every_shipped_grid_command_cell_keeps_its_settings_digest(folder):
    """Fields added to the scenario and the pipeline at their defaults leave every shipped cell's
    digest as it was computed (so ``ilets verify`` and resuming find them)."""
    import json
    from pathlib import Path

    from ilets import cell_pack
    from ilets.gridcommand.experiment import Cell
    from ilets.gridcommand.study import scenario as G

    root = Path(__file__).resolve().parents[1] / "shipped" / folder
    profile = G.load_profile(root / "profile.json")
    records = [json.loads(cell_pack.read_text(p)) for p in cell_pack.cell_paths(root, "*.json")]
    assert records
    for rec in records:
        assert G.settings_digest(profile, Cell(rec["method"], rec["servers"], rec["seed"])) == rec["settings_digest"]
