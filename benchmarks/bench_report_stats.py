"""Benchmark the book's bootstrap statistics: ours against rliable's, in the same run.

The results chapters bootstrap two statistics thousands of times: the probability of
improvement (Mann-Whitney U over pairs of seeds) and the interquartile mean. rliable
computes them through ``scipy.stats.mannwhitneyu`` and ``scipy.stats.trim_mean``;
:func:`ilets.report.stats.improvement_probability` and :func:`ilets.report.stats.aggregate_iqm`
do the same arithmetic without scipy's wrappers and return the same bits.

(a) One bootstrap each, at the paper profile's shape (10 seeds x 3 fleet sizes, the book's
1,000 resamples, rliable's ``get_interval_estimates`` under one seed), timed with rliable's
statistic (the reference) and with ours, alternated A B A B ``--repeats`` times. Reported:
median CPU seconds of each, the ratio reference / ours, and whether point and interval are
identical (they must be).

(b) With ``--results DIR``: :func:`ilets.report.findings.results_findings` (the results
chapter's findings) on that folder, once with rliable's statistics swapped in and once with
ours; CPU seconds, the ratio, and whether every table is identical.

Usage::

    python benchmarks/bench_report_stats.py --out benchmarks/results/report_stats.json
    python benchmarks/bench_report_stats.py --results shipped/paper --out benchmarks/results/report_stats.json
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ilets.host import write_benchmark
from ilets.report.stats import aggregates as S


@contextmanager
def rliable_statistics():
    """Swap rliable's own statistics into :mod:`ilets.report.stats.aggregates` (the reference), the
    module whose bootstraps call them."""
    from rliable import metrics as rm

    saved = S.improvement_probability, S.aggregate_iqm
    S.improvement_probability, S.aggregate_iqm = rm.probability_of_improvement, rm.aggregate_iqm
    try:
        yield
    finally:
        S.improvement_probability, S.aggregate_iqm = saved


def bootstraps(reps: int) -> list:
    """One POI and one IQM bootstrap at the paper profile's shape; returns their estimates."""
    from rliable import library as rly

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(10, 3)), rng.normal(0.2, size=(10, 3))
    with S.numpy_global_seed(0):
        poi = rly.get_interval_estimates({"p": [x, y]}, lambda a, b: np.array([S.improvement_probability(a, b)]),
                                         reps=reps)
    with S.numpy_global_seed(0):
        iqm = rly.get_interval_estimates({"m": x}, lambda a: np.array([S.aggregate_iqm(a)]), reps=reps)
    return [poi, iqm]


def timed(fn):
    t0 = time.process_time()
    value = fn()
    return time.process_time() - t0, value


def same(a, b) -> bool:
    """Whether two nested results (dicts, tuples, arrays, frames) are identical."""
    import pandas as pd

    if isinstance(a, pd.DataFrame):
        return a.equals(b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(u, v) for u, v in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b, equal_nan=True)
    return a == b or (a != a and b != b)


def tables(found) -> dict:
    """Every DataFrame field of a findings object (what the chapter shows)."""
    import dataclasses

    import pandas as pd

    return {f.name: getattr(found, f.name) for f in dataclasses.fields(found)
            if isinstance(getattr(found, f.name), pd.DataFrame)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--results", type=Path, default=None, help="also time results_findings on this folder")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    ref_s, our_s, identical = [], [], True
    for _ in range(args.repeats):  # A B A B: drift of the host hits both alike
        with rliable_statistics():
            t, want = timed(lambda: bootstraps(args.reps))
        ref_s.append(t)
        t, got = timed(lambda: bootstraps(args.reps))
        our_s.append(t)
        identical &= same(got, want)
    result = {"bootstrap": {"reps": args.reps, "repeats": args.repeats, "rliable_cpu_s": float(np.median(ref_s)),
                            "ours_cpu_s": float(np.median(our_s)),
                            "ratio": float(np.median(ref_s) / np.median(our_s)), "identical": bool(identical)}}
    print(f"bootstrap of POI + IQM ({args.reps} resamples): rliable {np.median(ref_s):.2f} s, ours "
          f"{np.median(our_s):.2f} s CPU, {result['bootstrap']['ratio']:.1f}x, identical: {identical}")

    if args.results is not None:
        from ilets.report import findings as F
        from ilets.report.report_context import ReportContext

        # one context each: a context caches what it computed once
        ctx, ctx_ref = ReportContext.load(args.results), ReportContext.load(args.results)
        with rliable_statistics():
            ref, want = timed(lambda: F.results_findings(ctx_ref))
        ours, got = timed(lambda: F.results_findings(ctx))
        result["results_findings"] = {"results": str(args.results), "cells": int(len(ctx.metrics)),
                                      "rliable_cpu_s": ref, "ours_cpu_s": ours, "ratio": ref / ours,
                                      "identical": same(tables(got), tables(want))}
        print(f"results_findings on {args.results} ({len(ctx.metrics)} cells): rliable {ref:.1f} s, ours "
              f"{ours:.1f} s CPU, {ref / ours:.1f}x, identical: {result['results_findings']['identical']}")
    return write_benchmark(args.out, result)


if __name__ == "__main__":
    main()
