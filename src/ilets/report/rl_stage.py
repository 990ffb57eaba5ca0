"""The RL stage on trial: how much room fine-tuning has, and whether PPO can use it.

Two readings, each from shipped results:

* **headroom** (:func:`headroom_table`): per fleet size, every heuristic and the per-server
  learners on the same tasks and seeds (mean reward, mean response time), beside the bound no
  scheduler beats (:mod:`ilets.study.headroom`); the room is the distance from the per-server
  DRL+ (an expert's clone) to the best heuristic and to the bound.
* **the positive control** (:func:`control_cells`, :func:`choose`, :func:`verdict`): a
  per-server clone of Earliest-Finish is fine-tuned by each declared candidate
  (``configs/rl-control.yaml``, where the rule is written) and scored frozen and greedy on a
  held-out segment, beside Min-Energy on the same segment. The share of the gap closed is
  ``(R_end - R_clone) / (R_min-energy - R_clone)`` on mean reward; the control passes at
  :data:`GAP_TO_PASS` with response time and success rate no worse than the clone's.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ilets import cell_pack

#: the share of the clone-to-Min-Energy gap a candidate must close (the issue's bar)
GAP_TO_PASS = 0.5
#: a clone "matches" its teacher within this relative distance (the imitation control's bar)
CLONE_TOLERANCE = 0.01
#: the better policy the control's learner must move toward, and the teacher it starts from
TARGET, TEACHER = "min-energy", "earliest-finish"
#: the variant whose clone is of the target itself (the room is reachable by this network)
TARGET_CLONE = "me-clone"
#: the status-quo recipe, run for the verdict when no candidate qualifies
STATUS_QUO = "c0-current"
#: what each candidate changes, in words (the profile's comments are the declaration)
CANDIDATES = {
    "c0-current": "the per-server grid's recipe (constant pull toward the clone)",
    "c1-kl-decay": "critic warm-up, then a pull toward the clone that decays to nothing",
    "c2-bandit": "each decision's own reward (no discount), larger batches",
    "c3-bandit-kl": "each decision's own reward, larger batches, decaying pull",
    "c4-awr": "advantage-weighted regression on its own decisions",
    "c5-large": "larger batches and a ten-times larger step",
}


def control_cells(metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per fine-tuned cell of a control grid: the frozen clone's, the fine-tuned
    policy's and the target's held-out scores, the share of the gap closed and the diagnostics."""
    need = {"heldout_mean_reward_start", "heldout_mean_reward_end", f"heldout_ref_{TARGET}_mean_reward"}
    if "method" not in metrics:
        return pd.DataFrame()
    cells = metrics[metrics["method"].eq("drl+")]
    if cells.empty or not need <= set(cells.columns):
        return pd.DataFrame()
    start, end = cells["heldout_mean_reward_start"], cells["heldout_mean_reward_end"]
    target = cells[f"heldout_ref_{TARGET}_mean_reward"]
    out = pd.DataFrame({
        "variant": cells["variant"], "seed": cells["seed"], "servers": cells["servers"],
        "clone_reward": start, "end_reward": end, "target_reward": target,
        "teacher_reward": cells.get(f"heldout_ref_{TEACHER}_mean_reward", np.nan),
        "gap_closed": (end - start) / (target - start),
        "clone_response_s": cells["heldout_avg_response_s_start"], "end_response_s": cells["heldout_avg_response_s_end"],
        "target_response_s": cells[f"heldout_ref_{TARGET}_avg_response_s"],
        "clone_success": cells.get("heldout_success_rate_start", np.nan),
        "end_success": cells.get("heldout_success_rate_end", np.nan),
        "target_success": cells.get(f"heldout_ref_{TARGET}_success_rate", np.nan),
        "differs_from_clone": cells.get("final_differs_from_clone", np.nan),
        "gradient_snr": cells.get("median_gradient_snr", np.nan),
        "explained_variance": cells.get("final_explained_variance", np.nan),
        "kl_to_clone": cells.get("final_kl_to_clone", np.nan),
        "entropy": cells.get("final_entropy", np.nan),
        "decisions": cells.get("tasks", np.nan),
    })
    return out.sort_values(["variant", "seed"]).reset_index(drop=True)


def summarise(cells: pd.DataFrame) -> pd.DataFrame:
    """Per variant: seeds, mean gap closed with its 95 % t-interval, mean held-out reward,
    response time and success of the clone and the fine-tuned policy, the diagnostics' means,
    and whether it keeps response time and success no worse than the clone's."""
    from ilets.study.heldout import t_half_width

    rows = []
    for variant, g in cells.groupby("variant", sort=True):
        x = g["gap_closed"].to_numpy(float)
        half = t_half_width(x)
        mean = g.mean(numeric_only=True)
        rows.append({"variant": variant, "seeds": len(g), "gap_closed": float(x.mean()),
                     "gap_low": float(x.mean()) - half, "gap_high": float(x.mean()) + half,
                     **{k: float(mean[k]) for k in ("clone_reward", "end_reward", "target_reward", "teacher_reward",
                                                    "clone_response_s", "end_response_s", "target_response_s",
                                                    "clone_success", "end_success", "target_success",
                                                    "differs_from_clone", "gradient_snr", "explained_variance",
                                                    "kl_to_clone", "entropy")},
                     "no_worse": no_worse(mean)})
    return pd.DataFrame(rows)


def no_worse(mean: pd.Series) -> bool:
    """The guard of the control's rule (``configs/rl-control.yaml``, as amended before any
    candidate was read): response time at most the larger of the clone's and the target's, and
    success rate at least the smaller of theirs. The target is slower and meets fewer deadlines
    than Earliest-Finish on the held-out segment, so "no worse than the clone's" alone would
    fail a policy equal to the target; between the two passes, worse than both does not."""
    return bool(mean["end_response_s"] <= max(mean["clone_response_s"], mean["target_response_s"])
                and mean["end_success"] >= min(mean["clone_success"], mean["target_success"]))


def choose(pilot: pd.DataFrame) -> str:
    """The pilot's rule: the candidate with the highest mean gap closed among those that pass the
    guard (:func:`no_worse`); with none, :data:`STATUS_QUO`."""
    cands = pilot[pilot["variant"].isin(list(CANDIDATES)) & pilot["no_worse"]]
    if cands.empty:
        return STATUS_QUO
    return str(cands.sort_values("gap_closed", ascending=False)["variant"].iloc[0])


@dataclass(frozen=True)
class Verdict:
    """The control's verdict on the evaluation seeds."""

    candidate: str
    seeds: int
    gap_closed: float
    gap_low: float
    gap_high: float
    no_worse: bool
    passed: bool


def verdict(evaluation: pd.DataFrame, candidate: str) -> Verdict | None:
    """The verdict of ``candidate`` on the evaluation seeds' summary (None when it has none)."""
    row = evaluation[evaluation["variant"] == candidate]
    if row.empty:
        return None
    r = row.iloc[0]
    passed = bool(r["gap_closed"] >= GAP_TO_PASS and r["no_worse"])
    return Verdict(candidate, int(r["seeds"]), float(r["gap_closed"]), float(r["gap_low"]), float(r["gap_high"]),
                   bool(r["no_worse"]), passed)


def target_clone_check(summary: pd.DataFrame) -> dict[str, float] | None:
    """The network clones the target itself: its frozen clone's relative distance to the
    target on held-out mean reward and response time (None without the row)."""
    row = summary[summary["variant"] == TARGET_CLONE]
    if row.empty:
        return None
    r = row.iloc[0]
    reward = abs(r["clone_reward"] - r["target_reward"]) / abs(r["target_reward"])
    response = abs(r["clone_response_s"] - r["target_response_s"]) / r["target_response_s"]
    return {"reward_distance": float(reward), "response_distance": float(response),
            "matches": bool(reward <= CLONE_TOLERANCE and response <= CLONE_TOLERANCE)}


def steps_to_half(folder: Path, candidate: str, cells: pd.DataFrame) -> int | None:
    """The first checkpoint (decisions into the pass) at which ``candidate``'s mean share of the
    gap closed reaches :data:`GAP_TO_PASS` over its seeds (None if it never does), read from
    each cell's ``checkpoints.csv``."""
    shares: dict[int, list[float]] = {}
    for path in cell_pack.cell_paths(folder, f"drl+@{candidate}-M*"):
        seed = int(path.name.split("-s")[-1].split("-")[0])
        row = cells[(cells["variant"] == candidate) & (cells["seed"] == seed)]
        table = path / "checkpoints.csv"
        if row.empty or not cell_pack.is_file(table):
            continue
        r = row.iloc[0]
        cp = pd.read_csv(io.BytesIO(cell_pack.read_bytes(table)))
        for decisions, reward in zip(cp["decisions"], cp["mean_reward"]):
            shares.setdefault(int(decisions), []).append((reward - r["clone_reward"]) / (r["target_reward"]
                                                                                       - r["clone_reward"]))
    for decisions in sorted(shares):
        if np.mean(shares[decisions]) >= GAP_TO_PASS:
            return decisions
    return None


def headroom_table(paper: pd.DataFrame, per_server: pd.DataFrame, bounds: pd.DataFrame, servers: int) -> pd.DataFrame:
    """One fleet size's room: each heuristic and per-server learner (seed means over the seeds
    both grids share), and the bound; with each row's distance to the per-server DRL+ (the
    clone fine-tuning starts from) in reward units and in response time."""
    from ilets.config import HEURISTICS

    heur = paper[(paper["servers"] == servers) & paper["method"].isin(HEURISTICS) & paper["variant"].eq("")]
    learn = per_server[(per_server["servers"] == servers) & per_server["variant"].eq("")]
    seeds = sorted(set(heur["seed"]) & set(learn["seed"]))
    rows = []
    for source, family in ((heur, "heuristic"), (learn, "per-server learner")):
        for method, g in source[source["seed"].isin(seeds)].groupby("method", sort=False):
            rows.append({"method": method, "kind": family, "mean_reward": float(g["mean_reward"].mean()),
                         "response_s": float(g["avg_response_s"].mean()), "seeds": int(len(g))})
    b = bounds[(bounds["servers"] == servers) & bounds["seed"].isin(seeds)]
    if len(b):
        rows.append({"method": "bound", "kind": "no scheduler beats it", "mean_reward": float(b["reward_bound"].mean()),
                     "response_s": float(b["response_bound_s"].mean()), "seeds": int(len(b))})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    clone = table.loc[table["method"] == "drl+"]
    if len(clone):
        table["reward_room"] = table["mean_reward"] - float(clone["mean_reward"].iloc[0])
        table["response_room_s"] = float(clone["response_s"].iloc[0]) - table["response_s"]
    return table.sort_values("mean_reward", ascending=False).reset_index(drop=True)


#: the shipped folders the chapter reads: the pilot (pilot seeds) and the verdict (evaluation seeds)
PILOT_FOLDER = Path("shipped") / "rl-control"
EVAL_FOLDER = Path("shipped") / "rl-control-eval"


@dataclass(frozen=True)
class RLStageReport:
    """Everything the RL stage's chapter and README block show."""

    headroom: dict[int, pd.DataFrame]  #: fleet size -> :func:`headroom_table`
    pilot: pd.DataFrame  #: :func:`summarise` of the pilot seeds
    evaluation: pd.DataFrame  #: :func:`summarise` of the evaluation seeds
    chosen: str | None  #: the pilot's choice (None until every candidate has its pilot seeds)
    verdict: Verdict | None
    target_clone: dict[str, float] | None  #: :func:`target_clone_check` on the evaluation seeds (else the pilot's)
    steps_to_half: int | None  #: decisions the chosen candidate took to close half the gap (evaluation seeds)
    pilot_cells: pd.DataFrame  #: :func:`control_cells` of the pilot (the along-the-pass plot reads the folder)


def load_report(root: Path | None = None, bounds: pd.DataFrame | None = None) -> RLStageReport:
    """The RL stage read from the shipped folders under ``root`` (default: the repository)."""
    from ilets.study.results import load_metrics, repo_root

    root = Path(root) if root is not None else repo_root()

    def metrics(folder: Path) -> pd.DataFrame:
        return load_metrics(folder, variant=None) if (folder / "store" / "metrics.parquet").is_file() \
            else pd.DataFrame()

    pilot_cells = control_cells(metrics(root / PILOT_FOLDER))
    eval_cells = control_cells(metrics(root / EVAL_FOLDER))
    pilot = summarise(pilot_cells) if len(pilot_cells) else pd.DataFrame()
    evaluation = summarise(eval_cells) if len(eval_cells) else pd.DataFrame()
    complete = bool(len(pilot)) and set(CANDIDATES) <= set(pilot["variant"]) and bool((pilot["seeds"] >= 3).all())
    chosen = choose(pilot) if complete else None
    judged = verdict(evaluation, chosen) if chosen and len(evaluation) else None
    check = target_clone_check(evaluation if len(evaluation) and TARGET_CLONE in set(evaluation["variant"]) else pilot) \
        if len(pilot) else None
    steps = steps_to_half(root / EVAL_FOLDER, judged.candidate, eval_cells) if judged is not None and judged.passed else None
    paper, per_server = metrics(root / "shipped" / "paper"), metrics(root / "shipped" / "per-server")
    if bounds is None:
        bounds = recorded_bounds(root)
    headroom = {m: headroom_table(paper, per_server, bounds, m) for m in (50, 100, 200)} \
        if len(paper) and len(per_server) else {}
    return RLStageReport(headroom, pilot, evaluation, chosen, judged, check, steps, pilot_cells)


def recorded_bounds(root: Path) -> pd.DataFrame:
    """The bounds recorded by ``make artifacts`` for the paper grid (record ``headroom``, read
    through :func:`ilets.report.measurements.read`, which refuses a record measured with other
    workload, fleet or reward settings than the grid's), or an empty table when it is absent."""
    from ilets.report.measurements import MeasurementError, read
    from ilets.study.book_measurements import results_run

    empty = pd.DataFrame(columns=["servers", "seed", "response_bound_s", "reward_bound"])
    paper = root / "shipped" / "paper"
    if not (paper / "profile.yaml").is_file():
        return empty
    profile, run = results_run(paper)
    try:
        record = read("headroom", profile, run, folder=root / "shipped" / "book" / profile)
    except MeasurementError:
        return empty
    return pd.DataFrame(record.data["rows"])


def headroom_sentence(report: RLStageReport) -> str:
    """The room at 50 servers in one sentence: the best heuristic over the per-server DRL+."""
    room = report.headroom.get(50)
    if room is None or not len(room) or "reward_room" not in room:
        return ""
    best = room[room["kind"] == "heuristic"].iloc[0]
    name = str(best["method"]).title()  # "min-energy" -> "Min-Energy", as the chapter names it
    return (f"At 50 servers the best heuristic ({name}) is {best['reward_room']:.3f} mean reward and "
            f"{best['response_room_s']:.2f} s of response time better than the per-server DRL+, so fine-tuning had "
            "room to use.")


def finding(report: RLStageReport) -> str:
    """The chapter's finding in plain words (at most three sentences), from the numbers."""
    parts = [p for p in [headroom_sentence(report)] if p]
    v = report.verdict
    if v is None:
        parts.append("The RL positive control has no verdict yet: its evaluation seeds have not run.")
    elif v.passed:
        parts.append(f"Fine-tuning passes its positive control: from a clone of Earliest-Finish, the chosen recipe "
                     f"closes {v.gap_closed:.0%} of the gap to Min-Energy on held-out tasks ({v.seeds} evaluation seeds), "
                     "so RL can use room that the reward shows.")
    else:
        parts.append(f"Fine-tuning fails its positive control: from a clone of Earliest-Finish, the best declared "
                     f"recipe closes {v.gap_closed:.0%} of the gap to Min-Energy on held-out tasks "
                     f"({v.seeds} evaluation seeds; the bar is {GAP_TO_PASS:.0%}), so the RL stage as built cannot "
                     "be expected to improve on its teacher.")
    return " ".join(parts)


def target_clone_text(report: RLStageReport) -> str:
    """The sentence on the Min-Energy clone (the room is reachable by this network)."""
    check = report.target_clone
    if check is None:
        return "The clone of Min-Energy has not run yet."
    return (f"The per-server clone of Min-Energy, frozen and greedy, is within {check['reward_distance']:.1%} of "
            f"Min-Energy's held-out mean reward and {check['response_distance']:.1%} of its response time "
            f"({'within' if check['matches'] else 'outside'} the imitation control's "
            f"{CLONE_TOLERANCE:.0%} bar).")


def verdict_text(report: RLStageReport) -> str:
    """The sentence of the control's verdict on the evaluation seeds."""
    v = report.verdict
    if v is None:
        return "No verdict yet: the evaluation seeds have not run."
    text = (f"On {v.seeds} evaluation seeds the chosen candidate ({CANDIDATES.get(v.candidate, v.candidate)}) "
            f"closes {v.gap_closed:.0%} of the gap (95 % interval {v.gap_low:.0%} to {v.gap_high:.0%}); the bar is "
            f"{GAP_TO_PASS:.0%} with response time and success no worse: **{'passed' if v.passed else 'not passed'}**.")
    if report.steps_to_half is not None:
        text += f" It reached half the gap after {report.steps_to_half:,} decisions of the pass."
    return text


def design_counts(report: RLStageReport) -> dict[str, str]:
    """How many candidate recipes the pilot declares and how many pilot seeds each ran, in words
    (``{"candidates": "six", "pilot_seeds": "three"}``), read from the pilot's cells."""
    from ilets.report.stats.prose import count_text

    cells = report.pilot_cells
    seeds = int(cells["seed"].nunique()) if len(cells) else 0
    return {"candidates": count_text(len(CANDIDATES)), "pilot_seeds": count_text(seeds)}


def chosen_text(report: RLStageReport) -> str:
    """What the pilot's rule chose, in words."""
    return "not yet chosen" if report.chosen is None else CANDIDATES.get(report.chosen, report.chosen)


def diagnosis(report: RLStageReport) -> str:
    """Why the candidates moved as little as they did, in words, from the pilot's diagnostics."""
    pilot = report.pilot[report.pilot["variant"].isin(list(CANDIDATES))] if len(report.pilot) else report.pilot
    if pilot.empty:
        return ""
    gap = float((pilot["target_reward"] - pilot["clone_reward"]).mean())
    snr, ev, off = (pilot[k] for k in ("gradient_snr", "explained_variance", "differs_from_clone"))
    text = (f"The room is small per decision: Min-Energy's held-out mean reward is {gap:.3f} above the clone's. "
            f"Every candidate's policy gradient is mostly noise (median signal-to-noise {snr.min():.2f} to "
            f"{snr.max():.2f}, below 1), even where the critic predicts the return well (explained variance "
            f"{ev.min():.2f} to {ev.max():.2f}). So the policies did move, to another server on "
            f"{off[off > 0.01].min() if (off > 0.01).any() else off.max():.0%} to {off.max():.0%} of the states, "
            "but not toward Min-Energy's choices.")
    check = report.target_clone
    if check is not None and check["matches"]:
        text += (f" The network is not the limit: its clone of Min-Energy comes within {check['reward_distance']:.1%} "
                 "of Min-Energy's held-out reward.")
    return text


def block(report: RLStageReport) -> str:
    """README's ``rl-stage`` block: the headroom, the control's verdict and the share of the gap closed."""
    if report.verdict is None:
        return f"**The RL stage on trial** (chapter 15). {finding(report)}"
    lines = [f"**The RL stage on trial** (chapter 15). {headroom_sentence(report)}"]
    if report.verdict is not None:
        v = report.verdict
        lines.append(f"Control (Earliest-Finish clone fine-tuned toward Min-Energy, 50 servers, paper scale): "
                     f"candidate {v.candidate}, gap closed {v.gap_closed:.0%} "
                     f"[{v.gap_low:.0%}, {v.gap_high:.0%}] over {v.seeds} evaluation seeds; "
                     f"{'passed' if v.passed else 'not passed'} (bar {GAP_TO_PASS:.0%}, response time and "
                     "success between the clone's and Min-Energy's).")
        lines += ["", diagnosis(report)]
    return "\n".join(lines).strip()


#: README's markers around :func:`block`
README_MARKERS = ("<!-- rl-stage:start -->", "<!-- rl-stage:end -->")


def readme_block(root: Path | None = None) -> str:
    """README's ``rl-stage`` block from the shipped results under ``root`` (the repository)."""
    return block(load_report(root)) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print README's RL-stage block, or write it between :data:`README_MARKERS`."""
    from ilets.files import marked_block_main

    return marked_block_main(argv, "python -m ilets.report.rl_stage", main.__doc__,
                             ("root", None, "the repository whose shipped results to read"),
                             readme_block, README_MARKERS, "the RL-stage block")


if __name__ == "__main__":
    raise SystemExit(main())


def along_pass(folder: Path, cells: pd.DataFrame) -> pd.DataFrame:
    """Each fine-tuned cell's share of the gap closed at each held-out checkpoint of its pass
    (``checkpoints.csv``): variant, seed, decisions, share (0: the clone, 1: the target)."""
    rows = []
    for path in cell_pack.cell_paths(folder, "drl+@*"):
        variant = path.name.split("@", 1)[1].rsplit("-M", 1)[0]
        seed = int(path.name.rsplit("-s", 1)[1].split("-")[0])
        row = cells[(cells["variant"] == variant) & (cells["seed"] == seed)]
        if row.empty or not cell_pack.is_file(path / "checkpoints.csv"):
            continue
        r = row.iloc[0]
        cp = pd.read_csv(io.BytesIO(cell_pack.read_bytes(path / "checkpoints.csv")))
        share = (cp["mean_reward"] - r["clone_reward"]) / (r["target_reward"] - r["clone_reward"])
        rows += [{"variant": variant, "seed": seed, "decisions": int(d), "share": float(s)}
                 for d, s in zip(cp["decisions"], share)]
    return pd.DataFrame(rows, columns=["variant", "seed", "decisions", "share"])


def plot_along_pass(table: pd.DataFrame):
    """The share of the gap to the target closed along the pass, one line per candidate (mean
    over seeds, band: the seeds' range): the chapter's figure."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    # the target's own clone starts at the target: its share of a gap of nothing is not a share
    table = table[table["variant"].isin(list(CANDIDATES))]
    if len(table):
        sns.lineplot(data=table.assign(label=table["variant"].map(lambda v: CANDIDATES.get(v, v))),
                     x="decisions", y="share", hue="variant", errorbar=("pi", 100), marker="o", ax=ax)
    ax.axhline(0.0, color="0.4", lw=1, ls="--")
    ax.axhline(1.0, color="tab:green", lw=1, ls="--")
    ax.axhline(GAP_TO_PASS, color="tab:red", lw=1, ls=":")
    right = float(table["decisions"].max()) if len(table) else 1.0
    for y, label, color, va in ((1.0, "Min-Energy", "tab:green", "bottom"), (0.0, "the clone", "0.4", "top"),
                                (GAP_TO_PASS, "the bar", "tab:red", "bottom")):
        ax.text(right, y, f"{label} ", va=va, ha="right", color=color)
    ax.set_xlabel("decisions into the online pass")
    ax.set_ylabel("share of the gap closed")
    ax.legend(title="candidate", fontsize=9, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def headroom_display(report: RLStageReport) -> pd.DataFrame:
    """One table for every fleet size: each row's mean reward and mean response time, and its
    room over the per-server DRL+ (positive: better than the clone fine-tuning starts from)."""
    from ilets.method_table import METHOD_SPECS

    frames = []
    for servers, table in report.headroom.items():
        if table.empty:
            continue
        t = table.set_index("method")
        frames.append(pd.DataFrame({
            (f"{servers} servers", "mean reward"): t["mean_reward"].map(lambda x: f"{x:.3f}"),
            (f"{servers} servers", "room"): t["reward_room"].map(lambda x: f"{x:+.3f}"),
            (f"{servers} servers", "response (s)"): t["response_s"].map(lambda x: f"{x:.2f}"),
        }))
    if not frames:
        return pd.DataFrame()
    wide = pd.concat(frames, axis=1)
    names = {m: s.label for m, s in METHOD_SPECS.items()}
    wide.index = [("bound (no scheduler beats it)" if m == "bound" else
                   f"{names.get(m, m)} (per-server)" if m in ("drl", "drl+", "ilets-", "ilets") else names.get(m, m))
                  for m in wide.index]
    return wide


def control_display(summary: pd.DataFrame) -> pd.DataFrame:
    """The control's candidates as people read them: what each changes, the gap closed with its
    interval, held-out response and success against the clone's, and the diagnostics."""
    if summary.empty:
        return summary
    out = pd.DataFrame({
        "candidate": summary["variant"],
        "what it changes": summary["variant"].map(lambda v: CANDIDATES.get(v, "clone of Min-Energy (no fine-tuning read)")),
        "gap closed": [f"{g:.0%} [{lo:.0%}, {hi:.0%}]" for g, lo, hi in
                       zip(summary["gap_closed"], summary["gap_low"], summary["gap_high"])],
        "response (s), clone → end": [f"{a:.2f} → {b:.2f}" for a, b in
                                      zip(summary["clone_response_s"], summary["end_response_s"])],
        "success, clone → end": [f"{a:.1%} → {b:.1%}" for a, b in zip(summary["clone_success"], summary["end_success"])],
        "off the clone": summary["differs_from_clone"].map(lambda x: f"{x:.1%}"),
        "gradient SNR": summary["gradient_snr"].map(lambda x: f"{x:.2f}"),
        "critic EV": summary["explained_variance"].map(lambda x: f"{x:.2f}"),
        "entropy": summary["entropy"].map(lambda x: f"{x:.2f}"),
        "guard": summary["no_worse"].map({True: "kept", False: "broken"}),
    })
    return out[out["candidate"] != TARGET_CLONE].reset_index(drop=True)


def figure(report: RLStageReport, root: Path | None = None):
    """The chapter's figure (:func:`plot_along_pass`) from the pilot folder under ``root``."""
    from ilets.study.results import repo_root

    folder = (Path(root) if root is not None else repo_root()) / PILOT_FOLDER
    return plot_along_pass(along_pass(folder, report.pilot_cells))
