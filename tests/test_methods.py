"""The four methods end to end on tiny budgets; BC hand-off; determinism; result folders."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest
import torch as th
from sb3_contrib import MaskablePPO

from ilets.agents.env import CloudSchedulingEnv, StateSpec
from ilets.agents.methods import run_method
from ilets.agents.oinpt import Demonstrations, behaviour_clone, collect_demonstrations, pretrain_critic
from ilets.agents.ppo import NumpyActor, PPOPolicy, make_ppo
from ilets.config import HEURISTICS, METHODS
from ilets.simulator.cloud import make_fleet
from ilets.study.run import cell_dir, run_cell
from ilets.workloads.workload import load_workload


def setup(cfg):
    return load_workload(cfg.workload, cfg.seed), make_fleet(cfg.fleet, cfg.fleet.seed)


@pytest.mark.parametrize("method", METHODS)
def test_every_learner_schedules_the_whole_online_segment(tiny_config, method, tmp_path):
    cfg = dataclasses.replace(tiny_config, method=method)
    wl, fleet = setup(cfg)
    res = run_method(cfg, wl, fleet, cache_dir=tmp_path)
    assert len(res.log.reward) == len(wl.online)
    assert res.log.final["tasks"] == len(wl.online)
    assert 0 <= res.log.final["success_rate"] <= 1
    assert res.model is not None and len(res.decision_s) > 0
    if method in ("drl+", "ilets"):
        assert res.extra["demo_tasks"] == cfg.oinpt.max_demo_tasks
        assert res.extra["critic_mse_after"] < res.extra["critic_mse_before"]
    if method in ("ilets-", "ilets"):
        assert res.extra["oail_requests"] > 0


@pytest.mark.parametrize("method", HEURISTICS)
def test_every_heuristic_runs_through_the_same_env(tiny_config, method):
    cfg = dataclasses.replace(tiny_config, method=method)
    wl, fleet = setup(cfg)
    res = run_method(cfg, wl, fleet)
    assert len(res.log.reward) == len(wl.online) and res.model is None


@pytest.mark.parametrize("method", ["drl", "drl+"])
def test_same_seed_same_metrics(tiny_config, method, tmp_path):
    cfg = dataclasses.replace(tiny_config, method=method)
    wl, fleet = setup(cfg)
    a = run_method(cfg, wl, fleet, cache_dir=tmp_path / "a")
    b = run_method(cfg, wl, fleet, cache_dir=tmp_path / "b")
    assert a.log.final == b.log.final
    np.testing.assert_array_equal(a.log.reward, b.log.reward)


def test_bc_without_its_report_trains_the_same_weights_and_skips_the_report(tiny_config):
    cfg = tiny_config
    wl, fleet = setup(cfg)
    demos = collect_demonstrations(wl.offline, fleet, "greedy", cfg.experts, cfg.reward, 300, 0, StateSpec.of(cfg))
    bc = dataclasses.replace(cfg.oinpt, bc_epochs=5)
    models, out = [], []
    for report in (True, False):
        th.manual_seed(0)  # BC's batches are drawn from torch's global generator
        models.append(make_ppo(CloudSchedulingEnv(cfg, tasks=wl.online, fleet=fleet), cfg.ppo, seed=0))
        out.append(behaviour_clone(models[-1], demos, bc, seed=0, report=report))
    full, lean = out
    assert "bc_top1_train" in full and not any(k.startswith("bc_top") for k in lean)
    assert {k: full[k] for k in lean} == lean  # the agreements are the same numbers
    a, b = (m.policy.state_dict() for m in models)
    assert all(th.equal(a[k], b[k]) for k in a)  # the report only reads the policy


def test_bc_trains_the_very_policy_ppo_then_uses(tiny_config, tmp_path):
    cfg = tiny_config
    wl, fleet = setup(cfg)
    env = CloudSchedulingEnv(cfg, tasks=wl.online, fleet=fleet)
    model = make_ppo(env, cfg.ppo, seed=0)
    policy_before = model.policy
    demos = collect_demonstrations(wl.offline, fleet, "greedy", cfg.experts, cfg.reward, 300, 0, StateSpec.of(cfg))
    stats = behaviour_clone(model, dataclasses.replace(demos), dataclasses.replace(cfg.oinpt, bc_epochs=20), seed=0)
    assert model.policy is policy_before  # no conversion: BC trained PPO's own object
    assert stats["bc_agreement_after"] > stats["bc_agreement_before"]
    obs = th.as_tensor(np.array(demos.obs[:50]))
    with th.no_grad():
        p_bc = model.policy.get_distribution(obs).distribution.probs.numpy()
    # saving and loading PPO keeps exactly the cloned action probabilities
    model.save(tmp_path / "m.zip")
    loaded = MaskablePPO.load(tmp_path / "m.zip", device="cpu")
    with th.no_grad():
        p_loaded = loaded.policy.get_distribution(obs).distribution.probs.numpy()
    np.testing.assert_array_equal(p_bc, p_loaded)
    # and the numpy fast path gives the same greedy actions as torch
    actor = NumpyActor(model.policy)
    masks = demos.masks[:50]
    fast = [actor.act(o, m) for o, m in zip(demos.obs[:50], masks)]
    slow = np.where(masks, p_bc, -1).argmax(1)
    np.testing.assert_array_equal(fast, slow)


def test_critic_pretraining_fits_expert_returns(tiny_config):
    cfg = tiny_config
    wl, fleet = setup(cfg)
    env = CloudSchedulingEnv(cfg, tasks=wl.online, fleet=fleet)
    model = make_ppo(env, cfg.ppo, seed=0)
    demos = collect_demonstrations(wl.offline, fleet, "greedy", cfg.experts, cfg.reward, 300, 0, StateSpec.of(cfg))
    actor_before = [p.detach().clone() for p in model.policy.action_net.parameters()]
    out = pretrain_critic(model, demos, cfg.ppo.gamma, dataclasses.replace(cfg.oinpt, critic_epochs=30), seed=0)
    assert out["critic_mse_after"] < 0.2 * out["critic_mse_before"]
    for a, b in zip(actor_before, model.policy.action_net.parameters()):
        assert th.equal(a, b)  # the cloned actor is untouched



def test_critic_pretraining_in_chunks_trains_the_same_critic(tiny_config, monkeypatch):
    """The MSE made a few decisions at a time measures the same critic (training never reads
    it) and agrees with the one-pass MSE up to float32 rounding."""
    from ilets.agents import oinpt

    cfg = tiny_config
    wl, fleet = setup(cfg)
    demos = collect_demonstrations(wl.offline, fleet, "greedy", cfg.experts, cfg.reward, 300, 0, StateSpec.of(cfg))
    demos.obs.setflags(write=False)  # as a DAgger aggregate's are: read in place, without a warning
    ocfg = dataclasses.replace(cfg.oinpt, critic_epochs=3)
    outs, weights = [], []
    for chunk in (oinpt.MSE_CHUNK, 7):
        monkeypatch.setattr(oinpt, "MSE_CHUNK", chunk)
        model = make_ppo(CloudSchedulingEnv(cfg, tasks=wl.online, fleet=fleet), cfg.ppo, seed=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            outs.append(pretrain_critic(model, demos, cfg.ppo.gamma, ocfg, seed=0))
        weights.append([p.detach().clone() for p in model.policy.parameters()])
    assert len(demos) > 7
    for a, b in zip(*weights):
        assert th.equal(a, b)
    for key in ("critic_mse_before", "critic_mse_after"):
        assert outs[1][key] == pytest.approx(outs[0][key], rel=1e-5)


def test_critic_pretraining_takes_a_count_of_minibatches_in_the_order_of_its_passes(tiny_config, monkeypatch):
    # ``batches`` asks for a number of minibatches: the passes' own count is the same critic,
    # and a count past one pass goes on through fresh orders, as the passes do
    cfg = tiny_config
    wl, fleet = setup(cfg)
    demos = collect_demonstrations(wl.offline, fleet, "greedy", cfg.experts, cfg.reward, 300, 0, StateSpec.of(cfg))
    ocfg = dataclasses.replace(cfg.oinpt, critic_epochs=3)
    per_pass = -(-len(demos) // ocfg.batch_size)  # the last minibatch of a pass is what is left
    steps = []
    real = th.optim.Adam.step

    def counted(self, *args, **kw):
        steps.append(1)
        return real(self, *args, **kw)

    monkeypatch.setattr(th.optim.Adam, "step", counted)

    def critic(batches=None, epochs=3):
        steps.clear()
        model = make_ppo(CloudSchedulingEnv(cfg, tasks=wl.online, fleet=fleet), cfg.ppo, seed=0)
        pretrain_critic(model, demos, cfg.ppo.gamma, dataclasses.replace(ocfg, critic_epochs=epochs), 0, batches)
        return [p.detach().clone() for p in model.policy.parameters()], len(steps)

    passes, n = critic()
    counted_out, m = critic(3 * per_pass)
    assert n == m == 3 * per_pass and all(th.equal(a, b) for a, b in zip(passes, counted_out))
    for n in (1, 2):  # whole passes counted in minibatches: the critic of that many passes
        by_count, by_passes = critic(n * per_pass)[0], critic(epochs=n)[0]
        assert all(th.equal(a, b) for a, b in zip(by_count, by_passes))
    part, k = critic(per_pass + 2)  # a pass and two minibatches of the next
    assert k == per_pass + 2 and any(not th.equal(a, b) for a, b in zip(passes, part))
    assert critic(0)[1] == 0


def test_demonstrations_are_cached_by_key(tiny_config, tmp_path):
    cfg = tiny_config
    wl, fleet = setup(cfg)
    args = (wl.offline, fleet, "greedy", cfg.experts, cfg.reward, 90, 0, StateSpec.of(cfg))
    a = collect_demonstrations(*args, cache_dir=tmp_path)
    files = list(tmp_path.glob("demos-*.npz"))
    assert len(files) == 1
    b = collect_demonstrations(*args, cache_dir=tmp_path)
    np.testing.assert_array_equal(a.obs, b.obs)
    assert isinstance(b, Demonstrations) and b.seconds == pytest.approx(a.seconds)
    collect_demonstrations(wl.offline, fleet, "greedy", cfg.experts, cfg.reward, 60, 0, StateSpec.of(cfg),
                           cache_dir=tmp_path)
    assert len(list(tmp_path.glob("demos-*.npz"))) == 2  # a different budget is a different key


def test_result_folder_is_complete_and_loadable(tiny_config, tmp_path):
    cfg = dataclasses.replace(tiny_config, method="drl")
    folder = run_cell(cfg, tmp_path, command="pytest")
    for name in ("config.yaml", "command.txt", "system.json", "metrics.json", "curve.csv", "decisions.npz",
                 "model.zip"):
        assert (folder / name).is_file(), name
    m = json.loads((folder / "metrics.json").read_text())
    for key in ("avg_response_s", "energy_kwh", "success_rate", "mean_reward", "wall_s", "cpu_s",
                "decision_p50_ms"):
        assert np.isfinite(m[key]), key
    sysinfo = json.loads((folder / "system.json").read_text())
    assert sysinfo["cores"] >= 1 and sysinfo["packages"]["stable-baselines3"] == "2.2.1"
    MaskablePPO.load(folder / "model.zip", device="cpu")
    assert run_cell(cfg, tmp_path) == folder  # done cells are skipped


def test_an_interrupted_cell_leaves_no_finished_looking_folder(tiny_config, tmp_path, monkeypatch):
    cfg = dataclasses.replace(tiny_config, method="earliest-finish")

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr("ilets.agents.methods.run_heuristic", boom)
    with pytest.raises(KeyboardInterrupt):
        run_cell(cfg, tmp_path)
    assert not cell_dir(cfg, tmp_path).exists()
    assert not list((tmp_path / "cells").glob(".*tmp*"))
    # interrupted, not failed: nothing is recorded and the cell reruns on resume (run.run_cell)
    assert not list((tmp_path / "failed").glob("*.json"))


def test_ppo_policy_fits_the_shared_policy_interface(tiny_config):
    from ilets.agents.policies import schedule

    wl, fleet = setup(tiny_config)
    env = CloudSchedulingEnv(tiny_config, tasks=wl.online, fleet=fleet)
    policy = PPOPolicy(make_ppo(env, tiny_config.ppo, 0), StateSpec.of(tiny_config))
    cloud = schedule(wl.online, fleet, policy)
    assert cloud.summary()["tasks"] == len(wl.online)
