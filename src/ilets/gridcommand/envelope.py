"""The flexibility envelope: how far the fleet's levers can move its power during each event.

A command the fleet cannot follow measures nothing about the policy that tries. Before an
episode, :func:`reach` runs the episode twice with the scenario's own levers pushed to an
extreme inside the events and the reference policy outside them [ours]:

* *low* (for down events): defer every task the mask allows, else place it where it adds the
  least energy (``act_per_cpu * cpu * length / mips``: a slot's average power is its energy
  over its width), at the speed level that adds the least (the DVFS lever, when the profile
  has one), on a server that is awake when one is allowed (the sleep lever, when the
  profile has one: the others sleep on, and every server that times out sleeps, not only as
  far as the target asks, :attr:`GridCommandEnv.sleep_gated`);
* *high* (for up events): never defer; place each task where it adds the most energy among
  the servers where it starts at once (a queued task draws nothing until it starts), at the
  speed level that adds the most, else where it starts first.

An event's *reachable depth* is the least, over its slots past the ramp, of the change the
extreme run makes against the baseline, over the baseline (a fraction, as the regimes'
depths are): every slot at full depth can be moved that far. It is an inner estimate: the
extremes are simple rules, not optimised bounds, and by default they ignore deadlines (a
lever's reach, not its price; the metrics count the misses); with ``envelope_deadlines`` they
give way to them (:func:`keeping_deadline`), and the reach is what the levers move within
the service levels. By default one run per direction serves all
its events, so an event that follows soon after another starts in what the extreme left
there: the deferred work landing at the earlier event's end and, with the sleep lever, every
sleeper waking at once; such an event's reach can come out at zero and the event is dropped
(:func:`ilets.gridcommand.report.results.envelope_table` counts them). With ``envelope_runs: per-event`` each event
has a run of its own, from the counterfactual's state (:func:`reach`). :func:`fit_schedule`
then sizes each command to the envelope (``envelope: clip``: depth at most
``envelope_margin`` times the reachable depth; an event with no reachable change is dropped)
or leaves it and records whether it fits (``envelope: record``). With ``envelope_redraws``
(off by default) an event with no reachable change is first moved to a new start drawn
between its neighbours, up to that many draws, and dropped only when none reaches
(:func:`redraw_unreachable`).

The extreme runs are two more plays of the episode, most of the time an expert's cell
takes, and every method of a grid scores the same episodes: :func:`cached_reach` keeps each
episode's reach in a results folder's cache, keyed by everything :func:`reach` reads
(:func:`reach_key`), so a grid computes it once per episode [ours]. A cached reach is the
one :func:`reach` returns, float for float (tested).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ilets.config.run import RUN_FINETUNE_ADDED, drop_added_defaults
from ilets.config.strict import to_dict
from ilets.files import atomic_write, content_digest
from ilets.gridcommand.command import CommandSchedule, GridCommand, event_room, redraw_rng
from ilets.gridcommand.power import episode_digest
from ilets.simulator.cloud import meets_deadline

__all__ = ["REACH_CACHE_VERSION", "RUN_MODES", "EventReach", "cached_reach", "can_wait", "earliest_finish",
           "finish_times", "fit_schedule", "high_action", "keeping_deadline", "keeps_deadline", "low_action", "reach",
           "reach_key", "redraw_unreachable"]

#: below this reachable depth an event is dropped by ``envelope: clip`` (nothing to follow)
MIN_DEPTH = 1e-3


@dataclass(frozen=True)
class EventReach:
    """What the envelope found for one event of the generated (or given) schedule."""

    start_s: float
    direction: str
    requested_depth: float  #: the depth asked for (in the command's unit)
    reachable_depth: float  #: the least change the extreme run made past the ramp (same unit)
    depth: float  #: the depth the episode uses (clipped, or as requested)
    kept: bool  #: False: dropped, no reachable change
    feasible: bool  #: the depth used is within the reachable depth
    #: the draw of a new start that gave the event a reach (:func:`redraw_unreachable`); 0: at
    #: the start generated (or none of the draws reached)
    redraws: int = 0


def _marginal_energy(env: Any) -> np.ndarray:
    """Joules the current task would add on each server at the nominal speed."""
    task, cloud = env.current_task, env.cloud
    return cloud.act_per_cpu * task.cpu * task.length / cloud.fleet.mips


def _level(env: Any, pick: Callable[[np.ndarray], int]) -> int:
    """The speed level whose energy factor (power factor over speed) ``pick`` chooses."""
    factors = np.asarray(env.power_factors) / np.asarray(env.speeds)
    return pick(factors)


def low_action(env: Any, keep_deadlines: bool = False) -> int:
    """The *low* extreme's action for the current task (module docstring): defer it if the mask
    allows, else place it where it adds the least energy, at the least-energy speed level,
    on an awake server when one is allowed. Deadlines are ignored (a lever's reach), unless
    ``keep_deadlines`` (:func:`keeping_deadline`).
    """
    mask = env.action_masks()
    if mask[int(env.defer_action)]:
        a = int(env.defer_action)
    else:
        m = len(env.fleet)
        allowed = mask[:m]
        if env.sleep is not None and (allowed & ~env.sleep.asleep).any():
            allowed = allowed & ~env.sleep.asleep  # let the sleeping servers sleep on
        e = np.where(allowed, _marginal_energy(env), np.inf)
        a = _level(env, lambda f: int(np.argmin(f))) * m + int(np.argmin(e))
    return keeping_deadline(env, a, lower=True) if keep_deadlines else a


def high_action(env: Any, keep_deadlines: bool = False) -> int:
    """The *high* extreme's action for the current task (module docstring): never defer; place
    it where it adds the most energy among the servers where it starts now, at the speed
    level that adds the most, else where it starts first. Deadlines are ignored, unless
    ``keep_deadlines`` (:func:`keeping_deadline`).
    """
    m = len(env.fleet)
    servers = env.action_masks()[:m]
    start = env.cloud.earliest_starts(env.current_task.cpu)
    now = servers & (start <= env.cloud.now)  # a queued task draws nothing until it starts
    if now.any():
        a = _level(env, lambda f: int(np.argmax(f))) * m + int(np.argmax(np.where(now, _marginal_energy(env), -np.inf)))
    else:
        a = int(np.argmin(np.where(servers, start, np.inf)))
    return keeping_deadline(env, a, lower=False) if keep_deadlines else a


def finish_times(cloud: Any, task: Any, at: float | None = None) -> np.ndarray:
    """Exact finish time of ``task`` on every server if assigned at ``at`` (default now)."""
    return cloud.earliest_starts(task.cpu, at) + task.length / cloud.fleet.mips


def earliest_finish(env: Any, servers: np.ndarray, defer_ok: bool, among: np.ndarray | None = None) -> int:
    """The allowed server where the task finishes first (restricted to ``among`` if any of
    those is allowed); defer if no server is allowed."""
    if not servers.any():
        return int(env.defer_action)
    finish = finish_times(env.cloud, env.current_task)
    pick = servers if among is None or not (servers & among).any() else servers & among
    return int(np.argmin(np.where(pick, finish, np.inf)))


def can_wait(env: Any, task: Any, wait_s: float) -> bool:
    """True if, started after ``wait_s`` more seconds on its best server (today's queues), the
    task would still meet its deadline: the slack allows a deferral."""
    finish = finish_times(env.cloud, task, env.now + wait_s)
    return bool(meets_deadline(finish.min() - task.arrival, task.deadline))


def keeps_deadline(env: Any, action: int) -> bool:
    """Whether ``action`` still lets the current task meet its deadline (today's queues): a
    deferral if, started ``defer_s`` later on its best server, it would; a placement if it
    finishes in time there at the action's speed level."""
    task, cloud = env.current_task, env.cloud
    if action == int(env.defer_action):
        return can_wait(env, task, float(env.config.defer_s))
    server, level = env.decode(action)
    start = float(cloud.earliest_start(server, task.cpu))
    finish = start + task.length / (float(cloud.fleet.mips[server]) * float(env.speeds[level]))
    return bool(meets_deadline(finish - task.arrival, task.deadline))


def keeping_deadline(env: Any, action: int, lower: bool) -> int:
    """``action`` if it keeps the current task's deadline (:func:`keeps_deadline`), else the
    allowed server at the nominal speed that meets it and adds the least (``lower``) or the
    most energy, else the allowed server where the task finishes first (defer if none is
    allowed): an extreme that gives way to deadlines [ours]. The thermostat's way of keeping
    deadlines, and the envelope's with ``envelope_deadlines``, so the commands are sized to
    what the levers reach without a miss they could avoid.
    """
    if keeps_deadline(env, action):
        return action
    task = env.current_task
    servers = np.asarray(env.action_masks(), bool)[:len(env.fleet)]
    ok = servers & meets_deadline(finish_times(env.cloud, task) - task.arrival, task.deadline)
    if not ok.any():
        return earliest_finish(env, servers, False)
    energy = _marginal_energy(env)
    return int(np.argmin(np.where(ok, energy, np.inf)) if lower else np.argmax(np.where(ok, energy, -np.inf)))


#: How the extreme runs are made (``GridCommandConfig.envelope_runs``): one per direction for
#: all its events, or one per event with that event alone in the schedule.
RUN_MODES = ("joint", "per-event")


def reach(make_env: Callable[[CommandSchedule], Any], schedule: CommandSchedule, edges: np.ndarray,
          baseline_w: np.ndarray, reference: Any, runs: str = "joint",
          keep_deadlines: bool = False) -> list[tuple[float, float]]:
    """The reach of every event of ``schedule`` (module docstring), in its order: the
    reachable depth as a fraction of the baseline and in watts (the least over the event's
    slots past the ramp of each).

    ``make_env(schedule)``: a grid-command env over the episode's tasks, fleet and window with
    this schedule, no envelope of its own and the sleep lever ungated (``sleep_gated=False``:
    its whole reach); ``reference``: the plain policy
    (``act(cloud, task, mask)``) that runs outside the events. ``runs`` (:data:`RUN_MODES`):
    ``joint``, one extreme run per direction serves all its events, so an event starts in
    what the extreme left of the one before; ``per-event``, each event's run has that event
    alone in its schedule and stops at its end, so every event starts from the reference's
    own state (the counterfactual's) [ours]: no event inherits an earlier one's backlog, at
    the cost of one partial run per event. ``keep_deadlines``: both extremes give way to
    deadlines (:func:`keeping_deadline`), so the reach is what the levers move without a miss
    they could avoid.
    """
    if runs not in RUN_MODES:
        raise ValueError(f"runs: expected one of {RUN_MODES}, got {runs!r}")
    out = [(0.0, 0.0)] * len(schedule)
    edges = np.asarray(edges, dtype=float)
    baseline_w = np.asarray(baseline_w, dtype=float)
    for direction, pushed in (("down", low_action), ("up", high_action)):
        extreme = functools.partial(pushed, keep_deadlines=keep_deadlines)
        mine = [i for i, c in enumerate(schedule) if c.direction == direction and c.duration_s > 0]
        if not mine:
            continue
        if runs == "joint":
            power = _extreme_run(make_env(schedule), direction, extreme, reference, edges)
            for i in mine:
                out[i] = _event_reach(schedule[i], power, edges, baseline_w)
        else:
            for i in mine:
                c = schedule[i]
                power = _extreme_run(make_env(CommandSchedule((c,))), direction, extreme, reference, edges, c.end_s)
                out[i] = _event_reach(c, power, edges, baseline_w)
    return out


#: Part of every :func:`reach_key`: raise it when a change to the extreme runs, or to anything
#: they simulate, changes what :func:`reach` returns, so no cache made before is read.
#: (``ilets verify`` re-runs cells without any cache, so a stale one cannot pass unseen.)
REACH_CACHE_VERSION = 1


#: Fields added to the configuration after reaches were cached: at their defaults they are left
#: out of :func:`reach_key`, so a cache made before they existed is still found (the extremes
#: never read the learner's heads).
REACH_KEY_ADDED = ("run.cap_head", "run.server_film", "observe_terms") + RUN_FINETUNE_ADDED


def reach_key(config: Any, tasks: Any, fleet: Any, window: tuple[float, float], schedule: CommandSchedule,
              edges: np.ndarray, baseline_w: np.ndarray) -> str:
    """A hash of everything :func:`reach` reads for one episode (the cache key of
    :func:`cached_reach`): the configuration the extreme runs are built with (its run seed
    draws the reference's and the batch class's choices), the task table and fleet by
    content, the window, the schedule, the slots and the baseline. Not ``envelope_redraws``:
    it chooses which schedules are measured, and :func:`reach` never reads it, so a key is
    the one made before the field existed."""
    plain = {k: v for k, v in drop_added_defaults(to_dict(config), REACH_KEY_ADDED,
                                                  to_dict(type(config)())).items() if k != "envelope_redraws"}
    blob = json.dumps([REACH_CACHE_VERSION, plain, [float(w) for w in window], to_dict(schedule),
                       episode_digest(tasks, fleet), content_digest({"edges": edges, "baseline_w": baseline_w})],
                      sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def cached_reach(folder: str | Path, key: str, events: int,
                 compute: Callable[[], list[tuple[float, float]]]) -> list[tuple[float, float]]:
    """``compute()`` (:func:`reach` of one episode), read from ``folder`` when it holds ``key``
    (:func:`reach_key`), written there otherwise.

    JSON keeps a float's shortest repr, which reads back as the same float, so a cached reach
    is the computed one bit for bit. A file that cannot be read, or holds another number of
    events than ``events``, is computed again (a warning says so).
    """
    path = Path(folder) / f"reach-{key}.json"
    if path.is_file():
        try:
            saved = [(float(f), float(w)) for f, w in json.loads(path.read_text())["reach"]]
            if len(saved) == events:
                return saved
            problem = f"{len(saved)} events, expected {events}"
        except (OSError, ValueError, KeyError, TypeError) as err:  # e.g. a file cut short by a kill
            problem = type(err).__name__
        warnings.warn(f"{path}: damaged reach cache ({problem}); computing the reach again", stacklevel=2)
        path.unlink(missing_ok=True)
    found = compute()
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps({"version": REACH_CACHE_VERSION, "reach": found})))
    return found


def _extreme_run(env: Any, direction: str, extreme: Callable[[Any], int], reference: Any, edges: np.ndarray,
                 until: float = np.inf) -> np.ndarray:
    """Slot power of ``env``'s episode played by ``extreme`` inside its ``direction`` events and
    ``reference`` elsewhere, to its end or to the first decision at or after ``until`` (the
    slots before then are final: a task handed over later starts later)."""
    if getattr(env, "sleep_gated", False):
        raise ValueError("make_env: an extreme run measures the sleep lever's whole reach; build the env "
                         "with sleep_gated=False")
    env.reset()
    done = False
    while not done and env.now < until:
        if env.active_command is not None and env.active_command.direction == direction:
            a = extreme(env)
        else:
            a = reference.act(env.cloud, env.current_task, env.action_masks()[:len(env.fleet)])
        _, _, done, _, _ = env.step(a)
    return env.realised_profile(edges)


def _event_reach(c: GridCommand, power: np.ndarray, edges: np.ndarray, baseline_w: np.ndarray) -> tuple[float, float]:
    """One event's reach in an extreme run's slot power: the least change past the ramp, as a
    fraction of the baseline and in watts."""
    inside = (edges[1:] > c.start_s) & (edges[:-1] < c.end_s)
    mid = 0.5 * (np.maximum(edges[:-1], c.start_s) + np.minimum(edges[1:], c.end_s))
    full = inside & (mid >= c.start_s + c.ramp_s)
    if not full.any():  # no slot's middle is past the ramp: every slot of the event
        full = inside
    change_w = c.sign * (power[full] - baseline_w[full])
    return (max(0.0, float((change_w / np.maximum(baseline_w[full], 1e-12)).min())),
            max(0.0, float(change_w.min())))


def redraw_unreachable(schedule: CommandSchedule, reachable: list[tuple[float, float]],
                       measure: Callable[[CommandSchedule], list[tuple[float, float]]],
                       room: Callable[[CommandSchedule, int], tuple[float, float]], tries: int,
                       rng: np.random.Generator, runs: str = "joint",
                       ) -> tuple[CommandSchedule, list[tuple[float, float]], list[int]]:
    """Move each event the fleet cannot move at all (reach below :data:`MIN_DEPTH`) to a new
    start instead of leaving :func:`fit_schedule` to drop it [ours]: up to ``tries`` starts
    drawn uniformly from ``room(schedule, i)`` (between its neighbours, as the generator places
    events: :func:`ilets.gridcommand.command.event_room`), the first at which the event has a
    reach kept. Its depth, duration, notice and direction stay as drawn; only when it happens
    moves. The schedule, its reach, and per event the draw that was kept (0: not moved).

    Events are taken in time order. ``measure(schedule)`` is :func:`reach` of a whole
    schedule. With ``runs: joint`` every draw is measured on the whole schedule, since a moved
    event changes what the events after it inherit (not those before it: the runs up to its
    new start are the same); the reach of the later events is then the one measured with it
    moved. With ``per-event`` only the moved event is measured, alone, as :func:`reach` would.
    An event with no draw that reaches keeps its start and is dropped as before.
    """
    if runs not in RUN_MODES:
        raise ValueError(f"runs: expected one of {RUN_MODES}, got {runs!r}")
    moves = [0] * len(schedule)
    for i in range(len(schedule)):
        if schedule[i].duration_s <= 0 or reachable[i][0] >= MIN_DEPTH:
            continue
        lo, hi = room(schedule, i)  # the schedule changes only when a draw is kept
        if hi < lo:  # no room between its neighbours
            continue
        for draw in range(1, tries + 1):
            commands = list(schedule)
            commands[i] = dataclasses.replace(commands[i], start_s=float(rng.uniform(lo, hi)))
            moved = CommandSchedule(tuple(commands))
            if runs == "joint":
                found = measure(moved)
            else:
                found = list(reachable)
                found[i] = measure(CommandSchedule((moved[i],)))[0]
            if found[i][0] >= MIN_DEPTH:
                schedule, reachable, moves[i] = moved, found, draw
                break
    return schedule, reachable, moves


def fit_schedule(schedule: CommandSchedule, reachable: list[tuple[float, float]], mode: str,
                 margin: float, moves: list[int] | None = None) -> tuple[CommandSchedule, list[EventReach]]:
    """The schedule the episode uses, and what the envelope found per event.

    ``clip``: each command's depth at most ``margin`` times its reach (in the command's own
    unit), an event that cannot move the power at all (less than :data:`MIN_DEPTH` of the
    baseline) dropped; ``record``: unchanged. Events without a duration are kept as they are.
    ``moves``: per event, the draw :func:`redraw_unreachable` kept (recorded, default none).
    """
    kept: list[GridCommand] = []
    found: list[EventReach] = []
    for c, (fraction, watts), moved in zip(schedule, reachable, moves or [0] * len(schedule)):
        if c.duration_s <= 0:
            kept.append(c)
            continue
        r = fraction if c.depth_unit == "fraction" else watts
        depth = c.depth
        if mode == "clip":
            if fraction < MIN_DEPTH:
                found.append(EventReach(c.start_s, c.direction, c.depth, r, 0.0, False, False, moved))
                continue
            depth = min(c.depth, margin * r)
        kept.append(dataclasses.replace(c, depth=depth))
        found.append(EventReach(c.start_s, c.direction, c.depth, r, depth, True, depth <= r, moved))
    return CommandSchedule(tuple(kept)), found


def sized_schedule(episode: Any, schedule: CommandSchedule, make_env: Callable[[CommandSchedule], Any],
                   reference: Callable[[], Any], tasks: Any, fleet: Any, window: tuple[float, float], edges: np.ndarray,
                   baseline_w: np.ndarray, cache: str | Path | None = None,
                   ) -> tuple[CommandSchedule, list[EventReach]]:
    """``schedule`` sized to what the levers reach in the episode whose configuration (its run
    seed set) is ``episode``, and what was found per event (the env's ``envelope``): each
    event's reach measured (:func:`reach`, with ``make_env`` the episode's env with bare
    levers under a schedule and ``reference`` making the counterfactual's policy afresh for
    each measurement; kept in and read
    from ``cache`` when given, :func:`cached_reach`), an unreachable event moved to a new start
    first with ``envelope_redraws`` (:func:`redraw_unreachable`), then every command fitted
    (:func:`fit_schedule`). Apart from the env, whose step logic does not need it."""
    w0, w1 = window

    def measured(schedule: CommandSchedule) -> list[tuple[float, float]]:
        def computed() -> list[tuple[float, float]]:
            return reach(make_env, schedule, edges, baseline_w, reference(), episode.envelope_runs,
                         episode.envelope_deadlines)

        if cache is None:
            return computed()
        # keyed by the episode's own configuration: the extremes read its envelope_runs
        # and envelope_deadlines, which the bare one does not keep
        key = reach_key(episode, tasks, fleet, window, schedule, edges, baseline_w)
        return cached_reach(cache, key, len(schedule), computed)

    found, moves = measured(schedule), None
    if episode.envelope_redraws:  # an unreachable event moved before it is dropped
        room = functools.partial(event_room, window_start=w0, window_end=w1, gap_s=episode.event_gap_s(w0, w1))
        schedule, found, moves = redraw_unreachable(schedule, found, measured, room, episode.envelope_redraws,
                                                    redraw_rng(episode.schedule_seed), episode.envelope_runs)
    return fit_schedule(schedule, found, episode.envelope, episode.envelope_margin, moves)
