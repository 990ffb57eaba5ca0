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

from ilets.gridcommand.command import DAY_S, DAY_TO_WINDOW, FIELD_REGIMES, PAPER_ONLINE_WINDOW_S
from ilets.gridcommand.experts import ENV_READS, EXPERT_LABELS, EXPERT_READS, EXPERTS, LADDER, ladder_gaps, privileged_reads
from ilets.gridcommand.pipeline import LEARNED, METHODS
from ilets.report import stats as S
from ilets.study.results import STATUS_DONE

#: Where the book reads the shipped results (relative to the repository root).
SHIPPED = Path("shipped") / "gridcommand"
#: The full-window grid (paper scale).
PAPER_SHIPPED = Path("shipped") / "gridcommand-paper"
#: The profile of :data:`PAPER_SHIPPED`: the full-window grid, every rung and learner.
PAPER_PROFILE = "gridcommand-grid-paper"
#: The comparison's metrics: label, higher is better, display format.
METRICS: dict[str, tuple[str, bool, str]] = {
    "tracking_mae_rel": ("tracking error (share of the requested change)", False, ".3f"),
    "in_band_fraction": ("time in band", True, ".1%"),
    "misses_caused": ("deadline misses caused (vs baseline)", False, ".0f"),
    "energy_kwh": ("energy (kWh)", False, ".4f"),
}
#: Method names for display: the experts' from their table, then the learned methods'.
LABELS = {**EXPERT_LABELS, "bc": "BC (clone alone)", "ppo": "PPO (from scratch)", "bc+ppo": "BC + PPO",
          "bc+ppo+oail": "BC + PPO + OAIL"}
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
                                 *METRICS]).astype({"seed": int, "servers": int, **{m: float for m in METRICS}})


def results_table(results: GridResults | None) -> pd.DataFrame:
    """The store of ``results``, or :func:`empty_table` when there are none (so a chapter needs
    no branch of its own)."""
    return empty_table() if results is None else results.table


def status_sentence(results: GridResults | None, folder: Path, profile: str = "gridcommand-grid-quick") -> str:
    """What the chapter shows: the scale, cells, seeds and fleet sizes, or why nothing (and how
    to make it: the grid ``profile`` that fills ``folder``)."""
    if results is None:
        where = "/".join(Path(folder).parts[-2:])
        return (f"No grid-command results are in `{where}/` of this checkout, so the tables below are "
                f"empty; run `ilets grid --scenario gridcommand --profile {profile} --out <dir>`, then "
                f"`ilets ship --scenario gridcommand --results <dir> --to {where}`.")
    t = results.table
    workload = ", ".join(f"{w:g}" for w in sorted(set(t["workload_scale"])))
    reg = results.regimes
    done, planned = cell_progress(results)
    of = f" of {planned} planned" if planned else ""
    unfinished = " (the grid had not finished when these were shipped)" if planned and done < planned else ""
    scale = "" if results.scale == "paper" else ", not paper-scale"
    return (f"These are **{results.scale}-scale** results (workload scale {workload}){scale}: "
            f"{done}{of} cells{unfinished}, "
            f"{t['method'].nunique()} methods, {_join(sorted(set(t['servers'])))} servers, seeds "
            f"{_join(sorted(set(t['seed'])))}; clones made under {reg.get('train', 'n/a')}, every method scored "
            f"under {reg.get('train', 'n/a')} and {reg.get('eval', 'n/a')}.")


def cell_progress(results: GridResults) -> tuple[int, int | None]:
    """The planned cells a results folder holds, and how many its shipped profile plans; without
    a shipped profile, every cell it holds and None. Cells are matched by name, not counted, so
    a cell outside the plan cannot stand in for a missing one."""
    from ilets.study.command_scenario import profile_cells

    held = {(str(m), int(n), int(s)) for m, n, s in
            results.table[["method", "servers", "seed"]].drop_duplicates().itertuples(index=False, name=None)}
    if not results.profile:
        return len(held), None
    planned = {(c.method, c.servers, c.seed) for c in profile_cells(results.profile)}
    return len(held & planned), len(planned)


def scale_note(results: GridResults | None, paper: GridResults | None = None) -> str:
    """Whether these results may speak for the full window, and what does: the full-window
    grid ``paper`` (``shipped/gridcommand-paper``) where it is shipped."""
    if results is not None and results.scale == "paper":
        return "These results cover the full online window."
    shown = f"{results.scale}-scale" if results is not None else "no"
    if paper is not None:
        done, planned = cell_progress(paper)
        return (f"The chapter's main tables show {shown} results, a short window of the workload; the full-window grid "
                f"(`{PAPER_PROFILE}`, {done}{f' of {planned}' if planned else ''} cells in "
                f"`{PAPER_SHIPPED}`) is read in its own section, and a claim about the full window is made only "
                "from it.")
    return (f"The chapter shows {shown} results, a short window of the workload; the full-window grid is "
            f"`{PAPER_PROFILE}` (`ilets grid --scenario gridcommand --profile {PAPER_PROFILE}`), not run "
            "in this repository, so no claim here is made at the full window's scale.")


def provenance_sentence(results: GridResults | None) -> str:
    """Commits, dates, machine and CPU time of the shipped cells."""
    if results is None or not results.provenance:
        return "No provenance recorded."
    p = results.provenance
    commits = ", ".join(f"{c[:12]}{' (uncommitted changes)' if c.endswith('+dirty') else ''} ({n} cells)"
                        for c, n in p.get("commits", {}).items())
    machines = "; ".join(p.get("machines", {}))
    return (f"{p.get('cells', 0)} cells computed on {machines or 'an unrecorded machine'}, started "
            f"{p.get('first_start_utc')} to {p.get('last_start_utc')} (UTC), at commit {commits}; "
            f"{3600 * p.get('cpu_hours', 0.0):,.0f} CPU seconds in all.")


def _join(values) -> str:
    return ", ".join(str(v) for v in values)


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
                        name: table["method"].map(lambda m: LABELS.get(m, m))})
    for key, (label, fmt) in formats.items():
        out[label] = table[key].map(lambda v, f=fmt: format(v, f))
    out["seeds"] = table["seeds"]
    return out


def _role(table: pd.DataFrame, role: str) -> pd.DataFrame:
    if role not in ("train", "eval"):
        raise ValueError(f"role: expected 'train' or 'eval', got {role!r}")
    return table[table["role"] == role]


def comparison_table(table: pd.DataFrame, role: str = "train", metrics: Sequence[str] = tuple(METRICS),
                     reps: int = S.DEFAULT_REPS) -> pd.DataFrame:
    """Mean and 95 % bootstrap CI over seeds of each metric, per fleet size and method, under
    one regime role (long format of :func:`ilets.report.stats.summary_table`)."""
    sub = _role(table, role)
    out = S.summary_table(sub, metrics_cols=tuple(metrics), by=("servers", "method"), reps=reps)
    rank = {m: i for i, m in enumerate(_order(sub["method"]))}
    return out.sort_values(["servers", "method", "metric"], key=lambda c: c.map(rank) if c.name == "method"
                           else (c.map({m: i for i, m in enumerate(metrics)}) if c.name == "metric" else c),
                           kind="stable").reset_index(drop=True)


def comparison_display(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`comparison_table` as ``"mean [low, high]"`` per method (rows) and metric (columns)."""
    shown = S.ci_table(summary, formats={k: v[2] for k, v in METRICS.items()})
    if len(shown) == 0:
        return shown
    shown["method"] = shown["method"].map(lambda m: LABELS.get(m, m))
    return shown.rename(columns={k: v[0] for k, v in METRICS.items()})


def differences(table: pd.DataFrame, reference: str = "bc+ppo", role: str = "train",
                metrics: Sequence[str] = tuple(METRICS), reps: int = S.DEFAULT_REPS) -> pd.DataFrame:
    """Every other method against ``reference``, paired by seed, per fleet size and metric
    (:func:`ilets.report.stats.compare` rows; ``rel_pct > 0``: the method is better)."""
    sub = _role(table, role)
    directions = {k: METRICS[k][1] for k in metrics}
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
    wide["x"] = wide["x"].map(lambda m: LABELS.get(m, m))
    ref = LABELS.get(comp["y"].iloc[0], comp["y"].iloc[0])
    return wide.rename(columns={"x": f"method (vs {ref})", **{k: v[0] for k, v in METRICS.items()}})


def ladder_table(table: pd.DataFrame, role: str = "train", metrics: Sequence[str] = LADDER_METRICS) -> pd.DataFrame:
    """The expert ladder's gaps per fleet size (:func:`ilets.gridcommand.experts.ladder_gaps`).

    Scores are seed means over the seeds on which every rung of :data:`LADDER` has a finite
    value (the oracle may run on fewer seeds: the comparison stays paired). One row per fleet
    size and metric: ``seeds``, the four rungs' scores, ``horizon_gap`` (MPC with a perfect
    forecast minus the oracle), ``forecast_gap`` (realistic minus perfect forecast),
    ``rule_gap`` and ``total_gap``; > 0 means the lower rung is worse. Empty when a rung is
    missing everywhere.
    """
    sub = _role(table, role)
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
            gaps = ladder_gaps({r: float(wide[r].mean()) for r in LADDER}, higher_is_better=METRICS[metric][1])
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
    names = {f"score[{r}]": LABELS.get(r, r) for r in LADDER}
    shown = ladder.rename(columns={**names, **_GAP_NAMES})
    shown["metric"] = shown["metric"].map(lambda m: METRICS[m][0])
    for col in [*names.values(), *_GAP_NAMES.values()]:
        shown[col] = shown[col].map(lambda v: f"{v:+.3g}" if "gap" in col else f"{v:.3g}")
    by_part: dict[str | None, list[str]] = {"scores": ["servers", "metric", "seeds", *names.values()],
                                            "gaps": ["servers", "metric", *_GAP_NAMES.values()]}
    keep = by_part.get(part, list(shown.columns))
    return shown[keep]


def drift_table(table: pd.DataFrame, metrics: Sequence[str] = tuple(METRICS),
                reps: int = S.DEFAULT_REPS) -> pd.DataFrame:
    """Each method's metric under the training regime and under the other one, per fleet size.

    The same seeds under both (paired; :func:`ilets.report.stats.compare` with ``x`` the eval
    role and ``y`` the train role): ``mean_train``, ``mean_eval``, ``rel_pct`` with its CI
    (positive: better under the new regime) and ``kept_pct`` = ``100 * mean_eval / mean_train``
    for the higher-is-better metrics (the share of its in-distribution time in band a method
    keeps; NaN where it had none), else NaN.
    """
    directions = {k: METRICS[k][1] for k in metrics}
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
    spec = METRICS[metric][2]
    fmt = lambda v: f"{v:{spec}}" if np.isfinite(v) else "n/a"  # noqa: E731
    return pd.DataFrame({"servers": d["servers"], "method": d["method"].map(lambda m: LABELS.get(m, m)),
                         "under training regime": d["mean_train"].map(fmt),
                         "under the other regime": d["mean_eval"].map(fmt),
                         "change": [S.says(r) for r in d.to_dict("records")],
                         "kept": d["kept_pct"].map(lambda v: f"{v:.0f} %" if np.isfinite(v) else "n/a"),
                         "seeds": d["seeds"]}).reset_index(drop=True)


def _best(summary: pd.DataFrame, metric: str, servers) -> tuple[str, float] | None:
    s = summary[(summary["metric"] == metric) & (summary["servers"] == servers)].dropna(subset=["mean"])
    if len(s) == 0:
        return None
    row = s.loc[s["mean"].idxmax() if METRICS[metric][1] else s["mean"].idxmin()]
    return str(row["method"]), float(row["mean"])


def sentences(results: GridResults | None, reps: int = S.DEFAULT_REPS) -> dict[str, str]:
    """The sentences the chapter glues, computed from the results (never crashes on a
    missing method, rung or folder: the sentence then says what is missing)."""
    keys = ("best", "oail", "clone", "ladder", "drift", "misses", "band", "envelope", "oracle", "direction")
    if results is None:
        return {k: "No results to state." for k in keys}
    t = results.table
    summary = comparison_table(t, "train", reps=reps)
    out: dict[str, str] = {}
    parts = []
    for s in sorted(set(t["servers"])):
        b, f = _best(summary, "tracking_mae_rel", s), _best(summary, "in_band_fraction", s)
        if b and f:
            misses = summary[(summary["servers"] == s) & (summary["metric"] == "misses_caused")].set_index("method")
            cost = (f", at {misses.loc[b[0], 'mean']:,.0f} deadline misses caused against the baseline run (the rule: "
                    f"{misses.loc['rule', 'mean']:,.0f})" if {b[0], "rule"} <= set(misses.index) else "")
            parts.append(f"at {s} servers the lowest tracking error is {LABELS.get(b[0], b[0])}'s ({b[1]:.3f} of "
                         f"the requested change{cost}) and the most time in band {LABELS.get(f[0], f[0])}'s "
                         f"({f[1]:.1%})")
    out["best"] = ("Under the training regime, " + "; ".join(parts) + ".") if parts else "No tracking metric."
    comp = differences(t, "bc+ppo", "train", reps=reps)
    row = S.comparison_row(comp, x="bc+ppo+oail", metric="tracking_mae_rel")
    row_band = S.comparison_row(comp, x="bc+ppo+oail", metric="in_band_fraction")
    out["oail"] = (f"Against BC + PPO on the same seeds, the expert corrections change the tracking error by "
                   f"{S.says(row)} and the time in band by {S.says(row_band)} (at the smallest fleet; "
                   f"positive is better).")
    teacher = results.profile.get("pipeline", {}).get("teacher", "lyapunov")
    row_bc = S.comparison_row(differences(t, teacher, "train", reps=reps), x="bc", metric="tracking_mae_rel")
    out["clone"] = (f"The clone alone against its teacher ({LABELS.get(teacher, teacher)}), same seeds: tracking "
                    f"error {S.says(row_bc)}.")
    lad = ladder_table(t, "train")
    lad = lad[lad["metric"] == "tracking_mae_rel"]
    if len(lad):
        r = lad.sort_values("servers").iloc[0]
        out["ladder"] = (f"At {r['servers']} servers ({r['seeds']} seed(s) with every rung), the tracking error "
                         f"is {r['score[oracle]']:.3f} for the oracle, {r['score[mpc-perfect]']:.3f} for MPC with a "
                         f"perfect forecast (horizon gap {r['horizon_gap']:+.3f}), {r['score[mpc-forecast]']:.3f} "
                         f"with the realistic forecast (forecast gap {r['forecast_gap']:+.3f}) and "
                         f"{r['score[rule]']:.3f} for the rule (rule gap {r['rule_gap']:+.3f}; a negative gap: the "
                         f"lower rung did better).")
    else:
        out["ladder"] = ("The ladder needs every rung (oracle, both MPCs, rule) on a common seed; these results "
                         "lack one.")
    drift = drift_table(t, ("in_band_fraction", "tracking_mae_rel"), reps=reps)
    band = drift[(drift["metric"] == "in_band_fraction") & np.isfinite(drift["kept_pct"])]
    reg = results.regimes
    if len(band):
        s0 = band["servers"].min()
        b0 = band[band["servers"] == s0]
        top = b0.loc[b0["kept_pct"].idxmax()]
        low = b0.loc[b0["kept_pct"].idxmin()]
        out["drift"] = (f"Moved from {reg.get('train')} to {reg.get('eval')} at {s0} servers, "
                        f"{LABELS.get(top['method'], top['method'])} keeps the most of its time in band "
                        f"({top['kept_pct']:.0f} %) and {LABELS.get(low['method'], low['method'])} the least "
                        f"({low['kept_pct']:.0f} %).")
    else:
        out["drift"] = "No method had time in band under the training regime, so none can keep any."
    out["misses"] = misses_sentence(t)
    out["band"] = band_sentence(t, reg)
    out["envelope"] = envelope_sentence(t, reg)
    out["oracle"] = oracle_sentence(t, results.profile, reg)
    out["direction"] = direction_sentence(direction_table(results.folder))
    return out


def band_sentence(table: pd.DataFrame, regimes: dict[str, str]) -> str:
    """How many events reach the band (``band_reached_share``, seed means) under each regime
    and fleet size: the fewest and the most among the methods, and for how many (method,
    fleet size) pairs the median time to band is finite, that is more than half the events
    reach the band (:func:`ilets.gridcommand.metrics.band_summary`)."""
    if "band_reached_share" not in table or table["band_reached_share"].isna().all():
        return "These results record no per-event band times."
    parts, finite, pairs = [], 0, 0
    for role in ("train", "eval"):
        t = _role(table, role)
        for s, g in t.groupby("servers"):
            share = g.groupby("method")["band_reached_share"].mean().dropna()
            if share.empty:
                continue
            low, top = share.idxmin(), share.idxmax()
            where = f"{regimes.get(role, role)} at {s} servers"
            parts.append(f"{where} none (no method reaches the band on any event)" if share[top] == 0 else
                         f"{where} from {share[low]:.0%} ({LABELS.get(low, low)}) to {share[top]:.0%} "
                         f"({LABELS.get(top, top)})")
            median = g.groupby("method")["time_to_band_median_s"].median()
            finite, pairs = finite + int(np.isfinite(median).sum()), pairs + len(median)
    return (f"Share of events that reach the band (seed means): {'; '.join(parts)}. The median time to band is "
            f"finite (more than half the events reach the band, on the median seed) for {finite} of {pairs} "
            "(regime, fleet size, method) combinations; a mean over events is infinite as soon as one event "
            "never reaches it, so the mean is not shown. " + band_bar_sentence(table, regimes))


def results_bar_sentence(results: GridResults | None, bar: float = BAND_BAR) -> str:
    """:func:`band_bar_sentence` over every expert of a results folder, or what is missing."""
    if results is None:
        return "No results in this folder."
    return band_bar_sentence(results_table(results), results.regimes, bar)


def band_bar_table(table: pd.DataFrame, bar: float = BAND_BAR) -> pd.DataFrame:
    """The issue's band bar per regime role and fleet size: the expert whose events reach the
    band most often (seed means of ``band_reached_share``, experts only), that share, whether
    it is at least ``bar``, and its price: the deadline misses it causes against the baseline
    run (seed mean of ``misses_caused``; NaN where not recorded)."""
    rows = []
    for role in ("train", "eval"):
        t = _role(table, role)
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


def band_bar_sentence(table: pd.DataFrame, regimes: dict[str, str], bar: float = BAND_BAR) -> str:
    """:func:`band_bar_table` in words: in how many (regime, fleet size) pairs the bar is met,
    and per pair the expert that reaches the band most often, and its price."""
    best = band_bar_table(table, bar)
    if len(best) == 0:
        return "No expert's band times are recorded."
    parts = [f"{regimes.get(r['role'], r['role'])} at {r['servers']} servers {LABELS.get(r['method'], r['method'])} "
             f"{r['share']:.0%}" + ("" if np.isnan(r["misses_caused"])
                                   else f" at {r['misses_caused']:+,.0f} deadline misses caused")
             for r in best.to_dict("records")]
    return (f"The bar, an expert that reaches the band on at least {bar:.0%} of events, is met in "
            f"{int(best['meets'].sum())} of {len(best)} (regime, fleet size) pairs (the expert that reaches it most "
            f"often: {'; '.join(parts)}).")


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
        for s, g in _role(table, role).groupby("servers"):
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


def envelope_sentence(table: pd.DataFrame, regimes: dict[str, str]) -> str:
    """:func:`envelope_table` in words, per regime and fleet size."""
    events = envelope_table(table)
    if len(events) == 0:
        return "These results predate the flexibility envelope: every command was scored as generated."
    parts = [f"{regimes.get(r['role'], r['role'])} at {r['servers']} servers: {r['generated']} generated, "
             + (f"{r['redrawn']} moved to a new start, " if r["redrawn"] else "")
             + f"{r['dropped']} dropped as unreachable, {r['clipped']} of the {r['generated'] - r['dropped']} kept "
             "made shallower" for r in events.to_dict("records")]
    outside = events["outside"]
    if outside.isna().any():
        fit = "Whether every kept event lies inside what the levers reached is not recorded for every seed."
    elif outside.sum() == 0:
        fit = ("Every kept event asks for at most the profile's share of its reachable depth, so its target lies "
               "inside what the levers reached.")
    else:
        fit = f"{int(outside.sum())} kept events ask for more than the levers reached."
    return "Events over every seed (" + "; ".join(parts) + "). " + fit


def done_records(folder: Path | None) -> list[dict]:
    """The finished cell records of a results folder (``cells/*.json`` whose status is done), in
    name order: what the store does not keep (per-event records, what training recorded)
    lives only there. Empty without a folder."""
    records = (json.loads(f.read_text()) for f in sorted((Path(folder) / "cells").glob("*.json"))) if folder else ()
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


def direction_sentence(directions: pd.DataFrame) -> str:
    """Which experts follow which direction: per direction, the experts whose mean tracking
    error is above 1 (worse than ignoring the command) at some fleet size and regime, with
    their worst, and those below 1 everywhere."""
    if directions.empty:
        return "These results hold no per-event records."
    parts = []
    experts = [m for m in EXPERTS if m in set(directions["method"])]
    for direction in ("down", "up"):
        d = directions[(directions["direction"] == direction) & directions["method"].isin(experts)]
        if d.empty:
            continue
        worst = d.groupby("method")["mae_rel"].max()
        wrong = [f"{LABELS.get(m, m)} (up to {worst[m]:.2f})" for m in experts if m in worst and worst[m] > 1]
        right = [LABELS.get(m, m) for m in experts if m in worst and worst[m] <= 1]
        parts.append(f"on {direction} events ({int(d.groupby('method')['events'].sum().max())} per expert), "
                     + (f"worse than ignoring the command: {', '.join(wrong)}" if wrong else "no expert does worse "
                        "than ignoring the command")
                     + (f"; better everywhere: {', '.join(right)}" if right else ""))
    return "By direction (mean tracking error per fleet size and regime): " + "; ".join(parts) + "."


def oracle_sentence(table: pd.DataFrame, profile: dict, regimes: dict[str, str]) -> str:
    """Where the hindsight oracle is not the ladder's top, and why: per regime and fleet size,
    the rungs with a lower seed-mean tracking error than the oracle's on the seeds it ran, and
    whether the oracle does worse than doing nothing (a tracking error above 1: the baseline's
    own error is the requested change). The reason is the model's, stated from the profile: its
    windows of ``oracle_window`` tasks span a fraction of a second of arrivals at a reduced
    scale, and its fluid model counts no power past the window."""
    beaten, worse = [], []
    for role in ("train", "eval"):
        t = _role(table, role)
        for s, g in t.groupby("servers"):
            seeds = set(g.loc[g["method"] == "oracle", "seed"])
            if not seeds:
                continue
            means = g[g["seed"].isin(seeds)].groupby("method")["tracking_mae_rel"].mean()
            above = [m for m in LADDER + ("lyapunov",) if m in means.index and m != "oracle"
                     and means[m] < means["oracle"]]
            where = f"{regimes.get(role, role)} at {s} servers"
            if above:
                beaten.append(f"{where} ({', '.join(LABELS.get(m, m) for m in above)})")
            if means["oracle"] > 1:
                worse.append(f"{where} ({means['oracle']:.2f})")
    if not beaten and not worse:
        return "The oracle tracks best of the ladder in every regime and at every fleet size."
    window = profile.get("oracle_window", "?")
    text = []
    if beaten:
        text.append("The oracle is not the ladder's top rung here: a lower rung tracks better under "
                    + "; ".join(beaten) + ".")
    if worse:
        text.append("It even tracks worse than ignoring the command (an error above 1) under " + "; ".join(worse) + ".")
    text.append(f"Why: its MILP plans windows of {window} tasks, a fraction of a second of arrivals at this scale, "
                "in a fluid model that counts no power past the window's end, so the runs it starts there land "
                "unplanned in the next slots; it optimises its own weights, not the scored error. It is an informed "
                "expert, not a bound; the hindsight rung is the bound.")
    return " ".join(text)


def misses_sentence(table: pd.DataFrame, role: str = "train") -> str:
    """What the learners cost in deadlines against the experts: per fleet size, the range
    of the seed-mean deadline misses caused (run minus baseline; negative: fewer) over the
    learned methods and over the experts, and the tasks per episode."""
    t = _role(table, role)
    parts = []
    for s in sorted(set(t["servers"])):
        means = t[t["servers"] == s].groupby("method")["misses_caused"].mean()
        learned = means[[m for m in LEARNED if m in means.index]]
        experts = means[[m for m in EXPERTS if m in means.index]]
        if len(learned) and len(experts):
            parts.append(f"at {s} servers the learned policies cause {learned.min():+,.0f} to {learned.max():+,.0f} "
                         f"deadline misses against the baseline run, the experts {experts.min():+,.0f} to "
                         f"{experts.max():+,.0f}")
    if not parts:
        return "These results lack a learned method or an expert, so their misses cannot be set side by side."
    return "Per episode, " + "; ".join(parts) + "."


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
    d = d.assign(label=d["method"].map(lambda m: LABELS.get(m, m)),
                 ci_low=d["ci_low"].fillna(d["mean"]), ci_high=d["ci_high"].fillna(d["mean"]))
    panels = {s: f"{s} servers" for s in sorted(set(d["servers"]))}
    order = [LABELS.get(m, m) for m in _order(d["method"])]
    return plots.interval_panels(d, "mean", "ci_low", "ci_high", "servers", "label", panels, order=order,
                                 xlabel=METRICS[metric][0])
