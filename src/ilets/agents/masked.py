"""Sampling from a masked softmax in numpy: what sb3-contrib's ``MaskableCategorical`` does."""

from __future__ import annotations

import math

import numpy as np


def sample_masked(logits: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> tuple[int, float]:
    """Sample an action from the masked softmax of ``logits``; return it and its log-probability.

    Masked logits are dropped (sb3-contrib gives them -1e8, probability exactly 0 in float32)
    and the rest normalised. The action is the inverse CDF of one uniform draw
    (``rng.choice`` costs ~20 us).
    """
    z = np.where(mask, logits, -np.inf)
    zmax = z.max()
    c = np.cumsum(np.exp(z - zmax))
    total = float(c[-1])
    if not 0.0 < total < math.inf:  # what torch's argument validation would reject
        raise ValueError(f"the policy's logits are not finite: {logits}")
    a = int(np.searchsorted(c, rng.random() * total, side="right"))
    if a >= len(c) or not mask[a]:  # the draw rounded up to the total: last feasible server
        a = int(np.flatnonzero(mask)[-1])
    return a, float(z[a] - zmax) - math.log(total)
