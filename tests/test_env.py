"""The Gymnasium environment: API conformance, observation layout, masks, reward, episodes."""

from __future__ import annotations

import dataclasses
import time
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import ilets
from ilets import ENV_ID
from ilets.agents.env import CloudSchedulingEnv
from ilets.config import FleetConfig, RunConfig, WorkloadConfig
from ilets.simulator.cloud import Fleet
from ilets.simulator.objective import cost_of
from ilets.workloads.workload import TaskTable


@pytest.fixture
def env(tiny_config):
    return CloudSchedulingEnv(tiny_config)


def test_gymnasium_and_sb3_checkers_pass(env):
    gym_check_env(env, skip_render_check=True)
    sb3_check_env(CloudSchedulingEnv(env.config), warn=True)


def test_registered_id_makes_the_env():
    cfg = RunConfig(workload=WorkloadConfig(scale=0.001), fleet=FleetConfig(servers=7))
    env = gym.make(ENV_ID, config=cfg)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2 * 7 + 2,) and obs.dtype == np.float32


def test_masks_are_read_from_a_made_env_without_warnings():
    """``made.action_masks()``, sb3-contrib's helper and ``info["action_mask"]`` (reset and
    every step but the last) raise no warning through ``gym.make``'s wrappers."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    cfg = RunConfig(workload=WorkloadConfig(scale=0.001), fleet=FleetConfig(servers=7))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make(ENV_ID, config=cfg)
        assert isinstance(env, ilets.ActionMaskWrapper)
        _, info = env.reset(seed=0)
        done, steps = False, 0
        while not done:
            mask = env.action_masks()
            assert mask is info["action_mask"] and get_action_masks(env) is mask
            _, _, done, _, info = env.step(int(np.flatnonzero(mask)[-1]))
            steps += 1
        assert "action_mask" not in info and info["final"]["tasks"] == steps


def test_no_argument_make_builds_a_small_declared_episode():
    """``gym.make(ENV_ID)``: ``RunConfig()`` at workload scale ``DEFAULT_SCALE`` (the env's
    docstring), not the paper's full window."""
    from ilets.agents.env import DEFAULT_SCALE

    t0 = time.perf_counter()
    env = gym.make(ENV_ID)
    env.reset()
    seconds = time.perf_counter() - t0
    base = env.unwrapped
    assert DEFAULT_SCALE == 0.02
    assert base.config == dataclasses.replace(RunConfig(), workload=WorkloadConfig(scale=DEFAULT_SCALE))
    assert len(base.tasks) == 5187 and len(base.fleet) == 50
    assert seconds < 5.0, f"the no-argument episode took {seconds:.1f} s to build"
    assert RunConfig().workload.scale == 1.0


def test_observation_layout(env):
    obs, _ = env.reset(seed=0)
    m = len(env.fleet)
    task = env.current_task
    assert obs.shape == (2 * m + 2,)
    assert obs[0] == pytest.approx(task.cpu, abs=1e-6)
    assert obs[1] == pytest.approx(task.length / env.config.workload.length_mi[1], abs=1e-6)
    np.testing.assert_allclose(obs[2:2 + m], env.fleet.capacity, atol=1e-6)  # empty fleet
    np.testing.assert_array_equal(obs[2 + m:], 0)
    obs, *_ = env.step(0)
    assert env.cloud.n_tasks[0] == 1  # still running: executions last >= 0.33 s, arrivals ~5 ms apart
    assert obs[2 + m] == pytest.approx(0.1)
    assert obs[2] == pytest.approx(env.fleet.capacity[0] - env.tasks.cpu[0], abs=1e-6)
    assert env.observation_space.contains(obs)


def _one_big_task_env(tiny_config):
    fleet = Fleet(capacity=np.array([0.25, 1.0]), mips=np.array([1000.0, 1000.0]),
                  p_idle=np.array([10.0, 10.0]), p_act=np.array([10.0, 10.0]))
    tasks = TaskTable(np.array([0.0, 0.1]), np.array([0.5, 0.1]), np.array([1000.0, 1000.0]), np.array([5.0, 5.0]))
    return CloudSchedulingEnv(tiny_config, tasks=tasks, fleet=fleet)


def test_masks_mark_servers_too_small(tiny_config):
    env = _one_big_task_env(tiny_config)
    env.reset()
    np.testing.assert_array_equal(env.action_masks(), [False, True])


def test_infeasible_action_is_redirected_and_penalised(tiny_config):
    env = _one_big_task_env(tiny_config)
    env.reset()
    _, r_bad, *_, info = env.step(0)
    assert info["infeasible"] and info["server"] == 1
    env.reset()
    _, r_ok, *_, info_ok = env.step(1)
    assert not info_ok["infeasible"]
    assert r_bad == pytest.approx(r_ok - tiny_config.reward.infeasible_penalty)


def test_reward_is_minus_the_objective_cost(env):
    env.reset(seed=0)
    for a in [0, 3, 3, 3, 1]:
        clone, task = env.cloud.clone(), env.current_task
        expected = -cost_of(clone, task, a, clone.earliest_start(a, task.cpu), env.config.reward)
        _, r, *_ = env.step(a)
        assert r == pytest.approx(expected)


def test_episode_ends_with_final_metrics(tiny_config):
    env = CloudSchedulingEnv(tiny_config)
    env.reset(seed=0)
    done, n = False, 0
    rng = np.random.default_rng(0)
    while not done:
        a = int(rng.choice(np.flatnonzero(env.action_masks())))
        _, _, done, trunc, info = env.step(a)
        n += 1
        assert not trunc
    assert n == len(env.tasks)
    final = info["final"]
    assert final["tasks"] == n and 0 <= final["success_rate"] <= 1 and final["energy_kwh"] > 0


def test_reset_seed_redraws_the_workload_and_is_deterministic(tiny_config):
    env = CloudSchedulingEnv(tiny_config)
    a, _ = env.reset(seed=5)
    tasks5 = env.tasks.arrival.copy()
    b, _ = env.reset(seed=5)
    np.testing.assert_array_equal(a, b)
    env.reset(seed=6)
    assert not np.array_equal(tasks5, env.tasks.arrival)


def test_theta_weights_power_against_waiting(tiny_config):
    only_power = dataclasses.replace(tiny_config, reward=dataclasses.replace(tiny_config.reward, theta=1.0))
    env = CloudSchedulingEnv(only_power)
    env.reset(seed=0)
    task = env.current_task
    rewards = []
    for s in range(len(env.fleet)):
        env.reset(seed=0)
        rewards.append(env.step(s)[1])
    # with theta = 1 the best server is the one adding least power per CPU
    assert int(np.argmax(rewards)) == int(np.argmin(env.fleet.p_act / env.fleet.capacity))
    assert task.cpu > 0


def test_rich_observation_adds_wait_speed_and_power(tiny_config):
    cfg = dataclasses.replace(tiny_config, observation="rich")
    env = CloudSchedulingEnv(cfg)
    gym_check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    m = len(env.fleet)
    assert obs.shape == (5 * m + 2,)
    np.testing.assert_allclose(obs[2 + 3 * m:2 + 4 * m], env.fleet.mips / env.fleet.mips.max(), rtol=1e-6)
    w = env.fleet.p_act / env.fleet.capacity
    np.testing.assert_allclose(obs[2 + 4 * m:], w / w.max(), rtol=1e-6)
    for _ in range(40):  # pile tasks on server 0 until a queue forms
        obs, *_ = env.step(0)
    expected = min(1.0, max(0.0, env.cloud.last_start[0] - env.cloud.now) / cfg.reward.wait_scale_s)
    assert obs[2 + 2 * m] == pytest.approx(expected, abs=1e-6) and expected > 0
