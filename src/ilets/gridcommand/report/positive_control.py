"""The grid-command learners' positive control: does a frozen clone follow its teacher?

The grid-command pipeline (expert -> imitation -> RL) needs a learner that can clone its teacher
first. This module sets the frozen clone of each kept design beside the teacher's cells of its
own grid on the same seeds (paired), and scores the fine-tuned policies on a held-out episode.
The bar is the scenario issue's: a frozen clone within :data:`TRACKING_BAR` of its teacher's
tracking error, and a miss rate at most :data:`MISS_BAR` times the teacher's. The designs tried
before these are rows of the archive (:mod:`ilets.gridcommand.archive`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from ilets.gridcommand import designs as DS
from ilets.gridcommand.episodes import HELDOUT_METRICS
from ilets.gridcommand.pipeline_config import CLONED, FROZEN
from ilets.report import stats as S
from ilets.gridcommand.report.prose import status_sentence
from ilets.gridcommand.report.results import done_records, load_results, method_label

# The kept clone designs, by id (rows of :data:`ilets.gridcommand.designs.DESIGNS`; the book
# names each by its label, :func:`ilets.gridcommand.designs.label`).
#: The per-server clone learning from 16 training episodes, neighbouring seeds sharing most of
#: them (50 and 200 servers; the fine-tuning methods too, scored on a held-out episode).
EPISODES_DESIGN = "gridcommand-grid-per-server-episodes"
#: The same with each seed's own training workloads (50 servers): the seeds' clones independent.
OWN_DESIGN = "gridcommand-grid-per-server-episodes-own"
#: The clone whose rows show the teacher's own score terms (declared privileged state), learned
#: on 50 servers and scored on 50 and 200: the pipeline's positive control.
TERMS_DESIGN = "gridcommand-grid-per-server-terms"
#: Its control: the same clone without the terms.
CONTROL_DESIGN = "gridcommand-grid-per-server-film-later"

#: The kept clone designs: id -> shipped folder (relative to the repository root).
DESIGNS = {d: DS.folder_of(d) for d in (EPISODES_DESIGN, OWN_DESIGN, TERMS_DESIGN, CONTROL_DESIGN)}
#: The designs whose rows carry the teacher's own score terms: a clone of one meets the bar by
#: seeing what its teacher computes, so it shows the pipeline works, not that a learner can.
PRIVILEGED = DS.tagged("privileged")
#: The bar: tracking error at most 10 % above the teacher's, a miss rate at most 1.1 times its.
TRACKING_BAR, MISS_BAR = 0.10, 1.10
#: The clone-based methods (the others are experts or learn from scratch).
CLONES = CLONED


def load_designs(root: Path, teacher: str = "lyapunov", designs: Mapping[str, Path] | None = None) -> pd.DataFrame:
    """Every grid's rows of the teacher and the clone-based methods, with ``design``, the miss
    rate (``1 - success_rate``) and each cell's clone agreement (``bc_agreement_after``, from
    the cell's own record; NaN for the teacher). ``designs``: id -> folder, by default
    :data:`DESIGNS`. Empty when no grid is there."""
    parts = []
    for design, rel in (DESIGNS if designs is None else designs).items():
        results = load_results(Path(root) / rel)
        if results is None:
            continue
        t = results.table[results.table["method"].isin((teacher, *CLONES))].copy()
        agreement = {(rec["method"], rec["servers"], rec["seed"]): rec["train"].get("bc_agreement_after")
                     for rec in done_records(Path(root) / rel)}
        t["agreement"] = [agreement.get(k, np.nan) for k in zip(t["method"], t["servers"], t["seed"])]
        parts.append(t.assign(design=design, miss_rate=1.0 - t["success_rate"]))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["design", "method", "servers", "seed", "role", "regime", "tracking_mae_rel", "miss_rate", "agreement"])


def control_table(rows: pd.DataFrame, teacher: str = "lyapunov", reps: int = S.DEFAULT_REPS) -> pd.DataFrame:
    """Per design, regime role, fleet size and clone-based method: its tracking error and miss
    rate beside the teacher's on the same seeds, the paired change of the tracking error
    (``track_pct``, positive: the clone tracks better; :func:`ilets.report.stats.compare`), the
    miss rate's ratio to the teacher's, its mean clone agreement, and whether it meets the bar."""
    cols = ["design", "role", "regime", "servers", "method", "seeds", "agreement", "track_clone", "track_teacher",
            "track_pct", "track_low", "track_high", "track_verdict", "miss_clone", "miss_teacher", "miss_ratio",
            "meets_bar"]
    if len(rows) == 0:
        return pd.DataFrame(columns=cols)
    out = []
    for (design, role), g in rows.groupby(["design", "role"], sort=False):
        for method in [m for m in CLONES if m in set(g["method"])]:
            comp = S.compare(g, method, teacher, ["tracking_mae_rel", "miss_rate"], ("servers",),
                             directions={"tracking_mae_rel": False, "miss_rate": False}, reps=reps)
            for servers, c in comp.groupby("servers"):
                track = c[c["metric"] == "tracking_mae_rel"].iloc[0]
                miss = c[c["metric"] == "miss_rate"].iloc[0]
                if track["verdict"] == "no data":
                    continue
                cells = g[(g["method"] == method) & (g["servers"] == servers)]
                ratio = miss["mean_x"] / miss["mean_y"] if miss["mean_y"] > 0 else np.inf
                worse_track = (track["mean_x"] - track["mean_y"]) / track["mean_y"]
                out.append({"design": design, "role": role, "regime": cells["regime"].iloc[0], "servers": servers,
                            "method": method, "seeds": int(track["n_x"]),
                            "agreement": float(cells["agreement"].mean()), "track_clone": track["mean_x"],
                            "track_teacher": track["mean_y"], "track_pct": track["rel_pct"],
                            "track_low": track["rel_ci_low"], "track_high": track["rel_ci_high"],
                            "track_verdict": track["verdict"], "miss_clone": miss["mean_x"],
                            "miss_teacher": miss["mean_y"], "miss_ratio": ratio,
                            "meets_bar": bool(worse_track <= TRACKING_BAR and ratio <= MISS_BAR)})
    return pd.DataFrame(out, columns=cols)


def control_display(table: pd.DataFrame, role: str = "train") -> pd.DataFrame:
    """:func:`control_table` for one role, for display."""
    t = table[table["role"] == role]
    if len(t) == 0:
        return pd.DataFrame()
    recs = t.to_dict("records")
    return pd.DataFrame({
        "design": t["design"].map(DS.display_name), "servers": t["servers"],
        "method": t["method"].map(lambda m: method_label(m)),
        "agreement": t["agreement"].map(lambda v: f"{v:.0%}" if np.isfinite(v) else "n/a"),
        "tracking (clone / teacher)": [f"{r['track_clone']:.3f} / {r['track_teacher']:.3f}" for r in recs],
        "change": [S.says({"rel_pct": r["track_pct"], "rel_ci_low": r["track_low"], "rel_ci_high": r["track_high"],
                           "verdict": r["track_verdict"]}) for r in recs],
        "miss rate x teacher's": t["miss_ratio"].map(lambda v: f"{v:.2f}"),
        "meets the bar": t["meets_bar"].map({True: "yes", False: "no"}), "seeds": t["seeds"],
    }).reset_index(drop=True)


def control_sentence(table: pd.DataFrame, teacher: str = "lyapunov") -> str:
    """Whether the frozen clone of each design meets the bar, per fleet size, in distribution
    (role ``train``); generated from :func:`control_table`."""
    t = table[(table["role"] == "train") & (table["method"] == FROZEN)]
    if len(t) == 0:
        return "No clone of any design in these results."
    parts = []
    for design, g in t.groupby("design", sort=False):
        bits = [f"{int(r['servers'])} servers: agreement {r['agreement']:.0%}, tracking {r['track_pct']:+.0f} % "
                f"[{r['track_low']:+.0f}, {r['track_high']:+.0f}] against {method_label(teacher)}, miss rate "
                f"{r['miss_ratio']:.2f}x, {'meets' if r['meets_bar'] else 'misses'} the bar"
                for r in g.sort_values("servers").to_dict("records")]
        parts.append(f'the clone of design "{DS.display_name(design)}" ({"; ".join(bits)})')
    return (f"Frozen, under the regime it was trained in, {' and '.join(parts)}. The bar: a tracking error at most "
            f"{TRACKING_BAR:.0%} above the teacher's and a miss rate at most {MISS_BAR:g} times its (positive "
            "changes: the clone tracks better).")


def designs_status(root: Path, designs: Mapping[str, Path]) -> str:
    """:func:`ilets.gridcommand.report.prose.status_sentence` of each design's shipped grid
    (``designs``: id -> folder), named by its label, with the profile that fills it (the
    design's id) where it is missing."""
    return " ".join(f"Design *{DS.display_name(design)}*: "
                    + status_sentence(load_results(Path(root) / rel), Path(root) / rel, design)
                    for design, rel in designs.items())


#: The designs the held-out criterion reads (their fine-tuned policies were scored held out).
HELDOUT_DESIGNS = DS.tagged("heldout")


def heldout_design(root: Path, designs: Mapping[str, Path] | None = None) -> tuple[str, pd.DataFrame]:
    """The last design (of ``designs``, id -> folder; by default :data:`HELDOUT_DESIGNS` in
    :data:`DESIGNS`) whose grid is shipped under ``root`` with held-out scores, and those rows
    (:func:`heldout_rows`); the first design and no rows when none is. Designs are read from
    the last back, so only the shown one is read in full."""
    designs = {d: DESIGNS[d] for d in HELDOUT_DESIGNS} if designs is None else designs
    names = list(designs)
    for design in reversed(names):
        rows = heldout_rows(Path(root) / designs[design])
        if len(rows):
            return design, rows
    return names[0], rows


def heldout_rows(folder: Path) -> pd.DataFrame:
    """One row per finished cell of a grid run with ``pipeline.heldout``: method, fleet size,
    seed and the held-out episode's metrics (from the cell's training record)."""
    rows = [{"method": r["method"], "servers": r["servers"], "seed": r["seed"],
             **{k: r["train"][f"heldout_{k}"] for k in HELDOUT_METRICS}}
            for r in done_records(Path(folder)) if "heldout_tracking_mae_rel" in r.get("train", {})]
    return pd.DataFrame(rows, columns=["method", "servers", "seed", *HELDOUT_METRICS])


#: The columns of a comparison row :func:`heldout_table` keeps for the miss rate (as ``miss_*``).
MISS_COLS = ["mean_x", "mean_y", "rel_pct", "rel_ci_low", "rel_ci_high", "verdict"]


def heldout_table(rows: pd.DataFrame, teacher: str = "lyapunov", reps: int = S.DEFAULT_REPS) -> pd.DataFrame:
    """On the held-out episode, paired by seed: each method that fine-tunes the clone against
    the frozen clone (``against`` ``bc``), and every clone-based method against the teacher;
    the tracking error (lower is better) as :func:`ilets.report.stats.compare` gives it, and
    beside it the deadline miss rate (``1 - success_rate``, lower is better; columns
    ``miss_*``), so a method that tracks better by missing more deadlines shows it. A fleet size
    where one of the two has no scored seed (a grid part-way) has no row: there is nothing to
    judge."""
    rows = rows.assign(miss_rate=1.0 - rows["success_rate"])
    pairs = [(m, FROZEN) for m in CLONES if m != FROZEN] + [(m, teacher) for m in CLONES]
    keys = ["method", "against", "servers"]
    parts = []
    for x, y in pairs:
        if not {x, y} <= set(rows["method"]):
            continue
        comp = S.compare(rows, x, y, ["tracking_mae_rel", "miss_rate"], ("servers",), directions=False, reps=reps)
        comp = comp.rename(columns={"x": "method"}).assign(against=y)
        track, miss = (comp[comp["metric"] == m] for m in ("tracking_mae_rel", "miss_rate"))
        miss = miss[keys + MISS_COLS].rename(columns={c: f"miss_{c}" for c in MISS_COLS})
        both = track.merge(miss, on=keys)
        parts.append(both[both["verdict"] != "no data"])
    cols = [*keys, "mean_x", "mean_y", "rel_pct", "rel_ci_low", "rel_ci_high", "verdict", "n_x",
            *(f"miss_{c}" for c in MISS_COLS)]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


def _miss(row: Mapping) -> dict:
    """A :func:`heldout_table` row's miss-rate comparison, as a comparison row of its own."""
    return {c: row[f"miss_{c}"] for c in MISS_COLS}


def heldout_display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`heldout_table` for display."""
    if len(table) == 0:
        return pd.DataFrame()
    recs = table.to_dict("records")
    return pd.DataFrame({
        "method": [method_label(r["method"]) for r in recs],
        "against": [method_label(r["against"]) for r in recs], "servers": table["servers"],
        "tracking (method / against)": [f"{r['mean_x']:.3f} / {r['mean_y']:.3f}" for r in recs],
        "change": [S.says(r) for r in recs],
        "miss rate (method / against)": [f"{r['miss_mean_x']:.2%} / {r['miss_mean_y']:.2%}" for r in recs],
        "change in misses": [S.says(_miss(r)) for r in recs], "seeds": table["n_x"],
    })


def heldout_sentence(table: pd.DataFrame, teacher: str = "lyapunov") -> str:
    """Whether fine-tuning ends no worse than the frozen clone on the held-out episode (in
    neither its tracking error nor its deadline miss rate), and whether any clone-based method
    tracks better than the teacher there, per fleet size, with what it does to the misses."""
    if len(table) == 0:
        return "No method was scored on a held-out episode."
    said = []
    tuned = table[table["against"] == FROZEN]
    for r in tuned.sort_values(["method", "servers"]).to_dict("records"):
        ok = "worse than" if "worse" in (r["verdict"], r["miss_verdict"]) else "no worse than"
        said.append(f"{method_label(r['method'])} at {int(r['servers'])} servers ends {ok} the frozen clone "
                    f"(tracking {S.says(r)}; misses {S.says(_miss(r))})")
    vs = table[table["against"] == teacher]
    beats = vs[vs["verdict"] == "better"]
    who = ("; ".join(f"{method_label(r['method'])} at {int(r['servers'])} servers (misses "
                     f"{S.says(_miss(r))})" for r in beats.to_dict("records")) if len(beats) else "none of them")
    return (f"On the held-out episode (frozen, greedy; positive: the method tracks better, or misses fewer "
            f"deadlines), {'; '.join(said) if said else 'no method fine-tuned the clone'}. Against "
            f"{method_label(teacher)} on the same episode, {who} tracks better.")
