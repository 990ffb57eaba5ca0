"""rliable's aggregates across fleet sizes: the IQM of normalised scores and the probability
of improvement, with rliable's stratified bootstrap (its arithmetic without scipy's
wrappers).

rliable and pandas
------------------
rliable 1.2.0 needs ``arch<8``, and arch 7.x fails to import under pandas 3. We pin
``pandas<3`` (2.3.x) rather than re-implement rliable's stratified bootstrap with scipy:
the IQM and probability-of-improvement estimates then come from the library the RL
community uses, and nothing in this study needs pandas 3.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from ilets.config import HEURISTICS
from ilets.report.stats.resampling import DEFAULT_REPS, _direction, _rel, _values, method_order


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
    return np.float64(np.mean(probs))  # np.mean's float64, typed as one (the stubs say floating)


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
