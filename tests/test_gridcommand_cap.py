"""The admission cap as an action (``cap_levels``): the policy sets the cap, the same task is
handed over again, the cap masks hot servers until changed; off by default, validated."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ilets.config import ConfigError
from ilets.gridcommand.command import CommandSchedule, GridCommand
from ilets.gridcommand.config import settings_plain
from ilets.gridcommand.env import GridCommandEnv
from ilets.simulator.cloud import Fleet
from ilets.workloads.workload import TaskTable
from test_gridcommand_env import DOWN, grid, reference, run_episode

FLEET = Fleet(capacity=np.array([1.0, 1.0]), mips=np.array([1000.0, 1000.0]),
              p_idle=np.array([10.0, 10.0]), p_act=np.array([100.0, 100.0]))
TASKS = TaskTable(np.array([0.0, 0.1, 1.1, 1.2]), np.full(4, 0.6), np.full(4, 3000.0), np.full(4, 10.0))
CMD = GridCommand("down", 0.2, "fraction", 1.0, 1.0, 0.0, 0.0, 0.2)


def two_servers(**kw) -> GridCommandEnv:
    cfg = dataclasses.replace(grid(), max_deferrals=0, **kw).validate()
    return GridCommandEnv(cfg, tasks=TASKS, fleet=FLEET, window=(0.0, 3.0), schedule=CommandSchedule((CMD,)))


def test_without_levels_nothing_changes():
    plain, capped = GridCommandEnv(grid(DOWN)), GridCommandEnv(dataclasses.replace(grid(DOWN), cap_levels=(0.6, 1.0)))
    assert plain.action_space.n == len(plain.fleet) + 1 and plain.first_cap_action == plain.action_space.n
    assert capped.action_space.n == plain.action_space.n + 2
    assert capped.observation_space.shape[0] == plain.observation_space.shape[0] + 1
    assert "cap_levels" not in settings_plain(grid(DOWN))
    assert settings_plain(dataclasses.replace(grid(DOWN), cap_levels=(0.6, 1.0)))["cap_levels"] == [0.6, 1.0]
    # the policy that never sets a cap plays the plain episode: the same rewards and summary
    a, fa = run_episode(plain, reference)
    b, fb = run_episode(capped, reference)
    assert a == b and {k: v for k, v in fb["final"].items() if k != "cap_changes"} == fa["final"]
    assert fb["final"]["cap_changes"] == 0


def test_setting_the_cap_hands_the_same_task_over_again_with_hot_servers_masked():
    env = two_servers(cap_levels=(0.7, 1.0))
    obs, info = env.reset()
    first = env.first_cap_action
    # no cap in force: servers allowed, defer masked (max_deferrals 0), 0.7 allowed, 1.0 is the cap in force
    assert info["action_mask"].tolist() == [True, True, False, True, False] and obs[-1] == 1.0
    env.step(0)
    t, task = env.now, env.current_task.index
    obs, r, done, _, info = env.step(first)              # set the cap to 0.7
    assert (r, done, info["cap"], info["task"]) == (0.0, False, 0.7, task) and env.now == t
    assert env.current_task.index == task and obs[-1] == pytest.approx(0.7) and env.admission_cap == 0.7
    # server 0 holds 0.6 CPU: 10 + 100 * 1.2 > 77 W; server 1 empty: 70 W <= 77 W; one change per task
    assert info["action_mask"].tolist() == [False, True, False, False, False]
    _, _, _, _, info = env.step(1)
    assert info["server"] == 1
    assert env.action_masks()[first + 1] and not env.action_masks()[first]  # the cap holds; it may be lifted
    _, _, _, _, info = env.step(first + 1)
    assert env.admission_cap == 1.0 and info["action_mask"][:2].tolist() == [True, True]


def test_a_masked_cap_action_is_redirected_and_charged():
    env = two_servers(cap_levels=(0.7, 1.0))
    env.reset()
    _, _, _, _, info = env.step(env.first_cap_action + 1)  # 1.0 is already in force: masked
    assert info["infeasible"] and info["server"] in (0, 1) and env.admission_cap == 1.0


def test_every_placement_under_a_cap_respects_it():
    """A policy that sets the lower cap at every down event's first decision and lifts it after:
    each placement under the cap is on a server the cap allows (it defers when the cap leaves
    none; the mask falls back to the capacity-feasible servers only when deferring is masked
    too), and the cap turns placements into deferrals."""
    def play(levels: bool) -> tuple[int, int, dict]:
        env = GridCommandEnv(dataclasses.replace(grid(DOWN), max_deferrals=4, cap_levels=(0.9, 1.0) if levels else ()))
        env.reset()
        done, under_cap, info = False, 0, {}
        while not done:
            mask, m = env.action_masks(), len(env.fleet)
            inside = env.active_command is not None
            if levels and inside and mask[env.first_cap_action]:
                a = env.first_cap_action
            elif levels and not inside and mask[env.first_cap_action + 1]:
                a = env.first_cap_action + 1
            elif not mask[:m].any():
                a = env.defer_action
            else:
                a = reference(env)
                if env.admission_cap < 1 and mask[env.defer_action]:
                    cloud, task = env.cloud, env.current_task
                    p_with = cloud.fleet.p_idle + cloud.act_per_cpu * (cloud.used + task.cpu)
                    assert p_with[a] <= 0.9 * (cloud.fleet.p_idle[a] + cloud.fleet.p_act[a])
                    under_cap += 1
            _, _, done, _, info = env.step(a)
        return under_cap, info["final"]["deferrals"], info["final"]

    under_cap, deferrals, final = play(True)
    _, plain_deferrals, _ = play(False)
    assert under_cap > 0 and final["cap_changes"] >= 2 and deferrals > plain_deferrals


@pytest.mark.parametrize("kw, match", [
    ({"cap_levels": (0.0,)}, r"cap_levels\[0\]: expected a share of each server's maximum power in \(0, 1\]"),
    ({"cap_levels": (1.5,)}, r"cap_levels\[0\]: expected a share of each server's maximum power in \(0, 1\]"),
    ({"cap_levels": (0.6, 0.6)}, r"cap_levels: expected distinct values"),
    ({"cap_levels": (0.6,), "cap_fraction": 0.7}, r"cap_levels: .*exclude each other"),
])
def test_bad_levels_are_named(kw, match):
    with pytest.raises(ConfigError, match=rf"gridcommand\.{match}"):
        dataclasses.replace(grid(), **kw).validate()


def test_a_level_at_or_below_idle_power_is_named():
    with pytest.raises(ConfigError, match=r"cap_levels: 0.05 .*below server"):
        GridCommandEnv(dataclasses.replace(grid(), cap_levels=(0.05, 1.0)))


# --- the power-cap rung (ilets.gridcommand.experts.power_cap) ------------------------------------

def test_the_power_cap_rung_steps_the_cap_in_down_events_and_otherwise_places_as_the_baseline():
    """Its cap changes follow the slot meter during the down event (a step down above the
    target, a step up below it) and lift the cap outside it; each placement is the baseline's
    earliest finish among the servers the cap allows; the cap lowers the event's power."""
    from ilets.gridcommand.experts import make_expert
    from ilets.gridcommand.experts.reading import _earliest_finish, _mask
    from ilets.gridcommand.metrics import evaluate
    from ilets.gridcommand.slot_meter import SlotMeter

    levels = (0.6, 0.8, 1.0)
    env = GridCommandEnv(dataclasses.replace(grid(DOWN), max_deferrals=4, cap_levels=levels))
    expert = make_expert("cap")
    env.reset()
    expert.reset(0)
    meter = SlotMeter()  # sampled at the same decisions, it projects what the rung sees
    done, steps, placements = False, {"down": 0, "up": 0, "lift": 0}, 0
    while not done:
        before, now = env.admission_cap, env.now
        projected = meter.projected(env.slot_edges, now, env.power_now)
        a = expert.act(env)
        if a >= env.first_cap_action:
            level = levels[a - env.first_cap_action]
            if env.active_command is None:
                assert level == 1.0
                steps["lift"] += 1
            else:
                assert (level < before) == (projected > env.target_at(now))
                steps["down" if level < before else "up"] += 1
        else:
            servers, defer_ok = _mask(env)
            assert a == _earliest_finish(env, servers, defer_ok)
            placements += 1
        _, _, done, _, info = env.step(a)
    assert steps["down"] >= 1 and placements > 0 and info["final"]["cap_changes"] == sum(steps.values())
    # without levels the rung is the baseline: the cap is what tracks
    capped = evaluate(make_expert("cap"), dataclasses.replace(grid(DOWN), max_deferrals=4, cap_levels=levels))
    plain = evaluate(make_expert("cap"), dataclasses.replace(grid(DOWN), max_deferrals=4))
    assert capped["tracking_mae_w"] < plain["tracking_mae_w"]
    # the scored metrics keep how often the cap moved (the same episode), and only where it can
    assert capped["cap_changes"] == sum(steps.values()) and "cap_changes" not in plain


def test_a_grid_that_runs_the_power_cap_rung_needs_cap_levels(tmp_path):
    from ilets.gridcommand.experiment import ExperimentProfile

    capped = tmp_path / "capped.yaml"
    capped.write_text("extends: gridcommand-quick\ncap_levels: [0.6, 0.7, 0.8, 0.9, 1.0]\n")

    with pytest.raises(ConfigError, match=r"grid\.methods: .*'cap' rung .*\(cap_levels\)"):
        ExperimentProfile(methods=("rule", "cap"), scenario="gridcommand-smoke").validate()
    ExperimentProfile(methods=("rule", "cap"), scenario=str(capped)).validate()


@pytest.mark.parametrize("name", ["rule", "lyapunov", "thermostat"])
def test_a_rung_that_never_sets_the_cap_plays_the_plain_episode(name):
    from ilets.gridcommand.experts import make_expert

    plain = run_episode(GridCommandEnv(grid(DOWN)), make_expert(name).act)
    capped = run_episode(GridCommandEnv(dataclasses.replace(grid(DOWN), cap_levels=(0.6, 1.0))), make_expert(name).act)
    assert plain[0] == capped[0]
    assert plain[1]["final"] == {k: v for k, v in capped[1]["final"].items() if k != "cap_changes"}


# --- the learner's cap head (run.cap_head) ------------------------------------------------------

def _per_server_cap(**run):
    from ilets.gridcommand.config import load_gridcommand_config

    return load_gridcommand_config("smoke", cap_levels=[0.6, 0.8, 1.0], observe_slot=True,
                                   run={"policy": "per-server", "observation": "per-server", **run})


@pytest.mark.parametrize("run", [{"cap_head": "mlp"}, {"cap_head": "mlp", "defer_head": "rows"}])
def test_the_cap_head_scores_the_levels_after_the_defer_and_numpy_computes_torchs_logits(run):
    """With ``cap_head: mlp`` the cap levels' logits come from a hidden layer over the pooled
    summary (the defer keeps its own scorer); the numpy path gives torch's logits along the
    power-cap rung's own episode, cap changes included."""
    from ilets.agents.per_server import PerServerPolicy
    from ilets.agents.ppo import make_run_ppo
    from ilets.gridcommand.experts import make_expert
    from test_gridcommand_sleep_head import assert_numpy_logits_along

    cfg = _per_server_cap(**run)
    env = GridCommandEnv(cfg)
    m = len(env.fleet)
    model = make_run_ppo(env, cfg.run)
    net = model.policy.mlp_extractor
    assert isinstance(model.policy, PerServerPolicy) and model.policy.n_extra == 1 + 3
    assert net.cap is not None and net.cap[-1].out_features == 3 and net.cap[0].out_features == cfg.run.server_hidden
    assert (net.extra is None) == (run.get("defer_head") == "rows")  # the defer alone is pooled, if at all
    expert = make_expert("cap")
    expert.reset(0)
    played = assert_numpy_logits_along(model, env, expert.act, m + 4)
    assert any(a >= env.first_cap_action for a in played)  # the rung set the cap on the way
    # the cap network's outputs are the cap actions' logits: with its last layer zeroed they are its biases
    import torch as th

    with th.no_grad():
        net.cap[-1].weight.zero_()
        net.cap[-1].bias.copy_(th.tensor([5.0, 6.0, 7.0]))
    obs, _ = env.reset(seed=0)
    with th.no_grad():
        z = net.forward_actor(th.as_tensor(obs[None]))[0].numpy()
    first = env.first_cap_action
    np.testing.assert_array_equal(z[first:first + 3], [5.0, 6.0, 7.0])
    assert not np.isin(z[:first], [5.0, 6.0, 7.0]).any()
    # the linear head (the default) is what it was: no cap network, the levels pooled with the defer
    plain = make_run_ppo(env, _per_server_cap().run).policy.mlp_extractor
    assert plain.cap is None and plain.extra is not None and plain.extra.out_features == 4


def test_bad_cap_head_settings_are_named(tmp_path):
    import yaml

    from ilets.agents.per_server import PerServerNet
    from ilets.agents.policy_io import PolicyLoadError, load_policy, save_policy
    from ilets.agents.ppo import make_run_ppo
    from ilets.config import RunConfig
    from ilets.gridcommand.config import load_gridcommand_config
    from ilets.study.profiles import load_profile as load_cloud_profile

    with pytest.raises(ConfigError, match=r"run\.cap_head: .*'pooled', 'mlp'.*got 'deep'"):
        dataclasses.replace(RunConfig(), cap_head="deep").validate()
    with pytest.raises(ConfigError, match=r"run\.cap_head: 'mlp' .*per-server policy.*'flat'"):
        dataclasses.replace(RunConfig(), cap_head="mlp").validate()
    with pytest.raises(ConfigError, match=r"run\.cap_head: 'mlp' .*admission-cap levels.*none"):
        load_gridcommand_config("smoke", run={"policy": "per-server", "observation": "per-server", "cap_head": "mlp"})
    with pytest.raises(ValueError, match=r"cap_hidden: .*\(cap levels\)"):
        PerServerNet(3, 14, 8, n_extra=1, cap_hidden=8)
    path = tmp_path / "cloud.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "methods": ["drl"], "servers": [4], "seeds": [0],
                                    "run": {"policy": "per-server", "observation": "per-server", "cap_head": "mlp"}}))
    with pytest.raises(ConfigError, match=r"cloud\.yaml\.run\.cap_head: 'mlp' .*grid-command"):
        load_cloud_profile(path)
    # at its default the field stays out of a cell's settings, so cells made before it keep their digests
    assert "cap_head" not in settings_plain(_per_server_cap())["run"]
    assert settings_plain(_per_server_cap(cap_head="mlp"))["run"]["cap_head"] == "mlp"
    # a policy folder says how it scores the levels; a run that scores them otherwise is told so
    cfg = _per_server_cap(cap_head="mlp")
    env = GridCommandEnv(cfg)
    m = len(env.fleet)
    save_policy(make_run_ppo(env, cfg.run), tmp_path / "p", "per-server", "per-server", m)
    with pytest.raises(PolicyLoadError, match=r"policy\.json: cap_head: .*'mlp'.*run's 'pooled' \(run\.cap_head\)"):
        load_policy(tmp_path / "p", make_run_ppo(env, _per_server_cap().run))
    assert load_policy(tmp_path / "p", make_run_ppo(env, cfg.run))["servers"] == m
