"""The flexibility envelope: commands sized to what the levers reach, recorded per event."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ilets.config import ConfigError, FleetConfig, RunConfig, WorkloadConfig
from ilets.gridcommand.config import CommandSpec, GridCommandConfig
from ilets.gridcommand.envelope import MIN_DEPTH, fit_schedule, high_action, keeps_deadline, low_action
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.metrics import evaluate
from ilets.gridcommand.power import power_profile
from ilets.agents.policies import EarliestFinish

RUN = RunConfig(workload=WorkloadConfig(scale=0.004), fleet=FleetConfig(servers=20))
DEEP_DOWN = CommandSpec(direction="down", depth=0.9, start_after_s=1.0, duration_s=2.0, ramp_s=0.2)
UP = CommandSpec(direction="up", depth=0.5, start_after_s=3.5, duration_s=1.5, ramp_s=0.2)


def config(mode: str, *commands: CommandSpec, margin: float = 0.8) -> GridCommandConfig:
    return GridCommandConfig(run=RUN, regime="explicit", commands=commands or (DEEP_DOWN, UP), slot_s=0.25,
                             envelope=mode, envelope_margin=margin).validate()


@pytest.fixture(scope="module")
def clipped() -> GridCommandEnv:
    return GridCommandEnv(config("clip"))


def test_clip_sizes_every_command_to_its_reach(clipped):
    env = clipped
    assert len(env.envelope) == 2 and [r.direction for r in env.envelope] == ["down", "up"]
    kept = [r for r in env.envelope if r.kept]
    assert [c.depth for c in env.schedule] == [r.depth for r in kept]
    for r in kept:
        assert MIN_DEPTH <= r.reachable_depth and r.depth == pytest.approx(min(r.requested_depth, 0.8 * r.reachable_depth))
        assert r.feasible and r.depth < r.requested_depth  # 90 % and 50 % are out of this fleet's reach


def test_record_keeps_the_commands_and_says_which_fit(clipped):
    env = GridCommandEnv(config("record"))
    assert [c.depth for c in env.schedule] == [0.9, 0.5]
    assert [r.reachable_depth for r in env.envelope] == [r.reachable_depth for r in clipped.envelope]
    assert [r.feasible for r in env.envelope] == [False, False]
    assert GridCommandEnv(config("off")).envelope == []


def test_the_low_extreme_reaches_the_clipped_depth(clipped):
    """The reach is what a policy did: the low extreme inside the clipped down event brings
    every slot past the ramp at least to the clipped target."""
    env = clipped
    cmd = env.schedule[0]
    env.reset()
    done = False
    while not done:
        inside = env.active_command is not None and env.active_command.direction == "down"
        a = low_action(env) if inside else EarliestFinish().act(env.cloud, env.current_task, env.action_masks()[:-1])
        _, _, done, _, _ = env.step(a)
    edges = env.slot_edges
    power = power_profile(env.cloud, env.fleet, edges, env.tasks.cpu)
    mid = 0.5 * (np.maximum(edges[:-1], cmd.start_s) + np.minimum(edges[1:], cmd.end_s))
    full = (edges[1:] > cmd.start_s) & (edges[:-1] < cmd.end_s) & (mid >= cmd.start_s + cmd.ramp_s)
    target = env.baseline.power_w[full] * (1 - cmd.depth)
    assert full.any() and np.all(power[full] <= target + 1e-9 * target)


def test_an_unreachable_event_is_dropped_and_counted():
    sched, found = fit_schedule(GridCommandEnv(config("off")).schedule, [(0.0, 0.0), (0.2, 50.0)], "clip", 0.5)
    assert [c.direction for c in sched] == ["up"] and sched[0].depth == pytest.approx(0.1)
    assert [r.kept for r in found] == [False, True] and not found[0].feasible


def test_metrics_record_the_envelope_per_event():
    out = evaluate(EarliestFinish(), config("record"))
    assert out["events_dropped"] == 0 and out["feasible_share"] == 0.0
    assert all({"requested_depth", "reachable_depth", "feasible"} <= set(e) for e in out["per_event"])
    assert np.isnan(out["tracking_mae_rel_feasible"])
    clip = evaluate(EarliestFinish(), config("clip"))
    assert clip["feasible_share"] == 1.0 and clip["tracking_mae_rel_feasible"] == pytest.approx(clip["tracking_mae_rel"])
    assert np.isnan(evaluate(EarliestFinish(), config("off"))["feasible_share"])


def test_the_envelope_is_deterministic(clipped):
    assert GridCommandEnv(config("clip")).envelope == clipped.envelope


def test_per_event_runs_agree_with_the_joint_run_on_each_directions_first_event_only():
    """Each direction's first event starts from the counterfactual's state in both modes, so
    its reach is the same; a down event after another starts, in the joint run, in what the
    extreme left of the first (here: queues the deferrals emptied), in its own run from the
    counterfactual's."""
    second = CommandSpec(direction="down", depth=0.9, start_after_s=3.05, duration_s=0.4, ramp_s=0.1)
    joint = GridCommandEnv(config("record", DEEP_DOWN, second, UP))
    each = GridCommandEnv(dataclasses.replace(config("record", DEEP_DOWN, second, UP), envelope_runs="per-event"))
    assert [r.direction for r in each.envelope] == ["down", "down", "up"]
    assert [each.envelope[i].reachable_depth for i in (0, 2)] == [joint.envelope[i].reachable_depth for i in (0, 2)]
    assert each.envelope[1].reachable_depth != joint.envelope[1].reachable_depth
    # the default is the joint run: digests of what was computed before the knob are unchanged
    from ilets.gridcommand.config import settings_plain

    assert "envelope_runs" not in settings_plain(config("record"))
    assert settings_plain(dataclasses.replace(config("record"), envelope_runs="per-event"))["envelope_runs"]


def test_a_per_event_reach_does_not_depend_on_the_other_events():
    second = CommandSpec(direction="down", depth=0.9, start_after_s=3.05, duration_s=0.4, ramp_s=0.1)
    both = GridCommandEnv(dataclasses.replace(config("record", DEEP_DOWN, second), envelope_runs="per-event"))
    alone = GridCommandEnv(dataclasses.replace(config("record", second), envelope_runs="per-event"))
    assert both.envelope[1].reachable_depth == alone.envelope[0].reachable_depth


@pytest.mark.parametrize("kw, field", [({"envelope": "loose"}, "envelope"), ({"envelope_margin": 0.0}, "envelope_margin"),
                                       ({"envelope_margin": 1.5}, "envelope_margin"),
                                       ({"envelope_runs": "each"}, "envelope_runs"),
                                       ({"envelope_deadlines": "yes"}, "envelope_deadlines")])
def test_envelope_knobs_are_checked(kw, field):
    with pytest.raises(ConfigError, match=rf"gridcommand\.{field}: expected"):
        dataclasses.replace(config("off"), **kw).validate()


def test_an_extreme_run_refuses_an_env_whose_sleep_is_gated():
    from ilets.gridcommand.envelope import reach

    cfg = dataclasses.replace(config("off"), sleep_fraction=0.1)
    gated = GridCommandEnv(cfg)
    assert gated.sleep_gated and not GridCommandEnv(cfg, sleep_gated=False).sleep_gated
    with pytest.raises(ValueError, match="sleep_gated=False"):
        reach(lambda schedule: GridCommandEnv(cfg, schedule=schedule), gated.schedule, gated.slot_edges,
              gated.baseline.power_w, EarliestFinish())


def _misses(env: GridCommandEnv, keep_deadlines: bool) -> tuple[int, int]:
    """(misses, decisions that missed although some allowed server met the deadline) of the
    extremes inside the events, earliest finish outside."""
    env.reset()
    done, avoidable = False, 0
    while not done:
        c = env.active_command
        if c is None:
            a = EarliestFinish().act(env.cloud, env.current_task, env.action_masks()[:-1])
        else:
            a = (low_action if c.direction == "down" else high_action)(env, keep_deadlines)
            task, cloud = env.current_task, env.cloud
            finish = cloud.earliest_starts(task.cpu) + task.length / cloud.fleet.mips
            could = bool((env.action_masks()[:len(env.fleet)] & (finish - task.arrival <= task.deadline)).any())
            avoidable += int(could and not keeps_deadline(env, a))
        _, _, done, _, _ = env.step(a)
    return int((~env.cloud.task_frame()["success"]).sum()), avoidable


def test_extremes_that_keep_deadlines_miss_none_they_could_keep(clipped):
    """With ``keep_deadlines`` every extreme action keeps its task's deadline where an allowed
    server could (the thermostat's rule); without it, the extremes miss more."""
    misses, avoidable = _misses(GridCommandEnv(config("off")), keep_deadlines=True)
    assert avoidable == 0
    ignoring, ignored = _misses(GridCommandEnv(config("off")), keep_deadlines=False)
    assert ignored > 0 and ignoring > misses


def test_an_envelope_that_keeps_deadlines_sizes_commands_to_that_reach(clipped):
    """``envelope_deadlines`` changes the reach (the 90 % cut is sized by the extremes that give
    way to deadlines) and only when set: off by default and out of the settings, so every
    earlier cell keeps its digest; with ``envelope: off`` it has nothing to size (an error)."""
    from ilets.gridcommand.config import settings_plain

    kept = GridCommandEnv(dataclasses.replace(config("clip"), envelope_deadlines=True))
    assert [r.direction for r in kept.envelope] == ["down", "up"]
    assert kept.envelope[0].reachable_depth < clipped.envelope[0].reachable_depth
    assert all(r.feasible for r in kept.envelope if r.kept)
    assert "envelope_deadlines" not in settings_plain(config("clip"))
    assert settings_plain(dataclasses.replace(config("clip"), envelope_deadlines=True))["envelope_deadlines"] is True
    with pytest.raises(ConfigError, match=r"gridcommand\.envelope_deadlines: .*envelope: clip or record"):
        dataclasses.replace(config("off"), envelope_deadlines=True).validate()


def test_a_cached_reach_is_the_computed_one_and_is_read_back(tmp_path, clipped, monkeypatch):
    first = GridCommandEnv(config("clip"), envelope_cache=tmp_path)
    files = list(tmp_path.glob("reach-*.json"))
    assert len(files) == 1
    import ilets.gridcommand.envelope as E  # sized_schedule measures the reach there

    def no_runs(*args, **kwargs):
        raise AssertionError("the cached reach was not read")

    monkeypatch.setattr(E, "reach", no_runs)
    second = GridCommandEnv(config("clip"), envelope_cache=tmp_path)
    for env in (first, second):  # float for float, the envelope and the commands sized to it
        assert env.envelope == clipped.envelope and env.schedule == clipped.schedule
    with pytest.raises(AssertionError, match="not read"):  # another episode: another key
        GridCommandEnv(dataclasses.replace(config("clip"), envelope_deadlines=True), envelope_cache=tmp_path)


@pytest.mark.parametrize("text, problem", [("{cut", "JSONDecodeError"), ('{"reach": [[0.1, 2.0]]}', "1 events, expected 2")])
def test_a_damaged_reach_cache_is_computed_again(tmp_path, clipped, text, problem):
    GridCommandEnv(config("clip"), envelope_cache=tmp_path)
    path = next(tmp_path.glob("reach-*.json"))
    path.write_text(text)
    with pytest.warns(UserWarning, match=f"{path.name}: damaged reach cache \\({problem}\\)"):
        env = GridCommandEnv(config("clip"), envelope_cache=tmp_path)
    assert env.envelope == clipped.envelope
    assert GridCommandEnv(config("clip"), envelope_cache=tmp_path).envelope == clipped.envelope  # written again


def test_the_reach_key_reads_every_input(clipped):
    from ilets.gridcommand.envelope import reach_key

    env = clipped
    args = (env.config, env.tasks, env.fleet, env.window, env.schedule, env.slot_edges, env.baseline.power_w)
    key = reach_key(*args)
    assert reach_key(*args) == key
    later = dataclasses.replace(env.tasks, deadline=env.tasks.deadline + np.eye(1, len(env.tasks))[0])
    changed = [
        (dataclasses.replace(env.config, run=dataclasses.replace(env.config.run, seed=1)),) + args[1:],
        args[:1] + (later,) + args[2:],
        args[:2] + (dataclasses.replace(env.fleet, mips=env.fleet.mips + 1.0),) + args[3:],
        args[:3] + ((env.window[0], env.window[1] + 1.0),) + args[4:],
        args[:4] + (type(env.schedule)(()),) + args[5:],
        args[:5] + (env.slot_edges + 0.5,) + args[6:],
        args[:6] + (env.baseline.power_w * 1.01,),
    ]
    assert len({key, *(reach_key(*c) for c in changed)}) == 1 + len(changed)


@pytest.mark.parametrize("fields", [{}, {"sleep_fraction": 0.1, "observe_queues": True},
                                    {"speed_levels": (1.0, 0.6, 1.4), "envelope_deadlines": True},
                                    {"run": dataclasses.replace(RUN, observation="per-server"), "sleep_fraction": 0.1,
                                     "observe_sleep": True}])
def test_runs_that_build_no_observation_reach_as_far(fields):
    """The extreme runs build no observation (their policies read the env): the reach is the
    one of runs that build every observation, float for float."""
    from ilets.gridcommand.envelope import reach
    from ilets.agents.policies import make_heuristic

    cfg = dataclasses.replace(config("record"), **fields).validate()
    env = GridCommandEnv(cfg)
    bare = dataclasses.replace(cfg, envelope="off", envelope_deadlines=False, sleep_actions=False)
    built = []

    def observing(schedule):
        e = GridCommandEnv(bare, tasks=env.tasks, fleet=env.fleet, window=env.window, schedule=schedule,
                           sleep_gated=False)
        built.append(e)
        return e

    found = reach(observing, env.schedule, env.slot_edges, env.baseline.power_w,
                  make_heuristic(cfg.reference, seed=cfg.run.seed, reward=cfg.run.reward), cfg.envelope_runs,
                  cfg.envelope_deadlines)
    assert built and all(e.observing for e in built)
    assert [r.reachable_depth for r in env.envelope] == [f if c.depth_unit == "fraction" else w
                                                         for c, (f, w) in zip(env.schedule, found)]


# --- unreachable events moved to a new start (envelope_redraws) ---------------------------------

def _drawn(redraws: int, runs: str = "joint") -> GridCommandConfig:
    """A generated episode small enough that the fleet cannot move some of its events at all."""
    return GridCommandConfig(run=RUN, regime="shallow-long", slot_s=0.25, window_days=4, envelope_redraws=redraws,
                             envelope_runs=runs).validate()


def test_event_room_is_between_the_neighbours_and_their_gaps():
    from ilets.gridcommand.command import event_room

    sched = GridCommandEnv(config("off", DEEP_DOWN, UP)).schedule
    lo, hi = event_room(sched, 0, 0.0, 100.0, 0.1)
    assert lo == pytest.approx(0.1) and hi == pytest.approx(sched[1].start_s - 0.1 - sched[0].duration_s)
    lo, hi = event_room(sched, 1, 0.0, 100.0, 0.1)
    assert lo == pytest.approx(sched[0].end_s + 0.1) and hi == pytest.approx(100.0 - 0.1 - sched[1].duration_s)
    lo, hi = event_room(sched, 1, 0.0, sched[1].end_s, 1.0)  # a gap it cannot keep: no room
    assert lo > hi


def _fake_measure(calls: list, before: float):
    """A reach that is zero for any event starting before ``before`` and 0.1 elsewhere."""
    def measure(schedule):
        calls.append(len(schedule))
        return [(0.0, 0.0) if c.start_s < before else (0.1, 10.0) for c in schedule]
    return measure


@pytest.mark.parametrize("runs, measured", [("joint", 2), ("per-event", 1)])
def test_an_unreachable_event_moves_inside_its_room_until_it_reaches(runs, measured):
    from ilets.gridcommand.command import CommandSchedule, event_room
    from ilets.gridcommand.envelope import redraw_unreachable

    sched = GridCommandEnv(config("off", DEEP_DOWN, UP)).schedule
    reachable_from = sched[0].start_s + 0.1  # the down event has no reach where it starts
    calls: list = []
    measure = _fake_measure(calls, reachable_from)

    def room(s, i):
        return event_room(s, i, sched[0].start_s - 1.0, sched[1].end_s + 1.0, 0.0)

    moved, found, moves = redraw_unreachable(sched, measure(sched), measure, room, 16, np.random.default_rng(0), runs)
    assert moves[0] >= 1 and moves[1] == 0 and found[0][0] == 0.1
    assert reachable_from <= moved[0].start_s <= room(sched, 0)[1] and moved[1] == sched[1]
    assert dataclasses.replace(moved[0], start_s=sched[0].start_s) == sched[0]  # only when it happens moves
    assert set(calls[1:]) == {measured}  # per-event: the moved event alone; joint: the whole schedule
    again = redraw_unreachable(sched, measure(sched), measure, room, 16, np.random.default_rng(0), runs)
    assert again[0] == moved and again[2] == moves  # the same stream, the same draws
    # too few draws, or no room at all: the event keeps its start, for fit_schedule to drop
    low = (sched[0].start_s - 1.0, reachable_from - 0.05)
    kept, _, none = redraw_unreachable(sched, measure(sched), measure, lambda s, i: low, 16,
                                       np.random.default_rng(0), runs)
    assert kept == sched and none == [0, 0]
    assert redraw_unreachable(sched, measure(sched), measure, lambda s, i: (5.0, 4.0), 16,
                              np.random.default_rng(0), runs)[2] == [0, 0]
    assert isinstance(moved, CommandSchedule)


@pytest.mark.parametrize("runs", ["joint", "per-event"])
def test_redraws_move_unreachable_events_and_the_metrics_count_them(runs):
    plain, moved = GridCommandEnv(_drawn(0, runs)), GridCommandEnv(_drawn(8, runs))
    dropped = sum(not r.kept for r in plain.envelope)
    assert dropped > 0 and len(moved.envelope) == len(plain.envelope)  # the same events generated
    assert sum(not r.kept for r in moved.envelope) < dropped
    for r in moved.envelope:
        assert (r.redraws > 0) <= (r.kept and r.reachable_depth >= MIN_DEPTH)
    assert GridCommandEnv(_drawn(8, runs)).envelope == moved.envelope  # deterministic
    out = evaluate(EarliestFinish(), _drawn(8, runs))
    assert out["events_redrawn"] == sum(r.kept and r.redraws > 0 for r in moved.envelope) > 0
    assert out["events_dropped"] == sum(not r.kept for r in moved.envelope)
    assert "events_redrawn" not in evaluate(EarliestFinish(), _drawn(0, runs))  # records from before stay as they were
    # events keep their order and the generator's gaps
    starts = [c.start_s for c in moved.schedule]
    assert starts == sorted(starts)
    gap = moved.config.event_gap_s(*moved.window)
    assert all(b.start_s - a.end_s >= gap - 1e-9 for a, b in zip(moved.schedule, list(moved.schedule)[1:]))


def test_redraws_at_zero_leave_the_settings_digest_alone():
    from ilets.gridcommand.config import settings_plain

    assert "envelope_redraws" not in settings_plain(_drawn(0))
    assert settings_plain(_drawn(8))["envelope_redraws"] == 8


@pytest.mark.parametrize("kw, said", [({"envelope_redraws": -1}, r"expected a whole number of draws in \[0, 16\]"),
                                      ({"envelope_redraws": 2.5}, "expected an integer"),
                                      ({"envelope_redraws": True}, "expected an integer"),
                                      ({"envelope_redraws": 17}, r"expected a whole number of draws in \[0, 16\]"),
                                      ({"envelope_redraws": 4, "envelope": "record"}, "needs envelope: clip"),
                                      ({"envelope_redraws": 4, "regime": "explicit"}, "a generated regime")])
def test_redraws_are_checked(kw, said):
    with pytest.raises(ConfigError, match=rf"gridcommand\.envelope_redraws: .*{said}"):
        dataclasses.replace(config("clip"), **kw).validate()


def test_the_reach_key_ignores_the_redraws_which_reach_never_reads(clipped):
    from ilets.gridcommand.envelope import reach_key

    env = clipped
    args = (env.tasks, env.fleet, env.window, env.schedule, env.slot_edges, env.baseline.power_w)
    cfg = _drawn(0)
    assert reach_key(cfg, *args) == reach_key(dataclasses.replace(cfg, envelope_redraws=8), *args)


def test_the_reach_key_is_the_one_made_before_the_cap_head_existed():
    """``run.cap_head`` at its default is left out of the key, so envelopes cached before the
    field existed are still found (the key below was computed before it)."""
    from ilets.gridcommand.config import load_gridcommand_config
    from ilets.gridcommand.envelope import reach_key

    cfg = load_gridcommand_config("smoke")
    env = GridCommandEnv(cfg)
    args = (env.tasks, env.fleet, env.window, env.schedule, env.slot_edges, env.baseline.power_w)
    assert reach_key(cfg, *args) == "e5f07100b8c031f4a7792fcf"
