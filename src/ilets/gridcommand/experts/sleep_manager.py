"""``SleepManager``: any expert with the power manager's sleep rule taken as actions, for the sleep head."""

from __future__ import annotations

from typing import Any

import numpy as np

from ilets.gridcommand.experts.reading import GridExpert, _Expert


class SleepManager(_Expert):
    """The wrapped expert, with the sleep lever's power manager as actions (``sleep_actions``) [ours].

    With the sleep head the environment puts no server to sleep by itself; the policy does,
    one action at a time (:attr:`ilets.gridcommand.env.GridCommandEnv.first_sleep_action`).
    This wrapper takes the rule the power manager applies without the head
    (:meth:`ilets.gridcommand.sleep.SleepLedger.advance`) as those actions: while a down event
    is active and the fleet draws more than the target, it puts to sleep the awake server with
    nothing to run that has been idle longest, if it has been idle for ``sleep_after_s`` and
    its saving fits in the power above the target; the environment hands the same task over
    again, and it looks once more. When no server qualifies the wrapped expert decides. So a
    teacher's demonstrations hold sleep actions, and a clone can learn the head from them.

    It is the power manager at decisions, not at each timeout: the manager sleeps a server
    at the moment its timeout expired, between decisions; here it falls asleep at the next
    decision. On an environment without the head it is the wrapped expert.
    """

    def __init__(self, expert: GridExpert) -> None:
        self.expert = expert
        self.name = f"{expert.name}+sleep"
        extra = ("config", "action_masks", "first_sleep_action", "schedule", "now", "power_now", "target_at", "cloud",
                 "sleep")
        self.reads = tuple(dict.fromkeys((*expert.reads, *extra)))

    def __getattr__(self, name: str) -> Any:
        """The wrapped expert's other attributes (a solver's statuses, the bound's choices)."""
        if name == "expert":  # not set yet (a copy in the making): no recursion
            raise AttributeError(name)
        return getattr(self.expert, name)

    def reset(self, seed: int | None = None) -> None:
        self.expert.reset(seed)

    def act(self, env: Any) -> int:
        if env.config.sleep_actions:
            first = int(env.first_sleep_action)
            allowed = np.asarray(env.action_masks(), bool)[first:]
            now = float(env.now)
            c = env.schedule.active(now)
            if allowed.any() and c is not None and c.direction == "down":
                ledger = env.sleep
                idle_since = np.maximum(np.maximum(env.cloud.drain, ledger.ready), c.start_s)
                excess = float(env.power_now) - float(env.target_at(now))
                ok = allowed & (idle_since + ledger.after_s <= now) & (ledger.saving_w <= excess)
                if ok.any():
                    return first + int(np.argmin(np.where(ok, idle_since, np.inf)))
        return self.expert.act(env)
