"""The study's three-stage pipeline on the grid-command scenario: demonstrate, clone, learn online.

The same path as the paper study's learners (:func:`ilets.agents.methods.run_learner`), on
:class:`ilets.gridcommand.env.GridCommandEnv`:

1. :func:`demonstrate` runs an expert of the ladder (:func:`ilets.gridcommand.experts.make_expert`)
   over a training episode and keeps its (observation, action, mask, reward) at every
   decision, as :class:`ilets.agents.oinpt.Demonstrations`.
2. :func:`ilets.agents.oinpt.behaviour_clone` (``imitation``'s BC on PPO's *own* policy
   object, no hand-off) and :func:`ilets.agents.oinpt.pretrain_critic`, unchanged: OINPT;
   optionally (``dagger_rounds``) DAgger rounds, in which the clone plays the training
   episode and the teacher labels the states it visits (:func:`relabel`).
3. Online PPO (:class:`ilets.agents.ppo.FastMaskablePPO`, the study's learner) learns during
   one pass over the scored episode, as DRL does in the study, alone or with
   :class:`GridCorrections`, an OAIL-style callback: every ``every`` decisions the teacher's
   answers on the last ``window`` states the learner visited are queued, and at the next
   rollout start (so every rollout PPO learns from was collected by one fixed policy, as in
   :class:`ilets.agents.oail.OAILCallback`) the policy takes ``run.oail.bc_steps`` BC steps
   on them, the loss weighted by ``weight``.

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

Episodes [ours]: the clone is made on the workload's *offline* segment under the training
regime, with that regime's commands drawn from their own seed (``seed + TRAIN_COMMAND_OFFSET``:
the online and offline windows are equally long, so the run seed would draw the same
command pattern shifted by one window); with ``train_episodes`` also on other workloads'
offline segments (:func:`training_episodes`). Every method is scored on the *online* segment by
the exact metrics of :mod:`ilets.gridcommand.metrics`: the experts and ``bc`` (the clone
frozen) by :func:`ilets.gridcommand.metrics.evaluate`; ``ppo`` (from scratch), ``bc+ppo``
and ``bc+ppo+oail`` over the very pass they learn in (the study's online protocol: there
is no separate test episode in an online pass). Learned policies act as they do while
learning, by sampling the masked policy with a generator seeded from the run seed; the
frozen clone does the same (a greedy argmax of a barely trained policy sends every task to
one server) [ours]. Methods: :data:`METHODS`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shutil
import tempfile
import time
import warnings
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

from ilets.agents.oinpt import Demonstrations, behaviour_clone, greedy_agreement, pretrain_critic, repeat_times
from ilets.agents.per_server import PerServerPolicy
from ilets.agents.ppo import NumpyActor, make_run_ppo, numpy_actor_critic
from ilets.agents.weighted_bc import LabelledBatch, WeightedBC
from ilets.config import ConfigError, OINPTConfig, to_dict
from ilets.config.run import drop_added_defaults
from ilets import random_state
from ilets.files import HeldByAnother, atomic_write
from ilets.gridcommand.aggregate import Aggregate, aggregate_memory_limit
from ilets.gridcommand.command import REGIMES
from ilets.gridcommand.config import GridCommandConfig
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts import DECIDING, EXPERTS, GridExpert, SleepManager, make_expert
from ilets.gridcommand.metrics import evaluate, tracking_metrics

if TYPE_CHECKING:
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

#: The learned methods, in pipeline order.
LEARNED = ("bc", "ppo", "bc+ppo", "bc+ppo+oail")
#: Every method the pipeline runs: the expert ladder (``rule`` included), then the learners.
METHODS = EXPERTS + LEARNED
#: Training commands are drawn with ``seed + TRAIN_COMMAND_OFFSET`` [ours] (module docstring).
TRAIN_COMMAND_OFFSET = 10_000
#: A clone's further training episodes (``train_episodes``) take the offline segment of the
#: workload of run seed ``seed * train_episode_stride + TRAIN_EPISODE_OFFSET + k``, k = 1, 2, ...
#: [ours]: workloads no grid scores (the scored episode is the run seed's online segment, the held-out one
#: ``seed + HELDOUT_SEED_OFFSET``'s).
TRAIN_EPISODE_OFFSET = 40_000
#: Bump when cloning changes (the cache key of :func:`cached_clone`).
CLONE_CACHE_VERSION = 2


#: How the frozen clone acts when scored (:attr:`PipelineConfig.clone_action`).
CLONE_ACTIONS = ("sampled", "greedy")
#: How BC's gradient steps are counted when a clone learns from more than its training
#: episode (:attr:`PipelineConfig.bc_step_budget`).
BC_STEP_BUDGETS = ("whole_epochs", "exact")
#: Fields added to :class:`PipelineConfig` after cells were shipped (left out at their defaults).
PIPELINE_ADDED_FIELDS = ("clone_action", "defer_repeat", "heldout", "bc_epochs", "dagger_rounds", "event_repeat",
                         "sleep_repeat", "train_episodes", "train_episode_stride", "train_days",
                         "bc_step_budget", "train_servers")
#: The held-out episode's workload and command seed: the run seed plus this [ours]
HELDOUT_SEED_OFFSET = 20_000
#: What the held-out episode records (``heldout_<name>``).
HELDOUT_METRICS = ("tracking_mae_rel", "success_rate", "episode_reward", "in_band_fraction", "deferrals")


@dataclass(frozen=True)
class PipelineConfig:
    """The pipeline's own knobs; PPO, BC and OAIL's learning rate come from the run's config.

    BC uses ``run.oinpt`` (epochs, batch size, learning rate, critic pre-training) and PPO
    ``run.ppo``, the study's settings (``ilets/configs/methods.yaml``); the corrections'
    optimiser uses ``run.oail.learning_rate`` and ``run.oail.bc_steps``.
    """

    teacher: str = "lyapunov"  #: expert that demonstrates and corrects [ours]
    demo_tasks: int = 0  #: decisions demonstrated; 0: the whole training episode [ours]
    every: int = 250  #: decisions between two corrections [ours]
    window: int = 50  #: recent states a correction labels [ours]
    weight: float = 1.0  #: weight of the corrections' BC loss [ours]
    #: how the frozen clone (method ``bc``) acts when scored [ours]: ``sampled`` from its masked
    #: softmax, as a learner acts during its pass (the scenario's first protocol), or ``greedy``,
    #: its most likely allowed action, as the study's positive control scores every clone
    clone_action: str = "sampled"
    #: times each demonstrated deferral appears in BC's data [ours]: the teacher defers on a few
    #: per cent of its decisions, so plain cross-entropy learns to place; imitation's BC takes
    #: no sample weights, and repeating a sample weighs it the same in expectation. 1: as
    #: demonstrated
    defer_repeat: int = 1
    #: also score each method's final policy (the clone for ``bc``, the policy after the
    #: training regime's pass for the others, the teacher itself for an expert) frozen and
    #: greedy on a held-out episode (:func:`heldout_config`), recorded with the cell's training
    #: record as ``heldout_<metric>`` [ours]
    heldout: bool = False
    #: passes of BC over the demonstrations [ours]; 0: the study's ``run.oinpt.bc_epochs``
    #: (10, the paper-scale pilot's choice for the flat policy on 5,000 GA+PSO decisions). The
    #: grid-command clone learns one teacher's whole training episode, a different task, so
    #: its budget has its own pilot (``gridcommand-grid-clone-pilot-e*``)
    bc_epochs: int = 0
    #: DAgger rounds after BC [ours]: the clone plays the training episode, the teacher labels
    #: the states it visits, and BC goes on over all labels so far, for as many gradient steps
    #: as the first BC took (:func:`relabel`); 0: none
    dagger_rounds: int = 0
    #: times each decision made during an event appears in BC's data (the first BC's and
    #: every DAgger round's) [ours]: events hold a few tenths of an episode's decisions, and
    #: the states where a tracking teacher turns (e.g. the thermostat raising power after an
    #: overshoot) a few per cent, so plain cross-entropy learns the off-event placement first.
    #: BC's epochs are cut in proportion (:func:`event_epochs`), so every value takes the same
    #: gradient steps: a weight, not a larger budget. 1: as demonstrated
    event_repeat: int = 1
    #: times each demonstrated sleep action (the sleep head's, ``sleep_actions``) appears in
    #: BC's data, the first BC's and every DAgger round's [ours]: a teacher puts a few dozen
    #: servers to sleep in an episode of thousands of decisions, so plain cross-entropy learns
    #: to place and almost never to sleep. The added rows are a few per cent of the data, so
    #: the epochs are not cut (``defer_repeat``'s reasoning). 1: as demonstrated
    sleep_repeat: int = 1
    #: training episodes the clone learns from [ours]: the teacher demonstrates on each, BC
    #: learns them all, and each DAgger round relabels the clone's states on each. The first is
    #: the run's training episode; the others are other workloads' offline segments with their
    #: own commands (:func:`training_episodes`), so the clone meets more events than one
    #: episode's few. BC takes the gradient steps it would take on the first episode alone
    #: (its epochs cut in proportion, rounded to whole epochs, as ``event_repeat`` does): more
    #: data, not a larger budget. At ``train_episode_stride`` 1 the further episodes of run
    #: seeds s and s + 1 overlap (seed s's k-th is seed s + 1's (k - 1)-th), so the clones of
    #: neighbouring seeds share training workloads; their scored episodes do not.
    #: 1: the training episode only
    train_episodes: int = 1
    #: how far apart the further training workloads of neighbouring run seeds start [ours]:
    #: run seed s learns from workloads ``s * stride + TRAIN_EPISODE_OFFSET + k``, k = 1 ..
    #: ``train_episodes - 1`` (:func:`training_episodes`). 1 (the first designs'): neighbouring
    #: seeds share all but one workload, so their clones are not independent draws and a
    #: seed-paired interval is narrower than independent seeds would give; a stride of at least
    #: ``train_episodes - 1`` gives every seed workloads of its own
    train_episode_stride: int = 1
    #: days of commands in each episode the clone learns from [ours]: 0, the scenario's own
    #: ``window_days``; else its training episodes (and its DAgger rounds) are the scenario's
    #: with ``window_days`` set to this and the workload scale cut in the same proportion, so a
    #: day holds the same tasks and events (:func:`training_base`); the scored and held-out
    #: episodes keep the scenario's window. A clone of fourteen-day episodes can so learn from
    #: the one-day episodes of the clone that met the bar
    train_days: float = 0.0
    #: how BC's gradient steps are counted [ours]. Every BC (the first and each DAgger
    #: round's) is meant to take the steps BC takes on the first training episode alone:
    #: ``bc_epochs`` passes over its decisions. ``whole_epochs`` (the designs as run) scales the
    #: epochs to the data BC is shown and rounds them to whole epochs, at least one; past
    #: about ``bc_epochs`` training episodes that floor gives more steps than meant (256
    #: episodes at 300 epochs: 0.85 times the steps in the first BC, 1.7 times in a DAgger
    #: round over twice the data). ``exact`` takes ``bc_epochs`` x the first episode's decisions
    #: / the batch size minibatches in every BC, whatever the data. Each clone records the
    #: share it took (``bc_step_share``, :func:`clone`)
    bc_step_budget: str = "whole_epochs"
    #: the fleet size the clone learns on [ours]: 0, the scored fleet's; else its training
    #: episodes (and DAgger rounds) have this many servers and the clone is scored, and
    #: fine-tuned, on the scored fleet. Only the per-server policy can be moved so (no weight
    #: of it depends on the number of servers; the observation's command and power numbers
    #: are over the fleet's maximum power): a clone of 50 servers scored at 200 asks whether
    #: what it learned holds on another fleet, at a quarter of the observations a 200-server
    #: clone holds (:func:`check_train_servers`)
    train_servers: int = 0

    def validate(self, where: str = "pipeline") -> "PipelineConfig":
        """Named :class:`ConfigError` for an impossible value; returns self."""
        if self.teacher not in DECIDING:  # the bound simulates whole episodes per switch: no teacher
            raise ConfigError(f"{where}.teacher: expected an expert of {DECIDING}, got {self.teacher!r}")
        if self.demo_tasks < 0:
            raise ConfigError(f"{where}.demo_tasks: expected 0 (all) or a count > 0, got {self.demo_tasks}")
        for key in ("every", "window"):
            if getattr(self, key) < 1:
                raise ConfigError(f"{where}.{key}: expected an integer >= 1, got {getattr(self, key)}")
        if self.window > self.every:
            raise ConfigError(f"{where}.window: {self.window} states per correction overlap the next one "
                              f"(every {self.every}); expected window <= every")
        if not (np.isfinite(self.weight) and self.weight > 0):
            raise ConfigError(f"{where}.weight: expected a number > 0, got {self.weight}")
        if self.clone_action not in CLONE_ACTIONS:
            raise ConfigError(f"{where}.clone_action: expected one of {CLONE_ACTIONS}, got {self.clone_action!r}")
        if self.bc_step_budget not in BC_STEP_BUDGETS:
            raise ConfigError(f"{where}.bc_step_budget: expected one of {BC_STEP_BUDGETS}, "
                              f"got {self.bc_step_budget!r}")
        if not (isinstance(self.defer_repeat, int) and self.defer_repeat >= 1):
            raise ConfigError(f"{where}.defer_repeat: expected an integer >= 1 (1: as demonstrated), "
                              f"got {self.defer_repeat!r}")
        for key, one in (("event_repeat", "as demonstrated"), ("sleep_repeat", "as demonstrated"),
                         ("train_episodes", "as demonstrated"),
                         ("train_episode_stride", "neighbouring seeds share training workloads")):
            value = getattr(self, key)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise ConfigError(f"{where}.{key}: expected an integer >= 1 (1: {one}), got {value!r}")
        if not (isinstance(self.train_servers, int) and not isinstance(self.train_servers, bool)
                and self.train_servers >= 0):
            raise ConfigError(f"{where}.train_servers: expected 0 (the scored fleet) or a number of servers >= 1, "
                              f"got {self.train_servers!r}")
        if not (isinstance(self.dagger_rounds, int) and self.dagger_rounds >= 0):
            raise ConfigError(f"{where}.dagger_rounds: expected an integer >= 0 (0: no DAgger), "
                              f"got {self.dagger_rounds!r}")
        if not (isinstance(self.bc_epochs, int) and self.bc_epochs >= 0):
            raise ConfigError(f"{where}.bc_epochs: expected an integer >= 0 (0: the run's oinpt.bc_epochs), "
                              f"got {self.bc_epochs!r}")
        if not isinstance(self.heldout, bool):
            raise ConfigError(f"{where}.heldout: expected true or false, got {self.heldout!r}")
        if not (isinstance(self.train_days, (int, float)) and not isinstance(self.train_days, bool)
                and math.isfinite(self.train_days) and self.train_days >= 0):
            raise ConfigError(f"{where}.train_days: expected a finite number of days >= 0 (0: the scenario's own "
                              f"window_days), got {self.train_days!r}")
        return self

    def plain(self) -> dict[str, Any]:
        """As plain data for a settings digest or a cache key: :data:`PIPELINE_ADDED_FIELDS` at
        their defaults left out, so what was computed before they existed keeps its keys."""
        return drop_added_defaults(to_dict(self), PIPELINE_ADDED_FIELDS, to_dict(PipelineConfig()))


def check_train_servers(base: GridCommandConfig, pipe: PipelineConfig, where: str = "pipeline") -> int:
    """The fleet size ``pipe``'s clone learns on, given the scored fleet ``base`` (0: the scored
    fleet's own, :attr:`PipelineConfig.train_servers`); a named :class:`ConfigError` when the
    clone is to be moved to another fleet with a policy whose weights depend on its size."""
    if pipe.train_servers and base.run.policy != "per-server":
        raise ConfigError(f"{where}.train_servers: {pipe.train_servers} servers: only the per-server policy runs on "
                          f"a fleet it did not learn on (the {base.run.policy!r} policy's weights depend on the "
                          "number of servers); expected 0")
    return pipe.train_servers


def check_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else a ValueError listing them."""
    if method not in METHODS:
        raise ValueError(f"method: unknown {method!r}; expected one of {METHODS}")
    return method


def scenario_config(base: GridCommandConfig, regime: str, servers: int, seed: int, segment: str,
                    command_seed: int = -1) -> GridCommandConfig:
    """``base`` with the regime, fleet size, run seed, workload segment and command seed set."""
    if regime not in REGIMES:
        raise ValueError(f"regime: expected one of {tuple(REGIMES)}, got {regime!r}")
    run = dataclasses.replace(base.run, seed=seed, fleet=dataclasses.replace(base.run.fleet, servers=servers))
    return dataclasses.replace(base, run=run, regime=regime, commands=(), segment=segment,
                               command_seed=command_seed).validate()


def training_config(base: GridCommandConfig, regime: str, servers: int, seed: int) -> GridCommandConfig:
    """The training episode's configuration: offline segment, commands from their own seed."""
    return scenario_config(base, regime, servers, seed, "offline", seed + TRAIN_COMMAND_OFFSET)


def training_base(base: GridCommandConfig, pipe: PipelineConfig, where: str = "pipeline") -> GridCommandConfig:
    """The scenario a clone's training episodes are drawn from (``train_days``): ``base``
    itself at 0 or at its own window; else ``base`` with ``window_days`` set to ``train_days``
    and the workload scale cut in the same proportion (a day keeps its tasks). Only those two
    fields change, so the observation and action spaces are the scored episodes'. A named
    :class:`ConfigError` when the shorter scenario is not valid."""
    days = pipe.train_days
    if not days or days == base.window_days:
        return base
    workload = base.run.workload
    run = dataclasses.replace(base.run, workload=dataclasses.replace(
        workload, scale=workload.scale * days / base.window_days))
    try:
        return dataclasses.replace(base, run=run, window_days=days).validate()
    except ConfigError as err:
        raise ConfigError(f"{where}.train_days: {days:g} days of training episodes do not fit the scenario "
                          f"({err})") from None


def training_episodes(train_cfg: GridCommandConfig, n: int, stride: int = 1) -> list[GridCommandConfig]:
    """The ``n`` episodes a clone learns from (``train_episodes``): ``train_cfg`` (the run's
    training episode, :func:`training_config`), then the offline segments of the workloads of
    run seeds ``seed * stride + TRAIN_EPISODE_OFFSET + k`` (``train_episode_stride``) with
    commands from their own seeds (``+ TRAIN_COMMAND_OFFSET``), on the same fleet and under the
    same regime."""
    first = train_cfg.run.seed * stride + TRAIN_EPISODE_OFFSET
    more = [dataclasses.replace(train_cfg, run=dataclasses.replace(train_cfg.run, seed=first + k),
                                command_seed=first + k + TRAIN_COMMAND_OFFSET).validate()
            for k in range(1, n)]
    return [train_cfg, *more]


def evaluation_config(base: GridCommandConfig, regime: str, servers: int, seed: int) -> GridCommandConfig:
    """The scored episode's configuration: online segment, commands from the run seed."""
    return scenario_config(base, regime, servers, seed, "online")


def heldout_config(base: GridCommandConfig, regime: str, servers: int, seed: int) -> GridCommandConfig:
    """The held-out episode: the online segment of another workload (run seed ``seed`` plus
    :data:`HELDOUT_SEED_OFFSET`), with its own commands, the same fleet: no method saw it."""
    return scenario_config(base, regime, servers, seed + HELDOUT_SEED_OFFSET, "online")


def scenario_expert(name: str, cfg: GridCommandConfig, **kw: Any) -> GridExpert:
    """An expert of the ladder for the scenario ``cfg``: with the sleep head
    (``sleep_actions``) it takes the power manager's sleep actions first
    (:class:`ilets.gridcommand.experts.SleepManager`), so it meets the lever as the experts
    meet it without the head, and a clone learns the head from its teacher; else the expert
    itself."""
    expert = make_expert(name, **kw)
    return SleepManager(expert) if cfg.sleep_actions else expert


def expert_policy(name: str, cfg: GridCommandConfig | None = None,
                  **kw: Any) -> Callable[[np.ndarray, GridCommandEnv], int]:
    """An expert of the ladder (for the scenario ``cfg`` when given: :func:`scenario_expert`)
    as an ``(obs, env) -> action`` policy for :func:`evaluate` (reset first: experts keep
    state across decisions)."""
    expert = make_expert(name, **kw) if cfg is None else scenario_expert(name, cfg, **kw)
    expert.reset()
    return lambda obs, env: int(expert.act(env))


def demonstrate(env: GridCommandEnv, teacher: str, max_decisions: int = 0, **expert_kw: Any) -> Demonstrations:
    """The teacher's decisions over one episode of ``env`` (the first ``max_decisions``; 0: all)."""
    return _labelled_episode(env, teacher, max_decisions, None, expert_kw)[0]


def scored_demonstration(env: GridCommandEnv, teacher: str, max_decisions: int = 0) -> tuple[Demonstrations, np.ndarray]:
    """:func:`demonstrate`, with the scores behind each of the teacher's decisions (one row per
    decision, one column per action, ``inf`` where masked; the teacher picks the least): what
    weighs another policy's choice on the same state in the teacher's own terms. Only a
    teacher that scores its actions (``lyapunov``) has them, and only where every action is a
    placement or the defer (no sleep or cap actions); ``ValueError`` otherwise."""
    scores: list[np.ndarray] = []
    demos = _labelled_episode(env, teacher, max_decisions, None, {}, scores)[0]
    return demos, np.stack(scores)


def scores_kept(env: GridCommandEnv, teacher: str) -> bool:
    """Whether :func:`scored_demonstration` can keep ``teacher``'s scores on ``env``: a teacher
    that scores its actions itself (not wrapped, as the sleep manager wraps it) in a scenario
    whose every action is a placement or the defer (no sleep or cap actions its scores would
    not cover)."""
    return _scores_cover(env, scenario_expert(teacher, env.config))


def _scores_cover(env: GridCommandEnv, expert: GridExpert) -> bool:
    """:func:`scores_kept` of an expert already made."""
    plain = int(getattr(env.action_space, "n")) == env.defer_action + 1  # Discrete's n
    return plain and "last_scores" in vars(expert)


def relabel(env: GridCommandEnv, teacher: str, actor: Callable[[np.ndarray, GridCommandEnv], int],
            max_decisions: int = 0) -> tuple[Demonstrations, np.ndarray]:
    """One DAgger round: ``actor`` (the clone) acts over one episode of ``env`` and the teacher
    labels every state the actor visits. Returns the labelled states (the actions are the
    teacher's; the rewards the actor's) and, per state, whether the actor did as the teacher
    would have (bool)."""
    demos, taken = _labelled_episode(env, teacher, max_decisions, actor, {})
    return demos, taken == demos.acts


def agreement_split(env: GridCommandEnv, demos: Demonstrations, agreed: np.ndarray, prefix: str,
                    suffix: str = "") -> dict[str, float]:
    """The share of ``agreed`` (one bool for each of the first decisions of ``demos``) over all
    of them, those made during an event and those outside
    (:meth:`GridCommandEnv.during_event`), as ``<prefix><suffix>``, ``<prefix>_event<suffix>``
    and ``<prefix>_off<suffix>``, each left out where there are no such decisions (a record
    keeps no NaN). The events hold the decisions that track, a minority, so the overall share
    can hide them."""
    during = env.during_event(demos.obs[:len(agreed)]) if len(agreed) else np.zeros(0, bool)
    parts = {"": np.ones(len(agreed), bool), "_event": during, "_off": ~during}
    return {f"{prefix}{name}{suffix}": float(np.mean(agreed[rows])) for name, rows in parts.items() if rows.any()}


def _labelled_episode(env: GridCommandEnv, teacher: str, max_decisions: int,
                      actor: Callable[[np.ndarray, GridCommandEnv], int] | None,
                      expert_kw: dict[str, Any], scores: list[np.ndarray] | None = None,
                      ) -> tuple[Demonstrations, np.ndarray]:
    """The teacher's label at every decision of one episode, and the action taken: the
    teacher's own, or ``actor``'s (the teacher still sees every state, so its queues follow
    the episode as it is played; its deadline queue counts its own answer's miss) [ours].
    ``scores``: where to append the scores behind each label (a scoring teacher's)."""
    expert = scenario_expert(teacher, env.config, **expert_kw)
    expert.reset()
    if scores is not None and not _scores_cover(env, expert):
        raise ValueError(f"{teacher}: scores only placements and the defer, so its scores cannot be kept "
                         "in this scenario" if "last_scores" in vars(expert) else
                         f"{teacher}: does not score its actions, so its scores cannot be kept")
    t0 = time.perf_counter()
    obs, _ = env.reset()
    rows_obs, rows_act, rows_mask, rows_rew, taken = [], [], [], [], []
    while True:
        mask = env.action_masks().copy()
        label = int(expert.act(env))
        if scores is not None:
            scores.append(getattr(expert, "last_scores"))  # checked above: a scoring teacher
        a = label if actor is None else int(actor(obs, env))
        rows_obs.append(obs)
        rows_act.append(label)
        rows_mask.append(mask)
        taken.append(a)
        obs, reward, terminated, truncated, _ = env.step(a)
        rows_rew.append(reward)
        if terminated or truncated or (max_decisions and len(rows_act) >= max_decisions):
            break
    # np.stack, not np.asarray: the same array, without asarray's walk over every row's
    # elements (about a tenth of the time, a few per cent of an episode at 200 servers)
    demos = Demonstrations(obs=np.stack(rows_obs).astype(np.float32, copy=False), acts=np.asarray(rows_act, np.int64),
                           masks=np.stack(rows_mask).astype(bool, copy=False), rewards=np.asarray(rows_rew, np.float32),
                           experts=np.array([teacher] * len(rows_act)), seconds=time.perf_counter() - t0)
    return demos, np.asarray(taken, np.int64)


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


def sampled_policy(model, seed: int, stream: int = 0) -> Callable[[np.ndarray, GridCommandEnv], int]:
    """The model's masked policy, sampled with a generator seeded from ``seed`` (how a
    learner acts during its pass), as an ``(obs, env) -> action`` policy. ``stream``: one
    independent stream per value (a DAgger round's training episodes each draw their own;
    stream 0 is the one a single episode has always drawn)."""
    actor = _numpy_actor(model)
    key = (0x424300,) if stream == 0 else (0x424300, stream)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))  # its own stream
    return lambda obs, env: actor.act(obs, env.action_masks(), rng)


def _numpy_actor(model) -> Any:
    """The model's policy as the numpy actor of its design (per-server or flat)."""
    return numpy_actor_critic(model.policy) if isinstance(model.policy, PerServerPolicy) else NumpyActor(model.policy)


def greedy_policy(model) -> Callable[[np.ndarray, GridCommandEnv], int]:
    """The model's most likely allowed action (first of ties), as an ``(obs, env) -> action``
    policy: how the study's positive control scores a frozen clone."""
    actor = _numpy_actor(model)
    return lambda obs, env: actor.act(obs, env.action_masks())


@dataclass(frozen=True)
class _EpisodeJob:
    """What a process needs to play a clone's training episodes (:func:`_played`): the
    teacher's demonstrations (``policy`` None) or a DAgger round (the clone's weights, played
    as :attr:`PipelineConfig.clone_action` says, its sampled draws from ``actor_seed``)."""
    episodes: list[GridCommandConfig]
    envelope_cache: Path | None
    teacher: str
    demo_tasks: int
    seed: int
    policy: dict[str, th.Tensor] | None = None
    clone_action: str = "greedy"
    actor_seed: int = 0

    def env(self, k: int) -> GridCommandEnv:
        """Training episode ``k``'s env, built afresh (reset() replays an episode exactly)."""
        return GridCommandEnv(self.episodes[k], envelope_cache=self.envelope_cache)

    def model(self, env: GridCommandEnv):
        """The clone as it plays the round, on ``env``'s spaces (the same in every episode)."""
        run = self.episodes[0].run
        model = make_run_ppo(env, run, self.seed)
        assert self.policy is not None
        model.policy.load_state_dict(self.policy)
        return model

    def play(self, k: int, env: GridCommandEnv, model=None) -> tuple[Demonstrations, np.ndarray | None]:
        """Episode ``k`` on ``env``: the teacher's labels, and (a DAgger round) per state
        whether the clone did as the teacher would have."""
        if self.policy is None:
            return demonstrate(env, self.teacher, self.demo_tasks), None
        actor = (sampled_policy(model, self.actor_seed, k) if self.clone_action == "sampled"
                 else greedy_policy(model))
        return relabel(env, self.teacher, actor, self.demo_tasks)


#: A process's job and clone while it plays a clone's episodes (:func:`_played`): set once per
#: pool worker by its initializer, as ``ProcessPoolExecutor`` workers keep their state.
_WORKER: dict[str, Any] = {}


def _episode_worker(job: _EpisodeJob) -> None:
    """Initializer of a process that plays a clone's episodes (:func:`_played`)."""
    from ilets.lifecycle import pool_worker

    pool_worker()  # one torch thread, as make_ppo sets for the clone in its own process
    _WORKER.clear()
    _WORKER["job"] = job


def _play_in_worker(k: int) -> tuple[tuple[Demonstrations, np.ndarray | None], float]:
    """Episode ``k`` of the worker's job, and the CPU seconds it took there."""
    c0 = time.process_time()
    job: _EpisodeJob = _WORKER["job"]
    env = job.env(k)
    if job.policy is not None and "model" not in _WORKER:
        _WORKER["model"] = job.model(env)
    return job.play(k, env, _WORKER.get("model")), time.process_time() - c0


def _played(job: _EpisodeJob, ks: range, processes: int, env0: GridCommandEnv, model=None):
    """Yield ``(k, job.play(k), cpu_s)`` for the training episodes ``ks``, in order: in this
    process (``cpu_s`` 0, the caller's own), or with ``processes`` > 1 on that many worker
    processes, each episode played whole by one of them (``cpu_s``: its CPU seconds there).
    An episode's labels depend on its episode and the clone's weights alone, never on the
    process or on the episodes played before it, so the clone is the same either way (tested).
    ``env0``, ``model``: this process's env of episode 0 and its clone, played in process."""
    if processes <= 1 or len(ks) <= 1:
        for k in ks:
            yield k, job.play(k, env0 if k == 0 else job.env(k), model), 0.0
        return
    from ilets.lifecycle import local_pool

    # an interrupt, an error or the caller stopping early kills the workers at once
    with local_pool(min(processes, len(ks)), _episode_worker, (job,)) as pool:
        for k, (out, cpu) in zip(ks, pool.map(_play_in_worker, ks)):
            yield k, out, cpu


def clone(train_cfg: GridCommandConfig, pipe: PipelineConfig, seed: int,
          envelope_cache: Path | None = None, progress: Path | None = None, processes: int = 1) -> tuple[dict, dict]:
    """OINPT on the training episode: the teacher's demonstrations, BC into a fresh MaskablePPO
    policy and (``run.oinpt.critic_pretrain``) the critic's regression. Returns the policy's
    ``state_dict`` and what cloning recorded. ``envelope_cache``: where the training
    episodes' envelopes are kept (:class:`GridCommandEnv`; the same clone either way); without
    one, a temporary folder for the clone's own span, since each DAgger round builds the
    further episodes' envs again and would otherwise compute their reach again.

    ``progress``: a folder where the clone keeps its aggregate
    (:class:`~ilets.gridcommand.aggregate.Aggregate`) and records itself after every episode
    it plays and every BC, with the policy and the global random states; a clone killed
    midway and called again with the same folder goes on from its last record and ends as
    the uninterrupted clone would, tensor for tensor (tested). :func:`cached_clone` gives
    one in its cache and removes it once the clone is written.

    ``processes``: how many processes play the training episodes (the demonstrations and
    each DAgger round's; BC stays in this one). The clone is the same for any number, tensor
    for tensor, with the same records (tested). ``clone_cpu_s`` counts the CPU seconds of
    the episodes wherever they were played, not the workers' start-up (a cell's ``cpu_s``
    counts that too); ``demo_wall_s`` sums the episodes' own wall seconds, so with several
    processes it exceeds the time that passed."""
    if processes < 1:
        raise ValueError(f"processes: expected >= 1, got {processes}")
    if envelope_cache is None and pipe.train_episodes > 1 and pipe.dagger_rounds:
        with tempfile.TemporaryDirectory(prefix="ilets-reach-") as tmp:
            return _clone(train_cfg, pipe, seed, Path(tmp), progress, processes)
    return _clone(train_cfg, pipe, seed, envelope_cache, progress, processes)


def _check_state(state: Any, rows: int, episodes: int, rounds: int) -> None:
    """``ValueError`` naming the field when a clone's recorded ``state`` is not one :func:`_clone`
    writes for ``episodes`` training episodes and ``rounds`` DAgger rounds over an aggregate of
    ``rows`` rows. Why: a record edited or written by other code would otherwise fail further
    on (``KeyError: 'info'``) on every rerun, its folder kept, instead of starting again."""
    def need(ok: bool, field: str, want: str) -> None:
        if not ok:
            value = state.get(field) if isinstance(state, dict) else state
            raise ValueError(f"state.{field} = {value!r}: expected {want}")

    def integer(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    need(isinstance(state, dict), "", "a JSON object")
    need(integer(state.get("first")) and 0 <= state["first"] <= rows, "first", f"an integer in [0, {rows}]")
    need(integer(state.get("phase")) and -1 <= state["phase"] <= rounds, "phase", f"an integer in [-1, {rounds}]")
    need(integer(state.get("played")) and 0 <= state["played"] <= episodes, "played",
         f"an integer in [0, {episodes}]")
    need(isinstance(state.get("info"), dict), "info", "a JSON object")
    need(isinstance(state.get("cpu_s", 0.0), (int, float)), "cpu_s", "a number")
    need("rng" in state, "rng", "the random states")
    if state["phase"] < 0:
        need(state.get("model") is None, "model", "null before the first BC")
    else:
        need(state.get("model") == f"model-{state['phase']}.pt", "model", f"'model-{state['phase']}.pt'")
        for key in ("demos", "start"):
            need(integer(state.get(key)) and 0 <= state[key] <= rows, key, f"an integer in [0, {rows}]")


def _resume(progress: Path | None, model, episodes: int = 1, rounds: int = 0) -> tuple[Aggregate, dict[str, Any]] | None:
    """A clone's aggregate and state as its last record left them in ``progress``, with
    ``model``'s policy and the global random states set back to theirs; None to start afresh
    (no folder, no record, or a damaged one, which is removed with a warning: a column cut
    short, :meth:`Aggregate.reopen`, or a state :func:`_clone` never writes for ``episodes``
    training episodes and ``rounds`` DAgger rounds, :func:`_check_state`)."""
    if progress is None:
        return None
    try:
        found = Aggregate.reopen(progress)
        if found is None:
            return None
        aggregate, state = found
        _check_state(state, len(aggregate), episodes, rounds)
        if state["model"] is not None:  # tensors only: torch's safe loader
            model.policy.load_state_dict(th.load(progress / state["model"], weights_only=True))
        random_state.restore(state["rng"])
        return aggregate, state
    except Exception as err:  # noqa: BLE001 -- any damage: the clone is made again from the start
        warnings.warn(f"{progress}: damaged clone progress ({type(err).__name__}: {err}); cloning from the start",
                      stacklevel=3)
        shutil.rmtree(progress, ignore_errors=True)
        return None


def _clone(train_cfg: GridCommandConfig, pipe: PipelineConfig, seed: int,
           envelope_cache: Path | None, progress: Path | None, processes: int) -> tuple[dict, dict]:
    """:func:`clone`, its envelope cache settled. Its phases: the demonstrations (phase -1),
    the first BC, then each DAgger round ``r`` (phase ``r``: the clone plays every training
    episode, then BC); ``state`` says how far they went (``played``: the phase's episodes
    done), so that a resumed clone skips what its record holds."""
    run = train_cfg.run
    c0 = time.process_time()
    episodes = training_episodes(train_cfg, pipe.train_episodes, pipe.train_episode_stride)
    env = GridCommandEnv(episodes[0], envelope_cache=envelope_cache)
    # each further episode's env is built when it is played and dropped after (_EpisodeJob.env):
    # hundreds of them held at once would take gigabytes; reset() replays an episode exactly,
    # so a fresh env plays it as a kept one would (the envelope cache spares its reach)
    job = _EpisodeJob(episodes, envelope_cache, pipe.teacher, pipe.demo_tasks, seed)
    model = make_run_ppo(env, run, seed)
    resumed = _resume(progress, model, len(episodes), pipe.dagger_rounds)
    if resumed is None:
        first = demonstrate(env, pipe.teacher, pipe.demo_tasks)
        # room for the demonstrations and each DAgger round's states, about as many as the teacher's
        aggregate = Aggregate(len(first) * len(episodes) * (1 + pipe.dagger_rounds) * 11 // 10,
                              aggregate_memory_limit(), progress)
        aggregate.add(first)
        state: dict[str, Any] = {"first": len(first), "phase": -1, "played": 1, "info": {}, "model": None}
    else:
        aggregate, state = resumed
    # CPU seconds of earlier runs (up to their last record) and of the processes playing episodes
    elsewhere = [state.get("cpu_s", 0.0)]
    info: dict[str, Any] = state["info"]
    phase0, played0 = state["phase"], state["played"]

    def cpu_s() -> float:
        return sum(elsewhere) + time.process_time() - c0

    def record(**changes: Any) -> None:
        state.update(changes, info=info, cpu_s=cpu_s(), rng=random_state.capture())
        aggregate.commit(state)

    def record_bc(phase: int) -> None:
        # the policy after a BC, then the record naming it: a kill between the two resumes
        # from the earlier record and makes this BC again, from the same state
        name = f"model-{phase}.pt"
        if progress is not None:
            atomic_write(progress / name, lambda tmp: th.save(model.policy.state_dict(), tmp))
        old = state["model"]
        record(phase=phase, played=0, model=name, start=len(aggregate))
        if progress is not None and old is not None and old != name:
            (progress / old).unlink(missing_ok=True)

    if phase0 < 0:
        if resumed is None:  # the first episode's record (a resumed clone's is on disk)
            record()
        for k, (demos_k, _), cpu in _played(job, range(played0, len(episodes)), processes, env):
            elsewhere.append(cpu)
            aggregate.add(demos_k)
            record(played=k + 1)
        state["demos"] = len(aggregate)
    demos = aggregate.view(0, state["demos"])
    oinpt: OINPTConfig = run.oinpt
    if pipe.bc_epochs:
        oinpt = dataclasses.replace(oinpt, bc_epochs=pipe.bc_epochs)
    # the minibatches BC takes on the first episode alone: what every BC is meant to take
    meant = oinpt.bc_epochs * (state["first"] // oinpt.batch_size)
    exact = max(1, meant) if pipe.bc_step_budget == "exact" else None
    if len(episodes) > 1:  # the first episode's gradient steps over all of them (``train_episodes``)
        oinpt = dataclasses.replace(oinpt, bc_epochs=max(1, round(oinpt.bc_epochs * state["first"] / len(demos))))
    repeat = label_repeats(env, pipe)

    def bc_config(data: Demonstrations, cfg: OINPTConfig, rows: np.ndarray | None, key: str) -> OINPTConfig:
        # BC's own epochs for ``data`` (``event_epochs``), and the share of the meant steps
        # they take, recorded (under ``exact``, the meant steps themselves)
        cfg = event_epochs(cfg, rows)
        took = exact if exact is not None else cfg.bc_epochs * (
            int(repeat_times(data, repeat, rows).sum()) // cfg.batch_size)
        info[key] = took / meant if meant else math.nan
        return cfg

    if phase0 < 0:
        # the teacher's demonstrations take wall seconds (``Demonstrations.seconds``, as in the
        # cloud study): named for what they are (cells computed before this name call it ``demo_cpu_s``)
        info.update(demo_decisions=len(demos), demo_wall_s=demos.seconds)
        if len(episodes) > 1:
            info["train_episodes"] = len(episodes)
        rows = event_rows(env, demos, pipe.event_repeat)
        # report=False: the clone records only the agreements below, and the cloning report's one
        # forward pass over every decision would hold gigabytes with many training episodes
        with aggregate.random_reads():  # BC draws rows at random: no read-ahead from disk
            cloned = behaviour_clone(model, demos, bc_config(demos, oinpt, rows, "bc_step_share"), seed,
                                     repeat=repeat, rows=rows, report=False, batches=exact)
        info["bc_agreement_before"] = cloned["bc_agreement_before"]  # the agreement after: split below
        record_bc(0)
    for r in range(max(phase0, 0), pipe.dagger_rounds):
        # DAgger [ours, not imitation's trainer: its expert is a policy over observations, while
        # the ladder's experts read the environment's state]: the clone, acting as it is scored,
        # plays the training episode; the teacher labels the states it visits; BC goes on from
        # the current weights over everything labelled so far (imitation's DAgger also trains
        # one policy over the growing aggregate), each round with the first BC's number of
        # gradient steps (its epochs scaled by the demonstrations over the aggregate), so a
        # round costs what the first BC did
        # the same clone plays each training episode in turn, each its own draws
        round_job = dataclasses.replace(job, policy={k: v.clone() for k, v in model.policy.state_dict().items()},
                                        clone_action=pipe.clone_action, actor_seed=seed + 1 + r)
        for k, labelled, cpu in _played(round_job, range(played0 if r == phase0 else 0, len(episodes)), processes,
                                        env, model):
            elsewhere.append(cpu)
            aggregate.add(*labelled)
            record(played=k + 1)
        start = state["start"]
        # on the clone's own states, before this round's BC
        info.update(agreement_split(env, aggregate.view(start), aggregate.agreed(start), "dagger_agreement", f"[{r}]"))
        seen = aggregate.view()
        steps = dataclasses.replace(oinpt, bc_epochs=max(1, round(oinpt.bc_epochs * len(demos) / len(seen))))
        rows = event_rows(env, seen, pipe.event_repeat)
        with aggregate.random_reads():
            behaviour_clone(model, seen, bc_config(seen, steps, rows, f"bc_step_share[{r}]"), seed + 1 + r,
                            repeat=repeat, rows=rows, report=False, batches=exact)
        record_bc(r + 1)
    if pipe.dagger_rounds:
        info["dagger_states"] = len(aggregate) - len(demos)
    # on the teacher's own states, after the last BC
    info.update(agreement_split(env, demos, greedy_agreement(model.policy, demos), "bc_agreement_after"))
    if oinpt.critic_pretrain:
        # under the exact budget the critic's regression, too, takes the minibatches it takes
        # on the first episode alone (critic_epochs passes over it), not passes over them all
        critic = None if exact is None else oinpt.critic_epochs * math.ceil(state["first"] / oinpt.batch_size)
        info.update(pretrain_critic(model, demos, run.ppo.gamma, oinpt, seed, batches=critic,
                                    random_reads=aggregate.random_reads))
    info["clone_cpu_s"] = cpu_s()
    return {k: v.clone() for k, v in model.policy.state_dict().items()}, dict(info)


def whole_epoch_step_shares(train_episodes: int, bc_epochs: int, dagger_rounds: int = 1) -> tuple[float, ...]:
    """The share of the meant steps (``bc_epochs`` passes over the first training episode)
    each BC takes under ``bc_step_budget`` ``whole_epochs``, the first BC's then each DAgger
    round's, in a model of the data: every training episode as long as the first and every
    round adding as many states as the demonstrations, whole minibatches ignored. A clone's
    own shares depend on its data (a round's epochs are rounded half to even, so a round
    just under or over half the data takes one epoch more or less): each records them
    (``bc_step_share``); this is what a design's shares are near, before it runs."""
    epochs = max(1, round(bc_epochs / train_episodes)) if train_episodes > 1 else bc_epochs
    shares = [epochs * train_episodes / bc_epochs]
    for r in range(dagger_rounds):  # round r is BC over the demonstrations and r + 1 rounds' states
        seen = train_episodes * (r + 2)
        shares.append(max(1, round(epochs * train_episodes / seen)) * seen / bc_epochs)
    return tuple(shares)


def label_repeats(env: GridCommandEnv, pipe: PipelineConfig) -> dict[int, int]:
    """Action -> times each decision with that label is shown to BC: a deferral
    ``defer_repeat`` times, each sleep action of the sleep head ``sleep_repeat`` times."""
    repeat = {env.defer_action: pipe.defer_repeat}
    if env.sleep_actions and pipe.sleep_repeat != 1:
        m = env.config.run.fleet.servers
        repeat.update({env.first_sleep_action + s: pipe.sleep_repeat for s in range(m)})
    return repeat


def event_rows(env: GridCommandEnv, demos: Demonstrations, event_repeat: int) -> np.ndarray | None:
    """How many times BC is shown each decision of ``demos``: ``event_repeat`` for one made
    during an event (:meth:`GridCommandEnv.during_event`, read from its observation), else 1;
    None when ``event_repeat`` is 1 (as demonstrated)."""
    if event_repeat == 1:
        return None
    return np.where(env.during_event(demos.obs), event_repeat, 1)


def event_epochs(cfg: OINPTConfig, rows: np.ndarray | None) -> OINPTConfig:
    """``cfg`` with BC's epochs cut by the share the repeats ``rows`` (:func:`event_rows`, one
    per decision) add, so that BC takes as many gradient steps as without them (at least one
    epoch); ``cfg`` itself without repeats (None) or decisions."""
    if rows is None or not len(rows):
        return cfg
    return dataclasses.replace(cfg, bc_epochs=max(1, round(cfg.bc_epochs * len(rows) / int(rows.sum()))))


def online_pass(method: str, eval_cfg: GridCommandConfig, pipe: PipelineConfig, seed: int,
                cloned: dict | None = None, envelope_cache: Path | None = None) -> tuple[dict, dict, Any]:
    """One learning pass of ``ppo``, ``bc+ppo`` or ``bc+ppo+oail`` over ``eval_cfg``'s episode.

    ``cloned``: the policy's state after :func:`clone` (needed by the ``bc+`` methods).
    Returns the pass's metrics (as :func:`evaluate` reports them), what learning recorded,
    and the model. ``envelope_cache``: as :func:`clone`'s.
    """
    if method not in LEARNED[1:]:
        raise ValueError(f"method: expected one of {LEARNED[1:]} for an online pass, got {method!r}")
    if method.startswith("bc") and cloned is None:
        raise ValueError(f"method {method!r}: needs the cloned policy (cloned=)")
    run = eval_cfg.run
    c0 = time.process_time()
    env = ScoredEnv(eval_cfg, envelope_cache=envelope_cache)
    model = make_run_ppo(env, run, seed)
    if cloned is not None and method.startswith("bc"):
        model.policy.load_state_dict(cloned)
    callbacks: list[BaseCallback] = [StopAtEpisodeEnd()]
    corrections = None
    if method == "bc+ppo+oail":
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


#: Fields added to the configuration after clones were cached: at their defaults they are left
#: out of :func:`clone_key`, so a cache made before they existed is still found.
CLONE_KEY_ADDED = ("run.defer_head", "envelope_redraws", "run.cap_head", "run.server_film", "observe_terms")


def clone_key(train_cfg: GridCommandConfig, pipe: PipelineConfig, seed: int) -> str:
    """A hash of everything that determines :func:`clone`'s result (its cache key)."""
    plain = drop_added_defaults(to_dict(train_cfg), CLONE_KEY_ADDED, to_dict(GridCommandConfig()))
    blob = json.dumps([CLONE_CACHE_VERSION, plain, pipe.plain(), seed], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cached_clone(train_cfg: GridCommandConfig, pipe: PipelineConfig, seed: int,
                 cache_dir: Path | None = None, wait: bool = True, processes: int = 1) -> tuple[dict, dict]:
    """:func:`clone`, read from ``cache_dir`` when it holds this key, written there otherwise.

    ``bc``, ``bc+ppo`` and ``bc+ppo+oail`` of one (seed, fleet, training regime) share the
    same clone (cloning is deterministic from the seed: the cached state is the one a fresh
    clone makes, tested), so a grid computes it once [ours]. A damaged file is recomputed.
    The training episodes' envelopes are kept in ``cache_dir`` too (:func:`clone`), and so
    is a clone in the making (``clone-<key>.partial``, :func:`clone`'s ``progress``): a grid
    killed in the middle of a clone goes on from its last record when it is run again.

    The clone is made under a lock beside its file, so processes sharing ``cache_dir`` (two
    grids on one folder, whose neighbouring cells ``bc`` and ``bc+ppo`` of a seed share a
    clone) make it once: the second waits for it and reads it, or with ``wait=False`` raises
    :class:`~ilets.files.HeldByAnother` at once (its cell is then busy, and taken up again
    once the process has done the cells nobody holds). ``processes``: :func:`clone`'s.
    """
    from filelock import FileLock, Timeout

    if cache_dir is None:
        return clone(train_cfg, pipe, seed, processes=processes)
    path = Path(cache_dir) / f"clone-{clone_key(train_cfg, pipe, seed)}.pt"

    def cached() -> tuple[dict, dict] | None:
        if not path.is_file():
            return None
        try:
            # tensors and a JSON string only: torch's safe loader, no unpickling of code
            saved = th.load(path, weights_only=True)
            return saved["state"], {**json.loads(saved["info_json"]), "clone_cached": True}
        except Exception as err:  # noqa: BLE001 -- a file cut short by a kill: make the clone again
            warnings.warn(f"{path}: damaged clone cache ({type(err).__name__}); cloning again", stacklevel=2)
            path.unlink(missing_ok=True)
            return None

    found = cached()  # a clone written whole (one rename) is read without the lock
    if found is not None:
        return found
    lock = FileLock(str(path) + ".lock", timeout=-1 if wait else 0)
    try:
        lock.acquire()
    except Timeout:
        raise HeldByAnother(Path(lock.lock_file)) from None
    try:
        found = cached()  # made by the process that held the lock
        if found is not None:
            return found
        progress = path.with_suffix(".partial")  # a killed clone goes on from here (:func:`clone`)
        state, info = clone(train_cfg, pipe, seed, cache_dir, progress, processes)
        atomic_write(path, lambda tmp: th.save({"state": state, "info_json": json.dumps(info, default=float)}, tmp))
        shutil.rmtree(progress, ignore_errors=True)
        return state, info
    finally:
        lock.release()


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
    if method.startswith("bc"):
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
        elif method == "bc":
            env = GridCommandEnv(cfg, envelope_cache=cache_dir)
            model = make_run_ppo(env, cfg.run, seed)
            assert cloned is not None, "a bc method clones first"
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
