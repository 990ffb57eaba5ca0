"""Rung 4 of the ladder, ``rule``: defer what has slack during a down event, else least energy or earliest finish."""

from __future__ import annotations

from typing import Any

import numpy as np

from ilets.gridcommand.experts.reading import COMMON_READS, _can_wait, _cfg, _command, _earliest_finish, _Expert, _finish, _mask
from ilets.simulator.cloud import meets_deadline


class RuleExpert(_Expert):
    """During a down event: defer a task whose slack allows it (while the fleet is above the
    target's lower band edge), else place it on the least-energy allowed server that still
    meets its deadline (earliest-finish if none does). Outside down events: earliest-finish.
    """

    name = "rule"
    reads = COMMON_READS

    def act(self, env: Any) -> int:
        servers, defer_ok = _mask(env)
        now, task, cloud = float(env.now), env.current_task, env.cloud
        cmd = _command(env, now)
        if cmd is None or cmd.direction != "down":
            return _earliest_finish(env, servers, defer_ok)
        defer_s = float(_cfg(env, "defer_s"))
        base = float(env.baseline_at(now))
        # deferring below the band's lower edge would overshoot the cut [ours]
        above = float(env.power_now) > float(env.target_at(now)) - float(cmd.band_w(base))
        if defer_ok and above and _can_wait(env, task, defer_s):
            return int(env.defer_action)
        if not servers.any():
            return int(env.defer_action)
        finish = _finish(cloud, task)
        ok = servers & meets_deadline(finish - task.arrival, task.deadline)
        if not ok.any():
            return _earliest_finish(env, servers, defer_ok)
        energy = cloud.act_per_cpu * task.cpu * task.length / cloud.fleet.mips
        return int(np.argmin(np.where(ok, energy, np.inf)))
