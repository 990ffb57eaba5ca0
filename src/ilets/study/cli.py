"""The ``ilets`` command: run one cell, run a grid, fetch trace shards.

Examples::

    ilets run --method ilets --servers 100 --seed 3 --profile quick   # -> results/quick
    ilets grid --profile quick                                        # resumable
    ilets grid --profile paper --executor slurm --out /scratch/ilets
    ilets grid --scenario gridcommand --profile gridcommand-quick     # -> results/gridcommand-grid-quick
    ilets ship --results results/quick --to shipped/quick --note "..."
    ilets verify --scenario gridcommand --results shipped/gridcommand --sample 2
    ilets pilot --scenario gridcommand --out results/gridcommand-pilot  # the grid-command pilot
    ilets evaluate --policy shipped/per-server/cells/CELL --workload tasks.csv --servers 200 --out eval/
    ilets trace find-window --trace-dir DIR
    ilets trace download --shards 0-5 --dest DIR
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import signal
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

from ilets.cell_pack import has_cells
from ilets.config import HEURISTICS, METHODS, SEED_MAX, ConfigError


class UsageError(ValueError):
    """A command-line value that cannot work (the message names the flag)."""


def _out_folder(flag: str, value: str) -> Path:
    """``value`` as a results folder: created if missing; a file or an unwritable folder is refused."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {value}: expected a folder, but it is a file")
    try:
        path.mkdir(parents=True, exist_ok=True)
        # os.access misjudges some cases (root, ACLs, read-only mounts): try a real file
        with tempfile.NamedTemporaryFile(dir=path, prefix=".ilets-write-test-"):
            pass
    except OSError as err:
        raise UsageError(f"{flag} {value}: expected a writable folder ({err.strerror or err})") from None
    return path


def _cmd_run(args: argparse.Namespace) -> int:
    from ilets.study.profiles import load_profile
    from ilets.study.run import run_cell

    profile = load_profile(args.profile)
    cfg = dataclasses.replace(profile.run, method=args.method, seed=args.seed,
                              fleet=dataclasses.replace(profile.run.fleet, servers=args.servers)).validate()
    out = _out_folder("--out", args.out or f"results/{profile.name}")
    folder = run_cell(cfg, out, command=shlex.join(["ilets", *sys.argv[1:]]), progress=not args.quiet)
    metrics = json.loads((folder / "metrics.json").read_text())
    print(folder)
    for key in ("avg_response_s", "energy_kwh", "success_rate", "mean_reward", "wall_s"):
        print(f"  {key:16s} {metrics.get(key)}")
    return 0


def _cmd_grid(args: argparse.Namespace) -> int:
    from ilets.study.grid import FolderInUse, run_grid
    from ilets.study.scenario import get_scenario

    scenario = get_scenario(args.scenario)
    profile = scenario.load_profile(args.profile)
    out = _out_folder("--out", args.out or f"results/{profile.name}")
    try:
        summary = run_grid(profile, out, executor=args.executor, workers=args.workers,
                           progress=not args.quiet, slurm_partition=args.partition, scenario=scenario,
                           max_cells=args.max_cells, cell_processes=args.cell_processes)
    except FolderInUse as err:
        raise UsageError(f"--out {err}") from None
    print(json.dumps(summary, indent=2))
    return 0 if summary["failed"] == 0 else 1


def _cmd_ship(args: argparse.Namespace) -> int:
    from ilets.files import ShipRefused
    from ilets.study.scenario import ScenarioError, get_scenario
    from ilets.study.shipping import ship

    src, pilot_file = Path(args.results), get_scenario(args.scenario).pilot_file
    pilot = pilot_file is not None and (src / pilot_file).is_file()
    if not has_cells(src) and not pilot:
        also = f", or a finished pilot folder with {pilot_file}" if pilot_file is not None else ""
        raise UsageError(f"--results {src}: expected a grid's results folder with a cells/ subfolder{also} "
                         f"(run the grid first)")
    try:
        info = ship(src, Path(args.to), note=args.note, scenario=args.scenario)
    except (ScenarioError, ShipRefused) as err:
        raise UsageError(str(err)) from None
    print(json.dumps(info, indent=1))
    return 0


def _cmd_pilot(args: argparse.Namespace) -> int:
    from ilets.study.scenario import ScenarioError, get_scenario

    scenario = get_scenario(args.scenario)
    profile = scenario.load_profile(args.profile)
    out = _out_folder("--out", args.out or f"results/{scenario.name}-pilot")
    # progress to stderr: stdout carries the choices alone
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    try:
        result = scenario.run_pilot(profile, out, log)
    except ScenarioError as err:
        raise UsageError(str(err)) from None
    print(json.dumps({s["expert"] + "." + s["option"]: s["chosen"] for s in result["stages"]}))
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from ilets.numerics import record as numerics_record
    from ilets.study.scenario import get_scenario, scenario_hint
    from ilets.study.verify import VerifyError, accepted, check_recorded, check_report, kernels_hint, pick, verify

    folder, sc = Path(args.results), get_scenario(args.scenario)
    if not has_cells(folder):
        raise UsageError(f"--results {folder}: expected a results folder with a cells/ subfolder or a shipped "
                         "one with cells.parquet")
    # Everything that can be refused is refused before a cell runs (a re-run takes minutes).
    try:
        if args.report:
            check_report(Path(args.report))
        cells = pick(folder, args.cell, args.sample, args.seed, args.methods, sc)
        if not cells:
            among = f" among the cells of method(s) {args.methods}" if args.methods and args.sample else ""
            raise UsageError(f"nothing to verify{among}{scenario_hint(folder, sc)}: name cells with --cell or ask "
                             "for --sample N")
        check_recorded(folder, cells, sc)  # verify checks them too; here before a temporary folder is made
        scratch = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="ilets-verify-"))
        checks = verify(folder, cells, scratch, progress=not args.quiet, scenario=sc, processes=args.cell_processes)
    except VerifyError as err:
        raise UsageError(str(err)) from None
    now = numerics_record()["effective"]
    for v in checks:
        print(f"{'reproduced' if v.reproduced else 'DIFFERS   '}  {v.cell}  ({v.wall_s:.0f} s)")
        if v.added:
            print(f"    recorded before these metrics existed (not compared): {', '.join(v.added)}")
        for line in v.differences[:5]:
            print(f"    {line}")
        if not v.reproduced:
            print(f"    {kernels_hint(folder, v.cell, now, sc)}")
            if v.agreement:
                print(f"    second verdict: {v.agreement}")
    ok = sum(v.reproduced for v in checks)
    near = sum(accepted(v) and not v.reproduced for v in checks)
    print(f"{ok} of {len(checks)} cells reproduced exactly (re-runs in {scratch})"
          + (f"; {near} more, computed on another CPU vendor, agree within the seed-to-seed spread" if near else ""))
    if args.report:
        from ilets.study.verify import write_report

        write_report(Path(args.report), folder, checks)
    return 0 if all(accepted(v) for v in checks) else 1


def _method_name(text: str) -> str:
    """An argparse type: a method of some scenario (``ilets verify --methods``; whether it is
    the chosen scenario's is checked with the cells). The paper study's names answer at once;
    any other loads the grid-command scenario's names."""
    if text in METHODS + HEURISTICS:
        return text
    from ilets.study.scenario import scenarios

    known = list(dict.fromkeys(m for sc in scenarios() for m in sc.method_names()))
    if text not in known:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(map(repr, known))})")
    return text


def _parse_shards(text: str) -> list[int]:
    """``0-5,9`` -> [0, 1, 2, 3, 4, 5, 9]; anything else raises UsageError naming ``--shards``."""
    from ilets.workloads.trace import SHARD_COUNT

    expected = f"expected indices or ranges like 0-5,9 within 0-{SHARD_COUNT - 1}"
    out: list[int] = []
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise UsageError(f"--shards {text!r}: {part!r} is not an index or a range; {expected}")
        a, b = int(lo), int(hi) if dash else int(lo)
        if a > b:
            raise UsageError(f"--shards {text!r}: range {part!r} is empty (start after end); {expected}")
        if b >= SHARD_COUNT:
            raise UsageError(f"--shards {text!r}: index {b} is out of range; {expected}")
        out.extend(i for i in range(a, b + 1) if i not in out)
    return out


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from ilets.study.evaluate import evaluate, write_evaluation
    from ilets.workloads.task_file import read_task_file

    tasks = read_task_file(args.workload)
    out = _out_folder("--out", args.out)
    if (out / "metrics.json").exists():  # refuse before computing, not after
        raise UsageError(f"--out {out}: already holds an evaluation (metrics.json); choose another folder")
    result = evaluate(args.policy, tasks, args.servers, fleet_seed=args.fleet_seed, seed=args.seed,
                      weights=args.weights)
    write_evaluation(result, out, shlex.join(["ilets", *sys.argv[1:]]))
    print(out)
    for key in ("tasks", "avg_response_s", "success_rate", "energy_kwh", "mean_reward"):
        print(f"  {key:16s} {result.metrics.get(key)}")
    return 0


def _cmd_trace(args: argparse.Namespace) -> int:
    from ilets.workloads import download, trace

    if args.trace_cmd == "download":
        shards = _parse_shards(args.shards)
        paths = download.download_shards(shards, _out_folder("--dest", args.dest))
        print("\n".join(str(p) for p in paths))
    else:
        print(json.dumps(dataclasses.asdict(trace.find_window(Path(args.trace_dir))), indent=2, default=str))
    return 0


def _int_in(lo: int, hi: int | None = None):
    """An argparse type: an integer in [lo, hi] (argparse prints the one-line error)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(
                f"expected an integer {'>= ' + str(lo) if hi is None else f'in [{lo}, {hi}]'}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block): ``ilets run: error: argument --seed: ...``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ilets", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)

    run = sub.add_parser("run", help="run one cell (method x servers x seed) into a result folder")
    run.add_argument("--method", required=True, choices=METHODS + HEURISTICS)
    run.add_argument("--servers", type=int, default=50, help="fleet size (1..100000)")
    run.add_argument("--seed", type=_int_in(0, SEED_MAX), default=0, help=f"run seed (0..{SEED_MAX})")
    run.add_argument("--profile", default="quick", help="smoke, quick, paper or a YAML path")
    run.add_argument("--out", default=None, help="results folder (default: results/<profile>)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(func=_cmd_run)

    from ilets.study.scenario import DEFAULT_SCENARIO, SCENARIOS, scenarios

    grid = sub.add_parser("grid", help="run every cell of a profile (skips cells already done)")
    grid.add_argument("--scenario", choices=sorted(SCENARIOS), default=DEFAULT_SCENARIO,
                      help=f"the study's scenario (default: {DEFAULT_SCENARIO})")
    grid.add_argument("--profile", default="quick", help="a profile of the scenario: a shipped name or a YAML path")
    grid.add_argument("--out", default=None, help="results folder (default: results/<profile>)")
    grid.add_argument("--executor", choices=["local", "slurm", "submitit-local"], default="local")
    grid.add_argument("--workers", type=_int_in(1), default=None, help="cells at once (default: the profile's)")
    grid.add_argument("--cell-processes", type=_int_in(1), default=1,
                      help="processes each cell may use for work it splits: a grid-command clone plays its "
                           "training episodes on them (the same numbers for any count; default 1)")
    grid.add_argument("--partition", default=None, help="SLURM partition")
    grid.add_argument("--max-cells", type=_int_in(1), default=None,
                      help="compute at most this many cells not yet done (the rest on the next start)")
    grid.add_argument("--quiet", action="store_true")
    grid.set_defaults(func=_cmd_grid)

    shp = sub.add_parser("ship", help="copy a grid's compact results (store, cells, provenance) to a committed folder",
                         description="Copy a grid's compact results (store, finished cells, profile, provenance) "
                                     "into --to. It replaces only a folder an earlier ship made (one holding its "
                                     "PROVENANCE.json), keeping its recorded re-runs (VERIFY.json) of cells whose "
                                     "results are unchanged; --to may also be new or empty. Anything else is "
                                     "refused in one line: a folder of other files, one that holds --results or "
                                     "lies inside it, and results with no finished cell of --scenario.")
    shp.add_argument("--scenario", choices=sorted(SCENARIOS), default=DEFAULT_SCENARIO)
    shp.add_argument("--results", required=True, help="the grid's results folder")
    shp.add_argument("--to", required=True,
                     help="the shipped folder: new, empty, or an earlier ship's (replaced); never anything else")
    shp.add_argument("--note", default="", help="a note stored with the shipped provenance")
    shp.set_defaults(func=_cmd_ship)

    ver = sub.add_parser("verify", help="re-run shipped cells and check their metrics reproduce exactly")
    ver.add_argument("--scenario", choices=sorted(SCENARIOS), default=DEFAULT_SCENARIO,
                     help=f"the scenario whose cells these are (default: {DEFAULT_SCENARIO})")
    ver.add_argument("--results", required=True, help="a results folder (with cells/) or a shipped one (cells.parquet)")
    ver.add_argument("--cell", action="append", default=None,
                     help="a cell's name: its folder's, or its file's without .json (repeatable)")
    ver.add_argument("--sample", type=_int_in(0), default=0, help="verify this many random cells")
    ver.add_argument("--methods", nargs="+", default=None, type=_method_name, metavar="METHOD",
                     help="sample only among these methods")
    ver.add_argument("--seed", type=_int_in(0, SEED_MAX), default=0, help="seed of the random sample")
    ver.add_argument("--scratch", default=None, help="where re-runs go (default: a new temporary folder)")
    ver.add_argument("--report", default=None,
                     help="also write the cell checks as JSON here (e.g. <results>/VERIFY.json, shipped with them)")
    ver.add_argument("--cell-processes", type=_int_in(1), default=1,
                     help="processes each re-run may use for work it splits (as `grid --cell-processes`)")
    ver.add_argument("--quiet", action="store_true")
    ver.set_defaults(func=_cmd_verify)

    pil = sub.add_parser("pilot", help="run (or resume) the grid-command pilot: expert settings chosen on pilot seeds")
    pil.add_argument("--scenario", choices=[sc.name for sc in scenarios() if sc.pilot_file is not None], required=True,
                     help="gridcommand (the paper study's pilot is a grid profile: ilets grid --profile pilot)")
    pil.add_argument("--profile", default="quick", help="the grid profile whose scenario and fleets the pilot uses")
    pil.add_argument("--out", default=None, help="pilot folder, resumed if it exists (default: results/gridcommand-pilot)")
    pil.add_argument("--quiet", action="store_true", help="no line per episode")
    pil.set_defaults(func=_cmd_pilot)

    ev = sub.add_parser("evaluate", help="schedule your own task table with a shipped policy (frozen) or a heuristic")
    ev.add_argument("--policy", required=True, help="a cell folder (of a shipped folder too: shipped/<grid>/cells/<cell> "
                    f"reads its cells.parquet), or a heuristic: {', '.join(HEURISTICS)}")
    ev.add_argument("--weights", default="policy", choices=("policy", "clone"),
                    help="a cell's final policy or its clone after imitation")
    ev.add_argument("--workload", required=True, help="a CSV or parquet file: arrival, cpu, length, deadline")
    ev.add_argument("--servers", type=_int_in(1), required=True)
    ev.add_argument("--fleet-seed", type=_int_in(0, SEED_MAX), default=0)
    ev.add_argument("--seed", type=_int_in(0, SEED_MAX), default=0, help="seeds a random heuristic")
    ev.add_argument("--out", required=True, help="a new folder for metrics.json, curve.csv, config.yaml")
    ev.set_defaults(func=_cmd_evaluate)

    tr = sub.add_parser("trace", help="Google 2011 trace shards")
    tsub = tr.add_subparsers(dest="trace_cmd", required=True)
    dl = tsub.add_parser("download", help="download task_events shards (sha256-checked, resumable)")
    dl.add_argument("--shards", required=True, help="e.g. 0-5,9")
    dl.add_argument("--dest", required=True)
    fw = tsub.add_parser("find-window", help="the 50-minute window of day 10 closest to the paper's split")
    fw.add_argument("--trace-dir", required=True)
    tr.set_defaults(func=_cmd_trace)
    return parser


def _terminate(signum: int, frame) -> None:
    """SIGTERM (kill, timeout, SLURM) stops a run as Ctrl-C does: the same clean-up path."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ilets`` command."""
    from ilets.numerics import check_switch
    from ilets.workloads.task_file import TaskFileError
    from ilets.workloads.trace import TraceError

    args = build_parser().parse_args(argv)
    try:
        check_switch()
    except ValueError as err:
        print(f"ilets: {err}", file=sys.stderr)
        return 2
    previous = None
    if hasattr(signal, "SIGTERM"):
        try:
            previous = signal.signal(signal.SIGTERM, _terminate)
        except ValueError:  # not the main thread (embedded use): leave signals alone
            previous = None
    try:
        return args.func(args)
    except ConfigError as err:
        print(f"ilets: configuration error: {err}", file=sys.stderr)
        return 2
    except (TraceError, TaskFileError, UsageError) as err:
        print(f"ilets: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a file or folder the user named (or the disk) is not usable
        where = f"{err.filename}: " if getattr(err, "filename", None) else ""
        try:
            print(f"ilets: {where}{err.strerror or err}", file=sys.stderr)
        except OSError:  # stderr itself is the closed pipe
            pass
        return 2
    except KeyboardInterrupt:
        try:
            print("ilets: interrupted; completed cells (and a clone's last record) are kept, rerun to resume", file=sys.stderr)
        except OSError:  # nobody reads stderr any more (a closed pipe): leave all the same
            pass
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def entry() -> None:
    """The ``ilets`` command: :func:`main`, then leave.

    After an interrupt (Ctrl-C, SIGTERM) the process leaves with ``os._exit`` once its
    message is printed, skipping the interpreter's exit handlers: a process pool that the
    interrupt caught mid-operation may never send its idle workers their exit sentinel, and
    multiprocessing's exit handler would then wait for them for ever (seen once: an ILETS- run
    hung on SIGTERM while its emulator idled). Finished cells are already on disk, and every
    child process dies with its parent (:func:`ilets.lifecycle.die_with_parent`).
    """
    code = main()
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
