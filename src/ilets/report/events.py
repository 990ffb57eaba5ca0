"""Where the workload's designed events fall in the online pass, read from the results.

The bursts and the trend change are times in the window; the analysis needs the decision
(the online task) at which each strikes. The grid records it when it runs
(:func:`ilets.study.grid.record_events`: ``OUT/events.json``, keyed by the workload
configuration and the seed), and :func:`ilets.study.shipping.ship` copies the file (or
computes it, for folders made before the grid recorded it). This module reads it; only a
results folder without the record (or without this workload and seed in it) makes it
rebuild the workload's arrivals, and then only those, without running any scheduler.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ilets.config import WorkloadConfig
from ilets.study.grid import EVENTS_FILE, online_event_ranges, workload_key


@functools.lru_cache(maxsize=16)
def _read(path: str, stamp: tuple[int, int, int]) -> dict:
    """The parsed file, cached per version (``stamp``: inode, size, modification time)."""
    import json

    return json.loads(Path(path).read_text())


def recorded_seeds(out: Path | str | None, workload: WorkloadConfig) -> dict[str, dict]:
    """``{seed: {"events": ..., "ranges": ...}}`` recorded in ``OUT/events.json`` for
    ``workload``; ``{}`` when ``out`` is None, has no record, or does not record this workload."""
    if out is None:
        return {}
    path = Path(out) / EVENTS_FILE
    if not path.is_file():
        return {}
    st = path.stat()
    recorded = _read(str(path), (st.st_ino, st.st_size, st.st_mtime_ns))
    return dict(recorded.get(workload_key(workload), {}).get("seeds", {}))


@functools.lru_cache(maxsize=64)
def _rebuilt(workload: WorkloadConfig, seed: int) -> tuple[dict[str, float], dict[str, tuple[int, int]]]:
    from ilets.workloads.workload import load_workload

    w = load_workload(workload, int(seed))
    return dict(w.events), online_event_ranges(w.events, w.online.arrival)


def workload_events_for(workload: WorkloadConfig, seed: int, out: Path | str | None = None) -> dict[str, float]:
    """The designed events (name -> window time, s) of ``workload`` with ``seed``: recorded in
    ``out``'s ``events.json``, rebuilt only when it is absent there (see the module)."""
    rec = recorded_seeds(out, workload).get(str(int(seed)))
    return dict(rec["events"]) if rec is not None else _rebuilt(workload, int(seed))[0]


def online_event_ranges_for(workload: WorkloadConfig, seed: int,
                            out: Path | str | None = None) -> dict[str, tuple[int, int]]:
    """Decision ranges ``(d, d_end)`` after each online event of the workload ``workload``
    with ``seed`` (:func:`ilets.study.grid.online_event_ranges`: all of one length in time, the
    shortest gap between online events).

    Read from the results folder ``out`` (``events.json``, recorded by the grid when it ran
    the cells); the workload is rebuilt only when ``out`` is None or its record lacks this
    workload and seed (a folder made before the grid recorded events). Rebuilding raises what
    :func:`ilets.workloads.workload.load_workload` raises when the workload cannot be built
    here (e.g. trace files absent)."""
    rec = recorded_seeds(out, workload).get(str(int(seed)))
    if rec is not None:
        return {k: (int(d), int(e)) for k, (d, e) in rec["ranges"].items()}
    return dict(_rebuilt(workload, int(seed))[1])
