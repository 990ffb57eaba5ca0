"""OAIL: online asynchronous imitation learning, as an SB3 callback with an emulator pool.

Every ``cfg.every`` decisions the callback hands a window of tasks and a copy of the cloud
(an "asynchronous environment") to an emulator: a worker process of a
``concurrent.futures.ProcessPoolExecutor`` in which each configured expert (GA and PSO by
default) plans the window on its own clone. When the plans come back, the callback takes
behaviour-cloning steps on the live policy with ``imitation``'s BC loss, weighted
``cfg.weights`` (0.6 for the expert whose plan costs less, 0.4 for the other) and using
**each expert's own demonstrations** (the authors' code trained twice on GA's data).

Which window [ours + code]:

* ``window_mode="past"`` (default): the last W tasks the scheduler has already placed,
  replayed from a snapshot taken just before the first of them. Only the past is used, as an
  online scheduler must.
* ``window_mode="upcoming"``: the next W tasks from the current state, as the authors'
  code did; it peeks at tasks that have not arrived, so it is kept only for comparison.

Determinism: which expert results arrive before which rollout depends on how fast the
emulators run next to the learner, so ILETS- and ILETS are *not* bit-reproducible from a
seed (DRL and DRL+ are). ``cfg.wait`` makes OAIL synchronous, as the authors' code was:
each window's plans are in before the next decision, nothing is dropped, and the run is
deterministic.

Unless ``cfg.wait`` is set, the callback never blocks a decision: ``_on_step`` only clones (a cheap copy), submits and
polls futures, and only at the decisions where a window starts or ends (every ``every``). Imitation updates are applied at the start of the next rollout, so the
rollout PPO is about to learn from was collected by one fixed policy (updates in the middle
would make PPO's stored log-probabilities stale). If emulators fall behind, requests wait in
a backlog of at most ``cfg.max_pending``; the oldest is dropped (and counted) beyond it. A
crashed expert or worker is counted and logged and the run goes on; the pool is shut down
(workers terminated) when training ends, on error and on KeyboardInterrupt
(:meth:`OAILCallback.close`, called by the runner in ``finally``).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from ilets.cloud import Cloud
from ilets.config import ExpertConfig, OAILConfig, RewardConfig
from ilets.env import StateSpec
from ilets.objective import Task

log = logging.getLogger(__name__)

#: Set in each emulator process by :func:`_init_worker`: the pool's stop event, so that a
#: long expert can end early when the pool closes. A per-process handle, not shared state.
_STOP = None


def _init_worker(stop) -> None:
    global _STOP
    _STOP = stop


@dataclass
class EmulatorRequest:
    """Everything an emulator needs; picklable."""

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
    rid: int
    decision: int
    plans: list  #: ExpertPlan per expert, in request order
    seconds: float


def _expert(name: str, cfg: ExpertConfig, reward: RewardConfig, state: StateSpec):
    """An expert by name, plus fault-injection names used by the tests.

    ``slow:<seconds>:<name>`` sleeps before planning; ``crash`` raises; ``exit`` kills the
    worker process (a BrokenProcessPool for the parent).
    """
    from ilets.experts import make_expert

    if name == "crash":
        raise RuntimeError("fault injection: expert crashed")
    if name == "exit":
        os._exit(3)
    if name.startswith("slow:"):
        _, seconds, base = name.split(":", 2)
        deadline = time.monotonic() + float(seconds)
        while time.monotonic() < deadline and not (_STOP is not None and _STOP.is_set()):
            time.sleep(0.02)
        return make_expert(base, cfg, reward, state)
    return make_expert(name, cfg, reward, state)


def run_emulator(req: EmulatorRequest) -> EmulatorResult:
    """Worker entry point: every expert plans the window on its own copy of the cloud."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(req.seed)
    plans = [_expert(n, req.experts_cfg, req.reward, req.state).plan(req.cloud, req.window, rng)
             for n in req.experts]
    return EmulatorResult(req.rid, req.decision, plans, time.perf_counter() - t0)


@dataclass
class OAILCounters:
    requests: int = 0  #: windows handed to the emulators
    completed: int = 0  #: results received
    applied: int = 0  #: results used for imitation updates
    dropped: int = 0  #: requests dropped from a full backlog
    failed: int = 0  #: expert exceptions and dead workers
    updates: int = 0  #: gradient steps taken
    lag_decisions: list = field(default_factory=list)  #: decisions from submit to apply

    def as_dict(self) -> dict:
        lag = np.asarray(self.lag_decisions, float)
        return {"oail_requests": self.requests, "oail_completed": self.completed, "oail_applied": self.applied,
                "oail_dropped": self.dropped, "oail_failed": self.failed, "oail_updates": self.updates,
                "oail_lag_p50": float(np.median(lag)) if len(lag) else float("nan")}


class OAILCallback(BaseCallback):
    """The OAIL loop around a (Maskable)PPO model learning on a :class:`CloudSchedulingEnv`."""

    def __init__(self, cfg: OAILConfig, experts_cfg: ExpertConfig, reward: RewardConfig, seed: int,
                 state: StateSpec | None = None, ent_weight: float = 1e-3, mp_context: str | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.experts_cfg = experts_cfg
        self.reward = reward
        self.seed = seed
        self.state = state or StateSpec()
        self.ent_weight = ent_weight
        self.mp_context = mp_context
        self.counters = OAILCounters()
        self.pool: ProcessPoolExecutor | None = None
        self._in_flight: dict[Future, EmulatorRequest] = {}
        self._backlog: deque[EmulatorRequest] = deque()
        self._ready: list[EmulatorResult] = []
        self._snapshots: dict[int, Cloud] = {}
        self._done = False

    # --- lifecycle --------------------------------------------------------------------
    def _on_training_start(self) -> None:
        from imitation.algorithms.bc import BehaviorCloningLossCalculator

        self.env = self.training_env.envs[0].unwrapped
        # past windows start W decisions before a submission: snapshot at that phase
        self._snapshot_phase = (-self.experts_cfg.window) % self.cfg.every if self.cfg.window_mode == "past" else 0
        self.pool = self._new_pool()
        self.optimizer = th.optim.Adam(self.model.policy.parameters(), lr=self.cfg.learning_rate)
        self.loss_fn = BehaviorCloningLossCalculator(ent_weight=self.ent_weight, l2_weight=0.0)
        self._maybe_snapshot(self.env.t)

    def _new_pool(self) -> ProcessPoolExecutor:
        # fork starts a worker in milliseconds (spawn re-imports numpy and the package, ~1 s,
        # longer than a whole smoke run); workers never touch torch, so forking a process
        # that has imported it is safe. Elsewhere (macOS, Windows) use the platform default.
        method = self.mp_context or ("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        ctx = multiprocessing.get_context(method)
        self._stop = ctx.Event()
        pool = ProcessPoolExecutor(max_workers=self.cfg.workers, mp_context=ctx, initializer=_init_worker,
                                   initargs=(self._stop,))
        for _ in range(self.cfg.workers):  # start the workers now, not at the first request
            pool.submit(int, 0)
        return pool

    def _on_training_end(self) -> None:
        self.close()

    def close(self) -> None:
        """Cancel pending work and stop the worker processes (idempotent).

        Workers are not killed: a process killed while it writes a result leaves a partial
        message in the pool's result pipe, and the executor's manager thread then blocks
        for ever (and with it the interpreter's exit). Instead queued work is cancelled, the
        stop event asks a running expert to finish early, and the pool is joined; a GA or
        PSO call lasts tens of milliseconds.
        """
        pool, self.pool = self.pool, None
        if pool is None:
            return
        self._stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        self._in_flight.clear()
        self._backlog.clear()

    # --- per decision -----------------------------------------------------------------
    def _on_step(self) -> bool:
        # This runs between two decisions: keep the common case to a few comparisons.
        if self._done:
            return True
        if self.locals["dones"][0]:
            self._done = True  # the online pass is over; the env has been reset
            return True
        i = self.env.t
        phase = i % self.cfg.every
        if phase == 0 or phase == self._snapshot_phase:
            self._tick(i)
        return True

    def _tick(self, i: int) -> None:
        """Poll finished emulators, submit the window that ends at decision i, snapshot."""
        self._poll()
        if self.cfg.window_mode == "past":
            w = self.experts_cfg.window
            if i % self.cfg.every == 0 and i - w in self._snapshots:
                self._submit(i, self._snapshots.pop(i - w), self._window(i - w, i))
            self._maybe_snapshot(i)
        elif i % self.cfg.every == 0:
            self._submit(i, self.env.cloud.clone(), self._window(i, i + self.experts_cfg.window))
        if self.cfg.wait:  # synchronous: the plans are in before the next decision
            wait_futures(list(self._in_flight))
            self._poll()

    def _maybe_snapshot(self, i: int) -> None:
        """Keep the state before decision i if a past window will start there."""
        if self.cfg.window_mode == "past" and (i + self.experts_cfg.window) % self.cfg.every == 0:
            self._snapshots[i] = self.env.cloud.clone()

    def _window(self, lo: int, hi: int) -> list[Task]:
        hi = min(hi, len(self.env.tasks))
        return [self.env._task(j) for j in range(lo, hi)]

    def _submit(self, i: int, snap: Cloud, window: list[Task]) -> None:
        if not window:
            return
        self.counters.requests += 1
        req = EmulatorRequest(self.counters.requests, i, snap, window, tuple(self.cfg.experts),
                              self.experts_cfg, self.reward, self.state,
                              self.seed * 1_000_003 + self.counters.requests)
        self._backlog.append(req)
        while len(self._backlog) > self.cfg.max_pending:
            self._backlog.popleft()
            self.counters.dropped += 1
        self._fill()

    def _fill(self) -> None:
        while self._backlog and len(self._in_flight) < self.cfg.workers and self.pool is not None:
            req = self._backlog.popleft()
            self._in_flight[self.pool.submit(run_emulator, req)] = req

    def _poll(self) -> None:
        for fut in [f for f in self._in_flight if f.done()]:
            self._in_flight.pop(fut)
            try:
                self._ready.append(fut.result())
                self.counters.completed += 1
            except BrokenProcessPool:
                self.counters.failed += 1
                log.warning("OAIL emulator worker died; restarting the pool")
                self._restart_pool()
            except Exception as err:  # an expert's bug must not stop scheduling
                self.counters.failed += 1
                log.warning("OAIL emulator failed: %s", err)
        self._fill()

    def _restart_pool(self) -> None:
        lost = list(self._in_flight.values())
        self._in_flight.clear()
        self.counters.failed += len(lost)
        old, self.pool = self.pool, None
        if old is not None:
            old.shutdown(wait=True, cancel_futures=True)  # broken: its workers are gone
        self.pool = self._new_pool()

    # --- imitation updates ------------------------------------------------------------
    def _on_rollout_start(self) -> None:
        self._poll()
        ready, self._ready = self._ready, []
        for result in ready:
            self._imitate(result)

    def _imitate(self, result: EmulatorResult) -> None:
        plans = sorted(result.plans, key=lambda p: p.cost)  # better expert first
        policy = self.model.policy
        policy.set_training_mode(True)
        for _ in range(self.cfg.bc_steps):
            loss = 0.0
            for weight, plan in zip(self.cfg.weights, plans):
                obs = th.as_tensor(plan.observations)
                acts = th.as_tensor(np.asarray(plan.assignment, dtype=np.int64))
                loss = loss + weight * self.loss_fn(policy, obs, acts).loss
            self.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            self.optimizer.step()
            self.counters.updates += 1
        policy.set_training_mode(False)
        self.counters.applied += 1
        self.counters.lag_decisions.append(self.env.t - result.decision)
