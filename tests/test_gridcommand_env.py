"""GridCommandEnv: API conformance, the plain run as its special case, deferral, caps, reward,
observation, configuration errors, profiles and the scorer."""

from __future__ import annotations

import dataclasses
import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
import yaml
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import ilets
from ilets.agents.env import CloudSchedulingEnv
from ilets.agents.policies import EarliestFinish
from ilets.config import ConfigError, FleetConfig, RunConfig, WorkloadConfig
from ilets.gridcommand.command import CommandSchedule, GridCommand
from ilets.gridcommand.config import CommandSpec, GridCommandConfig, load_gridcommand_config
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.features import grid_size
from ilets.gridcommand.metrics import evaluate, tracking_metrics
from ilets.gridcommand.power import power_profile
from ilets.simulator.cloud import Fleet
from ilets.simulator.objective import cost_of, tracking_term
from ilets.workloads.workload import TaskTable

RUN = RunConfig(workload=WorkloadConfig(scale=0.002), fleet=FleetConfig(servers=8))
DOWN = CommandSpec(direction="down", depth=0.25, start_after_s=0.5, duration_s=1.5, notice_s=0.3, ramp_s=0.2)


def grid(*commands: CommandSpec, **kw) -> GridCommandConfig:
    regime = "explicit" if commands else "none"
    kw.setdefault("envelope", "off")  # the mechanics as commanded (the envelope: test_gridcommand_envelope)
    return GridCommandConfig(run=RUN, regime=regime, commands=tuple(commands), slot_s=0.1, **kw).validate()


def run_episode(env, choose) -> tuple[list[float], dict]:
    env.reset()
    rewards, done, info = [], False, {}
    while not done:
        _, r, done, _, info = env.step(choose(env))
        rewards.append(r)
    return rewards, info


def reference(env) -> int:
    m = env.action_masks()
    return EarliestFinish().act(env.cloud, env.current_task, m[:len(env.fleet)])


# --- API ---------------------------------------------------------------------------------------

def test_gymnasium_and_sb3_checkers_pass():
    cfg = grid(DOWN)
    gym_check_env(GridCommandEnv(cfg), skip_render_check=True)
    sb3_check_env(GridCommandEnv(cfg), warn=True)


def test_registered_id_makes_the_env():
    env = gym.make(ilets.GRID_ENV_ID, config=grid(DOWN))
    obs, _ = env.reset(seed=0)
    m = RUN.fleet.servers
    assert obs.shape == (2 * m + 2 + grid_size(),) and obs.dtype == np.float32
    assert env.action_space.n == m + 1
    base = env.unwrapped
    assert base.defer_action == m and isinstance(base.schedule, CommandSchedule)
    assert base.current_task.arrival == base.now and base.deferrals_of_current == 0
    assert len(base.slot_edges) > 2 and base.config.slot_s == 0.1


def test_masks_are_read_from_a_made_env_without_warnings():
    """``made.action_masks()``, sb3-contrib's helpers, ``info["action_mask"]`` and a
    MaskablePPO on ``ActionMaskWrapper(Monitor(made))`` raise no warning (Gymnasium 0.29's
    ``Wrapper.__getattr__`` warns on every call)."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.monitor import Monitor

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make(ilets.GRID_ENV_ID, config=grid(DOWN))
        assert isinstance(env, ilets.ActionMaskWrapper) and is_masking_supported(env)
        _, info = env.reset(seed=0)
        rng, done, steps = np.random.default_rng(0), False, 0
        while not done:
            mask = env.action_masks()
            assert mask is info["action_mask"] and mask is env.unwrapped.action_masks()
            assert get_action_masks(env) is mask
            _, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            steps += 1
        assert "action_mask" not in info and "final" in info  # no decision after the last step
        assert steps == info["final"]["decisions"]
        model = MaskablePPO("MlpPolicy", ilets.ActionMaskWrapper(Monitor(env)), n_steps=32, batch_size=32,
                            n_epochs=1, seed=0)
        model.learn(total_timesteps=32)
        assert model.num_timesteps == 32


def test_no_argument_make_builds_the_small_declared_episode():
    """``gym.make(GRID_ENV_ID)`` builds the :data:`DEFAULT_PROFILE` episode (as the env's
    docstring says), a few thousand tasks, not the full window's 259,368 (its size is asserted,
    not its build time: a timed test fails on a loaded host); ``GridCommandConfig()`` keeps the
    paper's full window."""
    from ilets.gridcommand.env import DEFAULT_PROFILE

    env = gym.make(ilets.GRID_ENV_ID)
    env.reset()
    base = env.unwrapped
    assert DEFAULT_PROFILE == "gridcommand-quick" and base.config == load_gridcommand_config(DEFAULT_PROFILE)
    assert len(base.tasks) == 5187 and len(base.fleet) == 50 and base.window == (30.0, 60.0)
    assert base.config.regime == "shallow-long" and len(base.schedule.commands) == 1
    assert GridCommandConfig().run.workload.scale == 1.0 and GridCommandConfig().slot_s == 10.0


# --- the plain run is the special case -----------------------------------------------------------

@pytest.mark.parametrize("commands", [(), (dataclasses.replace(DOWN, depth=0.0),)])
def test_no_command_or_depth_zero_with_the_reference_is_the_plain_run_bit_for_bit(commands):
    env = GridCommandEnv(grid(*commands))
    plain = CloudSchedulingEnv(RUN)
    rewards, info = run_episode(env, reference)
    plain_rewards, plain_info = run_episode(plain, lambda e: EarliestFinish().act(e.cloud, e.current_task,
                                                                                   e.action_masks()))
    for key in ("task", "server", "arrival", "start", "finish", "deadline"):
        assert env.cloud.records[key] == plain.cloud.records[key], key
    assert all(info["final"][k] == plain_info["final"][k] for k in plain.cloud.summary())
    summary = env.cloud.summary()
    assert summary == plain.cloud.summary()
    assert summary == env.baseline.summary  # the counterfactual is this very run
    metrics = tracking_metrics(env)
    if commands:
        assert metrics["events"] == 1
        assert metrics["tracking_mae_w"] == 0.0 and metrics["in_band_fraction"] == 1.0
        assert metrics["energy_shift_j"] == 0.0 and metrics["misses_caused"] == 0
        # a perfect follower reaches the full-depth band when the ramp ends (within a slot)
        assert DOWN.ramp_s - 0.1 <= metrics["time_to_band_s"] <= DOWN.ramp_s + 1e-9
    else:
        assert metrics["events"] == 0 and math.isnan(metrics["tracking_mae_w"])
        assert rewards == plain_rewards  # no scored event: the reward is the plain one, bit for bit


def test_the_reference_does_not_track_a_real_command():
    metrics = evaluate(EarliestFinish(), grid(DOWN))
    assert metrics["events"] == 1 and metrics["tracking_mae_rel"] > 0.5
    assert metrics["time_to_band_s"] == math.inf and metrics["in_band_fraction"] < 0.5


# --- deferral ------------------------------------------------------------------------------------

def _two_task_env(**kw) -> GridCommandEnv:
    fleet = Fleet(capacity=np.array([1.0, 1.0]), mips=np.array([1000.0, 500.0]),
                  p_idle=np.array([10.0, 10.0]), p_act=np.array([100.0, 100.0]))
    tasks = TaskTable(np.array([0.0, 0.4, 1.0]), np.array([0.5, 0.5, 0.5]), np.array([500.0, 500.0, 500.0]),
                      np.array([5.0, 5.0, 0.6]))
    cfg = dataclasses.replace(grid(), defer_s=0.5, **kw).validate()
    return GridCommandEnv(cfg, tasks=tasks, fleet=fleet, window=(0.0, 3.0))


def test_a_deferred_task_re_arrives_in_time_order_and_counts_from_its_first_arrival():
    env = _two_task_env(max_deferrals=2, defer_penalty=0.25)
    env.reset()
    assert env.current_task.index == 0
    _, r, done, _, info = env.step(env.defer_action)
    assert r == -0.25 and info["deferred"] and not done and info["server"] == -1
    assert env.current_task.index == 1 and env.now == 0.4      # the new arrival at 0.4 comes first
    env.step(1)
    assert env.current_task.index == 0 and env.now == 0.5      # then task 0 again, at 0.0 + 0.5
    assert env.deferrals_of_current == 1 and env.current_release == 0.5
    _, _, _, _, info = env.step(0)
    assert info["start"] == 0.5 and info["response"] == pytest.approx(1.0)  # from its first arrival
    assert env.current_task.index == 2
    env.step(0)
    rec = env.cloud.task_frame().set_index("task")
    assert rec.loc[0, "arrival"] == 0.0 and rec.loc[0, "wait"] == 0.5
    assert env.deferral_log == [(0.0, 0)]


def test_defer_is_masked_after_max_deferrals_and_when_the_deadline_becomes_unreachable():
    env = _two_task_env(max_deferrals=1)
    env.reset()
    assert env.action_masks()[env.defer_action]
    env.step(env.defer_action)
    env.step(0)                                    # task 1
    assert env.deferrals_of_current == 1 and not env.action_masks()[env.defer_action]
    env.step(0)
    # task 2: deadline 0.6 s, 0.5 s on the fastest server: deferring 0.5 s would miss it
    assert env.current_task.index == 2 and not env.action_masks()[env.defer_action]
    assert env.action_masks()[:2].all()
    # a masked defer taken anyway is redirected to a server and penalised
    _, r, done, _, info = env.step(env.defer_action)
    assert info["infeasible"] and not info["deferred"] and done
    assert info["final"]["infeasible_actions"] == 1 and info["final"]["deferrals"] == 1


def test_episodes_end_even_if_a_policy_always_tries_to_defer():
    env = GridCommandEnv(grid(DOWN, max_deferrals=2))
    _, info = run_episode(env, lambda e: e.defer_action)
    final = info["final"]
    assert final["tasks"] == len(env.tasks) and final["decisions"] == final["tasks"] + final["deferrals"]
    assert final["deferrals"] > 0


# --- admission cap -------------------------------------------------------------------------------

def test_admission_cap_masks_hot_servers_during_down_events_only():
    fleet = Fleet(capacity=np.array([1.0, 1.0]), mips=np.array([1000.0, 1000.0]),
                  p_idle=np.array([10.0, 10.0]), p_act=np.array([100.0, 100.0]))
    tasks = TaskTable(np.array([0.0, 0.1, 1.1, 1.2]), np.full(4, 0.6), np.full(4, 3000.0), np.full(4, 10.0))
    cmd = GridCommand("down", 0.2, "fraction", 1.0, 1.0, 0.0, 0.0, 0.2)
    cfg = dataclasses.replace(grid(), cap_fraction=0.5, max_deferrals=0).validate()
    env = GridCommandEnv(cfg, tasks=tasks, fleet=fleet, window=(0.0, 3.0), schedule=CommandSchedule((cmd,)))
    env.reset()
    assert env.action_masks().tolist() == [True, True, False]   # no event yet: no cap
    env.step(0)
    env.step(0)     # task 1 queues on server 0 (0.6 + 0.6 > 1)
    # in the event: server 0 at 10 + 100*0.6 (+0.6 with the task) > 0.5 * 110 W; server 1 empty:
    # 10 + 60 = 70 > 55 too: every server is capped and defer is masked -> capacity-feasible stay
    assert env.now == 1.1 and env.action_masks().tolist() == [True, True, False]
    cfg2 = dataclasses.replace(cfg, cap_fraction=0.7).validate()
    env = GridCommandEnv(cfg2, tasks=tasks, fleet=fleet, window=(0.0, 3.0), schedule=CommandSchedule((cmd,)))
    env.reset()
    env.step(0)
    env.step(0)
    assert env.action_masks().tolist() == [False, True, False]  # 70 W <= 77 W on the idle server only
    _, _, _, _, info = env.step(0)                              # a capped server taken anyway
    assert info["infeasible"] and info["server"] == 1


def test_a_cap_at_or_below_idle_power_is_an_error():
    cfg = dataclasses.replace(grid(), cap_fraction=0.05)
    with pytest.raises(ConfigError, match=r"cap_fraction.*idle"):
        GridCommandEnv(cfg)


# --- reward and observation ----------------------------------------------------------------------

def test_instant_reward_is_the_plain_cost_plus_the_tracking_term_during_events():
    cfg = grid(DOWN, track_weight=2.0, tracking="instant", smooth_weight=0.0)
    env = GridCommandEnv(cfg)
    env.reset()
    scored = 0
    for _ in range(400):
        task, cloud = env.current_task, env.cloud
        s = reference(env)
        base = cost_of(cloud, task, s, cloud.earliest_start(s, task.cpu), cfg.run.reward)
        p_after = cloud.power + cloud.act_per_cpu[s] * task.cpu
        inside = env.schedule.active(env.now) is not None
        want = base + (tracking_term(p_after, env.target_at(env.now), env.fleet.max_power, 2.0) if inside else 0.0)
        _, r, done, _, info = env.step(s)
        assert r == pytest.approx(-want, rel=1e-12, abs=1e-12)
        scored += inside
        if done:
            break
    assert scored > 10


def test_observation_blocks_show_the_command_power_and_the_task():
    env = GridCommandEnv(grid(DOWN))
    obs, _ = env.reset()
    m = len(env.fleet)
    g = obs[2 * m + 2:]
    assert g.shape == (grid_size(),)
    assert g[:6].tolist() == [0.0] * 6           # not announced at the window start (notice 0.3 s)
    cmd = env.schedule[0]
    while env.now < cmd.announce_s:
        obs, *_ = env.step(reference(env))
    g = obs[2 * m + 2:]
    assert g[0] == 1.0 and g[1] == 0.0 and g[3] == pytest.approx(cmd.band)
    assert g[4] == pytest.approx((cmd.start_s - env.now) / 3.0, abs=1e-6)  # the window is 3 s
    assert g[6] == pytest.approx(env.baseline_at(env.now) / env.fleet.max_power, rel=1e-6)
    assert g[7] == pytest.approx(env.cloud.power / env.fleet.max_power, rel=1e-6)
    while env.now < cmd.start_s + cmd.ramp_s:
        obs, *_ = env.step(reference(env))
    g = obs[2 * m + 2:]
    assert g[4] == 0.0 and g[8] == pytest.approx(0.75 * g[6], rel=1e-5)  # at full depth
    assert g[9] > 0.0                              # the reference does not follow: the error shows
    assert env.observation_space.contains(obs)


def test_observations_stay_in_bounds_and_masks_are_never_empty_under_any_command():
    cmds = (CommandSpec(direction="up", depth=1.5, start_after_s=0.2, duration_s=0.8, notice_s=0.5, ramp_s=0.1),
            CommandSpec(direction="down", depth=500.0, depth_unit="watts", start_after_s=1.2, duration_s=1.0,
                        notice_s=2.0, ramp_s=0.0, band=0.5),
            CommandSpec(direction="down", depth=0.6, start_after_s=2.3, duration_s=0.6, ramp_s=0.3, band=0.05))
    cfg = grid(*cmds, cap_fraction=0.6, max_deferrals=3, defer_s=0.2)
    env = GridCommandEnv(cfg)
    rng = np.random.default_rng(0)
    obs, _ = env.reset()
    done, steps, kinds = False, 0, set()
    while not done:
        assert env.observation_space.contains(obs), obs
        mask = env.action_masks()
        assert mask.dtype == bool and mask.shape == (len(env.fleet) + 1,) and mask.any()
        if env.active_command is not None:
            kinds.add(env.active_command.direction)
        obs, r, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert np.isfinite(r) and not info["infeasible"]
        steps += 1
    assert kinds == {"up", "down"} and info["final"]["deferrals"] > 0
    assert steps == info["final"]["decisions"]
    # the realised profile of the finished episode is the one the metrics use
    np.testing.assert_array_equal(env.realised_profile(), power_profile(env.cloud, env.fleet, env.slot_edges,
                                                                        env.tasks.cpu))


# --- configuration ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, field", [
    ({"regime": "calm"}, "regime"),
    ({"regime": "shallow-long", "commands": (DOWN,)}, "commands"),
    ({"regime": "explicit"}, "commands"),
    ({"slot_s": 0.0}, "slot_s"),
    ({"defer_s": -1.0}, "defer_s"),
    ({"max_deferrals": -1}, "max_deferrals"),
    ({"cap_fraction": 0.0}, "cap_fraction"),
    ({"cap_fraction": 1.5}, "cap_fraction"),
    ({"track_weight": -1.0}, "track_weight"),
    ({"defer_penalty": -0.1}, "defer_penalty"),
    ({"reference": "oracle"}, "reference"),
    ({"tracking_alpha": 0.0}, "tracking_alpha"),
    ({"segment": "middle"}, "segment"),
    ({"command_seed": -2}, "command_seed"),
    ({"regime": "explicit", "commands": (dataclasses.replace(DOWN, ramp_s=5.0),)}, r"commands\[0\]\.ramp_s"),
    ({"regime": "explicit", "commands": (dataclasses.replace(DOWN, band=1.0),)}, r"commands\[0\]\.band"),
    ({"regime": "explicit", "commands": (dataclasses.replace(DOWN, depth=-0.1),)}, r"commands\[0\]\.depth"),
    ({"regime": "explicit", "commands": (dataclasses.replace(DOWN, start_after_s=-1.0),)}, r"commands\[0\]\.start_after_s"),
    ({"regime": "explicit", "commands": (DOWN, DOWN)}, "overlap"),
])
def test_bad_config_values_raise_named_errors(kw, field):
    with pytest.raises(ConfigError, match=rf"gridcommand\.{field}" if "overlap" not in field else field):
        GridCommandConfig(run=RUN, **kw).validate()


def test_a_command_after_the_window_is_an_error_at_load():
    """Named with its field when the configuration is loaded, not when an env is built."""
    late = dataclasses.replace(DOWN, start_after_s=10.0)   # the smoke window's online half is 3 s long
    with pytest.raises(ConfigError, match=r"commands\[0\]\.start_after_s: 10 s .*after.*3-s online"):
        grid(late)


def test_profiles_load_and_yaml_is_strict(tmp_path):
    for name in ("gridcommand-smoke", "gridcommand-quick", "gridcommand-paper", "smoke"):
        cfg = load_gridcommand_config(name)
        assert isinstance(cfg, GridCommandConfig)
    assert load_gridcommand_config("smoke").run.workload.scale == 0.002
    assert load_gridcommand_config("quick").run.workload.scale == 0.02
    assert load_gridcommand_config("paper").run.workload.scale == 1.0
    assert load_gridcommand_config("smoke", run={"seed": 3}).run.seed == 3
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"regime": "none", "cap": 0.5}))
    with pytest.raises(ConfigError, match=r"bad\.yaml.*unknown key.*cap"):
        load_gridcommand_config(bad)
    bad.write_text(yaml.safe_dump({"regime": "none", "run": {"fleet": {"servers": 0}}}))
    with pytest.raises(ConfigError, match=r"run\.fleet\.servers"):
        load_gridcommand_config(bad)
    bad.write_text("regime: none\nregime: none\n")
    with pytest.raises(ConfigError, match="duplicate key"):
        load_gridcommand_config(bad)
    # this session's knobs, each named with the file and its field
    for knob, value in (("tracking", "hourly"), ("smooth_weight", -1), ("envelope", "loose"),
                        ("envelope_margin", 0), ("speed_levels", [0.5, 1.0]), ("dvfs_exponent", 9)):
        bad.write_text(yaml.safe_dump({"regime": "none", knob: value}))
        with pytest.raises(ConfigError, match=rf"bad\.yaml\.{knob}: expected"):
            load_gridcommand_config(bad)


def test_the_smoke_profile_runs_and_the_run_config_gets_no_new_section():
    assert "gridcommand" not in {f.name for f in dataclasses.fields(RunConfig)}
    cfg = load_gridcommand_config("smoke")
    out = evaluate(EarliestFinish(), cfg)
    assert out["tasks"] == out["baseline_tasks"] > 0 and out["events"] == 1


# --- the scorer --------------------------------------------------------------------------------

def test_evaluate_scores_heuristics_and_callables_the_same_way():
    cfg = grid(DOWN)
    a = evaluate(EarliestFinish(), cfg)
    b = evaluate(lambda obs, env: reference(env), cfg)
    assert a == b


def test_deferring_in_the_event_sheds_energy_and_is_counted():
    cfg = grid(DOWN, max_deferrals=2, defer_s=0.3)

    def shed(obs, env):
        m = env.action_masks()
        if env.schedule.active(env.now) is not None and m[env.defer_action]:
            return env.defer_action
        return reference(env)

    out = evaluate(shed, cfg)
    ref = evaluate(EarliestFinish(), cfg)
    ev, ev_ref = out["per_event"][0], ref["per_event"][0]
    assert ev["deferrals"] > 0 and ev["deferrals"] == out["deferrals"]
    assert ev["energy_shift_j"] < 0 and ev_ref["energy_shift_j"] == 0.0
    assert ev["mae_w"] < ev_ref["mae_w"]
    # the episode's own profile is exact: it integrates to the cloud's energy
    env = GridCommandEnv(cfg)
    run_episode(env, lambda e: shed(None, e))
    whole = [env.cloud.t_start, env.cloud.now]
    assert power_profile(env.cloud, env.fleet, whole, env.tasks.cpu)[0] * (whole[1] - whole[0]) == \
        pytest.approx(env.cloud.energy, rel=1e-9)


def test_tracking_metrics_refuse_an_unfinished_episode():
    env = GridCommandEnv(grid(DOWN))
    env.reset()
    env.step(0)
    with pytest.raises(ValueError, match="not finished"):
        tracking_metrics(env)


def test_a_profile_that_extends_another_sets_only_what_it_lists(tmp_path):
    child = tmp_path / "child.yaml"
    child.write_text("extends: gridcommand-quick\nslot_s: 1.0\nrun: {fleet: {servers: 7}}\n")
    cfg = load_gridcommand_config(child, run={"seed": 4})
    quick = load_gridcommand_config("quick")
    assert cfg.slot_s == 1.0 and cfg.run.fleet.servers == 7 and cfg.run.seed == 4
    assert cfg.run.workload == quick.run.workload and cfg.track_weight == quick.track_weight
    grandchild = tmp_path / "grandchild.yaml"  # a path is read from the extending file's folder
    grandchild.write_text("extends: child.yaml\ntrack_weight: 2.0\n")
    assert load_gridcommand_config(grandchild) == dataclasses.replace(load_gridcommand_config(child), track_weight=2.0)
    for text, said in (("extends: nowhere\n", r"extends: 'nowhere' is not a profile"),
                       ("extends: 3\n", r"extends: expected the name or path"),
                       ("extends: child.yaml\n", r"extends: 'child.yaml' leads back to this file"),
                       ("extends: gridcommand-quick\nslot: 1\n", r"unknown key.*slot")):
        child.write_text(text)
        with pytest.raises(ConfigError, match=said) as err:
            load_gridcommand_config(child)
        assert "child.yaml" in str(err.value) and "\n" not in str(err.value)
    child.write_text("extends: missing.yaml\n")
    with pytest.raises(ConfigError, match="missing.yaml"):
        load_gridcommand_config(child)
