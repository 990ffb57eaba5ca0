"""The true cost of one paper-scale cell per learner, by phase, and of the whole paper grid.

Runs one full-window cell (259,368 online tasks; DRL+ and ILETS also clone 20,000 offline
expert decisions) per learner at each fleet size, with a heuristic cell as the reference
measured in the same run, and reports CPU seconds by phase from the cell's own records
(``ilets.agents.methods.run_learner``):

* ``demos``: the GA/PSO demonstrations (OINPT);
* ``bc``: behaviour cloning and critic pre-training;
* ``rollout``: PPO's rollout loop (decisions, env steps), OAIL's updates excluded;
* ``update``: PPO's ``train()``;
* ``oail_imitation``: OAIL's behaviour-cloning steps on the live policy;
* ``oail_experts``: GA and PSO in the emulator processes (their CPU, not the learner's).

Then it extrapolates the paper grid (``configs/paper.yaml``: 4 learners and 6 heuristics,
50/100/200 servers, 10 seeds) from the measured cells: each learner's total at 100 servers
is interpolated linearly between 50 and 200 unless 100 is measured too; the heuristics all
cost what the measured heuristic costs; an unmeasured ILETS costs ILETS- plus the extra of
DRL+ over DRL (its OINPT).

Usage::

    python benchmarks/bench_paper_cell.py --out benchmarks/results/paper_cell.json
    python benchmarks/bench_paper_cell.py --from-results shipped/pilot --out ...   # no re-run

``--from-results`` reads the main-grid cells (variant "") of a paper-scale results folder
instead of running new ones: their recorded CPU seconds (the learner process plus its
reaped emulator processes) averaged over seeds, and the phases where the cells recorded
them.
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from ilets.agents.methods import run_method
from ilets.config import HEURISTICS, METHODS
from ilets.host import write_benchmark
from ilets.simulator.cloud import make_fleet
from ilets.study.profiles import load_profile
from ilets.workloads.workload import load_workload

PHASES = {"demos": "cpu_demos_s", "bc": "cpu_bc_s", "rollout": "cpu_rollout_s", "update": "cpu_update_s",
          "oail_imitation": "oail_imitation_cpu_s", "oail_experts": "oail_expert_cpu_s"}


def measure(method: str, servers: int, seed: int) -> dict:
    """One paper-profile cell; its CPU (this process) and the phases it recorded."""
    base = load_profile("paper").run
    cfg = dataclasses.replace(base, method=method, seed=seed,
                              fleet=dataclasses.replace(base.fleet, servers=servers)).validate()
    workload = load_workload(cfg.workload, cfg.seed)
    fleet = make_fleet(cfg.fleet, cfg.fleet.seed)
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_method(cfg, workload, fleet)
    row = {"method": method, "servers": servers, "seed": seed, "wall_s": time.perf_counter() - t0,
           "cpu_s": time.process_time() - c0}
    for phase, key in PHASES.items():
        row[phase] = float(result.extra.get(key, 0.0))
    row["cpu_total_s"] = row["cpu_s"] + row["oail_experts"]  # the emulators' CPU is another process's
    row["steps_per_s"] = len(workload.online) / max(row["rollout"] + row["update"], 1e-9)
    row["avg_response_s"] = result.log.final.get("avg_response_s")
    row["oail_served_share"] = result.extra.get("oail_served_share")
    return row


def from_results(folder: Path) -> list[dict]:
    """Rows like :func:`measure`'s from a results folder's main-grid cells, averaged over seeds."""
    from ilets.study.results import load_metrics

    m = load_metrics(folder)
    if m["tasks"].min() < 259_000:
        raise SystemExit(f"{folder}: not a paper-scale results folder (cells of {m['tasks'].min()} tasks)")
    rows = []
    for (method, servers), g in m.groupby(["method", "servers"]):
        row = {"method": method, "servers": int(servers), "seed": f"mean of {len(g)}",
               "wall_s": float(g["wall_s"].mean()), "cpu_s": float(g["cpu_s"].mean()),
               # cpu_s already holds the reaped emulator processes' CPU
               "cpu_total_s": float(g["cpu_s"].mean())}
        for phase, key in PHASES.items():
            row[phase] = float(g[key].mean()) if key in g and g[key].notna().any() else float("nan")
        row["steps_per_s"] = float("nan")
        row["avg_response_s"] = float(g["avg_response_s"].mean())
        served = g["oail_served_share"].mean() if "oail_served_share" in g else float("nan")
        row["oail_served_share"] = None if served != served else float(served)
        rows.append(row)
    return rows


def grid_estimate(rows: list[dict], seeds: int = 10, heuristics: int = len(HEURISTICS)) -> dict:
    """CPU-hours of the paper grid from measured cells (see the module docstring)."""
    cost: dict[tuple[str, int], float] = {(r["method"], r["servers"]): r["cpu_total_s"] for r in rows}
    for m in (50, 100, 200):  # ILETS unmeasured (the pilot has none): ILETS- plus OINPT's extra cost
        if ("ilets", m) not in cost and all((k, m) in cost for k in ("ilets-", "drl+", "drl")):
            cost[("ilets", m)] = cost[("ilets-", m)] + cost[("drl+", m)] - cost[("drl", m)]
    ref = {m: float(np.mean([r["cpu_total_s"] for r in rows if r["servers"] == m and r["method"] in HEURISTICS]))
           for m in {r["servers"] for r in rows if r["method"] in HEURISTICS}}
    total, per, missing = 0.0, {}, []
    for method in list(METHODS) + ["heuristic"]:
        per[method] = {}
        for m in (50, 100, 200):
            known = ref if method == "heuristic" else {mm: cost[(method, mm)] for mm in (50, 100, 200)
                                                       if (method, mm) in cost}
            if m in known:
                c = known[m]
            elif 50 in known and 200 in known:
                c = known[50] + (known[200] - known[50]) * (m - 50) / 150
            else:  # neither measured nor between two measured fleets: left out (a lower bound)
                missing.append(f"{method}@{m}")
                continue
            per[method][m] = c
            total += c * seeds * (heuristics if method == "heuristic" else 1)
    return {"cpu_hours": total / 3600, "per_cell_cpu_s": per, "seeds": seeds, "unmeasured": missing}


def markdown(rows: list[dict], estimate: dict) -> str:
    lines = ["| method | servers | CPU s | demos | BC | rollout | update | OAIL imitation | OAIL experts | steps/s | served |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        served = "" if r["oail_served_share"] is None else f"{100 * r['oail_served_share']:.1f}%"
        cells = [f"{r[k]:.0f}" if r[k] == r[k] else "" for k in
                 ("cpu_total_s", "demos", "bc", "rollout", "update", "oail_imitation", "oail_experts", "steps_per_s")]
        lines.append(f"| {r['method']} | {r['servers']} | " + " | ".join(cells) + f" | {served} |")
    gap = estimate.get("unmeasured", [])
    lines.append(f"\npaper grid (10 methods x 3 scales x {estimate['seeds']} seeds): "
                 f"{estimate['cpu_hours']:.1f} CPU-hours"
                 + (f", a lower bound: {len(gap)} method-fleet pairs neither measured nor interpolable "
                    f"({', '.join(gap)}) count 0" if gap else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="JSON output path")
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--reference", default="earliest-finish", help="heuristic timed in the same run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--from-results", type=Path, default=None, help="read a paper-scale results folder instead")
    args = ap.parse_args(argv)
    rows = []
    if args.from_results is not None:
        rows = from_results(args.from_results)
    for m in [] if args.from_results is not None else args.sizes:
        for method in [args.reference, *args.methods]:
            rows.append(measure(method, m, args.seed))
            print(json.dumps(rows[-1]), flush=True)
    estimate = grid_estimate(rows)
    print(markdown(rows, estimate))
    return write_benchmark(args.out, {"cells": rows, "paper_grid": estimate})


if __name__ == "__main__":
    main()
