"""Shifted worlds: the frozen policies of a grid and the heuristics on shifted copies of its world.

A shift family (``src/ilets/configs/shifts.yaml``) names a source grid (the per-server
learners' cells), the learners and heuristics to compare, and a list of shifts, each moving
one factor of the world: the arrival rate, the bursts, a trend, the CPU-request mix, task
lengths, deadlines, the objective weight theta, the fleet's speed or power ranges, or the
fleet size the policy was trained at. For every shift, fleet size and seed, the final
policy of each learner cell with that seed schedules the shifted online half frozen and
greedy (:func:`ilets.study.evaluate.evaluate`), and each heuristic schedules the same tasks:
every comparison is paired. One JSON row per evaluation, written atomically, so a run
resumes where it stopped; :func:`collect` gathers them into ``shifts.parquet``.

``python -m ilets.study.shifts --source results/per-server --out results/shifts`` runs it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from ilets.cell_pack import has_cells
from ilets.config import HEURISTICS, ConfigError, RunConfig, WorkloadConfig
from ilets.config.strict import merge, read_yaml

#: The shift family shipped with the package.
DEFAULT_FAMILY = Path(__file__).resolve().parents[1] / "configs" / "shifts.yaml"
#: The metrics a row keeps from an evaluation's ``metrics.json``.
ROW_METRICS = ("avg_response_s", "success_rate", "energy_kwh", "mean_reward", "cpu_s", "wall_s")
#: How a learner runs in a shifted world: its final policy frozen and greedy; continuing to
#: learn online from that policy (``RunConfig.warm_start``) as plain PPO (method ``drl``); or
#: the same with OAIL's online imitation (method ``ilets-``). A heuristic's rows say "heuristic".
CONDITIONS = {"frozen": None, "online": "drl", "online-oail": "ilets-"}
#: What a row keeps of its :func:`ilets.study.run.system_info` (as JSON): what provenance reads.
SYSTEM_KEYS = ("commit", "dirty", "cpu_model", "cores", "cpu_id", "numerics", "started_utc")
#: The sections of the run config a shift may change.
SECTIONS = ("workload", "reward", "fleet")


@dataclasses.dataclass(frozen=True)
class Shift:
    """One shifted world: what moves, and how."""

    name: str
    factor: str  #: the factor that moves ("none" for the unshifted reference)
    changes: dict[str, dict[str, Any]]  #: section -> field -> value, over the cell's own config
    train_servers: int | None = None  #: the fleet size whose policies run here (None: the same)
    servers: int | None = None  #: run at this fleet size instead of the family's
    #: section -> field -> value for a learner trained anew (the expert-quality shift): the
    #: source cell's config with these changes runs as a cell of its own, whose final policy
    #: then takes the source cell's place. Empty: the source cell's policy runs as it is.
    train: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    learners: tuple[str, ...] | None = None  #: the learners this shift applies to (None: the family's)


@dataclasses.dataclass(frozen=True)
class ShiftFamily:
    """A declared family of shifts and what runs in each (:data:`DEFAULT_FAMILY`)."""

    name: str
    description: str
    source: str  #: the profile of the grid whose cells supply the policies
    learners: tuple[str, ...]
    heuristics: tuple[str, ...]
    servers: tuple[int, ...]
    seeds: tuple[int, ...]
    shifts: tuple[Shift, ...]
    conditions: tuple[str, ...] = ("frozen",)  #: of :data:`CONDITIONS`
    #: the learners that also run the online conditions (default: every learner). Each online
    #: run is a learner cell of its own, so a family may keep them to the one learner whose
    #: continuation answers its question.
    online_learners: tuple[str, ...] | None = None

    @property
    def continuing(self) -> tuple[str, ...]:
        """The learners that run the online conditions."""
        return self.learners if self.online_learners is None else self.online_learners

    def learners_of(self, shift: Shift) -> tuple[str, ...]:
        """The learners that run in ``shift`` (frozen)."""
        return self.learners if shift.learners is None else shift.learners


@dataclasses.dataclass(frozen=True)
class Job:
    """One evaluation: an actor on one shifted world, fleet size and seed."""

    shift: Shift
    actor: str  #: a learner (its cell's policy) or a heuristic
    servers: int
    seed: int
    condition: str = "heuristic"  #: of :data:`CONDITIONS` for a learner

    @property
    def key(self) -> str:
        how = "" if self.condition in ("heuristic", "frozen") else f"@{self.condition}"
        return f"{self.shift.name}--{self.actor}{how}-M{self.servers}-s{self.seed}"

    @property
    def train_servers(self) -> int:
        return self.shift.train_servers or self.servers


_FAMILY_KEYS = {"name", "description", "source", "learners", "heuristics", "servers", "seeds", "shifts"}
_OPTIONAL_KEYS = {"conditions", "online_learners"}
_SHIFT_KEYS = {"factor", "changes", "train_servers", "servers", "train", "learners"}
#: The sections of the run config a learner trained anew may change (:attr:`Shift.train`).
TRAIN_SECTIONS = ("oinpt", "experts", "ppo", "workload")


def load_family(path: str | Path = DEFAULT_FAMILY) -> ShiftFamily:
    """A validated :class:`ShiftFamily` from YAML; a wrong key or value raises
    :class:`ilets.config.ConfigError` naming the file and the field."""
    from ilets.study.profiles import method_defaults

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: shift family not found")
    data = read_yaml(path)
    where = str(path)
    if not isinstance(data, dict) or _FAMILY_KEYS - set(data) or set(data) - _FAMILY_KEYS - _OPTIONAL_KEYS:
        have = set(data) if isinstance(data, dict) else set()
        raise ConfigError(f"{where}: expected the keys {sorted(_FAMILY_KEYS)} (and optionally "
                          f"{sorted(_OPTIONAL_KEYS)}); missing {sorted(_FAMILY_KEYS - have)}, unknown "
                          f"{sorted(have - _FAMILY_KEYS - _OPTIONAL_KEYS)}")
    conditions = tuple(data.get("conditions") or ("frozen",))
    if set(conditions) - set(CONDITIONS):
        raise ConfigError(f"{where}: conditions: expected some of {list(CONDITIONS)}, got {list(conditions)}")
    shifts = []
    for name, spec in (data["shifts"] or {}).items():
        at = f"{where}: shifts.{name}"
        if not isinstance(spec, dict) or set(spec) - _SHIFT_KEYS or "factor" not in spec:
            raise ConfigError(f"{at}: expected a mapping with 'factor' and optionally {sorted(_SHIFT_KEYS - {'factor'})}, "
                              f"got {spec!r}")
        changes = spec.get("changes") or {}
        unknown = set(changes) - set(SECTIONS)
        if unknown:
            raise ConfigError(f"{at}.changes: expected sections among {list(SECTIONS)}, got {sorted(unknown)}")
        # every change must be a field the config has, with a value it accepts
        merge(WorkloadConfig(), changes.get("workload"), f"{at}.changes.workload").validate(f"{at}.changes.workload")
        merge(method_defaults(), {k: v for k, v in changes.items() if k != "workload"}, f"{at}.changes").validate(
            f"{at}.changes")
        train = spec.get("train") or {}
        if not isinstance(train, dict) or set(train) - set(TRAIN_SECTIONS):
            raise ConfigError(f"{at}.train: expected sections among {list(TRAIN_SECTIONS)}, got {train!r}")
        merge(method_defaults(), train, f"{at}.train").validate(f"{at}.train")
        learners = _among_learners(spec.get("learners"), data, f"{at}.learners")
        shifts.append(Shift(name=str(name), factor=str(spec["factor"]), changes=changes,
                            train_servers=spec.get("train_servers"), servers=spec.get("servers"), train=train,
                            learners=None if learners is None else tuple(learners)))
    if not shifts or shifts[0].factor != "none":
        raise ConfigError(f"{where}: shifts: expected the unshifted reference (factor: none) first")
    for key in ("learners", "heuristics"):
        bad = [m for m in data[key] if (str(m).partition("@")[0] not in HEURISTICS) == (key == "heuristics")]
        if bad:
            raise ConfigError(f"{where}: {key}: {bad} are not {key}")
    online = _among_learners(data.get("online_learners"), data, f"{where}: online_learners")
    return ShiftFamily(name=str(data["name"]), description=str(data["description"]), source=str(data["source"]),
                       learners=tuple(data["learners"]), heuristics=tuple(data["heuristics"]),
                       servers=tuple(int(s) for s in data["servers"]), seeds=tuple(int(s) for s in data["seeds"]),
                       shifts=tuple(shifts), conditions=conditions,
                       online_learners=None if online is None else tuple(online))


def _among_learners(value: Any, data: dict, at: str) -> list | None:
    """``value`` (a family's or a shift's learner list; None: not given) if every name is one
    of the family's learners, else a :class:`ConfigError` naming ``at``."""
    if value is not None and (not isinstance(value, list) or set(value) - set(data["learners"])):
        raise ConfigError(f"{at}: expected a list among the learners {list(data['learners'])}, got {value!r}")
    return value


def plan(family: ShiftFamily) -> list[Job]:
    """Every evaluation of ``family``, in a fixed order: seed by seed, so that a run stopped
    early leaves whole seeds of every shift rather than every seed of some; within a seed the
    one-pass evaluations (frozen policies, heuristics) of every shift before the online runs,
    each of which trains a cell."""
    jobs: list[Job] = []
    for seed in family.seeds:
        worlds = [(shift, servers) for shift in family.shifts
                  for servers in ((shift.servers,) if shift.servers else family.servers)]
        for shift, servers in worlds:
            if "frozen" in family.conditions:
                jobs += [Job(shift, actor, servers, seed, "frozen") for actor in family.learners_of(shift)]
            jobs += [Job(shift, actor, servers, seed) for actor in family.heuristics]
        online = [how for how in family.conditions if how != "frozen"]
        jobs += [Job(shift, actor, servers, seed, how) for shift, servers in worlds
                 for actor in family.continuing if actor in family.learners_of(shift) for how in online]
    return jobs


def source_cell(source: Path, learner: str, servers: int, seed: int) -> Path:
    """The cell of ``learner`` at ``servers`` and ``seed`` in the grid ``source``: a method
    (its main-grid cell) or ``method@variant`` (that variant's cell, e.g. ``drl+@per-server``
    of the worlds grid, where both policy designs share the method names)."""
    from ilets.study.results import finished_cells
    from ilets.study.run import parse_cell_name

    method, _, variant = learner.partition("@")
    for name in finished_cells(source):
        f = parse_cell_name(name)
        if (f["method"], f["variant"], f["servers"], f["seed"]) == (method, variant, servers, seed):
            return Path(source) / "cells" / name
    raise FileNotFoundError(f"{source}: no finished {learner} cell at {servers} servers, seed {seed}")


def online_config(job: Job, cell: Path) -> RunConfig:
    """The run of a learner that keeps learning in the shifted world: ``cell``'s own config,
    the shift's changes, the job's fleet size, and the condition's method warm-started from
    ``cell``'s final policy (:data:`CONDITIONS`)."""
    from ilets.study.verify import recorded_config

    base = recorded_config(cell)
    cfg = dataclasses.replace(base, method=CONDITIONS[job.condition], warm_start=str(cell),
                              fleet=dataclasses.replace(base.fleet, servers=job.servers),
                              variant=f"shift-{job.shift.name}-{job.actor}")
    return merge(cfg, dict(job.shift.changes), f"shift {job.shift.name}").validate(f"shift {job.shift.name}")


def run_job(job: Job, source: Path, out: Path) -> dict[str, Any]:
    """One evaluation as a row: the job, where its policy came from, and :data:`ROW_METRICS`.
    A frozen policy or a heuristic schedules the shifted online half once
    (:func:`ilets.study.evaluate.evaluate`); a learner that keeps learning runs as a cell of
    its own under ``out/cells`` (:func:`online_config`)."""
    from ilets.study.evaluate import evaluate, export_policy
    from ilets.study.run import run_cell, system_info
    from ilets.study.verify import recorded_config
    from ilets.workloads.workload import load_workload

    learner = job.actor not in HEURISTICS
    reference = source_cell(source, job.actor if learner else source_learner(source), job.train_servers, job.seed)
    trained: dict[str, Any] = {}
    if learner and job.shift.train:
        reference = trained_cell(job, reference, Path(out))
        if job.condition == "frozen":  # the training's cost, counted once (on the frozen row)
            trained = {"train_cpu_s": float(json.loads((reference / "metrics.json").read_text())["cpu_s"])}
    if learner and job.condition != "frozen":
        folder = run_cell(online_config(job, reference), Path(out))
        metrics = json.loads((folder / "metrics.json").read_text())
        system = json.loads((folder / "system.json").read_text())
        tasks = int(metrics["tasks"])
    else:
        system = system_info()
        if learner:
            export_policy(reference)  # a flat cell keeps only model.zip: write its policy/ once
        recorded = recorded_config(reference)
        workload = merge(recorded.workload, job.shift.changes.get("workload"), f"shift {job.shift.name}")
        workload.validate(f"shift {job.shift.name}.workload")
        online = load_workload(workload, job.seed).online
        rest = {k: v for k, v in job.shift.changes.items() if k != "workload"}
        # the source cell's own fleet: the fixed data centre of a main grid, each seed's of a worlds grid
        metrics = evaluate(reference if learner else job.actor, online, job.servers, seed=job.seed,
                           fleet_seed=recorded.fleet.seed, changes=rest).metrics
        tasks = len(online)
    return {"key": job.key, "shift": job.shift.name, "factor": job.shift.factor, "actor": job.actor,
            "kind": "learner" if learner else "heuristic", "condition": job.condition, "servers": job.servers,
            "train_servers": job.train_servers if learner else None, "seed": job.seed,
            "cell": reference.name if learner else None, "tasks": tasks,
            **{m: float(metrics[m]) for m in ROW_METRICS},
            # where and how it ran, for the provenance (ilets.host.provenance_of)
            "system": json.dumps({k: system.get(k) for k in SYSTEM_KEYS}), **trained}


def trained_cell(job: Job, source: Path, out: Path) -> Path:
    """The learner of ``job`` trained anew for its shift (:attr:`Shift.train`): the cell
    ``source``'s config with the shift's training changes, run (once, under the cell's lock,
    whichever job needs it first) under ``out/cells``."""
    from ilets.study.run import run_cell
    from ilets.study.verify import recorded_config

    base = dataclasses.replace(recorded_config(source), variant=f"shift-{job.shift.name}")
    cfg = merge(base, dict(job.shift.train), f"shift {job.shift.name}.train").validate(f"shift {job.shift.name}.train")
    return run_cell(cfg, out)


def source_learner(source: Path) -> str:
    """A learner with cells in ``source``, whose config supplies the world a heuristic runs in
    (every learner cell of one grid shares the workload)."""
    from ilets.study.results import finished_cells
    from ilets.study.run import parse_cell_name

    fields = [parse_cell_name(n) for n in finished_cells(source)]
    learners = sorted({f["method"] + (f"@{f['variant']}" if f["variant"] else "") for f in fields
                       if f["method"] not in HEURISTICS})
    if not learners:
        raise FileNotFoundError(f"{source}: no finished learner cell to take the world from")
    return learners[0]  # a main-grid cell first (no variant), as source_cell reads it


def _run_and_write(job: Job, source: Path, rows: Path) -> str:
    from ilets.study.run import atomic_json

    atomic_json(rows / f"{job.key}.json", run_job(job, source, rows.parent))
    return job.key


def run_family(family: ShiftFamily, source: Path, out: Path, workers: int = 2, max_jobs: int | None = None,
               progress: bool = True, only: tuple[str, ...] = (), conditions: tuple[str, ...] = ()) -> pd.DataFrame:
    """Run the evaluations of ``family`` not yet in ``out/rows`` (at most ``max_jobs``; with
    ``only``, those of the shifts it names; with ``conditions``, those of these conditions,
    ``heuristic`` for the heuristics), in ``workers`` processes, then :func:`collect`. A
    killed run resumes where it stopped."""
    from tqdm import tqdm

    unknown = set(only) - {s.name for s in family.shifts}
    if unknown:
        raise ConfigError(f"--shifts: {sorted(unknown)} are not shifts of the family {family.name!r}; expected "
                          f"some of {[s.name for s in family.shifts]}")
    kinds = (*family.conditions, "heuristic")
    if set(conditions) - set(kinds):
        raise ConfigError(f"--conditions: {sorted(set(conditions) - set(kinds))} are not conditions of the family "
                          f"{family.name!r}; expected some of {list(kinds)}")
    rows = Path(out) / "rows"
    rows.mkdir(parents=True, exist_ok=True)
    todo = [j for j in plan(family) if not (rows / f"{j.key}.json").is_file()
            and (not only or j.shift.name in only) and (not conditions or j.condition in conditions)][:max_jobs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_run_and_write, j, Path(source), rows) for j in todo]
        for f in tqdm(futures, desc=f"shifts {family.name}", unit="eval", disable=not progress, file=sys.stderr):
            f.result()
    return collect(out, family, source)


def collect(out: Path, family: ShiftFamily | None = None, source: Path | None = None) -> pd.DataFrame:
    """The rows of ``out/rows`` as one table, written to ``out/shifts.parquet`` with a
    provenance record (``out/shifts.json``: commit, date, machine, CPU-hours, the family)."""
    import datetime

    from ilets.host import cpu_model, machine_label
    from ilets.study.run import atomic_json, source_version

    out = Path(out)
    files = sorted((out / "rows").glob("*.json"))
    table = pd.DataFrame([json.loads(p.read_text()) for p in files])
    if table.empty:
        return table
    table = table.sort_values(["shift", "servers", "seed", "kind", "actor"]).reset_index(drop=True)
    table.to_parquet(out / "shifts.parquet", index=False)
    record = {"made_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "code": source_version(), "machine": machine_label(cpu_model() or "an unknown CPU", os.cpu_count()),
              "evaluations": int(len(table)), "cpu_hours": round(cpu_seconds(table) / 3600, 6),
              "source": str(source) if source else None,
              "family": dataclasses.asdict(family) if family else None}
    atomic_json(out / "shifts.json", record)
    return table


def row_cpu_s(row: dict[str, Any]) -> float:
    """The CPU seconds a row cost: its evaluation or the learner that kept learning
    (``cpu_s``), plus the learner trained anew for its shift (``train_cpu_s``, on one row each)."""
    extra = row.get("train_cpu_s")
    return float(row["cpu_s"]) + (float(extra) if extra is not None and extra == extra else 0.0)  # NaN: none


def cpu_seconds(table: pd.DataFrame) -> float:
    """The CPU seconds of a table of rows (:func:`row_cpu_s` summed)."""
    return float(sum(row_cpu_s(r) for r in table.to_dict("records")))


def ship_shifts(src: Path, dest: Path, family: ShiftFamily, note: str) -> dict[str, Any]:
    """Copy the gathered results of ``src`` (``shifts.parquet``, ``shifts.json`` and the cells
    of learners that kept learning, as one table: :func:`ilets.cell_pack.pack_folder`) to
    ``dest`` (replaced), with a ``PROVENANCE.json`` in the
    study's one schema (:func:`ilets.host.provenance_of`, from each row's own record of where
    it ran: a row without one counts as unrecorded) that also counts evaluations as units of
    the family's plan (README's shipped-results table reads it)."""
    import shutil

    from ilets.cell_pack import pack_folder
    from ilets.files import PROVENANCE
    from ilets.host import provenance_of
    from ilets.study.run import atomic_json
    from ilets.study.scenario import compute_record

    src, dest = Path(src), Path(dest)
    table = pd.read_parquet(src / "shifts.parquet")
    systems = table["system"] if "system" in table else pd.Series([None] * len(table))
    records = [compute_record(json.loads(system) if isinstance(system, str) else {}, {**row, "cpu_s": row_cpu_s(row)})
               for system, row in zip(systems, table.to_dict("records"))]
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for name in ("shifts.parquet", "shifts.json"):
        shutil.copy2(src / name, dest / name)
    if (src / "cells").is_dir():  # the cells its runs trained, as one table (ilets.cell_pack)
        shutil.copytree(src / "cells", dest / "cells", ignore=shutil.ignore_patterns(".*", "*.zip"))
        pack_folder(dest)
    prov = {**provenance_of(records), "units": len(table), "planned_units": len(plan(family)), "note": note}
    atomic_json(dest / PROVENANCE, prov)
    return prov


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ilets.study.shifts", description=__doc__.splitlines()[0])
    ap.add_argument("--family", default=str(DEFAULT_FAMILY), help="shift family YAML (default: the shipped one)")
    ap.add_argument("--source", default="", help="the grid whose learner cells supply the policies")
    ap.add_argument("--out", required=True, help="folder for the rows and shifts.parquet (resumable)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-jobs", type=int, default=None, help="run at most this many evaluations")
    ap.add_argument("--shifts", default="", help="comma-separated shift names: run only theirs (default: all)")
    ap.add_argument("--conditions", default="", help="comma-separated conditions (frozen, online, online-oail, "
                    "heuristic): run only these (default: all)")
    ap.add_argument("--gather", action="store_true", help="only gather --out's rows into shifts.parquet and "
                    "shifts.json (what a stopped run left; --source is recorded as given)")
    ap.add_argument("--ship", default=None, help="only copy --out's gathered results to this folder (replaced)")
    ap.add_argument("--note", default="", help="the note stored with the shipped provenance")
    args = ap.parse_args(argv)
    try:
        family = load_family(args.family)
        if args.gather:  # a run stopped before its end gathers nothing: gather its rows now
            if not (Path(args.out) / "rows").is_dir():
                raise FileNotFoundError(f"{args.out}: --gather: no rows/ folder (expected a shifts run's --out)")
            table = collect(Path(args.out), family, Path(args.source) if args.source else None)
            print(f"{len(table)} evaluations in {Path(args.out) / 'shifts.parquet'}")
            return 0
        if args.ship:  # what the run gathered (shifts.json names the commit that computed it)
            print(json.dumps(ship_shifts(Path(args.out), Path(args.ship), family, args.note), indent=1))
            return 0
        if not args.source or not has_cells(Path(args.source)):
            raise ConfigError(f"{args.source}: --source: expected a grid folder with cells/")
        if args.workers < 1 or (args.max_jobs is not None and args.max_jobs < 1):
            raise ConfigError("--workers and --max-jobs: expected >= 1")
        only = tuple(n for n in args.shifts.split(",") if n)
        conditions = tuple(n for n in args.conditions.split(",") if n)
        table = run_family(family, Path(args.source), Path(args.out), args.workers, args.max_jobs, only=only,
                           conditions=conditions)
    except (ConfigError, FileNotFoundError) as err:
        print(f"ilets: {err}", file=sys.stderr)
        return 2
    print(f"{len(table)} evaluations in {Path(args.out) / 'shifts.parquet'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
