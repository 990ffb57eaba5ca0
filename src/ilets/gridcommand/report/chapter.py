"""Chapter 12's finding, tables and appendix, read from the kept grid-command folders and the archive.

The chapter states one finding, built from :func:`finding_numbers` over the quick grid
(``shipped/gridcommand``): how often the feedback thermostat tracks a command better than every
rung of the expert ladder, where the episode's total reward ranks it, and how many deadlines the
learned policies miss. Its tables are :func:`experts_display` (the ladder and the best of its
rollouts), :func:`clones_display` (the kept clone designs against their teacher) and the
criteria (:mod:`ilets.gridcommand.report.criteria`); its appendix is :func:`designs_table`, one row
per design tried, from the archive (:mod:`ilets.gridcommand.archive`) and the kept folders.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ilets.gridcommand.archive import DESIGNS as ARCHIVED
from ilets.gridcommand.archive import archive_provenance, load_archive
from ilets.gridcommand.designs import DESIGNS, display_name
from ilets.gridcommand.pipeline_config import LEARNED
from ilets.gridcommand.report.results import SHIPPED, load_results, method_label, results_table
from ilets.method_table import method_long

#: The ladder's rungs (the thermostat is the chapter's sixth rung, set beside them).
RUNGS = ("oracle", "mpc-perfect", "mpc-forecast", "lyapunov", "rule")
#: The experts, in the chapter's order.
EXPERTS = (*RUNGS, "thermostat")
#: The hindsight grid of the quick scale: the ladder's rungs and the best of their rollouts.
BEST_OF_SHIPPED = Path("shipped") / "gridcommand-hindsight"
#: Names the chapter gives the experts: the MILP rung plans windows of a few dozen tasks and is
#: beaten by Lyapunov, so it is no oracle; the "hindsight" rung follows the best of the ladder's
#: rollouts, a bound on the ladder only.
EXPERT_NAMES = {"oracle": "windowed MILP planner", "mpc-perfect": "MPC, perfect forecast",
                "mpc-forecast": "MPC, realistic forecast", "lyapunov": "Lyapunov rule", "rule": "simple rule",
                "thermostat": "feedback thermostat", "hindsight": "best of the ladder's rollouts"}


def chapter_name(method: str) -> str:
    """The name the chapter gives ``method``: an expert's of :data:`EXPERT_NAMES`, a learned
    method's sentence name (:func:`ilets.method_table.method_long`), else its label."""
    if method in EXPERT_NAMES:
        return EXPERT_NAMES[method]
    return method_long(method) if method in LEARNED else method_label(method)


#: The kept folders (the shipped designs of :data:`ilets.gridcommand.designs.DESIGNS`): what each
#: changed, for the appendix.
KEPT = {d.folder: d.finding for d in DESIGNS if d.folder is not None}


def _means(table: pd.DataFrame) -> pd.DataFrame:
    return table.groupby(["regime", "servers", "method"], sort=False)[
        ["tracking_mae_rel", "episode_reward", "misses_caused"]].mean().reset_index()


def finding_numbers(root: Path) -> dict:
    """The numbers the chapter's finding is built from, over the quick grid: the (regime, fleet
    size) pairs where the thermostat's mean tracking error is below every rung's, the pairs
    where its mean total reward is the lowest of the experts, and the range of deadline misses
    caused (against the baseline run, per episode, under the training regime) by the learned
    policies and by the experts at each fleet size."""
    table = results_table(load_results(Path(root) / SHIPPED))
    means = _means(table)
    pairs, best, last = [], [], []
    for (regime, servers), g in means.groupby(["regime", "servers"], sort=False):
        g = g.set_index("method")
        if "thermostat" not in g.index:
            continue
        pairs.append((regime, int(servers)))
        rungs = g.loc[[m for m in RUNGS if m in g.index]]
        if g.loc["thermostat", "tracking_mae_rel"] < rungs["tracking_mae_rel"].min():
            best.append((regime, int(servers)))
        experts = g.loc[[m for m in EXPERTS if m in g.index], "episode_reward"]
        if experts.idxmin() == "thermostat":
            last.append((regime, int(servers)))
    misses = {}
    trained = _means(table[table["role"] == "train"])  # the regime the learners were trained under
    for servers, g in trained.groupby("servers"):
        learned = g[g["method"].isin(LEARNED)]["misses_caused"]
        experts = g[g["method"].isin(EXPERTS)]["misses_caused"]
        misses[int(servers)] = {"learned": (float(learned.min()), float(learned.max())),
                                "experts": (float(experts.min()), float(experts.max()))}
    return {"pairs": pairs, "thermostat_best": best, "thermostat_last": last, "misses": misses}


def _count(n: float) -> str:
    return f"{n:+,.0f}".replace("+0", "0")


def _fleets(pairs: list[tuple[str, int]]) -> str:
    servers = sorted({s for _, s in pairs})
    return " and ".join(f"{s}" for s in servers)


def finding_sentences(numbers: dict) -> str:
    """The chapter's finding in three sentences, from :func:`finding_numbers`."""
    n, k = len(numbers["pairs"]), len(numbers["thermostat_best"])
    last = numbers["thermostat_last"]
    lo = numbers["misses"].get(50, {"learned": (np.nan, np.nan), "experts": (np.nan, np.nan)})
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    return (f"A simple feedback thermostat follows the grid operator's command more closely than every expert of "
            f"the optimising ladder in {words.get(k, k)} of the {words.get(n, n)} fleet and command settings tried, "
            f"yet the reward the study scores ranks it last of the experts "
            + (f"at {_fleets(last)} servers" if last else "nowhere") + ", so the reward, not the tracking, decides "
            "which expert looks best. "
            f"Every learned policy misses far more deadlines than the schedule without a command: "
            f"{_count(lo['learned'][0])} to {_count(lo['learned'][1])} more per episode at 50 servers, where the "
            f"experts range from {_count(lo['experts'][0])} to {_count(lo['experts'][1])}. "
            "A frozen clone tracks like its teacher only when its inputs carry the teacher's own score terms; "
            "without them it misses the bar.")


def _fmt(v: float, spec: str = ".2f") -> str:
    return "n/a" if v is None or not np.isfinite(v) else format(v, spec)


def experts_display(root: Path) -> pd.DataFrame:
    """One row per expert (the ladder, the thermostat, the best of the ladder's rollouts), and
    per (regime, fleet size) its mean tracking error and total reward over seeds, as text."""
    table = results_table(load_results(Path(root) / SHIPPED))
    best = results_table(load_results(Path(root) / BEST_OF_SHIPPED))
    rows = pd.concat([table[table["method"].isin(EXPERTS)], best[best["method"] == "hindsight"]])
    if len(rows) == 0:
        return pd.DataFrame()
    means = _means(rows)
    out: dict[str, dict[str, str]] = {}
    for (regime, servers), g in means.groupby(["regime", "servers"], sort=False):
        g = g.set_index("method")
        for m in (*EXPERTS, "hindsight"):
            if m in g.index:
                out.setdefault(chapter_name(m), {})[f"{regime}, {servers} servers"] = (
                    f"{_fmt(g.loc[m, 'tracking_mae_rel'])} / {g.loc[m, 'episode_reward']:,.0f}")
    return pd.DataFrame.from_dict(out, orient="index").rename_axis("expert").reset_index()


def clones_display(control: pd.DataFrame) -> pd.DataFrame:
    """The frozen clone of each kept design against its teacher, training regime: tracking error
    change and miss-rate ratio per fleet size, and whether it meets the bar."""
    t = control[(control["role"] == "train") & (control["method"] == "bc")]
    if len(t) == 0:
        return pd.DataFrame()
    recs = t.to_dict("records")
    return pd.DataFrame({
        "design": [display_name(r["design"]) for r in recs], "servers": [int(r["servers"]) for r in recs],
        "agreement with the teacher": [_fmt(r["agreement"], ".0%") for r in recs],
        "tracking error vs teacher's": [f"{-r['track_pct']:+.0f} %" for r in recs],
        "deadline misses vs teacher's": [f"{r['miss_ratio']:.2f}x" for r in recs],
        "meets the bar": ["yes" if r["meets_bar"] else "no" for r in recs]})


def _result(rows: pd.DataFrame) -> str:
    """One design's result in a few words: a clone against its teacher, or the best expert."""
    train = rows[rows["role"].isin(["train", "pilot"])]
    if {"bc", "lyapunov"} <= set(train["method"]) or {"bc", "thermostat"} <= set(train["method"]):
        teacher = "lyapunov" if "lyapunov" in set(train["method"]) else "thermostat"
        said = []
        for servers, g in train.groupby("servers"):
            m = g.groupby("method")["tracking_mae_rel"].mean()
            if "bc" in m and teacher in m and m[teacher] > 0:
                said.append(f"{int(servers)}: clone {m['bc'] / m[teacher]:.2f}x the teacher's error")
        return "; ".join(said) or "no clone scored"
    m = train.groupby("method")["tracking_mae_rel"].mean().dropna()
    if len(m) == 0:
        return "no tracking error recorded"
    return f"lowest error {m.min():.2f} ({chapter_name(m.idxmin())})"


def designs_table(root: Path) -> pd.DataFrame:
    """One row per design tried: the kept folders first (what each changed, kept because the
    chapter reads it), then every archived design (what it changed, its result, why dropped)."""
    rows = [{"design": name, "changed": what, "result": "read in the chapter", "kept or dropped": "kept"}
            for name, what in KEPT.items() if (Path(root) / "shipped" / name).exists()]
    archive = load_archive(root)
    for folder, design in ARCHIVED.items():
        part = archive[archive["folder"] == folder] if len(archive) else archive
        if len(part) == 0:
            continue
        rows.append({"design": folder, "changed": design.changed, "result": _result(part),
                     "kept or dropped": f"dropped: {design.dropped}"})
    out = pd.DataFrame(rows)
    out["design"] = out["design"].str.removeprefix("gridcommand-").replace({"gridcommand": "quick grid"})
    return out


def cpu_hours(root: Path) -> float:
    """The CPU-hours of every archived design's cells."""
    archive = load_archive(root)
    if len(archive) == 0:
        return 0.0
    return float(archive.drop_duplicates(["design", "method", "servers", "seed"])["cpu_hours"].sum())


def recompute_commit(root: Path) -> str:
    """The commit at which the archived designs' profiles exist (the archive's provenance),
    shortened; "unknown" when the archive has no provenance."""
    return str(archive_provenance(root).get("recompute_commit", "unknown"))[:8]
