"""Exact slot power, the committed future, the counterfactual baseline, the cloud's release."""

from __future__ import annotations

import numpy as np
import pytest

from ilets.agents.policies import EarliestFinish, GreedyCost, schedule
from ilets.config import FleetConfig, RunConfig, WorkloadConfig
from ilets.gridcommand.power import committed_profile, counterfactual, interval_energy, power_profile
from ilets.simulator.cloud import Cloud, make_fleet
from ilets.simulator.objective import tracking_term
from ilets.workloads.workload import load_workload

RUN = RunConfig(workload=WorkloadConfig(scale=0.002), fleet=FleetConfig(servers=8))


@pytest.fixture(scope="module")
def tiny():
    tasks = load_workload(RUN.workload, 0).online
    fleet = make_fleet(RUN.fleet, 0)
    return tasks, fleet


def test_interval_energy_matches_a_direct_overlap_sum():
    rng = np.random.default_rng(1)
    edges = np.sort(np.concatenate([[0.0, 10.0], rng.uniform(0, 10, 13)]))
    s = rng.uniform(-2, 11, 200)
    f = s + rng.exponential(2.0, 200)
    w = rng.uniform(0, 50, 200)
    got = interval_energy(s, f, w, edges)
    want = np.array([sum(wi * max(0.0, min(fi, b) - max(si, a)) for si, fi, wi in zip(s, f, w))
                     for a, b in zip(edges[:-1], edges[1:])])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)


def test_power_profile_by_hand(toy_fleet):
    # server 0: act_per_cpu 200 W per CPU; a 0.5-CPU task on [1, 3) draws 100 W
    records = {"task": [0], "server": [0], "start": [1.0], "finish": [3.0]}
    p = power_profile(records, toy_fleet, [0.0, 2.0, 4.0], np.array([0.5]))
    idle = toy_fleet.p_idle.sum()
    np.testing.assert_allclose(p, [idle + 50.0, idle + 50.0])
    with pytest.raises(ValueError, match="cpu"):
        power_profile(records, toy_fleet, [0.0, 1.0], np.array([]))
    with pytest.raises(ValueError, match="edges"):
        power_profile(records, toy_fleet, [0.0, 0.0], np.array([0.5]))


@pytest.mark.parametrize("policy", [EarliestFinish(), GreedyCost()])
def test_power_profile_integrates_to_the_clouds_energy(tiny, policy):
    tasks, fleet = tiny
    cloud = schedule(tasks, fleet, policy)
    whole = np.array([cloud.t_start, cloud.now])
    total = power_profile(cloud, fleet, whole, tasks.cpu)[0] * (whole[1] - whole[0])
    assert total == pytest.approx(cloud.energy, rel=1e-9)
    # any slot grid over the run gives the same energy, slot by slot summed
    edges = np.concatenate([[cloud.t_start], np.sort(np.random.default_rng(0).uniform(cloud.t_start, cloud.now, 40)),
                            [cloud.now]])
    slots = power_profile(cloud, fleet, edges, tasks.cpu)
    assert (slots * np.diff(edges)).sum() == pytest.approx(cloud.energy, rel=1e-9)
    assert np.all(slots >= fleet.p_idle.sum() - 1e-9) and np.all(slots <= fleet.max_power + 1e-9)


def test_profile_matches_the_live_power_between_events(tiny):
    tasks, fleet = tiny
    cloud = Cloud(fleet, t0=float(tasks.arrival[0]))
    for j in range(60):
        t = float(tasks.arrival[j])
        cloud.advance(t)
        s = int(np.argmin(cloud.earliest_starts(tasks.cpu[j]) + tasks.length[j] / fleet.mips))
        cloud.assign(j, t, tasks.cpu[j], tasks.length[j], tasks.deadline[j], s)
    # the power over a tiny slot right after now is the cloud's power now (no event inside)
    nxt = min(e[0] for e in cloud._events)
    eps = (nxt - cloud.now) / 4
    p = power_profile(cloud, fleet, [cloud.now, cloud.now + eps], tasks.cpu)[0]
    assert p == pytest.approx(cloud.power, rel=1e-12)


def test_committed_profile_is_the_future_of_what_is_assigned(tiny):
    tasks, fleet = tiny
    cloud = Cloud(fleet, t0=float(tasks.arrival[0]))
    k = 150
    for j in range(k):
        cloud.advance(float(tasks.arrival[j]))
        s = int(np.argmin(cloud.earliest_starts(tasks.cpu[j]) + tasks.length[j] / fleet.mips))
        cloud.assign(j, float(tasks.arrival[j]), tasks.cpu[j], tasks.length[j], tasks.deadline[j], s)
    now = cloud.now
    edges = np.linspace(now - 1.0, now + 8.0, 37)
    future = committed_profile(cloud, edges)
    past = edges[1:] <= now
    assert np.all(np.isnan(future[past])) and not np.any(np.isnan(future[~past]))
    # finish the same tasks (no new ones) and compare the realised power after now
    done = cloud.clone(record=True)
    done.records = {key: list(v) for key, v in cloud.records.items()}
    done.run_to_completion()
    lo = np.maximum(edges[:-1], now)
    for i in np.flatnonzero(~past):
        real = power_profile(done, fleet, [lo[i], edges[i + 1]], tasks.cpu)[0]
        assert future[i] == pytest.approx(real, rel=1e-9)
    assert cloud.now == now  # reading the future moves nothing


def test_counterfactual_is_the_reference_run_memoised_and_read_only(tiny):
    tasks, fleet = tiny
    edges = np.linspace(float(tasks.arrival[0]), float(tasks.arrival[0]) + 12.0, 25)
    cf = counterfactual(RUN, tasks, fleet, edges)
    plain = schedule(tasks, fleet, EarliestFinish())
    assert cf.summary == plain.summary()
    np.testing.assert_array_equal(cf.power_w, power_profile(plain, fleet, edges, tasks.cpu))
    again = counterfactual(RUN, tasks, fleet, edges)
    assert again.records is cf.records  # the run is memoised, not repeated
    with pytest.raises(ValueError):
        cf.power_w[0] = 0.0
    with pytest.raises(ValueError):
        cf.records["start"][0] = 0.0
    other = counterfactual(RUN, tasks, fleet, edges, reference="least-loaded")
    assert other.summary != cf.summary
    assert cf.baseline_at(edges[0]) == cf.power_w[0]
    assert cf.baseline_at(edges[-1] + 100.0) == cf.power_w[-1]


# --- the cloud's release keyword -----------------------------------------------------------------

def test_release_counts_the_response_from_the_first_arrival(toy_fleet):
    cloud = Cloud(toy_fleet, t0=0.0)
    start, finish = cloud.assign(0, 1.0, 0.5, 1000.0, 5.0, 0, release=3.0)
    assert cloud.now == 3.0 and start == 3.0 and finish == 4.0
    df = cloud.task_frame()
    assert df["arrival"].iloc[0] == 1.0 and df["response"].iloc[0] == 3.0 and df["wait"].iloc[0] == 2.0
    with pytest.raises(ValueError, match="release 2.0 .*before.*clock"):
        cloud.assign(1, 1.5, 0.1, 100.0, 5.0, 0, release=2.0)
    with pytest.raises(ValueError, match="before its arrival"):
        cloud.assign(2, 4.0, 0.1, 100.0, 5.0, 0, release=3.5)


def test_release_none_is_the_old_path(toy_fleet):
    a, b = Cloud(toy_fleet), Cloud(toy_fleet)
    for j, (t, s) in enumerate([(0.0, 0), (0.1, 0), (0.2, 1), (0.2, 2), (0.5, 0)]):
        assert a.assign(j, t, 0.2, 800.0, 5.0, s) == b.assign(j, t, 0.2, 800.0, 5.0, s, release=None)
    with pytest.raises(ValueError, match="arrival 0.1 is before"):
        a.assign(9, 0.1, 0.3, 800.0, 5.0, 0)


# --- the tracking term --------------------------------------------------------------------------

def test_tracking_term_is_off_by_default_and_nan_targets_cost_nothing():
    assert tracking_term(900.0, 1000.0, 2000.0) == 0.0
    assert tracking_term(900.0, 1000.0, 2000.0, weight=2.0) == pytest.approx(0.1)
    np.testing.assert_allclose(tracking_term(np.array([900.0, 1100.0, 5.0]), np.array([1000.0, 1000.0, np.nan]),
                                             1000.0, 1.0), [0.1, 0.1, 0.0])
    with pytest.raises(ValueError, match="max_power"):
        tracking_term(1.0, 1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="weight"):
        tracking_term(1.0, 1.0, 1.0, -1.0)
