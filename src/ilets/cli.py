"""The ``ilets`` command: run one cell, run a grid, fetch trace shards.

Examples::

    ilets run --method ilets --servers 100 --seed 3 --profile quick   # -> results/quick
    ilets grid --profile quick                                        # resumable
    ilets grid --profile paper --executor slurm --out /scratch/ilets
    ilets trace find-window --trace-dir DIR
    ilets trace download --shards 0-5 --dest DIR
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from pathlib import Path

from ilets.config import HEURISTICS, METHODS, ConfigError


def _cmd_run(args: argparse.Namespace) -> int:
    from ilets.profiles import load_profile
    from ilets.run import run_cell

    profile = load_profile(args.profile)
    cfg = dataclasses.replace(profile.run, method=args.method, seed=args.seed,
                              fleet=dataclasses.replace(profile.run.fleet, servers=args.servers)).validate()
    folder = run_cell(cfg, Path(args.out or f"results/{profile.name}"), command=shlex.join(["ilets", *sys.argv[1:]]), progress=not args.quiet)
    metrics = json.loads((folder / "metrics.json").read_text())
    print(folder)
    for key in ("avg_response_s", "energy_kwh", "success_rate", "mean_reward", "wall_s"):
        print(f"  {key:16s} {metrics.get(key)}")
    return 0


def _cmd_grid(args: argparse.Namespace) -> int:
    from ilets.grid import run_grid
    from ilets.profiles import load_profile

    profile = load_profile(args.profile)
    summary = run_grid(profile, Path(args.out or f"results/{profile.name}"), executor=args.executor, workers=args.workers,
                       progress=not args.quiet, slurm_partition=args.partition)
    print(json.dumps(summary, indent=2))
    return 0 if summary["failed"] == 0 else 1


def _parse_shards(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _cmd_trace(args: argparse.Namespace) -> int:
    from ilets import trace

    if args.trace_cmd == "download":
        paths = trace.download_shards(_parse_shards(args.shards), Path(args.dest))
        print("\n".join(str(p) for p in paths))
    else:
        print(json.dumps(dataclasses.asdict(trace.find_window(Path(args.trace_dir))), indent=2, default=str))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ilets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)

    run = sub.add_parser("run", help="run one cell (method x servers x seed) into a result folder")
    run.add_argument("--method", required=True, choices=METHODS + HEURISTICS)
    run.add_argument("--servers", type=int, default=50, help="fleet size (1..100000)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--profile", default="quick", help="smoke, quick, paper or a YAML path")
    run.add_argument("--out", default=None, help="results folder (default: results/<profile>)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(func=_cmd_run)

    grid = sub.add_parser("grid", help="run every cell of a profile (skips cells already done)")
    grid.add_argument("--profile", default="quick")
    grid.add_argument("--out", default=None, help="results folder (default: results/<profile>)")
    grid.add_argument("--executor", choices=["local", "slurm", "submitit-local"], default="local")
    grid.add_argument("--workers", type=int, default=None, help="cells at once (default: the profile's)")
    grid.add_argument("--partition", default=None, help="SLURM partition")
    grid.add_argument("--quiet", action="store_true")
    grid.set_defaults(func=_cmd_grid)

    tr = sub.add_parser("trace", help="Google 2011 trace shards")
    tsub = tr.add_subparsers(dest="trace_cmd", required=True)
    dl = tsub.add_parser("download", help="download task_events shards (sha256-checked, resumable)")
    dl.add_argument("--shards", required=True, help="e.g. 0-5,9")
    dl.add_argument("--dest", required=True)
    fw = tsub.add_parser("find-window", help="the 50-minute window of day 10 closest to the paper's split")
    fw.add_argument("--trace-dir", required=True)
    tr.set_defaults(func=_cmd_trace)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ilets`` command."""
    from ilets.trace import TraceError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as err:
        print(f"ilets: configuration error: {err}", file=sys.stderr)
        return 2
    except (TraceError, FileNotFoundError) as err:
        print(f"ilets: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ilets: interrupted; completed cells are kept, rerun to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
