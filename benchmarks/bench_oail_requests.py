"""Benchmark one OAIL request through the emulator against the same request called directly.

OAIL's ``oail_expert_cpu_s`` adds up the CPU time each emulator worker spends inside
:func:`ilets.agents.emulator.run_emulator`. This script asks whether that path costs more than
the experts themselves, as ``bench_experts.py`` times them, on the same states: the
paper-scale *light* and *loaded* snapshots of ``bench_experts.py``
(:func:`ilets.study.expert_tables.paper_snapshots`, emulator copies of the full online window)
at each fleet size, GA then PSO on one 30-task window with the study's expert, reward and
observation settings, one seed per repeat. Three measurements, each a ratio within this run:

* **steady state**: per request, the CPU of a direct in-process ``plan_window`` call (the
  reference: what ``bench_experts.py`` reports as a request) against the CPU the emulator
  worker reports for the same request sent pickled to OAIL's own pool
  (:meth:`OAILCallback._new_pool`), alternately; also the round trip's wall time, the
  learner's CPU for it (pickling, the pool's threads) and the pickled sizes. The two paths'
  plans are compared and must be identical;
* **first request of a worker**: a pool forked before the experts' kernels were loaded (how
  OAIL started its emulators before :func:`ilets.agents.experts.warm_up`; the first request
  then loads them) against OAIL's pool now (kernels loaded before the fork). Measured first,
  while this process has not run an expert; the load moves to the learner's process
  (``parent_warm_up_cpu_ms``, once per process), where a replaced pool no longer repeats it.

Usage::

    python benchmarks/bench_oail_requests.py --out results/bench_oail_requests.json
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import multiprocessing
import pickle
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from ilets.agents.experts import make_expert, plan_window
from ilets.agents.emulator import EmulatorRequest, run_emulator
from ilets.agents.oail import OAILCallback
from ilets.agents.observation import StateSpec
from ilets.host import write_benchmark
from ilets.lifecycle import die_with_parent
from ilets.study.expert_tables import paper_snapshots
from ilets.study.profiles import method_defaults

def make_requests(sizes: list[int], repeats: int) -> list[tuple[int, str, EmulatorRequest]]:
    """``(servers, snapshot, request)`` for every size, snapshot and repeat (seed ``1000 * m + r``)."""
    cfg = method_defaults()
    state = StateSpec.of(cfg)
    out, rid = [], 0
    for m in sizes:
        for name, (cloud, window) in paper_snapshots(m, cfg.experts.window).items():
            for r in range(repeats):
                rid += 1
                out.append((m, name, EmulatorRequest(rid, 0, cloud, window, cfg.oail.experts, cfg.experts, cfg.reward,
                                                     state, 1000 * m + r)))
    return out


def direct(req: EmulatorRequest) -> tuple[list, float]:
    """The request's plans computed in this process, and their CPU seconds (the reference)."""
    c0 = time.process_time()
    planners = [make_expert(n, req.experts_cfg, req.reward, req.state) for n in req.experts]
    plans = plan_window(planners, req.cloud, req.window, np.random.default_rng(req.seed))
    return plans, time.process_time() - c0


def first_request(pool: ProcessPoolExecutor, req: EmulatorRequest) -> float:
    """CPU seconds the worker reports for its first request (the pool's workers started first)."""
    pool.submit(int, 0).result()
    return pool.submit(run_emulator, req).result().cpu_seconds


def cold_pool() -> ProcessPoolExecutor:
    """A pool as OAIL forked it before the warm-up: its initializer only ties it to this process."""
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                               initializer=die_with_parent)


def same_plans(a: list, b: list) -> bool:
    """Whether two lists of plans agree bit for bit on what OAIL uses."""
    return all(np.array_equal(x.assignment, y.assignment) and x.cost == y.cost
               and np.array_equal(x.observations, y.observations) and np.array_equal(x.rewards, y.rewards)
               for x, y in zip(a, b)) and len(a) == len(b)


def main(argv: list[str] | None = None) -> dict:
    """Measure, print a table, write JSON to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="JSON output path")
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200])
    ap.add_argument("--repeats", type=int, default=20, help="requests per snapshot (seeds)")
    args = ap.parse_args(argv)
    reqs = make_requests(args.sizes, args.repeats)
    cfg = method_defaults()

    # first requests: before anything in this process has run an expert
    with cold_pool() as pool:
        cold_s = first_request(pool, reqs[0][2])
    callback = OAILCallback(cfg.oail, cfg.experts, cfg.reward, seed=0)
    c0 = time.process_time()
    pool = callback._new_pool()  # OAIL's pool: loads the kernels here, then forks
    parent_warm_s = time.process_time() - c0
    try:
        warm_s = first_request(pool, reqs[0][2])
        rows, identical = [], True
        for key in dict.fromkeys((m, name) for m, name, _ in reqs):
            d_cpu, e_cpu, e_wall, trip, parent, kb_req, kb_res = [], [], [], [], [], [], []
            for m, name, req in reqs:
                if (m, name) != key:
                    continue
                plans, seconds = direct(req)
                d_cpu.append(seconds)
                w0, c0 = time.perf_counter(), time.process_time()
                result = pool.submit(run_emulator, req).result()
                trip.append(time.perf_counter() - w0)
                parent.append(time.process_time() - c0)
                e_cpu.append(result.cpu_seconds)
                e_wall.append(result.seconds)
                kb_req.append(len(pickle.dumps(req)) / 1024)
                kb_res.append(len(pickle.dumps(result)) / 1024)
                identical &= same_plans(result.plans, plans)
            direct_ms, emulator_ms = 1e3 * float(np.median(d_cpu)), 1e3 * float(np.median(e_cpu))
            rows.append({"servers": key[0], "snapshot": key[1], "requests": len(d_cpu),
                         "direct_cpu_ms": direct_ms, "emulator_cpu_ms": emulator_ms,
                         "ratio_emulator_over_direct": emulator_ms / direct_ms,
                         "emulator_wall_ms": 1e3 * float(np.median(e_wall)),
                         "round_trip_wall_ms": 1e3 * float(np.median(trip)),
                         "learner_cpu_ms_per_request": 1e3 * float(np.median(parent)),
                         "request_kb": float(np.median(kb_req)), "result_kb": float(np.median(kb_res))})
    finally:
        callback._stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
    first = {"cold_cpu_ms": 1e3 * cold_s, "warm_cpu_ms": 1e3 * warm_s, "ratio_cold_over_warm": cold_s / warm_s,
             "parent_warm_up_cpu_ms": 1e3 * parent_warm_s}
    print("| servers | snapshot | direct CPU ms | emulator CPU ms | ratio | round trip ms | learner CPU ms | "
          "request KB | result KB |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['servers']} | {r['snapshot']} | {r['direct_cpu_ms']:.1f} | {r['emulator_cpu_ms']:.1f} | "
              f"{r['ratio_emulator_over_direct']:.2f} | {r['round_trip_wall_ms']:.1f} | "
              f"{r['learner_cpu_ms_per_request']:.2f} | {r['request_kb']:.1f} | {r['result_kb']:.1f} |")
    print(f"\nplans identical on both paths: {identical}")
    print(f"first request of a worker: {first['cold_cpu_ms']:.0f} ms CPU forked cold, {first['warm_cpu_ms']:.1f} ms "
          f"forked warm ({first['ratio_cold_over_warm']:.0f}x); the learner's one-off warm-up "
          f"{first['parent_warm_up_cpu_ms']:.0f} ms")
    result = {"rows": rows, "first_request": first, "plans_identical": identical,
              "args": {"sizes": args.sizes, "repeats": args.repeats}, "numpy": np.__version__}
    return write_benchmark(args.out, result)


if __name__ == "__main__":
    main()
