"""The grid-command scenario's pilot: expert settings chosen on seeds no grid evaluates.

Two settings of the expert ladder were first set by hand, one of them by looking at the
episodes that were then reported. This pilot chooses them by rules written before it ran
(the study's own pilot, ``configs/pilot.yaml``, does the same for the learners):

1. ``lyapunov.track_gain``: the weight of the tracking queue in the drift-plus-penalty
   score; the Lyapunov rung is also the learners' teacher. Candidates :data:`TRACK_GAINS`,
   at 50 and 200 servers. Rule: the candidate with the **best** score.
2. ``oracle.node_limit``: the hindsight MILP's branch-and-bound budget per window. It
   replaces a wall-clock limit, which cut hard windows at a point that depended on the
   host's speed and load. Candidates :data:`NODE_LIMITS`, at 50 servers only (at 200 every
   window was proven optimal within the old limit). Rule: the **smallest** candidate whose
   score is within :data:`NODE_TOLERANCE` (of its magnitude) of the best candidate's; a
   larger budget only costs time.

Score of a candidate: the episode's mean reward (the scenario's one cost: tracking, SLA,
energy and deferrals) averaged over the pilot seeds, the fleets and both regimes of the
grid profile (training and evaluation regime), each on the online segment as the grid
scores it. Pilot seeds :data:`PILOT_SEEDS` are outside every grid profile's seeds
(checked by the tests).

The pilot is resumable: each episode is one JSON line of ``OUT/episodes.jsonl``, skipped
when present; ``OUT/pilot.json`` holds the rules, the scores and the choices.

    python -m ilets.gridcommand.pilot --out results/gridcommand-pilot
    python -m ilets.gridcommand.pilot --ship results/gridcommand-pilot --to shipped/gridcommand-pilot
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ilets.config import ConfigError
from ilets.files import atomic_write, publish_folder
from ilets.gridcommand.experts import make_expert
from ilets.gridcommand.grid import GridProfile, load_grid_profile, scenario_of
from ilets.gridcommand.metrics import evaluate
from ilets.gridcommand.pipeline import evaluation_config
from ilets.host import machine_record, source_version

PILOT_SEEDS = (100, 101)
NODE_LIMITS = (50, 200, 1000)
NODE_TOLERANCE = 0.005
TRACK_GAINS = (50.0, 100.0, 200.0, 400.0, 800.0)
#: Packages whose versions the pilot records.
PACKAGES = ("numpy", "scipy", "torch", "stable-baselines3", "sb3-contrib", "imitation", "gymnasium", "pandas")


def stages(profile: GridProfile) -> list[dict[str, Any]]:
    """The pilot's two stages: which expert option, its candidates, fleets and rule."""
    big = [s for s in profile.servers if s != min(profile.servers)]
    return [
        {"expert": "lyapunov", "option": "track_gain", "candidates": list(TRACK_GAINS),
         "servers": [min(profile.servers), *big], "rule": "best", "tolerance": 0.0, "fixed": {}},
        {"expert": "oracle", "option": "node_limit", "candidates": list(NODE_LIMITS),
         "servers": [min(profile.servers)], "rule": "smallest-within", "tolerance": NODE_TOLERANCE,
         "fixed": {"window": profile.oracle_window, "time_limit": None}},
    ]


def episode(profile: GridProfile, expert: str, options: dict, servers: int, seed: int, regime: str) -> dict:
    """One episode of ``expert`` with ``options`` (the grid's scenario and scoring)."""
    cfg = evaluation_config(scenario_of(profile), regime, servers, seed)
    policy = make_expert(expert, **options)
    c0 = time.process_time()
    scores = evaluate(lambda obs, env: int(policy.act(env)), cfg, seed=seed)
    row = {"mean_reward": float(scores["mean_reward"]), "tracking_mae_rel": float(scores["tracking_mae_rel"]),
           "misses_caused": int(scores["misses_caused"]), "deferrals": int(scores["deferrals"]),
           "cpu_s": time.process_time() - c0}
    statuses = getattr(policy, "statuses", None)
    if statuses:
        row["optimal_share"] = float(np.mean([s == "optimal" for s in statuses]))
    return row


def choose(scores: dict[Any, float], rule: str, tolerance: float = 0.0) -> Any:
    """The candidate a rule picks from ``{candidate: score}`` (higher is better).

    ``"best"``: the highest score (the first candidate on a tie). ``"smallest-within"``: the
    smallest candidate within ``tolerance * |best|`` of the best score.
    """
    if not scores:
        raise ValueError("choose: no scores")
    best = max(scores.values())
    if rule == "best":
        return next(c for c, v in scores.items() if v == best)
    if rule == "smallest-within":
        return min(c for c, v in scores.items() if v >= best - tolerance * abs(best))
    raise ValueError(f"choose: unknown rule {rule!r}; expected 'best' or 'smallest-within'")


def _read_episodes(path: Path) -> list[dict]:
    """The finished episodes of ``OUT/episodes.jsonl``; a line cut short by a kill (the last
    one) is dropped with a warning and its episode runs again."""
    if not path.is_file():
        return []
    rows, text = [], path.read_text()
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            warnings.warn(f"{path}: line {i + 1} is cut short; its episode runs again", stacklevel=3)
    if text and not text.endswith("\n"):  # rewrite without the torn tail, so appends start clean
        atomic_write(path, lambda tmp: tmp.write_text("".join(json.dumps(r) + "\n" for r in rows)))
    return rows


def _key(row: dict) -> tuple:
    return row["expert"], row["option"], json.dumps(row["value"]), row["servers"], row["seed"], row["regime"]


def run_pilot(profile: GridProfile, out: Path, seeds: tuple[int, ...] = PILOT_SEEDS,
              plan: list[dict] | None = None, log: Callable[[str], None] = print) -> dict:
    """Run (or resume) every episode of the pilot into ``out`` and write ``OUT/pilot.json``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = out / "episodes.jsonl"
    rows = _read_episodes(lines)
    done = {_key(r) for r in rows}
    regimes = list(dict.fromkeys(profile.regimes.values()))
    result: dict[str, Any] = {"profile": profile.name, "scale": profile.scale, "seeds": list(seeds),
                              "regimes": regimes, "score": "mean reward over seeds, fleets and regimes",
                              "stages": []}
    for stage in plan or stages(profile):
        means: dict[Any, float] = {}
        for value in stage["candidates"]:
            options = {**stage["fixed"], stage["option"]: value}
            got = []
            for servers in stage["servers"]:
                for seed in seeds:
                    for regime in regimes:
                        key = (stage["expert"], stage["option"], json.dumps(value), servers, seed, regime)
                        if key not in done:
                            row = {"expert": stage["expert"], "option": stage["option"], "value": value,
                                   "servers": servers, "seed": seed, "regime": regime,
                                   **episode(profile, stage["expert"], options, servers, seed, regime),
                                   **source_version()}
                            with lines.open("a") as f:
                                f.write(json.dumps(row) + "\n")
                            rows.append(row)
                            done.add(key)
                            log(f"{stage['expert']} {stage['option']}={value} M{servers} s{seed} {regime}: "
                                f"{row['mean_reward']:.5f} in {row['cpu_s']:.1f} CPU s")
                        got += [r["mean_reward"] for r in rows if _key(r) == key]
            means[value] = float(np.mean(got))
        chosen = choose(means, stage["rule"], stage["tolerance"])
        result["stages"].append({**{k: v for k, v in stage.items() if k != "fixed"},
                                 "scores": {json.dumps(k): v for k, v in means.items()}, "chosen": chosen})
    result["cpu_hours"] = sum(r["cpu_s"] for r in rows) / 3600
    result["commits"] = sorted({str(r.get("commit")) + ("+dirty" if r.get("dirty") else "") for r in rows})
    result["machine"] = machine_record(PACKAGES)
    result["finished_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    atomic_write(out / "pilot.json", lambda tmp: tmp.write_text(json.dumps(result, indent=1)))
    return result


def chosen(pilot: dict, expert: str, option: str) -> Any:
    """The value the pilot chose for ``expert.option``."""
    for stage in pilot["stages"]:
        if stage["expert"] == expert and stage["option"] == option:
            return stage["chosen"]
    raise KeyError(f"the pilot has no stage for {expert}.{option}")


def ship(src: Path, dest: Path, note: str = "") -> dict:
    """Copy a finished pilot folder (``pilot.json``, ``episodes.jsonl``) into ``dest``
    (replaced), with a provenance record: episodes, CPU-hours, commits, machine, dates."""
    src, dest = Path(src), Path(dest)
    if not (src / "pilot.json").is_file():
        raise ConfigError(f"--ship {src}: expected a finished pilot folder with pilot.json (run the pilot first)")
    pilot = json.loads((src / "pilot.json").read_text())
    rows = [json.loads(s) for s in (src / "episodes.jsonl").read_text().splitlines() if s.strip()]
    commits: dict[str, int] = {}
    for r in rows:
        c = str(r.get("commit")) + ("+dirty" if r.get("dirty") else "")
        commits[c] = commits.get(c, 0) + 1
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in ("pilot.json", "episodes.jsonl"):
        shutil.copy2(src / name, tmp / name)
    info = {"cells": len(rows), "commits": commits, "cpu_hours": pilot["cpu_hours"],
            "machines": {f"{pilot['machine']['cpu_model']} x {pilot['machine']['cores']} cores": len(rows)},
            "finished_utc": pilot["finished_utc"],
            "chosen": {f"{s['expert']}.{s['option']}": s["chosen"] for s in pilot["stages"]}}
    return publish_folder(tmp, dest, info, note, indent=1)


def add_ship_arguments(ap: argparse.ArgumentParser) -> None:
    """``--ship SRC --to DEST [--note TEXT]``: the pilot command's shipping flags."""
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
    ap = argparse.ArgumentParser(prog="python -m ilets.gridcommand.pilot", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="quick", help="grid profile whose scenario the pilot uses")
    ap.add_argument("--out", type=Path, help="pilot folder (resumed if it exists)")
    add_ship_arguments(ap)
    args = ap.parse_args(argv)
    shipped = shipped_by(ap, args, ship)
    if shipped is not None:
        return shipped
    if not args.out:
        ap.error("--out is required (or --ship and --to)")
    try:
        profile = load_grid_profile(args.profile)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    result = run_pilot(profile, args.out, log=lambda s: print(s, flush=True))
    print(json.dumps({s["expert"] + "." + s["option"]: s["chosen"] for s in result["stages"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
