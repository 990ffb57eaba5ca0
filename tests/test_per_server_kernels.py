"""The compiled per-server kernels give the bits of their plain definitions.

The kernels reorder loops (across servers instead of per server) and skip log calls whose
result is known; the shipped per-server cells depend on their exact float bits, so each is
held here to a plain, per-server Python reading of its docstring, on random inputs with
zeros of both signs, infinities, NaN and tied rows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ilets.agents.masked import act_masked
from ilets.agents.per_server_kernels import greedy, scores, write_table

N_TASK, WIDTH = 4, 14


def plain_scores(obs, w_row, bias, w_score, b_score) -> np.ndarray:
    """``w_score . relu(W_row row_i + bias) + b_score``, one server at a time, in float32, each
    sum in the order written and a unit skipped when its input is not positive."""
    f32 = np.float32
    m = (len(obs) - N_TASK) // WIDTH
    out = np.empty(m, np.float32)
    for i in range(m):
        row = obs[N_TASK + i * WIDTH:N_TASK + (i + 1) * WIDTH]
        s = f32(0.0)
        for k in range(len(bias)):
            h = f32(bias[k])
            for f in range(WIDTH):
                h = f32(h + f32(row[f] * w_row[f, k]))
            if h > 0.0:
                s = f32(s + f32(h * w_score[k]))
        out[i] = f32(s + b_score)
    return out


def plain_table(start, now, mips, capacity, used, n_tasks, drain, speed, power, act, cpu, length, deadline, scale,
                top, tol) -> np.ndarray:
    """The rows of the per-server table, every column by its formula (no call skipped)."""
    fits = start < math.inf
    best = min((start[i] - now + length / mips[i] for i in range(len(start)) if fits[i]), default=math.inf)
    out = np.empty((len(start), WIDTH))
    for i in range(len(start)):
        execution = length / mips[i]
        wait = start[i] - now if fits[i] else 0.0
        response = wait + execution
        marginal = act[i] * cpu
        free = capacity[i] - used[i]
        ahead = drain[i] - now
        out[i] = [1.0 if fits[i] else 0.0, math.log1p(wait / scale),
                  math.log1p(response / scale) if fits[i] else 0.0, math.log1p(execution / scale),
                  max(free, 0.0), math.log1p(n_tasks[i]), math.log1p(max(ahead, 0.0) / scale), speed[i], power[i],
                  marginal / top, math.log1p(marginal * execution / (top * scale)),
                  1.0 if fits[i] and response <= deadline + tol else 0.0,
                  math.log1p(response / deadline) if fits[i] else 0.0,
                  math.log(response / best) if fits[i] else 0.0]
    return out


def awkward(rng: np.random.Generator, size: int) -> np.ndarray:
    """float32 numbers with zeros of both signs, tiny and huge ones, infinities and NaN."""
    x = rng.normal(size=size) * rng.choice([0.0, 1.0, 1.0, 1e-30, 1e30, 3.0], size=size)
    x[rng.random(size) < 0.02] = -0.0
    x[rng.random(size) < 0.01] = np.inf
    x[rng.random(size) < 0.01] = np.nan
    return x.astype(np.float32)


@pytest.mark.parametrize("seed", range(6))
def test_scores_and_greedy_are_the_plain_per_server_sums(seed):
    rng = np.random.default_rng(seed)
    hidden = int(rng.choice([3, 8, 32]))
    for _ in range(8):
        m = int(rng.integers(1, 24))
        obs = awkward(rng, N_TASK + WIDTH * m) if seed % 2 else rng.normal(size=N_TASK + WIDTH * m).astype(np.float32)
        if m > 2:  # a tie: the same row twice, so the first of them must win
            obs[N_TASK + WIDTH:N_TASK + 2 * WIDTH] = obs[N_TASK:N_TASK + WIDTH]
        w_row = rng.normal(size=(WIDTH, hidden)).astype(np.float32)
        bias, w_score = rng.normal(size=hidden).astype(np.float32), rng.normal(size=hidden).astype(np.float32)
        b_score = np.float32(rng.normal())
        out = np.empty(m, np.float32)
        scores(obs, N_TASK, WIDTH, w_row, bias, w_score, b_score, out)
        want = plain_scores(obs, w_row, bias, w_score, b_score)
        assert out.tobytes() == want.tobytes()
        mask = rng.random(m) < 0.7
        best = greedy(obs, N_TASK, WIDTH, w_row, bias, w_score, b_score, mask)
        allowed = [i for i in range(m) if mask[i]]
        first_best = -1  # the first allowed server, then any later one that scores strictly more
        for i in allowed:
            if first_best < 0 or want[i] > want[first_best]:
                first_best = i
        assert best == first_best
        if allowed and not np.isnan(want[allowed]).any():
            assert best == act_masked(want, mask)


@pytest.mark.parametrize("seed", range(4))
def test_the_table_is_its_formulas_bit_for_bit(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(30):
        m = int(rng.integers(1, 40))
        now = float(rng.choice([0.0, 5.0, 1e6 * rng.random()]))
        # idle servers (start == now), busy ones, ones the task never fits, and -0.0 starts at time 0
        start = np.where(rng.random(m) < 0.5, now, now + rng.exponential(3.0, m))
        start[rng.random(m) < 0.2] = np.inf
        if now == 0.0:
            start[rng.random(m) < 0.3] = -0.0
        mips = rng.choice([500.0, 1000.0, 2000.0], m)
        capacity = rng.random(m)
        args = (start, now, mips, capacity, capacity * rng.random(m) * 1.2,
                rng.integers(0, 4, m) * (rng.random(m) < 0.5), now + rng.normal(0.0, 5.0, m), rng.random(m),
                rng.random(m), rng.random(m) * 100, float(rng.random()), float(rng.choice([1e-3, 3000 * rng.random()])),
                float(rng.exponential(2.0) + 0.01), 10.0, 500.0, 1e-9)
        out = np.empty((m, WIDTH))
        write_table(out, *args)
        assert out.tobytes() == plain_table(*args).tobytes()
