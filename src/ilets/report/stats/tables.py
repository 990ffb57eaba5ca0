"""The tables the chapters show: summaries over seeds, the paper's improvement table beside
ours, and every comparison of two methods (or of a variant with the main study) through the
one resampler (:func:`ilets.report.stats.resampling.seed_effect`)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ilets.report.stats.prose import change_text
from ilets.report.stats.resampling import (DEFAULT_REPS, SeedMeans, _direction, bootstrap_ci, effect_verdict,
                                           method_order, percentile_interval, seed_effect)


#: The metrics of the paper's improvement table, in its order.
PAPER_METRICS = ("avg_response_s", "energy_kwh", "success_rate")

#: The paper's reported improvement over DRL, in percent [paper] (Kang et al. 2024, its
#: abstract; quoted in the book's summary chapter). Which scale(s) these pool over is not stated in what we have;
#: :func:`paper_comparison` compares them with our pooled-over-scales numbers by default.
PAPER_IMPROVEMENTS: dict[str, dict[str, float]] = {
    "ilets-": {"avg_response_s": 22.30, "energy_kwh": 10.56, "success_rate": 5.69},
    "drl+": {"avg_response_s": 36.73, "energy_kwh": 20.92, "success_rate": 12.99},
}


def _sorted_groups(df: pd.DataFrame, by: Sequence[str]):
    """groupby over ``by`` with methods in :func:`method_order`, other keys sorted."""
    groups = dict(tuple(df.groupby(list(by), sort=True, dropna=False)))
    order = method_order(df["method"].unique()) if "method" in by else None

    def sort_key(key):
        key = key if isinstance(key, tuple) else (key,)
        return tuple(order.index(k) if b == "method" else k for b, k in zip(by, key))

    for key in sorted(groups, key=sort_key):
        yield (key if isinstance(key, tuple) else (key,)), groups[key]


# --- summary over seeds ------------------------------------------------------------------

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


# --- the paper's improvement table ------------------------------------------------------

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
    values = SeedMeans(metrics)
    rows = []
    for col in metrics_cols:
        higher = _dir_of(col, directions)
        scale_pp = 100.0 if col == "success_rate" else 1.0
        unit = "pp" if col == "success_rate" else col.rsplit("_", 1)[-1] if "_" in col else ""
        for method in methods:
            per_scale = []
            for s in scales:
                e = seed_effect(values(method, s, col), values(baseline, s, col), higher, paired,
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


# --- comparisons and display tables for the chapters -------------------------------------

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
