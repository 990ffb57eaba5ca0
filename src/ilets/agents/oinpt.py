"""OINPT: offline initial network parameters training (behaviour cloning into PPO).

Three steps, top to bottom:

1. :func:`collect_demonstrations` schedules the offline segment (the first 25 minutes)
   window by window with optimisation experts on a live cloud: for each window of W tasks,
   GA and PSO each plan it on a clone; the plan of lower exact cost is applied to the live
   cloud and its (observation, action, reward) triples are kept [paper: "keeping the better
   plan per window"]. Demonstrations are cached on disk under a key of everything that
   determines them.
2. :func:`behaviour_clone` trains **PPO's own policy object** with ``imitation``'s BC
   (``bc.BC(policy=model.policy)``), so there is no hand-off or weight conversion: after
   it, ``model`` acts as the cloned policy (imitation issues #781/#862 are the trap of
   building BC's default 32-32 policy and converting it).
3. :func:`pretrain_critic` regresses the critic on the discounted returns of the expert
   trajectory [ours: the paper trains "the actor-critic" but does not say how]. Without it
   the first PPO updates use advantages from an untrained critic and can undo the cloning;
   the book measures that.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import ContextManager

import numpy as np
import torch as th
from filelock import FileLock

from ilets.agents.demonstrations import Demonstrations
from ilets.agents.masked import unchecked_distributions
from ilets.agents.observation import StateSpec
from ilets.config import ExpertConfig, OINPTConfig, RewardConfig, to_dict
from ilets.config.learning import HEURISTIC_TEACHERS
from ilets.expert_table import team
from ilets.simulator.cloud import Cloud, Fleet
from ilets.workloads.workload import TaskTable

CACHE_VERSION = 2  # bump when the demonstration procedure changes
#: expert decisions demonstrated after the training ones and never cloned: the held-out
#: states of the cloning report (:func:`cloning_report`) [ours]
HELDOUT_TASKS = 1500
#: top-k agreement levels reported
TOP_K = (1, 3, 5)


def demo_key(tasks: TaskTable, fleet: Fleet, expert: str, experts_cfg: ExpertConfig,
             reward: RewardConfig, max_tasks: int, seed: int, state: StateSpec) -> str:
    """A hash of everything that determines a demonstration set (cache key)."""
    h = hashlib.sha256()
    n = min(len(tasks), max_tasks)
    for arr in (tasks.arrival[:n], tasks.cpu[:n], tasks.length[:n], tasks.deadline[:n],
                fleet.capacity, fleet.mips, fleet.p_idle, fleet.p_act):
        h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
    h.update(json.dumps([CACHE_VERSION, expert, to_dict(experts_cfg), to_dict(reward), n, seed, to_dict(state)],
                        sort_keys=True).encode())
    return h.hexdigest()[:16]


def collect_demonstrations(tasks: TaskTable, fleet: Fleet, expert: str, experts_cfg: ExpertConfig,
                           reward: RewardConfig, max_tasks: int, seed: int, state: StateSpec,
                           cache_dir: Path | None = None, progress=None,
                           heldout: int = HELDOUT_TASKS) -> Demonstrations:
    """Demonstrations of ``expert`` (a team such as "ga+pso", or "greedy": :func:`ilets.expert_table.team`)
    on the first ``max_tasks`` tasks; per window the team's cheapest plan is kept.

    The expert then goes on for ``heldout`` more tasks; those decisions are attached as
    ``.heldout`` (never cloned: the held-out states of :func:`cloning_report`). The training
    decisions do not depend on ``heldout``. Reads the cache when ``cache_dir`` holds this
    key; writes it otherwise.
    """
    n = min(len(tasks), max_tasks)
    key = demo_key(tasks, fleet, expert, experts_cfg, reward, max_tasks, seed, state)
    key += f"-h{heldout}" if heldout else ""
    if cache_dir is None:
        return _split(_demonstrate(tasks, fleet, expert, experts_cfg, reward, max_tasks, seed, state, progress,
                                   heldout), n)
    path = Path(cache_dir) / f"demos-{key}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    # DRL+ and ILETS cells of the same seed and fleet need the same demonstrations and often
    # run side by side in a grid: the lock makes the second wait for the first's file.
    with FileLock(str(path) + ".lock"):
        if path.is_file():
            try:
                demos = Demonstrations.load(path, servers=len(fleet), width=state.size(len(fleet)))
                if len(demos) < n:
                    raise ValueError(f"{len(demos)} decisions, expected at least {n}")
                return _split(demos, n)
            except Exception as err:  # noqa: BLE001 -- truncated/corrupt npz: zip, zlib, key, digest or shape errors
                # a file cut short by a kill, edited or from a bad disk must not fail every later
                # cell: it is set aside (kept for inspection) and recomputed
                aside = path.with_name(f"{path.stem}.damaged-{os.getpid()}.npz")
                path.replace(aside)
                warnings.warn(f"{path}: damaged demonstration cache ({type(err).__name__}: {err}); "
                              f"set aside as {aside.name} and recomputed", stacklevel=2)
        demos = _demonstrate(tasks, fleet, expert, experts_cfg, reward, max_tasks, seed, state, progress, heldout)
        demos.save(path)
    return _split(demos, n)


def _split(demos: Demonstrations, n: int) -> Demonstrations:
    train = demos.slice(0, n)
    train.heldout = demos.slice(n)
    return train


def _demonstrate(tasks: TaskTable, fleet: Fleet, expert: str, experts_cfg: ExpertConfig, reward: RewardConfig,
                 max_tasks: int, seed: int, state: StateSpec, progress, heldout: int = 0) -> Demonstrations:
    from ilets.agents.experts import evaluate_plan, make_expert, window_from_table

    t0 = time.perf_counter()
    if expert in HEURISTIC_TEACHERS:  # a heuristic teacher: its decisions one by one, no windows
        from ilets.agents.cloning import consecutive_demonstrations

        # one sequence, training decisions then held-out ones, as the window experts' (_split cuts it)
        demos = consecutive_demonstrations(tasks, fleet, expert, reward, state, max_tasks + heldout,
                                           experts_cfg.miss_penalty)
        demos.seconds = time.perf_counter() - t0
        return demos
    names = team(expert)
    planners = [make_expert(n, experts_cfg, reward, state) for n in names]
    rng = np.random.default_rng(seed)
    n = min(len(tasks), max_tasks)
    total = min(len(tasks), n + heldout)
    cloud = Cloud(fleet, t0=float(tasks.arrival[0]))
    parts: list[tuple] = []
    w = experts_cfg.window
    # windows of the training decisions end at n, the held-out ones continue from there
    starts = [(lo, min(lo + w, n)) for lo in range(0, n, w)] + [(lo, min(lo + w, total)) for lo in range(n, total, w)]
    for lo, hi in starts:
        window = window_from_table(tasks, lo, hi)
        cloud.advance(window[0].arrival)
        plans = [p.plan(cloud, window, rng) for p in planners]
        best = min(plans, key=lambda p: p.cost)
        # every server's cost at each of the plan's decisions, for the cloning regret
        every = evaluate_plan(cloud, window, best.assignment, reward, experts_cfg.miss_penalty, state,
                              action_costs=True).action_costs
        # apply the chosen plan to the live cloud; the plan's observations were recorded
        # by replaying it on a clone of this very state, so they are the live states
        for task, s in zip(window, best.assignment):
            cloud.assign(task.index, task.arrival, task.cpu, task.length, task.deadline, int(s))
        parts.append((best.observations, best.assignment, best.masks, best.rewards, [best.expert] * len(window),
                      every))
        if progress is not None:
            progress(len(window))
    return Demonstrations(
        obs=np.concatenate([p[0] for p in parts]).astype(np.float32),
        acts=np.concatenate([p[1] for p in parts]).astype(np.int64),
        masks=np.concatenate([p[2] for p in parts]).astype(bool),
        rewards=np.concatenate([p[3] for p in parts]).astype(np.float32),
        experts=np.array(sum((p[4] for p in parts), []), dtype=str),
        seconds=time.perf_counter() - t0,
        action_costs=np.concatenate([p[5] for p in parts]).astype(np.float32),
    )


def to_transitions(demos: Demonstrations):
    """The demonstrations as ``imitation`` Transitions (full form: 1.0.1 needs next_obs/dones):
    what imitation's own data loader takes, the reference :func:`minibatches` is tested and
    benchmarked against (BC itself takes :func:`minibatches`).

    BC reads observations and actions only, so ``next_obs`` is the observations themselves (a
    view, no copy: a clone that learns from many episodes holds gigabytes of them); dones
    mark the last decision."""
    from imitation.data.types import Transitions

    next_obs = demos.obs
    dones = np.zeros(len(demos), dtype=bool)
    dones[-1] = True
    infos = np.array([{}] * len(demos))
    return Transitions(obs=demos.obs, acts=demos.acts, infos=infos, next_obs=next_obs, dones=dones)


class _Rows(th.utils.data.Dataset):
    """Observations and actions indexed a minibatch at a time (:func:`minibatches`)."""

    def __init__(self, obs: np.ndarray, acts: np.ndarray) -> None:
        self.obs, self.acts = obs, acts

    def __len__(self) -> int:
        return len(self.acts)

    def __getitem__(self, rows: list[int]) -> dict[str, th.Tensor]:
        idx = np.asarray(rows, dtype=np.int64)
        return {"obs": th.as_tensor(np.ascontiguousarray(self.obs[idx])), "acts": th.as_tensor(self.acts[idx])}


def minibatches(demos: Demonstrations, batch_size: int):
    """The minibatches ``imitation``'s BC draws from ``demos`` (its data loader over
    :func:`to_transitions`: shuffled, the last partial minibatch dropped), gathered a
    minibatch at a time. The same rows in the same order, drawn from torch's global generator
    the same way (a ``RandomSampler`` under a ``BatchSampler``, in a ``DataLoader``), so BC
    learns the same weights and leaves the generator where it would (tested). Why not
    imitation's own loader: it builds one dict per decision and collates them, which makes a
    per-server BC about 1.2 times slower (``benchmarks/bench_bc_minibatches.py``)."""
    if len(demos) < batch_size:  # imitation's own check and words
        raise ValueError(f"Number of transitions in `demonstrations` {len(demos)} is smaller than batch size "
                         f"{batch_size}.")
    data = _Rows(demos.obs, demos.acts)
    sampler = th.utils.data.BatchSampler(th.utils.data.RandomSampler(data), batch_size, drop_last=True)
    return th.utils.data.DataLoader(data, batch_size=None, sampler=sampler)


def behaviour_clone(model, demos: Demonstrations, cfg: OINPTConfig, seed: int,
                    repeat: dict[int, int] | None = None, rows: np.ndarray | None = None,
                    report: bool = True, batches: int | None = None) -> dict[str, float]:
    """Train ``model.policy`` in place by BC on ``demos``; returns accuracy before/after.
    ``repeat``: action -> how many times each decision with that label is shown to BC, and
    ``rows``: how many times each decision is shown, on top (:func:`with_repeats`); agreement
    is measured on ``demos`` as demonstrated. ``report``: with it, the returned numbers also
    hold :func:`cloning_report`'s, which scores every decision in one forward pass (about five
    times the observations' memory with the per-server policy), so a caller that records
    none of them, over hundreds of thousands of decisions, leaves it out. ``batches``: BC
    takes this many minibatches (imitation's ``n_batches``, passing through the data as often
    as it takes) instead of ``cfg.bc_epochs`` passes."""
    with unchecked_distributions():
        return _behaviour_clone(model, demos, cfg, seed, repeat or {}, rows, report, batches)


def with_repeats(demos: Demonstrations, repeat: dict[int, int], rows: np.ndarray | None = None) -> Demonstrations:
    """``demos`` with every decision labelled ``a`` shown ``repeat[a]`` times in a row (in
    decision order), times ``rows[i]`` for decision ``i`` when given: a weight for a rare label
    or a rare kind of state, for a BC that takes no sample weights (repeating a sample weighs
    its loss the same in expectation). No repeats: ``demos``."""
    times = repeat_times(demos, repeat, rows)
    if (times == 1).all():
        return demos
    idx = np.repeat(np.arange(len(demos)), times)
    return dataclasses.replace(demos, obs=demos.obs[idx], acts=demos.acts[idx], masks=demos.masks[idx],
                               rewards=demos.rewards[idx], experts=demos.experts[idx],
                               action_costs=None if demos.action_costs is None else demos.action_costs[idx],
                               heldout=demos.heldout)


def repeat_times(demos: Demonstrations, repeat: dict[int, int], rows: np.ndarray | None = None) -> np.ndarray:
    """How many times :func:`with_repeats` shows each decision of ``demos`` (int64, one per
    decision): ``repeat[a]`` for a decision labelled ``a`` (1 for other labels), times
    ``rows[i]`` when given."""
    times = np.ones(len(demos), dtype=np.int64)
    for action, n in repeat.items():
        times[demos.acts == action] = n
    if rows is not None:
        if len(rows) != len(demos):
            raise ValueError(f"with_repeats: rows has {len(rows)} entries for {len(demos)} decisions")
        times *= np.asarray(rows, np.int64)
    return times


def with_label_noise(demos: Demonstrations, share: float, seed: int) -> tuple[Demonstrations, float]:
    """``demos`` with each label replaced, with probability ``share``, by a uniformly random
    server the decision's mask allows (possibly the expert's own): a noisy expert whose states
    are the expert's. Returns the copy and the share of labels that changed. The draws are
    keyed by ``seed`` alone; ``share == 0`` returns ``demos`` itself, drawing nothing."""
    if share == 0:
        return demos, 0.0
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x6C6E]))  # "ln": label noise
    acts = demos.acts.copy()
    for i in np.flatnonzero(rng.random(len(acts)) < share):
        acts[i] = rng.choice(np.flatnonzero(demos.masks[i]))
    noisy = dataclasses.replace(demos, acts=acts)
    return noisy, float(np.mean(acts != demos.acts)) if len(acts) else 0.0


def _behaviour_clone(model, demos: Demonstrations, cfg: OINPTConfig, seed: int,
                     repeat: dict[int, int], rows: np.ndarray | None = None,
                     report: bool = True, batches: int | None = None) -> dict[str, float]:
    """BC on ``demos`` (with :func:`with_label_noise` when ``cfg.label_noise`` is set, then
    :func:`with_repeats`); the agreement and (``report``) the cloning report are measured
    against the expert's own labels, each decision once."""
    from imitation.algorithms import bc
    from imitation.util import logger as imit_logger

    before = action_agreement(model.policy, demos)
    taught, changed = with_label_noise(demos, cfg.label_noise, seed)
    taught = with_repeats(taught, repeat, rows)
    class BC(bc.BC):
        def set_demonstrations(self, demonstrations) -> None:
            # imitation wraps a loader of minibatches in one that first draws a minibatch to
            # check it, which moves torch's global generator: ours (:func:`minibatches`) goes
            # in as it is; anything else the way imitation takes it
            if isinstance(demonstrations, th.utils.data.DataLoader):
                self._demo_data_loader = demonstrations
            else:
                super().set_demonstrations(demonstrations)

    trainer = BC(
        observation_space=model.observation_space, action_space=model.action_space,
        policy=model.policy, demonstrations=minibatches(taught, cfg.batch_size), rng=np.random.default_rng(seed),
        batch_size=cfg.batch_size, optimizer_kwargs={"lr": cfg.learning_rate}, device="cpu",
        custom_logger=imit_logger.configure(format_strs=[]),
    )
    with warnings.catch_warnings():  # imitation's logger converts loss tensors that need grad
        warnings.filterwarnings("ignore", message=".*requires_grad.*")
        if batches is None:
            trainer.train(n_epochs=cfg.bc_epochs, progress_bar=False, log_interval=10**9)
        else:
            trainer.train(n_batches=batches, progress_bar=False, log_interval=10**9)
    noise = {"bc_labels_changed": changed} if cfg.label_noise else {}
    return {"bc_agreement_before": before, "bc_agreement_after": action_agreement(model.policy, demos),
            **(cloning_report(model.policy, demos) if report else {}), **noise}


def cloning_report(policy, demos: Demonstrations, prefix: str = "bc_") -> dict[str, float]:
    """How well the (Maskable) policy imitates the expert, on the demonstrations and held out.

    For ``demos`` (the cloned states) and ``demos.heldout`` (later expert states, never
    cloned): top-k agreement (the expert's server among the policy's k most likely masked
    servers, k in :data:`TOP_K`), and the **regret**: the mean extra cost of the policy's
    most likely server over the expert's, each evaluated at the expert's own state (a
    one-step deviation, costed as the expert's plan is: reward cost + miss penalty), also
    relative to the expert's mean cost.
    """
    out: dict[str, float] = {}
    for part, d in (("train", demos), ("heldout", demos.heldout)):
        if d is None or len(d) == 0:
            continue
        obs = th.as_tensor(np.array(d.obs))
        with th.no_grad(), unchecked_distributions():
            probs = policy.get_distribution(obs, action_masks=d.masks).distribution.probs.numpy()
        ranked = np.argsort(-probs, axis=1, kind="stable")
        for k in TOP_K:
            out[f"{prefix}top{k}_{part}"] = float((ranked[:, :k] == d.acts[:, None]).any(axis=1).mean())
        if d.action_costs is not None:
            rows = np.arange(len(d))
            mine, theirs = d.action_costs[rows, ranked[:, 0]], d.action_costs[rows, d.acts]
            out[f"{prefix}regret_{part}"] = float(np.mean(mine - theirs))
            out[f"{prefix}regret_rel_{part}"] = float(np.mean(mine - theirs) / np.mean(theirs))
    return out


def action_agreement(policy, demos: Demonstrations, limit: int = 20_000) -> float:
    """Share of demonstrated decisions where the (Maskable) policy's masked greedy action matches."""
    return float(greedy_agreement(policy, demos, limit).mean())


def greedy_agreement(policy, demos: Demonstrations, limit: int = 20_000) -> np.ndarray:
    """Per demonstrated decision (the first ``limit``), whether the (Maskable) policy's masked
    greedy action is the demonstrated one (bool)."""
    obs = th.as_tensor(np.array(demos.obs[:limit]))
    with th.no_grad(), unchecked_distributions():
        dist = policy.get_distribution(obs, action_masks=demos.masks[:limit])
        pred = dist.distribution.probs.argmax(dim=1).numpy()
    return pred == demos.acts[:limit]


def discounted_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """G_t = r_t + gamma G_{t+1} over one trajectory (the end is treated as terminal)."""
    out = np.empty(len(rewards), dtype=np.float64)
    g = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        g = rewards[t] + gamma * g
        out[t] = g
    return out


def critic_parameters(policy) -> list[th.nn.Parameter]:
    """The critic's own parameters of a flat or per-server policy (its branch and value head)."""
    branch = policy.mlp_extractor.critic if hasattr(policy.mlp_extractor, "critic") \
        else policy.mlp_extractor.value_net
    return list(branch.parameters()) + list(policy.value_net.parameters())


#: Decisions per forward pass of :func:`pretrain_critic`'s MSE: one pass over a million
#: per-server observations held activations several times the observations' own size.
MSE_CHUNK = 65_536


def pretrain_critic(model, demos: Demonstrations, gamma: float, cfg: OINPTConfig, seed: int,
                    batches: int | None = None,
                    random_reads: Callable[[], ContextManager[None]] = contextlib.nullcontext) -> dict[str, float]:
    """Regress PPO's value head on the expert's discounted returns; returns the MSE before/after.
    ``cfg.critic_epochs`` passes over the decisions, each in a fresh order, the last minibatch
    of a pass as long as what is left; with ``batches``, exactly that many minibatches instead,
    in the same order (passing through the decisions as often as it takes), so that
    ``critic_epochs`` passes' worth of minibatches of one episode can be asked of many.
    ``random_reads``: the context the minibatches are drawn in (e.g. an aggregate on disk read
    without read-ahead, :meth:`ilets.gridcommand.aggregate.Aggregate.random_reads`); the MSE's
    passes read the decisions in order, outside it.

    Only the critic's own parameters (its MLP branch and value head) are trained, so the
    cloned actor is untouched. The last ``1/(1-gamma)`` returns are cut short by the end of
    the segment; with gamma 0.98 that is the last ~50 of thousands of decisions.

    Memory stays at the demonstrations' own: the observations are used in place (a tensor
    view, not a copy), and the MSE's predictions are made :data:`MSE_CHUNK` decisions at a
    time into one vector whose mean is taken as before. Up to :data:`MSE_CHUNK` decisions
    (the faithful study's 5,000 included) that is the same single forward pass as ever.
    """
    policy = model.policy
    params = critic_parameters(policy)
    opt = th.optim.Adam(params, lr=cfg.learning_rate)
    with warnings.catch_warnings():  # a read-only aggregate is only read here: a view is safe
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        obs = th.as_tensor(np.asarray(demos.obs))
    target = th.as_tensor(discounted_returns(demos.rewards, gamma), dtype=th.float32)
    gen = th.Generator().manual_seed(seed)

    def mse() -> float:
        with th.no_grad():
            pred = th.cat([policy.predict_values(obs[i:i + MSE_CHUNK]).squeeze(1)
                           for i in range(0, len(obs), MSE_CHUNK)])
            return float(((pred - target) ** 2).mean())

    before = mse()
    left = cfg.critic_epochs * math.ceil(len(target) / cfg.batch_size) if batches is None else batches
    with random_reads():
        _regress_critic(policy, opt, obs, target, gen, cfg.batch_size, left)
    return {"critic_mse_before": before, "critic_mse_after": mse()}


def _regress_critic(policy, opt, obs: th.Tensor, target: th.Tensor, gen: th.Generator, batch_size: int,
                    left: int) -> None:
    """``left`` minibatches of :func:`pretrain_critic`'s regression, pass after pass."""
    while left > 0 and len(target):
        perm = th.randperm(len(target), generator=gen)
        for i in range(0, len(perm), batch_size):
            if left == 0:
                break
            left -= 1
            idx = perm[i:i + batch_size]
            loss = ((policy.predict_values(obs[idx]).squeeze(1) - target[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
