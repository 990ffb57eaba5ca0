"""A grid-command clone: OINPT on the teacher's training episodes, then DAgger rounds.

:func:`clone` demonstrates the teacher over the training episodes
(:func:`ilets.gridcommand.teacher.demonstrate`), runs
:func:`ilets.agents.oinpt.behaviour_clone` (``imitation``'s BC on PPO's *own* policy object,
no hand-off) and :func:`ilets.agents.oinpt.pretrain_critic`, unchanged; optionally
(``dagger_rounds``) DAgger rounds, in which the clone plays the training episodes and the
teacher labels the states it visits (:func:`ilets.gridcommand.teacher.relabel`). The episodes
can be played on several processes, and a clone killed midway resumes from its last record
(:mod:`ilets.gridcommand.clone_progress`).
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from ilets.agents.oinpt import Demonstrations, behaviour_clone, greedy_agreement, pretrain_critic, repeat_times
from ilets.agents.ppo import make_run_ppo
from ilets.config import OINPTConfig
from ilets import random_state
from ilets.files import atomic_write
from ilets.gridcommand.actors import greedy_policy, sampled_policy
from ilets.gridcommand.aggregate import Aggregate, aggregate_memory_limit
from ilets.gridcommand.clone_progress import resume
from ilets.gridcommand.config import GridCommandConfig
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.episodes import training_episodes
from ilets.gridcommand.pipeline_config import PipelineConfig
from ilets.gridcommand.teacher import agreement_split, demonstrate, relabel


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
    resumed = resume(progress, model, len(episodes), pipe.dagger_rounds)
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
