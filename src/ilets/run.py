"""One cell (method x fleet size x seed x config) to a self-describing result folder.

Layout of ``OUT/cells/<method>-M<servers>-s<seed>-<config digest>/``:

===================  ==========================================================
``config.yaml``      the resolved :class:`RunConfig` (every field)
``command.txt``      the command line that produced it
``system.json``      package versions, CPU model, cores, RAM, Python
``metrics.json``     final metrics, wall and CPU seconds, method extras (OAIL counters)
``curve.csv``        learning curve: per ``curve_every`` decisions reward, response,
                     success, energy
``decisions.npz``    decision-latency samples (s)
``model.zip``        the trained MaskablePPO (``MaskablePPO.load`` works), learners only
===================  ==========================================================

The folder is written under a temporary name and renamed in one step when complete, so an
interrupted run never leaves a folder that looks finished; a cell whose folder exists is
done and is skipped. A failing cell leaves ``OUT/failed/<name>.json`` with the error and
the compute it used.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

import numpy as np
import yaml

from ilets.config import RunConfig, to_dict

PACKAGES = ("ilets-study", "numpy", "torch", "stable-baselines3", "sb3-contrib", "gymnasium", "imitation",
            "pandas", "scipy", "rliable", "simpy")


def cell_name(cfg: RunConfig) -> str:
    """The folder name of a cell: readable fields plus the digest of the whole config."""
    variant = f"@{cfg.variant}" if cfg.variant else ""
    return f"{cfg.method}{variant}-M{cfg.fleet.servers}-s{cfg.seed}-{cfg.digest()}"


def cell_dir(cfg: RunConfig, out: Path) -> Path:
    return Path(out) / "cells" / cell_name(cfg)


def is_done(cfg: RunConfig, out: Path) -> bool:
    return (cell_dir(cfg, out) / "metrics.json").is_file()


def system_info() -> dict:
    """Hardware and software facts recorded with every result."""
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram_gb = float("nan")
    try:
        ram_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        pass
    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            versions[p] = None
    return {"cpu_model": cpu, "cores": os.cpu_count(), "ram_gb": round(ram_gb, 1),
            "python": sys.version.split()[0], "platform": platform.platform(), "packages": versions}


def cpu_seconds() -> float:
    """User + system CPU of this process and its reaped children (OAIL emulators)."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def atomic_json(path: Path, data: dict) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file and one rename."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=float))
    tmp.replace(path)


def run_cell(cfg: RunConfig, out: Path, command: str = "", progress: bool = False,
             save_model: bool = True) -> Path:
    """Run one cell and write its folder; returns the folder. Skips a cell already done."""
    from ilets.cloud import make_fleet
    from ilets.methods import run_method
    from ilets.workload import load_workload

    cfg = cfg.validate()
    final = cell_dir(cfg, out)
    if (final / "metrics.json").is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    try:
        (tmp / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
        (tmp / "command.txt").write_text((command or " ".join(sys.argv)) + "\n")
        atomic_json(tmp / "system.json", system_info())
        workload = load_workload(cfg.workload, cfg.seed)
        fleet = make_fleet(cfg.fleet, cfg.fleet.seed)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(workload.online), desc=cell_name(cfg), unit="task", mininterval=1.0)
        try:
            result = run_method(cfg, workload, fleet, cache_dir=Path(out) / "cache",
                                progress=bar.update if bar else None)
        finally:
            if bar is not None:
                bar.close()
        result.log.curve(cfg.curve_every).to_csv(tmp / "curve.csv", index=False)
        d = result.decision_s
        np.savez_compressed(tmp / "decisions.npz", seconds=d)
        if result.model is not None and save_model:
            result.model.save(tmp / "model.zip")
        metrics = {
            "method": cfg.method, "variant": cfg.variant, "servers": cfg.fleet.servers, "seed": cfg.seed,
            "digest": cfg.digest(),
            **{k: v for k, v in result.log.final.items()},
            "decision_p50_ms": float(np.median(d) * 1e3) if len(d) else float("nan"),
            "decision_p95_ms": float(np.quantile(d, 0.95) * 1e3) if len(d) else float("nan"),
            **result.extra,
            "wall_s": time.perf_counter() - wall0, "cpu_s": cpu_seconds() - cpu0,
        }
        atomic_json(tmp / "metrics.json", metrics)
        if final.exists():  # another process finished the same cell meanwhile: keep its folder
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, final)  # one rename: the folder appears complete or not at all
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        failed = Path(out) / "failed"
        failed.mkdir(parents=True, exist_ok=True)
        atomic_json(failed / f"{final.name}.{int(time.time() * 1000)}.json", {
            "cell": final.name, "method": cfg.method, "variant": cfg.variant, "servers": cfg.fleet.servers,
            "seed": cfg.seed, "error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc(),
            "wall_s": time.perf_counter() - wall0, "cpu_s": cpu_seconds() - cpu0, "time": time.time()})
        raise
    return final
