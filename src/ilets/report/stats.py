"""Statistics of the study: seed-level summaries, the paper's improvement table, rliable
aggregates across scales, and cold-start / adaptation measures on learning curves.

Everything here is a pure function of the results store's tables (see :mod:`ilets.study.results`)
or of numpy arrays: no plotting, no files, no global state left behind. Every bootstrap is
seeded, so the same call gives the same numbers.

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

rliable and pandas
------------------
rliable 1.2.0 needs ``arch<8``, and arch 7.x fails to import under pandas 3. We pin
``pandas<3`` (2.3.x) rather than re-implement rliable's stratified bootstrap with scipy:
the IQM and probability-of-improvement estimates then come from the library the RL
community uses, and nothing in this study needs pandas 3.

Sign conventions
----------------
:data:`HIGHER_IS_BETTER` records, for each metric, which direction is better. Relative
improvements are signed so that **positive means better than the baseline**, whatever the
metric's direction (the paper's convention).
"""

from __future__ import annotations

import warnings
import zlib
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd
import scipy.stats

from ilets.config import HEURISTICS
from ilets.method_table import LEARNERS
from ilets.metric_table import directions
# where the workload's events strike: recorded by the grid (OUT/events.json), re-exported here
from ilets.study.grid import event_decisions, online_event_ranges  # noqa: F401

#: Direction of each metric of the metrics and curves tables (True: higher is better).
HIGHER_IS_BETTER: dict[str, bool] = directions()  # from ilets.metric_table, the one table of measures

#: The metrics of the paper's improvement table, in its order.
PAPER_METRICS = ("avg_response_s", "energy_kwh", "success_rate")

#: The paper's reported improvement over DRL, in percent [paper] (Kang et al. 2024, its
#: abstract; quoted in the book's summary chapter). Which scale(s) these pool over is not stated in what we have;
#: :func:`paper_comparison` compares them with our pooled-over-scales numbers by default.
PAPER_IMPROVEMENTS: dict[str, dict[str, float]] = {
    "ilets-": {"avg_response_s": 22.30, "energy_kwh": 10.56, "success_rate": 5.69},
    "drl+": {"avg_response_s": 36.73, "energy_kwh": 20.92, "success_rate": 12.99},
}

#: Default number of bootstrap resamples.
DEFAULT_REPS = 2000

#: Curve columns aggregated by :func:`first_n`.
CURVE_COLS = ("reward", "response", "success", "energy_kwh")

_CELL_KEYS = ("method", "servers", "seed", "cell")


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


@contextmanager
def numpy_global_seed(seed: int) -> Iterator[None]:
    """Seed numpy's *global* RNG for the duration of the block, then restore its state.

    rliable draws its bootstrap indices with ``np.random.choice`` (the global legacy RNG),
    ignoring any generator passed to it; this makes its intervals deterministic without
    disturbing the caller's random stream.
    """
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


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


def _sorted_groups(df: pd.DataFrame, by: Sequence[str]):
    """groupby over ``by`` with methods in :func:`method_order`, other keys sorted."""
    groups = dict(tuple(df.groupby(list(by), sort=True, dropna=False)))
    order = method_order(df["method"].unique()) if "method" in by else None

    def sort_key(key):
        key = key if isinstance(key, tuple) else (key,)
        return tuple(order.index(k) if b == "method" else k for b, k in zip(by, key))

    for key in sorted(groups, key=sort_key):
        yield (key if isinstance(key, tuple) else (key,)), groups[key]


# --- 5. the generic bootstrap -----------------------------------------------------------

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


# --- 1. summary over seeds ---------------------------------------------------------------

def summary_table(metrics: pd.DataFrame,
                  metrics_cols: Sequence[str] = ("avg_response_s", "energy_kwh", "success_rate", "mean_reward"),
                  by: Sequence[str] = ("servers", "method"), level: float = 0.95, reps: int = DEFAULT_REPS,
                  seed: int = 0) -> pd.DataFrame:
    """Mean, standard deviation and bootstrap CI of the mean over seeds, per group.

    One row per group of ``by`` (default: scale and method) and metric (long format; pivot
    for display). Columns: ``by...``, ``metric``, ``n`` (finite values = seeds), ``n_nan``
    (NaN values dropped, e.g. cells that never converged), ``mean``, ``std`` (sample
    standard deviation, ddof=1; NaN when ``n == 1``), ``ci_low``/``ci_high`` (percentile
    bootstrap CI of the mean at ``level``, see :func:`bootstrap_ci`) and ``ci_note``
    (``"n=1"``/``"zero variance"``/``"empty"`` where the interval is degenerate).

    Works on any per-cell table with a ``method`` column, e.g. the output of
    :func:`first_n`, :func:`convergence_table` or :func:`oscillation_table` (with
    ``by=("servers", "method", "event")``).
    """
    rows = []
    for key, g in _sorted_groups(metrics, by):
        for col in metrics_cols:
            v = g[col].to_numpy(dtype=float)
            finite = v[np.isfinite(v)]
            ci = bootstrap_ci(finite, np.mean, level=level, reps=reps, seed=seed)
            rows.append({**dict(zip(by, key)), "metric": col, "n": ci.n, "n_nan": int(len(v) - len(finite)),
                         "mean": ci.point, "std": float(np.std(finite, ddof=1)) if len(finite) > 1 else np.nan,
                         "ci_low": ci.low, "ci_high": ci.high, "ci_note": ci.note})
    return pd.DataFrame(rows, columns=[*by, "metric", "n", "n_nan", "mean", "std", "ci_low", "ci_high", "ci_note"])


# --- 2. the one seed-level resampler ----------------------------------------------------

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


# --- 2b. the paper's improvement table --------------------------------------------------

def _values(metrics: pd.DataFrame, method: str, servers, col: str) -> pd.Series:
    g = metrics[(metrics["method"] == method) & (metrics["servers"] == servers)]
    s = g.groupby("seed")[col].mean() if len(g) else pd.Series(dtype=float)
    return s[np.isfinite(s.to_numpy(dtype=float))].astype(float)


def _rel(mean_m, mean_b, higher: bool):
    """Signed relative improvement (fraction); positive = better. NaN where base is 0."""
    mean_m, mean_b = np.asarray(mean_m, float), np.asarray(mean_b, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (mean_m - mean_b) if higher else (mean_b - mean_m)
        return np.where(mean_b != 0, d / np.abs(mean_b), np.nan)


def improvement_table(metrics: pd.DataFrame, baseline: str = "drl", metrics_cols: Sequence[str] = PAPER_METRICS,
                      methods: Sequence[str] | None = None, level: float = 0.95, reps: int = DEFAULT_REPS,
                      seed: int = 0, paired: bool = True,
                      directions: Mapping[str, bool] | bool | None = None) -> pd.DataFrame:
    """Improvement of each method over ``baseline`` per scale and pooled (the paper's table).

    For a metric with seed means ``m`` (method) and ``b`` (baseline) at one scale:

    * lower is better (response time, energy): ``improvement = (b - m) / |b|``
    * higher is better (success rate, reward): ``improvement = (m - b) / |b|``

    reported in percent (``improvement_pct``), positive = better than the baseline. The
    direction is ``directions[col]`` (a mapping or one bool), else :data:`HIGHER_IS_BETTER`.
    For the success rate this is a **relative** change (a rise from 80 % to 84 % success is
    +5 % relative); the absolute change is also given: ``abs_diff = m - b`` in the metric's
    units, except success rate which is in **percentage points** (``abs_unit == "pp"``).
    ``abs_diff`` keeps the raw sign (method minus baseline).

    ``servers == "all"`` rows pool the scales: the unweighted mean of the per-scale
    improvements (and of the per-scale ``abs_diff``) over the scales where both the method
    and the baseline have results (``scales``), so every fleet size counts equally.

    CIs (``ci_low_pct``/``ci_high_pct``, ``abs_ci_low``/``abs_ci_high``): the study's one
    resampler, :func:`seed_effect` (paired by seed by default, keyed by ``(seed, servers,
    metric, method, baseline)``, exactly as :func:`compare` keys the same comparison), and
    its one interval rule :func:`percentile_interval`; the pooled interval comes from the
    mean of the per-scale resamples. ``n_method``/``n_base`` count seeds; ``ci_note`` flags
    ``n=1`` (degenerate interval); ``verdict`` is :func:`effect_verdict` of the interval.
    """
    methods = [m for m in method_order(metrics["method"].unique()) if m != baseline] if methods is None \
        else [m for m in methods if m != baseline]
    scales = sorted(metrics.loc[metrics["method"] == baseline, "servers"].unique())
    rows = []
    for col in metrics_cols:
        higher = _dir_of(col, directions)
        scale_pp = 100.0 if col == "success_rate" else 1.0
        unit = "pp" if col == "success_rate" else col.rsplit("_", 1)[-1] if "_" in col else ""
        for method in methods:
            per_scale = []
            for s in scales:
                e = seed_effect(_values(metrics, method, s, col), _values(metrics, baseline, s, col), higher, paired,
                                reps, (seed, s, col, method, baseline))
                if e is not None:
                    per_scale.append((s, e))

            def row(servers, rel, rel_reps, diff, diff_reps, n_m, n_b, mean_m, mean_b, n_scales, note, verdict_n):
                lo, hi = percentile_interval(rel_reps, level)
                alo, ahi = percentile_interval(diff_reps * scale_pp, level)
                return {"metric": col, "servers": servers, "method": method, "baseline": baseline,
                        "n_method": n_m, "n_base": n_b, "mean_method": mean_m, "mean_base": mean_b,
                        "improvement_pct": 100 * rel, "ci_low_pct": 100 * lo, "ci_high_pct": 100 * hi,
                        "abs_diff": diff * scale_pp, "abs_ci_low": alo, "abs_ci_high": ahi, "abs_unit": unit,
                        "scales": n_scales, "ci_note": note, "verdict": effect_verdict(lo, hi, *verdict_n)}

            for s, e in per_scale:
                rows.append(row(s, e.rel, e.rel_reps, e.diff, e.diff_reps, e.n_x, e.n_y, e.mean_x, e.mean_y, 1,
                                "n=1" if min(e.n_x, e.n_y) == 1 else "", (e.n_x, e.n_y)))
            if per_scale:
                es = [e for _, e in per_scale]
                notes = {"n=1" for e in es if min(e.n_x, e.n_y) == 1}
                rows.append(row("all", float(np.mean([e.rel for e in es])), np.mean([e.rel_reps for e in es], axis=0),
                                float(np.mean([e.diff for e in es])), np.mean([e.diff_reps for e in es], axis=0),
                                int(sum(e.n_x for e in es)), int(sum(e.n_y for e in es)), np.nan, np.nan, len(es),
                                ", ".join(sorted(notes)),
                                (min(e.n_x for e in es), min(e.n_y for e in es))))
    cols = ["metric", "servers", "method", "baseline", "n_method", "n_base", "mean_method", "mean_base",
            "improvement_pct", "ci_low_pct", "ci_high_pct", "abs_diff", "abs_ci_low", "abs_ci_high", "abs_unit",
            "scales", "ci_note", "verdict"]
    return pd.DataFrame(rows, columns=cols)


def paper_comparison(improvements: pd.DataFrame, servers="all") -> pd.DataFrame:
    """Our improvements over DRL next to the paper's, for ILETS- and DRL+.

    ``improvements`` is the output of :func:`improvement_table` with ``baseline="drl"``.
    ``servers="all"`` (default) uses the pooled rows; pass a fleet size for one scale, or
    ``None`` for every row. Columns: ``method``, ``metric``, ``servers``, ``ours_pct``,
    ``ci_low_pct``, ``ci_high_pct``, ``paper_pct``, ``ours_minus_paper`` (percent points of
    improvement) and ``paper_in_ci`` (whether the paper's number lies inside our CI).
    """
    if "baseline" in improvements and not (improvements["baseline"] == "drl").all():
        raise ValueError("paper_comparison needs an improvement table against baseline='drl'")
    df = improvements[improvements["method"].isin(PAPER_IMPROVEMENTS.keys())
                      & improvements["metric"].isin(PAPER_METRICS)]
    if servers is not None:
        df = df[df["servers"].astype(str) == str(servers)]
    rows = []
    for _, r in df.iterrows():
        paper = PAPER_IMPROVEMENTS[r["method"]][r["metric"]]
        rows.append({"method": r["method"], "metric": r["metric"], "servers": r["servers"],
                     "ours_pct": r["improvement_pct"], "ci_low_pct": r["ci_low_pct"], "ci_high_pct": r["ci_high_pct"],
                     "paper_pct": paper, "ours_minus_paper": r["improvement_pct"] - paper,
                     "paper_in_ci": bool(r["ci_low_pct"] <= paper <= r["ci_high_pct"])})
    out = pd.DataFrame(rows, columns=["method", "metric", "servers", "ours_pct", "ci_low_pct", "ci_high_pct",
                                      "paper_pct", "ours_minus_paper", "paper_in_ci"])
    order = {m: i for i, m in enumerate(PAPER_IMPROVEMENTS)}
    morder = {m: i for i, m in enumerate(PAPER_METRICS)}
    return out.sort_values(["method", "metric"], key=lambda c: c.map(order if c.name == "method" else morder)) \
        .reset_index(drop=True)


# --- 3. rliable across scales -----------------------------------------------------------

def _score_matrix(metrics: pd.DataFrame, method: str, scales: Sequence, col: str) -> tuple[np.ndarray, list]:
    """(runs x tasks) raw scores of ``method``: tasks = ``scales``, runs = seeds present at
    every scale (sorted). Seeds missing at some scale are dropped (rliable needs a matrix)."""
    per = [_values(metrics, method, s, col) for s in scales]
    if any(len(p) == 0 for p in per):
        return np.empty((0, len(scales))), []
    common = sorted(set.intersection(*(set(p.index) for p in per)))
    if not common:
        return np.empty((0, len(scales))), []
    return np.column_stack([p.loc[common].to_numpy() for p in per]), common


def normalise_scores(metrics: pd.DataFrame, metric: str, higher_is_better: bool | None = None,
                     baseline: str = "drl") -> pd.DataFrame:
    """Per-cell scores made comparable across scales, higher = better.

    ``score = 1 + (x - base) / |base|`` if higher is better, ``1 + (base - x) / |base|`` if
    lower is better, where ``base`` is the mean over seeds of ``baseline`` at the same scale,
    or, with ``baseline="best-heuristic"``, the mean of the heuristic (see
    :data:`ilets.config.HEURISTICS`) whose mean is best at that scale. So a score is 1 plus
    the run's relative improvement over the baseline in the paper's sense: the baseline's mean
    scores exactly 1 at every scale, 1.2 is 20 % better. This is linear in the metric (unlike
    inverting ``base / x``), so means and IQMs of scores stay means of improvements. Returns
    the metrics rows (scales where the baseline exists and is non-zero) with ``score`` and
    ``normaliser`` columns.
    """
    higher = _direction(metric, higher_is_better)
    out = []
    for s, g in metrics.groupby("servers", sort=True):
        if baseline == "best-heuristic":
            hs = g[g["method"].isin(HEURISTICS)].groupby("method")[metric].mean().dropna()
            if hs.empty:
                continue
            name = hs.idxmax() if higher else hs.idxmin()
            base = float(hs[name])
        else:
            b = g.loc[g["method"] == baseline, metric].dropna()
            if b.empty:
                continue
            name, base = baseline, float(b.mean())
        if base == 0:
            warnings.warn(f"{metric}: baseline mean is 0 at {s} servers; scale skipped", stacklevel=2)
            continue
        g = g.copy()
        g["score"] = 1 + _rel(g[metric].to_numpy(float), base, higher)
        g["normaliser"] = f"{name}={base:.6g}"
        out.append(g)
    return pd.concat(out, ignore_index=True) if out else metrics.iloc[0:0].assign(score=[], normaliser=[])


def aggregate_iqm(scores: np.ndarray) -> float:
    """rliable's ``metrics.aggregate_iqm`` (the 25 %-trimmed mean of every score), bit for bit.

    Written out because rliable calls ``scipy.stats.trim_mean``, whose array-API wrapper costs
    ~30 us a call, and the bootstrap calls it ``reps`` times per method and metric. This is
    scipy's own arithmetic (partition, slice, numpy mean); a test checks it equals rliable's
    exactly. ``benchmarks/bench_report_stats.py`` measures the two against rliable's.
    """
    flat = np.asarray(scores, dtype=float).ravel()
    if flat.size == 0:
        return float("nan")
    low = int(0.25 * flat.size)
    high = flat.size - low
    return np.partition(flat, (low, high - 1))[low:high].mean()


def improvement_probability(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """rliable's ``metrics.probability_of_improvement``, bit for bit: per task (column), the
    Mann-Whitney U of ``x`` over ``y`` divided by ``n_x n_y`` (0.5 where the columns are
    equal), averaged over tasks.

    Written out because rliable computes U with ``scipy.stats.mannwhitneyu`` (ranks, a
    p-value and an array-API wrapper: ~0.4 ms a call), and the bootstrap calls it ``reps``
    times for each of hundreds of comparisons: it was most of the results chapter's build.
    U is counted here over the ``n_x x n_y`` pairs (``x > y`` counts 1, a tie 0.5): an integer
    or half-integer, so it equals scipy's rank-sum form exactly. A test checks equality with
    rliable on tied and untied draws; ``benchmarks/bench_report_stats.py`` measures the speed.
    """
    x_all, y_all = np.asarray(scores_x, dtype=float), np.asarray(scores_y, dtype=float)
    probs = []
    for task in range(x_all.shape[1]):
        x, y = x_all[:, task], y_all[:, task]
        if np.array_equal(x, y):
            probs.append(0.5)
        elif np.isnan(x).any() or np.isnan(y).any():
            probs.append(np.nan)  # scipy propagates NaN
        else:
            wins = np.count_nonzero(x[:, None] > y[None, :]) + 0.5 * np.count_nonzero(x[:, None] == y[None, :])
            probs.append(np.float64(wins) / (len(x) * len(y)))
    return np.mean(probs)


def iqm_table(metrics: pd.DataFrame, metric: str, higher_is_better: bool | None = None, baseline: str = "drl",
              methods: Sequence[str] | None = None, level: float = 0.95, reps: int = DEFAULT_REPS,
              seed: int = 0) -> pd.DataFrame:
    """Interquartile mean (IQM) of normalised scores across scales, with stratified bootstrap CIs.

    Scores are :func:`normalise_scores` (1 = the baseline's mean at that scale, higher
    better). For each method a (runs x tasks) matrix is built with tasks = scales (those where
    the baseline exists) and runs = the method's seeds present at every such scale; a method
    missing a scale is left out with a warning. ``iqm`` is rliable's ``aggregate_iqm``
    (:func:`aggregate_iqm`, the same arithmetic without scipy's wrapper): the 25 %-trimmed
    mean of all runs x tasks scores pooled (mean of the middle 50 %). The CI is
    rliable's stratified percentile bootstrap (``get_interval_estimates``): runs are
    resampled with replacement independently within each scale, ``reps`` times, under
    :func:`numpy_global_seed` ``(seed)`` so the result is deterministic. Columns: ``method``,
    ``metric``, ``iqm``, ``ci_low``, ``ci_high``, ``runs``, ``tasks``, ``baseline``.
    """
    from rliable import library as rly

    scored = normalise_scores(metrics, metric, higher_is_better, baseline)
    scales = sorted(scored["servers"].unique()) if len(scored) else []
    methods = method_order(scored["method"].unique()) if methods is None else list(methods)
    score_dict = {}
    for m in methods:
        mat, _ = _score_matrix(scored, m, scales, "score")
        if mat.shape[0] == 0:
            warnings.warn(f"iqm_table: {m} lacks results at some of {scales} servers; left out", stacklevel=2)
            continue
        score_dict[m] = mat
    rows = []
    if score_dict:
        with numpy_global_seed(seed), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # arch warns on degenerate (n=1) resamples
            point, interval = rly.get_interval_estimates(score_dict, lambda x: np.array([aggregate_iqm(x)]),
                                                         reps=reps, confidence_interval_size=level)
        for m, mat in score_dict.items():
            rows.append({"method": m, "metric": metric, "iqm": float(point[m][0]),
                         "ci_low": float(interval[m][0, 0]), "ci_high": float(interval[m][1, 0]),
                         "runs": mat.shape[0], "tasks": mat.shape[1], "baseline": baseline})
    return pd.DataFrame(rows, columns=["method", "metric", "iqm", "ci_low", "ci_high", "runs", "tasks", "baseline"])


def probability_of_improvement(metrics: pd.DataFrame, x: str, y: str, metric: str,
                               higher_is_better: bool | None = None, level: float = 0.95,
                               reps: int = DEFAULT_REPS, seed: int = 0) -> dict:
    """P(X > Y): probability that a run of ``x`` beats a run of ``y``, averaged over scales.

    At each scale, ``P = (#{(i, j): x_i better than y_j} + 0.5 #{ties}) / (n_x n_y)`` over
    all pairs of seeds (the Mann-Whitney U statistic, rliable's
    ``metrics.probability_of_improvement``, computed by :func:`improvement_probability`);
    the result is the mean over the scales where both methods have results. Raw metric
    values are used (a within-scale comparison needs no normalisation); lower-is-better
    metrics are negated. 1 = ``x`` always better, 0.5 =
    indistinguishable. CI: rliable's stratified independent percentile bootstrap (seeds of
    ``x`` and of ``y`` resampled independently within each scale), deterministic via
    :func:`numpy_global_seed`. Runs of a method = its seeds present at every used scale.

    Returns a dict: ``x``, ``y``, ``metric``, ``prob``, ``ci_low``, ``ci_high``, ``n_x``,
    ``n_y``, ``tasks``.
    """
    from rliable import library as rly

    sign = 1.0 if _direction(metric, higher_is_better) else -1.0
    scales = sorted(set(metrics.loc[metrics["method"] == x, "servers"]) & set(metrics.loc[metrics["method"] == y,
                                                                                          "servers"]))
    sx, _ = _score_matrix(metrics, x, scales, metric)
    sy, _ = _score_matrix(metrics, y, scales, metric)
    out = {"x": x, "y": y, "metric": metric, "prob": np.nan, "ci_low": np.nan, "ci_high": np.nan,
           "n_x": sx.shape[0], "n_y": sy.shape[0], "tasks": len(scales)}
    if not scales or sx.shape[0] == 0 or sy.shape[0] == 0:
        return out
    with numpy_global_seed(seed), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        point, interval = rly.get_interval_estimates(
            {"p": [sign * sx, sign * sy]}, lambda a, b: np.array([improvement_probability(a, b)]),
            reps=reps, confidence_interval_size=level)
    out.update(prob=float(point["p"][0]), ci_low=float(interval["p"][0, 0]), ci_high=float(interval["p"][1, 0]))
    return out


# --- 4. cold start and adaptation on learning curves ------------------------------------

def _cells_of(curves: pd.DataFrame):
    key = "cell" if "cell" in curves else ["method", "servers", "seed"]
    for _, g in curves.groupby(key, sort=True):
        g = g.sort_values("window")
        yield {k: g[k].iloc[0] for k in _CELL_KEYS if k in g}, g


def _window_bounds(curve: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """0-based [start, end) decision indices of each window of one cell's curve."""
    end = curve["decision_end"].to_numpy(dtype=np.int64)
    return end - curve["decisions"].to_numpy(dtype=np.int64), end


def first_n(curves: pd.DataFrame, n_decisions: int) -> pd.DataFrame:
    """Per cell: metrics over its first ``n_decisions`` decisions (the cold start).

    Uses the curve windows that lie entirely within the first ``n_decisions`` decisions
    (``decision_end <= n_decisions``), so ``n_decisions`` is rounded down to whole windows
    (``curve_every`` decisions each); ``decisions`` says how many were covered (0 and NaNs
    if ``n_decisions`` is below the first window). ``reward``, ``response`` and ``success``
    are decision-weighted means of the window means, ``sum(x_w d_w) / sum(d_w)`` with
    ``d_w`` the window's decisions, i.e. exactly the mean over those decisions;
    ``energy_kwh`` is the sum of the windows' energy. Aggregate per method and scale with
    ``summary_table(first_n(...), metrics_cols=CURVE_COLS)``.
    """
    rows = []
    for keys, c in _cells_of(curves):
        c = c[c["decision_end"] <= n_decisions]
        d = c["decisions"].to_numpy(dtype=float)
        tot = d.sum()
        row = {**keys, "n_decisions": n_decisions, "decisions": int(tot)}
        for col in ("reward", "response", "success"):
            row[col] = float(np.sum(c[col].to_numpy(dtype=float) * d) / tot) if tot > 0 else np.nan
        row["energy_kwh"] = float(c["energy_kwh"].sum()) if tot > 0 and "energy_kwh" in c else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def convergence_decisions(curve: pd.DataFrame, tol: float = 0.05, final_frac: float = 0.2, smooth: int = 1,
                          column: str = "reward", band: float | None = None) -> float:
    """Decisions until one cell's windowed reward enters its final band and never leaves.

    ``curve``: one cell's curve rows. Let ``r_w`` be the windowed mean reward (optionally a
    trailing rolling mean over ``smooth`` windows), ``final`` the mean of ``r_w`` over the
    last ``ceil(final_frac * W)`` of the ``W`` windows, and the band ``|r_w - final| <= tol *
    |final|``. With ``k`` the first window such that every window ``w >= k`` is in the band,
    the result is the number of decisions made before window ``k`` starts
    (``decision_end[k] - decisions[k]``; 0 if in the band from the first window). NaN if the
    last window is outside the band (never settles) or the curve is empty. Note: with a
    noisy reward and a small ``tol`` many runs never settle; report the fraction settled.

    ``band``: an absolute half-width instead of ``tol * |final|`` (for a gap to a reference,
    whose final level may be near 0, :func:`gap_convergence_table`).
    """
    c = curve.sort_values("window")
    r = c[column].to_numpy(dtype=float)
    if len(r) == 0:
        return np.nan
    if smooth > 1:
        r = pd.Series(r).rolling(smooth, min_periods=1).mean().to_numpy()
    k_final = max(1, int(np.ceil(final_frac * len(r))))
    final = float(np.mean(r[-k_final:]))
    half = tol * abs(final) if band is None else float(band)
    inside = np.abs(r - final) <= half + 1e-12 * max(1.0, abs(final))  # a constant curve is inside its own band
    if not inside[-1]:
        return np.nan
    outside = np.flatnonzero(~inside)
    k = 0 if len(outside) == 0 else int(outside[-1]) + 1
    start, _ = _window_bounds(c)
    return float(start[k])


def convergence_table(curves: pd.DataFrame, tol: float = 0.05, final_frac: float = 0.2, smooth: int = 1,
                      column: str = "reward") -> pd.DataFrame:
    """:func:`convergence_decisions` of every cell, with ``settled`` (not NaN) and the total
    ``decisions`` of the cell. Aggregate with ``summary_table(..., metrics_cols=
    ("convergence_decisions",))``; its ``n_nan`` counts cells that never settled."""
    rows = []
    for keys, c in _cells_of(curves):
        v = convergence_decisions(c, tol, final_frac, smooth, column)
        rows.append({**keys, "convergence_decisions": v, "settled": bool(np.isfinite(v)),
                     "decisions": int(c["decision_end"].max())})
    return pd.DataFrame(rows)


def oscillation(curve: pd.DataFrame, events: Mapping[str, int | tuple[int, int]], span: int | None = None,
                column: str = "reward") -> pd.DataFrame:
    """Oscillation of one cell's windowed reward after each event.

    ``events`` maps an event name to the 0-based decision index ``d`` at which it strikes
    (with ``span`` in decisions) or directly to a decision range ``(d, d_end)`` (see
    :func:`event_decisions`; the curves table has decision counts, not times). The windows
    of the event are those overlapping ``[d, d_end)`` (``d_end = d + span``): window ``w``
    covers decisions ``[decision_end_w - decisions_w, decision_end_w)``, so the window in
    which the event strikes is included. Over these ``n`` windowed values ``r_1..r_n``:

    * ``var``: sample variance ``sum (r_i - mean r)^2 / (n - 1)``;
    * ``mad``: mean absolute first difference ``sum |r_{i+1} - r_i| / (n - 1)`` (sensitive to
      back-and-forth swings rather than to a level shift).

    Both are NaN with fewer than 2 windows (choose ``span`` >= 2 curve windows). One row per
    event: ``event``, ``start``, ``end``, ``windows``, ``var``, ``mad``.
    """
    c = curve.sort_values("window")
    start, end = _window_bounds(c)
    r = c[column].to_numpy(dtype=float)
    rows = []
    for name, ev in events.items():
        if isinstance(ev, (tuple, list)):
            d, d_end = int(ev[0]), int(ev[1])
        else:
            if span is None:
                raise ValueError("oscillation: give span (decisions) or (start, end) decision ranges")
            d, d_end = int(ev), int(ev) + int(span)
        sel = r[(start < d_end) & (end > d)]
        n = len(sel)
        rows.append({"event": name, "start": d, "end": d_end, "windows": n,
                     "var": float(np.var(sel, ddof=1)) if n > 1 else np.nan,
                     "mad": float(np.mean(np.abs(np.diff(sel)))) if n > 1 else np.nan})
    return pd.DataFrame(rows, columns=["event", "start", "end", "windows", "var", "mad"])


def oscillation_table(curves: pd.DataFrame, events, span: int | None = None, column: str = "reward") -> pd.DataFrame:
    """:func:`oscillation` of every cell. ``events`` is a mapping (same for every cell) or a
    callable ``seed -> mapping`` (the online arrivals, hence the events' decision indices,
    depend on the workload seed). Aggregate with ``summary_table(..., metrics_cols=("var",
    "mad"), by=("servers", "method", "event"))``."""
    out = []
    for keys, c in _cells_of(curves):
        ev = events(keys["seed"]) if callable(events) else events
        o = oscillation(c, ev, span, column).assign(**keys)
        out.append(o[[*keys, "event", "start", "end", "windows", "var", "mad"]])
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def cumulative_reward(curves: pd.DataFrame) -> pd.DataFrame:
    """Cumulative reward against decisions, per cell.

    For each window ``w`` of a cell: ``cum_reward_w = sum_{v <= w} reward_v * decisions_v``
    (the sum of the per-decision rewards so far; rewards are negative costs, so this falls,
    and "highest" means least negative) and ``mean_reward_so_far = cum_reward_w /
    decision_end_w``. Columns: cell keys, ``window``, ``decision_end``, ``cum_reward``,
    ``mean_reward_so_far``. Compare methods at equal ``decision_end`` (every method of a
    scale and seed schedules the same tasks), e.g. with :func:`summary_table` on one
    ``decision_end`` slice.
    """
    out = []
    for keys, c in _cells_of(curves):
        cum = np.cumsum(c["reward"].to_numpy(dtype=float) * c["decisions"].to_numpy(dtype=float))
        de = c["decision_end"].to_numpy()
        out.append(pd.DataFrame({**{k: [v] * len(c) for k, v in keys.items()}, "window": c["window"].to_numpy(),
                                 "decision_end": de, "cum_reward": cum, "mean_reward_so_far": cum / de}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


# --- 6. comparisons, claim checks and display tables for the chapters -------------------

#: Verdicts of :func:`compare` (``x`` relative to ``y``).
VERDICTS = ("better", "worse", "unresolved", "no data")


def _dir_of(col: str, directions: Mapping[str, bool] | bool | None) -> bool:
    if isinstance(directions, bool):
        return directions
    if directions is not None and col in directions:
        return bool(directions[col])
    return _direction(col, None)


def _per_seed(g: pd.DataFrame, col: str) -> pd.Series:
    s = g.groupby("seed")[col].mean() if len(g) else pd.Series(dtype=float)
    return s[np.isfinite(s.to_numpy(dtype=float))].astype(float)


def compare(table: pd.DataFrame, x: str, y: str, cols: Sequence[str], by: Sequence[str] = ("servers",),
            label: str = "method", directions: Mapping[str, bool] | bool | None = None, paired: bool = True,
            level: float = 0.95, reps: int = DEFAULT_REPS, seed: int = 0) -> pd.DataFrame:
    """``x`` against ``y`` on each column of a per-cell table, per group of ``by``.

    ``table`` has one row per cell with a ``seed`` column, the ``label`` column naming the
    arms (``x`` and ``y`` are two of its values; by default methods), the ``by`` columns and
    the ``cols``. Per group and column, with seed means ``m_x`` and ``m_y``:

    * ``diff = m_x - m_y`` (raw sign, metric units);
    * ``rel_pct``: signed relative improvement of ``x`` over ``y`` in percent, positive =
      ``x`` better: ``100 (m_x - m_y) / |m_y|`` if higher is better, ``100 (m_y - m_x) /
      |m_y|`` if lower is better (NaN when ``m_y == 0``).

    The direction of a column is ``directions[col]`` (a mapping, or one bool for all
    columns), else :data:`HIGHER_IS_BETTER`. CIs (``diff_ci_*``, ``rel_ci_*``): the study's
    one resampler :func:`seed_effect` (keyed by ``(seed, *group, column, x, y)``, so with
    ``by=("servers",)`` exactly the resamples of :func:`improvement_table`) and its one
    interval rule :func:`percentile_interval`. ``verdict``: :func:`effect_verdict`
    (``"better"``, ``"worse"``, ``"unresolved"``), ``"no data"`` if an arm is missing.
    ``n_x``/``n_y`` count seeds used (the common seeds when paired).
    """
    sub = table[table[label].isin([x, y])]
    rows = []
    groups = list(_sorted_groups(sub, by)) if len(sub) else []
    for key, g in groups:
        for col in cols:
            higher = _dir_of(col, directions)
            e = seed_effect(_per_seed(g[g[label] == x], col), _per_seed(g[g[label] == y], col), higher, paired, reps,
                            (seed, *key, col, x, y))
            row = {**dict(zip(by, key)), "x": x, "y": y, "metric": col, "n_x": 0, "n_y": 0,
                   "mean_x": np.nan, "mean_y": np.nan,
                   "diff": np.nan, "diff_ci_low": np.nan, "diff_ci_high": np.nan,
                   "rel_pct": np.nan, "rel_ci_low": np.nan, "rel_ci_high": np.nan, "verdict": "no data"}
            if e is not None:
                lo, hi = percentile_interval(e.diff_reps, level)
                rlo, rhi = percentile_interval(100 * e.rel_reps, level)
                row.update(n_x=e.n_x, n_y=e.n_y, mean_x=e.mean_x, mean_y=e.mean_y, diff=e.diff, diff_ci_low=lo,
                           diff_ci_high=hi, rel_pct=100 * e.rel, rel_ci_low=rlo, rel_ci_high=rhi,
                           verdict=effect_verdict(rlo, rhi, e.n_x, e.n_y))
            rows.append(row)
    return pd.DataFrame(rows, columns=[*by, "x", "y", "metric", "n_x", "n_y", "mean_x", "mean_y", "diff",
                                       "diff_ci_low", "diff_ci_high", "rel_pct", "rel_ci_low", "rel_ci_high",
                                       "verdict"])


def compare_pairs(table: pd.DataFrame, better: Sequence[str], worse: Sequence[str], cols: Sequence[str],
                  by: Sequence[str] = ("servers",), **kwargs) -> pd.DataFrame:
    """:func:`compare` for every ``x`` in ``better`` against every ``y`` in ``worse`` (rows
    stacked); ``kwargs`` go to :func:`compare`. Claims are judged from these comparisons
    components by :mod:`ilets.report.verdicts`, in one status vocabulary."""
    parts = [compare(table, x, y, cols, by, **kwargs) for x in better for y in worse if x != y]
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else compare(table.iloc[0:0], "", "", cols, by, **kwargs)


def variant_comparison(main: pd.DataFrame, variant: pd.DataFrame, cols: Sequence[str],
                       directions: Mapping[str, bool] | bool | None = None, paired: bool = True,
                       level: float = 0.95, reps: int = DEFAULT_REPS, seed: int = 0) -> pd.DataFrame:
    """A variant's cells against the main study's cells of the same method and fleet size.

    ``main`` and ``variant`` are per-cell tables (``load_metrics`` rows, or
    :func:`first_n` / :func:`convergence_table` outputs of ``load_curves(variant=...)``)
    with ``method``, ``servers`` and ``seed``. Main rows are restricted to the (method,
    servers) pairs the variant ran. Output: :func:`compare` with ``x = "variant"``, ``y =
    "main"``, grouped by ``servers`` and ``method`` (``rel_pct > 0``: the variant is
    better). Empty (with the columns) when either side is empty.
    """
    if len(variant) == 0 or len(main) == 0:
        return compare(pd.DataFrame(columns=["servers", "method", "seed", "arm", *cols]), "variant", "main", cols,
                       ("servers", "method"), label="arm")
    pairs = set(zip(variant["method"], variant["servers"]))
    keep = [(m, s) in pairs for m, s in zip(main["method"], main["servers"])]
    both = pd.concat([main[keep].assign(arm="main"), variant.assign(arm="variant")], ignore_index=True)
    return compare(both, "variant", "main", cols, ("servers", "method"), label="arm", directions=directions,
                   paired=paired, level=level, reps=reps, seed=seed)


def cold_start_decisions(curves: pd.DataFrame, frac: float = 0.1, min_windows: int = 1) -> int:
    """The ``N`` of "the first N decisions": ``frac`` of the online segment, in whole windows.

    ``frac`` times the shortest cell's decision count, rounded down to a multiple of the
    curve window (``curve_every``: the largest ``decisions`` of a window), and at least
    ``min_windows`` windows. 0 for an empty table.
    """
    if len(curves) == 0:
        return 0
    every = int(curves["decisions"].max())
    total = int(curves.groupby("cell" if "cell" in curves else ["method", "servers", "seed"])["decision_end"]
                .max().min())
    n = int(frac * total) // every * every
    return int(min(max(n, min_windows * every), total))


def event_markers(per_seed: Mapping[object, Mapping[str, int | tuple[int, int]]]) -> dict[str, float]:
    """Mean start decision of each event over seeds (for plot markers): ``per_seed`` maps a
    seed to :func:`event_decisions` or :func:`online_event_ranges` output. Events missing
    from some seed are averaged over the seeds that have them."""
    acc: dict[str, list[float]] = {}
    for ev in per_seed.values():
        for name, d in ev.items():
            acc.setdefault(name, []).append(float(d[0] if isinstance(d, (tuple, list)) else d))
    return {name: float(np.mean(v)) for name, v in acc.items()}


def leader_table(cum: pd.DataFrame, col: str = "cum_reward", higher: bool = True,
                 methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Which method leads on ``col`` along the pass, per fleet size.

    ``cum`` is :func:`cumulative_reward`'s output (or any table with ``method``,
    ``servers``, ``seed``, ``decision_end`` and ``col``). At each checkpoint
    (``decision_end``) every method of ``methods`` (default: all) has a results, the seed
    mean of ``col`` is taken, and the leader is the method with the best mean. Per
    (servers, method): ``checkpoints``, ``share_led`` (fraction of checkpoints led),
    ``final`` (seed mean at the last checkpoint), ``final_rank`` (1 = best at the end) and
    ``leads_from``: the first checkpoint from which the method leads at every later one
    (NaN unless it leads at the end): "reaches the highest and stays there" from this
    decision on.
    """
    cols = ["servers", "method", "checkpoints", "share_led", "final", "final_rank", "leads_from"]
    if len(cum) == 0:
        return pd.DataFrame(columns=cols)
    rows = []
    for s, g in cum.groupby("servers", sort=True):
        ms = method_order(g["method"].unique()) if methods is None else [m for m in methods if m in set(g["method"])]
        if not ms:
            continue
        wide = g[g["method"].isin(ms)].groupby(["decision_end", "method"])[col].mean().unstack("method")
        wide = wide.reindex(columns=ms).dropna().sort_index()
        if wide.empty:
            continue
        leader = (wide.idxmax(axis=1) if higher else wide.idxmin(axis=1)).to_numpy()
        last = wide.iloc[-1]
        ranks = last.rank(ascending=not higher, method="min")
        ends = wide.index.to_numpy()
        for m in ms:
            lead = leader == m
            if lead[-1]:
                not_lead = np.flatnonzero(~lead)
                k = 0 if len(not_lead) == 0 else int(not_lead[-1]) + 1
                since = float(ends[k])
            else:
                since = np.nan
            rows.append({"servers": s, "method": m, "checkpoints": len(wide), "share_led": float(lead.mean()),
                         "final": float(last[m]), "final_rank": int(ranks[m]), "leads_from": since})
    return pd.DataFrame(rows, columns=cols)


def ci_table(summary: pd.DataFrame, index: Sequence[str] = ("servers", "method"),
             formats: Mapping[str, str] | None = None, default: str = ".3g") -> pd.DataFrame:
    """:func:`summary_table` output as a wide display table of ``"mean [low, high]"`` strings.

    One row per ``index`` group, one column per metric (in the summary's order);
    ``formats[metric]`` is a format spec (e.g. ``".1%"``), else ``default``. A degenerate
    interval (``ci_note``) shows the mean alone with the note, NaN means show ``"n/a"``.
    """
    formats = formats or {}

    def cell(r) -> str:
        spec = formats.get(r["metric"], default)
        if not np.isfinite(r["mean"]):
            return "n/a"
        if r.get("ci_note"):
            return f"{r['mean']:{spec}} ({r['ci_note']})"
        return f"{r['mean']:{spec}} [{r['ci_low']:{spec}}, {r['ci_high']:{spec}}]"

    if len(summary) == 0:
        return pd.DataFrame(columns=list(index))
    s = summary.assign(_text=summary.apply(cell, axis=1))
    order = list(dict.fromkeys(s["metric"]))
    wide = s.pivot_table(index=list(index), columns="metric", values="_text", aggfunc="first", sort=False)
    return wide.reindex(columns=order).reset_index().rename_axis(columns=None)


def relative_curves(curves: pd.DataFrame, reference: str = "greedy-cost",
                    cols: Sequence[str] = ("reward", "response", "success"), keep_reference: bool = False
                    ) -> pd.DataFrame:
    """Learning curves minus a reference method's curve on the same tasks.

    Every method of one fleet size and seed schedules the same online tasks in the same
    order, so window ``w`` of every cell covers the same decisions; the arrival bursts and
    the trend move all of them together. Subtracting the ``reference`` cell's value of the
    same (servers, seed, window) from ``cols`` removes that shared, workload-driven part and
    leaves the method's own gap (same sign convention: for reward, > 0 means better than the
    reference). Cells without a reference cell are dropped, and so are the reference's own
    rows unless ``keep_reference`` (then its gap is 0 in every window); other columns are
    kept, so every curve function applies to the result.
    """
    if len(curves) == 0 or reference not in set(curves["method"]):
        return curves.iloc[0:0].copy()
    keys = ["servers", "seed", "window"]
    ref = curves[curves["method"] == reference][keys + list(cols)].drop_duplicates(keys)
    ref = ref.rename(columns={c: f"_ref_{c}" for c in cols})
    out = (curves if keep_reference else curves[curves["method"] != reference]).merge(ref, on=keys, how="inner")
    for c in cols:
        out[c] = out[c] - out.pop(f"_ref_{c}")
    return out.reset_index(drop=True)


def last_checkpoint(table: pd.DataFrame, x: str = "decision_end") -> pd.DataFrame:
    """Rows of a per-checkpoint table (e.g. :func:`cumulative_reward`) at the last checkpoint
    every cell of the fleet size reached (the smallest per-cell maximum of ``x``), so every
    method is compared after the same decisions."""
    if len(table) == 0:
        return table.copy()
    cell = "cell" if "cell" in table else ["method", "seed"]
    out = []
    for _, g in table.groupby("servers", sort=True):
        end = g.groupby(cell)[x].max().min()
        out.append(g[g[x] == end])
    return pd.concat(out, ignore_index=True)


def compare_display(comp: pd.DataFrame, by: Sequence[str] = ("servers",), names: Mapping[str, str] | None = None,
                    formats: Mapping[str, str] | None = None, default: str = ".3g") -> pd.DataFrame:
    """:func:`compare` output as a display table: the two means, the relative change of
    ``x`` over ``y`` with its CI (``"+7.7% [+7.1, +8.4]"``, positive = ``x`` better) and the
    verdict. ``names`` renames the arms in the column headers (``"<name> mean"``);
    ``formats`` as in :func:`ci_table`."""
    names, formats = names or {}, formats or {}
    rows = []
    for _, r in comp.iterrows():
        spec = formats.get(r["metric"], default)

        def fmt(v, spec=spec) -> str:
            return f"{v:{spec}}" if np.isfinite(v) else "n/a"

        nx, ny = names.get(r["x"], r["x"]), names.get(r["y"], r["y"])
        change = change_text(r)
        rows.append({**{b: r[b] for b in by}, "metric": r["metric"], f"{nx} mean": fmt(r["mean_x"]),
                     f"{ny} mean": fmt(r["mean_y"]), f"{nx} vs {ny}": change, "seeds": int(min(r["n_x"], r["n_y"])),
                     "verdict": r["verdict"]})
    return pd.DataFrame(rows)


def change_text(row: Mapping) -> str:
    """One :func:`compare` row's relative change as ``"+7.7% [+7.1, +8.4]"`` (positive =
    ``x`` better; the interval is the 95% bootstrap CI), ``"n/a"`` without data."""
    if not np.isfinite(row["rel_pct"]):
        return "n/a"
    return f"{row['rel_pct']:+.1f}% [{row['rel_ci_low']:+.1f}, {row['rel_ci_high']:+.1f}]"


#: Words for a comparison verdict in the book's sentences.
VERDICT_WORDS = {"better": "better", "worse": "worse", "unresolved": "not distinguishable with these seeds",
                 "no data": "not measured"}


def says(row: Mapping | None) -> str:
    """A comparison row as prose: ``"+7.7% [+7.1, +8.4] (better)"``, or "not measured"."""
    return "not measured" if row is None else f"{change_text(row)} ({VERDICT_WORDS[row['verdict']]})"


def comparison_row(comp: pd.DataFrame, **equals) -> dict | None:
    """The row of a comparison table whose columns equal ``equals`` (e.g. ``metric=``,
    ``method=``), at the smallest fleet size when several match; None when none does (a
    missing variant, method or metric), for sentences that must not crash on partial
    results."""
    if len(comp) == 0:
        return None
    rows = comp
    for col, value in equals.items():
        if col not in rows:
            return None
        rows = rows[rows[col] == value]
    if len(rows) == 0:
        return None
    return (rows.sort_values("servers") if "servers" in rows else rows).iloc[0].to_dict()


def range_text(values, spec: str = ".3g") -> str:
    """``"low to high"`` of the finite ``values`` in format ``spec``, a single value when
    they all print alike, ``"n/a"`` when none is finite (for sentences over fleet sizes)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return "n/a"
    lo, hi = f"{v.min():{spec}}", f"{v.max():{spec}}"
    return lo if lo == hi else f"{lo} to {hi}"


# --- 7. curve measures on the gap to a non-learning reference ----------------------------

#: The non-learning reference of the curve measures: a heuristic whose windowed reward over the
#: same tasks carries the workload's own swings (bursts, trend), which the gap removes.
GAP_REFERENCE = "greedy-cost"


def gap_convergence_table(curves: pd.DataFrame, reference: str = GAP_REFERENCE, tol: float = 0.05,
                          final_frac: float = 0.2, smooth: int = 3) -> pd.DataFrame:
    """Convergence measured on the gap to ``reference``'s windowed reward over the same tasks.

    Per (servers, seed), the reference's own windowed reward is first asked to settle
    (:func:`convergence_decisions` with ``tol``, ``final_frac`` and ``smooth``):
    ``reference_settled``. Then every cell's gap to it (:func:`relative_curves`, the reference
    kept, its gap 0) is asked to settle within the same absolute band, ``tol`` times the
    reference's final level: a gap that is constant, as a non-learning policy's is where it
    tracks the load like the reference, settles at decision 0. ``testable`` is
    ``reference_settled``: where the reference itself does not settle, the load never
    settles within the band either, and the decisions a learner needs cannot be told from
    the load's shape. Columns: cell keys, ``convergence_decisions`` (NaN: the gap never
    settles), ``settled``, ``decisions``, ``reference_settled``, ``testable``. Empty without
    the reference.
    """
    cols = [*_CELL_KEYS, "convergence_decisions", "settled", "decisions", "reference_settled", "testable"]
    if len(curves) == 0 or reference not in set(curves["method"]):
        return pd.DataFrame(columns=cols)
    ref = curves[curves["method"] == reference]
    level = {}
    for keys, c in _cells_of(ref):
        r = c["reward"].to_numpy(dtype=float)
        if smooth > 1:
            r = pd.Series(r).rolling(smooth, min_periods=1).mean().to_numpy()
        final = float(np.mean(r[-max(1, int(np.ceil(final_frac * len(r)))):]))
        settled = bool(np.isfinite(convergence_decisions(c, tol, final_frac, smooth)))
        level[(keys["servers"], keys["seed"])] = (tol * abs(final), settled)
    rows = []
    for keys, c in _cells_of(relative_curves(curves, reference, keep_reference=True)):
        band, ref_settled = level[(keys["servers"], keys["seed"])]
        v = convergence_decisions(c, tol, final_frac, smooth, band=band)
        rows.append({**keys, "convergence_decisions": v, "settled": bool(np.isfinite(v)),
                     "decisions": int(c["decision_end"].max()), "reference_settled": ref_settled,
                     "testable": ref_settled})
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=cols)


def gap_oscillation_table(curves: pd.DataFrame, events, reference: str = GAP_REFERENCE, span: int | None = None
                          ) -> pd.DataFrame:
    """:func:`oscillation_table` of the gap to ``reference`` (:func:`relative_curves`, the
    reference kept): the swings the workload drives in every policy's reward cancel, so a
    policy whose reward moves with the load like the reference's (any fixed rule, the
    reference itself) scores ``mad == 0``. Empty without the reference."""
    gap = relative_curves(curves, reference, keep_reference=True)
    return oscillation_table(gap, events, span) if len(gap) else pd.DataFrame()
