"""One cell (method x fleet size x seed x config) to a self-describing result folder.

Layout of ``OUT/cells/<method>-M<servers>-s<seed>-<config digest>/``:

===================  ==========================================================
``config.yaml``      the resolved :class:`RunConfig` (every field)
``command.txt``      the command line that produced it
``system.json``      package versions, CPU model, cores, RAM, Python
``metrics.json``     final metrics, wall and CPU seconds, method extras (OAIL counters)
``curve.csv``        learning curve: per ``curve_every`` decisions reward, response,
                     success, energy
``decisions.npz``    decision-latency samples (s)
``model.zip``        the trained MaskablePPO, learners only. ``MaskablePPO.load`` reads
                     it, but SB3 stores parts of it with cloudpickle, so loading a
                     ``model.zip`` can run arbitrary code: load only folders you trust
                     (ones you produced, or whose origin you checked)
``policy/``          the final policy's weights and a JSON of its architecture and
                     observation layout, read without unpickling
                     (:mod:`ilets.agents.policy_io`), learners only; ``clone/`` beside
                     it for a per-server learner that cloned first
===================  ==========================================================

The folder is written under a temporary name and renamed in one step when complete, so an
interrupted run never leaves a folder that looks finished. A cell is done only when its
folder holds every file and they are complete and valid (:func:`cell_problem`); a damaged
folder is reported, set aside and recomputed. A cell is claimed with a lock file
(``locks/<name>.lock``) while it runs, so two grids, or a grid and a SLURM array, on one
``OUT`` share the cells instead of computing each twice (:func:`run_claimed`, the locking
every scenario's cells share). A failing cell leaves ``OUT/failed/<name>.<ms>.json`` with the
error and the compute it used (:func:`record_failure`, also every scenario's). What of a cell
folder is shipped, and how, is here too (:func:`ship_cell_folder`).
"""

from __future__ import annotations

import json
import os
import datetime
import platform
import re
import resource
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

import numpy as np
import yaml

from ilets import cell_pack
from ilets.config import ConfigError, RunConfig, digest_of, to_dict
from ilets.config.strict import parse_yaml
from ilets.files import atomic_write  # re-exported: ilets.study.results writes its store through it
from ilets.host import cpu_id, cpu_model, package_versions
from ilets.host import source_version as host_source_version
from ilets.numerics import record as numerics_record

PACKAGES = ("ilets-study", "numpy", "torch", "stable-baselines3", "sb3-contrib", "gymnasium", "imitation",
            "pandas", "scipy", "rliable", "simpy")


def cell_name(cfg: RunConfig) -> str:
    """The folder name of a cell: readable fields plus the digest of the whole config."""
    variant = f"@{cfg.variant}" if cfg.variant else ""
    return f"{cfg.method}{variant}-M{cfg.fleet.servers}-s{cfg.seed}-{cfg.digest()}"


_CELL = re.compile(r"^(?P<label>.+)-M(?P<servers>\d+)-s(?P<seed>\d+)-(?P<digest>\w+)$")


def parse_cell_name(name: str) -> dict:
    """The fields of a cell folder's name (:func:`cell_name`):
    ``method``, ``variant`` (``""`` for the main grid), ``servers``, ``seed``, ``digest``.

    Raises ``ValueError`` naming the folder when the name is not a cell name."""
    m = _CELL.match(name)
    if m is None:
        raise ValueError(f"{name!r}: not a cell name (expected <method>[@<variant>]-M<servers>-s<seed>-<digest>)")
    method, _, variant = m["label"].partition("@")
    return {"method": method, "variant": variant, "servers": int(m["servers"]), "seed": int(m["seed"]),
            "digest": m["digest"]}


def cell_dir(cfg: RunConfig, out: Path) -> Path:
    return Path(out) / "cells" / cell_name(cfg)


#: files every finished cell holds (``model.zip`` in addition for learners)
CELL_FILES = ("config.yaml", "command.txt", "system.json", "metrics.json", "curve.csv", "decisions.npz")
#: metrics.json keys the results store relies on
METRIC_KEYS = ("method", "servers", "seed", "digest", "wall_s", "cpu_s")
INT64_MAX = 2**63 - 1

#: what :func:`run_cell_status` did with a cell
RAN, DONE, BUSY = "ran", "done", "busy"


def cell_problem(folder: Path, cell: str | None = None) -> str | None:
    """Why ``folder`` is not a complete, valid cell (naming the file), or None when it is; a
    cell of a shipped folder is read from its table (:mod:`ilets.cell_pack`).

    Checks that every file is there, ``metrics.json`` is a JSON object with the keys the
    store uses (integer seed and servers within int64) and the identity (method, variant,
    fleet size, seed, digest) of the cell's name (``cell``, default the folder's own; a
    temporary folder passes its final name), ``system.json`` is a JSON object,
    ``config.yaml`` is a YAML mapping (read as profiles are) whose digest is the one in
    ``metrics.json`` (a file cut at a line end still parses), ``curve.csv`` has a header and at
    least one row, and ``decisions.npz`` and ``model.zip`` are readable archives. Cheap
    enough to run for every cell of a grid at each start.
    """
    import io
    import zipfile

    folder = Path(folder)
    if not cell_pack.is_dir(folder):
        return f"{folder}: not a folder"
    for name in CELL_FILES:
        if not cell_pack.is_file(folder / name):
            return f"{folder / name}: missing"
    path = folder / "metrics.json"
    try:
        m = json.loads(cell_pack.read_text(path))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        return f"{path}: not valid JSON ({err})"
    if not isinstance(m, dict):
        return f"{path}: expected a JSON object"
    missing = [k for k in METRIC_KEYS if k not in m]
    if missing:
        return f"{path}: missing key(s) {missing}"
    for key in ("servers", "seed"):
        v = m[key]
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= INT64_MAX:
            return f"{path}: {key} = {v!r}: expected an integer in [0, 2**63)"
    problem = identity_problem(path, m, folder.name if cell is None else cell)
    if problem is not None:
        return problem
    path = folder / "system.json"
    try:
        system = json.loads(cell_pack.read_text(path))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        return f"{path}: not valid JSON ({err})"
    if not isinstance(system, dict) or not system:
        return f"{path}: expected a non-empty JSON object"
    path = folder / "config.yaml"
    try:  # the strict safe reader of the profiles; names the file
        config = parse_yaml(cell_pack.read_text(path), path)
    except (OSError, UnicodeDecodeError) as err:
        return f"{path}: unreadable: {err}"
    except ConfigError as err:
        return str(err)
    # a file cut short at a line end still parses: it must be the config the cell ran with
    if not config or digest_of(config) != m["digest"]:
        return f"{path}: does not match metrics.json's digest {m['digest']!r} (truncated?)"
    path = folder / "curve.csv"
    try:
        lines = cell_pack.read_text(path).splitlines()
    except (OSError, UnicodeDecodeError) as err:
        return f"{path}: unreadable ({err})"
    if len(lines) < 2 or not lines[0].strip():
        return f"{path}: expected a header and at least one row"
    width = lines[0].count(",")
    if any(line.count(",") != width for line in lines[1:]):
        return f"{path}: rows of unequal width (truncated?)"
    for name in ("decisions.npz", "model.zip"):
        path = folder / name
        if name == "model.zip" and not cell_pack.exists(path):  # optional: run_cell(save_model=False)
            continue
        try:
            with zipfile.ZipFile(path if path.is_file() else io.BytesIO(cell_pack.read_bytes(path))) as z:
                bad = z.testzip()
        except (OSError, zipfile.BadZipFile, EOFError) as err:
            return f"{path}: not a complete archive ({err})"
        if bad is not None:
            return f"{path}: member {bad} is damaged"
    return None


def identity_problem(path: Path, metrics: dict, name: str) -> str | None:
    """Why the cell ``metrics`` (read from ``path``) is not the cell its folder ``name`` names
    (method, variant, fleet size, seed, digest), or None. A folder copied or renamed under
    another cell's name would otherwise enter the store as that cell."""
    try:
        named = parse_cell_name(name)
    except ValueError as err:
        return f"{path}: the folder's name {err}"
    recorded = {"method": metrics.get("method"), "variant": metrics.get("variant") or "",
                "servers": metrics.get("servers"), "seed": metrics.get("seed"), "digest": metrics.get("digest")}
    for key, value in recorded.items():
        if value != named[key]:
            return (f"{path}: {key} = {value!r} is not the {named[key]!r} of the folder's name {name!r} "
                    f"(a cell copied or renamed?)")
    return None


def is_done(cfg: RunConfig, out: Path) -> bool:
    """Whether the cell's folder exists and is complete and valid."""
    folder = cell_dir(cfg, out)  # in either layout: a shipped folder's cells are one table (ilets.cell_pack)
    return cell_pack.is_dir(folder) and cell_problem(folder) is None


def _set_aside(folder: Path, why: str) -> None:
    """Move a damaged cell folder out of the way (hidden, kept for inspection) and say so."""
    dest = folder.parent / f".{folder.name}.damaged-{int(time.time() * 1000)}"
    print(f"ilets: {why}; recomputing the cell (old folder moved to {dest.name})", file=sys.stderr)
    os.replace(folder, dest)


def lock_path(out: Path, name: str) -> Path:
    """The lock file that claims cell ``name`` of ``out`` while a process computes it."""
    folder = Path(out) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.lock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def clean_stale_temporaries(out: Path) -> list[Path]:
    """Remove hidden ``.<cell>.tmp-<pid>`` folders left by killed runs; returns them.

    A temporary folder is stale when its cell's lock is free (no process, on any host that
    shares ``OUT``, is computing the cell) and, on this host, its PID is dead. Damaged
    folders set aside by :func:`_set_aside` are kept.
    """
    from filelock import FileLock, Timeout

    root = Path(out) / "cells"
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for p in sorted(root.iterdir()):
        name, sep, pid = p.name.rpartition(".tmp-")
        if not (p.is_dir() and p.name.startswith(".") and sep and pid.isdigit()):
            continue
        if _pid_alive(int(pid)) and int(pid) != os.getpid():
            continue
        try:
            with FileLock(str(lock_path(out, name[1:])), timeout=0):
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
        except Timeout:
            continue  # a process elsewhere is computing that cell right now
    return removed


def system_info() -> dict:
    """Hardware and software facts recorded with every result."""
    cpu = cpu_model()
    ram_gb = float("nan")
    try:
        ram_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        pass
    versions = package_versions(PACKAGES)
    return {"cpu_model": cpu, "cpu_id": cpu_id(), "numerics": numerics_record(), "cores": os.cpu_count(),
            "ram_gb": round(ram_gb, 1),
            "python": sys.version.split()[0], "platform": platform.platform(), "packages": versions,
            "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            **source_version()}


def source_version() -> dict:
    """The git commit of the package's checkout and whether its code (``src/``, tracked
    files) differs from it (:func:`ilets.host.source_version`, read once per process).

    ``{"commit": None, "dirty": None}`` outside a git checkout (an installed wheel).
    """
    version = host_source_version()
    return {"commit": version["commit"], "dirty": version["dirty"]}


def cpu_seconds() -> float:
    """User + system CPU of this process and its reaped children (OAIL emulators)."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def atomic_json(path: Path, data: dict) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file and one rename."""
    atomic_text(path, json.dumps(data, indent=2, default=float))


def atomic_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and one rename."""
    atomic_write(path, lambda tmp: tmp.write_text(text))


def run_cell(cfg: RunConfig, out: Path, command: str = "", progress: bool = False,
             save_model: bool = True) -> Path:
    """Run one cell and write its folder; returns the folder. Skips a cell already done.

    Waits while another process holds the cell (then uses its result, or computes the cell
    if that process failed or died).
    """
    return run_cell_status(cfg, out, command, progress, save_model, wait=True)[0]


def run_cell_status(cfg: RunConfig, out: Path, command: str = "", progress: bool = False,
                    save_model: bool = True, wait: bool = True) -> tuple[Path, str]:
    """Run one cell under its lock; returns the folder and what happened.

    The status is :data:`RAN` (computed here), :data:`DONE` (already complete, nothing run)
    or, only with ``wait=False``, :data:`BUSY` (another process holds the cell's lock).
    """
    cfg = cfg.validate()
    final = cell_dir(cfg, out)

    def compute() -> None:
        for p in final.parent.glob(f".{final.name}.tmp-*"):  # ours now: nobody writes them
            shutil.rmtree(p, ignore_errors=True)
        if final.exists():
            _set_aside(final, cell_problem(final) or f"{final}: damaged")
        _compute(cfg, out, final, command, progress, save_model)

    final.parent.mkdir(parents=True, exist_ok=True)
    return final, run_claimed(out, final.name, lambda: is_done(cfg, out), compute, wait)


def run_claimed(out: Path, name: str, done: Callable[[], bool], compute: Callable[[], object],
                wait: bool = True) -> str:
    """Compute cell ``name`` of ``out`` with ``compute()`` while holding its lock, unless
    ``done()`` says it is finished; the one locking discipline of every scenario's cells.

    Returns :data:`RAN`, :data:`DONE` or, only with ``wait=False``, :data:`BUSY` (another
    process holds the lock, or ``compute()`` raised :class:`~ilets.files.HeldByAnother`: an
    input the cell shares with another cell is being made by another process). ``done()`` is
    asked again once the lock is held: the holder before may have finished the cell.
    """
    from filelock import FileLock, Timeout

    from ilets.files import HeldByAnother

    if done():
        return DONE
    # flock-based: the kernel releases it when the holder dies, even by SIGKILL
    lock = FileLock(str(lock_path(out, name)), timeout=-1 if wait else 0)
    try:
        lock.acquire()
    except Timeout:
        return BUSY
    try:
        if done():  # finished by the process that held the lock
            return DONE
        try:
            compute()
        except HeldByAnother:
            if wait:  # compute() waits itself when asked to: this is not expected, so not hidden
                raise
            return BUSY
        return RAN
    finally:
        lock.release()


def record_failure(out: Path, name: str, identity: dict, err: BaseException, wall_s: float, cpu_s: float) -> Path:
    """Write ``OUT/failed/<name>.<ms>.json``: a failed attempt of cell ``name`` (its
    ``identity``: method, variant, servers, seed), the error and the compute it burnt. One
    file per attempt, read by :func:`ilets.study.results.compute_table` (status
    :data:`ilets.study.results.STATUS_FAILED`); the cell itself stays undone and is retried."""
    failed = Path(out) / "failed"
    failed.mkdir(parents=True, exist_ok=True)
    path = failed / f"{name}.{int(time.time() * 1000)}.json"
    atomic_json(path, {"cell": name, **identity, "error": f"{type(err).__name__}: {err}",
                       "traceback": traceback.format_exc(), "wall_s": wall_s, "cpu_s": cpu_s, "time": time.time()})
    return path


def metrics_record(cfg: RunConfig, final: dict, decision_s: np.ndarray, extra: dict, wall_s: float,
                   cpu_s: float) -> dict:
    """A cell's ``metrics.json``: who ran, the pass's final metrics (``info["final"]``), the
    decision latency, the method's own numbers and the cost (``ilets evaluate`` writes the same)."""
    d = decision_s
    return {
        "method": cfg.method, "variant": cfg.variant, "servers": cfg.fleet.servers, "seed": cfg.seed,
        "digest": cfg.digest(),
        **final,
        "decision_p50_ms": float(np.median(d) * 1e3) if len(d) else float("nan"),
        "decision_p95_ms": float(np.quantile(d, 0.95) * 1e3) if len(d) else float("nan"),
        **extra,
        "wall_s": wall_s, "cpu_s": cpu_s,
    }


def _compute(cfg: RunConfig, out: Path, final: Path, command: str, progress: bool, save_model: bool) -> Path:
    from ilets.agents.methods import run_method
    from ilets.simulator.cloud import make_fleet
    from ilets.workloads.workload import load_workload

    tmp = final.parent / f".{final.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    try:
        (tmp / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
        (tmp / "command.txt").write_text((command or " ".join(sys.argv)) + "\n")
        atomic_json(tmp / "system.json", system_info())
        workload = load_workload(cfg.workload, cfg.seed)
        fleet = make_fleet(cfg.fleet, cfg.fleet.seed)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(workload.online), desc=cell_name(cfg), unit="task", mininterval=1.0)
        try:
            result = run_method(cfg, workload, fleet, cache_dir=Path(out) / "cache",
                                progress=bar.update if bar else None)
        finally:
            if bar is not None:
                bar.close()
        result.log.curve(cfg.curve_every).to_csv(tmp / "curve.csv", index=False)
        d = result.decision_s
        np.savez_compressed(tmp / "decisions.npz", seconds=d)
        if result.model is not None and save_model:
            result.model.save(tmp / "model.zip")
        for name, table in result.tables.items():  # fine-tuning log, held-out checkpoints
            table.to_csv(tmp / f"{name}.csv", index=False)
        if result.model is not None:
            from ilets.agents.policy_io import save_policy

            # policies that can be taken away: weights read without unpickling (policy_io), of
            # both designs (a flat cell's model.zip is dropped when shipped)
            save_policy(result.model, tmp / "policy", cfg.policy, cfg.observation, cfg.fleet.servers)
            if result.clone is not None and cfg.policy == "per-server":
                save_policy(result.model, tmp / "clone", cfg.policy, cfg.observation, cfg.fleet.servers,
                            state=result.clone)
        metrics = metrics_record(cfg, result.log.final, d, result.extra, time.perf_counter() - wall0,
                                 cpu_seconds() - cpu0)
        atomic_json(tmp / "metrics.json", metrics)
        problem = cell_problem(tmp, final.name)
        if problem is not None:  # never publish a folder that would not count as done
            raise RuntimeError(f"the new cell folder is incomplete: {problem}")
        # The lock is held, so no other process writes `final`; anything there now is
        # damaged (a process without the lock, e.g. an older version) and is set aside.
        if final.exists():
            _set_aside(final, cell_problem(final) or f"{final}: appeared while computing")
        os.replace(tmp, final)  # one rename: the folder appears complete or not at all
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise  # interrupted, not failed: nothing to record, the cell reruns on resume
        record_failure(out, final.name, {"method": cfg.method, "variant": cfg.variant, "servers": cfg.fleet.servers,
                                         "seed": cfg.seed}, err, time.perf_counter() - wall0, cpu_seconds() - cpu0)
        raise
    return final


# --- shipping a cell ------------------------------------------------------------------------

#: Files of a cell folder that are shipped (everything but the model).
SHIPPED_CELL_FILES = ("config.yaml", "command.txt", "system.json", "metrics.json", "curve.csv", "decisions.npz")
#: What a cell has only with some settings, shipped when present: the fine-tuning log, the
#: held-out checkpoints, and a per-server cell's final policy and clone (weights + JSON, a
#: few kB, loaded without unpickling: ilets.agents.policy_io).
OPTIONAL_CELL_FILES = ("finetune.csv", "checkpoints.csv")
OPTIONAL_CELL_FOLDERS = ("policy", "clone")
#: At most this many latency samples per shipped cell (learners record about 2,000 already).
LATENCY_SAMPLES = 2000


def ship_cell_folder(cell: Path, target: Path) -> None:
    """Copy the shipped part of cell folder ``cell`` to the new folder ``target``: every file
    but the model, the latency samples thinned (:func:`thin_latency_samples`). A packed cell
    (a shipped folder shipped again) is read from its table (:func:`ilets.cell_pack.on_disk`)."""
    cell, target = cell_pack.on_disk(Path(cell)), Path(target)
    target.mkdir()
    for name in SHIPPED_CELL_FILES:
        if name == "decisions.npz" and (cell / name).is_file():
            thin_latency_samples(cell / name, target / name)
        elif (cell / name).is_file():
            shutil.copy2(cell / name, target / name)
    for name in OPTIONAL_CELL_FILES:
        if (cell / name).is_file():
            shutil.copy2(cell / name, target / name)
    for name in OPTIONAL_CELL_FOLDERS:
        if (cell / name).is_dir():
            shutil.copytree(cell / name, target / name)


def thin_latency_samples(src: Path, dest: Path, limit: int = LATENCY_SAMPLES) -> None:
    """Copy a cell's ``decisions.npz``, keeping every k-th sample so at most ``limit`` remain.

    Evenly spaced (not random) so the thinned file is the same on every machine; ``every``
    records k (1 when nothing was dropped). A file thinned before (it records ``every``: a
    shipped cell shipped again) is copied as it is, its k kept.
    """
    with np.load(src, allow_pickle=False) as z:
        seconds = z["seconds"]
        thinned = "every" in z.files
    if thinned and len(seconds) <= limit:
        shutil.copyfile(src, dest)
        return
    every = max(1, -(-len(seconds) // limit))  # ceil division
    np.savez_compressed(dest, seconds=seconds[::every], every=np.int64(every))
