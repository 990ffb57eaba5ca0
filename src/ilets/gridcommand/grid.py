"""The grid-command scenario's resumable grid: methods x fleet sizes x seeds, trained under
one regime and scored under two.

One *cell* is (method, servers, seed): the method is trained (or, for an expert, used as it
is) under the profile's ``train_regime`` and scored by :func:`ilets.gridcommand.metrics.evaluate`
on the online segment under ``train_regime`` (in distribution) and ``eval_regime`` (drift),
on the same workload draw (:func:`ilets.gridcommand.pipeline.run_method`). Each cell writes
one small JSON file, ``OUT/cells/<method>-M<servers>-s<seed>.json``, through a temporary
file and one rename, with its metrics per regime, what training recorded and its
provenance (commit from ``git rev-parse``, dirty flag, UTC start, machine, CPU and wall
seconds). A cell whose file says ``done`` is skipped, so an interrupted grid resumes where
it stopped; a failed cell is recorded and retried on the next start. After every cell the
compact store ``OUT/store/results.parquet`` (one row per cell and regime, scalar metrics)
and ``OUT/PROVENANCE.json`` are rewritten. Clones shared by the ``bc`` methods of one seed
and fleet are cached in ``OUT/cache`` (not shipped).

It lives in the scenarios layer, beside the scenario, because it needs only the scenario
and the agents (the study's grid, :mod:`ilets.study.grid`, is one layer up and keyed by
:class:`ilets.config.RunConfig` cells). Run it as::

    python -m ilets.gridcommand.grid --profile gridcommand-grid-quick --out results/gridcommand-quick
    python -m ilets.gridcommand.grid --ship results/gridcommand-quick --to shipped/gridcommand

Profiles (``ilets/configs/gridcommand-grid-*.yaml``, :class:`GridProfile`) are loaded
strictly: an unknown key, a wrong type or an impossible value raises
:class:`ilets.config.ConfigError` naming the file and the key.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import pandas as pd

from ilets.config import ConfigError, from_dict, read_yaml, to_dict
from ilets.files import PROVENANCE, atomic_write, publish_folder
from ilets.host import cpu_model, package_versions, source_version
from ilets.gridcommand.command import REGIMES
from ilets.gridcommand.config import GridCommandConfig, load_gridcommand_config
from ilets.gridcommand.pipeline import METHODS, PipelineConfig, run_method

STATUS_DONE, STATUS_FAILED = "done", "failed"
STORE = "store/results.parquet"
#: The regime labels of a cell's two scores.
ROLES = ("train", "eval")
#: Scalar metrics of :func:`ilets.gridcommand.metrics.evaluate` kept in the store (per_event
#: stays in the cell's JSON).
STORE_METRICS = ("tracking_mae_rel", "tracking_mae_w", "in_band_fraction", "time_to_band_s", "misses_caused",
                 "misses_caused_in_events", "success_rate", "baseline_success_rate", "energy_kwh",
                 "baseline_energy_kwh", "energy_shift_j", "energy_after_j", "avg_response_s", "deferrals",
                 "events", "mean_reward", "tracking_cost", "infeasible_actions", "decisions", "eval_cpu_s")
#: Packages whose versions a cell records.
PACKAGES = ("numpy", "scipy", "torch", "stable-baselines3", "sb3-contrib", "imitation", "gymnasium", "pandas")


@dataclass(frozen=True)
class GridProfile:
    """What a grid-command grid runs (one YAML file)."""

    name: str = "gridcommand-grid"
    description: str = ""
    scale: str = "quick"  #: the label every table and sentence carries ("smoke", "quick", "paper")
    scenario: str = "gridcommand-quick"  #: the scenario profile (a gridcommand-* name or a path)
    methods: tuple[str, ...] = METHODS
    servers: tuple[int, ...] = (50, 200)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    train_regime: str = "shallow-long"
    eval_regime: str = "deep-short"
    #: seeds the oracle runs on (empty: every seed); its MILP is the grid's slowest cell [ours]
    oracle_seeds: tuple[int, ...] = ()
    oracle_window: int = 60  #: tasks per oracle MILP window
    #: branch-and-bound nodes per oracle solve: the same cut on any host (chosen on pilot
    #: seeds by :mod:`ilets.gridcommand.pilot`) [ours]
    oracle_node_limit: int | None = 50
    #: seconds per oracle solve, None: none. A wall-clock limit cuts a hard window at a
    #: point that depends on the host's speed and load, so the grids use the node limit
    oracle_time_limit: float | None = None
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)

    def validate(self, where: str = "grid") -> "GridProfile":
        """Named :class:`ConfigError` for every impossible value; returns self."""
        if self.scale not in ("smoke", "quick", "paper"):
            raise ConfigError(f"{where}.scale: expected 'smoke', 'quick' or 'paper', got {self.scale!r}")
        if not self.methods:
            raise ConfigError(f"{where}.methods: expected at least one method of {METHODS}")
        for i, m in enumerate(self.methods):
            if m not in METHODS:
                raise ConfigError(f"{where}.methods[{i}]: unknown method {m!r}; expected one of {METHODS}")
        for key in ("methods", "servers", "seeds"):
            values = getattr(self, key)
            if len(set(values)) != len(values):
                raise ConfigError(f"{where}.{key}: repeated entries in {list(values)}")
        if not self.servers or any(s < 1 for s in self.servers):
            raise ConfigError(f"{where}.servers: expected fleet sizes >= 1, got {list(self.servers)}")
        if not self.seeds or any(s < 0 for s in self.seeds):
            raise ConfigError(f"{where}.seeds: expected seeds >= 0, got {list(self.seeds)}")
        for key in ("train_regime", "eval_regime"):
            if getattr(self, key) not in REGIMES:
                raise ConfigError(f"{where}.{key}: expected one of {tuple(REGIMES)}, got {getattr(self, key)!r}")
        missing = sorted(set(self.oracle_seeds) - set(self.seeds))
        if missing:
            raise ConfigError(f"{where}.oracle_seeds: {missing} are not among the grid's seeds {list(self.seeds)}")
        if self.oracle_window < 1:
            raise ConfigError(f"{where}.oracle_window: expected >= 1 task, got {self.oracle_window}")
        if self.oracle_time_limit is not None and not self.oracle_time_limit > 0:
            raise ConfigError(f"{where}.oracle_time_limit: expected > 0 s or null, got {self.oracle_time_limit}")
        if self.oracle_node_limit is not None and self.oracle_node_limit < 1:
            raise ConfigError(f"{where}.oracle_node_limit: expected >= 1 node or null, got {self.oracle_node_limit}")
        if self.oracle_node_limit is None and self.oracle_time_limit is None:
            raise ConfigError(f"{where}: oracle_node_limit and oracle_time_limit are both null; a hard "
                              "window could then run for hours: set one (the node limit is host-independent)")
        self.pipeline.validate(f"{where}.pipeline")
        return self

    @property
    def regimes(self) -> dict[str, str]:
        """``{"train": regime, "eval": regime}``."""
        return {"train": self.train_regime, "eval": self.eval_regime}

    def expert_options(self, method: str) -> dict:
        """Keyword options of :func:`ilets.gridcommand.experts.make_expert` for ``method``."""
        if method == "oracle":
            return {"window": self.oracle_window, "time_limit": self.oracle_time_limit,
                    "node_limit": self.oracle_node_limit}
        return {}


def grid_profile_path(name: str) -> Path:
    """The path of a shipped grid profile (``gridcommand-grid-quick`` or just ``quick``)."""
    full = name if name.startswith("gridcommand-grid-") else f"gridcommand-grid-{name}"
    return Path(str(resources.files("ilets.configs").joinpath(f"{full}.yaml")))


def load_grid_profile(name_or_path: str | Path) -> GridProfile:
    """A validated :class:`GridProfile` from a shipped name (``quick``, ``smoke``,
    ``gridcommand-grid-quick``) or a YAML path; its scenario profile must load too."""
    text = str(name_or_path)
    path = Path(text) if text.endswith((".yaml", ".yml")) or os.sep in text else grid_profile_path(text)
    data = read_yaml(path)
    where = str(path)
    pipe = data.pop("pipeline", {}) or {}
    if not isinstance(pipe, dict):
        raise ConfigError(f"{where}.pipeline: expected a mapping, got {type(pipe).__name__}")
    profile = from_dict(GridProfile, {**data, "pipeline": pipe}, where).validate(where)
    scenario_of(profile)  # a bad scenario profile fails here, before any cell runs
    return profile


def scenario_of(profile: GridProfile) -> GridCommandConfig:
    """The profile's scenario configuration (workload scale, reward, learners)."""
    return load_gridcommand_config(profile.scenario)


@dataclass(frozen=True)
class Cell:
    method: str
    servers: int
    seed: int

    @property
    def name(self) -> str:
        return f"{self.method}-M{self.servers}-s{self.seed}"


def cells(profile: GridProfile) -> list[Cell]:
    """The grid's cells, seed by seed (each seed's methods finish together, so a partial grid
    already holds paired comparisons), the oracle on ``oracle_seeds`` only when given."""
    out = []
    for seed in profile.seeds:
        for servers in profile.servers:
            for method in profile.methods:
                if method == "oracle" and profile.oracle_seeds and seed not in profile.oracle_seeds:
                    continue
                out.append(Cell(method, servers, seed))
    return out


def planned_cells(profile: Mapping[str, Any]) -> int:
    """How many cells a grid profile plans, from the profile as data (``OUT/profile.json``)."""
    return len(cells(from_dict(GridProfile, dict(profile), "profile.json")))


# --- provenance ---------------------------------------------------------------------------

def machine() -> dict:
    """CPU model, cores, platform, Python and package versions."""
    versions = package_versions(PACKAGES)
    return {"cpu_model": cpu_model(), "cores": os.cpu_count(), "host": platform.node(), "platform": platform.platform(),
            "python": sys.version.split()[0], "packages": versions}


# --- files ----------------------------------------------------------------------------------

def atomic_json(path: Path, data: dict) -> None:
    """``data`` as JSON (inf and NaN as JSON's Infinity/NaN, which Python reads back)."""
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(data, indent=1, default=float)))


def cell_path(out: Path, cell: Cell) -> Path:
    return Path(out) / "cells" / f"{cell.name}.json"


def read_cell(path: Path) -> dict | None:
    """A cell's record, or None when absent or unreadable (a damaged file is recomputed)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def is_done(out: Path, cell: Cell) -> bool:
    rec = read_cell(cell_path(out, cell))
    return rec is not None and rec.get("status") == STATUS_DONE


# --- running --------------------------------------------------------------------------------

def run_cell(profile: GridProfile, cell: Cell, base: GridCommandConfig | None = None,
             cache_dir: Path | None = None) -> dict:
    """Compute one cell's record (only the clone cache is written): metrics per regime role,
    training info, provenance. An exception is recorded as a failed cell, not raised."""
    base = base or scenario_of(profile)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    c0, w0 = time.process_time(), time.perf_counter()
    rec: dict[str, Any] = {"cell": cell.name, "method": cell.method, "servers": cell.servers, "seed": cell.seed,
                           "profile": profile.name, "scale": profile.scale,
                           "workload_scale": base.run.workload.scale, "regimes": profile.regimes,
                           "started_utc": started, **source_version(), "machine": machine()}
    try:
        regimes = tuple(dict.fromkeys(profile.regimes.values()))
        result = run_method(cell.method, base, cell.servers, cell.seed, profile.train_regime, regimes,
                            profile.pipeline, profile.expert_options(cell.method), cache_dir)
        rec.update(status=STATUS_DONE, train=result["train"],
                   scores={role: result["scores"][r] for role, r in profile.regimes.items()})
    except Exception as err:  # noqa: BLE001 -- one bad cell must not stop the grid; it is retried
        rec.update(status=STATUS_FAILED, error=f"{type(err).__name__}: {err}", traceback=traceback.format_exc())
    rec.update(cpu_s=time.process_time() - c0, wall_s=time.perf_counter() - w0)
    return rec


def run_grid(profile: GridProfile, out: Path, max_cells: int | None = None,
             log: Callable[[str], None] = print) -> dict:
    """Run every cell of ``profile`` not yet done into ``out``; returns counts.

    Writes ``OUT/profile.json`` (the profile as data), one file per cell, and after each
    cell the store and provenance (:func:`build_store`). ``max_cells`` stops after that many
    computed cells (the rest stay for the next start).
    """
    out = Path(out)
    (out / "cells").mkdir(parents=True, exist_ok=True)
    atomic_json(out / "profile.json", to_dict(profile))
    base = scenario_of(profile)
    todo = [c for c in cells(profile) if not is_done(out, c)]
    counts = {"cells": len(cells(profile)), "skipped": len(cells(profile)) - len(todo), "done": 0, "failed": 0}
    log(f"{profile.name} ({profile.scale} scale): {counts['cells']} cells, {counts['skipped']} already done")
    for i, cell in enumerate(todo):
        if max_cells is not None and i >= max_cells:
            break
        rec = run_cell(profile, cell, base, out / "cache")
        atomic_json(cell_path(out, cell), rec)
        counts[rec["status"]] += 1
        log(f"[{i + 1}/{len(todo)}] {cell.name}: {rec['status']} in {rec['cpu_s']:.1f} CPU s"
            + (f" ({rec['error']})" if rec["status"] == STATUS_FAILED else ""))
        build_store(out)
    build_store(out)
    return counts


def store_rows(records: Iterable[dict]) -> pd.DataFrame:
    """One row per finished cell and regime role: keys, regime, scalar metrics, CPU seconds."""
    rows = []
    for rec in records:
        if rec.get("status") != STATUS_DONE:
            continue
        for role, regime in rec["regimes"].items():
            s = rec["scores"][role]
            rows.append({"method": rec["method"], "servers": rec["servers"], "seed": rec["seed"], "role": role,
                         "regime": regime, "scale": rec["scale"], "workload_scale": rec["workload_scale"],
                         **{k: float(s.get(k, math.nan)) for k in STORE_METRICS},
                         "clone_cpu_s": float(rec["train"].get("clone_cpu_s", 0.0)), "cell_cpu_s": rec["cpu_s"]})
    cols = ["method", "servers", "seed", "role", "regime", "scale", "workload_scale", *STORE_METRICS,
            "clone_cpu_s", "cell_cpu_s"]
    return pd.DataFrame(rows, columns=cols)


def records(out: Path) -> list[dict]:
    """Every readable cell record of ``out`` (done and failed), by name."""
    folder = Path(out) / "cells"
    found = [read_cell(p) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    return [r for r in found if r is not None]


def provenance(recs: list[dict]) -> dict:
    """Cells, commits (dirty flagged), first/last start (UTC), machines and CPU-hours of ``recs``."""
    done = [r for r in recs if r.get("status") == STATUS_DONE]
    commits: dict[str, int] = {}
    machines: dict[str, int] = {}
    for r in done:
        c = (r.get("commit") or "unrecorded") + ("+dirty" if r.get("dirty") else "")
        commits[c] = commits.get(c, 0) + 1
        m = r.get("machine", {})
        key = f"{m.get('cpu_model', 'unknown CPU')} x {m.get('cores', '?')} cores"
        machines[key] = machines.get(key, 0) + 1
    starts = sorted(r["started_utc"] for r in done if r.get("started_utc"))
    scales = sorted({r["scale"] for r in done})
    return {"cells": len(done), "failed": sum(r.get("status") == STATUS_FAILED for r in recs),
            "scale": scales[0] if len(scales) == 1 else scales,
            "workload_scale": sorted({r["workload_scale"] for r in done}), "commits": commits, "machines": machines,
            "first_start_utc": starts[0] if starts else None, "last_start_utc": starts[-1] if starts else None,
            "cpu_hours": sum(r["cpu_s"] for r in done) / 3600,
            "wall_hours_summed": sum(r["wall_s"] for r in done) / 3600,
            "cpu_s_by_method": {m: sum(r["cpu_s"] for r in done if r["method"] == m)
                                for m in dict.fromkeys(r["method"] for r in done)}}


def build_store(out: Path) -> pd.DataFrame:
    """Rewrite ``OUT/store/results.parquet`` and ``OUT/PROVENANCE.json`` from the cell files."""
    out = Path(out)
    recs = records(out)
    table = store_rows(recs)
    atomic_write(out / STORE, lambda tmp: table.to_parquet(tmp, index=False))
    atomic_json(out / PROVENANCE, provenance(recs))
    return table


def ship(src: Path, dest: Path, note: str = "") -> dict:
    """Copy a grid folder's compact results (store, provenance, profile, cell JSON files)
    into ``dest`` (replaced); returns the provenance with ``note`` and the size in MB."""
    src, dest = Path(src), Path(dest)
    if not (src / "profile.json").is_file():
        raise ConfigError(f"--ship {src}: expected a grid's results folder with profile.json (run the grid first)")
    build_store(src)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "cells").mkdir(parents=True)
    (tmp / "store").mkdir()
    shutil.copy2(src / STORE, tmp / STORE)
    shutil.copy2(src / "profile.json", tmp / "profile.json")
    for p in sorted((src / "cells").glob("*.json")):
        rec = read_cell(p)
        if rec is not None and rec.get("status") == STATUS_DONE:
            shutil.copy2(p, tmp / "cells" / p.name)
    return publish_folder(tmp, dest, provenance(records(tmp)), note, indent=1)


def add_ship_arguments(ap: argparse.ArgumentParser) -> None:
    """``--ship SRC --to DEST [--note TEXT]``: the shipping flags of this scenario's commands."""
    ap.add_argument("--ship", type=Path, help="copy this finished folder's compact results to --to")
    ap.add_argument("--to", type=Path, help="destination of --ship (replaced)")
    ap.add_argument("--note", default="", help="a note stored with the shipped provenance")


def shipped_by(ap: argparse.ArgumentParser, args: argparse.Namespace, ship_folder: Callable[..., dict]) -> int | None:
    """Ship with ``ship_folder(src, dest, note)`` when ``--ship`` was given, printing the
    provenance: the exit code (2, with a one-line message, for a folder it cannot ship);
    None when ``--ship`` was not given."""
    if not args.ship:
        return None
    if not args.to:
        ap.error("--ship needs --to")
    if not Path(args.ship).is_dir():
        ap.error(f"--ship {args.ship}: expected a finished results folder, found none")
    try:
        print(json.dumps(ship_folder(args.ship, args.to, args.note), indent=1))
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ilets.gridcommand.grid", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", help="grid profile: a gridcommand-grid-* name or a YAML path")
    ap.add_argument("--out", type=Path, help="results folder (resumed if it exists)")
    ap.add_argument("--max-cells", type=int, default=None, help="stop after this many computed cells")
    add_ship_arguments(ap)
    args = ap.parse_args(argv)
    shipped = shipped_by(ap, args, ship)
    if shipped is not None:
        return shipped
    if not (args.profile and args.out):
        ap.error("--profile and --out are required (or --ship and --to)")
    try:
        profile = load_grid_profile(args.profile)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    counts = run_grid(profile, args.out, args.max_cells, log=lambda s: print(s, flush=True))
    print(json.dumps(counts))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
