"""The grid-command environment: schedule tasks while following an operator's power target.

One decision per task hand-over, as in :class:`ilets.agents.env.CloudSchedulingEnv`, with
one more action and a target to follow:

Actions, ``Discrete(M * L + 1)`` (``+ K`` with cap levels, ``+ M`` with the sleep head)
    ``0..M-1`` place the task on that server (the plain scenario's action); with DVFS levels
    (``speed_levels``, ``L`` of them, the nominal 1.0 first) ``l * M + s`` places it on
    server ``s`` at speed level ``l`` (:meth:`GridCommandEnv.decode`; ``L = 1`` by default);
    the last, ``M * L`` (:attr:`GridCommandEnv.defer_action`), defers it: the task is handed
    over again ``defer_s`` later, interleaved in time order with new arrivals (at equal times
    the deferred task goes first, it has waited longer [ours]). Its response, wait and
    deadline still count from its first arrival (:meth:`ilets.simulator.cloud.Cloud.assign`'s
    ``release``). With admission-cap levels (``cap_levels``, ``K`` of them; none by default)
    the ``K`` actions after defer (from :attr:`GridCommandEnv.first_cap_action`) set the
    admission cap to a level: the same task is handed over again at the same time, at no
    cost, with the servers the cap excludes masked from then on until the policy sets
    another (one change per task; the cap in force is one more observation number). With
    the sleep head (``sleep_actions``) the ``M`` actions after those (from
    :attr:`GridCommandEnv.first_sleep_action`) put a server to sleep during a down event,
    allowed where it is awake with nothing to run: the same task is handed over again, and
    the power manager puts no server to sleep by itself (:mod:`ilets.gridcommand.sleep`).
Masks, :meth:`GridCommandEnv.action_masks` (sb3-contrib convention) and ``info["action_mask"]``
    one array, two ways to read it: the method for sb3-contrib, the info entry (Gymnasium's
    convention) on :meth:`~GridCommandEnv.reset` and on every step but the one that ends the
    episode (no decision follows it), for code that sees the env through wrappers; a made
    env (``gym.make(GRID_ENV_ID)``) also answers ``action_masks()`` without Gymnasium 0.29's
    deprecation warning (:class:`ilets.ActionMaskWrapper`). A server is masked where its
    capacity cannot hold the task, or, while an admission cap is in force (``cap_fraction <
    1`` during a down event, or the level the policy set), where its power with the task
    counted would exceed that share of its maximum; defer is masked once the task has used
    ``max_deferrals`` (never for a batch task, ``batch_share``: :mod:`ilets.gridcommand.batch`)
    or when even the fastest server could not meet the deadline after the deferral. If
    everything would be masked, the capacity-feasible servers stay allowed (a mask is never
    all False). A masked action taken anyway is redirected (to the
    least-loaded allowed server, else to defer) and costs ``reward.infeasible_penalty``,
    with ``info["infeasible"] = True``, as in the plain environment.
Reward, ``-cost``
    placing: :func:`ilets.simulator.objective.cost_of` (the plain scenario's one cost, with
    the run's ``reward.deadline_penalty`` for a task that will miss its deadline) plus a
    tracking cost; deferring: ``defer_penalty`` [ours]. The tracking cost (``tracking``):

    * ``slot`` (the default): the change the assignment makes to the scored slots' error of
      committed slot-average power against the target, plus a smoothness term
      (:class:`ilets.gridcommand.tracking.SlotTracker`). The task's start and finish are
      fixed at assignment, so this is exact, and over an episode the tracking costs add up
      to the slot error the metrics score (:mod:`ilets.gridcommand.metrics`), less the
      empty fleet's. Deferring adds nothing to it: the task pays when it is placed.
    * ``instant`` (the first design): :func:`ilets.simulator.objective.tracking_term`,
      ``track_weight * |P_after - target(now)| / max_power`` while an event is scored,
      ``P_after`` the fleet power now with the task counted (deferring: the power now). It
      compares the power *now* with a target built on a slot-average baseline, so even at
      depth 0 it is not zero (the power's ripple within a slot, which no policy removes).
Observation
    the run's layout (``paper`` or ``rich``) followed by :data:`ilets.gridcommand.features.GRID_BLOCKS`.
Flexibility envelope (``envelope``, :mod:`ilets.gridcommand.envelope`)
    before the episode, two runs with the levers pushed to an extreme inside the events find
    how far each event can move the power; ``clip`` (the default) sizes each command to it,
    ``record`` keeps the commands and records whether each fits (:attr:`GridCommandEnv.envelope`);
    ``envelope_redraws`` moves an event with no reach to a new start before dropping it.
Baseline and target
    the counterfactual run (the plain scenario with ``reference``, by default
    Earliest-Finish, :func:`ilets.gridcommand.power.counterfactual`) gives the slot-average
    baseline; the schedule turns it into the target (:meth:`CommandSchedule.target`).

With no command, or a command of depth 0, and the reference policy's actions, the episode is
the plain environment's run bit for bit (same starts, finishes, servers and summary).

No configuration (``GridCommandEnv()``, ``gym.make(GRID_ENV_ID)`` with no arguments)
    the shipped ``gridcommand-quick`` profile (:data:`DEFAULT_PROFILE`): the synthetic
    workload at scale 0.02, its online segment (5,187 tasks in the 30-s window 30-60 s), 50
    servers, the shallow-long regime (with the run seed 0: one down event, about 3 s long),
    0.5-s slots; it builds in one or two CPU seconds (the counterfactual and the envelope's
    two extreme runs included). ``GridCommandConfig()`` itself is the paper's full window
    (259,368 tasks; its counterfactual alone took ~17 s to build, and the envelope runs the
    episode twice more): pass it to get that episode.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from ilets.agents.observation import StateSpec, layout_high, write_blocks
from ilets.agents.policies import LeastLoaded, make_heuristic
from ilets.agents.scheduling_env import SchedulingEnv
from ilets.gridcommand.command import CommandSchedule, GridCommand
from ilets.gridcommand.config import GridCommandConfig, check_cap, load_gridcommand_config
from ilets.gridcommand.envelope import EventReach, sized_schedule
from ilets.gridcommand.observation import during_event, observation_layout
from ilets.gridcommand.power import Counterfactual, counterfactual, power_profile
from ilets.gridcommand.queues import VirtualQueues
from ilets.gridcommand.batch import batch_mask, batch_slack_s, with_batch
from ilets.gridcommand.sleep import SleepLedger
from ilets.gridcommand.slot_meter import SlotMeter
from ilets.gridcommand.tracking import SlotTracker
from ilets.simulator.cloud import Cloud, Fleet, make_fleet, meets_deadline
from ilets.simulator.objective import cost_of, tracking_term
from ilets.workloads.workload import TaskTable, load_workload

from ilets import GRID_ENV_ID

__all__ = ["DEFAULT_PROFILE", "GRID_ENV_ID", "GridCommandEnv", "register"]

#: The shipped profile an environment made without a configuration runs (module docstring).
DEFAULT_PROFILE = "gridcommand-quick"


class GridCommandEnv(SchedulingEnv):
    """Online task scheduling under a grid operator's power command (module docstring).

    Args:
        config: the scenario configuration; None (the default, and ``gym.make(GRID_ENV_ID)``
            with no arguments): the small :data:`DEFAULT_PROFILE` episode (module docstring),
            not ``GridCommandConfig()``, which is the paper's full window.
        tasks: use these tasks instead of the configured workload segment.
        fleet: use this fleet instead of ``make_fleet(config.run.fleet)``.
        window: ``(start, end)`` of the scored window (s); default: the segment's window
            (the online half of the workload), or the span of ``tasks`` when they are given.
        schedule: use these commands instead of the configured regime/commands.
        sleep_gated: with the sleep lever, put servers to sleep only as far as the power is
            above the target (the default); False: every server that times out sleeps, the
            lever's whole reach (the flexibility envelope's extreme runs).
        envelope_cache: a folder where the envelope's reach of each episode is kept and read
            again (:func:`ilets.gridcommand.envelope.cached_reach`): the same episode, the
            same numbers, without its two extreme runs; None (the default): computed.
    """

    def __init__(self, config: GridCommandConfig | None = None, tasks: TaskTable | None = None,
                 fleet: Fleet | None = None, window: tuple[float, float] | None = None,
                 schedule: CommandSchedule | None = None, sleep_gated: bool = True,
                 envelope_cache: str | Path | None = None) -> None:
        super().__init__()
        self.envelope_cache = envelope_cache
        #: sleep only as far as the power is above the target (see ``sleep_gated`` above)
        self.sleep_gated = bool(sleep_gated)
        self.config = (config if config is not None else load_gridcommand_config(DEFAULT_PROFILE)).validate()
        run = self.config.run
        self.fleet = fleet if fleet is not None else make_fleet(run.fleet, run.fleet.seed)
        check_cap(self.config.cap_fraction, self.fleet)
        self._fixed_tasks, self._fixed_window, self._fixed_schedule = tasks, window, schedule
        m = len(self.fleet)
        #: the DVFS lever: clock speeds a task may run at, the nominal 1.0 first, and each one's
        #: power factor (speed ** dvfs_exponent) [ours]; one level: the plain placement
        self.speeds = tuple(float(f) for f in self.config.speed_levels)
        self.power_factors = tuple(f ** self.config.dvfs_exponent for f in self.speeds)
        self.defer_action = m * len(self.speeds)
        #: the admission caps the policy may set (``cap_levels``) [ours]; action
        #: ``first_cap_action + k`` sets ``cap_levels[k]`` (none without the levels)
        self.cap_levels = tuple(float(c) for c in self.config.cap_levels)
        for c in self.cap_levels:
            check_cap(c, self.fleet, key="cap_levels")
        self.first_cap_action = self.defer_action + 1
        #: the sleep head (``sleep_actions``) [ours]: action ``first_sleep_action + s`` puts
        #: server ``s`` to sleep (none without it)
        self.sleep_actions = bool(self.config.sleep_actions)
        self.first_sleep_action = self.first_cap_action + len(self.cap_levels)
        self._cap_set, self._cap_changed, self._cap_changes = 1.0, False, 0
        self.state = StateSpec.of(run)
        #: the drift-plus-penalty queues, kept along the episode when shown (``observe_queues``)
        self.queues = VirtualQueues()
        #: the current slot's projected average power, kept along the episode when shown
        #: (``observe_slot``, :class:`ilets.gridcommand.features.SlotError`)
        self.slot_meter = SlotMeter()
        self._slot_projection = 0.0
        #: the run's layout, then the command's blocks (which read this env); with a table
        #: layout, where each row sits (:func:`ilets.gridcommand.observation.observation_layout`)
        self.blocks, self.table_layout = observation_layout(self)
        high = layout_high(self.blocks, self.fleet, self.state)
        self.observation_space = spaces.Box(low=np.zeros_like(high), high=high, dtype=np.float32)
        self._n_actions = self.first_sleep_action + (m if self.sleep_actions else 0)
        self.action_space = spaces.Discrete(self._n_actions)
        self._obs = np.zeros(len(high), np.float32)
        self._redirect = LeastLoaded()
        self._max_mips = float(self.fleet.mips.max())
        self.max_power_w = self.fleet.max_power  # a property that sums arrays: read it once
        self._server_max_w = self.fleet.p_idle + self.fleet.p_act
        self.deadline_top = float(run.workload.deadline_s[1])
        self._seed = run.seed
        self._prepare(run.seed)

    # --- episode data: tasks, window, commands, baseline ---------------------------------
    def _prepare(self, seed: int) -> None:
        """Tasks, window, schedule and counterfactual baseline for workload seed ``seed``."""
        cfg = self.config
        run = dataclasses.replace(cfg.run, seed=seed)
        if self._fixed_tasks is not None:
            tasks = self._fixed_tasks
            if len(tasks) == 0:
                raise ValueError("tasks: the task table is empty")
            a0, a1 = float(tasks.arrival[0]), float(tasks.arrival[-1])
            window = self._fixed_window or (a0, max(a1, a0 + cfg.slot_s))
        else:
            workload = load_workload(cfg.workload_of(run), seed)
            tasks = workload.online if cfg.segment == "online" else workload.offline
            split = workload.split_time
            window = self._fixed_window or ((split, 2 * split) if cfg.segment == "online" else (0.0, split))
        if len(tasks) == 0:
            raise ValueError(f"the workload's {cfg.segment} segment has no tasks")
        w0, w1 = float(window[0]), float(window[1])
        if not w0 < w1:
            raise ValueError(f"window: expected start < end, got {window}")
        #: which tasks are batch work (:mod:`ilets.gridcommand.batch`); all False without the class.
        #: Drawn from the seed alone, so a table already marked (the envelope's) is marked alike
        self.batch = batch_mask(len(tasks), cfg.batch_share, seed)
        tasks = with_batch(tasks, self.batch, batch_slack_s(cfg.batch_slack_h, w1 - w0))
        self.tasks, self.window = tasks, (w0, w1)
        if self._fixed_schedule is not None:
            self.schedule = self._fixed_schedule.validate(w0, w1)
        else:
            self.schedule = dataclasses.replace(cfg, run=run).schedule(w0, w1)
        cfg.check_slots(w0, w1)
        # slots from the window start to past the baseline's last finish and the window end
        first = min(w0, float(tasks.arrival[0]))
        probe = counterfactual(run, tasks, self.fleet, [first, first + 1.0], cfg.reference)  # memoised run
        end = max(w1, float(tasks.arrival[0]) + probe.summary["makespan_s"], float(tasks.arrival[-1]))
        n = max(1, math.ceil((end - w0) / cfg.slot_s - 1e-9))
        edges = w0 + cfg.slot_s * np.arange(n + 1)
        if first < w0:  # tasks before the window: one extra slot to hold them
            edges = np.concatenate([[first], edges])
        self.slot_edges = edges
        self.baseline: Counterfactual = counterfactual(run, tasks, self.fleet, edges, cfg.reference)
        #: what the flexibility envelope found per event (empty with envelope: off)
        self.envelope: list[EventReach] = []
        if cfg.envelope != "off" and len(self.schedule):
            episode = dataclasses.replace(cfg, run=run)
            bare = dataclasses.replace(episode, envelope="off", envelope_deadlines=False, envelope_redraws=0,
                                       sleep_actions=False)

            def make_env(schedule: CommandSchedule) -> GridCommandEnv:
                env = GridCommandEnv(bare, tasks=tasks, fleet=self.fleet, window=self.window, schedule=schedule,
                                     sleep_gated=False)
                env.observing = False  # the extremes and the reference read the env, not the observation
                return env

            self.schedule, self.envelope = sized_schedule(
                episode, self.schedule, make_env, lambda: make_heuristic(cfg.reference, seed=seed, reward=run.reward),
                tasks, self.fleet, self.window, edges, self.baseline.power_w, self.envelope_cache)
        #: the sleep lever's ledger (:mod:`ilets.gridcommand.sleep`); None without the lever
        self.sleep: SleepLedger | None = None
        if cfg.sleeps:
            downs = [(c.start_s, c.end_s) for c in self.schedule if c.direction == "down"]
            self.sleep = SleepLedger(self.fleet.p_idle * (1.0 - cfg.sleep_fraction), downs, cfg.sleep_after_s,
                                     cfg.wake_s)
        self.tracker: SlotTracker | None = None
        if cfg.tracking == "slot":
            rate = len(tasks) / (w1 - w0)
            self.tracker = SlotTracker(edges, self.schedule, self.baseline.power_w, float(self.fleet.p_idle.sum()),
                                       self.max_power_w, rate, cfg.track_weight, cfg.smooth_weight)

    # --- what policies and observation blocks read ---------------------------------------
    @property
    def now(self) -> float:
        """The simulated clock (s)."""
        assert self.cloud is not None, "reset() first"
        return self.cloud.now

    @property
    def deferrals_of_current(self) -> int:
        """How often the current task has been deferred already."""
        return self._current_count

    @property
    def current_release(self) -> float:
        """When the current task was handed over (its arrival, or its latest re-arrival)."""
        return self._current_release

    def baseline_at(self, t):
        """Baseline power (W) at ``t`` from the counterfactual slot profile (vectorised; a
        float for a scalar ``t``)."""
        if np.ndim(t) == 0:
            return self.baseline.baseline_scalar(float(t))
        return self.baseline.baseline_at(t)

    def target_at(self, t):
        """The operator's power target (W) at ``t``; the baseline outside events (vectorised;
        a float for a scalar ``t``)."""
        if np.ndim(t) == 0:
            t = float(t)
            b = self.baseline.baseline_scalar(t)
            c = self.schedule.active(t)
            return b if c is None else c.target_scalar(t, b)
        tt = np.asarray(t, dtype=float)
        return self.schedule.target(tt, self.baseline.baseline_at(tt))

    def scored_target(self, t: float) -> float:
        """The target at ``t`` while an event is scored, else NaN (tracking not scored)."""
        return self.target_at(t) if self.schedule.active(float(t)) is not None else math.nan

    @property
    def active_command(self) -> GridCommand | None:
        """The event scored now, or None."""
        return self._active_cmd

    @property
    def seen_command(self) -> GridCommand | None:
        """The event an observer sees now: the active one, else the next announced one, or None."""
        return self._seen_cmd

    def during_event(self, obs: np.ndarray) -> np.ndarray:
        """Whether each observation (a row of ``obs``, or one observation) was made while an
        event was active, read from the observation itself: its command block shows a down or
        up event (:class:`ilets.gridcommand.features.CommandShape`) whose start has come and
        whose end has not (:class:`~ilets.gridcommand.features.EventTiming`)."""
        return during_event(self.blocks, len(self.fleet), obs)

    @property
    def baseline_now(self) -> float:
        """Baseline power now (W)."""
        return self._baseline_now

    @property
    def target_now(self) -> float:
        """Target power now (W; the baseline outside events)."""
        return self._target_now

    @property
    def slot_projection(self) -> float:
        """The current slot's projected average power (W) at this decision
        (:class:`ilets.gridcommand.slot_meter.SlotMeter`), kept with ``observe_slot`` (else 0)."""
        return self._slot_projection

    @property
    def admission_cap(self) -> float:
        """The admission cap the policy has set (``cap_levels``), a share of each server's
        maximum power; 1: none."""
        return self._cap_set

    @property
    def power_now(self) -> float:
        """The fleet's power now (W): the cloud's, less what sleeping servers save."""
        assert self.cloud is not None, "reset() first"
        return self.cloud.power if self.sleep is None else self.cloud.power - self.sleep.saving_now()

    def realised_profile(self, edges=None) -> np.ndarray:
        """Slot-average power (W) of this episode's assigned tasks over ``edges`` (default
        :attr:`slot_edges`), exact: the past as it was, future slots as committed so far
        (tasks not yet handed over are not in it), less the sleeps' saving so far."""
        assert self.cloud is not None, "reset() first"
        edges = self.slot_edges if edges is None else edges
        power = power_profile(self.cloud, self.fleet, edges, self.tasks.cpu)
        return power if self.sleep is None else power - self.sleep.profile(edges)

    def observe(self) -> np.ndarray:
        """The observation for the current task (a fresh array)."""
        assert self.cloud is not None, "reset() first"
        return write_blocks(self.blocks, self.cloud, self._current, self.state, self._obs).copy()

    # --- gymnasium API -----------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start the episode again; ``seed`` redraws the workload and the generated commands
        (unless tasks or a schedule were given)."""
        super().reset(seed=seed)
        if seed is not None and seed != self._seed:
            self._seed = seed
            self._prepare(seed)  # with given tasks only the generated commands change
        self._next_new = 0
        self._pending: list[tuple[float, int, int, int]] = []  # (release, seq, task, deferrals)
        self._pending_seq = 0
        self._tracking_sum = 0.0
        self._deferrals = 0
        self.deferral_log: list[tuple[float, int]] = []  #: (time, task) of every deferral
        self.tracking_ema = 0.0
        self.queues.reset()
        self.slot_meter.reset()
        self._sleep_charge = 0.0  # tracking cost of the sleep since the last decision
        self._cap_set, self._cap_changed, self._cap_changes = 1.0, False, 0
        if self.sleep is not None:
            self.sleep.reset()
        if self.tracker is not None:
            self.tracker.reset()
            # the episode's tracking_cost is then the final slot cost (the rewards telescope to
            # it less this constant, the empty fleet's)
            self._tracking_sum = sum(self.tracker.cost())
        return self._start_episode()

    def _next_decision(self) -> None:
        """Hand over the next task: the earlier of the next arrival and the next re-arrival.
        Allowed actions (:meth:`_masks`): one per placement, defer, one per cap level, one per
        server to put to sleep; never all False."""
        cloud = self.cloud
        assert cloud is not None, "reset() first"
        pend = self._pending
        n = len(self.tasks)
        if pend and (self._next_new >= n or pend[0][0] <= self.tasks.arrival[self._next_new]):
            release, _, j, count = heapq.heappop(pend)
        else:
            j, count = self._next_new, 0
            release = float(self.tasks.arrival[j])
            self._next_new += 1
        self._current, self._current_count, self._current_release = self._task(j), count, release
        self._cap_changed = False
        cloud.advance(release)
        # what every block, mask and cost of this decision reads, computed once
        now = cloud.now
        self._active_cmd = self.schedule.active(now)
        self._seen_cmd = self._active_cmd if self._active_cmd is not None else self.schedule.upcoming(now)
        self._baseline_now = self.baseline.baseline_scalar(now)
        self._target_now = (self._baseline_now if self._active_cmd is None
                            else self._active_cmd.target_scalar(now, self._baseline_now))
        if self.sleep is not None:  # before the masks and the observation: they read the holds
            self._move_sleep(now)
        self._mask = self._masks(cloud)
        if self.config.observe_queues:  # the step the Lyapunov expert takes at this decision
            self.queues.decide_under(self._active_cmd, now, self.power_now, self._target_now,
                                     self._baseline_now, self.max_power_w)
        if self.config.observe_slot:  # the meter's sample at this decision, as the thermostat's
            self._slot_projection = self.slot_meter.projected(self.slot_edges, now, self.power_now)

    def _move_sleep(self, t: float) -> None:
        """Move the sleep ledger to ``t``, with the power above the target at this decision as
        the excess that sleep may cut (:meth:`SleepLedger.advance`): charge the slot tracker
        with what the sleep saved since the last move (paid with the next step's reward) and
        keep every sleeping or waking server's start barrier at its wake-up (:meth:`Cloud.hold`)."""
        ledger, cloud = self.sleep, self.cloud
        assert ledger is not None and cloud is not None
        if self.sleep_actions:
            excess = -math.inf  # the policy puts servers to sleep, the power manager none
        else:
            excess = self.power_now - self._target_now if self.sleep_gated else math.inf
        for s, a, b in ledger.advance(t, cloud.drain, excess):
            if self.tracker is not None:
                self._sleep_charge += sum(self.tracker.add(a, b, -float(ledger.saving_w[s])))
        now = cloud.now
        for s in np.flatnonzero(ledger.asleep).tolist():
            cloud.hold(s, now + ledger.wake_s)
        for s in np.flatnonzero(ledger.ready > now).tolist():
            cloud.hold(s, float(ledger.ready[s]))

    def _episode_over(self) -> bool:
        return self._next_new >= len(self.tasks) and not self._pending

    def _final_metrics(self) -> dict[str, float]:
        return {"deferrals": self._deferrals, "decisions": self.t, "tracking_cost": self._tracking_sum,
                **self.sleep_summary(), **self.cap_summary()}

    def cap_summary(self) -> dict[str, float]:
        """With the admission cap as an action (``cap_levels``): how many times the policy has
        changed the cap so far; empty without it."""
        return {"cap_changes": self._cap_changes} if self.cap_levels else {}

    def sleep_summary(self) -> dict[str, float]:
        """With the sleep lever: the sleeps so far, the joules they saved and the fleet's energy
        (kWh) less that saving (the cloud counts every server's idle power); empty without it."""
        if self.sleep is None or self.cloud is None:
            return {}
        saved = self.sleep.saved_j()
        # as the cloud's summary converts its energy, less the saving converted alike
        return {"sleeps": len(self.sleep.log), "sleep_saved_j": saved,
                "energy_kwh": self.cloud.energy / 3.6e6 - saved / 3.6e6}

    def _cap_now(self) -> float:
        """The admission cap in force at this decision, a share of each server's maximum power
        (1: none): the policy's (``cap_levels``), else ``cap_fraction`` during down events."""
        if self.cap_levels:
            return self._cap_set
        c = self._active_cmd
        return self.config.cap_fraction if c is not None and c.direction == "down" else 1.0

    def _masks(self, cloud: Cloud) -> np.ndarray:
        task, cfg = self._current, self.config
        feasible = cloud.feasible(task.cpu)
        servers = feasible
        cap = self._cap_now()
        if cap < 1:
            p_with = cloud.fleet.p_idle + cloud.act_per_cpu * (cloud.used + task.cpu)
            servers = feasible & (p_with <= cap * self._server_max_w)
        earliest = cloud.now + cfg.defer_s + task.length / self._max_mips - task.arrival
        # max_deferrals binds interactive tasks; batch work waits while it can meet its deadline
        may = self._current_count < cfg.max_deferrals or bool(self.batch[task.index])
        defer_ok = may and bool(meets_deadline(earliest, task.deadline))
        if not servers.any() and not defer_ok:
            servers = feasible  # never an all-False mask: placing stays possible
        mask = np.empty(self._n_actions, dtype=bool)  # a new array per decision
        mask[:self.defer_action] = servers if len(self.speeds) == 1 else np.tile(servers, len(self.speeds))
        mask[self.defer_action] = defer_ok
        for k, level in enumerate(self.cap_levels):  # one change per task, and not to the cap in force
            mask[self.first_cap_action + k] = not self._cap_changed and level != self._cap_set
        if self.sleep_actions:
            assert self.sleep is not None
            mask[self.first_sleep_action:] = self.sleep.can_sleep(cloud.now, cloud.drain)
        return mask

    def decode(self, action: int) -> tuple[int, int]:
        """``(server, speed level)`` of a placing action (``level * M + server``; level 0 is the
        nominal speed, so ``0..M-1`` place as in the plain scenario)."""
        m = len(self.fleet)
        return action % m, action // m

    def step(self, action):
        task, cloud, cfg, reward = self._current, self.cloud, self.config, self.config.run.reward
        a = int(action)
        if not 0 <= a < self._n_actions:
            raise ValueError(f"action: expected 0..{self._n_actions - 1}, got {action!r}")
        infeasible = not self._mask[a]
        if infeasible:
            self._infeasible += 1
            servers = self._mask[:len(self.fleet)]  # redirected at the nominal speed
            a = self._redirect.act(cloud, task, servers) if servers.any() else self.defer_action
        if a >= self.first_sleep_action:
            return self._put_to_sleep(a - self.first_sleep_action)
        if a >= self.first_cap_action:
            return self._set_cap(self.cap_levels[a - self.first_cap_action])
        scored = self._active_cmd is not None
        target = self._target_now if scored else math.nan
        info = {"task": task.index, "time": cloud.now, "infeasible": infeasible, "deferred": a == self.defer_action,
                "target": target}
        slot = self.tracker is not None
        sleep_track, self._sleep_charge = self._sleep_charge, 0.0
        if a == self.defer_action:
            p_after = self.power_now
            # slot tracking: nothing is committed, the deferred task pays when it is placed
            track = tracking_term(p_after, target, self.max_power_w, cfg.track_weight) if scored and not slot else 0.0
            cost = cfg.defer_penalty + track
            self._pending_seq += 1
            heapq.heappush(self._pending, (cloud.now + cfg.defer_s, self._pending_seq, task.index,
                                           self._current_count + 1))
            self._deferrals += 1
            self.deferral_log.append((cloud.now, task.index))
            info.update(server=-1)
        else:
            s, level = self.decode(a)
            speed, factor = self.speeds[level], self.power_factors[level]
            if self.sleep is not None:  # a sleeping server wakes (its hold is already now + wake_s)
                self.sleep.wake(s, cloud.now)
            # the cost reads the power before the task is added (cost_of adds the task's share)
            cost = cost_of(cloud, task, s, cloud.earliest_start(s, task.cpu), reward, speed, factor)
            watts = cloud.act_per_cpu[s] * task.cpu * factor  # as Cloud.assign computes it
            p_after = self.power_now + watts
            track = 0.0
            if scored and not slot:
                track = tracking_term(p_after, target, self.max_power_w, cfg.track_weight)
            release = self._current_release if self._current_count else None
            start, finish = cloud.assign(task.index, task.arrival, task.cpu, task.length, task.deadline, s,
                                         release=release, speed=speed, power_factor=factor)
            if self.tracker is not None:
                track = sum(self.tracker.add(start, finish, watts))
            cost += track
            response = finish - task.arrival
            info.update(server=s, speed=speed, start=start, finish=finish, response=response,
                        success=bool(meets_deadline(response, task.deadline)))
            if cfg.observe_queues:
                self.queues.update_deadline(not info["success"])
        if self.sleep is not None:
            if self._episode_over():  # no decision follows: the sleeps to the last slot's end
                self._move_sleep(max(float(self.slot_edges[-1]), cloud.now))
                sleep_track, self._sleep_charge = sleep_track + self._sleep_charge, 0.0
            track += sleep_track
            cost += sleep_track
        cost += reward.infeasible_penalty if infeasible else 0.0
        err = abs(p_after - target) / self.max_power_w if scored else 0.0
        self.tracking_ema += cfg.tracking_alpha * (err - self.tracking_ema)
        self._tracking_sum += track
        info.update(cost=cost, tracking=track, p_after=p_after)
        return self._end_step(cost, info)

    def _set_cap(self, level: float):
        """The cap-setting action: the cap in force becomes ``level``, then the same task again
        (:meth:`_again`); the cap pays through the placements it forces."""
        self._cap_set, self._cap_changed = level, True
        self._cap_changes += 1
        return self._again(cap=level)

    def _put_to_sleep(self, s: int):
        """The sleep head's action: server ``s`` falls asleep now, its start held at its
        wake-up, then the same task again (:meth:`_again`); the saving is charged to the slot
        tracker as the sleep goes on and paid with the next placements' rewards."""
        cloud, ledger = self.cloud, self.sleep
        assert cloud is not None and ledger is not None
        ledger.fall_asleep(s, cloud.now)
        cloud.hold(s, cloud.now + ledger.wake_s)
        return self._again(slept=s)

    def _again(self, **done: Any):
        """End a step whose action placed nothing (a cap set, a server put to sleep): the same
        task is handed over again at the same time with its masks renewed, at no cost;
        ``done`` (what the action did) goes into the step's info."""
        cloud = self.cloud
        assert cloud is not None
        self._mask = self._masks(cloud)
        info = {"task": self._current.index, "time": cloud.now, "infeasible": False, "deferred": False,
                "target": self._target_now if self._active_cmd is not None else math.nan, "cost": 0.0,
                "tracking": 0.0, **done}
        return self._end_step(0.0, info, again=True)


def register() -> None:
    """Register :data:`GRID_ENV_ID` with Gymnasium (idempotent; ``import ilets`` does it)."""
    from ilets import register_env

    register_env()
