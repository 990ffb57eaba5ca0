"""The ``cap`` expert: the counterfactual scheduler unchanged, the fleet's power held by an admission cap it sets by feedback."""

from __future__ import annotations

from typing import Any

import numpy as np

from ilets.gridcommand.experts.reading import _command, _earliest_finish, _Expert, _mask
from ilets.gridcommand.slot_meter import SlotMeter


class PowerCapExpert(_Expert):
    """Power capping, the operator's own lever: earliest finish under a cap set by slot feedback [ours].

    A data centre asked to cut its draw usually does not rewrite its scheduler: it caps its
    servers' power. This rung does that and nothing else. Its only lever is the admission cap
    the environment offers as an action (``cap_levels``; :attr:`GridCommandEnv.first_cap_action`):
    while a cap is in force a server is masked where its power with the task counted would
    exceed that share of its maximum, so a task goes to a server with room under the cap, or
    waits ``defer_s`` when none has room and its deadline allows (the environment's mask).
    Every placement is the counterfactual baseline's, earliest finish among the allowed
    servers, so what the cap changes is only what the mask changes.

    The cap is stepped by the thermostat's meter (:class:`ilets.gridcommand.slot_meter.SlotMeter`,
    the current slot's projected average power): during a *down* event, above the target it
    takes the next lower level, below it the next higher one, one step per task (the
    environment allows one change per task, and at the scenario's arrival rate a step per task
    sweeps the levels within a slot); outside down events it lifts the cap to the highest
    level. A cap cannot raise the power, so the rung follows no *up* event: it shows what the
    lever alone reaches, beside the thermostat, which moves every placement.

    On a scenario without cap levels it is the counterfactual's earliest finish (it does
    nothing about the command), so a grid that runs it should use a scenario with
    ``cap_levels`` (:class:`ilets.gridcommand.experiment.ExperimentProfile` checks this).
    """

    name = "cap"
    reads: tuple[str, ...] = ("action_masks", "current_task", "now", "power_now", "defer_action", "fleet", "cloud",
                              "target_at", "schedule", "slot_edges", "cap_levels", "first_cap_action", "admission_cap")

    def __init__(self) -> None:
        self.meter = SlotMeter()

    def reset(self, seed: int | None = None) -> None:
        self.meter.reset()

    def wanted_cap(self, env: Any) -> float | None:
        """The cap level this decision asks for (None: the scenario has no levels)."""
        levels = sorted(float(c) for c in env.cap_levels)
        if not levels:
            return None
        now = float(env.now)
        projected = self.meter.projected(env.slot_edges, now, float(env.power_now))
        cmd = _command(env, now)
        if cmd is None or cmd.direction != "down":
            return levels[-1]
        current = float(env.admission_cap)
        if projected > float(env.target_at(now)):
            lower = [c for c in levels if c < current]
            return lower[-1] if lower else levels[0]
        higher = [c for c in levels if c > current]
        return higher[0] if higher else levels[-1]

    def act(self, env: Any) -> int:
        want = self.wanted_cap(env)
        if want is not None and want != float(env.admission_cap):
            action = int(env.first_cap_action) + [float(c) for c in env.cap_levels].index(want)
            if bool(np.asarray(env.action_masks(), bool)[action]):  # one change per task
                return action
        servers, defer_ok = _mask(env)
        return _earliest_finish(env, servers, defer_ok)
