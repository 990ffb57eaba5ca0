"""Aggregate reads benchmark: BC's minibatches from a clone's aggregate on disk, with the
kernel's read-ahead (the reference) and without it (:meth:`Aggregate.random_reads`).

A clone with hundreds of training episodes keeps its aggregate in files
(:class:`ilets.gridcommand.aggregate.Aggregate`): at 1,024 episodes and 50 servers, 42 GB of
observations on a host with 24 GB of memory, so much of what BC reads is not in the page
cache. BC draws its rows at random (:func:`ilets.agents.oinpt.minibatches`), and on a miss
the kernel reads around the row as far as the disk's read-ahead (``read_ahead_kb``; 8 MB on
the study's host, for a row of 3 KB). This script builds a folder aggregate of
``--gigabytes`` from the teacher's demonstrations of the clone pilot's first training episode
(repeated: only the bytes' layout matters here), then reads ``--batches`` of BC's minibatches
without and with ``random_reads``, alternating ``--repeats`` times (A B A B), each pair's
ratio kept. Each minibatch is read after the files are evicted from the page cache
(``posix_fadvise(DONTNEED)`` before it, outside the timing; pages this process has mapped
stay, a few rows of those drawn before, and the read-ahead's neighbours the kernel maps
with a fault, which if anything favour the reference): the limit of an aggregate far larger
than the memory, where every row BC draws misses the cache (at 42 GB on 24 GB, about half
of them do). Every pair reads the same rows (checked on their sum). Linux only
(``madvise``, ``posix_fadvise``).

    python benchmarks/bench_aggregate_reads.py --out benchmarks/results/aggregate_reads.json
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import contextlib
import gc
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch as th

from ilets.agents.oinpt import minibatches
from ilets.gridcommand import episodes as EP, teacher as TE
from ilets.gridcommand.aggregate import Aggregate
from ilets.gridcommand.env import GridCommandEnv
from ilets.host import write_benchmark
from ilets.gridcommand.study.scenario import load_profile

# the retired clone pilot ran this scenario, teacher and fleet (its episode count does not enter the reads)
PROFILE = "gridcommand-grid-per-server-episodes-own"


def evict(folder: Path) -> None:
    """Drop the folder's files from the page cache (written back first)."""
    for path in folder.glob("*.npy"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_ahead_kb(path: Path) -> int | None:
    """The read-ahead of the disk that holds ``path`` (KB, from sysfs); None where it cannot be told."""
    dev = os.stat(path).st_dev
    base = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    for queue in (base / "queue", base.resolve().parent / "queue"):  # a disk's own, or a partition's disk's
        if (queue / "read_ahead_kb").is_file():
            return int((queue / "read_ahead_kb").read_text())
    return None


def read_seconds(folder: Path, batches: int, batch_size: int, random: bool) -> tuple[float, float]:
    """Seconds to draw ``batches`` of BC's minibatches from the aggregate in ``folder``, each
    after its files are evicted from the page cache (outside the timing), and the sum of the
    observations read (the same rows either way)."""
    gc.collect()  # the last run's mappings are gone, so eviction can drop their pages
    found = Aggregate.reopen(folder)
    assert found is not None
    aggregate = found[0]
    th.manual_seed(0)
    total = seconds = 0.0
    with aggregate.random_reads() if random else contextlib.nullcontext():
        drawn = iter(minibatches(aggregate.view(), batch_size))
        for _ in range(batches):
            evict(folder)
            t0 = time.perf_counter()
            batch = next(drawn)
            seconds += time.perf_counter() - t0
            total += float(batch["obs"].double().sum())
    del aggregate, found, drawn
    return seconds, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gigabytes", type=float, default=4.0, help="size of the aggregate's observations")
    ap.add_argument("--batches", type=int, default=100, help="BC minibatches per measurement")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="where the aggregate is written (default: TMPDIR)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    th.set_num_threads(1)
    grid = load_profile(PROFILE)
    base = grid.scenario_config()
    m = grid.servers[0]
    env = GridCommandEnv(EP.training_config(base, grid.train_regime, m, 100))
    demos = TE.demonstrate(env, grid.pipeline.teacher, grid.pipeline.demo_tasks)
    batch_size = base.run.oinpt.batch_size
    row_bytes = demos.obs[0].nbytes
    work = Path(tempfile.mkdtemp(prefix="ilets-bench-aggregate-", dir=args.dir))
    try:
        folder = work / "aggregate"
        aggregate = Aggregate(int(args.gigabytes * 2**30 // row_bytes) + len(demos), folder=folder)
        while len(aggregate) * row_bytes < args.gigabytes * 2**30:
            aggregate.add(demos)
        aggregate.commit({})
        rows = len(aggregate)
        del aggregate
        pairs = []
        for _ in range(args.repeats):
            normal, a = read_seconds(folder, args.batches, batch_size, False)
            random, b = read_seconds(folder, args.batches, batch_size, True)
            if a != b:
                raise SystemExit("the two reads drew different rows")
            pairs.append({"read_ahead_s": normal, "random_reads_s": random, "speedup": normal / random})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    speedup = float(np.median([p["speedup"] for p in pairs]))
    per_s = {k: args.batches / float(np.median([p[f"{k}_s"] for p in pairs])) for k in ("read_ahead", "random_reads")}
    print(f"{m} servers, {rows:,} rows of {row_bytes:,} bytes ({rows * row_bytes / 2**30:.1f} GiB), each minibatch evicted: "
          f"{per_s['read_ahead']:.1f} minibatches/s with read-ahead, {per_s['random_reads']:.1f} without "
          f"({speedup:.1f}x, same rows)", flush=True)
    write_benchmark(args.out, {"profile": PROFILE, "servers": m, "read_ahead_kb": read_ahead_kb(work.parent),
                               "rows": rows, "row_bytes": row_bytes,
                               "batches": args.batches, "batch_size": batch_size, "repeats": args.repeats,
                               "pairs": pairs, "speedup_median": speedup, "minibatches_per_s": per_s})


if __name__ == "__main__":
    main()
