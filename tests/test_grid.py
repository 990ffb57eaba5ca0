"""The grid runner: results store, compute table, kill/resume, submitit, failing cells.

Cells are tiny (a ~260-task workload on 5-10 servers, small PPO) so the whole file takes
about a minute on 2 cores; most of it is starting Python and torch in worker processes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from ilets.study.grid import run_grid
from ilets.study.profiles import load_profile
from ilets.study.results import LEARNERS, build_store, compute_table
from ilets.study.run import cell_name, is_done
from ilets.study.verify import HOST_KEYS

#: fields that depend on the machine's speed, not on the computation
#: metrics that measure the host, not the result (wall/CPU seconds, latencies, phase timings)
TIMING = tuple(sorted(HOST_KEYS))
CELL_FILES = {"config.yaml", "command.txt", "system.json", "metrics.json", "curve.csv", "decisions.npz"}
from tiny_profiles import write_profile  # noqa: E402 (tests/ is on the path)


def cli(*args: str, **kw) -> subprocess.Popen:
    """``ilets ...`` in a new process group (so the test can kill it with its workers)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "ilets.study.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True, **kw)


def finish(proc: subprocess.Popen, timeout: float = 240) -> tuple[int, dict, str]:
    """Exit code, the printed JSON summary and stderr of a finished ``ilets grid``."""
    out, err = proc.communicate(timeout=timeout)
    start = out.find("{")
    summary = json.loads(out[start:]) if start >= 0 else {}
    return proc.returncode, summary, err


def finished_cells(out: Path) -> set[str]:
    root = out / "cells"
    return {p.name for p in root.iterdir() if not p.name.startswith(".")} if root.is_dir() else set()


def expected_cells(profile_path: Path) -> set[str]:
    return {cell_name(c) for c in load_profile(profile_path).cells()}


def comparable(out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Store tables without timing columns, in a stable order."""
    metrics = pd.read_parquet(out / "store" / "metrics.parquet")
    metrics = metrics.drop(columns=[c for c in TIMING if c in metrics]).sort_values("cell").reset_index(drop=True)
    curves = pd.read_parquet(out / "store" / "curves.parquet").sort_values(["cell", "window"]).reset_index(drop=True)
    return metrics, curves


@pytest.mark.slow  # a grid of 6 cells (2 of them DRL) in 2 worker processes
def test_local_grid_writes_store_and_compute_table(tmp_path):
    path = write_profile(tmp_path / "tiny.yaml", methods=["random", "least-loaded", "drl"], servers=[5, 10],
                         seeds=[0], workers=2)
    profile = load_profile(path)
    out = tmp_path / "out"
    summary = run_grid(profile, out, executor="local", workers=2, progress=False)

    names = expected_cells(path)
    assert summary["cells"] == 6 and summary["ran"] == 6 and summary["failed"] == 0 and summary["skipped_done"] == 0
    assert finished_cells(out) == names
    for cfg in profile.cells():
        folder = out / "cells" / cell_name(cfg)
        files = {p.name for p in folder.iterdir()}
        assert CELL_FILES <= files, f"{folder.name} lacks {CELL_FILES - files}"
        assert ("model.zip" in files) == (cfg.method in LEARNERS)
        assert ("policy" in files) == (cfg.method in LEARNERS)  # weights to take away, flat ones too
        assert yaml.safe_load((folder / "config.yaml").read_text())["method"] == cfg.method
    assert json.loads((out / "grid.json").read_text())["cells"] == [cell_name(c) for c in profile.cells()]
    assert yaml.safe_load((out / "profile.yaml").read_text())["name"] == "tiny"

    metrics = pd.read_parquet(out / "store" / "metrics.parquet")
    assert set(metrics["cell"]) == names and len(metrics) == 6
    assert set(metrics["method"]) == {"random", "least-loaded", "drl"} and set(metrics["servers"]) == {5, 10}
    for col in ("avg_response_s", "energy_kwh", "success_rate", "mean_reward", "tasks"):
        assert metrics[col].notna().all(), col
    assert (metrics["tasks"] > 0).all() and metrics["success_rate"].between(0, 1).all()
    curves = pd.read_parquet(out / "store" / "curves.parquet")
    assert set(curves["cell"]) == names
    assert {"method", "servers", "seed", "window", "reward"} <= set(curves.columns)

    compute = compute_table(out)
    assert len(compute) == 6 and set(compute["cell"]) == names and (compute["status"] == "done").all()
    assert (compute["wall_s"] > 0).all() and (compute["cpu_s"] > 0).all()
    drl = compute[compute["method"] == "drl"]
    assert drl["cpu_s"].min() > compute[compute["method"] == "random"]["cpu_s"].max()  # training costs
    assert summary["cell_cpu_s_total"] == pytest.approx(compute["cpu_s"].sum())
    assert summary["grid_wall_s"] > 0

    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(out / "cells" / metrics.loc[metrics["method"] == "drl", "cell"].iloc[0] / "model.zip",
                             device="cpu")
    assert model.policy is not None

    again = run_grid(profile, out, executor="local", workers=2, progress=False)
    assert again["skipped_done"] == 6 and again["ran"] == 0 and again["failed"] == 0


def test_the_store_follows_a_running_grid(tmp_path, monkeypatch):
    # a book built while the grid runs reads the store: it is rebuilt every STORE_EVERY cells
    from ilets.study import grid as G
    from ilets.study import results as R

    path = write_profile(tmp_path / "three.yaml", methods=["random", "least-loaded", "round-robin"], servers=[5],
                         seeds=[0], workers=1)
    out = tmp_path / "out"
    seen = []
    build = R.build_store

    def counting_build(folder):
        paths = build(folder)
        seen.append(len(pd.read_parquet(paths["metrics"])))
        return paths

    monkeypatch.setattr(G, "STORE_EVERY", 2)
    monkeypatch.setattr(R, "build_store", counting_build)
    run_grid(load_profile(path), out, executor="local", workers=1, progress=False)
    assert seen == [2, 3]  # after the 2nd cell, and once the grid ends


@pytest.mark.slow  # `ilets grid` in a child process, stopped by SIGTERM
def test_an_interrupted_grid_leaves_a_current_store(tmp_path):
    # SIGTERM (kill, timeout, SLURM) stops the grid; the store then lists exactly the
    # finished cells, so nobody has to know to rebuild it before reading results
    path = write_profile(tmp_path / "stop.yaml", methods=["random", "least-loaded"], servers=[5, 10],
                         seeds=[0, 1], workers=1)
    out = tmp_path / "out"
    proc = cli("grid", "--profile", str(path), "--out", str(out), "--quiet")
    deadline = time.monotonic() + 180
    while not finished_cells(out):
        assert proc.poll() is None, f"the grid ended (exit {proc.returncode}) before it could be stopped"
        assert time.monotonic() < deadline, "no cell finished within 180 s"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGTERM)
    rc, _, err = finish(proc, timeout=120)
    assert rc == 130, err
    survivors = finished_cells(out)
    assert 0 < len(survivors) < 8
    assert set(pd.read_parquet(out / "store" / "metrics.parquet")["cell"]) == survivors


def _pgroup_alive(pgid: int) -> bool:
    import psutil

    for p in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(p.info["pid"]) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.Error):
            continue
    return False


@pytest.mark.slow
def test_killed_grid_resumes_to_the_same_numbers(tmp_path):
    # 4 cells: 2 DRL (a few seconds each) and 2 random (a fraction of a second)
    path = write_profile(tmp_path / "resume.yaml", methods=["drl", "random"], servers=[5], seeds=[0, 1],
                         workers=2)
    names = expected_cells(path)
    assert len(names) == 4

    ref = tmp_path / "reference"
    rc, summary, err = finish(cli("grid", "--profile", str(path), "--out", str(ref), "--quiet"))
    assert rc == 0, err
    assert summary["ran"] == 4 and finished_cells(ref) == names

    out = tmp_path / "killed"
    proc = cli("grid", "--profile", str(path), "--out", str(out), "--quiet")
    deadline = time.monotonic() + 180
    while True:
        cells = out / "cells"
        entries = [p.name for p in cells.iterdir()] if cells.is_dir() else []
        done = [n for n in entries if not n.startswith(".")]
        in_flight = [n for n in entries if n.startswith(".")]
        if done and in_flight:
            break
        if proc.poll() is not None:
            pytest.fail(f"the grid finished (exit {proc.returncode}) before it could be killed mid-run: "
                        f"make the cells longer; stderr: {proc.stderr.read()[-2000:]}")
        assert time.monotonic() < deadline, "no cell finished within 180 s"
        time.sleep(0.02)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the grid and its worker processes
    except ProcessLookupError:
        pass
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 30
    while _pgroup_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)

    # Nothing half-written looks finished: visible folders are complete cells; anything in
    # flight was left under a hidden temporary name, which the store and `is_done` ignore.
    survivors = finished_cells(out)
    assert 0 < len(survivors) < 4, f"kill came too late or too early: {sorted(survivors)}"
    for name in survivors:
        files = {p.name for p in (out / "cells" / name).iterdir()}
        assert CELL_FILES <= files, f"{name} is visible but incomplete: {sorted(files)}"
    for p in (out / "cells").iterdir():
        if p.name.startswith("."):
            assert ".tmp" in p.name, f"unexpected hidden entry {p.name}"
    profile = load_profile(path)
    assert {cell_name(c) for c in profile.cells() if is_done(c, out)} == survivors
    stored = pd.read_parquet(build_store(out)["metrics"])
    assert set(stored["cell"]) == survivors and len(stored) == len(survivors)

    rc, summary, err = finish(cli("grid", "--profile", str(path), "--out", str(out), "--quiet"))
    assert rc == 0, err
    assert summary["skipped_done"] == len(survivors) and summary["ran"] == 4 - len(survivors)
    assert summary["failed"] == 0
    assert finished_cells(out) == names

    got_metrics, got_curves = comparable(out)
    want_metrics, want_curves = comparable(ref)
    assert len(got_metrics) == 4
    pd.testing.assert_frame_equal(got_metrics, want_metrics, check_exact=True)
    pd.testing.assert_frame_equal(got_curves, want_curves, check_exact=True)


def test_hidden_temporary_cell_folders_are_not_results(tmp_path):
    """A cell killed between writing its metrics and the final rename leaves a hidden
    ``.<cell>.tmp-<pid>`` folder that already holds metrics.json: it must not count."""
    path = write_profile(tmp_path / "one.yaml", methods=["random"], servers=[5], seeds=[0], workers=1)
    profile = load_profile(path)
    out = tmp_path / "out"
    run_grid(profile, out, executor="local", workers=1, progress=False)
    (cfg,) = profile.cells()
    other = dataclasses.replace(cfg, method="least-loaded")
    shutil.copytree(out / "cells" / cell_name(cfg), out / "cells" / f".{cell_name(other)}.tmp-999999")
    assert not is_done(other, out)
    metrics = pd.read_parquet(build_store(out)["metrics"])
    assert list(metrics["cell"]) == [cell_name(cfg)], "a hidden temporary folder was taken for a finished cell"
    assert list(compute_table(out)["cell"]) == [cell_name(cfg)]


@pytest.mark.slow
def test_submitit_local_executor_matches_local(tmp_path):
    path = write_profile(tmp_path / "sub.yaml", methods=["random", "drl"], servers=[5], seeds=[0])
    profile = load_profile(path)
    out = tmp_path / "submitit"
    summary = run_grid(profile, out, executor="submitit-local", progress=False)
    assert summary["ran"] == 2 and summary["failed"] == 0
    assert finished_cells(out) == expected_cells(path)
    assert list((out / "submitit").glob("*_result.pkl")), "submitit wrote no job results"
    assert (compute_table(out)["status"] == "done").all()

    local = tmp_path / "local"
    run_grid(profile, local, executor="local", workers=1, progress=False)
    for a, b in zip(comparable(out), comparable(local)):
        pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.slow  # `ilets grid` in a child process with 2 workers
def test_failing_cell_is_recorded_and_the_rest_complete(tmp_path):
    # The `broken` variant reads the Google trace from a folder that does not exist.
    path = write_profile(tmp_path / "broken.yaml", methods=["random", "least-loaded"], servers=[5], seeds=[0],
                         workers=2,
                         variants={"broken": {"methods": ["random"],
                                              "run": {"workload": {"kind": "google",
                                                                   "trace_dir": str(tmp_path / "no-trace")}}}})
    profile = load_profile(path)
    bad = [c for c in profile.cells() if c.variant == "broken"]
    assert len(bad) == 1 and len(profile.cells()) == 3
    bad_name = cell_name(bad[0])
    out = tmp_path / "out"
    rc, summary, err = finish(cli("grid", "--profile", str(path), "--out", str(out), "--quiet"))
    assert rc == 1, f"a failed cell should make `ilets grid` exit 1, got {rc}: {err}"
    assert summary["failed"] == 1 and summary["ran"] == 2 and summary["cells"] == 3

    assert finished_cells(out) == expected_cells(path) - {bad_name}
    assert not [p for p in (out / "cells").iterdir() if p.name.startswith(".")], "temporary folder left behind"
    records = list((out / "failed").glob(f"{bad_name}.*.json"))  # one file per failed attempt
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert record["cell"] == bad_name and record["variant"] == "broken" and record["method"] == "random"
    assert "TraceError" in record["error"] and "Traceback" in record["traceback"]
    assert record["wall_s"] >= 0 and record["cpu_s"] >= 0

    compute = compute_table(out).set_index("cell")
    assert len(compute) == 3
    assert compute.loc[bad_name, "status"] == "failed attempt"
    assert (compute.drop(index=bad_name)["status"] == "done").all()
    metrics = pd.read_parquet(out / "store" / "metrics.parquet")
    assert set(metrics["cell"]) == expected_cells(path) - {bad_name}


def test_a_progress_bar_on_a_closed_pipe_stops_the_cells_at_once():
    """The grid's reader went away (its stderr is a closed pipe): the progress bar's write
    raises, and the cells behind the count must be closed now, not at garbage collection
    (the interpreter's exit would first wait for every queued cell of the pool)."""
    from ilets.study import grid as G

    closed = []

    def results():
        try:
            yield "first", G.RAN
            yield "second", G.RAN
        finally:
            closed.append(True)  # where _run_local kills its pool

    class ClosedPipe:
        def update(self, n):
            raise BrokenPipeError(32, "Broken pipe")

        write = update

    with pytest.raises(BrokenPipeError) as caught:
        G._tally(results(), {"failed": 0, G.RAN: 0, "elsewhere": 0}, ClosedPipe())
    assert caught.value is not None and closed == [True]


# --- a results folder belongs to one grid (issue 20) ---------------------------------------

def test_a_folder_holding_another_profiles_grid_is_refused(tmp_path, capsys):
    from ilets.study.cli import main

    first = write_profile(tmp_path / "first.yaml", methods=["random"], servers=[5], seeds=[0], workers=1)
    second = write_profile(tmp_path / "second.yaml", methods=["least-loaded", "random"], servers=[5], seeds=[1],
                           workers=1)
    out = tmp_path / "out"
    assert main(["grid", "--profile", str(first), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["grid", "--profile", str(second), "--out", str(out), "--quiet"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "'first'" in err and "'second'" in err and str(out) in err and len(err.splitlines()) == 1, err
    assert "Traceback" not in err and captured.out == ""
    # nothing of the second grid ran, and the first grid's store is whole
    assert set(pd.read_parquet(out / "store" / "metrics.parquet")["cell"]) == expected_cells(first)
    assert finished_cells(out) == expected_cells(first)
    assert json.loads((out / "grid.json").read_text())["profile"] == "first"
    # the same profile again (resumed, or with changed settings) takes its folder back
    assert main(["grid", "--profile", str(first), "--out", str(out), "--quiet"]) == 0


def test_the_summary_alone_goes_to_stdout(tmp_path, capsys):
    from ilets.study.cli import main

    # the `broken` variant's cell fails (its trace folder does not exist): a message to print
    path = write_profile(tmp_path / "noisy.yaml", methods=["random"], servers=[5], seeds=[0], workers=1,
                         variants={"broken": {"run": {"workload": {"kind": "google",
                                                                   "trace_dir": str(tmp_path / "no-trace")}}}})
    assert main(["grid", "--profile", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    captured = capsys.readouterr()
    summary = json.loads(captured.out)  # the whole of stdout parses
    assert summary["failed"] == 1 and summary["ran"] == 1
    assert "failed" in captured.err and "broken" in captured.err
