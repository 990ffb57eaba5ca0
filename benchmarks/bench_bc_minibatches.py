"""BC minibatch benchmark: the study's own minibatches against imitation's loader.

A grid-command clone's BC (:func:`ilets.agents.oinpt.behaviour_clone`) takes its minibatches
from :func:`ilets.agents.oinpt.minibatches`, which gathers a minibatch of rows at once;
imitation's own loader builds one dict per decision and collates them. Both give BC the same
minibatches in the same order (tested), so the clone is the same and only the time differs.
For each fleet size: the teacher's demonstrations of the clone pilot's first training episode
(the per-server policy, Lyapunov), then ``--batches`` BC minibatches from a fresh policy with
imitation's loader (the reference) and with ours, alternating ``--repeats`` times (A B A B),
each pair's ratio kept. Every pair's two policies are checked to be the same, tensor for tensor.

    python benchmarks/bench_bc_minibatches.py --out benchmarks/results/bc_minibatches.json
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
import torch as th

from ilets.agents import oinpt
from ilets.agents.ppo import make_ppo
from ilets.gridcommand import episodes as EP, teacher as TE
from ilets.gridcommand.env import GridCommandEnv
from ilets.host import write_benchmark
from ilets.gridcommand.study.scenario import load_profile

# the retired clone pilot ran this scenario and teacher (its episode count does not enter a minibatch)
PROFILE = "gridcommand-grid-per-server-episodes-own"


def bc_seconds(env: GridCommandEnv, demos, cfg, batches: int, imitations: bool) -> tuple[float, dict]:
    """Seconds of ``batches`` BC minibatches from a fresh policy, and the policy it learned;
    ``imitations``: through imitation's own loader (the reference)."""
    run = env.config.run
    th.manual_seed(0)
    model = make_ppo(env, run.ppo, 0, run.policy, run.server_hidden, defer_head=run.defer_head)
    own = oinpt.minibatches
    if imitations:  # imitation takes Transitions through its own data loader
        oinpt.minibatches = lambda d, size: oinpt.to_transitions(d)  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        oinpt.behaviour_clone(model, demos, cfg, 0, report=False, batches=batches)
        seconds = time.perf_counter() - t0
    finally:
        oinpt.minibatches = own
    return seconds, model.policy.state_dict()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--servers", default="50,200")
    ap.add_argument("--batches", type=int, default=3000, help="BC minibatches per measurement")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    th.set_num_threads(1)
    grid = load_profile(PROFILE)
    base = grid.scenario_config()
    rows = {}
    for m in [int(s) for s in args.servers.split(",")]:
        train = EP.training_config(base, grid.train_regime, m, 100)
        env = GridCommandEnv(train)
        demos = TE.demonstrate(env, grid.pipeline.teacher, grid.pipeline.demo_tasks)
        cfg = dataclasses.replace(train.run.oinpt, bc_epochs=1)
        bc_seconds(env, demos, cfg, 50, False)  # warm the kernels outside the timed runs
        pairs = []
        for _ in range(args.repeats):
            theirs, a = bc_seconds(env, demos, cfg, args.batches, True)
            ours, b = bc_seconds(env, demos, cfg, args.batches, False)
            if not all(th.equal(a[k], b[k]) for k in a):
                raise SystemExit(f"{m} servers: the two loaders taught different policies")
            pairs.append({"imitation_s": theirs, "ours_s": ours, "speedup": theirs / ours})
        speedup = float(np.median([p["speedup"] for p in pairs]))
        rows[m] = {"decisions": len(demos), "pairs": pairs, "speedup_median": speedup,
                   "minibatches_per_s": {"imitation": args.batches / float(np.median([p["imitation_s"] for p in pairs])),
                                         "ours": args.batches / float(np.median([p["ours_s"] for p in pairs]))}}
        print(f"{m:>4} servers  {len(demos):,} decisions  BC {args.batches} minibatches: imitation's loader "
              f"{np.median([p['imitation_s'] for p in pairs]):.1f} s, ours {np.median([p['ours_s'] for p in pairs]):.1f} s "
              f"({speedup:.2f}x, same policy)", flush=True)
    write_benchmark(args.out, {"profile": PROFILE, "batches": args.batches, "repeats": args.repeats,
                               "batch_size": base.run.oinpt.batch_size, "servers": rows})


if __name__ == "__main__":
    main()
