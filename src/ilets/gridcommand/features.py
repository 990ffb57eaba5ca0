"""Observation blocks of the grid-command scenario, laid after the run's own layout.

Each block is a :class:`ilets.agents.observation.FeatureBlock`, as the plain scenario's are
(layouts ``paper`` and ``rich``), written with them by
:func:`ilets.agents.observation.write_blocks`. Those read only the cloud and the task; the
command's blocks also need the operator's schedule, the baseline and the episode's tracking
history, which live on the environment, so a :class:`GridBlock` is made for a
:class:`GridView` (what :class:`ilets.gridcommand.env.GridCommandEnv` exposes) and reads it
besides the cloud and the task (:func:`grid_blocks`). Every number is in ``[0, high]``
(lower bounds 0, as in the plain layouts).

:data:`GRID_BLOCKS` (12 numbers) [ours]:

* :class:`CommandShape`: the event seen now (the active one, else the next announced one):
  is-down, is-up, requested change at full depth over the fleet's maximum power (capped at
  1), band; zeros when none is announced.
* :class:`EventTiming`: time to the event's start (0 once started) and to its end, over the
  window length, capped at 1; zeros when none is announced.
* :class:`PowerLevels`: baseline now, fleet power now and target now, over the fleet's
  maximum power (the target capped at 2: an up event may ask for more than the maximum).
* :class:`TrackingError`: the exponential average of ``|P_after - target| / max_power``
  over the episode's decisions (0 outside events), capped at 1.
* :class:`TaskDeferral`: the task's deferrals over ``max_deferrals`` and its remaining
  slack (deadline left after the fastest possible execution) over the top of the
  deadline range, capped at 1.

With ``observe_queues`` one more block follows them (2 numbers, never capped):

* :class:`QueueState`: the drift-plus-penalty queues the environment keeps
  (:mod:`ilets.gridcommand.queues`), ``log1p(TRACK_SCALE * q_track)`` and
  ``log1p(q_deadline)``.

With ``observe_sleep`` (the per-server layout and the sleep lever) every server's row gains
:data:`SLEEP_ROW_FEATURES` (:class:`SleepRows`): how long it has been idle in the active down
event and whether its sleep saving fits in the power above the target, what the power
manager's rule reads per server (:class:`ilets.gridcommand.experts.SleepManager`).

With ``observe_terms`` (the per-server layout and the queues shown) every server's row also
gains :data:`TERM_ROW_FEATURES` (:class:`TermRows`): the terms the Lyapunov teacher scores a
placement there by, and placing the task there ``defer_s`` later.

With ``observe_slot`` one more block follows (2 numbers):

* :class:`SlotError`: the current slot's projected average power against the target, in
  bands of the active event (:mod:`ilets.gridcommand.slot_meter`): its excess and its
  shortfall over :data:`SLOT_ERROR_BANDS`, capped at 1; zeros outside events.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

from ilets.gridcommand.queues import TRACK_GAIN
from ilets.simulator.cloud import meets_deadline

if TYPE_CHECKING:
    from ilets.agents.observation import StateSpec
    from ilets.gridcommand.command import CommandSchedule, GridCommand
    from ilets.gridcommand.config import GridCommandConfig
    from ilets.agents.observation import ServerTable
    from ilets.gridcommand.queues import VirtualQueues
    from ilets.gridcommand.sleep import SleepLedger
    from ilets.simulator.cloud import Cloud, Fleet
    from ilets.simulator.objective import Task


class GridView(Protocol):
    """What the grid blocks read beyond the cloud and the task (the environment provides it)."""

    schedule: CommandSchedule
    config: GridCommandConfig
    window: tuple[float, float]
    tracking_ema: float
    deadline_top: float
    max_power_w: float
    queues: VirtualQueues  #: the drift-plus-penalty queues (:class:`QueueState` reads them)

    @property
    def deferrals_of_current(self) -> int: ...

    @property
    def seen_command(self) -> GridCommand | None: ...

    @property
    def baseline_now(self) -> float: ...

    @property
    def target_now(self) -> float: ...

    @property
    def power_now(self) -> float: ...

    @property
    def active_command(self) -> GridCommand | None: ...

    @property
    def slot_projection(self) -> float: ...

    @property
    def admission_cap(self) -> float: ...

    @property
    def sleep(self) -> SleepLedger | None: ...


class GridBlock:
    """A feature block of ``width`` numbers (any fleet) about the command, made for a view.

    It has the :class:`ilets.agents.observation.FeatureBlock` methods; bounds are 1 unless a
    block says otherwise.
    """

    width: ClassVar[int]

    def __init__(self, view: GridView) -> None:
        self.view = view

    def size(self, m: int) -> int:
        """Numbers this block takes (the same for every fleet)."""
        return self.width

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        """Upper bounds (lower bounds are 0)."""
        return np.ones(self.width)

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        """Write the block into ``out`` (a float32 view of :meth:`size` numbers)."""
        raise NotImplementedError


class SeenCommandBlock(GridBlock):
    """A block about the event seen now (:attr:`GridView.seen_command`): zeros when none is
    announced, else what :meth:`write_command` writes."""

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        c = self.view.seen_command
        if c is None:
            out[:] = 0.0
        else:
            self.write_command(c, cloud, out)

    def write_command(self, c: GridCommand, cloud: Cloud, out: np.ndarray) -> None:
        """Write the block for the announced or active event ``c``."""
        raise NotImplementedError


class CommandShape(SeenCommandBlock):
    """Direction (down, up), requested change over max power, band of the event seen now."""

    width = 4

    def write_command(self, c: GridCommand, cloud: Cloud, out: np.ndarray) -> None:
        view = self.view
        out[0] = c.direction == "down"
        out[1] = c.direction == "up"
        change = c.depth * view.baseline_now if c.depth_unit == "fraction" else c.depth
        out[2] = min(1.0, change / view.max_power_w)
        out[3] = c.band


class EventTiming(SeenCommandBlock):
    """Time to the event's start and end over the window length, capped at 1."""

    width = 2

    def write_command(self, c: GridCommand, cloud: Cloud, out: np.ndarray) -> None:
        now = cloud.now
        span = self.view.window[1] - self.view.window[0]
        out[0] = min(1.0, max(0.0, c.start_s - now) / span)
        out[1] = min(1.0, max(0.0, c.end_s - now) / span)


class PowerLevels(GridBlock):
    """Baseline, fleet power and target now, over the fleet's maximum power."""

    width = 3

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        return np.array([1.0, 1.0, 2.0])

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        view = self.view
        top = view.max_power_w
        out[0] = min(1.0, view.baseline_now / top)
        out[1] = min(1.0, view.power_now / top)
        out[2] = min(2.0, max(0.0, view.target_now / top))


class TrackingError(GridBlock):
    """Exponential average of the tracking error over max power, capped at 1."""

    width = 1

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        out[0] = min(1.0, self.view.tracking_ema)


class TaskDeferral(GridBlock):
    """The task's deferrals over ``max_deferrals`` and its slack over the top deadline."""

    width = 2

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        view = self.view
        cap = view.config.max_deferrals
        out[0] = min(1.0, view.deferrals_of_current / cap) if cap > 0 else 0.0
        fastest = task.length / float(cloud.fleet.mips.max())
        slack = task.arrival + task.deadline - cloud.now - fastest
        out[1] = min(1.0, max(0.0, slack) / view.deadline_top)


#: The tracking debt's scale in :class:`QueueState`: the Lyapunov expert's gain, so that 1
#: inside the log is the debt at which its tracking term starts to count [ours]
TRACK_SCALE = TRACK_GAIN


class QueueState(GridBlock):
    """The environment's drift-plus-penalty queues: ``log1p(TRACK_SCALE * q_track)`` and
    ``log1p(q_deadline)`` (never capped)."""

    width = 2

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        return np.full(self.width, np.inf)

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        queues = self.view.queues
        out[0] = np.log1p(TRACK_SCALE * queues.q_track)
        out[1] = np.log1p(queues.q_deadline)


#: Where :class:`SlotError` saturates, in bands: past it the sign is what matters [ours]
SLOT_ERROR_BANDS = 4.0


class SlotError(GridBlock):
    """The current slot's projected average power (:attr:`GridView.slot_projection`) less the
    target now, over the active event's band: its excess and its shortfall, each over
    :data:`SLOT_ERROR_BANDS` and capped at 1; zeros outside events (or with no band)."""

    width = 2

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        view = self.view
        c = view.active_command
        band = 0.0 if c is None else float(c.band_w(view.baseline_now))
        if band <= 0.0:
            out[:] = 0.0
            return
        bands = (view.slot_projection - view.target_now) / band
        out[0] = min(1.0, max(0.0, bands) / SLOT_ERROR_BANDS)
        out[1] = min(1.0, max(0.0, -bands) / SLOT_ERROR_BANDS)


class AdmissionCap(GridBlock):
    """The admission cap the policy has set (``cap_levels``), a share of each server's maximum
    power; 1: no cap."""

    width = 1

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        out[0] = self.view.admission_cap


#: The columns :class:`SleepRows` adds to each server's row (``observe_sleep``) [ours].
SLEEP_ROW_FEATURES = MappingProxyType({
    "idle_for": "log1p(time the server has had nothing to run in the active down event / sleep_after_s); "
                "0 outside down events, for a server with work to run and for a sleeping one",
    "saving_fits": "1 if, during a down event, the server's sleep saving is at most the fleet's power above the "
                   "target now, else 0",
})


class RowColumns:
    """A per-server table (one row per server) with ``columns`` after each row's own, read
    from a view: what :class:`SleepRows` and :class:`TermRows` share [ours]. A subclass names
    its columns and their upper bounds and writes them (:meth:`write_columns`)."""

    #: the columns, name -> meaning, in order
    columns: ClassVar[Mapping[str, str]]
    #: their upper bounds, in order (lower bounds are 0)
    column_high: ClassVar[tuple[float, ...]]
    #: numbers in each row: the table's, then the columns
    width: int

    def __init__(self, table: ServerTable | RowColumns, view: GridView) -> None:
        if getattr(table, "levels", 1) != 1:
            raise ValueError(f"{type(self).__name__}: one row per server (no speed levels)")
        self.table, self.view = table, view
        self.width = table.width + len(self.columns)

    def size(self, m: int) -> int:
        """Numbers the table takes for ``m`` servers."""
        return self.width * m

    def high(self, fleet: Fleet, spec: StateSpec) -> np.ndarray:
        """Upper bounds (lower bounds are 0): the table's, then :attr:`column_high` per row."""
        rows = self.table.high(fleet, spec).reshape(len(fleet), self.table.width)
        return np.column_stack([rows, np.tile(np.asarray(self.column_high), (len(fleet), 1))]).ravel()

    def write(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        """Write the table's rows, each followed by its columns."""
        m, w = len(cloud.fleet), self.table.width
        rows = out.reshape(m, self.width)
        inner = np.empty(self.table.size(m), out.dtype)
        self.table.write(cloud, task, spec, inner)
        rows[:, :w] = inner.reshape(m, w)
        self.write_columns(cloud, task, spec, rows[:, w:])

    def write_columns(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        """Write the columns into ``out`` (a view, one row per server)."""
        raise NotImplementedError


class SleepRows(RowColumns):
    """A per-server table (:class:`ilets.agents.observation.ServerTable`) with
    :data:`SLEEP_ROW_FEATURES` after each row's own columns [ours].

    The sleep head scores each server's sleep action from that server's row, but the rule its
    teacher takes as actions (:class:`ilets.gridcommand.experts.SleepManager`: the awake server
    with nothing to run, idle for ``sleep_after_s`` within the event, whose saving fits in the
    power above the target, the longest idle first) reads two things no row showed: how long
    the server has idled and whether its saving fits. These columns show them, read from the
    same sleep ledger, so the rule is a function of each row (the argmax of ``idle_for`` among
    the rows with ``saving_fits`` and ``idle_for >= log1p(1)``).
    """

    columns = SLEEP_ROW_FEATURES
    column_high = (np.inf, 1.0)

    def write_columns(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        view, ledger = self.view, self.view.sleep
        c = view.active_command
        if ledger is None or c is None or c.direction != "down":
            out[:] = 0.0
            return
        now, drain = float(cloud.now), np.asarray(cloud.drain, dtype=float)
        # as the rule reads it: idle since the last finish, the wake-up or the event's start
        since = np.maximum(np.maximum(drain, ledger.ready), c.start_s)
        idle = ~ledger.asleep & (drain <= now)
        out[:, 0] = np.where(idle, np.log1p(np.maximum(0.0, now - since) / ledger.after_s), 0.0)
        out[:, 1] = ledger.saving_w <= float(view.power_now) - float(view.target_now)


#: The scale of :data:`TERM_ROW_FEATURES`' costs inside their ``log1p`` [ours]: one
#: thousandth of the fleet's maximum power for a second is 1, about a task's energy term at
#: 50 servers, so the columns are of order 1 and their ``expm1`` (the film term's lifted rows,
#: :class:`ilets.agents.per_server.PerServerNet`) gives the four costs in one unit (the two
#: waits are in ``wait_scale_s``, as the table's). It also sets where the film term's clamp
#: (``log1p`` 7, a cost of about 1.1 units) cuts in: the deadline queue's columns pass it once
#: the queue holds about one miss, above which every miss reads the same, still far above any
#: other cost, so the teacher's argmin survives the clamp (tested).
TERM_SCALE = 1000.0

#: The columns :class:`TermRows` adds to each server's row (``observe_terms``) [ours]: the
#: terms the Lyapunov teacher's score of a placement there, and of placing the task there
#: ``defer_s`` later, is made of, each as the teacher weighs it but for its own weights ``V``
#: and ``wait_weight`` (the placement's wait is the table's ``wait`` column).
TERM_ROW_FEATURES = MappingProxyType({
    "energy_cost": "log1p(TERM_SCALE x the task's active energy there / the fleet's maximum power); 0 where it "
                   "cannot fit",
    "track_cost": "log1p(TERM_SCALE x TRACK_GAIN x q_track x the task's power there x its run time there within "
                  "the next defer_s / the fleet's maximum power) during a down event; else 0",
    "track_credit": "the same during an up event (where the teacher counts it as a credit); else 0",
    "miss_cost": "log1p(TERM_SCALE x q_deadline) where the task would miss its deadline there; else 0",
    "wait_later": "log1p((its FCFS start there if placed defer_s from now, less now) / wait_scale_s); 0 where "
                  "it cannot fit",
    "miss_cost_later": "log1p(TERM_SCALE x q_deadline) where, placed defer_s from now, it would miss there; else 0",
})


class TermRows(RowColumns):
    """A per-server table (:class:`ilets.agents.observation.ServerTable`, or one with
    :class:`SleepRows`) with :data:`TERM_ROW_FEATURES` after each row's own columns [ours].

    The Lyapunov teacher scores a placement on server ``i`` as
    ``V (E_i / p_ref + w wait_i) + g q_track dir P_i soon_i / p_ref + q_deadline miss_i`` and a
    deferral as its best placement ``defer_s`` later
    (:class:`ilets.gridcommand.experts.lyapunov.LyapunovExpert`). With the queues shown
    (``observe_queues``) each term is a function of the observation, but two are products of a
    pooled number (a queue) and a server's, and the deferral needs each server's start
    ``defer_s`` later, which no row showed. These columns show every term, computed as the
    teacher computes it from the environment's own queues, so its choice is the argmin of a
    fixed linear combination of their ``expm1`` (its weights ``V``, ``V w`` and 1 are what a
    learner learns), less the wait since arrival every action shares: the teacher's choice
    exposed as a function of the observation and the declared privileged queues. Why
    ``log1p``: the other columns are so scaled, and a miss weighs the whole deadline queue,
    hundreds of times the rest. That holds on the teacher's own episodes; on a learner's
    (DAgger's rounds) the teacher keeps its own deadline queue, counting its own answers'
    misses (:func:`ilets.gridcommand.teacher._labelled_episode`), while the rows show the
    environment's, so there a label can differ from the rows' combination.
    """

    columns = TERM_ROW_FEATURES
    column_high = (np.inf,) * len(TERM_ROW_FEATURES)

    def write_columns(self, cloud: Cloud, task: Task, spec: StateSpec, out: np.ndarray) -> None:
        """The terms, computed in float64 and rounded once."""
        view, now = self.view, float(cloud.now)
        defer_s, p_ref = float(view.config.defer_s), float(view.max_power_w)
        q_track, q_deadline = float(view.queues.q_track), float(view.queues.q_deadline)
        starts = cloud.earliest_starts(task.cpu)
        later = cloud.earliest_starts(task.cpu, now + defer_s)
        fits, fits_later = np.isfinite(starts), np.isfinite(later)
        exec_s = task.length / cloud.fleet.mips
        watts = cloud.act_per_cpu * task.cpu
        with np.errstate(invalid="ignore"):  # inf - inf where the task never fits: masked below
            soon = np.where(fits, np.clip(np.minimum(starts + exec_s, now + defer_s) - starts, 0.0, None), 0.0)
            missed = fits & ~meets_deadline(starts + exec_s - task.arrival, task.deadline)
            missed_later = fits_later & ~meets_deadline(later + exec_s - task.arrival, task.deadline)
        c = view.active_command
        track = TERM_SCALE * TRACK_GAIN * q_track * watts * soon / p_ref
        down, up = c is not None and c.direction == "down", c is not None and c.direction == "up"
        miss = np.log1p(TERM_SCALE * q_deadline)
        out[:, 0] = np.where(fits, np.log1p(TERM_SCALE * watts * exec_s / p_ref), 0.0)
        out[:, 1] = np.log1p(track) if down else 0.0
        out[:, 2] = np.log1p(track) if up else 0.0
        out[:, 3] = np.where(missed, miss, 0.0)
        out[:, 4] = np.where(fits_later, np.log1p(np.maximum(0.0, later - now) / spec.wait_scale_s), 0.0)
        out[:, 5] = np.where(missed_later, miss, 0.0)


#: The grid-command blocks, in the order they follow the run's own layout.
GRID_BLOCKS: tuple[type[GridBlock], ...] = (CommandShape, EventTiming, PowerLevels, TrackingError, TaskDeferral)


def grid_blocks(view: GridView) -> tuple[GridBlock, ...]:
    """The :data:`GRID_BLOCKS` made for ``view``, in order, then :class:`QueueState` when the
    scenario shows its queues (``observe_queues``) and :class:`SlotError` when it shows the
    slot's meter (``observe_slot``), and :class:`AdmissionCap` when the policy may set a cap
    (``cap_levels``)."""
    kinds = (GRID_BLOCKS + ((QueueState,) if view.config.observe_queues else ())
             + ((SlotError,) if view.config.observe_slot else ())
             + ((AdmissionCap,) if view.config.cap_levels else ()))
    return tuple(block(view) for block in kinds)


def grid_size(observe_queues: bool = False, observe_slot: bool = False) -> int:
    """Numbers the grid blocks take (the same for every fleet)."""
    return (sum(block.width for block in GRID_BLOCKS) + (QueueState.width if observe_queues else 0)
            + (SlotError.width if observe_slot else 0))
