"""Benchmark the window experts: time per call and optimality gap.

(p) Paper scale (:func:`ilets.study.expert_tables.paper_timing_table`): CPU ms per GA call, per PSO
call and per OAIL request (both experts on one window, sharing their preparation) on a
*light* and the most *loaded* snapshot of the full 259,368-task online window scheduled by
earliest-finish, at 50, 100 and 200 servers. These are the states OAIL's emulators receive
(emulator copies); the request's time is what ``oail.latency_s`` emulates. Target: each
expert at most 15 ms per call on the loaded snapshots.

(a) Time per call of GA, PSO and greedy on 30-task windows at 50/100/200 servers
(:func:`ilets.study.expert_tables.timing_table`). Each snapshot is the online segment of
``synthetic_workload(WorkloadConfig(scale=0.02), 0)`` scheduled by earliest-finish up to a
point; the next 30 tasks are the window. Reported as
the median wall ms per call (and CPU ms, which other processes on a shared host do not
inflate) and as a ratio to the greedy expert timed in the same run, plus each
expert's mean cost saving over greedy (exact costs).

(b) Optimality gap on small loaded cases (:func:`ilets.agents.experts.small_case`: 3-5 servers,
4-6 tasks) against :func:`ilets.agents.experts.exact_optimum` (:func:`ilets.study.expert_tables.gap_cases`):
mean and max relative gap and the share of cases solved optimally.

Usage::

    python benchmarks/bench_experts.py --out results/bench_experts.json
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
from pathlib import Path

import numpy as np

from ilets.agents.experts import EXPERTS
from ilets.config import ExpertConfig, RewardConfig, to_dict
from ilets.expert_table import EXPERT_LABELS, SEARCH_EXPERTS
from ilets.host import write_benchmark
from ilets.study.expert_tables import gap_cases, gap_table, paper_timing_table, timing_table


def bench_gap(cfg: ExpertConfig, reward: RewardConfig, cases: int) -> tuple[list[dict], float]:
    """Gap to the exact optimum per expert over ``cases`` small cases; also the optimum's mean s."""
    rows = gap_cases(cfg, reward, cases, EXPERTS)
    opt_ms = [r["optimum_ms"] for r in rows if r["expert"] == EXPERTS[0]]
    return gap_table(rows), 1e-3 * float(np.mean(opt_ms))


def markdown(timing: list[dict], gap: list[dict], paper: list[dict]) -> str:
    """The three tables as markdown."""
    lines = ["| servers | snapshot | queued tasks | snapshot KB | "
             + "".join(f"{EXPERT_LABELS[n]} CPU ms | " for n in SEARCH_EXPERTS) + "request CPU ms (p90) |",
             "|---:|---|---:|---:|" + "---:|" * len(SEARCH_EXPERTS) + "---:|"]
    by = {(r["servers"], r["snapshot"], r["expert"]): r for r in paper}
    for (m, snap, e), r in by.items():
        if e != "request":
            continue
        lines.append(f"| {m} | {snap} | {r['queued']} | {r['snapshot_kb']:.1f} | "
                     + "".join(f"{by[(m, snap, n)]['cpu_ms']:.1f} | " for n in SEARCH_EXPERTS)
                     + f"{r['cpu_ms']:.1f} ({r['cpu_ms_p90']:.1f}) |")
    lines += ["", "| servers | expert | ms/call (median) | p90 ms | CPU ms/call | x greedy | mean saving vs greedy "
              "| max saving |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in timing:
        lines.append(f"| {r['servers']} | {r['expert']} | {r['ms_per_call']:.1f} | {r['ms_p90']:.1f} | "
                     f"{r['cpu_ms_per_call']:.1f} | "
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
    ap.add_argument("--paper-repeats", type=int, default=20, help="calls per paper-scale snapshot and expert")
    args = ap.parse_args(argv)
    cfg, reward = ExpertConfig(), RewardConfig()
    paper = paper_timing_table(cfg, reward, args.sizes, args.paper_repeats)
    timing = timing_table(cfg, reward, args.sizes, args.stops, args.repeats, EXPERTS)
    gap, opt_s = bench_gap(cfg, reward, args.cases)
    print(markdown(timing, gap, paper))
    print(f"\nexact optimum: {1e3 * opt_s:.1f} ms per small case (enumeration, batched exact fitness)")
    result = {"paper_scale": paper, "timing": timing, "gap": gap, "exact_optimum_ms": 1e3 * opt_s,
              "config": {"experts": to_dict(cfg), "reward": to_dict(reward)}, "numpy": np.__version__}
    return write_benchmark(args.out, result)


if __name__ == "__main__":
    main()
