"""Grid commands: validation, schedules, targets, announcements, seeded regimes, the signal."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ilets.gridcommand.command import (DAY_TO_WINDOW, REGIMES, CommandError, CommandRegime, CommandSchedule,
                                       GridCommand, generate_schedule, regime, regulation_signal)


def cmd(**kw) -> GridCommand:
    base = dict(direction="down", depth=0.2, start_s=100.0, duration_s=50.0, notice_s=10.0, ramp_s=10.0, band=0.2)
    return GridCommand(**{**base, **kw})


# --- validation: one named error each ----------------------------------------------------------

@pytest.mark.parametrize("kw, field", [
    ({"depth": -0.1}, "depth"),
    ({"duration_s": -1.0}, "duration_s"),
    ({"notice_s": -1.0}, "notice_s"),
    ({"ramp_s": -1.0}, "ramp_s"),
    ({"ramp_s": 60.0}, "ramp_s"),              # longer than the 50 s event
    ({"band": 0.0}, "band"),
    ({"band": -0.1}, "band"),
    ({"band": 1.0}, "band"),                   # doing nothing would be in band
    ({"depth": 1.0}, "depth"),                 # a down fraction of 1 switches everything off
    ({"direction": "sideways"}, "direction"),
    ({"depth_unit": "percent"}, "depth_unit"),
    ({"depth": float("nan")}, "depth"),
])
def test_bad_command_fields_raise_named_errors(kw, field):
    with pytest.raises(CommandError, match=rf"command\.{field}"):
        cmd(**kw).validate(0.0, 1000.0)


def test_start_after_the_window_ends_is_an_error():
    with pytest.raises(CommandError, match=r"start_s.*after the window ends"):
        cmd(start_s=1000.0).validate(0.0, 1000.0)
    with pytest.raises(CommandError, match=r"before the window starts"):
        cmd(start_s=-100.0).validate(0.0, 1000.0)
    assert cmd(start_s=999.0).validate(0.0, 1000.0)  # starting inside the window is fine


def test_up_commands_may_ask_for_more_than_the_baseline_and_watts_are_allowed():
    cmd(direction="up", depth=1.5).validate(0.0, 1000.0)
    cmd(depth=5000.0, depth_unit="watts").validate(0.0, 1000.0)


def test_overlapping_commands_are_an_error_and_schedules_are_sorted():
    a, b = cmd(start_s=100.0), cmd(start_s=140.0)
    with pytest.raises(CommandError, match="overlap"):
        CommandSchedule((a, b))
    later = cmd(start_s=300.0)
    sched = CommandSchedule((later, a))
    assert [c.start_s for c in sched] == [100.0, 300.0]
    # back to back (end exclusive) is not an overlap
    CommandSchedule((a, cmd(start_s=150.0)))
    with pytest.raises(CommandError, match=r"schedule\.commands\[0\]\.band"):
        CommandSchedule((cmd(band=2.0),))


# --- the target -----------------------------------------------------------------------------------

def test_target_down_up_watts_ramp_and_outside_events():
    sched = CommandSchedule((cmd(start_s=100.0, duration_s=50.0, ramp_s=10.0, depth=0.2),
                             cmd(direction="up", start_s=200.0, duration_s=20.0, ramp_s=0.0, depth=0.5),
                             cmd(start_s=300.0, duration_s=20.0, ramp_s=0.0, depth=100.0, depth_unit="watts")))
    t = np.array([50.0, 100.0, 105.0, 110.0, 149.9, 150.0, 200.0, 219.0, 220.0, 310.0])
    base = np.full(len(t), 1000.0)
    want = [1000, 1000, 900, 800, 800, 1000, 1500, 1500, 1000, 900]
    np.testing.assert_allclose(sched.target(t, base), want)
    np.testing.assert_array_equal(sched.scored(t), [0, 1, 1, 1, 1, 0, 1, 1, 0, 1])
    assert sched.target(105.0, 2000.0) == pytest.approx(1800.0)  # scalar in, the baseline scales it
    assert CommandSchedule(()).target(t, base).tolist() == base.tolist()


def test_depth_zero_target_is_the_baseline():
    sched = CommandSchedule((cmd(depth=0.0),))
    t = np.linspace(0, 300, 31)
    base = np.linspace(500, 800, 31)
    np.testing.assert_array_equal(sched.target(t, base), base)


def test_announced_and_upcoming():
    a, b = cmd(start_s=100.0, notice_s=30.0), cmd(start_s=300.0, notice_s=0.0)
    sched = CommandSchedule((a, b))
    assert sched.announced(69.9) == ()
    assert sched.announced(70.0) == (a,)
    assert sched.upcoming(69.9) is None and sched.upcoming(70.0) is a and sched.upcoming(120.0) is a
    assert sched.upcoming(160.0) is None  # a is over, b not announced
    assert sched.announced(300.0) == (a, b) and sched.upcoming(300.0) is b


# --- regimes and the generator --------------------------------------------------------------------

def test_calibration_scales_day_hours_to_window_seconds():
    assert 3 * 3600 * DAY_TO_WINDOW == pytest.approx(187.5)
    assert 10 * 3600 * DAY_TO_WINDOW == pytest.approx(625.0)
    assert set(REGIMES) >= {"shallow-long", "deep-short"}
    shallow, deep = regime("shallow-long"), regime("deep-short")
    assert shallow.depth == (0.10, 0.25) and deep.depth == (0.25, 0.40)
    assert deep.notice_s[1] <= 30.0 < shallow.notice_s[0]   # notice is not day-scaled
    assert deep.duration_s[1] <= shallow.duration_s[0]
    with pytest.raises(CommandError, match="unknown regime"):
        regime("gentle")


@pytest.mark.parametrize("name", sorted(REGIMES))
def test_generated_schedules_are_seeded_sorted_disjoint_and_inside_the_window(name):
    reg = REGIMES[name]
    seen = set()
    for seed in range(20):
        s1 = generate_schedule(reg, 1500.0, 3000.0, seed)
        assert s1 == generate_schedule(reg, 1500.0, 3000.0, seed)
        seen.add(s1.commands)
        for c in s1:
            assert 1500.0 <= c.start_s and c.end_s <= 3000.0
            assert reg.depth[0] <= c.depth <= reg.depth[1]
            assert reg.duration_s[0] - 1e-9 <= c.duration_s <= reg.duration_s[1] + 1e-9
            assert reg.notice_s[0] - 1e-9 <= c.notice_s <= reg.notice_s[1] + 1e-9
            assert c.band == reg.band
        assert all(b.start_s >= a.end_s for a, b in zip(s1, s1.commands[1:]))
    assert len(seen) > 5


@pytest.mark.parametrize("name", sorted(REGIMES))
def test_generated_directions_and_counts_follow_the_regime(name):
    reg = REGIMES[name]
    cmds = [generate_schedule(reg, 0.0, 1500.0, s) for s in range(300)]
    down = [c.direction == "down" for sched in cmds for c in sched]
    assert abs(np.mean(down) - reg.p_down) < 0.06
    assert abs(np.mean([len(sc) for sc in cmds]) - reg.events_per_window) < 0.3


def test_generated_times_scale_with_the_window():
    reg = dataclasses.replace(regime("shallow-long"), events_per_window=3.0)
    full = generate_schedule(reg, 0.0, 1500.0, 7)
    small = generate_schedule(reg, 10.0, 25.0, 7)  # a window 100x shorter
    assert len(full) == len(small) > 0
    for a, b in zip(full, small):
        assert b.duration_s == pytest.approx(a.duration_s / 100)
        assert b.notice_s == pytest.approx(a.notice_s / 100)
        assert b.ramp_s == pytest.approx(a.ramp_s / 100)
        assert b.depth == a.depth


def test_deep_short_is_deeper_and_shorter_than_shallow_long():
    deep = [c for s in range(30) for c in generate_schedule(regime("deep-short"), 0, 1500, s)]
    shallow = [c for s in range(30) for c in generate_schedule(regime("shallow-long"), 0, 1500, s)]
    assert min(c.depth for c in deep) >= max(c.depth for c in shallow) - 1e-12
    assert np.mean([c.duration_s for c in deep]) < np.mean([c.duration_s for c in shallow])
    assert max(c.notice_s for c in deep) <= 30.0


@pytest.mark.parametrize("kw, field", [
    ({"events_per_window": -1.0}, "events_per_window"),
    ({"depth": (0.3, 0.1)}, "depth"),
    ({"duration_s": (0.0, 10.0)}, "duration_s"),
    ({"notice_s": (-1.0, 10.0)}, "notice_s"),
    ({"band": 1.0}, "band"),
    ({"p_down": 1.5}, "p_down"),
    ({"depth": (0.5, 1.2)}, "depth"),
])
def test_bad_regimes_raise_named_errors(kw, field):
    with pytest.raises(CommandError, match=rf"regime\.{field}"):
        generate_schedule(CommandRegime(**kw), 0.0, 100.0, 0)


def test_generator_rejects_an_empty_window_and_drops_events_that_do_not_fit():
    with pytest.raises(CommandError, match="window_start < window_end"):
        generate_schedule(regime("shallow-long"), 10.0, 10.0, 0)
    crowded = CommandRegime(events_per_window=50.0, duration_s=(100.0, 100.0), min_gap_s=0.0, ramp_s=0.0)
    sched = generate_schedule(crowded, 0.0, 1500.0, 0)
    assert 0 < len(sched) <= 15


def test_regulation_signal_is_bounded_zero_mean_and_band_limited():
    x = regulation_signal(4096, 2.0, seed=3, cutoff_s=60.0)
    assert np.abs(x).max() == pytest.approx(1.0) and abs(x.mean()) < 1e-12
    freq = np.fft.rfftfreq(len(x), d=2.0)
    power = np.abs(np.fft.rfft(x)) ** 2
    assert power[freq > 1 / 60.0].sum() < 1e-18 * power.sum()
    assert not np.array_equal(x, regulation_signal(4096, 2.0, seed=4))
    with pytest.raises(CommandError, match="regulation_signal.n"):
        regulation_signal(1, 2.0, seed=0)


# --- several days of commands per window (window_days) -------------------------------------------

def test_days_fit_more_events_of_the_same_length_and_one_day_is_the_old_schedule():
    reg = regime("shallow-long")
    assert generate_schedule(reg, 0.0, 30.0, 3, days=1.0) == generate_schedule(reg, 0.0, 30.0, 3)
    one = [generate_schedule(reg, 0.0, 30.0, s) for s in range(20)]
    many = [generate_schedule(reg, 0.0, 420.0, s, days=14.0) for s in range(20)]
    assert np.mean([len(x) for x in many]) > 10 * np.mean([len(x) for x in one])
    lengths = [c.duration_s for x in many for c in x]  # 30 s a day, as in the one-day window
    assert min(lengths) >= reg.duration_s[0] * 30 / 1500 - 1e-9 and max(lengths) <= reg.duration_s[1] * 30 / 1500 + 1e-9
    with pytest.raises(CommandError, match="days: .*finite.*days > 0"):
        generate_schedule(reg, 0.0, 30.0, 3, days=0.0)


def test_the_days_rule_and_the_multi_day_scenario_agree():
    from scipy.stats import poisson

    from ilets.gridcommand.command import days_for_events
    from ilets.gridcommand.config import load_gridcommand_config

    reg = regime("shallow-long")
    days = days_for_events(reg)
    assert poisson.cdf(19, 2.0 * days) < 0.05 <= poisson.cdf(19, 2.0 * (days - 1))
    # the multi-day scenario (retired to the archive with its profile) is the quick one over this
    # many days, each as long as the quick window: it validates, and its events keep their lengths
    quick = load_gridcommand_config("quick")
    cfg = dataclasses.replace(quick, window_days=days, run=dataclasses.replace(
        quick.run, workload=dataclasses.replace(quick.run.workload, scale=quick.run.workload.scale * days)))
    cfg.validate()
    assert cfg.run.workload.scale / cfg.window_days == pytest.approx(quick.run.workload.scale)
    with pytest.raises(CommandError, match="generates no events"):
        days_for_events(dataclasses.replace(reg, events_per_window=0.0))


@pytest.mark.parametrize("kw, match", [
    ({"window_days": 0}, r"window_days: expected a number of days > 0 \(1: the window is one day\), got 0"),
    ({"window_days": float("inf")}, r"window_days: expected a finite number"),
    ({"window_days": True}, r"window_days: expected a number \(float\), got bool True"),
    ({"window_days": 2, "regime": "none", "commands": ()}, r"window_days: fits a generated regime's events"),
])
def test_bad_window_days_are_named(kw, match):
    from ilets.config import ConfigError
    from ilets.gridcommand.config import load_gridcommand_config

    with pytest.raises(ConfigError, match=rf"gridcommand\.{match}"):
        dataclasses.replace(load_gridcommand_config("smoke"), **kw).validate()
