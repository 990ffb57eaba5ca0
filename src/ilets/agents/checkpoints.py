"""Held-out greedy evaluation through an online pass: does fine-tuning keep what imitation taught?

The online metrics of a learner mix what it knows with the noise of its sampled actions. At
``finetune.checkpoints`` evenly spaced points of the pass (and once before it starts, which
for DRL+ is the frozen clone) :class:`GreedyCheckpoints` copies the policy's actor and lets it
schedule a held-out segment greedily, frozen, on a fresh cloud: the last
``finetune.checkpoint_tasks`` tasks of the offline half, which OINPT never demonstrates (it
clones the first ``oinpt.max_demo_tasks`` and holds out the next
:data:`ilets.agents.oinpt.HELDOUT_TASKS`). The evaluations run between two rollouts, so
they change nothing the learner sees.
"""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from ilets.agents.observation import StateSpec
from ilets.config import RunConfig
from ilets.simulator.cloud import Fleet
from ilets.workloads.workload import TaskTable


def heldout_segment(offline: TaskTable, n: int) -> TaskTable:
    """The last ``n`` tasks of the offline half (all of it when shorter)."""
    return offline.slice(max(0, len(offline) - n), len(offline))


def greedy_score(model, cfg: RunConfig, tasks: TaskTable, fleet: Fleet) -> dict[str, float]:
    """Schedule ``tasks`` with ``model``'s actor, greedy and frozen; the segment's metrics."""
    from ilets.agents.env import CloudSchedulingEnv
    from ilets.agents.episode import DecisionLog, drive
    from ilets.agents.ppo import PPOPolicy

    env = CloudSchedulingEnv(cfg, tasks=tasks, fleet=fleet)
    env.reset()
    log = DecisionLog()
    drive(env, PPOPolicy(model, StateSpec.of(cfg)), log)
    return segment_metrics(log)


def segment_metrics(log) -> dict[str, float]:
    """A scheduled segment's mean reward, mean response time, success rate and energy (a
    :class:`ilets.agents.episode.DecisionLog`)."""
    return {"mean_reward": float(np.mean(log.reward)), **{k: float(log.final[k]) for k in
                                                          ("avg_response_s", "success_rate", "energy_kwh")}}


def reference_scores(cfg: RunConfig, tasks: TaskTable, fleet: Fleet) -> dict[str, float]:
    """Each heuristic of ``cfg.finetune.checkpoint_references`` on the held-out segment:
    ``heldout_ref_<name>_<metric>``, the yardsticks of the RL stage's control."""
    import dataclasses

    from ilets.agents.env import CloudSchedulingEnv
    from ilets.agents.episode import DecisionLog, drive
    from ilets.agents.policies import make_heuristic

    out: dict[str, float] = {}
    for name in cfg.finetune.checkpoint_references:
        env = CloudSchedulingEnv(dataclasses.replace(cfg, method=name), tasks=tasks, fleet=fleet)
        env.observing = False  # a heuristic reads the cloud, never the observation
        env.reset()
        log = DecisionLog()
        drive(env, make_heuristic(name, seed=cfg.seed, reward=cfg.reward), log)
        out.update({f"heldout_ref_{name}_{k}": v for k, v in segment_metrics(log).items()})
    return out


class GreedyCheckpoints(BaseCallback):
    """Greedy held-out scores at ``points`` decisions of the pass (see the module docstring)."""

    def __init__(self, cfg: RunConfig, tasks: TaskTable, fleet: Fleet, points: list[int]) -> None:
        super().__init__()
        self.cfg, self.tasks, self.fleet = cfg, tasks, fleet
        self.points = sorted(points)
        self.rows: list[dict] = []

    def _score(self, decisions: int) -> None:
        self.rows.append({"decisions": decisions, **greedy_score(self.model, self.cfg, self.tasks, self.fleet)})

    def _on_training_start(self) -> None:
        self._score(0)

    def _on_rollout_start(self) -> None:
        t = int(self.model.num_timesteps)
        while self.points and self.points[0] <= t:
            self.points.pop(0)
            self._score(t)

    def _on_step(self) -> bool:
        return True
