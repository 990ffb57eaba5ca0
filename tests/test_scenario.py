"""The study's scenarios (ilets.study.scenario): the grid-command grid runs, resumes, records
failures, stores, ships and re-runs (ilets verify) through the study's one runner and verifier,
with the cell names the shipped grid has and the scores its pipeline computes (tiny fleets,
the smoke workload). Its faults: tests/test_faults.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from cell_files import rewrite
from ilets import cell_pack
from ilets.config import ConfigError
from ilets.gridcommand import pipeline as P
from ilets.gridcommand.study import scenario as G
from ilets.gridcommand.study.scenario import COMMAND_STORE, GridCommandScenario
from ilets.study.cli import main
from ilets.study.grid import run_grid
from ilets.study.results import STATUS_DONE, STATUS_FAILED, compute_table
from ilets.study.scenario import SCENARIOS, CloudScenario, get_scenario
from ilets.study.shipping import PROVENANCE, provenance, ship

SHIPPED = Path(__file__).resolve().parents[1] / "shipped" / "gridcommand"
#: the smoke scenario with a small, fast learner (results mean nothing; mechanics do)
SCENARIO = {"regime": "none", "slot_s": 0.1, "defer_s": 0.3,
            "run": {"workload": {"scale": 0.002}, "fleet": {"servers": 6},
                    "ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1, "hidden": 16},
                    "oinpt": {"bc_epochs": 2, "critic_epochs": 2}}}
#: the keys of the one provenance schema (ilets.host.provenance_of), before ship adds its own
SCHEMA = {"cells", "commits", "machines", "numerics", "first_start_utc", "last_start_utc", "cpu_hours",
          "wall_hours_summed"}


@pytest.fixture
def tiny(tmp_path) -> Path:
    """A grid-command grid profile of two experts on 6 servers, seeds 0 and 1 (4 cells)."""
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({
        "name": "tiny", "scale": "smoke", "scenario": str(scenario), "methods": ["rule", "lyapunov"],
        "servers": [6], "seeds": [0, 1], "train_regime": "shallow-long", "eval_regime": "deep-short",
        "pipeline": {"every": 40, "window": 20}}))
    return path


def test_the_registry_names_both_scenarios_and_refuses_others():
    assert set(SCENARIOS) == {"cloud", "gridcommand"} and get_scenario().name == "cloud"
    assert isinstance(get_scenario("gridcommand"), GridCommandScenario) and isinstance(get_scenario(), CloudScenario)
    # resolved by import path once: the same object each time, named as registered
    assert get_scenario("gridcommand") is get_scenario("gridcommand")
    assert all(get_scenario(name).name == name for name in SCENARIOS)
    with pytest.raises(ConfigError, match=r"unknown 'power'.*\['cloud', 'gridcommand'\]"):
        get_scenario("power")


def test_the_quick_profile_names_its_cells_as_the_shipped_grid_does():
    sc = get_scenario("gridcommand")
    for name in ("gridcommand-quick", "quick", "gridcommand-grid-quick"):  # every spelling of the profile
        assert sc.load_profile(name).name == "gridcommand-grid-quick"
    names = [sc.cell_name(c) for c in sc.cells(sc.load_profile("gridcommand-quick"))]
    assert len(names) == len(set(names)) == 100 and "bc+ppo+oail-M200-s4" in names  # 10 methods x 2 fleets x 5 seeds
    if SHIPPED.is_dir():  # the names the old runner wrote, and the book reads
        assert sorted(names) == sorted(p.stem for p in cell_pack.cell_paths(SHIPPED, "*.json"))


def test_ilets_grid_runs_a_gridcommand_profile_and_resumes(tmp_path, tiny, capsys):
    out = tmp_path / "out"
    assert main(["grid", "--scenario", "gridcommand", "--profile", str(tiny), "--out", str(out), "--quiet",
                 "--max-cells", "3"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert (first["scenario"], first["cells"], first["ran"], first["skipped_done"]) == ("gridcommand", 4, 3, 0)
    table = pd.read_parquet(out / COMMAND_STORE)
    assert len(table) == 3 * 2 and set(table["role"]) == {"train", "eval"}
    assert set(table["regime"]) == {"shallow-long", "deep-short"} and (table["scale"] == "smoke").all()
    done = sorted((out / "cells").glob("*.json"))
    stamps = {q.name: q.stat().st_mtime_ns for q in done}
    assert main(["grid", "--scenario", "gridcommand", "--profile", str(tiny), "--out", str(out), "--quiet"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert (second["ran"], second["skipped_done"], second["failed"]) == (1, 3, 0)
    assert all(q.stat().st_mtime_ns == stamps[q.name] for q in done)  # done cells untouched
    assert sorted(q.stem for q in (out / "cells").glob("*.json")) == [
        "lyapunov-M6-s0", "lyapunov-M6-s1", "rule-M6-s0", "rule-M6-s1"]
    rec = json.loads((out / "cells" / "rule-M6-s0.json").read_text())
    assert rec["status"] == STATUS_DONE and rec["cpu_s"] > 0 and rec["machine"]["cores"] >= 1
    assert "commit" in rec and rec["started_utc"].endswith("+00:00")
    assert json.loads((out / "profile.json").read_text())["name"] == "tiny"
    assert json.loads((out / "grid.json").read_text())["cells"] == [
        "rule-M6-s0", "lyapunov-M6-s0", "rule-M6-s1", "lyapunov-M6-s1"]
    assert not list((out / "cells").glob(".*"))  # no temporary file left behind
    compute = compute_table(out, get_scenario("gridcommand").compute_rows(out))
    assert len(compute) == 4 and (compute["status"] == STATUS_DONE).all()


def test_ilets_grid_passes_the_processes_a_cell_may_use_to_its_clone(tmp_path, tiny, monkeypatch, capsys):
    seen = []
    real = P.run_method

    def spy(*args, **kw):
        seen.append(args[-1] if len(args) == 11 else kw.get("processes", 1))
        return real(*args, **kw)

    monkeypatch.setattr(P, "run_method", spy)
    assert main(["grid", "--scenario", "gridcommand", "--profile", str(tiny), "--out", str(tmp_path / "out"),
                 "--quiet", "--workers", "1", "--max-cells", "1", "--cell-processes", "3"]) == 0
    assert seen == [3]
    name = next((tmp_path / "out" / "cells").glob("*.json")).stem  # verify's re-run takes them too
    assert main(["verify", "--scenario", "gridcommand", "--results", str(tmp_path / "out"), "--cell", name,
                 "--scratch", str(tmp_path / "scratch"), "--quiet", "--cell-processes", "2"]) == 0
    assert seen == [3, 2]
    with pytest.raises(SystemExit):  # argparse's own error: at least one process
        main(["grid", "--scenario", "gridcommand", "--profile", str(tiny), "--cell-processes", "0"])
    assert "--cell-processes" in capsys.readouterr().err


def test_a_cell_scores_what_the_pipeline_computes(tmp_path, tiny):
    # the old runner wrote run_method's scores per regime role; the study's runner must too, bit for bit
    profile = G.load_profile(tiny)
    run_grid(profile, tmp_path / "out", progress=False, scenario="gridcommand")
    rec = json.loads((tmp_path / "out" / "cells" / "lyapunov-M6-s1.json").read_text())
    direct = P.run_method("lyapunov", profile.scenario_config(), 6, 1, profile.train_regime,
                          ("shallow-long", "deep-short"), profile.pipeline, profile.expert_options("lyapunov"))
    timing = {"eval_cpu_s"}  # CPU seconds differ from run to run
    for role, regime in profile.regimes.items():
        want = json.loads(json.dumps(direct["scores"][regime], default=float))
        got = rec["scores"][role]
        assert {k: v for k, v in got.items() if k not in timing} == {k: v for k, v in want.items() if k not in timing}


def test_a_failed_or_damaged_cell_is_recorded_and_retried(tmp_path, tiny, monkeypatch):
    profile = G.load_profile(tiny)
    out = tmp_path / "out"

    def boom(*args, **kwargs):
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(P, "run_method", boom)
    summary = run_grid(profile, out, progress=False, scenario="gridcommand")
    assert summary["failed"] == 4 and summary["ran"] == 0
    assert not list((out / "cells").glob("*.json"))  # a failure leaves no cell: it is retried
    failed = [json.loads(p.read_text()) for p in (out / "failed").glob("rule-M6-s0.*.json")]
    assert len(failed) == 1 and "solver exploded" in failed[0]["error"]
    compute = compute_table(out, get_scenario("gridcommand").compute_rows(out))
    assert set(compute["status"]) == {STATUS_FAILED} and len(compute) == 4  # one status vocabulary
    assert len(pd.read_parquet(out / COMMAND_STORE)) == 0
    monkeypatch.undo()
    assert run_grid(profile, out, progress=False, scenario="gridcommand")["ran"] == 4
    (out / "cells" / "rule-M6-s0.json").write_text("{truncated")  # a damaged file is recomputed
    assert run_grid(profile, out, progress=False, scenario="gridcommand")["ran"] == 1


def test_ilets_ship_copies_the_compact_results_with_the_one_provenance_schema(tmp_path, tiny, capsys):
    out, dest = tmp_path / "out", tmp_path / "shipped" / "gridcommand"
    run_grid(G.load_profile(tiny), out, progress=False, scenario="gridcommand")
    (out / "cells" / "stale.json").write_text("{}")  # not a finished cell of this grid: not shipped
    assert main(["ship", "--scenario", "gridcommand", "--results", str(out), "--to", str(dest),
                 "--note", "test"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["cells"] == 4 and info["note"] == "test" and info["size_mb"] < 1
    # the cells the grid plans (grid.json): a partial grid's provenance says how complete it is
    assert set(info) == SCHEMA | {"note", "size_mb", "planned_units"} and info["cpu_hours"] > 0
    assert info["planned_units"] == 4
    assert json.loads((dest / PROVENANCE).read_text()) == info
    assert (dest / COMMAND_STORE).is_file() and (dest / "profile.json").is_file() and (dest / "grid.json").is_file()
    assert not (dest / "cells").exists()  # one table (ilets.cell_pack): each cell's file as the grid wrote it
    assert cell_pack.contents(dest) == {q.name: {cell_pack.WHOLE: q.read_bytes()} for q in (out / "cells").glob("*-s*.json")}
    pd.testing.assert_frame_equal(pd.read_parquet(dest / COMMAND_STORE), pd.read_parquet(out / COMMAND_STORE))
    assert set(provenance(dest, "gridcommand")) == SCHEMA
    assert ship(out, tmp_path / "again", scenario="gridcommand")["cells"] == 4  # the function the command calls


def test_a_grid_shipped_in_part_resumes_from_a_copy_of_its_shipped_folder(tmp_path, tiny, capsys):
    """How a grid longer than a session goes on in the next (README: copy the shipped folder to
    a results folder, run the grid there): the shipped cells count as done, only the rest run."""
    out, dest, again = tmp_path / "out", tmp_path / "shipped" / "part", tmp_path / "again"
    assert main(["grid", "--scenario", "gridcommand", "--profile", str(tiny), "--out", str(out), "--quiet",
                 "--max-cells", "2"]) == 0
    assert main(["ship", "--scenario", "gridcommand", "--results", str(out), "--to", str(dest)]) == 0
    capsys.readouterr()
    shutil.copytree(dest, again)
    shipped = {q.name: cell_pack.read_bytes(q) for q in cell_pack.cell_paths(dest, "*.json")}
    assert len(shipped) == 2
    assert main(["grid", "--scenario", "gridcommand", "--profile", str(tiny), "--out", str(again), "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["ran"], summary["skipped_done"], summary["failed"]) == (2, 2, 0)
    # the shipped cells stay in their table, the new ones are plain files beside it
    assert all(cell_pack.read_bytes(again / "cells" / name) == data for name, data in shipped.items())
    assert sorted(q.name for q in (again / "cells").iterdir()) == sorted(set(cell_pack.entries(again)) - set(shipped))
    assert len(pd.read_parquet(again / COMMAND_STORE)) == 4 * 2
    # shipped again, all four are one table
    assert main(["ship", "--scenario", "gridcommand", "--results", str(again), "--to", str(dest)]) == 0
    assert len(cell_pack.entries(dest)) == 4 and not (dest / "cells").exists()


def test_shipping_or_running_what_cannot_be_is_a_one_line_error(tmp_path, tiny, capsys):
    (tmp_path / "unfinished").mkdir()
    assert main(["ship", "--scenario", "gridcommand", "--results", str(tmp_path / "unfinished"),
                 "--to", str(tmp_path / "dest")]) == 2
    err = capsys.readouterr().err
    assert "cells/" in err and "Traceback" not in err and not (tmp_path / "dest").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text(tiny.read_text().replace("servers:\n- 6", "servers:\n- -3"))
    assert main(["grid", "--scenario", "gridcommand", "--profile", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "servers" in capsys.readouterr().err
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert main(["grid", "--scenario", "gridcommand", "--profile", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "empty profile" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["grid", "--scenario", "gridcommand", "--profile", str(tiny), "--max-cells", "-1"])
    assert "--max-cells" in capsys.readouterr().err


# --- ilets verify --scenario gridcommand: the study's one verifier ---------------------------

@pytest.fixture(scope="module")
def shipped_command(tmp_path_factory) -> Path:
    """A shipped tiny grid-command grid: an expert, the clone and the clone fine-tuned (3 cells)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from tiny_profiles import write_command_profile

    root = tmp_path_factory.mktemp("verify-command")
    path = write_command_profile(root / "tiny.yaml", methods=["rule", "bc", "bc+ppo"], seeds=[0])
    assert run_grid(G.load_profile(path), root / "results", progress=False, scenario="gridcommand")["ran"] == 3
    ship(root / "results", root / "shipped", scenario="gridcommand")
    return root / "shipped"


def _copy(folder: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(folder, tmp_path / "copy")
    return tmp_path / "copy"


@pytest.mark.slow  # `ilets verify` re-runs grid-command cells end to end
def test_ilets_verify_reruns_sampled_command_cells_exactly(shipped_command, tmp_path, capsys):
    report = tmp_path / "VERIFY.json"
    code = main(["verify", "--scenario", "gridcommand", "--results", str(shipped_command), "--sample", "3",
                 "--scratch", str(tmp_path / "scratch"), "--quiet", "--report", str(report)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "3 of 3 cells reproduced" in out and out.count("reproduced  ") == 3
    assert sorted(q.name for q in (tmp_path / "scratch" / "cells").glob("*.json")) == [
        "bc+ppo-M6-s0.json", "bc-M6-s0.json", "rule-M6-s0.json"]  # every cell re-run, none copied
    checks = json.loads(report.read_text())["cells"]
    assert sorted(c["cell"] for c in checks) == ["bc+ppo-M6-s0", "bc-M6-s0", "rule-M6-s0"]
    assert all(c["reproduced"] and not c["differences"] for c in checks)
    # a sample among one method, as the cloud's
    assert main(["verify", "--scenario", "gridcommand", "--results", str(shipped_command), "--sample", "1",
                 "--methods", "bc", "--scratch", str(tmp_path / "scratch"), "--quiet"]) == 0
    assert "reproduced  bc-M6-s0" in capsys.readouterr().out


def test_a_tampered_command_score_is_reported(shipped_command, tmp_path, capsys):
    results = _copy(shipped_command, tmp_path)
    cell = results / "cells" / "rule-M6-s0.json"  # a row of the shipped table (ilets.cell_pack)

    def tamper(text):
        rec = json.loads(text)
        rec["scores"]["eval"]["mean_reward"] += 1e-9
        rec["scores"]["eval"]["eval_cpu_s"] *= 3  # host timing: not a difference
        return json.dumps(rec)

    rewrite(cell, tamper)
    code = main(["verify", "--scenario", "gridcommand", "--results", str(results), "--cell", "rule-M6-s0",
                 "--scratch", str(tmp_path / "scratch"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 1 and "DIFFERS" in out and "rule-M6-s0.json scores.eval.mean_reward" in out, out
    assert "eval_cpu_s" not in out


def test_command_verification_refusals_are_one_line(shipped_command, tmp_path, capsys):
    results = _copy(shipped_command, tmp_path)
    base = ["verify", "--scenario", "gridcommand", "--results", str(results), "--scratch", str(tmp_path / "s"),
            "--quiet"]
    profile = json.loads((results / "profile.json").read_text())
    (results / "profile.json").write_text(json.dumps({**profile, "train_regime": "deep-short"}))
    assert main([*base, "--cell", "rule-M6-s0"]) == 2  # the record is not the profile's
    err = capsys.readouterr().err
    assert str(results / "cells" / "rule-M6-s0.json") in err and "train_regime" in err and len(err.splitlines()) == 1
    (results / "profile.json").unlink()
    assert main([*base, "--cell", "rule-M6-s0"]) == 2
    assert str(results / "profile.json") in capsys.readouterr().err
    assert not (tmp_path / "s" / "cells").exists()  # nothing was re-run
    assert main([*base, "--sample", "1", "--methods", "drl"]) == 2
    assert "not methods of scenario 'gridcommand'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--sample", "1", "--methods", "dqn"])
    assert "invalid choice: 'dqn'" in capsys.readouterr().err
    # a grid-command folder verified as the paper study's: told which scenario it is
    assert main(["verify", "--results", str(results), "--sample", "1"]) == 2
    assert "--scenario gridcommand" in capsys.readouterr().err
