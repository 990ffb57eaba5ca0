"""Choose the grid-command oracle's branch-and-bound node limit on pilot seeds.

The grid's hindsight oracle solved each window under a wall-clock limit (1 s), so a window
cut by the limit was cut at a different point on a faster or busier host, and the oracle's
cells depended on host speed. A node limit (HiGHS ``node_limit``) cuts every window at the
same point on any machine. This script picks that limit by a rule fixed before the run:

* candidates: 50, 200, 1,000 and 5,000 nodes per window;
* pilot seeds 100 and 101 (never evaluated by any grid), 50 servers (where windows are
  hard: at 200 servers every window is proven optimal well inside the old limit), the
  ``gridcommand-grid-quick`` profile's scenario, window and both regimes;
* score: the episode's mean reward (the scenario's one cost: tracking, SLA and energy),
  averaged over seeds and regimes;
* rule: the smallest candidate whose score is within 0.5 % (of its magnitude) of the best
  candidate's; the CPU seconds are reported beside, not used.

    python benchmarks/calibrate_oracle_nodes.py            # print
    python benchmarks/calibrate_oracle_nodes.py --write    # also benchmarks/results/oracle_nodes.json
    python benchmarks/calibrate_oracle_nodes.py --quick    # seconds: checks that the script runs
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from ilets.gridcommand.experts import make_expert
from ilets.gridcommand.grid import load_grid_profile, scenario_of
from ilets.gridcommand.metrics import evaluate
from ilets.gridcommand.pipeline import evaluation_config

OUT = Path(__file__).resolve().parent / "results" / "oracle_nodes.json"
CANDIDATES = (50, 200, 1000, 5000)
PILOT_SEEDS = (100, 101)
TOLERANCE = 0.005


def episode(node_limit: int, regime: str, servers: int, seed: int) -> dict:
    """One oracle episode under ``node_limit`` (no time limit): score, CPU and solve counts."""
    profile = load_grid_profile("quick")
    cfg = evaluation_config(scenario_of(profile), regime, servers, seed)
    expert = make_expert("oracle", window=profile.oracle_window, time_limit=None, node_limit=node_limit)
    c0 = time.process_time()
    scores = evaluate(lambda obs, env: int(expert.act(env)), cfg, seed=seed)
    return {"node_limit": node_limit, "regime": regime, "servers": servers, "seed": seed,
            "mean_reward": float(scores["mean_reward"]), "tracking_mae_rel": float(scores["tracking_mae_rel"]),
            "misses_caused": int(scores["misses_caused"]), "cpu_s": time.process_time() - c0,
            "solves": len(expert.statuses), "optimal_share": float(np.mean([s == "optimal" for s in expert.statuses])),
            "max_nodes": int(max(expert.solve_nodes, default=0))}


def choose(rows: list[dict], tolerance: float = TOLERANCE) -> int:
    """The smallest candidate whose mean score is within ``tolerance`` of the best one's."""
    means = {n: float(np.mean([r["mean_reward"] for r in rows if r["node_limit"] == n]))
             for n in sorted({r["node_limit"] for r in rows})}
    best = max(means.values())
    return min(n for n, m in means.items() if m >= best - tolerance * abs(best))


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"write {OUT.name}")
    ap.add_argument("--quick", action="store_true", help="two small candidates, 1 seed, 1 regime: a smoke check")
    args = ap.parse_args(argv)
    profile = load_grid_profile("quick")
    candidates, seeds = ((5, 20), PILOT_SEEDS[:1]) if args.quick else (CANDIDATES, PILOT_SEEDS)
    regimes = tuple(dict.fromkeys(profile.regimes.values()))[:1 if args.quick else None]
    rows = []
    for n in candidates:
        for seed in seeds:
            for regime in regimes:
                rows.append(episode(n, regime, 50, seed))
                print(json.dumps(rows[-1]), flush=True)
    chosen = choose(rows)
    result = {"rule": f"smallest of {list(candidates)} within {TOLERANCE:.1%} of the best mean reward",
              "pilot_seeds": list(seeds), "regimes": list(regimes), "servers": 50, "chosen": chosen,
              "rows": rows, "loadavg": os.getloadavg()}
    print(f"chosen node limit: {chosen}")
    if args.write and not args.quick:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
