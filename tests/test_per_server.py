"""The per-server policy and layout: same numbers in torch and numpy, any fleet size, cloning
works, bad input is named, and the faithful study's digests are untouched."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch as th

from ilets import cell_pack
from ilets.agents.cloning import clone_scores, heuristic_demonstrations
from ilets.agents.env import CloudSchedulingEnv
from ilets.agents.methods import DecisionLog, drive, run_heuristic, run_method
from ilets.agents.observation import SERVER_FEATURES, TASK_FEATURES, StateSpec, build_observation
from ilets.agents.oinpt import behaviour_clone
from ilets.agents.per_server import PerServerPolicy
from ilets.agents.policies import EarliestFinish, schedule
from ilets.agents.policy_io import PolicyLoadError, load_policy, save_policy
from ilets.agents.ppo import PPOPolicy, make_ppo, numpy_actor_critic
from ilets.config import ConfigError, FleetConfig, RunConfig, WorkloadConfig, to_dict
from ilets.simulator.cloud import make_fleet
from ilets.simulator.objective import exec_time
from ilets.workloads.workload import load_workload

def per_server(cfg: RunConfig, servers: int | None = None) -> RunConfig:
    fleet = cfg.fleet if servers is None else dataclasses.replace(cfg.fleet, servers=servers)
    return dataclasses.replace(cfg, policy="per-server", observation="per-server", fleet=fleet).validate()


def env_of(cfg: RunConfig) -> CloudSchedulingEnv:
    wl = load_workload(cfg.workload, cfg.seed)
    return CloudSchedulingEnv(cfg, tasks=wl.online, fleet=make_fleet(cfg.fleet, cfg.fleet.seed))


def test_a_new_field_off_its_default_changes_the_digest():
    """(At their defaults they leave every shipped cell's digest as it was: test_config.)"""
    base = RunConfig()
    assert dataclasses.replace(base, server_hidden=16).digest() != base.digest()
    assert per_server(base).digest() != base.digest()


def test_the_table_shows_exact_wait_and_response_uncapped(tiny_config):
    cfg = per_server(tiny_config)
    wl = load_workload(cfg.workload, 0)
    fleet = make_fleet(cfg.fleet, 0)
    spec = StateSpec.of(cfg)
    seen = []

    class Probe(EarliestFinish):
        def act(self, cloud, task, mask):
            obs = build_observation(cloud, task, spec)
            rows = obs[len(TASK_FEATURES):].reshape(len(cloud.fleet), len(SERVER_FEATURES))
            starts = cloud.earliest_starts(task.cpu)
            fits = np.isfinite(starts)
            response = np.where(fits, starts - task.arrival + exec_time(cloud, task.length), 0.0)
            np.testing.assert_allclose(np.expm1(rows[:, 2]) * spec.wait_scale_s, response, rtol=1e-5, atol=1e-6)
            assert (rows[:, 0] == fits).all()
            seen.append(float(np.expm1(rows[:, 5]).max()))
            return super().act(cloud, task, mask)

    # twice the load on a third of the servers: queues grow far beyond the paper layout's cap of 100
    small = dataclasses.replace(fleet, capacity=fleet.capacity[:3], mips=fleet.mips[:3],
                                p_idle=fleet.p_idle[:3], p_act=fleet.p_act[:3])
    schedule(wl.online, small, Probe())
    assert max(seen) > 100  # counts are not capped


def test_numpy_path_matches_torch_and_any_fleet_size_runs(tiny_config):
    cfg = per_server(tiny_config)
    env = env_of(cfg)
    obs, _ = env.reset(seed=0)
    model = make_ppo(env, cfg.ppo, 0, "per-server", cfg.server_hidden)
    assert isinstance(model.policy, PerServerPolicy)
    net = numpy_actor_critic(model.policy)
    with th.no_grad():
        logits = model.policy.get_distribution(th.as_tensor(obs[None])).distribution.logits.numpy()[0]
        value = model.policy.predict_values(th.as_tensor(obs[None])).item()
    z = net.logits(obs)
    np.testing.assert_allclose(logits, z - np.log(np.exp(z - z.max()).sum()) - z.max(), atol=1e-5)
    assert net.value(obs) == pytest.approx(value, abs=1e-5)
    # the same weights schedule a fleet four times larger
    big = per_server(tiny_config, servers=4 * cfg.fleet.servers)
    env_big = env_of(big)
    model_big = make_ppo(env_big, big.ppo, 0, "per-server", big.server_hidden)
    model_big.policy.load_state_dict(model.policy.state_dict())
    env_big.reset(seed=0)
    log = DecisionLog()
    drive(env_big, PPOPolicy(model_big, StateSpec.of(big)), log)
    assert log.final["tasks"] == len(env_big.tasks)


def test_per_server_drl_is_deterministic_and_learns_online(tiny_config, tmp_path):
    cfg = dataclasses.replace(per_server(tiny_config), method="drl+")
    wl, fleet = load_workload(cfg.workload, 0), make_fleet(cfg.fleet, 0)
    a = run_method(cfg, wl, fleet, cache_dir=tmp_path / "a")
    b = run_method(cfg, wl, fleet, cache_dir=tmp_path / "b")
    assert a.log.final == b.log.final and a.log.final["tasks"] == len(wl.online)
    np.testing.assert_array_equal(a.log.reward, b.log.reward)


def test_recorded_demonstrations_and_clone_scores_in_small(tiny_config):
    """The mechanics of the control below on a few decisions (test-fast; the learning itself is
    the slow test's): the stride and held-out split, the expert's own criterion, the scores."""
    wl, fleet = load_workload(tiny_config.workload, 0), make_fleet(tiny_config.fleet, 0)
    specs = {k: StateSpec.of(dataclasses.replace(tiny_config, observation=k)) for k in ("paper", "per-server")}
    demos = heuristic_demonstrations(wl.offline, fleet, "earliest-finish", tiny_config.reward, specs, 60, 20)
    paper = demos.by_layout["paper"]
    assert len(paper.acts) == 60 and len(paper.heldout.acts) == 20 and demos.criterion.shape == (60, len(fleet))
    assert len(demos.by_layout["per-server"].acts) == 60 and demos.heldout_criterion.shape == (20, len(fleet))
    # Earliest-Finish picks a server of least finish time: its own criterion's minimum, feasible
    rows = np.arange(60)
    assert (demos.criterion[rows, paper.acts] == demos.criterion.min(axis=1)).all() and paper.masks[rows, paper.acts].all()
    model = make_ppo(env_of(tiny_config), tiny_config.ppo, 0)
    scores = clone_scores(model.policy, paper, demos.criterion)
    assert set(scores) == {"agreement_exact", "agreement_tie", "regret", "regret_rel"}
    # the clone picks feasible servers only (greedy under the mask): every cost it is charged is finite
    assert 0 <= scores["agreement_exact"] <= scores["agreement_tie"] <= 1 and np.isfinite(scores["regret"])
    with pytest.raises(ValueError, match="demonstrated decisions requested"):
        heuristic_demonstrations(wl.offline, fleet, "earliest-finish", tiny_config.reward, specs, len(wl.offline), 1)


@pytest.mark.slow  # two clones of 30 BC epochs on 2,000 demonstrations
def test_the_per_server_clone_matches_earliest_finish_and_the_flat_one_does_not(tiny_config):
    """The positive control in miniature: the same demonstrations and BC budget."""
    cfg = dataclasses.replace(tiny_config, workload=WorkloadConfig(scale=0.01), fleet=FleetConfig(servers=20))
    wl, fleet = load_workload(cfg.workload, 0), make_fleet(cfg.fleet, 0)
    specs = {k: StateSpec.of(dataclasses.replace(cfg, observation=k)) for k in ("paper", "per-server")}
    demos = heuristic_demonstrations(wl.offline, fleet, "earliest-finish", cfg.reward, specs, 2000, 300)
    oinpt = dataclasses.replace(cfg.oinpt, bc_epochs=30, batch_size=64, learning_rate=3e-3)
    scores = {}
    for policy, layout in (("flat", "paper"), ("per-server", "per-server")):
        run = dataclasses.replace(cfg, policy=policy, observation=layout, oinpt=oinpt).validate()
        model = make_ppo(env_of(run), run.ppo, 0, policy, run.server_hidden)
        behaviour_clone(model, demos.by_layout[layout], run.oinpt, 0)
        scores[policy] = clone_scores(model.policy, demos.by_layout[layout].heldout, demos.heldout_criterion)
    assert scores["per-server"]["agreement_tie"] > 0.8
    assert scores["per-server"]["agreement_tie"] > scores["flat"]["agreement_tie"] + 0.3
    assert scores["per-server"]["regret_rel"] < scores["flat"]["regret_rel"]


@pytest.mark.parametrize("policy, layout", [("flat", "paper"), ("per-server", "per-server")])
def test_bc_on_its_own_minibatches_learns_what_imitations_loader_teaches(tiny_config, monkeypatch, policy, layout):
    # BC gathers its minibatches a minibatch at a time (oinpt.minibatches) rather than through
    # imitation's per-decision loader: the same weights, and torch's global generator left
    # where imitation's loader leaves it (a resumed clone and everything after BC depend on it)
    from ilets.agents import oinpt

    cfg = dataclasses.replace(tiny_config, policy=policy, observation=layout).validate()
    wl, fleet = load_workload(cfg.workload, 0), make_fleet(cfg.fleet, 0)
    demos = heuristic_demonstrations(wl.offline, fleet, "earliest-finish", cfg.reward,
                                     {layout: StateSpec.of(cfg)}, 150, 10).by_layout[layout]
    bc = dataclasses.replace(cfg.oinpt, bc_epochs=3, batch_size=32)
    rows = np.arange(len(demos)) % 3 + 1  # repeats: BC is shown more decisions than demonstrated

    def learned(batches: int | None) -> tuple[dict, th.Tensor]:
        th.manual_seed(7)
        model = make_ppo(env_of(cfg), cfg.ppo, 0, cfg.policy, cfg.server_hidden)
        behaviour_clone(model, demos, bc, 0, rows=rows, report=False, batches=batches)
        return model.policy.state_dict(), th.get_rng_state()

    for batches in (None, 40):  # epochs, then a count of minibatches past one epoch
        ours = learned(batches)
        with monkeypatch.context() as m:
            m.setattr(oinpt, "minibatches", lambda d, size: oinpt.to_transitions(d))  # imitation's loader
            theirs = learned(batches)
        assert all(th.equal(ours[0][k], theirs[0][k]) for k in ours[0]) and th.equal(ours[1], theirs[1])
    with pytest.raises(ValueError, match="smaller than batch size 32"):
        oinpt.minibatches(demos.slice(0, 31), 32)


def test_bad_policy_input_is_named(tiny_config, tmp_path):
    with pytest.raises(ConfigError, match=r"run\.policy: expected one of"):
        dataclasses.replace(tiny_config, policy="graph").validate()
    with pytest.raises(ConfigError, match=r"run\.observation: the 'per-server' policy reads"):
        dataclasses.replace(tiny_config, policy="per-server").validate()
    # a flat policy saved at 10 servers does not load on 20; a per-server one does
    flat = tiny_config
    model = make_ppo(env_of(flat), flat.ppo, 0)
    save_policy(model, tmp_path / "flat", "flat", "paper", 10)
    other = dataclasses.replace(flat, fleet=dataclasses.replace(flat.fleet, servers=20)).validate()
    with pytest.raises(PolicyLoadError, match=r"policy\.json: servers: .*flat policy.*10 servers"):
        load_policy(tmp_path / "flat", make_ppo(env_of(other), other.ppo, 0))
    ps = per_server(tiny_config)
    model = make_ppo(env_of(ps), ps.ppo, 0, "per-server")
    save_policy(model, tmp_path / "ps", "per-server", "per-server", 10)
    big = per_server(tiny_config, servers=20)
    assert load_policy(tmp_path / "ps", make_ppo(env_of(big), big.ppo, 0, "per-server"))["servers"] == 10
    with pytest.raises(PolicyLoadError, match=r"policy\.json: policy: .*'per-server' policy"):
        load_policy(tmp_path / "ps", make_ppo(env_of(other), other.ppo, 0))
    (tmp_path / "ps" / "policy.json").write_text("{")
    with pytest.raises(PolicyLoadError, match=r"policy\.json: not valid JSON"):
        load_policy(tmp_path / "ps", model)


def test_heuristics_and_the_flat_study_are_unchanged_by_the_new_fields(tiny_config):
    """A heuristic's metrics do not depend on the policy fields (they read no observation)."""
    wl, fleet = load_workload(tiny_config.workload, 0), make_fleet(tiny_config.fleet, 0)
    a = run_heuristic(dataclasses.replace(tiny_config, method="greedy-cost"), wl, fleet)
    b = run_heuristic(dataclasses.replace(per_server(tiny_config), method="greedy-cost"), wl, fleet)
    assert a.log.final == b.log.final
    assert to_dict(tiny_config)["policy"] == "flat"


def test_fine_tuning_aids_run_logged_and_deterministic(tiny_config, tmp_path):
    """Critic warm-up, the KL to the clone, held-out checkpoints and DAgger-style OAIL
    targets, all on: the pass is logged, the clone and the final policy are kept, twice equal."""
    from ilets.study.run import run_cell

    ft = dataclasses.replace(tiny_config.finetune, critic_warmup_rollouts=3, critic_warmup_ev=0.99, kl_coef=0.5,
                             checkpoints=2, checkpoint_tasks=200, oail_targets="dagger")
    cfg = dataclasses.replace(per_server(tiny_config), method="ilets", finetune=ft).validate()
    folders = [run_cell(cfg, tmp_path / name) for name in ("a", "b")]
    import json

    import pandas as pd

    a, b = (json.loads((f / "metrics.json").read_text()) for f in folders)
    for key in ("avg_response_s", "energy_kwh", "heldout_mean_reward_end", "final_kl_to_clone"):
        assert a[key] == b[key], key
    log = pd.read_csv(folders[0] / "finetune.csv")
    assert log["actor_frozen"].head(3).all() and not log["actor_frozen"].iloc[3:].any()  # EV never reaches 0.99
    assert (log["kl_to_clone"] >= -1e-6).all() and log["entropy"].gt(0).all()
    checks = pd.read_csv(folders[0] / "checkpoints.csv")
    # before the pass (the clone), at the first point, at the end of the pass
    assert len(checks) == 3 and checks["decisions"].iloc[0] == 0 and checks["decisions"].iloc[-1] == a["tasks"]
    assert a["oail_applied"] > 0
    # both policies are shipped and load onto another fleet size, without unpickling
    from ilets.study.shipping import ship

    ship(tmp_path / "a", tmp_path / "shipped")
    shipped = tmp_path / "shipped" / "cells" / folders[0].name  # a row of its cells.parquet (ilets.cell_pack)
    assert cell_pack.is_file(shipped / "finetune.csv") and cell_pack.is_file(shipped / "checkpoints.csv")
    assert not cell_pack.exists(shipped / "model.zip")
    big = per_server(tiny_config, servers=15)
    for name in ("policy", "clone"):
        weights = cell_pack.on_disk(shipped / name)
        assert load_policy(weights, make_ppo(env_of(big), big.ppo, 0, "per-server"))["servers"] == 10


def test_dagger_targets_need_past_windows(tiny_config):
    ft = dataclasses.replace(tiny_config.finetune, oail_targets="dagger")
    with pytest.raises(ConfigError, match=r"finetune\.oail_targets: 'dagger' relabels"):
        dataclasses.replace(tiny_config, finetune=ft,
                            oail=dataclasses.replace(tiny_config.oail, window_mode="upcoming")).validate()


def test_a_heuristic_pass_builds_no_observation_and_its_metrics_do_not_change(tiny_config):
    from ilets.agents.policies import make_heuristic

    cfg = dataclasses.replace(per_server(tiny_config), method="earliest-finish")
    wl, fleet = load_workload(cfg.workload, 0), make_fleet(cfg.fleet, 0)
    fast = run_heuristic(cfg, wl, fleet)
    env = CloudSchedulingEnv(cfg, tasks=wl.online, fleet=fleet)  # observing, as a learner's env
    env.reset(seed=cfg.seed)
    log = DecisionLog()
    drive(env, make_heuristic("earliest-finish"), log)
    assert fast.log.final == log.final and fast.log.reward == log.reward
