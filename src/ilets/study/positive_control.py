"""The positive control: can each policy design clone each expert, and schedule as well frozen?

One *unit* is (expert, fleet size, seed). For it the expert's demonstrations are recorded on
the offline half in every observation layout at once, then each design of
:data:`DESIGNS` (policy network x layout) is cloned by ``imitation``'s BC with the same
budget, and the clone schedules the whole online half frozen and greedy. The unit's rows go
to ``OUT/units/<expert>-M<servers>-s<seed>.json`` (atomic, so a killed run resumes where it
stopped); ``OUT/store.parquet`` gathers them and ``OUT/PROVENANCE.json`` says where and when.

Run it as ``python -m ilets.study.positive_control --profile positive-control --out DIR``;
profiles are YAML (``configs/positive-control*.yaml``) read strictly into
:class:`ControlProfile`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ilets.agents.policy_io import save_policy
from ilets.config import ConfigError, RunConfig, bounded, check_config, from_dict, merge, read_yaml, to_dict

#: the designs compared: (policy network, observation layout)
DESIGNS = (("flat", "paper"), ("flat", "rich"), ("per-server", "per-server"))
#: experts cloned: two heuristics and the paper's GA+PSO
EXPERTS = ("earliest-finish", "greedy-cost", "ga+pso")
#: the heuristic a GA+PSO clone is set beside (it has no online form of its own)
GA_REFERENCE = "greedy-cost"
#: the metrics of a frozen clone and of its expert
METRICS = ("avg_response_s", "success_rate", "energy_kwh", "mean_reward")


@dataclass(frozen=True)
class ControlProfile:
    """What the positive control runs (every field from YAML; see ``configs/positive-control.yaml``)."""

    description: str = ""
    experts: tuple[str, ...] = bounded(EXPERTS, nonempty=True, choices=EXPERTS)
    servers: tuple[int, ...] = bounded((50, 100, 200), nonempty=True, ge=1, what="a fleet size")
    seeds: tuple[int, ...] = bounded((0, 1, 2), nonempty=True)
    #: cloned decisions per unit (an even stride over the offline half)
    demo_tasks: int = bounded(20_000, gt=0)
    heldout_tasks: int = bounded(1_500, gt=0)  #: held-out decisions per unit (never cloned)
    bc_epochs: int = bounded(40, gt=0)  #: the same BC budget for every design
    bc_batch_size: int = bounded(256, gt=0)
    bc_learning_rate: float = bounded(3e-3, gt=0)
    #: online tasks a *flat* clone schedules (0: all). Flat clones build queues of hundreds of
    #: seconds, and the exact simulator slows with queue length, so at paper scale they are
    #: scored on this prefix of the online half, beside their expert on the same tasks.
    flat_eval_tasks: int = bounded(0, ge=0, note="0: every online task")
    workers: int = bounded(2, gt=0)
    run: RunConfig = field(default_factory=RunConfig)  #: the base run configuration

    def validate(self, where: str) -> "ControlProfile":
        """Self once every field (the run's too) is in its declared range
        (:func:`ilets.config.check_config`); else a one-line :class:`ConfigError`."""
        return check_config(self, where)

    def units(self) -> list[tuple[str, int, int]]:
        """Every (expert, servers, seed), seed by seed (a run cut short still covers every
        expert and fleet size with its first seeds), largest fleets first within a seed."""
        return [(e, m, s) for s in self.seeds for m in sorted(self.servers, reverse=True) for e in self.experts]


def load_profile(name_or_path: str) -> ControlProfile:
    """A profile by name (``configs/<name>.yaml``) or path, read strictly."""
    path = Path(name_or_path)
    if not path.exists() and not path.suffix and "/" not in name_or_path:
        path = Path(__file__).resolve().parent.parent / "configs" / f"{name_or_path}.yaml"
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; expected a profile's YAML file")
    data = read_yaml(path)
    run = merge(RunConfig(), data.pop("run", {}) or {}, f"{path}.run")
    profile = from_dict(ControlProfile, {**data, "run": {}}, str(path))
    return dataclasses.replace(profile, run=run).validate(str(path))


def unit_name(expert: str, servers: int, seed: int) -> str:
    return f"{expert}-M{servers}-s{seed}"


def transfer_targets(profile: ControlProfile, servers: int) -> list[int]:
    """Fleet sizes a per-server clone trained on ``servers`` is also run on: the largest
    profile fleet from the smallest and back (none when the profile has one size)."""
    lo, hi = min(profile.servers), max(profile.servers)
    return [hi] if servers == lo < hi else [lo] if servers == hi > lo else []


def run_unit(profile: ControlProfile, expert: str, servers: int, seed: int, out: Path | None = None) -> list[dict]:
    """Clone ``expert`` with every design on one fleet and seed; one row per design, plus one
    per fleet-size transfer of the per-server clone (:func:`transfer_targets`). With ``out``,
    the per-server clone's weights go to ``out/policies/<unit>`` (:mod:`ilets.agents.policy_io`)."""
    import torch as th

    from ilets.agents.cloning import clone_scores, heuristic_demonstrations
    from ilets.agents.env import CloudSchedulingEnv
    from ilets.agents.methods import DecisionLog, drive, run_heuristic
    from ilets.agents.observation import StateSpec
    from ilets.agents.oinpt import Demonstrations, behaviour_clone, collect_demonstrations
    from ilets.agents.ppo import PPOPolicy, make_ppo
    from ilets.simulator.cloud import make_fleet
    from ilets.workloads.workload import load_workload

    th.set_num_threads(1)
    base = dataclasses.replace(profile.run, seed=seed, fleet=dataclasses.replace(profile.run.fleet, servers=servers))
    workload = load_workload(base.workload, seed)
    fleet = make_fleet(base.fleet, base.fleet.seed)
    layouts = sorted({layout for _, layout in DESIGNS})
    specs = {k: StateSpec.of(dataclasses.replace(base, observation=k)) for k in layouts}
    c0 = time.process_time()
    by_layout: dict[str, Demonstrations]
    if expert == "ga+pso":
        by_layout = {}
        for k in layouts:
            d = collect_demonstrations(workload.offline, fleet, "ga+pso", base.experts, base.reward,
                                       profile.demo_tasks, seed, specs[k], heldout=profile.heldout_tasks)
            by_layout[k] = d
        first = by_layout[layouts[0]]
        # collect_demonstrations records every server's cost, and the held-out decisions (heldout > 0)
        assert first.action_costs is not None and first.heldout is not None and \
            first.heldout.action_costs is not None, "ga+pso demonstrations without costs or held-out part"
        crit, held_crit = first.action_costs, first.heldout.action_costs
    else:
        cloned = heuristic_demonstrations(workload.offline, fleet, expert, base.reward, specs, profile.demo_tasks,
                                          profile.heldout_tasks, base.experts.miss_penalty)
        by_layout, crit, held_crit = cloned.by_layout, cloned.criterion, cloned.heldout_criterion
    reference = expert if expert != "ga+pso" else GA_REFERENCE
    references: dict[int, dict] = {}

    def online(policy: str):
        n = len(workload.online)
        if policy == "flat" and profile.flat_eval_tasks:
            n = min(n, profile.flat_eval_tasks)
        return workload.online.slice(0, n)

    def reference_metrics(tasks) -> dict:
        if len(tasks) not in references:
            ref = run_heuristic(dataclasses.replace(base, method=reference), dataclasses.replace(workload, online=tasks),
                                fleet)
            references[len(tasks)] = {**ref.log.final, "mean_reward": float(np.mean(ref.log.reward))}
        return references[len(tasks)]

    for policy in sorted({p for p, _ in DESIGNS}):
        reference_metrics(online(policy))
    # shared by the designs: each row carries its share, so the rows sum to the unit's CPU
    demo_cpu = (time.process_time() - c0) / len(DESIGNS)
    oinpt = dataclasses.replace(base.oinpt, bc_epochs=profile.bc_epochs, batch_size=profile.bc_batch_size,
                                learning_rate=profile.bc_learning_rate)
    rows = []
    for policy, layout in DESIGNS:
        c1 = time.process_time()
        cfg = dataclasses.replace(base, method="drl+", policy=policy, observation=layout, oinpt=oinpt).validate()
        tasks = online(policy)
        env = CloudSchedulingEnv(cfg, tasks=tasks, fleet=fleet)
        model = make_ppo(env, cfg.ppo, seed, policy, cfg.server_hidden)
        demos = by_layout[layout]
        assert demos.heldout is not None, "both recordings attach the held-out decisions"
        behaviour_clone(model, demos, cfg.oinpt, seed)
        train = clone_scores(model.policy, demos, crit)
        held = clone_scores(model.policy, demos.heldout, held_crit)
        bc_cpu = time.process_time() - c1
        env.reset(seed=seed)
        log = DecisionLog()
        drive(env, PPOPolicy(model, specs[layout]), log)
        clone_metrics = {**log.final, "mean_reward": float(np.mean(log.reward))}
        rows.append({
            "expert": expert, "reference": reference, "servers": servers, "trained_on": servers, "seed": seed,
            "policy": policy,
            "layout": layout, "demo_tasks": len(demos), "heldout_tasks": len(demos.heldout),
            "eval_tasks": len(tasks), "eval_whole_window": len(tasks) == len(workload.online),
            **{f"{k}_train": v for k, v in train.items()}, **{f"{k}_heldout": v for k, v in held.items()},
            **{f"clone_{k}": float(clone_metrics[k]) for k in METRICS},
            **{f"expert_{k}": float(reference_metrics(tasks)[k]) for k in METRICS},
            "cpu_demos_s": demo_cpu, "cpu_clone_s": bc_cpu, "cpu_eval_s": time.process_time() - c1 - bc_cpu,
        })
        if policy == "per-server":
            if out is not None:
                save_policy(model, Path(out) / "policies" / unit_name(expert, servers, seed), policy, layout, servers)
            for target in transfer_targets(profile, servers):
                rows.append(_transferred(rows[-1], model, cfg, workload, target, reference))
    return rows


def _transferred(row: dict, model, cfg: RunConfig, workload, servers: int, reference: str) -> dict:
    """The row of a per-server clone scheduling the whole online half of another fleet size."""
    from ilets.agents.env import CloudSchedulingEnv
    from ilets.agents.methods import DecisionLog, drive, run_heuristic
    from ilets.agents.observation import StateSpec
    from ilets.agents.ppo import PPOPolicy, make_ppo
    from ilets.simulator.cloud import make_fleet

    c0 = time.process_time()
    there = dataclasses.replace(cfg, fleet=dataclasses.replace(cfg.fleet, servers=servers)).validate()
    fleet = make_fleet(there.fleet, there.fleet.seed)
    env = CloudSchedulingEnv(there, tasks=workload.online, fleet=fleet)
    moved = make_ppo(env, there.ppo, there.seed, there.policy, there.server_hidden)
    moved.policy.load_state_dict(model.policy.state_dict())  # no weight depends on the fleet size
    env.reset(seed=there.seed)
    log = DecisionLog()
    drive(env, PPOPolicy(moved, StateSpec.of(there)), log)
    ref = run_heuristic(dataclasses.replace(there, method=reference), workload, fleet)
    mine = {**log.final, "mean_reward": float(np.mean(log.reward))}
    theirs = {**ref.log.final, "mean_reward": float(np.mean(ref.log.reward))}
    keep = {k: v for k, v in row.items() if not k.startswith(("clone_", "expert_", "cpu_"))}
    return {**keep, "servers": servers, "eval_tasks": len(workload.online), "eval_whole_window": True,
            **{f"clone_{k}": float(mine[k]) for k in METRICS}, **{f"expert_{k}": float(theirs[k]) for k in METRICS},
            "cpu_demos_s": 0.0, "cpu_clone_s": 0.0, "cpu_eval_s": time.process_time() - c0}


def _unit_job(args: tuple[ControlProfile, str, int, int, str, dict]) -> str:
    import datetime

    from ilets.files import atomic_write
    from ilets.host import machine_label

    profile, expert, servers, seed, out, start = args
    began = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = run_unit(profile, expert, servers, seed, Path(out))
    ended = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    where = {"commit": start["commit"][:12] + ("+dirty" if start.get("dirty") else ""),
             "machine": machine_label(start["cpu_model"], start["cpus"], start["cpu_id"]),
             "numerics": start["numerics"]["effective"], "started_utc": began, "finished_utc": ended}
    rows = [{**row, **where} for row in rows]
    path = Path(out) / "units" / f"{unit_name(expert, servers, seed)}.json"
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(rows, indent=1)))
    return path.name


def gather(out: Path) -> pd.DataFrame:
    """Every finished unit's rows as one table (also written to ``OUT/store.parquet``)."""
    rows = []
    for path in sorted((out / "units").glob("*.json")):
        try:
            rows.extend(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError) as err:
            raise ConfigError(f"{path}: damaged unit record ({err}); delete it to recompute the unit") from None
    df = pd.DataFrame(rows)
    if len(df):
        df.to_parquet(out / "store.parquet", index=False)
    return df


def run(profile: ControlProfile, out: Path, name: str) -> pd.DataFrame:
    """Run every unit not yet finished in ``out`` (resumable); return the gathered table."""
    from ilets.host import host_record

    out.mkdir(parents=True, exist_ok=True)
    (out / "units").mkdir(exist_ok=True)
    marker = out / "profile.json"
    plain = {"name": name, **to_dict(profile)}
    if marker.is_file() and json.loads(marker.read_text()) != plain:
        raise ConfigError(f"{out}: holds another positive-control profile ({marker}); use another --out")
    marker.write_text(json.dumps(plain, indent=1))
    todo = [u for u in profile.units() if not (out / "units" / f"{unit_name(*u)}.json").is_file()]
    print(f"{len(profile.units()) - len(todo)} units done, {len(todo)} to run", file=sys.stderr)
    start = host_record()  # the code and machine the units of this run are computed with
    t0 = time.time()
    failed = []
    with ProcessPoolExecutor(max_workers=profile.workers) as pool:
        futures = {pool.submit(_unit_job, (profile, e, m, s, str(out), start)): unit_name(e, m, s) for e, m, s in todo}
        for future in as_completed(futures):
            try:
                print(f"finished {future.result()} ({time.time() - t0:.0f} s)", file=sys.stderr)
            except Exception as err:  # noqa: BLE001 -- one unit's failure must not stop the others
                failed.append(futures[future])
                note = out / "failed" / f"{futures[future]}.txt"
                note.parent.mkdir(exist_ok=True)
                note.write_text("".join(traceback.format_exception(err)))
                print(f"unit {futures[future]} failed: {type(err).__name__}: {err} (traceback in {note})",
                      file=sys.stderr)
    df = gather(out)
    prov = {**provenance(df, name, len(profile.units())), "last_run": start, "failed_last_run": failed}
    (out / "PROVENANCE.json").write_text(json.dumps(prov, indent=1, default=str))
    return df


def provenance(df: pd.DataFrame, name: str, planned: int) -> dict:
    """Where, when and from which code the finished units came, read from their own rows, in
    the study's one schema (:func:`ilets.host.provenance_of`, a unit for a cell), with the
    profile, a note and the units done of planned."""
    from ilets.host import ComputeRecord, provenance_of

    note = (f"positive control ({name}): each expert cloned into each policy design, then scheduling "
            "frozen and greedy; counted in units (expert x fleet size x seed)")
    records = []
    for _, unit in (df.groupby(["expert", "trained_on", "seed"], sort=True) if len(df) else ()):
        first = unit.iloc[0]
        commit, dirty = str(first["commit"]).removesuffix("+dirty"), str(first["commit"]).endswith("+dirty")
        began, ended = (pd.Timestamp(unit[k].iloc[0]) for k in ("started_utc", "finished_utc"))
        records.append(ComputeRecord(commit=commit, dirty=dirty, cpu_model="", cores="", cpu_id="",
                                     numerics=str(first["numerics"]), started_utc=str(first["started_utc"]),
                                     cpu_s=float(unit[["cpu_demos_s", "cpu_clone_s", "cpu_eval_s"]].sum().sum()),
                                     wall_s=float((ended - began).total_seconds()), machine=str(first["machine"])))
    return {**provenance_of(records), "profile": name, "note": note, "units": len(records), "planned_units": planned,
            "finished_utc": str(df["finished_utc"].max()) if len(df) else None}


def ship_positive_control(src: Path, dest: Path) -> dict:
    """Copy a control folder's finished units (rows, per-server clone weights, profile) into
    ``dest`` (replaced) with its store and provenance, also while a run is still going.

    Not :func:`ilets.study.shipping.ship`: a control folder has units, not a grid's cells and
    store, and its provenance counts units (:func:`provenance`)."""
    import shutil

    profile = json.loads((src / "profile.json").read_text())
    name = profile.pop("name")
    planned = len(load_profile(name).units()) if (Path(__file__).resolve().parent.parent / "configs"
                                                   / f"{name}.yaml").is_file() else 0
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copytree(src / "units", tmp / "units")
    done = {p.stem for p in (tmp / "units").glob("*.json")}
    for folder in sorted((src / "policies").glob("*")) if (src / "policies").is_dir() else []:
        if folder.name in done:  # a unit in flight may have written its weights already
            shutil.copytree(folder, tmp / "policies" / folder.name)
    shutil.copy2(src / "profile.json", tmp / "profile.json")
    df = gather(tmp)
    prov = provenance(df, name, planned)
    (tmp / "PROVENANCE.json").write_text(json.dumps(prov, indent=1, default=str))
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return prov


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ilets.study.positive_control", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="positive-control")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ship", type=Path, default=None, metavar="DEST",
                    help="copy the finished units of --out into DEST (e.g. shipped/positive-control) and stop")
    args = ap.parse_args(argv)
    try:
        if args.ship is not None:
            print(json.dumps(ship_positive_control(args.out, args.ship), default=str))
            return 0
        profile = load_profile(args.profile)
        df = run(profile, args.out, args.profile)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps({"rows": len(df), "out": str(args.out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
