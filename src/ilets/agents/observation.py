"""The observation encoder: an observation is a row of feature blocks.

A :class:`FeatureBlock` knows three things: how many numbers it takes for a fleet of ``M``
servers, their upper bounds (lower bounds are 0) and how to write them from the live cloud
and the arriving task. A layout is a tuple of blocks (:data:`LAYOUTS`), laid end to end:

``paper`` (2M+2, the authors' layout [code])
    :class:`TaskCPU` (the task's CPU request, trace units), :class:`TaskLength` (its length
    over the top of the length range), :class:`FreeCPU` (free CPU of each server now) and
    :class:`QueueLength` (tasks on each server, running + waiting, / 10, capped at 10).
``rich`` (5M+2) [ours]
    ``paper`` plus :class:`WaitBound` (the FCFS lower bound of the wait on each server,
    ``max(now, last_start) - now`` over the reward's wait scale, capped at 1),
    :class:`SpeedShare` (MIPS over the fleet's fastest) and :class:`PowerShare` (active
    power per CPU unit over the fleet's hungriest). The paper's state leaves speed and power
    implicit in the server index; the book measures what making them explicit does to cloning.

``per-server`` (4 + 14M) [ours]
    a table for :mod:`ilets.agents.per_server`: :class:`TaskTable` (4 numbers about the
    task and the fleet now) then :class:`ServerTable`, one row of 14 numbers per server
    (row-major), each what the scheduler knows exactly about placing this task there: its
    wait and response there, its execution time, the server's free CPU, tasks and time to
    drain, speed, power, the task's marginal power and energy there, whether it meets its
    deadline and whether the server can hold it at all, and the response there relative to the
    task's deadline and to the fleet's best response (0 on the best server: the quantity
    Earliest-Finish ranks by, made visible at a scale that does not depend on the load). Times enter as ``log1p(t / s)`` with
    ``s = wait_scale_s``, never capped, so no feature saturates in a burst (the ``paper``
    count saturates at 100 tasks; a 50-server burst holds ~139 per server).

A new signal (a grid operator's power command, the carbon intensity of the supply) is one
new block class and one new layout here, plus its name in :data:`ilets.config.OBSERVATIONS`
so that configurations may name it; nothing that consumes observations changes. A scenario
whose blocks read more than the cloud and the task lays its own blocks after the run's layout
with the same functions (:func:`layout_size`, :func:`layout_high`, :func:`write_blocks`):
the grid-command blocks (:mod:`ilets.gridcommand.features`) read the environment they are
made for.

:class:`StateSpec` names the layout and its two scales; it is a small picklable value (the
experts record states with it and the demonstration cache hashes its fields).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ilets.agents.per_server_kernels import write_table
from ilets.simulator.cloud import DEADLINE_TOL

if TYPE_CHECKING:  # types only: the encoder reads these objects, it needs none of their modules
    from ilets.config import RunConfig
    from ilets.simulator.cloud import Cloud, Fleet
    from ilets.simulator.objective import Task

_COUNT_SCALE = 10.0
_COUNT_CAP = 100.0


class FeatureBlock(Protocol):
    """One block of the observation: its size, its upper bounds and its writer."""

    def size(self, m: int) -> int:
        """Numbers this block takes for a fleet of ``m`` servers."""

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        """Upper bounds of the block (its lower bounds are 0)."""

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        """Write the block into ``out`` (a float32 view of exactly :meth:`size` numbers)."""


class _TaskBlock:
    """A block of one number about the arriving task."""

    def size(self, m: int) -> int:
        return 1


class _ServerBlock:
    """A block of one number per server."""

    def size(self, m: int) -> int:
        return m


class TaskCPU(_TaskBlock):
    """The task's CPU request (trace units; the largest machine is 1)."""

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        return np.array([max(1.0, float(fleet.capacity.max()))])

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        out[0] = task.cpu


class TaskLength(_TaskBlock):
    """The task's length over ``spec.length_top`` (the top of the length range maps to 1)."""

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        return np.array([1.0])

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        out[0] = task.length / spec.length_top


class FreeCPU(_ServerBlock):
    """Free CPU of each server now (trace units)."""

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        return fleet.capacity

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        # computed in float64 and rounded once into the float32 view
        np.maximum(cloud.fleet.capacity - cloud.used, 0.0, out=out, casting="unsafe")


class QueueLength(_ServerBlock):
    """Tasks on each server (running + waiting) / 10, capped at 10."""

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        return np.full(len(fleet), _COUNT_CAP / _COUNT_SCALE)

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        np.minimum(cloud.n_tasks, _COUNT_CAP, out=out, casting="unsafe")
        out /= _COUNT_SCALE  # in float32, after the cap (the recorded observations do this)


class WaitBound(_ServerBlock):
    """FCFS lower bound of the wait on each server over ``spec.wait_scale_s``, capped at 1."""

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        return np.ones(len(fleet))

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        np.maximum(cloud.last_start - cloud.now, 0.0, out=out, casting="unsafe")
        np.minimum(out / spec.wait_scale_s, 1.0, out=out)


class SpeedShare(_ServerBlock):
    """Each server's MIPS over the fleet's fastest."""

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        return np.ones(len(fleet))

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        out[:] = cloud.fleet.speed_share


class PowerShare(_ServerBlock):
    """Each server's active power per CPU unit over the fleet's hungriest."""

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        return np.ones(len(fleet))

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        out[:] = cloud.fleet.power_share


#: the per-server table's task features, in order (:class:`TaskFeatures`)
TASK_FEATURES = ("cpu", "length", "deadline", "fleet_power")
#: the per-server table's row features, in order, with their scaling (:class:`ServerTable`)
SERVER_FEATURES = MappingProxyType({
    "fits": "1 if the server can ever hold the request, else 0",
    "wait": "log1p(exact FCFS wait of this task there / wait_scale_s); 0 where it cannot fit",
    "response": "log1p((wait + execution) there / wait_scale_s); 0 where it cannot fit",
    "execution": "log1p(execution time there / wait_scale_s)",
    "free_cpu": "free CPU now (trace units; the largest machine has 1)",
    "tasks": "log1p(tasks running and waiting there)",
    "drain": "log1p((time until the server is empty) / wait_scale_s)",
    "speed": "MIPS over the fleet's fastest",
    "power": "active power per CPU unit over the fleet's hungriest",
    "marginal_power": "the task's power there (active W per CPU x request) over the fleet's largest server power",
    "marginal_energy": "log1p(the task's active energy there / (largest server power x wait_scale_s))",
    "meets_deadline": "1 if the task would meet its deadline there, else 0",
    "response_deadline": "log1p(response there / the task's deadline); 0 where it cannot fit",
    "response_gap": "log(response there / the fleet's best response); 0 on the best server and where it cannot fit",
})


class TaskFeatures:
    """The task and the fleet now: CPU request, length over ``length_top``, deadline over
    ``wait_scale_s`` and the fleet's power now over its maximum (4 numbers)."""

    def size(self, m: int) -> int:
        return len(TASK_FEATURES)

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        return np.array([max(1.0, float(fleet.capacity.max())), 1.0, np.inf, 1.0])

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        out[0] = task.cpu
        out[1] = task.length / spec.length_top
        out[2] = task.deadline / spec.wait_scale_s
        out[3] = cloud.power / cloud.fleet.max_power


#: the column an energy-ranked table adds after :data:`SERVER_FEATURES` (``ServerTable(energy_gap=True)``)
ENERGY_GAP_FEATURE = ("energy_gap", "log(the task's active energy there / the least over the candidates where it fits); "
                      "0 where it cannot fit")


class ServerTable:
    """One row of :data:`SERVER_FEATURES` per server, laid out row-major (``14 * M`` numbers).

    The exact starts come from :meth:`Cloud.earliest_starts` (one vectorised call); the
    rows are computed in float64 by :func:`ilets.agents.per_server_kernels.write_table`
    (one compiled loop) and rounded once into the float32 view.

    With clock-speed levels (the grid-command scenario's DVFS lever: ``speeds`` and their
    ``power_factors``, the nominal 1.0 first) there is one row per (level, server), level by
    level as the actions are laid out: a row is the server seen as running the task at that
    level, its execution time divided by the speed and its active power multiplied by the
    factor, and the response ratio to the best is over every candidate [ours]. One level (the
    default) is the plain table.
    """

    width = len(SERVER_FEATURES)

    def __init__(self, speeds: tuple[float, ...] = (1.0,), power_factors: tuple[float, ...] = (1.0,),
                 energy_gap: bool = False) -> None:
        if not speeds or len(speeds) != len(power_factors) or speeds[0] != 1.0:
            raise ValueError(f"ServerTable: expected levels with the nominal speed 1.0 first and one power factor "
                             f"each, got speeds {speeds} and factors {power_factors}")
        self.speeds = np.asarray(speeds, np.float64)
        self.power_factors = np.asarray(power_factors, np.float64)
        #: one more column, :data:`ENERGY_GAP_FEATURE` (the grid-command scenario's ``observe_energy``)
        self.energy_gap = bool(energy_gap)
        self.width = len(SERVER_FEATURES) + int(self.energy_gap)

    @property
    def levels(self) -> int:
        """How many rows each server has (its clock-speed levels)."""
        return len(self.speeds)

    def size(self, m: int) -> int:
        return self.width * m * self.levels

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        row = np.array([1.0, np.inf, np.inf, np.inf, max(1.0, float(fleet.capacity.max())), np.inf, np.inf,
                        1.0, 1.0, np.inf, np.inf, 1.0, np.inf, np.inf] + [np.inf] * int(self.energy_gap))
        return np.tile(row, len(fleet) * self.levels)

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        fleet, n = cloud.fleet, self.levels
        starts = cloud.earliest_starts(task.cpu)

        def per(a: np.ndarray) -> np.ndarray:  # a server's value on each of its level's rows
            return a if n == 1 else np.tile(a, n)

        # every level's candidates in one call: the best response is over all of them
        mips = fleet.mips if n == 1 else np.concatenate([fleet.mips * f for f in self.speeds])
        act = cloud.act_per_cpu if n == 1 else np.concatenate([cloud.act_per_cpu * f for f in self.power_factors])
        table = out.reshape(len(fleet) * n, self.width)
        core = table if not self.energy_gap else np.empty((len(table), len(SERVER_FEATURES)), out.dtype)
        write_table(core, per(starts), cloud.now, mips, per(fleet.capacity),
                    per(cloud.used), per(cloud.n_tasks), per(cloud.drain), per(fleet.speed_share),
                    per(fleet.power_share), act, task.cpu, task.length, task.deadline, spec.wait_scale_s,
                    fleet.largest_server_power, DEADLINE_TOL)
        if self.energy_gap:
            table[:, :-1] = core
            # energy per candidate (W per CPU x CPU x s), in float64: the ratio to the least, logged
            fits = per(starts) < np.inf
            energy = act * task.cpu * task.length / mips
            least = float(energy[fits].min()) if fits.any() else 1.0
            table[:, -1] = np.where(fits, np.log(energy / least), 0.0)


_PAPER: tuple[FeatureBlock, ...] = (TaskCPU(), TaskLength(), FreeCPU(), QueueLength())

#: The observation layouts by name: the blocks, in the order they are laid out.
LAYOUTS: MappingProxyType[str, tuple[FeatureBlock, ...]] = MappingProxyType({
    "paper": _PAPER,
    "rich": _PAPER + (WaitBound(), SpeedShare(), PowerShare()),
    "per-server": (TaskFeatures(), ServerTable()),
})
#: layouts that are a task block followed by one row per server: name -> (task numbers, row width)
TABLE_LAYOUTS: MappingProxyType[str, tuple[int, int]] = MappingProxyType({
    "per-server": (len(TASK_FEATURES), len(SERVER_FEATURES)),
})


@dataclass(frozen=True)
class StateSpec:
    """How an observation is laid out and scaled (picklable; experts record states with it)."""

    features: str = "paper"  #: a layout name of :data:`LAYOUTS`: "paper" (2M+2), "rich" (5M+2), "per-server" (4+14M)
    length_top: float = 3000.0  #: task length that maps to 1
    wait_scale_s: float = 10.0  #: wait that maps to 1 (:class:`WaitBound`)

    def __post_init__(self) -> None:
        if self.features not in LAYOUTS:
            raise ValueError(f"observation must be one of {tuple(LAYOUTS)}, got {self.features!r}")

    @classmethod
    def of(cls, config: RunConfig) -> StateSpec:
        """The spec a run configuration implies."""
        return cls(config.observation, config.workload.length_mi[1], config.reward.wait_scale_s)

    @property
    def blocks(self) -> tuple[FeatureBlock, ...]:
        """The feature blocks of this layout, in order."""
        return LAYOUTS[self.features]

    def size(self, m: int) -> int:
        """Observation length for a fleet of ``m`` servers."""
        return layout_size(self.blocks, m)

    def high(self, fleet: Fleet) -> np.ndarray:
        """Upper bounds of the observation (lower bounds are 0)."""
        return layout_high(self.blocks, fleet, self)


def layout_size(blocks: Sequence[FeatureBlock], m: int) -> int:
    """Numbers ``blocks`` take, laid end to end, for a fleet of ``m`` servers."""
    return sum(block.size(m) for block in blocks)


def layout_high(blocks: Sequence[FeatureBlock], fleet: Fleet, spec: StateSpec) -> np.ndarray:
    """Upper bounds of ``blocks`` laid end to end (float32; lower bounds are 0)."""
    # concatenated in float64, rounded once to float32
    return np.concatenate([block.high(fleet, spec) for block in blocks]).astype(np.float32)


def build_observation(cloud: Cloud, task: Task, state: StateSpec, out: np.ndarray | None = None) -> np.ndarray:
    """Write the observation of ``task`` on ``cloud`` into ``out`` (float32) and return it."""
    if out is None:
        out = np.empty(state.size(len(cloud.fleet)), np.float32)
    # by name, not ``state.blocks``: any object with the three StateSpec fields will do
    return write_blocks(LAYOUTS[state.features], cloud, task, state, out)


def write_blocks(blocks: Sequence[FeatureBlock], cloud: Cloud, task: Task, spec: StateSpec,
                 out: np.ndarray) -> np.ndarray:
    """Lay ``blocks`` end to end into ``out`` (float32, exactly their total size); return ``out``."""
    m = len(cloud.fleet)
    start = 0
    for block in blocks:
        stop = start + block.size(m)
        block.write(cloud, task, spec, out[start:stop])
        start = stop
    return out
