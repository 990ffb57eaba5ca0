"""Rollout benchmark: PPO learning steps/s, SB3's stock loop against FastMaskablePPO's.

Both learners run ``learn`` (rollouts *and* PPO's updates, with the per-decision recorder of
the online pass) on the same env: the first ``--tasks`` online tasks of the paper-scale
synthetic workload (``WorkloadConfig(scale=1.0)``, seed 0) on 50 and 200 servers, the
study's PPO settings (256-step rollouts, 4 epochs of minibatches of 64, 128-unit actor and
critic). The stock learner is sb3-contrib's ``MaskablePPO`` itself. Runs alternate stock /
fast ``--repeats`` times; the medians are compared, and so is each fast run with the stock
run just before it. The ratio, measured in one run on one machine, is the portable result.
The time split between collecting rollouts and PPO's update is reported for each, with the
env's own cost per step (random feasible actions).

    python benchmarks/bench_rollout.py --out benchmarks/results/rollout.json
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
import torch as th
from sb3_contrib import MaskablePPO

from ilets.agents.env import CloudSchedulingEnv
from ilets.agents.methods import DecisionLog, _Recorder
from ilets.agents.ppo import make_ppo, ppo_kwargs
from ilets.config import FleetConfig, WorkloadConfig
from ilets.host import write_benchmark
from ilets.simulator.cloud import make_fleet
from ilets.study.profiles import method_defaults
from ilets.study.run import system_info
from ilets.workloads.workload import synthetic_workload


def timed_learn(model, steps: int) -> dict:
    """``model.learn(steps)`` with the time split into rollout collection and PPO update."""
    spent = {"collect": 0.0, "train": 0.0}
    collect, train = model.collect_rollouts, model.train

    def timed_collect(*args, **kwargs):
        t = time.perf_counter()
        out = collect(*args, **kwargs)
        spent["collect"] += time.perf_counter() - t
        return out

    def timed_train():
        t = time.perf_counter()
        train()
        spent["train"] += time.perf_counter() - t

    model.collect_rollouts, model.train = timed_collect, timed_train
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps, callback=[_Recorder(DecisionLog())])
    wall = time.perf_counter() - t0
    n = model.num_timesteps
    return {"steps": n, "wall_s": wall, "steps_per_s": n / wall, "collect_us_per_step": spent["collect"] / n * 1e6,
            "train_us_per_step": spent["train"] / n * 1e6}


def env_floor(env: CloudSchedulingEnv, steps: int, seed: int = 0) -> float:
    """Microseconds per step of the env alone, driven by uniformly random feasible actions."""
    rng = np.random.default_rng(seed)
    env.reset()
    t0 = time.perf_counter()
    for _ in range(steps):
        feasible = np.flatnonzero(env.action_masks())
        if env.step(int(feasible[rng.integers(len(feasible))]))[2]:
            env.reset()
    return (time.perf_counter() - t0) / steps * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--servers", default="50,200")
    ap.add_argument("--tasks", type=int, default=20_000, help="online tasks in the env's segment")
    ap.add_argument("--steps", type=int, default=4096, help="learning steps per measurement")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    th.set_num_threads(1)
    base = method_defaults()
    online = synthetic_workload(WorkloadConfig(scale=1.0), 0).online
    tasks = online.slice(0, min(args.tasks, len(online)))
    steps = min(args.steps, len(tasks))
    rows = {}
    for m in [int(s) for s in args.servers.split(",")]:
        cfg = dataclasses.replace(base, workload=WorkloadConfig(scale=1.0), fleet=FleetConfig(servers=m)).validate()
        fleet = make_fleet(cfg.fleet, cfg.fleet.seed)
        runs: dict[str, list] = {"stock": [], "fast": []}
        for _ in range(args.repeats):
            for loop in ("stock", "fast"):
                env = CloudSchedulingEnv(cfg, tasks=tasks, fleet=fleet)
                if loop == "stock":
                    model = MaskablePPO("MlpPolicy", env, **ppo_kwargs(cfg.ppo, cfg.seed))
                else:
                    model = make_ppo(env, cfg.ppo, cfg.seed)
                runs[loop].append(timed_learn(model, steps))
        floor = float(np.median([env_floor(CloudSchedulingEnv(cfg, tasks=tasks, fleet=fleet), steps, r)
                                 for r in range(args.repeats)]))
        med = {loop: {k: float(np.median([r[k] for r in rs])) for k in rs[0]} for loop, rs in runs.items()}
        rows[m] = {"obs_size": 2 * m + 2, "stock": med["stock"], "fast": med["fast"], "env_only_us_per_step": floor,
                   "fast_over_stock": med["fast"]["steps_per_s"] / med["stock"]["steps_per_s"],
                   # each fast run over the stock run just before it: robust to a load that drifts
                   "fast_over_stock_pairs": [f["steps_per_s"] / s["steps_per_s"] for s, f in zip(runs["stock"], runs["fast"])],
                   "runs": runs}
        print(f"{m:>4} servers  stock {med['stock']['steps_per_s']:7.0f} steps/s "
              f"(collect {med['stock']['collect_us_per_step']:.0f} + update {med['stock']['train_us_per_step']:.0f} us/step)"
              f"  fast {med['fast']['steps_per_s']:7.0f} steps/s "
              f"(collect {med['fast']['collect_us_per_step']:.0f} + update {med['fast']['train_us_per_step']:.0f} us/step)"
              f"  fast/stock {rows[m]['fast_over_stock']:.2f}x (pairs "
              f"{', '.join(f'{r:.2f}' for r in rows[m]['fast_over_stock_pairs'])})  (env alone {floor:.0f} us/step)",
              flush=True)
    write_benchmark(args.out, {"tasks": len(tasks), "steps": steps, "repeats": args.repeats,
                               "ppo": dataclasses.asdict(base.ppo), "servers": rows, "system": system_info()})


if __name__ == "__main__":
    main()
