"""Interrupts and kills with real processes: nothing of a run may keep running.

* SIGINT to the process group (a terminal's Ctrl-C) stops ``ilets grid`` at once: the
  queued cells are not run;
* SIGTERM to the parent alone (``kill``, ``timeout``, SLURM) does the same;
* SIGKILL to the parent alone leaves no worker, emulator or resource tracker behind.

Only the test's own process tree is counted: the descendants of the ``ilets`` process,
recorded while it runs, plus anything still in its (new) session's process group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml

from tiny_profiles import write_profile  # noqa: E402 (tests/ is on the path)

# end-to-end: real grids in child processes, killed and resumed (make test runs them; test-fast not)
pytestmark = pytest.mark.slow


def _as_from_a_terminal() -> None:
    # a test suite started as a background job (`make test &`) inherits SIGINT ignored, as
    # every background job of a non-interactive shell does; `ilets` started from a terminal
    # sees the default disposition, which is what these tests are about
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "ilets.study.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
                            preexec_fn=_as_from_a_terminal)


def _cmdline(proc: psutil.Process) -> list[str] | None:
    try:
        return proc.cmdline()
    except psutil.Error:  # it ended meanwhile
        return None


def alive(pids: set[int], pgid: int) -> list[str]:
    """Descriptions of the processes among ``pids`` (or in group ``pgid``) still running."""
    out = []
    for p in psutil.process_iter(["pid", "status", "cmdline"]):
        try:
            if p.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if p.info["pid"] in pids or os.getpgid(p.info["pid"]) == pgid:
                out.append(f"{p.info['pid']}: {' '.join(p.info['cmdline'] or [])[:120]}")
        except (ProcessLookupError, psutil.Error):
            continue
    return out


def wait_for(proc: subprocess.Popen, ready, what: str, timeout: float = 120) -> set[int]:
    """Poll until ``ready(descendants)``; returns the descendant pids seen so far."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while True:
        try:
            kids = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            kids = []
        seen |= {k.pid for k in kids}
        if ready(kids):
            return seen
        if proc.poll() is not None:
            pytest.fail(f"ilets exited ({proc.returncode}) before {what}: {proc.stderr.read()[-2000:]}")
        assert time.monotonic() < deadline, f"not {what} within {timeout} s"
        time.sleep(0.05)


def settled(proc: subprocess.Popen, quiet: float = 1.0, timeout: float = 60) -> set[int]:
    """The descendant pids once no new one has appeared for ``quiet`` s (at most ``timeout``
    s): on a loaded host a pool can take longer than any fixed pause to finish starting."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    while time.monotonic() - last < quiet and time.monotonic() < deadline:
        try:
            now = {k.pid for k in psutil.Process(proc.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            break
        if now - seen:
            seen |= now
            last = time.monotonic()
        time.sleep(0.05)
    return seen


def assert_all_gone(pids: set[int], pgid: int, timeout: float = 5) -> None:
    """Everything gone within ``timeout`` s: far less than a cell or an expert call lasts, so
    a child that would only notice its parent's death when its work is done fails this."""
    deadline = time.monotonic() + timeout
    while (left := alive(pids, pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        for pid in list(pids):  # do not leak them into the rest of the test session
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    assert not left, f"processes survived their parent: {left}"


def cells_started(out: Path):
    def ready(kids) -> bool:
        root = out / "cells"
        return len(kids) >= 2 and root.is_dir() and any(p.name.startswith(".") for p in root.iterdir())
    return ready


@pytest.fixture
def long_grid(tmp_path):
    # 6 DRL cells of a few seconds each on 2 workers: far longer than the test waits
    path = write_profile(tmp_path / "long.yaml", methods=["drl"], servers=[5], seeds=list(range(6)), workers=2)
    data = yaml.safe_load(path.read_text())
    data["run"]["workload"] = {"scale": 0.003}  # cells of several seconds: in flight when signalled
    path.write_text(yaml.safe_dump(data))
    return path, tmp_path / "out"


def finished(out: Path) -> int:
    root = out / "cells"
    return sum(1 for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else 0


@pytest.mark.parametrize("how", ["sigint-group", "sigint-parent", "sigterm-parent"])
def test_interrupt_stops_the_grid_at_once(long_grid, how):
    path, out = long_grid
    proc = cli("grid", "--profile", str(path), "--out", str(out), "--quiet")
    seen = wait_for(proc, cells_started(out), "two workers were computing")
    before = finished(out)
    t0 = time.monotonic()
    if how == "sigint-group":
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: parent and workers
    elif how == "sigint-parent":
        proc.send_signal(signal.SIGINT)
    else:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    took = time.monotonic() - t0
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert took < 15, f"the grid took {took:.0f} s to stop: cells were run after the interrupt"
    # a cell could finish in the instant between counting and signalling, not more
    assert finished(out) <= before + 1, f"cells ran after the interrupt: {before} -> {finished(out)}"
    assert_all_gone(seen, proc.pid)
    if how != "sigint-group":
        return  # how the grid stopped does not change what it left: resuming is checked once

    # the interrupted grid resumes: hidden temporaries are cleaned, the rest is computed
    # (a parent alone signalled and then rerun: test_sigterm_then_rerun_gives_the_uninterrupted_store)
    rerun = cli("grid", "--profile", str(path), "--out", str(out), "--quiet", "--workers", "2")
    _, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert finished(out) == 6
    assert not [p for p in (out / "cells").iterdir() if p.name.startswith(".")]


def test_sigkill_of_the_grid_leaves_no_process(long_grid):
    path, out = long_grid
    proc = cli("grid", "--profile", str(path), "--out", str(out), "--quiet")
    seen = wait_for(proc, cells_started(out), "two workers were computing")
    seen |= {k.pid for k in psutil.Process(proc.pid).children(recursive=True)}
    proc.kill()  # the parent only: its workers must notice on their own
    proc.communicate(timeout=30)
    assert_all_gone(seen, proc.pid)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_killed_ilets_run_leaves_no_emulator(tmp_path, sig):
    # an ILETS- cell whose OAIL emulator is busy in a 300 s expert call when the run is killed:
    # far longer than the 90 s the run gets to stop, so a run that waited for the call fails,
    # while a host slowed by other jobs (the book build beside the tests) still passes
    path = write_profile(tmp_path / "oail.yaml", methods=["ilets-"], servers=[5], seeds=[0], workers=1)
    data = yaml.safe_load(path.read_text())
    # long enough that the run is still learning when it is killed, even on a fast idle host:
    # at 1 % of the window a run could end within the second below, and a SIGTERM that then
    # hits the interpreter's exit (the handler already restored) kills it with -15
    data["run"]["workload"] = {"scale": 0.05}
    data["run"]["oail"] = {"experts": ["slow:300:greedy"], "weights": [1.0], "clock": "wall"}
    path.write_text(yaml.safe_dump(data))
    proc = cli("run", "--method", "ilets-", "--servers", "5", "--profile", str(path),
               "--out", str(tmp_path / "out"), "--quiet")
    command = list(proc.args)
    # the emulator is a fork of the run (the same command line); git and uname come earlier
    seen = wait_for(proc, lambda kids: any(_cmdline(k) == command for k in kids), "the emulator was started")
    seen |= settled(proc)  # the emulator pool has finished starting (its resource tracker too)
    assert proc.poll() is None, "the run ended before it could be killed: the test needs a longer workload"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=90)
    if sig == signal.SIGTERM:  # handled as Ctrl-C: a clean message, no traceback
        assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert_all_gone(seen, proc.pid)


@pytest.mark.timeout(900)  # three small grids: under a minute on an idle machine, far longer on a busy one
def test_sigterm_then_rerun_gives_the_uninterrupted_store(tmp_path):
    """A grid stopped by SIGTERM mid-run and run again ends with the store of a grid never
    interrupted: the same cells and, but for timings, the same numbers and curves (every
    method here is deterministic: DRL, DRL+ with its demonstration cache, the heuristics)."""
    from test_grid import comparable, expected_cells, finish, finished_cells

    methods = ["drl", "drl+", "random", "least-loaded", "round-robin"]
    path = write_profile(tmp_path / "resume.yaml", methods=methods, servers=[5], seeds=[0], workers=2)
    data = yaml.safe_load(path.read_text())
    data["run"]["experts"] = {"ga_population": 8, "ga_generations": 4, "pso_particles": 8, "pso_iterations": 4}
    data["run"]["oinpt"] = {"max_demo_tasks": 100, "bc_epochs": 2, "critic_epochs": 2}
    path.write_text(yaml.safe_dump(data))
    names = expected_cells(path)
    assert len(names) == len(methods)

    started: list[subprocess.Popen] = []

    def grid(out: Path) -> subprocess.Popen:
        started.append(cli("grid", "--profile", str(path), "--out", str(out), "--quiet"))
        return started[-1]

    try:
        ref = tmp_path / "reference"
        rc, summary, err = finish(grid(ref), timeout=400)
        assert rc == 0 and summary["ran"] == len(names) and finished_cells(ref) == names, err

        out = tmp_path / "stopped"
        proc = grid(out)

        def some_done_some_in_flight(kids) -> bool:
            root = out / "cells"
            entries = [p.name for p in root.iterdir()] if root.is_dir() else []
            return any(n.startswith(".") for n in entries) and any(not n.startswith(".") for n in entries)

        seen = wait_for(proc, some_done_some_in_flight, "a cell was done and another in flight", timeout=400)
        proc.send_signal(signal.SIGTERM)  # the parent alone, as `kill`, `timeout` and SLURM do
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "Traceback" not in err, err
        assert_all_gone(seen, proc.pid)
        survivors = finished_cells(out)
        assert 0 < len(survivors) < len(names), f"stopped too late or too early: {sorted(survivors)}"

        rc, summary, err = finish(grid(out), timeout=400)
        assert rc == 0, err
        assert summary["skipped_done"] == len(survivors) and summary["ran"] == len(names) - len(survivors)
        assert summary["failed"] == 0 and finished_cells(out) == names
        assert not [p for p in (out / "cells").iterdir() if p.name.startswith(".")]
    finally:  # a failed or timed-out test leaves no grid running
        for p in started:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    got_metrics, got_curves = comparable(out)
    want_metrics, want_curves = comparable(ref)
    assert set(got_metrics["method"]) == set(methods)
    pd.testing.assert_frame_equal(got_metrics, want_metrics, check_exact=True)
    pd.testing.assert_frame_equal(got_curves, want_curves, check_exact=True)
