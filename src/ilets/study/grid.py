"""Run every cell of a profile, locally or on SLURM; resumable by construction.

Each cell (method, fleet size, seed, config digest) is an idempotent unit written atomically
by :func:`ilets.study.run.run_cell`: a cell whose folder is complete and valid is skipped, so a
killed grid resumes where it stopped and loses only the cells that were in flight; a
damaged folder is recomputed. Cells are claimed with a lock file, so two grids (or a grid
and a SLURM array) on one folder share the cells: each skips the cells another holds,
then waits for them at the end. Executors:

* ``local``: a process pool of ``workers`` processes, one torch thread each;
* ``slurm``: one SLURM array task per cell through ``submitit`` (the same cell function);
* ``submitit-local``: submitit's local executor, which runs the SLURM path on this machine
  (used by the tests).

Interrupts: SIGINT (Ctrl-C) and SIGTERM (``kill``, ``timeout``, SLURM) stop the local grid
at once: queued cells are cancelled and the workers are killed (their unfinished cells
leave only hidden temporary folders, cleaned on the next run). Workers ignore SIGINT, so a
Ctrl-C to the whole process group is handled once, by the parent, and they die with the
parent (:func:`ilets.lifecycle.die_with_parent`) if it is killed outright.

:func:`ilets.study.results.build_store` gathers the finished cells into the results tables:
every :data:`STORE_EVERY` cells this grid finishes, and when it stops, interrupted or not, so
the store (and a book built from it) never lags a running or stopped grid by more than a few
cells. Only a grid killed outright (SIGKILL) leaves it behind, until the next run.

What the analysis needs about the workloads is recorded too, so it never rebuilds them:
before the cells run, :func:`record_events` writes ``OUT/events.json``, the online decisions
at which each designed event (bursts, trend change) of each workload configuration and seed
strikes (:func:`online_event_ranges`), read back by :mod:`ilets.report.events`.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import yaml

from ilets.config import RunConfig, WorkloadConfig, digest_of, to_dict
from ilets.study.profiles import Profile
from ilets.study.run import BUSY, RAN, atomic_json, atomic_text, cell_name, clean_stale_temporaries, is_done, run_cell_status


#: Rebuild the results store after this many cells finished by this grid. Building it
#: reads every finished cell's metrics and curve: about 5 CPU-seconds at 181 paper cells,
#: against minutes per cell, so every 5 cells costs well under 1 % of the grid.
STORE_EVERY = 5


def _init_threads() -> None:
    """One torch thread per process: cells run side by side on separate cores."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


def _init_worker() -> None:
    """Initializer of a local pool worker: die with the grid, leave Ctrl-C to the grid."""
    from ilets.lifecycle import die_with_parent

    die_with_parent()
    # A terminal's Ctrl-C reaches the whole process group; the parent alone reacts (it
    # cancels the queue and kills the workers), so a worker does not half-stop a cell.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _init_threads()


def _run_one(cfg: RunConfig, out: str, wait: bool = False) -> str:
    """One cell; returns its status (ran, done or busy). Used by every executor."""
    _init_threads()
    return run_cell_status(cfg, Path(out), command=f"ilets grid (cell {cell_name(cfg)})", wait=wait)[1]


class FolderInUse(ValueError):
    """A results folder that holds another profile's grid (the message names both)."""


def _claim_folder(profile: Profile, out: Path, cells: list[RunConfig]) -> None:
    """Write the manifest of ``profile``'s grid in ``out``, unless ``out`` holds another
    profile's grid: a folder belongs to one grid, since its store lists the cells of the grid
    whose ``grid.json`` is there, and two grids would each drop the other's rows. The same
    profile again (resumed, or with changed settings) takes the folder over."""
    from filelock import FileLock

    out.mkdir(parents=True, exist_ok=True)
    manifest = out / "grid.json"
    # two grids started together: the second sees the first's manifest
    (out / "locks").mkdir(exist_ok=True)
    with FileLock(str(out / "locks" / "grid.json.lock")):
        try:
            owner = json.loads(manifest.read_text()).get("profile") if manifest.is_file() else None
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            owner = None  # a damaged manifest names no grid: it is rewritten
        if owner is not None and owner != profile.name:
            raise FolderInUse(f"{out}: holds the grid of profile {owner!r} ({manifest.name}); profile "
                              f"{profile.name!r} needs a results folder of its own (give another --out)")
        _write_manifest(profile, out, cells)


def _write_manifest(profile: Profile, out: Path, cells: list[RunConfig]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"profile": profile.name, "description": profile.description,
                "cells": [cell_name(c) for c in cells], "written": time.time()}
    atomic_json(out / "grid.json", manifest)
    atomic_text(out / "profile.yaml", yaml.safe_dump(
        {"name": profile.name, "description": profile.description, "methods": list(profile.methods),
         "servers": list(profile.servers), "seeds": list(profile.seeds), "workers": profile.workers,
         **({"worlds": True} if profile.worlds else {}),
         "run": to_dict(profile.run)}, sort_keys=False))


def planned_cells(out: Path) -> int | None:
    """How many cells the grid that wrote ``out`` planned (its ``grid.json`` manifest);
    None when the folder has no manifest."""
    manifest = Path(out) / "grid.json"
    if not manifest.is_file():
        return None
    return len(json.loads(manifest.read_text()).get("cells", []))


def run_grid(profile: Profile, out: Path, executor: str = "local", workers: int | None = None,
             progress: bool = True, slurm_partition: str | None = None) -> dict:
    """Run the profile's cells not yet done; returns counts and compute totals."""
    from tqdm import tqdm

    from ilets.study.results import build_store, compute_table

    if executor not in ("local", "slurm", "submitit-local"):
        raise ValueError(f"executor must be local, slurm or submitit-local, got {executor!r}")
    workers = profile.workers if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers: expected >= 1, got {workers}")
    out = Path(out)
    cells = profile.cells()
    _claim_folder(profile, out, cells)
    record_events(out, ((c.workload, c.seed) for c in cells))
    clean_stale_temporaries(out)
    todo = [c for c in cells if not is_done(c, out)]
    counts = {RAN: 0, "failed": 0, "elsewhere": 0}
    bar = tqdm(total=len(cells), initial=len(cells) - len(todo), desc=f"grid {profile.name}", unit="cell",
               disable=not progress)
    t0 = time.perf_counter()

    def refresh_store() -> None:
        if (counts[RAN] + counts["elsewhere"]) % STORE_EVERY == 0:  # cells finished since this grid started
            build_store(out)

    try:
        if executor == "local":
            run = lambda cells, wait: _run_local(cells, out, workers, bar, wait)  # noqa: E731
        else:
            run = lambda cells, wait: _run_submitit(cells, out, executor, slurm_partition, bar, wait)  # noqa: E731
        # First pass: skip the cells another process holds; then wait for those (and
        # compute any whose holder failed or died), so the store below is complete.
        busy = _tally(run(todo, False), counts, bar, refresh_store)
        if busy:
            # messages to stderr: stdout carries the JSON summary alone (`ilets grid > summary.json`)
            bar.write(f"{len(busy)} cell(s) are being computed by another process; waiting for them", file=sys.stderr)
            _tally(run(busy, True), counts, bar, refresh_store)
    finally:
        bar.close()
        # also after an interrupt: the store then lists every cell finished before it
        store = build_store(out)
    compute = compute_table(out)
    return {"profile": profile.name, "cells": len(cells), "skipped_done": len(cells) - len(todo),
            "ran": counts[RAN], "failed": counts["failed"], "done_elsewhere": counts["elsewhere"],
            "grid_wall_s": time.perf_counter() - t0,
            "cell_cpu_s_total": float(compute["cpu_s"].sum()) if len(compute) else 0.0,
            "store": {k: str(v) for k, v in store.items()}}


def _tally(results, counts: dict, bar, on_finished=None) -> list[RunConfig]:
    """Count (cfg, status-or-error) results; returns the cells found busy.

    ``on_finished()`` is called after each cell that finished (here or by another process).

    Whatever stops the count (an interrupt, or the progress bar writing to a closed pipe)
    closes ``results`` at once, so a pool behind it is killed now: left to the garbage
    collector, the interpreter's exit would first wait for every queued cell.
    """
    busy = []
    try:
        for cfg, status in results:
            if isinstance(status, BaseException):
                counts["failed"] += 1
                bar.write(f"cell {cell_name(cfg)} failed: {status}", file=sys.stderr)
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


def _run_local(todo: list[RunConfig], out: Path, workers: int, bar, wait: bool):
    """Yield (cfg, status or exception) as the cells complete (a generator: live progress)."""
    if not todo:
        return
    if workers <= 1:
        yield from _collect((cfg, lambda cfg=cfg: _run_one(cfg, str(out), wait)) for cfg in todo)
        return
    # Not a `with` block: its exit calls shutdown(wait=True), which waits for every queued
    # cell and so undoes the cancellation an interrupt asks for.
    pool = ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=get_context("spawn"),
                               initializer=_init_worker)
    try:
        futures = {pool.submit(_run_one, cfg, str(out), wait): cfg for cfg in todo}
        yield from _collect((futures[f], f.result) for f in as_completed(futures))
    except BaseException:  # KeyboardInterrupt (SIGINT or SIGTERM), or the generator closed
        _kill_pool(pool)
        raise
    pool.shutdown(wait=True)


def _kill_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the queue and kill the workers now (an interrupt: nothing is waited for)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        try:
            p.kill()  # SIGKILL: a worker's cell leaves only its hidden temporary folder
        except (OSError, ValueError):
            pass
    for p in processes:
        try:
            p.join(timeout=5)
        except (OSError, ValueError, AssertionError):
            pass


def _run_submitit(todo: list[RunConfig], out: Path, executor: str, partition: str | None, bar, wait: bool):
    import submitit

    if not todo:
        return []
    ex = submitit.AutoExecutor(folder=out / "submitit", cluster="local" if executor == "submitit-local" else "slurm")
    params = {"timeout_min": 24 * 60, "cpus_per_task": 2}
    if partition and executor == "slurm":
        params["slurm_partition"] = partition
    ex.update_parameters(**params)
    jobs = ex.map_array(_run_one, todo, [str(out)] * len(todo), [wait] * len(todo))
    try:
        return list(_collect((cfg, job.result) for job, cfg in zip(jobs, todo)))
    except BaseException:
        for job in jobs:  # an interrupt: do not leave the array running
            try:
                job.cancel(check=False)
            except Exception:  # noqa: BLE001 -- best effort on the way out
                pass
        raise


# --- the workloads' events, recorded for the analysis ------------------------------------

#: The file of a results folder that records where each workload's events strike.
EVENTS_FILE = "events.json"


def event_decisions(events: Mapping[str, float], arrival: np.ndarray,
                    span_s: float | None = None) -> dict[str, int | tuple[int, int]]:
    """Map event times (s) to 0-based decision indices of the online pass.

    Every online task is one decision, in arrival order, so the decision made when an event
    at time ``t`` strikes is the first task arriving at or after ``t``:
    ``d = searchsorted(arrival, t, "left")``. ``arrival`` is the online segment's arrival
    array (``Workload.online.arrival``; it depends on the workload seed), in the same time
    base as ``events`` (``Workload.events``: window seconds). Events outside
    ``[arrival[0], arrival[-1]]``, e.g. the offline half's bursts, are dropped. With
    ``span_s`` each value is the decision range ``(d, d_end)`` of ``[t, t + span_s)`` s
    (``d_end = searchsorted(arrival, t + span_s, "left")``), for
    :func:`ilets.report.stats.oscillation`.
    """
    arrival = np.asarray(arrival, dtype=float)
    out: dict = {}
    if len(arrival) == 0:
        return out
    for name, t in events.items():
        if not arrival[0] <= t <= arrival[-1]:
            continue
        d = int(np.searchsorted(arrival, t, side="left"))
        out[name] = (d, int(np.searchsorted(arrival, t + span_s, side="left"))) if span_s is not None else d
    return out


def online_event_ranges(events: Mapping[str, float], arrival: np.ndarray,
                        span_s: float | None = None) -> dict[str, tuple[int, int]]:
    """Decision ranges after each online event, all of one length in time.

    Like :func:`event_decisions` with ``span_s``; when ``span_s`` is None it is the shortest
    gap between consecutive online events (events within the online arrivals) and between
    the last of them and the last arrival, so that the ranges of different events never
    overlap and each is measured over the same time. Empty if no event lies in the online
    segment.
    """
    arrival = np.asarray(arrival, dtype=float)
    if len(arrival) == 0:
        return {}
    times = sorted(t for t in events.values() if arrival[0] <= t <= arrival[-1])
    if not times:
        return {}
    if span_s is None:
        gaps = np.diff([*times, arrival[-1]])
        gaps = gaps[gaps > 0]
        span_s = float(gaps.min()) if len(gaps) else float(arrival[-1] - times[0])
    return event_decisions(events, arrival, span_s=span_s)


def workload_key(workload: WorkloadConfig) -> str:
    """The key of a workload configuration in ``events.json``: a short hash of every field
    (:func:`ilets.config.digest_of`, the hash that names the cells)."""
    return digest_of(to_dict(workload))


def workload_event_record(workload: WorkloadConfig, seed: int) -> dict:
    """``{"events": {name: time}, "ranges": {name: [d, d_end]}}`` of one workload and seed:
    the designed events (``Workload.events``) and their :func:`online_event_ranges`. Builds the
    workload (:func:`ilets.workloads.workload.load_workload`), runs no scheduler."""
    from ilets.workloads.workload import load_workload

    w = load_workload(workload, int(seed))
    ranges = online_event_ranges(w.events, w.online.arrival)
    return {"events": {k: float(v) for k, v in w.events.items()},
            "ranges": {k: [int(d), int(e)] for k, (d, e) in ranges.items()}}


def read_events(out: Path) -> dict:
    """``OUT/events.json`` (:func:`record_events`) as a dict; ``{}`` when the folder has none."""
    path = Path(out) / EVENTS_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def record_events(out: Path, pairs: Iterable[tuple[WorkloadConfig, int]]) -> Path | None:
    """Record the events of every (workload configuration, seed) of ``pairs`` in
    ``OUT/events.json``, keeping what is recorded already; returns the file's path.

    The file maps :func:`workload_key` to ``{"workload": <the configuration>, "seeds": {seed:
    :func:`workload_event_record`}}``. A workload that cannot be built here (e.g. trace files
    absent) is left out with a warning: the analysis then rebuilds it where it can. None when
    nothing could be recorded.
    """
    out = Path(out)
    recorded = read_events(out)
    changed, tried = False, set()
    for workload, seed in pairs:
        key, seed = workload_key(workload), str(int(seed))
        entry = recorded.setdefault(key, {"workload": to_dict(workload), "seeds": {}})
        if seed in entry["seeds"] or (key, seed) in tried:  # every method's cell names the same pair
            continue
        tried.add((key, seed))
        try:
            entry["seeds"][seed] = workload_event_record(workload, int(seed))
        except Exception as err:  # noqa: BLE001 - not recorded; the analysis rebuilds it where it can
            warnings.warn(f"events of workload {key} seed {seed} not recorded: {err}", stacklevel=2)
            continue
        changed = True
    recorded = {k: v for k, v in recorded.items() if v["seeds"]}
    if not recorded:
        return None
    path = out / EVENTS_FILE
    if changed or not path.is_file():
        atomic_text(path, json.dumps(recorded, indent=1, sort_keys=True))
    return path
