"""The one seed-level resampler under every interval of the study, and what it rests on:
the measures' directions, the method order, seeded RNG keys.

Units of analysis
-----------------
A **cell** is one (method, servers, seed) run. Seeds are the independent replicates: every
confidence interval (CI) below resamples *seeds* (cells), never decisions or windows inside
a cell, because decisions within one run are strongly autocorrelated and are not independent
evidence. A **scale** is a fleet size (``servers``).

Bootstrap CIs: percentile, not BCa
----------------------------------
All CIs are *percentile* bootstrap intervals (the ``level`` quantile range of the statistic
over ``reps`` resamples). We do not use BCa (scipy's default) because the study has few
seeds per cell (often 3-10): BCa's acceleration is a jackknife estimate that is itself very
noisy at such ``n``, and on the discrete bootstrap distributions of tiny samples, or on
zero-variance samples, scipy's BCa returns NaN with a warning. Percentile intervals are
always defined and are what rliable uses (so the book's CIs follow one rule). They are not
widened to contain the point: a ratio of means can lie outside its percentile interval.
Caveat, stated in the book: with 3-5 seeds any bootstrap CI under-covers; read the
intervals as descriptive.

One resampler
-------------
Every comparison of two methods (or of a variant with the main study) over seeds, in the
improvement table, the chapters' comparison tables and the claim verdicts, goes through
:func:`seed_effect` (one RNG keying, paired or unpaired) and :func:`percentile_interval`
(one interval rule), and is judged by :func:`effect_verdict`. The same comparison therefore
gets the same interval and the same verdict wherever the book shows it.

Degenerate samples are handled, not crashed on: ``n == 1`` gives the interval ``[x, x]``
with ``ci_note == "n=1"`` (no evidence of spread, not zero uncertainty); a zero-variance
sample gives ``[x, x]`` with ``ci_note == "zero variance"``; NaN values are dropped first
and counted in ``n_nan``.

Sign conventions
----------------
:data:`HIGHER_IS_BETTER` records, for each metric, which direction is better. Relative
improvements are signed so that **positive means better than the baseline**, whatever the
metric's direction (the paper's convention).
"""

from __future__ import annotations

import warnings
import zlib
from typing import Callable, Iterable, NamedTuple, Sequence

import numpy as np
import pandas as pd
import scipy.stats

from ilets.config import HEURISTICS
from ilets.method_table import LEARNERS
from ilets.metric_table import directions


#: Direction of each metric of the metrics and curves tables (True: higher is better).
HIGHER_IS_BETTER: dict[str, bool] = directions()  # from ilets.metric_table, the one table of measures

#: Default number of bootstrap resamples.
DEFAULT_REPS = 2000


# --- helpers ----------------------------------------------------------------------------

class CI(NamedTuple):
    """A point estimate with its bootstrap interval.

    ``note`` is ``""`` for an ordinary interval, ``"n=1"`` for a single value (interval
    collapsed to the point), ``"zero variance"`` when every value is equal, ``"empty"`` when
    no finite value was given (everything NaN).
    """

    point: float
    low: float
    high: float
    n: int
    note: str = ""


def _key_seed(*parts) -> list[int]:
    """A deterministic seed sequence from mixed parts (``hash`` of str is salted per process)."""
    out = []
    for p in parts:
        if isinstance(p, (int, np.integer)):
            out.append(int(p) & 0xFFFFFFFF)
        else:
            out.append(zlib.crc32(str(p).encode()))
    return out


def _direction(metric: str, higher_is_better: bool | None) -> bool:
    if higher_is_better is not None:
        return bool(higher_is_better)
    if metric not in HIGHER_IS_BETTER:
        raise ValueError(f"unknown direction of {metric!r}: pass higher_is_better=")
    return HIGHER_IS_BETTER[metric]


def method_order(methods: Iterable[str]) -> list[str]:
    """Methods in display order: the four learners, then the heuristics, then the rest A-Z."""
    known = list(LEARNERS) + list(HEURISTICS)
    ms = list(dict.fromkeys(methods))
    return [m for m in known if m in ms] + sorted(m for m in ms if m not in known)


def _values(metrics: pd.DataFrame, method: str, servers, col: str) -> pd.Series:
    g = metrics[(metrics["method"] == method) & (metrics["servers"] == servers)]
    s = g.groupby("seed")[col].mean() if len(g) else pd.Series(dtype=float)
    return s[np.isfinite(s.to_numpy(dtype=float))].astype(float)


class SeedMeans:
    """``_values(metrics, method, servers, col)`` for many lookups on one table: the table is
    split by (method, servers) once, where filtering the whole table again for every
    (method, scale, metric) cost most of a table's time. The same numbers: the same rows
    reach the same per-seed ``mean``."""

    def __init__(self, metrics: pd.DataFrame) -> None:
        groups = metrics.groupby(["method", "servers"], sort=False) if len(metrics) else ()
        self._by_seed = {key: g.groupby("seed") for key, g in groups}

    def __call__(self, method: str, servers, col: str) -> pd.Series:
        grouped = self._by_seed.get((method, servers))
        if grouped is None:
            return pd.Series(dtype=float)
        s = grouped[col].mean()
        return s[np.isfinite(s.to_numpy(dtype=float))].astype(float)


def _rel(mean_m, mean_b, higher: bool):
    """Signed relative improvement (fraction); positive = better. NaN where base is 0."""
    mean_m, mean_b = np.asarray(mean_m, float), np.asarray(mean_b, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (mean_m - mean_b) if higher else (mean_b - mean_m)
        return np.where(mean_b != 0, d / np.abs(mean_b), np.nan)


# --- the generic bootstrap ---------------------------------------------------------------

def bootstrap_ci(values, stat: Callable = np.mean, level: float = 0.95, reps: int = DEFAULT_REPS,
                 seed: int = 0) -> CI:
    """Percentile bootstrap CI of ``stat`` over the 1-D sample ``values``.

    NaNs are dropped. ``point = stat(values)``; ``[low, high]`` are the ``(1-level)/2`` and
    ``(1+level)/2`` quantiles of ``stat`` over ``reps`` resamples with replacement
    (``scipy.stats.bootstrap``, ``method="percentile"``, generator ``default_rng(seed)``).
    A single value or a zero-variance sample gives ``low == high == point`` and a ``note``
    (see :class:`CI`); an empty sample gives NaNs. ``stat`` may accept ``axis=`` (then it is
    vectorised) or not.
    """
    x = np.asarray(values, dtype=float).ravel()
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return CI(np.nan, np.nan, np.nan, 0, "empty")
    point = float(stat(x))
    if n == 1:
        return CI(point, point, point, 1, "n=1")
    if np.all(x == x[0]):
        return CI(point, point, point, n, "zero variance")
    res = scipy.stats.bootstrap((x,), stat, n_resamples=reps, confidence_level=level, method="percentile",
                                rng=np.random.default_rng(seed))
    return CI(point, float(res.confidence_interval.low), float(res.confidence_interval.high), n)


# --- the one seed-level resampler --------------------------------------------------------

class SeedEffect(NamedTuple):
    """``x`` against ``y`` over seeds: the point estimates and their bootstrap resamples.

    ``rel`` is the signed relative improvement of ``x`` over ``y`` (a fraction, positive =
    ``x`` better, see :func:`_rel`), ``diff`` the raw difference of the seed means
    ``mean_x - mean_y``; ``rel_reps``/``diff_reps`` are the same quantities on each of the
    ``reps`` resamples. ``n_x``/``n_y`` count the seeds used (the common seeds when paired).
    """

    n_x: int
    n_y: int
    mean_x: float
    mean_y: float
    rel: float
    diff: float
    rel_reps: np.ndarray
    diff_reps: np.ndarray


def seed_effect(x: pd.Series, y: pd.Series, higher: bool, paired: bool = True, reps: int = DEFAULT_REPS,
                key: Sequence = (0,)) -> SeedEffect | None:
    """The one resampler behind every comparison of the study (tables, chapters, verdicts).

    ``x`` and ``y`` are per-seed values indexed by seed (NaNs dropped). The resamples are
    scipy's (``scipy.stats.bootstrap``, its ``bootstrap_distribution`` of the difference and
    of the relative improvement of the means); ``paired=True`` keeps the seeds both have and
    resamples them jointly (a seed fixes the workload and the fleet for every method);
    ``paired=False`` resamples each side's seeds independently.
    The random stream is keyed by ``key`` (callers pass ``(seed, *group, metric, x_name,
    y_name)``) and the pairing, through :func:`_key_seed`, so one comparison always gets the
    same resamples whichever function asks for it, and adding a method changes no other
    comparison. None when either side has no value.
    """
    x = x[np.isfinite(x.to_numpy(dtype=float))].astype(float)
    y = y[np.isfinite(y.to_numpy(dtype=float))].astype(float)
    if paired:
        common = x.index.intersection(y.index)
        x, y = x.loc[common], y.loc[common]
    if len(x) == 0 or len(y) == 0:
        return None
    xv, yv = x.to_numpy(), y.to_numpy()

    def statistic(a, b, axis=-1):
        ma, mb = a.mean(axis=axis), b.mean(axis=axis)
        return np.stack([ma - mb, _rel(ma, mb, higher)])

    # scipy needs two observations per sample; resampling one value always gives it back, so
    # a single seed is passed twice (same bootstrap law, no spread: never a resolved verdict)
    xs, ys = (np.repeat(v, 2) if len(v) == 1 else v for v in (xv, yv))  # paired: both or neither
    rng = np.random.default_rng(np.random.SeedSequence(_key_seed(*key, "paired" if paired else "unpaired")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero-variance samples: a degenerate but valid distribution
        res = scipy.stats.bootstrap((xs, ys), statistic, n_resamples=reps, paired=paired, vectorized=True,
                                    method="percentile", rng=rng)
    diff_reps, rel_reps = res.bootstrap_distribution
    return SeedEffect(len(xv), len(yv), float(xv.mean()), float(yv.mean()), float(_rel(xv.mean(), yv.mean(), higher)),
                      float(xv.mean() - yv.mean()), rel_reps, diff_reps)


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The one interval rule: the ``(1-level)/2`` and ``(1+level)/2`` quantiles of the finite
    resamples (percentile bootstrap, see the module docstring), NaNs when none is finite.

    Not widened to contain the point estimate: for a ratio of means on a few seeds the point
    can fall outside the percentile interval, and hiding that would overstate agreement."""
    s = np.asarray(samples, dtype=float)
    s = s[np.isfinite(s)]
    if len(s) == 0:
        return np.nan, np.nan
    alpha = (1 - level) / 2
    lo, hi = np.quantile(s, [alpha, 1 - alpha])
    return float(lo), float(hi)


def effect_verdict(rel_low: float, rel_high: float, n_x: int, n_y: int) -> str:
    """A comparison's verdict from its interval of the signed relative improvement:
    ``"better"`` (interval above 0), ``"worse"`` (below 0), ``"unresolved"`` (straddles 0,
    or fewer than 2 seeds on a side: one seed is no evidence of spread)."""
    if min(n_x, n_y) < 2 or not (np.isfinite(rel_low) and np.isfinite(rel_high)):
        return "unresolved"
    if rel_low > 0:
        return "better"
    if rel_high < 0:
        return "worse"
    return "unresolved"
