"""Benchmark the simulator: a full Earliest-Finish replay on Cloud and on its SimPy twin.

For each fleet size (default 50, 100, 200 servers) the whole default workload
(``synthetic_workload``, offline and online segments as one table: 590,000 tasks at
``--scale 1``) is replayed with Earliest-Finish choosing every server:

* main: :func:`ilets.agents.policies.schedule` with :class:`ilets.agents.policies.EarliestFinish` over
  :class:`ilets.simulator.cloud.Cloud` (the study's own loop and policy; a local exact
  Earliest-Finish is used only if ``ilets.agents.policies`` is missing, and the JSON says which);
* twin: :func:`ilets.simulator.twin.earliest_finish_twin`, the SimPy implementation deciding
  Earliest-Finish from its own state.

The twin is slow at heavy load, so ``--twin-scale`` may restrict it to a prefix of the
same table (a fraction of the 590,000 tasks). The main simulator is then timed on that same
prefix too and the speed ratio main/twin is computed from the two prefix runs (same tasks,
same decisions), so it is a per-task ratio; the main simulator's full-table time is
reported separately. Both runs' assignments are compared as a by-product: they must agree.

Reported per size: wall seconds, CPU seconds and tasks/s of each simulator, ratio
(twin seconds / main seconds on the same tasks, i.e. how many times faster main is), and
summary metrics of the main run. Targets (checked and printed): main >= 4x twin at every
size, and the full 200-server replay <= 15 s.

Usage::

    python benchmarks/bench_simulator.py --out results/bench_simulator.json
    python benchmarks/bench_simulator.py --scale 0.1 --servers 50 --skip-twin
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import time
from pathlib import Path

import numpy as np

from ilets.agents.policies import EarliestFinish, schedule
from ilets.config import FleetConfig, WorkloadConfig
from ilets.host import write_benchmark
from ilets.simulator.cloud import Cloud, Fleet, make_fleet
from ilets.simulator.twin import earliest_finish_twin
from ilets.workloads.workload import TaskTable, synthetic_workload

TARGET_RATIO = 4.0
TARGET_200_S = 15.0


def full_table(scale: float, seed: int) -> TaskTable:
    """Offline and online segments of the default workload as one table."""
    wl = synthetic_workload(WorkloadConfig(scale=scale), seed)
    cols = (np.concatenate([getattr(wl.offline, k), getattr(wl.online, k)]) for k in ("arrival", "cpu", "length", "deadline"))
    return TaskTable(*cols, source=f"{wl.offline.source} offline+online")


def main_replay(tasks: TaskTable, fleet: Fleet) -> Cloud:
    """Earliest-Finish over Cloud through the study's own policy and replay loop."""
    return schedule(tasks, fleet, EarliestFinish())


def timed(fn, *args):
    """(result, wall s, CPU s) of one call."""
    w, c = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - w, time.process_time() - c


def run(args: argparse.Namespace) -> dict:
    """Time both simulators at every size; returns the JSON-able figures."""
    sizes = [int(s) for s in args.servers.split(",") if s.strip()]
    tasks = full_table(args.scale, args.seed)
    n = len(tasks)
    twin_scale = args.scale if args.twin_scale is None else min(args.twin_scale, args.scale)
    n_twin = 0 if args.skip_twin else min(n, max(1, round(n * twin_scale / args.scale)))
    prefix = tasks.slice(0, n_twin)
    rows = []
    for m in sizes:
        fleet = make_fleet(FleetConfig(servers=m), args.fleet_seed)
        cloud, wall, cpu_s = timed(main_replay, tasks, fleet)
        row = {"servers": m, "tasks": n, "main_policy": "ilets.agents.policies.EarliestFinish + schedule", "main_s": wall,
               "main_cpu_s": cpu_s,
               "main_tasks_per_s": n / wall,
               "main_summary": {k: float(v) for k, v in cloud.summary().items()}}
        print(f"[{m:>4} servers] main: {n:,} tasks in {wall:.2f} s = {n / wall:,.0f} tasks/s "
              f"(CPU {cpu_s:.2f} s)", flush=True)
        if n_twin:
            if n_twin == n:
                main_prefix_s, main_prefix_cpu_s, main_assign = wall, cpu_s, np.asarray(cloud.records["server"])
            else:
                pc, main_prefix_s, main_prefix_cpu_s = timed(main_replay, prefix, fleet)
                main_assign = np.asarray(pc.records["server"])
                del pc
            (twin_assign, _, _, _), twin_s, twin_cpu_s = timed(earliest_finish_twin, fleet, prefix)
            row.update({
                "twin_tasks": n_twin, "twin_s": twin_s, "twin_cpu_s": twin_cpu_s,
                "twin_tasks_per_s": n_twin / twin_s, "main_on_twin_tasks_s": main_prefix_s,
                "main_on_twin_tasks_cpu_s": main_prefix_cpu_s,
                "ratio_main_over_twin": twin_s / main_prefix_s,
                # CPU time is less inflated than wall time when other jobs share the cores
                "ratio_main_over_twin_cpu": twin_cpu_s / main_prefix_cpu_s,
                "assignments_agree": bool(np.array_equal(main_assign, twin_assign)),
            })
            print(f"[{m:>4} servers] twin: {n_twin:,} tasks in {twin_s:.2f} s = {n_twin / twin_s:,.0f} tasks/s; "
                  f"main is {row['ratio_main_over_twin']:.1f}x faster on the same tasks "
                  f"({row['ratio_main_over_twin_cpu']:.1f}x in CPU time); "
                  f"assignments agree: {row['assignments_agree']}", flush=True)
        rows.append(row)
        del cloud

    targets = {}
    ratios = [r["ratio_main_over_twin"] for r in rows if "ratio_main_over_twin" in r]
    if ratios:
        targets["main_at_least_4x_twin"] = bool(min(ratios) >= TARGET_RATIO)
        targets["main_at_least_4x_twin_cpu_time"] = bool(
            min(r["ratio_main_over_twin_cpu"] for r in rows if "ratio_main_over_twin_cpu" in r) >= TARGET_RATIO)
    full = [r for r in rows if r["servers"] == 200]
    if full and args.scale == 1.0:
        targets["full_200_within_15_s"] = bool(full[0]["main_s"] <= TARGET_200_S)
        targets["full_200_within_15_s_cpu_time"] = bool(full[0]["main_cpu_s"] <= TARGET_200_S)
    return {
        "benchmark": "simulator full replay, Earliest-Finish in the loop",
        "scale": args.scale, "tasks": n, "workload_seed": args.seed, "fleet_seed": args.fleet_seed,
        "twin_scale": None if args.skip_twin else twin_scale,
        "twin_note": ("twin skipped" if args.skip_twin else
                      "twin on the full table" if n_twin == n else
                      f"twin on the first {n_twin:,} tasks; ratio from main timed on the same prefix"),
        "rows": rows, "targets": targets,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=1.0, help="workload scale (1.0 = 590,000 tasks)")
    p.add_argument("--servers", default="50,100,200", help="comma-separated fleet sizes")
    p.add_argument("--skip-twin", action="store_true", help="time the main simulator only")
    p.add_argument("--twin-scale", type=float, default=None,
                   help="run the twin on a prefix of this fraction of 590,000 tasks (default: --scale)")
    p.add_argument("--seed", type=int, default=0, help="workload seed")
    p.add_argument("--fleet-seed", type=int, default=0, help="fleet seed")
    p.add_argument("--out", type=Path, default=None, help="write the figures here as JSON")
    args = p.parse_args(argv)
    result = run(args)
    print("\nservers  main tasks/s  main s (CPU)     twin tasks/s  twin s (CPU) [tasks]     main/twin wall (CPU)")
    for r in result["rows"]:
        twin = (f"{r['twin_tasks_per_s']:>12,.0f}  {r['twin_s']:>6.1f} ({r['twin_cpu_s']:.1f}) [{r['twin_tasks']:,}]"
                f"  {r['ratio_main_over_twin']:>6.1f}x ({r['ratio_main_over_twin_cpu']:.1f}x)"
                if "twin_s" in r else "           -       -")
        print(f"{r['servers']:>7}  {r['main_tasks_per_s']:>12,.0f}  {r['main_s']:>6.1f} ({r['main_cpu_s']:.1f})  {twin}")
    print(result["twin_note"])
    for k, v in result["targets"].items():
        print(f"target {k}: {'met' if v else 'MISSED'}")
    write_benchmark(args.out, result)
    if args.out:
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
