"""PPO for one online pass, and a fast numpy path for the scheduling decision itself.

The learner is sb3-contrib's ``MaskablePPO`` (SB3 PPO plus action masks, so a task is never
offered a server too small for it). Actor and critic are separate one-hidden-layer MLPs of
``cfg.hidden`` (128) tanh units [paper: "fully connected, 128 neurons"]:
``net_arch = dict(pi=[128], vf=[128])``.

:class:`NumpyActor` copies the actor's weights into numpy arrays; a decision is then one
128-unit matrix-vector product without torch's per-call overhead. It is what
:class:`PPOPolicy` (the policy interface shared with the heuristics) uses, and what the
decision-time benchmark measures against SB3's ``model.predict``.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch as th
from sb3_contrib import MaskablePPO

from ilets.cloud import Cloud
from ilets.config import PPOConfig
from ilets.env import StateSpec, build_observation
from ilets.objective import Task


# sb3-contrib reads ``action_masks`` through SB3's Monitor wrapper, which Gymnasium 0.29
# flags as deprecated on every step; the lookup is correct, so silence only that message.
warnings.filterwarnings("ignore", message=r".*env\.action_masks to get variables from other wrappers.*")


def make_ppo(env, cfg: PPOConfig, seed: int) -> MaskablePPO:
    """A fresh MaskablePPO on ``env`` with the study's architecture and hyperparameters."""
    th.set_num_threads(1)
    return MaskablePPO(
        "MlpPolicy", env,
        learning_rate=cfg.learning_rate, n_steps=cfg.n_steps, batch_size=cfg.batch_size,
        n_epochs=cfg.n_epochs, gamma=cfg.gamma, gae_lambda=cfg.gae_lambda, clip_range=cfg.clip_range,
        ent_coef=cfg.ent_coef, vf_coef=cfg.vf_coef, max_grad_norm=cfg.max_grad_norm,
        policy_kwargs=dict(net_arch=dict(pi=[cfg.hidden], vf=[cfg.hidden]), activation_fn=th.nn.Tanh),
        seed=seed, device="cpu", verbose=0,
    )


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
        z = np.where(mask, self.logits(obs), -np.inf)
        if rng is None:
            return int(np.argmax(z))
        p = np.exp(z - z.max())
        return int(rng.choice(len(p), p=p / p.sum()))


class PPOPolicy:
    """A trained PPO actor behind the :class:`ilets.policies.Policy` interface."""

    def __init__(self, model: MaskablePPO, state: StateSpec, deterministic: bool = True,
                 name: str = "ppo", seed: int | None = None) -> None:
        self.name = name
        self.actor = NumpyActor(model.policy)
        self.state = state
        self.deterministic = deterministic
        self._obs: np.ndarray | None = None
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = None if self.deterministic else np.random.default_rng(seed)

    def act(self, cloud: Cloud, task: Task, mask: np.ndarray) -> int:
        self._obs = build_observation(cloud, task, self.state, self._obs)
        return self.actor.act(self._obs, mask, self.rng)
