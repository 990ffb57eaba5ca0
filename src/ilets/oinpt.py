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

import hashlib
import json
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch as th
from filelock import FileLock

from ilets.cloud import Cloud, Fleet
from ilets.config import ExpertConfig, OINPTConfig, RewardConfig, to_dict
from ilets.env import StateSpec
from ilets.workload import TaskTable

CACHE_VERSION = 1  # bump when the demonstration procedure changes


@dataclass
class Demonstrations:
    """Expert (observation, action) pairs in decision order, with the expert's rewards."""

    obs: np.ndarray  #: float32 (N, 2M+2)
    acts: np.ndarray  #: int64 (N,)
    masks: np.ndarray  #: bool (N, M)
    rewards: np.ndarray  #: float32 (N,), -cost of each decision
    experts: np.ndarray  #: str (N,), which expert's plan each decision came from
    seconds: float = 0.0  #: wall time to produce them

    def __len__(self) -> int:
        return len(self.acts)

    def save(self, path: Path) -> None:
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")  # one per process
        np.savez_compressed(tmp, obs=self.obs, acts=self.acts, masks=self.masks, rewards=self.rewards,
                            experts=self.experts, seconds=np.array(self.seconds))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> "Demonstrations":
        with np.load(path, allow_pickle=False) as z:
            return cls(z["obs"], z["acts"], z["masks"], z["rewards"], z["experts"], float(z["seconds"]))


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
                           cache_dir: Path | None = None, progress=None) -> Demonstrations:
    """Demonstrations of ``expert`` ("ga+pso" or "greedy") on the first ``max_tasks`` tasks.

    Reads the cache when ``cache_dir`` holds this key; writes it otherwise.
    """
    key = demo_key(tasks, fleet, expert, experts_cfg, reward, max_tasks, seed, state)
    if cache_dir is None:
        return _demonstrate(tasks, fleet, expert, experts_cfg, reward, max_tasks, seed, state, progress)
    path = Path(cache_dir) / f"demos-{key}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    # DRL+ and ILETS cells of the same seed and fleet need the same demonstrations and often
    # run side by side in a grid: the lock makes the second wait for the first's file.
    with FileLock(str(path) + ".lock"):
        if path.is_file():
            try:
                demos = Demonstrations.load(path)
                if not len(demos.obs) == len(demos.acts) == len(demos.masks) == len(demos.rewards):
                    raise ValueError("arrays of different lengths")
                return demos
            except Exception as err:  # noqa: BLE001 -- truncated/corrupt npz: zip, zlib, key or shape errors
                # a file cut short by a kill (or a bad disk) must not fail every later cell
                warnings.warn(f"{path}: damaged demonstration cache ({type(err).__name__}: {err}); "
                              f"recomputing it", stacklevel=2)
                path.unlink(missing_ok=True)
        demos = _demonstrate(tasks, fleet, expert, experts_cfg, reward, max_tasks, seed, state, progress)
        demos.save(path)
    return demos


def _demonstrate(tasks: TaskTable, fleet: Fleet, expert: str, experts_cfg: ExpertConfig, reward: RewardConfig,
                 max_tasks: int, seed: int, state: StateSpec, progress) -> Demonstrations:
    from ilets.experts import make_expert, window_from_table

    t0 = time.perf_counter()
    names = ["ga", "pso"] if expert == "ga+pso" else ["greedy"]
    planners = [make_expert(n, experts_cfg, reward, state) for n in names]
    rng = np.random.default_rng(seed)
    n = min(len(tasks), max_tasks)
    cloud = Cloud(fleet, t0=float(tasks.arrival[0]))
    parts: list[tuple] = []
    w = experts_cfg.window
    for lo in range(0, n, w):
        window = window_from_table(tasks, lo, min(lo + w, n))
        cloud.advance(window[0].arrival)
        plans = [p.plan(cloud, window, rng) for p in planners]
        best = min(plans, key=lambda p: p.cost)
        # apply the chosen plan to the live cloud; the plan's observations were recorded
        # by replaying it on a clone of this very state, so they are the live states
        for task, s in zip(window, best.assignment):
            cloud.assign(task.index, task.arrival, task.cpu, task.length, task.deadline, int(s))
        parts.append((best.observations, best.assignment, best.masks, best.rewards, [best.expert] * len(window)))
        if progress is not None:
            progress(len(window))
    return Demonstrations(
        obs=np.concatenate([p[0] for p in parts]).astype(np.float32),
        acts=np.concatenate([p[1] for p in parts]).astype(np.int64),
        masks=np.concatenate([p[2] for p in parts]).astype(bool),
        rewards=np.concatenate([p[3] for p in parts]).astype(np.float32),
        experts=np.array(sum((p[4] for p in parts), []), dtype=str),
        seconds=time.perf_counter() - t0,
    )


def to_transitions(demos: Demonstrations):
    """The demonstrations as ``imitation`` Transitions (full form: 1.0.1 needs next_obs/dones)."""
    from imitation.data.types import Transitions

    next_obs = np.concatenate([demos.obs[1:], demos.obs[-1:]])
    dones = np.zeros(len(demos), dtype=bool)
    dones[-1] = True
    infos = np.array([{}] * len(demos))
    return Transitions(obs=demos.obs, acts=demos.acts, infos=infos, next_obs=next_obs, dones=dones)


def behaviour_clone(model, demos: Demonstrations, cfg: OINPTConfig, seed: int) -> dict:
    """Train ``model.policy`` in place by BC on ``demos``; returns accuracy before/after."""
    from imitation.algorithms import bc
    from imitation.util import logger as imit_logger

    before = action_agreement(model.policy, demos)
    trainer = bc.BC(
        observation_space=model.observation_space, action_space=model.action_space,
        policy=model.policy, demonstrations=to_transitions(demos), rng=np.random.default_rng(seed),
        batch_size=cfg.batch_size, optimizer_kwargs={"lr": cfg.learning_rate}, device="cpu",
        custom_logger=imit_logger.configure(format_strs=[]),
    )
    with warnings.catch_warnings():  # imitation's logger converts loss tensors that need grad
        warnings.filterwarnings("ignore", message=".*requires_grad.*")
        trainer.train(n_epochs=cfg.bc_epochs, progress_bar=False, log_interval=10**9)
    return {"bc_agreement_before": before, "bc_agreement_after": action_agreement(model.policy, demos)}


def action_agreement(policy, demos: Demonstrations, limit: int = 20_000) -> float:
    """Share of demonstrated decisions where the (Maskable) policy's masked greedy action matches."""
    obs = th.as_tensor(np.array(demos.obs[:limit]))
    with th.no_grad():
        dist = policy.get_distribution(obs, action_masks=demos.masks[:limit])
        pred = dist.distribution.probs.argmax(dim=1).numpy()
    return float((pred == demos.acts[:limit]).mean())


def discounted_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """G_t = r_t + gamma G_{t+1} over one trajectory (the end is treated as terminal)."""
    out = np.empty(len(rewards), dtype=np.float64)
    g = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        g = rewards[t] + gamma * g
        out[t] = g
    return out


def pretrain_critic(model, demos: Demonstrations, gamma: float, cfg: OINPTConfig, seed: int) -> dict:
    """Regress PPO's value head on the expert's discounted returns; returns the MSE before/after.

    Only the critic's own parameters (its MLP branch and value head) are trained, so the
    cloned actor is untouched. The last ``1/(1-gamma)`` returns are cut short by the end of
    the segment; with gamma 0.98 that is the last ~50 of thousands of decisions.
    """
    policy = model.policy
    params = list(policy.mlp_extractor.value_net.parameters()) + list(policy.value_net.parameters())
    opt = th.optim.Adam(params, lr=cfg.learning_rate)
    obs = th.as_tensor(np.array(demos.obs))
    target = th.as_tensor(discounted_returns(demos.rewards, gamma), dtype=th.float32)
    gen = th.Generator().manual_seed(seed)

    def mse() -> float:
        with th.no_grad():
            return float(((policy.predict_values(obs).squeeze(1) - target) ** 2).mean())

    before = mse()
    for _ in range(cfg.critic_epochs):
        perm = th.randperm(len(target), generator=gen)
        for i in range(0, len(perm), cfg.batch_size):
            idx = perm[i:i + cfg.batch_size]
            loss = ((policy.predict_values(obs[idx]).squeeze(1) - target[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {"critic_mse_before": before, "critic_mse_after": mse()}
