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
