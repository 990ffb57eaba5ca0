"""The grid-command drift protocol, read from the archive: one row per factor with its control.

The drift families (:mod:`ilets.gridcommand.study.drift`: two ordinary grids per factor of the
command regime) were retired from ``shipped/`` into the archive table
(:mod:`ilets.gridcommand.archive`), whose rows keep each grid's ``<factor>/<kind>`` and whose
provenance keeps each grid's planned and finished cells. Three arms are set side by side,
paired by seed:

* ``base``: a method trained under the base regime, scored under it (``shifted`` grid, role
  ``train``);
* ``moved``: the same method scored under the base with one factor moved (``shifted``, role
  ``eval``): the drift;
* ``control``: the method trained under the moved regime and scored there (``control``
  grid, role ``train``). Experts are not trained, so they have no control.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Sequence

import numpy as np
import pandas as pd

from ilets.gridcommand.command import DRIFT_BASE, DRIFT_FACTORS, REGIMES
from ilets.report import stats as S
from ilets.gridcommand.pipeline_config import METHODS, SCENARIO
from ilets.gridcommand.report.results import higher_is_better, method_label
from ilets.metric_table import metric_format

#: The family the drift criterion reads: the 16-episode per-server clone, fourteen days of
#: commands per scored episode (so that the median episode holds twenty events).
FAMILY = "gridcommand-drift-per-server-days"
#: Every archived drift family: its label -> its folder name in the archive.
FAMILIES = {"flat policy, one day of commands": "gridcommand-drift",
            "flat policy, fourteen days": "gridcommand-drift-days",
            "per-server clone, one day": "gridcommand-drift-per-server",
            "16-episode per-server clone, one day": "gridcommand-drift-per-server-episodes",
            "16-episode per-server clone, fourteen days": FAMILY}
#: (grid kind, role) -> arm.
ARMS = {("shifted", "train"): "base", ("shifted", "eval"): "moved", ("control", "train"): "control"}
#: The grid kinds of a factor.
KINDS = ("shifted", "control")
#: The metrics the protocol reports (rows of :data:`ilets.metric_table.METRIC_SPECS`).
DRIFT_METRICS = ("tracking_mae_rel", "misses_caused", "in_band_fraction")


def load_drift(archive: pd.DataFrame, family: str = FAMILY) -> pd.DataFrame:
    """The archived rows of one drift family (``archive``: :func:`ilets.gridcommand.archive.load_archive`),
    one per cell and arm, with ``factor``, ``kind`` and ``arm``; empty when it holds none."""
    rows = archive[archive["folder"] == family] if len(archive) else archive
    if len(rows) == 0:
        return pd.DataFrame(columns=["factor", "kind", "arm", "method", "servers", "seed", "role", "regime",
                                     "events", *DRIFT_METRICS])
    parts = rows["part"].str.split("/", expand=True)
    t = rows.assign(factor=parts[0], kind=parts[1])
    t["arm"] = [ARMS.get((k, r)) for k, r in zip(t["kind"], t["role"])]
    return t[t["arm"].notna()].reset_index(drop=True)


def complete_factors(rows: pd.DataFrame, grids: Mapping[str, Mapping], family: str = FAMILY) -> list[str]:
    """The factors of a family (``rows`` from :func:`load_drift`) whose shifted and control grids
    both hold every cell they planned (``grids``: the archive provenance's ``grids``, design ->
    planned and finished cells); a grid with no plan is not whole."""
    def whole(factor: str, kind: str) -> bool:
        g = grids.get(f"{family}/{factor}/{kind}", {})
        planned, done = g.get("planned_cells"), g.get("done_cells", 0)
        return planned is not None and 0 < planned <= done

    present = set(rows["factor"]) if len(rows) else set()
    return [f for f in DRIFT_FACTORS if f in present and all(whole(f, k) for k in KINDS)]


def episode_events(rows: pd.DataFrame) -> pd.Series:
    """The events of each distinct scored episode of a family (``rows`` from
    :func:`load_drift`): an episode is a (regime, fleet size, seed), counted once."""
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
    directions = higher_is_better(metrics)
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
    methods = {m: i for i, m in enumerate(METHODS)}
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
    spec = metric_format(metric, SCENARIO)
    fmt = lambda v: f"{v:{spec}}" if np.isfinite(v) else "n/a"  # noqa: E731
    recs = t.to_dict("records")
    head = {"factor": t["factor"], "servers": t["servers"], "method": t["method"].map(lambda m: method_label(m))}
    if part == "control":
        # both means on the seeds the comparison pairs: while a control grid is part-way they
        # are fewer than the drift comparison's
        cols = {"trained under the base": t["mean_moved_paired"].map(fmt), "control": t["mean_control"].map(fmt),
                "base-trained against control": [_change(r, "control") for r in recs], "seeds": t["control_seeds"]}
    else:
        cols = {f"under {DRIFT_BASE}": t["mean_base"].map(fmt), "factor moved": t["mean_moved"].map(fmt),
                "change": [_change(r, "drift") for r in recs], "seeds": t["seeds"]}
    return pd.DataFrame({**head, **cols}).reset_index(drop=True)
