"""Per-decision cost of the grid-command scenario: GridCommandEnv.step against CloudSchedulingEnv.step.

Both environments replay the same small workload with the same actions (Earliest-Finish,
chosen outside the timed region), and every ``step`` call is timed on its own; the result
is the ratio of their medians (the portable number), per fleet size. The grid environment
runs with one down event over most of the window, so nearly every step takes the scored
path (target lookup, tracking term, observation blocks), once without and once with an
admission cap. Environment set-up (the counterfactual run) is reported separately.

    python benchmarks/bench_gridcommand_decision.py            # 50 and 200 servers, print only
    python benchmarks/bench_gridcommand_decision.py --write    # also benchmarks/results/gridcommand_decision.json
    python benchmarks/bench_gridcommand_decision.py --quick    # a few seconds: checks the script runs

Numbers from a machine busy with other work are not speed claims; run it on an idle one.
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from ilets.agents.env import CloudSchedulingEnv
from ilets.agents.policies import EarliestFinish
from ilets.config import FleetConfig, RunConfig, WorkloadConfig
from ilets.gridcommand.config import CommandSpec, GridCommandConfig
from ilets.gridcommand.env import GridCommandEnv
from ilets.host import write_benchmark

OUT = Path(__file__).resolve().parent / "results" / "gridcommand_decision.json"


def timed_episode(env, max_steps: int) -> tuple[np.ndarray, list[int]]:
    """Seconds per ``step`` over one episode (at most ``max_steps``) and the actions taken."""
    policy = EarliestFinish()
    env.reset()
    m = len(env.fleet)
    times, actions = [], []
    done = False
    while not done and len(times) < max_steps:
        a = policy.act(env.cloud, env.current_task, env.action_masks()[:m])
        t0 = time.perf_counter()
        _, _, done, _, _ = env.step(a)
        times.append(time.perf_counter() - t0)
        actions.append(a)
    return np.array(times), actions


def stats(seconds: np.ndarray) -> dict[str, float]:
    """p50, p95 and mean in microseconds."""
    us = seconds * 1e6
    return {"p50_us": float(np.median(us)), "p95_us": float(np.percentile(us, 95)), "mean_us": float(us.mean()),
            "steps": int(len(us))}


def measure(servers: int, scale: float, max_steps: int, repeats: int) -> dict:
    """Plain vs grid (no cap, cap 0.9) step latency at one fleet size; best of ``repeats``."""
    run = RunConfig(workload=WorkloadConfig(scale=scale), fleet=FleetConfig(servers=servers)).validate()
    window = 1500.0 * scale
    event = CommandSpec(direction="down", depth=0.25, start_after_s=0.05 * window, duration_s=0.9 * window,
                        notice_s=0.05 * window, ramp_s=0.05 * window, band=0.2)
    grid = GridCommandConfig(run=run, regime="explicit", commands=(event,), slot_s=window / 100).validate()
    capped = dataclasses.replace(grid, cap_fraction=0.95).validate()
    out: dict = {"servers": servers, "scale": scale}
    t0 = time.perf_counter()
    envs = {"plain": CloudSchedulingEnv(run), "grid": GridCommandEnv(grid), "grid_cap": GridCommandEnv(capped)}
    out["setup_s"] = time.perf_counter() - t0
    for name, env in envs.items():
        best = None
        for _ in range(repeats):
            seconds, actions = timed_episode(env, max_steps)
            s = stats(seconds)
            if best is None or s["p50_us"] < best["p50_us"]:
                best = s
        out[name] = best
    out["ratio_grid_over_plain_p50"] = out["grid"]["p50_us"] / out["plain"]["p50_us"]
    out["ratio_grid_cap_over_plain_p50"] = out["grid_cap"]["p50_us"] / out["plain"]["p50_us"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", default="50,200", help="fleet sizes, comma separated")
    ap.add_argument("--scale", type=float, default=0.005, help="workload scale (0.005: ~1,300 online tasks)")
    ap.add_argument("--max-steps", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="10 servers, scale 0.001, one repeat (checks the script)")
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(OUT.parents[2])}")
    args = ap.parse_args()
    if args.quick:
        args.servers, args.scale, args.repeats, args.max_steps = "10", 0.001, 1, 300
    rows = [measure(int(m), args.scale, args.max_steps, args.repeats) for m in args.servers.split(",")]
    for r in rows:
        print(f"M={r['servers']:>4}  plain p50 {r['plain']['p50_us']:8.1f} us  grid {r['grid']['p50_us']:8.1f} us "
              f"(x{r['ratio_grid_over_plain_p50']:.2f})  grid+cap {r['grid_cap']['p50_us']:8.1f} us "
              f"(x{r['ratio_grid_cap_over_plain_p50']:.2f})  set-up {r['setup_s']:.2f} s")
    if args.write:
        if args.quick:
            raise SystemExit("--write with --quick would record a check run as a result; drop one of them")
        write_benchmark(OUT, {"rows": rows, "args": vars(args)})
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
