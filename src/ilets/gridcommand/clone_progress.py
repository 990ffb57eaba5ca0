"""A grid-command clone's progress record: what a clone killed midway resumes from.

Apart from the clone's steps so that what is checked before a record is trusted (a record
edited or written by other code starts the clone again, :func:`check_state`) is read in one
place. The record itself is the aggregate's (:meth:`ilets.gridcommand.aggregate.Aggregate.commit`).
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import torch as th

from ilets import random_state
from ilets.gridcommand.aggregate import Aggregate


def check_state(state: Any, rows: int, episodes: int, rounds: int) -> None:
    """``ValueError`` naming the field when a clone's recorded ``state`` is not one :func:`ilets.gridcommand.cloning.clone`
    writes for ``episodes`` training episodes and ``rounds`` DAgger rounds over an aggregate of
    ``rows`` rows. Why: a record edited or written by other code would otherwise fail further
    on (``KeyError: 'info'``) on every rerun, its folder kept, instead of starting again."""
    def need(ok: bool, field: str, want: str) -> None:
        if not ok:
            value = state.get(field) if isinstance(state, dict) else state
            raise ValueError(f"state.{field} = {value!r}: expected {want}")

    def integer(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    need(isinstance(state, dict), "", "a JSON object")
    need(integer(state.get("first")) and 0 <= state["first"] <= rows, "first", f"an integer in [0, {rows}]")
    need(integer(state.get("phase")) and -1 <= state["phase"] <= rounds, "phase", f"an integer in [-1, {rounds}]")
    need(integer(state.get("played")) and 0 <= state["played"] <= episodes, "played",
         f"an integer in [0, {episodes}]")
    need(isinstance(state.get("info"), dict), "info", "a JSON object")
    need(isinstance(state.get("cpu_s", 0.0), (int, float)), "cpu_s", "a number")
    need("rng" in state, "rng", "the random states")
    if state["phase"] < 0:
        need(state.get("model") is None, "model", "null before the first BC")
    else:
        need(state.get("model") == f"model-{state['phase']}.pt", "model", f"'model-{state['phase']}.pt'")
        for key in ("demos", "start"):
            need(integer(state.get(key)) and 0 <= state[key] <= rows, key, f"an integer in [0, {rows}]")


def resume(progress: Path | None, model, episodes: int = 1, rounds: int = 0) -> tuple[Aggregate, dict[str, Any]] | None:
    """A clone's aggregate and state as its last record left them in ``progress``, with
    ``model``'s policy and the global random states set back to theirs; None to start afresh
    (no folder, no record, or a damaged one, which is removed with a warning: a column cut
    short, :meth:`Aggregate.reopen`, or a state :func:`ilets.gridcommand.cloning.clone` never writes for ``episodes``
    training episodes and ``rounds`` DAgger rounds, :func:`check_state`)."""
    if progress is None:
        return None
    try:
        found = Aggregate.reopen(progress)
        if found is None:
            return None
        aggregate, state = found
        check_state(state, len(aggregate), episodes, rounds)
        if state["model"] is not None:  # tensors only: torch's safe loader
            model.policy.load_state_dict(th.load(progress / state["model"], weights_only=True))
        random_state.restore(state["rng"])
        return aggregate, state
    except Exception as err:  # noqa: BLE001 -- any damage: the clone is made again from the start
        warnings.warn(f"{progress}: damaged clone progress ({type(err).__name__}: {err}); cloning from the start",
                      stacklevel=3)
        shutil.rmtree(progress, ignore_errors=True)
        return None
