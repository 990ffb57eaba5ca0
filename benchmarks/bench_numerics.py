"""What portable numerics cost: whole cells with AVX2-capped kernels against the host's own.

``import ilets`` caps numpy's dispatch, OpenBLAS, ATen, MKL and oneDNN at AVX2
(:mod:`ilets.numerics`) so that a cell computed on one x86-64 CPU reproduces on another. On
a host with AVX-512 that may cost time. The caps act before numpy loads, so the two modes
cannot share a process: each cell here is a fresh ``ilets run`` (``ILETS_NUMERICS=portable``
or ``native``), alternating A B A B so that drift in the machine's speed hits both modes
alike. Reported per method:

* each run's CPU seconds, from the cell's own record (``metrics.json`` ``cpu_s``: the run
  and its emulators), and its wall seconds;
* native / portable CPU seconds per pair (median and range): below 1 means the host's own
  kernels are faster;
* whether repeats of one mode give identical metrics and curves (they must: determinism),
  and whether the two modes agree (on an AVX2-only host they do; on an AVX-512 host the
  learners' numbers move in their last digits and beyond, ``ilets.study.verify.compare``).

Usage::

    python benchmarks/bench_numerics.py --out benchmarks/results/numerics.json
    python benchmarks/bench_numerics.py --methods drl --pairs 1 --scale 0.002   # checks the script
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ilets.host import write_benchmark
from ilets.numerics import PORTABLE_ENV
from ilets.study.verify import compare

MODES = ("portable", "native")


def run_cell(mode: str, method: str, servers: int, profile: Path, out: Path) -> tuple[Path, float]:
    """One ``ilets run`` in a fresh process under ``mode``; its cell folder and wall seconds."""
    env = {**os.environ, "ILETS_NUMERICS": mode}
    for name in PORTABLE_ENV:
        env.pop(name, None)  # set by this script's own `import ilets`; the child decides afresh
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ilets.study.cli", "run", "--method", method, "--servers", str(servers),
                    "--profile", str(profile), "--out", str(out), "--quiet"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    (cell,) = [p for p in (out / "cells").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return cell, wall


def write_profile(path: Path, scale: float) -> Path:
    """The quick profile's run settings at workload ``scale`` (one seed, one fleet size)."""
    import yaml

    from ilets.study.profiles import load_profile

    quick = load_profile("quick")
    data = {"name": path.stem, "description": f"numerics benchmark at scale {scale}",
            "methods": list(quick.methods), "servers": [50], "seeds": [0], "workers": 1,
            "run": {"curve_every": 250, "workload": {"scale": scale}, "oinpt": {"max_demo_tasks": 3000}}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def bench(methods: list[str], servers: int, scale: float, pairs: int) -> dict:
    """Alternate portable and native cells ``pairs`` times per method; the records and ratios."""
    rows, summary = [], {}
    with tempfile.TemporaryDirectory(prefix="bench-numerics-") as tmp:
        profile = write_profile(Path(tmp) / "numerics.yaml", scale)
        for method in methods:
            cells: dict[str, list[Path]] = {m: [] for m in MODES}
            for i in range(pairs):
                for mode in MODES if i % 2 == 0 else MODES[::-1]:
                    cell, wall = run_cell(mode, method, servers, profile, Path(tmp) / f"{method}-{mode}-{i}")
                    metrics = json.loads((cell / "metrics.json").read_text())
                    system = json.loads((cell / "system.json").read_text())
                    rows.append({"method": method, "servers": servers, "pair": i, "mode": mode,
                                 "cpu_s": metrics["cpu_s"], "wall_s": wall,
                                 "recorded": system.get("numerics", {})})
                    cells[mode].append(cell)
                    print(f"{method:8s} pair {i} {mode:8s} cpu {metrics['cpu_s']:7.1f} s  wall {wall:6.1f} s",
                          flush=True)
            cpu = {m: [r["cpu_s"] for r in rows if r["method"] == method and r["mode"] == m] for m in MODES}
            ratios = [n / p for p, n in zip(cpu["portable"], cpu["native"])]
            summary[method] = {
                "cpu_s_median": {m: statistics.median(v) for m, v in cpu.items()},
                "native_over_portable": {"median": statistics.median(ratios), "min": min(ratios),
                                         "max": max(ratios)},
                "repeats_identical": {m: all(not compare(cells[m][0], c) for c in cells[m][1:]) for m in MODES},
                "modes_differ_in": compare(cells["portable"][0], cells["native"][0])[:5]}
    return {"rows": rows, "summary": summary}


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark, print its summary, write JSON to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="JSON output path")
    ap.add_argument("--methods", nargs="+", default=["drl", "ilets-", "earliest-finish"])
    ap.add_argument("--servers", type=int, default=50)
    ap.add_argument("--scale", type=float, default=0.1,
                    help="workload scale (0.1: ~26,000 online tasks, long enough that start-up is a small share)")
    ap.add_argument("--pairs", type=int, default=3, help="portable/native pairs per method")
    args = ap.parse_args(argv)
    result = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
              **bench(args.methods, args.servers, args.scale, args.pairs)}
    print(json.dumps(result["summary"], indent=2))
    return write_benchmark(args.out, result)


if __name__ == "__main__":
    main()
