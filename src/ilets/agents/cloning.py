"""The positive control of imitation: clone an expert, then schedule with the clone frozen.

Before a method built on a learner is judged, the learner must be shown able to do the job.
This module clones an expert into a policy (``imitation``'s BC, through
:func:`ilets.agents.oinpt.behaviour_clone`) and measures the clone three ways:

* **tie-aware agreement**: the clone's greedy server counts as agreeing when it is as good
  as the expert's by the expert's own criterion (Earliest-Finish: the finish time there;
  Greedy-Cost and GA+PSO: the one-step cost there), within :data:`TIE_TOL`. Exact index
  agreement undercounts: two idle servers of the same type are often equally good;
* **one-step regret**: the extra one-step cost (reward cost + miss penalty) of the clone's
  server over the expert's, at the expert's own states;
* **frozen and greedy**: the clone schedules the whole online window with its weights fixed
  and its most likely feasible server, through the same env as every method.

Heuristic experts are recorded by :func:`heuristic_demonstrations` over the whole offline
half at an even stride (so the bursts are in), with the held-out states at the midpoints of
the stride; GA+PSO by :func:`ilets.agents.oinpt.collect_demonstrations` (windows of
consecutive tasks, as OINPT plans them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch as th

from ilets.agents.masked import unchecked_distributions
from ilets.agents.observation import StateSpec, build_observation
from ilets.agents.demonstrations import Demonstrations
from ilets.agents.policies import Policy, make_heuristic
from ilets.config import RewardConfig
from ilets.simulator.cloud import Cloud, Fleet, meets_deadline
from ilets.simulator.objective import Task, costs, exec_time
from ilets.workloads.workload import TaskTable

#: the experts whose own criterion is recorded for tie-aware agreement, by name
HEURISTIC_EXPERTS = ("earliest-finish", "greedy-cost")
#: two servers tie when their criteria differ by at most this (relative to the expert's)
TIE_TOL = 1e-6


def _criterion(name: str, cloud: Cloud, task: Task, reward: RewardConfig) -> tuple[np.ndarray, np.ndarray]:
    """(the expert's criterion on every server, the one-step reward cost on every server); inf where infeasible."""
    starts = cloud.earliest_starts(task.cpu)
    cost = costs(cloud, task, starts, reward)
    if name == "earliest-finish":
        return starts + exec_time(cloud, task.length), cost
    if name == "greedy-cost":
        return cost, cost
    raise ValueError(f"no recorded criterion for expert {name!r}; expected one of {HEURISTIC_EXPERTS}")


class _Recording:
    """A heuristic that records its states at chosen decisions (a :class:`Policy`)."""

    def __init__(self, name: str, reward: RewardConfig, specs: dict[str, StateSpec], miss_penalty: float,
                 keep: dict[int, str]) -> None:
        self.name, self.reward, self.specs, self.miss_penalty, self.keep = name, reward, specs, miss_penalty, keep
        self.inner: Policy = make_heuristic(name, reward=reward)
        self.rows: dict[str, list] = {"train": [], "heldout": []}

    def reset(self, seed: int | None = None) -> None:
        self.inner.reset(seed)

    def act(self, cloud: Cloud, task: Task, mask: np.ndarray) -> int:
        s = self.inner.act(cloud, task, mask)
        part = self.keep.get(task.index)
        if part is not None:
            starts = cloud.earliest_starts(task.cpu)
            if self.name in HEURISTIC_EXPERTS:
                crit, cost = _criterion(self.name, cloud, task, self.reward)
            else:  # no tie-aware criterion recorded for it: its one-step cost stands in
                crit = cost = costs(cloud, task, starts, self.reward)
            response = starts - task.arrival + exec_time(cloud, task.length)
            step_cost = cost + self.miss_penalty * ~meets_deadline(response, task.deadline)
            obs = {k: build_observation(cloud, task, spec) for k, spec in self.specs.items()}
            self.rows[part].append((obs, s, mask.copy(), -float(cost[s]), np.where(mask, step_cost, np.inf),
                                    np.where(mask, crit, np.inf)))
        return s


@dataclass
class ClonedDemonstrations:
    """Demonstrations of one expert in several observation layouts, with its criterion."""

    by_layout: dict[str, Demonstrations]  #: layout name -> demonstrations (held-out attached)
    criterion: np.ndarray  #: float32 (N, M): the expert's criterion, inf where infeasible
    heldout_criterion: np.ndarray  #: the same on the held-out states


def heuristic_demonstrations(tasks: TaskTable, fleet: Fleet, name: str, reward: RewardConfig,
                             specs: dict[str, StateSpec], n: int, heldout: int,
                             miss_penalty: float = 1.0) -> ClonedDemonstrations:
    """Heuristic ``name`` schedules all of ``tasks``; ``n`` of its decisions at an even
    stride are recorded for cloning and ``heldout`` others (between them) held out."""
    from ilets.agents.policies import schedule

    total = len(tasks)
    if n + heldout > total or n < 1 or heldout < 1:
        raise ValueError(f"{n} + {heldout} demonstrated decisions requested from {total} tasks")
    train = np.linspace(0, total - 1, n).astype(np.int64)
    keep = {int(j): "train" for j in train}
    rest = np.setdiff1d(np.arange(total), train)
    keep.update({int(j): "heldout" for j in rest[np.linspace(0, len(rest) - 1, heldout).astype(np.int64)]})
    rec = _Recording(name, reward, specs, miss_penalty, keep)
    schedule(tasks, fleet, rec)
    by_layout = {}
    for layout in specs:
        d = _pack(rec.rows["train"], layout, name)
        d.heldout = _pack(rec.rows["heldout"], layout, name)
        by_layout[layout] = d
    return ClonedDemonstrations(by_layout, np.stack([r[5] for r in rec.rows["train"]]).astype(np.float32),
                                np.stack([r[5] for r in rec.rows["heldout"]]).astype(np.float32))


def _pack(rows: list, layout: str, name: str) -> Demonstrations:
    """:class:`_Recording` rows (at least one) as demonstrations in observation ``layout``."""
    return Demonstrations(
        obs=np.stack([r[0][layout] for r in rows]).astype(np.float32),
        acts=np.array([r[1] for r in rows], np.int64), masks=np.stack([r[2] for r in rows]),
        rewards=np.array([r[3] for r in rows], np.float32), experts=np.array([name] * len(rows)),
        action_costs=np.stack([r[4] for r in rows]).astype(np.float32))


def consecutive_demonstrations(tasks: TaskTable, fleet: Fleet, name: str, reward: RewardConfig,
                               state: StateSpec, n: int, miss_penalty: float = 1.0) -> Demonstrations:
    """Heuristic ``name`` schedules the first ``n`` of ``tasks`` (all of them when fewer); every
    decision is recorded, in order.

    OINPT's form of a heuristic teacher (``oinpt.expert``): consecutive decisions from the
    start of the offline half, as the window experts' plans are, so a heuristic's clone and a
    GA+PSO clone see the same states' kind (:func:`ilets.agents.oinpt.collect_demonstrations`
    splits off the held-out ones)."""
    from ilets.agents.policies import schedule

    total = min(len(tasks), n)
    if total < 1:
        raise ValueError(f"{n} demonstrated decisions requested from {len(tasks)} tasks")
    rec = _Recording(name, reward, {"only": state}, miss_penalty, {j: "train" for j in range(total)})
    schedule(tasks.slice(0, total), fleet, rec)
    return _pack(rec.rows["train"], "only", name)


def greedy_actions(policy, demos: Demonstrations, batch: int = 2048) -> np.ndarray:
    """The (Maskable) policy's most likely feasible server at each demonstrated state."""
    out = []
    with th.no_grad(), unchecked_distributions():
        for i in range(0, len(demos), batch):
            obs = th.as_tensor(np.array(demos.obs[i:i + batch]))
            dist = policy.get_distribution(obs, action_masks=demos.masks[i:i + batch])
            out.append(dist.distribution.probs.argmax(dim=1).numpy())
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def clone_scores(policy, demos: Demonstrations, criterion: np.ndarray) -> dict[str, float]:
    """Exact and tie-aware agreement and one-step regret of ``policy`` on ``demos``.

    ``criterion`` (N, M) is the expert's own measure of each server (lower is better); a
    server ties with the expert's when its criterion is within :data:`TIE_TOL` (relative)
    of the expert's. Regret is measured on ``demos.action_costs`` and given also relative to
    the expert's mean one-step cost.
    """
    pred = greedy_actions(policy, demos)
    rows = np.arange(len(pred))
    theirs = criterion[rows, demos.acts]
    mine = criterion[rows, pred]
    tie = mine <= theirs + TIE_TOL * np.maximum(np.abs(theirs), 1.0)
    assert demos.action_costs is not None, "demonstrations recorded without action_costs"
    c_mine, c_theirs = demos.action_costs[rows, pred], demos.action_costs[rows, demos.acts]
    return {"agreement_exact": float(np.mean(pred == demos.acts)), "agreement_tie": float(np.mean(tie)),
            "regret": float(np.mean(c_mine - c_theirs)),
            "regret_rel": float(np.mean(c_mine - c_theirs) / np.mean(c_theirs))}
