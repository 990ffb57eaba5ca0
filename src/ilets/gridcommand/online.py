"""The grid-command pipeline's online pass: PPO over the scored episode, alone or with
expert corrections (:class:`GridCorrections`).

Synchronous corrections [ours]: the teacher answers at once (no emulator pool, no latency).
The scenario runs in simulated time, so an answer "at once" is a declared choice, not a
host-speed effect: every correction queued before the last rollout is applied, and a run is
bit-reproducible from its seed (tested).

The teacher shadows every decision [ours]: the ladder's experts keep state across decisions
(Lyapunov's virtual queues, MPC's budgets and deferred tasks), so the callback asks the
teacher at every decision and keeps only the last ``window`` answers; a teacher asked only
now and then would see its queues jump. The default teacher is ``lyapunov``: it scores
each state on its own (no plan that assumes its own earlier deferrals were followed, unlike
the oracle and MPC) and needs no hindsight.
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

from ilets.agents.ppo import make_run_ppo
from ilets.agents.weighted_bc import LabelledBatch, WeightedBC
from ilets.gridcommand.config import GridCommandConfig
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.metrics import tracking_metrics
from ilets.gridcommand.pipeline_config import CLONED, CORRECTED, ONLINE, PipelineConfig
from ilets.gridcommand.teacher import scenario_expert

if TYPE_CHECKING:
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy


class GridCorrections(BaseCallback):
    """OAIL-style expert corrections on :class:`GridCommandEnv`, synchronous (module docstring).

    Counters (:attr:`counters`): ``requests`` (corrections queued), ``applied`` (BC updates
    made from them), ``updates`` (gradient steps), ``labels`` (states labelled and used),
    ``agreement`` (share of labelled states where the learner's own action was the
    teacher's, before the update), CPU seconds of the teacher and of the updates.
    """

    def __init__(self, teacher: str, every: int, window: int, weight: float, learning_rate: float,
                 bc_steps: int, ent_weight: float = 1e-3) -> None:
        super().__init__()
        self.teacher_name = teacher
        self.every, self.window, self.weight = every, window, weight
        self.learning_rate, self.bc_steps, self.ent_weight = learning_rate, bc_steps, ent_weight
        self.counters = {"requests": 0, "applied": 0, "updates": 0, "labels": 0, "agree": 0,
                         "teacher_cpu_s": 0.0, "update_cpu_s": 0.0}
        self._recent: deque[tuple[np.ndarray, int, int]] = deque(maxlen=window)  # (obs, teacher, learner)
        self._queued: list[list[tuple[np.ndarray, int, int]]] = []

    def _on_training_start(self) -> None:
        # attr-defined: SB3 types training_env as a VecEnv; it is a DummyVecEnv (or a wrapper forwarding to one)
        self.env: GridCommandEnv = self.training_env.envs[0].unwrapped  # type: ignore[attr-defined]
        self.teacher = scenario_expert(self.teacher_name, self.env.config)
        self.teacher.reset()
        # SB3 types model.policy as a BasePolicy; the pipeline's models are MaskablePPO (make_ppo)
        self.bc = WeightedBC(cast("MaskableActorCriticPolicy", self.model.policy), self.learning_rate,
                             self.ent_weight)
        self._obs = self.env.observe()  # the decision the learner faces first
        self._label()

    def _label(self) -> None:
        """The teacher's answer at the env's current decision (it reads, never changes, the env)."""
        c0 = time.process_time()
        self._pending_label = int(self.teacher.act(self.env))
        self.counters["teacher_cpu_s"] += time.process_time() - c0

    def _on_step(self) -> bool:
        # the decision just taken: its state, the teacher's answer there, the learner's action
        self._recent.append((self._obs, self._pending_label, int(self.locals["actions"][0])))
        if self.locals["dones"][0]:  # a new episode: the teacher's state starts over too
            self.teacher.reset()
            self._recent.clear()
        elif self.env.t % self.every == 0 and len(self._recent) == self.window:
            self._queued.append(list(self._recent))
            self.counters["requests"] += 1
        self._obs = np.asarray(self.locals["new_obs"][0], np.float32)
        self._label()
        return True

    def _on_rollout_start(self) -> None:
        # between rollouts only: each rollout is collected by one fixed policy (PPO on-policy)
        queued, self._queued = self._queued, []
        for batch in queued:
            self._update(batch)

    def _update(self, batch: list[tuple[np.ndarray, int, int]]) -> None:
        c0 = time.process_time()
        obs = th.as_tensor(np.stack([b[0] for b in batch]))
        acts = th.as_tensor(np.array([b[1] for b in batch], dtype=np.int64))
        self.counters["labels"] += len(batch)
        self.counters["agree"] += int(sum(b[1] == b[2] for b in batch))
        self.counters["updates"] += self.bc.train([LabelledBatch(self.weight, obs, acts)], self.bc_steps)
        self.counters["applied"] += 1
        self.counters["update_cpu_s"] += time.process_time() - c0

    def summary(self) -> dict[str, float]:
        """The counters as flat ``oail_*`` numbers (agreement as a share of labelled states)."""
        c = self.counters
        return {"oail_requests": c["requests"], "oail_applied": c["applied"], "oail_updates": c["updates"],
                "oail_agreement": c["agree"] / c["labels"] if c["labels"] else float("nan"),
                "oail_teacher_cpu_s": c["teacher_cpu_s"], "oail_update_cpu_s": c["update_cpu_s"]}


class ScoredEnv(GridCommandEnv):
    """:class:`GridCommandEnv` that keeps the exact metrics of an episode once it ends.

    The learner's rollout loop resets the env as soon as an episode ends (as SB3's
    ``DummyVecEnv`` does), which replaces the finished cloud; so :meth:`reset` first stores
    :func:`ilets.gridcommand.metrics.tracking_metrics` of the finished episode, with its
    mean reward, infeasible actions, tracking cost and decisions as :func:`evaluate` reports
    them, in :attr:`finished`.
    """

    finished: dict | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if self.cloud is not None and self.t > 0 and self._next_new >= len(self.tasks) and not self._pending:
            out = tracking_metrics(self)
            out.update(mean_reward=-self._cost_sum / self.t, infeasible_actions=self._infeasible,
                       tracking_cost=self._tracking_sum, decisions=self.t)
            self.finished = out
        return super().reset(seed=seed, options=options)


class StopAtEpisodeEnd(BaseCallback):
    """Ends learning when the first episode ends: one online pass, as the study's learners."""

    def _on_step(self) -> bool:
        return not bool(self.locals["dones"][0])


def online_pass(method: str, eval_cfg: GridCommandConfig, pipe: PipelineConfig, seed: int,
                cloned: dict | None = None, envelope_cache: Path | None = None) -> tuple[dict, dict, Any]:
    """One learning pass of ``ppo``, ``bc+ppo`` or ``bc+ppo+oail`` over ``eval_cfg``'s episode.

    ``cloned``: the policy's state after :func:`clone` (needed by the ``bc+`` methods).
    Returns the pass's metrics (as :func:`evaluate` reports them), what learning recorded,
    and the model. ``envelope_cache``: as :func:`clone`'s.
    """
    if method not in ONLINE:
        raise ValueError(f"method: expected one of {ONLINE} for an online pass, got {method!r}")
    if method in CLONED and cloned is None:
        raise ValueError(f"method {method!r}: needs the cloned policy (cloned=)")
    run = eval_cfg.run
    c0 = time.process_time()
    env = ScoredEnv(eval_cfg, envelope_cache=envelope_cache)
    model = make_run_ppo(env, run, seed)
    if cloned is not None and method in CLONED:
        model.policy.load_state_dict(cloned)
    callbacks: list[BaseCallback] = [StopAtEpisodeEnd()]
    corrections = None
    if method in CORRECTED:
        corrections = GridCorrections(pipe.teacher, pipe.every, pipe.window, pipe.weight,
                                      run.oail.learning_rate, run.oail.bc_steps)
        callbacks.append(corrections)
    # every task may be handed over 1 + max_deferrals times: the pass ends before this
    budget = len(env.tasks) * (1 + eval_cfg.max_deferrals) + run.ppo.n_steps
    model.learn(total_timesteps=budget, callback=CallbackList(callbacks), progress_bar=False)
    if env.finished is None:
        raise RuntimeError(f"{method}: the online pass did not finish within {budget} decisions")
    out = dict(env.finished)
    out["eval_cpu_s"] = time.process_time() - c0
    info = {"ppo_timesteps": int(model.num_timesteps), **({} if corrections is None else corrections.summary())}
    return out, info, model
