"""The grid-command scenario on the study's stack (registered by import path as scenario
``gridcommand`` in :data:`ilets.study.scenario.SCENARIOS`): its profiles loaded, its cells
named, run, judged done, stored, verified and shipped by the study's one runner, store,
verifier and shipping, and its pilot run and shipped by the ``ilets`` command.

What is the scenario's own (the experiment's methods, fleets, seeds, regimes and oracle
budget) is :class:`ilets.gridcommand.experiment.ExperimentProfile`; this module is how the
study handles it:

* **Profiles** (:func:`load_profile`): a design's name (``quick``, ``gridcommand-quick`` or
  ``gridcommand-grid-quick``: a row of :data:`ilets.gridcommand.designs.DESIGNS`) or a YAML path, loaded
  strictly: an unknown key, a wrong type, an impossible value or a missing grid key
  (:data:`ilets.gridcommand.study.profiles.REQUIRED_KEYS`: a profile without them would silently be the 90-cell quick grid)
  raises :class:`ilets.config.ConfigError` naming the file and the key.
* **Cells**: ``cells/<method>-M<servers>-s<seed>.json`` (:func:`cell_name`; never changed
  once shipped), one JSON record each (:func:`cell_record`): identity, profile, scale,
  regimes, provenance (start, commit, machine), the digest of every setting that decides its
  numbers (:func:`settings_digest`), what training recorded, the scores per regime role and
  the CPU and wall seconds.
* **Done**: a record is done when it is complete (:func:`record_problem`) and computed under
  the profile's settings (:func:`settings_problem`); a damaged or stale record is named, set
  aside (hidden, kept) and recomputed, so a changed ``train_regime`` never reuses old cells.
* **Store**: ``store/results.parquet``, one row per cell and regime role
  (:func:`command_store_rows`, read by :mod:`ilets.gridcommand.report.results`).
* **Verification** (``ilets verify --scenario gridcommand``): a recorded cell is re-run from
  the results folder's ``profile.json`` and its training record and scores compared value for
  value, except what measures the host (:func:`compare_records`).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ilets import cell_pack
from ilets.config import ConfigError, to_dict
from ilets.files import HeldByAnother, atomic_write
from ilets.host import ComputeRecord, machine_record, source_version
from ilets.numerics import NOT_RECORDED, recorded_mode
from ilets.gridcommand.study import pilot
from ilets.gridcommand.study.profiles import (CELL_NAME, COMMAND_PACKAGES, PROFILE_FILE, cell_name, load_profile,
                                              parse_cell_name, recorded_profile)

if TYPE_CHECKING:
    import pandas as pd

    from ilets.gridcommand.config import GridCommandConfig
    from ilets.gridcommand.experiment import Cell, ExperimentProfile

# The scenario's own modules are imported where they are used: the ``ilets`` command lists
# the registered scenarios when it parses its arguments, and torch (through the grid-command
# pipeline) would otherwise load before ``ilets --help`` answers.

#: The grid-command store: one row per finished cell and regime role.
COMMAND_STORE = "store/results.parquet"
#: Scalar metrics of :func:`ilets.gridcommand.metrics.evaluate` kept in the store (per_event
#: stays in the cell's JSON).
COMMAND_METRICS = ("tracking_mae_rel", "tracking_mae_w", "in_band_fraction", "time_to_band_s", "misses_caused",
                   "misses_caused_in_events", "success_rate", "baseline_success_rate", "energy_kwh",
                   "baseline_energy_kwh", "energy_shift_j", "energy_after_j", "avg_response_s", "deferrals",
                   "events", "mean_reward", "tracking_cost", "infeasible_actions", "decisions", "eval_cpu_s",
                   "time_to_band_median_s", "band_reached_share", "episode_reward", "events_dropped",
                   "events_clipped", "feasible_share", "tracking_mae_rel_feasible", "events_redrawn")
#: The regime roles of a cell's scores.
ROLES = ("train", "eval")
#: A record's fields that hold its result (compared by ``ilets verify``); the others are its
#: provenance: when, where and at which commit it ran.
RESULT_FIELDS = ("cell", "method", "servers", "seed", "status", "profile", "scale", "workload_scale", "regimes",
                 "train", "scores")



@dataclass(frozen=True)
class CommandCell:
    """One grid-command cell with the profile it belongs to (so a worker needs nothing else)."""

    profile: ExperimentProfile
    cell: Cell

    @property
    def name(self) -> str:
        """``<method>-M<servers>-s<seed>``: the cell's file name, without ``.json``."""
        return cell_name(self.cell)


def settings_of(profile: ExperimentProfile, cell: Cell, scenario: GridCommandConfig | None = None) -> dict:
    """Every setting that decides a cell's numbers: its identity, the profile's scale label and
    regimes, the scenario's whole configuration (``scenario``, default the profile's as loaded
    now: its YAML file and the study's method settings), the pipeline and the method's expert
    options."""
    from ilets.gridcommand.config import settings_plain

    scenario = profile.scenario_config() if scenario is None else scenario
    return {"method": cell.method, "servers": cell.servers, "seed": cell.seed, "scale": profile.scale,
            "regimes": profile.regimes, "scenario": settings_plain(scenario), "pipeline": profile.pipeline.plain(),
            "expert": profile.expert_options(cell.method)}


def settings_digest(profile: ExperimentProfile, cell: Cell, scenario: GridCommandConfig | None = None) -> str:
    """The first 12 hex digits of the SHA-256 of :func:`settings_of` as sorted JSON."""
    text = json.dumps(settings_of(profile, cell, scenario), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def read_record(path: Path) -> tuple[dict | None, str | None]:
    """``(record, None)`` for a complete record at ``path`` (:func:`record_problem`), else
    ``(None, why)`` naming the file (``(None, None)``: no file)."""
    path = Path(path)
    try:  # a cell of a shipped folder is a row of its table (ilets.cell_pack)
        rec = json.loads(cell_pack.read_text(path))
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        return None, f"{path}: not valid JSON ({err})"
    problem = record_problem(path, rec)
    return (None, problem) if problem else (rec, None)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def record_problem(path: Path, rec: object) -> str | None:
    """Why ``rec`` (read from ``path``) is not a finished cell's complete record, naming the
    file and the field, or None. Checks the fields the store, the provenance and the
    verifier read: a done status, the identity of the file's name, the regimes and scores of
    both roles, the training record and the CPU and wall seconds."""
    from ilets.study.results import STATUS_DONE

    path = Path(path)
    if not isinstance(rec, dict):
        return f"{path}: expected a JSON object"
    missing = [k for k in (*RESULT_FIELDS, "cpu_s", "wall_s") if k not in rec]
    if missing:
        return f"{path}: missing key(s) {missing}"
    if rec["status"] != STATUS_DONE:
        return f"{path}: status {rec['status']!r}, expected {STATUS_DONE!r}"
    if rec["cell"] != path.stem:
        return f"{path}: cell {rec['cell']!r} is not the file's name {path.stem!r} (a record copied or renamed?)"
    for key in ("servers", "seed"):
        if not _is_int(rec[key]) or rec[key] < 0:
            return f"{path}: {key} = {rec[key]!r}: expected an integer >= 0"
    if not isinstance(rec["method"], str) or f"{rec['method']}-M{rec['servers']}-s{rec['seed']}" != path.stem:
        return f"{path}: method, servers and seed are not the file's name {path.stem!r} (a record copied or renamed?)"
    regimes, scores = rec["regimes"], rec["scores"]
    if not isinstance(regimes, dict) or sorted(regimes) != sorted(ROLES) or \
            not all(isinstance(v, str) for v in regimes.values()):
        return f"{path}: regimes = {regimes!r}: expected a regime name for each of {list(ROLES)}"
    if not isinstance(scores, dict) or sorted(scores) != sorted(ROLES) or \
            not all(isinstance(v, dict) for v in scores.values()):
        return f"{path}: scores: expected the metrics of each of {list(ROLES)}"
    if not isinstance(rec["train"], dict):
        return f"{path}: train: expected a JSON object"
    for key in ("cpu_s", "wall_s", "workload_scale"):
        if not _is_number(rec[key]):
            return f"{path}: {key} = {rec[key]!r}: expected a number"
    return None


def settings_problem(path: Path, rec: dict, profile: ExperimentProfile,
                     scenario: GridCommandConfig | None = None) -> str | None:
    """Why the complete record ``rec`` (read from ``path``) was not computed under
    ``profile``'s settings (``scenario``: its scenario configuration, when already loaded), or
    None. A record holds the digest of its settings (:func:`settings_digest`); one that
    predates the digest is judged on what it recorded: its regimes, scale and workload scale."""
    cell = parse_cell_name(Path(path).stem)
    scenario = profile.scenario_config() if scenario is None else scenario
    if rec["regimes"] != profile.regimes:
        changed = [f"{role}_regime {rec['regimes'][role]!r} -> {profile.regimes[role]!r}" for role in ROLES
                   if rec["regimes"][role] != profile.regimes[role]]
        return f"{path}: computed under another profile ({', '.join(changed)})"
    if rec["scale"] != profile.scale:
        return f"{path}: computed under another profile (scale {rec['scale']!r} -> {profile.scale!r})"
    if "settings_digest" in rec:
        want = settings_digest(profile, cell, scenario)
        if rec["settings_digest"] != want:
            return (f"{path}: computed under other settings (digest {rec['settings_digest']!r}, the profile's "
                    f"{want!r}: its scenario, pipeline or expert options changed)")
        return None
    scale = scenario.run.workload.scale
    if rec["workload_scale"] != scale:
        return f"{path}: computed under another scenario (workload scale {rec['workload_scale']!r} -> {scale!r})"
    return None


def _set_aside(path: Path, why: str, label: str) -> None:
    """Move a damaged or stale cell file out of the way (hidden, kept for inspection) and say so."""
    dest = path.parent / f".{path.name}.{label}-{int(time.time() * 1000)}"
    print(f"ilets: {why}; recomputing the cell (old file moved to {dest.name})", file=sys.stderr)
    os.replace(path, dest)


def cell_record(cell: CommandCell, cache_dir: Path | None = None, wait: bool = True, processes: int = 1) -> dict:
    """Compute one grid-command cell's record: its identity, the profile's scale and regimes,
    provenance (start, commit, machine), the digest of its settings, what training recorded,
    the scores per regime role (``train``, ``eval``) and the CPU and wall seconds (of this
    process and the processes it started: the pipeline runs in it, and a clone's training
    episodes on ``processes`` processes, :func:`ilets.gridcommand.cloning.clone`).
    ``cache_dir`` holds the clones the ``bc`` methods of one seed and fleet share
    (``wait=False``: :class:`~ilets.files.HeldByAnother` when another process is making the
    one this cell needs)."""
    from ilets.gridcommand import pipeline
    from ilets.study.results import STATUS_DONE
    from ilets.study.run import cpu_seconds

    profile, c = cell.profile, cell.cell
    base = profile.scenario_config()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    c0, w0 = cpu_seconds(), time.perf_counter()
    rec: dict[str, Any] = {"cell": cell.name, "method": c.method, "servers": c.servers, "seed": c.seed,
                           "profile": profile.name, "scale": profile.scale,
                           "workload_scale": base.run.workload.scale, "regimes": profile.regimes,
                           "settings_digest": settings_digest(profile, c),
                           "started_utc": started, **source_version(), "machine": machine_record(COMMAND_PACKAGES)}
    regimes = tuple(dict.fromkeys(profile.regimes.values()))
    result = pipeline.run_method(c.method, base, c.servers, c.seed, profile.train_regime, regimes,
                                 profile.pipeline, profile.expert_options(c.method), cache_dir, wait, processes)
    rec.update(status=STATUS_DONE, train=result["train"],
               scores={role: result["scores"][r] for role, r in profile.regimes.items()})
    rec.update(cpu_s=cpu_seconds() - c0, wall_s=time.perf_counter() - w0)
    return rec


def command_store_rows(records: Iterable[dict]) -> pd.DataFrame:
    """One row per finished grid-command cell and regime role: keys, regime, scalar metrics,
    CPU seconds (the columns :mod:`ilets.gridcommand.report.results` reads)."""
    import pandas as pd

    from ilets.gridcommand.metrics import band_summary, episode_reward
    from ilets.study.results import STATUS_DONE

    rows = []
    for rec in records:
        if rec.get("status") != STATUS_DONE:
            continue
        for role, regime in rec["regimes"].items():
            # the band summary and the episode total from what every cell records, also for
            # cells recorded before they existed
            s = rec["scores"][role]
            s = {**s, **band_summary(s.get("per_event", [])), "episode_reward": episode_reward(s)}
            rows.append({"method": rec["method"], "servers": rec["servers"], "seed": rec["seed"], "role": role,
                         "regime": regime, "scale": rec["scale"], "workload_scale": rec["workload_scale"],
                         **{k: float(s.get(k, math.nan)) for k in COMMAND_METRICS},
                         "clone_cpu_s": float(rec["train"].get("clone_cpu_s", 0.0)), "cell_cpu_s": rec["cpu_s"]})
    cols = ["method", "servers", "seed", "role", "regime", "scale", "workload_scale", *COMMAND_METRICS,
            "clone_cpu_s", "cell_cpu_s"]
    return pd.DataFrame(rows, columns=cols)


# --- comparing two records of one cell (ilets verify) ---------------------------------------

def host_key(key: str) -> bool:
    """Whether a training or score key measures the host or the run's cache, not the result:
    CPU and wall seconds (``eval_cpu_s``, ``clone_cpu_s``, ``oail_teacher_cpu_s[deep-short]``)
    and whether the clone came from the cache (``clone_cached``)."""
    base = key.split("[", 1)[0]
    return base.endswith(("cpu_s", "wall_s")) or base == "clone_cached"


def _flat(rec: dict) -> dict[str, Any]:
    """A record's result fields (:data:`RESULT_FIELDS`) as dotted keys, nested objects opened
    (lists, such as ``per_event``, kept whole), host-measuring keys left out (:func:`host_key`)."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if not host_key(str(k)):
                    walk(f"{prefix}.{k}", v)
        else:
            out[prefix] = value

    for key in RESULT_FIELDS:
        if key in rec:
            walk(key, rec[key])
    return out


def _same(a: Any, b: Any) -> bool:
    """Exact equality, NaN equal to NaN (also inside lists and objects)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def compare_records(recorded: dict, rerun: dict, label: str = "") -> tuple[list[str], list[str]]:
    """``(differences, added)`` between two records of one cell: every result key (dotted,
    :func:`_flat`) the recorded one has, compared exactly (``label key: recorded -> re-run``);
    ``added``: the keys only the re-run has (recorded before they existed; not differences)."""
    a, b = _flat(recorded), _flat(rerun)
    diffs = []
    for key in a:
        if not _same(a[key], b.get(key)):
            shown_a, shown_b = a[key], b.get(key)
            if isinstance(shown_a, list):  # per-event lists: the first differing entry, not the whole list
                i = next((i for i, (x, y) in enumerate(zip(shown_a, shown_b or [])) if not _same(x, y)),
                         min(len(shown_a), len(shown_b or [])))
                key, shown_a = f"{key}[{i}]", shown_a[i] if i < len(shown_a) else None
                shown_b = shown_b[i] if isinstance(shown_b, list) and i < len(shown_b) else None
            diffs.append(f"{label}{key}: {shown_a!r} -> {shown_b!r}")
    return diffs, sorted(k for k in b if k not in a)


# --- the scenario ----------------------------------------------------------------------------

class GridCommandScenario:
    """The grid-command scenario: one JSON file per cell, its metrics per regime role."""

    name = "gridcommand"
    profile_file = PROFILE_FILE

    def load_profile(self, name_or_path: str | Path) -> ExperimentProfile:
        """:func:`load_profile` (``quick``, ``gridcommand-quick``, ``gridcommand-grid-quick`` or a YAML path)."""
        return load_profile(name_or_path)

    def cells(self, profile: ExperimentProfile) -> list[CommandCell]:
        """:meth:`ilets.gridcommand.experiment.ExperimentProfile.cells`, seed by seed."""
        return [CommandCell(profile, c) for c in profile.cells()]

    def workers(self, profile: ExperimentProfile) -> int:
        """One: the grid-command grids ran their cells one after another."""
        return 1

    def settings_key(self, profile: ExperimentProfile) -> str:
        """:func:`ilets.study.scenario.settings_key` of the profile, its scenario file read: the
        scenario's whole configuration in place of the file's path (edited, it is other settings)."""
        from ilets.gridcommand.config import settings_plain
        from ilets.study.profiles import settings_key

        return settings_key({**to_dict(profile), "scenario": settings_plain(profile.scenario_config())})

    def cell_name(self, cell: CommandCell) -> str:
        """``<method>-M<servers>-s<seed>`` (no digest: the record holds it, :func:`settings_digest`)."""
        return cell.name

    def _path(self, out: Path, name: str) -> Path:
        return Path(out) / "cells" / f"{name}.json"

    def _problem(self, cell: CommandCell, out: Path) -> tuple[str, str] | None:
        """Why the cell's file is not done: ``("damaged", why)`` or ``("stale", why)``, naming
        it; None when it is done, or absent."""
        path = self._path(out, cell.name)
        rec, problem = read_record(path)
        if rec is None:
            return None if problem is None else ("damaged", problem)
        problem = settings_problem(path, rec, cell.profile)
        return None if problem is None else ("stale", problem)

    def is_done(self, cell: CommandCell, out: Path) -> bool:
        """Whether the cell's file is a complete record computed under the cell's profile."""
        return cell_pack.is_file(self._path(out, cell.name)) and self._problem(cell, out) is None

    def write_profile(self, profile: ExperimentProfile, out: Path) -> None:
        """``OUT/profile.json``: the profile as data (the book and ``ilets verify`` read it)."""
        atomic_write(Path(out) / self.profile_file,
                     lambda tmp: tmp.write_text(json.dumps(to_dict(profile), indent=1, default=float)))

    def prepare(self, out: Path, cells: list[CommandCell]) -> None:
        """Nothing: a cell reads its scenario profile when it runs."""

    def run_cell(self, cell: CommandCell, out: Path, wait: bool, processes: int = 1) -> str:
        """Compute the cell (:func:`cell_record`, its clone's training episodes on ``processes``
        processes) and write its file in one rename; a damaged or stale file there is named and
        set aside first."""
        from ilets.study import run

        path = self._path(out, cell.name)

        def compute() -> None:
            if path.exists():  # the lock is held: nobody else writes it
                label, why = self._problem(cell, out) or ("damaged", f"{path}: damaged")
                _set_aside(path, why, label)
            c0, w0 = run.cpu_seconds(), time.perf_counter()
            try:
                rec = cell_record(cell, Path(out) / "cache", wait, processes)
            except HeldByAnother:  # not a failure: the cell is busy (run_claimed)
                raise
            except Exception as err:  # recorded as a failed attempt; the cell stays undone and is retried
                run.record_failure(out, cell.name, {"method": cell.cell.method, "variant": "",
                                                    "servers": cell.cell.servers, "seed": cell.cell.seed},
                                   err, time.perf_counter() - w0, run.cpu_seconds() - c0)
                raise
            atomic_write(path, lambda tmp: tmp.write_text(json.dumps(rec, indent=1, default=float)))

        path.parent.mkdir(parents=True, exist_ok=True)
        return run.run_claimed(out, cell.name, lambda: self.is_done(cell, out), compute, wait)

    def _finished_records(self, out: Path) -> list[tuple[Path, dict]]:
        """The complete records of ``out``'s current grid (``grid.json``, when known) computed
        under its profile (``profile.json``, when readable)."""
        if not cell_pack.has_cells(out):
            return []
        manifest = _read_json(Path(out) / "grid.json")
        wanted = set(manifest["cells"]) if manifest and isinstance(manifest.get("cells"), list) else None
        profile: ExperimentProfile | None
        scenario: GridCommandConfig | None
        try:
            profile = recorded_profile(out)
            scenario = profile.scenario_config()
        except ConfigError:
            profile = scenario = None  # an unknown profile: the records are judged on their own
        found = []
        for p in cell_pack.cell_paths(out, "*.json"):
            if p.name.startswith(".") or (wanted is not None and p.stem not in wanted):
                continue
            rec, _ = read_record(p)
            if rec is not None and (profile is None or settings_problem(p, rec, profile, scenario) is None):
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
        return [_compute_record(r) for _, r in self._finished_records(folder)]

    def ship_cell(self, cell: Path, dest: Path) -> None:
        """The cell's file, as it is."""
        shutil.copy2(cell_pack.on_disk(cell), Path(dest) / Path(cell).name)

    def ship_extras(self, src: Path, dest: Path, finished: list[Path]) -> None:
        """Nothing beside the cells, the store and the profile."""

    # --- ilets verify ---

    def recorded_cells(self, folder: Path) -> list[str]:
        """The names of the cell files of ``folder/cells``: hidden ones (set aside) and files
        not named as cells (a user's ``notes.json``) left out, as the grid leaves them."""
        return sorted(p.stem for p in cell_pack.cell_paths(folder, "*.json") if CELL_NAME.match(p.stem))

    def method_of(self, name: str) -> str:
        """The method of a cell name (:func:`parse_cell_name`)."""
        return parse_cell_name(name).method

    def method_names(self) -> tuple[str, ...]:
        """:data:`ilets.gridcommand.pipeline_config.METHODS`."""
        from ilets.gridcommand.pipeline_config import METHODS

        return METHODS

    def cell_path(self, folder: Path, name: str) -> Path:
        """``folder/cells/<name>.json``."""
        return self._path(folder, name)

    def recorded_cell(self, path: Path) -> CommandCell:
        """The cell a recorded file ran, after checking it (:func:`record_problem`) and that it
        was computed under its folder's ``profile.json`` (:func:`settings_problem`);
        ``ValueError`` naming the file otherwise."""
        path = Path(path)
        rec, problem = read_record(path)
        if rec is None:
            raise ValueError(problem or f"{path}: missing")
        profile = recorded_profile(path.parent.parent)
        problem = settings_problem(path, rec, profile)
        if problem is not None:
            raise ValueError(problem)
        return CommandCell(profile, parse_cell_name(path.stem))

    def rerun_cell(self, cell: CommandCell, scratch: Path, progress: bool = False,
                   processes: int = 1) -> tuple[Path, str]:
        """Compute the cell into ``scratch`` (:meth:`run_cell`); its file and status."""
        return self._path(scratch, cell.name), self.run_cell(cell, scratch, wait=True, processes=processes)

    def compare_cells(self, recorded: Path, rerun: Path) -> tuple[list[str], list[str], float]:
        """:func:`compare_records` of the two files, and the re-run's wall seconds."""
        a, b = (json.loads(cell_pack.read_text(Path(p))) for p in (recorded, rerun))
        diffs, added = compare_records(a, b, f"{Path(recorded).name} ")
        return diffs, added, float(b.get("wall_s", math.nan))

    def cell_system(self, path: Path) -> dict[str, Any]:
        """The cell record's ``machine`` (``{}`` when absent or unreadable)."""
        machine = (_read_json(path) or {}).get("machine")
        return machine if isinstance(machine, dict) else {}

    # --- beside the grids ---

    pilot_file: str | None = pilot.PILOT_FILE

    def run_pilot(self, profile: ExperimentProfile, out: Path, log: Callable[[str], None]) -> dict:
        """:func:`ilets.gridcommand.study.pilot.run_pilot` on the pilot seeds."""
        return pilot.run_pilot(profile, out, log=log)

    def ship_pilot(self, src: Path, dest: Path, note: str) -> dict:
        """:func:`ilets.gridcommand.study.pilot.ship_pilot`."""
        return pilot.ship_pilot(src, dest, note)

    def planned_cell_count(self, folder: Path) -> int | None:
        """The cells of the folder's ``profile.json`` (:func:`ilets.gridcommand.study.profiles.profile_cell_count`)."""
        from ilets.gridcommand.study.profiles import profile_cell_count

        path = Path(folder) / self.profile_file
        return profile_cell_count(json.loads(path.read_text())) if path.is_file() else None

    def verified_folders(self) -> list[Path]:
        """The shipped quick and full-window grids (:data:`ilets.gridcommand.report.results.SHIPPED`,
        ``PAPER_SHIPPED``)."""
        from ilets.gridcommand.report.results import PAPER_SHIPPED, SHIPPED
        from ilets.study.results import repo_root

        return [repo_root() / SHIPPED, repo_root() / PAPER_SHIPPED]


def _read_json(path: Path) -> dict | None:
    """A JSON object from ``path``, or None when absent, damaged or not an object."""
    try:
        data = json.loads(cell_pack.read_text(Path(path)))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _compute_record(r: dict) -> ComputeRecord:
    """What provenance counts of a complete record."""
    machine = r.get("machine")
    m = machine if isinstance(machine, dict) else {}
    return ComputeRecord(
        commit=r.get("commit"), dirty=r.get("dirty"), cpu_model=m.get("cpu_model", "unknown CPU"),
        cores=m.get("cores", "?"), cpu_id=m.get("cpu_id", ""), numerics=recorded_mode(m) if m else NOT_RECORDED,
        started_utc=r.get("started_utc"), cpu_s=float(r["cpu_s"]), wall_s=float(r["wall_s"]))
