"""The paper grid's cost estimate of benchmarks/bench_paper_cell.py, by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_paper_cell.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_paper_cell", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows(bench, fleets):
    cost = {"drl": 100.0, "drl+": 120.0, "ilets-": 500.0, "ilets": 520.0}
    out = [{"method": m, "servers": s, "cpu_total_s": c * (2 if s == 200 else 1)}
           for m, c in cost.items() for s in fleets]
    return out + [{"method": bench.HEURISTICS[0], "servers": s, "cpu_total_s": 30.0} for s in fleets]


def test_the_estimate_interpolates_100_servers_and_counts_every_cell(bench):
    est = bench.grid_estimate(rows(bench, (50, 200)), seeds=10)
    assert est["unmeasured"] == []
    assert est["per_cell_cpu_s"]["drl"][100] == pytest.approx(100 + 100 * 50 / 150)
    learners = sum(c * (1 + (1 + 50 / 150) + 2) for c in (100, 120, 500, 520))
    heuristics = 30 * 3 * len(bench.HEURISTICS)
    assert est["cpu_hours"] == pytest.approx(10 * (learners + heuristics) / 3600)


def test_a_partial_grid_gives_a_declared_lower_bound(bench):
    est = bench.grid_estimate(rows(bench, (50,)), seeds=10)
    assert "drl@100" in est["unmeasured"] and "heuristic@200" in est["unmeasured"]
    assert "lower bound: 10 method-fleet pairs" in bench.markdown([], est)
