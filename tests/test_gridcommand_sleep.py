"""The sleep lever (``sleep_fraction < 1``): idle servers sleep during a cut, as far as the power
is above the target; a task placed on a sleeping server waits for its wake-up; the saving is
charged to the slot tracker and taken off the scored power and the energy, exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ilets.config import ConfigError, FleetConfig
from ilets.gridcommand.config import load_gridcommand_config
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts.ladder import make_expert
from ilets.gridcommand.metrics import tracking_metrics
from ilets.gridcommand.sleep import SleepLedger
from ilets.simulator.cloud import Cloud, make_fleet

#: the smoke episode (10 servers, one 1.5-s down event) with a short timeout and wake-up
SLEEP = {"sleep_fraction": 0.1, "sleep_after_s": 0.1, "wake_s": 0.3}


def _run(env: GridCommandEnv, expert: str = "lyapunov", seed: int = 0):
    """One episode with an expert: the placements' infos and the final info."""
    policy = make_expert(expert)
    env.reset(seed=seed)
    policy.reset(seed)
    steps, done, info = [], False, {}
    while not done:
        before = None if env.sleep is None else env.sleep.asleep.copy()
        _, _, term, trunc, info = env.step(policy.act(env))
        steps.append((before, info))
        done = term or trunc
    return steps, info


# --- the ledger ------------------------------------------------------------------------------

def test_the_ledger_sleeps_timed_out_servers_inside_down_windows_only():
    ledger = SleepLedger(np.array([10.0, 10.0, 10.0]), [(1.0, 3.0)], after_s=0.5, wake_s=0.25)
    drain = np.array([0.0, 2.0, 9.0])  # idle since 0, busy to 2, busy past the event
    assert ledger.advance(1.2, drain) == []  # the window started at 1: nobody timed out yet
    segs = ledger.advance(1.8, drain)
    assert segs == [(0, 1.5, 1.8)]  # server 0 fell asleep at start + timeout, charged to now
    assert ledger.asleep.tolist() == [True, False, False]
    segs = ledger.advance(4.0, drain)  # the event ends at 3: every sleeper wakes then
    assert sorted(segs) == [(0, 1.8, 3.0), (1, 2.5, 3.0)]
    assert not ledger.asleep.any()
    assert ledger.ready[0] == ledger.ready[1] == 3.25
    assert ledger.saved_j() == pytest.approx(10.0 * (1.5 + 0.5))
    edges = np.array([1.0, 2.0, 3.0, 4.0])
    assert ledger.profile(edges) @ np.diff(edges) == pytest.approx(ledger.saved_j())
    with pytest.raises(ValueError, match="back"):
        ledger.advance(3.0, drain)


def test_the_ledger_sleeps_only_as_many_as_the_excess_covers_longest_idle_first():
    ledger = SleepLedger(np.array([10.0, 10.0, 10.0]), [(0.0, 5.0)], after_s=0.5, wake_s=0.25)
    drain = np.array([0.4, 0.1, 0.2])
    ledger.advance(2.0, drain, excess_w=25.0)
    assert ledger.asleep.tolist() == [False, True, True]  # the two longest idle; a third would overshoot
    assert ledger.wake(1, 2.5) == 2.75 and not ledger.asleep[1]
    assert ledger.wake(0, 2.5) == -math.inf  # an awake server: nothing to wait for
    ledger.advance(2.6, drain, excess_w=0.0)  # at or below the target: nobody more falls asleep
    assert ledger.asleep.tolist() == [False, False, True]


def test_a_hold_raises_the_fcfs_barrier_and_never_lowers_it():
    fleet = make_fleet(FleetConfig(servers=3), 0)
    cloud = Cloud(fleet, t0=0.0)
    cloud.hold(1, 0.7)
    cloud.hold(1, 0.2)
    assert cloud.earliest_start(1, 0.1) == 0.7
    assert cloud.earliest_starts(0.1).tolist() == [0.0, 0.7, 0.0]
    start, _ = cloud.assign(0, 0.0, 0.1, 100.0, 5.0, 1)
    assert start == 0.7
    with pytest.raises(ValueError, match="finite"):
        cloud.hold(0, math.inf)


# --- the environment ---------------------------------------------------------------------------

def test_with_the_lever_off_nothing_sleeps_and_the_episode_is_unchanged():
    plain = GridCommandEnv(load_gridcommand_config("smoke"))
    off = GridCommandEnv(load_gridcommand_config("smoke", sleep_after_s=0.1, wake_s=0.3))
    assert plain.sleep is None and off.sleep is None
    a, b = _run(plain)[1]["final"], _run(off)[1]["final"]
    assert a == b and "sleeps" not in a


def test_sleep_saves_energy_and_the_tracker_the_metrics_and_the_energy_agree():
    env = GridCommandEnv(load_gridcommand_config("smoke", **SLEEP))
    steps, last = _run(env)
    final = last["final"]
    ledger, tracker = env.sleep, env.tracker
    assert ledger is not None and tracker is not None
    assert final["sleeps"] > 0 and final["sleep_saved_j"] > 0
    # every sleep lies inside the down event
    (cmd,) = env.schedule
    for _, a, b in ledger.log:
        assert cmd.start_s <= a < b <= cmd.end_s
    # the rewards' tracking costs telescope to the scored slots' error, sleep included
    power = env.realised_profile()
    np.testing.assert_allclose(tracker.committed_power(), power[tracker.slot], rtol=1e-9)
    assert final["tracking_cost"] == pytest.approx(sum(tracker.cost()), rel=1e-9)
    # energy: the cloud's less the saving, and the slot profile integrates to it
    assert final["energy_kwh"] == pytest.approx((env.cloud.energy - ledger.saved_j()) / 3.6e6, rel=1e-12)
    metrics = tracking_metrics(env)
    assert metrics["energy_kwh"] == pytest.approx(final["energy_kwh"], rel=1e-12)
    span = np.array([env.cloud.t_start, max(env.cloud.now, float(env.slot_edges[-1]))])
    joules = float(env.realised_profile(span)[0]) * (span[1] - span[0])
    idle_after = float(env.fleet.p_idle.sum()) * (span[1] - env.cloud.now)  # the profile's tail past the last finish
    assert joules == pytest.approx(env.cloud.energy - ledger.saved_j() + idle_after, rel=1e-9)


def test_a_task_placed_on_a_sleeping_server_waits_for_its_wake_up():
    env = GridCommandEnv(load_gridcommand_config("smoke", **SLEEP))
    policy = make_expert("lyapunov")
    env.reset(seed=0)
    policy.reset(0)
    woken = 0
    done = False
    while not done:
        a = policy.act(env)
        s, _ = env.decode(a) if a != env.defer_action else (-1, 0)
        asleep = s >= 0 and bool(env.sleep.asleep[s])
        now = env.now
        if asleep:  # every start rule sees the wake-up before the placement
            assert env.cloud.earliest_start(s, env.current_task.cpu) >= now + env.config.wake_s
        _, _, term, trunc, info = env.step(a)
        if asleep and not info["infeasible"]:
            woken += 1
            assert info["start"] >= now + env.config.wake_s - 1e-12
            assert not env.sleep.asleep[s]
        done = term or trunc
    assert woken > 0  # the episode wakes servers, so the checks above ran


def test_sleep_lets_the_envelope_reach_deeper_and_is_deterministic():
    plain = GridCommandEnv(load_gridcommand_config("smoke"))
    lever = GridCommandEnv(load_gridcommand_config("smoke", **SLEEP))
    assert lever.envelope[0].reachable_depth > plain.envelope[0].reachable_depth
    again = GridCommandEnv(load_gridcommand_config("smoke", **SLEEP))
    assert _run(lever)[1]["final"] == _run(again)[1]["final"]


@pytest.mark.parametrize("key, value, expect", [
    ("sleep_fraction", 1.5, "sleep_fraction: expected the share"),
    ("sleep_fraction", -0.1, "sleep_fraction: expected the share"),
    ("wake_s", -1.0, "wake_s: expected a number of seconds >= 0"),
    ("sleep_after_s", -0.5, "sleep_after_s: expected a number of seconds >= 0"),
])
def test_impossible_sleep_settings_name_the_field(key, value, expect):
    with pytest.raises(ConfigError, match=expect):
        load_gridcommand_config("smoke", **{key: value})


def test_the_lever_needs_slot_tracking():
    with pytest.raises(ConfigError, match="sleep_fraction: .*needs tracking: slot"):
        load_gridcommand_config("smoke", sleep_fraction=0.5, tracking="instant", smooth_weight=0.0)
