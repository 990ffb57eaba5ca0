"""Facts about the machine and the code a result was computed with, shared by every layer
that records them."""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable


@functools.lru_cache(maxsize=1)
def cpuinfo() -> dict[str, str]:
    """The first processor's block of ``/proc/cpuinfo`` as ``{field: value}`` (``{}`` where
    there is no such file): read once per process, for :func:`cpu_model` and :func:`cpu_id`.
    (:mod:`ilets.numerics` reads the flags on its own: it loads before everything else, and
    :func:`host_record` records it, so it cannot import this module.)"""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if not line.strip():
                if fields:
                    break  # the first processor's block is enough
                continue
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what :func:`platform.processor` says."""
    return cpuinfo().get("model name") or platform.processor()


def cpu_id() -> str:
    """The CPU's family, model and stepping (``/proc/cpuinfo``), e.g. ``"family 26 model 2
    stepping 1"``; ``""`` where they are not listed.

    Why: cloud hosts report one model name (``"AMD EPYC"``) for several CPU generations of
    very different speed, and the paper grid ran on two of them (CPU seconds per cell halved
    from one to the next); the name alone cannot tell their cells apart."""
    fields = cpuinfo()
    return " ".join(f"{k.replace('cpu ', '')} {fields[k]}" for k in ("cpu family", "model", "stepping") if k in fields)


def cpu_vendor(model: str) -> str:
    """``"Intel"`` or ``"AMD"`` from a CPU model name (as :func:`cpu_model` gives it), else ``""``."""
    return next((v for v in ("Intel", "AMD") if v.lower() in model.lower()), "")


def machine_label(cpu: str, cores, cpu_ident: str = "") -> str:
    """A machine as results name it: ``"AMD EPYC (family 26 model 2 stepping 1) x 2 cores"``
    (without the parenthesis when ``cpu_ident`` is empty, as older records have it)."""
    return f"{cpu}{f' ({cpu_ident})' if cpu_ident else ''} x {cores} cores"


def package_versions(names) -> dict[str, str | None]:
    """The installed version of each distribution in ``names`` (None where it is absent)."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@functools.lru_cache(maxsize=1)
def source_version() -> dict[str, Any]:
    """``{"commit", "dirty", "dirty_files"}`` of the package's git checkout, read once per
    process (a worker runs the code it imported when it started, whatever is committed
    later): ``git rev-parse HEAD``, and the tracked files under ``src`` that differ from it.
    None values outside a checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "src"],
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None, "dirty_files": []}
    files = sorted(line[3:] for line in status.splitlines() if line.strip())
    return {"commit": commit, "dirty": bool(files), "dirty_files": files}


def host_record() -> dict[str, Any]:
    """What a benchmark's JSON records about where and when it ran: the UTC time, CPU model,
    identity and count, Python, architecture, the floating-point kernels in effect
    (:func:`ilets.numerics.record`) and the package's commit (:func:`source_version`)."""
    import datetime

    from ilets.numerics import record

    return {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "cpu_model": cpu_model(), "cpu_id": cpu_id(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "machine": platform.machine(), "numerics": record(), **source_version()}


def write_benchmark(out: Path | None, result: dict[str, Any]) -> dict[str, Any]:
    """Add :func:`host_record` to a benchmark's ``result`` and write it as JSON to ``out``
    (through :func:`ilets.files.atomic_write`; nothing written when ``out`` is None); returns
    ``result``."""
    from ilets.files import atomic_write

    result["host"] = host_record()
    if out is not None:
        atomic_write(Path(out), lambda tmp: tmp.write_text(json.dumps(result, indent=2, default=float) + "\n"))
    return result


def machine_record(packages: Iterable[str]) -> dict[str, Any]:
    """The machine a result is computed on, as a record keeps it: CPU model, identity and
    cores, host name, platform, Python, the floating-point kernels in effect
    (:func:`ilets.numerics.record`) and the versions of ``packages``."""
    import sys

    from ilets.numerics import record

    return {"cpu_model": cpu_model(), "cpu_id": cpu_id(), "cores": os.cpu_count(), "host": platform.node(),
            "platform": platform.platform(), "python": sys.version.split()[0], "numerics": record(),
            "packages": package_versions(packages)}


@dataclass(frozen=True)
class ComputeRecord:
    """What provenance needs of one finished unit of work (a grid cell, a pilot episode)."""

    commit: str | None  #: the commit it ran at (None: not recorded)
    dirty: bool | None  #: whether the code differed from that commit
    cpu_model: str
    cores: int | str
    cpu_id: str  #: "" in records that predate it
    numerics: str  #: the effective kernels (:func:`ilets.numerics.recorded_mode`)
    started_utc: str | None
    cpu_s: float
    wall_s: float
    #: the machine as :func:`machine_label` names it, for a unit that recorded the label
    #: itself rather than its parts (then ``cpu_model``, ``cores`` and ``cpu_id`` are unused)
    machine: str | None = None


def provenance_of(records: Iterable[ComputeRecord]) -> dict[str, Any]:
    """The one provenance schema of every results folder: how many units, the distinct
    commits (``+dirty`` when the code differed), the machines (:func:`machine_label`), the
    floating-point kernels, the first and last start (UTC) and the summed CPU- and
    wall-hours. A unit that predates a record counts as ``"unrecorded"``."""
    commits: Counter[str] = Counter()
    machines: Counter[str] = Counter()
    numerics: Counter[str] = Counter()
    starts: list[str] = []
    cpu, wall, n = 0.0, 0.0, 0
    for r in records:
        n += 1
        commits[(r.commit or "unrecorded") + ("+dirty" if r.dirty else "")] += 1
        machines[r.machine or machine_label(r.cpu_model, r.cores, r.cpu_id)] += 1
        numerics[r.numerics] += 1
        if r.started_utc:
            starts.append(r.started_utc)
        cpu += r.cpu_s
        wall += r.wall_s
    return {"cells": n, "commits": dict(commits), "machines": dict(machines), "numerics": dict(numerics),
            "first_start_utc": min(starts) if starts else None, "last_start_utc": max(starts) if starts else None,
            "cpu_hours": cpu / 3600, "wall_hours_summed": wall / 3600}
