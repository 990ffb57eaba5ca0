"""What every grid-command expert shares: the interface, and what the experts read from the environment (they never change it)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

# the current task's finish times, the shared rule the envelope's deadline-keeping extremes use too
from ilets.gridcommand.envelope import can_wait as _can_wait  # noqa: F401  (the experts import it from here)
from ilets.gridcommand.envelope import earliest_finish as _earliest_finish
from ilets.gridcommand.envelope import finish_times as _finish
from ilets.gridcommand.milp import ServerClass
from ilets.gridcommand.power import interval_energy
from ilets.simulator.cloud import Cloud, meets_deadline
from ilets.simulator.objective import Task

#: Sub-samples per slot when averaging the target over a slot (it ramps inside events) [ours].
TARGET_SAMPLES = 4

#: What an expert may read of the environment, by attribute: what it is and how a learner
#: stands to it. ``observed``: the observation shows it (or the learner is given it, as the
#: masks); ``static``: the scenario's fixed settings and action layout, known before the
#: episode; ``privileged``: state the observation does not show (or shows only in part). Each
#: expert declares the attributes it reads (``reads``); a test replays every expert through a
#: recording proxy and checks that it reads nothing else [ours].
ENV_READS: MappingProxyType[str, tuple[str, str]] = MappingProxyType({
    "action_masks": ("the allowed actions", "observed"),
    "current_task": ("the task to place: arrival, CPU, length and deadline", "observed"),
    "deferrals_of_current": ("how often the task was deferred", "observed"),
    "now": ("the clock", "observed"),
    "power_now": ("the fleet's power now", "observed"),
    "config": ("the scenario's settings", "static"),
    "defer_action": ("the action layout", "static"),
    "decode": ("the action layout", "static"),
    "first_sleep_action": ("the action layout (the sleep head's first action)", "static"),
    "first_cap_action": ("the action layout (the first admission-cap action)", "static"),
    "cap_levels": ("the admission-cap levels the policy may set", "static"),
    "admission_cap": ("the admission cap in force (one observation number with cap levels)", "observed"),
    "speeds": ("the DVFS levels", "static"),
    "power_factors": ("the DVFS levels' power factors", "static"),
    "fleet": ("every server's specification", "static"),
    "slot_edges": ("the slot grid the tracking is scored on", "static"),
    "cloud": ("every server's queue, exactly: when each could start the task (the per-server rows show its "
              "wait there, the flat observation does not)", "privileged"),
    "baseline_at": ("the counterfactual baseline at any time (the observation: now only)", "privileged"),
    "target_at": ("the operator's target at any time, announced or not (the observation: the event seen now)",
                  "privileged"),
    "sleep": ("which servers sleep now (the sleep lever's ledger)", "privileged"),
    "schedule": ("every command of the episode, announced or not", "privileged"),
    "tasks": ("the episode's future arrivals (hindsight)", "privileged"),
    "*": ("the whole environment, copied and simulated to the episode's end", "privileged"),
})


#: What every rung of the ladder reads (each adds its own, :attr:`_Expert.reads`).
COMMON_READS = ("action_masks", "current_task", "now", "power_now", "config", "defer_action", "fleet", "cloud",
                "baseline_at", "target_at", "schedule")


def privileged_reads(reads: tuple[str, ...]) -> tuple[str, ...]:
    """The entries of ``reads`` (:data:`ENV_READS` names) that the observation does not show."""
    unknown = [r for r in reads if r not in ENV_READS]
    if unknown:
        raise ValueError(f"reads: {unknown} are not declared in ENV_READS")
    return tuple(r for r in reads if ENV_READS[r][1] == "privileged")


class GridExpert(Protocol):
    """A grid-command policy."""

    name: str

    @property
    def reads(self) -> tuple[str, ...]:
        """The environment's attributes it reads (:data:`ENV_READS`)."""

    def reset(self, seed: int | None = None) -> None:
        """Forget all state (plans, queues, forecasts); experts are deterministic."""

    def act(self, env: Any) -> int:
        """An action for ``env.current_task`` valid under ``env.action_masks()``."""


class _Expert:
    """What every expert shares: the marker and the ``(obs, env) -> action`` call.

    ``grid_expert = True`` tells adapters (``ilets.gridcommand.metrics.as_grid_policy``) that
    ``act`` takes the environment, not the plain scenario's ``(cloud, task, mask)``.
    """

    name = "expert"
    grid_expert = True
    #: the environment's attributes the expert reads (:data:`ENV_READS`)
    reads: tuple[str, ...] = ()

    def reset(self, seed: int | None = None) -> None:
        """Forget all state (the experts are deterministic: ``seed`` is not used)."""

    def act(self, env: Any) -> int:
        raise NotImplementedError

    def __call__(self, obs: np.ndarray, env: Any) -> int:
        """The grid-policy form ``(obs, env) -> action`` (the observation is not used)."""
        return self.act(env)


# --- reading the environment ---------------------------------------------------------------

def _cfg(env: Any, name: str, default: Any = None) -> Any:
    """A scenario setting: ``env.config.<name>`` (GridCommandConfig), else ``default``."""
    value = getattr(getattr(env, "config", None), name, None)
    if value is None:
        if default is None:
            raise AttributeError(f"env.config.{name}: the environment does not expose it")
        return default
    return value


def _mask(env: Any) -> tuple[np.ndarray, bool]:
    """(server mask of length M, whether deferring is allowed) for the current task."""
    mask = np.asarray(env.action_masks(), bool)
    defer = int(env.defer_action)
    servers = mask[:len(env.fleet)]  # the nominal speed's placements (the experts use no other)
    if not mask.any():
        raise RuntimeError(f"task {env.current_task.index}: the environment allows no action at all")
    return servers, bool(mask[defer])


def _deferrals_left(env: Any) -> int:
    return max(0, int(_cfg(env, "max_deferrals", 0)) - int(env.deferrals_of_current))


def _command(env: Any, t: float):
    """The event scored at ``t`` or None."""
    return env.schedule.active(t)


def future_tasks(env: Any, first: int, count: int, until: float | None = None) -> list[Task]:
    """Tasks ``first .. first+count-1`` of the episode's task table, known in hindsight; with
    ``until``, only those arriving before it.

    The hindsight oracle and the perfect forecast need the arrivals ahead, which the policy
    interface does not give; they are read from ``env.tasks`` (a
    :class:`~ilets.workloads.workload.TaskTable` indexed like ``current_task.index``) [ours].
    """
    table = getattr(env, "tasks", None)
    if table is None:
        raise AttributeError("env.tasks: the hindsight experts need the episode's task table "
                             "(a TaskTable indexed like current_task.index)")
    stop = min(len(table), first + count)
    if until is not None:
        stop = min(stop, int(np.searchsorted(table.arrival, until, side="left")))
    return [Task(j, float(table.arrival[j]), float(table.cpu[j]), float(table.length[j]), float(table.deadline[j]))
            for j in range(first, stop)]


def slot_inputs(env: Any, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(target, band, scored) per slot of ``edges``: slot averages of ``env.target_at`` and of
    the active command's band, sampled at :data:`TARGET_SAMPLES` points per slot [ours]."""
    edges = np.asarray(edges, float)
    frac = (np.arange(TARGET_SAMPLES) + 0.5) / TARGET_SAMPLES
    pts = edges[:-1, None] + np.diff(edges)[:, None] * frac[None, :]
    flat = pts.ravel()
    target = np.array([float(env.target_at(t)) for t in flat]).reshape(pts.shape).mean(axis=1)
    band = np.zeros(len(flat))
    scored = np.asarray(env.schedule.scored(flat), bool).reshape(pts.shape)
    for i, t in enumerate(flat):
        cmd = env.schedule.active(t) if scored.ravel()[i] else None
        if cmd is not None:
            band[i] = float(cmd.band_w(float(env.baseline_at(t))))
    # return-value: numpy's stubs type any(axis=...) as np.bool | ndarray; on this 2-D array it is an array
    return target, band.reshape(pts.shape).mean(axis=1), scored.any(axis=1)  # type: ignore[return-value]


def committed_cpu(cloud: Cloud, edges: np.ndarray, classes: tuple[ServerClass, ...]) -> np.ndarray:
    """(K, S) slot-average CPU already committed on each class from ``cloud.now`` on (exact).

    As :func:`ilets.gridcommand.power.committed_profile` (which gives the total power), from
    the CPU in use now and the starts and finishes pending on the cloud's timeline
    (``Cloud._events``, read, not changed); slots are averaged over their part after now.
    """
    edges = np.asarray(edges, float)
    cls_of = np.full(len(cloud.fleet), -1, np.int64)
    for k, c in enumerate(classes):
        cls_of[c.members] = k
    events = sorted(cloud._events)
    now = cloud.now
    times = np.array([now] + [e[0] for e in events] + [max(edges[-1], now) + 1.0])
    out = np.zeros((len(classes), len(edges) - 1))
    lo = np.maximum(edges[:-1], now)
    width = edges[1:] - lo
    ok = width > 0
    ev_cls = np.array([cls_of[e[3]] for e in events], np.int64)
    ev_cpu = np.array([e[4] * (1.0 if e[1] == 1 else -1.0) for e in events])
    for k, c in enumerate(classes):
        steps = np.concatenate([[cloud.used[c.members].sum()], np.where(ev_cls == k, ev_cpu, 0.0)])
        joules = interval_energy(times[:-1], times[1:], np.cumsum(steps), edges)  # CPU-seconds here
        out[k, ok] = joules[ok] / width[ok]
    return np.maximum(out, 0.0)


def _best_in_class(env: Any, servers: np.ndarray, members: np.ndarray) -> tuple[int, bool]:
    """(server of the class for the current task, whether it meets the deadline).

    The optimisers priced the class at its mean power; which member takes the task is
    steered by the fleet's tracking error now, among the members that meet the deadline
    [ours]: above the target (during an event), the one adding the least energy; below
    the target of an up event, the one adding the most power; otherwise (below a down
    event's target, or no event) the earliest finish, as the counterfactual would. Always
    picking the most frugal member over-delivered a shallow cut (the plan assumed the mean).
    None meets the deadline: the class's earliest finish. The class is a fluid pool to the
    optimisers, its servers' FCFS queues are not.
    """
    among = np.zeros(len(servers), bool)
    among[members] = True
    pick = servers & among
    if not pick.any():
        s = _earliest_finish(env, servers, False)
        return s, False
    cloud, task = env.cloud, env.current_task
    finish = _finish(cloud, task)
    ok = pick & meets_deadline(finish - task.arrival, task.deadline)
    if not ok.any():
        return int(np.argmin(np.where(pick, finish, np.inf))), False
    now = float(env.now)
    cmd = _command(env, now)
    if cmd is not None:
        watts = cloud.act_per_cpu * task.cpu
        above = float(env.power_now) > float(env.target_at(now))
        if above:
            return int(np.argmin(np.where(ok, watts * task.length / cloud.fleet.mips, np.inf))), True
        if cmd.direction == "up":
            return int(np.argmax(np.where(ok, watts, -np.inf))), True
    return int(np.argmin(np.where(ok, finish, np.inf))), True
