"""Compiled kernels of the per-server path (numba): the table observation and the scorer.

Why compiled: the per-server observation plus the scorer took a dozen numpy calls on a
(M x 14) array, each paying dispatch and strided reductions, so a decision cost several
times its arithmetic. One loop over the servers does the same arithmetic in one call
(``benchmarks/bench_per_server.py`` measures the decision against the flat path).

Portability: no ``fastmath``, so LLVM keeps every sum in the order written and contracts no
multiply-add; the results are the same bits on any x86-64 CPU. The inner loops run
across servers or features (independent sums), which LLVM vectorises without reordering any.
``cache=True`` keeps the compiled code beside this file, so only the first process compiles.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def write_table(out: np.ndarray, start: np.ndarray, now: float, mips: np.ndarray, capacity: np.ndarray,
                used: np.ndarray, n_tasks: np.ndarray, drain: np.ndarray, speed: np.ndarray, power: np.ndarray,
                act_per_cpu: np.ndarray, cpu: float, length: float, deadline: float, scale: float,
                top: float, tol: float) -> None:
    """Write the rows of :class:`ilets.agents.observation.ServerTable` into ``out`` (M, 14)."""
    best = math.inf
    for i in range(out.shape[0]):
        if start[i] < math.inf:
            r = start[i] - now + length / mips[i]
            if r < best:
                best = r
    for i in range(out.shape[0]):
        fits = start[i] < math.inf
        execution = length / mips[i]
        wait = start[i] - now if fits else 0.0
        response = wait + execution
        marginal = act_per_cpu[i] * cpu
        free = capacity[i] - used[i]
        ahead = drain[i] - now
        n = n_tasks[i]
        # the log calls are most of a row's cost: log1p of a zero is that zero (IEEE, sign kept),
        # and with no wait the response is the execution time, so those calls are skipped
        spread = math.log1p(execution / scale)
        out[i, 0] = 1.0 if fits else 0.0
        out[i, 1] = wait / scale if wait == 0.0 else math.log1p(wait / scale)
        out[i, 2] = (spread if wait == 0.0 else math.log1p(response / scale)) if fits else 0.0
        out[i, 3] = spread
        out[i, 4] = free if free > 0.0 else 0.0
        out[i, 5] = 0.0 if n == 0 else math.log1p(n)
        out[i, 6] = math.log1p(ahead / scale) if ahead > 0.0 else 0.0
        out[i, 7] = speed[i]
        out[i, 8] = power[i]
        out[i, 9] = marginal / top
        out[i, 10] = math.log1p(marginal * execution / (top * scale))
        out[i, 11] = 1.0 if fits and response <= deadline + tol else 0.0
        out[i, 12] = math.log1p(response / deadline) if fits else 0.0
        out[i, 13] = (0.0 if response == best else math.log(response / best)) if fits else 0.0


@njit(cache=True, nogil=True)
def context(obs: np.ndarray, n_task: int, width: int, ctx: np.ndarray) -> None:
    """The pooled summary ``[task; mean_i row_i; max_i row_i]`` of one observation into ``ctx``."""
    m = (obs.shape[0] - n_task) // width
    for j in range(n_task):
        ctx[j] = obs[j]
    for f in range(width):
        s = np.float32(0.0)
        top = obs[n_task + f]
        for i in range(m):
            v = obs[n_task + i * width + f]
            s += v
            if v > top:
                top = v
        ctx[n_task + f] = s / np.float32(m)
        ctx[n_task + width + f] = top


@njit(cache=True, nogil=True)
def scores(obs: np.ndarray, n_task: int, width: int, w_row: np.ndarray, bias: np.ndarray, w_score: np.ndarray,
           b_score: np.float32, out: np.ndarray) -> None:
    """``out[i] = w_score . relu(W_row row_i + bias) + b_score`` for every server ``i``.

    ``bias`` is the context term ``W_c ctx + b`` (the same for every server).

    Every server's sums run in the order written (over features for a hidden unit, then over
    hidden units for the score), but the loops run across servers, on a (width, M) copy of
    the rows: they vectorise over servers without reordering any sum, where a loop per server
    was a chain of dependent additions (about 3x slower at 200 servers, same bits). The ReLU
    is a select, not a branch: adding +0.0 leaves a round-to-nearest sum that started at +0.0
    as it was, so the bits are those of skipping the unit.
    """
    m, hidden = out.shape[0], bias.shape[0]
    x = np.empty((width, m), np.float32)
    for i in range(m):
        base = n_task + i * width
        for f in range(width):
            x[f, i] = obs[base + f]
    h = np.empty((hidden, m), np.float32)
    for k in range(hidden):
        for i in range(m):
            h[k, i] = bias[k]
    for f in range(width):
        for k in range(hidden):
            w = w_row[f, k]
            for i in range(m):
                h[k, i] += x[f, i] * w
    for i in range(m):
        out[i] = np.float32(0.0)
    for k in range(hidden):
        w = w_score[k]
        for i in range(m):
            v = h[k, i] * w
            out[i] += v if h[k, i] > 0.0 else np.float32(0.0)
    for i in range(m):
        out[i] += b_score


@njit(cache=True, nogil=True)
def forward(obs: np.ndarray, n_task: int, width: int, w_row: np.ndarray, w_context: np.ndarray,
            b_context: np.ndarray, w_score: np.ndarray, b_score: np.float32, w_critic: np.ndarray, b_critic: np.ndarray,
            w_value: np.ndarray, b_value: np.float32, out: np.ndarray) -> float:
    """Scores of every server into ``out`` and the critic's value, in one pass (see
    :class:`ilets.agents.per_server.PerServerNumpy`)."""
    ctx = np.empty(n_task + 2 * width, np.float32)
    context(obs, n_task, width, ctx)
    hidden = b_context.shape[0]
    bias = np.empty(hidden, np.float32)
    for k in range(hidden):
        bias[k] = b_context[k]
    for j in range(ctx.shape[0]):
        c = ctx[j]
        for k in range(hidden):
            bias[k] += c * w_context[j, k]
    scores(obs, n_task, width, w_row, bias, w_score, b_score, out)
    hc = b_critic.shape[0]
    value = 0.0
    for k in range(hc):
        a = b_critic[k]
        for j in range(ctx.shape[0]):
            a += ctx[j] * w_critic[j, k]
        value += math.tanh(a) * w_value[k]
    # return-value: numpy's stubs type float + float32 as float32; numba adds to the float64 accumulator
    return value + b_value  # type: ignore[return-value]


@njit(cache=True, nogil=True)
def sample(z: np.ndarray, mask: np.ndarray, u: float) -> tuple[int, float]:
    """Inverse-CDF draw from the masked softmax of ``z`` at uniform ``u``; (server, log-probability).

    What :func:`ilets.agents.masked.sample_masked` computes, in one compiled loop (float64)."""
    top = -math.inf
    last = -1
    for i in range(z.shape[0]):
        if mask[i]:
            last = i
            if z[i] > top:
                top = z[i]
    total = 0.0
    for i in range(z.shape[0]):
        if mask[i]:
            total += math.exp(z[i] - top)
    if not (0.0 < total < math.inf):
        return -1, math.nan
    target = u * total
    acc = 0.0
    for i in range(z.shape[0]):
        if mask[i]:
            acc += math.exp(z[i] - top)
            if acc > target:
                return i, z[i] - top - math.log(total)
    return last, z[last] - top - math.log(total)  # the draw rounded up to the total


@njit(cache=True, nogil=True)
def greedy(obs: np.ndarray, n_task: int, width: int, w_row: np.ndarray, bias: np.ndarray, w_score: np.ndarray,
           b_score: np.float32, mask: np.ndarray) -> int:
    """The first allowed server of highest score (:func:`scores`), or -1 if none is allowed.

    What ``act_masked(scores, mask)`` returns (where no allowed score is NaN): the same float32
    score of every server, then the first maximum among the allowed ones."""
    z = np.empty(mask.shape[0], np.float32)
    scores(obs, n_task, width, w_row, bias, w_score, b_score, z)
    best, top = -1, np.float32(0.0)
    for i in range(mask.shape[0]):
        if mask[i] and (best < 0 or z[i] > top):
            best, top = i, z[i]
    return best
