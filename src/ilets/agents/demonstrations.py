"""Expert demonstrations: (observation, action) pairs in decision order, with their costs.

What OINPT clones (:mod:`ilets.agents.oinpt` records a window expert's,
:mod:`ilets.agents.cloning` a heuristic's) and what its cache files hold. Kept apart from
both so that neither imports the other for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ilets.files import content_digest


@dataclass
class Demonstrations:
    """Expert (observation, action) pairs in decision order, with the expert's rewards."""

    obs: np.ndarray  #: float32 (N, 2M+2)
    acts: np.ndarray  #: int64 (N,)
    masks: np.ndarray  #: bool (N, M)
    rewards: np.ndarray  #: float32 (N,), -cost of each decision
    experts: np.ndarray  #: str (N,), which expert's plan each decision came from
    seconds: float = 0.0  #: wall time to produce them
    #: float32 (N, M): the cost (reward cost + miss penalty) every server would have had at
    #: each decision, inf where infeasible; ``action_costs[i, acts[i]]`` is the expert's
    action_costs: np.ndarray | None = None
    #: decisions the expert made after these, never cloned (see :func:`collect_demonstrations`)
    heldout: "Demonstrations | None" = None

    def __len__(self) -> int:
        return len(self.acts)

    def slice(self, start: int, stop: int | None = None) -> "Demonstrations":
        """Decisions ``start:stop`` (views)."""
        cut = slice(start, stop)
        return Demonstrations(self.obs[cut], self.acts[cut], self.masks[cut], self.rewards[cut], self.experts[cut],
                              self.seconds, None if self.action_costs is None else self.action_costs[cut])

    def arrays(self) -> dict[str, np.ndarray | None]:
        """The arrays a cache file holds, by name."""
        return {"obs": self.obs, "acts": self.acts, "masks": self.masks, "rewards": self.rewards,
                "experts": self.experts, "seconds": np.array(self.seconds), "action_costs": self.action_costs}

    def save(self, path: Path) -> None:
        """Write a cache file with a content digest of every array (checked by :meth:`load`)."""
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")  # one per process
        arrays = self.arrays()
        # arg-type: numpy's stub types **kwds alongside allow_pickle: bool, so a dict of arrays never fits
        np.savez_compressed(tmp, **arrays, digest=np.array(content_digest(arrays)))  # type: ignore[arg-type]
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path, servers: int | None = None, width: int | None = None) -> "Demonstrations":
        """Read a cache file; raise ValueError when its digest or its shapes are not what they must be.

        ``servers`` and ``width`` (the observation's length), when given, are the shapes the
        run expects: a cache written for another fleet or layout is refused, not fed to BC."""
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in ("obs", "acts", "masks", "rewards", "experts", "seconds", "action_costs")}
            recorded = str(z["digest"]) if "digest" in z.files else None
        if recorded != content_digest(arrays):
            raise ValueError("its content digest does not match (edited, damaged or written before caches had one)")
        costs = arrays["action_costs"]
        d = cls(arrays["obs"], arrays["acts"], arrays["masks"], arrays["rewards"], arrays["experts"],
                float(arrays["seconds"]), costs)
        n = len(d.acts)
        if not len(d.obs) == len(d.masks) == len(d.rewards) == len(costs) == n:
            raise ValueError("arrays of different lengths")
        if d.obs.ndim != 2 or d.masks.ndim != 2 or costs.shape != d.masks.shape:
            raise ValueError(f"unexpected shapes: obs {d.obs.shape}, masks {d.masks.shape}, "
                             f"action_costs {costs.shape}")
        if servers is not None and d.masks.shape[1] != servers:
            raise ValueError(f"masks are {d.masks.shape[1]} servers wide, expected {servers}")
        if width is not None and d.obs.shape[1] != width:
            raise ValueError(f"observations are {d.obs.shape[1]} numbers wide, expected {width}")
        if n and not (0 <= d.acts.min() and d.acts.max() < d.masks.shape[1]
                      and d.masks[np.arange(n), d.acts].all()):
            raise ValueError("an action names a server outside the fleet or one the mask forbids")
        return d
