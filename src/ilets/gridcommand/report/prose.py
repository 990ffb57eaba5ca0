"""The grid-command results in words: the sentences a chapter glues, each a pure function of the
tables of :mod:`ilets.gridcommand.report.results` (never crashing on a missing method, rung or folder:
the sentence then says what is missing).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ilets.gridcommand.experts import EXPERTS, LADDER
from ilets.gridcommand.pipeline_config import LEARNED
from ilets.report import stats as S
from ilets.gridcommand.report.results import (BAND_BAR, PAPER_PROFILE, PAPER_SHIPPED, GridResults,
                                       band_bar_table, cell_progress, comparison_table, differences, direction_table,
                                       drift_table, envelope_table, higher_is_better, ladder_table,
                                       method_label, results_table, role_rows)


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


def _best(summary: pd.DataFrame, metric: str, servers) -> tuple[str, float] | None:
    s = summary[(summary["metric"] == metric) & (summary["servers"] == servers)].dropna(subset=["mean"])
    if len(s) == 0:
        return None
    row = s.loc[s["mean"].idxmax() if higher_is_better([metric])[metric] else s["mean"].idxmin()]
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
            parts.append(f"at {s} servers the lowest tracking error is {method_label(b[0])}'s ({b[1]:.3f} of "
                         f"the requested change{cost}) and the most time in band {method_label(f[0])}'s "
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
    out["clone"] = (f"The clone alone against its teacher ({method_label(teacher)}), same seeds: tracking "
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
                        f"{method_label(top['method'])} keeps the most of its time in band "
                        f"({top['kept_pct']:.0f} %) and {method_label(low['method'])} the least "
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
        t = role_rows(table, role)
        for s, g in t.groupby("servers"):
            share = g.groupby("method")["band_reached_share"].mean().dropna()
            if share.empty:
                continue
            low, top = share.idxmin(), share.idxmax()
            where = f"{regimes.get(role, role)} at {s} servers"
            parts.append(f"{where} none (no method reaches the band on any event)" if share[top] == 0 else
                         f"{where} from {share[low]:.0%} ({method_label(low)}) to {share[top]:.0%} "
                         f"({method_label(top)})")
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


def band_bar_sentence(table: pd.DataFrame, regimes: dict[str, str], bar: float = BAND_BAR) -> str:
    """:func:`band_bar_table` in words: in how many (regime, fleet size) pairs the bar is met,
    and per pair the expert that reaches the band most often, and its price."""
    best = band_bar_table(table, bar)
    if len(best) == 0:
        return "No expert's band times are recorded."
    parts = [f"{regimes.get(r['role'], r['role'])} at {r['servers']} servers {method_label(r['method'])} "
             f"{r['share']:.0%}" + ("" if np.isnan(r["misses_caused"])
                                   else f" at {r['misses_caused']:+,.0f} deadline misses caused")
             for r in best.to_dict("records")]
    return (f"The bar, an expert that reaches the band on at least {bar:.0%} of events, is met in "
            f"{int(best['meets'].sum())} of {len(best)} (regime, fleet size) pairs (the expert that reaches it most "
            f"often: {'; '.join(parts)}).")


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
        wrong = [f"{method_label(m)} (up to {worst[m]:.2f})" for m in experts if m in worst and worst[m] > 1]
        right = [method_label(m) for m in experts if m in worst and worst[m] <= 1]
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
        t = role_rows(table, role)
        for s, g in t.groupby("servers"):
            seeds = set(g.loc[g["method"] == "oracle", "seed"])
            if not seeds:
                continue
            means = g[g["seed"].isin(seeds)].groupby("method")["tracking_mae_rel"].mean()
            above = [m for m in LADDER + ("lyapunov",) if m in means.index and m != "oracle"
                     and means[m] < means["oracle"]]
            where = f"{regimes.get(role, role)} at {s} servers"
            if above:
                beaten.append(f"{where} ({', '.join(method_label(m) for m in above)})")
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
    t = role_rows(table, role)
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
