"""Solve time of the grid-command expert ladder, per decision and per window/solve.

Each expert of :data:`ilets.gridcommand.experts.DECIDING` (the ladder without its bound, whose
cost is whole simulated episodes, in its grid's records) plays one episode of a small
grid-command workload (the ``gridcommand-quick`` profile at a reduced scale, one explicit
down event over the middle of the window) at 50 and 200 servers. Every ``act`` call is timed
on its own (wall and CPU); the oracle's MILP windows and the MPC's LP solves are also
reported per solve, with HiGHS's status counts. The oracle runs with the window and limits
of the paper grid profile (``gridcommand-grid-paper``: 30-task windows, 50 branch-and-bound
nodes) unless ``--oracle-*`` options override them. Last, the oracle's MILP alone on synthetic
windows of 20x12 .. 200x48 tasks x slots (the sizes at which HiGHS was first timed for this scenario).
The episode's tracking metrics
(:func:`ilets.gridcommand.metrics.tracking_metrics`) are recorded beside, to read the
times against what they buy; they are not the ladder's evaluation.

    python benchmarks/bench_gridcommand_experts.py            # 50 and 200 servers, print only
    python benchmarks/bench_gridcommand_experts.py --write    # also benchmarks/results/gridcommand_experts.json
    python benchmarks/bench_gridcommand_experts.py --quick    # seconds: checks that the script runs

Numbers from a machine busy with other work are not speed claims; run it on an idle one
(the JSON records the load average at the start and the end).
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import os
import platform
import time
from collections import Counter
from pathlib import Path

import numpy as np

from ilets.gridcommand.config import load_gridcommand_config
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts import DECIDING, make_expert
from ilets.gridcommand.metrics import tracking_metrics
from ilets.gridcommand.milp import PlanTask, ServerClass, TrackingProblem, slot_starts, solve_window
from ilets.host import write_benchmark
from ilets.gridcommand.study.scenario import load_profile as load_grid_profile

OUT = Path(__file__).resolve().parent / "results" / "gridcommand_experts.json"


def make_env(servers: int, scale: float) -> GridCommandEnv:
    """The quick profile at ``scale`` on ``servers`` servers, one 30%-deep down event over the
    middle half of the online window (its length is ``scale * 1500`` s)."""
    window = 1500.0 * scale
    command = dict(direction="down", depth=0.3, start_after_s=0.25 * window, duration_s=0.5 * window,
                   notice_s=0.1 * window, ramp_s=0.05 * window, band=0.2)
    cfg = load_gridcommand_config("quick", regime="explicit", commands=[command],
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
        row["per_solve_cpu"] = summarise(list(expert.solve_cpu_times))
        row["statuses"] = dict(Counter(expert.statuses))
    if done:
        m = tracking_metrics(env)
        row["metrics"] = {k: m[k] for k in ("success_rate", "baseline_success_rate", "tracking_mae_rel",
                                            "in_band_fraction", "misses_caused", "deferrals", "energy_kwh")}
    return row


def window_instance(n_tasks: int, n_slots: int, seed: int, headroom: float = 1.3) -> TrackingProblem:
    """A synthetic tracking window of a given size (tasks x slots): 1 s slots, tasks
    arriving over the first 40 %, start candidates at the slot edges up to 3 s after
    arrival, three classes, a cut over the middle half, capacity for about 1.3x the load."""
    rng = np.random.default_rng(seed)
    edges = np.arange(n_slots + 1, dtype=float)
    classes = tuple(ServerClass(np.array([k]), w, m, 1.0, 0.0) for k, (w, m) in
                    enumerate([(150.0, 600.0), (300.0, 1200.0), (500.0, 1800.0)]))
    tasks = []
    for j in range(n_tasks):
        a = float(rng.uniform(0, 0.4 * n_slots))
        tasks.append(PlanTask(j, a, float(rng.choice([0.03, 0.06, 0.125, 0.25])), float(rng.uniform(500, 3000)),
                              float(rng.uniform(1.5, 4.5)), slot_starts(a, edges, latest=a + 3.0)))
    load = sum(t.cpu * t.length / 1200.0 for t in tasks) / (0.4 * n_slots + 2.0)
    spare = np.full((3, n_slots), max(0.5, headroom * load / 3))
    classes = tuple(ServerClass(c.members, c.w_per_cpu, c.mips, 1.0, float(spare[0, 0])) for c in classes)
    base = np.full(n_slots, 1000.0)
    scored = (edges[:-1] >= 0.25 * n_slots) & (edges[:-1] < 0.75 * n_slots)
    # the window's own work adds ~load_w on average while it runs; the cut asks for half of it
    load_w = sum(300.0 * t.cpu * t.length / 1200.0 for t in tasks) / (0.4 * n_slots + 2.0)
    target = np.where(scored, 1000.0 + 0.5 * load_w, 1000.0 + load_w)
    return TrackingProblem(tuple(tasks), edges, classes, spare, base, target, scored,
                           np.full(n_slots, 0.05 * load_w), p_ref=5000.0)


def bench_windows(sizes: list[tuple[int, int]], time_limit: float, repeats: int,
                  headrooms: tuple[float, ...] = (3.0, 1.3)) -> list[dict]:
    """Solve time and status of the oracle's MILP on synthetic windows of each size, with
    loose and with binding class capacity."""
    rows = []
    for headroom in headrooms:
        for n, s in sizes:
            for seed in range(repeats):
                plan = solve_window(window_instance(n, s, seed, headroom), time_limit=time_limit)
                rows.append({"tasks": n, "slots": s, "headroom": headroom, "seed": seed, "solve_s": plan.solve_s,
                             "solve_cpu_s": plan.solve_cpu_s,
                             "status": plan.status, "mip_gap": plan.mip_gap, "variables": plan.variables,
                             "constraints": plan.constraints})
                print(f"MILP {n:4d} tasks x {s:3d} slots headroom {headroom}: seed {seed}: {plan.solve_s:.3f} s wall, "
                      f"{plan.solve_cpu_s:.3f} s CPU "
                      f"{plan.status} gap {plan.mip_gap:.2g} ({plan.variables} variables)", flush=True)
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--scale", type=float, default=0.01, help="workload scale (0.01: a 15 s window, ~2,600 tasks)")
    ap.add_argument("--max-decisions", type=int, default=20_000)
    ap.add_argument("--grid-profile", default="paper",
                    help="the grid profile whose oracle settings are timed (window, node and time limits)")
    ap.add_argument("--oracle-window", type=int, default=None, help="tasks per MILP window (default: the profile's)")
    ap.add_argument("--oracle-time-limit", type=float, default=None, help="seconds per solve (default: the profile's)")
    ap.add_argument("--oracle-node-limit", type=int, default=None, help="branch-and-bound nodes (default: the profile's)")
    ap.add_argument("--experts", nargs="+", default=list(DECIDING), choices=DECIDING)
    ap.add_argument("--windows", nargs="*", default=["20x12", "50x24", "100x24", "200x48"],
                    help="synthetic MILP windows, TASKSxSLOTS (tasks x slots)")
    ap.add_argument("--window-repeats", type=int, default=3)
    ap.add_argument("--window-time-limit", type=float, default=30.0)
    ap.add_argument("--quick", action="store_true", help="10 servers, scale 0.001, 150 decisions (checks the script)")
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(OUT.parents[1])}")
    args = ap.parse_args(argv)
    if args.quick and args.write:
        raise SystemExit("--write with --quick would record a check run as a result; drop one of them")
    if args.quick:
        args.servers, args.scale, args.max_decisions = [10], 0.001, 150
        args.windows, args.window_repeats = ["20x12"], 1
    try:
        sizes = [tuple(int(v) for v in w.lower().split("x")) for w in args.windows]
    except ValueError:
        raise SystemExit(f"--windows: expected TASKSxSLOTS such as 100x24, got {args.windows}") from None
    # the oracle as the grid runs it, unless an option overrides one setting
    oracle_kw = load_grid_profile(args.grid_profile).expert_options("oracle")
    for key in ("window", "time_limit", "node_limit"):
        if getattr(args, f"oracle_{key}") is not None:
            oracle_kw[key] = getattr(args, f"oracle_{key}")
    load0 = os.getloadavg()
    rows = []
    for m in args.servers:
        env = make_env(m, args.scale)
        for name in args.experts:
            row = run_expert(env, name, args.max_decisions, oracle_kw)
            rows.append(row)
            d, s = row["per_decision_cpu"], row.get("per_solve_cpu", {})
            solve = f", CPU per solve median {s['median_ms']:.1f} ms max {s['max_ms']:.1f} ms {row['statuses']}" \
                if s.get("n") else ""
            print(f"{m:4d} servers {name:13s} CPU per decision median {d['median_ms']:.3f} ms "
                  f"p95 {d['p95_ms']:.3f} ms max {d['max_ms']:.1f} ms ({row['decisions']} decisions){solve}",
                  flush=True)
    windows = bench_windows(sizes, args.window_time_limit, args.window_repeats)
    result = {"benchmark": "gridcommand_experts", "scale": args.scale, "servers": args.servers,
              "oracle": oracle_kw, "rows": rows, "milp_windows": windows,
              "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "loadavg_start": load0, "loadavg_end": os.getloadavg()},
              "note": "times from a machine busy with other work are not speed claims"}
    if args.write:
        write_benchmark(OUT, result)
        print(f"wrote {OUT}")
    return result


if __name__ == "__main__":
    main()
