"""Regression tests of defects found in review (issue: the study's conclusions in tested code).

Each test failed on the code before its fix.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ilets.config import RewardConfig, RunConfig
from ilets.simulator.cloud import DEADLINE_TOL, Cloud, Fleet, meets_deadline
from ilets.simulator.objective import Task, cost_of
from ilets.workloads.workload import TaskTable


def _one_server(p_idle=100.0, p_act=100.0, mips=1000.0) -> Fleet:
    return Fleet(np.array([1.0]), np.array([mips]), np.array([p_idle]), np.array([p_act]))


def test_one_success_rule_for_env_summary_and_penalty():
    # arrival 0.1, a 0.2 s run, a 0.2 s deadline: finish - arrival is 0.2 + 4e-17 in floats
    from ilets.agents.env import CloudSchedulingEnv

    tasks = TaskTable(np.array([0.1]), np.array([0.5]), np.array([200.0]), np.array([0.2]))
    env = CloudSchedulingEnv(RunConfig(), tasks=tasks, fleet=_one_server())
    env.reset()
    _, _, done, _, info = env.step(0)
    assert done
    assert info["response"] > 0.2  # the float case the rule is about
    assert info["success"] is True
    assert info["final"]["success_rate"] == 1.0
    assert bool(env.cloud.task_frame()["success"].iloc[0]) is True
    # the deadline penalty of the reward uses the same test: a 0.1 s wait and a 0.2 s run
    # against a 0.3 s deadline sum to 0.30000000000000004
    cloud = Cloud(_one_server(), t0=0.1)
    task = Task(0, 0.1, 0.5, 200.0, 0.3)
    no_penalty = cost_of(cloud, task, 0, 0.2, RewardConfig(deadline_penalty=0.0))
    assert cost_of(cloud, task, 0, 0.2, RewardConfig(deadline_penalty=1.0)) == pytest.approx(no_penalty)


def test_meets_deadline_tolerance_is_absolute_and_tiny():
    assert meets_deadline(1.0 + DEADLINE_TOL / 2, 1.0)
    assert not meets_deadline(1.0 + 1e-9, 1.0)
    np.testing.assert_array_equal(meets_deadline(np.array([0.5, 1.5]), np.array([1.0, 1.0])), [True, False])


def test_expert_window_fitness_counts_the_same_misses():
    # two full-CPU tasks at 0.1 on one server: the second waits 0.1 s and runs 0.2 s against a
    # 0.3 s deadline; the fitness's (start - arrival) + execution is 0.30000000000000004
    from ilets.agents.experts import WindowFitness

    window = [Task(0, 0.1, 1.0, 100.0, 0.1), Task(1, 0.1, 1.0, 200.0, 0.3)]
    cloud = Cloud(_one_server(), t0=0.1)
    for t in window:
        cloud.assign(t.index, t.arrival, t.cpu, t.length, t.deadline, 0)
    cloud.run_to_completion()
    assert cloud.summary()["success_rate"] == 1.0
    plan = np.zeros((1, 2), dtype=np.int64)
    costs = [float(WindowFitness(Cloud(_one_server(), t0=0.1), window, RewardConfig(), miss_penalty=p).costs(plan)[0])
             for p in (0.0, 10.0)]
    assert costs[1] == pytest.approx(costs[0])  # no task counted as a miss


@pytest.mark.parametrize("p_idle, p_act", [(0.0, 0.0), (-1.0, 5.0), (5.0, np.nan), (np.inf, 1.0)])
def test_fleet_rejects_zero_negative_or_non_finite_power(p_idle, p_act):
    with pytest.raises(ValueError, match="power|finite"):
        _one_server(p_idle=p_idle, p_act=p_act)


def test_fleet_with_only_idle_power_is_valid():
    assert _one_server(p_idle=50.0, p_act=0.0).max_power == 50.0


def test_assign_before_the_clock_raises():
    cloud = Cloud(_one_server(), t0=0.0)
    cloud.advance(5.0)
    with pytest.raises(ValueError, match="before the simulator's clock"):
        cloud.assign(0, 4.0, 0.5, 100.0, 1.0, 0)
    cloud.assign(1, 5.0, 0.5, 100.0, 1.0, 0)  # at the clock is fine


def test_import_ilets_registers_the_env_without_torch():
    code = ("import sys, gymnasium as gym, ilets; from ilets import ENV_ID; "
            "assert ENV_ID in gym.registry; assert 'torch' not in sys.modules; "
            "assert 'ilets.agents.env' not in sys.modules; print('ok')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr
