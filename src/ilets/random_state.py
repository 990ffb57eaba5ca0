"""The global random states of torch, numpy and Python, as JSON, so that a killed computation
can resume where it last saved itself and draw what it would have drawn.

Why: a clone's BC draws its minibatch order from torch's global generator (``imitation``'s
data loader shuffles without a generator of its own), so a clone that resumes after its
first BC must find that generator as the uninterrupted clone left it. numpy's and Python's
global generators are kept too (SB3 seeds all three), so that nothing a resumed step draws
depends on where the computation stopped.
"""

from __future__ import annotations

import base64
import random
from typing import Any

import numpy as np
import torch as th


def capture() -> dict[str, Any]:
    """The three global generators' states, JSON-serialisable (:func:`restore` sets them back)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)
    version, internal, gauss_next = random.getstate()
    return {"torch": base64.b64encode(th.get_rng_state().numpy().tobytes()).decode("ascii"),
            "numpy": {"kind": kind, "keys": [int(k) for k in keys], "pos": int(pos),
                      "has_gauss": int(has_gauss), "gauss": float(gauss)},
            "python": {"version": version, "internal": list(internal), "gauss_next": gauss_next}}


def restore(state: dict[str, Any]) -> None:
    """Set the global generators to ``state`` (from :func:`capture`)."""
    raw = np.frombuffer(base64.b64decode(state["torch"]), dtype=np.uint8).copy()
    th.set_rng_state(th.from_numpy(raw))
    n = state["numpy"]
    np.random.set_state((n["kind"], np.asarray(n["keys"], np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    p = state["python"]
    random.setstate((p["version"], tuple(p["internal"]), p["gauss_next"]))
