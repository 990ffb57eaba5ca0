"""The four methods and the heuristics, each run as one online pass over the online segment.

=========  ==========================================  =====================
method     what learns                                  imitation
=========  ==========================================  =====================
drl        MaskablePPO from random weights, online      none
drl+       the same, after OINPT                        offline BC (+ critic)
ilets-     MaskablePPO from random weights, online      OAIL callback
ilets      the same, after OINPT                        OINPT and OAIL
heuristic  nothing                                      none
=========  ==========================================  =====================

Every decision of the pass counts in the metrics, including the early bad ones of a cold
start: the policy schedules while it learns, as in the paper. PPO's first rollout starts
at the first task; training stops when the segment's last task has been placed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ilets.agents.env import CloudSchedulingEnv
from ilets.agents.episode import DecisionLog, drive
from ilets.agents.observation import StateSpec
from ilets.config import HEURISTICS, RunConfig
from ilets.method_table import METHOD_SPECS
from ilets.simulator.cloud import Fleet
from ilets.workloads.workload import Workload

if TYPE_CHECKING:
    import pandas as pd
    from stable_baselines3.common.callbacks import BaseCallback
    import torch as th

    from ilets.agents.ppo import FastMaskablePPO


@dataclass
class OnlineResult:
    log: DecisionLog
    extra: dict[str, float]  #: method-specific numbers (BC agreement, critic MSE, OAIL counters, ...)
    decision_s: np.ndarray  #: per-decision latency samples, s
    model: FastMaskablePPO | None = None  #: the trained MaskablePPO, for RL methods
    #: tables a cell folder keeps beside its curve: ``finetune`` (one row per PPO update:
    #: entropy, KL to the clone, explained variance) and ``checkpoints`` (held-out greedy scores)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    clone: dict[str, th.Tensor] | None = None  #: the policy's weights right after OINPT (a state dict)


def run_heuristic(cfg: RunConfig, workload: Workload, fleet: Fleet, progress=None) -> OnlineResult:
    """Schedule the online segment with a heuristic through the same env as the learners."""
    from ilets.agents.policies import make_heuristic

    policy = make_heuristic(cfg.method, seed=cfg.seed, reward=cfg.reward)
    env = CloudSchedulingEnv(cfg, tasks=workload.online, fleet=fleet)
    env.observing = False  # the heuristic reads the cloud, never the observation
    env.reset(seed=cfg.seed)
    log = DecisionLog()
    times = drive(env, policy, log, progress)
    return OnlineResult(log, {}, times)


def run_learner(cfg: RunConfig, workload: Workload, fleet: Fleet, cache_dir: Path | None = None,
                progress=None) -> OnlineResult:
    """DRL, DRL+, ILETS- or ILETS over the online segment (see the module table)."""
    from ilets.agents.checkpoints import GreedyCheckpoints, heldout_segment, reference_scores
    from ilets.agents.recorder import DecisionRecorder
    from ilets.agents.oail import OAILCallback
    from ilets.agents.oinpt import behaviour_clone, collect_demonstrations, pretrain_critic
    from ilets.agents.ppo import make_run_ppo

    env = CloudSchedulingEnv(cfg, tasks=workload.online, fleet=fleet)
    model = make_run_ppo(env, cfg, finetune=cfg.finetune)
    extra: dict[str, float] = {}
    spec = METHOD_SPECS[cfg.method]
    if spec.oinpt:
        t0, c0 = time.perf_counter(), time.process_time()
        demos = collect_demonstrations(workload.offline, fleet, cfg.oinpt.expert, cfg.experts, cfg.reward,
                                       cfg.oinpt.max_demo_tasks, cfg.seed, StateSpec.of(cfg),
                                       cache_dir=cache_dir)
        c1 = time.process_time()
        extra["demo_tasks"] = len(demos)
        extra["demo_seconds"] = demos.seconds
        extra.update(behaviour_clone(model, demos, cfg.oinpt, cfg.seed))
        if cfg.oinpt.critic_pretrain:
            extra.update(pretrain_critic(model, demos, cfg.ppo.gamma, cfg.oinpt, cfg.seed))
        extra["oinpt_seconds"] = time.perf_counter() - t0
        model.set_reference()  # the clone: what the KL term pulls toward and the log measures
        # CPU by phase (a cached demonstration set costs its loading only)
        extra["cpu_demos_s"], extra["cpu_bc_s"] = c1 - c0, time.process_time() - c1
    if cfg.warm_start:
        from ilets.agents.policy_io import load_policy
        from ilets.cell_pack import on_disk

        # a cell folder, or one of a shipped folder's table (written out for the loader)
        load_policy(on_disk(Path(cfg.warm_start) / "policy"), model)
        model.set_reference()  # the starting policy plays the clone's part in fine-tuning
    log = DecisionLog()
    callbacks: list[BaseCallback] = [DecisionRecorder(log, progress)]
    checkpoints = None
    if cfg.finetune.checkpoints:
        n = len(workload.online)
        points = [round(n * (k + 1) / cfg.finetune.checkpoints) for k in range(cfg.finetune.checkpoints)]
        checkpoints = GreedyCheckpoints(cfg, heldout_segment(workload.offline, cfg.finetune.checkpoint_tasks), fleet,
                                        points)
        callbacks.append(checkpoints)
    oail = None
    if spec.oail:
        oail = OAILCallback(cfg.oail, cfg.experts, cfg.reward, cfg.seed, StateSpec.of(cfg),
                            targets=cfg.finetune.oail_targets)
        callbacks.append(oail)
    try:
        model.learn(total_timesteps=len(workload.online) + cfg.ppo.n_steps, callback=callbacks)
    except KeyboardInterrupt:
        if oail is not None:
            oail.close(wait=False)  # interrupted: never wait on the pool (OAILCallback.close)
        raise
    finally:
        if oail is not None:
            oail.close()  # idempotent: a no-op after the above
    imitation = 0.0
    if oail is not None:
        extra.update(oail.counters.as_dict())
        imitation = oail.counters.imitation_cpu_s
    tables = {}
    if model.finetune_log:
        import pandas as pd

        tables["finetune"] = pd.DataFrame(model.finetune_log)
        last = model.finetune_log[-1]
        extra.update(final_entropy=last["entropy"], final_kl_to_clone=last["kl_to_clone"],
                     actor_frozen_updates=int(sum(r["actor_frozen"] for r in model.finetune_log)))
        if "gradient_snr" in last:  # finetune.diagnostics: the RL stage's diagnostics, summarised
            moving = [r for r in model.finetune_log if not r["actor_frozen"]] or model.finetune_log
            extra.update(final_differs_from_clone=last["differs_from_clone"],
                         median_gradient_snr=float(np.median([r["gradient_snr"] for r in moving])),
                         final_explained_variance=last["explained_variance"])
    if checkpoints is not None:
        import pandas as pd

        checkpoints.points.clear()
        checkpoints._score(int(model.num_timesteps))  # the policy the pass ends with
        tables["checkpoints"] = pd.DataFrame(checkpoints.rows)
        extra.update({f"heldout_{k}_{when}": float(row[k]) for when, row in
                      (("start", checkpoints.rows[0]), ("end", checkpoints.rows[-1])) for k in ("mean_reward", "avg_response_s")})
        if cfg.finetune.checkpoint_references:
            extra.update({f"heldout_success_rate_{when}": float(row["success_rate"]) for when, row in
                          (("start", checkpoints.rows[0]), ("end", checkpoints.rows[-1]))})
            extra.update(reference_scores(cfg, checkpoints.tasks, fleet))
    phases = getattr(model, "phase_cpu", None)
    if phases is not None:
        # OAIL's updates run inside the rollout loop (at each rollout start): count them apart
        extra["cpu_rollout_s"] = phases["rollout"] - imitation
        extra["cpu_update_s"] = phases["update"]
    clone = None if model.reference is None else model.reference.state_dict()
    return OnlineResult(log, extra, decision_latency(model, cfg, workload, fleet), model, tables, clone)


def decision_latency(model, cfg: RunConfig, workload: Workload, fleet: Fleet, n: int = 2000) -> np.ndarray:
    """Latency of the trained policy's decision (observation + numpy actor), s per task.

    Measured on a replay of the first ``n`` online tasks after training, because during
    learning the rollout loop also computes values and log-probabilities for PPO's buffer.
    """
    from ilets.agents.ppo import PPOPolicy

    policy = PPOPolicy(model, StateSpec.of(cfg))
    env = CloudSchedulingEnv(cfg, tasks=workload.online.slice(0, min(n, len(workload.online))), fleet=fleet)
    env.reset()
    return drive(env, policy)


def run_method(cfg: RunConfig, workload: Workload, fleet: Fleet, cache_dir: Path | None = None,
               progress=None) -> OnlineResult:
    """Run ``cfg.method`` (a learner or a heuristic) over the online segment."""
    if cfg.method in HEURISTICS:
        return run_heuristic(cfg, workload, fleet, progress)
    return run_learner(cfg, workload, fleet, cache_dir, progress)
