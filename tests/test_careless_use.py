"""Nothing lost under careless use (issue 62): ``ilets ship`` replaces only a folder an earlier
ship made, a grid's own results are never shipped over, two grids of one name but other
settings never mix, a damaged clone record starts the clone again, and ``evaluate`` and
``verify`` refuse what they cannot read in one line instead of a traceback or wrong numbers.

Every test damages real files in a temporary folder and runs the real command (or function);
the grids are the tiny profiles of :mod:`tests.tiny_profiles` (cells of a second or less)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ilets import cell_pack
from ilets.study.cli import main
from ilets.study.grid import run_grid
from ilets.study.profiles import load_profile
from ilets.study.scenario import get_scenario
from tiny_profiles import TINY_RUN, write_command_profile, write_profile


@pytest.fixture(scope="module")
def cloud_grid(tmp_path_factory) -> Path:
    """A finished tiny grid of the paper's study: two heuristics, two cells."""
    root = tmp_path_factory.mktemp("cloud")
    path = write_profile(root / "tiny.yaml", methods=["earliest-finish", "round-robin"], servers=[10], seeds=[0],
                         workers=1)
    run_grid(load_profile(path), root / "results", workers=1, progress=False)
    return root / "results"


@pytest.fixture(scope="module")
def command_grid(tmp_path_factory) -> Path:
    """A finished tiny grid-command grid: two experts, seeds 0 and 1 (4 cells)."""
    root = tmp_path_factory.mktemp("command")
    path = write_command_profile(root / "ctiny.yaml")
    sc = get_scenario("gridcommand")
    run_grid(sc.load_profile(path), root / "results", progress=False, scenario=sc)
    return root / "results"


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def _one_line_error(capsys, code: int, *words: str) -> str:
    """Assert a refused command: rc 2, one line on stderr holding ``words``, no traceback."""
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    return err


# --- row 1: a ship replaces only a folder an earlier ship made --------------------------------

def test_ship_into_a_users_folder_is_refused_and_nothing_is_deleted(cloud_grid, tmp_path, capsys):
    dest = tmp_path / "D"
    (dest / "notes").mkdir(parents=True)
    (dest / "notes" / "thesis.txt").write_text("x\n")
    code = main(["ship", "--results", str(cloud_grid), "--to", str(dest)])
    _one_line_error(capsys, code, str(dest), "no PROVENANCE.json")
    assert (dest / "notes" / "thesis.txt").read_text() == "x\n"
    # the parent of shipped folders, named for one of them: its other shipped folders stay
    shipped = tmp_path / "shipped"
    assert main(["ship", "--results", str(cloud_grid), "--to", str(shipped / "quick")]) == 0
    capsys.readouterr()
    code = main(["ship", "--results", str(cloud_grid), "--to", str(shipped)])
    _one_line_error(capsys, code, str(shipped))
    assert (shipped / "quick" / "PROVENANCE.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left behind


def test_ship_replaces_an_earlier_ship_and_an_empty_folder(cloud_grid, tmp_path, capsys):
    dest = tmp_path / "S"
    dest.mkdir()  # empty: nothing to lose
    assert main(["ship", "--results", str(cloud_grid), "--to", str(dest)]) == 0
    (dest / "cells" / "stale").mkdir(parents=True)  # an earlier ship's folder is replaced whole
    assert main(["ship", "--results", str(cloud_grid), "--to", str(dest)]) == 0
    assert not (dest / "cells").exists() and (dest / "PROVENANCE.json").is_file()
    assert cell_pack.entries(dest) == sorted(p.name for p in (cloud_grid / "cells").iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# --- rows 2 and 3: never over the results, never `.` -------------------------------------------

def test_ship_over_or_into_the_results_is_refused(cloud_grid, tmp_path, capsys, monkeypatch):
    results = _copy(cloud_grid, tmp_path / "results" / "smoke")
    cells = sorted(p.name for p in (results / "cells").iterdir())
    code = main(["ship", "--results", str(results), "--to", str(tmp_path / "results")])
    _one_line_error(capsys, code, "holds the results folder")
    code = main(["ship", "--results", str(results), "--to", str(results / "shipped")])
    _one_line_error(capsys, code, "lies inside the results folder")
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")
    code = main(["ship", "--results", str(results), "--to", ".."])  # `..` holds nothing of the results: a user's
    _one_line_error(capsys, code, "..")
    monkeypatch.chdir(results)
    code = main(["ship", "--results", ".", "--to", ".."])
    _one_line_error(capsys, code, "holds the results folder")
    assert sorted(p.name for p in (results / "cells").iterdir()) == cells
    assert (tmp_path / "a" / "b").is_dir()


def test_ship_to_dot_is_one_line(cloud_grid, tmp_path, capsys, monkeypatch):
    work = tmp_path / "work"
    (work / "notes").mkdir(parents=True)
    monkeypatch.chdir(work)
    code = main(["ship", "--results", str(cloud_grid), "--to", "."])
    _one_line_error(capsys, code, "no PROVENANCE.json")
    assert (work / "notes").is_dir()


# --- row 4: a second ship keeps the recorded re-runs of unchanged cells -------------------------

def test_shipping_again_keeps_the_checks_of_unchanged_cells(cloud_grid, tmp_path, capsys):
    results = _copy(cloud_grid, tmp_path / "R")
    dest = tmp_path / "S"
    assert main(["ship", "--results", str(results), "--to", str(dest)]) == 0
    first, second = cell_pack.entries(dest)
    report = dest / "VERIFY.json"
    assert main(["verify", "--results", str(dest), "--cell", first, "--cell", second, "--scratch",
                 str(tmp_path / "scratch"), "--report", str(report), "--quiet"]) == 0
    capsys.readouterr()
    # the same results shipped again: both checks kept
    assert main(["ship", "--results", str(results), "--to", str(dest)]) == 0
    assert "kept the recorded re-runs of 2 unchanged cell(s)" in capsys.readouterr().err
    assert sorted(c["cell"] for c in json.loads(report.read_text())["cells"]) == [first, second]
    # one cell's results changed in the grid: its check goes, the other's stays
    metrics = results / "cells" / second / "metrics.json"
    m = json.loads(metrics.read_text())
    m["avg_response_s"] += 1.0
    metrics.write_text(json.dumps(m))
    assert main(["ship", "--results", str(results), "--to", str(dest)]) == 0
    assert "dropped 1 of cells whose results changed" in capsys.readouterr().err
    assert [c["cell"] for c in json.loads(report.read_text())["cells"]] == [first]


# --- row 5: the wrong scenario ------------------------------------------------------------------

def test_shipping_the_wrong_scenario_is_refused_with_the_hint(cloud_grid, command_grid, tmp_path, capsys):
    g = _copy(command_grid, tmp_path / "G")
    dest = tmp_path / "S"
    assert main(["ship", "--scenario", "gridcommand", "--results", str(g), "--to", str(dest)]) == 0
    capsys.readouterr()
    store = sorted(p.name for p in (g / "store").iterdir())
    code = main(["ship", "--results", str(g), "--to", str(dest)])  # --scenario gridcommand forgotten
    _one_line_error(capsys, code, "no finished cell of scenario 'cloud'", "add --scenario gridcommand")
    assert len(cell_pack.cell_paths(dest, "*.json")) == 4  # the earlier ship is untouched
    assert sorted(p.name for p in (g / "store").iterdir()) == store  # no cloud store written into G
    r = _copy(cloud_grid, tmp_path / "R")
    code = main(["ship", "--scenario", "gridcommand", "--results", str(r), "--to", str(tmp_path / "S2")])
    _one_line_error(capsys, code, "no finished cell of scenario 'gridcommand'", "add --scenario cloud")
    assert not (r / "store" / "results.parquet").exists() and not (tmp_path / "S2").exists()


# --- row 12: a stray entry in cells/ -------------------------------------------------------------

def test_verify_skips_a_stray_entry_in_cells(cloud_grid, command_grid, tmp_path, capsys):
    from ilets.study.shipping import load_provenance

    r = _copy(cloud_grid, tmp_path / "R")
    (r / "cells" / "notes").mkdir()
    (r / "cells" / "notes" / "todo.txt").write_text("x\n")
    code = main(["verify", "--results", str(r), "--sample", "2", "--methods", "earliest-finish",
                 "--scratch", str(tmp_path / "s1"), "--quiet"])
    out = capsys.readouterr()
    assert code == 0 and "1 of 1 cells reproduced exactly" in out.out, out.err
    assert load_provenance(r)["cells"] == 2 and (r / "cells" / "notes" / "todo.txt").is_file()
    g = _copy(command_grid, tmp_path / "G")
    (g / "cells" / "notes.json").write_text("{}")
    code = main(["verify", "--scenario", "gridcommand", "--results", str(g), "--sample", "1", "--methods", "rule",
                 "--scratch", str(tmp_path / "s2"), "--quiet"])
    out = capsys.readouterr()
    assert code == 0 and "1 of 1 cells reproduced exactly" in out.out, out.err
    assert (g / "cells" / "notes.json").read_text() == "{}"


def test_verify_names_the_scenario_for_a_cell_and_runs_a_cell_named_twice_once(command_grid, tmp_path, capsys):
    g = _copy(command_grid, tmp_path / "G")
    code = main(["verify", "--results", str(g), "--cell", "rule-M6-s0"])  # --scenario gridcommand forgotten
    _one_line_error(capsys, code, "no cell(s) ['rule-M6-s0']", "add --scenario gridcommand")
    code = main(["verify", "--scenario", "gridcommand", "--results", str(g), "--cell", "rule-M6-s0", "--cell",
                 "rule-M6-s0", "--scratch", str(tmp_path / "s"), "--quiet"])
    out = capsys.readouterr()
    assert code == 0 and "1 of 1 cells reproduced exactly" in out.out, out.err


# --- rows 7 and 8: a clone's damaged progress record starts the clone again -----------------------

def _killed_clone(tmp_path, monkeypatch):
    """A per-server clone killed in its second DAgger round, its progress folder left behind;
    the clone made in one go; and what it takes to make it again."""
    import yaml

    from ilets.gridcommand import cloning as CL
    from ilets.gridcommand.config import load_gridcommand_config
    from ilets.gridcommand.episodes import training_config
    from ilets.gridcommand.pipeline_config import PipelineConfig
    from test_gridcommand_per_server import SCENARIO, Killed, _count_and_kill

    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    cfg = training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    pipe = PipelineConfig(clone_action="greedy", dagger_rounds=1, bc_epochs=2, train_episodes=2)
    whole, _ = CL.clone(cfg, pipe, 0)
    progress = tmp_path / "clone-key.partial"
    with monkeypatch.context() as m:
        _count_and_kill(m, ("relabel", 2, False))
        with pytest.raises(Killed):
            CL.clone(cfg, pipe, 0, progress=progress)
    return whole, progress, lambda: CL.clone(cfg, pipe, 0, progress=progress)


@pytest.mark.parametrize("damage", ["state", "phase", "model"])
def test_a_clone_record_of_an_impossible_state_starts_the_clone_again(tmp_path, monkeypatch, damage):
    import torch as th

    whole, progress, again = _killed_clone(tmp_path, monkeypatch)
    path = progress / "progress.json"
    record = json.loads(path.read_text())
    if damage == "state":
        record["state"] = {"model": None, "rng": record["state"]["rng"]}
    elif damage == "phase":
        record["state"]["phase"] = 5
    else:
        record["state"]["model"] = None
    path.write_text(json.dumps(record))
    with pytest.warns(UserWarning, match=r"damaged clone progress .*state\."):
        state, _ = again()
    assert all(th.equal(whole[k], state[k]) for k in whole)  # the clone made in one go


def test_a_clone_column_cut_short_starts_the_clone_again(tmp_path, monkeypatch):
    import torch as th

    whole, progress, again = _killed_clone(tmp_path, monkeypatch)
    (column,) = progress.glob("obs-*.npy")
    os.truncate(column, 1000)
    with pytest.warns(UserWarning, match=r"damaged clone progress .*obs-\d+\.npy: 1,000 bytes.*cut short"):
        state, _ = again()
    assert all(th.equal(whole[k], state[k]) for k in whole)


# --- rows 9 to 11: evaluate reads a task table at any origin, and only numbers, and only weights ---

SCHEDULE_KEYS = ("tasks", "avg_response_s", "avg_wait_s", "success_rate", "energy_kwh", "makespan_s", "mean_reward")


@pytest.fixture(scope="module")
def task_rows() -> list[list[str]]:
    """A 300-task table (the smoke workload's first online tasks) as the decimal text of each value."""
    from ilets.config import WorkloadConfig
    from ilets.workloads.workload import synthetic_workload

    t = synthetic_workload(WorkloadConfig(scale=0.001), 0).online.slice(0, 300)
    return [[repr(float(x)) for x in row] for row in zip(t.arrival, t.cpu, t.length, t.deadline)]


def _table(path: Path, rows: list[list[str]], origin: str = "0") -> Path:
    """``rows`` as a CSV whose arrivals are ``origin`` + each arrival, added in decimal (exact)."""
    import decimal

    with decimal.localcontext() as ctx:
        ctx.prec = 400
        lines = [f"{decimal.Decimal(origin) + decimal.Decimal(r[0])},{','.join(r[1:])}" for r in rows]
    path.write_text("arrival,cpu,length,deadline\n" + "\n".join(lines) + "\n")
    return path


def _evaluate(capsys, tmp_path, workload: Path, name: str, policy: str = "earliest-finish") -> tuple[int, str]:
    code = main(["evaluate", "--policy", policy, "--workload", str(workload), "--servers", "10", "--out",
                 str(tmp_path / name)])
    return code, capsys.readouterr().err


def test_an_arrival_origin_far_away_gives_the_same_schedule(tmp_path, capsys, task_rows):
    got = {}
    for origin in ("0", "1000000000", "1700000000000000"):
        code, err = _evaluate(capsys, tmp_path, _table(tmp_path / f"T-{origin}.csv", task_rows, origin), origin)
        assert code == 0, err
        metrics = json.loads((tmp_path / origin / "metrics.json").read_text())
        got[origin] = {k: metrics[k] for k in SCHEDULE_KEYS}
    assert got["0"]["avg_response_s"] > 1 and got["0"]["energy_kwh"] > 0 and 0 < got["0"]["success_rate"] < 1
    assert got["1000000000"] == got["0"] and got["1700000000000000"] == got["0"]
    # 1e300: the file itself has lost the arrivals' spacing (every arrival is the same float)
    code, err = _evaluate(capsys, tmp_path, _table(tmp_path / "far.csv", task_rows, "1e300"), "far")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "far.csv: line 2, column 'arrival'" in err and "beyond 2**53 s" in err
    assert not (tmp_path / "far").exists() or not (tmp_path / "far" / "metrics.json").exists()


def test_datetime_arrivals_in_parquet_are_refused(tmp_path, capsys, task_rows):
    import pandas as pd

    frame = pd.read_csv(_table(tmp_path / "T.csv", task_rows))
    frame["arrival"] = pd.Timestamp("2024-01-01") + pd.to_timedelta(frame["arrival"], unit="s")
    path = tmp_path / "T.parquet"
    frame.to_parquet(path)
    code, err = _evaluate(capsys, tmp_path, path, "dt")
    assert code == 2 and err.count("\n") == 1, err
    assert "T.parquet: column 'arrival': expected numbers, got datetime64" in err
    assert not (tmp_path / "dt" / "metrics.json").exists()


@pytest.mark.parametrize("damage", ["bytes", "list", "nan"])
def test_damaged_policy_weights_are_one_line_naming_the_file(tmp_path, capsys, task_rows, damage):
    import torch as th

    shipped = Path(__file__).resolve().parents[1] / "shipped" / "per-server"
    source = cell_pack.cell_paths(shipped, "drl+-M50-s0-*")[0]
    cell = cell_pack.materialise(source, tmp_path / source.name)  # a cell folder of its own, byte for byte
    weights = cell / "policy" / "policy.pt"
    if damage == "bytes":
        weights.write_bytes(os.urandom(4096))
    elif damage == "list":
        th.save([1, 2, 3], weights)
    else:
        state = th.load(weights, weights_only=True)
        key = next(k for k, v in state.items() if v.is_floating_point())
        state[key] = state[key].clone()
        state[key].view(-1)[0] = float("nan")
        th.save(state, weights)
    code, err = _evaluate(capsys, tmp_path, _table(tmp_path / "T.csv", task_rows), "out", policy=str(cell))
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert str(weights) in err and "weights_only" not in err
    assert not (tmp_path / "out" / "metrics.json").exists()


# --- row 6: two grids of one profile name, other settings, on one folder -----------------------

def _held_grid(monkeypatch, sc, profile, out: Path):
    """``run_grid(profile, out)`` in a thread whose first cell waits until released: a grid
    running on ``out``. Returns (release, join)."""
    import threading

    started, release = threading.Event(), threading.Event()
    real = type(sc).run_cell

    def slow(self, cell, folder, wait, processes=1):
        started.set()
        release.wait(60)
        return real(self, cell, folder, wait, processes)

    monkeypatch.setattr(type(sc), "run_cell", slow)
    errors: list[BaseException] = []

    def target() -> None:
        try:
            run_grid(profile, out, workers=1, progress=False, scenario=sc)
        except BaseException as err:  # noqa: BLE001 -- shown by the test
            errors.append(err)

    thread = threading.Thread(target=target)
    thread.start()
    assert started.wait(60)
    monkeypatch.setattr(type(sc), "run_cell", real)  # the second grid's cells run as they are

    def join() -> None:
        release.set()
        thread.join(60)
        assert not errors, errors

    return join


@pytest.mark.parametrize("scenario", ["cloud", "gridcommand"])
def test_a_grid_of_the_same_name_and_other_settings_is_refused_while_one_runs(tmp_path, capsys, monkeypatch,
                                                                               scenario):
    sc = get_scenario(scenario)
    out = tmp_path / "out"
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    if scenario == "cloud":
        first = write_profile(tmp_path / "a" / "tiny.yaml", methods=["earliest-finish"], servers=[10], seeds=[0])
        other = write_profile(tmp_path / "b" / "tiny.yaml", methods=["earliest-finish"], servers=[10], seeds=[0],
                              run={**TINY_RUN, "workload": {"scale": 0.002}})
    else:
        first = write_command_profile(tmp_path / "a" / "ctiny.yaml", seeds=[0])
        other = write_command_profile(tmp_path / "b" / "ctiny.yaml", {"defer_s": 0.6}, seeds=[0])
    join = _held_grid(monkeypatch, sc, sc.load_profile(first), out)
    try:
        code = main(["grid", "--scenario", scenario, "--profile", str(other), "--out", str(out), "--quiet"])
        _one_line_error(capsys, code, "with other settings is running there")
        # the same profile again shares the folder, as before
        again = run_grid(sc.load_profile(first), out, progress=False, scenario=sc, wait_busy=False)
        assert again["failed"] == 0
    finally:
        join()
    manifest = json.loads((out / "grid.json").read_text())
    assert manifest["settings"] == sc.settings_key(sc.load_profile(first))
    # once it has ended, the other settings take the folder over, saying so
    summary = run_grid(sc.load_profile(other), out, progress=False, scenario=sc)
    assert summary["failed"] == 0 and "changed its settings" in capsys.readouterr().err


# --- warnings: a partial grid ships with a notice, and its provenance says how complete it is ----

def test_a_partial_grid_ships_with_a_notice_and_its_planned_cells(tmp_path, capsys):
    path = write_profile(tmp_path / "part.yaml", methods=["earliest-finish", "round-robin"], servers=[10], seeds=[0])
    out = tmp_path / "R"
    run_grid(load_profile(path), out, progress=False, max_cells=1)
    assert main(["ship", "--results", str(out), "--to", str(tmp_path / "S")]) == 0
    captured = capsys.readouterr()
    info = json.loads(captured.out)
    assert info["cells"] == 1 and info["planned_units"] == 2
    assert f"shipping 1 of 2 planned cells of {out}" in captured.err


# --- warnings: a full disk during a clone is one line, not a bus error ----------------------------

def test_a_full_disk_stops_a_clones_aggregate_with_a_line_naming_the_folder(tmp_path, monkeypatch):
    import errno
    from collections import namedtuple

    from ilets.gridcommand import aggregate as A
    from test_gridcommand_aggregate import part

    folder = tmp_path / "clone.partial"
    kept = A.Aggregate(capacity=3, folder=folder)
    kept.add(part(2, 0))
    kept.commit({"played": 1})
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(A.shutil, "disk_usage", lambda where: usage(10**6, 10**6 - 10, 10))
    with pytest.raises(OSError, match="the disk is full: 10 bytes free") as caught:
        kept.add(part(3, 100))  # past the capacity: the columns' copy would need room too
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(folder)
    back, state = A.Aggregate.reopen(folder)
    assert len(back) == 2 and state == {"played": 1}  # the last record is kept for a rerun
    memory = A.Aggregate(capacity=3)  # in memory: no disk to fill
    memory.add(part(2, 0))
    assert len(memory) == 2


# --- warnings: a Ctrl-C while pool workers start prints no child's traceback ----------------------

def _interrupted_start() -> None:
    """A pool worker's initializer hit by a terminal's Ctrl-C before it could ignore it (the
    group's SIGINT reaches a spawned worker still importing its modules)."""
    import signal

    from ilets.lifecycle import pool_worker

    os.kill(os.getpid(), signal.SIGINT)
    pool_worker()


def test_a_ctrl_c_while_pool_workers_start_leaves_no_traceback_of_theirs(capfd):
    from ilets.lifecycle import local_pool

    with local_pool(2, _interrupted_start) as pool:
        assert list(pool.map(abs, [-1, -2, -3])) == [1, 2, 3]  # the workers went on; the parent decides
    err = capfd.readouterr().err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


# --- warnings: verify does not count a cell whose record lost keys as reproduced -----------------

def test_a_record_with_deleted_keys_is_not_reproduced(tmp_path, capsys):
    path = write_profile(tmp_path / "two.yaml", methods=["earliest-finish"], servers=[10], seeds=[0, 1])
    out = tmp_path / "R"
    run_grid(load_profile(path), out, progress=False)
    cell = sorted(p.name for p in (out / "cells").iterdir() if not p.name.startswith("."))[1]
    metrics = out / "cells" / cell / "metrics.json"
    m = json.loads(metrics.read_text())
    del m["avg_response_s"], m["energy_kwh"]  # its sibling of the same method and commit records both
    metrics.write_text(json.dumps(m))
    code = main(["verify", "--results", str(out), "--cell", cell, "--scratch", str(tmp_path / "s"), "--quiet"])
    printed = capsys.readouterr().out
    assert code == 1 and "DIFFERS" in printed and "0 of 1 cells reproduced" in printed, printed
    assert "avg_response_s: missing from the record" in printed and "energy_kwh: missing from the record" in printed
