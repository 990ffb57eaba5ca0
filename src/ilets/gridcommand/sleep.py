"""The sleep lever: idle servers fall asleep during a cut, and the next task waits for a wake-up.

Idle power is most of a lightly loaded fleet's draw (44-78 % of the baseline at the study's
scales), so server choice alone cannot cut deep: a server draws its idle power whether or
not it works. Real fleets reach deep, fast cuts by putting servers to sleep. The rule here
[ours, declared in the deviations table]:

* **When.** Only while a *down* event is active: the operator's cut is what makes a wake-up
  latency worth paying; outside events every server stays on, as in the plain scenario
  (whose baseline the targets come from).
* **Who.** A server that has had nothing to run for ``after_s`` (its last committed task
  finished, and it is not waking up) may fall asleep, a timeout as an operating system's
  power manager applies, but only as far as the cut asks: a power manager that follows the
  operator puts such servers to sleep (the longest idle first) while the fleet draws more
  than the target, and no more of them than that excess covers. A blind timeout overshoots
  a shallow cut (tried first on one quick episode: the rule tracked worse with it than
  without the lever). The policy's levers are where it places tasks
  (consolidating work on few servers lets the others time out; spreading it keeps them
  awake), deferral, and waking a sleeping server by placing a task on it.
* **Power.** A sleeping server draws ``fraction`` of its idle power; the difference is
  the *saving*, subtracted from the fleet's power over exactly the time it slept.
* **Wake.** A task placed on a sleeping server wakes it: the server draws its idle power
  again from that moment, and the task (with every task queued behind it) starts
  ``wake_s`` later (:meth:`ilets.simulator.cloud.Cloud.hold`). While a server sleeps, its
  hold is kept at ``now + wake_s``, so every start rule (the reward's cost, the heuristics,
  the experts, the per-server observation's wait) sees what placing there would cost. When
  the event ends, the sleeping servers wake by themselves and are ready ``wake_s`` later.

A task's start is still fixed when it is placed. Sleep falls retroactively at the moment
the timeout expired (between two decisions nothing is placed, so a server idle at the
earlier one stayed idle until then): the ledger is exact, not sampled at decisions. The
power manager checks the excess at each hand-over, so a server it held back at one falls
asleep no earlier than that hand-over.

The experts run unchanged: they read the power now less the saving
(:attr:`GridCommandEnv.power_now`) and every start with its wake-up, but the committed
future power they plan with (:func:`ilets.gridcommand.power.committed_profile`) counts every
server's idle power, as if no server slept ahead: none of them plans sleep.

:class:`SleepLedger` keeps the state and the record; the environment
(:class:`ilets.gridcommand.env.GridCommandEnv`) moves it at every decision, charges the
saving to the slot tracker and subtracts it from the scored power
(:meth:`SleepLedger.profile`).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ilets.gridcommand.power import interval_energy

__all__ = ["SleepLedger"]


class SleepLedger:
    """Which servers sleep, since when, and the energy their sleep saved (module docstring).

    Args:
        saving_w: per server, idle power minus sleep power (W).
        windows: ``(start, end)`` of every down event, in time order; sleep happens only inside.
        after_s: idle time after which a server falls asleep (s).
        wake_s: time from a wake-up to the server's first start (s).
    """

    def __init__(self, saving_w: np.ndarray, windows: Sequence[tuple[float, float]], after_s: float,
                 wake_s: float) -> None:
        self.saving_w = np.asarray(saving_w, dtype=float)
        self.windows = [(float(a), float(b)) for a, b in sorted(windows) if b > a]
        self.after_s, self.wake_s = float(after_s), float(wake_s)
        self.reset()

    def reset(self) -> None:
        """Every server awake, nothing recorded."""
        m = len(self.saving_w)
        self.asleep_from = np.full(m, np.inf)  #: when each sleeping server fell asleep; inf: awake
        self._wakes_at = np.full(m, np.inf)  #: the end of the event each sleeping server sleeps in
        self.ready = np.full(m, -np.inf)  #: when a woken server can first start a task
        self.t = -np.inf  #: the time the ledger has been moved to
        #: closed sleep intervals: (server, start, end)
        self.log: list[tuple[int, float, float]] = []

    @property
    def asleep(self) -> np.ndarray:
        """Which servers sleep now."""
        return np.isfinite(self.asleep_from)

    def saving_now(self) -> float:
        """The power (W) the sleeping servers save now."""
        return float(self.saving_w[self.asleep].sum())

    def advance(self, t: float, drain: np.ndarray, excess_w: float = np.inf) -> list[tuple[int, float, float]]:
        """Move to time ``t``: servers whose timeout expired inside a down event fall asleep
        (the longest idle first, as many as ``excess_w``, the power above the target, covers),
        servers whose event ended wake. ``drain``: each server's last committed finish.

        Returns the sleep intervals the move adds, ``(server, start, end)`` within
        ``(previous t, t]`` (the part of each sleep up to ``t``, and the closed ones up to
        their event's end): what the slot tracker is charged.
        """
        if t < self.t:
            raise ValueError(f"cannot move the sleep ledger back from {self.t} to {t}")
        start = self.t
        segments: list[tuple[int, float, float]] = []
        for a, b in self.windows:
            if b <= start or a >= t:
                continue
            awake = ~self.asleep
            idle_since = np.maximum(np.maximum(np.asarray(drain, dtype=float), self.ready), a)
            at = idle_since + self.after_s
            falls = np.flatnonzero(awake & (at < min(b, t)))
            room = excess_w
            for s in falls[np.argsort(at[falls], kind="stable")].tolist():
                if self.saving_w[s] > room:
                    break
                room -= self.saving_w[s]
                # not before the last move: one the gate held back then sleeps from now on
                self.asleep_from[s] = max(float(at[s]), start)
                self._wakes_at[s] = b
            if b <= t:  # the event is over: its sleepers wake at its end
                for s in np.flatnonzero(self.asleep & (self._wakes_at <= t)).tolist():
                    segments.append((s, max(float(self.asleep_from[s]), start), b))
                    self._close(s, b)
        for s in np.flatnonzero(self.asleep).tolist():  # still asleep: charged up to t
            segments.append((s, max(float(self.asleep_from[s]), start), t))
        self.t = t
        return [seg for seg in segments if seg[2] > seg[1]]

    def can_sleep(self, t: float, drain: np.ndarray) -> np.ndarray:
        """Which servers a policy may put to sleep at ``t`` (the ledger moved to ``t``): inside a
        down window, awake, not waking up, with nothing left to run (``drain``: each server's
        last committed finish)."""
        if not any(a <= t < b for a, b in self.windows):
            return np.zeros(len(self.saving_w), dtype=bool)
        return ~self.asleep & (self.ready <= t) & (np.asarray(drain, dtype=float) <= t)

    def fall_asleep(self, s: int, t: float) -> None:
        """Server ``s`` falls asleep at ``t`` by a policy's action (:meth:`can_sleep` allows it;
        the ledger moved to ``t``); it wakes at its window's end, as the others do."""
        if t != self.t or not self.can_sleep(t, np.full(len(self.saving_w), -np.inf))[s]:
            raise ValueError(f"server {s} cannot fall asleep at {t}: the ledger is at {self.t}, and a server "
                             "sleeps only inside a down window, awake and not waking up")
        self.asleep_from[s] = t
        self._wakes_at[s] = next(b for a, b in self.windows if a <= t < b)

    def wake(self, s: int, t: float) -> float:
        """A task placed on server ``s`` at ``t`` (the ledger already moved to ``t``): wake it
        if it sleeps. Returns when it can start a task."""
        if math.isfinite(self.asleep_from[s]):
            self._close(s, t)
        return float(self.ready[s])

    def _close(self, s: int, end: float) -> None:
        self.log.append((s, float(self.asleep_from[s]), float(end)))
        self.asleep_from[s] = np.inf
        self._wakes_at[s] = np.inf
        self.ready[s] = end + self.wake_s

    def intervals(self, t: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(servers, starts, ends)`` of every sleep so far, the open ones up to ``t``
        (default: the ledger's time)."""
        t = self.t if t is None else t
        rows = list(self.log) + [(s, float(self.asleep_from[s]), t) for s in np.flatnonzero(self.asleep).tolist()]
        if not rows:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
        s, a, b = zip(*rows)
        return np.asarray(s, np.int64), np.asarray(a, float), np.asarray(b, float)

    def saved_j(self, a: float = -np.inf, b: float = np.inf) -> float:
        """Joules the sleeps saved within ``[a, b)``."""
        s, start, end = self.intervals()
        overlap = np.clip(np.minimum(end, b) - np.maximum(start, a), 0.0, None)
        return float(self.saving_w[s] @ overlap)

    def profile(self, edges: np.ndarray) -> np.ndarray:
        """Slot-average power (W) the sleeps saved over ``edges`` (subtract it from the
        cloud's profile, :func:`ilets.gridcommand.power.power_profile`, for the fleet's)."""
        s, start, end = self.intervals()
        edges = np.asarray(edges, dtype=float)
        return interval_energy(start, end, self.saving_w[s], edges) / np.diff(edges)
