"""Shipped results: a compact, committed copy of a grid's results, with its provenance.

A grid's folder (``results/<profile>``) holds models and per-decision arrays that are too big
to commit. :func:`ship` copies what a reader and a verifier need into a folder that is
committed with the code (``shipped/<profile>``):

* ``store/*.parquet``: the tables the book reads;
* per cell: ``config.yaml``, ``command.txt``, ``system.json``, ``metrics.json``,
  ``curve.csv`` and ``decisions.npz`` (latency samples, thinned to at most
  :data:`LATENCY_SAMPLES` evenly spaced decisions: a heuristic cell records every one of
  its 259,368 decisions, 0.9 MB compressed, which would put a paper grid's shipped folder
  far over its size budget; the cell's own percentiles in ``metrics.json`` come from
  every decision); where a cell has them, ``finetune.csv``, ``checkpoints.csv`` and the
  per-server ``policy/`` and ``clone/`` folders (weights read without unpickling); never
  ``model.zip``;
* ``profile.yaml`` and ``grid.json`` of the grid, and ``VERIFY.json`` when ``ilets verify
  --report`` recorded a re-run of some of its cells;
* ``events.json``: where each workload's events strike (:func:`ilets.study.grid.record_events`),
  so the book reads them instead of rebuilding workloads; copied from the grid's folder, and
  computed here for any cell's workload and seed it lacks (a folder from before the grid
  recorded events has none);
* ``PROVENANCE.json`` (:func:`provenance`): the commits the cells ran on, the dates, the
  machines and the CPU-hours, all read from the cells' own records.

The book prints the provenance on every results page; ``ilets verify`` re-runs shipped cells
and compares their metrics.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from ilets.files import PROVENANCE, publish_folder  # PROVENANCE re-exported
from ilets.host import machine_label
from ilets.numerics import NOT_RECORDED, recorded_mode

#: Files of a cell folder that are shipped (everything but the model).
SHIPPED_CELL_FILES = ("config.yaml", "command.txt", "system.json", "metrics.json", "curve.csv", "decisions.npz")
#: What a cell has only with some settings, shipped when present: the fine-tuning log, the
#: held-out checkpoints, and a per-server cell's final policy and clone (weights + JSON, a
#: few kB, loaded without unpickling: ilets.agents.policy_io).
OPTIONAL_CELL_FILES = ("finetune.csv", "checkpoints.csv")
OPTIONAL_CELL_FOLDERS = ("policy", "clone")
#: At most this many latency samples per shipped cell (learners record about 2,000 already).
LATENCY_SAMPLES = 2000


def numerics_text(counts: dict) -> str:
    """The cells' floating-point kernels in words, from :func:`provenance`'s ``numerics``."""
    meaning = {"portable": "reproducible on any x86-64 CPU with AVX2", "native": "the host's own kernels",
               NOT_RECORDED: "computed before cells recorded it"}
    return "; ".join(f"{name} for {n:,} cells ({meaning.get(name, '')})" for name, n in counts.items())


def provenance(folder: Path) -> dict:
    """Where and when a results folder's cells were computed, from the cells' own records.

    Returns the number of cells, the distinct commits (with a dirty flag when a cell ran on
    a checkout with uncommitted changes), the first and last start time (UTC), the machines
    (CPU model x cores), the floating-point kernels in effect (:mod:`ilets.numerics`;
    :data:`NOT_RECORDED` for cells that predate that record), and the summed CPU-hours and
    wall-hours of the cells. A cell that predates these records counts as ``"unrecorded"``.
    """
    cells = sorted(p for p in (Path(folder) / "cells").iterdir() if p.is_dir() and not p.name.startswith("."))
    commits: Counter = Counter()
    machines: Counter = Counter()
    numerics: Counter = Counter()
    starts, cpu, wall = [], 0.0, 0.0
    for cell in cells:
        system = json.loads((cell / "system.json").read_text()) if (cell / "system.json").is_file() else {}
        metrics = json.loads((cell / "metrics.json").read_text())
        commit = system.get("commit") or "unrecorded"
        commits[commit + ("+dirty" if system.get("dirty") else "")] += 1
        machines[machine_label(system.get("cpu_model", "unknown CPU"), system.get("cores", "?"),
                               system.get("cpu_id", ""))] += 1
        numerics[recorded_mode(system)] += 1
        if system.get("started_utc"):
            starts.append(system["started_utc"])
        cpu += float(metrics.get("cpu_s", 0.0))
        wall += float(metrics.get("wall_s", 0.0))
    return {"cells": len(cells), "commits": dict(commits), "machines": dict(machines), "numerics": dict(numerics),
            "first_start_utc": min(starts) if starts else None, "last_start_utc": max(starts) if starts else None,
            "cpu_hours": cpu / 3600, "wall_hours_summed": wall / 3600}


def ship(src: Path, dest: Path, note: str = "") -> dict:
    """Copy the compact part of grid folder ``src`` into ``dest`` (replaced) and write its
    provenance; returns the provenance (with ``note`` and the shipped size in MB)."""
    from ilets.study.results import build_store

    src, dest = Path(src), Path(dest)
    build_store(src)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "cells").mkdir(parents=True)
    shutil.copytree(src / "store", tmp / "store")
    for name in ("profile.yaml", "grid.json", "VERIFY.json"):  # VERIFY.json: ilets verify --report
        if (src / name).is_file():
            shutil.copy2(src / name, tmp / name)
    from ilets.study.results import _cells

    for cell in _cells(src):
        target = tmp / "cells" / cell.name
        target.mkdir()
        for name in SHIPPED_CELL_FILES:
            if name == "decisions.npz" and (cell / name).is_file():
                thin_latency_samples(cell / name, target / name)
            elif (cell / name).is_file():
                shutil.copy2(cell / name, target / name)
        for name in OPTIONAL_CELL_FILES:
            if (cell / name).is_file():
                shutil.copy2(cell / name, target / name)
        for name in OPTIONAL_CELL_FOLDERS:
            if (cell / name).is_dir():
                shutil.copytree(cell / name, target / name)
    ship_events(src, tmp, _cells(src))
    return publish_folder(tmp, dest, provenance(tmp), note)


def ship_events(src: Path, dest: Path, cells) -> Path | None:
    """``dest/events.json``: ``src``'s (:data:`ilets.study.grid.EVENTS_FILE`), with the events of
    every workload and seed of ``cells`` (cell folders, read from their ``config.yaml``) that it
    lacks computed now (:func:`ilets.study.grid.record_events`); None when none could be."""
    import yaml

    from ilets.config import RunConfig, from_dict
    from ilets.study.grid import EVENTS_FILE, record_events

    src, dest = Path(src), Path(dest)
    if (src / EVENTS_FILE).is_file():
        shutil.copy2(src / EVENTS_FILE, dest / EVENTS_FILE)
    pairs = []
    for cell in cells:
        cfg = from_dict(RunConfig, yaml.safe_load((Path(cell) / "config.yaml").read_text()), f"{cell}/config.yaml")
        pairs.append((cfg.workload, cfg.seed))
    return record_events(dest, pairs)


def thin_latency_samples(src: Path, dest: Path, limit: int = LATENCY_SAMPLES) -> None:
    """Copy a cell's ``decisions.npz``, keeping every k-th sample so at most ``limit`` remain.

    Evenly spaced (not random) so the thinned file is the same on every machine; ``every``
    records k (1 when nothing was dropped).
    """
    import numpy as np

    with np.load(src, allow_pickle=False) as z:
        seconds = z["seconds"]
    every = max(1, -(-len(seconds) // limit))  # ceil division
    np.savez_compressed(dest, seconds=seconds[::every], every=np.int64(every))


def load_provenance(folder: Path) -> dict:
    """A results folder's provenance: computed from its cells' own records when it has them
    (so a folder a grid kept adding to after it was shipped or copied is described as it is
    now), with what its ``PROVENANCE.json`` adds (the note, the size); the file alone
    otherwise."""
    path = Path(folder) / PROVENANCE
    recorded = json.loads(path.read_text()) if path.is_file() else {}
    if (Path(folder) / "cells").is_dir() or not recorded:
        return {**recorded, **provenance(folder)}
    return recorded


def provenance_line(info: dict) -> str:
    """One sentence for a results page: cells, commits, dates, machine, CPU-hours."""
    commits = ", ".join(f"{c[:12]}{' (dirty)' if c.endswith('+dirty') else ''} ({n})"
                        for c, n in info["commits"].items())
    machines = "; ".join(info["machines"]) if len(info["machines"]) <= 1 else \
        "; ".join(f"{m} ({n})" for m, n in info["machines"].items())
    when = (f"started {info['first_start_utc']} to {info['last_start_utc']} (UTC)"
            if info.get("first_start_utc") else "start times not recorded")
    kernels = f" Floating-point kernels: {numerics_text(info['numerics'])}." if info.get("numerics") else ""
    return (f"{info['cells']} cells computed on {machines}, {when}, at commit {commits}; "
            f"{info['cpu_hours']:.2f} CPU-hours in all.{kernels}")
