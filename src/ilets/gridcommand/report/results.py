"""The grid-command chapter's numbers: the pipeline comparison, the expert ladder's gaps, drift.

Everything here is a pure function of the grid-command store (``store/results.parquet`` of
the study's grid run with ``--scenario gridcommand``: one row per (method, servers, seed) cell and regime role,
``role`` ``"train"`` for the regime the clones were made under, ``"eval"`` for the other)
or of a hand-built table with the same columns. Intervals are the study's: means with the
percentile bootstrap over seeds (:func:`ilets.report.stats.summary_table`), differences
paired by seed through the one resampler (:func:`ilets.report.stats.compare`, i.e.
:func:`ilets.report.stats.seed_effect`). A seed whose episode had no command event has no
tracking metric (NaN) and is left out of those metrics only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ilets import cell_pack
from ilets.gridcommand.command import DAY_S, DAY_TO_WINDOW, FIELD_REGIMES, PAPER_ONLINE_WINDOW_S
from ilets.gridcommand.experts import ENV_READS, EXPERT_LABELS, EXPERT_READS, EXPERTS, LADDER, ladder_gaps, privileged_reads
from ilets.gridcommand.pipeline_config import METHODS, SCENARIO
from ilets.method_table import METHOD_SPECS
from ilets.metric_table import METRIC_SPECS, SCENARIO_SUMMARY_METRICS, metric_format
from ilets.metric_table import directions as metric_directions
from ilets.metric_table import formats as metric_formats
from ilets.report import stats as S
from ilets.study.results import STATUS_DONE

#: Where the book reads the shipped results (relative to the repository root).
SHIPPED = Path("shipped") / "gridcommand"
#: The full-window grid (paper scale).
PAPER_SHIPPED = Path("shipped") / "gridcommand-paper"
#: The profile of :data:`PAPER_SHIPPED`: the full-window grid, every rung and learner.
PAPER_PROFILE = "gridcommand-grid-paper"
#: The comparison's metrics, in its order: the scenario's summary measures, rows of
#: :data:`ilets.metric_table.METRIC_SPECS` (their header, direction and this scenario's format).
COMPARED = SCENARIO_SUMMARY_METRICS[SCENARIO]


def method_label(method: str) -> str:
    """How tables and prose name a method: a learned method's label (its row of
    :data:`ilets.method_table.METHOD_SPECS`), an expert's (:data:`~ilets.gridcommand.experts.EXPERT_SPECS`),
    else the name itself."""
    spec = METHOD_SPECS.get(method)
    if spec is not None and spec.scenario == SCENARIO:
        return spec.label
    return EXPERT_LABELS.get(method, method)


def metric_header(metric: str) -> str:
    """A metric's table header with its unit (:attr:`ilets.metric_table.MetricSpec.header`)."""
    return METRIC_SPECS[metric].header


def higher_is_better(metrics: Sequence[str]) -> dict[str, bool]:
    """``metric -> higher is better`` of ``metrics`` (:data:`ilets.metric_table.METRIC_SPECS`)."""
    known = metric_directions()
    return {k: known[k] for k in metrics}

#: The public field trials the regimes are calibrated on (:mod:`ilets.gridcommand.command`'s
#: docstring; EPRI DCFlex, arXiv 2507.00909): the cut, how long it was held (h), how fast
#: it was reached (s; None where not reported).
FIELD_TRIALS: tuple[dict, ...] = (
    {"trial": "DCFlex trial, 256-GPU cluster", "cut": 0.25, "held_h": 3.0, "reached_s": None},
    {"trial": "later trial", "cut": 0.30, "held_h": 10.0, "reached_s": 30.0},
)
#: The issue's bar: an expert reaches the band on at least this share of events.
BAND_BAR = 0.8
#: The ladder's metrics (all lower is better, so one orientation for :func:`ladder_gaps`).
LADDER_METRICS = ("tracking_mae_rel", "misses_caused")


@dataclass
class GridResults:
    """A grid-command results folder as read: the store, its provenance and profile."""

    table: pd.DataFrame
    provenance: dict = field(default_factory=dict)
    profile: dict = field(default_factory=dict)
    folder: Path | None = None

    @property
    def scale(self) -> str:
        """The scale label every row carries (``"quick"``, ...), or ``"mixed"``."""
        scales = sorted(set(self.table["scale"]))
        return scales[0] if len(scales) == 1 else "mixed"

    @property
    def regimes(self) -> dict[str, str]:
        """``{"train": regime, "eval": regime}`` from the rows."""
        pairs = self.table[["role", "regime"]].drop_duplicates()
        return dict(zip(pairs["role"], pairs["regime"]))


def load_results(folder: Path) -> GridResults | None:
    """The results of ``folder`` (a grid's output or a shipped copy), None when it holds none."""
    folder = Path(folder)
    store = folder / "store" / "results.parquet"
    if not store.is_file():
        return None
    table = pd.read_parquet(store)
    if len(table) == 0:
        return None
    read = lambda name: json.loads((folder / name).read_text()) if (folder / name).is_file() else {}  # noqa: E731
    return GridResults(table, read("PROVENANCE.json"), read("profile.json"), folder)


def empty_table() -> pd.DataFrame:
    """A store with no rows (the columns the functions here read), for a checkout without results."""
    return pd.DataFrame(columns=["method", "servers", "seed", "role", "regime", "scale", "workload_scale",
                                 *COMPARED]).astype({"seed": int, "servers": int, **{m: float for m in COMPARED}})


def results_table(results: GridResults | None) -> pd.DataFrame:
    """The store of ``results``, or :func:`empty_table` when there are none (so a chapter needs
    no branch of its own)."""
    return empty_table() if results is None else results.table


def cell_progress(results: GridResults) -> tuple[int, int | None]:
    """The planned cells a results folder holds, and how many its shipped profile plans; without
    a shipped profile, every cell it holds and None. Cells are matched by name, not counted, so
    a cell outside the plan cannot stand in for a missing one."""
    from ilets.gridcommand.study.profiles import profile_cells

    held = {(str(m), int(n), int(s)) for m, n, s in
            results.table[["method", "servers", "seed"]].drop_duplicates().itertuples(index=False, name=None)}
    if not results.profile:
        return len(held), None
    planned = {(c.method, c.servers, c.seed) for c in profile_cells(results.profile)}
    return len(held & planned), len(planned)


def _order(methods) -> list[str]:
    present = list(dict.fromkeys(methods))
    return [m for m in METHODS if m in present] + sorted(m for m in present if m not in METHODS)


def rungs_display(table: pd.DataFrame, formats: dict[str, tuple[str, str]], name: str = "rung") -> pd.DataFrame:
    """A per-(regime, fleet size, expert) table of seed means for display: regime, fleet size,
    the expert's label (column ``name``), each metric of ``formats`` (``key -> (label,
    format)``) formatted, and the seeds; empty when ``table`` is."""
    if len(table) == 0:
        return pd.DataFrame()
    out = pd.DataFrame({"regime": table["regime"], "servers": table["servers"],
                        name: table["method"].map(lambda m: method_label(m))})
    for key, (label, fmt) in formats.items():
        out[label] = table[key].map(lambda v, f=fmt: format(v, f))
    out["seeds"] = table["seeds"]
    return out


def role_rows(table: pd.DataFrame, role: str) -> pd.DataFrame:
    """The rows of ``table`` scored under the regime ``role`` (``train`` or ``eval``)."""
    if role not in ("train", "eval"):
        raise ValueError(f"role: expected 'train' or 'eval', got {role!r}")
    return table[table["role"] == role]


def comparison_table(table: pd.DataFrame, role: str = "train", metrics: Sequence[str] = COMPARED,
                     reps: int = S.DEFAULT_REPS) -> pd.DataFrame:
    """Mean and 95 % bootstrap CI over seeds of each metric, per fleet size and method, under
    one regime role (long format of :func:`ilets.report.stats.summary_table`)."""
    sub = role_rows(table, role)
    out = S.summary_table(sub, metrics_cols=tuple(metrics), by=("servers", "method"), reps=reps)
    rank = {m: i for i, m in enumerate(_order(sub["method"]))}
    return out.sort_values(["servers", "method", "metric"], key=lambda c: c.map(rank) if c.name == "method"
                           else (c.map({m: i for i, m in enumerate(metrics)}) if c.name == "metric" else c),
                           kind="stable").reset_index(drop=True)


def comparison_display(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`comparison_table` as ``"mean [low, high]"`` per method (rows) and metric (columns)."""
    shown = S.ci_table(summary, formats=metric_formats(COMPARED, SCENARIO))
    if len(shown) == 0:
        return shown
    shown["method"] = shown["method"].map(lambda m: method_label(m))
    return shown.rename(columns={k: metric_header(k) for k in COMPARED})


def differences(table: pd.DataFrame, reference: str = "bc+ppo", role: str = "train",
                metrics: Sequence[str] = COMPARED, reps: int = S.DEFAULT_REPS) -> pd.DataFrame:
    """Every other method against ``reference``, paired by seed, per fleet size and metric
    (:func:`ilets.report.stats.compare` rows; ``rel_pct > 0``: the method is better)."""
    sub = role_rows(table, role)
    directions = higher_is_better(metrics)
    parts = [S.compare(sub, m, reference, metrics, ("servers",), directions=directions, reps=reps)
             for m in _order(sub["method"]) if m != reference]
    parts = [p for p in parts if len(p)]
    if not parts:
        return S.compare(sub.iloc[0:0], "", reference, metrics, ("servers",), directions=directions, reps=reps)
    return pd.concat(parts, ignore_index=True)


def differences_display(comp: pd.DataFrame) -> pd.DataFrame:
    """:func:`differences` as one row per fleet size and method, one column per metric with
    ``"+7.7% [+7.1, +8.4] (better)"`` (the method against the reference)."""
    if len(comp) == 0:
        return pd.DataFrame()
    c = comp.assign(text=[S.says(r) for r in comp.to_dict("records")])
    wide = c.pivot_table(index=["servers", "x"], columns="metric", values="text", aggfunc="first", sort=False)
    wide = wide.reset_index().rename_axis(columns=None)
    wide["x"] = wide["x"].map(lambda m: method_label(m))
    ref = method_label(comp["y"].iloc[0])
    return wide.rename(columns={"x": f"method (vs {ref})", **{k: metric_header(k) for k in COMPARED}})


def ladder_table(table: pd.DataFrame, role: str = "train", metrics: Sequence[str] = LADDER_METRICS) -> pd.DataFrame:
    """The expert ladder's gaps per fleet size (:func:`ilets.gridcommand.experts.ladder_gaps`).

    Scores are seed means over the seeds on which every rung of :data:`LADDER` has a finite
    value (the oracle may run on fewer seeds: the comparison stays paired). One row per fleet
    size and metric: ``seeds``, the four rungs' scores, ``horizon_gap`` (MPC with a perfect
    forecast minus the oracle), ``forecast_gap`` (realistic minus perfect forecast),
    ``rule_gap`` and ``total_gap``; > 0 means the lower rung is worse. Empty when a rung is
    missing everywhere.
    """
    sub = role_rows(table, role)
    rows = []
    for servers, g in sub.groupby("servers", sort=True):
        for metric in metrics:
            wide = g[g["method"].isin(LADDER)].pivot_table(index="seed", columns="method", values=metric,
                                                           aggfunc="mean")
            if not set(LADDER) <= set(wide.columns):
                continue
            wide = wide[list(LADDER)].dropna()
            wide = wide[np.isfinite(wide.to_numpy()).all(axis=1)]
            if len(wide) == 0:
                continue
            gaps = ladder_gaps({r: float(wide[r].mean()) for r in LADDER}, higher_is_better=higher_is_better([metric])[metric])
            rows.append({"servers": servers, "metric": metric, "seeds": len(wide), **gaps})
    cols = ["servers", "metric", "seeds", *[f"score[{r}]" for r in LADDER], "horizon_gap", "forecast_gap",
            "rule_gap", "total_gap"]
    return pd.DataFrame(rows, columns=cols)


#: the ladder's display in two parts that each fit the page: the rungs' scores, then the gaps
LADDER_PARTS = ("scores", "gaps")
_GAP_NAMES = {"horizon_gap": "horizon gap", "forecast_gap": "forecast gap", "rule_gap": "rule gap",
              "total_gap": "total gap"}


def ladder_display(ladder: pd.DataFrame, part: str | None = None) -> pd.DataFrame:
    """:func:`ladder_table` for display: the rungs' scores and the gaps, three significant
    digits; only the rungs' scores (with the seeds) or only the gaps with ``part`` (one of
    :data:`LADDER_PARTS`): the whole table is wider than a page."""
    if part is not None and part not in LADDER_PARTS:
        raise ValueError(f"part: expected one of {LADDER_PARTS} or None, got {part!r}")
    if len(ladder) == 0:
        return pd.DataFrame()
    names = {f"score[{r}]": method_label(r) for r in LADDER}
    shown = ladder.rename(columns={**names, **_GAP_NAMES})
    shown["metric"] = shown["metric"].map(metric_header)
    for col in [*names.values(), *_GAP_NAMES.values()]:
        shown[col] = shown[col].map(lambda v: f"{v:+.3g}" if "gap" in col else f"{v:.3g}")
    by_part: dict[str | None, list[str]] = {"scores": ["servers", "metric", "seeds", *names.values()],
                                            "gaps": ["servers", "metric", *_GAP_NAMES.values()]}
    keep = by_part.get(part, list(shown.columns))
    return shown[keep]


def drift_table(table: pd.DataFrame, metrics: Sequence[str] = COMPARED,
                reps: int = S.DEFAULT_REPS) -> pd.DataFrame:
    """Each method's metric under the training regime and under the other one, per fleet size.

    The same seeds under both (paired; :func:`ilets.report.stats.compare` with ``x`` the eval
    role and ``y`` the train role): ``mean_train``, ``mean_eval``, ``rel_pct`` with its CI
    (positive: better under the new regime) and ``kept_pct`` = ``100 * mean_eval / mean_train``
    for the higher-is-better metrics (the share of its in-distribution time in band a method
    keeps; NaN where it had none), else NaN.
    """
    directions = higher_is_better(metrics)
    comp = S.compare(table, "eval", "train", metrics, ("servers", "method"), label="role", directions=directions,
                     reps=reps)
    comp = comp[comp["verdict"] != "no data"].rename(columns={"mean_x": "mean_eval", "mean_y": "mean_train",
                                                              "n_x": "seeds"})
    higher = comp["metric"].map(directions).astype(bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        kept = np.where(higher & (comp["mean_train"] > 0), 100 * comp["mean_eval"] / comp["mean_train"], np.nan)
    comp = comp.assign(kept_pct=kept)
    rank = {m: i for i, m in enumerate(_order(comp["method"]))}
    comp = comp.sort_values(["servers", "method"], key=lambda c: c.map(rank) if c.name == "method" else c,
                            kind="stable")
    return comp[["servers", "method", "metric", "seeds", "mean_train", "mean_eval", "rel_pct", "rel_ci_low",
                 "rel_ci_high", "verdict", "kept_pct"]].reset_index(drop=True)


def drift_display(drift: pd.DataFrame, metric: str = "in_band_fraction") -> pd.DataFrame:
    """One metric of :func:`drift_table` for display: the two means, the change and what is kept."""
    d = drift[drift["metric"] == metric]
    if len(d) == 0:
        return pd.DataFrame()
    spec = metric_format(metric, SCENARIO)
    fmt = lambda v: f"{v:{spec}}" if np.isfinite(v) else "n/a"  # noqa: E731
    return pd.DataFrame({"servers": d["servers"], "method": d["method"].map(lambda m: method_label(m)),
                         "under training regime": d["mean_train"].map(fmt),
                         "under the other regime": d["mean_eval"].map(fmt),
                         "change": [S.says(r) for r in d.to_dict("records")],
                         "kept": d["kept_pct"].map(lambda v: f"{v:.0f} %" if np.isfinite(v) else "n/a"),
                         "seeds": d["seeds"]}).reset_index(drop=True)


def band_bar_table(table: pd.DataFrame, bar: float = BAND_BAR) -> pd.DataFrame:
    """The issue's band bar per regime role and fleet size: the expert whose events reach the
    band most often (seed means of ``band_reached_share``, experts only), that share, whether
    it is at least ``bar``, and its price: the deadline misses it causes against the baseline
    run (seed mean of ``misses_caused``; NaN where not recorded)."""
    rows = []
    for role in ("train", "eval"):
        t = role_rows(table, role)
        for s, g in t[t["method"].isin(EXPERTS)].groupby("servers"):
            share = g.groupby("method")["band_reached_share"].mean().dropna()
            if share.empty:
                continue
            top = str(share.idxmax())
            rows.append({"role": role, "servers": s, "method": top, "share": float(share[top]),
                         "meets": bool(share[top] >= bar),
                         "misses_caused": (float(g.loc[g["method"] == top, "misses_caused"].mean())
                                           if "misses_caused" in g else np.nan)})
    return pd.DataFrame(rows, columns=["role", "servers", "method", "share", "meets", "misses_caused"])


def envelope_table(table: pd.DataFrame) -> pd.DataFrame:
    """What the flexibility envelope did to the generated events, per regime role and fleet
    size, summed over the seeds: events generated, dropped as unreachable, and of those kept,
    made shallower, moved to a new start (``redrawn``, ``envelope_redraws``; 0 without it) and
    left outside what the levers reached (``outside``, from the cells'
    ``feasible_share``; NaN where not recorded). The schedule is the seed's, the same for every
    method, so it is read from one method's row per seed. Empty when the results predate the
    envelope."""
    keys = ["events", "events_dropped", "events_clipped"]
    cols = ["role", "servers", "generated", "dropped", "clipped", "redrawn", "outside"]
    if any(k not in table for k in keys) or table["events_dropped"].isna().all():
        return pd.DataFrame(columns=cols)
    share = "feasible_share" if "feasible_share" in table else None
    moved = "events_redrawn" if "events_redrawn" in table else None
    rows = []
    for role in ("train", "eval"):
        for s, g in role_rows(table, role).groupby("servers"):
            per_seed = g.groupby("seed")[keys + [k for k in (share, moved) if k]].first()
            kept, dropped, clipped = (int(per_seed[k].sum()) for k in keys)
            # one seed with events and no recorded share leaves the count unknown, not zero
            known = share is not None and not (per_seed[share].isna() & (per_seed["events"] > 0)).any()
            outside = (float((per_seed["events"] * (1.0 - per_seed[share].fillna(1.0))).round().sum())
                       if known else np.nan)
            redrawn = int(per_seed[moved].fillna(0.0).sum()) if moved else 0
            rows.append({"role": role, "servers": s, "generated": kept + dropped, "dropped": dropped,
                         "clipped": clipped, "redrawn": redrawn, "outside": outside})
    return pd.DataFrame(rows, columns=cols)


def done_records(folder: Path | None) -> list[dict]:
    """The finished cell records of a results folder (``cells/*.json`` whose status is done), in
    name order: what the store does not keep (per-event records, what training recorded)
    lives only there. Empty without a folder."""
    records = (json.loads(cell_pack.read_text(f)) for f in cell_pack.cell_paths(folder, "*.json")) if folder else ()
    return [r for r in records if r.get("status") == STATUS_DONE]


def direction_table(folder: Path | None) -> pd.DataFrame:
    """Per method, fleet size, regime role and event direction: the events and their mean
    tracking error (``mae_rel``, 1 = the baseline's own error) with the share of events below
    1 (better than ignoring the command), from the cells' per-event records (the store keeps
    only episode means). Empty without a folder of cells."""
    cols = ["method", "servers", "role", "direction", "events", "mae_rel", "beats_ignoring"]
    rows = []
    for rec in done_records(folder):
        for role, scores in rec["scores"].items():
            rows += [{"method": rec["method"], "servers": rec["servers"], "role": role, "direction": e["direction"],
                      "mae_rel": float(e["mae_rel"])} for e in scores.get("per_event", [])]
    if not rows:
        return pd.DataFrame(columns=cols)
    t = pd.DataFrame(rows)
    out = t.groupby(["method", "servers", "role", "direction"])["mae_rel"].agg(
        events="size", mae_rel="mean", beats_ignoring=lambda x: float((x < 1).mean())).reset_index()
    return out[cols]


# --- the command model's calibration ----------------------------------------------------------

def reads_table() -> pd.DataFrame:
    """Per rung, the attributes of the environment it reads through which it can see more than
    the learners' observation shows (the experts' own declarations, ``reads``, held to what
    they do by a test); :func:`privileged_table` says what each is."""
    return pd.DataFrame([{"expert": EXPERT_LABELS[name],
                          "privileged reads": ", ".join(f"`{r}`" for r in privileged_reads(EXPERT_READS[name]))}
                         for name in EXPERTS])


def privileged_table() -> pd.DataFrame:
    """What each privileged attribute of :data:`ilets.gridcommand.experts.ENV_READS` gives."""
    return pd.DataFrame([{"read": f"`{name}`", "what it gives": what}
                         for name, (what, kind) in ENV_READS.items() if kind == "privileged"])


def calibration_table() -> pd.DataFrame:
    """The field trials and what they become in the simulated window: a held duration is
    scaled by ``DAY_TO_WINDOW`` (1,500 s stand for a day), a response time is not."""
    rows = [{"trial": f["trial"], "cut": f"{f['cut']:.0%}" + (" or more" if f["reached_s"] else ""),
             "held (h)": f"{f['held_h']:g}", "held in the window (s)": f"{f['held_h'] * 3600 * DAY_TO_WINDOW:g}",
             "reached within (s, not scaled)": "not reported" if f["reached_s"] is None else f"{f['reached_s']:g}"}
            for f in FIELD_TRIALS]
    return pd.DataFrame(rows)


def regimes_table(window_s: float = PAPER_ONLINE_WINDOW_S) -> pd.DataFrame:
    """The field-calibrated regimes (:data:`ilets.gridcommand.command.FIELD_REGIMES`) with their times fitted
    to a window of ``window_s`` seconds, as :func:`ilets.gridcommand.command.generate_schedule`
    fits them (x ``window_s / 1500``)."""
    k = window_s / PAPER_ONLINE_WINDOW_S
    rows = []
    for name, r in FIELD_REGIMES.items():
        rows.append({"regime": name, "events per window": f"{r.events_per_window:g}",
                     "depth": f"{r.depth[0]:.0%}-{r.depth[1]:.0%}",
                     "duration (s)": f"{k * r.duration_s[0]:.4g}-{k * r.duration_s[1]:.4g}",
                     "notice (s)": f"{k * r.notice_s[0]:.4g}-{k * r.notice_s[1]:.4g}",
                     "ramp (s)": f"{k * r.ramp_s:.4g}", "band": f"{r.band:.0%} of the change",
                     "down events": f"{r.p_down:.0%}"})
    return pd.DataFrame(rows)


def calibration_numbers() -> dict[str, str]:
    """The numbers the calibration paragraph states, as text to glue."""
    first, later = FIELD_TRIALS
    return {"window_s": f"{PAPER_ONLINE_WINDOW_S:,.0f}", "day_s": f"{DAY_S:,.0f}",
            "day_to_window": f"{DAY_TO_WINDOW:.4f}", "cut_first": f"{first['cut']:.0%}",
            "held_first": f"{first['held_h']:g} h", "held_first_s": f"{first['held_h'] * 3600 * DAY_TO_WINDOW:g} s",
            "cut_later": f"{later['cut']:.0%}", "reached_later": f"{later['reached_s']:g} s",
            "held_later": f"{later['held_h']:g} h", "held_later_s": f"{later['held_h'] * 3600 * DAY_TO_WINDOW:g} s"}


def comparison_figure(summary: pd.DataFrame, metric: str = "tracking_mae_rel"):
    """Means and 95 % CIs of one metric per method, a panel per fleet size; None without rows."""
    from ilets.report import plots

    d = summary[(summary["metric"] == metric)].dropna(subset=["mean"])
    if len(d) == 0:
        return None
    d = d.assign(label=d["method"].map(lambda m: method_label(m)),
                 ci_low=d["ci_low"].fillna(d["mean"]), ci_high=d["ci_high"].fillna(d["mean"]))
    panels = {s: f"{s} servers" for s in sorted(set(d["servers"]))}
    order = [method_label(m) for m in _order(d["method"])]
    return plots.interval_panels(d, "mean", "ci_low", "ci_high", "servers", "label", panels, order=order,
                                 xlabel=metric_header(metric))
