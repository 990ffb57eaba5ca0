"""The grid-command learners' positive control: does a clone follow its teacher?

The issue the grid-command scenario answers (can expert -> imitation -> RL follow a grid
operator's command?) needs a learner that can clone its teacher first. This module sets the
clone-based methods of five grids side by side, each against the teacher's cells of its own
grid on the same seeds (paired): the authors' flat policy (``shipped/gridcommand``), the
per-server policy (``shipped/gridcommand-per-server``) and the per-server policy shown the
teacher's two virtual queues (``observe_queues``, ``shipped/gridcommand-per-server-queues``),
and that clone scored greedily (``pipeline.clone_action``, as the study's positive control
scores every clone; ``shipped/gridcommand-per-server-queues-greedy``), and the last with the
sleep lever on (``shipped/gridcommand-per-server-sleep``, :mod:`ilets.gridcommand.sleep`:
deeper commands the fleet can follow), then that design with the BC budget its own pilot chose
(``pipeline.bc_epochs``, ``shipped/gridcommand-per-server-budget``), then with DAgger rounds
on top (``pipeline.dagger_rounds``, ``shipped/gridcommand-per-server-dagger``). The bar is the scenario issue's: a
frozen clone within :data:`TRACKING_BAR` of its teacher's tracking error, and a miss rate at
most :data:`MISS_BAR` times the teacher's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from ilets.files import PROVENANCE
from ilets.gridcommand.pipeline import HELDOUT_METRICS, LEARNED
from ilets.report import stats as S
from ilets.report.grid_command import (LABELS, GridResults, cell_progress, done_records, load_results,
                                       status_sentence)

#: The design whose clone the chapter reads seed by seed (:func:`deferral_gap_table`): the
#: energy-ranked one, the first run on ten seeds at both fleet sizes; the two deferral designs
#: after it are read the same way.
GAP_DESIGN = "the same, with DAgger, servers ranked by energy"
#: The deferral-weighted design (50 servers only, as its pilot), a step of :data:`DESIGNS`.
DEFERS_DESIGN = "the same, deferrals weighted"
#: The energy-ranked design with deferral scored per server (``run.defer_head: rows``; 50 and
#: 200 servers), a step of :data:`DESIGNS` read seed by seed as the two above.
LATER_DESIGN = "the same, deferral scored per server"
#: The energy-ranked design with the clone learning from 16 training episodes (the
#: training-episodes pilot's largest candidate when it started; 50 and 200 servers, the teacher
#: and the frozen clone first, the fine-tuning methods after), a step of :data:`DESIGNS` read
#: seed by seed as the ones above.
EPISODES_DESIGN = "the same, 16 training episodes"

#: The grids: design -> shipped folder (relative to the repository root); a missing one is skipped.
DESIGNS = {"flat": Path("shipped") / "gridcommand", "per-server": Path("shipped") / "gridcommand-per-server",
           "per-server + queues": Path("shipped") / "gridcommand-per-server-queues",
           "per-server + queues, greedy clone": Path("shipped") / "gridcommand-per-server-queues-greedy",
           "per-server + queues, greedy clone, sleep": Path("shipped") / "gridcommand-per-server-sleep",
           "the same, BC budget from its pilot": Path("shipped") / "gridcommand-per-server-budget",
           "the same, with DAgger": Path("shipped") / "gridcommand-per-server-dagger",
           "the same, 8 DAgger rounds": Path("shipped") / "gridcommand-per-server-dagger-rounds",
           GAP_DESIGN: Path("shipped") / "gridcommand-per-server-energy",
           DEFERS_DESIGN: Path("shipped") / "gridcommand-per-server-energy-defers",
           LATER_DESIGN: Path("shipped") / "gridcommand-per-server-later",
           EPISODES_DESIGN: Path("shipped") / "gridcommand-per-server-episodes"}
#: The 16-episode design with each seed's own training workloads (``train_episode_stride`` 16;
#: the design shares 15 of 16 between neighbouring seeds). Not a step of :data:`DESIGNS`: it
#: changes no setting a clone learns with, only whether the seeds' clones are independent
#: draws; read beside the 16-episode design (:func:`twin_sentence`).
OWN_WORKLOADS_DESIGN = {"the same, each seed's own training workloads":
                        Path("shipped") / "gridcommand-per-server-episodes-own"}
#: The own-workloads design with its clone learning on 50 servers, scored on 50 and 200
#: (``pipeline.train_servers``): that design at a second fleet size, its clone made where its
#: demonstrations fit. Read, as the own-workloads design is, by the clone criterion.
OWN_FROM50_DESIGN = {"the same, each seed's own training workloads, clone learned on 50 servers":
                     Path("shipped") / "gridcommand-per-server-episodes-own-from50"}
#: The own-workloads design with the film term in the per-server policy's placement scores
#: (``run.server_film``): one change over :data:`OWN_WORKLOADS_DESIGN`, read beside it
#: (:func:`later_sentence`).
FILM_DESIGN = {"the own-workloads design, placement scores with the film term":
               Path("shipped") / "gridcommand-per-server-film"}
#: The film design with the Lyapunov teacher's terms in each server's row and deferral scored
#: per server (``observe_terms``, ``run.defer_head`` "rows"), its clone learned on 50 servers
#: and scored on 50 and 200: the teacher's choice a linear function of the rows, a positive
#: control of the rest of the pipeline. Read beside :data:`OWN_FROM50_DESIGN`, which learns
#: and is scored on the same fleets (:func:`later_sentence`).
TERMS_DESIGN = {"the film design, the teacher's terms in each row, clone learned on 50 servers":
                Path("shipped") / "gridcommand-per-server-terms"}
#: The terms design without the terms (``run.defer_head`` "rows" with the film term): its
#: control, read beside it (:func:`later_sentence`), so that what the terms add is measured.
FILM_LATER_DESIGN = {"the film design, deferral per row, clone learned on 50 servers":
                     Path("shipped") / "gridcommand-per-server-film-later"}
#: The designs run after the others missed the bar, each with the design it is read beside.
LATER_DESIGNS = {next(iter(FILM_DESIGN)): next(iter(OWN_WORKLOADS_DESIGN)),
                 next(iter(TERMS_DESIGN)): next(iter(OWN_FROM50_DESIGN)),
                 next(iter(FILM_LATER_DESIGN)): next(iter(TERMS_DESIGN))}
#: The 16-episode design with its clone learning on 50 servers and scored on 200
#: (``pipeline.train_servers``). Not a step of :data:`DESIGNS`: it changes no setting a clone
#: learns with, only the fleet it learns on; read beside the 16-episode design's clone learned
#: on 200 (:func:`twin_sentence`).
FLEET_TRANSFER_DESIGN = {"the same, clone learned on 50 servers":
                         Path("shipped") / "gridcommand-per-server-episodes-from50"}
#: A design that changes one thing over an earlier design than the one listed before it: the
#: design it is compared with (:func:`design_steps`); every other design, the one before it.
DESIGN_BASE = {GAP_DESIGN: "the same, with DAgger", LATER_DESIGN: GAP_DESIGN, EPISODES_DESIGN: GAP_DESIGN}
#: The speed rows' positive control (a scenario of its own: the teacher also picks the speed,
#: so it is not a step of :data:`DESIGNS`).
SPEED_DESIGN = {"per-server with speed rows": Path("shipped") / "gridcommand-per-server-dvfs"}
#: The sleep head's positive control (a scenario of its own: the policy puts servers to sleep
#: and the teacher takes the power manager's rule as actions, so it is not a step of
#: :data:`DESIGNS` either).
SLEEP_HEAD_DESIGN = {"per-server with the sleep head": Path("shipped") / "gridcommand-per-server-sleep-head",
                     "the same, sleep actions weighted": Path("shipped") / "gridcommand-per-server-sleep-head-weighted",
                     "the same, the rule's inputs in each row": Path("shipped") / "gridcommand-per-server-sleep-rows"}
#: The thermostat-taught design (its teacher is the thermostat, not Lyapunov, and its scenario
#: shows the slot's meter, so it is not a step of :data:`DESIGNS` either).
THERMOSTAT_DESIGN = {"per-server taught by the thermostat": Path("shipped") / "gridcommand-per-server-thermostat",
                     "the same, event decisions weighted": Path("shipped") / "gridcommand-per-server-thermostat-events"}
#: The cap head's positive control (its teacher is the power-cap rung and its scenario sets the
#: cap as an action, so it is not a step of :data:`DESIGNS` either), and the same clone with the
#: cap levels' linear logits beside it.
CAP_HEAD_DESIGN = {"cap-head": Path("shipped") / "gridcommand-per-server-cap",
                   "the same, the cap levels scored linearly": Path("shipped") / "gridcommand-per-server-cap-pooled"}
#: The bar: tracking error at most 10 % above the teacher's, a miss rate at most 1.1 times its.
TRACKING_BAR, MISS_BAR = 0.10, 1.10
#: The clone-based methods (the others are experts or learn from scratch).
CLONES = tuple(m for m in LEARNED if m.startswith("bc"))


def load_designs(root: Path, teacher: str = "lyapunov", designs: Mapping[str, Path] | None = None) -> pd.DataFrame:
    """Every grid's rows of the teacher and the clone-based methods, with ``design``, the miss
    rate (``1 - success_rate``) and each cell's clone agreement (``bc_agreement_after``, from
    the cell's own record; NaN for the teacher). ``designs``: name -> folder, by default
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


def teacher_band_sentence(rows: pd.DataFrame, teacher: str) -> str:
    """How often ``teacher`` itself reaches the band (``rows`` from :func:`load_designs`, the
    training regime's role, the first design's teacher rows; mean over seeds of the share of
    events), per fleet size: what "within the bar of its teacher" is worth for a teacher that
    seldom follows."""
    t = rows[(rows["role"] == "train") & (rows["method"] == teacher)] if len(rows) else rows
    if len(t) == 0:
        return ""
    t = t[t["design"] == t["design"].iloc[0]]
    share = t.groupby("servers")["band_reached_share"].mean()
    said = " and ".join(f"{v:.0%} of the events at {int(m)} servers" for m, v in share.items())
    return (f"Its teacher, {LABELS.get(teacher, teacher)}, itself reaches the band on {said} (mean over seeds, "
            "under the regime the clone was trained in), so this bar measures imitation, not following the command.")


def cap_change_table(root: Path, designs: Mapping[str, Path], teacher: str = "cap") -> pd.DataFrame:
    """How often each policy moved the admission cap in an episode under the training regime
    (``cap_changes``, NaN in a cell computed before the scores kept it): per design of
    ``designs`` (name -> folder under ``root``), method (``teacher`` and the frozen clone,
    ``bc``), fleet size and seed. Empty when no such cell is there."""
    rows = [{"design": design, "method": r["method"], "servers": r["servers"], "seed": r["seed"],
             "cap_changes": float(r.get("scores", {}).get("train", {}).get("cap_changes", np.nan))}
            for design, rel in designs.items() for r in done_records(Path(root) / rel)
            if r["method"] in (teacher, "bc")]
    return pd.DataFrame(rows, columns=["design", "method", "servers", "seed", "cap_changes"])


def cap_change_sentence(table: pd.DataFrame, teacher: str = "cap") -> str:
    """:func:`cap_change_table` in words: per fleet size, the teacher's mean cap changes per
    episode (over seeds; the first design's teacher, as the designs share it) and each design's
    frozen clone's, so a clone within the bar is seen to move the cap as its teacher does, or
    not; with how many cells kept the count when some predate it. Empty without cells."""
    if len(table) == 0:
        return ""
    kept = table.dropna(subset=["cap_changes"])
    if len(kept) == 0:
        return "These cells were computed before the scores kept how often the cap moved."
    parts = []
    for servers, t in kept.groupby("servers"):
        mean = t.groupby(["design", "method"], sort=False)["cap_changes"].mean()
        first = t["design"].iloc[0]
        said = [f"{LABELS.get(teacher, teacher)} {mean[(first, teacher)]:.1f} times"] if (first, teacher) in mean else []
        said += [f"the clone of design {d} {v:.1f}" for (d, m), v in mean.items() if m == "bc"]
        parts.append(f"at {int(servers)} servers, {', '.join(said)}")
    some = f"; {len(kept)} of {len(table)} cells kept the count, the rest predate it" if len(kept) < len(table) else ""
    return f"The admission cap moved, per episode under the training regime (mean over seeds{some}): {'; '.join(parts)}."


def control_display(table: pd.DataFrame, role: str = "train") -> pd.DataFrame:
    """:func:`control_table` for one role, for display."""
    t = table[table["role"] == role]
    if len(t) == 0:
        return pd.DataFrame()
    recs = t.to_dict("records")
    return pd.DataFrame({
        "design": t["design"], "servers": t["servers"], "method": t["method"].map(lambda m: LABELS.get(m, m)),
        "agreement": t["agreement"].map(lambda v: f"{v:.0%}" if np.isfinite(v) else "n/a"),
        "tracking (clone / teacher)": [f"{r['track_clone']:.3f} / {r['track_teacher']:.3f}" for r in recs],
        "change": [S.says({"rel_pct": r["track_pct"], "rel_ci_low": r["track_low"], "rel_ci_high": r["track_high"],
                           "verdict": r["track_verdict"]}) for r in recs],
        "miss rate x teacher's": t["miss_ratio"].map(lambda v: f"{v:.2f}"),
        "meets the bar": t["meets_bar"].map({True: "yes", False: "no"}), "seeds": t["seeds"],
    }).reset_index(drop=True)


def sleep_use_table(folder: Path, teacher: str = "lyapunov") -> pd.DataFrame:
    """Per fleet size and method (the teacher and the clone-based methods), the servers put to
    sleep per episode under the training regime (``sleeps`` of the cells' records, which the
    store does not keep), mean over the seeds on which every method ran: whether a clone with
    the sleep head uses it as its teacher does. Empty without such records."""
    rows = [{"method": r["method"], "servers": r["servers"], "seed": r["seed"], "sleeps": r["scores"]["train"]["sleeps"]}
            for r in done_records(Path(folder)) if r["method"] in (teacher, *CLONES)
            and "sleeps" in r.get("scores", {}).get("train", {})]
    if not rows:
        return pd.DataFrame(columns=["servers", "method", "seeds", "sleeps"])
    t = pd.DataFrame(rows)
    # paired: only the seeds on which every method of that fleet size ran (a partial grid)
    methods = t.groupby("servers")["method"].transform("nunique")
    t = t[t.groupby(["servers", "seed"])["method"].transform("nunique") == methods]
    return (t.groupby(["servers", "method"], sort=True).agg(seeds=("seed", "size"), sleeps=("sleeps", "mean"))
            .reset_index())


def designs_sleep_use(root: Path, designs: Mapping[str, Path], teacher: str = "lyapunov") -> str:
    """:func:`sleep_use_sentence` of each design's shipped grid that holds sleep counts, named
    (plain text: the chapter glues it as text, not Markdown)."""
    said = {design: sleep_use_sentence(sleep_use_table(Path(root) / rel, teacher), teacher)
            for design, rel in designs.items()}
    return " ".join(f'Design "{design}": {text}' for design, text in said.items() if text)


def sleep_use_sentence(table: pd.DataFrame, teacher: str = "lyapunov") -> str:
    """:func:`sleep_use_table` in a sentence: per fleet size, the teacher's sleeps per episode,
    then each clone-based method's."""
    if len(table) == 0:
        return ""
    parts = []
    for servers, g in table.groupby("servers"):
        by = g.set_index("method")["sleeps"]
        order = [m for m in (teacher, *CLONES) if m in by.index]
        parts.append(f"at {int(servers)} servers " + ", ".join(f"{LABELS.get(m, m)} {by[m]:.1f}" for m in order))
    return ("Servers put to sleep per episode under the training regime (seed means): " + "; ".join(parts) + ".")


def control_sentence(table: pd.DataFrame, teacher: str = "lyapunov") -> str:
    """Whether the frozen clone of each design meets the bar, per fleet size, in distribution
    (role ``train``); generated from :func:`control_table`."""
    t = table[(table["role"] == "train") & (table["method"] == "bc")]
    if len(t) == 0:
        return "No clone of any design in these results."
    parts = []
    for design, g in t.groupby("design", sort=False):
        bits = [f"{int(r['servers'])} servers: agreement {r['agreement']:.0%}, tracking {r['track_pct']:+.0f} % "
                f"[{r['track_low']:+.0f}, {r['track_high']:+.0f}] against {LABELS.get(teacher, teacher)}, miss rate "
                f"{r['miss_ratio']:.2f}x, {'meets' if r['meets_bar'] else 'misses'} the bar"
                for r in g.sort_values("servers").to_dict("records")]
        # a design named after the one before it ("the same, ...") is named as a design
        named = f'the clone of design "{design}"' if design.startswith("the ") else f"the {design} clone"
        parts.append(f"{named} ({'; '.join(bits)})")
    return (f"Frozen, under the regime it was trained in, {' and '.join(parts)}. The bar: a tracking error at most "
            f"{TRACKING_BAR:.0%} above the teacher's and a miss rate at most {MISS_BAR:g} times its (positive "
            "changes: the clone tracks better).")


def twin_sentence(rows: pd.DataFrame, design: str, reps: int = S.DEFAULT_REPS) -> str:
    """The positive control of ``design``, one of the designs read beside the 16-episode design
    (:data:`OWN_WORKLOADS_DESIGN`, :data:`OWN_FROM50_DESIGN`, :data:`FLEET_TRANSFER_DESIGN`),
    beside that design's, on the fleet sizes and seeds both have: ``rows`` from
    :func:`load_designs` over the two. Whether each design's frozen clone meets the bar
    there, from :func:`control_sentence`."""
    return _beside_design(rows, design, EPISODES_DESIGN, _NOT_RUN[design], reps)


def later_sentence(rows: pd.DataFrame, design: str, reps: int = S.DEFAULT_REPS) -> str:
    """The positive control of ``design``, one of :data:`LATER_DESIGNS`, beside the design it
    is read beside, on the fleet sizes and seeds both have (``rows``: :func:`load_designs`
    over the two)."""
    return _beside_design(rows, design, LATER_DESIGNS[design], _NOT_RUN[design], reps)


#: What :func:`twin_sentence` and :func:`later_sentence` say of a design that has not run.
_NOT_RUN = {next(iter(OWN_WORKLOADS_DESIGN)): "The design with each seed's own training workloads has not run.",
            next(iter(OWN_FROM50_DESIGN)): "The own-workloads design with its clone learned on 50 servers has not run.",
            next(iter(FLEET_TRANSFER_DESIGN)): "The design whose clone learns on another fleet has not run.",
            next(iter(FILM_DESIGN)): "The design with the film term has not run.",
            next(iter(TERMS_DESIGN)): "The design with the teacher's terms in each row has not run.",
            next(iter(FILM_LATER_DESIGN)): "The terms design's control, without the terms, has not run."}


def _beside_design(rows: pd.DataFrame, twin: str, base: str, not_run: str, reps: int) -> str:
    """:func:`control_sentence` of design ``twin`` and design ``base`` on the fleet sizes and
    seeds both have (``not_run`` when ``twin`` has no rows)."""
    mine = rows[rows["design"] == twin]
    if len(mine) == 0:
        return not_run
    first = rows[rows["design"] == base]
    units = set(zip(mine["servers"], mine["seed"])) & set(zip(first["servers"], first["seed"]))
    both = pd.concat([first, mine], ignore_index=True)
    shared = both[[unit in units for unit in zip(both["servers"], both["seed"])]]
    if len(shared) == 0:
        return "The two designs share no fleet size and seed yet."
    seeds = sorted({s for _, s in units})
    return (f"On the seeds both designs have ({len(seeds)}: {', '.join(map(str, seeds))}): "
            + control_sentence(control_table(shared, reps=reps)))


#: The columns that identify a scored episode: two designs' rows with the same values are
#: the same computation when their settings agree (:func:`repeat_sentence`).
_EPISODE_KEYS = ("method", "servers", "seed", "regime")


def machines(root: Path, designs: Mapping[str, Path]) -> dict[str, list[str]]:
    """Design -> the machines its shipped cells were computed on (its ``PROVENANCE.json``;
    none where absent). Only the record is read, not the design's store."""
    out = {}
    for design, rel in designs.items():
        path = Path(root) / rel / PROVENANCE
        out[design] = sorted(json.loads(path.read_text()).get("machines") or {}) if path.is_file() else []
    return out


def repeat_sentence(rows: pd.DataFrame, first: str, second: str, hosts: Mapping[str, list[str]],
                    teacher: str = "lyapunov") -> str:
    """Where design ``second`` computed what design ``first`` did (``rows`` from
    :func:`load_designs`; the same method, fleet size, seed and scored regime, the caller
    knowing that their settings agree there): per method, how many of the scores agree in every
    number (CPU times left out: they are the host's) and, among those that do not, the
    largest relative move of the tracking error (``tracking_mae_rel``); with the machines each design ran on
    (``hosts``, from :func:`machines`). A sentence saying so when they share no score.

    Then, per clone-based method whose scores moved, the noise floor this gives the clone
    pilots (:func:`repeat_noise_table`): its mean tracking ratio to ``teacher`` under the
    training regime, the number the pilots' rules compare, in each design, and the move
    beside :data:`PILOT_TOLERANCE`."""
    keys = list(_EPISODE_KEYS)
    numbers = [c for c in rows.columns if c not in (*keys, "design", "role", "scale")
               and "cpu" not in c and pd.api.types.is_numeric_dtype(rows[c])]
    a = rows[rows["design"] == first].set_index(keys)
    b = rows[rows["design"] == second].set_index(keys)
    shared = a.index.intersection(b.index)
    if len(shared) == 0:
        return f"Design *{second}* repeats no score of design *{first}* yet."
    a, b = a.loc[shared, numbers], b.loc[shared, numbers]
    same = ((a == b) | (a.isna() & b.isna())).all(axis=1)
    move = (b["tracking_mae_rel"] / a["tracking_mae_rel"] - 1).abs()
    parts = []
    for method in dict.fromkeys(shared.get_level_values("method")):
        mine = shared.get_level_values("method") == method
        n, k = int(mine.sum()), int(same[mine].sum())
        text = f"{LABELS.get(method, method)}: {k} of {n} the same in every number"
        if k < n:
            text += f", the tracking error of the others moved by up to {move[mine & ~same.to_numpy()].max():.0%}"
        parts.append(text)
    where = "; ".join(f"*{d}* on {', '.join(hosts.get(d) or ['an unrecorded machine'])}" for d in (first, second))
    said = (f"Where design *{second}* repeats the computation of design *{first}* ({len(shared)} scores: the same "
            f"method, fleet size, seed and regime), {'; '.join(parts)}. They ran on {where}; a learner's training "
            "runs through the floating-point kernels each CPU selects (`ilets.numerics`), and a small difference "
            "there grows over training.")
    noise = repeat_noise_table(rows, first, second, teacher)
    floors = [f"for {LABELS.get(r['method'], r['method'])}, the mean tracking ratio to the teacher under the regime "
              f"it was trained in, over the {r['units']} (fleet size, seed) pairs both have, is {r['first']:.3f} in "
              f"*{first}* and {r['second']:.3f} in *{second}*, a move of {r['move']:.1%}"
              for r in noise[noise["move"] > 0].to_dict("records")]
    if floors:
        over = float(noise["move"].max()) > PILOT_TOLERANCE
        said += (f" The number the clone pilots' rules compare moves too: {'; '.join(floors)}, "
                 f"{'more' if over else 'less'} than the pilots' tolerance ({PILOT_TOLERANCE:.0%})"
                 + (": a pilot's choice by a smaller margin is inside what the CPU alone moves." if over else "."))
    return said


def pilot_noise_floor(rows: pd.DataFrame, first: str, second: str, teacher: str = "lyapunov") -> float | None:
    """The move of the frozen clone's (``bc``) mean tracking ratio between two designs that
    repeat one computation (:func:`repeat_noise_table`): the noise floor of the clone pilots,
    which read that clone only; None when the two share no such pair."""
    table = repeat_noise_table(rows, first, second, teacher)
    moves = table.loc[table["method"] == "bc", "move"]
    return float(moves.iloc[0]) if len(moves) else None


def repeat_noise_table(rows: pd.DataFrame, first: str, second: str, teacher: str = "lyapunov") -> pd.DataFrame:
    """Per clone-based method, on the (fleet size, seed) pairs of the training role that both
    designs hold for it and for ``teacher`` (``rows`` from :func:`load_designs`): the mean over
    those pairs of its tracking ratio to the teacher (``tracking_mae_rel`` over the teacher's,
    as the clone pilots' :func:`_pilot_rows` compute it) in ``first`` and in ``second``, and the
    relative move between the two means (``move``, relative to the smaller, as the pilots'
    tolerance is: :func:`_lowest_ratio`). What a repeated
    computation on another CPU measures: the noise floor of a pilot's rule, which compares such
    means within :data:`PILOT_TOLERANCE`. Pairs without a finite ratio in both are left out."""
    cols = ["method", "units", "first", "second", "move"]
    t = rows[rows["role"] == "train"]
    ratio = {}
    for design in (first, second):
        d = t[t["design"] == design]
        both = d[d["method"] != teacher].merge(d[d["method"] == teacher], on=["servers", "seed", "regime"],
                                               suffixes=("", "_teacher"))
        ratio[design] = both.assign(track_ratio=both["tracking_mae_rel"] / both["tracking_mae_rel_teacher"]
                                    ).set_index(["method", "servers", "seed"])["track_ratio"]
    a, b = ratio[first], ratio[second]
    shared = a.index.intersection(b.index)
    a, b = a.loc[shared], b.loc[shared]
    keep = np.isfinite(a.to_numpy()) & np.isfinite(b.to_numpy())
    a, b = a[keep], b[keep]
    out = []
    for method in [m for m in CLONES if m in set(a.index.get_level_values("method"))]:
        x, y = a.xs(method, level="method"), b.xs(method, level="method")
        out.append({"method": method, "units": len(x), "first": float(x.mean()), "second": float(y.mean()),
                    "move": abs(float(y.mean()) - float(x.mean())) / min(float(x.mean()), float(y.mean()))})
    return pd.DataFrame(out, columns=cols)


#: The clone-transfer probe's shipped record (:mod:`ilets.study.clone_transfer`).
TRANSFER_RECORD = Path("shipped") / "gridcommand-clone-transfer.json"


def load_transfer(root: Path) -> pd.DataFrame:
    """The rows of the shipped clone-transfer record under ``root`` (empty when absent)."""
    path = Path(root) / TRANSFER_RECORD
    if not path.is_file():
        return pd.DataFrame(columns=["profile", "servers", "seed", "episode", "agreement", "event_agreement",
                                     "teacher_deferrals", "clone_deferrals", "deferral_recall"])
    return pd.DataFrame(json.loads(path.read_text())["rows"])


def transfer_sentence(rows: pd.DataFrame) -> str:
    """The clone-transfer probe in words: per profile, fleet size and seed, the clone's
    agreement with its teacher (overall, during events), what its disagreements cost the
    teacher (where recorded) and its deferral recall on the teacher's states of its training
    episode, then of the scored one."""
    if len(rows) == 0:
        return "The clone-transfer probe has not run."

    def said(r: dict) -> str:
        recall = ("the teacher did not defer" if pd.isna(r["deferral_recall"]) else
                  f"it also deferred {r['deferral_recall']:.0%} of the teacher's {int(r['teacher_deferrals'])} deferrals")
        events = "" if pd.isna(r["event_agreement"]) else f", {r['event_agreement']:.0%} during events"
        # rows recorded before the probe weighed disagreements by the teacher's scores lack them
        cost = ("" if pd.isna(r.get("regret_median", float("nan"))) else
                f", its disagreements costing the teacher a median {r['regret_median']:.1%} of the median allowed "
                f"action's margin over its choice ({r['near_tie_share']:.0%} of them within {r['near_tie']:.0%})")
        return f"agreement {r['agreement']:.0%}{events}{cost}, {recall}"

    parts = []
    for (profile, servers, seed), g in rows.groupby(["profile", "servers", "seed"], sort=False):
        by = {r["episode"]: r for r in g.to_dict("records")}
        if set(by) != {"training", "scored"}:
            continue
        parts.append(f"the clone of {profile} at {int(servers)} servers, seed {int(seed)}: on its first training episode "
                     f"{said(by['training'])}; on the scored episode {said(by['scored'])}")
    if not parts:
        return "The clone-transfer probe has no seed with both episodes."
    return "On the teacher's own states (frozen, greedy): " + "; ".join(parts) + "."


def deferral_gap_table(rows: pd.DataFrame, teacher: str = "lyapunov") -> pd.DataFrame:
    """Per fleet size and seed of one design's rows (:func:`load_designs`, or a grid's results
    table), under the training regime: the tasks the teacher and its frozen clone (``bc``)
    deferred in the episode and their tracking errors, with the clone's excess
    (``track_excess``: its error over the teacher's, minus 1; NaN where the teacher's is not
    positive, an episode without an event) and whether that excess is over
    :data:`TRACKING_BAR`. Seeds where either cell is missing are left out."""
    cols = ["servers", "seed", "teacher_deferrals", "clone_deferrals", "track_teacher", "track_clone",
            "track_excess", "over_bar"]
    t = rows[rows["role"] == "train"]
    both = t[t["method"] == "bc"].merge(t[t["method"] == teacher], on=["servers", "seed"], suffixes=("", "_teacher"))
    if len(both) == 0:
        return pd.DataFrame(columns=cols)
    both = both.sort_values(["servers", "seed"])
    teacher_track = both["tracking_mae_rel_teacher"]
    excess = (both["tracking_mae_rel"] / teacher_track - 1.0).where(teacher_track > 0)
    return pd.DataFrame({"servers": both["servers"], "seed": both["seed"],
                         "teacher_deferrals": both["deferrals_teacher"].astype(int),
                         "clone_deferrals": both["deferrals"].astype(int), "track_teacher": teacher_track,
                         "track_clone": both["tracking_mae_rel"], "track_excess": excess,
                         "over_bar": excess > TRACKING_BAR}, columns=cols).reset_index(drop=True)


def deferral_gap_sentence(table: pd.DataFrame, teacher: str = "lyapunov") -> str:
    """:func:`deferral_gap_table` in prose, per fleet size: the seeds on which the frozen
    clone tracks more than :data:`TRACKING_BAR` worse than its teacher, the deferrals of both
    there and elsewhere (medians), and the rank correlation (Spearman, over seeds) between
    the deferrals the clone leaves out (the teacher's minus its own) and its excess error.
    Seeds whose episode held no tracking error are named apart. Whether deferring is what the
    clone lacks is read from these numbers, not assumed."""
    from scipy.stats import spearmanr

    who = LABELS.get(teacher, teacher)
    if len(table) == 0:
        return f"No seed of this design has both {who} and its frozen clone."
    parts = []
    for servers, g in table.groupby("servers"):
        unscored = g[g["track_excess"].isna()]
        g = g.dropna(subset=["track_excess"])
        over, rest = g[g["over_bar"]], g[~g["over_bar"]]
        n = len(g)
        said = (f"at {int(servers)} servers the frozen clone tracked more than {TRACKING_BAR:.0%} worse than {who} "
                f"on {f'{len(over)} of' if len(over) else 'none of'} {n} seed{'s' if n != 1 else ''}")
        if len(over):
            said += (f" ({', '.join(str(s) for s in over['seed'])}; there {who} deferred "
                     f"{', '.join(str(k) for k in over['teacher_deferrals'])} tasks and the clone "
                     f"{', '.join(str(k) for k in over['clone_deferrals'])})")
        if len(rest):
            said += (f"; on {'the other seeds' if len(over) else 'them'} {who} deferred a median of "
                     f"{rest['teacher_deferrals'].median():g} tasks, the clone {rest['clone_deferrals'].median():g}")
        left_out = g["teacher_deferrals"] - g["clone_deferrals"]
        if n >= 3 and left_out.nunique() > 1 and g["track_excess"].nunique() > 1:
            rho = float(spearmanr(left_out, g["track_excess"]).statistic)
            said += (f"; over the seeds, the deferrals the clone leaves out and its excess tracking error have a "
                     f"rank correlation of {rho:+.2f}")
        if len(unscored):
            said += (f" (seed{'s' if len(unscored) > 1 else ''} {', '.join(str(s) for s in unscored['seed'])}: "
                     "no tracking error, the episode held no event)")
        parts.append(said)
    return "Per episode, under the training regime, " + "; ".join(parts) + "."


#: The clone pilots, each a knob of :class:`ilets.gridcommand.pipeline.PipelineConfig` with its
#: candidates, every candidate a grid shipped under ``shipped/gridcommand-clone-pilot/<prefix><n>``
#: (profiles ``gridcommand-grid-clone-pilot-<prefix><n>``): how many times a demonstrated
#: deferral is shown (``defer_repeat``; the scenario with the teacher's queues shown), the
#: BC budget (``bc_epochs``; the same scenario with the sleep lever on), and the DAgger rounds
#: after that budget (``dagger_rounds``; at 50 servers only, the one fleet size where the
#: DAgger design's clone missed the bar).
PILOT_REPEATS = (1, 4, 16)
PILOT_EPOCHS = (10, 30, 100, 300)
#: Candidates added by widening (a choice at the top of the range adds one three times larger).
PILOT_EPOCHS_WIDENED = (900,)
PILOT_ROUNDS = (1, 2, 4)
#: Widening the rounds doubles them (a round costs a whole relabelled episode and a BC pass).
PILOT_ROUNDS_WIDENED = (8, 16)
#: Times each event decision is shown to BC (``event_repeat``; the thermostat-taught design,
#: at 50 servers only: a clone at 200 servers costs twice as much).
PILOT_EVENT_REPEATS = (1, 4, 16)
#: Widening the event repeats multiplies the largest by four.
PILOT_EVENT_REPEATS_WIDENED = (64,)
#: Times each demonstrated sleep action is shown to BC (``sleep_repeat``; the sleep head's
#: design, at 50 servers only, where its clone slept least against its teacher).
PILOT_SLEEP_REPEATS = (1, 4, 16)
#: Widening the sleep repeats multiplies the largest by four.
PILOT_SLEEP_REPEATS_WIDENED = (64,)
#: Times each demonstrated deferral is shown to BC in the energy-ranked design (the knob
#: ``defer_repeat`` again, its second pilot: that design, pilot seeds 100-105, 50 servers, where
#: the teacher defers); widening multiplies the largest by four.
PILOT_DEFER_REPEATS = (1, 4, 16)
PILOT_DEFER_REPEATS_WIDENED = (64,)
#: Training episodes the clone learns from in the energy-ranked design (``train_episodes``;
#: pilot seeds 100-105, 50 servers, as the second deferral pilot; candidate 1 is that design
#: as it is, the same cells as that pilot's candidate 1); widening multiplies the largest by four.
PILOT_TRAIN_EPISODES = (1, 4, 16)
PILOT_TRAIN_EPISODES_WIDENED = (64,)
#: Training episodes the clone learns from when each seed has its own
#: (``train_episodes`` with ``train_episode_stride`` equal to it; the 16-episode design, pilot
#: seeds 100-105, 50 servers): 16, that design with its own workloads
#: (:data:`OWN_WORKLOADS_DESIGN`), and 64; widening multiplies the largest by four. 1,024 counts
#: BC's steps exactly (``pipeline.bc_step_budget``): in whole epochs it would take several times
#: the meant steps (:func:`ilets.gridcommand.pipeline.whole_epoch_step_shares`).
PILOT_TRAIN_EPISODES_OWN = (16, 64)
PILOT_TRAIN_EPISODES_OWN_WIDENED = (256, 1024)
#: Days of commands in each training episode of the per-server days family's clone
#: (``train_days``; pilot seeds 100-105, 50 servers, scored on fourteen-day episodes): 14, the
#: clone the family was first run with (one fourteen-day episode), and 1, the 16-episode
#: design's clone (16 one-day episodes). Two designs, not a range: nothing widens.
PILOT_TRAIN_DAYS = (1, 14)
#: The candidate of :data:`PILOT_TRAIN_DAYS` the per-server days family was first run with.
TRAIN_DAYS_AS_RUN = 14
#: Each widening pilot's candidates past its first range (run only when the rule picks the
#: largest of that range).
PILOT_WIDENED = {"bc_epochs": PILOT_EPOCHS_WIDENED, "dagger_rounds": PILOT_ROUNDS_WIDENED,
                 "event_repeat": PILOT_EVENT_REPEATS_WIDENED, "sleep_repeat": PILOT_SLEEP_REPEATS_WIDENED,
                 "defer_repeat_energy": PILOT_DEFER_REPEATS_WIDENED, "train_episodes": PILOT_TRAIN_EPISODES_WIDENED,
                 "train_episodes_own": PILOT_TRAIN_EPISODES_OWN_WIDENED}
#: Each pilot by name (the knob it sets, but ``defer_repeat_energy``, the second pilot of
#: ``defer_repeat``): its candidates, its first range then :data:`PILOT_WIDENED`, and the
#: prefix of its folders.
PILOTS = {knob: (first + PILOT_WIDENED.get(knob, ()), prefix) for knob, (first, prefix) in {
    "defer_repeat": (PILOT_REPEATS, "r"), "bc_epochs": (PILOT_EPOCHS, "e"), "dagger_rounds": (PILOT_ROUNDS, "d"),
    "event_repeat": (PILOT_EVENT_REPEATS, "v"), "sleep_repeat": (PILOT_SLEEP_REPEATS, "s"),
    "defer_repeat_energy": (PILOT_DEFER_REPEATS, "w"), "train_episodes": (PILOT_TRAIN_EPISODES, "t"),
    "train_days": (PILOT_TRAIN_DAYS, "y"), "train_episodes_own": (PILOT_TRAIN_EPISODES_OWN, "o")}.items()}
#: The knob of :class:`ilets.gridcommand.pipeline.PipelineConfig` each pilot sets (its own name
#: where not listed).
PILOT_KNOBS = {"defer_repeat_energy": "defer_repeat", "train_episodes_own": "train_episodes"}
#: Each pilot's teacher (Lyapunov where not named).
PILOT_TEACHERS = {"event_repeat": "thermostat"}
PILOT_FOLDER = Path("shipped") / "gridcommand-clone-pilot"
#: A candidate this close (relative) to the best ratio, with a smaller value, is taken instead.
PILOT_TOLERANCE = 0.02
#: How each pilot's candidates are named in prose and tables.
_PILOT_WORDS = {"defer_repeat": ("deferral shown (times)", lambda n: f"{n} time{'s' if n > 1 else ''}"),
                "bc_epochs": ("BC epochs", lambda n: f"{n} epochs"),
                "dagger_rounds": ("DAgger rounds", lambda n: f"{n} round{'s' if n > 1 else ''}"),
                "event_repeat": ("event decisions shown (times)", lambda n: "once" if n == 1 else f"{n} times"),
                "sleep_repeat": ("sleep actions shown (times)", lambda n: "once" if n == 1 else f"{n} times"),
                "defer_repeat_energy": ("deferrals shown, energy-ranked design (times)",
                                        lambda n: "once" if n == 1 else f"{n} times"),
                "train_episodes": ("training episodes", lambda n: f"{n} episode{'s' if n > 1 else ''}"),
                "train_days": ("days per training episode",
                               lambda n: f"{n}-day training episode{'s' if n == 1 else ''}"),
                "train_episodes_own": ("training episodes, each seed's own", lambda n: f"{n} episodes")}


def design_profile(folder: Path) -> str:
    """The grid profile that fills a design's shipped folder: ``gridcommand-grid-`` and the
    folder's name less its ``gridcommand-`` (every design after the first two is named so)."""
    return "gridcommand-grid-" + Path(folder).name.removeprefix("gridcommand-")


def designs_status(root: Path, designs: Mapping[str, Path]) -> str:
    """:func:`ilets.report.grid_command.status_sentence` of each design's shipped grid, named,
    with the profile that fills it (:func:`design_profile`) where it is missing."""
    return " ".join(f"Design *{design}*: "
                    + status_sentence(load_results(Path(root) / rel), Path(root) / rel, design_profile(rel))
                    for design, rel in designs.items())


def clone_pilot_table(root: Path, knob: str = "defer_repeat") -> pd.DataFrame:
    """Per candidate of the ``knob`` pilot (:data:`PILOTS`), fleet size and pilot seed, under the
    training regime: the frozen clone's tracking error, miss rate and deferrals over its
    teacher's (:data:`PILOT_TEACHERS`) on the same seed (``track_ratio`` etc.), the servers
    each put to sleep (NaN without the sleep lever), and, where the
    clone recorded them, its agreement with the teacher on the decisions made during events,
    on the teacher's states after BC (``event_agreement``) and on its own in the first DAgger
    round (``own_event_agreement``), and the share of the meant BC steps its first BC and its
    first DAgger round took (``step_share``, ``dagger_step_share``; NaN where not recorded).
    Empty when no candidate's grid is there.

    Whole candidates only: a candidate whose grid is shipped in part (a long grid carried from
    one session to the next) is left out, since a rule over some of its seeds would compare
    means over other seeds than the rest; ``table.attrs["in_part"]`` keeps it, candidate ->
    (cells done, cells planned), for :func:`clone_pilot_sentence` to name."""
    grids: list[tuple[int, Path, GridResults | None]] = []
    in_part = {}
    for n in PILOTS[knob][0]:
        folder = _candidate_folder(root, knob, n)
        results = load_results(folder)
        if results is None:
            continue
        progress = _in_part(results)
        if progress is None:
            grids.append((n, folder, results))
        else:
            in_part[n] = progress
    table = _pilot_rows(grids, knob, PILOT_TEACHERS.get(knob, "lyapunov"))
    table.attrs["in_part"] = in_part  # pandas' own place for a frame's metadata
    return table


def _in_part(results: GridResults) -> tuple[int, int] | None:
    """(cells done, cells planned) of a grid shipped in part; None when it is whole or its plan
    is not shipped. A cell that keeps failing keeps its grid in part."""
    done, planned = cell_progress(results)
    return (done, planned) if planned is not None and done < planned else None


def candidate_profile(knob: str, n: int) -> str:
    """The grid profile of candidate ``n`` of ``knob``'s pilot (:data:`PILOTS`)."""
    return f"gridcommand-grid-clone-pilot-{PILOTS[knob][1]}{n}"


def _candidate_folder(root: Path, knob: str, n: int) -> Path:
    """Where candidate ``n`` of ``knob``'s pilot is shipped under ``root``."""
    return Path(root) / PILOT_FOLDER / f"{PILOTS[knob][1]}{n}"


def _pilot_rows(grids: list[tuple[int, Path, GridResults | None]], knob: str, teacher: str) -> pd.DataFrame:
    """:func:`clone_pilot_table`'s rows of the grids ``(candidate, folder, its loaded results)``
    that are there (results None: not there)."""
    rows = []
    for n, folder, results in grids:
        if results is None:
            continue
        t = results.table[results.table["role"] == "train"]
        key = ["servers", "seed"]
        both = t[t["method"] == "bc"].merge(t[t["method"] == teacher], on=key, suffixes=("", "_teacher"))
        records = list(done_records(folder))
        trained = {(r["servers"], r["seed"]): r["train"] for r in records if r["method"] == "bc"}
        # servers put to sleep under the training regime, where recorded (the store keeps none)
        sleeps = {(r["servers"], r["seed"], r["method"]): r["scores"]["train"]["sleeps"] for r in records
                  if "sleeps" in r.get("scores", {}).get("train", {})}
        for r in both.to_dict("records"):
            info = trained.get((r["servers"], r["seed"]), {})
            rows.append({knob: n, "servers": r["servers"], "seed": r["seed"],
                         "track_ratio": r["tracking_mae_rel"] / r["tracking_mae_rel_teacher"],
                         "miss_ratio": (1 - r["success_rate"]) / max(1 - r["success_rate_teacher"], 1e-12),
                         "deferrals": r["deferrals"], "deferrals_teacher": r["deferrals_teacher"],
                         "event_agreement": info.get("bc_agreement_after_event", np.nan),
                         "own_event_agreement": info.get("dagger_agreement_event[0]", np.nan),
                         **{k: sleeps.get((r["servers"], r["seed"], m), np.nan)
                            for k, m in (("sleeps", "bc"), ("sleeps_teacher", teacher))},
                         "step_share": info.get("bc_step_share", np.nan),
                         "dagger_step_share": info.get("bc_step_share[0]", np.nan)})
    return pd.DataFrame(rows, columns=[knob, "servers", "seed", "track_ratio", "miss_ratio", "deferrals",
                                       "deferrals_teacher", "event_agreement", "own_event_agreement", "sleeps",
                                       "sleeps_teacher", "step_share", "dagger_step_share"])


#: Pilot candidates also run with BC's steps counted exactly (``pipeline.bc_step_budget``), beside
#: the candidate as its pilot ran it: knob -> (candidate, folder under :data:`PILOT_FOLDER`). Not
#: candidates: no rule reads them; they measure how much of a candidate's ratio its budget made.
STEP_BUDGET_SENSITIVITY = {"train_episodes_own": (256, "o256-exact")}
#: The meant BC steps of a clone that learns from more than its training episode, in words.
_MEANT_STEPS = "the steps BC takes on the first training episode alone"


def exact_step_candidates(knob: str = "train_episodes_own") -> list[int]:
    """The candidates of ``knob``'s pilot whose grid profile counts BC's steps exactly
    (``pipeline.bc_step_budget``)."""
    from ilets.study.command_scenario import load_profile

    return [n for n in PILOTS[knob][0] if load_profile(candidate_profile(knob, n)).pipeline.bc_step_budget == "exact"]


def step_budget_table(root: Path, knob: str = "train_episodes_own") -> pd.DataFrame:
    """:func:`clone_pilot_table` rows of ``knob``'s candidate in :data:`STEP_BUDGET_SENSITIVITY`,
    as its pilot ran it (``budget`` ``whole_epochs``) and with its steps counted exactly
    (``exact``), on the seeds both have; empty when either is not there."""
    n, exact_folder = STEP_BUDGET_SENSITIVITY[knob]
    teacher = PILOT_TEACHERS.get(knob, "lyapunov")
    folders = (_candidate_folder(root, knob, n), Path(root) / PILOT_FOLDER / exact_folder)
    as_run, exact = (_pilot_rows([(n, f, load_results(f))], knob, teacher) for f in folders)
    units = set(zip(as_run["servers"], as_run["seed"])) & set(zip(exact["servers"], exact["seed"]))
    # records, not concat: the run as its pilot ran it recorded no shares (all-NaN columns)
    both = pd.DataFrame([*as_run.assign(budget="whole_epochs").to_dict("records"),
                         *exact.assign(budget="exact").to_dict("records")], columns=[*as_run.columns, "budget"])
    return both[[u in units for u in zip(both["servers"], both["seed"])]].reset_index(drop=True)


def step_budget_sentence(table: pd.DataFrame, noise: float | None = None) -> str:
    """What counting BC's steps exactly changed (:func:`step_budget_table`): the candidate's mean
    tracking and miss ratios as its pilot ran it and exactly, the steps each took (recorded
    shares, where recorded), and whether the move passes the pilots' tolerance; with ``noise``
    (the move of such a mean that a CPU of another vendor alone made, :func:`pilot_noise_floor`),
    whether it passes that too."""
    if len(table) == 0:
        return ""
    knob = _knob(table)
    n = int(table[knob].iloc[0])
    g = table.groupby("budget")
    track, miss = g["track_ratio"].mean(), g["miss_ratio"].mean()
    move = abs(track["exact"] - track["whole_epochs"]) / min(track)
    shares = table[table["budget"] == "exact"][["step_share", "dagger_step_share"]].mean()
    return (f"Counted exactly ({shares['step_share']:.2f} and {shares['dagger_step_share']:.2f} times {_MEANT_STEPS} "
            f"in the first BC and the DAgger round), the {_PILOT_WORDS[knob][1](n)} clone tracked at "
            f"{track['exact']:.2f}x its teacher's error (miss rate {miss['exact']:.2f}x) on pilot seeds "
            f"{', '.join(map(str, sorted(table['seed'].unique())))}, against {track['whole_epochs']:.2f}x "
            f"({miss['whole_epochs']:.2f}x) in whole epochs as its pilot ran it: a move of {move:.0%}, "
            f"{'more' if move > PILOT_TOLERANCE else 'less'} than the pilots' tolerance ({PILOT_TOLERANCE:.0%})"
            + ("." if noise is None else f", and {'more' if move > noise else 'less'} than the {noise:.0%} that a "
               "CPU of another vendor alone moved such a mean (below)."))


def _knob(table: pd.DataFrame) -> str:
    """Which pilot a :func:`clone_pilot_table` is (its first column)."""
    return str(table.columns[0])


def _lowest_ratio(means: pd.Series) -> int:
    """The candidate with the lowest mean ratio, or a smaller one within :data:`PILOT_TOLERANCE`."""
    best = float(means.min())
    return int(min(n for n, v in means.items() if v <= best * (1 + PILOT_TOLERANCE)))


def choose_defer_repeat(table: pd.DataFrame) -> int | None:
    """The repeat pilot's rule, written before any candidate ran: the repeat whose mean
    ``track_ratio`` (over pilot seeds and fleet sizes) is lowest; a smaller repeat whose mean
    is within :data:`PILOT_TOLERANCE` (relative) of that best is taken instead. None: no
    candidate ran."""
    if len(table) == 0:
        return None
    return _lowest_ratio(table.groupby("defer_repeat")["track_ratio"].mean())


def choose_bc_epochs(table: pd.DataFrame) -> int | None:
    """The BC-budget pilot's rule, written before any candidate ran: among the candidates
    whose mean miss ratio (over pilot seeds and fleet sizes) is at most :data:`MISS_BAR` (all
    of them if none is), the one with the lowest mean ``track_ratio``; fewer epochs within
    :data:`PILOT_TOLERANCE` (relative) of that best are taken instead (a budget no larger than
    needed). None: no candidate ran. A choice at the top of :data:`PILOT_EPOCHS` widens the
    range (:func:`pilot_widens`)."""
    return _miss_bar_then_lowest_ratio(table, "bc_epochs")


def choose_dagger_rounds(table: pd.DataFrame) -> int | None:
    """The DAgger-rounds pilot's rule, written before any candidate ran: the BC-budget rule
    (:func:`choose_bc_epochs`) over the rounds: among the candidates whose mean miss ratio is
    at most :data:`MISS_BAR` (all if none is), the lowest mean ``track_ratio``, fewer rounds
    within :data:`PILOT_TOLERANCE` taken instead; a choice at the top of
    :data:`PILOT_ROUNDS` widens the range (:func:`pilot_widens`)."""
    return _miss_bar_then_lowest_ratio(table, "dagger_rounds")


def choose_event_repeat(table: pd.DataFrame) -> int | None:
    """The event-weighting pilot's rule, written before any candidate ran: the BC-budget rule
    (:func:`choose_bc_epochs`) over the repeats: among the candidates whose mean miss ratio is
    at most :data:`MISS_BAR` (all if none is), the lowest mean ``track_ratio``, a smaller
    repeat within :data:`PILOT_TOLERANCE` taken instead; a choice at the top of
    :data:`PILOT_EVENT_REPEATS` widens the range (:func:`pilot_widens`)."""
    return _miss_bar_then_lowest_ratio(table, "event_repeat")


def choose_sleep_repeat(table: pd.DataFrame) -> int | None:
    """The sleep-weighting pilot's rule, written before any candidate ran: the event pilot's
    (:func:`choose_event_repeat`) over how often a sleep action is shown, widening at the top
    of :data:`PILOT_SLEEP_REPEATS`."""
    return _miss_bar_then_lowest_ratio(table, "sleep_repeat")


def choose_defer_repeat_energy(table: pd.DataFrame) -> int | None:
    """The second deferral pilot's rule (the energy-ranked design), written before any
    candidate ran: the budget pilot's (:func:`choose_bc_epochs`) over how often a deferral is
    shown, widening at the top of :data:`PILOT_DEFER_REPEATS`. (The first deferral pilot's
    rule, :func:`choose_defer_repeat`, predates the miss bar and widening in the rules.)"""
    return _miss_bar_then_lowest_ratio(table, "defer_repeat_energy")


def choose_train_episodes(table: pd.DataFrame) -> int | None:
    """The training-episodes pilot's rule (the energy-ranked design), written and committed
    before any candidate ran: the budget pilot's (:func:`choose_bc_epochs`) over how many
    episodes the clone learns from: among the candidates whose mean miss ratio is at most
    :data:`MISS_BAR` (all if none is), the lowest mean ``track_ratio``, fewer episodes within
    :data:`PILOT_TOLERANCE` taken instead (they cost less), widening at the top of
    :data:`PILOT_TRAIN_EPISODES`."""
    return _miss_bar_then_lowest_ratio(table, "train_episodes")


def choose_train_days(table: pd.DataFrame) -> int | None:
    """The training-window pilot's rule (the per-server days family), written and committed
    before any candidate ran: among the candidates whose mean miss ratio is at most
    :data:`MISS_BAR` (both if neither is), the lower mean ``track_ratio``; the family's own
    design (:data:`TRAIN_DAYS_AS_RUN`) is kept when it is within :data:`PILOT_TOLERANCE`
    (relative) of that best, so the family changes only for a gain. None: no candidate ran."""
    if len(table) == 0:
        return None
    track = _within_miss_bar(table, "train_days")
    best = float(track.min())
    if TRAIN_DAYS_AS_RUN in track.index and track[TRAIN_DAYS_AS_RUN] <= best * (1 + PILOT_TOLERANCE):
        return TRAIN_DAYS_AS_RUN
    return int(track.idxmin())


def choose_train_episodes_own(table: pd.DataFrame) -> int | None:
    """The own-workloads training-episodes pilot's rule, written and committed before any
    candidate ran: the first training-episodes pilot's (:func:`choose_train_episodes`) over
    :data:`PILOT_TRAIN_EPISODES_OWN`: among the candidates whose mean miss ratio is at most
    :data:`MISS_BAR` (all if none is), the lowest mean ``track_ratio``, fewer episodes within
    :data:`PILOT_TOLERANCE` taken instead (they cost less), widening at the top."""
    return _miss_bar_then_lowest_ratio(table, "train_episodes_own")


def workload_draw_sentence(shared: pd.DataFrame, own: pd.DataFrame) -> str:
    """The training-episodes pilot run twice on the same pilot seeds, its clones' workloads
    shared between neighbouring seeds (``shared``, :func:`clone_pilot_table` of
    ``train_episodes``) and each seed's own (``own``, of ``train_episodes_own``): per candidate
    both ran, the mean tracking ratios over the (fleet size, seed) pairs both have, side by
    side, and the largest move between them (relative to the smaller) beside the pilots'
    tolerance, since a move larger than the tolerance can change a rule's choice."""
    if len(shared) == 0 or len(own) == 0:
        return ""
    units = set(zip(shared["servers"], shared["seed"])) & set(zip(own["servers"], own["seed"]))

    def paired(t: pd.DataFrame, knob: str) -> pd.Series:
        keep = [unit in units for unit in zip(t["servers"], t["seed"])]
        return t[keep].groupby(knob)["track_ratio"].mean()

    a, b = paired(shared, "train_episodes"), paired(own, "train_episodes_own")
    both = sorted(set(a.index) & set(b.index))
    if not both:
        return ""
    said = "; ".join(f"{n} episodes {a[n]:.2f}x shared, {b[n]:.2f}x own" for n in both)
    move = max(abs(a[n] - b[n]) / min(a[n], b[n]) for n in both)  # relative, as the tolerance is
    return (f"On the same pilot seeds, which workloads the clones learned from moved their mean tracking ratio ({said}) "
            f"by up to {move:.0%}, {'more' if move > PILOT_TOLERANCE else 'less'} than the pilots' tolerance "
            f"({PILOT_TOLERANCE:.0%}).")


def _within_miss_bar(table: pd.DataFrame, knob: str) -> pd.Series:
    """Mean ``track_ratio`` per candidate, of those whose mean miss ratio is at most
    :data:`MISS_BAR` (all of them if none is)."""
    g = table.groupby(knob)
    track, miss = g["track_ratio"].mean(), g["miss_ratio"].mean()
    return track[miss <= MISS_BAR] if (miss <= MISS_BAR).any() else track


def _miss_bar_then_lowest_ratio(table: pd.DataFrame, knob: str) -> int | None:
    if len(table) == 0:
        return None
    return _lowest_ratio(_within_miss_bar(table, knob))


#: Each pilot's rule.
CHOOSE = {"defer_repeat": choose_defer_repeat, "bc_epochs": choose_bc_epochs, "dagger_rounds": choose_dagger_rounds,
          "event_repeat": choose_event_repeat, "sleep_repeat": choose_sleep_repeat,
          "defer_repeat_energy": choose_defer_repeat_energy, "train_episodes": choose_train_episodes,
          "train_days": choose_train_days, "train_episodes_own": choose_train_episodes_own}
#: The pilots whose range widens when the rule picks its largest candidate (the repeat
#: pilot's range was fixed before widening was part of the rules).
WIDENING = tuple(PILOT_WIDENED)
#: The pilots whose rule reads the miss bar (their sentence gives the chosen miss rate).
MISS_BAR_PILOTS = (*WIDENING, "train_days")


def pilot_widens(table: pd.DataFrame) -> bool:
    """Whether a widening pilot (:data:`WIDENING`) chose the largest candidate it ran, so that
    its range must be widened before the choice stands."""
    if len(table) == 0:
        return False
    knob = _knob(table)
    return knob in WIDENING and CHOOSE[knob](table) == max(table[knob])


def standing_sentence(table: pd.DataFrame, used: int, unit: str = "rounds") -> str:
    """Whether the value a design used (``used``, counted in ``unit``) is its pilot's standing
    choice (the pilot of :func:`clone_pilot_table` ``table``): the rule's choice, over a range
    it does not still need to widen (a pilot of a few designs, not a range, never widens)."""
    chosen = CHOOSE[_knob(table)](table) if len(table.columns) else None
    if chosen is None:
        return f"the pilot has not run, so the design's {unit} are not its choice."
    if pilot_widens(table):
        return (f"the pilot's rule now keeps {chosen}, its largest candidate, so its range is to be widened before "
                f"the choice stands: the design's {used} {unit} are provisional.")
    widened = set(table[_knob(table)]) & set(PILOT_WIDENED.get(_knob(table), ()))
    over = ", over its widened range," if widened else ""
    return (f"the pilot's rule{over} keeps {chosen}, "
            + ("the design's own." if chosen == used else f"not the design's {used}: the design is not its choice."))


def clone_pilot_display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`clone_pilot_table` by candidate and fleet size, for display, the choice marked."""
    if len(table) == 0:
        return pd.DataFrame()
    knob = _knob(table)
    chosen = CHOOSE[knob](table)
    g = table.groupby([knob, "servers"]).agg(
        seeds=("seed", "nunique"), track=("track_ratio", "mean"), miss=("miss_ratio", "mean"),
        defer=("deferrals", "mean"), defer_teacher=("deferrals_teacher", "mean")).reset_index()
    overall = table.groupby(knob)["track_ratio"].mean()
    shown = pd.DataFrame({
        _PILOT_WORDS[knob][0]: [f"{n}{' (chosen)' if n == chosen else ''}" for n in g[knob]],
        "servers": g["servers"], "tracking x teacher's": g["track"].map(lambda v: f"{v:.2f}"),
        "mean over fleets": g[knob].map(lambda n: f"{overall[n]:.3f}"),
        "miss rate x teacher's": g["miss"].map(lambda v: f"{v:.2f}"),
        "deferrals (clone / teacher)": [f"{a:.0f} / {b:.0f}" for a, b in zip(g["defer"], g["defer_teacher"])],
        "pilot seeds": g["seeds"],
    })
    if "sleeps" in table and table["sleeps"].notna().any():  # scenarios with the sleep lever
        sleeps = table.groupby([knob, "servers"])[["sleeps", "sleeps_teacher"]].mean().reset_index()
        shown["servers put to sleep (clone / teacher)"] = [
            f"{a:.1f} / {b:.1f}" for a, b in zip(sleeps["sleeps"], sleeps["sleeps_teacher"])]
    if "event_agreement" in table and table["event_agreement"].notna().any():  # recorded by the later pilots
        agree = table.groupby([knob, "servers"])[["event_agreement", "own_event_agreement"]].mean().reset_index()
        shown["agreement during events (teacher's / own states)"] = [
            f"{a:.0%} / {b:.0%}" for a, b in zip(agree["event_agreement"], agree["own_event_agreement"])]
    return shown


def clone_pilot_sentence(table: pd.DataFrame) -> str:
    """What a clone pilot found and chose (:func:`clone_pilot_table`, :data:`CHOOSE`)."""
    knob = _knob(table) if len(table.columns) else "defer_repeat"
    chosen = CHOOSE[knob](table)
    in_part = table.attrs.get("in_part", {})
    if chosen is None:
        pilot = "The clone pilot" + ("" if knob == "defer_repeat" else f" over {_PILOT_WORDS[knob][0]}")
        return f"{pilot} has no whole candidate yet. {_in_part_said(in_part)}" if in_part else f"{pilot} has not run."
    means = table.groupby(knob)["track_ratio"].mean()
    misses = table.groupby(knob)["miss_ratio"].mean()
    seeds = ", ".join(str(s) for s in sorted(table["seed"].unique()))
    fleets = " and ".join(str(s) for s in sorted(table["servers"].unique()))
    name = _PILOT_WORDS[knob][1]
    said = ", ".join(f"{means[n]:.2f}x ({name(n)})" for n in sorted(means.index))
    text = (f"On pilot seeds {seeds} at {fleets} servers, the frozen greedy clone tracked at {said} its teacher's "
            f"error (mean over seeds and fleet sizes); the rule kept {chosen}.")
    if knob in MISS_BAR_PILOTS:
        text = text[:-1] + (f", whose miss rate is {misses[chosen]:.2f} times the teacher's"
                            + (" (its largest candidate: the range is to be widened before the choice stands)."
                               if pilot_widens(table) else "."))
    return f"{text} {_in_part_said(in_part)}" if in_part else text


def _in_part_said(in_part: Mapping[int, tuple[int, int]]) -> str:
    """The candidates of a pilot shipped in part (:func:`clone_pilot_table`), in words."""
    said = "; ".join(f"candidate {n:,}'s grid is shipped in part ({done} of {planned} cells)"
                     for n, (done, planned) in sorted(in_part.items()))
    return (f"{said[0].upper()}{said[1:]}: the rule reads a candidate once all its cells are in, so it does not "
            f"read {'this one' if len(in_part) == 1 else 'these'} yet.")


#: The designs whose grids score every method on a held-out episode (``pipeline.heldout``), in
#: :data:`DESIGNS` order; the chapter reads the last one shipped (:func:`heldout_design`): the
#: 16-episode design, whose clone meets the bar at both fleet sizes. The two deferral designs
#: between it and the energy-ranked one are not listed: both are shipped at 50 servers only.
HELDOUT_DESIGNS = ("per-server + queues, greedy clone", "per-server + queues, greedy clone, sleep",
                   "the same, BC budget from its pilot", "the same, with DAgger", GAP_DESIGN, EPISODES_DESIGN)


def heldout_design(root: Path, designs: Mapping[str, Path] | None = None) -> tuple[str, pd.DataFrame]:
    """The last design (of ``designs``, name -> folder; by default :data:`HELDOUT_DESIGNS` in
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
    pairs = [(m, "bc") for m in CLONES if m != "bc"] + [(m, teacher) for m in CLONES]
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
        "method": [LABELS.get(r["method"], r["method"]) for r in recs],
        "against": [LABELS.get(r["against"], r["against"]) for r in recs], "servers": table["servers"],
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
    tuned = table[table["against"] == "bc"]
    for r in tuned.sort_values(["method", "servers"]).to_dict("records"):
        ok = "worse than" if "worse" in (r["verdict"], r["miss_verdict"]) else "no worse than"
        said.append(f"{LABELS.get(r['method'], r['method'])} at {int(r['servers'])} servers ends {ok} the frozen clone "
                    f"(tracking {S.says(r)}; misses {S.says(_miss(r))})")
    vs = table[table["against"] == teacher]
    beats = vs[vs["verdict"] == "better"]
    who = ("; ".join(f"{LABELS.get(r['method'], r['method'])} at {int(r['servers'])} servers (misses "
                     f"{S.says(_miss(r))})" for r in beats.to_dict("records")) if len(beats) else "none of them")
    return (f"On the held-out episode (frozen, greedy; positive: the method tracks better, or misses fewer "
            f"deadlines), {'; '.join(said) if said else 'no method fine-tuned the clone'}. Against "
            f"{LABELS.get(teacher, teacher)} on the same episode, {who} tracks better.")


def design_steps(rows: pd.DataFrame, reps: int = S.DEFAULT_REPS) -> pd.DataFrame:
    """What each design changes over the one before it in :data:`DESIGNS` (or over its
    :data:`DESIGN_BASE`), for the frozen clone (``bc``) under the training regime: the paired
    change of its tracking error (positive: the later design's clone tracks better), per fleet
    size."""
    bc = rows[(rows["method"] == "bc") & (rows["role"] == "train")]
    names = [d for d in DESIGNS if d in set(bc["design"])]
    pairs = [(DESIGN_BASE.get(later, earlier), later) for earlier, later in zip(names, names[1:])]
    parts = [S.compare(bc, later, earlier, ["tracking_mae_rel"], ("servers",), label="design", directions=False,
                       reps=reps).assign(earlier=earlier, later=later)
             for earlier, later in pairs if earlier in names]
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["earlier", "later", "servers", "rel_pct", "rel_ci_low", "rel_ci_high", "verdict"])


def design_steps_sentence(steps: pd.DataFrame) -> str:
    """:func:`design_steps` as prose, one clause per step and fleet size."""
    if len(steps) == 0:
        return "No two designs' clones to compare."
    said = [f"from {r['earlier']} to {r['later']} at {int(r['servers'])} servers {S.says(r)}"
            for r in steps.to_dict("records")]
    return ("The frozen clone's tracking error, paired by seed under the training regime (positive: the later "
            "design tracks better): " + "; ".join(said) + ".")
