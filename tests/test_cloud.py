"""Tests of the event-driven simulator :mod:`ilets.simulator.cloud`.

Three small scenarios are worked out by hand (every wait, response, success and joule in
the comments); property tests then check the model's invariants on random small fleets,
workloads and assignments, including that every start is the *earliest* the FCFS model
allows (so together with feasibility they pin the start times down completely).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ilets.config import FleetConfig
from ilets.simulator.cloud import CPU_EPS, Cloud, Fleet, make_fleet


def fleet_of(capacity, mips, p_idle, p_act) -> Fleet:
    """A Fleet from plain lists."""
    return Fleet(np.array(capacity, float), np.array(mips, float), np.array(p_idle, float), np.array(p_act, float))


def replay(cloud: Cloud, tasks, servers) -> list[tuple[float, float]]:
    """Assign (arrival, cpu, length, deadline) tasks in order; returns (start, finish) each."""
    out = []
    for j, ((a, c, length, d), s) in enumerate(zip(tasks, servers)):
        out.append(cloud.assign(j, a, c, length, d, s))
    return out


# --- hand-computed scenarios ----------------------------------------------------------------

def test_head_of_line_blocking_and_exact_fit():
    """One server, C=1.0, 100 MIPS, power 100 W idle + 200 W * used/C.

    T0 t=0  cpu .625 len 1000 -> exec 10; empty server: start 0, finish 10.
    T1 t=1  cpu .5   len 500  -> exec 5; .625+.5 > 1: waits for T0, start 10, finish 15.
    T2 t=2  cpu .25  len 200  -> exec 2; would fit now (.875) but T1 is ahead (head-of-line):
            start 10 (held then: T1 .5 -> .75), finish 12.
    T3 t=3  cpu .25  len 100  -> exec 1; behind T2; at 10 held .75 + .25 = 1.0 fits exactly:
            start 10, finish 11.
    waits 0, 9, 8, 7; responses 10, 14, 10, 8.
    deadlines 10, 12, 10, 5 -> success T, F, T (10 <= 10), F.
    Power: [0,10) used .625 -> 225 W: 2250 J; [10,11) used 1.0 -> 300 W: 300 J;
           [11,12) .75 -> 250 W: 250 J; [12,15) .5 -> 200 W: 600 J.  Total 3400 J.
    Closed form: idle 100*15 = 1500 + 200*(.625*10 + .5*5 + .25*2 + .25*1) = 1900 -> 3400.
    """
    cloud = Cloud(fleet_of([1.0], [100.0], [100.0], [200.0]))
    tasks = [(0.0, 0.625, 1000.0, 10.0), (1.0, 0.5, 500.0, 12.0), (2.0, 0.25, 200.0, 10.0), (3.0, 0.25, 100.0, 5.0)]
    got = replay(cloud, tasks, [0, 0, 0, 0])
    assert got == [(0.0, 10.0), (10.0, 15.0), (10.0, 12.0), (10.0, 11.0)]
    # Mid-run state: at 10.5 all three waiting tasks run, the server is exactly full.
    cloud.advance(10.5)
    assert cloud.used[0] == pytest.approx(1.0, abs=1e-12)
    assert cloud.power == pytest.approx(300.0, rel=1e-12)
    assert cloud.energy == pytest.approx(2250.0 + 150.0, rel=1e-12)
    assert cloud.run_to_completion() == 15.0
    df = cloud.task_frame()
    assert df["wait"].tolist() == [0.0, 9.0, 8.0, 7.0]
    assert df["response"].tolist() == [10.0, 14.0, 10.0, 8.0]
    assert df["success"].tolist() == [True, False, True, False]
    assert cloud.energy == pytest.approx(3400.0, rel=1e-12)
    s = cloud.summary()
    assert s["tasks"] == 4
    assert s["avg_response_s"] == pytest.approx(42.0 / 4)
    assert s["avg_wait_s"] == pytest.approx(24.0 / 4)
    assert s["success_rate"] == pytest.approx(0.5)
    assert s["energy_kwh"] == pytest.approx(3400.0 / 3.6e6, rel=1e-12)
    assert s["makespan_s"] == 15.0


def test_two_servers_concurrency_and_idle_gap():
    """S0: C=.5, 200 MIPS, 50 W idle + 100 W at full use (200 W per CPU unit);
    S1: C=1.0, 100 MIPS, 80 W idle + 160 W at full use (160 W per CPU unit). Idle total 130 W.

    T0 t=0   cpu .25 len 400 -> S0, exec 2:  [0, 2]
    T1 t=.5  cpu .25 len 200 -> S0, exec 1, fits beside T0 (.5 = C): [.5, 1.5]
    T2 t=1   cpu .5  len 300 -> S1, exec 3:  [1, 4]
    (everything idle from 4 to 10)
    T3 t=10  cpu .5  len 200 -> S0, exec 1:  [10, 11]
    T4 t=10  cpu 1.0 len 100 -> S1, exec 1:  [10, 11]   (same arrival time as T3)
    No waits; responses 2, 1, 3, 1, 1; deadline 2 each -> only T2 misses.
    Energy by interval:
      [0,.5)  130 + 200*.25           = 180 W * .5 =  90
      [.5,1)  130 + 200*.5            = 230 W * .5 = 115
      [1,1.5) 130 + 200*.5 + 160*.5   = 310 W * .5 = 155
      [1.5,2) 130 + 200*.25 + 160*.5  = 260 W * .5 = 130
      [2,4)   130 + 160*.5            = 210 W * 2  = 420
      [4,10)  130                     = 130 W * 6  = 780
      [10,11) 130 + 200*.5 + 160*1    = 390 W * 1  = 390      total 2080 J
    Closed form: 130*11 = 1430 + (100 + 50 + 240 + 100 + 160) = 650 -> 2080.
    """
    cloud = Cloud(fleet_of([0.5, 1.0], [200.0, 100.0], [50.0, 80.0], [100.0, 160.0]))
    tasks = [(0.0, 0.25, 400.0, 2.0), (0.5, 0.25, 200.0, 2.0), (1.0, 0.5, 300.0, 2.0),
             (10.0, 0.5, 200.0, 2.0), (10.0, 1.0, 100.0, 2.0)]
    got = replay(cloud, tasks, [0, 0, 1, 0, 1])
    assert got == [(0.0, 2.0), (0.5, 1.5), (1.0, 4.0), (10.0, 11.0), (10.0, 11.0)]
    # In the idle gap only idle power is drawn and nothing is in use.
    assert cloud.now == 10.0
    assert cloud.energy == pytest.approx(90 + 115 + 155 + 130 + 420 + 780, rel=1e-12)
    cloud.run_to_completion()
    df = cloud.task_frame()
    assert df["wait"].tolist() == [0.0] * 5
    assert df["response"].tolist() == [2.0, 1.0, 3.0, 1.0, 1.0]
    assert df["success"].tolist() == [True, True, False, True, True]
    assert cloud.energy == pytest.approx(2080.0, rel=1e-12)
    assert cloud.active_energy == pytest.approx(650.0, rel=1e-12)
    assert cloud.summary()["makespan_s"] == 11.0
    assert cloud.n_tasks.tolist() == [0, 0] and cloud.used.tolist() == [0.0, 0.0]


def test_finish_frees_cpu_before_start_at_same_instant():
    """One server, C=1.0, 100 MIPS, 10 W idle + 20 W at full use.

    T0 t=0   cpu 1.0  len 500 -> [0, 5]
    T1 t=5   cpu 1.0  len 200 -> arrives exactly as T0 finishes; the finish frees the CPU
             first, so no wait: [5, 7]
    T2 t=6   cpu .5   len 100 -> server full: waits for T1, [7, 8], wait 1
    T3 t=6.5 cpu .5   len 300 -> fits beside T2 at 7: [7, 10], wait .5
    T4 t=7.5 cpu .75  len 100 -> full until 8; at 8 T2 leaves, .5 + .75 > 1; at 10 T3 leaves:
             [10, 11], wait 2.5
    T5 t=8   cpu .25  len 100 -> arrives exactly as T2 finishes and would fit (.5 + .25), but
             T4 is ahead (head-of-line): at 10 held .75 + .25 = 1.0 fits: [10, 11], wait 2
    responses 5, 2, 2, 3.5, 3.5, 3; deadline 3 each -> F, T, T, F, F, T.
    Energy: [0,5) 30 W 150 J; [5,7) 30 W 60 J; [7,8) 30 W 30 J; [8,10) 20 W 40 J;
    [10,11) 30 W 30 J -> 310 J.  Closed form: 10*11 + 20*(5 + 2 + .5 + 1.5 + .75 + .25) = 310.
    """
    cloud = Cloud(fleet_of([1.0], [100.0], [10.0], [20.0]))
    tasks = [(0.0, 1.0, 500.0, 3.0), (5.0, 1.0, 200.0, 3.0), (6.0, 0.5, 100.0, 3.0),
             (6.5, 0.5, 300.0, 3.0), (7.5, 0.75, 100.0, 3.0), (8.0, 0.25, 100.0, 3.0)]
    got = replay(cloud, tasks, [0] * 6)
    assert got == [(0.0, 5.0), (5.0, 7.0), (7.0, 8.0), (7.0, 10.0), (10.0, 11.0), (10.0, 11.0)]
    cloud.run_to_completion()
    df = cloud.task_frame()
    assert df["wait"].tolist() == [0.0, 0.0, 1.0, 0.5, 2.5, 2.0]
    assert df["response"].tolist() == [5.0, 2.0, 2.0, 3.5, 3.5, 3.0]
    assert df["success"].tolist() == [False, True, True, False, False, True]
    assert cloud.energy == pytest.approx(310.0, rel=1e-12)


def test_energy_counts_from_t0():
    """Idle power is drawn from ``t0``, not from the first arrival.

    One server 100 W idle + 100 W at full use (C=1, 100 MIPS), t0 = -4, one task at 0 with
    cpu .5 and 100 MI -> [0, 1]. Energy: 4 s * 100 W + 1 s * 150 W = 550 J; makespan 5 s.
    """
    cloud = Cloud(fleet_of([1.0], [100.0], [100.0], [100.0]), t0=-4.0)
    assert cloud.assign(0, 0.0, 0.5, 100.0, 1.0, 0) == (0.0, 1.0)
    cloud.run_to_completion()
    assert cloud.energy == pytest.approx(550.0, rel=1e-12)
    assert cloud.summary()["makespan_s"] == 5.0


# --- errors ---------------------------------------------------------------------------------

def test_task_larger_than_server_raises():
    cloud = Cloud(fleet_of([0.5, 1.0], [100.0, 100.0], [1.0, 1.0], [1.0, 1.0]))
    with pytest.raises(ValueError, match="exceeds"):
        cloud.assign(0, 0.0, 0.75, 100.0, 1.0, 0)
    assert cloud.n_tasks.tolist() == [0, 0]  # nothing was committed
    assert cloud.earliest_start(0, 0.75) == float("inf")
    cloud.assign(0, 0.0, 0.75, 100.0, 1.0, 1)  # the big server takes it
    cloud.assign(1, 0.0, 0.5 + CPU_EPS / 2, 100.0, 1.0, 0)  # within tolerance of capacity


def test_time_cannot_move_backwards():
    cloud = Cloud(fleet_of([1.0], [100.0], [1.0], [1.0]))
    cloud.assign(0, 5.0, 0.5, 100.0, 1.0, 0)
    with pytest.raises(ValueError, match="back"):
        cloud.advance(4.0)
    cloud.advance(5.0)  # staying put is fine


def test_fleet_validation():
    with pytest.raises(ValueError):
        fleet_of([], [], [], [])
    with pytest.raises(ValueError):
        fleet_of([1.0, 1.0], [100.0], [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError):
        fleet_of([0.0], [100.0], [1.0], [1.0])
    with pytest.raises(ValueError):
        make_fleet(FleetConfig(servers=0), 0)


# --- make_fleet -----------------------------------------------------------------------------

@pytest.mark.parametrize("m", [50, 100, 200])
def test_make_fleet_shape_ranges_and_determinism(m):
    cfg = FleetConfig(servers=m)
    a, b = make_fleet(cfg, 7), make_fleet(cfg, 7)
    for name in ("capacity", "mips", "p_idle", "p_act"):
        arr = getattr(a, name)
        assert arr.shape == (m,) and arr.dtype == np.float64
        assert np.array_equal(arr, getattr(b, name)), f"{name} differs for the same seed"
    assert set(np.unique(a.capacity)) <= set(cfg.capacity_levels)
    assert a.mips.min() >= cfg.mips[0] and a.mips.max() <= cfg.mips[1]
    assert np.allclose((a.mips - cfg.mips[0]) % 50.0, 0.0)  # steps of 50 MIPS
    size = a.capacity / 0.5  # power ranges are per 0.5 of capacity
    assert np.all(a.p_idle >= cfg.idle_w[0] * size) and np.all(a.p_idle <= cfg.idle_w[1] * size)
    assert np.all(a.p_act >= cfg.active_w[0] * size) and np.all(a.p_act <= cfg.active_w[1] * size)
    assert a.max_power == pytest.approx(a.p_idle.sum() + a.p_act.sum())
    c = make_fleet(cfg, 8)
    assert not np.array_equal(a.mips, c.mips) or not np.array_equal(a.p_idle, c.p_idle)


# --- properties on random small systems -----------------------------------------------------

# Round lengths, speeds and arrival gaps make exact ties (arrival at a finish, several
# finishes at once, a start at a finish) common; random floats cover everything else.
_round_cpu = st.sampled_from([0.0625, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0])
_any_cpu = st.floats(0.001, 1.0, allow_nan=False)


@st.composite
def systems(draw):
    """(fleet, tasks, servers): a fleet of 1-4 servers and up to 25 feasible assignments."""
    m = draw(st.integers(1, 4))
    capacity = draw(st.lists(st.sampled_from([0.25, 0.5, 1.0]), min_size=m, max_size=m))
    mips = draw(st.lists(st.sampled_from([100.0, 250.0, 500.0, 1000.0]), min_size=m, max_size=m))
    p_idle = draw(st.lists(st.floats(1.0, 200.0), min_size=m, max_size=m))
    p_act = draw(st.lists(st.floats(0.0, 300.0), min_size=m, max_size=m))
    fleet = fleet_of(capacity, mips, p_idle, p_act)
    n = draw(st.integers(1, 25))
    gaps = draw(st.lists(st.one_of(st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.floats(0.0, 3.0)), min_size=n, max_size=n))
    arrival = np.cumsum(gaps).tolist()
    tasks, servers = [], []
    for j in range(n):
        cpu = min(draw(st.one_of(_round_cpu, _any_cpu)), max(capacity))
        length = draw(st.one_of(st.sampled_from([100.0, 250.0, 500.0, 1000.0]), st.floats(10.0, 3000.0)))
        deadline = draw(st.floats(0.1, 10.0))
        feasible = [i for i in range(m) if capacity[i] + CPU_EPS >= cpu]
        servers.append(draw(st.sampled_from(feasible)))
        tasks.append((arrival[j], cpu, length, deadline))
    return fleet, tasks, servers


def _held(tasks, servers, times, s, t, before=None):
    """CPU held on server ``s`` at instant ``t`` (finishes at ``t`` already freed)."""
    ids = range(len(times)) if before is None else range(before)
    return sum(tasks[i][1] for i in ids if servers[i] == s and times[i][0] <= t < times[i][1])


_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(systems())
def test_model_invariants(system):
    fleet, tasks, servers = system
    cloud = Cloud(fleet)
    times = []
    for j, ((a, c, length, d), s) in enumerate(zip(tasks, servers)):
        cloud.advance(a)
        # Every earlier task has finished exactly when the clock passed its finish: the
        # live counts and CPU in use match the finished/running sets implied by the times.
        for k in range(len(fleet)):
            mine = [i for i in range(j) if servers[i] == k]
            assert cloud.n_tasks[k] == sum(1 for i in mine if times[i][1] > a)
            assert cloud.used[k] == pytest.approx(_held(tasks, servers, times, k, a), abs=1e-9)
        times.append(cloud.assign(j, a, c, length, d, s))
    makespan = cloud.run_to_completion()
    df = cloud.task_frame()

    # every task recorded once, and the live state is empty after completion
    assert sorted(df["task"]) == list(range(len(tasks)))
    assert cloud.n_tasks.sum() == 0 and not cloud.used.any() and cloud.load.sum() == pytest.approx(0.0, abs=1e-9)
    assert makespan == max(f for _, f in times)

    for j, ((a, c, length, d), s) in enumerate(zip(tasks, servers)):
        start, finish = times[j]
        execution = length / fleet.mips[s]
        assert start >= a
        assert finish - start == pytest.approx(execution, rel=1e-12)
        assert finish - a >= execution * (1 - 1e-12)  # response >= execution
        earlier = [i for i in range(j) if servers[i] == s]
        if earlier:
            assert start >= times[earlier[-1]][0]  # FCFS: starts in assignment order
        # Feasible: at its start, the tasks running on the server (it included) fit.
        assert _held(tasks, servers, times, s, start) <= fleet.capacity[s] + CPU_EPS + 1e-12
        # Earliest: at every earlier instant it could have started (its arrival, the start
        # of the task ahead, and the finishes in between) it did not fit.
        t0 = max([a] + [times[i][0] for i in earlier])
        for t in sorted({t0} | {times[i][1] for i in earlier if t0 < times[i][1] < start}):
            if t < start:
                held = _held(tasks, servers, times, s, t, before=j)
                assert held + c > fleet.capacity[s] + CPU_EPS - 1e-12, (j, t, held, c)

    # energy: at least idle power over the run, and exactly idle + active work
    span = makespan - cloud.t_start
    idle = float(fleet.p_idle.sum())
    assert cloud.energy >= idle * span * (1 - 1e-12)
    active = sum(fleet.p_act[s] / fleet.capacity[s] * c * (f - st_) for (a, c, _, _), s, (st_, f)
                 in zip(tasks, servers, times))
    assert cloud.energy == pytest.approx(idle * span + active, rel=1e-9, abs=1e-9)
    assert cloud.active_energy == pytest.approx(active, rel=1e-9, abs=1e-9)


@_settings
@given(systems(), st.data())
def test_clone_is_independent(system, data):
    fleet, tasks, servers = system
    k = data.draw(st.integers(0, len(tasks)), label="split")
    original = Cloud(fleet)
    replay(original, tasks[:k], servers[:k])

    def snapshot(c: Cloud):
        return (c.now, c.energy, c.active_energy, c.power, c.used.tolist(), c.n_tasks.tolist(), c.load.tolist(),
                c.last_start.tolist(), c.drain.tolist(), [c.committed(s) for s in range(len(fleet))],
                {key: list(v) for key, v in c.records.items()})

    before = snapshot(original)
    clone = original.clone()
    rest = []
    for j in range(k, len(tasks)):
        a, c, length, d = tasks[j]
        rest.append(clone.assign(j, a, c, length, d, servers[j]))
    clone.run_to_completion()
    assert snapshot(original) == before

    # The original, continued the same way, ends where the clone did.
    again = [original.assign(j, *tasks[j], servers[j]) for j in range(k, len(tasks))]
    original.run_to_completion()
    assert again == rest
    assert original.energy == pytest.approx(clone.energy, rel=1e-12)
    assert original.now == clone.now


@_settings
@given(systems())
def test_earliest_start_predicts_assign(system):
    """What ``earliest_start`` promises is what ``assign`` then does (policies rely on it),
    and ``earliest_starts`` (all servers at once, from cached profiles) says the same, also
    on a clone and for a larger request that only some servers can hold."""
    fleet, tasks, servers = system
    cloud = Cloud(fleet)
    for j, ((a, c, length, d), s) in enumerate(zip(tasks, servers)):
        cloud.advance(a)
        promised = [cloud.earliest_start(i, c) for i in range(len(fleet))]
        assert cloud.earliest_starts(c).tolist() == promised
        big = min(1.0, 2 * c)
        assert cloud.clone().earliest_starts(big).tolist() == [cloud.earliest_start(i, big) for i in range(len(fleet))]
        start, _ = cloud.assign(j, a, c, length, d, s)
        assert start == promised[s]


def test_earliest_starts_with_deep_queues():
    """Profiles widen past their initial width when queues grow long (heavy load)."""
    fleet = fleet_of([1.0, 0.5, 0.25], [100.0, 200.0, 400.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    rng = np.random.default_rng(0)
    cloud = Cloud(fleet)
    t = 0.0
    for j in range(300):
        t += float(rng.exponential(0.05))
        c = float(rng.choice([0.0625, 0.1, 0.25, 0.0006247, 0.01874]))
        cloud.advance(t)
        starts = cloud.earliest_starts(c)
        assert starts.tolist() == [cloud.earliest_start(i, c) for i in range(3)]
        cloud.assign(j, t, c, float(rng.uniform(500, 3000)), 1.0, int(rng.integers(3)))
    assert cloud.n_tasks.max() > 20  # queues really were deep
