"""Heuristics: each on a scenario where its choice is known; the shared replay loop."""

from __future__ import annotations

import numpy as np
import pytest

from ilets.agents.policies import (EarliestFinish, GreedyCost, LeastLoaded, MinEnergy, RandomPolicy,
                            RoundRobin, make_heuristic, schedule)
from ilets.config import HEURISTICS, FleetConfig, RewardConfig, WorkloadConfig
from ilets.simulator.cloud import Cloud, Fleet, make_fleet
from ilets.simulator.objective import Task, cost_of
from ilets.workloads.workload import synthetic_workload


def fleet4() -> Fleet:
    # server: 0 small+fast, 1 big+slow, 2 big+fast+hungry, 3 big+frugal+medium
    return Fleet(capacity=np.array([0.25, 1.0, 1.0, 1.0]), mips=np.array([2000.0, 500.0, 2000.0, 1000.0]),
                 p_idle=np.array([10.0, 40.0, 40.0, 40.0]), p_act=np.array([100.0, 100.0, 800.0, 50.0]))


def task(cpu=0.5, length=1000.0, arrival=0.0, deadline=10.0, index=0) -> Task:
    return Task(index, arrival, cpu, length, deadline)


def test_earliest_finish_prefers_the_fastest_free_server():
    cloud = Cloud(fleet4())
    t = task()
    mask = cloud.feasible(t.cpu)
    assert EarliestFinish().act(cloud, t, mask) == 2  # server 0 is fast but too small
    cloud.assign(0, 0.0, 1.0, 4000.0, 10.0, 2)  # server 2 now busy for 2 s with a full-CPU task
    assert EarliestFinish().act(cloud, t, mask) == 3  # 1 s on server 3 beats waiting 2 s + 0.5 s


def test_min_energy_takes_the_fewest_joules_among_servers_free_now():
    cloud = Cloud(fleet4())
    t = task()
    # joules: p_act/C * cpu * length/mips -> s1: 100*.5*2 = 100, s2: 800*.5*.5 = 200, s3: 50*.5*1 = 25
    assert MinEnergy().act(cloud, t, cloud.feasible(t.cpu)) == 3
    cloud.assign(0, 0.0, 1.0, 1000.0, 10.0, 3)  # s3 full now
    assert MinEnergy().act(cloud, t, cloud.feasible(t.cpu)) == 1


def test_least_loaded_balances_committed_cpu_per_capacity():
    cloud = Cloud(fleet4())
    cloud.assign(0, 0.0, 0.5, 1000.0, 10.0, 1)
    cloud.assign(1, 0.0, 0.3, 1000.0, 10.0, 2)
    t = task(cpu=0.2)
    # loads/capacity: s0 0, s1 .5, s2 .3, s3 0 -> s0 (lowest index among ties)
    assert LeastLoaded().act(cloud, t, cloud.feasible(t.cpu)) == 0
    big = task(cpu=0.5)
    assert LeastLoaded().act(cloud, big, cloud.feasible(big.cpu)) == 3


def test_round_robin_cycles_over_feasible_servers():
    cloud = Cloud(fleet4())
    rr = RoundRobin()
    t = task(cpu=0.5)  # server 0 infeasible
    assert [rr.act(cloud, t, cloud.feasible(t.cpu)) for _ in range(4)] == [1, 2, 3, 1]


def test_random_is_seeded_and_feasible():
    cloud = Cloud(fleet4())
    t = task(cpu=0.5)
    a = [RandomPolicy(seed=1).act(cloud, t, cloud.feasible(t.cpu)) for _ in range(20)]
    b = [RandomPolicy(seed=1).act(cloud, t, cloud.feasible(t.cpu)) for _ in range(20)]
    assert a == b and 0 not in a


def test_greedy_cost_is_the_argmin_of_the_exact_cost():
    fleet = make_fleet(FleetConfig(servers=12), seed=0)
    tasks = synthetic_workload(WorkloadConfig(scale=0.001), seed=0).online
    cfg = RewardConfig(deadline_penalty=0.5)
    greedy = GreedyCost(cfg)

    cloud = Cloud(fleet, t0=float(tasks.arrival[0]))
    for j in range(len(tasks)):
        t = Task(j, float(tasks.arrival[j]), float(tasks.cpu[j]), float(tasks.length[j]), float(tasks.deadline[j]))
        cloud.advance(t.arrival)
        mask = cloud.feasible(t.cpu)
        s = greedy.act(cloud, t, mask)
        costs = [cost_of(cloud, t, i, cloud.earliest_start(i, t.cpu), cfg) if mask[i] else np.inf
                 for i in range(len(fleet))]
        assert costs[s] == pytest.approx(min(costs))
        cloud.assign(j, t.arrival, t.cpu, t.length, t.deadline, s)


def test_vector_costs_equal_the_scalar_cost_on_every_server():
    from ilets.simulator.objective import costs

    fleet = make_fleet(FleetConfig(servers=15), seed=1)
    tasks = synthetic_workload(WorkloadConfig(scale=0.001), seed=1).online
    cfg = RewardConfig(deadline_penalty=0.3, include_execution=False)
    cloud = schedule(tasks.slice(0, 200), fleet, EarliestFinish())
    t = Task(0, cloud.now, 0.2, 2000.0, 2.0)
    starts = cloud.earliest_starts(t.cpu)
    vec = costs(cloud, t, starts, cfg)
    for s in range(len(fleet)):
        assert starts[s] == pytest.approx(cloud.earliest_start(s, t.cpu))
        assert vec[s] == pytest.approx(cost_of(cloud, t, s, starts[s], cfg))


@pytest.mark.parametrize("name", sorted(HEURISTICS))
def test_every_heuristic_schedules_every_task_once(name):
    fleet = make_fleet(FleetConfig(servers=20), seed=0)
    tasks = synthetic_workload(WorkloadConfig(scale=0.002), seed=0).online
    cloud = schedule(tasks, fleet, make_heuristic(name, seed=0))
    assert sorted(cloud.records["task"]) == list(range(len(tasks)))
    s = cloud.summary()
    assert s["tasks"] == len(tasks) and s["energy_kwh"] > 0


def test_informed_heuristics_beat_random_under_load():
    fleet = make_fleet(FleetConfig(servers=50), seed=0)
    tasks = synthetic_workload(WorkloadConfig(scale=0.01), seed=0).online
    resp = {n: schedule(tasks, fleet, make_heuristic(n, seed=0)).summary()["avg_response_s"]
            for n in ("random", "earliest-finish", "greedy-cost")}
    assert resp["earliest-finish"] < resp["random"] and resp["greedy-cost"] < resp["random"]


def test_unknown_heuristic_is_named():
    with pytest.raises(ValueError, match="unknown heuristic 'fifo'"):
        make_heuristic("fifo")
