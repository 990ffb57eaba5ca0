"""Fleet power as a function of time, exactly, from the simulator's records.

The cloud's power is ``sum_i P_idle_i + sum_tasks act_per_cpu[s] * cpu`` over the tasks
running at that instant (:mod:`ilets.simulator.cloud`), a step function that changes only at
starts and finishes. Its average over a slot is therefore an exact sum of overlaps: each
task adds ``act_per_cpu[s] * cpu * |[start, finish) ∩ slot|`` joules to a slot. No sampling,
no discretisation error; :func:`power_profile` over the whole run agrees with
:attr:`Cloud.energy` to rounding.

:func:`counterfactual` is the plain scenario replayed with a reference policy (what the
data centre would have drawn with no command); its slot power is the baseline the targets
of :mod:`ilets.gridcommand.command` are derived from.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

import numpy as np

from ilets.agents.policies import make_heuristic, schedule
from ilets.config import RunConfig
from ilets.files import content_digest
from ilets.simulator.cloud import Cloud, Fleet
from ilets.workloads.workload import TaskTable


def _check_edges(edges) -> np.ndarray:
    edges = np.asarray(edges, dtype=float)
    if edges.ndim != 1 or len(edges) < 2:
        raise ValueError(f"edges: expected at least two slot edges, got shape {edges.shape}")
    if not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ValueError("edges: expected finite, strictly increasing slot edges")
    return edges


def interval_energy(starts, finishes, watts, edges) -> np.ndarray:
    """Joules each slot of ``edges`` receives from intervals ``[start, finish)`` drawing ``watts``.

    Exact: a slot fully inside an interval gets ``watts * width``, the two end slots their
    partial overlaps; parts outside ``[edges[0], edges[-1])`` are dropped. Vectorised with a
    difference array of rates over the interior slots.
    """
    edges = _check_edges(edges)
    s = np.clip(np.asarray(starts, dtype=float), edges[0], edges[-1])
    f = np.clip(np.asarray(finishes, dtype=float), edges[0], edges[-1])
    w = np.asarray(watts, dtype=float)
    keep = f > s
    s, f, w = s[keep], f[keep], w[keep]
    k = len(edges) - 1
    out = np.zeros(k)
    if not len(s):
        return out
    ks = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, k - 1)
    kf = np.clip(np.searchsorted(edges, f, side="left") - 1, 0, k - 1)  # slot holding the finish
    one = ks == kf
    np.add.at(out, ks[one], w[one] * (f[one] - s[one]))
    many = ~one
    ks, kf, s, f, w = ks[many], kf[many], s[many], f[many], w[many]
    np.add.at(out, ks, w * (edges[ks + 1] - s))
    np.add.at(out, kf, w * (f - edges[kf]))
    rate = np.zeros(k + 1)  # full slots ks+1 .. kf-1 draw w for their whole width
    np.add.at(rate, ks + 1, w)
    np.add.at(rate, kf, -w)
    out += np.cumsum(rate[:-1]) * np.diff(edges)
    return out


def power_profile(records: Cloud | Mapping[str, list], fleet: Fleet, edges, cpu: np.ndarray) -> np.ndarray:
    """Slot-average fleet power (W) over ``edges``, exact, from the assignment records.

    ``records`` is a :class:`Cloud` (its records, :func:`records_of`) or its records mapping
    (``task``, ``server``, ``start``, ``finish``, and ``power_factor`` where tasks ran at
    another speed); ``cpu`` the CPU request by task index (the records
    name tasks by index into the task table the run was given, ``TaskTable.cpu``; the cloud
    does not record requests). Power is the fleet's idle power plus, per task,
    ``act_per_cpu[server] * cpu`` over ``[start, finish)``: the cloud's own model. Over slots
    covering ``[t_start, makespan]`` the profile integrates to ``Cloud.energy``.
    """
    r = records_of(records) if isinstance(records, Cloud) else records
    edges = _check_edges(edges)
    task = np.asarray(r["task"], dtype=np.int64)
    server = np.asarray(r["server"], dtype=np.int64)
    cpu = np.asarray(cpu, dtype=float)
    if len(task) and (task.max() >= len(cpu) or task.min() < 0):
        raise ValueError(f"cpu: the records name task {task.max()}, cpu has {len(cpu)} entries")
    watts = (fleet.p_act / fleet.capacity)[server] * cpu[task]
    if "power_factor" in r:  # tasks run at another speed (the DVFS lever)
        watts = watts * np.asarray(r["power_factor"], dtype=float)
    active = interval_energy(r["start"], r["finish"], watts, edges)
    return float(fleet.p_idle.sum()) + active / np.diff(edges)


def records_of(cloud: Cloud) -> Mapping[str, list]:
    """The cloud's records, with each task's ``power_factor`` when some task ran at another
    speed than the nominal one (:meth:`Cloud.assign`'s DVFS keywords); else the records as
    they are."""
    if not cloud.power_factors:
        return cloud.records
    factors = cloud.power_factors
    return {**cloud.records, "power_factor": [factors.get(t, 1.0) for t in cloud.records["task"]]}


def committed_profile(cloud: Cloud, edges) -> np.ndarray:
    """Slot-average power (W) the tasks already assigned will draw from ``cloud.now`` on.

    The future of the fleet's power is fixed by what is assigned (FCFS starts are fixed at
    assignment), so it is exact: the power now plus the starts and finishes still pending on
    the cloud's timeline. Each slot is averaged over its part at or after ``now`` [ours];
    slots that end at or before ``now`` are NaN (the past is :func:`power_profile`'s). New
    arrivals are not included: this is the experts' floor, not a forecast. On an
    :meth:`Cloud.emulator_copy` it is exact only up to the copy's ``until``.
    """
    edges = _check_edges(edges)
    now = cloud.now
    events = sorted(cloud._events)  # (time, kind, seq, server, cpu, watts); a copy, the heap is untouched
    times = np.array([now] + [e[0] for e in events] + [max(edges[-1], now) + 1.0])
    # power on [times[j], times[j+1]): now's power, then each event's signed change
    steps = np.array([cloud.power] + [e[5] * (1.0 if e[1] == 1 else -1.0) for e in events])
    level = np.cumsum(steps)
    joules = interval_energy(times[:-1], times[1:], level, edges)
    lo = np.maximum(edges[:-1], now)
    width = edges[1:] - lo
    out = np.full(len(edges) - 1, np.nan)
    ok = width > 0
    out[ok] = joules[ok] / width[ok]
    return out


# --- the counterfactual baseline -------------------------------------------------------------

@dataclass(frozen=True)
class Counterfactual:
    """The plain scenario run with the reference policy: the baseline of every target."""

    reference: str
    edges: np.ndarray  #: slot edges (s)
    power_w: np.ndarray  #: slot-average power (W), read-only
    summary: dict  #: :meth:`Cloud.summary` of the run
    records: dict = field(repr=False)  #: the run's per-task records (arrays, read-only)
    if TYPE_CHECKING:  # set by __post_init__, not fields (repr and == ignore them)
        _edge_list: list[float] = field(init=False)  #: the edges as floats (bisect's path)
        _power_list: list[float] = field(init=False)  #: the slot powers as floats

    def baseline_at(self, t) -> np.ndarray:
        """Baseline power (W) at times ``t``: the slot average of the slot holding ``t``
        (times outside the edges take the first or last slot) [ours]."""
        k = np.clip(np.searchsorted(self.edges, np.asarray(t, dtype=float), side="right") - 1,
                    0, len(self.power_w) - 1)
        return self.power_w[k]

    def baseline_scalar(self, t: float) -> float:
        """:meth:`baseline_at` for one float time (plain Python: the per-decision path)."""
        k = bisect.bisect_right(self._edge_list, t) - 1
        return self._power_list[min(max(k, 0), len(self._power_list) - 1)]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_edge_list", self.edges.tolist())
        object.__setattr__(self, "_power_list", self.power_w.tolist())


class _Memo:
    """A small in-process LRU of counterfactual runs (read-only results, never written to disk).

    The counterfactual is a pure function of (tasks, fleet, reference, reward, edges); the
    memo saves re-running it for every episode and every evaluated policy of one process.
    """

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.items: OrderedDict[str, tuple[dict, dict]] = OrderedDict()

    def get(self, key: str) -> tuple[dict, dict] | None:
        hit = self.items.get(key)
        if hit is not None:
            self.items.move_to_end(key)
        return hit

    def put(self, key: str, value: tuple[dict, dict]) -> None:
        self.items[key] = value
        while len(self.items) > self.size:
            self.items.popitem(last=False)


_MEMO = _Memo()


def episode_digest(tasks: TaskTable, fleet: Fleet) -> str:
    """:func:`ilets.files.content_digest` of an episode's task table and fleet: what the
    counterfactual and the envelope's extreme runs read of them."""
    return content_digest({"arrival": tasks.arrival, "cpu": tasks.cpu, "length": tasks.length,
                           "deadline": tasks.deadline, "capacity": fleet.capacity, "mips": fleet.mips,
                           "p_idle": fleet.p_idle, "p_act": fleet.p_act})


def _reference_run(config: RunConfig, tasks: TaskTable, fleet: Fleet, reference: str,
                   cache: bool) -> tuple[dict, dict]:
    """Records (read-only arrays) and summary of the plain run with ``reference``, memoised."""
    key = f"{episode_digest(tasks, fleet)}|{reference}|{config.seed}|{config.reward!r}"
    if cache and (hit := _MEMO.get(key)) is not None:
        return hit
    policy = make_heuristic(reference, seed=config.seed, reward=config.reward)
    cloud = schedule(tasks, fleet, policy)
    records = {k: np.asarray(v) for k, v in cloud.records.items()}
    for v in records.values():
        v.setflags(write=False)
    result = (records, cloud.summary())
    if cache:
        _MEMO.put(key, result)
    return result


def counterfactual(config: RunConfig, tasks: TaskTable, fleet: Fleet, edges,
                   reference: str = "earliest-finish", cache: bool = True) -> Counterfactual:
    """Run the plain scenario with the ``reference`` heuristic; its slot power and summary.

    ``reference`` names a heuristic of :mod:`ilets.agents.policies` (seeded with
    ``config.seed``, scored with ``config.reward`` where it uses the cost). The run is
    memoised in memory per (tasks, fleet, reference, seed, reward) content, never on disk
    (the profile over ``edges`` is recomputed, it is cheap); the returned arrays are
    read-only so that no caller can change a memoised baseline.
    """
    edges = _check_edges(edges).copy()
    records, summary = _reference_run(config, tasks, fleet, reference, cache)
    power = power_profile(records, fleet, edges, tasks.cpu)
    power.setflags(write=False)
    edges.setflags(write=False)
    return Counterfactual(reference, edges, power, dict(summary), records)
