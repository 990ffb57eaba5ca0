"""benchmarks/bench_numerics.py on a tiny cell: fresh processes per mode, records each mode."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ilets.numerics import can_pin

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_numerics.py"


@pytest.mark.slow
@pytest.mark.skipif(not can_pin(), reason="this CPU cannot run the portable (AVX2) kernels")
def test_each_mode_runs_in_its_own_process_and_repeats_are_identical(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_numerics", PATH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.main(["--methods", "earliest-finish", "--pairs", "2", "--scale", "0.001",
                         "--out", str(tmp_path / "numerics.json")])
    rows = result["rows"]
    assert [r["mode"] for r in rows] == ["portable", "native", "native", "portable"]  # A B B A
    # each child decided its kernels afresh: the portable ones asked for portable, the native ones not
    assert all(r["recorded"]["requested"] == r["mode"] for r in rows)
    summary = result["summary"]["earliest-finish"]
    assert summary["repeats_identical"] == {"portable": True, "native": True}
    # a heuristic does no floating-point reduction that a wider vector unit would reorder
    assert summary["modes_differ_in"] == []
    assert (tmp_path / "numerics.json").is_file() and result["host"]["numerics"]["effective"] == "portable"
