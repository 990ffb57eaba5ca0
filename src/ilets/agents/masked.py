"""Sampling from a masked softmax in numpy: what sb3-contrib's ``MaskableCategorical`` does."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


def act_masked(logits: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> int:
    """The most likely allowed action, or a draw from the masked softmax when ``rng`` is given
    (the decision path of every numpy actor)."""
    z = np.where(mask, logits, -np.inf)
    if rng is None:
        return int(np.argmax(z))
    p = np.exp(z - z.max())
    return int(rng.choice(len(p), p=p / p.sum()))


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


@contextmanager
def unchecked_distributions() -> Iterator[None]:
    """Switch off ``torch.distributions``' argument checks inside the block (restored after).

    Why: with hundreds of servers and a confident policy, the masked softmax's float32
    probabilities can sum to 1 only within ~1e-6, and torch's ``Simplex`` check then raises on
    a valid distribution (seen cloning at 200 servers). The checks change no number; our own
    sampler raises on non-finite logits."""
    import torch as th

    dist = th.distributions.Distribution
    previous = dist._validate_args
    dist.set_default_validate_args(False)
    try:
        yield
    finally:
        dist.set_default_validate_args(previous)
