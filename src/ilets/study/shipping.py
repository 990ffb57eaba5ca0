"""Shipped results: a compact, committed copy of a grid's results, with its provenance.

A grid's folder (``results/<profile>``) holds models and per-decision arrays that are too big
to commit. :func:`ship` copies what a reader and a verifier need into a folder that is
committed with the code (``shipped/<profile>``), for every scenario the same way
(:mod:`ilets.study.scenario`: the store, the profile, the finished cells, the provenance);
for the paper's study (``cloud``):

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
* ``PROVENANCE.json`` (:func:`provenance`, one schema for every scenario:
  :func:`ilets.host.provenance_of`): the commits the cells ran on, the dates, the machines,
  the floating-point kernels and the CPU-hours, all read from the cells' own records.

A grid-command folder (scenario ``gridcommand``) ships its store, ``profile.json``,
``grid.json`` and each finished cell's JSON file as it is; a grid-command pilot's folder
(``pilot.json``, no ``cells/``) ships through :func:`ilets.study.command_pilot.ship_pilot`.

The book prints the provenance on every results page; ``ilets verify`` re-runs shipped cells
and compares their metrics.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ilets.config import ConfigError
from ilets.files import PROVENANCE, publish_folder  # PROVENANCE re-exported
from ilets.host import provenance_of
from ilets.numerics import NOT_RECORDED
# re-exported: the cell shipping helpers of the paper's study now live with its cells
from ilets.study.run import (LATENCY_SAMPLES, OPTIONAL_CELL_FILES, OPTIONAL_CELL_FOLDERS,  # noqa: F401
                             SHIPPED_CELL_FILES, thin_latency_samples)
from ilets.study.scenario import DEFAULT_SCENARIO, Scenario, get_scenario
from ilets.study.workload_events import ship_events  # noqa: F401 -- re-exported

#: Files of a grid's folder shipped beside its cells and store when present: each
#: scenario's profile file, the grid's manifest, and ``VERIFY.json`` (``ilets verify --report``).
FOLDER_FILES = ("profile.yaml", "profile.json", "grid.json", "VERIFY.json")


def numerics_text(counts: dict) -> str:
    """The cells' floating-point kernels in words, from :func:`provenance`'s ``numerics``."""
    meaning = {"portable": "reproducible on x86-64 CPUs with AVX2 of the vendor that computed them",
               "native": "the host's own kernels", NOT_RECORDED: "computed before cells recorded it"}
    return "; ".join(f"{name} for {n:,} cells ({meaning.get(name, '')})" for name, n in counts.items())


def provenance(folder: Path, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> dict:
    """Where and when a results folder's cells were computed, from the cells' own records.

    Returns the number of cells, the distinct commits (with a dirty flag when a cell ran on
    a checkout with uncommitted changes), the first and last start time (UTC), the machines
    (CPU model x cores), the floating-point kernels in effect (:mod:`ilets.numerics`;
    :data:`NOT_RECORDED` for cells that predate that record), and the summed CPU-hours and
    wall-hours of the cells (:func:`ilets.host.provenance_of`). A cell that predates these
    records counts as ``"unrecorded"``.
    """
    return provenance_of(get_scenario(scenario).records(Path(folder)))


def ship(src: Path, dest: Path, note: str = "", scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> dict:
    """Copy the compact part of grid folder ``src`` of ``scenario`` into ``dest`` (replaced)
    and write its provenance; returns the provenance (with ``note`` and the shipped size in MB).

    :class:`ConfigError` when ``src`` holds no cells (no grid ran there). A grid-command
    pilot's folder ships as a pilot (:func:`ilets.study.command_pilot.ship_pilot`)."""
    sc = get_scenario(scenario)
    src, dest = Path(src), Path(dest)
    if sc.name == "gridcommand" and not (src / "cells").is_dir():
        from ilets.study.command_pilot import PILOT_FILE, ship_pilot

        if (src / PILOT_FILE).is_file():
            return ship_pilot(src, dest, note)
    if not (src / "cells").is_dir():
        raise ConfigError(f"{src}: expected a grid's results folder with cells/ and {sc.profile_file} "
                          f"(run the grid first)")
    sc.build_store(src)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "cells").mkdir(parents=True)
    shutil.copytree(src / "store", tmp / "store")
    for name in FOLDER_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, tmp / name)
    finished = sc.finished(src)
    for cell in finished:
        sc.ship_cell(cell, tmp / "cells")
    sc.ship_extras(src, tmp, finished)
    return publish_folder(tmp, dest, provenance(tmp, sc), note)


def load_provenance(folder: Path, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> dict:
    """A results folder's provenance: computed from its cells' own records when it has them
    (so a folder a grid kept adding to after it was shipped or copied is described as it is
    now), with what its ``PROVENANCE.json`` adds (the note, the size); the file alone
    otherwise."""
    path = Path(folder) / PROVENANCE
    recorded = json.loads(path.read_text()) if path.is_file() else {}
    if (Path(folder) / "cells").is_dir() or not recorded:
        return {**recorded, **provenance(folder, scenario)}
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
