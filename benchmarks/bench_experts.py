"""Benchmark the window experts: time per call and optimality gap.

(a) Time per call of GA, PSO and greedy on 30-task windows at 50/100/200 servers. Each
snapshot is the online segment of ``synthetic_workload(WorkloadConfig(scale=0.02), 0)``
scheduled by earliest-finish up to a point; the next 30 tasks are the window. Reported as
the median wall ms per call (and CPU ms, which other processes on a shared host do not
inflate) and as a ratio to the greedy expert timed in the same run, plus each
expert's mean cost saving over greedy (exact costs).

(b) Optimality gap on small loaded cases (:func:`ilets.experts.small_case`: 3-5 servers,
4-6 tasks) against :func:`ilets.experts.exact_optimum`: mean and max relative gap and the
share of cases solved optimally.

Usage::

    python benchmarks/bench_experts.py --out results/bench_experts.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from ilets.cloud import Cloud, make_fleet
from ilets.config import ExpertConfig, FleetConfig, RewardConfig, WorkloadConfig, to_dict
from ilets.experts import exact_optimum, make_expert, small_case, window_from_table
from ilets.objective import Task
from ilets.policies import EarliestFinish
from ilets.workload import synthetic_workload

EXPERTS = ("ga", "pso", "greedy")


def loaded_snapshots(servers: int, stops: list[int], window: int) -> list[tuple[Cloud, list[Task]]]:
    """Snapshots after ``stops`` online tasks placed by earliest-finish, with the next window."""
    tasks = synthetic_workload(WorkloadConfig(scale=0.02), 0).online
    cloud = Cloud(make_fleet(FleetConfig(servers=servers), 0), t0=float(tasks.arrival[0]), record=False)
    policy = EarliestFinish()
    out, done = [], 0
    for stop in stops:
        for task in window_from_table(tasks, done, stop):
            cloud.advance(task.arrival)
            cloud.assign(task.index, task.arrival, task.cpu, task.length, task.deadline,
                         policy.act(cloud, task, cloud.feasible(task.cpu)))
        done = stop
        win = window_from_table(tasks, stop, stop + window)
        snap = cloud.clone()
        snap.advance(win[0].arrival)
        out.append((snap, win))
    return out


def bench_timing(cfg: ExpertConfig, reward: RewardConfig, sizes: list[int], stops: list[int],
                 repeats: int) -> list[dict]:
    """Median ms per call and mean saving over greedy, per fleet size and expert."""
    rows = []
    for m in sizes:
        snaps = loaded_snapshots(m, stops, cfg.window)
        util = float(np.mean([s.used.sum() / s.fleet.capacity.sum() for s, _ in snaps]))
        times: dict[str, list[float]] = {n: [] for n in EXPERTS}
        cpu_times: dict[str, list[float]] = {n: [] for n in EXPERTS}
        costs: dict[str, list[float]] = {n: [] for n in EXPERTS}
        for n in EXPERTS:
            expert = make_expert(n, cfg, reward)
            expert.plan(*snaps[0], np.random.default_rng(0))  # warm caches and imports
            for i, (cloud, win) in enumerate(snaps):
                for r in range(repeats):
                    t0, c0 = time.perf_counter(), time.process_time()
                    plan = expert.plan(cloud, win, np.random.default_rng(1000 * i + r))
                    times[n].append(time.perf_counter() - t0)
                    cpu_times[n].append(time.process_time() - c0)
                    costs[n].append(plan.cost)
        greedy_ms = 1e3 * statistics.median(times["greedy"])
        greedy_cost = np.array(costs["greedy"])
        for n in EXPERTS:
            ms = 1e3 * statistics.median(times[n])
            saving = (greedy_cost - np.array(costs[n])) / greedy_cost
            rows.append({"servers": m, "expert": n, "ms_per_call": ms, "ms_p90": 1e3 * float(np.quantile(times[n], 0.9)),
                         "cpu_ms_per_call": 1e3 * statistics.median(cpu_times[n]),
                         "ratio_to_greedy": ms / greedy_ms, "mean_saving_vs_greedy": float(saving.mean()),
                         "max_saving_vs_greedy": float(saving.max()), "calls": len(times[n]), "cpu_util": util})
    return rows


def bench_gap(cfg: ExpertConfig, reward: RewardConfig, cases: int) -> tuple[list[dict], float]:
    """Gap to the exact optimum per expert over ``cases`` small cases; also the optimum's mean s."""
    gaps: dict[str, list[float]] = {n: [] for n in EXPERTS}
    experts = {n: make_expert(n, cfg, reward) for n in EXPERTS}
    t_opt = 0.0
    for seed in range(cases):
        m, w = 3 + seed % 3, 4 + seed % 3
        cloud, win = small_case(seed, servers=m, window=w, background=3 * m)
        t0 = time.perf_counter()
        opt = exact_optimum(cloud, win, reward, cfg.miss_penalty)
        t_opt += time.perf_counter() - t0
        for n, expert in experts.items():
            cost = expert.plan(cloud, win, np.random.default_rng(seed)).cost
            gaps[n].append((cost - opt.cost) / opt.cost)
    rows = []
    for n, v in gaps.items():
        g = np.array(v)
        rows.append({"expert": n, "cases": cases, "mean_gap": float(g.mean()), "max_gap": float(g.max()),
                     "optimal_share": float((g < 1e-9).mean())})
    return rows, t_opt / cases


def markdown(timing: list[dict], gap: list[dict]) -> str:
    """Both tables as markdown."""
    lines = ["| servers | expert | ms/call (median) | p90 ms | CPU ms/call | x greedy | mean saving vs greedy | max saving |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in timing:
        lines.append(f"| {r['servers']} | {r['expert']} | {r['ms_per_call']:.1f} | {r['ms_p90']:.1f} | {r['cpu_ms_per_call']:.1f} | "
                     f"{r['ratio_to_greedy']:.1f} | {100 * r['mean_saving_vs_greedy']:.2f}% | "
                     f"{100 * r['max_saving_vs_greedy']:.2f}% |")
    lines += ["", "| expert | cases | mean gap | max gap | optimal |", "|---|---:|---:|---:|---:|"]
    for r in gap:
        lines.append(f"| {r['expert']} | {r['cases']} | {100 * r['mean_gap']:.3f}% | {100 * r['max_gap']:.2f}% | "
                     f"{100 * r['optimal_share']:.0f}% |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    """Run both benchmarks, print markdown, write JSON to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="JSON output path")
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200])
    ap.add_argument("--stops", type=int, nargs="+", default=[1000, 2000, 3000, 4000],
                    help="online tasks placed before each timed window")
    ap.add_argument("--repeats", type=int, default=3, help="calls per window and expert (different seeds)")
    ap.add_argument("--cases", type=int, default=200, help="small cases for the gap table")
    args = ap.parse_args(argv)
    cfg, reward = ExpertConfig(), RewardConfig()
    timing = bench_timing(cfg, reward, args.sizes, args.stops, args.repeats)
    gap, opt_s = bench_gap(cfg, reward, args.cases)
    print(markdown(timing, gap))
    print(f"\nexact optimum: {1e3 * opt_s:.1f} ms per small case (enumeration, batched exact fitness)")
    result = {"timing": timing, "gap": gap, "exact_optimum_ms": 1e3 * opt_s,
              "config": {"experts": to_dict(cfg), "reward": to_dict(reward)},
              "host": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "numpy": np.__version__, "machine": platform.machine()}}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
