"""The slot-average tracking cost: exact against the run's slot power, telescoping to the
scored error, the smoothness term, and the configuration that chooses it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ilets.agents.policies import EarliestFinish
from ilets.config import ConfigError, FleetConfig, RunConfig, WorkloadConfig
from ilets.gridcommand.command import CommandSchedule, GridCommand
from ilets.gridcommand.config import CommandSpec, GridCommandConfig
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.metrics import tracking_metrics
from ilets.gridcommand.power import power_profile
from ilets.gridcommand.tracking import SlotTracker, scored_pairs
from ilets.simulator.objective import cost_of

RUN = RunConfig(workload=WorkloadConfig(scale=0.002), fleet=FleetConfig(servers=8))
DOWN = CommandSpec(direction="down", depth=0.25, start_after_s=0.5, duration_s=1.5, notice_s=0.3, ramp_s=0.2)
UP = CommandSpec(direction="up", depth=0.2, start_after_s=2.2, duration_s=0.6, notice_s=0.1)


def grid(*commands: CommandSpec, **kw) -> GridCommandConfig:
    kw.setdefault("envelope", "off")  # the costs of the commands as given
    return GridCommandConfig(run=RUN, regime="explicit", commands=tuple(commands), slot_s=0.1, **kw).validate()


def play(env: GridCommandEnv, defer_every: int = 0) -> list[dict]:
    """Earliest-Finish, deferring every ``defer_every``-th decision where allowed; the infos."""
    env.reset()
    infos, done, n = [], False, 0
    while not done:
        m = env.action_masks()
        n += 1
        a = env.defer_action if defer_every and n % defer_every == 0 and m[-1] else \
            EarliestFinish().act(env.cloud, env.current_task, m[:len(env.fleet)])
        _, _, done, _, info = env.step(a)
        infos.append(info)
    return infos


@pytest.mark.parametrize("defer_every", [0, 3])
def test_tracking_costs_add_up_to_the_scored_slot_error(defer_every):
    cfg = grid(DOWN, UP, track_weight=2.0, smooth_weight=0.5)
    env = GridCommandEnv(cfg)
    infos = play(env, defer_every)
    tracker = env.tracker
    # the committed slot averages are the run's exact slot power
    power = power_profile(env.cloud, env.fleet, env.slot_edges, env.tasks.cpu)
    np.testing.assert_allclose(tracker.committed_power(), power[tracker.slot], rtol=1e-12)
    # the per-decision costs telescope: their sum is the final cost less the empty fleet's
    final_track, final_smooth = tracker.cost()
    tracker.reset()
    empty_track, empty_smooth = tracker.cost()
    paid = sum(i["tracking"] for i in infos)
    assert paid == pytest.approx(final_track + final_smooth - empty_track - empty_smooth, rel=1e-9, abs=1e-9)
    assert infos[-1]["final"]["tracking_cost"] == pytest.approx(final_track + final_smooth, rel=1e-9)
    # the tracking part is the metrics' error-seconds, scaled (module docstring of tracking)
    scores = tracking_metrics(env)
    err_seconds = sum(e["mae_w"] * (e["end_s"] - e["start_s"]) for e in scores["per_event"])
    rate = len(env.tasks) / (env.window[1] - env.window[0])
    assert final_track == pytest.approx(2.0 * rate * err_seconds / env.max_power_w, rel=1e-9)
    assert scores["events"] == 2 and final_smooth > 0


def test_a_placement_pays_the_change_in_slot_error_and_a_deferral_pays_none():
    cfg = grid(DOWN, track_weight=1.0, smooth_weight=0.0, defer_penalty=0.05)
    env = GridCommandEnv(cfg)
    env.reset()
    cmd = env.schedule[0]
    while env.now < cmd.start_s + cmd.ramp_s:
        env.step(EarliestFinish().act(env.cloud, env.current_task, env.action_masks()[:len(env.fleet)]))
    task, cloud = env.current_task, env.cloud
    if env.action_masks()[-1]:
        _, r, *_ , info = env.step(env.defer_action)
        assert r == -0.05 and info["tracking"] == 0.0
        task, cloud = env.current_task, env.cloud
    s = EarliestFinish().act(cloud, task, env.action_masks()[:len(env.fleet)])
    start = cloud.earliest_start(s, task.cpu)
    plain = cost_of(cloud, task, s, start, cfg.run.reward)
    before = env.tracker.cost()[0]
    _, r, *_, info = env.step(s)
    assert info["tracking"] == pytest.approx(env.tracker.cost()[0] - before, rel=1e-9, abs=1e-12)
    assert r == pytest.approx(-(plain + info["tracking"]), rel=1e-12)


def test_smoothness_counts_steps_within_one_event_only():
    edges = np.arange(0.0, 1.01, 0.1)
    a = GridCommand("down", 0.5, "fraction", 0.0, 0.3, 0.0, 0.0, 0.2)
    b = GridCommand("down", 0.5, "fraction", 0.5, 0.3, 0.0, 0.0, 0.2)
    base = np.full(10, 100.0)
    event, slot, overlap, target = scored_pairs(CommandSchedule((a, b)), edges, base)
    assert event.tolist() == [0, 0, 0, 1, 1, 1] and slot.tolist() == [0, 1, 2, 5, 6, 7]
    np.testing.assert_allclose(overlap, 0.1) and np.testing.assert_allclose(target, 50.0)
    tr = SlotTracker(edges, CommandSchedule((a, b)), base, idle_w=50.0, max_power_w=200.0, rate_per_s=1.0,
                     track_weight=0.0, smooth_weight=1.0)
    assert tr.cost() == (0.0, 0.0)                      # every slot at its target
    d_track, d_smooth = tr.add(0.25, 0.55, 100.0)        # half of slot 2 and of slot 5: +50 W each
    # slot 2 steps from slot 1 by 50 W; slot 5 steps to slot 6 by 50 W; 2 -> 5 crosses events
    assert d_track == 0.0 and d_smooth == pytest.approx(1.0 * 1.0 * 0.1 * 100.0 / 200.0)
    assert tr.cost()[1] == pytest.approx(d_smooth)


def test_instant_and_slot_modes_schedule_the_same_tasks_the_same_way():
    slot, instant = (GridCommandEnv(grid(DOWN, **kw)) for kw in ({}, {"tracking": "instant", "smooth_weight": 0.0}))
    play(slot), play(instant)
    assert slot.cloud.records == instant.cloud.records
    assert instant.tracker is None


@pytest.mark.parametrize("kw, field", [({"tracking": "hourly"}, "tracking"),
                                       ({"tracking": "instant"}, "smooth_weight"),
                                       ({"smooth_weight": -0.1}, "smooth_weight")])
def test_tracking_knobs_are_checked(kw, field):
    with pytest.raises(ConfigError, match=rf"gridcommand\.{field}"):
        dataclasses.replace(grid(DOWN), **kw).validate()
