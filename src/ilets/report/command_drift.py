"""The grid-command drift protocol as the book shows it: one row per factor with its control.

Reads the grids :mod:`ilets.study.command_drift` runs (``<folder>/<factor>/<kind>``, each an
ordinary grid-command results folder) and sets three arms side by side, paired by seed:

* ``base``: a method trained under the base regime, scored under it (``shifted`` grid, role
  ``train``);
* ``moved``: the same method scored under the base with one factor moved (``shifted``, role
  ``eval``): the drift;
* ``control``: the method trained under the moved regime and scored there (``control``
  grid, role ``train``): what training under the new regime would have given. Experts are
  not trained, so they have no control.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ilets.gridcommand.command import DRIFT_EVENTS_RISK  # noqa: F401  (the chapter reads the rule's risk here)
from ilets.gridcommand.command import DRIFT_BASE, DRIFT_EVENTS, DRIFT_FACTORS, DRIFT_LOAD, DRIFT_TOWARD, REGIMES
from ilets.report import stats as S
from ilets.report.command_control import EPISODES_DESIGN, GAP_DESIGN
from ilets.report.grid_command import LABELS, METRICS

#: Where the book reads the shipped results (relative to the repository root).
SHIPPED = Path("shipped") / "gridcommand-drift"
#: The same protocol with several days of commands per episode (family ``gridcommand-drift-days``,
#: scenario ``gridcommand-quick-days``), so that each episode holds
#: :data:`~ilets.gridcommand.command.DRIFT_EVENTS` events.
DAYS_SHIPPED = Path("shipped") / "gridcommand-drift-days"
#: The same protocol with the clone-based methods of the clone section's last design
#: (family ``gridcommand-drift-per-server``: the per-server policy, its scenario and pipeline
#: those of ``gridcommand-grid-per-server-energy``).
PER_SERVER_SHIPPED = Path("shipped") / "gridcommand-drift-per-server"
#: That family, and the clone design of :data:`ilets.report.command_control.DESIGNS` whose
#: scenario and pipeline it runs (a test holds them equal).
PER_SERVER_FAMILY = "gridcommand-drift-per-server"
PER_SERVER_DESIGN = GAP_DESIGN
#: The same protocol with the clone-based methods of the design whose frozen clone met the bar
#: (family ``gridcommand-drift-per-server-episodes``: the energy-ranked design with the clone
#: learning from 16 training episodes), and that design (a test holds them equal).
EPISODES_SHIPPED = Path("shipped") / "gridcommand-drift-per-server-episodes"
EPISODES_FAMILY = "gridcommand-drift-per-server-episodes"
EPISODES_FAMILY_DESIGN = EPISODES_DESIGN
#: That family with fourteen days of commands per scored episode and the same clone, its 16
#: training episodes kept one day long (family ``gridcommand-drift-per-server-days``,
#: ``pipeline.train_days``; the training-window pilot's choice).
PER_SERVER_DAYS_SHIPPED = Path("shipped") / "gridcommand-drift-per-server-days"
PER_SERVER_DAYS_FAMILY = "gridcommand-drift-per-server-days"
#: Every drift family the chapter reads: its learner's design -> where it is shipped.
FAMILIES = {"flat (family gridcommand-drift-quick)": SHIPPED, "flat (family gridcommand-drift-days)": DAYS_SHIPPED,
            f"per-server (family {PER_SERVER_FAMILY})": PER_SERVER_SHIPPED,
            f"per-server (16 training episodes; family {EPISODES_FAMILY})": EPISODES_SHIPPED,
            f"per-server (16 one-day training episodes, fourteen-day scored ones; family {PER_SERVER_DAYS_FAMILY})":
                PER_SERVER_DAYS_SHIPPED}
#: (grid kind, role) -> arm.
ARMS = {("shifted", "train"): "base", ("shifted", "eval"): "moved", ("control", "train"): "control"}
#: The metrics the protocol reports (all in :data:`ilets.report.grid_command.METRICS`).
DRIFT_METRICS = ("tracking_mae_rel", "misses_caused", "in_band_fraction")


def load_drift(folder: Path) -> pd.DataFrame:
    """Every grid's store under ``folder``, one row per cell and arm (columns ``factor``,
    ``kind``, ``arm`` besides the store's); an empty frame when there is none."""
    parts = []
    for store in sorted(Path(folder).glob("*/*/store/results.parquet")):
        factor, kind = store.parents[2].name, store.parents[1].name
        t = pd.read_parquet(store).assign(factor=factor, kind=kind)
        t["arm"] = [ARMS.get((kind, role)) for role in t["role"]]
        if t["arm"].notna().any():  # a grid shipped before its first cell finished adds nothing
            parts.append(t[t["arm"].notna()])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["factor", "kind", "arm", "method", "servers", "seed", "role", "regime", "scale", *DRIFT_METRICS])


def control_grids(root: Path, families: Mapping[str, Path] | None = None) -> dict[str, Path]:
    """Per drift family (design -> shipped folder, by default :data:`FAMILIES`), the grid that
    holds its positive control: the first factor's ``shifted`` grid shipped (relative to
    ``root``). Its ``train`` role is every method trained and scored under the base regime, the
    teacher on the same episodes, as in every factor's ``shifted`` grid; families not shipped
    are left out. For :func:`ilets.report.command_control.load_designs`."""
    out = {}
    for design, folder in (FAMILIES if families is None else families).items():
        found = [f for f in DRIFT_FACTORS if (Path(root) / folder / f / "shifted" / "cells").is_dir()]
        if found:
            out[design] = Path(folder) / found[0] / "shifted"
    return out


def scale_of(rows: pd.DataFrame) -> str:
    """The scale label every row carries, ``"mixed"`` when they differ, ``"quick"`` when none."""
    scales = sorted(set(rows["scale"])) if len(rows) else ["quick"]
    return scales[0] if len(scales) == 1 else "mixed"


def status_sentence(rows: pd.DataFrame, folder: Path, family: str = "quick") -> str:
    """What the drift section shows: factors, grids, cells, seeds and fleet sizes, scale, and
    the cells' CPU time and commits (from each grid's ``PROVENANCE.json``), or why nothing
    (with the command that runs ``family``)."""
    if len(rows) == 0:
        run = f"python -m ilets.study.command_drift --family {family}"
        return (f"No drift-protocol results in `{folder.name}` yet: `{run} --out results/{folder.name}`, then "
                f"`{run} --ship results/{folder.name} --to shipped/{folder.name}`, computes and ships them.")
    provenance = [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*/*/PROVENANCE.json"))]
    cells = rows[rows["role"] == "train"]
    commits = sorted({c[:12] for p in provenance for c in p.get("commits", {})})
    factors = [f for f in DRIFT_FACTORS if f in set(rows["factor"])]
    missing = [f for f in DRIFT_FACTORS if f not in factors]
    partway = part_way(cells, folder)
    return (f"Read from `{folder.name}` ({scale_of(rows)} scale, not paper scale): {len(cells)} cells in "
            f"{rows.groupby(['factor', 'kind']).ngroups} grids"
            + (f" ({', '.join(partway)})" if partway else "")
            + f", factors {', '.join(factors)}"
            + (f" (not yet run: {', '.join(missing)})" if missing else "")
            + f"; fleet sizes {', '.join(map(str, sorted(set(rows['servers']))))}; seeds "
            f"{', '.join(map(str, sorted(set(rows['seed']))))}; "
            f"{sum(p.get('cpu_hours', 0.0) for p in provenance):.2f} CPU-hours, at commit "
            f"{', '.join(commits) or 'unrecorded'}.")


def grid_progress(cells: pd.DataFrame, folder: Path) -> dict[tuple[str, str], tuple[int, int | None]]:
    """Per (factor, kind) of a factor with some cell, in the protocol's order: the grid's
    finished cells (``cells``: one row per cell) and the cells its manifest plans (``grid.json``
    under ``folder``; None without one)."""
    from ilets.study.command_drift import KINDS
    from ilets.study.grid import manifest_cell_count

    counts = cells.groupby(["factor", "kind"]).size()
    return {(factor, kind): (int(counts.get((factor, kind), 0)), manifest_cell_count(Path(folder) / factor / kind))
            for factor in DRIFT_FACTORS if any(counts.get((factor, k), 0) for k in KINDS) for kind in KINDS}


def part_way(cells: pd.DataFrame, folder: Path) -> list[str]:
    """``"<factor> <kind>: n of N cells"`` for each grid under ``folder`` that holds fewer
    cells (``cells``: one row per cell) than its manifest plans (``grid.json``), and
    ``"<factor> <kind>: not yet run"`` for a grid with no cell (no folder, or none finished) of a
    factor whose other grid has some, in the protocol's order (:func:`grid_progress`). A factor
    with no cell at all is the status sentence's "not yet run" list, not repeated here."""
    out = []
    for (factor, kind), (done, planned) in grid_progress(cells, folder).items():
        if not done:
            out.append(f"{factor} {kind}: not yet run")
        elif planned is not None and done < planned:
            out.append(f"{factor} {kind}: {done} of {planned} cells")
    return out


def complete_factors(rows: pd.DataFrame, folder: Path) -> list[str]:
    """The factors of a shipped family (``rows`` from :func:`load_drift` of ``folder``) whose
    shifted grid and control grid both hold every cell their manifests plan: the factors the
    drift table has a whole row for, its control included. A grid without a manifest is not
    whole: nothing says what it planned."""
    from ilets.study.command_drift import KINDS

    progress = grid_progress(rows[rows["role"] == "train"], folder)

    def whole(factor: str, kind: str) -> bool:
        done, planned = progress.get((factor, kind), (0, None))
        return planned is not None and 0 < planned <= done

    return [f for f in DRIFT_FACTORS if all(whole(f, kind) for kind in KINDS)]


def episode_events(rows: pd.DataFrame) -> pd.Series:
    """The events of each distinct scored episode of a family (``rows`` from
    :func:`load_drift`): an episode is a (regime, fleet size, seed), and the arms of different
    grids may score the same one, so it is counted once."""
    return rows.drop_duplicates(["regime", "servers", "seed"])["events"]


def factors_table() -> pd.DataFrame:
    """What each factor moves: the fields and their values in the base and the moved regime."""
    base = REGIMES[DRIFT_BASE]
    rows = []
    for factor, fields in DRIFT_FACTORS.items():
        moved = REGIMES[f"{DRIFT_BASE}+{factor}"]
        rows.append({"factor": factor, "regime": moved.name, "moves": ", ".join(fields),
                     DRIFT_BASE: "; ".join(f"{getattr(base, f)}" for f in fields),
                     "moved to": "; ".join(f"{getattr(moved, f)}" for f in fields)})
    return pd.DataFrame(rows)


def factor_table(rows: pd.DataFrame, metrics: Sequence[str] = DRIFT_METRICS, reps: int = S.DEFAULT_REPS) -> pd.DataFrame:
    """Per factor, fleet size, method and metric: the three arms' means and two paired changes.

    ``drift_*``: ``moved`` against ``base`` (:func:`ilets.report.stats.compare`; positive: better
    under the moved regime). ``control_*``: ``moved`` against ``control`` (positive: the method
    trained under the base does better there than the control trained under the moved regime;
    NaN for an expert, which has no control; ``control_seeds``: the seeds that comparison pairs,
    fewer than ``seeds`` while a control grid is part-way, and ``mean_moved_paired`` the moved
    arm's mean on those seeds, the one ``mean_control`` is set beside)."""
    cols = ["factor", "servers", "method", "metric", "seeds", "mean_base", "mean_moved", "drift_pct", "drift_low",
            "drift_high", "drift_verdict", "mean_moved_paired", "mean_control", "control_pct", "control_low",
            "control_high", "control_verdict", "control_seeds"]
    if len(rows) == 0:
        return pd.DataFrame(columns=cols)
    directions = {m: METRICS[m][1] for m in metrics}
    by = ("factor", "servers", "method")

    def arms(x: str, y: str, prefix: str) -> pd.DataFrame:
        c = S.compare(rows, x, y, metrics, by, label="arm", directions=directions, reps=reps)
        return c.rename(columns={"mean_y": f"mean_{y}", "rel_pct": f"{prefix}_pct", "rel_ci_low": f"{prefix}_low",
                                 "rel_ci_high": f"{prefix}_high", "verdict": f"{prefix}_verdict", "n_x": "seeds"})

    drift = arms("moved", "base", "drift").rename(columns={"mean_x": "mean_moved"})
    control = arms("moved", "control", "control").rename(columns={"seeds": "control_seeds",
                                                                  "mean_x": "mean_moved_paired"})
    out = drift.merge(control[[*by, "metric", "mean_moved_paired", "mean_control", "control_pct", "control_low", "control_high",
                               "control_verdict", "control_seeds"]], on=[*by, "metric"], how="left")
    out = out[out["drift_verdict"] != "no data"]
    order = {f: i for i, f in enumerate(DRIFT_FACTORS)}
    methods = {m: i for i, m in enumerate(LABELS)}
    out = out.sort_values(list(by), key=lambda c: c.map(order if c.name == "factor" else methods)
                          if c.name in ("factor", "method") else c, kind="stable")
    return out[cols].reset_index(drop=True)


def _change(row: dict, prefix: str) -> str:
    if not np.isfinite(row.get(f"{prefix}_pct", np.nan)) or row.get(f"{prefix}_verdict") in (None, "no data"):
        return "n/a"
    return S.says({"rel_pct": row[f"{prefix}_pct"], "rel_ci_low": row[f"{prefix}_low"],
                   "rel_ci_high": row[f"{prefix}_high"], "verdict": row[f"{prefix}_verdict"]})


def factor_display(table: pd.DataFrame, metric: str = "tracking_mae_rel", part: str = "drift") -> pd.DataFrame:
    """One metric of :func:`factor_table` for display, one row per factor, fleet size and method:
    ``part="drift"`` the two regimes and the change; ``"control"`` the method trained under the
    base beside the control trained under the moved regime, both scored there, on the seeds
    they pair (methods with a control only)."""
    t = table[table["metric"] == metric]
    if part == "control":
        t = t[t["mean_control"].notna()]
    if len(t) == 0:
        return pd.DataFrame()
    spec = METRICS[metric][2]
    fmt = lambda v: f"{v:{spec}}" if np.isfinite(v) else "n/a"  # noqa: E731
    recs = t.to_dict("records")
    head = {"factor": t["factor"], "servers": t["servers"], "method": t["method"].map(lambda m: LABELS.get(m, m))}
    if part == "control":
        # both means on the seeds the comparison pairs: while a control grid is part-way they
        # are fewer than the drift comparison's
        cols = {"trained under the base": t["mean_moved_paired"].map(fmt), "control": t["mean_control"].map(fmt),
                "base-trained against control": [_change(r, "control") for r in recs], "seeds": t["control_seeds"]}
    else:
        cols = {f"under {DRIFT_BASE}": t["mean_base"].map(fmt), "factor moved": t["mean_moved"].map(fmt),
                "change": [_change(r, "drift") for r in recs], "seeds": t["seeds"]}
    return pd.DataFrame({**head, **cols}).reset_index(drop=True)


def drift_sentence(table: pd.DataFrame, metric: str = "tracking_mae_rel", scale: str = "quick") -> str:
    """Per factor, how many (method, fleet size) pairs do better or worse under the moved
    regime, with an interval; then how the controls compare. Generated from the table."""
    t = table[table["metric"] == metric]
    if len(t) == 0:
        return ("No drift-protocol results yet: `python -m ilets.study.command_drift --out "
                "results/gridcommand-drift` runs them.")
    label = METRICS[metric][0]
    seeds = int(t["seeds"].min())
    parts, worst = [], ("", 0, 0)
    for factor, g in t.groupby("factor", sort=False):
        worse, better = int((g["drift_verdict"] == "worse").sum()), int((g["drift_verdict"] == "better").sum())
        parts.append(f"{factor}: worse for {worse} and better for {better} of {len(g)}")
        if worse > worst[1]:
            worst = (str(factor), worse, len(g))
    text = (f"Moved one at a time from {DRIFT_BASE} ({scale} scale, {seeds} paired seeds or more), the factors change "
            f"the {label} of the (method, fleet size) pairs as follows: " + "; ".join(parts) + ".")
    if worst[1]:
        moved = (f"arrival rate x{DRIFT_LOAD:g}" if worst[0] == "load" else
                 f"{' and '.join(DRIFT_FACTORS[worst[0]])} set as in {DRIFT_TOWARD}")
        text += f" The factor that makes the most pairs worse is {worst[0]} ({worst[1]} of {worst[2]}, {moved})."
    c = t[t["control_verdict"].notna() & (t["control_verdict"] != "no data")]
    if len(c):
        ahead = int((c["control_verdict"] == "worse").sum())
        behind = int((c["control_verdict"] == "better").sum())
        text += (f" Against a control trained under the moved regime ({int(c['control_seeds'].min())} paired seeds "
                 f"or more), the method trained under {DRIFT_BASE} "
                 f"does worse in {ahead} of {len(c)} comparisons and better in {behind} (with an interval; the "
                 "rest unresolved): ")
        text += ("no comparison is resolved with these seeds." if ahead == behind == 0 else
                 "training under the moved regime helps more often than it hurts." if ahead > behind else
                 "training under the moved regime does not help more often than it hurts.")

        def where(verdict: str) -> str:
            return "; ".join(f"{r['factor']} at {int(r['servers'])} servers, {LABELS.get(r['method'], r['method'])}"
                             for r in c[c["control_verdict"] == verdict].to_dict("records"))

        if ahead:
            text += f" The control does better for {where('worse')}."
        if behind:
            text += f" The method trained under {DRIFT_BASE} does better for {where('better')}."
    return text


def most_events_per_window(name: str = DRIFT_BASE) -> int:
    """The most events of regime ``name`` one window can hold: every event at its shortest
    duration, every gap at its least (times scale with the window, so the count does not)."""
    from ilets.gridcommand.command import PAPER_ONLINE_WINDOW_S

    r = REGIMES[name]
    return int((PAPER_ONLINE_WINDOW_S + r.min_gap_s) // (r.duration_s[0] + r.min_gap_s))


def events_sentence(rows: pd.DataFrame, days: float = 1.0, wanted: int = DRIFT_EVENTS) -> str:
    """How many scored events each comparison rests on: per factor, arm and fleet size the
    events of one method's episodes summed over the seeds (every method of a seed meets the
    same commands), the fewest of them; with one day of commands per window, why one episode
    cannot hold many more; with ``days`` of them, how many episodes hold ``wanted`` events."""
    if len(rows) == 0:
        return ""
    one = rows.drop_duplicates(["factor", "arm", "servers", "seed"])
    pooled = one.groupby(["factor", "arm", "servers"])["events"].sum()
    per = one.groupby(["factor", "arm", "servers", "seed"])["events"].first()
    low = pooled.idxmin()
    pooled_said = (f"summed over the seeds, each (factor, arm, fleet size) meets at least {int(pooled.min())} events "
                   f"({low[0]}, {low[1]}, {low[2]} servers) and {int(pooled.median())} at the median.")
    if days == 1:
        return (f"An episode holds {int(per.min())}-{int(per.max())} events (a {DRIFT_BASE} window holds at most "
                f"{most_events_per_window()} of its events, each at its shortest with the least gap), so no "
                f"comparison rests on one episode: {pooled_said}")
    episodes = episode_events(one)
    return (f"With {days:g} days of commands per window an episode holds {int(per.min())}-{int(per.max())} events, "
            f"and {int((episodes >= wanted).sum())} of its {len(episodes)} distinct episodes hold at least {wanted} "
            f"(the count is random: Poisson, less the events the envelope drops); {pooled_said}")
