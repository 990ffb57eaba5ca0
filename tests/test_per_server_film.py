"""The per-server policy's film term (``run.server_film``): a row times a vector from the pooled summary."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch as th

from ilets.agents.per_server import FILM_CLAMP, PerServerNet
from ilets.agents.ppo import make_run_ppo, numpy_actor_critic
from ilets.config import ConfigError, RunConfig
from ilets.gridcommand.config import load_gridcommand_config, settings_plain
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts import make_expert

PER_SERVER = {"policy": "per-server", "observation": "per-server"}


def _scenario(**run):
    return load_gridcommand_config("smoke", run={**PER_SERVER, **run})


@pytest.mark.parametrize("run", [{"server_film": 4}, {"server_film": 2, "defer_head": "rows"}])
def test_numpy_computes_torchs_logits_and_samples_with_the_film_term(run):
    """Along Lyapunov's own episode, with every weight moved off its initial gain: the numpy
    path's logits are torch's, its greedy choice is allowed, and a sampled step's
    log-probability is torch's for the action it drew."""
    cfg = _scenario(**run)
    env = GridCommandEnv(cfg)
    model = make_run_ppo(env, cfg.run)
    net = model.policy.mlp_extractor
    assert net.film_rows is not None and net.film_rows.out_features == run["server_film"]
    assert net.film_rows.in_features == 2 * net.width  # each row and its expm1
    th.manual_seed(0)
    with th.no_grad():
        for w in model.policy.parameters():
            w.add_(0.3 * th.randn_like(w))
    actor = numpy_actor_critic(model.policy)
    expert = make_expert("lyapunov")
    expert.reset()
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    for _ in range(60):
        with th.no_grad():
            dist = model.policy.get_distribution(th.as_tensor(obs[None]), action_masks=env.action_masks()[None])
            torch_logits = model.policy.mlp_extractor.forward_actor(th.as_tensor(obs[None]))[0].numpy()
        np.testing.assert_allclose(actor.logits(obs), torch_logits, rtol=1e-5, atol=1e-4)
        mask = env.action_masks()
        assert mask[actor.act(obs, mask)]
        a, _, log_prob = actor.step(obs, mask, rng)
        assert mask[a]
        np.testing.assert_allclose(log_prob, float(dist.log_prob(th.tensor([a]))[0]), rtol=1e-4, atol=1e-4)
        obs, _, done, _, _ = env.step(int(expert.act(env)))
        if done:
            break


def test_the_film_term_forms_a_pooled_number_times_a_rows_number_exactly():
    """What the plain scorer can only approximate: a teacher that ranks servers by
    ``x_i + q * y_i``, with ``q`` a number of the decision and ``x``, ``y`` columns of each row
    (Lyapunov's energy plus its tracking debt times the power a task adds there), is a
    rank-2 film term with hand-set weights, on any ``q``: the logits are minus that score."""
    n_task, width, m = 2, 3, 5
    net = PerServerNet(n_task, width, 4, film=2)
    with th.no_grad():
        for p in net.parameters():
            p.zero_()
        # rows: the raw columns x (0) and y (1); the summary: 1 (through the bias) and q (task number 0)
        net.film_rows.weight[0, 0] = -1.0
        net.film_rows.weight[1, 1] = -1.0
        net.film_ctx[0].weight[0, 0] = 1.0  # hidden 0 = relu(q)
        net.film_ctx[0].bias[1] = 1.0  # hidden 1 = 1
        net.film_ctx[2].weight[0, 1] = 1.0  # coefficient of x: 1
        net.film_ctx[2].weight[1, 0] = 1.0  # coefficient of y: q
    gen = np.random.default_rng(1)
    for q in (0.0, 0.3, 4.0, 250.0):
        rows = gen.uniform(0, 2, (m, width)).astype(np.float32)
        obs = np.concatenate([[q, 0.5], rows.ravel()]).astype(np.float32)
        z = net.forward_actor(th.as_tensor(obs[None]))[0].detach().numpy()
        np.testing.assert_allclose(z, -(rows[:, 0] + q * rows[:, 1]), rtol=1e-6)
    # the lifted half: expm1 undoes a log1p column, clamped where a number would overflow
    with th.no_grad():
        net.film_rows.weight.zero_()
        net.film_rows.weight[0, width + 2] = -1.0  # expm1 of column 2, coefficient 1
    obs = np.concatenate([[0.0, 0.0], np.tile([0.0, 0.0, 0.0], m)]).astype(np.float32)
    obs[n_task + 2::width] = np.log1p([0.5, 2.0, 10.0, 1e6, 0.0])
    z = net.forward_actor(th.as_tensor(obs[None]))[0].detach().numpy()
    np.testing.assert_allclose(z, -np.array([0.5, 2.0, 10.0, np.expm1(FILM_CLAMP), 0.0]), rtol=1e-5)


def test_no_film_term_by_default_and_bad_settings_are_named(tmp_path):
    from ilets.agents.policy_io import PolicyLoadError, load_policy, save_policy
    from ilets.gridcommand import clone_cache as CC, pipeline_config as PC

    cfg = _scenario()
    env = GridCommandEnv(cfg)
    plain = make_run_ppo(env, cfg.run)
    assert plain.policy.mlp_extractor.film_rows is None and not any("film" in k for k in plain.policy.state_dict())
    # at its default the field stays out of a cell's settings and a clone's key: nothing made before changes
    assert "server_film" not in settings_plain(cfg)["run"]
    assert settings_plain(_scenario(server_film=3))["run"]["server_film"] == 3
    pipe = PC.PipelineConfig()
    assert CC.clone_key(cfg, pipe, 0) == CC.clone_key(dataclasses.replace(cfg, run=dataclasses.replace(
        cfg.run, server_film=0)), pipe, 0) != CC.clone_key(_scenario(server_film=3), pipe, 0)
    with pytest.raises(ConfigError, match=r"run\.server_film: .*rank >= 0 .*got -1"):
        dataclasses.replace(RunConfig(), server_film=-1).validate()
    with pytest.raises(ConfigError, match=r"run\.server_film: .*per-server policy.*'flat'"):
        dataclasses.replace(RunConfig(), server_film=2).validate()
    with pytest.raises(ValueError, match=r"film: .*rank >= 0, got -2"):
        PerServerNet(3, 14, 8, film=-2)
    # a policy folder says its film rank; a run of another rank is told so, in one line
    film = _scenario(server_film=3)
    save_policy(make_run_ppo(env, film.run), tmp_path / "p", "per-server", "per-server", len(env.fleet))
    with pytest.raises(PolicyLoadError, match=r"policy\.json: film: .*3, .*run's 0"):
        load_policy(tmp_path / "p", plain)
    assert load_policy(tmp_path / "p", make_run_ppo(env, film.run))["film"] == 3


def test_the_teachers_scores_are_kept_only_where_they_cover_every_action():
    """Lyapunov scores placements and the defer: with cap levels (actions it does not score)
    the probe cannot weigh a choice by them, and says so."""
    from ilets.gridcommand import teacher as TE

    env = GridCommandEnv(load_gridcommand_config("smoke", cap_levels=[0.6, 0.8, 1.0], observe_slot=True,
                                                 run=PER_SERVER))
    with pytest.raises(ValueError, match="lyapunov: .*placements and the defer"):
        TE.scored_demonstration(env, "lyapunov", max_decisions=5)
