"""Shipped results: a compact, committed copy of a grid's results, with its provenance.

A grid's folder (``results/<profile>``) holds models and per-decision arrays that are too big
to commit. :func:`ship` copies what a reader and a verifier need into a folder that is
committed with the code (``shipped/<profile>``), for every scenario the same way
(:mod:`ilets.study.scenario`: the store, the profile, the finished cells, the provenance);
for the paper's study (``cloud``):

* ``store/*.parquet``: the tables the book reads;
* ``cells.parquet``: the finished cells as one table (:func:`ilets.cell_pack.pack_folder`):
  one row per cell, one column per file, each file's bytes as they were, zstd-compressed, the
  same bytes for the same cells; whatever reads a cell (``ilets verify`` among them) reads it
  through :mod:`ilets.cell_pack`. A cell's files: ``config.yaml``, ``command.txt``,
  ``system.json``, ``metrics.json``, ``curve.csv`` and ``decisions.npz`` (latency samples, thinned to at most
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
``grid.json`` and each finished cell's JSON file as it is, a row of its ``cells.parquet``; a
scenario's pilot folder (its ``pilot.json``, no ``cells/``) ships through the scenario
(:meth:`ilets.study.scenario.Scenario.ship_pilot`).

The book prints the provenance on every results page; ``ilets verify`` re-runs shipped cells
and compares their metrics.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from ilets import cell_pack
from ilets.config import ConfigError
from ilets.files import PROVENANCE, ShipRefused, check_ship_target, publish_folder, staging_folder  # noqa: F401
from ilets.host import provenance_of
from ilets.numerics import NOT_RECORDED
# re-exported: the cell shipping helpers of the paper's study now live with its cells
from ilets.study.run import (LATENCY_SAMPLES, OPTIONAL_CELL_FILES, OPTIONAL_CELL_FOLDERS,  # noqa: F401
                             SHIPPED_CELL_FILES, thin_latency_samples)
from ilets.study.grid import manifest_cell_count
from ilets.study.scenario import DEFAULT_SCENARIO, Scenario, get_scenario, scenario_hint
from ilets.study.verify import VERIFY_REPORT
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
    """Copy the compact part of grid folder ``src`` of ``scenario`` into ``dest`` and write its
    provenance; returns the provenance (with ``note``, the shipped size in MB and, where the
    grid's manifest says, ``planned_units``: the cells it plans, so a partial grid says so).

    What it replaces, and nothing else (:func:`ilets.files.check_ship_target`, all checked
    before anything is written, even ``src``'s store): ``dest`` absent, empty, or a folder an
    earlier ship made (it holds its ``PROVENANCE.json``). Refused with
    :class:`~ilets.files.ShipRefused` (a :class:`ConfigError`) naming the folder: any other
    ``dest``, one that holds ``src`` or lies inside it, and a ``src`` with no finished cell of
    ``scenario`` (with a hint when they are another scenario's cells). The recorded re-runs of
    the folder replaced (its ``VERIFY.json``) are kept for every cell whose results are
    unchanged (:func:`keep_checks`). A partial grid, or one with cells left out (damaged, or
    of another grid), ships with a notice on stderr.

    :class:`ConfigError` when ``src`` holds no cells (no grid ran there). A scenario's pilot
    folder (no ``cells/``, its :attr:`~ilets.study.scenario.Scenario.pilot_file`) ships as a
    pilot (:meth:`~ilets.study.scenario.Scenario.ship_pilot`)."""
    sc = get_scenario(scenario)
    src, dest = Path(src), Path(dest)
    check_ship_target(dest, (src,))
    if not cell_pack.has_cells(src) and sc.pilot_file is not None and (src / sc.pilot_file).is_file():
        return sc.ship_pilot(src, dest, note)
    if not cell_pack.has_cells(src):
        raise ConfigError(f"{src}: expected a grid's results folder with cells/ and {sc.profile_file} "
                          f"(run the grid first)")
    finished = sc.finished(src)
    if not finished:
        raise ShipRefused(f"{src}: no finished cell of scenario {sc.name!r} to ship{scenario_hint(src, sc)}")
    sc.build_store(src)
    tmp = staging_folder(dest)
    try:
        (tmp / "cells").mkdir(parents=True)
        shutil.copytree(src / "store", tmp / "store")
        for name in FOLDER_FILES:
            if (src / name).is_file():
                shutil.copy2(src / name, tmp / name)
        for cell in finished:
            sc.ship_cell(cell, tmp / "cells")
        sc.ship_extras(src, tmp, finished)
        kept, dropped = keep_checks(dest, tmp, sc)
        cell_pack.pack_folder(tmp)  # thousands of small files become one table
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if kept or dropped:
        print(f"ilets: {Path(dest) / VERIFY_REPORT}: kept the recorded re-runs of {kept} unchanged cell(s)"
              + (f"; dropped {dropped} of cells whose results changed or are no longer shipped" if dropped else ""),
              file=sys.stderr)
    info = provenance(tmp, sc)
    try:
        planned = manifest_cell_count(src)
    except (OSError, ValueError, AttributeError):  # a damaged manifest: the count is unknown, not an error
        planned = None
    if planned is not None:
        info["planned_units"] = planned
    left = len(sc.recorded_cells(src)) - len(finished)
    if (planned is not None and len(finished) < planned) or left > 0:
        of = f" of {planned} planned" if planned is not None else ""
        out = f"; {left} cell(s) in {src / 'cells'} left out (damaged, unfinished or of another grid)" if left else ""
        print(f"ilets: shipping {len(finished)}{of} cells of {src}{out}", file=sys.stderr)
    return publish_folder(tmp, dest, info, note)


def keep_checks(old: Path, new: Path, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> tuple[int, int]:
    """Carry the recorded re-runs of the shipped folder ``old`` (its ``VERIFY.json``, which a
    ship replacing it would otherwise lose) into the staged copy ``new``, for every cell whose
    results in ``new`` are those ``old`` held (the scenario's own comparison, nothing added or
    removed: what the check certified is still there). A check ``new`` already holds for a cell
    (the results folder's own ``VERIFY.json``) wins when it is the later one. Returns how many
    of ``old``'s checks were kept and dropped. :class:`ShipRefused` when ``old``'s file cannot
    be read (so that it is moved away on purpose, not lost)."""
    from ilets.study.run import atomic_json
    from ilets.study.verify import _recorded_checks

    sc = get_scenario(scenario)
    old_path, new_path = Path(old) / VERIFY_REPORT, Path(new) / VERIFY_REPORT
    if not old_path.is_file():
        return 0, 0
    try:
        old_checks = _recorded_checks(old_path)
        new_checks = _recorded_checks(new_path) if new_path.is_file() else []
    except ValueError as err:
        raise ShipRefused(f"{err}; a ship would replace it: move it away first") from None
    newer = {c["cell"]: c for c in new_checks}

    def unchanged(cell: str) -> bool:
        a, b = sc.cell_path(Path(old), cell), sc.cell_path(Path(new), cell)
        try:
            diffs, added, _ = sc.compare_cells(a, b)
            return not diffs and not added and not sc.compare_cells(b, a)[1]
        except Exception:  # noqa: BLE001 -- absent or unreadable on either side: not the same results
            return False

    kept = [c for c in old_checks if unchanged(c["cell"])]
    for c in kept:
        if str(c.get("checked_utc")) > str(newer.get(c["cell"], {}).get("checked_utc", "")):
            newer[c["cell"]] = c
    merged = list(newer.values())
    latest = max(merged, key=lambda c: str(c.get("checked_utc")), default=None)
    if latest is not None:
        atomic_json(new_path, {"results": str(old), **{k: latest.get(k) for k in ("checked_utc", "machine", "code")},
                               "cells": merged})
    return len(kept), len(old_checks) - len(kept)


def load_provenance(folder: Path, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> dict:
    """A results folder's provenance: computed from its cells' own records when it has them
    (so a folder a grid kept adding to after it was shipped or copied is described as it is
    now), with what its ``PROVENANCE.json`` adds (the note, the size); the file alone
    otherwise."""
    path = Path(folder) / PROVENANCE
    recorded = json.loads(path.read_text()) if path.is_file() else {}
    if cell_pack.has_cells(folder) or not recorded:
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
