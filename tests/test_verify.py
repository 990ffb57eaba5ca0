"""ilets verify: shipped cells re-run to the same metrics, and a tampered one is caught."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cell_files import rewrite
from ilets import cell_pack
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
    assert "3 of 3 cells reproduced" in out
    assert out.count("reproduced  ") == 3


def test_the_shipped_cells_are_one_table(shipped):
    assert (shipped / cell_pack.PACK).is_file() and not (shipped / "cells").exists()
    assert len(cell_pack.entries(shipped)) == 3


def test_a_tampered_metric_is_reported(shipped, tmp_path, capsys):
    (cell,) = [c for c in pick(shipped, sample=3) if c.startswith("earliest-finish")]
    metrics = shipped / "cells" / cell / "metrics.json"
    original = cell_pack.read_text(metrics)
    try:
        m = json.loads(original)
        m["avg_response_s"] += 1e-9
        rewrite(metrics, lambda _: json.dumps(m))
        code = main(["verify", "--results", str(shipped), "--cell", cell, "--scratch", str(tmp_path), "--quiet"])
        out = capsys.readouterr().out
        assert code == 1 and "DIFFERS" in out and "avg_response_s" in out
        assert compare(shipped / "cells" / cell, tmp_path / "cells" / cell)  # the same through the API
    finally:
        rewrite(metrics, lambda _: original)


def test_a_metric_the_record_predates_is_noted_not_compared(shipped, tmp_path, capsys):
    (cell,) = [c for c in pick(shipped, sample=3) if c.startswith("earliest-finish")]
    metrics = shipped / "cells" / cell / "metrics.json"
    original = cell_pack.read_text(metrics)
    try:
        m = json.loads(original)
        del m["avg_response_s"]  # as if the cell was computed before this metric existed
        rewrite(metrics, lambda _: json.dumps(m))
        code = main(["verify", "--results", str(shipped), "--cell", cell, "--scratch", str(tmp_path), "--quiet"])
        out = capsys.readouterr().out
        assert code == 0 and "1 of 1 cells reproduced" in out
        assert "(not compared): avg_response_s" in out
        # the other way round, a metric the re-run no longer writes, is a difference
        assert compare(tmp_path / "cells" / cell, shipped / "cells" / cell) == [
            f"metrics.json avg_response_s: {json.loads(original)['avg_response_s']!r} -> None"]
    finally:
        rewrite(metrics, lambda _: original)


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
                    [VF.CellCheck("drl-M50-s1-0", False, ("avg_response_s: 1 -> 2",), 2.0),
                     VF.CellCheck("drl-M50-s2-0", True, (), 3.0)])
    table, sentence = VF.recorded_table(tmp_path)
    assert table["cell"].tolist() == ["drl-M50-s0-0", "drl-M50-s1-0", "drl-M50-s2-0"]  # s1 re-checked: newest kept
    assert table["checked at"].tolist() == ["c" * 12, "d" * 12, "d" * 12]
    assert table["computed at"].tolist() == ["a" * 12, "a" * 12, "b" * 12]
    assert table["reproduced"].tolist() == ["yes", "no", "yes"] and "x86_64" in table["checked on"].iloc[0]
    assert sentence.startswith("2 of 3 recorded re-runs") and "first difference" in sentence
    assert f"{'a' * 12} (2 cells, 2 checked)" in sentence and f"{'b' * 12} (1 cells, 1 checked)" in sentence


def test_records_of_both_scenarios_stack_in_one_table(tmp_path, monkeypatch):
    from text_numbers import numbers_in

    from ilets.study import verify as VF

    monkeypatch.setattr("ilets.study.run.source_version", lambda: {"commit": "d" * 40, "dirty": False})
    cloud, grid, bare = tmp_path / "cloud", tmp_path / "grid", tmp_path / "bare"
    _fake_cell(cloud, "drl-M50-s0-0", "a" * 40)
    (grid / "cells").mkdir(parents=True)  # a grid-command cell is one JSON record naming its commit
    (grid / "cells" / "bc-M50-s0.json").write_text(json.dumps({"commit": "e" * 40}))
    _fake_cell(bare, "drl-M50-s0-0", "a" * 40)
    VF.write_report(cloud / VF.VERIFY_REPORT, cloud, [VF.CellCheck("drl-M50-s0-0", True, (), 1.0)])
    VF.write_report(grid / VF.VERIFY_REPORT, grid, [VF.CellCheck("bc-M50-s0", False, ("scores: 1 -> 2",), 2.0)])
    table, text = VF.recorded_tables({"cloud": (cloud, "cloud"), "grid": (grid, "gridcommand"),
                                      "bare": (bare, "cloud")})
    assert table["results"].tolist() == ["cloud", "grid"] and table["computed at"].tolist() == ["a" * 12, "e" * 12]
    # reproduced of recorded re-runs, over how many shipped folders
    assert numbers_in(text)[:3] == ["1", "2", "2"] and "shipped folders" in text and "first difference" in text
    assert "No verification" in text and "for `bare`" in text
    for folder in (cloud, grid):  # shipped, their cells are one table each: read the same
        cell_pack.pack_folder(folder)
    packed, same = VF.recorded_tables({"cloud": (cloud, "cloud"), "grid": (grid, "gridcommand"), "bare": (bare, "cloud")})
    pd.testing.assert_frame_equal(packed, table)
    assert same == text
    empty, none = VF.recorded_tables({"bare": (bare, "cloud")})
    assert empty.empty and none.startswith("No shipped folder")


def test_a_malformed_record_is_named(tmp_path):
    from ilets.study import verify as VF

    (tmp_path / VF.VERIFY_REPORT).write_text(json.dumps({"cells": [{"reproduced": True}]}))
    with pytest.raises(ValueError, match=r"VERIFY\.json: .*field 'cells'"):
        VF.recorded_table(tmp_path)


# --- a verification that cannot be fooled: it re-runs every cell itself, into a folder of its
# own, and names a damaged record before anything runs (issue 20) ---------------------------

def _copy(shipped, tmp_path):
    import shutil

    dest = tmp_path / "copy"
    shutil.copytree(shipped, dest)
    return dest


def _heuristic_cell(folder):
    return next(name for name in cell_pack.entries(folder) if name.startswith("earliest-finish"))


def _tamper(cell_folder):
    def halve(text):
        m = json.loads(text)
        m["avg_response_s"] /= 2
        return json.dumps(m)

    rewrite(cell_folder / "metrics.json", halve)


@pytest.mark.parametrize("where", ["equal", "inside", "around"])
def test_a_scratch_in_or_around_the_results_is_refused(shipped, tmp_path, capsys, where):
    results = _copy(shipped, tmp_path)
    cell = _heuristic_cell(results)
    _tamper(results / "cells" / cell)
    scratch = {"equal": results, "inside": results / "rerun", "around": tmp_path}[where]
    code = main(["verify", "--results", str(results), "--cell", cell, "--scratch", str(scratch), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2 and "reproduced" not in out, out
    assert f"scratch folder {scratch}" in err and "results folder" in err and "Traceback" not in err
    assert not (results / "rerun").exists()


def test_a_reused_scratch_is_re_run_not_compared(shipped, tmp_path, capsys):
    results, scratch = _copy(shipped, tmp_path), tmp_path / "scratch"
    cell = _heuristic_cell(results)
    args = ["verify", "--results", str(results), "--cell", cell, "--scratch", str(scratch), "--quiet"]
    assert main(args) == 0
    capsys.readouterr()
    # the same edit in the record and in the earlier re-run: only a new re-run can tell
    (rerun,) = [p for p in (scratch / "cells").iterdir() if not p.name.startswith(".")]
    _tamper(results / "cells" / cell)
    _tamper(rerun)
    code = main(args)
    out = capsys.readouterr().out
    assert code == 1 and "DIFFERS" in out and "avg_response_s" in out, out


def test_a_foreign_non_empty_scratch_is_refused(shipped, tmp_path, capsys):
    results, scratch = _copy(shipped, tmp_path), tmp_path / "mine"
    scratch.mkdir()
    (scratch / "notes.txt").write_text("keep me")
    code = main(["verify", "--results", str(results), "--cell", _heuristic_cell(results), "--scratch", str(scratch),
                 "--quiet"])
    assert code == 2 and "not empty" in capsys.readouterr().err
    assert (scratch / "notes.txt").read_text() == "keep me" and not (scratch / "cells").exists()


RECORD_DAMAGE = {  # file -> its text -> the damaged text (None: the file is gone)
    "metrics-cut": ("metrics.json", lambda t: t[:60]),
    "metrics-missing": ("metrics.json", lambda t: None),
    "config-empty": ("config.yaml", lambda t: ""),
    "config-not-yaml": ("config.yaml", lambda t: "method: [drl\n  seed: {"),
    # a file cut at a line end still parses, and would re-run the paper's whole window
    "config-cut-at-a-line": ("config.yaml", lambda t: "".join(t.splitlines(True)[:7])),
    "config-edited": ("config.yaml", lambda t: t.replace("theta: 0.3", "theta: 0.5")),
    "curve-empty": ("curve.csv", lambda t: ""),
    "curve-missing": ("curve.csv", lambda t: None),
}


@pytest.mark.parametrize("damage", sorted(RECORD_DAMAGE))
def test_a_damaged_record_is_named_before_anything_runs(shipped, tmp_path, capsys, damage):
    results, scratch = _copy(shipped, tmp_path), tmp_path / "scratch"
    cell = _heuristic_cell(results)
    name, hurt = RECORD_DAMAGE[damage]
    file = results / "cells" / cell / name  # a file of the shipped folder's table (ilets.cell_pack)
    original = cell_pack.read_text(file)
    rewrite(file, hurt)
    assert not cell_pack.exists(file) or cell_pack.read_text(file) != original, "the damage changed nothing"
    code = main(["verify", "--results", str(results), "--cell", cell, "--scratch", str(scratch), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2 and "reproduced" not in out, out + err
    assert str(file) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (scratch / "cells").exists(), "a cell was re-run before its record was checked"


def test_report_targets_are_refused_before_any_work(shipped, tmp_path, capsys):
    results, scratch = _copy(shipped, tmp_path), tmp_path / "scratch"
    base = ["verify", "--results", str(results), "--cell", _heuristic_cell(results), "--scratch", str(scratch),
            "--quiet", "--report"]
    wrong = tmp_path / "VERIFY.json"
    wrong.write_text(json.dumps({"cells": {"not": "a list"}}))
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for target, expected in ((wrong, "unreadable verification record"), (tmp_path, "is a folder"),
                             (a_file / "VERIFY.json", "not writable")):
        assert main(base + [str(target)]) == 2
        err = capsys.readouterr().err
        assert str(target) in err and expected in err and "Traceback" not in err, err
        assert ".tmp" not in err
    assert not (scratch / "cells").exists()
    assert json.loads(wrong.read_text()) == {"cells": {"not": "a list"}}


def test_an_unknown_method_is_refused_by_the_parser(shipped, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["verify", "--results", str(shipped), "--sample", "1", "--methods", "dqn"])
    assert exit_.value.code == 2 and "invalid choice: 'dqn'" in capsys.readouterr().err
