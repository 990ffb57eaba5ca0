"""The ``thermostat`` expert: feedback on the scored slot's average power, with the envelope's two extreme actions."""

from __future__ import annotations

from typing import Any

from ilets.gridcommand.envelope import high_action, low_action
from ilets.gridcommand.experts.reading import _command, _earliest_finish, _Expert, _mask
from ilets.gridcommand.slot_meter import SlotMeter


class ThermostatExpert(_Expert):
    """Tracking first: during an event, push the current slot's average power toward the target.

    The metrics score slot averages (:mod:`ilets.gridcommand.metrics`), and an event reaches
    the band when one slot's average lies within it. So the expert projects the average of
    the slot it is in [ours] (:class:`ilets.gridcommand.slot_meter.SlotMeter`): the power it has
    seen so far in the slot (sampled at its own decisions, trapezoids between them), plus the
    power now held to the slot's end. Above the target, it takes the flexibility envelope's
    *low* action (:func:`ilets.gridcommand.envelope.low_action`: defer, else the least energy,
    at the least-energy speed, on an awake server); below it, the *high* action
    (:func:`~ilets.gridcommand.envelope.high_action`: start now where the task adds the most).
    It does so in down and up events alike, so a cut that overshoots is pulled back. Outside
    events it places by earliest finish, as the counterfactual baseline does.

    Unlike the envelope's extremes (by default) it keeps deadlines where it can
    (:func:`ilets.gridcommand.envelope.keeping_deadline`): it defers only a task whose slack
    allows the wait, and a placement that would miss the deadline is replaced by the
    least-energy (lowering) or the most-energy (raising) server that meets it, else the
    earliest finish. With ``keep_deadlines=False`` (the rung ``thermostat-firm``) it takes the
    envelope's actions as they are: the command first, the deadlines second, as the envelope
    itself measures the reach. Commands are sized to what the low extreme reached
    (``envelope: clip``), so a mix of the two actions can hold the average inside the band;
    the price is paid in energy and waiting, which the episode's reward counts.

    Why a rung of its own: the optimising rungs price tracking beside energy, waiting and
    misses, and the Lyapunov rung's gain was chosen on the reward, so none of them is built to
    *reach* a narrow band (a fraction of the requested change, ``band`` of the regime, which
    is itself a fraction of the fleet's power). This rung shows whether the band is
    reachable at all; it is a tracking reference, not an optimum of the scored objective.
    """

    name = "thermostat"
    reads: tuple[str, ...] = ("action_masks", "current_task", "now", "power_now", "config", "defer_action", "fleet",
                              "cloud", "target_at", "schedule", "slot_edges", "sleep", "speeds", "power_factors",
                              "decode")

    def __init__(self, keep_deadlines: bool = True) -> None:
        self.keep_deadlines = bool(keep_deadlines)
        if not self.keep_deadlines:  # the envelope's actions as they are: no deadline is looked at
            self.name = "thermostat-firm"
            self.reads = tuple(r for r in self.reads if r not in ("config", "decode"))
        self.meter = SlotMeter()

    def reset(self, seed: int | None = None) -> None:
        self.meter.reset()

    def projected_slot_power(self, env: Any) -> float:
        """The current slot's average power (W) if the power now held to the slot's end, given
        the power seen at the decisions so far in it (:class:`ilets.gridcommand.slot_meter.SlotMeter`)."""
        return self.meter.projected(env.slot_edges, float(env.now), float(env.power_now))

    def act(self, env: Any) -> int:
        projected = self.projected_slot_power(env)
        now = float(env.now)
        if _command(env, now) is None:
            servers, defer_ok = _mask(env)
            return _earliest_finish(env, servers, defer_ok)
        lower = projected > float(env.target_at(now))
        return low_action(env, self.keep_deadlines) if lower else high_action(env, self.keep_deadlines)
