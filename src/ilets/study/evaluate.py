"""Schedule a user's own tasks with a shipped policy, frozen, or with a heuristic by name.

``ilets evaluate --policy CELL|HEURISTIC --workload FILE --servers M --out DIR`` and
:func:`evaluate` (any :class:`ilets.workloads.workload.TaskTable`) run one pass over the
tasks through the same env as a cell and write the same ``metrics.json``
(:func:`ilets.study.run.metrics_record`), with its curve, config and command.

A policy comes from a cell folder (``shipped/<grid>/cells/<cell>`` names one of a shipped
folder's table as well: :mod:`ilets.cell_pack`): its ``config.yaml`` (the reward, the observation's
scales, the network's size) and its ``policy/`` folder (or ``clone/``, the policy right after
imitation): weights plus a JSON of the architecture, read without unpickling
(:mod:`ilets.agents.policy_io`). It acts greedily and does not learn. Only per-server cells
keep such a folder; a per-server policy schedules any fleet size, a flat one only its own.
The fleet is drawn as the study draws it (``make_fleet`` with ``--fleet-seed``, the study's
server ranges) at ``--servers``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import yaml

from ilets import cell_pack
from ilets.config import HEURISTICS, ConfigError, RunConfig, to_dict
from ilets.config.strict import merge
from ilets.workloads.workload import TaskTable

if TYPE_CHECKING:
    import pandas as pd

#: The weight folders a cell may hold: the final policy, and the clone after imitation.
WEIGHTS = ("policy", "clone")


class EvaluateError(ConfigError):
    """A policy, fleet or output that cannot serve the evaluation (the message names it)."""


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """One pass of a frozen policy or a heuristic over a task table."""

    config: RunConfig  #: what ran: the cell's config (or the study's defaults) at this fleet
    metrics: dict[str, Any]  #: what a cell's ``metrics.json`` holds, plus where the policy came from
    curve: pd.DataFrame  #: the learning-curve table, as a cell's ``curve.csv``


def _run_config(policy: str | Path, servers: int, fleet_seed: int, seed: int,
                changes: Mapping[str, Any] | None = None) -> tuple[RunConfig, Path | None]:
    """The config to schedule with, and the cell folder (None for a heuristic); ``changes``
    (nested sections, e.g. ``{"reward": {"theta": 0.5}}``) are applied last."""
    from ilets.study.profiles import method_defaults
    from ilets.study.verify import VerifyError, recorded_config

    if str(policy) in HEURISTICS:
        base, cell = dataclasses.replace(method_defaults(), method=str(policy)), None
    else:
        cell = Path(policy)  # a cell folder, or one of a shipped folder's table (ilets.cell_pack)
        if not cell_pack.is_dir(cell):
            raise EvaluateError(f"--policy {policy}: expected a heuristic ({', '.join(HEURISTICS)}) or a cell folder")
        try:
            base = recorded_config(cell)
        except VerifyError as err:
            raise EvaluateError(str(err)) from None
    if not isinstance(servers, int) or servers < 1:
        raise EvaluateError(f"servers: expected a fleet size >= 1, got {servers!r}")
    fleet = dataclasses.replace(base.fleet, servers=servers, seed=fleet_seed)
    cfg = dataclasses.replace(base, fleet=fleet, seed=seed)
    return (merge(cfg, dict(changes), "changes") if changes else cfg).validate(), cell


def export_policy(cell: Path) -> Path:
    """``cell/policy`` written from the cell's ``model.zip`` when it has none: a flat cell
    computed before flat cells kept their weights this way (only per-server cells write
    ``policy/`` as they finish). ``model.zip`` is SB3's own format, which unpickles: read only
    for a cell this project computed, before shipping drops the zip; what it writes is read
    back without unpickling (:mod:`ilets.agents.policy_io`). Written under a temporary name
    and renamed, so two processes exporting one cell leave one complete folder."""
    import shutil

    from sb3_contrib import MaskablePPO

    from ilets.agents.policy_io import save_policy
    from ilets.study.verify import recorded_config

    cell = Path(cell)
    folder = cell / "policy"
    if cell_pack.is_dir(folder):
        return cell_pack.on_disk(folder)
    if not (cell / "model.zip").is_file():
        raise EvaluateError(f"{cell}: no policy/ folder and no model.zip to write one from")
    cfg = recorded_config(cell)
    model = MaskablePPO.load(cell / "model.zip", device="cpu")
    tmp = cell / f".policy.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    save_policy(model, tmp, cfg.policy, cfg.observation, cfg.fleet.servers)
    try:
        tmp.rename(folder)
    except OSError:  # another process renamed its copy first: the same weights
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def frozen_policy(cell: Path, cfg: RunConfig, env, weights: str = "policy"):
    """The cell's ``weights`` folder as a greedy :class:`ilets.agents.ppo.PPOPolicy` on ``env``."""
    from ilets.agents.observation import StateSpec
    from ilets.agents.policy_io import load_policy
    from ilets.agents.ppo import PPOPolicy, make_run_ppo

    if weights not in WEIGHTS:
        raise EvaluateError(f"weights: expected one of {WEIGHTS}, got {weights!r}")
    folder = cell / weights
    if not cell_pack.is_dir(folder):
        why = ("this flat cell was computed before flat cells kept their weights (its model.zip would be "
               "unpickled, which this command never does; re-running the cell writes the folder)"
               if cfg.policy == "flat" and weights == "policy" else "this cell kept no such folder")
        raise EvaluateError(f"{folder}: not found; {why}")
    model = make_run_ppo(env, cfg)
    load_policy(cell_pack.on_disk(folder), model)
    return PPOPolicy(model, StateSpec.of(cfg), name=f"{cfg.method}:{weights}")


def evaluate(policy: str | Path, tasks: TaskTable, servers: int, *, fleet_seed: int = 0, seed: int = 0,
             weights: str = "policy", changes: Mapping[str, Any] | None = None) -> Evaluation:
    """Schedule ``tasks`` on ``servers`` servers with a cell's frozen policy or a heuristic.

    ``policy`` is a heuristic's name or a cell folder; ``weights`` picks the cell's final
    policy (``"policy"``) or its clone (``"clone"``); ``seed`` seeds a random heuristic;
    ``changes`` alter the config the tasks are scheduled under (the reward, the fleet's
    ranges: a shifted world, :mod:`ilets.study.shifts`). Deterministic: the same arguments give
    the same numbers."""
    from ilets.agents.env import CloudSchedulingEnv
    from ilets.agents.episode import DecisionLog, drive
    from ilets.agents.policies import make_heuristic
    from ilets.simulator.cloud import make_fleet
    from ilets.study.run import cpu_seconds, metrics_record

    cfg, cell = _run_config(policy, servers, fleet_seed, seed, changes)
    if len(tasks) == 0:
        raise EvaluateError(f"{tasks.source}: no tasks to schedule")
    fleet = make_fleet(cfg.fleet, cfg.fleet.seed)
    too_big = tasks.cpu > float(fleet.capacity.max())
    if too_big.any():
        i = int(too_big.nonzero()[0][0])
        raise EvaluateError(f"{tasks.source}: task {i + 1}, column 'cpu': {float(tasks.cpu[i])!r} exceeds the largest "
                            f"server's capacity ({float(fleet.capacity.max())!r}) of this {servers}-server fleet")
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    env = CloudSchedulingEnv(cfg, tasks=tasks, fleet=fleet)
    if cell is None:
        actor = make_heuristic(cfg.method, seed=cfg.seed, reward=cfg.reward)
        env.observing = False  # a heuristic reads the cloud, never the observation
    else:
        actor = frozen_policy(cell, cfg, env, weights)
    env.reset(seed=cfg.seed)
    log = DecisionLog()
    times = drive(env, actor, log)
    source = {"policy": str(policy), "weights": weights if cell is not None else None, "workload": tasks.source,
              "fleet_seed": fleet_seed}
    metrics = metrics_record(cfg, log.final, times, {"evaluated": source}, time.perf_counter() - wall0,
                             cpu_seconds() - cpu0)
    return Evaluation(cfg, metrics, log.curve(cfg.curve_every))


def write_evaluation(result: Evaluation, out: Path, command: str) -> Path:
    """Write ``result`` into the folder ``out`` as a cell does; never over an earlier evaluation."""
    from ilets.study.run import atomic_json, atomic_text, system_info

    out = Path(out)
    if (out / "metrics.json").exists():
        raise EvaluateError(f"{out}: already holds an evaluation (metrics.json); choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    atomic_text(out / "config.yaml", yaml.safe_dump(to_dict(result.config), sort_keys=False))
    atomic_text(out / "command.txt", command + "\n")
    atomic_json(out / "system.json", system_info())
    result.curve.to_csv(out / "curve.csv", index=False)
    atomic_json(out / "metrics.json", result.metrics)  # last: its presence means complete
    return out
