"""One pass of a policy over an env's segment, and the per-decision log every method keeps."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ilets.agents.env import CloudSchedulingEnv


@dataclass
class DecisionLog:
    """Per-decision reward, response, success and cumulative energy of one online pass."""

    reward: list[float] = field(default_factory=list)
    response: list[float] = field(default_factory=list)
    success: list[bool] = field(default_factory=list)
    energy_j: list[float] = field(default_factory=list)
    final: dict[str, Any] = field(default_factory=dict)  #: the env's ``info["final"]``: the segment's metrics

    def add(self, reward: float, info: dict[str, Any]) -> None:
        """Log one env step from its reward and ``info``."""
        self.reward.append(float(reward))
        self.response.append(info["response"])
        self.success.append(bool(info["success"]))
        self.energy_j.append(info["energy_kwh"] * 3.6e6)
        if "final" in info:
            self.final = dict(info["final"])

    def curve(self, every: int):
        """Learning curve: one row per ``every`` decisions (the last row may be shorter)."""
        import pandas as pd

        n = len(self.reward)
        idx = np.arange(n) // every
        df = pd.DataFrame({"window": idx, "reward": self.reward, "response": self.response,
                           "success": self.success})
        g = df.groupby("window").agg(reward=("reward", "mean"), response=("response", "mean"),
                                     success=("success", "mean"), decisions=("reward", "size"))
        energy = np.asarray(self.energy_j)
        ends = np.minimum((g.index.to_numpy() + 1) * every, n) - 1
        starts_prev = np.concatenate([[0.0], energy[ends[:-1]]])
        g["energy_kwh"] = (energy[ends] - starts_prev) / 3.6e6
        g["decision_end"] = ends + 1
        return g.reset_index()


def drive(env: CloudSchedulingEnv, policy, log: DecisionLog | None = None, progress=None) -> np.ndarray:
    """Step ``env`` (already reset) to the end of its segment with ``policy``.

    Returns the time each decision took (the policy's ``act``, observation included for a
    learned policy), and logs every step into ``log`` when given.
    """
    times, done = [], False
    while not done:
        t0 = time.perf_counter()
        a = policy.act(env.cloud, env.current_task, env.action_masks())
        times.append(time.perf_counter() - t0)
        _, r, done, _, info = env.step(a)
        if log is not None:
            log.add(r, info)
        if progress is not None:
            progress(1)
    return np.asarray(times)
