"""The second verdict of ilets verify: a re-run that is not bit-identical agrees within the seed-to-seed spread."""

from __future__ import annotations

import pandas as pd
import pytest

from ilets.study.agreement import AGREEMENT_METRICS, SPREAD_MULTIPLE, spread_agreement


def store(values: list[float], method: str = "drl+", servers: int = 50) -> pd.DataFrame:
    return pd.DataFrame([{"method": method, "variant": "", "servers": servers, "seed": s,
                          **{m: v * (1 + i) for i, m in enumerate(AGREEMENT_METRICS)}} for s, v in enumerate(values)])


def test_a_difference_inside_one_spread_agrees_and_one_outside_does_not():
    table = store([1.0, 1.1, 0.9, 1.05])  # spread of the first metric: about 0.085
    spread = table["avg_response_s"].std(ddof=1)
    recorded = table.iloc[0][list(AGREEMENT_METRICS)].to_dict()
    near = {m: v + 0.5 * SPREAD_MULTIPLE * table[m].std(ddof=1) for m, v in recorded.items()}
    far = {**near, "avg_response_s": recorded["avg_response_s"] + 1.5 * SPREAD_MULTIPLE * spread}
    ok = spread_agreement(table, "drl+", "", 50, recorded, near)
    assert ok is not None and ok.agrees and ok.seeds == 4
    assert "agrees within the seed-to-seed spread" in ok.text() and "avg_response_s" in ok.text()
    bad = spread_agreement(table, "drl+", "", 50, recorded, far)
    assert bad is not None and not bad.agrees
    assert bad.rows[0][3] == pytest.approx(spread)


def test_no_verdict_without_seeds_to_measure_a_spread():
    table = store([1.0])
    rec = table.iloc[0][list(AGREEMENT_METRICS)].to_dict()
    assert spread_agreement(table, "drl+", "", 50, rec, rec) is None
    assert spread_agreement(store([1.0, 1.1]), "drl", "", 50, rec, rec) is None  # another method's seeds
    assert spread_agreement(store([1.0, 1.1]), "drl+", "", 50, {}, rec) is None  # a metric missing


@pytest.fixture(scope="module")
def two_seed_grid(tmp_path_factory):
    from ilets.study.grid import run_grid
    from ilets.study.profiles import load_profile
    from tiny_profiles import write_profile

    root = tmp_path_factory.mktemp("agree")
    path = write_profile(root / "tiny.yaml", methods=["earliest-finish"], servers=[10], seeds=[0, 1, 2], workers=1)
    run_grid(load_profile(path), root / "results", workers=1, progress=False)
    return root / "results"


def _nudged(grid, tmp_path, factor: float, vendor: str):
    """A copy of the grid whose seed-0 cell records a response time off by ``factor`` and was
    computed on a CPU of ``vendor`` (what a re-run on another host finds)."""
    import json
    import shutil

    r = tmp_path / "R"
    shutil.copytree(grid, r)
    cell = next((r / "cells").glob("earliest-finish-M10-s0-*"))
    metrics = json.loads((cell / "metrics.json").read_text())
    metrics["avg_response_s"] *= factor
    (cell / "metrics.json").write_text(json.dumps(metrics))
    system = json.loads((cell / "system.json").read_text())
    system["cpu_model"] = f"{vendor} test CPU"
    (cell / "system.json").write_text(json.dumps(system))
    return r, cell.name


@pytest.mark.parametrize("vendor, factor, code", [("AMD", 1.000001, 0), ("Intel", 1.000001, 1), ("AMD", 10.0, 1)])
def test_verify_accepts_a_small_difference_only_across_cpu_vendors(two_seed_grid, tmp_path, capsys, monkeypatch,
                                                                   vendor, factor, code):
    from ilets.study.cli import main

    monkeypatch.setattr("ilets.host.cpu_model", lambda: "Intel test CPU")
    r, cell = _nudged(two_seed_grid, tmp_path, factor, vendor)
    rc = main(["verify", "--results", str(r), "--cell", cell, "--scratch", str(tmp_path / "s"), "--quiet",
               "--report", str(tmp_path / "VERIFY.json")])
    out = capsys.readouterr().out
    assert rc == code, out
    assert "0 of 1 cells reproduced" in out and "second verdict" in out
    assert ("does not agree" in out) == (factor > 2)
    import json

    record = json.loads((tmp_path / "VERIFY.json").read_text())
    check = record["cells"][0]
    assert check["agrees"] == (factor < 2) and check["other_vendor"] == (vendor == "AMD")


def test_the_chapter_says_what_each_verdict_means_from_the_rule():
    from ilets.study.agreement import MIN_SEEDS, verdicts_text

    text = verdicts_text()
    assert f"{SPREAD_MULTIPLE:g} standard deviation" in text and f"at least {MIN_SEEDS} seeds" in text
    from ilets.metric_table import METRIC_SPECS

    assert all(METRIC_SPECS[m].label in text for m in AGREEMENT_METRICS) and "avg_response_s" not in text
