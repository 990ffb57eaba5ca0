"""The drift-plus-penalty virtual queues: one recursion for the Lyapunov expert and the env.

The ``lyapunov`` expert (:class:`ilets.gridcommand.experts.lyapunov.LyapunovExpert`) scales
its choice by two queues that no observation showed: a learner cloning it saw an exponential
average of the tracking error instead, and could not tell a fresh event from one that had
been missed for a minute. With ``observe_queues`` (:class:`ilets.gridcommand.config.GridCommandConfig`)
the environment keeps the same two queues along the episode, whatever policy acts, and shows
them as an observation block (:class:`ilets.gridcommand.features.QueueState`): the expert's
privileged state, declared and made observable [ours].

* ``q_track`` (fleet-full-power-seconds): during an event it grows by the power outside the
  band in the wrong direction (above ``target + band`` for a down event, below
  ``target - band`` for an up event) times the time since the last decision, over ``p_ref``,
  and shrinks by the margin while inside; it is reset when no event is active.
* ``q_deadline`` (tasks): grows by 1 per placed task that misses its deadline and shrinks by
  ``miss_budget`` per placed task (the long-run miss rate it tolerates).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ilets.gridcommand.command import GridCommand

#: The weight of the tracking debt in the Lyapunov expert's score (its default, chosen by the
#: scenario's pilot), and the debt's scale where the environment shows it [ours]
TRACK_GAIN = 200.0
#: The long-run share of missed deadlines ``q_deadline`` tolerates: the Lyapunov expert's
#: default, and the environment's queue's [ours]
MISS_BUDGET = 0.02


@dataclasses.dataclass
class VirtualQueues:
    """The two queues and the time of the last decision (see the module docstring)."""

    miss_budget: float = MISS_BUDGET
    q_track: float = 0.0
    q_deadline: float = 0.0
    last_t: float | None = None

    def reset(self) -> None:
        """Empty queues, no decision yet (the start of an episode)."""
        self.q_track, self.q_deadline, self.last_t = 0.0, 0.0, None

    def update_track(self, power: float, target: float, band: float, direction: float, dt: float,
                     p_ref: float) -> None:
        """One tracking-queue step; ``direction`` +1 (down event), -1 (up event), 0 (no event)."""
        if direction == 0:
            self.q_track = 0.0
            return
        error = direction * (power - target) - band  # > 0: outside the band, wrong side
        self.q_track = max(0.0, self.q_track + error * dt / p_ref)

    def decide(self, now: float, power: float, target: float, band: float, direction: float, p_ref: float) -> None:
        """The tracking step at a decision at ``now`` (the time since the previous decision;
        none before the first), then remember ``now``."""
        dt = 0.0 if self.last_t is None else max(0.0, now - self.last_t)
        self.update_track(power, target, band, direction, dt, p_ref)
        self.last_t = now

    def decide_under(self, command: GridCommand | None, now: float, power: float, target: float, baseline: float,
                     p_ref: float) -> None:
        """:meth:`decide` at a decision under ``command`` (the event scored now, or None): its
        band around ``target`` and its direction (+1 down, -1 up); no event resets the debt."""
        if command is None:
            self.decide(now, 0.0, 0.0, 0.0, 0.0, 1.0)
        else:
            self.decide(now, power, target, float(command.band_w(baseline)),
                        1.0 if command.direction == "down" else -1.0, p_ref)

    def update_deadline(self, missed: bool) -> None:
        """One deadline-queue step after a placement."""
        self.q_deadline = max(0.0, self.q_deadline + float(missed) - self.miss_budget)
