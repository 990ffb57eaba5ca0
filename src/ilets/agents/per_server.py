"""The per-server policy: one shared network scores each server from its own row [ours].

The authors' policy is one MLP over the concatenated state of every server (``policy:
flat``). To pick "the server where this task finishes first" it must learn the same
comparison separately for every server index, and with a 2M+2 input that does not show the
task's wait anywhere it cannot: behaviour cloning agreed with its expert on 6-12 % of states.
The per-server policy follows the learned schedulers that score candidates with one shared
network (Decima, spark-sched-sim, RLScheduler): it reads the ``per-server`` observation
layout (:mod:`ilets.agents.observation`: a few task numbers, then one row per server) and

1. summarises the fleet: ``ctx = [task; mean_i row_i; max_i row_i]`` (the pooled summary);
2. scores each server with one small MLP shared by all servers:
   ``logit_i = w_o . relu(W_r row_i + W_c ctx + b) + b_o``, then the masked softmax over
   servers (sb3-contrib's masked categorical);
3. values the state from the pooled summary alone: ``V = w_v . tanh(W_v ctx + b_v) + b_v'``.

The scorer is deliberately small and ReLU: ``W_c ctx`` is the same for every server and is
computed once, so a decision at 200 servers is one (200 x 14) @ (14 x H) product, and
``tanh`` over 200 x H numbers alone would cost more than the rest (measured:
``benchmarks/bench_per_server.py``). The experts' criteria are simple in these rows:
Earliest-Finish minimises one of them, Greedy-Cost a monotone function of two.

No weight depends on the number of servers, so a policy trained on 50 servers runs on 200.

:class:`PerServerPolicy` is that network as a ``MaskableActorCriticPolicy`` (for
``MaskablePPO``, ``imitation``'s BC and OAIL, which all call the policy's own methods);
:class:`PerServerNumpy` is the same forward pass in numpy for rollouts and decisions (the
role :class:`ilets.agents.ppo.NumpyActorCritic` plays for the flat policy).
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import torch as th
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from ilets.agents.masked import act_masked
from ilets.agents.per_server_kernels import context, forward, greedy, sample, scores


#: Where :class:`PerServerNet`'s ``film`` term clamps a row's numbers before ``expm1``.
FILM_CLAMP = 7.0


class PerServerNet(nn.Module):
    """The shared scorer and the pooled critic (see the module docstring).

    Args:
        n_task: numbers about the task at the start of the observation.
        width: numbers in each server's row.
        hidden: units of the scorer's and of the critic's hidden layer.
        n_extra: actions after the servers' that are not a server (defer, cap levels): one
            logit each from the pooled summary.
        sleep_head: a second score per server from the same hidden layer, after the extra
            actions: the grid-command scenario's sleep actions, one per server
            (``sleep_actions``) [ours]; like the placement score, no weight depends on M.
        defer_rows: score the first extra action (the grid-command defer) per server, as
            placements are: a "later" score per server from the same hidden layer,
            ``later_i = w_l . h_i + b_l``, and the defer logit ``logsumexp_i later_i``, so the
            masked softmax gives deferring the probability it would give M "place it on server
            i later" actions [ours]. Why: the Lyapunov teacher scores a deferral as the best
            placement ``defer_s`` later and defers when that beats the best placement now, a
            comparison of two minima over servers; one logit from the pooled summary can only
            approximate it. Unlike the teacher's minimum over the servers allowed now, the
            logsumexp runs over every row (the scorer sees whether a task fits in the row),
            and at initialisation, with every later score near 0, the defer logit is near
            log M: deferring starts far likelier than one action in M + 1 (BC moves it; a
            learner from scratch would start deferring often). The other extra actions (cap
            levels) keep their pooled logits.
        cap_hidden: score the extra actions after the first (the grid-command cap levels) with
            a hidden ReLU layer of this many units over the pooled summary,
            ``cap = W_2 relu(W_1 ctx + b_1) + b_2``, instead of one linear logit each (0) [ours].
            Why: the power-cap rung steps the cap one level down while the slot runs above the
            target in a down event, one up below it, and lifts it outside down events, so
            whether to set a cap, and which level, turns on the event's direction, the sign of
            the gap and the cap in force together. A hidden layer can form those interactions;
            linear logits must make them out of the mask (the level in force is masked) and the
            placements' scores. Grid ``gridcommand-grid-per-server-cap-pooled`` measures what
            the layer adds.
        film: rank of a term the placement scores gain, a server's row times a vector made
            from the pooled summary: ``logit_i += (U [row_i; expm1(min(row_i, 7))]) .
            (W_2 relu(W_1 ctx + b_1) + b_2)``, ``film`` numbers each (0: none) [ours]. Why: a
            scoring teacher weighs each server's numbers by numbers about the whole decision
            (Lyapunov: its deadline queue times whether the task would miss there), a product
            of a pooled and a per-server number, which ``relu(W_r row_i + W_c ctx)`` only
            pieces together (the context moves its hinges; it cannot scale a row's number).
            The row enters also through ``expm1`` (clamped at 7: a wait of about a thousand
            times ``wait_scale_s``), which undoes the table's ``log1p`` scaling, so a sum of
            energies and waits is linear in it.
            Feature-wise modulation (FiLM, Perez et al. 2018) of the scorer by the summary.
            With ``defer_rows`` too, each later score gains the same term with its own row
            weights, ``(U_l [row_i; expm1(min(row_i, 7))]) . (W_2 relu(W_1 ctx + b_1) + b_2)``:
            the teacher scores a deferral as a placement ``defer_s`` later, a sum of the same
            kind (``ilets.gridcommand.features.TermRows`` shows its terms per row).
    """

    def __init__(self, n_task: int, width: int, hidden: int, n_extra: int = 0, sleep_head: bool = False,
                 defer_rows: bool = False, cap_hidden: int = 0, film: int = 0) -> None:
        super().__init__()
        if film < 0:
            raise ValueError(f"film: expected a rank >= 0, got {film}")
        if defer_rows and n_extra < 1:
            raise ValueError("defer_rows: scores the first extra action (defer) per server, but there is none (n_extra 0)")
        if cap_hidden < 0 or (cap_hidden and n_extra < 2):
            raise ValueError(f"cap_hidden: scores the extra actions after the first (cap levels) with {cap_hidden} "
                             f"hidden units, but there are {max(n_extra - 1, 0)}")
        self.n_task, self.width, self.hidden, self.n_extra = n_task, width, hidden, n_extra
        context = n_task + 2 * width
        self.row = nn.Linear(width, hidden, bias=False)
        self.context = nn.Linear(context, hidden)
        self.score = nn.Linear(hidden, 1)
        self.critic = nn.Linear(context, hidden)
        # actions that are not a server (the grid-command defer, cap levels): one logit each from
        # the pooled summary, after the servers' [ours]; none in the plain scenario
        caps = n_extra - 1 if cap_hidden else 0  # the cap levels, scored by their own network
        pooled = n_extra - caps - (1 if defer_rows else 0)  # extra actions scored linearly from the pooled summary
        self.extra = nn.Linear(context, pooled) if pooled else None
        self.cap = nn.Sequential(nn.Linear(context, cap_hidden), nn.ReLU(), nn.Linear(cap_hidden, caps)) if caps else None
        self.later = nn.Linear(hidden, 1) if defer_rows else None
        self.sleep = nn.Linear(hidden, 1) if sleep_head else None
        self.film_rows = nn.Linear(2 * width, film, bias=False) if film else None
        self.film_ctx = nn.Sequential(nn.Linear(context, hidden), nn.ReLU(), nn.Linear(hidden, film)) if film else None
        self.film_later = nn.Linear(2 * width, film, bias=False) if film and defer_rows else None
        # SB3 reads these to size its heads; the heads are built by PerServerPolicy._build
        self.latent_dim_pi = 0
        self.latent_dim_vf = hidden

    def servers(self, obs: th.Tensor) -> int:
        """The fleet size an observation of this layout describes (raises if it fits none)."""
        m, rest = divmod(obs.shape[-1] - self.n_task, self.width)
        if rest or m < 1:
            raise ValueError(f"per-server policy: an observation of {obs.shape[-1]} numbers is not "
                             f"{self.n_task} task numbers plus rows of {self.width}")
        return m

    def split(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """(rows (B, M, width), pooled context (B, n_task + 2 width)) of a batch of observations."""
        m = self.servers(obs)
        rows = obs[:, self.n_task:].reshape(obs.shape[0], m, self.width)
        # the max over servers on a (B, width, M) copy: the same values (and the same gradient,
        # ties shared alike), but a reduction over the last dimension runs ~5x faster on CPU
        top = rows.transpose(1, 2).contiguous().amax(dim=-1)
        return rows, th.cat([obs[:, :self.n_task], rows.mean(dim=1), top], dim=1)

    def _logits(self, rows: th.Tensor, ctx: th.Tensor) -> th.Tensor:
        h = th.relu(self.row(rows) + self.context(ctx).unsqueeze(1))  # (B, M, H)
        z = self.score(h).squeeze(-1)  # (B, M)
        later = None if self.later is None else self.later(h).squeeze(-1)  # (B, M)
        if self.film_rows is not None and self.film_ctx is not None:
            lifted = th.cat([rows, th.expm1(rows.clamp(max=FILM_CLAMP))], dim=-1)  # (B, M, 2 width)
            scale = self.film_ctx(ctx).unsqueeze(1)  # (B, 1, film)
            z = z + (self.film_rows(lifted) * scale).sum(-1)
            if later is not None and self.film_later is not None:
                later = later + (self.film_later(lifted) * scale).sum(-1)
        parts = [z]
        if later is not None:
            parts.append(th.logsumexp(later, dim=1, keepdim=True))  # (B, 1): defer
        if self.extra is not None:
            parts.append(self.extra(ctx))
        if self.cap is not None:
            parts.append(self.cap(ctx))
        if self.sleep is not None:
            parts.append(self.sleep(h).squeeze(-1))
        return parts[0] if len(parts) == 1 else th.cat(parts, dim=1)  # (B, M + n_extra [+ M])

    def forward(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """(logits over servers, the critic's latent)."""
        rows, ctx = self.split(obs)
        return self._logits(rows, ctx), th.tanh(self.critic(ctx))

    def forward_actor(self, obs: th.Tensor) -> th.Tensor:
        return self._logits(*self.split(obs))

    def forward_critic(self, obs: th.Tensor) -> th.Tensor:
        return th.tanh(self.critic(self.split(obs)[1]))


class PerServerPolicy(MaskableActorCriticPolicy):
    """:class:`PerServerNet` behind sb3-contrib's masked actor-critic interface.

    The observation is flattened as usual (the layout is already flat); SB3's MLP extractor
    is :class:`PerServerNet`, whose actor latent *is* the logits (``action_net`` is the
    identity) and whose critic latent feeds SB3's ``value_net``. Everything else, masked
    distributions, ``evaluate_actions`` for PPO and BC, saving, is sb3-contrib's own.
    """

    # SB3 types mlp_extractor as its MlpExtractor; _build_mlp_extractor, SB3's hook for a custom
    # extractor, sets a PerServerNet (same latent_dim_pi/vf and forward_actor/critic, no subclass)
    mlp_extractor: PerServerNet  # type: ignore[assignment]

    def __init__(self, *args: Any, n_task: int, width: int, hidden: int = 32, n_extra: int = 0,
                 sleep_head: bool = False, defer_rows: bool = False, cap_hidden: int = 0, film: int = 0,
                 **kwargs: Any) -> None:
        self.n_task, self.width, self.hidden, self.n_extra = n_task, width, hidden, n_extra
        self.sleep_head, self.defer_rows, self.cap_hidden = bool(sleep_head), bool(defer_rows), int(cap_hidden)
        self.film = int(film)
        kwargs.setdefault("activation_fn", nn.Tanh)
        super().__init__(*args, **kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(n_task=self.n_task, width=self.width, hidden=self.hidden)
        if self.n_extra:  # only when set: a plain policy's saved parameters stay as they were
            data.update(n_extra=self.n_extra)
        if self.sleep_head:
            data.update(sleep_head=True)
        if self.defer_rows:
            data.update(defer_rows=True)
        if self.cap_hidden:
            data.update(cap_hidden=self.cap_hidden)
        if self.film:
            data.update(film=self.film)
        return data

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = PerServerNet(self.n_task, self.width, self.hidden, self.n_extra, self.sleep_head,
                                          self.defer_rows, self.cap_hidden, self.film)

    def _build(self, lr_schedule) -> None:
        """The networks and the optimizer (SB3's ``_build`` with an identity action head)."""
        self._build_mlp_extractor()
        self.action_net = nn.Identity()
        self.value_net = nn.Linear(self.mlp_extractor.latent_dim_vf, 1)
        if self.ortho_init:  # SB3's gains: sqrt(2) inside, 0.01 for the scores, 1 for the value
            self.mlp_extractor.apply(lambda m: self.init_weights(m, gain=math.sqrt(2)))
            self.init_weights(self.mlp_extractor.score, gain=0.01)
            net = self.mlp_extractor
            for head in (net.extra, net.later, net.sleep, None if net.cap is None else net.cap[-1],
                         None if net.film_ctx is None else net.film_ctx[-1]):
                if head is not None:
                    self.init_weights(head, gain=0.01)
            self.init_weights(self.value_net, gain=1.0)
        # call-arg: torch's Optimizer base has no lr; SB3's own _build has the same ignore
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]


class PerServerNumpy:
    """:class:`PerServerPolicy`'s actor and critic in numpy, for rollouts and decisions.

    The context term ``W_c ctx + b`` is the same for every server and is computed once, so
    a decision is one (M x width) @ (width x H) product, a ReLU and a dot product. Call
    :meth:`refresh` after the torch weights change. It offers what
    :class:`ilets.agents.ppo.NumpyActorCritic` offers: ``logits``, ``act``, ``value`` and
    ``step``.
    """

    def __init__(self, policy: PerServerPolicy) -> None:
        self.policy = policy
        self.refresh()

    def refresh(self) -> None:
        net: PerServerNet = self.policy.mlp_extractor

        def arr(x: th.Tensor) -> np.ndarray:
            return np.ascontiguousarray(x.detach().numpy().astype(np.float32))

        with th.no_grad():
            self.n_task, self.width = net.n_task, net.width
            self.w_row = arr(net.row.weight.T)
            self.w_context, self.b_context = arr(net.context.weight.T), arr(net.context.bias)
            self.w_score, self.b_score = arr(net.score.weight[0]), np.float32(net.score.bias.item())
            self.w_critic, self.b_critic = arr(net.critic.weight.T), arr(net.critic.bias)
            self.w_value = arr(self.policy.value_net.weight[0])
            self.b_value = np.float32(self.policy.value_net.bias.item())
            self.n_extra = net.n_extra
            self.pooled_extra = net.extra is not None
            if net.extra is not None:
                self.w_extra, self.b_extra = arr(net.extra.weight.T), arr(net.extra.bias)
            self.defer_rows = net.later is not None
            if net.later is not None:
                self.w_later, self.b_later = arr(net.later.weight[0]), np.float32(net.later.bias.item())
            self.cap_head = net.cap is not None
            if net.cap is not None:
                first, last = cast(nn.Linear, net.cap[0]), cast(nn.Linear, net.cap[2])
                self.w_cap1, self.b_cap1 = arr(first.weight.T), arr(first.bias)
                self.w_cap2, self.b_cap2 = arr(last.weight.T), arr(last.bias)
            self.sleep_head = net.sleep is not None
            if net.sleep is not None:
                self.w_sleep, self.b_sleep = arr(net.sleep.weight[0]), np.float32(net.sleep.bias.item())
            self.film = net.film_rows is not None and net.film_ctx is not None
            if net.film_rows is not None and net.film_ctx is not None:
                first, last = cast(nn.Linear, net.film_ctx[0]), cast(nn.Linear, net.film_ctx[2])
                self.w_film_rows = arr(net.film_rows.weight.T)
                self.w_film1, self.b_film1 = arr(first.weight.T), arr(first.bias)
                self.w_film2, self.b_film2 = arr(last.weight.T), arr(last.bias)
            self.film_later = net.film_later is not None
            if net.film_later is not None:
                self.w_film_later = arr(net.film_later.weight.T)

    def _servers(self, obs: np.ndarray) -> int:
        return (len(obs) - self.n_task) // self.width

    def _with_extra(self, z: np.ndarray, obs: np.ndarray, ctx: np.ndarray) -> np.ndarray:
        """The servers' scores ``z`` (the compiled kernels' plain scores), with the ``film``
        term added (:class:`PerServerNet`), followed by the other actions' logits: with the
        later rows, the defer logit ``logsumexp_i later_i`` (with the film term too where the
        net has one); then the pooled ones (``W_e ctx + b_e``); then, with the cap head, the cap
        levels' (``W_2 relu(W_1 ctx + b_1) + b_2``); then, with the sleep head, each server's
        sleep score. The later and sleep scores read each server's hidden layer, recomputed
        here: the compiled kernels keep only the placement score. The film term's lifted rows
        and vector are made once for the placements and the later scores."""
        if self.film:
            lifted, scale = self._lifted(obs), self._film_scale(ctx)
            z = (z + (lifted @ self.w_film_rows) @ scale).astype(np.float32, copy=False)
        parts = [z]
        if self.defer_rows or self.sleep_head:
            rows = obs[self.n_task:].reshape(-1, self.width)
            h = np.maximum(rows @ self.w_row + (ctx @ self.w_context + self.b_context), np.float32(0))
        if self.defer_rows:
            later = h @ self.w_later + self.b_later
            if self.film_later:
                later = later + (lifted @ self.w_film_later) @ scale
            top = later.max()
            parts.append(np.array([top + np.log(np.exp(later - top).sum())], np.float32))
        if self.pooled_extra:
            parts.append(ctx @ self.w_extra + self.b_extra)
        if self.cap_head:
            parts.append(np.maximum(ctx @ self.w_cap1 + self.b_cap1, np.float32(0)) @ self.w_cap2 + self.b_cap2)
        if self.sleep_head:
            parts.append(h @ self.w_sleep + self.b_sleep)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _split(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ctx = np.empty(self.n_task + 2 * self.width, np.float32)
        context(obs, self.n_task, self.width, ctx)
        return obs, ctx

    def _scores(self, obs: np.ndarray, ctx: np.ndarray) -> np.ndarray:
        out = np.empty(self._servers(obs), np.float32)
        scores(obs, self.n_task, self.width, self.w_row, ctx @ self.w_context + self.b_context, self.w_score,
               self.b_score, out)
        return out

    def _lifted(self, obs: np.ndarray) -> np.ndarray:
        """Each row and its ``expm1`` (clamped), side by side: what the film term's row weights read."""
        rows = obs[self.n_task:].reshape(-1, self.width)
        return np.concatenate([rows, np.expm1(np.minimum(rows, np.float32(FILM_CLAMP)))], axis=1)

    def _film_scale(self, ctx: np.ndarray) -> np.ndarray:
        """The film term's vector made from the pooled summary."""
        return np.maximum(ctx @ self.w_film1 + self.b_film1, np.float32(0)) @ self.w_film2 + self.b_film2

    def _value(self, ctx: np.ndarray) -> np.float32:
        return np.float32(np.tanh(ctx @ self.w_critic + self.b_critic) @ self.w_value + self.b_value)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Scores of every server for one observation (then the other actions' logits)."""
        obs, ctx = self._split(obs)
        return self._with_extra(self._scores(obs, ctx), obs, ctx)

    def value(self, obs: np.ndarray) -> np.float32:
        """The critic's value of one observation."""
        return self._value(self._split(obs)[1])

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> int:
        """The greedy masked action, or a sample from the masked softmax when ``rng`` is given.

        Greedy, one compiled pass (:func:`ilets.agents.per_server_kernels.greedy`) scores the
        allowed servers and keeps the first best: what ``act_masked(logits, mask)`` returns."""
        if rng is not None or self.n_extra or self.sleep_head or self.film:
            return act_masked(self.logits(obs), mask, rng)
        ctx = self._split(obs)[1]
        best = greedy(obs, self.n_task, self.width, self.w_row, ctx @ self.w_context + self.b_context, self.w_score,
                      self.b_score, mask)
        return best if best >= 0 else 0  # nothing allowed: argmax of all -inf, as act_masked

    def step(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> tuple[int, np.float32, float]:
        """Sample a server; return it, the value and its log-probability (as the flat path does).

        One compiled pass (:func:`ilets.agents.per_server_kernels.forward`, then
        :func:`~ilets.agents.per_server_kernels.sample`): the same distribution as
        :func:`ilets.agents.masked.sample_masked`, computed in float64."""
        z = np.empty(self._servers(obs), np.float32)
        value = forward(obs, self.n_task, self.width, self.w_row, self.w_context, self.b_context, self.w_score,
                        self.b_score, self.w_critic, self.b_critic, self.w_value, self.b_value, z)
        if self.n_extra or self.sleep_head or self.film:
            ctx = self._split(obs)[1]
            z = self._with_extra(z, obs, ctx)
        a, log_prob = sample(z, mask, rng.random())
        if a < 0:
            raise ValueError(f"the policy's logits are not finite: {z}")
        return a, np.float32(value), log_prob
