"""Solve time of the grid-command expert ladder, per decision and per window/solve.

Each expert of :data:`ilets.gridcommand.experts.EXPERTS` plays one episode of a small
grid-command workload (the ``gridcommand-quick`` profile at a reduced scale, one explicit
down event over the middle of the window) at 50 and 200 servers. Every ``act`` call is timed
on its own (wall and CPU); the oracle's MILP windows and the MPC's LP solves are also
reported per solve, with HiGHS's status counts. The episode's tracking metrics
(:func:`ilets.gridcommand.metrics.tracking_metrics`) are recorded beside, to read the
times against what they buy; they are not the ladder's evaluation.

    python benchmarks/bench_gridcommand_experts.py            # 50 and 200 servers, print only
    python benchmarks/bench_gridcommand_experts.py --write    # also benchmarks/results/gridcommand_experts.json
    python benchmarks/bench_gridcommand_experts.py --quick    # seconds: checks that the script runs

Numbers from a machine busy with other work are not speed claims; run it on an idle one
(the JSON records the load average at the start and the end).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections import Counter
from pathlib import Path

import numpy as np

from ilets.gridcommand.config import CommandSpec, load_gridcommand_config
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts import EXPERTS, make_expert
from ilets.gridcommand.metrics import tracking_metrics

OUT = Path(__file__).resolve().parent / "results" / "gridcommand_experts.json"


def make_env(servers: int, scale: float) -> GridCommandEnv:
    """The quick profile at ``scale`` on ``servers`` servers, one 30%-deep down event over the
    middle half of the online window (its length is ``scale * 1500`` s)."""
    window = 1500.0 * scale
    command = CommandSpec(direction="down", depth=0.3, start_after_s=0.25 * window, duration_s=0.5 * window,
                          notice_s=0.1 * window, ramp_s=0.05 * window, band=0.2)
    cfg = load_gridcommand_config("quick", regime="explicit", commands=(command,),
                                  run={"workload": {"scale": scale}, "fleet": {"servers": servers}})
    return GridCommandEnv(cfg)


def summarise(seconds: list[float]) -> dict:
    """Median, p95 and max in ms, and the count."""
    if not seconds:
        return {"n": 0}
    a = 1e3 * np.asarray(seconds)
    return {"n": int(len(a)), "median_ms": float(np.median(a)), "p95_ms": float(np.percentile(a, 95)),
            "max_ms": float(a.max()), "total_s": float(a.sum() / 1e3)}


def run_expert(env: GridCommandEnv, name: str, max_decisions: int, oracle_kw: dict) -> dict:
    """One episode (at most ``max_decisions`` decisions) with the expert ``name``, timed."""
    expert = make_expert(name, **(oracle_kw if name == "oracle" else {}))
    expert.reset(0)
    env.reset()
    wall, cpu = [], []
    done, n = False, 0
    while not done and n < max_decisions:
        w0, c0 = time.perf_counter(), time.process_time()
        a = expert.act(env)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
        _, _, done, _, _ = env.step(a)
        n += 1
    row = {"expert": name, "servers": len(env.fleet), "tasks": len(env.tasks), "decisions": n, "finished": done,
           "per_decision_wall": summarise(wall), "per_decision_cpu": summarise(cpu)}
    if hasattr(expert, "solve_times"):
        row["per_solve_wall"] = summarise(list(expert.solve_times))
        row["statuses"] = dict(Counter(expert.statuses))
    if done:
        m = tracking_metrics(env)
        row["metrics"] = {k: m[k] for k in ("success_rate", "baseline_success_rate", "tracking_mae_rel",
                                            "in_band_fraction", "misses_caused", "deferrals", "energy_kwh")}
    return row


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--scale", type=float, default=0.01, help="workload scale (0.01: a 15 s window, ~2,600 tasks)")
    ap.add_argument("--max-decisions", type=int, default=20_000)
    ap.add_argument("--oracle-window", type=int, default=60)
    ap.add_argument("--oracle-time-limit", type=float, default=2.0)
    ap.add_argument("--experts", nargs="+", default=list(EXPERTS), choices=EXPERTS)
    ap.add_argument("--quick", action="store_true", help="10 servers, scale 0.001, 150 decisions (checks the script)")
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(OUT.parents[1])}")
    args = ap.parse_args(argv)
    if args.quick and args.write:
        raise SystemExit("--write with --quick would record a check run as a result; drop one of them")
    if args.quick:
        args.servers, args.scale, args.max_decisions = [10], 0.001, 150
    oracle_kw = {"window": args.oracle_window, "time_limit": args.oracle_time_limit}
    load0 = os.getloadavg()
    rows = []
    for m in args.servers:
        env = make_env(m, args.scale)
        for name in args.experts:
            row = run_expert(env, name, args.max_decisions, oracle_kw)
            rows.append(row)
            d, s = row["per_decision_cpu"], row.get("per_solve_wall", {})
            solve = f", per solve median {s['median_ms']:.1f} ms max {s['max_ms']:.1f} ms {row['statuses']}" \
                if s.get("n") else ""
            print(f"{m:4d} servers {name:13s} CPU per decision median {d['median_ms']:.3f} ms "
                  f"p95 {d['p95_ms']:.3f} ms max {d['max_ms']:.1f} ms ({row['decisions']} decisions){solve}",
                  flush=True)
    result = {"benchmark": "gridcommand_experts", "scale": args.scale, "servers": args.servers,
              "oracle": oracle_kw, "rows": rows,
              "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "loadavg_start": load0, "loadavg_end": os.getloadavg()},
              "note": "times from a machine busy with other work are not speed claims"}
    if args.write:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        tmp = OUT.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(result, indent=2, default=float) + "\n")
        tmp.replace(OUT)
        print(f"wrote {OUT}")
    return result


if __name__ == "__main__":
    main()
