"""CPU time of a grid-command expert cell with and without the envelope cache.

Every episode a grid-command cell plays is first run twice more with the levers at their
extremes (:mod:`ilets.gridcommand.envelope`); a grid keeps each episode's reach in its cache
(:func:`ilets.gridcommand.envelope.cached_reach`), so only the first of a grid's methods
pays for it on each episode. This times one cell of the drift family's scenario
(``gridcommand-quick-days-per-server-sleep-energy``, cut to ``--days`` days of commands with
the workload scale in proportion, as ``pipeline.train_days`` cuts it; the Lyapunov expert,
50 servers, scored under shallow-long and on its held-out episode) as
:func:`ilets.gridcommand.pipeline.run_method` runs it in a grid:

* **A, computed**: no cache (every cell of a grid before the cache; a grid's first method);
* **B, cached**: a cache that already holds the cell's episodes (the grid's other methods,
  and every factor of a drift family on its base-regime and held-out episodes).

A and B alternate (A B A B ...), so a drift in the machine's speed touches both alike; the
ratio is of medians. The scores of every run must be equal to the first's, number for number
(the script stops otherwise): the cache saves time, not numbers.

    python benchmarks/bench_envelope_cache.py --out benchmarks/results/envelope_cache.json
    python benchmarks/bench_envelope_cache.py --quick     # a minute: checks that the script runs

Numbers from a machine busy with other work are not speed claims; run it on an idle one
(the JSON records the load average at the start and the end).
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from ilets.gridcommand import episodes as EP, pipeline as P, pipeline_config as PC
from ilets.gridcommand.config import load_gridcommand_config
from ilets.host import write_benchmark
from ilets.gridcommand.study.scenario import host_key

SCENARIO = "gridcommand-quick-days-per-server-sleep-energy"


def scores(out: dict) -> dict:
    """The cell's numbers without what measures the host (CPU seconds)."""
    return {part: {k: v for k, v in d.items() if not host_key(k)}
            for part, d in (("train", out["train"]), *out["scores"].items())}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=2.0, help="days of commands per episode (the scenario has 14)")
    ap.add_argument("--servers", type=int, default=50)
    ap.add_argument("--method", default="lyapunov")
    ap.add_argument("--repeats", type=int, default=3, help="A B pairs")
    ap.add_argument("--quick", action="store_true", help="half a day, one pair: checks that the script runs")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    days, repeats = (0.5, 1) if args.quick else (args.days, args.repeats)
    base = EP.training_base(load_gridcommand_config(SCENARIO), PC.PipelineConfig(train_days=days), "--days")
    pipe = PC.PipelineConfig(heldout=True)
    load0 = os.getloadavg()

    def cell(cache: Path | None) -> tuple[float, dict]:
        c0 = time.process_time()
        out = P.run_method(args.method, base, args.servers, 0, "shallow-long", ("shallow-long",), pipe,
                           cache_dir=cache)
        return time.process_time() - c0, scores(out)

    times: dict[str, list[float]] = {"computed": [], "cached": []}
    with tempfile.TemporaryDirectory(prefix="ilets-bench-cache-") as folder:
        warm_s, first = cell(Path(folder))  # fills the cache (not timed as either arm)
        for r in range(repeats):
            for arm, cache in (("computed", None), ("cached", Path(folder))):
                seconds, got = cell(cache)
                if got != first:
                    raise SystemExit(f"{arm} run {r}: its numbers differ from the first run's")
                times[arm].append(seconds)
                print(f"pair {r}: {arm:8s} {seconds:7.2f} CPU s", flush=True)
        files = len(list(Path(folder).glob("reach-*.json")))
    a, b = statistics.median(times["computed"]), statistics.median(times["cached"])
    result = {"benchmark": "envelope_cache", "scenario": SCENARIO, "days": days, "servers": args.servers,
              "method": args.method, "episodes": files, "repeats": repeats, "warm_up_cpu_s": warm_s,
              "computed_cpu_s": times["computed"], "cached_cpu_s": times["cached"],
              "median_computed_cpu_s": a, "median_cached_cpu_s": b, "speedup": a / b,
              "same_numbers": True, "loadavg_start": load0, "loadavg_end": os.getloadavg()}
    print(f"{args.method} cell, {days:g} days, {args.servers} servers, {files} episodes: computed {a:.2f} CPU s, "
          f"cached {b:.2f} CPU s: {a / b:.2f}x")
    return write_benchmark(args.out, result)


if __name__ == "__main__":
    main()
