"""ilets verify: shipped cells re-run to the same metrics, and a tampered one is caught."""

from __future__ import annotations

import json

import pytest

from ilets.study.cli import main
from ilets.study.grid import run_grid
from ilets.study.profiles import load_profile
from ilets.study.shipping import ship
from ilets.study.verify import compare, pick


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    root = tmp_path_factory.mktemp("verify")
    path = root / "tiny.yaml"
    path.write_text("name: tiny\nmethods: [drl, ilets-, earliest-finish]\nservers: [10]\nseeds: [3]\nworkers: 1\n"
                    "run: {workload: {scale: 0.001}, ppo: {n_steps: 64}, oail: {every: 10},\n"
                    "      experts: {ga_population: 8, ga_generations: 3, pso_particles: 8, pso_iterations: 3}}\n")
    run_grid(load_profile(path), root / "results", workers=1, progress=False)
    ship(root / "results", root / "shipped")
    return root / "shipped"


def test_every_shipped_cell_reproduces_exactly(shipped, tmp_path, capsys):
    code = main(["verify", "--results", str(shipped), "--sample", "3", "--scratch", str(tmp_path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "3 of 3 cells reproduced exactly" in out
    assert out.count("reproduced  ") == 3


def test_a_tampered_metric_is_reported(shipped, tmp_path, capsys):
    (cell,) = [c for c in pick(shipped, sample=3) if c.startswith("earliest-finish")]
    metrics = shipped / "cells" / cell / "metrics.json"
    original = metrics.read_text()
    try:
        m = json.loads(original)
        m["avg_response_s"] += 1e-9
        metrics.write_text(json.dumps(m))
        code = main(["verify", "--results", str(shipped), "--cell", cell, "--scratch", str(tmp_path), "--quiet"])
        out = capsys.readouterr().out
        assert code == 1 and "DIFFERS" in out and "avg_response_s" in out
        assert compare(shipped / "cells" / cell, tmp_path / "cells" / cell)  # the same through the API
    finally:
        metrics.write_text(original)


def test_verify_user_errors_are_one_line(tmp_path, capsys):
    assert main(["verify", "--results", str(tmp_path), "--sample", "1"]) == 2
    assert "expected a results folder" in capsys.readouterr().err
    (tmp_path / "cells").mkdir()
    assert main(["verify", "--results", str(tmp_path), "--cell", "nope"]) == 2
    assert "no cell(s) ['nope']" in capsys.readouterr().err


def _fake_cell(folder, name, commit):
    d = folder / "cells" / name
    d.mkdir(parents=True)
    (d / "system.json").write_text(json.dumps({"commit": commit}))


def test_the_record_grows_cell_by_cell_and_says_which_commits_it_covers(tmp_path, monkeypatch):
    from ilets.study import verify as VF

    for i, commit in enumerate(["a" * 40, "a" * 40, "b" * 40]):
        _fake_cell(tmp_path, f"drl-M50-s{i}-0", commit)
    # an older record: one date, machine and commit for every cell it lists
    (tmp_path / VF.VERIFY_REPORT).write_text(json.dumps({
        "checked_utc": "2026-01-01T00:00:00+00:00", "machine": "x86_64", "code": {"commit": "c" * 40},
        "cells": [{"cell": "drl-M50-s0-0", "reproduced": True, "differences": [], "wall_s": 1.0},
                  {"cell": "drl-M50-s1-0", "reproduced": True, "differences": [], "wall_s": 1.0}]}))
    monkeypatch.setattr("ilets.study.run.source_version", lambda: {"commit": "d" * 40, "dirty": False})
    VF.write_report(tmp_path / VF.VERIFY_REPORT, tmp_path,
                    [VF.Verdict("drl-M50-s1-0", False, ("avg_response_s: 1 -> 2",), 2.0),
                     VF.Verdict("drl-M50-s2-0", True, (), 3.0)])
    table, sentence = VF.recorded_table(tmp_path)
    assert table["cell"].tolist() == ["drl-M50-s0-0", "drl-M50-s1-0", "drl-M50-s2-0"]  # s1 re-checked: newest kept
    assert table["checked at"].tolist() == ["c" * 12, "d" * 12, "d" * 12]
    assert table["computed at"].tolist() == ["a" * 12, "a" * 12, "b" * 12]
    assert table["reproduced"].tolist() == ["yes", "no", "yes"] and "x86_64" in table["checked on"].iloc[0]
    assert sentence.startswith("2 of 3 recorded re-runs reproduced") and "first difference" in sentence
    assert f"{'a' * 12} (2 cells, 2 checked), {'b' * 12} (1 cells, 1 checked)" in sentence


def test_a_malformed_record_is_named(tmp_path):
    from ilets.study import verify as VF

    (tmp_path / VF.VERIFY_REPORT).write_text(json.dumps({"cells": [{"reproduced": True}]}))
    with pytest.raises(ValueError, match=r"VERIFY\.json: unreadable verification record, field 'cells'"):
        VF.recorded_table(tmp_path)
