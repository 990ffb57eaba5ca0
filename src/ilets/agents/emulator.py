"""An OAIL emulator: what the callback's worker processes run.

:class:`ilets.agents.oail.OAILCallback` sends an :class:`EmulatorRequest` (a window of tasks,
a copy of the cloud from before them, the experts' names and settings, a seed) to a worker
process of its pool; there :func:`run_emulator` has every expert plan the window on its own
clone and returns an :class:`EmulatorResult`. Besides the experts, :func:`_expert` knows the
fault-injection names the tests use (``slow:<seconds>:<name>``, ``crash``, ``exit``).
Requests and results travel pickled, so both are small (:meth:`Cloud.emulator_copy`).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ilets.agents.observation import StateSpec
from ilets.config import ExpertConfig, RewardConfig
from ilets.simulator.cloud import Cloud
from ilets.simulator.objective import Task

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event

    from ilets.agents.experts.plans import Expert, ExpertPlan

#: Set in each emulator process by :func:`init_worker`: the pool's stop event, so that a
#: long expert can end early when the pool closes. A per-process handle, not shared state.
_STOP: Event | None = None


def init_worker(stop: Event) -> None:
    """Initialise an emulator process: keep the pool's stop event, leave interrupts to the
    parent, die with the parent, load the experts' kernels."""
    from ilets.agents.experts import warm_up
    from ilets.lifecycle import die_with_parent

    global _STOP
    _STOP = stop
    # A forked worker inherits the run's handlers: SIGTERM would raise KeyboardInterrupt in it
    # and Ctrl-C (sent to the whole process group) would stop it mid-result. The run decides:
    # its close() asks a running expert to stop and ends the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent()
    # A forked worker inherits the parent's loaded kernels (nothing to do); one started by
    # spawn or forkserver loads them here, before its first request is timed.
    warm_up()


@dataclass
class EmulatorRequest:
    """Everything an emulator needs; picklable and small (see :meth:`Cloud.emulator_copy`)."""

    rid: int
    decision: int  #: the decision index at which it was submitted
    cloud: Cloud
    window: list[Task]
    experts: tuple[str, ...]
    experts_cfg: ExpertConfig
    reward: RewardConfig
    state: StateSpec
    seed: int


@dataclass
class EmulatorResult:
    """Every expert's plan of a request's window, with what planning cost the worker."""

    rid: int
    decision: int
    plans: list[ExpertPlan]  #: ExpertPlan per expert, in request order
    seconds: float  #: wall time in the worker
    cpu_seconds: float = 0.0  #: CPU time in the worker (the experts' true cost)


def _expert(name: str, cfg: ExpertConfig, reward: RewardConfig, state: StateSpec) -> Expert:
    """An expert by name, plus fault-injection names used by the tests.

    ``slow:<seconds>:<name>`` sleeps (wall time) before planning; ``crash`` raises; ``exit``
    kills the worker process (a BrokenProcessPool for the parent).
    """
    from ilets.agents.experts import make_expert

    if name == "crash":
        raise RuntimeError("fault injection: expert crashed")
    if name == "exit":
        os._exit(3)
    if name.startswith("slow:"):
        _, seconds, base = name.split(":", 2)
        deadline = time.monotonic() + float(seconds)
        while time.monotonic() < deadline and not (_STOP is not None and _STOP.is_set()):
            time.sleep(0.01)
        return make_expert(base, cfg, reward, state)
    return make_expert(name, cfg, reward, state)


def run_emulator(req: EmulatorRequest) -> EmulatorResult:
    """Worker entry point: every expert plans the window on its own copy of the cloud."""
    from ilets.agents.experts import plan_window

    t0, c0 = time.perf_counter(), time.process_time()
    experts = [_expert(n, req.experts_cfg, req.reward, req.state) for n in req.experts]
    plans = plan_window(experts, req.cloud, req.window, np.random.default_rng(req.seed))
    return EmulatorResult(req.rid, req.decision, plans, time.perf_counter() - t0, time.process_time() - c0)
