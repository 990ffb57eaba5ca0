"""The positive control's table and verdict (chapter 5): can a learner clone its expert?

Reads the store of :mod:`ilets.study.positive_control` (``store.parquet``, one row per expert
x fleet size x seed x design) and states, per expert and fleet size, how far the frozen
greedy clone's mean response time and mean reward are from its expert's on the same tasks.
The rule [ours, fixed with the issue that asked for the control]: a design *matches* an
expert at a fleet size when the seed-mean gap of both measures is within
:data:`TOLERANCE` (1 % for a heuristic expert, 2 % from Greedy-Cost for GA+PSO, which has no
online form of its own).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ilets.expert_table import expert_label
from ilets.report.stats.prose import MISSING, number_text

#: the largest seed-mean gap (relative to the expert) at which a clone matches its expert
TOLERANCE = {"earliest-finish": 0.01, "greedy-cost": 0.01, "ga+pso": 0.02}
#: where the book looks for the control's results, first found wins
SEARCH = ("results/positive-control", "shipped/positive-control")
DESIGN_LABELS = {("flat", "paper"): "flat MLP, paper state (the authors')", ("flat", "rich"): "flat MLP, rich state",
                 ("per-server", "per-server"): "per-server policy, server table"}
EXPERT_LABELS = {"earliest-finish": "Earliest-Finish", "greedy-cost": "Greedy-Cost", "ga+pso": expert_label("ga+pso")}


def control_dir() -> Path:
    """``$ILETS_CONTROL_RESULTS``, else the first folder of :data:`SEARCH` with a store and
    its provenance (a run still going has neither)."""
    if os.environ.get("ILETS_CONTROL_RESULTS"):
        return Path(os.environ["ILETS_CONTROL_RESULTS"])
    root = Path(__file__).resolve().parents[3]
    for rel in SEARCH:
        if (root / rel / "store.parquet").is_file() and (root / rel / "PROVENANCE.json").is_file():
            return root / rel
    return root / SEARCH[-1]


def load(folder: Path) -> tuple[pd.DataFrame, dict]:
    """(the store, the provenance record) of a positive-control folder; empty when absent."""
    store, prov = folder / "store.parquet", folder / "PROVENANCE.json"
    df = pd.read_parquet(store) if store.is_file() else pd.DataFrame()
    return df, (json.loads(prov.read_text()) if prov.is_file() else {})


def split(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows on the fleet size the clone was trained on, fleet-size transfer rows)."""
    if df.empty:
        return df, df
    same = df["servers"] == df["trained_on"]
    return df[same], df[~same]


def gaps(df: pd.DataFrame) -> pd.DataFrame:
    """Per row: the clone's response-time and reward gap to its expert (relative; + is worse)."""
    out = df.copy()
    out["response_gap"] = out["clone_avg_response_s"] / out["expert_avg_response_s"] - 1
    out["reward_gap"] = (out["expert_mean_reward"] - out["clone_mean_reward"]) / out["expert_mean_reward"].abs()
    out["design"] = [DESIGN_LABELS.get((p, lay), f"{p}, {lay}") for p, lay in zip(out["policy"], out["layout"])]
    return out


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Seed means per expert, fleet size and design, with the rule's verdict (``matches``)."""
    if df.empty:
        return pd.DataFrame()
    g = gaps(df)
    keys = ["expert", "servers", "policy", "layout", "design"]
    agg = g.groupby(keys, sort=False).agg(
        seeds=("seed", "nunique"), eval_tasks=("eval_tasks", "min"), whole_window=("eval_whole_window", "all"),
        agreement_exact=("agreement_exact_heldout", "mean"), agreement_tie=("agreement_tie_heldout", "mean"),
        regret_rel=("regret_rel_heldout", "mean"), response_gap=("response_gap", "mean"),
        reward_gap=("reward_gap", "mean"), clone_response=("clone_avg_response_s", "mean"),
        expert_response=("expert_avg_response_s", "mean"), clone_success=("clone_success_rate", "mean"),
        expert_success=("expert_success_rate", "mean")).reset_index()
    designs = {label: i for i, label in enumerate(DESIGN_LABELS.values())}
    agg = agg.iloc[np.lexsort((agg["design"].map(designs).fillna(len(designs)), agg["servers"], agg["expert"]))]
    agg = agg.reset_index(drop=True)
    tol = agg["expert"].map(TOLERANCE)
    agg["matches"] = (agg["response_gap"].abs() <= tol) & (agg["reward_gap"].abs() <= tol)
    return agg


def gap_text(gap: float) -> str:
    """A clone's relative gap to its expert (:func:`gaps`, + is worse) as the tables print it: a
    signed percentage while it is under 100 %, else the clone's measure as a multiple of the
    expert's (``"967x the expert's"``, not ``"+96703.03%"``: a percentage that large says
    nothing a reader can compare)."""
    if not np.isfinite(gap):
        return MISSING
    return f"{gap:+.2%}" if abs(gap) < 1 else f"{number_text(1 + gap)}x the expert's"


def display(agg: pd.DataFrame) -> pd.DataFrame:
    """The summary as the book prints it (labels and formatted numbers)."""
    if agg.empty:
        return agg
    return pd.DataFrame({
        "expert": agg["expert"].map(EXPERT_LABELS), "servers": agg["servers"], "design": agg["design"],
        "agreement (tie-aware, held out)": agg["agreement_tie"].map("{:.1%}".format),
        "exact": agg["agreement_exact"].map("{:.1%}".format),
        "one-step regret": agg["regret_rel"].map("{:+.2%}".format),
        "clone / expert response (s)": [f"{number_text(c)} / {number_text(e)}" for c, e in
                                        zip(agg["clone_response"], agg["expert_response"])],
        "response gap": agg["response_gap"].map(gap_text),
        "reward gap": agg["reward_gap"].map(gap_text),
        "clone / expert success": [f"{c:.1%} / {e:.1%}" for c, e in zip(agg["clone_success"], agg["expert_success"])],
        "tasks scheduled": [f"{n:,}" + ("" if w else " (prefix)") for n, w in zip(agg["eval_tasks"],
                                                                                   agg["whole_window"])],
        "matches": agg["matches"].map({True: "yes", False: "no"}),
    })


def prefix_sentence(agg: pd.DataFrame) -> str:
    """Which rows scheduled only a prefix of the online half, and why ('' when none did)."""
    if agg.empty or agg["whole_window"].all():
        return ""
    short = agg.loc[~agg["whole_window"]]
    designs = _list(list(dict.fromkeys(short["design"])))
    return (f"Clones of the {designs} build queues so long that the exact simulator replays them slowly, so they "
            f"schedule the first {int(short['eval_tasks'].min()):,} online tasks, beside their expert on the same "
            f"tasks (marked *prefix*); every other row schedules the whole online half.")


def transfer_display(df: pd.DataFrame) -> pd.DataFrame:
    """Seed means of the fleet-size transfer rows (a clone on a fleet size it was not trained on)."""
    if df.empty:
        return pd.DataFrame()
    g = gaps(df)
    agg = g.groupby(["expert", "trained_on", "servers"], sort=False).agg(
        seeds=("seed", "nunique"), response_gap=("response_gap", "mean"), reward_gap=("reward_gap", "mean"),
        clone_r=("clone_avg_response_s", "mean"), expert_r=("expert_avg_response_s", "mean")).reset_index()
    return pd.DataFrame({
        "expert": agg["expert"].map(EXPERT_LABELS), "trained on (servers)": agg["trained_on"],
        "scheduling (servers)": agg["servers"],
        "clone / expert response (s)": [f"{number_text(c)} / {number_text(e)}" for c, e in zip(agg["clone_r"], agg["expert_r"])],
        "response gap": agg["response_gap"].map(gap_text), "reward gap": agg["reward_gap"].map(gap_text),
        "seeds": agg["seeds"]})


@dataclass(frozen=True)
class ControlVerdict:
    """What the control shows, per design: the fleet sizes where each expert is matched."""

    matched: dict  #: (design, expert) -> sorted fleet sizes where the clone matches
    tested: dict  #: (design, expert) -> sorted fleet sizes tested
    seeds: int  #: the fewest seeds behind any row
    text: str  #: the chapter's sentence


def verdict(agg: pd.DataFrame) -> ControlVerdict:
    """The sentence of the control, from :func:`summary` (tested on hand-made tables)."""
    if agg.empty:
        return ControlVerdict({}, {}, 0, "No positive-control results are in this folder.")
    matched, tested, parts = {}, {}, []
    for (design, expert), rows in agg.groupby(["design", "expert"], sort=False):
        key = (design, expert)
        tested[key] = sorted(rows["servers"].tolist())
        matched[key] = sorted(rows.loc[rows["matches"], "servers"].tolist())
    for design in dict.fromkeys(agg["design"]):
        ok: dict[tuple, list[str]] = {}  # tested fleet sizes -> experts matched at all of them
        for (d, e), m in matched.items():
            if d == design and m == tested[(d, e)]:
                ok.setdefault(tuple(m), []).append(EXPERT_LABELS[e])
        part = [f"{EXPERT_LABELS[e]} at {_sizes(m)} of {_sizes(tested[(d, e)])} servers"
                for (d, e), m in matched.items() if d == design and m and m != tested[(d, e)]]
        none = [EXPERT_LABELS[e] for (d, e), m in matched.items() if d == design and not m]
        every = "; ".join(f"{_list(names)} at {_sizes(list(sizes))} servers" for sizes, names in ok.items())
        bits = ([f"matches {every} (every fleet size tested)"] if ok else []) + \
               ([f"matches {'; '.join(part)}"] if part else []) + ([f"matches {_list(none)} at no fleet size"] if none else [])
        parts.append(f"the {design} {' and '.join(bits)}")
    seeds = int(agg["seeds"].min())
    tol = ", ".join(f"{v:.0%} for {EXPERT_LABELS[k]}" for k, v in TOLERANCE.items())
    text = (f"Frozen and greedy, {'; '.join(parts)} (a clone matches when its seed-mean response time and mean "
            f"reward are both within {tol} of its expert's on the same tasks, "
            f"GA+PSO's clone measured against Greedy-Cost; {seeds} seed{'s' if seeds != 1 else ''} or more per row).")
    return ControlVerdict(matched, tested, seeds, text[0].upper() + text[1:])


def _sizes(sizes: list) -> str:
    return "/".join(str(int(s)) for s in sizes)


def _list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def banner(folder: Path, prov: dict, agg: pd.DataFrame) -> str:
    """What the control's results are: scale, seeds, where and when they were computed."""
    if agg.empty:
        return f"No positive-control results in `{folder.name}`."
    profile = prov.get("profile", "?")
    scale = "paper scale (the full window)" if profile == "positive-control" else f"the `{profile}` profile (not paper scale)"
    planned = int(prov.get("planned_units") or 0)
    of = f" of {planned} planned" if planned else ""
    # the study's one provenance schema (ilets.host.provenance_of): machines and commits counted
    return (f"Positive control: {scale}; {int(prov.get('units', 0))}{of} units (expert x fleet size x seed), "
            f"{float(prov.get('cpu_hours', np.nan)):.2f} CPU-hours, computed on {_list(list(prov.get('machines') or ['?']))} "
            f"at commit {_list(list(prov.get('commits') or ['?']))}, {prov.get('first_start_utc')} to "
            f"{prov.get('finished_utc')} (UTC), read from `{folder.name}`.")


#: README's positive-control block sits between these markers
README_MARKERS = ("<!-- control:start -->", "<!-- control:end -->")


def transfer_sentence(moved: pd.DataFrame) -> str:
    """How far a per-server clone moved to another fleet size is from its expert there."""
    if moved.empty:
        return ""
    g = gaps(moved)
    worst = float(g[["response_gap", "reward_gap"]].abs().to_numpy().max())
    pairs = sorted({(int(a), int(b)) for a, b in zip(g["trained_on"], g["servers"])})
    moves = _list([f"{a} to {b} servers" for a, b in pairs])
    return (f"Moved from {moves} without retraining, the per-server clones stay within {worst:.2%} of their "
            f"expert there (response time and mean reward, every seed).")


def readme_block(folder: Path) -> str:
    """README's paragraph on the positive control, from a control folder (banner, verdict, transfer)."""
    df, prov = load(folder)
    same, moved = split(df)
    agg = summary(same)
    parts = [banner(folder, prov, agg), verdict(agg).text, transfer_sentence(moved),
             "The table is in chapter 5 of the book (*OINPT and the cold start*, the positive control)."]
    return " ".join(p for p in parts if p) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print README's positive-control paragraph, or write it between :data:`README_MARKERS`."""
    from ilets.files import marked_block_main

    return marked_block_main(argv, "python -m ilets.report.positive_control", main.__doc__,
                             ("results", None, "a positive-control folder (default: the book's)"),
                             lambda results: readme_block(results or control_dir()), README_MARKERS,
                             "the positive-control paragraph")


if __name__ == "__main__":
    raise SystemExit(main())
