"""The grid-command designs that no finding rests on, as one table instead of shipped folders.

A design tried and dropped (a learner's variant, a lever's timing, a pilot's candidate, a drift
family) once had a folder under ``shipped/``. Its numbers are kept here, one row per (design,
fleet size, seed, method, scored regime), with the store's metrics, the clone's agreement, the
cell's CPU time and the commit it ran at, and how to recompute it: the profile named by the row,
as it stood at the archive's commit (``git show <commit>:src/ilets/configs/<profile>.yaml``), run
by the command in the row. :func:`build_archive` reads the folders before they are removed;
:func:`load_archive` reads the table back.

``python -m ilets.gridcommand.archive --root . <folder> ...`` writes :data:`ARCHIVE` and
:data:`ARCHIVE_PROVENANCE` from the named folders of ``shipped/``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ilets import cell_pack

#: The archive table and its provenance, relative to the repository root.
ARCHIVE = Path("shipped") / "archive" / "gridcommand-designs.parquet"
ARCHIVE_PROVENANCE = Path("shipped") / "archive" / "gridcommand-designs.json"


@dataclass(frozen=True)
class Design:
    """One retired design: what it changed over the design before it, and why it was dropped."""

    changed: str
    dropped: str
    kind: str = "grid"  # grid, drift (a family of grids per factor), pilot (a folder per candidate)


#: Every retired folder of ``shipped/`` (its name) and what it was.
DESIGNS: dict[str, Design] = {
    "gridcommand-pilot": Design("expert settings (oracle node limit, Lyapunov gain) on pilot seeds",
                                "a choice made once; its values are in the profiles", "pilot"),
    "gridcommand-cap": Design("the power-cap rung beside the rule, Lyapunov and the thermostat",
                              "the cap alone reaches the band on few events"),
    "gridcommand-clone-pilot": Design("clone pilots: one candidate setting per sub-folder, pilot seeds",
                                      "each chose a setting; the designs built on the choices missed the bar",
                                      "pilot"),
    "gridcommand-drift": Design("drift protocol, flat policy, one day of commands",
                                "3 events in the median episode, below the 20 asked", "drift"),
    "gridcommand-drift-days": Design("drift protocol, flat policy, fourteen days of commands",
                                     "2 seeds only", "drift"),
    "gridcommand-drift-per-server": Design("drift protocol, the energy-ranked per-server clone",
                                           "no factor has its control", "drift"),
    "gridcommand-drift-per-server-episodes": Design("drift protocol, the 16-episode per-server clone",
                                                    "2.5 events in the median episode", "drift"),
    "gridcommand-drift-per-server-days": Design(
        "drift protocol, the 16-episode clone, fourteen-day scored episodes",
        "the only family that meets the drift criterion; archived for its size (15 MB), read from here", "drift"),
    "gridcommand-paper-experts": Design("the rule, Lyapunov and the thermostat at the full window",
                                        "the full-window grid holds the same experts"),
    "gridcommand-paper-sleep": Design("the sleep lever at the full window",
                                      "the envelope is judged on the grid with unreachable events moved"),
    "gridcommand-paper-sleep-deadlines": Design("commands sized to the reach that keeps deadlines",
                                                "changed no criterion"),
    "gridcommand-paper-sleep-each": Design("one envelope run per event at the full window", "drops more events"),
    "gridcommand-per-server": Design("the per-server policy, the clone-based methods",
                                     "its clone missed the bar"),
    "gridcommand-per-server-budget": Design("BC epochs from the budget pilot", "missed the bar"),
    "gridcommand-per-server-cap": Design("a cap head with a hidden layer, the power-cap rung as teacher",
                                         "a head's positive control; no finding"),
    "gridcommand-per-server-cap-pooled": Design("the cap head with linear logits", "control of the cap head"),
    "gridcommand-per-server-dagger": Design("one DAgger round", "missed the bar at 50 servers"),
    "gridcommand-per-server-dagger-rounds": Design("8 DAgger rounds, 50 servers", "missed the bar"),
    "gridcommand-per-server-dvfs": Design("one row per clock speed and server", "a head's positive control"),
    "gridcommand-per-server-energy": Design("each server's row ranked by energy", "missed the bar"),
    "gridcommand-per-server-energy-defers": Design("deferrals shown 16 times to BC", "missed the bar"),
    "gridcommand-per-server-episodes-from50": Design("the 16-episode clone learned on 50 servers, scored on 200",
                                                     "superseded by the own-workloads twin"),
    "gridcommand-per-server-episodes-own-from50": Design(
        "own training workloads, clone learned on 50 servers, scored on 50 and 200", "missed the bar at 200"),
    "gridcommand-per-server-film": Design("a film term in the placement scores", "missed the bar"),
    "gridcommand-per-server-later": Design("deferral scored per server", "missed the bar"),
    "gridcommand-per-server-queues": Design("Lyapunov's two queues shown", "missed the bar"),
    "gridcommand-per-server-queues-greedy": Design("the clone scored greedily", "missed the bar"),
    "gridcommand-per-server-sleep": Design("the sleep lever on for the clones", "missed the bar"),
    "gridcommand-per-server-sleep-head": Design("the policy puts servers to sleep", "its clone slept little"),
    "gridcommand-per-server-sleep-head-weighted": Design("sleep actions shown 4 times to BC", "no finding"),
    "gridcommand-per-server-thermostat": Design("the thermostat as the teacher", "its clone tracked worse"),
    "gridcommand-per-server-thermostat-events": Design("event decisions shown 4 times to BC", "no finding"),
    "gridcommand-sleep": Design("the sleep lever, quick scale", "the full-window grids judge the envelope"),
    "gridcommand-sleep-batch": Design("a 30 % batch class with the sleep lever", "changed no criterion"),
    "gridcommand-sleep-batch-low": Design("a 10 % batch class with the sleep lever", "sensitivity only"),
    "gridcommand-sleep-each": Design("one envelope run per event, quick scale", "changed no criterion"),
    "gridcommand-sleep-fast": Design("a faster sleep lever", "sensitivity only"),
    "gridcommand-sleep-slow": Design("a slower sleep lever", "sensitivity only"),
}

#: The store's columns every row keeps (the metrics the chapter reads and their context).
KEYS = ("design", "folder", "part", "method", "servers", "seed", "role", "regime")


def _head_commit(root: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _recompute(kind: str, folder: str, part: str, profile: str) -> str:
    if kind == "drift":
        return f"python -m ilets.gridcommand.study.drift --family {folder} --factors {part.split('/')[0]}"
    if folder == "gridcommand-pilot":
        return f"ilets pilot --scenario gridcommand --profile {profile}"
    return f"ilets grid --scenario gridcommand --profile {profile}"


def _cells(grid: Path) -> dict[tuple[str, int, int], dict]:
    out = {}
    for path in cell_pack.cell_paths(grid, "*.json"):  # either layout: a shipped folder's cells are one table
        rec = json.loads(cell_pack.read_text(path))
        if rec.get("status") == "done":
            out[(rec["method"], int(rec["servers"]), int(rec["seed"]))] = rec
    return out


def _grid_rows(grid: Path, folder: str, part: str, design: Design) -> pd.DataFrame:
    table = pd.read_parquet(grid / "store" / "results.parquet")
    profile_json = json.loads((grid / "profile.json").read_text()) if (grid / "profile.json").is_file() else {}
    profile = str(profile_json.get("name", ""))
    cells = _cells(grid)
    recs = [cells.get((m, int(s), int(k)), {}) for m, s, k in zip(table["method"], table["servers"], table["seed"])]
    agreement = [(r.get("train") or {}).get("bc_agreement_after", np.nan) for r in recs]
    name = profile or next((r.get("profile", "") for r in recs if r.get("profile")), "")
    return table.assign(
        design=f"{folder}/{part}" if part else folder, folder=folder, part=part, changed=design.changed,
        dropped=design.dropped,
        agreement=pd.to_numeric(pd.Series(agreement, dtype=object), errors="coerce").to_numpy(),
        miss_rate=1.0 - table["success_rate"], cell_commit=[str(r.get("commit", ""))[:12] for r in recs],
        profile=name, cpu_hours=[float(r.get("cpu_s", np.nan)) / 3600.0 for r in recs],
        recompute=_recompute(design.kind, folder, part, name))


def _pilot_rows(folder_path: Path, folder: str, design: Design) -> pd.DataFrame:
    pilot = json.loads((folder_path / "pilot.json").read_text())
    rows = [json.loads(line) for line in (folder_path / "episodes.jsonl").read_text().splitlines() if line.strip()]
    t = pd.DataFrame(rows)
    profile = str(pilot.get("profile", "gridcommand-grid-quick"))
    return pd.DataFrame({
        "design": folder, "folder": folder, "part": [f"{o}={v:g}" for o, v in zip(t["option"], t["value"])],
        "changed": design.changed, "dropped": design.dropped, "method": t["expert"], "servers": t["servers"],
        "seed": t["seed"], "role": "pilot", "regime": t["regime"], "scale": pilot.get("scale", "quick"),
        "tracking_mae_rel": t["tracking_mae_rel"], "misses_caused": t["misses_caused"],
        "episode_reward": t["episode_reward"], "deferrals": t["deferrals"], "decisions": t["decisions"],
        "cell_commit": t["commit"].str[:12], "profile": profile, "cpu_hours": t["cpu_s"] / 3600.0,
        "recompute": _recompute(design.kind, folder, "", profile)})


def _grids(folder_path: Path) -> list[Path]:
    return sorted({p.parents[1] for p in folder_path.rglob("store/results.parquet")})


def build_archive(root: Path, folders: list[str], commit: str | None = None,
                  designs: dict[str, Design] | None = None) -> tuple[pd.DataFrame, dict]:
    """The archive table of ``folders`` (names under ``root/shipped``, each in :data:`DESIGNS`)
    and its provenance: per design, its grids' planned and finished cells, CPU-hours and the
    commits its cells ran at; ``commit`` (default: ``root``'s HEAD) is the commit at which every
    row's profile exists; ``designs`` (default :data:`DESIGNS`) describes the folders."""
    root = Path(root)
    designs = DESIGNS if designs is None else designs
    commit = commit or _head_commit(root)
    parts, grids = [], {}
    for folder in folders:
        design = designs[folder]  # a folder not described is an error, not a silent row
        path = root / "shipped" / folder
        if design.kind == "pilot" and (path / "episodes.jsonl").is_file():
            parts.append(_pilot_rows(path, folder, design))
            continue
        for grid in _grids(path):
            part = grid.relative_to(path).as_posix() if grid != path else ""
            rows = _grid_rows(grid, folder, part, design)
            parts.append(rows)
            manifest = json.loads((grid / "grid.json").read_text()) if (grid / "grid.json").is_file() else {}
            grids[rows["design"].iloc[0]] = {
                "planned_cells": len(manifest.get("cells", [])) or None,
                "done_cells": int(rows.drop_duplicates(["method", "servers", "seed"]).shape[0])}
    table = pd.concat(parts, ignore_index=True)
    table["recompute_commit"] = commit
    provenance = {
        "what": "grid-command designs retired from shipped/: one row per design, fleet, seed, method and scored "
                "regime; recompute a row with its recompute command and its profile as at recompute_commit",
        "recompute_commit": commit, "folders": folders, "grids": grids, "rows": len(table),
        "cpu_hours": float(table.drop_duplicates(["design", "method", "servers", "seed"])["cpu_hours"].sum())}
    return table, provenance


def write_archive(root: Path, folders: list[str], commit: str | None = None) -> Path:
    """Build the archive of ``folders`` and write it under ``root`` (:data:`ARCHIVE`, :data:`ARCHIVE_PROVENANCE`)."""
    table, provenance = build_archive(root, folders, commit)
    out = Path(root) / ARCHIVE
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(out, index=False, compression="zstd")
    (Path(root) / ARCHIVE_PROVENANCE).write_text(json.dumps(provenance, indent=1) + "\n")
    return out


def load_archive(root: Path) -> pd.DataFrame:
    """The archive table under ``root``, or an empty frame with :data:`KEYS` when there is none."""
    path = Path(root) / ARCHIVE
    return pd.read_parquet(path) if path.is_file() else pd.DataFrame(columns=[*KEYS, "changed", "dropped"])


def archive_provenance(root: Path) -> dict:
    """The archive's provenance (:data:`ARCHIVE_PROVENANCE`), empty when absent."""
    path = Path(root) / ARCHIVE_PROVENANCE
    return json.loads(path.read_text()) if path.is_file() else {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ilets.gridcommand.archive", description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=Path("."))
    ap.add_argument("folders", nargs="+", help="folder names under shipped/ to archive")
    args = ap.parse_args(argv)
    print(write_archive(args.root, args.folders))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
