"""The sleep head (``sleep_actions``): the policy puts idle servers to sleep during a cut, one
action each, the same task handed over again; the environment then sleeps none by itself; the
power manager's rule as actions (``SleepManager``); the per-server policy's second score."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch as th

from ilets.agents.per_server import PerServerPolicy
from ilets.agents.ppo import make_ppo, numpy_actor_critic
from ilets.config import ConfigError
from ilets.gridcommand.config import load_gridcommand_config, settings_plain
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts import ENV_READS, SleepManager, make_expert
from test_gridcommand_expert_reads import Recorder
from test_gridcommand_sleep import SLEEP, _run


def head_config(**kw):
    return load_gridcommand_config("smoke", **SLEEP, sleep_actions=True, **kw)


def test_off_by_default_and_out_of_the_settings():
    lever = load_gridcommand_config("smoke", **SLEEP)
    assert lever.sleep_actions is False and "sleep_actions" not in settings_plain(lever)
    env, head = GridCommandEnv(lever), GridCommandEnv(head_config())
    assert head.action_space.n == env.action_space.n + len(head.fleet) and head.first_sleep_action == env.action_space.n
    assert settings_plain(head_config())["sleep_actions"] is True


def test_with_the_head_the_environment_sleeps_no_server_by_itself():
    _, lever = _run(GridCommandEnv(load_gridcommand_config("smoke", **SLEEP)))
    _, head = _run(GridCommandEnv(head_config()))  # Lyapunov never takes a sleep action
    assert lever["final"]["sleeps"] > 0 and head["final"]["sleeps"] == 0 and head["final"]["sleep_saved_j"] == 0


def test_a_sleep_action_puts_the_server_to_sleep_and_hands_the_task_over_again():
    env = GridCommandEnv(head_config())
    expert = make_expert("lyapunov")
    env.reset(seed=0)
    expert.reset(0)
    first = env.first_sleep_action
    while not env.action_masks()[first:].any():  # play on to a decision with a server that may sleep
        assert env.active_command is None or env.active_command.direction == "down"
        env.step(expert.act(env))
    s = int(np.flatnonzero(env.action_masks()[first:])[0])
    now, task, power = env.now, env.current_task.index, env.power_now
    obs, r, done, _, info = env.step(first + s)
    assert (r, done, info["slept"], info["task"]) == (0.0, False, s, task) and env.now == now
    assert env.current_task.index == task and env.sleep.asleep[s]
    assert env.power_now == pytest.approx(power - env.sleep.saving_w[s])
    assert env.cloud.earliest_start(s, env.current_task.cpu) >= now + env.config.wake_s
    assert not info["action_mask"][first + s]  # asleep: not again
    assert env.active_command is not None and env.active_command.direction == "down"


def test_the_power_manager_as_actions_sleeps_and_every_account_agrees():
    env = GridCommandEnv(head_config())
    manager = SleepManager(make_expert("lyapunov"))
    env.reset(seed=0)
    manager.reset(0)
    proxy, done, slept = Recorder(env), False, 0
    while not done:
        _, _, done, _, info = env.step(manager.act(proxy))
        slept += "slept" in info
    final = info["final"]
    assert slept > 0 and final["sleeps"] == slept and final["sleep_saved_j"] > 0
    (cmd,) = env.schedule
    assert all(cmd.start_s <= a < b <= cmd.end_s for _, a, b in env.sleep.log)
    # the rewards' tracking costs still telescope to the scored slots' error
    tracker = env.tracker
    np.testing.assert_allclose(tracker.committed_power(), env.realised_profile()[tracker.slot], rtol=1e-9)
    assert final["tracking_cost"] == pytest.approx(sum(tracker.cost()), rel=1e-9)
    assert set(manager.reads) <= set(ENV_READS) and proxy.seen == set(manager.reads)
    assert manager.name == "lyapunov+sleep"


@pytest.mark.parametrize("defer_head", ["pooled", "rows"])
def test_the_per_server_policy_scores_sleep_from_each_row(defer_head):
    """The sleep head beside each defer head and the cap levels: numpy computes torch's logits."""
    cfg = load_gridcommand_config("smoke", **SLEEP, sleep_actions=True, cap_levels=[0.9, 1.0],
                                  run={"policy": "per-server", "observation": "per-server", "defer_head": defer_head})
    env = GridCommandEnv(cfg)
    m = len(env.fleet)
    model = make_ppo(env, cfg.run.ppo, 0, "per-server", cfg.run.server_hidden, defer_head=defer_head)
    assert isinstance(model.policy, PerServerPolicy) and model.policy.sleep_head and model.policy.n_extra == 3
    assert (model.policy.mlp_extractor.later is not None) == (defer_head == "rows")
    manager = SleepManager(make_expert("lyapunov"))
    manager.reset(0)
    assert_numpy_logits_along(model, env, manager.act, 2 * m + 3, steps=300)


def assert_numpy_logits_along(model, env, act, n_actions: int, steps: int | None = None) -> list[int]:
    """With ``model``'s weights moved off their tiny initial gains (so every head's logits
    differ), its numpy path gives torch's logits, over ``n_actions`` actions, at every state
    of ``env``'s episode played by ``act(env)`` (the first ``steps``; None: all), and its
    greedy choice is allowed; the actions played."""
    th.manual_seed(0)
    with th.no_grad():
        for w in model.policy.parameters():
            w.add_(0.3 * th.randn_like(w))
    net = numpy_actor_critic(model.policy)
    obs, _ = env.reset(seed=0)
    played: list[int] = []
    while steps is None or len(played) < steps:
        with th.no_grad():
            torch_logits = model.policy.get_distribution(th.as_tensor(obs[None])).distribution.logits.numpy()[0]
        z = net.logits(obs)
        assert z.shape == (n_actions,)
        np.testing.assert_allclose(torch_logits, z - np.log(np.exp(z - z.max()).sum()) - z.max(), atol=1e-5)
        assert env.action_masks()[net.act(obs, env.action_masks())]
        played.append(int(act(env)))
        obs, _, done, _, _ = env.step(played[-1])
        if done:
            break
    return played


@pytest.mark.parametrize("kw, match", [
    ({"sleep_actions": True}, "sleep_actions: puts servers to sleep, so it needs the sleep lever"),
    ({**SLEEP, "sleep_actions": True, "speed_levels": [1.0, 0.5]}, "sleep_actions: one sleep action per server"),
    ({**SLEEP, "sleep_actions": "yes"}, "sleep_actions: expected true or false"),
])
def test_bad_sleep_head_settings_are_named(kw, match):
    with pytest.raises(ConfigError, match=match):
        load_gridcommand_config("smoke", **kw)


def test_the_envelope_measures_the_levers_whole_reach_with_or_without_the_head():
    lever = GridCommandEnv(load_gridcommand_config("smoke", **SLEEP))
    head = GridCommandEnv(dataclasses.replace(head_config()))
    assert [r.reachable_depth for r in head.envelope] == [r.reachable_depth for r in lever.envelope]


def test_on_a_head_scenario_the_pipeline_teaches_the_sleep_actions():
    """The pipeline's experts take the power manager's sleep actions on a head scenario
    (``scenario_expert``), so the teacher's demonstrations hold them; elsewhere they are the
    experts themselves, and the same expert with and without the wrapper plays the same
    episode there."""
    from ilets.gridcommand.metrics import evaluate
    from ilets.gridcommand.teacher import demonstrate, expert_policy, scenario_expert

    cfg = head_config()
    demos = demonstrate(GridCommandEnv(cfg), "lyapunov")
    first = GridCommandEnv(cfg).first_sleep_action
    assert (demos.acts >= first).sum() > 0 and isinstance(scenario_expert("lyapunov", cfg), SleepManager)
    lever = load_gridcommand_config("smoke", **SLEEP)
    assert not isinstance(scenario_expert("lyapunov", lever), SleepManager)
    plain, wrapped = (evaluate(p, lever, seed=0) for p in (expert_policy("lyapunov"),
                                                           lambda obs, env, e=SleepManager(make_expert("lyapunov")): e.act(env)))
    assert plain == wrapped


def test_sleep_repeat_shows_each_demonstrated_sleep_that_many_times():
    from ilets.agents.oinpt import with_repeats
    from ilets.gridcommand.cloning import label_repeats
    from ilets.gridcommand.pipeline_config import PipelineConfig
    from ilets.gridcommand.teacher import demonstrate

    cfg = head_config()
    env = GridCommandEnv(cfg)
    plain = label_repeats(env, PipelineConfig())
    assert plain == {env.defer_action: 1}
    repeat = label_repeats(env, PipelineConfig(sleep_repeat=4, defer_repeat=2))
    m = cfg.run.fleet.servers
    assert repeat == {env.defer_action: 2, **{env.first_sleep_action + s: 4 for s in range(m)}}
    demos = demonstrate(env, "lyapunov")
    sleeps = int((demos.acts >= env.first_sleep_action).sum())
    defers = int((demos.acts == env.defer_action).sum())
    shown = with_repeats(demos, repeat)
    assert sleeps > 0 and len(shown) == len(demos) + 3 * sleeps + defers
    # without the head the option has nothing to weigh: a lever scenario's repeats are the deferral's
    lever = GridCommandEnv(load_gridcommand_config("smoke", **SLEEP))
    assert label_repeats(lever, PipelineConfig(sleep_repeat=4)) == {lever.defer_action: 1}


@pytest.mark.parametrize("value, said", [(0, r"an integer >= 1 \(1: as demonstrated\), got 0"),
                                         (1.5, "an integer .*, got float 1.5"), (True, "an integer .*, got bool True")])
def test_bad_sleep_repeat_is_named(value, said):
    from ilets.gridcommand.pipeline_config import PipelineConfig

    with pytest.raises(ConfigError, match=rf"pipeline\.sleep_repeat: expected {said}"):
        PipelineConfig(sleep_repeat=value).validate()


# --- the sleep columns in each row (observe_sleep) ----------------------------------------------

def test_the_sleep_rows_show_what_the_power_managers_rule_reads():
    """With ``observe_sleep`` every row keeps the plain table's columns bit for bit and gains
    the two the rule reads; every sleep the teacher takes is the rule computed from the rows
    alone: the longest-idle row whose saving fits, idle for at least ``sleep_after_s``."""
    from ilets.gridcommand.features import SLEEP_ROW_FEATURES

    run = {"policy": "per-server", "observation": "per-server"}
    plain, rows = GridCommandEnv(head_config(run=run)), GridCommandEnv(head_config(run=run, observe_sleep=True))
    m, (n_task, width) = len(plain.fleet), plain.table_layout
    assert rows.table_layout == (n_task, width + len(SLEEP_ROW_FEATURES))
    assert rows.observation_space.shape[0] == plain.observation_space.shape[0] + 2 * m
    manager = SleepManager(make_expert("lyapunov"))
    a, _ = plain.reset(seed=0)
    b, _ = rows.reset(seed=0)
    manager.reset(0)
    done, sleeps, shown = False, 0, 0
    while not done:
        table = b[n_task:].reshape(m, width + 2)
        assert np.array_equal(a[:n_task], b[:n_task]) and np.array_equal(a[n_task:].reshape(m, width), table[:, :width])
        idle, fits = table[:, width], table[:, width + 1]
        shown += int((idle > 0).any())
        action = manager.act(rows)
        if action >= rows.first_sleep_action:
            ok = rows.action_masks()[rows.first_sleep_action:] & (fits == 1) & (idle >= np.float32(np.log1p(1.0)) - 1e-6)
            assert ok[action - rows.first_sleep_action]
            assert action - rows.first_sleep_action == int(np.argmax(np.where(ok, idle, -np.inf)))
            sleeps += 1
        a, _, done, _, _ = plain.step(action)
        b, _, _, _, _ = rows.step(action)
    assert sleeps > 0 and shown > 0


@pytest.mark.parametrize("kw, match", [
    ({"observe_sleep": True}, "observe_sleep: adds sleep columns"),  # the flat layout
    ({"observe_sleep": True, "run": {"observation": "per-server"}, "sleep_fraction": 1.0}, "observe_sleep: adds"),
    ({"observe_sleep": "yes"}, "observe_sleep: expected true or false"),
])
def test_bad_sleep_rows_are_named(kw, match):
    with pytest.raises(ConfigError, match=rf"gridcommand-smoke\.yaml\.{match}"):
        load_gridcommand_config("smoke", **{**SLEEP, **kw})
