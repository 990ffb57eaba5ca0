"""The scenarios the study runs, behind one protocol: one grid runner, store, provenance,
shipping and status vocabulary for all of them.

A :class:`Scenario` says what the study cannot know by itself: its profile (config) type and
how a profile is loaded, the cells a profile plans and how each is named on disk, how one
cell runs and when it counts as done, and how the finished cells become the results store
(its metrics). Everything else is written once and shared: the resumable, lock-claimed grid
(:func:`ilets.study.grid.run_grid`), failed attempts (``OUT/failed``,
:func:`ilets.study.run.record_failure`, status :data:`STATUS_FAILED`), the compute table
(:func:`ilets.study.results.compute_table`), the provenance schema
(:func:`ilets.host.provenance_of`), shipping (:func:`ilets.study.shipping.ship`) and the
re-run of recorded cells (:func:`ilets.study.verify.verify`), which asks the scenario how a
recorded cell is read back, re-run and compared.

Registered by import path (:data:`SCENARIOS`, by the name ``ilets grid --scenario`` takes),
and resolved when first asked for (:func:`get_scenario`): a scenario is a plug-in package that
the study, the report's core and the agents never import (tests/test_layers.py). What else the
study needs of one (its pilot, how many cells a shipped folder planned, which of its folders the
book shows verified) it asks the scenario object too.

* ``cloud`` (the default): the paper's study, :class:`CloudScenario`. Profiles
  :mod:`ilets.study.profiles`; a cell is a :class:`ilets.config.RunConfig`, written as the folder
  ``cells/<method>[@<variant>]-M<servers>-s<seed>-<digest>/`` (:mod:`ilets.study.run`); store
  ``store/metrics.parquet`` and ``store/curves.parquet`` (:mod:`ilets.study.results`).
* ``gridcommand``: a data centre following a power-grid operator's command, a scenario
  package of its own (its env, experts, study and report parts): a cell is one JSON file
  ``cells/<method>-M<servers>-s<seed>.json``, its store ``store/results.parquet``.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, TypeVar

from ilets import cell_pack
from ilets.config import ConfigError, to_dict
from ilets.host import ComputeRecord
from ilets.numerics import recorded_mode
from ilets.study.profiles import settings_key

# The scenarios' own modules are imported where they are used: the ``ilets`` command lists
# the registered names when it parses its arguments, and torch (through a scenario's
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

    def settings_key(self, profile: ProfileT) -> str:
        """A digest of every setting of ``profile`` that decides its cells' numbers, leaving out
        what only chooses which cells run (:data:`SELECTION_FIELDS`): two grids of one name may
        share a folder at once only when their keys agree (:func:`ilets.study.grid.claim_folder`)."""
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

    def run_cell(self, cell: CellT, out: Path, wait: bool, processes: int = 1) -> str:
        """Compute the cell into ``out`` under its lock (:func:`ilets.study.run.run_claimed`):
        :data:`ilets.study.run.RAN`, ``DONE`` or ``BUSY``. A failure is recorded as a failed
        attempt (:func:`ilets.study.run.record_failure`) and raised. ``processes``: how many
        processes the cell may use for work it splits; where and how fast it runs never
        changes its numbers."""
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

    # what ``ilets verify`` needs to re-run a recorded cell and compare (ilets.study.verify)

    def recorded_cells(self, folder: Path) -> list[str]:
        """The names of the recorded cells of ``folder/cells`` (hidden entries left out), sorted."""
        ...

    def method_of(self, name: str) -> str:
        """The method of the cell named ``name`` (``ValueError`` for a name that is no cell's)."""
        ...

    def method_names(self) -> tuple[str, ...]:
        """Every method a cell of this scenario may run."""
        ...

    def cell_path(self, folder: Path, name: str) -> Path:
        """Where the cell ``name`` of results folder ``folder`` is recorded (folder or file)."""
        ...

    def recorded_cell(self, path: Path) -> CellT:
        """The cell a recorded cell ran, after checking every file the comparison reads;
        ``ValueError`` (or :class:`ConfigError`) naming the file otherwise."""
        ...

    def rerun_cell(self, cell: CellT, scratch: Path, progress: bool = False, processes: int = 1) -> tuple[Path, str]:
        """Compute ``cell`` into the results folder ``scratch`` (on ``processes`` processes,
        :meth:`run_cell`): where it is recorded there, and the status of :meth:`run_cell`
        (:data:`ilets.study.run.RAN` when computed now)."""
        ...

    def compare_cells(self, recorded: Path, rerun: Path) -> tuple[list[str], list[str], float]:
        """``(differences, added, wall_s)``: every difference between two records of one cell
        (``what: recorded -> re-run`` lines; empty when they reproduce), what only the re-run
        has (recorded before it existed: not a difference), and the re-run's wall seconds."""
        ...

    def cell_system(self, path: Path) -> dict[str, Any]:
        """The machine record a recorded cell was computed on (its CPU model and the
        floating-point kernels, :func:`ilets.numerics.recorded_mode`, among it); ``{}`` when
        absent or unreadable."""
        ...

    # what the ``ilets`` command and the report ask of a scenario beside its grids

    #: the file a finished pilot folder of the scenario holds (``ilets pilot``, shipped by
    #: ``ilets ship``); None when the scenario has no pilot command
    pilot_file: str | None

    def run_pilot(self, profile: ProfileT, out: Path, log: Callable[[str], None]) -> dict:
        """Run (or resume) the scenario's pilot for ``profile`` into ``out``; its result (with
        ``stages``: each ``expert``, ``option`` and the value ``chosen``). :class:`ScenarioError`
        for a folder it cannot resume, or when the scenario has none (:attr:`pilot_file`)."""
        ...

    def ship_pilot(self, src: Path, dest: Path, note: str) -> dict:
        """Ship the finished pilot folder ``src`` (it holds :attr:`pilot_file`) into ``dest``,
        as :func:`ilets.study.shipping.ship` ships a grid; its provenance."""
        ...

    def planned_cell_count(self, folder: Path) -> int | None:
        """How many cells the grid that made ``folder`` planned, read from what the scenario
        writes there besides the grid's manifest (:func:`ilets.study.grid.manifest_cell_count`,
        read first); None when it cannot tell."""
        ...

    def verified_folders(self) -> list[Path]:
        """The scenario's shipped results folders whose recorded re-runs the book shows
        (chapter 10), in order; a folder that is absent or holds no cells is left out by the
        caller."""
        ...


class ScenarioError(ValueError):
    """A folder or file a scenario's own command (its pilot) cannot use (the message names it)."""


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

    def settings_key(self, profile: Any) -> str:
        """:func:`settings_key` of the profile: its run settings, variants and worlds."""
        return settings_key(to_dict(profile))

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

    def run_cell(self, cell: Any, out: Path, wait: bool, processes: int = 1) -> str:
        """:func:`ilets.study.run.run_cell_status` (a paper cell splits nothing: ``processes`` is not used)."""
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
        """Every cell folder (not hidden, with a ``metrics.json``) of ``folder``, in either
        layout (:mod:`ilets.cell_pack`), from its ``system.json`` (absent in the oldest cells:
        counted as unrecorded) and ``metrics.json``."""
        root = Path(folder) / "cells"
        # a folder without metrics.json is no cell (a user's cells/notes): not counted
        found = [root / name for name in cell_pack.entries(folder) if cell_pack.is_file(root / name / "metrics.json")]
        out = []
        for cell in found:
            system = json.loads(cell_pack.read_text(cell / "system.json")) \
                if cell_pack.is_file(cell / "system.json") else {}
            out.append(compute_record(system, json.loads(cell_pack.read_text(cell / "metrics.json"))))
        return out

    def ship_cell(self, cell: Path, dest: Path) -> None:
        """:func:`ilets.study.run.ship_cell_folder`: every file but the model, latency thinned."""
        from ilets.study import run

        run.ship_cell_folder(cell, Path(dest) / Path(cell).name)

    def ship_extras(self, src: Path, dest: Path, finished: list[Path]) -> None:
        """``events.json`` (:func:`ilets.study.workload_events.ship_events`)."""
        from ilets.study.workload_events import ship_events

        ship_events(src, dest, finished)

    # --- ilets verify ---

    def recorded_cells(self, folder: Path) -> list[str]:
        """The cell folders of ``folder/cells`` (:func:`_cell_folders`: hidden ones and folders
        not named as cells left out)."""
        return [p.name for p in _cell_folders(folder)]

    def method_of(self, name: str) -> str:
        """:func:`ilets.study.run.parse_cell_name`'s method."""
        from ilets.study.run import parse_cell_name

        return parse_cell_name(name)["method"]

    def method_names(self) -> tuple[str, ...]:
        """The learners and the heuristics (:data:`ilets.config.METHODS`, :data:`ilets.config.HEURISTICS`)."""
        from ilets.config import HEURISTICS, METHODS

        return tuple(METHODS) + tuple(HEURISTICS)

    def cell_path(self, folder: Path, name: str) -> Path:
        """``folder/cells/<name>`` (in either layout: :mod:`ilets.cell_pack`)."""
        return Path(folder) / "cells" / name

    def recorded_cell(self, path: Path) -> Any:
        """The :class:`ilets.config.RunConfig` a recorded cell folder ran with, after checking
        every file :func:`compare_folders` reads (:func:`ilets.study.run.cell_problem`: present,
        complete, the config's digest the cell's)."""
        from ilets.config import RunConfig, from_dict
        from ilets.config.strict import parse_yaml
        from ilets.study.run import cell_problem

        path = Path(path)
        problem = cell_problem(path)
        if problem is not None:
            raise ValueError(problem)
        config = path / "config.yaml"
        return from_dict(RunConfig, parse_yaml(cell_pack.read_text(config), config), str(config)).validate(str(config))

    def rerun_cell(self, cell: Any, scratch: Path, progress: bool = False, processes: int = 1) -> tuple[Path, str]:
        """:func:`ilets.study.run.run_cell_status` without the model (a re-run keeps only what is
        compared; a paper cell splits nothing: ``processes`` is not used)."""
        from ilets.study import run

        return run.run_cell_status(cell, scratch, command=f"ilets verify {run.cell_name(cell)}", progress=progress,
                                   save_model=False)

    def compare_cells(self, recorded: Path, rerun: Path) -> tuple[list[str], list[str], float]:
        """:func:`compare_folders`, :func:`added_metrics` and the re-run's ``wall_s``."""
        wall = json.loads(cell_pack.read_text(Path(rerun) / "metrics.json")).get("wall_s", float("nan"))
        return compare_folders(recorded, rerun), added_metrics(recorded, rerun), wall

    def cell_system(self, path: Path) -> dict[str, Any]:
        """The cell's ``system.json`` (``{}`` when absent or unreadable)."""
        try:
            system = json.loads(cell_pack.read_text(Path(path) / "system.json"))
        except (OSError, ValueError):
            system = {}
        return system if isinstance(system, dict) else {}

    # --- beside the grids ---

    #: none: the paper study's pilot is a grid profile (``ilets grid --profile pilot``)
    pilot_file: str | None = None

    def run_pilot(self, profile: Any, out: Path, log: Callable[[str], None]) -> dict:
        """None to run: :class:`ScenarioError`."""
        raise ScenarioError("scenario 'cloud' has no pilot command; its pilot is a grid profile "
                            "(ilets grid --profile pilot)")

    def ship_pilot(self, src: Path, dest: Path, note: str) -> dict:
        """None to ship: :class:`ScenarioError`."""
        raise ScenarioError(f"{src}: scenario 'cloud' has no pilot folders; ship a grid's results folder")

    def planned_cell_count(self, folder: Path) -> int | None:
        """None: a paper-study grid's count is its manifest's."""
        return None

    def verified_folders(self) -> list[Path]:
        """The reduced-scale, per-server and worlds grids the book reads beside the main results
        (:mod:`ilets.study.results`; the main folder is the caller's)."""
        from ilets.study.results import per_server_dir, scale_dir, worlds_dir

        return [scale_dir(), per_server_dir(), worlds_dir()]


def _cell_folders(folder: Path) -> list[Path]:
    """The folders of ``folder/cells`` named as cells (:func:`ilets.study.run.parse_cell_name`),
    sorted: hidden ones (runs in flight) and anything else a user put there (``cells/notes``)
    are not cells, and are left alone as the grid leaves them."""
    from ilets.study.run import parse_cell_name

    root = Path(folder) / "cells"
    found = []
    for name in cell_pack.entries(folder):
        if cell_pack.is_dir(root / name):
            try:
                parse_cell_name(name)
            except ValueError:
                continue
            found.append(root / name)
    return found


def compute_record(system: Mapping[str, Any], metrics: Mapping[str, Any]) -> ComputeRecord:
    """What provenance needs of one unit of work, from its :func:`ilets.study.run.system_info`
    (empty when it predates that record: counted as unrecorded) and its metrics' CPU and wall
    seconds."""
    return ComputeRecord(
        commit=system.get("commit"), dirty=system.get("dirty"),
        cpu_model=system.get("cpu_model", "unknown CPU"), cores=system.get("cores", "?"),
        cpu_id=system.get("cpu_id", ""), numerics=recorded_mode(dict(system)), started_utc=system.get("started_utc"),
        cpu_s=float(metrics.get("cpu_s", 0.0)), wall_s=float(metrics.get("wall_s", 0.0)))


#: metrics that describe the machine's speed, not the result
HOST_KEYS = frozenset({"wall_s", "cpu_s", "decision_p50_ms", "decision_p95_ms", "demo_seconds", "oinpt_seconds",
                       "cpu_demos_s", "cpu_bc_s", "cpu_rollout_s", "cpu_update_s", "oail_expert_cpu_s",
                       "oail_imitation_cpu_s"})


def added_metrics(recorded: Path, rerun: Path) -> list[str]:
    """Metrics the re-run writes that the recorded cell does not have: added to the code after
    the cell was computed, so there is nothing to compare them with (:func:`compare_folders`
    skips them; a metric the record has and the re-run lacks is a difference)."""
    a = json.loads(cell_pack.read_text(Path(recorded) / "metrics.json"))
    b = json.loads(cell_pack.read_text(Path(rerun) / "metrics.json"))
    return sorted(set(b) - set(a) - HOST_KEYS)


def compare_folders(recorded: Path, rerun: Path) -> list[str]:
    """The differences between two cell folders' results (empty when they reproduce):
    ``metrics.json`` except :data:`HOST_KEYS`, and ``curve.csv`` value for value.

    A metric only the re-run has is not a difference (:func:`added_metrics`)."""
    import io

    import pandas as pd

    recorded, rerun = Path(recorded), Path(rerun)
    out = []
    a = json.loads(cell_pack.read_text(recorded / "metrics.json"))
    b = json.loads(cell_pack.read_text(rerun / "metrics.json"))
    for key in sorted(set(a)):
        if key in HOST_KEYS:
            continue
        va, vb = a.get(key), b.get(key)
        if va != vb and not (isinstance(va, float) and isinstance(vb, float) and va != va and vb != vb):
            out.append(f"metrics.json {key}: {va!r} -> {vb!r}")
    ca, cb = (pd.read_csv(io.BytesIO(cell_pack.read_bytes(p / "curve.csv"))) for p in (recorded, rerun))
    if ca.shape != cb.shape or list(ca.columns) != list(cb.columns):
        out.append(f"curve.csv: shape {ca.shape} -> {cb.shape}")
    else:
        diff = (ca != cb) & ~(ca.isna() & cb.isna())
        if diff.to_numpy().any():
            row, col = next(zip(*diff.to_numpy().nonzero()))
            out.append(f"curve.csv: {int(diff.to_numpy().sum())} values differ, first at row {row} "
                       f"{ca.columns[col]}: {ca.iat[row, col]!r} -> {cb.iat[row, col]!r}")
    return out


# --- the registry ---------------------------------------------------------------------------

#: Every scenario the study runs, by name: where its :class:`Scenario` class lives
#: (``"module:Class"``). A new scenario is a package of its own and one row here.
SCENARIOS: dict[str, str] = {
    "cloud": "ilets.study.scenario:CloudScenario",
    "gridcommand": "ilets.gridcommand.study.scenario:GridCommandScenario",
}
#: The scenario of ``ilets grid`` and of the study's functions when none is named.
DEFAULT_SCENARIO = "cloud"
#: The scenarios resolved so far, by name (one object each).
_RESOLVED: dict[str, Scenario[Any, Any]] = {}


def get_scenario(scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> Scenario[Any, Any]:
    """The registered scenario named ``scenario``, its class imported from :data:`SCENARIOS`
    on first use (a scenario object is returned as it is); :class:`ConfigError` naming the
    registered ones for an unknown name."""
    if not isinstance(scenario, str):
        return scenario
    if scenario not in SCENARIOS:
        raise ConfigError(f"scenario: unknown {scenario!r}; expected one of {sorted(SCENARIOS)}")
    if scenario not in _RESOLVED:
        module, _, cls = SCENARIOS[scenario].partition(":")
        _RESOLVED[scenario] = getattr(importlib.import_module(module), cls)()
    return _RESOLVED[scenario]


def scenarios() -> list[Scenario[Any, Any]]:
    """Every registered scenario, in :data:`SCENARIOS`' order."""
    return [get_scenario(name) for name in SCENARIOS]


def scenario_hint(folder: Path, scenario: str | Scenario[Any, Any]) -> str:
    """`` (its cells are scenario 'X''s: add --scenario X)`` when none of ``folder``'s recorded
    cells are ``scenario``'s and some are another registered scenario's; empty otherwise
    (``ilets ship`` and ``ilets verify`` name a wrong ``--scenario`` the same way)."""
    sc = get_scenario(scenario)
    if sc.recorded_cells(Path(folder)):
        return ""
    other = [o for o in sorted(SCENARIOS) if o != sc.name and get_scenario(o).recorded_cells(Path(folder))]
    return f" (its cells are scenario {other[0]!r}'s: add --scenario {other[0]})" if other else ""
