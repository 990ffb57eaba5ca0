"""Compiled kernel of :meth:`ilets.simulator.cloud.Cloud.earliest_starts` (numba).

Why compiled: the numpy form compares the whole (M x K) start-profile array with each
server's room and then gathers, although the first fitting column is usually among the
first few; at 200 servers that cost more than the per-server policy's whole forward pass.
One loop per server stops at the first column that fits. It computes the same numbers:
the room is the same float64 subtraction, and a comparison, a gather and a maximum round
nothing.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def earliest_starts(level: np.ndarray, time: np.ndarray, room: np.ndarray, cpu: float, now: float,
                    out: np.ndarray) -> None:
    """``out[i]``: the first ``time[i, k]`` whose ``level[i, k] <= room[i] - cpu``, not before
    ``now``; ``inf`` where ``room[i] < cpu`` (the task never fits server ``i``)."""
    for i in range(level.shape[0]):
        left = room[i] - cpu
        if left < 0.0:
            out[i] = math.inf
            continue
        k = 0
        for j in range(level.shape[1]):
            if level[i, j] <= left:
                k = j
                break
        t = time[i, k]
        out[i] = t if t > now else now
