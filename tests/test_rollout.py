"""The numpy rollout loop of FastMaskablePPO against SB3's own computations and stock loop.

(1) SB3's ``evaluate_actions`` on a stored rollout gives the stored log-probabilities (PPO's
first ratio is 1) and values; (2) the stored rollout equals an independent replay (env,
torch policy, GAE by hand); (3) a run is bit-reproducible from its seed; (4) the fast loop
learns as well as the stock loop on a toy task; plus the callback contract OAIL relies on.
"""

from __future__ import annotations

import copy
import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback

from ilets.agents.env import CloudSchedulingEnv
from ilets.agents.methods import run_method
from ilets.agents.ppo import FastMaskablePPO, NumpyActorCritic, make_ppo
from ilets.simulator.cloud import make_fleet
from ilets.workloads.workload import load_workload

ARRAYS = ("observations", "actions", "rewards", "episode_starts", "values", "log_probs", "action_masks",
          "advantages", "returns")


class Snapshot(BaseCallback):
    """Keeps each finished rollout (buffer arrays, policy weights, last obs) before train()."""

    def __init__(self, perturb: bool = False) -> None:
        super().__init__()
        self.rollouts: list[dict] = []
        self.steps: list[dict] = []
        self.perturb = perturb

    def _on_rollout_start(self) -> None:
        if self.perturb:  # what OAIL does: change the policy just before the rollout
            with th.no_grad():
                for p in self.model.policy.parameters():
                    p.add_(0.05 * th.randn_like(p))

    def _on_step(self) -> bool:
        loc = self.locals
        self.steps.append({"dones": loc["dones"].copy(), "rewards": loc["rewards"].copy(), "info": loc["infos"][0]})
        return True

    def _on_rollout_end(self) -> None:
        buf = self.model.rollout_buffer
        self.rollouts.append({"buf": {k: getattr(buf, k).copy() for k in ARRAYS},
                              "state": copy.deepcopy(self.model.policy.state_dict()),
                              "last_obs": self.model._last_obs.copy()})


def tiny_model(cfg, fast: bool = True, seed: int = 0):
    wl, fleet = load_workload(cfg.workload, cfg.seed), make_fleet(cfg.fleet, cfg.fleet.seed)
    env = CloudSchedulingEnv(cfg, tasks=wl.online, fleet=fleet)
    return make_ppo(env, dataclasses.replace(cfg.ppo, fast_rollout=fast), seed), wl, fleet


def evaluate(policy, obs, actions, masks):
    with th.no_grad():
        values, log_prob, _ = policy.evaluate_actions(th.as_tensor(obs), th.as_tensor(actions).long().flatten(),
                                                      action_masks=th.as_tensor(masks))
    return values.numpy().ravel(), log_prob.numpy()


@pytest.mark.parametrize("perturb", [False, True])
def test_sb3_evaluates_the_stored_rollout_to_ratio_one(tiny_config, perturb):
    model, *_ = tiny_model(tiny_config)
    snap = Snapshot(perturb)
    model.learn(4 * tiny_config.ppo.n_steps, callback=snap)
    assert len(snap.rollouts) == 4
    for r in snap.rollouts:
        b = r["buf"]
        model.policy.load_state_dict(r["state"])
        values, log_prob = evaluate(model.policy, b["observations"][:, 0], b["actions"][:, 0], b["action_masks"][:, 0])
        ratio = np.exp(log_prob - b["log_probs"][:, 0])
        np.testing.assert_allclose(ratio, 1.0, atol=1e-5)
        np.testing.assert_allclose(values, b["values"][:, 0], atol=1e-5)
        chosen = b["actions"][:, 0, 0].astype(int)
        assert b["action_masks"][np.arange(len(chosen)), 0, chosen].all()  # never a masked server


def test_the_stored_rollout_equals_an_independent_replay(tiny_config):
    """Env, policy and GAE recomputed from the stored actions; episodes end inside a rollout."""
    cfg = tiny_config
    model, wl, fleet = tiny_model(cfg)
    n = cfg.ppo.n_steps
    total = len(wl.online) + 3 * n  # crosses the end of the segment: auto-reset inside a rollout
    snap = Snapshot()
    model.learn(total, callback=snap)
    ref_env = CloudSchedulingEnv(cfg, tasks=wl.online, fleet=fleet)
    obs, _ = ref_env.reset(seed=0)
    start, gamma, lam = True, cfg.ppo.gamma, cfg.ppo.gae_lambda
    policy = tiny_model(cfg)[0].policy  # a second network to load each rollout's weights into
    ends = 0
    for r in snap.rollouts:
        b = r["buf"]
        policy.load_state_dict(r["state"])
        rows = {k: [] for k in ("obs", "mask", "reward", "start")}
        for t in range(n):
            a = int(b["actions"][t, 0, 0])
            rows["obs"].append(obs)
            rows["mask"].append(ref_env.action_masks().copy())
            rows["start"].append(start)
            obs, rew, done, _, _ = ref_env.step(a)
            rows["reward"].append(rew)
            if done:
                ends += 1
                obs, _ = ref_env.reset()
            start = done
        np.testing.assert_array_equal(b["observations"][:, 0], np.array(rows["obs"]))
        np.testing.assert_array_equal(b["action_masks"][:, 0], np.array(rows["mask"], np.float32))
        np.testing.assert_array_equal(b["rewards"][:, 0], np.array(rows["reward"], np.float32))
        np.testing.assert_array_equal(b["episode_starts"][:, 0], np.array(rows["start"], np.float32))
        np.testing.assert_array_equal(r["last_obs"][0], obs)
        values, log_prob = evaluate(policy, b["observations"][:, 0], b["actions"][:, 0], b["action_masks"][:, 0])
        np.testing.assert_allclose(b["log_probs"][:, 0], log_prob, atol=1e-5)
        np.testing.assert_allclose(b["values"][:, 0], values, atol=1e-5)
        # GAE(lambda) by hand, bootstrapped with the critic's value of the next observation
        with th.no_grad():
            last = float(policy.predict_values(th.as_tensor(obs[None])).item())
        nxt_start = np.append(np.array(rows["start"][1:], float), float(start))
        nxt_value = np.append(values[1:], last)
        adv, gae = np.zeros(n), 0.0
        for t in reversed(range(n)):
            live = 1.0 - nxt_start[t]
            delta = rows["reward"][t] + gamma * nxt_value[t] * live - values[t]
            gae = delta + gamma * lam * live * gae
            adv[t] = gae
        np.testing.assert_allclose(b["advantages"][:, 0], adv, atol=1e-4)
        np.testing.assert_allclose(b["returns"][:, 0], adv + values, atol=1e-4)
    assert ends == 1
    # the end of the episode as Monitor and DummyVecEnv report it
    done_steps = [s for s in snap.steps if s["dones"][0]]
    assert len(done_steps) == 1
    info = done_steps[0]["info"]
    assert info["episode"]["l"] == len(wl.online) and "terminal_observation" in info and "final" in info
    assert info["TimeLimit.truncated"] is False
    assert model.ep_info_buffer[-1]["l"] == len(wl.online)
    rewards = [s["rewards"][0] for s in snap.steps[:len(wl.online)]]
    assert model.ep_info_buffer[-1]["r"] == pytest.approx(float(np.sum(np.array(rewards, float))), abs=1e-3)


def test_episode_end_and_callbacks_match_the_stock_loop(tiny_config):
    """Same callback calls, locals and buffer layout as sb3-contrib's loop across an episode end."""
    seen = {}
    for fast in (True, False):
        model, wl, _ = tiny_model(tiny_config, fast=fast)
        snap = Snapshot()
        model.learn(len(wl.online) + 2 * tiny_config.ppo.n_steps, callback=snap)
        b = snap.rollouts[-1]["buf"]
        seen[fast] = {
            "steps": len(snap.steps), "rollouts": len(snap.rollouts), "timesteps": model.num_timesteps,
            "dones": [i for i, s in enumerate(snap.steps) if s["dones"][0]],
            "starts": np.flatnonzero(np.concatenate([r["buf"]["episode_starts"][:, 0] for r in snap.rollouts])).tolist(),
            "shapes": {k: v.shape for k, v in b.items()}, "dtypes": {k: v.dtype for k, v in b.items()},
            "types": (type(snap.steps[0]["dones"]), snap.steps[0]["dones"].dtype, snap.steps[0]["rewards"].dtype),
            "info_keys": sorted(snap.steps[0]["info"]),
            "end_keys": sorted(snap.steps[len(wl.online) - 1]["info"]),
            "episodes": len(model.ep_info_buffer),
        }
    assert seen[True] == seen[False]


class StopAt(BaseCallback):
    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def _on_step(self) -> bool:
        return self.n_calls < self.at


def test_a_callback_can_stop_the_rollout_like_the_stock_loop(tiny_config):
    for fast in (True, False):
        model, *_ = tiny_model(tiny_config, fast=fast)
        model.learn(10 * tiny_config.ppo.n_steps, callback=StopAt(100))
        assert model.num_timesteps == 100
        assert model.rollout_buffer.pos == 100 - tiny_config.ppo.n_steps - 1  # the stopping step is not stored


def test_the_training_env_is_the_scheduling_env_oail_reads(tiny_config):
    class Probe(BaseCallback):
        def _on_training_start(self) -> None:
            self.env = self.training_env.envs[0].unwrapped
            self.ts: list[int] = []

        def _on_step(self) -> bool:
            self.ts.append(self.env.t)
            return True

    model, *_ = tiny_model(tiny_config)
    probe = Probe()
    model.learn(100, callback=probe)
    assert isinstance(probe.env, CloudSchedulingEnv)
    assert probe.ts[:100] == list(range(1, 101))  # the env OAIL reads is the one being stepped


def test_numpy_sampler_draws_sb3s_masked_distribution(tiny_config):
    model, wl, fleet = tiny_model(tiny_config)
    env = CloudSchedulingEnv(tiny_config, tasks=wl.online, fleet=fleet)
    obs, _ = env.reset()
    with th.no_grad():
        for p in model.policy.action_net.parameters():
            p.mul_(30.0)  # a peaked distribution, so the test sees more than uniform noise
    net = NumpyActorCritic(model.policy)
    mask = np.ones(len(fleet), bool)
    mask[[1, 4]] = False
    rng = np.random.default_rng(1)
    draws = [net.step(obs, mask, rng) for _ in range(20000)]
    actions = np.array([d[0] for d in draws])
    with th.no_grad():
        dist = model.policy.get_distribution(th.as_tensor(obs[None]), action_masks=mask[None])
        probs = dist.distribution.probs.numpy()[0]
        value = model.policy.predict_values(th.as_tensor(obs[None])).item()
    freq = np.bincount(actions, minlength=len(fleet)) / len(actions)
    assert freq[~mask].sum() == 0
    np.testing.assert_allclose(freq, probs, atol=0.015)
    np.testing.assert_allclose([d[2] for d in draws[:50]], np.log(probs[actions[:50]]), atol=1e-5)
    assert draws[0][1] == pytest.approx(value, abs=1e-5)
    assert net.value(obs) == pytest.approx(value, abs=1e-5)


def test_train_is_sb3s_update(tiny_config):
    """The same rollout buffer and seeds give bit-identical weights after both classes' train()."""
    models = []
    for _ in range(2):  # the same seed (which also seeds numpy's global minibatch shuffle)
        m, *_ = tiny_model(tiny_config, fast=True)
        m.learn(tiny_config.ppo.n_steps)  # one rollout, one update; the buffer keeps the rollout
        models.append(m)
    fast, twin = models
    np.testing.assert_array_equal(fast.rollout_buffer.returns, twin.rollout_buffer.returns)
    assert all(th.equal(a, b) for a, b in zip(fast.policy.parameters(), twin.policy.parameters()))
    np.random.seed(7)
    fast.train()
    np.random.seed(7)
    MaskablePPO.train(twin)
    for a, b in zip(fast.policy.parameters(), twin.policy.parameters()):
        assert th.equal(a, b)


@pytest.mark.parametrize("method", ["drl", "drl+"])
def test_same_seed_bit_identical_learning(tiny_config, method, tmp_path):
    cfg = dataclasses.replace(tiny_config, method=method)
    assert cfg.ppo.fast_rollout
    wl, fleet = load_workload(cfg.workload, cfg.seed), make_fleet(cfg.fleet, cfg.fleet.seed)
    a = run_method(cfg, wl, fleet, cache_dir=tmp_path / "a")
    b = run_method(cfg, wl, fleet, cache_dir=tmp_path / "b")
    assert isinstance(a.model, FastMaskablePPO)
    assert a.log.final == b.log.final
    np.testing.assert_array_equal(a.log.reward, b.log.reward)
    assert a.log.curve(cfg.curve_every).equals(b.log.curve(cfg.curve_every))
    for p, q in zip(a.model.policy.parameters(), b.model.policy.parameters()):
        assert th.equal(p, q)
    c = run_method(dataclasses.replace(cfg, seed=cfg.seed + 1), wl, fleet, cache_dir=tmp_path / "c")
    assert not np.array_equal(a.log.reward, c.log.reward)  # the seed does reach the sampler


def test_stock_loop_still_runs_the_whole_segment(tiny_config):
    cfg = dataclasses.replace(tiny_config, method="drl", ppo=dataclasses.replace(tiny_config.ppo, fast_rollout=False))
    wl, fleet = load_workload(cfg.workload, cfg.seed), make_fleet(cfg.fleet, cfg.fleet.seed)
    res = run_method(cfg, wl, fleet)
    assert len(res.log.reward) == len(wl.online) and res.log.final["tasks"] == len(wl.online)


class Pick(gym.Env):
    """A masked contextual bandit PPO learns in about a thousand steps: pick the marked arm."""

    def __init__(self, n: int = 6, length: int = 40) -> None:
        self.n, self.length = n, length
        self.observation_space = spaces.Box(0.0, 1.0, (n,), np.float32)
        self.action_space = spaces.Discrete(n)

    def _draw(self) -> None:
        self.k = int(self.np_random.integers(self.n))
        self.x = (0.5 * self.np_random.random(self.n)).astype(np.float32)
        self.x[self.k] += 0.5
        self.mask = self.np_random.random(self.n) < 0.6
        self.mask[self.k] = True

    def action_masks(self) -> np.ndarray:
        return self.mask

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self._draw()
        return self.x.copy(), {}

    def step(self, action):
        reward = float(action == self.k)
        self.t += 1
        self._draw()
        return self.x.copy(), reward, self.t >= self.length, False, {}


class Rewards(BaseCallback):
    def __init__(self) -> None:
        super().__init__()
        self.r: list[float] = []

    def _on_step(self) -> bool:
        self.r.append(float(self.locals["rewards"][0]))
        return True


@pytest.mark.slow  # six PPO runs of 1,024 steps
def test_fast_loop_learns_as_well_as_the_stock_loop():
    """Three seeds each: both loops learn (chance is ~0.27) and end within 0.1 of each other."""
    th.set_num_threads(1)
    first, last = {}, {}
    for fast in (True, False):
        runs = []
        for seed in range(3):
            model = FastMaskablePPO("MlpPolicy", Pick(), n_steps=128, batch_size=128, n_epochs=8, learning_rate=3e-2,
                                    seed=seed, device="cpu", fast_rollout=fast,
                                    policy_kwargs=dict(net_arch=dict(pi=[32], vf=[32])))
            rec = Rewards()
            model.learn(1024, callback=rec)
            runs.append((np.mean(rec.r[:256]), np.mean(rec.r[-256:])))
        first[fast], last[fast] = np.mean(runs, axis=0)
    for fast in (True, False):
        assert last[fast] - first[fast] > 0.06, (fast, first, last)
    assert abs(last[True] - last[False]) < 0.1, (first, last)


@pytest.mark.parametrize("policy_kwargs", [dict(net_arch=dict(pi=[8], vf=[8]), activation_fn=th.nn.ReLU),
                                           dict(net_arch=dict(pi=[8, 8], vf=[8]))])
def test_other_networks_fall_back_to_the_stock_loop(policy_kwargs, monkeypatch):
    """The numpy forward is linear-tanh-linear only; anything else must not use it."""
    def boom(*args):
        raise AssertionError("the numpy loop ran on a network it does not implement")

    monkeypatch.setattr(NumpyActorCritic, "step", boom)
    model = FastMaskablePPO("MlpPolicy", Pick(), n_steps=64, batch_size=64, seed=0, device="cpu",
                            policy_kwargs=policy_kwargs)
    model.learn(128)
    assert model.num_timesteps == 128
