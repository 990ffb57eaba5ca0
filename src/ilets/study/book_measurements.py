"""The measurements the book quotes that no grid records, computed once and recorded.

Four chapters quote numbers that are measured rather than read from a grid's cells. They
used to measure them while the book built; now ``python -m ilets.study.book_measurements``
(``make artifacts``) measures them once, with the settings of the results folder the book
shows (its profile's ``run``), and writes one JSON per chapter into
``shipped/book/<profile>/`` (:func:`measurements_dir`), each with the machine, the date and
the commit it ran at (:func:`ilets.host.write_benchmark`, as every benchmark records them):

* ``workload.json`` (chapter 3): how loaded each fleet size is, earliest-finish on the online
  segment at 50, 100 and 200 servers, on the full window and on the profile's (:func:`load_table`);
* ``experts.json`` (chapter 4): the plans one GA or PSO call scores, the 80 small cases'
  gaps to the enumerated optimum (:func:`ilets.study.expert_tables.gap_cases`) and the time
  per call (:func:`ilets.study.expert_tables.timing_table`);
* ``decision_time.json`` (chapter 8): DRL's and ILETS's per-decision latency at 50, 100 and
  200 servers (:func:`ilets.study.latency.measured_latency`);
* ``headroom.json`` (chapter 13, the RL stage): each fleet size's and seed's bounds on mean
  response time and mean reward (:func:`ilets.study.headroom.headroom_record`).

The sizes and seeds are the chapters' own (the constants below). Each record keeps the whole
``run`` it was measured with; :mod:`ilets.report.measurements` reads a record and refuses one
measured with other settings (:data:`DEPENDS`) than the results the book shows. Only the
reading functions are imported by the chapters (``tests/test_book_static.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Callable

import pandas as pd

from ilets.config import FleetConfig, RunConfig, WorkloadConfig, to_dict
from ilets.study.results import repo_root

#: The folder of every profile's records, relative to the repository root.
SHIPPED_BOOK = Path("shipped") / "book"
#: Environment variable naming another folder of records (one subfolder per profile), e.g. for
#: a book built from a fresh grid in a temporary folder.
ENV_VAR = "ILETS_BOOK_MEASUREMENTS"

#: Chapter 3's load table: the fleet sizes, the workload and fleet seed, the heuristic.
LOAD_SERVERS = (50, 100, 200)
LOAD_SEED = 0
LOAD_POLICY = "earliest-finish"
#: Chapter 4: small cases against the enumerated optimum; the time per call at these fleet
#: sizes, after these many online tasks, with these many seeds per snapshot; the plans one
#: call scores, read off the snapshot of (servers, tasks placed).
GAP_CASES = 80
TIMING_SERVERS = (50, 100, 200)
TIMING_STOPS = (1000, 2000)
TIMING_REPEATS = 2
EVALUATIONS_AT = (50, 1000)
#: Chapter 8: decisions timed per method and fleet size, and one SB3 predict in this many.
LATENCY_SERVERS = (50, 100, 200)
LATENCY_DECISIONS = 600
PREDICT_EVERY = 5

#: The ``run`` sections each record depends on (None: the whole run), which its reader
#: compares with the results shown.
DEPENDS: dict[str, tuple[str, ...] | None] = {
    "workload": ("workload", "fleet"),
    "experts": ("experts", "reward"),
    "decision_time": None,
    "headroom": ("workload", "fleet", "reward"),
}


def measurements_dir(profile: str) -> Path:
    """Where the records of ``profile`` are: ``$ILETS_BOOK_MEASUREMENTS/<profile>`` if that
    variable is set, else ``shipped/book/<profile>`` in the repository."""
    env = os.environ.get(ENV_VAR)
    return (Path(env) if env else repo_root() / SHIPPED_BOOK) / profile


def settings_of(run: RunConfig, name: str) -> dict:
    """The parts of ``run`` (as plain data) that record ``name`` depends on (:data:`DEPENDS`)."""
    plain = to_dict(run)
    sections = DEPENDS[name]
    return plain if sections is None else {s: plain[s] for s in sections}


# --- chapter 3 --------------------------------------------------------------------------------
def load_table(workload: WorkloadConfig, fleet: FleetConfig, servers: tuple[int, ...],
               scales: tuple[float, ...], seed: int = 0, policy: str = LOAD_POLICY) -> pd.DataFrame:
    """How loaded each fleet size is: a heuristic's metrics on the online segment per scale.

    Used to calibrate the reconstructed service rates: shortening the window keeps the
    arrival rate but not the queues that build up over a long overload, so the same fleet
    is less loaded on a reduced workload than over the paper's full window. One row per
    (scale, servers) with :meth:`ilets.simulator.cloud.Cloud.summary`'s metrics.
    """
    from ilets.agents.policies import make_heuristic, schedule
    from ilets.simulator.cloud import make_fleet
    from ilets.workloads.workload import synthetic_workload

    rows = []
    for scale in scales:
        online = synthetic_workload(dataclasses.replace(workload, scale=scale), seed).online
        for m in servers:
            cloud = schedule(online, make_fleet(dataclasses.replace(fleet, servers=m), fleet.seed),
                             make_heuristic(policy, seed=seed))
            rows.append({"scale": scale, "servers": m, "policy": policy, **cloud.summary()})
    return pd.DataFrame(rows)


def load_scales(run: RunConfig) -> tuple[float, ...]:
    """The workload scales of chapter 3's table: the full window and the profile's."""
    return tuple(sorted({1.0, float(run.workload.scale)}))


def recorded_load_rows(workload: WorkloadConfig, fleet: FleetConfig, scale: float, records: list[Path],
                       servers: tuple[int, ...] = LOAD_SERVERS, seed: int = LOAD_SEED,
                       policy: str = LOAD_POLICY) -> tuple[list[dict], dict] | None:
    """The rows at ``scale`` of a workload record measured with the same settings, or None.

    A load row depends on the workload at that scale, the fleet, the fleet sizes, the seed and
    the heuristic only, so the full-window rows of another profile's record (chapter 3 shows
    the full window beside every profile's own scale) are the rows this profile would compute:
    the simulator and the heuristic are deterministic, and their shipped cells are re-run
    exactly (``ilets verify``). Settings are compared as configs, so a field added since the
    record was measured counts at its default, as it does for every cell's digest. Returns
    (rows, where they came from: the record's path, profile, commit and date)."""
    from ilets.config import from_dict

    want = (dataclasses.replace(workload, scale=scale), fleet)
    for path in records:
        try:
            data = json.loads(path.read_text())
            had = (dataclasses.replace(from_dict(WorkloadConfig, data["run"]["workload"], f"{path}: run.workload"),
                                       scale=scale),
                   from_dict(FleetConfig, data["run"]["fleet"], f"{path}: run.fleet"))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a readable workload record: measure instead
        rows = [r for r in data.get("load", []) if r.get("scale") == scale]
        if (had == want and data.get("seed") == seed and data.get("policy") == policy
                and sorted(r["servers"] for r in rows) == sorted(servers)):
            host = data.get("host", {})
            return rows, {"scale": scale, "record": str(path), "profile": data.get("profile"),
                          "commit": host.get("commit"), "date_utc": host.get("date_utc")}
    return None


def _measured_with(path: Path, run: RunConfig) -> bool:
    """Whether the record at ``path`` was measured with exactly ``run``."""
    from ilets.config import from_dict

    try:
        return from_dict(RunConfig, json.loads(path.read_text())["run"], str(path)) == run
    except (OSError, ValueError, KeyError, TypeError):
        return False


def workload_record(run: RunConfig, reuse: list[Path] | None = None) -> dict:
    """Chapter 3's load table (:func:`load_table` at :data:`LOAD_SERVERS`, :func:`load_scales`).

    The rows of a scale that a record in ``reuse`` (default: every shipped profile's
    ``workload.json`` but one measured with this very ``run``) measured with the same settings
    are taken from it
    (:func:`recorded_load_rows`, listed under ``reused``); the others are measured."""
    if reuse is None:  # not a record of this very run: measuring a profile again measures it anew
        reuse = [p for p in sorted((repo_root() / SHIPPED_BOOK).glob("*/workload.json")) if not _measured_with(p, run)]
    scales = load_scales(run)
    rows, reused = [], []
    for scale in scales:
        found = recorded_load_rows(run.workload, run.fleet, scale, reuse)
        if found is None:
            table = load_table(run.workload, run.fleet, LOAD_SERVERS, (scale,), seed=LOAD_SEED, policy=LOAD_POLICY)
            rows += table.to_dict("records")
        else:
            rows += found[0]
            reused.append(found[1])
    return {"servers": list(LOAD_SERVERS), "scales": list(scales), "seed": LOAD_SEED, "policy": LOAD_POLICY,
            "load": rows, "reused": reused}


# --- chapter 4 --------------------------------------------------------------------------------
def experts_record(run: RunConfig) -> dict:
    """Chapter 4's measurements with the run's expert and reward settings: the plans one call
    of each search expert scores (on the :data:`EVALUATIONS_AT` snapshot, seed 0), the
    :data:`GAP_CASES` small cases' rows and the time per call (rows of the study's tables)."""
    import numpy as np

    from ilets.agents.experts import make_expert
    from ilets.expert_table import SEARCH_EXPERTS
    from ilets.study.expert_tables import gap_cases, loaded_snapshots, timing_table

    cfg, reward = run.experts, run.reward
    servers, stop = EVALUATIONS_AT
    snapshot = loaded_snapshots(servers, [stop], cfg.window)[0]
    evaluations = {n: int(make_expert(n, cfg, reward).plan(*snapshot, np.random.default_rng(0)).evaluations)
                   for n in SEARCH_EXPERTS}
    gaps = gap_cases(cfg, reward, GAP_CASES)
    timing = timing_table(cfg, reward, list(TIMING_SERVERS), list(TIMING_STOPS), TIMING_REPEATS)
    return {"evaluations_at": {"servers": servers, "tasks_placed": stop}, "evaluations": evaluations,
            "gap_cases": GAP_CASES, "gaps": gaps,
            "timing_settings": {"servers": list(TIMING_SERVERS), "stops": list(TIMING_STOPS),
                                "repeats": TIMING_REPEATS},
            "timing": timing}


# --- chapter 8 --------------------------------------------------------------------------------
def decision_time_record(run: RunConfig) -> dict:
    """Chapter 8's latency (:func:`ilets.study.latency.measured_latency`): the p50/p95 summary
    (:func:`ilets.study.latency.summarise`), the OAIL callback's time per decision (mean and
    max, s) and the OAIL counters per fleet size."""
    from ilets.study.latency import measured_latency, summarise

    timings, counters = measured_latency(run, LATENCY_SERVERS, LATENCY_DECISIONS, PREDICT_EVERY)
    oail = timings.loc[timings["path"] == "oail", "seconds"]
    return {"servers": list(LATENCY_SERVERS), "decisions": LATENCY_DECISIONS, "predict_every": PREDICT_EVERY,
            "summary": summarise(timings).to_dict("records"),
            "oail_seconds": {"mean": float(oail.mean()), "max": float(oail.max()), "decisions": int(len(oail))},
            "oail_counters": {str(m): {k: int(v) if float(v).is_integer() else float(v) for k, v in row.items()}
                              for m, row in counters.iterrows()}}


# --- the RL stage (chapter 13) ------------------------------------------------------------------
def headroom_record(run: RunConfig) -> dict:
    """The RL stage's bounds (:func:`ilets.study.headroom.headroom_record`)."""
    from ilets.study.headroom import headroom_record as bounds

    return bounds(run)


#: Each record's name and the function that measures it.
RECORDS: dict[str, Callable[[RunConfig], dict]] = {
    "workload": workload_record,
    "experts": experts_record,
    "decision_time": decision_time_record,
    "headroom": headroom_record,
}


def record(name: str, run: RunConfig, profile: str, out: Path | None) -> dict:
    """Measure record ``name`` with ``run``, add what it was measured with (the profile's name,
    the whole ``run``, the sections it depends on) and where and when
    (:func:`ilets.host.write_benchmark`), and write it to ``out / f"{name}.json"`` (nothing
    written when ``out`` is None)."""
    from ilets.host import write_benchmark

    result = {"record": name, "profile": profile, "depends_on": DEPENDS[name], "run": to_dict(run),
              **RECORDS[name](run)}
    return write_benchmark(None if out is None else Path(out) / f"{name}.json", result)


def results_run(results: Path) -> tuple[str, RunConfig]:
    """The profile's name and run settings of a results folder (what its chapters show)."""
    from ilets.config import from_dict
    from ilets.study.results import load_profile_info

    profile = load_profile_info(Path(results))
    return str(profile["name"]), from_dict(RunConfig, dict(profile["run"]), "profile.run")


def main(argv: list[str] | None = None) -> int:
    """Measure the chosen records with a results folder's settings and write them."""
    from ilets.study.results import results_dir

    ap = argparse.ArgumentParser(prog="python -m ilets.study.book_measurements", description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=None,
                    help="the results folder whose profile's settings to measure with (default: the one the book shows)")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"folder of the records (default: ${ENV_VAR}/<profile>, else shipped/book/<profile>)")
    ap.add_argument("--only", nargs="+", choices=list(RECORDS), default=list(RECORDS), help="the records to measure")
    args = ap.parse_args(argv)
    results = args.results or results_dir()
    profile, run = results_run(results)
    out = args.out or measurements_dir(profile)
    for name in args.only:
        print(f"{name}: measuring with the {profile} profile's settings ({results})", flush=True)
        record(name, run, profile, out)
        print(f"{name}: wrote {Path(out) / f'{name}.json'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
