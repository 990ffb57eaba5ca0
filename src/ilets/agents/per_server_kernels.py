"""Compiled kernels of the per-server path (numba): the table observation and the scorer.

Why compiled: the per-server observation plus the scorer took a dozen numpy calls on a
(M x 14) array, each paying dispatch and strided reductions, so a decision cost several
times its arithmetic. One loop over the servers does the same arithmetic in one call
(``benchmarks/bench_per_server.py`` measures the decision against the flat path).

Portability: no ``fastmath``, so LLVM keeps every sum in the order written and contracts no
multiply-add; the results are the same bits on any x86-64 CPU. The scorer's inner loop runs
over hidden units (independent sums), which LLVM vectorises without reordering any of them.
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
        out[i, 0] = 1.0 if fits else 0.0
        out[i, 1] = math.log1p(wait / scale)
        out[i, 2] = math.log1p(response / scale) if fits else 0.0
        out[i, 3] = math.log1p(execution / scale)
        out[i, 4] = free if free > 0.0 else 0.0
        out[i, 5] = math.log1p(n_tasks[i])
        out[i, 6] = math.log1p((ahead if ahead > 0.0 else 0.0) / scale)
        out[i, 7] = speed[i]
        out[i, 8] = power[i]
        out[i, 9] = marginal / top
        out[i, 10] = math.log1p(marginal * execution / (top * scale))
        out[i, 11] = 1.0 if fits and response <= deadline + tol else 0.0
        out[i, 12] = math.log1p(response / deadline) if fits else 0.0
        out[i, 13] = math.log(response / best) if fits else 0.0


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
def _row_score(obs: np.ndarray, base: int, width: int, w_row: np.ndarray, bias: np.ndarray, w_score: np.ndarray,
               h: np.ndarray) -> np.float32:
    """``w_score . relu(W_row row + bias)`` of the row starting at ``obs[base]`` (float32;
    ``h`` is scratch of the hidden size). The one scorer of :func:`scores` and :func:`greedy`."""
    hidden = bias.shape[0]
    for k in range(hidden):
        h[k] = bias[k]
    for f in range(width):
        x = obs[base + f]
        for k in range(hidden):
            h[k] += x * w_row[f, k]
    s = np.float32(0.0)
    for k in range(hidden):
        if h[k] > 0.0:
            s += h[k] * w_score[k]
    return s


@njit(cache=True, nogil=True)
def scores(obs: np.ndarray, n_task: int, width: int, w_row: np.ndarray, bias: np.ndarray, w_score: np.ndarray,
           b_score: np.float32, out: np.ndarray) -> None:
    """``out[i] = w_score . relu(W_row row_i + bias) + b_score`` for every server ``i``.

    ``bias`` is the context term ``W_c ctx + b`` (the same for every server)."""
    h = np.empty(bias.shape[0], np.float32)
    for i in range(out.shape[0]):
        out[i] = _row_score(obs, n_task + i * width, width, w_row, bias, w_score, h) + b_score


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

    What ``act_masked(scores, mask)`` returns, without writing the scores out: the same
    float32 score of every server, then the first maximum among the allowed ones."""
    h = np.empty(bias.shape[0], np.float32)
    best, top = -1, np.float32(0.0)
    for i in range(mask.shape[0]):
        if not mask[i]:
            continue
        s = _row_score(obs, n_task + i * width, width, w_row, bias, w_score, h) + b_score
        if best < 0 or s > top:
            best, top = i, s
    return best
