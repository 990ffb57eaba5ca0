"""Grid operator power commands: one event, a schedule of events, seeded generators.

A :class:`GridCommand` asks the data centre to move its power away from what it would have
drawn anyway (the *baseline*, the counterfactual run of :func:`ilets.gridcommand.power.counterfactual`):
``down`` to ``baseline * (1 - depth)``, ``up`` to ``baseline * (1 + depth)`` (``depth_unit:
fraction``), or by ``depth`` watts (``depth_unit: watts``). The operator announces it
``notice_s`` before ``start_s``; the target ramps linearly from the baseline to the full
depth over the first ``ramp_s`` of the event and steps back to the baseline at its end
[ours: the trials ramp in, the return is not specified]. Outside events the target *is*
the baseline and tracking is not scored.

Tolerance: ``band`` is a fraction of the requested change at full depth [ours]; a slot is
inside the band when ``|P - target| <= band * |requested change|``. A band of 1 or more
would count doing nothing as tracking, a band of 0 could never be met by a real fleet, so
``0 < band < 1``.

Calibration of the built-in regimes (:data:`REGIMES`) [ours, from public field trials; no
data is shipped]:

* EPRI DCFlex trial on a 256-GPU cluster (arXiv 2507.00909): power cut by 25 % for 3 h with
  quality of service kept; a later trial cut more than 30 % within 30 s of the grid signal
  and held it for up to 10 h.
* The simulated online window is 25 minutes (1,500 s) standing for a 24 h-scale day, so
  event *durations* are scaled by 1500 / 86400: 3 h -> 187.5 s, 10 h -> 625 s.
* *Notice* and *ramp* are response times, not durations, and are not day-scaled: the 30 s
  of the trial stays 30 s.
* :func:`generate_schedule` then fits a regime to the window it is given: every time
  (duration, notice, ramp) is multiplied by ``(window_end - window_start) / 1500``, as
  ``workload.scale`` compresses the workload's own bursts and trend [ours]; at the paper's
  scale this factor is 1.

A regulation-like signal (:func:`regulation_signal`) is synthesised (band-limited noise,
bounded to [-1, 1], drift-corrected to zero mean), never taken from PJM data, which may not
be redistributed.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

import numpy as np

#: The simulated online window (s) that the built-in regimes are written for.
PAPER_ONLINE_WINDOW_S = 1500.0
#: Seconds of a day; event durations are scaled by PAPER_ONLINE_WINDOW_S / DAY_S.
DAY_S = 86400.0
#: Factor from field-trial durations (real hours) to simulated window seconds (1500 / 86400).
DAY_TO_WINDOW = PAPER_ONLINE_WINDOW_S / DAY_S

DIRECTIONS = ("down", "up")
#: A command's direction and depth unit, as types (the values of DIRECTIONS and DEPTH_UNITS).
Direction = Literal["down", "up"]
DepthUnit = Literal["fraction", "watts"]
#: second word of the generator's seed ("grid" in ASCII), so that a run seed gives commands
#: independent of the workload drawn from the same seed [ours]
_STREAM = 0x67726964
#: third word of the stream that re-draws an unreachable event's start ("move" in ASCII)
_REDRAW_STREAM = 0x6D6F7665
DEPTH_UNITS = ("fraction", "watts")


class CommandError(ValueError):
    """A grid command or schedule is impossible; the message names the field."""


@dataclass(frozen=True)
class GridCommand:
    """One operator event (times in seconds of the simulated clock, ``start_s`` absolute).

    Attributes:
        direction: ``"down"`` (shed load) or ``"up"`` (absorb power).
        depth: the requested change, a fraction of the baseline (``depth_unit="fraction"``,
            below 1 for ``down``) or watts (``depth_unit="watts"``); >= 0.
        depth_unit: ``"fraction"`` or ``"watts"``.
        start_s: when the event starts (absolute simulated time).
        duration_s: how long it lasts (> 0 for a scored event; 0 is allowed and scores nothing).
        notice_s: how long before ``start_s`` it is announced (>= 0).
        ramp_s: the target moves linearly to full depth over this long (0 <= ramp <= duration).
        band: tolerance, a fraction of the requested change at full depth, in (0, 1) [ours].
    """

    direction: Direction = "down"
    depth: float = 0.25
    depth_unit: DepthUnit = "fraction"
    start_s: float = 0.0
    duration_s: float = 0.0
    notice_s: float = 0.0
    ramp_s: float = 0.0
    band: float = 0.2

    @property
    def end_s(self) -> float:
        """When the event ends (exclusive)."""
        return self.start_s + self.duration_s

    @property
    def announce_s(self) -> float:
        """When the operator announces the event (``start_s - notice_s``)."""
        return self.start_s - self.notice_s

    @property
    def sign(self) -> float:
        """-1 for ``down``, +1 for ``up``."""
        return -1.0 if self.direction == "down" else 1.0

    def validate(self, window_start: float | None = None, window_end: float | None = None,
                 where: str = "command") -> "GridCommand":
        """Check the fields; raise :class:`CommandError` naming the first bad one. Returns self.

        With a window, an event starting at or after ``window_end`` (it could never be
        tracked) or ending before ``window_start`` is an error too.
        """
        if self.direction not in DIRECTIONS:
            raise CommandError(f"{where}.direction: expected one of {DIRECTIONS}, got {self.direction!r}")
        if self.depth_unit not in DEPTH_UNITS:
            raise CommandError(f"{where}.depth_unit: expected one of {DEPTH_UNITS}, got {self.depth_unit!r}")
        for key in ("depth", "start_s", "duration_s", "notice_s", "ramp_s", "band"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise CommandError(f"{where}.{key}: expected a finite number, got {value!r}")
        for key in ("depth", "duration_s", "notice_s", "ramp_s"):
            if getattr(self, key) < 0:
                raise CommandError(f"{where}.{key}: expected a number >= 0, got {getattr(self, key)}")
        if self.direction == "down" and self.depth_unit == "fraction" and self.depth >= 1:
            raise CommandError(f"{where}.depth: a down command's fraction must be below 1 (1 would switch "
                               f"the whole data centre off), got {self.depth}")
        if self.ramp_s > self.duration_s:
            raise CommandError(f"{where}.ramp_s: the ramp ({self.ramp_s} s) is longer than the event "
                               f"(duration_s {self.duration_s} s); expected ramp_s <= duration_s")
        if not 0 < self.band < 1:
            raise CommandError(f"{where}.band: expected a tolerance in (0, 1) of the requested change "
                               f"(>= 1 counts doing nothing as tracking, <= 0 can never be met), got {self.band}")
        if window_start is not None and window_end is not None and not window_start < window_end:
            raise CommandError(f"{where}: the window [{window_start}, {window_end}) is empty")
        if window_end is not None and self.start_s >= window_end:
            raise CommandError(f"{where}.start_s: the event starts at {self.start_s} s, at or after the "
                               f"window ends ({window_end} s)")
        if window_start is not None and self.duration_s > 0 and self.end_s <= window_start:
            raise CommandError(f"{where}.start_s: the event ends at {self.end_s} s, before the window "
                               f"starts ({window_start} s)")
        return self

    def ramp_factor(self, t) -> np.ndarray:
        """Share of the full depth requested at times ``t`` (0 outside the event), vectorised."""
        t = np.asarray(t, dtype=float)
        inside = (t >= self.start_s) & (t < self.end_s)
        if self.ramp_s > 0:
            rise = np.clip((t - self.start_s) / self.ramp_s, 0.0, 1.0)
        else:
            rise = np.ones_like(t)
        return np.where(inside, rise, 0.0)

    def target_scalar(self, t: float, baseline_w: float) -> float:
        """:meth:`CommandSchedule.target` for this event at one time, in plain floats (the
        environment's per-decision path; the vectorised form costs microseconds per call)."""
        if not self.start_s <= t < self.end_s:
            return baseline_w
        rise = min(1.0, max(0.0, (t - self.start_s) / self.ramp_s)) if self.ramp_s > 0 else 1.0
        change = self.depth * baseline_w if self.depth_unit == "fraction" else self.depth
        return baseline_w + self.sign * rise * change

    def change(self, baseline_w) -> np.ndarray:
        """The requested change at full depth (W, >= 0) given the baseline power."""
        baseline_w = np.asarray(baseline_w, dtype=float)
        if self.depth_unit == "fraction":
            return self.depth * baseline_w
        return np.full_like(baseline_w, self.depth)

    def band_w(self, baseline_w) -> np.ndarray:
        """The tolerance in watts: ``band`` times the requested change at full depth."""
        return self.band * self.change(baseline_w)


@dataclass(frozen=True)
class CommandSchedule:
    """Commands sorted by start, no two overlapping (an overlap is a :class:`CommandError`)."""

    commands: tuple[GridCommand, ...] = ()
    if TYPE_CHECKING:  # set by __post_init__, not fields (to_dict, repr and == ignore them)
        _starts: np.ndarray = field(init=False)  #: start of each command (s), sorted
        _ends: np.ndarray = field(init=False)  #: end of each command (s)
        _start_list: list[float] = field(init=False)  #: the starts as floats (bisect's path)

    def __post_init__(self) -> None:
        cmds = tuple(self.commands)
        for i, c in enumerate(cmds):
            if not isinstance(c, GridCommand):
                raise CommandError(f"schedule.commands[{i}]: expected a GridCommand, got {type(c).__name__}")
            c.validate(where=f"schedule.commands[{i}]")
        ordered = tuple(sorted(cmds, key=lambda c: (c.start_s, c.end_s)))
        for i, (a, b) in enumerate(zip(ordered, ordered[1:])):
            if b.start_s < a.end_s:
                raise CommandError(f"schedule.commands: events overlap: [{a.start_s}, {a.end_s}) s and "
                                   f"[{b.start_s}, {b.end_s}) s; expected non-overlapping events")
        object.__setattr__(self, "commands", ordered)
        # arrays for the vectorised lookups
        object.__setattr__(self, "_starts", np.array([c.start_s for c in ordered], dtype=float))
        object.__setattr__(self, "_ends", np.array([c.end_s for c in ordered], dtype=float))
        object.__setattr__(self, "_start_list", [c.start_s for c in ordered])

    def __len__(self) -> int:
        return len(self.commands)

    def __iter__(self):
        return iter(self.commands)

    def __getitem__(self, i: int) -> GridCommand:
        return self.commands[i]

    def validate(self, window_start: float, window_end: float, where: str = "schedule") -> "CommandSchedule":
        """Validate every command against the window; returns self."""
        for i, c in enumerate(self.commands):
            c.validate(window_start, window_end, where=f"{where}.commands[{i}]")
        return self

    def active_index(self, t) -> np.ndarray:
        """Index of the event scored at each time ``t`` (``start <= t < end``), -1 where none."""
        t = np.asarray(t, dtype=float)
        if not self.commands:
            return np.full(t.shape, -1, dtype=np.int64)
        k = np.searchsorted(self._starts, t, side="right") - 1
        kk = np.clip(k, 0, None)
        inside = (k >= 0) & (t < self._ends[kk])
        return np.where(inside, k, -1)

    def active(self, t: float) -> GridCommand | None:
        """The event scored at time ``t`` (a float), or None."""
        k = bisect.bisect_right(self._start_list, t) - 1
        if k >= 0 and t < self.commands[k].end_s:
            return self.commands[k]
        return None

    def target(self, t, baseline_w) -> np.ndarray:
        """The power target (W) at times ``t`` given the baseline there (vectorised).

        ``down``: ``baseline * (1 - depth * ramp)``, ``up``: ``baseline * (1 + depth * ramp)``
        (fraction); watts: ``baseline -/+ depth * ramp``. Outside events: the baseline.
        """
        t = np.asarray(t, dtype=float)
        baseline_w = np.broadcast_to(np.asarray(baseline_w, dtype=float), t.shape)
        out = np.array(baseline_w, dtype=float, copy=True)
        k = self.active_index(t)
        for i in np.unique(k[k >= 0]):
            c = self.commands[int(i)]
            sel = k == i
            out[sel] = baseline_w[sel] + c.sign * c.ramp_factor(t[sel]) * c.change(baseline_w[sel])
        return out

    def scored(self, t) -> np.ndarray:
        """True where an event is scored at time ``t``."""
        return self.active_index(t) >= 0

    def announced(self, t: float) -> tuple[GridCommand, ...]:
        """Commands known at time ``t`` (announced, ``t >= start - notice``), in start order;
        events already over are included (the operator's history is known too)."""
        return tuple(c for c in self.commands if t >= c.announce_s)

    def upcoming(self, t: float) -> GridCommand | None:
        """The event an observer sees at ``t``: the active one, else the next announced one not
        yet started, else None."""
        current = self.active(t)
        if current is not None:
            return current
        for c in self.commands:
            if c.start_s > t and t >= c.announce_s:
                return c
        return None


# --- regimes and the seeded generator ------------------------------------------------------

@dataclass(frozen=True)
class CommandRegime:
    """How often, how deep, how long and with how much notice the operator calls events.

    Times are for the paper's 1,500 s online window (:data:`PAPER_ONLINE_WINDOW_S`); see
    :func:`generate_schedule` for how they are fitted to another window.
    """

    name: str = "custom"
    events_per_window: float = 2.0  #: expected events per window (Poisson) [ours]
    depth: tuple[float, float] = (0.10, 0.25)  #: depth range, fraction of the baseline
    duration_s: tuple[float, float] = (120.0, 187.5)  #: event duration range, s
    notice_s: tuple[float, float] = (120.0, 600.0)  #: notice range, s
    ramp_s: float = 30.0  #: ramp length, s (cut to the duration)
    band: float = 0.2  #: tolerance, fraction of the requested change
    p_down: float = 0.8  #: probability of a down event (the rest are up)
    min_gap_s: float = 30.0  #: least time between two events, s [ours]
    #: the workload's arrival rate x this while the regime holds [ours]: not a command but the
    #: load the fleet meets, so that the drift protocol can move it as one factor; the field
    #: regimes keep 1 (the trials report no load change), and at 1 the workload is untouched
    load: float = 1.0

    def validate(self, where: str = "regime") -> "CommandRegime":
        """Named errors for impossible ranges; returns self."""
        if not self.events_per_window >= 0 or not math.isfinite(self.events_per_window):
            raise CommandError(f"{where}.events_per_window: expected a finite number >= 0, got {self.events_per_window}")
        for key in ("depth", "duration_s", "notice_s"):
            lo, hi = getattr(self, key)
            if not 0 <= lo <= hi or not math.isfinite(hi):
                raise CommandError(f"{where}.{key}: expected 0 <= low <= high, got {(lo, hi)}")
        if self.duration_s[0] <= 0:
            raise CommandError(f"{where}.duration_s: expected durations > 0, got {self.duration_s}")
        if self.depth[1] >= 1 and self.p_down > 0:
            raise CommandError(f"{where}.depth: down events need depths below 1, got {self.depth}")
        if not 0 <= self.ramp_s < math.inf:
            raise CommandError(f"{where}.ramp_s: expected a number >= 0, got {self.ramp_s}")
        if not 0 < self.band < 1:
            raise CommandError(f"{where}.band: expected a tolerance in (0, 1), got {self.band}")
        if not 0 <= self.p_down <= 1:
            raise CommandError(f"{where}.p_down: expected a probability in [0, 1], got {self.p_down}")
        if not 0 <= self.min_gap_s < math.inf:
            raise CommandError(f"{where}.min_gap_s: expected a number >= 0, got {self.min_gap_s}")
        if not 0 < self.load < math.inf:
            raise CommandError(f"{where}.load: expected an arrival-rate factor > 0, got {self.load}")
        return self


#: The regimes calibrated on the field trials [ours, as in the module docstring].
FIELD_REGIMES: MappingProxyType[str, CommandRegime] = MappingProxyType({
    # DCFlex-like: a shallow cut held long (2-3 h of a day -> 125-187.5 s), announced early
    "shallow-long": CommandRegime(name="shallow-long", events_per_window=2.0, depth=(0.10, 0.25),
                                  duration_s=(2 * 3600 * DAY_TO_WINDOW, 3 * 3600 * DAY_TO_WINDOW),
                                  notice_s=(120.0, 600.0), ramp_s=30.0, band=0.2, p_down=0.8),
    # the later trial: deeper than 25 %, reached within ~30 s of the signal (notice 20-30 s
    # plus a 10 s ramp), short events (0.5-2 h -> 31-125 s), more of them, a tighter band
    "deep-short": CommandRegime(name="deep-short", events_per_window=4.0, depth=(0.25, 0.40),
                                duration_s=(0.5 * 3600 * DAY_TO_WINDOW, 2 * 3600 * DAY_TO_WINDOW),
                                notice_s=(20.0, 30.0), ramp_s=10.0, band=0.1, p_down=0.7),
    # the long hold of the later trial: up to 10 h -> 625 s, one event per window
    "deep-long": CommandRegime(name="deep-long", events_per_window=1.0, depth=(0.30, 0.40),
                               duration_s=(5 * 3600 * DAY_TO_WINDOW, 10 * 3600 * DAY_TO_WINDOW),
                               notice_s=(30.0, 30.0), ramp_s=30.0, band=0.15, p_down=1.0),
})

#: The drift protocol's factors [ours]: the fields of a regime each one moves. deep-short
#: differs from shallow-long in all of them at once, so a drop there cannot be put on any one;
#: :func:`one_factor` moves one. ``load`` is the one factor the trials do not move: it goes to
#: :data:`DRIFT_LOAD`.
DRIFT_FACTORS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType({
    "depth": ("depth",),
    "duration": ("duration_s",),
    "notice": ("notice_s", "ramp_s"),  # how soon the target is announced and reached
    "band": ("band",),
    "frequency": ("events_per_window",),
    "direction": ("p_down",),  # the share of up events
    "load": ("load",),
})
#: The regime the drift protocol starts from, and the one whose values it moves to.
DRIFT_BASE, DRIFT_TOWARD = "shallow-long", "deep-short"
#: The load factor's moved value [ours]: arrival rate x 1.5, the generalisation study's
#: ``rate-x1.5`` shift (``ilets/configs/shifts.yaml``), so the two chapters move load alike.
DRIFT_LOAD = 1.5
#: What the factors move to: deep-short's values, and :data:`DRIFT_LOAD` for the load.
DRIFT_TARGET = replace(FIELD_REGIMES[DRIFT_TOWARD], load=DRIFT_LOAD)


def one_factor(base: CommandRegime, toward: CommandRegime, factor: str) -> CommandRegime:
    """``base`` with the fields of ``factor`` (:data:`DRIFT_FACTORS`) set as in ``toward``,
    named ``<base>+<factor>``."""
    if factor not in DRIFT_FACTORS:
        raise CommandError(f"factor: unknown drift factor {factor!r}; expected one of {list(DRIFT_FACTORS)}")
    return replace(base, name=f"{base.name}+{factor}",
                   **{f: getattr(toward, f) for f in DRIFT_FACTORS[factor]}).validate(f"regime {base.name}+{factor}")


#: shallow-long with one factor of deep-short each (:func:`one_factor`), by name.
DRIFT_REGIMES: MappingProxyType[str, CommandRegime] = MappingProxyType({
    f"{DRIFT_BASE}+{f}": one_factor(FIELD_REGIMES[DRIFT_BASE], DRIFT_TARGET, f) for f in DRIFT_FACTORS})
#: Every built-in regime by name: the field-calibrated ones, then the drift protocol's.
REGIMES: MappingProxyType[str, CommandRegime] = MappingProxyType({**FIELD_REGIMES, **DRIFT_REGIMES})


def regime(name: str) -> CommandRegime:
    """A built-in regime by name; an unknown name raises :class:`CommandError` listing them."""
    try:
        return REGIMES[name]
    except KeyError:
        raise CommandError(f"regime: unknown regime {name!r}; expected one of {sorted(REGIMES)}") from None


def generate_schedule(regime: CommandRegime, window_start: float, window_end: float, seed: int,
                      days: float = 1.0) -> CommandSchedule:
    """A seeded schedule of non-overlapping events inside ``[window_start, window_end)``.

    The number of events is Poisson(``events_per_window * days``); depths, durations and
    notices are uniform on their ranges, the direction is down with probability ``p_down``.
    Every time is scaled by ``(window_end - window_start) / (1500 * days)`` first (the regime
    is written for the paper's window, one day; see the module docstring) [ours]. ``days``
    (default 1) lets one window stand for several days of commands, so that an episode holds
    more events at the same event lengths (``GridCommandConfig.window_days``); at 1 the draws
    are exactly those the generator made before it existed. Events are placed by splitting the
    window's free time (window minus durations minus the minimum gaps) into uniformly random
    gaps (a flat Dirichlet), so they never overlap and all lie inside the window; if the
    events do not fit, the last drawn ones are dropped until they do [ours]. The same
    ``(regime, window, seed)`` always gives the same schedule; the draws come from their own
    stream (``default_rng([seed, "grid"])``), independent of the workload drawn from the same
    run seed [ours].
    """
    regime.validate()
    if not (math.isfinite(window_start) and math.isfinite(window_end)) or not window_start < window_end:
        raise CommandError(f"generate_schedule: expected window_start < window_end, got [{window_start}, {window_end})")
    if not (math.isfinite(days) and days > 0):
        raise CommandError(f"generate_schedule.days: expected a finite number of days > 0, got {days}")
    # a stream of its own: the workload draws from default_rng(seed) with the same run seed
    rng = np.random.default_rng([seed, _STREAM])
    k = time_factor(window_start, window_end, days)
    n = int(rng.poisson(regime.events_per_window * days))
    depth = rng.uniform(*regime.depth, n)
    duration = rng.uniform(*regime.duration_s, n) * k
    notice = rng.uniform(*regime.notice_s, n) * k
    down = rng.random(n) < regime.p_down
    gap = regime.min_gap_s * k
    span = window_end - window_start
    while n and duration[:n].sum() + gap * (n + 1) > span:
        n -= 1
    if n == 0:
        return CommandSchedule(())
    free = span - duration[:n].sum() - gap * (n + 1)
    shares = rng.dirichlet(np.ones(n + 1))
    commands = []
    t = window_start
    for i in range(n):
        t += gap + free * shares[i]
        dur = float(duration[i])
        commands.append(GridCommand(direction="down" if down[i] else "up", depth=float(depth[i]),
                                    depth_unit="fraction", start_s=float(t), duration_s=dur,
                                    notice_s=float(notice[i]), ramp_s=float(min(regime.ramp_s * k, dur)),
                                    band=regime.band))
        t += dur
    return CommandSchedule(tuple(commands)).validate(window_start, window_end)


def time_factor(window_start: float, window_end: float, days: float = 1.0) -> float:
    """What :func:`generate_schedule` multiplies a regime's times by to fit them to the window
    (the regime is written for one paper window a day)."""
    return (window_end - window_start) / (PAPER_ONLINE_WINDOW_S * days)


def event_room(schedule: CommandSchedule, i: int, window_start: float, window_end: float,
               gap_s: float) -> tuple[float, float]:
    """The starts event ``i`` of ``schedule`` may move to and keep its place: at least
    ``gap_s`` after the previous event's end (or the window's start) and ending at least
    ``gap_s`` before the next event's start (or the window's end), as :func:`generate_schedule`
    places it. ``lo > hi`` when it has no room to move."""
    c = schedule[i]
    lo = (schedule[i - 1].end_s if i > 0 else window_start) + gap_s
    hi = (schedule[i + 1].start_s if i + 1 < len(schedule) else window_end) - gap_s - c.duration_s
    return lo, hi


def redraw_rng(seed: int) -> np.random.Generator:
    """The stream the envelope draws a moved event's new start from
    (:func:`ilets.gridcommand.envelope.redraw_unreachable`): the schedule's own seed, a third
    word of its own, so the schedule's draws are those made without it [ours]."""
    return np.random.default_rng([seed, _STREAM, _REDRAW_STREAM])


#: The drift protocol's events per episode, and the chance of fewer that :func:`days_for_events`
#: accepts when it sets an episode's days [ours].
DRIFT_EVENTS, DRIFT_EVENTS_RISK = 20, 0.05


def days_for_events(regime: CommandRegime, at_least: int = DRIFT_EVENTS, risk: float = DRIFT_EVENTS_RISK,
                    most: int = 365) -> int:
    """The fewest days of ``regime`` one episode must hold (``GridCommandConfig.window_days``) so
    that it has fewer than ``at_least`` events with probability below ``risk`` [ours].

    The generator draws Poisson(``events_per_window * days``) events
    (:func:`generate_schedule`), so no number of days makes ``at_least`` certain; this is the
    rule the multi-day drift scenario's days were set by, written before any of its episodes
    ran. Events the generator drops because they do not fit, or that the flexibility envelope
    drops as unreachable, are not counted here: the chapter reports the realised counts.
    """
    from scipy.stats import poisson

    regime.validate()
    if at_least < 1 or not 0 < risk < 1:
        raise CommandError(f"days_for_events: expected at_least >= 1 and 0 < risk < 1, got {at_least} and {risk}")
    if regime.events_per_window <= 0:
        raise CommandError(f"days_for_events: regime {regime.name!r} generates no events")
    for days in range(1, most + 1):
        if poisson.cdf(at_least - 1, regime.events_per_window * days) < risk:
            return days
    raise CommandError(f"days_for_events: more than {most} days of {regime.name!r} would be needed")


def regulation_signal(n: int, dt_s: float, seed: int, cutoff_s: float = 60.0) -> np.ndarray:
    """A synthetic regulation-like signal: ``n`` samples ``dt_s`` apart, in [-1, 1], mean 0.

    White noise low-passed in the frequency domain (periods shorter than ``cutoff_s``
    removed: band-limited), its mean subtracted (drift-corrected, as a RegD-like signal is
    designed to integrate to about zero over ~15 minutes) and divided by its largest absolute
    value (bounded). Scaling after centring keeps the mean exactly zero (to rounding) [ours].
    Synthesised; it contains no PJM data.
    """
    if n < 2:
        raise CommandError(f"regulation_signal.n: expected at least 2 samples, got {n}")
    if not dt_s > 0 or not cutoff_s > 0:
        raise CommandError(f"regulation_signal: expected dt_s > 0 and cutoff_s > 0, got {dt_s} and {cutoff_s}")
    rng = np.random.default_rng(seed)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    freq = np.fft.rfftfreq(n, d=dt_s)
    spectrum[freq > 1.0 / cutoff_s] = 0.0
    x = np.fft.irfft(spectrum, n)
    x -= x.mean()
    peak = np.abs(x).max()
    return x / peak if peak > 0 else x
