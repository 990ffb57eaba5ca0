"""The reward's tracking cost on slot averages: what each assignment changes in the scored slots.

The scored metrics (:mod:`ilets.gridcommand.metrics`) compare the *slot-average* power of the
finished run with the slot's target. A per-decision term that compares the power *now* with
the target (``tracking: instant``, :func:`ilets.simulator.objective.tracking_term`) rewards
something else: the power's ripple within a slot, which no policy removes, and a moment's
level rather than the slot's. :class:`SlotTracker` makes the reward point at the metric
[ours]:

* A task's start and finish are fixed when it is assigned (FCFS), so the joules it adds to
  every slot are known then, exactly (:func:`ilets.gridcommand.power.interval_energy`'s
  overlap rule). The tracker keeps each scored slot's committed average ``P_k`` (the fleet's
  idle power plus the joules assigned so far over the slot's width), so the cost of an
  assignment is the change it makes to the slots' error, and the episode's tracking costs
  add up (telescoping) to the final error less the error of an empty fleet, a constant.
* Scored pairs are (event, slot) as in :func:`ilets.gridcommand.metrics.event_metrics`: the
  slots overlapping an event, each weighted by its overlap ``o`` (s), with the target at the
  overlap's midpoint given the slot's baseline. So the final tracking cost is
  ``track_weight * rate * sum_pairs o * |P_k - T| / max_power``, the metric's error-seconds
  scaled: ``rate`` (tasks per second of the window) makes a slot's error count once per task
  the slot holds on average, the scale of the per-decision term it replaces, so
  ``track_weight`` keeps its meaning beside the plain cost.
* Smoothness [ours]: ``smooth_weight * rate * slot_s * sum |e_i - e_(i-1)| / max_power`` over
  consecutive pairs of one event, ``e = P - T``: a following that swings around the target
  from slot to slot costs more than a steady one with the same mean error.

Deferring adds no power, so it changes nothing here; its cost is the scenario's
``defer_penalty``, and the tracking cost of the deferred task is paid when it is placed.
"""

from __future__ import annotations

import bisect

import numpy as np

from ilets.gridcommand.command import CommandSchedule, GridCommand

__all__ = ["SlotTracker", "event_slots", "scored_pairs"]


def event_slots(c: GridCommand, edges: np.ndarray,
                baseline_w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The slots one event scores: ``(slots, overlap_s, mid_s, target_w)``.

    The slots overlapping ``[start, end)``, each with its overlap (s), the overlap's midpoint
    and the target there given the slot's baseline: the rule of the metrics
    (:func:`ilets.gridcommand.metrics.event_metrics`) and of the tracking cost alike.
    """
    lo = np.maximum(edges[:-1], c.start_s)
    hi = np.minimum(edges[1:], c.end_s)
    overlap = np.clip(hi - lo, 0.0, None)
    sel = np.flatnonzero(overlap > 0)
    mid = 0.5 * (lo[sel] + hi[sel])
    return sel, overlap[sel], mid, CommandSchedule((c,)).target(mid, np.asarray(baseline_w, float)[sel])


def scored_pairs(schedule: CommandSchedule, edges: np.ndarray,
                 baseline_w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (event, slot) pairs the metrics score: ``(event, slot, overlap_s, target_w)``,
    ordered by event, then slot (:func:`event_slots` of every event with a duration)."""
    edges = np.asarray(edges, dtype=float)
    events, slots, overlaps, targets = [], [], [], []
    for i, c in enumerate(schedule):
        if c.duration_s <= 0:
            continue
        sel, overlap, _, target = event_slots(c, edges, baseline_w)
        events.append(np.full(len(sel), i))
        slots.append(sel)
        overlaps.append(overlap)
        targets.append(target)
    if not events:
        empty = np.zeros(0)
        return empty.astype(np.int64), empty.astype(np.int64), empty, empty
    return (np.concatenate(events).astype(np.int64), np.concatenate(slots).astype(np.int64),
            np.concatenate(overlaps), np.concatenate(targets))


class SlotTracker:
    """Committed slot-average power of the scored slots, and the cost an assignment adds.

    Args:
        edges: the episode's slot edges (s).
        schedule: the episode's commands.
        baseline_w: the counterfactual's slot-average power (W), one per slot.
        idle_w: the fleet's idle power (W), in every slot whatever is assigned.
        max_power_w: the fleet's maximum power (W), the scale of every error.
        rate_per_s: tasks per second of the scored window (the weight of a second's error).
        track_weight, smooth_weight: the weights of the two costs (module docstring).
    """

    def __init__(self, edges: np.ndarray, schedule: CommandSchedule, baseline_w: np.ndarray, idle_w: float,
                 max_power_w: float, rate_per_s: float, track_weight: float, smooth_weight: float) -> None:
        self.edges = np.asarray(edges, dtype=float)
        self._edge_list = self.edges.tolist()
        self.width = np.diff(self.edges)
        self.event, self.slot, self.overlap, self.target = scored_pairs(schedule, self.edges, baseline_w)
        self.idle_w = float(idle_w)
        slot_s = float(np.median(self.width)) if len(self.width) else 1.0
        self._w_track = track_weight * rate_per_s / max_power_w
        self._w_smooth = smooth_weight * rate_per_s * slot_s / max_power_w
        self._pairs_of: dict[int, list[int]] = {}
        for p, k in enumerate(self.slot.tolist()):
            self._pairs_of.setdefault(k, []).append(p)
        # the span the scored slots cover: an assignment wholly outside it costs nothing
        self._lo = float(self.edges[self.slot.min()]) if len(self.slot) else np.inf
        self._hi = float(self.edges[self.slot.max() + 1]) if len(self.slot) else -np.inf
        self._same_event_next = np.zeros(len(self.slot), dtype=bool)  # pair p and p + 1 in one event
        if len(self.slot) > 1:
            self._same_event_next[:-1] = self.event[1:] == self.event[:-1]

        # the per-decision path reads plain floats
        self._ov = self.overlap.tolist()
        self._next = self._same_event_next.tolist()
        self.reset()

    def reset(self) -> None:
        """An empty fleet: every scored slot at idle power."""
        self._err: list[float] = (self.idle_w - self.target).tolist()  # e = P - T per pair, W

    def committed_power(self) -> np.ndarray:
        """Committed slot-average power (W) of every scored pair."""
        return np.asarray(self._err) + self.target

    def cost(self) -> tuple[float, float]:
        """The tracking and smoothness costs of the slots as committed now."""
        e = np.asarray(self._err)
        track = self._w_track * float(self.overlap @ np.abs(e))
        smooth = self._w_smooth * float(np.abs(np.diff(e))[self._same_event_next[:-1]].sum()) if len(e) > 1 else 0.0
        return track, smooth

    def add(self, start: float, finish: float, watts: float) -> tuple[float, float]:
        """Commit a task drawing ``watts`` over ``[start, finish)`` (negative: a sleeping
        server's saving); the change it makes to the tracking and the smoothness costs."""
        if finish <= self._lo or start >= self._hi or not finish > start:
            return 0.0, 0.0
        edges, err, ov, nxt = self._edge_list, self._err, self._ov, self._next
        last = len(edges) - 2
        k0 = min(max(bisect.bisect_right(edges, start) - 1, 0), last)
        k1 = min(max(bisect.bisect_left(edges, finish) - 1, 0), last)
        moved: dict[int, float] = {}  # pair -> the power it gained, W
        d_track = 0.0
        for k in range(k0, k1 + 1):
            pairs = self._pairs_of.get(k)
            if pairs is None:
                continue
            a, b = edges[k], edges[k + 1]
            overlap = min(finish, b) - max(start, a)
            if overlap <= 0:
                continue
            dp = watts * overlap / (b - a)  # negative for a sleep's saving (ilets.gridcommand.sleep)
            for p in pairs:
                old = err[p]
                new = old + dp
                d_track += ov[p] * (abs(new) - abs(old))
                err[p] = new
                moved[p] = dp
        if not moved or not self._w_smooth:
            return self._w_track * d_track, 0.0
        # the steps |e_(i+1) - e_i| (one event) next to a moved pair, after and before the task
        steps = {i for p in moved for i in (p - 1, p) if i >= 0 and nxt[i]}
        d_smooth = 0.0
        for i in steps:
            after = err[i + 1] - err[i]
            before = after - moved.get(i + 1, 0.0) + moved.get(i, 0.0)
            d_smooth += abs(after) - abs(before)
        return self._w_track * d_track, self._w_smooth * d_smooth
