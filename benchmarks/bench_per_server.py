"""Per-server policy benchmark: decision time and PPO learning speed against the flat path.

Two measurements, each as a ratio against today's flat path in the same run:

* **decision**: the per-decision time of a trained-shape policy (observation + numpy actor,
  what :class:`ilets.agents.ppo.PPOPolicy` does) on the same states: the first ``--n``
  paper-scale online tasks scheduled by Earliest-Finish, each state timed for the flat
  policy on the paper layout and for the per-server policy on its table, alternately;
* **learning**: PPO steps/s of ``learn`` (rollouts *and* updates) on the first ``--tasks``
  online tasks, flat and per-server alternating ``--repeats`` times (A B A B), with the
  study's PPO settings.

    python benchmarks/bench_per_server.py --out benchmarks/results/per_server.json
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
import torch as th

from ilets.agents.env import CloudSchedulingEnv
from ilets.agents.observation import StateSpec
from ilets.agents.policies import EarliestFinish
from ilets.agents.ppo import PPOPolicy, make_ppo
from ilets.config import FleetConfig, WorkloadConfig
from ilets.host import write_benchmark
from ilets.simulator.cloud import make_fleet
from ilets.study.profiles import method_defaults
from ilets.workloads.workload import synthetic_workload

DESIGNS = {"flat": ("flat", "paper"), "per-server": ("per-server", "per-server")}


def design(base, m: int, name: str):
    policy, layout = DESIGNS[name]
    return dataclasses.replace(base, policy=policy, observation=layout, workload=WorkloadConfig(scale=1.0),
                               fleet=FleetConfig(servers=m)).validate()


def decision_times(base, m: int, tasks, n: int) -> dict[str, np.ndarray]:
    """Per-decision seconds of each design on the same Earliest-Finish states, alternating."""
    cfgs = {k: design(base, m, k) for k in DESIGNS}
    fleet = make_fleet(cfgs["flat"].fleet, 0)
    policies = {}
    for k, cfg in cfgs.items():
        env = CloudSchedulingEnv(cfg, tasks=tasks, fleet=fleet)
        policies[k] = PPOPolicy(make_ppo(env, cfg.ppo, 0, cfg.policy, cfg.server_hidden), StateSpec.of(cfg))
    driver = CloudSchedulingEnv(cfgs["flat"], tasks=tasks.slice(0, n), fleet=fleet)
    driver.reset()
    for k, p in policies.items():  # compile and warm caches outside the timed loop
        p.act(driver.cloud, driver.current_task, driver.action_masks())
    ef, times = EarliestFinish(), {k: [] for k in DESIGNS}
    done = False
    while not done:
        cloud, task, mask = driver.cloud, driver.current_task, driver.action_masks()
        for k, p in policies.items():
            t0 = time.perf_counter()
            p.act(cloud, task, mask)
            times[k].append(time.perf_counter() - t0)
        done = driver.step(ef.act(cloud, task, mask))[2]
    return {k: np.asarray(v) for k, v in times.items()}


def learning_speed(base, m: int, tasks, steps: int) -> dict[str, float]:
    """Steps/s of one ``learn`` of each design (rollouts and updates), flat first."""
    out = {}
    for k in DESIGNS:
        cfg = design(base, m, k)
        env = CloudSchedulingEnv(cfg, tasks=tasks, fleet=make_fleet(cfg.fleet, 0))
        model = make_ppo(env, cfg.ppo, 0, cfg.policy, cfg.server_hidden)
        model.learn(cfg.ppo.n_steps)  # compile the kernels, warm the caches
        t0 = time.perf_counter()
        model.learn(steps, reset_num_timesteps=False)
        out[k] = steps / (time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--servers", default="50,200")
    ap.add_argument("--n", type=int, default=3000, help="decisions timed")
    ap.add_argument("--tasks", type=int, default=20_000, help="online tasks of the learning env")
    ap.add_argument("--steps", type=int, default=4096, help="learning steps per measurement")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    th.set_num_threads(1)
    base = method_defaults()
    online = synthetic_workload(WorkloadConfig(scale=1.0), 0).online
    tasks = online.slice(0, min(args.tasks, len(online)))
    rows = {}
    for m in [int(s) for s in args.servers.split(",")]:
        times = decision_times(base, m, tasks, args.n)
        learn = [learning_speed(base, m, tasks, args.steps) for _ in range(args.repeats)]
        p50 = {k: float(np.median(v) * 1e3) for k, v in times.items()}
        p95 = {k: float(np.quantile(v, 0.95) * 1e3) for k, v in times.items()}
        sps = {k: float(np.median([r[k] for r in learn])) for k in DESIGNS}
        rows[m] = {"decision_p50_ms": p50, "decision_p95_ms": p95,
                   "decision_ratio_p50": p50["per-server"] / p50["flat"],
                   "steps_per_s": sps, "steps_ratio": sps["per-server"] / sps["flat"],
                   "steps_ratio_pairs": [r["per-server"] / r["flat"] for r in learn]}
        print(f"{m:>4} servers  decision p50 flat {p50['flat']:.4f} ms, per-server {p50['per-server']:.4f} ms "
              f"({rows[m]['decision_ratio_p50']:.2f}x); learning flat {sps['flat']:,.0f}, per-server "
              f"{sps['per-server']:,.0f} steps/s ({rows[m]['steps_ratio']:.2f}x)", flush=True)
    write_benchmark(args.out, {"n": args.n, "tasks": len(tasks), "steps": args.steps, "repeats": args.repeats,
                               "ppo": dataclasses.asdict(base.ppo), "server_hidden": base.server_hidden,
                               "servers": rows})


if __name__ == "__main__":
    main()
