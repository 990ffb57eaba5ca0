"""Compiled inner loop of the experts' window fitness (numba).

:class:`ilets.agents.experts.WindowFitness` scores a population of plans for one window: for every
plan and task in arrival order, the task's exact FCFS start on its server (the snapshot's
unfinished tasks plus the window tasks the plan put there before it), then the fleet power
at its arrival. The numpy version (``WindowFitness.reference_costs``) vectorises over plans
but must walk the W tasks in Python, sorting a padded (P, K + W) array per task, and a GA or
PSO call makes ~30 such passes (``benchmarks/bench_experts.py`` times both paths). Here the
same arithmetic runs as one compiled loop per population: each task looks only at the few
tasks that are still in the way on its server, so a pass costs microseconds.

What it returns is the *schedule* (start and power of every task under every plan); the cost
of that schedule is computed by :func:`ilets.simulator.objective._cost`, the one cost formula of the
study, so the kernel holds no objective of its own.

Rounding: the kernel adds held CPU and power in task order, numpy in pairwise blocks, so
starts and costs may differ from the reference in the last bits (tests bound the difference
at 1e-9 and check that GA and PSO return the same plans on paper-scale snapshots).

Compilation: ``cache=True`` keeps the compiled code beside this file (``__pycache__``), so
only the first process on a machine pays the ~2-3 s compile.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _start_on(t0: float, room: float, fin: np.ndarray, cpu: np.ndarray, n: int,
              wfin: np.ndarray, wcpu: np.ndarray, wn: int, buf_f: np.ndarray, buf_c: np.ndarray) -> float:
    """FCFS start of a task that cannot start before ``t0`` and fits while held CPU <= ``room``.

    Unfinished tasks in the way: ``fin[:n], cpu[:n]`` (the snapshot's, sorted by finish) and
    ``wfin[:wn], wcpu[:wn]`` (window tasks placed earlier). Same rule as
    ``Cloud.earliest_start``: start at ``t0`` if the CPU still held then fits, else at the
    first finish (in time order) after which it fits.
    """
    k = 0
    held = 0.0
    for i in range(n):
        if fin[i] > t0:
            buf_f[k] = fin[i]
            buf_c[k] = cpu[i]
            held += cpu[i]
            k += 1
    for i in range(wn):
        if wfin[i] > t0:
            buf_f[k] = wfin[i]
            buf_c[k] = wcpu[i]
            held += wcpu[i]
            k += 1
    if held <= room:
        return t0
    if k == 0:  # nothing left to finish and still no room: the server can never hold it
        return np.inf
    # insertion sort by finish: k is small (tasks running when the queue's last one starts)
    for i in range(1, k):
        f, c = buf_f[i], buf_c[i]
        j = i - 1
        while j >= 0 and buf_f[j] > f:
            buf_f[j + 1] = buf_f[j]
            buf_c[j + 1] = buf_c[j]
            j -= 1
        buf_f[j + 1] = f
        buf_c[j + 1] = c
    freed = 0.0
    for i in range(k):
        freed += buf_c[i]
        if held - freed <= room:
            return buf_f[i]
    return buf_f[k - 1]  # only through float trouble: Cloud returns the last finish too


@njit(cache=True, nogil=True)
def schedule_plans(plans: np.ndarray, t: np.ndarray, cpu: np.ndarray, execution: np.ndarray,
                   share: np.ndarray, room: np.ndarray, last_start: np.ndarray, snap_fin: np.ndarray,
                   snap_cpu: np.ndarray, snap_n: np.ndarray, base_power: np.ndarray):
    """Start time and fleet power at arrival of every task under every plan.

    Args (W tasks, M servers, P plans, K snapshot tasks per server at most):
        plans: (P, W) int64 server per task.
        t, cpu: (W,) arrivals (non-decreasing) and CPU requests.
        execution, share, room: (W, M) execution time, active power of the task, and
            ``capacity + eps - cpu`` on each server.
        last_start: (M,) snapshot's latest queued start per server.
        snap_fin, snap_cpu, snap_n: (M, K), (M, K), (M,) the snapshot's unfinished tasks
            that can be in the way (finish after ``last_start``), sorted by finish.
        base_power: (W,) fleet power at each arrival with no window task placed.

    Returns:
        ``(start, power)``, both (P, W): the task's FCFS start and the fleet power at its
        arrival with its own share counted (as ``cost_of`` counts it).
    """
    p_count, w = plans.shape
    k_max = snap_fin.shape[1]
    start = np.empty((p_count, w))
    power = np.empty((p_count, w))
    finish = np.empty(w)
    ls = last_start.copy()
    wfin = np.empty(w)
    wcpu = np.empty(w)
    buf_f = np.empty(k_max + w)
    buf_c = np.empty(k_max + w)
    for p in range(p_count):
        for j in range(w):
            s = plans[p, j]
            t0 = t[j] if t[j] > ls[s] else ls[s]
            wn = 0
            for i in range(j):  # window tasks this plan put on s before task j
                if plans[p, i] == s:
                    wfin[wn] = finish[i]
                    wcpu[wn] = cpu[i]
                    wn += 1
            st = _start_on(t0, room[j, s], snap_fin[s], snap_cpu[s], snap_n[s], wfin, wcpu, wn, buf_f, buf_c)
            start[p, j] = st
            finish[j] = st + execution[j, s]
            ls[s] = st
            # fleet power at t_j: the snapshot's, the earlier window tasks running then, its own
            pw = 0.0
            for i in range(j):
                if start[p, i] <= t[j] and finish[i] > t[j]:
                    pw += share[i, plans[p, i]]
            power[p, j] = base_power[j] + pw + share[j, s]
        for j in range(w):  # restore the servers this plan touched
            s = plans[p, j]
            ls[s] = last_start[s]
    return start, power


@njit(cache=True, nogil=True)
def standalone_starts(t: np.ndarray, room: np.ndarray, last_start: np.ndarray, snap_fin: np.ndarray,
                      snap_cpu: np.ndarray, snap_n: np.ndarray) -> np.ndarray:
    """(W, M) FCFS start of each task placed alone on each server of the snapshot."""
    w, m = room.shape
    out = np.empty((w, m))
    k_max = snap_fin.shape[1]
    buf_f = np.empty(k_max)
    buf_c = np.empty(k_max)
    empty = np.empty(0)
    for j in range(w):
        for s in range(m):
            t0 = t[j] if t[j] > last_start[s] else last_start[s]
            out[j, s] = _start_on(t0, room[j, s], snap_fin[s], snap_cpu[s], snap_n[s], empty, empty, 0, buf_f, buf_c)
    return out


@njit(cache=True, nogil=True)
def pso_move(x: np.ndarray, v: np.ndarray, pbest: np.ndarray, g: int, r1: np.ndarray, r2: np.ndarray,
             inertia: float, c1: float, c2: float, vmax: float) -> None:
    """One inertia-weight PSO move of every particle's scores, in place.

    The same arithmetic, in the same order, as the numpy expression
    ``v = inertia * v + c1 * r1 * (pbest - x) + c2 * r2 * (pbest[g] - x)``, clipped to
    ``[-vmax, vmax]``, then ``x += v``: one pass instead of ten temporary arrays.
    """
    n, w, c = x.shape
    for p in range(n):
        for j in range(w):
            for k in range(c):
                xv = x[p, j, k]
                vv = inertia * v[p, j, k] + c1 * r1[p, j, k] * (pbest[p, j, k] - xv) + c2 * r2[p, j, k] * (pbest[g, j, k] - xv)
                if vv < -vmax:
                    vv = -vmax
                elif vv > vmax:
                    vv = vmax
                v[p, j, k] = vv
                x[p, j, k] = xv + vv


@njit(cache=True, nogil=True)
def decode_scores(x: np.ndarray, count: np.ndarray) -> np.ndarray:
    """(P, W) index of each task's highest score among its first ``count[j]`` candidates
    (the first on ties, as ``argmax``)."""
    n, w, _ = x.shape
    out = np.empty((n, w), np.int64)
    for p in range(n):
        for j in range(w):
            best = 0
            for k in range(1, count[j]):
                if x[p, j, k] > x[p, j, best]:
                    best = k
            out[p, j] = best
    return out


@njit(cache=True, nogil=True)
def pso_shake(x: np.ndarray, shake: np.ndarray, scores: np.ndarray) -> None:
    """``x[shake] = scores`` in place (rows in C order, as numpy's boolean indexing)."""
    n, w, c = x.shape
    r = 0
    for p in range(n):
        for j in range(w):
            if shake[p, j]:
                for k in range(c):
                    x[p, j, k] = scores[r, k]
                r += 1


@njit(cache=True, nogil=True)
def keep_better(pbest: np.ndarray, pbest_fit: np.ndarray, x: np.ndarray, fit: np.ndarray) -> None:
    """Each particle's best scores and cost so far, updated in place where ``fit`` is lower."""
    for p in range(x.shape[0]):
        if fit[p] < pbest_fit[p]:
            pbest_fit[p] = fit[p]
            pbest[p] = x[p]
