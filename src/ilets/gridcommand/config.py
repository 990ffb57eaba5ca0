"""Typed configuration of the grid-command scenario, loaded strictly from YAML.

:class:`GridCommandConfig` wraps an unchanged :class:`ilets.config.RunConfig` (the plain
scenario: workload, fleet, reward, learners) and adds the command and the scenario's knobs.
It is a separate tree on purpose: :class:`RunConfig` gets no new section, so the study's
cell configurations and their digests do not change. Loading uses the package's strict
loader (:func:`ilets.config.read_yaml`, :func:`ilets.config.from_dict`,
:func:`ilets.config.merge`): an unknown key, a wrong type or an impossible value raises
:class:`ilets.config.ConfigError` naming the file and the dotted key.

Shipped profiles (``ilets/configs/gridcommand-*.yaml``): ``gridcommand-smoke`` (a few
hundred tasks, one explicit command), ``gridcommand-quick`` (scale 0.02),
``gridcommand-paper`` (the full online window). The ``run`` mapping of a profile overrides
``ilets/configs/methods.yaml``, which overrides the dataclass defaults, as the study's
profiles do.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, cast

from ilets.config import HEURISTICS, ConfigError, RunConfig, WorkloadConfig, from_dict, merge, read_yaml, to_dict
from ilets.config.run import RUN_FINETUNE_ADDED, drop_added_defaults
from ilets.config.validate import bounded, check_config
from ilets.gridcommand.envelope import RUN_MODES
from ilets.gridcommand.command import (DEPTH_UNITS, DIRECTIONS, REGIMES, CommandError, CommandSchedule, DepthUnit,
                                       Direction, GridCommand, generate_schedule, time_factor)

#: Regime names besides the built-in ones: no command at all, or the explicit ``commands`` list.
NO_COMMAND, EXPLICIT = "none", "explicit"
#: What ``GridCommandConfig.regime`` may name: a built-in regime, no command or the explicit list.
REGIME_NAMES = (*REGIMES, NO_COMMAND, EXPLICIT)
#: The workload segments an episode may play (GridCommandConfig.segment).
SEGMENTS = ("online", "offline")
#: What the reward's tracking cost reads (GridCommandConfig.tracking).
TRACKING_MODES = ("slot", "instant")
#: What the flexibility envelope does to the commands (GridCommandConfig.envelope).
ENVELOPE_MODES = ("clip", "record", "off")
#: Most draws ``envelope_redraws`` may ask for: each costs one or two more plays of the
#: episode, and an event no draw in this many reaches has no moment to follow it [ours].
MAX_REDRAWS = 16
#: The file-name prefixes in ``ilets/configs`` of what is not a scenario profile: the grids
#: (:mod:`ilets.gridcommand.experiment`) and the drift protocol (:mod:`ilets.gridcommand.study.drift`).
NOT_SCENARIOS = ("gridcommand-grid-", "gridcommand-drift-")


def _shipped_scenarios() -> tuple[str, ...]:
    """The scenario profiles shipped in ``ilets/configs``: every ``gridcommand-*.yaml`` that is
    not a grid or the drift protocol (:data:`NOT_SCENARIOS`), sorted; read once at import, so
    a new profile file is a built-in without a list to keep by hand."""
    names = (Path(f.name).stem for f in resources.files("ilets.configs").iterdir() if f.name.endswith(".yaml"))
    return tuple(sorted(n for n in names if n.startswith("gridcommand-") and not n.startswith(NOT_SCENARIOS)))


#: Shipped profile names (files ``ilets/configs/<name>.yaml``).
BUILTIN = _shipped_scenarios()


@dataclass(frozen=True)
class CommandSpec:
    """One explicit command as written in a profile; times relative to the window start [ours].

    Relative times keep a profile valid at every workload scale's window position; the
    absolute :class:`GridCommand` is made by :meth:`to_command`.
    """

    direction: str = bounded("down", choices=DIRECTIONS)
    depth: float = 0.25
    depth_unit: str = bounded("fraction", choices=DEPTH_UNITS)
    #: seconds after the window start
    start_after_s: float = bounded(0.0, ge=0, what="a number of seconds", note="after the window start")
    duration_s: float = 1.0
    notice_s: float = 0.0
    ramp_s: float = 0.0
    band: float = 0.2

    def to_command(self, window_start: float) -> GridCommand:
        """The absolute command for a window starting at ``window_start``."""
        # a profile's strings, checked against DIRECTIONS and DEPTH_UNITS by GridCommand.validate
        return GridCommand(cast(Direction, self.direction), self.depth, cast(DepthUnit, self.depth_unit),
                           window_start + self.start_after_s, self.duration_s, self.notice_s, self.ramp_s, self.band)


#: Fields added to :class:`GridCommandConfig` after cells were shipped: at its default a field
#: is left out of a cell's settings (:func:`settings_plain`), so cells computed before it
#: existed keep their digests; set to anything else, it counts.
ADDED_FIELDS = ("observe_queues", "sleep_fraction", "sleep_after_s", "wake_s", "envelope_runs", "batch_share",
                "batch_slack_h", "observe_slot", "observe_energy", "envelope_deadlines",
                "cap_levels", "sleep_actions", "window_days", "observe_sleep", "run.defer_head", "envelope_redraws",
                "run.cap_head", "run.server_film", "observe_terms") + RUN_FINETUNE_ADDED


@dataclass(frozen=True)
class GridCommandConfig:
    """Everything that determines one grid-command episode."""

    run: RunConfig = field(default_factory=RunConfig)
    #: a built-in regime of :data:`ilets.gridcommand.command.REGIMES`, ``"none"`` (no event)
    #: or ``"explicit"`` (the ``commands`` list)
    regime: str = bounded("shallow-long", choices=REGIME_NAMES)
    commands: tuple[CommandSpec, ...] = ()
    #: seed of the generated schedule; -1: the run's seed [ours]
    command_seed: int = bounded(-1, ge=0, also=(-1,), what="a seed", note="-1: the run's seed")
    slot_s: float = bounded(10.0, gt=0, what="a number of seconds")  #: width of a power slot (metrics, baseline), s [ours]
    defer_s: float = bounded(0.5, gt=0, what="a number of seconds")  #: a deferred task re-arrives this much later, s [ours]
    max_deferrals: int = bounded(2, ge=0)  #: deferrals one task may use [ours]
    #: admission cap during down events: a server refuses new tasks when its power with the
    #: task counted would exceed this fraction of its maximum power; 1.0: no cap [ours]
    cap_fraction: float = bounded(1.0, gt=0, le=1, what="a share of each server's maximum power", note="1: no cap")
    #: the admission cap as an action [ours]: caps the policy may set, each a share of every
    #: server's maximum power in (0, 1] (1: no cap); the action space gains one action per
    #: level after defer. Setting one hands the same task over again at the same time (nothing
    #: else happens, no cost), with the servers whose power would pass the cap masked from
    #: then on, event or not, until the policy sets another; one change per task. The cap the
    #: policy set is one more observation number. Empty: no such action (``cap_fraction``, a
    #: cap fixed during down events, is the other way; the two exclude each other)
    cap_levels: tuple[float, ...] = bounded((), distinct=True, gt=0, le=1, what="a share of each server's maximum power",
                                            note="1: no cap")
    #: days of commands the online window stands for [ours]: a generated regime's times are
    #: fitted to window / days and its expected events multiplied by days
    #: (:func:`ilets.gridcommand.command.generate_schedule`), so an episode holds more events of
    #: the same length. The workload is still the window's own (not days repeated): only the
    #: command clock is compressed. 1: one day, the scenario as before
    window_days: float = bounded(1.0, gt=0, what="a number of days", note="1: the window is one day")
    #: what the reward's tracking cost compares with the target [ours]: ``slot``, the committed
    #: slot-average power, the cost of an assignment being the change it makes to the scored
    #: slots' error (:mod:`ilets.gridcommand.tracking`; what the metrics score); ``instant``,
    #: the power now with the task counted (the scenario's first design, kept to compare)
    tracking: str = bounded("slot", choices=TRACKING_MODES)
    #: weight of the tracking error over max_power in the cost [ours; the profiles say why 5]
    track_weight: float = bounded(5.0, ge=0)
    #: weight of the slot-to-slot change of the tracking error within an event (``tracking:
    #: slot`` only; :mod:`ilets.gridcommand.tracking`) [ours]
    smooth_weight: float = bounded(0.25, ge=0)
    defer_penalty: float = bounded(0.05, ge=0)  #: cost per deferral, reward units [ours]
    #: the counterfactual (baseline) policy, a heuristic name
    reference: str = bounded("earliest-finish", choices=HEURISTICS, what="a heuristic")
    #: the DVFS lever [ours]: clock speeds a task may be run at (each multiplies its server's
    #: MIPS), the nominal 1.0 first; the action space is one placement per (server, level) plus
    #: defer. ``(1.0,)``: no lever, the plain placement
    speed_levels: tuple[float, ...] = bounded((1.0,), distinct=True, gt=0, le=2, what="a speed")
    #: a task at speed f draws f ** dvfs_exponent of its active power (dynamic power ~ f V^2,
    #: the voltage scaled with the frequency: 3), so its energy scales as f ** (exponent - 1) [ours]
    dvfs_exponent: float = bounded(3.0, ge=1, le=4, what="an exponent", note="power ~ speed ** it")
    #: the flexibility envelope (:mod:`ilets.gridcommand.envelope`) [ours]: ``clip`` sizes every
    #: command to what the levers can reach (depth at most ``envelope_margin`` times the
    #: reachable depth; an event that cannot move the power is dropped); ``record`` keeps the
    #: commands and records whether each fits; ``off`` computes nothing
    envelope: str = bounded("clip", choices=ENVELOPE_MODES)
    #: share of the reachable depth a clipped command asks for: below 1, the target lies inside
    #: the envelope, so the band around it is reachable too [ours]
    envelope_margin: float = bounded(0.8, gt=0, le=1, what="a share of the reachable depth")
    #: how the envelope's extreme runs are made (:data:`ilets.gridcommand.envelope.RUN_MODES`)
    #: [ours]: ``joint``, one per direction for all its events (an event starts in what the
    #: extreme left of the one before, and may be dropped for it); ``per-event``, one per
    #: event with that event alone, from the counterfactual's state
    envelope_runs: str = bounded("joint", choices=RUN_MODES)
    #: the envelope's extreme runs keep deadlines where they can
    #: (:func:`ilets.gridcommand.envelope.keeping_deadline`, the thermostat's rule): the
    #: commands are sized to what the levers reach without a miss they could avoid, a
    #: flexibility a fleet could offer under its service levels; off: the levers' whole
    #: reach, deadlines ignored [ours]
    envelope_deadlines: bool = False
    #: with ``envelope: clip``, an event the levers cannot move at all is moved to a new start
    #: between its neighbours, drawn up to this many times, before it is dropped
    #: (:func:`ilets.gridcommand.envelope.redraw_unreachable`): every generated event is then
    #: followed where the episode has a moment that can follow it; 0: dropped as drawn [ours]
    envelope_redraws: int = bounded(0, ge=0, le=MAX_REDRAWS, what="a whole number of draws")
    #: weight of the newest error in the observed tracking average [ours]
    tracking_alpha: float = bounded(0.1, gt=0, le=1)
    segment: str = bounded("online", choices=SEGMENTS)  #: the workload segment: "online" or "offline"
    #: show the drift-plus-penalty expert's two virtual queues (the tracking debt and the
    #: missed deadlines over their budget, :mod:`ilets.gridcommand.queues`), kept by the
    #: environment along the episode whatever policy acts, as one more observation block
    #: (:class:`ilets.gridcommand.features.QueueState`); off: the scenario's first blocks [ours]
    observe_queues: bool = False
    #: show the current slot's projected average power against the target, in bands (what a
    #: meter on the fleet shows, :mod:`ilets.gridcommand.slot_meter`), as one more observation
    #: block (:class:`ilets.gridcommand.features.SlotError`): what the thermostat expert acts
    #: on; off: not shown [ours]
    observe_slot: bool = False
    #: with a table layout (``per-server``), each server's row also shows the task's energy
    #: there against the least of any server it fits (``log`` of the ratio, 0 on the least):
    #: a scale-free ranking, where the table's own energy column (``marginal_energy``, log1p of
    #: a small number) differs between servers in its third or fourth decimal; the thermostat
    #: and the envelope pick least- or most-energy servers; off: the table as it was [ours]
    observe_energy: bool = False
    #: with a table layout and the sleep lever, each server's row also shows how long it has
    #: idled in the active down event and whether its sleep saving fits in the power above the
    #: target (:class:`ilets.gridcommand.features.SleepRows`): what the power manager's rule,
    #: the sleep head's teacher, reads per server; off: the table as it was [ours]
    observe_sleep: bool = False
    #: with a table layout and the queues shown, each server's row also shows the terms the
    #: Lyapunov teacher scores a placement there by, and placing the task there ``defer_s``
    #: later (:class:`ilets.gridcommand.features.TermRows`): its choice a linear function of
    #: the rows; off: the table as it was [ours]
    observe_terms: bool = False
    #: the sleep lever (:mod:`ilets.gridcommand.sleep`) [ours]: during a down event a server
    #: idle for ``sleep_after_s`` falls asleep and draws this share of its idle power; a task
    #: placed on it then starts ``wake_s`` later. 1.0: no lever (every server stays on)
    sleep_fraction: float = bounded(1.0, ge=0, le=1, what="the share of its idle power a sleeping server draws",
                                    note="1: no sleep lever")
    #: idle time before a server falls asleep, s [ours]
    sleep_after_s: float = bounded(0.5, ge=0, what="a number of seconds")
    #: from a wake-up to the server's first start, s; a response time, not scaled with the
    #: window (as notice and ramp are not) [ours]
    wake_s: float = bounded(1.0, ge=0, what="a number of seconds")
    #: the sleep lever as actions, a sleep head (needs the lever) [ours]: during a down event
    #: the policy may put any awake server with nothing to run to sleep at once (one action per
    #: server, after the cap levels: the same task is handed over again, at no cost), and the
    #: power manager puts none to sleep by itself (``sleep_after_s`` plays no part in the
    #: episode; the envelope still measures the lever's whole reach with it). Waking is as
    #: with the lever. Off: the power manager decides
    sleep_actions: bool = False
    #: the batch class [ours]: this share of the episode's tasks (drawn per task from the run
    #: seed's own stream, :func:`ilets.gridcommand.batch.batch_mask`) is deferrable work whose
    #: deadline is ``batch_slack_h``; a batch task may be deferred again and again while it can
    #: still meet it (``max_deferrals`` binds the interactive tasks only). 0: no batch class
    batch_share: float = bounded(0.0, ge=0, le=1, what="the share of tasks in the batch class")
    #: a batch task's deadline in hours of the day the window stands for, on the episode's
    #: clock as the events' durations are (:func:`ilets.gridcommand.batch.batch_slack_s`): 4 h,
    #: longer than the longest shallow-long event (3 h), so batch work that arrives as an event
    #: starts can wait it out [ours]
    batch_slack_h: float = bounded(4.0, gt=0, le=24, what="a batch deadline in hours of the day")

    @property
    def sleeps(self) -> bool:
        """Whether the sleep lever is on (``sleep_fraction < 1``)."""
        return self.sleep_fraction < 1

    def validate(self, where: str = "gridcommand") -> "GridCommandConfig":
        """Named :class:`ConfigError` for every impossible value (each field's declared range,
        then :meth:`relations`, :func:`ilets.config.validate.check_config`); returns self.

        Fleet-dependent checks (the cap must leave room above each server's idle power) are
        made where the fleet exists, :func:`check_cap`.
        """
        return check_config(self, where)

    def relations(self, where: str) -> None:
        """What one knob asks of another: commands and their regime, the levers' exclusions,
        the observation blocks' layouts."""
        if self.commands and self.regime != EXPLICIT:
            raise ConfigError(f"{where}.commands: explicit commands need regime: {EXPLICIT} (got regime "
                              f"{self.regime!r}); give either a regime or a list of commands")
        if self.regime == EXPLICIT and not self.commands:
            raise ConfigError(f"{where}.commands: regime {EXPLICIT!r} needs at least one command "
                              f"(use regime: {NO_COMMAND} for none)")
        for i, c in enumerate(self.commands):
            at = f"{where}.commands[{i}]"
            span = segment_span_s(self.run.workload)
            if c.start_after_s >= span:  # it could never be tracked (found at load, not when the env starts)
                raise ConfigError(f"{at}.start_after_s: {c.start_after_s:g} s is after the end of the "
                                  f"{span:g}-s {self.segment} segment (workload scale {self.run.workload.scale:g}); "
                                  f"expected a time in [0, {span:g}) s")
            try:
                c.to_command(0.0).validate(where=at)
            except CommandError as err:
                raise ConfigError(str(err)) from None
        if self.commands:
            try:
                CommandSchedule(tuple(c.to_command(0.0) for c in self.commands))
            except CommandError as err:
                raise ConfigError(f"{where}.commands: {err}") from None
        if self.window_days != 1 and self.regime not in REGIMES:
            raise ConfigError(f"{where}.window_days: fits a generated regime's events to the window, but regime "
                              f"is {self.regime!r}; expected one of {sorted(REGIMES)}")
        if self.cap_levels and self.cap_fraction < 1:
            raise ConfigError(f"{where}.cap_levels: a cap the policy sets and a fixed cap_fraction "
                              f"({self.cap_fraction:g}) exclude each other; set cap_fraction: 1 or cap_levels: []")
        if self.run.cap_head != "pooled" and not self.cap_levels:
            raise ConfigError(f"{where}.run.cap_head: {self.run.cap_head!r} scores the admission-cap levels, but "
                              "the scenario has none; set cap_levels or run.cap_head: pooled")
        if not self.speed_levels or self.speed_levels[0] != 1.0:
            raise ConfigError(f"{where}.speed_levels: expected the nominal speed 1.0 first (then any other "
                              f"levels), got {list(self.speed_levels)}")
        if self.tracking == "instant" and self.smooth_weight:
            raise ConfigError(f"{where}.smooth_weight: the smoothness term needs tracking: slot (got tracking: "
                              f"instant and smooth_weight {self.smooth_weight}); set smooth_weight: 0")
        if self.sleep_actions and not self.sleeps:
            raise ConfigError(f"{where}.sleep_actions: puts servers to sleep, so it needs the sleep lever "
                              f"(sleep_fraction < 1), got sleep_fraction: {self.sleep_fraction:g}")
        if self.sleep_actions and len(self.speed_levels) > 1:
            raise ConfigError(f"{where}.sleep_actions: one sleep action per server, not per (server, speed "
                              f"level) row; not with speed_levels {list(self.speed_levels)} (use [1.0])")
        if self.sleeps and self.tracking != "slot":
            raise ConfigError(f"{where}.sleep_fraction: the sleep lever needs tracking: slot (the saving is "
                              f"charged to the slots it falls in), got tracking: {self.tracking}")
        if self.envelope_redraws and (self.envelope != "clip" or self.regime not in REGIMES):
            raise ConfigError(f"{where}.envelope_redraws: moves generated events the envelope would drop, so it "
                              f"needs envelope: clip and a generated regime, got envelope: {self.envelope} and "
                              f"regime: {self.regime}")
        if self.envelope_deadlines and self.envelope == "off":
            raise ConfigError(f"{where}.envelope_deadlines: sizes the commands by the envelope's runs, so it "
                              f"needs envelope: clip or record, got envelope: off")
        one_speed = len(self.speed_levels) == 1
        if self.observe_sleep and (self.run.observation != "per-server" or not self.sleeps or not one_speed):
            raise ConfigError(f"{where}.observe_sleep: adds sleep columns to each server's row, so it needs "
                              f"run.observation: per-server (got {self.run.observation!r}), the sleep lever "
                              f"(sleep_fraction < 1, got {self.sleep_fraction:g}) and one speed level")
        if self.observe_terms and (self.run.observation != "per-server" or not self.observe_queues or not one_speed):
            raise ConfigError(f"{where}.observe_terms: adds the Lyapunov teacher's terms, read from the queues the "
                              f"environment keeps, to each server's row, so it needs run.observation: per-server "
                              f"(got {self.run.observation!r}), observe_queues: true (got {self.observe_queues}) "
                              f"and one speed level (got {list(self.speed_levels)})")
        if self.observe_energy and self.run.observation != "per-server":
            raise ConfigError(f"{where}.observe_energy: adds a column to each server's row, so it needs "
                              f"run.observation: per-server, got {self.run.observation!r}")

    def schedule(self, window_start: float, window_end: float, where: str = "gridcommand") -> CommandSchedule:
        """The episode's commands for the window ``[window_start, window_end)``.

        ``none``: empty; ``explicit``: the listed commands placed after the window start;
        a regime: :func:`generate_schedule` seeded with ``command_seed`` (or the run's seed).
        Every command is validated against the window; a problem is a :class:`ConfigError`.
        """
        try:
            if self.regime == NO_COMMAND:
                return CommandSchedule(())
            if self.regime == EXPLICIT:
                sched = CommandSchedule(tuple(c.to_command(window_start) for c in self.commands))
                return sched.validate(window_start, window_end, where=f"{where}")
            return generate_schedule(REGIMES[self.regime], window_start, window_end, self.schedule_seed,
                                     self.window_days)
        except CommandError as err:
            raise ConfigError(f"{where}: {err}") from None

    @property
    def schedule_seed(self) -> int:
        """The seed the generated schedule is drawn from: ``command_seed``, or the run's."""
        return self.run.seed if self.command_seed < 0 else self.command_seed

    def event_gap_s(self, window_start: float, window_end: float) -> float:
        """The least time between two generated events in this window (the regime's
        ``min_gap_s`` fitted to it as :func:`generate_schedule` fits it); 0 without a regime."""
        if self.regime not in REGIMES:
            return 0.0
        return REGIMES[self.regime].min_gap_s * time_factor(window_start, window_end, self.window_days)

    def workload_of(self, run: RunConfig | None = None) -> WorkloadConfig:
        """The workload the episode meets: ``run``'s (default the config's) with its arrival
        rate times the regime's ``load`` (:class:`ilets.gridcommand.command.CommandRegime`);
        at load 1 (every field regime) exactly the configured one."""
        workload = (self.run if run is None else run).workload
        load = REGIMES[self.regime].load if self.regime in REGIMES else 1.0
        if load == 1.0:
            return workload
        return dataclasses.replace(workload, rate_factor=workload.rate_factor * load)

    def check_slots(self, window_start: float, window_end: float, where: str = "gridcommand") -> None:
        """The slot grid over the window must stay a sane size (at most a million slots)."""
        n = (window_end - window_start) / self.slot_s
        if n > 1_000_000:
            raise ConfigError(f"{where}.slot_s: {self.slot_s} s makes {n:.0f} slots in the "
                              f"{window_end - window_start:.3g} s window; expected at most 1e6")


def segment_span_s(workload) -> float:
    """The length of one half (offline or online) of the workload's window, s: the window
    (the paper's 3,000 s for the synthetic workload, ``window_s`` for a trace) times the scale,
    halved, as ilets.workloads.workload splits it."""
    from ilets.workloads.trace import PAPER_WINDOW_S

    window = PAPER_WINDOW_S if workload.kind == "synthetic" else workload.window_s
    return window * workload.scale / 2


def check_cap(cap_fraction: float, fleet, where: str = "gridcommand", key: str = "cap_fraction") -> None:
    """An admission cap must leave room above every server's idle power (else nothing could
    ever be admitted during an event); 1.0 (no cap) always passes. ``key`` names the field
    (``cap_fraction``, or ``cap_levels`` for each level the policy may set)."""
    if cap_fraction >= 1:
        return
    share = fleet.p_idle / (fleet.p_idle + fleet.p_act)
    worst = int(share.argmax())
    if cap_fraction <= share[worst]:
        raise ConfigError(f"{where}.{key}: {cap_fraction} is at or below server {worst}'s idle power "
                          f"({share[worst]:.3f} of its maximum); expected a cap above every server's idle "
                          f"share (> {share.max():.3f}) or 1.0 for no cap")


def _methods_defaults() -> RunConfig:
    """RunConfig with ``ilets/configs/methods.yaml`` applied (the study's method settings)."""
    path = Path(str(resources.files("ilets.configs").joinpath("methods.yaml")))
    return merge(RunConfig(), read_yaml(path), str(path))


def gridcommand_path(name: str) -> Path:
    """The path of a shipped profile (``gridcommand-smoke`` or just ``smoke``)."""
    full = name if name.startswith("gridcommand-") else f"gridcommand-{name}"
    return Path(str(resources.files("ilets.configs").joinpath(f"{full}.yaml")))


def load_gridcommand_config(name_or_path: str | Path | None = None, **overrides: Any) -> GridCommandConfig:
    """A validated :class:`GridCommandConfig` from a shipped profile name or a YAML path.

    ``name_or_path``: one of :data:`BUILTIN` (``"gridcommand-smoke"``; ``"smoke"``,
    ``"quick"`` and ``"paper"`` also name them), a path, or None for the defaults. The file's
    ``run`` mapping overrides the study's method settings (``methods.yaml``); ``overrides``
    (nested dicts welcome, ``run={"seed": 3}``) are applied last. A file with ``extends:
    <profile>`` (a built-in name or a path) starts from that profile instead and sets only what
    it lists, so a variant says what it changes and nothing else.
    """
    return _load(name_or_path, overrides or {}, ())


def _profile_path(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    short = f"gridcommand-{text}" if f"gridcommand-{text}" in BUILTIN else text
    return gridcommand_path(short) if short in BUILTIN else Path(name_or_path)


def _load(name_or_path: str | Path | None, overrides: dict[str, Any], chain: tuple[Path, ...]) -> GridCommandConfig:
    """:func:`load_gridcommand_config`, with ``chain`` the files already being extended."""
    if name_or_path is None:
        data: dict[str, Any] = {}
        where = "gridcommand"
    else:
        path = _profile_path(name_or_path)
        data, where = read_yaml(path), str(path)
        if "extends" in data:
            parent = data.pop("extends")
            if not isinstance(parent, str) or not parent:
                raise ConfigError(f"{where}.extends: expected the name or path of a grid-command profile, got {parent!r}")
            if parent.endswith((".yaml", ".yml")):
                parent_path = path.parent / parent  # a path is read from the extending file's folder
            elif _profile_path(parent) != Path(parent):
                parent_path = _profile_path(parent)
            else:
                raise ConfigError(f"{where}.extends: {parent!r} is not a profile; expected one of {list(BUILTIN)} "
                                  "or a .yaml path")
            if parent_path.resolve() in (*chain, path.resolve()):
                raise ConfigError(f"{where}.extends: {parent!r} leads back to this file (a cycle)")
            cfg = merge(_load(parent_path, {}, (*chain, path.resolve())), data, where)
            return (merge(cfg, overrides, where) if overrides else cfg).validate(where)
    run_data = data.pop("run", {}) or {}
    if not isinstance(run_data, dict):
        raise ConfigError(f"{where}.run: expected a mapping of run settings, got {type(run_data).__name__}")
    run = merge(_methods_defaults(), run_data, f"{where}.run")
    base = from_dict(GridCommandConfig, {**data, "run": {}}, where)
    cfg = dataclasses.replace(base, run=run)
    if overrides:
        cfg = merge(cfg, overrides, where)
    return cfg.validate(where)


def config_dict(cfg: GridCommandConfig) -> dict:
    """The configuration as plain data (YAML/JSON)."""
    return to_dict(cfg)


def settings_plain(config: GridCommandConfig) -> dict[str, Any]:
    """``config`` as plain data for a cell's settings digest: :data:`ADDED_FIELDS` at their
    defaults left out (:func:`ilets.config.run.drop_added_defaults`)."""
    return drop_added_defaults(to_dict(config), ADDED_FIELDS, to_dict(GridCommandConfig()))
