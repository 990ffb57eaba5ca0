"""OAIL: online asynchronous imitation learning, as an SB3 callback with an emulator pool.

Every ``cfg.every`` decisions the callback hands a window of tasks and a copy of the cloud
(an "asynchronous environment") to an emulator: a worker process of a
``concurrent.futures.ProcessPoolExecutor`` in which each configured expert (GA and PSO by
default) plans the window on its own clone (:mod:`ilets.agents.emulator`). When the plans come
back, the callback takes behaviour-cloning steps on the live policy with ``imitation``'s BC
loss (:class:`ilets.agents.weighted_bc.WeightedBC`), weighted ``cfg.weights`` (0.6 for the
expert whose plan costs less, 0.4 for the other) and using **each expert's own
demonstrations** (the authors' code trained twice on GA's data).

Which window [ours + code]:

* ``window_mode="past"`` (default): the last W tasks the scheduler has already placed,
  replayed from a snapshot taken just before the first of them. Only the past is used, as an
  online scheduler must.
* ``window_mode="upcoming"``: the next W tasks from the current state, as the authors'
  code did; it peeks at tasks that have not arrived, so it is kept only for comparison.

When plans reach the learner: ``cfg.clock`` [ours]
-------------------------------------------------

The simulation runs many times faster than the system it simulates, so "the emulators run
beside the scheduler" needs a clock. Measuring it on the host's wall clock (the authors'
timer threads, and ``clock="wall"`` here) makes the number of windows served a property of
the machine: on one host OAIL served 4 % of windows at paper scale, on a faster one it would
serve more. The default, ``clock="simulated"``, emulates the paper's system in simulated time
(:class:`EmulatorSlots`):

* a request submitted at decision ``i`` has simulated time ``t_i`` (task ``i``'s arrival);
* ``cfg.workers`` emulator slots each plan one request at a time and take ``cfg.latency_s``
  simulated seconds per request (the measured time of the experts, see ``methods.yaml``);
* a request that finds every slot busy waits in a FIFO backlog of at most
  ``cfg.max_pending`` requests; one that finds the backlog full is dropped;
* its plans are due at ``start + latency_s``. At the start of each rollout the learner applies,
  in submission order, every result due by the current simulated time, **waiting for the
  worker process if it is late** (the host being slow then costs wall time, never results).

So which windows are served, dropped and applied, and when, is a function of the seed and
the configuration alone: ILETS- and ILETS are bit-reproducible like DRL (tested with an
artificially slowed expert). Worker processes still compute plans in parallel with the
learner; ``clock="sync"`` is the authors' synchronous emulator (every window is served with
no latency) and ``clock="wall"`` the host-speed-dependent mode, kept for comparison.

Imitation updates happen only between rollouts (``_on_rollout_start``), so every rollout PPO
learns from was collected by one fixed policy and its stored log-probabilities stay valid.

Faults: an expert that raises is counted (``failed``) and the run goes on. So is a request
whose plans the learner has waited ``cfg.request_timeout_s`` wall seconds for once they are
due (a hung or pathologically slow expert; the default is far above a request's cost, so a
merely slow host never reaches it): it is logged, its emulators are replaced, the requests
they held are sent again, and scheduling goes on. A worker process
that dies breaks the pool; the pool is replaced and the requests it held are resubmitted
once (so a transient death changes nothing), then counted as failed. Every request ends as
exactly one of applied, dropped, failed or unapplied (due after the last rollout started):
``requests == applied + dropped + failed + unapplied`` (tested). Worker processes die with
their parent (:func:`ilets.lifecycle.die_with_parent`); the pool is shut down when training
ends, on error and on KeyboardInterrupt (:meth:`OAILCallback.close`).
"""

from __future__ import annotations

import heapq
import logging
import multiprocessing
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as ResultTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast, overload

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from ilets.agents.emulator import EmulatorRequest, EmulatorResult, init_worker, run_emulator
from ilets.agents.masked import unchecked_distributions
from ilets.agents.observation import StateSpec
from ilets.agents.weighted_bc import LabelledBatch, WeightedBC
from ilets.config import ExpertConfig, OAILConfig, RewardConfig
from ilets.simulator.cloud import Cloud
from ilets.simulator.objective import Task

if TYPE_CHECKING:
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from ilets.agents.experts.plans import ExpertPlan

log = logging.getLogger(__name__)


class EmulatorSlots:
    """``slots`` emulators in simulated time: FIFO, ``latency`` s per request, bounded backlog.

    :meth:`admit` is called with non-decreasing submission times and returns the request's
    due time (``start + latency``, ``start`` being when a slot is free for it) or ``None``
    when the request finds ``max_pending`` others already waiting (it is dropped). With a
    fixed latency and FIFO order, a request's start is known when it is submitted, so no
    event loop is needed. ``slots=None`` means unlimited (nothing ever waits).
    """

    def __init__(self, slots: int | None, latency: float, max_pending: int) -> None:
        self.latency = float(latency)
        self.max_pending = max_pending
        self._free = [-np.inf] * slots if slots else None  # heap: when each slot is next free
        self._starts: deque[float] = deque()  # starts of admitted requests not yet started

    def admit(self, t: float) -> float | None:
        if self._free is None:
            return t + self.latency
        while self._starts and self._starts[0] <= t:
            self._starts.popleft()
        start = max(t, self._free[0])
        if start > t and len(self._starts) >= self.max_pending:
            return None
        heapq.heapreplace(self._free, start + self.latency)
        if start > t:
            self._starts.append(start)
        return start + self.latency


def submissions(n_tasks: int, every: int, window: int, window_mode: str) -> np.ndarray:
    """Decision indices at which the callback submits a window in a pass of ``n_tasks``.

    Every ``every`` decisions, from the first multiple of ``every`` at which a window exists
    (past mode: once ``window`` tasks are placed), up to the last decision before the end
    of the pass (the callback does nothing at decision 0 nor once the pass is over).
    """
    first = -(-window // every) * every if window_mode == "past" else every
    return np.arange(max(first, every), n_tasks, every)


def admission(arrival: np.ndarray, cfg: OAILConfig, window: int) -> dict[str, float]:
    """Which windows the simulated clock serves, computed from the arrival times alone.

    In simulated time, admission depends only on when requests are submitted (task
    arrivals, every ``cfg.every`` decisions), ``latency_s``, ``workers`` and ``max_pending``:
    not on the policy, the fleet or the host. So the served share of a whole paper-scale
    pass is known without running it (tests check it equals a run's counters).
    Returns ``{"requests", "dropped", "served_share", "max_wait_s"}``. The wall clock has no
    such answer (it depends on the host): ValueError.
    """
    if cfg.clock == "wall":
        raise ValueError("admission is defined for the simulated and sync clocks; the wall clock depends on the host")
    slots = EmulatorSlots(None if cfg.clock == "sync" else cfg.workers,
                          0.0 if cfg.clock == "sync" else cfg.latency_s, cfg.max_pending)
    times = arrival[submissions(len(arrival), cfg.every, window, cfg.window_mode)]
    due = [slots.admit(float(t)) for t in times]
    served = np.array([d is not None for d in due])
    waits = [d - t - slots.latency for d, t in zip(due, times) if d is not None]
    return {"requests": len(due), "dropped": int((~served).sum()),
            "served_share": float(served.mean()) if len(due) else float("nan"),
            "max_wait_s": float(max(waits)) if waits else 0.0}


@dataclass
class OAILCounters:
    requests: int = 0  #: windows handed to the emulators
    completed: int = 0  #: results received
    applied: int = 0  #: results used for imitation updates
    dropped: int = 0  #: requests dropped from a full backlog
    failed: int = 0  #: requests lost to an expert exception or a dead worker
    unapplied: int = 0  #: admitted but not yet due (or not back) when training ended
    resubmitted: int = 0  #: requests resubmitted after a worker died
    updates: int = 0  #: gradient steps taken
    expert_cpu_s: float = 0.0  #: CPU seconds the emulators spent on the results received
    imitation_cpu_s: float = 0.0  #: CPU seconds of the learner's imitation updates
    lag_decisions: list[int] = field(default_factory=list)  #: decisions from submit to apply

    def as_dict(self) -> dict[str, float]:
        lag = np.asarray(self.lag_decisions, float)
        return {"oail_requests": self.requests, "oail_completed": self.completed, "oail_applied": self.applied,
                "oail_dropped": self.dropped, "oail_failed": self.failed, "oail_unapplied": self.unapplied,
                "oail_resubmitted": self.resubmitted, "oail_updates": self.updates,
                "oail_expert_cpu_s": self.expert_cpu_s, "oail_imitation_cpu_s": self.imitation_cpu_s,
                "oail_served_share": (self.requests - self.dropped) / self.requests if self.requests else float("nan"),
                "oail_lag_p50": float(np.median(lag)) if len(lag) else float("nan")}


@dataclass
class _Pending:
    """An admitted request: its due time in simulated time and its future in the pool."""

    req: EmulatorRequest
    due: float
    future: Future[EmulatorResult] | None = None
    tries: int = 0  #: times sent to the pool
    lost: bool = False  #: its worker died twice: given up


class OAILCallback(BaseCallback):
    """The OAIL loop around a (Maskable)PPO model learning on a :class:`CloudSchedulingEnv`."""

    def __init__(self, cfg: OAILConfig, experts_cfg: ExpertConfig, reward: RewardConfig, seed: int,
                 state: StateSpec | None = None, ent_weight: float = 1e-3, mp_context: str | None = None,
                 targets: str = "plans") -> None:
        super().__init__()
        if targets not in ("plans", "dagger"):
            raise ValueError(f"targets: expected 'plans' or 'dagger', got {targets!r}")
        #: "plans": clone the experts' own trajectories (the authors'); "dagger": the learner's
        #: own observations of the window's decisions, labelled with the best expert's choice
        #: for each task (DAgger-style relabelling; past windows only)
        self.targets = targets
        self._seen: dict[int, np.ndarray] = {}  # decision -> the learner's observation (dagger)
        self.cfg = cfg
        self.experts_cfg = experts_cfg
        self.reward = reward
        self.seed = seed
        self.state = state or StateSpec()
        self.ent_weight = ent_weight
        self.mp_context = mp_context
        self.counters = OAILCounters()
        self.pool: ProcessPoolExecutor | None = None
        self._pending: deque[_Pending] = deque()  # admitted, in submission (= due) order
        self._snapshots: dict[int, Cloud] = {}
        self._done = False
        wall = cfg.clock == "wall"
        self._slots = None if wall else EmulatorSlots(None if cfg.clock == "sync" else cfg.workers,
                                                      0.0 if cfg.clock == "sync" else cfg.latency_s,
                                                      cfg.max_pending)

    # --- lifecycle --------------------------------------------------------------------
    def _on_training_start(self) -> None:
        # attr-defined: SB3 types training_env as a VecEnv; it is a DummyVecEnv (or a wrapper forwarding to one)
        self.env = self.training_env.envs[0].unwrapped  # type: ignore[attr-defined]
        # past windows start W decisions before a submission: snapshot at that phase
        self._snapshot_phase = (-self.experts_cfg.window) % self.cfg.every if self.cfg.window_mode == "past" else 0
        self.pool = self._new_pool()
        # SB3 types model.policy as a BasePolicy; the study's models are MaskablePPO (make_ppo)
        policy = cast("MaskableActorCriticPolicy", self.model.policy)
        self.bc = WeightedBC(policy, self.cfg.learning_rate, self.ent_weight)
        self._maybe_snapshot(self.env.t)

    def _new_pool(self) -> ProcessPoolExecutor:
        # fork starts a worker in milliseconds (spawn re-imports numpy and the package, ~1 s,
        # longer than a whole smoke run); workers never touch torch, so forking a process
        # that has imported it is safe. Elsewhere (macOS, Windows) use the platform default.
        method = self.mp_context or ("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        ctx = multiprocessing.get_context(method)
        if ctx.get_start_method() == "fork":
            # Load the experts' compiled kernels here, once per process, so that every forked
            # worker (and every replacement pool) inherits them. Otherwise each worker loads
            # them in its first request (0.5 s from numba's cache, 3-6 s when it compiles),
            # which oail_expert_cpu_s counted as the experts' work: 4-20 ms per request in a
            # quick-profile cell of 170 requests. It changes no plan (tests/test_oail_warm.py).
            from ilets.agents.experts import warm_up

            warm_up()
        self._stop = ctx.Event()
        pool = ProcessPoolExecutor(max_workers=self.cfg.workers, mp_context=ctx, initializer=init_worker,
                                   initargs=(self._stop,))
        for _ in range(self.cfg.workers):  # start the workers now, not at the first request
            pool.submit(int, 0)
        return pool

    def _on_training_end(self) -> None:
        self.close()

    def close(self, wait: bool = True) -> None:
        """Cancel pending work and stop the worker processes (idempotent).

        With ``wait`` (the pass ended) workers are not killed: a process killed while it
        writes a result leaves a partial message in the pool's result pipe, and the
        executor's manager thread then blocks for ever (and with it the interpreter's exit).
        Instead queued work is cancelled, the stop event asks a running expert to finish
        early, and the pool is joined; a GA or PSO call lasts milliseconds.

        Without ``wait`` (the run was interrupted) the pool's manager thread is not
        joined: workers get :attr:`HUNG_GRACE_S` after the stop event, then are killed. An
        interrupt can leave a lock of a future or of the pool's queue held for ever, because
        CPython may run the signal handler between the lock's acquire and its ``with`` block
        (CPython issue 74174); the manager thread then blocks on that lock and joining it
        would hang the run (seen once: SIGTERM to an ILETS- run). ``ilets`` leaves with
        ``os._exit`` after an interrupt, so a blocked manager thread holds nothing up.
        """
        pool, self.pool = self.pool, None
        if pool is None:
            return
        self.counters.unapplied += len(self._pending)
        self._pending.clear()
        if wait:
            self._stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
        else:
            self._end_workers(pool)

    # --- per decision -----------------------------------------------------------------
    def _on_step(self) -> bool:
        # This runs between two decisions: keep the common case to a few comparisons.
        if self._done:
            return True
        if self.locals["dones"][0]:
            self._done = True  # the online pass is over; the env has been reset
            return True
        i = self.env.t
        if self.targets == "dagger":
            self._seen[i] = self.locals["new_obs"][0]  # the observation decision i is made on
        phase = i % self.cfg.every
        if phase == 0 or phase == self._snapshot_phase:
            self._tick(i)
        return True

    def _tick(self, i: int) -> None:
        """Submit the window that ends at decision i (past mode) or starts there; snapshot."""
        w = self.experts_cfg.window
        if self.cfg.window_mode == "past":
            if i % self.cfg.every == 0 and i - w in self._snapshots:
                snap = self._snapshots.pop(i - w)
                self._submit(i, snap, self._window(i - w, i))
            self._maybe_snapshot(i)
        elif i % self.cfg.every == 0:
            window = self._window(i, i + w)
            if window:
                self._submit(i, self.env.cloud.emulator_copy(window[-1].arrival), window)

    def _maybe_snapshot(self, i: int) -> None:
        """Keep the state before decision i if a past window will start there."""
        if self.cfg.window_mode == "past" and (i + self.experts_cfg.window) % self.cfg.every == 0:
            until = float(self.env.tasks.arrival[min(i + self.experts_cfg.window, len(self.env.tasks)) - 1])
            self._snapshots[i] = self.env.cloud.emulator_copy(until)

    def _window(self, lo: int, hi: int) -> list[Task]:
        hi = min(hi, len(self.env.tasks))
        return [self.env._task(j) for j in range(lo, hi)]

    def _now(self, i: int) -> float:
        """Simulated time of decision ``i`` (its task's arrival); the end of the pass beyond."""
        tasks = self.env.tasks
        return float(tasks.arrival[min(i, len(tasks) - 1)]) if i < len(tasks) else np.inf

    def _submit(self, i: int, snap: Cloud, window: list[Task]) -> None:
        if not window:
            return
        self.counters.requests += 1
        req = EmulatorRequest(self.counters.requests, i, snap, window, tuple(self.cfg.experts),
                              self.experts_cfg, self.reward, self.state,
                              self.seed * 1_000_003 + self.counters.requests)
        if self._slots is None:  # wall clock: the oldest waiting request gives way
            self._pending.append(_Pending(req, np.nan))
            waiting = [p for p in self._pending if p.future is None]
            if len(waiting) > self.cfg.max_pending:
                self._pending.remove(waiting[0])
                self.counters.dropped += 1
            self._fill_wall()
            return
        due = self._slots.admit(self._now(i))
        if due is None:
            self.counters.dropped += 1
            return
        pending = _Pending(req, due)
        self._pending.append(pending)
        self._send(pending)

    def _send(self, pending: _Pending) -> None:
        pending.tries += 1
        assert self.pool is not None, "the pool starts with training"
        try:
            pending.future = self.pool.submit(run_emulator, pending.req)
        except BrokenProcessPool:  # broke since the last look: replace it, then submit
            pending.future = None
            self._restart_pool()
            assert self.pool is not None
            pending.future = self.pool.submit(run_emulator, pending.req)

    def _fill_wall(self) -> None:
        """Wall clock: at most ``workers`` requests in the pool, the rest wait here."""
        busy = sum(1 for p in self._pending if p.future is not None and not p.future.done())
        for p in self._pending:
            if busy >= self.cfg.workers:
                break
            if p.future is None:
                self._send(p)
                busy += 1

    # --- results ----------------------------------------------------------------------
    @overload
    def _result(self, pending: _Pending, block: Literal[True]) -> EmulatorResult | None: ...

    @overload
    def _result(self, pending: _Pending, block: bool) -> EmulatorResult | None | Literal[False]: ...

    def _result(self, pending: _Pending, block: bool) -> EmulatorResult | None | Literal[False]:
        """The request's result; ``None`` if it failed for good; ``False`` if not back (no block)."""
        while not pending.lost:
            fut = pending.future
            assert fut is not None, "a request not lost has been sent"
            if not block and not fut.done():
                return False
            try:
                # waiting (simulated or sync clock) is bounded: a hung expert must not stall the run
                result = fut.result(timeout=self.cfg.request_timeout_s if block else None)
                self.counters.completed += 1
                self.counters.expert_cpu_s += result.cpu_seconds
                return result
            except ResultTimeout:
                if fut.done():  # the expert itself raised a TimeoutError: its own failure
                    log.warning("OAIL emulator failed: %s", fut.exception())
                    return None
                log.warning("OAIL request %d (decision %d) gave no plans within oail.request_timeout_s = %g s "
                            "of waiting; counted as failed, its emulators replaced, the run goes on",
                            pending.req.rid, pending.req.decision, self.cfg.request_timeout_s)
                self._replace_hung_pool(pending)
                return None
            except BrokenProcessPool:
                log.warning("OAIL emulator worker died; replacing the pool")
                self._restart_pool()  # resubmits this request once, or marks it lost
            except Exception as err:  # an expert's bug must not stop scheduling
                log.warning("OAIL emulator failed: %s", err)
                return None
        return None

    #: wall seconds the workers of a replaced (or interrupted) pool get to end after the stop event before
    #: they are killed
    HUNG_GRACE_S = 2.0

    def _replace_hung_pool(self, hung: _Pending) -> None:
        """A request timed out: stop the pool that holds it (its stop event ends a slow expert
        early; a worker still busy after :attr:`HUNG_GRACE_S` is killed), start a new one and
        send it every other request the old pool had not finished. Those results do not depend
        on which process computes them, so nothing else changes."""
        old, self.pool = self.pool, None
        assert old is not None, "a request timed out in the pool"
        self._end_workers(old)
        self.pool = self._new_pool()
        for p in self._pending:
            f = p.future
            if p is hung or f is None or p.lost:
                continue
            if f.done() and not f.cancelled() and not isinstance(f.exception(), BrokenProcessPool):
                continue  # finished in the old pool: its result (or its own error) is intact
            p.future = self.pool.submit(run_emulator, p.req)

    def _end_workers(self, pool: ProcessPoolExecutor) -> None:
        """Stop ``pool`` without joining its manager thread: the stop event ends a slow expert
        early, and a worker still alive :attr:`HUNG_GRACE_S` after it is killed (hung, or
        idle behind a manager thread that cannot send its exit sentinel)."""
        processes = list((getattr(pool, "_processes", None) or {}).values())
        self._stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + self.HUNG_GRACE_S
        for p in processes:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in processes:
            if p.is_alive():
                p.kill()
                p.join(timeout=5)

    def _restart_pool(self) -> None:
        """Replace a broken pool; every request it held is resubmitted once, else lost."""
        old, self.pool = self.pool, None
        if old is not None:
            old.shutdown(wait=True, cancel_futures=True)  # broken: its workers are gone
        self.pool = self._new_pool()
        for p in self._pending:
            f = p.future
            if f is None or p.lost:
                continue  # not sent yet (wall clock), or already given up
            if f.done() and not f.cancelled() and not isinstance(f.exception(), BrokenProcessPool):
                continue  # finished before the break: its result (or its own error) is intact
            if p.tries < 2:
                self.counters.resubmitted += 1
                self._send(p)
            else:
                p.lost, p.future = True, None

    def _on_rollout_start(self) -> None:
        if self._slots is None:
            ready = self._collect_wall()
        else:
            ready = self._collect_due(self._now(self.env.t))
        for result in ready:
            self._imitate(result)
        if self.targets == "dagger":  # forget decisions no pending window can still relabel
            oldest = min((p.req.decision for p in self._pending), default=self.env.t) - self.experts_cfg.window
            for k in [k for k in self._seen if k < oldest]:
                del self._seen[k]

    def _collect_due(self, now: float) -> list[EmulatorResult]:
        """Simulated clock: every result due by ``now``, in order, waiting for late workers."""
        out: list[EmulatorResult] = []
        while self._pending and self._pending[0].due <= now:
            result = self._result(self._pending[0], block=True)
            self._pending.popleft()
            if result is None:
                self.counters.failed += 1
            else:
                out.append(result)
        return out

    def _collect_wall(self) -> list[EmulatorResult]:
        """Wall clock: whatever the workers have finished by now."""
        out: list[EmulatorResult] = []
        keep: deque[_Pending] = deque()
        for pending in list(self._pending):
            result: EmulatorResult | None | Literal[False]
            result = False if pending.future is None and not pending.lost else self._result(pending, block=False)
            if result is False:
                keep.append(pending)  # not sent yet, or still running
            elif result is None:
                self.counters.failed += 1
            else:
                out.append(result)
        self._pending = keep
        self._fill_wall()
        return out

    # --- imitation updates ------------------------------------------------------------
    def _imitate(self, result: EmulatorResult) -> None:
        c0 = time.process_time()
        try:
            with unchecked_distributions():
                self._bc_steps(result)
        finally:
            self.counters.imitation_cpu_s += time.process_time() - c0

    def _targets(self, result: EmulatorResult, plan: ExpertPlan) -> tuple[np.ndarray, np.ndarray]:
        """(observations, expert actions) one plan teaches (see ``targets``)."""
        acts = np.asarray(plan.assignment, dtype=np.int64)
        if self.targets == "plans":
            return plan.observations, acts
        first = result.decision - len(acts)  # past window: the decisions just before submission
        keep = [j for j in range(len(acts)) if first + j in self._seen]
        obs = np.stack([self._seen[first + j] for j in keep]) if keep else np.zeros((0, 0), np.float32)
        return obs, acts[keep]

    def _bc_steps(self, result: EmulatorResult) -> None:
        plans = sorted(result.plans, key=lambda p: p.cost)  # better expert first
        batches = []
        for weight, plan in zip(self.cfg.weights, plans):
            obs, acts = self._targets(result, plan)
            if len(acts):  # dagger: none of the window's decisions may have been seen
                batches.append(LabelledBatch(weight, th.as_tensor(obs), th.as_tensor(acts)))
        self.counters.updates += self.bc.train(batches, self.cfg.bc_steps)
        self.counters.applied += 1
        self.counters.lag_decisions.append(self.env.t - result.decision)

