"""PPO for one online pass, a fast numpy rollout loop, and a fast numpy decision path.

The learner is sb3-contrib's ``MaskablePPO`` (SB3 PPO plus action masks, so a task is never
offered a server too small for it). Actor and critic are separate one-hidden-layer MLPs of
``cfg.hidden`` (128) tanh units [paper: "fully connected, 128 neurons"]:
``net_arch = dict(pi=[128], vf=[128])``.

:class:`NumpyActor` copies the actor's weights into numpy arrays; a decision is then one
128-unit matrix-vector product without torch's per-call overhead. It is what
:class:`PPOPolicy` (the policy interface shared with the heuristics) uses, and what the
decision-time benchmark measures against SB3's ``model.predict``.

:class:`FastMaskablePPO` is ``MaskablePPO`` with its rollout collection rewritten on
:class:`NumpyActorCritic` (the same network, critic included); SB3's ``train()`` (the PPO
update) is untouched. ``PPOConfig.fast_rollout=False`` keeps sb3-contrib's stock loop.
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import torch as th
from sb3_contrib import MaskablePPO

from ilets.agents.masked import act_masked, sample_masked, unchecked_distributions
from ilets.agents.observation import TABLE_LAYOUTS, StateSpec, build_observation
from ilets.agents.per_server import PerServerNumpy, PerServerPolicy
from ilets.config import CAP_HEADS, DEFER_HEADS, FinetuneConfig, PPOConfig, RunConfig
from ilets.simulator.cloud import Cloud
from ilets.simulator.objective import Task

if TYPE_CHECKING:
    from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy


# sb3-contrib reads ``action_masks`` through SB3's Monitor wrapper, which Gymnasium 0.29
# flags as deprecated on every step; the lookup is correct, so silence only that message.
warnings.filterwarnings("ignore", message=r".*env\.action_masks to get variables from other wrappers.*")


def ppo_kwargs(cfg: PPOConfig, seed: int) -> dict[str, Any]:
    """``MaskablePPO`` keyword arguments for the study's architecture and hyperparameters."""
    return dict(
        learning_rate=cfg.learning_rate, n_steps=cfg.n_steps, batch_size=cfg.batch_size,
        n_epochs=cfg.n_epochs, gamma=cfg.gamma, gae_lambda=cfg.gae_lambda, clip_range=cfg.clip_range,
        ent_coef=cfg.ent_coef, vf_coef=cfg.vf_coef, max_grad_norm=cfg.max_grad_norm,
        policy_kwargs=dict(net_arch=dict(pi=[cfg.hidden], vf=[cfg.hidden]), activation_fn=th.nn.Tanh),
        seed=seed, device="cpu", verbose=0,
    )


def make_ppo(env, cfg: PPOConfig, seed: int, policy: str = "flat", server_hidden: int = 32,
             finetune: FinetuneConfig | None = None, defer_head: str = "pooled",
             cap_head: str = "pooled", server_film: int = 0) -> "FastMaskablePPO":
    """A fresh MaskablePPO on ``env`` with the study's architecture and hyperparameters.

    ``policy`` "flat" is the authors' MLP (``cfg.hidden`` units); "per-server" is
    :class:`ilets.agents.per_server.PerServerPolicy` (``server_hidden`` units), which needs
    an env whose observation is a table layout (``env.unwrapped.state``). It is a
    :class:`FastMaskablePPO`; ``cfg.fast_rollout=False`` makes it collect rollouts with
    sb3-contrib's stock loop instead. ``finetune`` switches on the fine-tuning aids of
    :class:`FastMaskablePPO` (all off by default). ``defer_head`` "rows" scores the first
    action after the servers' (the grid-command defer) per server
    (:class:`ilets.agents.per_server.PerServerNet`'s ``defer_rows``); "pooled", from the
    pooled summary. ``cap_head`` "mlp" scores the actions after the defer (the grid-command
    cap levels) with a hidden layer of ``server_hidden`` units
    (:class:`ilets.agents.per_server.PerServerNet`'s ``cap_hidden``); "pooled", linearly.
    ``server_film`` adds that network's ``film`` term of this rank to the placement scores.
    """
    th.set_num_threads(1)
    kwargs = ppo_kwargs(cfg, seed)
    kwargs["finetune"] = finetune
    if policy == "flat":
        return FastMaskablePPO("MlpPolicy", env, fast_rollout=cfg.fast_rollout, **kwargs)
    if policy != "per-server":
        raise ValueError(f"policy: expected 'flat' or 'per-server', got {policy!r}")
    raw = getattr(env, "unwrapped", env)
    layout = getattr(raw, "state", None)
    if layout is None or layout.features not in TABLE_LAYOUTS:
        raise ValueError(f"policy 'per-server' reads the layouts {tuple(TABLE_LAYOUTS)}, got "
                         f"{getattr(layout, 'features', None)!r}")
    # an env may lay more numbers before the rows (the grid-command scenario's command blocks)
    n_task, width = getattr(raw, "table_layout", None) or TABLE_LAYOUTS[layout.features]
    servers, rest = divmod(int(np.prod(env.observation_space.shape)) - n_task, width)
    sleep_head = bool(getattr(raw, "sleep_actions", False))  # a sleep action per server, last
    n_extra = int(env.action_space.n) - servers * (2 if sleep_head else 1)  # actions after one per server (defer)
    if rest or servers < 1 or n_extra < 0:
        raise ValueError(f"policy 'per-server': an observation of {env.observation_space.shape} and "
                         f"{env.action_space.n} actions are not {n_task} numbers, rows of {width} and an action "
                         "per row (then others)")
    if defer_head not in DEFER_HEADS:
        raise ValueError(f"defer_head: expected one of {DEFER_HEADS}, got {defer_head!r}")
    if defer_head == "rows" and n_extra < 1:
        raise ValueError("defer_head 'rows' scores the action to defer per server, but this env has none "
                         "(only the grid-command scenario defers)")
    if cap_head not in CAP_HEADS:
        raise ValueError(f"cap_head: expected one of {CAP_HEADS}, got {cap_head!r}")
    if cap_head == "mlp" and n_extra < 2:
        raise ValueError("cap_head 'mlp' scores the admission-cap levels, but this env has none (the grid-command "
                         "scenario's cap_levels)")
    kwargs["policy_kwargs"] = dict(n_task=n_task, width=width, hidden=server_hidden,
                                   **({"n_extra": n_extra} if n_extra else {}),
                                   **({"sleep_head": True} if sleep_head else {}),
                                   **({"defer_rows": True} if defer_head == "rows" else {}),
                                   **({"cap_hidden": server_hidden} if cap_head == "mlp" else {}),
                                   **({"film": server_film} if server_film else {}))
    return FastMaskablePPO(PerServerPolicy, env, fast_rollout=cfg.fast_rollout, **kwargs)


def make_run_ppo(env, run: RunConfig, seed: int | None = None,
                 finetune: FinetuneConfig | None = None) -> "FastMaskablePPO":
    """:func:`make_ppo` with ``run``'s hyperparameters and architecture (its policy, hidden
    units and defer and cap heads), seeded by ``seed`` (default ``run.seed``)."""
    return make_ppo(env, run.ppo, run.seed if seed is None else seed, run.policy, run.server_hidden, finetune,
                    run.defer_head, run.cap_head, run.server_film)


def numpy_actor_critic(policy) -> "NumpyActorCritic | PerServerNumpy":
    """The numpy actor-critic of a flat or per-server policy (raises ValueError for others)."""
    if isinstance(policy, PerServerPolicy):
        return PerServerNumpy(policy)
    return NumpyActorCritic(policy)


class NumpyActor:
    """The actor of a (Maskable)ActorCriticPolicy as numpy: logits = W2 tanh(W1 x + b1) + b2.

    Call :meth:`refresh` after the torch weights change (an OAIL update, a PPO update).
    """

    def __init__(self, policy) -> None:
        self.policy = policy
        self.refresh()

    def refresh(self) -> None:
        layers = [m for m in self.policy.mlp_extractor.policy_net if isinstance(m, th.nn.Linear)]
        if len(layers) != 1:
            raise ValueError(f"NumpyActor expects one hidden layer, found {len(layers)}")
        with th.no_grad():
            self.w1 = layers[0].weight.numpy().T.astype(np.float32).copy()
            self.b1 = layers[0].bias.numpy().astype(np.float32).copy()
            self.w2 = self.policy.action_net.weight.numpy().T.astype(np.float32).copy()
            self.b2 = self.policy.action_net.bias.numpy().astype(np.float32).copy()

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Action logits for one observation (or a batch)."""
        return np.tanh(obs @ self.w1 + self.b1) @ self.w2 + self.b2

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> int:
        """The greedy masked action, or a sample from the masked softmax when ``rng`` is given."""
        return act_masked(self.logits(obs), mask, rng)


class NumpyActorCritic(NumpyActor):
    """Actor and critic of a MaskableActorCriticPolicy as numpy, for the rollout loop.

    One step is one matrix-vector product through both hidden layers at once (their first
    layers are concatenated), the masked softmax of the actor, a sample by inverse CDF, the
    sample's log-probability and the critic's value: what sb3-contrib's ``policy.forward``
    computes in torch, at a few microseconds instead of a few hundred.
    """

    def refresh(self) -> None:
        from stable_baselines3.common.torch_layers import FlattenExtractor

        super().refresh()
        pol = self.policy
        vf = [m for m in pol.mlp_extractor.value_net if isinstance(m, th.nn.Linear)]
        if len(vf) != 1:
            raise ValueError(f"NumpyActorCritic expects one hidden critic layer, found {len(vf)}")
        # the numpy forward is exactly flatten -> linear -> tanh -> linear, nothing else
        extractors = {pol.features_extractor, getattr(pol, "pi_features_extractor", None),
                      getattr(pol, "vf_features_extractor", None)} - {None}
        hidden = [type(m) for net in (pol.mlp_extractor.policy_net, pol.mlp_extractor.value_net) for m in net]
        if not all(isinstance(e, FlattenExtractor) for e in extractors) or hidden != [th.nn.Linear, th.nn.Tanh] * 2:
            raise ValueError("NumpyActorCritic expects flat features and Linear+Tanh hidden layers")
        with th.no_grad():
            vw1 = vf[0].weight.numpy().T.astype(np.float32)
            vb1 = vf[0].bias.numpy().astype(np.float32)
            wv = pol.value_net.weight.numpy()[0].astype(np.float32)
            bv = pol.value_net.bias.numpy().astype(np.float32)
        k, n = self.w2.shape
        # both networks as one: [actor | critic] hidden units, then a block-diagonal output
        # layer whose first n outputs are the logits and whose last one is the value
        self.w1ac = np.ascontiguousarray(np.concatenate([self.w1, vw1], axis=1))
        self.b1ac = np.concatenate([self.b1, vb1])
        self.w2ac = np.zeros((2 * k, n + 1), np.float32)
        self.w2ac[:k, :n] = self.w2
        self.w2ac[k:, n] = wv
        self.b2ac = np.concatenate([self.b2, bv])

    def value(self, obs: np.ndarray) -> np.float32:
        """The critic's value of one observation."""
        return (np.tanh(obs @ self.w1ac + self.b1ac) @ self.w2ac[:, -1] + self.b2ac[-1]).astype(np.float32)

    def step(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> tuple[int, np.float32, float]:
        """Sample an action from the masked softmax (:func:`ilets.agents.masked.sample_masked`);
        return it, the value and its log-probability."""
        out = np.tanh(obs @ self.w1ac + self.b1ac) @ self.w2ac + self.b2ac
        a, log_prob = sample_masked(out[:-1], mask, rng)
        return a, out[-1], log_prob


def actor_parameters(policy) -> list[th.nn.Parameter]:
    """The actor's own parameters of a flat or per-server policy (everything but the critic)."""
    from ilets.agents.oinpt import critic_parameters

    critic = {id(p) for p in critic_parameters(policy)}
    return [p for p in policy.parameters() if id(p) not in critic]


class FastMaskablePPO(MaskablePPO):
    """``MaskablePPO`` whose rollouts are collected by a numpy loop; the PPO update is SB3's.

    Why a hand-written loop: SB3 has no faster built-in path for one environment. Its loop
    runs the torch policy (``forward`` plus the masked distribution) at every step and steps
    the env through ``DummyVecEnv`` and ``Monitor``; on a 128-unit network most of a step is
    torch's per-call overhead and the wrappers, not arithmetic. What this loop gains, and
    SB3's update, which it leaves as it is and which bounds what any rollout loop can gain,
    are measured by ``benchmarks/bench_rollout.py`` (README quotes its latest run, with the
    host; measurements are kept there, not here, so they cannot go stale in a docstring).

    This loop, at the start of every rollout (after ``callback.on_rollout_start()``, so
    OAIL's imitation steps are in), copies actor and critic into numpy (:class:`NumpyActorCritic`),
    then per step computes the masked logits, samples the action with a numpy Generator
    seeded from the model's seed, computes value and log-probability, steps the *unwrapped*
    env, and writes SB3's ``MaskableRolloutBuffer`` exactly as ``buffer.add`` would. The end
    of an episode is handled as ``DummyVecEnv`` + ``Monitor`` do (``terminal_observation``,
    ``episode`` info, auto-reset through the wrappers, bootstrap on truncation), and the
    returns are SB3's ``compute_returns_and_advantage``.

    Callbacks see ``on_rollout_start``, ``on_step`` after every env step with ``locals``
    holding ``dones``, ``rewards`` (float32, as DummyVecEnv), ``infos``, ``actions``,
    ``new_obs`` and ``n_steps``, and ``on_rollout_end``; ``training_env.envs[0].unwrapped``
    is the env being stepped. The actions are sampled from the same distribution as SB3's
    but with numpy's generator, not torch's, so a run is reproducible from its seed but not
    action-for-action equal to a stock run.

    Any set-up the loop was not written for (several envs, other wrappers, no masking, a
    deeper network, a non-Discrete action space) falls back to the stock loop.
    """

    # sb3-contrib's MaskablePPO keeps SB3's OnPolicyAlgorithm annotations (ActorCriticPolicy,
    # RolloutBuffer); its policy is a MaskableActorCriticPolicy, which is no ActorCriticPolicy
    # subclass (assignment), and its buffer a MaskableRolloutBuffer (the study's observations
    # are a Box, never a Dict)
    policy: MaskableActorCriticPolicy  # type: ignore[assignment]
    rollout_buffer: MaskableRolloutBuffer

    def __init__(self, *args, fast_rollout: bool = True, finetune: FinetuneConfig | None = None, **kwargs) -> None:
        self.fast_rollout = fast_rollout
        self.finetune = finetune or FinetuneConfig()
        #: the frozen clone the KL term pulls toward (:meth:`set_reference`), and the record of
        #: every update: entropy and KL to the clone on the rollout's states, the critic's
        #: explained variance, whether the actor was frozen for the critic's warm-up
        self.reference: MaskableActorCriticPolicy | None = None
        self.finetune_log: list[dict] = []
        self._warm = 0  # rollouts with the critic above the warm-up threshold in a row
        self._kl_updates = 0
        self._np_policy: NumpyActorCritic | PerServerNumpy | None = None
        self._rollout_rng: np.random.Generator | None = None
        self._episode_reward = 0.0
        self._episode_length = 0
        #: CPU seconds spent collecting rollouts (callbacks included) and in PPO's update
        self.phase_cpu = {"rollout": 0.0, "update": 0.0}
        super().__init__(*args, **kwargs)

    def _setup_learn(self, total_timesteps: int, callback=None, reset_num_timesteps: bool = True, *args, **kwargs):
        if reset_num_timesteps or self._last_obs is None:  # SB3 resets the env: a new episode
            self._episode_reward, self._episode_length = 0.0, 0
        return super()._setup_learn(total_timesteps, callback, reset_num_timesteps, *args, **kwargs)

    def _excluded_save_params(self) -> list[str]:
        return super()._excluded_save_params() + ["_np_policy", "_rollout_rng", "reference"]

    def set_reference(self) -> None:
        """Freeze a copy of the policy as it is now (the clone after OINPT): the KL term of
        ``finetune.kl_coef`` pulls toward it, and the log measures the distance to it."""
        import copy

        self.reference = copy.deepcopy(self.policy)
        self.reference.set_training_mode(False)
        for p in self.reference.parameters():
            p.requires_grad_(False)

    def _warming_up(self) -> bool:
        """Whether this update trains the critic only (``finetune.critic_warmup_rollouts``).

        The rule, fixed before any run: the actor stays frozen from the first update until
        the critic's explained variance on the rollout reaches ``critic_warmup_ev`` on two
        rollouts in a row, or for ``critic_warmup_rollouts`` updates at most."""
        ft = self.finetune
        return ft.critic_warmup_rollouts > 0 and self._n_updates_done() < ft.critic_warmup_rollouts and self._warm < 2

    def _n_updates_done(self) -> int:
        return len(self.finetune_log)

    def rollout_rng(self) -> np.random.Generator:
        """The generator actions are sampled with: seeded from the model's seed, made once."""
        if self._rollout_rng is None:
            # a stream of its own, not the one a plain default_rng(seed) elsewhere would give
            self._rollout_rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(0x50504F,)))
        return self._rollout_rng

    def _fast_env(self, env, rollout_buffer, use_masking: bool):
        """The unwrapped env when the fast loop applies to this set-up, else None."""
        from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableRolloutBuffer
        from stable_baselines3.common.monitor import Monitor
        from stable_baselines3.common.vec_env import DummyVecEnv
        from gymnasium import spaces

        if not (self.fast_rollout and use_masking and isinstance(env, DummyVecEnv) and env.num_envs == 1):
            return None
        if not isinstance(self.action_space, spaces.Discrete) or not isinstance(self.observation_space, spaces.Box):
            return None
        if type(rollout_buffer) is not MaskableRolloutBuffer or isinstance(rollout_buffer, MaskableDictRolloutBuffer):
            return None
        wrapped = env.envs[0]
        # only SB3's own Monitor may sit between the vec env and the env: nothing that
        # changes observations or rewards is skipped by stepping the env directly
        if not (type(wrapped) is Monitor and wrapped.env is wrapped.unwrapped):
            return None
        if not hasattr(wrapped.unwrapped, "action_masks"):
            return None
        try:
            if self._np_policy is None or self._np_policy.policy is not self.policy:
                self._np_policy = numpy_actor_critic(self.policy)
        except ValueError:
            return None
        return wrapped.unwrapped

    def train(self) -> None:
        """SB3's PPO update, unchanged; with the fast loop, torch's distribution checks are off.

        ``torch.distributions`` validates its arguments at every construction (three per
        minibatch in sb3-contrib's masked distribution), ~12 % of the update here. The
        checks only raise on malformed logits and change no number; the rollout loop
        raises on non-finite logits itself.
        """
        c0 = time.process_time()
        warmup = self._warming_up()
        awr = self.finetune.actor_update == "awr"
        # SB3's update trains the critic only while the critic warms up, and always with AWR
        actor = actor_parameters(self.policy) if warmup or awr else []
        for p in actor:  # Adam skips parameters without a gradient: the actor does not move
            p.requires_grad_(False)
        try:
            self._train()
            for p in actor:
                p.requires_grad_(True)
            with unchecked_distributions():
                if awr and not warmup:
                    self._advantage_weighted()
                if self.finetune.kl_coef > 0 and self.reference is not None and not warmup:
                    self._kickstart()
                self._log_update(warmup)
        finally:
            for p in actor:
                p.requires_grad_(True)
            self.phase_cpu["update"] += time.process_time() - c0

    def _rollout_states(self) -> tuple[th.Tensor, np.ndarray]:
        """The last rollout's observations (a tensor) and action masks."""
        buf = self.rollout_buffer
        obs = th.as_tensor(buf.observations.reshape(buf.buffer_size, -1))
        # attr-defined: sb3-contrib leaves action_masks unannotated, None until reset() fills the array
        masks = buf.action_masks.reshape(buf.buffer_size, -1)  # type: ignore[attr-defined]
        return obs, masks

    def _rollout_distributions(self):
        """(policy, clone) distributions on the last rollout's states, with its masks."""
        obs, masks = self._rollout_states()
        mine = self.policy.get_distribution(obs, action_masks=masks).distribution
        ref = None if self.reference is None else self.reference.get_distribution(obs, action_masks=masks).distribution
        return mine, ref

    def _rollout_tensors(self) -> tuple[th.Tensor, np.ndarray, th.Tensor, th.Tensor]:
        """The last rollout's observations, masks, actions and normalised advantages."""
        buf = self.rollout_buffer
        obs, masks = self._rollout_states()
        acts = th.as_tensor(buf.actions.reshape(buf.buffer_size)).long()
        adv = th.as_tensor(buf.advantages.reshape(buf.buffer_size))
        return obs, masks, acts, (adv - adv.mean()) / (adv.std() + 1e-8)

    def _advantage_weighted(self) -> None:
        """``n_epochs`` passes of advantage-weighted regression on the rollout's own actions.

        AWR [Peng et al. 2019]: maximise ``E[w log pi(a|s)]`` with ``w = exp(A / beta)`` of the
        normalised GAE advantages (clipped at 20, as AWR does), a supervised step that moves the
        actor toward the actions that did better than the critic expected. Written here, not
        taken from a library, because no maintained one has it for sb3-contrib's masked
        policies; the critic is trained by SB3's own update beforehand (actor frozen there)."""
        assert self.seed is not None and self.batch_size is not None
        if not hasattr(self, "_awr_optimizer"):
            assert not callable(self.learning_rate), "a constant learning rate (ppo.learning_rate)"
            self._awr_optimizer = th.optim.Adam(actor_parameters(self.policy), lr=self.learning_rate)
        obs, masks, acts, adv = self._rollout_tensors()
        weights = th.clamp(th.exp(adv / self.finetune.awr_beta), max=20.0)
        gen = th.Generator().manual_seed(self.seed * 104729 + len(self.finetune_log))
        self.policy.set_training_mode(True)
        for _ in range(self.n_epochs):
            perm = th.randperm(len(acts), generator=gen)
            for i in range(0, len(acts), self.batch_size):
                idx = perm[i:i + self.batch_size]
                dist = self.policy.get_distribution(obs[idx], action_masks=masks[idx.numpy()]).distribution
                loss = -(weights[idx] * dist.log_prob(acts[idx])).mean()
                self._awr_optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self._awr_optimizer.step()
        self.policy.set_training_mode(False)

    def gradient_snr(self, chunks: int = 8) -> float:
        """Signal-to-noise of the policy gradient on the last rollout: ``|g|^2 / tr Cov(g)``.

        ``g`` is the gradient of ``-E[A log pi(a|s)]`` (normalised advantages) over the actor's
        parameters, estimated on ``chunks`` consecutive parts of the rollout; the noise is the
        variance of their mean. Above 1 the rollout's gradient points somewhere; far below 1 it
        is mostly noise, and PPO's steps wander."""
        obs, masks, acts, adv = self._rollout_tensors()
        params = actor_parameters(self.policy)
        grads = []
        for part in np.array_split(np.arange(len(acts)), chunks):
            idx = th.as_tensor(part)
            dist = self.policy.get_distribution(obs[idx], action_masks=masks[part]).distribution
            loss = -(adv[idx] * dist.log_prob(acts[idx])).mean()
            g = th.autograd.grad(loss, params, allow_unused=True)
            grads.append(th.cat([(x if x is not None else th.zeros_like(p)).flatten() for x, p in zip(g, params)]))
        stacked = th.stack(grads)
        mean = stacked.mean(dim=0)
        noise = float(((stacked - mean) ** 2).sum()) / (chunks * (chunks - 1))
        return float((mean ** 2).sum()) / noise if noise > 0 else float("inf")

    def _kickstart(self) -> None:
        """One pass of ``kl_coef * kl_decay**k * KL(clone || policy)`` over the rollout's states.

        Kickstarting [Schmitt et al. 2018] adds this term to the PPO loss; here it is taken in
        separate minibatch steps after SB3's update (its ``train()`` stays SB3's own), with its
        own Adam, k counting these passes. Masked servers have probability 0 under both."""
        ft = self.finetune
        weight = ft.kl_coef * ft.kl_decay ** self._kl_updates
        self._kl_updates += 1
        if weight < 1e-6:
            return
        # train() calls this only with a clone to pull toward; the study's models have a seed and a minibatch size
        assert self.reference is not None and self.seed is not None and self.batch_size is not None
        if not hasattr(self, "_kl_optimizer"):
            assert not callable(self.learning_rate), "a constant learning rate (ppo.learning_rate)"
            self._kl_optimizer = th.optim.Adam(actor_parameters(self.policy), lr=self.learning_rate)
        buf = self.rollout_buffer
        obs, masks = self._rollout_states()
        gen = th.Generator().manual_seed(self.seed * 7919 + self._kl_updates)
        perm = th.randperm(buf.buffer_size, generator=gen)
        self.policy.set_training_mode(True)
        for i in range(0, buf.buffer_size, self.batch_size):
            idx = perm[i:i + self.batch_size].numpy()
            with th.no_grad():
                ref = self.reference.get_distribution(obs[idx], action_masks=masks[idx]).distribution
            mine = self.policy.get_distribution(obs[idx], action_masks=masks[idx]).distribution
            kl = (ref.probs * (ref.logits - mine.logits)).sum(dim=1).mean()
            self._kl_optimizer.zero_grad()
            (weight * kl).backward()
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self._kl_optimizer.step()
        self.policy.set_training_mode(False)

    def _log_update(self, warmup: bool) -> None:
        from stable_baselines3.common.utils import explained_variance

        buf = self.rollout_buffer
        ev = float(explained_variance(buf.values.flatten(), buf.returns.flatten()))
        if self.finetune.critic_warmup_rollouts > 0:
            self._warm = self._warm + 1 if ev >= self.finetune.critic_warmup_ev else 0
        with th.no_grad():
            mine, ref = self._rollout_distributions()
            entropy = float(mine.entropy().mean())
            kl = float((ref.probs * (ref.logits - mine.logits)).sum(dim=1).mean()) if ref is not None else float("nan")
        row = {"timesteps": int(self.num_timesteps), "explained_variance": ev,
               "entropy": entropy, "kl_to_clone": kl, "actor_frozen": warmup}
        if self.finetune.diagnostics:
            with th.no_grad():
                differs = float((mine.probs.argmax(dim=1) != ref.probs.argmax(dim=1)).float().mean()) \
                    if ref is not None else float("nan")
            row.update(gradient_snr=self.gradient_snr(), differs_from_clone=differs,
                       advantage_std=float(np.std(buf.advantages)))
        self.finetune_log.append(row)

    def _train(self) -> None:
        if not self.fast_rollout:
            return super().train()
        with unchecked_distributions():
            super().train()

    def collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps: int, use_masking: bool = True) -> bool:
        """Fill ``rollout_buffer`` with ``n_rollout_steps`` steps (see the class docstring)."""
        c0 = time.process_time()
        try:
            return self._collect_rollouts(env, callback, rollout_buffer, n_rollout_steps, use_masking)
        finally:
            self.phase_cpu["rollout"] += time.process_time() - c0

    def _collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps: int, use_masking: bool) -> bool:
        raw = self._fast_env(env, rollout_buffer, use_masking)
        if raw is None:
            return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps, use_masking)
        assert self._last_obs is not None, "No previous observation was provided"
        self.policy.set_training_mode(False)
        rollout_buffer.reset()
        callback.on_rollout_start()
        # set by _fast_env; the fast loop's observations are a Box (an array) with SB3's starts
        assert self._np_policy is not None and self._last_episode_starts is not None
        assert isinstance(self._last_obs, np.ndarray)
        if self._np_policy.policy is not self.policy:  # a callback swapped the policy object
            self._np_policy = numpy_actor_critic(self.policy)
        net = self._np_policy
        net.refresh()  # after on_rollout_start: imitation updates made there are in the rollout
        rng = self.rollout_rng()
        buf = rollout_buffer
        obs_buf, act_buf, rew_buf = buf.observations[:, 0], buf.actions[:, 0, 0], buf.rewards[:, 0]
        start_buf, val_buf, logp_buf, mask_buf = (buf.episode_starts[:, 0], buf.values[:, 0], buf.log_probs[:, 0],
                                                  buf.action_masks[:, 0])
        obs = np.asarray(self._last_obs[0], dtype=np.float32)
        episode_start = bool(self._last_episode_starts[0])
        wrapped = env.envs[0]
        gamma = self.gamma
        n_steps, done = 0, False
        while n_steps < n_rollout_steps:
            mask = raw.action_masks()
            action, value, log_prob = net.step(obs, mask, rng)
            # the step's row, written before the env moves on; it counts (pos advances) only
            # once the callbacks let the rollout go on, as with SB3's buffer.add
            pos = buf.pos
            obs_buf[pos] = obs
            act_buf[pos] = action
            start_buf[pos] = episode_start
            val_buf[pos] = value
            logp_buf[pos] = log_prob
            mask_buf[pos] = mask
            new_obs, reward, terminated, truncated, info = raw.step(action)
            done = terminated or truncated
            self.num_timesteps += 1
            self._episode_reward += reward
            self._episode_length += 1
            info["TimeLimit.truncated"] = truncated and not terminated
            rewards = np.array([reward], dtype=np.float32)
            if done:  # what Monitor and DummyVecEnv do at the end of an episode
                info["episode"] = {"r": round(self._episode_reward, 6), "l": self._episode_length,
                                   "t": round(time.time() - wrapped.t_start, 6)}
                self._episode_reward, self._episode_length = 0.0, 0
                info["terminal_observation"] = new_obs
                new_obs, _ = wrapped.reset()
                new_obs = np.asarray(new_obs, dtype=np.float32)
            dones = np.array([done])
            callback.update_locals({"dones": dones, "rewards": rewards, "infos": [info],
                                    "actions": np.array([action]), "new_obs": new_obs[None], "n_steps": n_steps})
            if not callback.on_step():
                self._last_obs = obs[None].copy()  # SB3 leaves the state before this step
                self._last_episode_starts = np.array([episode_start])
                return False
            if done:
                self._update_info_buffer([info], dones)
                if info["TimeLimit.truncated"]:  # bootstrap a timeout with the value (SB3 #633)
                    rewards[0] += gamma * net.value(info["terminal_observation"])
            n_steps += 1
            rew_buf[pos] = rewards[0]
            buf.pos = pos + 1
            if buf.pos == buf.buffer_size:
                buf.full = True
            obs, episode_start = new_obs, done
        self._last_obs = obs[None].copy()
        self._last_episode_starts = np.array([episode_start])
        last_values = th.as_tensor(np.array([[net.value(obs)]], dtype=np.float32))
        buf.compute_returns_and_advantage(last_values=last_values, dones=np.array([done]))
        callback.on_rollout_end()
        return True


class PPOPolicy:
    """A trained PPO actor behind the :class:`ilets.agents.policies.Policy` interface."""

    def __init__(self, model: MaskablePPO, state: StateSpec, deterministic: bool = True,
                 name: str = "ppo", seed: int | None = None) -> None:
        self.name = name
        self.actor = numpy_actor_critic(model.policy) if isinstance(model.policy, PerServerPolicy) \
            else NumpyActor(model.policy)
        self.state = state
        self.deterministic = deterministic
        self._obs: np.ndarray | None = None
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = None if self.deterministic else np.random.default_rng(seed)

    def act(self, cloud: Cloud, task: Task, mask: np.ndarray) -> int:
        self._obs = build_observation(cloud, task, self.state, self._obs)
        return self.actor.act(self._obs, mask, self.rng)
