"""What a meter on the fleet says of the current slot: its average power so far, projected to the slot's end.

The metrics score slot averages (:mod:`ilets.gridcommand.metrics`), and a slot is in band when
its *average* is. At a decision a policy knows the power now and what it saw earlier; the
:class:`SlotMeter` keeps that record [ours]: the power sampled at each decision, integrated by
trapezoids between decisions (the power held from the last decision across a slot edge), and
projects the slot's average with the power now held to the slot's end. It reads only the
clock, the power now and the slot grid, so it is what a meter on the fleet would show; the
thermostat expert (:mod:`ilets.gridcommand.experts.thermostat`) acts on it, and with
``observe_slot`` the environment shows it (:class:`ilets.gridcommand.features.SlotError`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SlotMeter"]


class SlotMeter:
    """The current slot's projected average power from the power sampled at decisions."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the episode: the next sample starts a slot."""
        self.slot = -1  #: the slot the integral covers
        self.joules = 0.0  #: power sampled so far in that slot, integrated (J)
        self.t = 0.0  #: the last sample's time (s) and power (W)
        self.p = 0.0

    def projected(self, edges: np.ndarray, now: float, power: float) -> float:
        """Record the power ``power`` (W) at ``now`` (s) and return the average (W) of the slot
        of ``edges`` holding ``now`` if this power held to its end (times outside the edges
        count in the first or last slot)."""
        k = int(np.clip(np.searchsorted(edges, now, side="right") - 1, 0, len(edges) - 2))
        lo, hi = float(edges[k]), float(edges[k + 1])
        if k != self.slot:  # a new slot: the power held since the last sample (or this one's, at the first)
            held = self.p if self.slot >= 0 else power
            self.joules, self.slot = held * max(0.0, now - lo), k
        else:
            self.joules += 0.5 * (self.p + power) * (now - self.t)
        self.t, self.p = now, power
        return (self.joules + power * max(0.0, hi - now)) / max(hi - lo, 1e-12)
