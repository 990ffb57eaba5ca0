"""The grid-command drift protocol: one factor moved at a time, a family that expands into
ordinary grids (shifted and control), named errors, and the report's paired arms."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from text_numbers import numbers_in

from ilets.config import ConfigError
from ilets.gridcommand.command import (DRIFT_BASE, DRIFT_FACTORS, DRIFT_LOAD, DRIFT_TARGET, DRIFT_TOWARD,
                                       FIELD_REGIMES, REGIMES, CommandError, one_factor)
from ilets.gridcommand.report import drift as D
from ilets.gridcommand.study import drift as CD

ROOT = Path(__file__).resolve().parents[1]


def test_each_drift_regime_moves_exactly_its_factor():
    base, toward = FIELD_REGIMES[DRIFT_BASE], DRIFT_TARGET
    # the target is deep-short with the load the trials do not move set to the declared one
    assert dataclasses.replace(toward, load=1.0) == FIELD_REGIMES[DRIFT_TOWARD] and toward.load == DRIFT_LOAD != 1
    fields = [f.name for f in dataclasses.fields(base) if f.name != "name"]
    for factor, moved_fields in DRIFT_FACTORS.items():
        moved = REGIMES[f"{DRIFT_BASE}+{factor}"]
        differs = {f for f in fields if getattr(moved, f) != getattr(base, f)}
        assert differs == {f for f in moved_fields if getattr(toward, f) != getattr(base, f)} and differs
        assert all(getattr(moved, f) == getattr(toward, f) for f in moved_fields)
    # together the factors cover every way the two regimes differ
    assert {f for fs in DRIFT_FACTORS.values() for f in fs} >= {f for f in fields
                                                              if getattr(base, f) != getattr(toward, f)}
    with pytest.raises(CommandError, match="unknown drift factor 'speed'"):
        one_factor(base, toward, "speed")


def test_the_load_factor_moves_the_arrival_rate_and_nothing_else():
    from ilets.gridcommand.config import load_gridcommand_config
    from ilets.gridcommand.env import GridCommandEnv

    smoke = load_gridcommand_config("smoke")
    plain = dataclasses.replace(smoke, regime=DRIFT_BASE, commands=())
    loaded = dataclasses.replace(plain, regime=f"{DRIFT_BASE}+load")
    assert plain.workload_of() is plain.run.workload  # load 1: the configured workload itself
    assert loaded.workload_of().rate_factor == plain.run.workload.rate_factor * DRIFT_LOAD
    a, b = GridCommandEnv(plain), GridCommandEnv(loaded)
    assert len(b.tasks) > len(a.tasks) and b.window == a.window
    # the commands come from the same seeded draw: only the load moved
    assert [c.start_s for c in b.schedule] == [c.start_s for c in a.schedule]
    assert all(r.load == 1.0 for r in FIELD_REGIMES.values())
    with pytest.raises(CommandError, match="load: .*arrival-rate factor > 0"):
        dataclasses.replace(FIELD_REGIMES[DRIFT_BASE], load=0.0).validate()


def test_the_shipped_family_expands_into_shifted_and_control_grids():
    family = CD.load_family("quick")
    grids = list(family.grids())
    assert [(f, k) for f, k, _ in grids] == [(f, k) for f in DRIFT_FACTORS for k in CD.KINDS]
    for factor, kind, profile in grids:
        moved = f"{DRIFT_BASE}+{factor}"
        if kind == "shifted":
            assert (profile.train_regime, profile.eval_regime, profile.methods) == (DRIFT_BASE, moved, family.methods)
        else:
            assert (profile.train_regime, profile.eval_regime, profile.methods) == (moved, DRIFT_BASE, family.controls)
        assert profile.scale == family.scale and profile.seeds == family.seeds
    assert CD.folder_of(Path("out"), "band", "control") == Path("out/band/control")


def test_the_shared_clone_cache_is_linked_once_and_relinked_when_dangling(tmp_path):
    out, grid = tmp_path / "out", tmp_path / "out" / "band" / "shifted"
    CD.share_grid_cache(out, grid)
    assert (grid / "cache").is_symlink() and (grid / "cache").resolve() == (out / "cache").resolve()
    (out / "cache").rmdir()  # the shared cache removed by hand: the link dangles
    CD.share_grid_cache(out, grid)
    assert (grid / "cache").is_dir() and (out / "cache").is_dir()
    own = tmp_path / "out" / "depth" / "shifted" / "cache"
    own.mkdir(parents=True)  # a grid with a cache of its own (from before) keeps it
    CD.share_grid_cache(out, own.parent)
    assert own.is_dir() and not own.is_symlink()


def test_shipping_under_another_family_name_is_a_one_line_error(tmp_path, capsys):
    path = tmp_path / "family.yaml"
    path.write_text("name: tiny\nscale: smoke\nscenario: gridcommand-smoke\nfactors: [band]\nmethods: [rule]\n"
                    "controls: [bc]\nservers: [5]\nseeds: [0]\n")
    grid = tmp_path / "results" / "band" / "shifted"
    (grid / "cells").mkdir(parents=True)
    (grid / "grid.json").write_text(json.dumps({"profile": "other-band", "cells": []}))
    assert CD.main(["--family", str(path), "--ship", str(tmp_path / "results"), "--to", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "'other-band'" in err and "pass its --family" in err and "Traceback" not in err


@pytest.mark.parametrize("text, where", [
    ("factors: [depth, speed]", "factors[1]: expected one of"),
    ("controls: [rule]", "controls[0]: expected one of ('bc', 'bc+ppo'"),
    ("controls: [ppo]", "controls[0]: expected one of ('bc', 'bc+ppo'"),
    ("methods: [bc, bc]", "methods: expected distinct values"),
    ("seeds: [-1]", "seeds"),
    ("scale: huge", "scale"),
    ("colour: red", "colour"),
])
def test_a_bad_family_is_named_in_one_line(tmp_path, text, where):
    path = tmp_path / "family.yaml"
    path.write_text("name: f\nscenario: gridcommand-smoke\nservers: [5]\n" + text + "\n")
    with pytest.raises(ConfigError, match=re.escape(where)) as err:
        CD.load_family(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow  # a fresh interpreter loads the learners' stack (torch) to read the family
def test_the_command_line_names_a_bad_family_without_a_traceback(tmp_path):
    path = tmp_path / "family.yaml"
    path.write_text("name: f\nscenario: gridcommand-smoke\nfactors: [speed]\n")
    out = subprocess.run([sys.executable, "-m", "ilets.gridcommand.study.drift", "--family", str(path), "--out",
                          str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and "Traceback" not in out.stderr and str(path) in out.stderr
    # the field, what was found and what was expected (one of the factors)
    assert "factors[0]" in out.stderr and "'speed'" in out.stderr and "'depth'" in out.stderr
    assert not (tmp_path / "out").exists()


def _rows() -> pd.DataFrame:
    """Three seeds of a factor's arms: the expert 10 % worse once moved, the clone 50 % worse
    and its control as good as the clone was under the base."""
    rows = []
    for seed in range(3):
        noise = 0.001 * seed
        for method, base, moved, control in (("lyapunov", 0.40, 0.44, None), ("bc", 0.60, 0.90, 0.60)):
            for arm, value in (("base", base), ("moved", moved), ("control", control)):
                if value is not None:
                    rows.append({"factor": "depth", "kind": "control" if arm == "control" else "shifted",
                                 "arm": arm, "method": method, "servers": 50, "seed": seed, "scale": "quick",
                                 "role": "eval" if arm == "moved" else "train", "tracking_mae_rel": value + noise,
                                 "misses_caused": 5.0, "in_band_fraction": 0.5})
    return pd.DataFrame(rows)


def test_the_factor_table_pairs_the_arms_by_seed():
    table = D.factor_table(_rows(), reps=400)
    t = table[table["metric"] == "tracking_mae_rel"].set_index("method")
    assert t.loc["lyapunov", "drift_pct"] == pytest.approx(-10.0, abs=0.3) and t.loc["lyapunov", "drift_verdict"] == "worse"
    assert np.isnan(t.loc["lyapunov", "mean_control"])  # an expert is not trained: no control
    assert t.loc["bc", "drift_pct"] == pytest.approx(-50.0, abs=0.5)
    assert t.loc["bc", "control_pct"] == pytest.approx(-50.0, abs=0.5) and t.loc["bc", "control_verdict"] == "worse"
    shown = D.factor_display(table, part="control")
    assert list(shown["method"]) == ["BC (clone alone)"]
    assert t.loc["bc", "control_seeds"] == 3 and len(D.factor_table(_rows().iloc[0:0])) == 0
    # a control grid part-way: its comparison says how few seeds it pairs
    part = _rows()
    part = part[~((part["arm"] == "control") & (part["seed"] == 2))]
    part_table = D.factor_table(part, reps=200)
    # ... and its display sets the two arms side by side on the seeds they pair, not on all of them
    bc = part_table[part_table["metric"] == "tracking_mae_rel"].set_index("method").loc["bc"]
    assert bc["mean_moved_paired"] == pytest.approx(0.9005) and bc["mean_moved"] == pytest.approx(0.901)
    shown = D.factor_display(part_table, part="control").iloc[0]
    assert shown["seeds"] == 2 and shown["trained under the base"] == f"{bc['mean_moved_paired']:.3f}"
    assert shown["control"] == f"{bc['mean_control']:.3f}" and D.factor_display(part_table).iloc[0]["seeds"] == 3


@pytest.mark.slow
def test_a_tiny_family_runs_resumes_ships_and_is_read_back(tmp_path):
    path = tmp_path / "family.yaml"
    path.write_text("name: tiny\nscale: smoke\nscenario: gridcommand-smoke\nfactors: [band, depth]\n"
                    "methods: [rule, bc]\ncontrols: [bc]\nservers: [5]\nseeds: [0]\n")
    family = CD.load_family(path)
    out = tmp_path / "out"
    first = CD.run(family, out, progress=False)
    assert first["band/shifted"]["ran"] == 2 and first["band/control"]["ran"] == 1
    # one clone cache for the family: both shifted grids train under the base regime, so the
    # second reads the first's clone; each control trains under its own moved regime
    assert all((out / grid / "cache").is_symlink() for grid in ("band/shifted", "depth/control"))
    assert len(list((out / "cache").glob("clone-*.pt"))) == 1 + 2
    cached = {g: json.loads((out / g / "cells" / "bc-M5-s0.json").read_text())["train"].get("clone_cached", False)
              for g in ("band/shifted", "depth/shifted", "depth/control")}
    assert cached == {"band/shifted": False, "depth/shifted": True, "depth/control": False}
    again = CD.run(family, out, progress=False)
    assert again["band/shifted"]["skipped_done"] == 2 and again["band/shifted"]["ran"] == 0
    # as a run of the same family with other seeds leaves it: shipping still lists these cells
    manifest = out / "band/shifted/grid.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "cells": ["rule-M5-s7", "bc-M5-s7"]}))
    info = CD.ship(out, tmp_path / "shipped", family, note="test")
    assert json.loads((tmp_path / "shipped/band/control/PROVENANCE.json").read_text())["cells"] == 1
    assert (info["cells"], info["planned_units"]) == (6, 6)
    assert info["grids"] == ["band/shifted", "band/control", "depth/shifted", "depth/control"]
    assert json.loads((tmp_path / "shipped/PROVENANCE.json").read_text())["note"] == "test"
    assert not list((tmp_path / "shipped").rglob("clone-*.pt"))  # the cache is not shipped
    # archived as the retired families were: the rows and each grid's planned cells
    from ilets.gridcommand.archive import Design, build_archive

    (tmp_path / "repo" / "shipped").mkdir(parents=True)
    (tmp_path / "repo" / "shipped" / "tiny").symlink_to(tmp_path / "shipped")
    archive, provenance = build_archive(tmp_path / "repo", ["tiny"], commit="abc",
                                        designs={"tiny": Design("tiny", "test", "drift")})
    rows = D.load_drift(archive, "tiny")
    assert sorted(set(rows["arm"])) == ["base", "control", "moved"] and set(rows["regime"]) == {
        DRIFT_BASE, f"{DRIFT_BASE}+band", f"{DRIFT_BASE}+depth"}
    grids = provenance["grids"]
    assert D.complete_factors(rows, grids, "tiny") == ["depth", "band"]  # the protocol's order
    # a grid that planned more cells than it holds is not whole, nor one with no plan
    grids["tiny/band/control"]["planned_cells"] = 2
    assert D.complete_factors(rows, grids, "tiny") == ["depth"]
    grids["tiny/depth/shifted"]["planned_cells"] = None
    assert D.complete_factors(rows, grids, "tiny") == []
    assert ["python", "-m", "ilets.gridcommand.study.drift", "--family", "tiny", "--factors", "band"] in [
        c.split() for c in archive["recompute"]]


def test_processes_split_a_family_by_seed_or_factor_and_bad_ones_are_named(tmp_path, capsys):
    path = tmp_path / "family.yaml"
    path.write_text("name: tiny\nscale: smoke\nscenario: gridcommand-smoke\nfactors: [band, depth]\n"
                    "methods: [rule]\ncontrols: [bc]\nservers: [5]\nseeds: [0, 1]\n")
    family = CD.load_family(path)
    assert CD.only_seeds(family, "1").seeds == (1,) and CD.only_seeds(family, "1,0").seeds == (1, 0)
    for bad, said in (("2", "--seeds: 2 is not one of family 'tiny'"), ("a", "comma-separated integers"),
                      ("0,0", "repeated entries")):
        with pytest.raises(ConfigError, match=said):
            CD.only_seeds(family, bad)
        assert CD.main(["--family", str(path), "--out", str(tmp_path / "bad"), "--seeds", bad, "--quiet"]) == 2
        assert said.split(":")[0] in capsys.readouterr().err and not (tmp_path / "bad").exists()
    # a subset of the factors runs in the family's order (band first here), whatever order is given
    assert CD.only_factors(family, "depth,band").factors == ("band", "depth")
    assert CD.only_factors(family, "band").factors == ("band",)
    for bad, said in (("load", "--factors: load is not one of family 'tiny'"), ("band,band", "repeated entries")):
        with pytest.raises(ConfigError, match=said):
            CD.only_factors(family, bad)
        assert CD.main(["--family", str(path), "--out", str(tmp_path / "bad"), "--factors", bad, "--quiet"]) == 2
        assert said.split(":")[0] in capsys.readouterr().err and not (tmp_path / "bad").exists()
    out = tmp_path / "out"
    assert CD.main(["--family", str(path), "--out", str(out), "--seeds", "1", "--factors", "band", "--quiet"]) == 0
    assert sorted(p.name for p in out.glob("*/*/cells/*.json")) == ["bc-M5-s1.json", "rule-M5-s1.json"]
    # shipping the whole family afterwards lists the seed and factor that ran and plans all
    info = CD.ship(out, tmp_path / "shipped", family)
    assert (info["cells"], info["planned_units"], info["grids"]) == (2, 8, ["band/shifted", "band/control"])


def test_a_process_leaves_a_held_cell_for_last_and_goes_on_to_the_next_grids(tmp_path):
    import threading
    import time

    from filelock import FileLock

    from ilets.study.run import lock_path

    path = tmp_path / "family.yaml"
    path.write_text("name: tiny\nscale: smoke\nscenario: gridcommand-smoke\nfactors: [band, depth]\n"
                    "methods: [rule]\ncontrols: [bc]\nservers: [5]\nseeds: [0]\n")
    family, out = CD.load_family(path), tmp_path / "out"
    last = out / "depth/control/cells/bc-M5-s0.json"  # the family's last grid
    held, seen = threading.Event(), []

    def other() -> None:  # another process on band's first cell, until this one has done the rest
        with FileLock(str(lock_path(out / "band/shifted", "rule-M5-s0"))):
            held.set()
            for _ in range(600):
                if last.is_file():
                    break
                time.sleep(0.1)
            seen.append(last.is_file())

    holder = threading.Thread(target=other)
    holder.start()
    held.wait(60)
    summaries = CD.run(family, out, progress=False)
    holder.join()
    assert seen == [True]  # the last grid was done while the first grid's cell was still held
    # ...and the held cell was computed afterwards, in the pass that waits (its lock let go)
    assert (out / "band/shifted/cells/rule-M5-s0.json").stat().st_mtime >= last.stat().st_mtime
    assert {g: (s["ran"], s["busy"]) for g, s in summaries.items()} == {
        "band/shifted": (1, []), "band/control": (1, []), "depth/shifted": (1, []), "depth/control": (1, [])}
    assert all(s["ran"] + s["skipped_done"] + s["done_elsewhere"] + s["failed"] == s["cells"] for s in summaries.values())


def test_adding_to_a_shipped_family_ships_whole_grids_and_keeps_the_rest_file_for_file(tmp_path, capsys):
    path = tmp_path / "family.yaml"
    path.write_text("name: tiny\nscale: smoke\nscenario: gridcommand-smoke\nfactors: [band, depth]\n"
                    "methods: [rule]\ncontrols: [bc]\nservers: [5]\nseeds: [0, 1]\n")
    family, dest = CD.load_family(path), tmp_path / "shipped"
    first, later = tmp_path / "first", tmp_path / "later"
    assert CD.main(["--family", str(path), "--out", str(first), "--factors", "band", "--quiet"]) == 0
    CD.ship(first, dest, family, note="band")
    (dest / "band/shifted/VERIFY.json").write_text("{}")  # a recorded re-run, added by hand after shipping
    kept = {p.relative_to(dest): p.read_bytes() for p in (dest / "band").rglob("*") if p.is_file()}
    # a later run: depth's shifted grid whole, its control part-way (one seed), and band part-way
    assert CD.main(["--family", str(path), "--out", str(later), "--factors", "depth", "--quiet"]) == 0
    assert CD.main(["--family", str(path), "--out", str(later), "--factors", "band", "--seeds", "1", "--quiet"]) == 0
    (later / "depth/control/cells/bc-M5-s0.json").unlink()
    info = CD.main(["--family", str(path), "--ship", str(later), "--to", str(dest), "--add", "--note", "more"])
    shipped = capsys.readouterr().out.split("shipped ")[1]
    assert info == 0 and "cells in" in shipped and numbers_in(shipped)[:3] == ["6", "8", "3"]  # cells of planned, grids
    provenance = json.loads((dest / "PROVENANCE.json").read_text())
    assert provenance["grids"] == ["band/shifted", "band/control", "depth/shifted"] and provenance["note"] == "more"
    assert {p.relative_to(dest): p.read_bytes() for p in (dest / "band").rglob("*") if p.is_file()} == kept
    assert not (dest / "depth/control").exists()  # part-way: left for a later --add
    # the same folder shipped again once it holds every grid whole: only the new grid is added
    (dest / "depth/shifted/VERIFY.json").write_text("{}")
    kept = {p.relative_to(dest): p.read_bytes() for p in dest.rglob("*") if p.is_file() and p.parent != dest}
    assert CD.main(["--family", str(path), "--out", str(later), "--quiet"]) == 0
    CD.ship(later, dest, family, note="all", add=True)
    assert json.loads((dest / "PROVENANCE.json").read_text())["grids"] == [
        "band/shifted", "band/control", "depth/shifted", "depth/control"]
    now = {p.relative_to(dest): p.read_bytes() for p in dest.rglob("*") if p.is_file() and p.parent != dest}
    assert {k: v for k, v in now.items() if k.parts[:2] != ("depth", "control")} == kept
    # without --add the destination is replaced by what the run holds, part-way grids included
    (later / "depth/control/cells/bc-M5-s0.json").unlink()
    CD.ship(later, dest, family)
    assert json.loads((dest / "PROVENANCE.json").read_text())["cells"] == 7
    assert not (dest / "band/shifted/VERIFY.json").exists()
    assert CD.main(["--family", str(path), "--out", str(later), "--add"]) == 2
    assert "--add: only with --ship" in capsys.readouterr().err
