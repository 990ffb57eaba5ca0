"""The scenarios the study runs, behind one protocol: one grid runner, store, provenance,
shipping and status vocabulary for all of them.

A :class:`Scenario` says what the study cannot know by itself: its profile (config) type and
how a profile is loaded, the cells a profile plans and how each is named on disk, how one
cell runs and when it counts as done, and how the finished cells become the results store
(its metrics). Everything else is written once and shared: the resumable, lock-claimed grid
(:func:`ilets.study.grid.run_grid`), failed attempts (``OUT/failed``,
:func:`ilets.study.run.record_failure`, status :data:`STATUS_FAILED`), the compute table
(:func:`ilets.study.results.compute_table`), the provenance schema
(:func:`ilets.host.provenance_of`) and shipping (:func:`ilets.study.shipping.ship`).

Registered (:data:`SCENARIOS`, by the name ``ilets grid --scenario`` takes):

* ``cloud`` (the default): the paper's study. Profiles :mod:`ilets.study.profiles`; a cell is
  a :class:`ilets.config.RunConfig`, written as the folder
  ``cells/<method>[@<variant>]-M<servers>-s<seed>-<digest>/`` (:mod:`ilets.study.run`); store
  ``store/metrics.parquet`` and ``store/curves.parquet`` (:mod:`ilets.study.results`).
* ``gridcommand``: a data centre following a power-grid operator's command
  (:mod:`ilets.gridcommand`). Profiles ``gridcommand-grid-*``
  (:class:`ilets.gridcommand.grid.GridProfile`); a cell is a method trained under the
  profile's ``train_regime`` and scored under it and under ``eval_regime``
  (:func:`ilets.gridcommand.pipeline.run_method`), written as the one JSON file
  ``cells/<method>-M<servers>-s<seed>.json``; store ``store/results.parquet``, one row per cell
  and regime role (read by :mod:`ilets.report.grid_command`).
"""

from __future__ import annotations

import datetime
import json
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Protocol, TypeVar

from ilets.config import ConfigError, to_dict
from ilets.files import atomic_write
from ilets.host import ComputeRecord, machine_record, source_version
from ilets.numerics import NOT_RECORDED, recorded_mode

if TYPE_CHECKING:
    import pandas as pd

    from ilets.gridcommand.grid import Cell, GridProfile

# The scenarios' own modules are imported where they are used: the ``ilets`` command lists
# the registered names when it parses its arguments, and torch (through the grid-command
# pipeline) or pandas would otherwise load before ``ilets --help`` answers.

ProfileT = TypeVar("ProfileT")
CellT = TypeVar("CellT")


class Scenario(Protocol[ProfileT, CellT]):
    """What the study needs of a scenario to run, store and ship its grids.

    ``ProfileT`` is the scenario's profile (config) type: it has a ``name`` (which names the
    results folder) and a ``description``. ``CellT`` is one cell, self-contained (a worker
    process or a SLURM task runs it from the cell alone, so it must pickle).
    """

    #: the name ``ilets grid --scenario`` takes
    name: str
    #: the file that holds the profile as data in a results folder (shipped with it)
    profile_file: str

    def load_profile(self, name_or_path: str | Path) -> ProfileT:
        """A validated profile from a shipped name or a YAML path (:class:`ConfigError` else)."""
        ...

    def cells(self, profile: ProfileT) -> list[CellT]:
        """The profile's cells, in the order the grid runs them."""
        ...

    def workers(self, profile: ProfileT) -> int:
        """Cells the local executor runs at once unless told otherwise."""
        ...

    def cell_name(self, cell: CellT) -> str:
        """The cell's name: its entry under ``OUT/cells`` (folder or file, by the scenario) and
        its lock; it never changes for a cell once shipped."""
        ...

    def is_done(self, cell: CellT, out: Path) -> bool:
        """Whether ``out`` holds the cell complete and valid (a damaged one is not done)."""
        ...

    def write_profile(self, profile: ProfileT, out: Path) -> None:
        """Write :attr:`profile_file` into ``out`` (while the grid holds the folder's claim)."""
        ...

    def prepare(self, out: Path, cells: list[CellT]) -> None:
        """Whatever the cells or the analysis need written before the cells run."""
        ...

    def run_cell(self, cell: CellT, out: Path, wait: bool) -> str:
        """Compute the cell into ``out`` under its lock (:func:`ilets.study.run.run_claimed`):
        :data:`ilets.study.run.RAN`, ``DONE`` or ``BUSY``. A failure is recorded as a failed
        attempt (:func:`ilets.study.run.record_failure`) and raised."""
        ...

    def build_store(self, out: Path) -> dict[str, Path]:
        """Gather the finished cells of ``out`` into ``OUT/store``; returns the tables' paths."""
        ...

    def finished(self, out: Path) -> list[Path]:
        """The finished, valid cells (folders or files) of ``out``'s current grid: what ships."""
        ...

    def compute_rows(self, out: Path) -> list[dict] | None:
        """The finished cells' compute rows for :func:`ilets.study.results.compute_table`
        (None: that function reads the study's cell folders itself)."""
        ...

    def records(self, folder: Path) -> list[ComputeRecord]:
        """Every cell of ``folder`` as its provenance counts it (:func:`ilets.host.provenance_of`)."""
        ...

    def ship_cell(self, cell: Path, dest: Path) -> None:
        """Copy the shipped part of finished cell ``cell`` into the folder ``dest`` (``cells/``)."""
        ...

    def ship_extras(self, src: Path, dest: Path, finished: list[Path]) -> None:
        """Whatever else a shipped copy ``dest`` of ``src`` needs beside its cells and store."""
        ...


# --- cloud: the paper's study ---------------------------------------------------------------

class CloudScenario:
    """The paper's study: cells are :class:`ilets.config.RunConfig` folders (:mod:`ilets.study.run`)."""

    name = "cloud"
    profile_file = "profile.yaml"

    def load_profile(self, name_or_path: str | Path) -> Any:
        """:func:`ilets.study.profiles.load_profile`."""
        from ilets.study.profiles import load_profile

        return load_profile(name_or_path)

    def cells(self, profile: Any) -> list[Any]:
        """:meth:`ilets.study.profiles.Profile.cells`: main grid, then variants."""
        return profile.cells()

    def workers(self, profile: Any) -> int:
        """The profile's ``workers``."""
        return int(profile.workers)

    def cell_name(self, cell: Any) -> str:
        """:func:`ilets.study.run.cell_name` (readable fields and the config's digest)."""
        from ilets.study import run

        return run.cell_name(cell)

    def is_done(self, cell: Any, out: Path) -> bool:
        """:func:`ilets.study.run.is_done`."""
        from ilets.study import run

        return run.is_done(cell, out)

    def write_profile(self, profile: Any, out: Path) -> None:
        """``OUT/profile.yaml``: the grid, the workers and the resolved run settings."""
        import yaml

        from ilets.study import run

        run.atomic_text(Path(out) / "profile.yaml", yaml.safe_dump(
            {"name": profile.name, "description": profile.description, "methods": list(profile.methods),
             "servers": list(profile.servers), "seeds": list(profile.seeds), "workers": profile.workers,
             **({"worlds": True} if profile.worlds else {}),
             "run": to_dict(profile.run)}, sort_keys=False))

    def prepare(self, out: Path, cells: list[Any]) -> None:
        """Record where each workload's events strike (``OUT/events.json``), and remove the
        temporary folders of runs killed earlier."""
        from ilets.study import run
        from ilets.study.workload_events import record_events

        record_events(out, ((c.workload, c.seed) for c in cells))
        run.clean_stale_temporaries(out)

    def run_cell(self, cell: Any, out: Path, wait: bool) -> str:
        """:func:`ilets.study.run.run_cell_status`."""
        from ilets.study import run

        return run.run_cell_status(cell, out, command=f"ilets grid (cell {run.cell_name(cell)})", wait=wait)[1]

    def build_store(self, out: Path) -> dict[str, Path]:
        """:func:`ilets.study.results.build_store` (looked up at call time: tests count its calls)."""
        from ilets.study import results

        return results.build_store(out)

    def finished(self, out: Path) -> list[Path]:
        """The valid cell folders of the folder's current grid (``grid.json``)."""
        from ilets.study import results

        return results._cells(out)

    def compute_rows(self, out: Path) -> list[dict] | None:
        """None: :func:`ilets.study.results.compute_table` reads the cell folders."""
        return None

    def records(self, folder: Path) -> list[ComputeRecord]:
        """Every cell folder (not hidden) of ``folder``, from its ``system.json`` (absent in
        the oldest cells: counted as unrecorded) and ``metrics.json``."""
        root = Path(folder) / "cells"
        found = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []
        out = []
        for cell in found:
            system = json.loads((cell / "system.json").read_text()) if (cell / "system.json").is_file() else {}
            metrics = json.loads((cell / "metrics.json").read_text())
            out.append(ComputeRecord(
                commit=system.get("commit"), dirty=system.get("dirty"),
                cpu_model=system.get("cpu_model", "unknown CPU"), cores=system.get("cores", "?"),
                cpu_id=system.get("cpu_id", ""), numerics=recorded_mode(system), started_utc=system.get("started_utc"),
                cpu_s=float(metrics.get("cpu_s", 0.0)), wall_s=float(metrics.get("wall_s", 0.0))))
        return out

    def ship_cell(self, cell: Path, dest: Path) -> None:
        """:func:`ilets.study.run.ship_cell_folder`: every file but the model, latency thinned."""
        from ilets.study import run

        run.ship_cell_folder(cell, Path(dest) / Path(cell).name)

    def ship_extras(self, src: Path, dest: Path, finished: list[Path]) -> None:
        """``events.json`` (:func:`ilets.study.workload_events.ship_events`)."""
        from ilets.study.workload_events import ship_events

        ship_events(src, dest, finished)


# --- gridcommand: a data centre following the grid operator's power command ---------------

#: Packages whose versions a grid-command cell records.
COMMAND_PACKAGES = ("numpy", "scipy", "torch", "stable-baselines3", "sb3-contrib", "imitation", "gymnasium",
                    "pandas")
#: The grid-command store: one row per finished cell and regime role.
COMMAND_STORE = "store/results.parquet"
#: Scalar metrics of :func:`ilets.gridcommand.metrics.evaluate` kept in the store (per_event
#: stays in the cell's JSON).
COMMAND_METRICS = ("tracking_mae_rel", "tracking_mae_w", "in_band_fraction", "time_to_band_s", "misses_caused",
                   "misses_caused_in_events", "success_rate", "baseline_success_rate", "energy_kwh",
                   "baseline_energy_kwh", "energy_shift_j", "energy_after_j", "avg_response_s", "deferrals",
                   "events", "mean_reward", "tracking_cost", "infeasible_actions", "decisions", "eval_cpu_s")


@dataclass(frozen=True)
class CommandCell:
    """One grid-command cell with the profile it belongs to (so a worker needs nothing else)."""

    profile: GridProfile
    cell: Cell

    @property
    def name(self) -> str:
        """``<method>-M<servers>-s<seed>``: the cell's file name, without ``.json``."""
        return self.cell.name


def _read_json(path: Path) -> dict | None:
    """A JSON object from ``path``, or None when absent, damaged or not an object."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _done_record(path: Path) -> dict | None:
    """The record of a finished cell file, or None (absent, damaged, not done, or a record
    of another cell copied under this name)."""
    from ilets.study.results import STATUS_DONE

    rec = _read_json(path)
    ok = rec is not None and rec.get("status") == STATUS_DONE and rec.get("cell") == Path(path).stem
    return rec if ok else None


class GridCommandScenario:
    """The grid-command scenario: one JSON file per cell, its metrics per regime role."""

    name = "gridcommand"
    profile_file = "profile.json"

    def load_profile(self, name_or_path: str | Path) -> GridProfile:
        """:func:`ilets.gridcommand.grid.load_grid_profile` (``quick``, ``gridcommand-quick``,
        ``gridcommand-grid-quick`` or a YAML path)."""
        from ilets.gridcommand.grid import load_grid_profile

        return load_grid_profile(name_or_path)

    def cells(self, profile: GridProfile) -> list[CommandCell]:
        """:func:`ilets.gridcommand.grid.cells`, seed by seed."""
        from ilets.gridcommand.grid import cells

        return [CommandCell(profile, c) for c in cells(profile)]

    def workers(self, profile: GridProfile) -> int:
        """One: the grid-command grids ran their cells one after another."""
        return 1

    def cell_name(self, cell: CommandCell) -> str:
        """``<method>-M<servers>-s<seed>`` (no digest: the profile is ``OUT/profile.json``)."""
        return cell.name

    def _path(self, out: Path, name: str) -> Path:
        return Path(out) / "cells" / f"{name}.json"

    def is_done(self, cell: CommandCell, out: Path) -> bool:
        """Whether the cell's file is readable and says ``done``."""
        return _done_record(self._path(out, cell.name)) is not None

    def write_profile(self, profile: GridProfile, out: Path) -> None:
        """``OUT/profile.json``: the profile as data (the book reads it)."""
        atomic_write(Path(out) / self.profile_file,
                     lambda tmp: tmp.write_text(json.dumps(to_dict(profile), indent=1, default=float)))

    def prepare(self, out: Path, cells: list[CommandCell]) -> None:
        """Nothing: a cell reads its scenario profile when it runs."""

    def run_cell(self, cell: CommandCell, out: Path, wait: bool) -> str:
        """Compute the cell (:func:`cell_record`) and write its file in one rename."""
        from ilets.study import run

        def compute() -> None:
            c0, w0 = time.process_time(), time.perf_counter()
            try:
                rec = cell_record(cell, Path(out) / "cache")
            except Exception as err:  # recorded as a failed attempt; the cell stays undone and is retried
                run.record_failure(out, cell.name, {"method": cell.cell.method, "variant": "",
                                                    "servers": cell.cell.servers, "seed": cell.cell.seed},
                                   err, time.perf_counter() - w0, time.process_time() - c0)
                raise
            atomic_write(self._path(out, cell.name),
                         lambda tmp: tmp.write_text(json.dumps(rec, indent=1, default=float)))

        self._path(out, cell.name).parent.mkdir(parents=True, exist_ok=True)
        return run.run_claimed(out, cell.name, lambda: self.is_done(cell, out), compute, wait)

    def _finished_records(self, out: Path) -> list[tuple[Path, dict]]:
        folder = Path(out) / "cells"
        if not folder.is_dir():
            return []
        # like the study's store: only the cells of the grid last run here (grid.json), when known
        manifest = _read_json(Path(out) / "grid.json")
        wanted = set(manifest["cells"]) if manifest and isinstance(manifest.get("cells"), list) else None
        found = []
        for p in sorted(folder.glob("*.json")):
            if p.name.startswith(".") or (wanted is not None and p.stem not in wanted):
                continue
            rec = _done_record(p)
            if rec is not None:
                found.append((p, rec))
        return found

    def build_store(self, out: Path) -> dict[str, Path]:
        """``OUT/store/results.parquet`` (:func:`command_store_rows`)."""
        table = command_store_rows(rec for _, rec in self._finished_records(out))
        path = Path(out) / COMMAND_STORE
        atomic_write(path, lambda tmp: table.to_parquet(tmp, index=False))
        return {"results": path}

    def finished(self, out: Path) -> list[Path]:
        """The files of the finished cells of ``out``'s current grid."""
        return [p for p, _ in self._finished_records(out)]

    def compute_rows(self, out: Path) -> list[dict] | None:
        """One row per finished cell: name, method, servers, seed, wall and CPU seconds."""
        return [{"cell": p.stem, "method": r["method"], "variant": "", "servers": r["servers"], "seed": r["seed"],
                 "wall_s": r["wall_s"], "cpu_s": r["cpu_s"]} for p, r in self._finished_records(out)]

    def records(self, folder: Path) -> list[ComputeRecord]:
        """Every finished cell file of ``folder``, from its own record."""
        out = []
        for _, r in self._finished_records(folder):
            m = r.get("machine", {})
            out.append(ComputeRecord(
                commit=r.get("commit"), dirty=r.get("dirty"), cpu_model=m.get("cpu_model", "unknown CPU"),
                cores=m.get("cores", "?"), cpu_id=m.get("cpu_id", ""), numerics=recorded_mode(m) if m else NOT_RECORDED,
                started_utc=r.get("started_utc"), cpu_s=float(r["cpu_s"]), wall_s=float(r["wall_s"])))
        return out

    def ship_cell(self, cell: Path, dest: Path) -> None:
        """The cell's file, as it is."""
        shutil.copy2(cell, Path(dest) / Path(cell).name)

    def ship_extras(self, src: Path, dest: Path, finished: list[Path]) -> None:
        """Nothing beside the cells, the store and the profile."""


def cell_record(cell: CommandCell, cache_dir: Path | None = None) -> dict:
    """Compute one grid-command cell's record: its identity, the profile's scale and regimes,
    provenance (start, commit, machine), what training recorded, the scores per regime role
    (``train``, ``eval``) and the CPU and wall seconds (of this process: the pipeline runs
    in it). ``cache_dir`` holds the clones the ``bc`` methods of one seed and fleet share."""
    from ilets.gridcommand import pipeline
    from ilets.gridcommand.grid import scenario_of

    profile, c = cell.profile, cell.cell
    base = scenario_of(profile)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    c0, w0 = time.process_time(), time.perf_counter()
    rec: dict[str, Any] = {"cell": c.name, "method": c.method, "servers": c.servers, "seed": c.seed,
                           "profile": profile.name, "scale": profile.scale,
                           "workload_scale": base.run.workload.scale, "regimes": profile.regimes,
                           "started_utc": started, **source_version(), "machine": machine_record(COMMAND_PACKAGES)}
    from ilets.study.results import STATUS_DONE

    regimes = tuple(dict.fromkeys(profile.regimes.values()))
    result = pipeline.run_method(c.method, base, c.servers, c.seed, profile.train_regime, regimes,
                                 profile.pipeline, profile.expert_options(c.method), cache_dir)
    rec.update(status=STATUS_DONE, train=result["train"],
               scores={role: result["scores"][r] for role, r in profile.regimes.items()})
    rec.update(cpu_s=time.process_time() - c0, wall_s=time.perf_counter() - w0)
    return rec


def command_store_rows(records: Iterable[dict]) -> pd.DataFrame:
    """One row per finished grid-command cell and regime role: keys, regime, scalar metrics,
    CPU seconds (the columns :mod:`ilets.report.grid_command` reads)."""
    import pandas as pd

    from ilets.study.results import STATUS_DONE

    rows = []
    for rec in records:
        if rec.get("status") != STATUS_DONE:
            continue
        for role, regime in rec["regimes"].items():
            s = rec["scores"][role]
            rows.append({"method": rec["method"], "servers": rec["servers"], "seed": rec["seed"], "role": role,
                         "regime": regime, "scale": rec["scale"], "workload_scale": rec["workload_scale"],
                         **{k: float(s.get(k, math.nan)) for k in COMMAND_METRICS},
                         "clone_cpu_s": float(rec["train"].get("clone_cpu_s", 0.0)), "cell_cpu_s": rec["cpu_s"]})
    cols = ["method", "servers", "seed", "role", "regime", "scale", "workload_scale", *COMMAND_METRICS,
            "clone_cpu_s", "cell_cpu_s"]
    return pd.DataFrame(rows, columns=cols)


# --- the registry ---------------------------------------------------------------------------

#: Every scenario the study runs, by name.
SCENARIOS: dict[str, Scenario[Any, Any]] = {s.name: s for s in (CloudScenario(), GridCommandScenario())}
#: The scenario of ``ilets grid`` and of the study's functions when none is named.
DEFAULT_SCENARIO = "cloud"


def get_scenario(scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> Scenario[Any, Any]:
    """The registered scenario named ``scenario`` (a scenario object is returned as it is);
    :class:`ConfigError` naming the registered ones for an unknown name."""
    if not isinstance(scenario, str):
        return scenario
    try:
        return SCENARIOS[scenario]
    except KeyError:
        raise ConfigError(f"scenario: unknown {scenario!r}; expected one of {sorted(SCENARIOS)}") from None
