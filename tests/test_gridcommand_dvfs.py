"""The DVFS lever: a task run at another clock speed, exact in the simulator, the power
profile, the reward and the envelope; off (one level) it is the plain placement."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ilets.agents.policies import EarliestFinish
from ilets.config import ConfigError, FleetConfig, RunConfig, WorkloadConfig
from ilets.gridcommand.config import CommandSpec, GridCommandConfig
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.power import power_profile
from ilets.simulator.cloud import Cloud, Fleet
from ilets.simulator.objective import cost_of

RUN = RunConfig(workload=WorkloadConfig(scale=0.004), fleet=FleetConfig(servers=20))
DOWN = CommandSpec(direction="down", depth=0.9, start_after_s=1.0, duration_s=2.0, ramp_s=0.2)


def config(levels=(1.0,), **kw) -> GridCommandConfig:
    return GridCommandConfig(run=RUN, regime="explicit", commands=(DOWN,), slot_s=0.25, speed_levels=levels,
                             **kw).validate()


def test_a_slower_task_runs_longer_and_draws_less_power_exactly():
    fleet = Fleet(np.array([1.0, 1.0]), np.array([1000.0, 1000.0]), np.array([50.0, 50.0]), np.array([100.0, 100.0]))
    cloud = Cloud(fleet)
    s0, f0 = cloud.assign(0, 0.0, 0.5, 1000.0, 5.0, 0)
    s1, f1 = cloud.assign(1, 0.0, 0.5, 1000.0, 5.0, 1, speed=0.5, power_factor=0.125)
    assert (f0 - s0, f1 - s1) == (1.0, 2.0)
    assert cloud.power == pytest.approx(100.0 + 50.0 + 6.25) and cloud.power_factors == {1: 0.125}
    cloud.run_to_completion()
    assert cloud.energy == pytest.approx(100.0 * 2 + 50.0 * 1 + 6.25 * 2)
    profile = power_profile(cloud, fleet, np.array([0.0, 1.0, 2.0]), np.array([0.5, 0.5]))
    assert profile.tolist() == pytest.approx([156.25, 106.25])
    with pytest.raises(ValueError, match="speed"):
        Cloud(fleet).assign(0, 0.0, 0.5, 1000.0, 5.0, 0, speed=0.0)


def test_the_env_places_at_each_level_and_pays_its_cost():
    env = GridCommandEnv(config((1.0, 0.5), envelope="off"))
    m = len(env.fleet)
    env.reset()
    assert env.action_space.n == 2 * m + 1 and env.defer_action == 2 * m
    mask = env.action_masks()
    assert mask[:m].tolist() == mask[m:2 * m].tolist()
    task, cloud = env.current_task, env.cloud
    s = EarliestFinish().act(cloud, task, mask[:m])
    want = cost_of(cloud, task, s, cloud.earliest_start(s, task.cpu), env.config.run.reward, 0.5, 0.125)
    _, r, _, _, info = env.step(m + s)
    assert info["server"] == s and info["speed"] == 0.5
    assert info["finish"] - info["start"] == pytest.approx(2 * task.length / env.fleet.mips[s])
    assert r == pytest.approx(-(want + info["tracking"]))
    # the slot tracker and the metrics' profile both see the task's reduced power
    done = False
    while not done:
        _, _, done, _, _ = env.step(m + EarliestFinish().act(env.cloud, env.current_task, env.action_masks()[:m]))
    power = power_profile(env.cloud, env.fleet, env.slot_edges, env.tasks.cpu)
    np.testing.assert_allclose(env.tracker.committed_power(), power[env.tracker.slot], rtol=1e-12)


def test_one_level_is_the_plain_placement_and_more_levels_widen_the_envelope():
    plain = GridCommandEnv(config())
    assert plain.action_space.n == len(plain.fleet) + 1
    dvfs = GridCommandEnv(config((1.0, 0.5)))
    assert dvfs.envelope[0].reachable_depth > plain.envelope[0].reachable_depth


@pytest.mark.parametrize("kw, msg", [({"speed_levels": (0.5, 1.0)}, "speed_levels: expected the nominal speed"),
                                     ({"speed_levels": (1.0, 1.0)}, "speed_levels: expected distinct values"),
                                     ({"speed_levels": (1.0, 3.0)}, r"speed_levels\[1\]: expected a speed in \(0, 2\]"),
                                     ({"dvfs_exponent": 0.5}, "dvfs_exponent")])
def test_dvfs_knobs_are_checked(kw, msg):
    with pytest.raises(ConfigError, match=rf"gridcommand\.{msg}"):
        dataclasses.replace(config(), **kw).validate()


def test_lyapunov_scores_every_speed_level_and_plays_valid_actions():
    from ilets.gridcommand.experts import LyapunovExpert

    env = GridCommandEnv(config((1.0, 0.5, 1.5), envelope="off"))
    m = len(env.fleet)
    expert = LyapunovExpert()
    expert.reset(0)
    env.reset()
    assert len(expert.scores(env)) == 3 * m + 1
    levels, done = set(), False
    while not done:
        a = expert.act(env)
        assert env.action_masks()[a]
        if a != env.defer_action:
            levels.add(env.decode(a)[1])
        _, _, done, _, info = env.step(a)
        assert not info["infeasible"]
    # outside events the energy term alone prefers the slow level; in the cut it still does
    assert 1 in levels
