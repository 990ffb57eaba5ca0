"""Cross-check: the analytic simulator (:mod:`ilets.simulator.cloud`) against its SimPy twin.

The two share only the model; if they agree on every task's start and finish and on the
energy, over thousands of tasks with queues and over tie-heavy random systems, a slip in
either would have to be made identically in both.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ilets.config import FleetConfig, WorkloadConfig
from ilets.simulator.cloud import CPU_EPS, Cloud, Fleet, make_fleet
from ilets.simulator.twin import earliest_finish_twin, simulate_twin
from ilets.workloads.workload import TaskTable, synthetic_workload


def replay_cloud(fleet: Fleet, tasks: TaskTable, assignment) -> tuple[np.ndarray, np.ndarray, float]:
    """(start, finish, energy) of a fixed assignment on Cloud, energy counted from the first arrival."""
    cloud = Cloud(fleet, t0=float(tasks.arrival[0]))
    start, finish = np.empty(len(tasks)), np.empty(len(tasks))
    for j in range(len(tasks)):
        start[j], finish[j] = cloud.assign(j, tasks.arrival[j], tasks.cpu[j], tasks.length[j], tasks.deadline[j],
                                           int(assignment[j]))
    cloud.run_to_completion()
    return start, finish, cloud.energy


def earliest_finish_cloud(fleet: Fleet, tasks: TaskTable) -> np.ndarray:
    """Earliest-Finish over Cloud by brute force: every server's exact finish, lowest index on ties.

    Also checks on the way that :meth:`Cloud.earliest_starts` gives the scalar starts.
    """
    cloud = Cloud(fleet, t0=float(tasks.arrival[0]), record=False)
    out = np.empty(len(tasks), dtype=np.int64)
    for j in range(len(tasks)):
        cloud.advance(tasks.arrival[j])
        starts = [cloud.earliest_start(s, tasks.cpu[j]) for s in range(len(fleet))]
        assert cloud.earliest_starts(tasks.cpu[j]).tolist() == starts  # the vectorised form agrees
        finish = [starts[s] + tasks.length[j] / fleet.mips[s] for s in range(len(fleet))]
        out[j] = int(np.argmin(finish))  # argmin returns the first minimum: lowest index
        cloud.assign(j, tasks.arrival[j], tasks.cpu[j], tasks.length[j], tasks.deadline[j], int(out[j]))
    return out


def random_feasible(fleet: Fleet, tasks: TaskTable, seed: int) -> np.ndarray:
    """A uniformly random feasible server per task."""
    rng = np.random.default_rng(seed)
    feasible = fleet.capacity[None, :] + CPU_EPS >= tasks.cpu[:, None]
    return np.array([rng.choice(np.flatnonzero(row)) for row in feasible])


def assert_same(fleet: Fleet, tasks: TaskTable, assignment) -> tuple[np.ndarray, np.ndarray]:
    """Both simulators on one assignment: identical responses and energy; returns waits, responses."""
    s_c, f_c, e_c = replay_cloud(fleet, tasks, assignment)
    s_t, f_t, e_t = simulate_twin(fleet, tasks, assignment)
    assert not np.isnan(f_t).any(), "the twin left tasks unfinished"
    np.testing.assert_allclose(s_t - tasks.arrival, s_c - tasks.arrival, rtol=0, atol=1e-9)
    np.testing.assert_allclose(f_t - tasks.arrival, f_c - tasks.arrival, rtol=0, atol=1e-9)
    assert e_t == pytest.approx(e_c, rel=1e-9, abs=1e-9)
    return s_c - tasks.arrival, f_c - tasks.arrival


@pytest.fixture(scope="module")
def small_tasks() -> TaskTable:
    """About 3,300 tasks: the offline half of the default workload at 1% scale."""
    return synthetic_workload(WorkloadConfig(scale=0.01), seed=3).offline


@pytest.mark.parametrize("servers", [10, 50])
def test_random_assignment_agrees(small_tasks, servers):
    fleet = make_fleet(FleetConfig(servers=servers), seed=1)
    assert_same(fleet, small_tasks, random_feasible(fleet, small_tasks, seed=servers))


def test_earliest_finish_agrees(small_tasks):
    """The twin's own Earliest-Finish picks what brute force over Cloud picks, task by task."""
    fleet = make_fleet(FleetConfig(servers=30), seed=2)
    expected = earliest_finish_cloud(fleet, small_tasks)
    assignment, start, finish, energy = earliest_finish_twin(fleet, small_tasks)
    np.testing.assert_array_equal(assignment, expected)
    s_c, f_c, e_c = replay_cloud(fleet, small_tasks, expected)
    np.testing.assert_allclose(finish - small_tasks.arrival, f_c - small_tasks.arrival, rtol=0, atol=1e-9)
    np.testing.assert_allclose(start, s_c, rtol=0, atol=1e-9)
    assert energy == pytest.approx(e_c, rel=1e-9)


def test_policies_earliest_finish_agrees(small_tasks):
    """The study's Earliest-Finish policy (branch and bound over Cloud) matches the twin's."""
    policies = pytest.importorskip("ilets.agents.policies")
    fleet = make_fleet(FleetConfig(servers=20), seed=4)
    cloud = policies.schedule(small_tasks, fleet, policies.EarliestFinish())
    df = cloud.task_frame().sort_values("task")
    assignment, _, finish, energy = earliest_finish_twin(fleet, small_tasks)
    np.testing.assert_array_equal(df["server"].to_numpy(), assignment)
    np.testing.assert_allclose(df["finish"].to_numpy(), finish, rtol=0, atol=1e-9)
    assert energy == pytest.approx(cloud.energy, rel=1e-9)


@pytest.mark.slow  # ~2,900 tasks through both simulators and brute-force Earliest-Finish
def test_heavy_load_with_queues():
    """Three servers for ~2,900 tasks: long queues, head-of-line blocking everywhere."""
    wl = synthetic_workload(WorkloadConfig(scale=0.005), seed=5)
    tasks = TaskTable(*(np.concatenate([getattr(wl.offline, k), getattr(wl.online, k)])
                        for k in ("arrival", "cpu", "length", "deadline")))
    fleet = make_fleet(FleetConfig(servers=3), seed=0)
    wait, _ = assert_same(fleet, tasks, random_feasible(fleet, tasks, seed=0))
    assert (wait > 0).mean() > 0.5 and wait.max() > 10.0  # queues really formed
    # and with the policy in the loop
    assignment, start, finish, energy = earliest_finish_twin(fleet, tasks)
    s_c, f_c, e_c = replay_cloud(fleet, tasks, assignment)
    np.testing.assert_allclose(finish - tasks.arrival, f_c - tasks.arrival, rtol=0, atol=1e-9)
    assert energy == pytest.approx(e_c, rel=1e-9)
    np.testing.assert_array_equal(assignment, earliest_finish_cloud(fleet, tasks))


def test_infeasible_assignment_raises():
    fleet = Fleet(np.array([0.25, 1.0]), np.array([100.0, 100.0]), np.ones(2), np.ones(2))
    tasks = TaskTable(np.array([0.0]), np.array([0.5]), np.array([100.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="exceeds"):
        simulate_twin(fleet, tasks, np.array([0]))
    with pytest.raises(ValueError, match="entries"):
        simulate_twin(fleet, tasks, np.array([0, 1]))


# Tie-heavy random systems: round arrival gaps, lengths and speeds put arrivals exactly on
# finishes and several finishes and starts on one instant, the cases where event ordering
# could make the two simulators disagree.
@st.composite
def systems(draw):
    m = draw(st.integers(1, 4))
    capacity = draw(st.lists(st.sampled_from([0.25, 0.5, 1.0]), min_size=m, max_size=m))
    fleet = Fleet(np.array(capacity),
                  np.array(draw(st.lists(st.sampled_from([100.0, 200.0, 500.0]), min_size=m, max_size=m))),
                  np.array(draw(st.lists(st.floats(1.0, 100.0), min_size=m, max_size=m))),
                  np.array(draw(st.lists(st.floats(0.0, 300.0), min_size=m, max_size=m))))
    n = draw(st.integers(1, 30))
    gaps = draw(st.lists(st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0.0, 2.0)), min_size=n, max_size=n))
    cpu = [min(draw(st.one_of(st.sampled_from([0.125, 0.25, 0.5, 1.0]), st.floats(0.001, 1.0))), max(capacity))
           for _ in range(n)]
    length = draw(st.lists(st.one_of(st.sampled_from([100.0, 200.0, 500.0]), st.floats(10.0, 2000.0)),
                           min_size=n, max_size=n))
    tasks = TaskTable(np.cumsum(gaps), np.array(cpu), np.array(length), np.full(n, 5.0))
    assignment = np.array([draw(st.sampled_from([i for i in range(m) if capacity[i] + CPU_EPS >= c])) for c in cpu])
    return fleet, tasks, assignment


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(systems())
def test_agree_on_random_small_systems(system):
    fleet, tasks, assignment = system
    assert_same(fleet, tasks, assignment)
    chosen, _, finish, energy = earliest_finish_twin(fleet, tasks)
    np.testing.assert_array_equal(chosen, earliest_finish_cloud(fleet, tasks))
    _, f_c, e_c = replay_cloud(fleet, tasks, chosen)
    np.testing.assert_allclose(finish - tasks.arrival, f_c - tasks.arrival, rtol=0, atol=1e-9)
    assert energy == pytest.approx(e_c, rel=1e-9, abs=1e-9)
