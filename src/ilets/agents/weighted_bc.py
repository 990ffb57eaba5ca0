"""Weighted behaviour-cloning steps on the live policy: how online corrections reach a learner.

Both online imitation loops, OAIL (:class:`ilets.agents.oail.OAILCallback`: each expert's
plan, weighted by rank) and the grid-command scenario's corrections
(:class:`ilets.gridcommand.online.GridCorrections`: the teacher's labels on the states the
learner visited), update the very policy PPO is training, between rollouts, the same way:
a few gradient steps of ``imitation``'s BC loss (the labels' negative log-likelihood and an
entropy bonus, no L2 term), summed over labelled batches each with its own weight, the
gradient norm clipped to :data:`MAX_GRAD_NORM`, with an Adam optimiser of their own (PPO's
optimiser and its moments are not touched).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import torch as th

if TYPE_CHECKING:
    from imitation.algorithms.bc import BehaviorCloningLossCalculator
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

#: The gradient-norm clip of every step (the value of PPO's default ``max_grad_norm``).
MAX_GRAD_NORM = 0.5


class LabelledBatch(NamedTuple):
    """Observations, the actions they are labelled with, and the weight of their loss."""

    weight: float
    obs: th.Tensor  #: float32, one row per state
    acts: th.Tensor  #: int64, one label per state


class WeightedBC:
    """BC steps on ``policy`` with an Adam optimiser of its own (module docstring).

    Args:
        policy: the policy PPO trains (updated in place).
        learning_rate: the optimiser's learning rate.
        ent_weight: the BC loss's entropy bonus.
    """

    def __init__(self, policy: MaskableActorCriticPolicy, learning_rate: float, ent_weight: float) -> None:
        from imitation.algorithms.bc import BehaviorCloningLossCalculator

        self.policy = policy
        self.optimizer = th.optim.Adam(policy.parameters(), lr=learning_rate)
        self.loss_fn: BehaviorCloningLossCalculator = BehaviorCloningLossCalculator(ent_weight=ent_weight,
                                                                                   l2_weight=0.0)

    def train(self, batches: Sequence[LabelledBatch], steps: int) -> int:
        """Take ``steps`` gradient steps on the weighted sum of the batches' BC losses (none
        when there is no batch); returns the steps taken. Every batch must hold a state."""
        policy = self.policy
        policy.set_training_mode(True)
        taken = 0
        for _ in range(steps if batches else 0):
            loss: th.Tensor | None = None
            for batch in batches:
                # arg-type: imitation types the policy as an ActorCriticPolicy; a
                # MaskableActorCriticPolicy has the evaluate_actions that is all the loss calls
                term = batch.weight * self.loss_fn(policy, batch.obs, batch.acts).loss  # type: ignore[arg-type]
                loss = term if loss is None else loss + term
            assert loss is not None  # batches is not empty
            self.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), MAX_GRAD_NORM)
            self.optimizer.step()
            taken += 1
        policy.set_training_mode(False)
        return taken
