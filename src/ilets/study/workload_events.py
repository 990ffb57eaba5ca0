"""Where each workload's designed events strike, recorded so the analysis never rebuilds
a workload: ``OUT/events.json`` (:func:`record_events`), written by the cloud scenario before
its cells run and when its results are shipped (:func:`ship_events`), read back by
:mod:`ilets.report.events`. (Re-exported by :mod:`ilets.study.grid`, their former home.)
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, overload

import numpy as np

from ilets.config import RunConfig, WorkloadConfig, digest_of, drop_added_defaults, from_dict, to_dict
from ilets.study.run import atomic_text

#: The file of a results folder that records where each workload's events strike.
EVENTS_FILE = "events.json"


@overload
def event_decisions(events: Mapping[str, float], arrival: np.ndarray, span_s: None = None) -> dict[str, int]: ...


@overload
def event_decisions(events: Mapping[str, float], arrival: np.ndarray, span_s: float) -> dict[str, tuple[int, int]]: ...


def event_decisions(events: Mapping[str, float], arrival: np.ndarray,
                    span_s: float | None = None) -> dict[str, int] | dict[str, tuple[int, int]]:
    """Map event times (s) to 0-based decision indices of the online pass.

    Every online task is one decision, in arrival order, so the decision made when an event
    at time ``t`` strikes is the first task arriving at or after ``t``:
    ``d = searchsorted(arrival, t, "left")``. ``arrival`` is the online segment's arrival
    array (``Workload.online.arrival``; it depends on the workload seed), in the same time
    base as ``events`` (``Workload.events``: window seconds). Events outside
    ``[arrival[0], arrival[-1]]``, e.g. the offline half's bursts, are dropped. With
    ``span_s`` each value is the decision range ``(d, d_end)`` of ``[t, t + span_s)`` s
    (``d_end = searchsorted(arrival, t + span_s, "left")``), for
    :func:`ilets.report.stats.oscillation`.
    """
    arrival = np.asarray(arrival, dtype=float)
    out: dict[str, Any] = {}  # decisions (no span_s) or ranges: one kind per call
    if len(arrival) == 0:
        return out
    for name, t in events.items():
        if not arrival[0] <= t <= arrival[-1]:
            continue
        d = int(np.searchsorted(arrival, t, side="left"))
        out[name] = (d, int(np.searchsorted(arrival, t + span_s, side="left"))) if span_s is not None else d
    return out


def online_event_ranges(events: Mapping[str, float], arrival: np.ndarray,
                        span_s: float | None = None) -> dict[str, tuple[int, int]]:
    """Decision ranges after each online event, all of one length in time.

    Like :func:`event_decisions` with ``span_s``; when ``span_s`` is None it is the shortest
    gap between consecutive online events (events within the online arrivals) and between
    the last of them and the last arrival, so that the ranges of different events never
    overlap and each is measured over the same time. Empty if no event lies in the online
    segment.
    """
    arrival = np.asarray(arrival, dtype=float)
    if len(arrival) == 0:
        return {}
    times = sorted(t for t in events.values() if arrival[0] <= t <= arrival[-1])
    if not times:
        return {}
    if span_s is None:
        gaps = np.diff([*times, arrival[-1]])
        gaps = gaps[gaps > 0]
        span_s = float(gaps.min()) if len(gaps) else float(arrival[-1] - times[0])
    return event_decisions(events, arrival, span_s=span_s)


def workload_key(workload: WorkloadConfig) -> str:
    """The key of a workload configuration in ``events.json``: a short hash of every field
    (:func:`ilets.config.digest_of`, the hash that names the cells). A workload field added
    after results were shipped (:data:`ilets.config.ADDED_FIELDS`) is left out at its default,
    as in a cell's digest, so the shipped records keep their keys."""
    plain = drop_added_defaults({"workload": to_dict(workload)})["workload"]
    return digest_of(plain)


def workload_event_record(workload: WorkloadConfig, seed: int) -> dict:
    """``{"events": {name: time}, "ranges": {name: [d, d_end]}}`` of one workload and seed:
    the designed events (``Workload.events``) and their :func:`online_event_ranges`. Builds the
    workload (:func:`ilets.workloads.workload.load_workload`), runs no scheduler."""
    from ilets.workloads.workload import load_workload

    w = load_workload(workload, int(seed))
    ranges = online_event_ranges(w.events, w.online.arrival)
    return {"events": {k: float(v) for k, v in w.events.items()},
            "ranges": {k: [int(d), int(e)] for k, (d, e) in ranges.items()}}


def read_events(out: Path) -> dict:
    """``OUT/events.json`` (:func:`record_events`) as a dict; ``{}`` when the folder has none."""
    path = Path(out) / EVENTS_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def record_events(out: Path, pairs: Iterable[tuple[WorkloadConfig, int]]) -> Path | None:
    """Record the events of every (workload configuration, seed) of ``pairs`` in
    ``OUT/events.json``, keeping what is recorded already; returns the file's path.

    The file maps :func:`workload_key` to ``{"workload": <the configuration>, "seeds": {seed:
    :func:`workload_event_record`}}``. A workload that cannot be built here (e.g. trace files
    absent) is left out with a warning: the analysis then rebuilds it where it can. None when
    nothing could be recorded.
    """
    out = Path(out)
    recorded = read_events(out)
    changed, tried = False, set()
    for workload, seed_number in pairs:
        key, seed = workload_key(workload), str(int(seed_number))
        entry = recorded.setdefault(key, {"workload": to_dict(workload), "seeds": {}})
        if seed in entry["seeds"] or (key, seed) in tried:  # every method's cell names the same pair
            continue
        tried.add((key, seed))
        try:
            entry["seeds"][seed] = workload_event_record(workload, int(seed))
        except Exception as err:  # noqa: BLE001 - not recorded; the analysis rebuilds it where it can
            warnings.warn(f"events of workload {key} seed {seed} not recorded: {err}", stacklevel=2)
            continue
        changed = True
    recorded = {k: v for k, v in recorded.items() if v["seeds"]}
    if not recorded:
        return None
    path = out / EVENTS_FILE
    if changed or not path.is_file():
        atomic_text(path, json.dumps(recorded, indent=1, sort_keys=True))
    return path


def ship_events(src: Path, dest: Path, cells: Iterable[Path]) -> Path | None:
    """``dest/events.json``: ``src``'s (:data:`EVENTS_FILE`), with the events of every workload
    and seed of ``cells`` (cell folders, read from their ``config.yaml``) that it lacks computed
    now (:func:`record_events`); None when none could be."""
    import yaml

    from ilets import cell_pack

    src, dest = Path(src), Path(dest)
    if (src / EVENTS_FILE).is_file():
        shutil.copy2(src / EVENTS_FILE, dest / EVENTS_FILE)
    pairs = []
    for cell in cells:
        # a cell folder, or one of a shipped folder's table (a shipped folder shipped again)
        cfg = from_dict(RunConfig, yaml.safe_load(cell_pack.read_text(Path(cell) / "config.yaml")), f"{cell}/config.yaml")
        pairs.append((cfg.workload, cfg.seed))
    return record_events(dest, pairs)
