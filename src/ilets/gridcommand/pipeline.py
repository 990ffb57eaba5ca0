"""The study's three-stage pipeline on the grid-command scenario: demonstrate, clone, learn online.

The same path as the paper study's learners (:func:`ilets.agents.methods.run_learner`), on
:class:`ilets.gridcommand.env.GridCommandEnv`; :func:`run_method` makes one method and scores
it. Each stage is its own module:

1. :func:`ilets.gridcommand.teacher.demonstrate` runs an expert of the ladder
   (:func:`ilets.gridcommand.experts.make_expert`) over a training episode and keeps its
   (observation, action, mask, reward) at every decision, as
   :class:`ilets.agents.oinpt.Demonstrations`.
2. :func:`ilets.gridcommand.cloning.clone`: :func:`ilets.agents.oinpt.behaviour_clone`
   (``imitation``'s BC on PPO's *own* policy object, no hand-off) and
   :func:`ilets.agents.oinpt.pretrain_critic`, unchanged: OINPT; optionally
   (``dagger_rounds``) DAgger rounds, in which the clone plays the training episode and the
   teacher labels the states it visits (:func:`ilets.gridcommand.teacher.relabel`). Clones are
   shared between methods through :func:`ilets.gridcommand.clone_cache.cached_clone`.
3. :func:`ilets.gridcommand.online.online_pass`: online PPO
   (:class:`ilets.agents.ppo.FastMaskablePPO`, the study's learner) learns during one pass
   over the scored episode, as DRL does in the study, alone or with
   :class:`ilets.gridcommand.online.GridCorrections`, an OAIL-style callback: every ``every``
   decisions the teacher's answers on the last ``window`` states the learner visited are
   queued, and at the next rollout start (so every rollout PPO learns from was collected by
   one fixed policy, as in :class:`ilets.agents.oail.OAILCallback`) the policy takes
   ``run.oail.bc_steps`` BC steps on them, the loss weighted by ``weight`` (synchronous
   corrections [ours]: that module's docstring).

Episodes [ours] (:mod:`ilets.gridcommand.episodes`): the clone is made on the workload's
*offline* segment under the training regime, with that regime's commands drawn from their
own seed. Every method is scored on the *online* segment by the exact metrics of
:mod:`ilets.gridcommand.metrics`: the experts and ``bc`` (the clone frozen) by
:func:`ilets.gridcommand.metrics.evaluate`; ``ppo`` (from scratch), ``bc+ppo`` and
``bc+ppo+oail`` over the very pass they learn in (the study's online protocol: there is no
separate test episode in an online pass). Learned policies act as they do while learning,
by sampling the masked policy with a generator seeded from the run seed
(:mod:`ilets.gridcommand.actors`); the frozen clone does the same (a greedy argmax of a barely
trained policy sends every task to one server) [ours]. Methods:
:data:`ilets.gridcommand.pipeline_config.METHODS`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch as th

from ilets.agents.ppo import make_run_ppo
from ilets.gridcommand.actors import greedy_policy, sampled_policy
from ilets.gridcommand.clone_cache import cached_clone
from ilets.gridcommand.config import GridCommandConfig
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.episodes import (HELDOUT_METRICS, evaluation_config, heldout_config, training_base,
                                        training_config)
from ilets.gridcommand.experts import EXPERTS
from ilets.gridcommand.metrics import evaluate
from ilets.gridcommand.online import online_pass
from ilets.gridcommand.pipeline_config import CLONED, ONLINE, PipelineConfig, check_method, check_train_servers
from ilets.gridcommand.teacher import expert_policy, scenario_expert


def run_method(method: str, base: GridCommandConfig, servers: int, seed: int, train_regime: str,
               eval_regimes: tuple[str, ...], pipe: PipelineConfig | None = None,
               expert_kw: dict | None = None, cache_dir: Path | None = None, wait: bool = True,
               processes: int = 1) -> dict[str, Any]:
    """Make ``method`` under ``train_regime`` (the clone) and score it under each of ``eval_regimes``.

    Returns ``{"train": <what cloning and learning recorded>, "scores": {regime: <metrics>}}``;
    deterministic from ``seed`` (same seed, same numbers). ``cache_dir``: where clones are
    shared between methods (:func:`cached_clone`; ``wait=False``: raise
    :class:`~ilets.files.HeldByAnother` when another process is making the clone), and every
    episode's envelope (:class:`GridCommandEnv`'s ``envelope_cache``): the numbers are the
    same without it. ``processes``: how many processes play the clone's training episodes
    (:func:`clone`; the same numbers for any number).
    """
    check_method(method)
    pipe = (pipe or PipelineConfig()).validate()
    th.manual_seed(seed)  # anything torch draws outside SB3's own seeding
    info: dict[str, Any] = {}
    scores: dict[str, dict] = {}
    cloned = None
    learned_on = check_train_servers(base, pipe) or servers
    if method in CLONED:
        cloned, info = cached_clone(training_config(training_base(base, pipe), train_regime, learned_on, seed), pipe,
                                    seed, cache_dir, wait, processes)
    final: Callable[[np.ndarray, GridCommandEnv], int] | None = None  # what the held-out episode scores
    for regime in eval_regimes:
        cfg = evaluation_config(base, regime, servers, seed)
        c0 = time.process_time()
        if method in EXPERTS:
            expert = scenario_expert(method, base, **(expert_kw or {}))
            expert.reset()
            scores[regime] = evaluate(lambda obs, env, e=expert: int(e.act(env)), cfg, seed=seed, observing=False,
                                      envelope_cache=cache_dir)
            statuses = getattr(expert, "statuses", None)
            if statuses:  # solver experts: how many solves were proven optimal (vs cut by the limit)
                info[f"solves[{regime}]"] = len(statuses)
                info[f"optimal_share[{regime}]"] = sum(s == "optimal" for s in statuses) / len(statuses)
            choices = getattr(expert, "choices", None)
            if choices:  # the hindsight bound: the member followed from each switch time, and its cost
                info[f"members[{regime}]"] = [member for _, member, _ in choices]
                info[f"simulations[{regime}]"] = int(getattr(expert, "simulations", 0))
        elif method not in ONLINE:  # the clone frozen
            env = GridCommandEnv(cfg, envelope_cache=cache_dir)
            model = make_run_ppo(env, cfg.run, seed)
            assert cloned is not None, "a frozen method clones first"
            model.policy.load_state_dict(cloned)
            scores[regime] = evaluate(sampled_policy(model, seed) if pipe.clone_action == "sampled"
                                      else greedy_policy(model), cfg, seed=seed, envelope_cache=cache_dir)
            if regime == train_regime:
                final = greedy_policy(model)
        else:
            scores[regime], learned, model = online_pass(method, cfg, pipe, seed, cloned, cache_dir)
            info.update({f"{k}[{regime}]": v for k, v in learned.items()})
            if regime == train_regime:
                final = greedy_policy(model)
        scores[regime]["eval_cpu_s"] = time.process_time() - c0
    if pipe.heldout:
        cfg = heldout_config(base, train_regime, servers, seed)
        if method in EXPERTS:
            final = expert_policy(method, base, **(expert_kw or {}))
        if final is None:  # a method without a pass under the training regime
            raise ValueError(f"{method}: pipeline.heldout needs the training regime among the scored regimes")
        # the run seed, the held-out one, draws the workload and commands
        metrics = evaluate(final, cfg, observing=method not in EXPERTS, envelope_cache=cache_dir)
        info.update({f"heldout_{k}": float(metrics[k]) for k in HELDOUT_METRICS})
    return {"train": info, "scores": scores}
