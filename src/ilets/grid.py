"""Run every cell of a profile, locally or on SLURM; resumable by construction.

Each cell (method, fleet size, seed, config digest) is an idempotent unit written atomically
by :func:`ilets.run.run_cell`: a cell whose folder exists is skipped, so a killed grid
resumes where it stopped and loses only the cells that were in flight. Executors:

* ``local``: a process pool of ``workers`` processes, one torch thread each;
* ``slurm``: one SLURM array task per cell through ``submitit`` (the same cell function);
* ``submitit-local``: submitit's local executor, which runs the SLURM path on this machine
  (used by the tests).

After the cells, :func:`ilets.results.build_store` gathers them into the results tables.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

import yaml

from ilets.config import RunConfig, to_dict
from ilets.profiles import Profile
from ilets.run import atomic_json, cell_name, is_done, run_cell


def _init_worker() -> None:
    """One torch thread per process: cells run side by side on separate cores."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


def _run_one(cfg: RunConfig, out: str) -> str:
    _init_worker()
    return str(run_cell(cfg, Path(out), command=f"ilets grid (cell {cell_name(cfg)})"))


def _write_manifest(profile: Profile, out: Path, cells: list[RunConfig]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"profile": profile.name, "description": profile.description,
                "cells": [cell_name(c) for c in cells], "written": time.time()}
    atomic_json(out / "grid.json", manifest)
    (out / "profile.yaml").write_text(yaml.safe_dump(
        {"name": profile.name, "description": profile.description, "methods": list(profile.methods),
         "servers": list(profile.servers), "seeds": list(profile.seeds), "workers": profile.workers,
         "run": to_dict(profile.run)}, sort_keys=False))


def run_grid(profile: Profile, out: Path, executor: str = "local", workers: int | None = None,
             progress: bool = True, slurm_partition: str | None = None) -> dict:
    """Run the profile's cells not yet done; returns counts and compute totals."""
    from tqdm import tqdm

    from ilets.results import build_store, compute_table

    out = Path(out)
    cells = profile.cells()
    _write_manifest(profile, out, cells)
    todo = [c for c in cells if not is_done(c, out)]
    failed = 0
    bar = tqdm(total=len(cells), initial=len(cells) - len(todo), desc=f"grid {profile.name}", unit="cell",
               disable=not progress)
    t0 = time.perf_counter()
    try:
        if executor == "local":
            failed = _run_local(todo, out, workers or profile.workers, bar)
        elif executor in ("slurm", "submitit-local"):
            failed = _run_submitit(todo, out, executor, slurm_partition, bar)
        else:
            raise ValueError(f"executor must be local, slurm or submitit-local, got {executor!r}")
    finally:
        bar.close()
    store = build_store(out)
    compute = compute_table(out)
    return {"profile": profile.name, "cells": len(cells), "skipped_done": len(cells) - len(todo),
            "ran": len(todo) - failed, "failed": failed, "grid_wall_s": time.perf_counter() - t0,
            "cell_cpu_s_total": float(compute["cpu_s"].sum()) if len(compute) else 0.0,
            "store": {k: str(v) for k, v in store.items()}}


def _collect(results, bar) -> int:
    """Wait for (cfg, result-getter) pairs in order of completion; count the failures.

    A failure is already recorded in ``OUT/failed`` by ``run_cell``; here it is only counted
    and reported, and the other cells go on.
    """
    failed = 0
    for cfg, get in results:
        try:
            get()
        except Exception as err:
            failed += 1
            bar.write(f"cell {cell_name(cfg)} failed: {err}")
        bar.update(1)
    return failed


def _run_local(todo: list[RunConfig], out: Path, workers: int, bar) -> int:
    if workers <= 1:
        return _collect(((cfg, lambda cfg=cfg: _run_one(cfg, str(out))) for cfg in todo), bar)
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                             initializer=_init_worker) as pool:
        futures = {pool.submit(_run_one, cfg, str(out)): cfg for cfg in todo}
        try:
            return _collect(((futures[f], f.result) for f in as_completed(futures)), bar)
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _run_submitit(todo: list[RunConfig], out: Path, executor: str, partition: str | None, bar) -> int:
    import submitit

    if not todo:
        return 0
    ex = submitit.AutoExecutor(folder=out / "submitit", cluster="local" if executor == "submitit-local" else "slurm")
    params = {"timeout_min": 24 * 60, "cpus_per_task": 2}
    if partition and executor == "slurm":
        params["slurm_partition"] = partition
    ex.update_parameters(**params)
    jobs = ex.map_array(_run_one, todo, [str(out)] * len(todo))
    return _collect(((cfg, job.result) for job, cfg in zip(jobs, todo)), bar)
