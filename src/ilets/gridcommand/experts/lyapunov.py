"""The ``lyapunov`` expert: drift-plus-penalty with two virtual queues, one vectorised score per task, no solver."""

from __future__ import annotations

from typing import Any

import numpy as np

from ilets.gridcommand.experts.reading import COMMON_READS, _cfg, _command, _Expert, _mask
from ilets.gridcommand.queues import MISS_BUDGET, TRACK_GAIN, VirtualQueues
from ilets.simulator.cloud import meets_deadline


class LyapunovExpert(_Expert):
    """Drift-plus-penalty with two virtual queues; one vectorised score per task, no solver.

    Queues [ours]: ``q_track`` (the tracking debt) and ``q_deadline`` (missed deadlines over
    the budget), :class:`ilets.gridcommand.queues.VirtualQueues`, the recursion the
    environment also keeps when it shows them (``observe_queues``).

    Score of an action (the task on server ``i``, or deferring it)::

        V * (energy_i / p_ref + wait_weight * wait_i)
        + track_gain * q_track * dir * (energy the task adds in the next ``defer_s`` s) / p_ref
        + q_deadline * miss_i

    ``track_gain`` [ours, 200]: one task moves the fleet's power by a few thousandths of
    ``p_ref`` while the debt grows by the whole fleet's error, so with a gain of 1 the
    queue needs seconds of error before it outweighs the energy term, longer than the
    short events last (and in an up event the energy term pulls the wrong way). The gain
    was chosen by the scenario's pilot (:mod:`ilets.gridcommand.pilot`: the lowest tracking
    error of 50, 100, 200, 400 and 800 on pilot seeds 100-101 that no grid evaluates,
    ``shipped/gridcommand-pilot``), with the commands sized to the flexibility envelope and
    the reward on slot averages; 200 lies inside the range, so it was not widened. (Before
    the envelope, with commands the fleet often could not reach, the same rule chose 800.)

    ``dir`` is +1 during a down event (added power is debt), -1 during an up event, 0
    otherwise. Deferring adds nothing in the next ``defer_s`` s and is scored as the best
    placement ``defer_s`` later (today's queues: its longer wait, and ``q_deadline`` if it
    would then miss): without tracking debt it never beats placing now, and with debt it
    wins once ``track_gain * q_track`` times the task's power over the next ``defer_s``
    outweighs the extra wait or the miss risk.
    """

    name = "lyapunov"
    reads = COMMON_READS + ("decode", "speeds", "power_factors")

    def __init__(self, v: float = 1.0, miss_budget: float = MISS_BUDGET, wait_weight: float = 1e-3,
                 track_gain: float = TRACK_GAIN) -> None:
        for key, value in (("v", v), ("miss_budget", miss_budget), ("wait_weight", wait_weight),
                           ("track_gain", track_gain)):
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{key}: expected a finite number >= 0, got {value}")
        self.v, self.miss_budget, self.wait_weight = v, miss_budget, wait_weight
        self.track_gain = track_gain
        self.queues = VirtualQueues(miss_budget)
        #: the scores behind the last choice (:meth:`scores`; None before the first)
        self.last_scores: np.ndarray | None = None

    def reset(self, seed: int | None = None) -> None:
        self.queues.reset()

    @property
    def q_track(self) -> float:
        """The tracking debt now (fleet-full-power-seconds)."""
        return self.queues.q_track

    @property
    def q_deadline(self) -> float:
        """The deadline queue now (tasks)."""
        return self.queues.q_deadline

    def update_track(self, power: float, target: float, band: float, direction: float, dt: float, p_ref: float) -> None:
        """One tracking-queue step (:meth:`VirtualQueues.update_track`); ``direction`` 0: no event."""
        self.queues.update_track(power, target, band, direction, dt, p_ref)

    def update_deadline(self, missed: bool) -> None:
        """One deadline-queue step after a placement."""
        self.queues.update_deadline(missed)

    def scores(self, env: Any) -> np.ndarray:
        """The score of every action (length ``M * L + 1``, placements level by level as the
        env lays them out, then defer; inf where masked). With DVFS levels a placement at speed
        f runs ``1/f`` as long and draws its power factor times the power (``env.speeds``,
        ``env.power_factors``); one level (the default) scores the plain placements."""
        cloud, task, now = env.cloud, env.current_task, float(env.now)
        servers, defer_ok = _mask(env)
        p_ref = float(cloud.fleet.max_power)
        cmd = _command(env, now)
        direction = 0.0 if cmd is None else (1.0 if cmd.direction == "down" else -1.0)
        defer_s = float(_cfg(env, "defer_s"))
        starts = cloud.earliest_starts(task.cpu)
        nominal_exec = task.length / cloud.fleet.mips
        nominal_watts = cloud.act_per_cpu * task.cpu
        levels = tuple(zip(getattr(env, "speeds", (1.0,)), getattr(env, "power_factors", (1.0,))))
        out = np.full(len(servers) * len(levels) + 1, np.inf)
        for level, (speed, factor) in enumerate(levels):
            exec_s, watts = nominal_exec / speed, nominal_watts * factor  # exact at the nominal 1.0
            energy = watts * exec_s
            soon = np.clip(np.minimum(starts + exec_s, now + defer_s) - starts, 0.0, None)
            miss = ~meets_deadline(starts + exec_s - task.arrival, task.deadline)
            score = (self.v * (energy / p_ref + self.wait_weight * (starts - task.arrival))
                     + self.track_gain * self.q_track * direction * watts * soon / p_ref + self.q_deadline * miss)
            out[level * len(servers):(level + 1) * len(servers)] = np.where(servers, score, np.inf)
        if defer_ok:
            # deferring = placing the best way defer_s later, at the nominal speed (today's
            # queues: its wait and miss then), adding no power meanwhile [ours]
            energy = nominal_watts * nominal_exec
            starts_later = cloud.earliest_starts(task.cpu, now + defer_s)
            miss_later = ~meets_deadline(starts_later + nominal_exec - task.arrival, task.deadline)
            placed_later = (self.v * (energy / p_ref + self.wait_weight * (starts_later - task.arrival))
                            + self.q_deadline * miss_later)
            pick = servers if servers.any() else np.ones(len(servers), bool)
            out[-1] = float(np.min(np.where(pick, placed_later, np.inf))) + 1e-12  # ties: place now
        return out

    def act(self, env: Any) -> int:
        now = float(env.now)
        cmd = _command(env, now)
        self.queues.decide_under(cmd, now, float(env.power_now), float(env.target_at(now)),
                                 float(env.baseline_at(now)), float(env.cloud.fleet.max_power))
        score = self.scores(env)
        self.last_scores = score  # what a probe weighs another policy's choice by (clone_transfer)
        a = int(np.argmin(score))  # ties: lowest index
        if a == int(env.defer_action):
            return a
        task = env.current_task
        s, level = env.decode(a) if hasattr(env, "decode") else (a, 0)
        speed = getattr(env, "speeds", (1.0,))[level]
        start = float(env.cloud.earliest_start(s, task.cpu))
        finish = start + task.length / (float(env.cloud.fleet.mips[s]) * speed)
        self.update_deadline(not bool(meets_deadline(finish - task.arrival, task.deadline)))
        return a
