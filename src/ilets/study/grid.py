"""Run every cell of a profile, locally or on SLURM; resumable by construction. One runner
for every scenario the study knows (:mod:`ilets.study.scenario`: the paper's ``cloud``
study, the default, and ``gridcommand``).

Each cell is an idempotent unit written atomically by its scenario (for the paper's study,
a folder per method, fleet size, seed and config digest, :func:`ilets.study.run.run_cell`): a
cell that is complete and valid is skipped, so a killed grid resumes where it stopped and
loses only the cells that were in flight; a damaged cell is recomputed. Cells are claimed
with a lock file (:func:`ilets.study.run.run_claimed`), so two grids (or a grid and a SLURM
array) on one folder share the cells: each skips the cells another holds, then waits for
them at the end. A failed attempt is recorded in ``OUT/failed`` and the cell is retried on
the next start. Executors:

* ``local``: a process pool of ``workers`` processes, one torch thread each;
* ``slurm``: one SLURM array task per cell through ``submitit`` (the same cell function);
* ``submitit-local``: submitit's local executor, which runs the SLURM path on this machine
  (used by the tests).

Interrupts: SIGINT (Ctrl-C) and SIGTERM (``kill``, ``timeout``, SLURM) stop the local grid
at once: queued cells are cancelled and the workers are killed (their unfinished cells
leave only hidden temporary files or folders, cleaned on the next run). Workers ignore
SIGINT, so a Ctrl-C to the whole process group is handled once, by the parent, and they die
with the parent (:func:`ilets.lifecycle.die_with_parent`) if it is killed outright.

The scenario's ``build_store`` (for the paper's study :func:`ilets.study.results.build_store`)
gathers the finished cells into the results tables: every :data:`STORE_EVERY` cells this
grid finishes, and when it stops, interrupted or not, so the store (and a book built from
it) never lags a running or stopped grid by more than a few cells. Only a grid killed
outright (SIGKILL) leaves it behind, until the next run.

What the analysis needs about the workloads is recorded too, so it never rebuilds them:
before the paper study's cells run, :func:`ilets.study.workload_events.record_events` writes
``OUT/events.json``, the online decisions at which each designed event (bursts, trend
change) of each workload configuration and seed strikes (:func:`online_event_ranges`), read
back by :mod:`ilets.report.events`.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from concurrent.futures import as_completed
from pathlib import Path
from typing import Any, Callable, Collection

from ilets.lifecycle import local_pool, one_thread
from ilets.study.run import BUSY, RAN, atomic_json, cell_name
from ilets.study.scenario import DEFAULT_SCENARIO, Scenario, get_scenario
# re-exported: the workloads' events were recorded here before they had a module of their own
from ilets.study.workload_events import (EVENTS_FILE, event_decisions, online_event_ranges,  # noqa: F401
                                         read_events, record_events, workload_event_record, workload_key)


#: Rebuild the results store after this many cells finished by this grid. Building it
#: reads every finished cell's metrics and curve: about 5 CPU-seconds at 181 paper cells,
#: against minutes per cell, so every 5 cells costs well under 1 % of the grid.
STORE_EVERY = 5


def _run_one(cell: Any, out: str, wait: bool = False, scenario: str = DEFAULT_SCENARIO, processes: int = 1) -> str:
    """One cell of ``scenario``; returns its status (ran, done or busy). Used by every executor
    (the scenario goes by name: a worker process finds it in the registry)."""
    one_thread()
    return get_scenario(scenario).run_cell(cell, Path(out), wait, processes)


class FolderInUse(ValueError):
    """A results folder that holds another profile's grid (the message names both)."""


def claim_folder(profile: Any, out: Path, cells: list[Any], scenario: Scenario[Any, Any],
                 hold: contextlib.ExitStack | None = None) -> None:
    """Write the manifest of ``profile``'s grid in ``out``, unless ``out`` holds another
    profile's grid: a folder belongs to one grid, since its store lists the cells of the grid
    whose ``grid.json`` is there, and two grids would each drop the other's rows. The same
    profile again (resumed, or with changed settings) takes the folder over, with a notice
    when its settings changed.

    Profiles are told apart by content, not by name alone (:meth:`Scenario.settings_key`):
    while a grid runs on ``out`` (it holds a shared lock ``locks/grid-<key>.running`` for its
    whole run: ``hold`` keeps this grid's), a grid of the same name with other settings is
    refused with :class:`FolderInUse`; each would otherwise rewrite the other's manifest
    and cells, and end with the other's store. Grids whose settings agree (the same profile,
    or a family run seed by seed) share the folder and its cells."""
    from filelock import FileLock

    out.mkdir(parents=True, exist_ok=True)
    manifest = out / "grid.json"
    key = scenario.settings_key(profile)
    # two grids started together: the second sees the first's manifest and running lock
    (out / "locks").mkdir(exist_ok=True)
    with FileLock(str(out / "locks" / "grid.json.lock")):
        try:
            recorded = json.loads(manifest.read_text()) if manifest.is_file() else {}
            owner, was = recorded.get("profile"), recorded.get("settings")
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            owner = was = None  # a damaged manifest names no grid: it is rewritten
        if owner is not None and owner != profile.name:
            raise FolderInUse(f"{out}: holds the grid of profile {owner!r} ({manifest.name}); profile "
                              f"{profile.name!r} needs a results folder of its own (give another --out)")
        running = _running_others(out / "locks", key)
        if running:
            raise FolderInUse(f"{out}: a grid of profile {profile.name!r} with other settings is running there "
                              f"(settings {running[0]}, this one's {key}); their cells and store would mix: give "
                              "another --out, or wait for it to end")
        if was is not None and was != key:
            print(f"ilets: {out}: profile {profile.name!r} changed its settings since the grid there last ran; "
                  "this grid takes the folder over (the earlier cells are kept, out of its store)", file=sys.stderr)
        _write_manifest(profile, out, cells, scenario, key)
        if hold is not None:
            hold.enter_context(_running_lock(out / "locks" / f"grid-{key}.running"))


#: How a running grid marks a folder: a file per settings key, locked shared for the grid's run.
_RUNNING = "grid-*.running"


def _running_others(locks: Path, key: str) -> list[str]:
    """The settings keys of grids running on the folder of ``locks`` other than ``key``: their
    lock files that cannot be locked exclusively now. A free one is a finished grid's, removed
    (called under the manifest's lock, so no grid takes it meanwhile)."""
    found = []
    for path in sorted(locks.glob(_RUNNING)):
        other = path.name[len("grid-"):-len(".running")]
        if other == key:
            continue
        with open(path, "a") as f:
            if not _flock(f, exclusive=True):
                found.append(other)
                continue
        path.unlink(missing_ok=True)
    return found


def _flock(f: Any, exclusive: bool) -> bool:
    """Lock the open file ``f`` (``flock``: shared or exclusive, without waiting); False when
    another open file holds it. True where ``flock`` does not exist (not POSIX): no check."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover -- Windows: grids of one name are not told apart there
        return True
    try:
        fcntl.flock(f, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def _running_lock(path: Path) -> Iterator[None]:
    """Hold ``path`` locked shared while a grid runs (released when the process ends, killed
    or not). Only an exclusive probe (:func:`_running_others`) ever meets it, for a moment."""
    f = open(path, "a")
    try:
        while not _flock(f, exclusive=False):  # a probe holds it exclusively for a moment
            time.sleep(0.01)
        yield
    finally:
        f.close()


def _write_manifest(profile: Any, out: Path, cells: list[Any], scenario: Scenario[Any, Any],
                    key: str | None = None) -> None:
    """``OUT/grid.json`` (the grid's profile, its settings key and cell names, every scenario)
    and the scenario's own profile file."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"profile": profile.name, "description": profile.description,
                "settings": scenario.settings_key(profile) if key is None else key,
                "cells": [scenario.cell_name(c) for c in cells], "written": time.time()}
    atomic_json(out / "grid.json", manifest)
    scenario.write_profile(profile, out)


def manifest_cell_count(out: Path) -> int | None:
    """How many cells the grid that wrote ``out`` planned, read from its ``grid.json`` manifest;
    None when the folder has no manifest (a scenario may count its profile's cells itself:
    :meth:`ilets.study.scenario.Scenario.planned_cell_count`)."""
    manifest = Path(out) / "grid.json"
    if not manifest.is_file():
        return None
    return len(json.loads(manifest.read_text()).get("cells", []))


def run_grid(profile: Any, out: Path, executor: str = "local", workers: int | None = None,
             progress: bool = True, slurm_partition: str | None = None,
             scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO, max_cells: int | None = None,
             wait_busy: bool = True, only: Collection[str] | None = None, cell_processes: int = 1) -> dict:
    """Run the profile's cells not yet done; returns counts and compute totals.

    ``profile`` is a profile of ``scenario`` (:mod:`ilets.study.scenario`; the paper's study by
    default). ``max_cells`` computes at most that many of the cells not yet done (the rest
    stay for the next start). ``wait_busy=False`` leaves the cells another process holds to
    it instead of waiting for them (named in ``busy``): a runner of several grids then goes
    on to its next grid and comes back for them with ``only`` (these cell names alone: the
    grid-command scenario's drift protocol runs its grids so). ``cell_processes``: how many
    processes each cell may use for work it splits (:meth:`Scenario.run_cell`; the
    grid-command clone's training episodes), on top of the ``workers`` cells at once. While it runs, a grid of the same
    profile name with other settings is refused on ``out`` (:func:`claim_folder`).
    """
    sc = get_scenario(scenario)
    if executor not in ("local", "slurm", "submitit-local"):
        raise ValueError(f"executor must be local, slurm or submitit-local, got {executor!r}")
    workers = sc.workers(profile) if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers: expected >= 1, got {workers}")
    if max_cells is not None and max_cells < 1:
        raise ValueError(f"max_cells: expected >= 1, got {max_cells}")
    if cell_processes < 1:
        raise ValueError(f"cell_processes: expected >= 1, got {cell_processes}")
    out = Path(out)
    cells = sc.cells(profile)
    with contextlib.ExitStack() as hold:  # this grid's running lock, held to the end (claim_folder)
        claim_folder(profile, out, cells, sc, hold)
        return _run_claimed(profile, out, cells, sc, executor, workers, progress, slurm_partition, max_cells,
                            wait_busy, only, cell_processes)


def _run_claimed(profile: Any, out: Path, cells: list[Any], sc: Scenario[Any, Any], executor: str, workers: int,
                 progress: bool, slurm_partition: str | None, max_cells: int | None, wait_busy: bool,
                 only: Collection[str] | None, cell_processes: int) -> dict:
    """:func:`run_grid` once the folder is claimed."""
    from tqdm import tqdm

    from ilets.study.results import compute_table

    sc.prepare(out, cells)
    todo = [c for c in cells if not sc.is_done(c, out)]
    skipped = len(cells) - len(todo)
    todo = todo if only is None else [c for c in todo if sc.cell_name(c) in only]
    todo = todo if max_cells is None else todo[:max_cells]
    counts = {RAN: 0, "failed": 0, "elsewhere": 0}
    bar = tqdm(total=len(cells), initial=skipped, desc=f"grid {profile.name}", unit="cell",
               disable=not progress)
    t0 = time.perf_counter()

    def refresh_store() -> None:
        if (counts[RAN] + counts["elsewhere"]) % STORE_EVERY == 0:  # cells finished since this grid started
            sc.build_store(out)

    try:
        if executor == "local":
            run = lambda cells, wait: _run_local(cells, out, workers, bar, wait, sc.name, cell_processes)  # noqa: E731
        else:
            run = lambda cells, wait: _run_submitit(cells, out, executor, slurm_partition, bar, wait,  # noqa: E731
                                                    sc.name, cell_processes)
        # First pass: skip the cells another process holds; then wait for those (and
        # compute any whose holder failed or died), so the store below is complete.
        busy = _tally(run(todo, False), counts, bar, refresh_store, sc.cell_name)
        if busy and wait_busy:
            # messages to stderr: stdout carries the JSON summary alone (`ilets grid > summary.json`)
            bar.write(f"{len(busy)} cell(s) are being computed by another process; waiting for them", file=sys.stderr)
            _tally(run(busy, True), counts, bar, refresh_store, sc.cell_name)
            busy = []
    finally:
        bar.close()
        # also after an interrupt: the store then lists every cell finished before it
        store = sc.build_store(out)
    compute = compute_table(out, sc.compute_rows(out))
    return {"profile": profile.name, "scenario": sc.name, "cells": len(cells), "skipped_done": skipped,
            "ran": counts[RAN], "failed": counts["failed"], "done_elsewhere": counts["elsewhere"],
            "busy": [sc.cell_name(c) for c in busy],
            "grid_wall_s": time.perf_counter() - t0,
            "cell_cpu_s_total": float(compute["cpu_s"].sum()) if len(compute) else 0.0,
            "store": {k: str(v) for k, v in store.items()}}


def _tally(results, counts: dict, bar, on_finished=None, name: Callable[[Any], str] = cell_name) -> list[Any]:
    """Count (cell, status-or-error) results; returns the cells found busy.

    ``on_finished()`` is called after each cell that finished (here or by another process);
    ``name(cell)`` names a cell in messages (the scenario's :meth:`Scenario.cell_name`).

    Whatever stops the count (an interrupt, or the progress bar writing to a closed pipe)
    closes ``results`` at once, so a pool behind it is killed now: left to the garbage
    collector, the interpreter's exit would first wait for every queued cell.
    """
    busy = []
    try:
        for cfg, status in results:
            if isinstance(status, BaseException):
                counts["failed"] += 1
                bar.write(f"cell {name(cfg)} failed: {status}", file=sys.stderr)
            elif status == BUSY:
                busy.append(cfg)
                continue
            else:  # RAN, or done: finished by another process after this grid listed it
                counts[RAN if status == RAN else "elsewhere"] += 1
                if on_finished is not None:
                    on_finished()
            bar.update(1)
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
    return busy


def _collect(results):
    """Yield (cfg, status or exception) as cells complete.

    A failure is already recorded in ``OUT/failed`` by ``run_cell``; here it is only passed
    on, and the other cells go on.
    """
    for cfg, get in results:
        try:
            yield cfg, get()
        except Exception as err:
            yield cfg, err


def _run_local(todo: list[Any], out: Path, workers: int, bar, wait: bool, scenario: str = DEFAULT_SCENARIO,
               processes: int = 1):
    """Yield (cell, status or exception) as the cells complete (a generator: live progress)."""
    if not todo:
        return
    if workers <= 1:
        yield from _collect((cfg, lambda cfg=cfg: _run_one(cfg, str(out), wait, scenario, processes)) for cfg in todo)
        return
    # an interrupt (SIGINT or SIGTERM) or the generator closed kills the workers at once
    with local_pool(min(workers, len(todo))) as pool:
        futures = {pool.submit(_run_one, cfg, str(out), wait, scenario, processes): cfg for cfg in todo}
        yield from _collect((futures[f], f.result) for f in as_completed(futures))


def _run_submitit(todo: list[Any], out: Path, executor: str, partition: str | None, bar, wait: bool,
                  scenario: str = DEFAULT_SCENARIO, processes: int = 1):
    import submitit

    if not todo:
        return []
    ex = submitit.AutoExecutor(folder=out / "submitit", cluster="local" if executor == "submitit-local" else "slurm")
    params: dict[str, int | str] = {"timeout_min": 24 * 60, "cpus_per_task": max(2, processes)}
    if partition and executor == "slurm":
        params["slurm_partition"] = partition
    ex.update_parameters(**params)
    jobs = ex.map_array(_run_one, todo, [str(out)] * len(todo), [wait] * len(todo), [scenario] * len(todo),
                        [processes] * len(todo))
    try:
        return list(_collect((cfg, job.result) for job, cfg in zip(jobs, todo)))
    except BaseException:
        for job in jobs:  # an interrupt: do not leave the array running
            try:
                job.cancel(check=False)
            except Exception:  # noqa: BLE001 -- best effort on the way out
                pass
        raise
