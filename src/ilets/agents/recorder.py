"""The SB3 callback that logs every decision of a learner's online pass.

A module of its own so that :mod:`ilets.agents.methods` imports stable-baselines3 (and so
torch, about 3 s) only when a learner runs: a heuristic cell's process never loads them.
"""

from __future__ import annotations

from typing import Callable

from stable_baselines3.common.callbacks import BaseCallback

from ilets.agents.episode import DecisionLog


class DecisionRecorder(BaseCallback):
    """Logs every decision PPO makes and stops learning when the segment ends."""

    def __init__(self, log: DecisionLog, progress: Callable[[int], object] | None = None) -> None:
        super().__init__()
        self.log = log
        self.progress = progress

    def _on_step(self) -> bool:
        self.log.add(self.locals["rewards"][0], self.locals["infos"][0])
        if self.progress is not None:
            self.progress(1)
        return not bool(self.locals["dones"][0])
