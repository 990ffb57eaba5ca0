"""The grid-command chapter's numbers on the power levers: how deep the fleet can cut with the
sleep lever (:mod:`ilets.gridcommand.sleep`) and then with the batch class on top of it
(:mod:`ilets.gridcommand.batch`), and whether the experts then follow.

Two grid-command stores of the same profile shape are read: the ladder without the lever
(``shipped/gridcommand``) and with it (``shipped/gridcommand-sleep``), at the quick scale;
at the full online window, the rule and Lyapunov without it
(``shipped/gridcommand-paper-experts``) and with it (``shipped/gridcommand-paper-sleep``). A seed fixes the
workload and the generated commands before the envelope sizes them, so the two runs of a
seed are paired; with the lever the envelope reaches further and the commands it sizes are
deeper, so each run is scored against its own commands (the question is whether the fleet
can follow what it is asked when it may sleep, not the same command twice).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ilets.report import stats as S
from ilets.report.grid_command import BAND_BAR, LABELS, done_records, load_results, status_sentence

#: Where the book reads the shipped grid with the sleep lever (relative to the repository root).
SHIPPED = Path("shipped") / "gridcommand-sleep"
#: The same pair at the full online window (paper scale; the rule and Lyapunov only).
PAPER_WITHOUT = Path("shipped") / "gridcommand-paper-experts"
PAPER_SHIPPED = Path("shipped") / "gridcommand-paper-sleep"
#: The lever's timing variants beside the default, Lyapunov only (label -> shipped folder): the
#: sensitivity of the quick-scale verdicts to the timeout and the wake-up.
VARIANTS = {"off": Path("shipped") / "gridcommand", "fast": Path("shipped") / "gridcommand-sleep-fast",
            "default": SHIPPED, "slow": Path("shipped") / "gridcommand-sleep-slow"}
#: The arms of the comparison (``lever`` column).
LEVERS = ("none", "sleep")
#: The envelope's two ways of measuring reach, both with the lever (``envelope_runs``), as arms.
ENVELOPE_RUNS = ("joint", "per-event")
#: The grid with one envelope run per event, beside :data:`SHIPPED` (the joint run).
EACH_SHIPPED = Path("shipped") / "gridcommand-sleep-each"
#: The same at the full online window (thermostat-firm and Lyapunov), beside :data:`PAPER_SHIPPED`.
PAPER_EACH_SHIPPED = Path("shipped") / "gridcommand-paper-sleep-each"
#: The joint run with unreachable events moved to a new start (``envelope_redraws``), as arms,
#: and its full-window grid (thermostat-firm and Lyapunov), beside :data:`PAPER_SHIPPED`.
REDRAW_ARMS = ("joint", "re-drawn")
PAPER_REDRAW_SHIPPED = Path("shipped") / "gridcommand-paper-sleep-redraw"
#: What each second arm of :func:`runs_comparison` is, in a sentence's words.
RUNS_WORDS = {"per-event": "With one envelope run per event", "re-drawn": "With unreachable events moved to a new start"}
#: The grid with the batch class on top of the sleep lever, beside :data:`SHIPPED`, and the arms.
BATCH_SHIPPED = Path("shipped") / "gridcommand-sleep-batch"
BATCH_ARMS = ("sleep", "sleep + batch")
#: The same with a smaller batch share (the share's sensitivity), and its arms.
BATCH_LOW_SHIPPED = Path("shipped") / "gridcommand-sleep-batch-low"
BATCH_LOW_ARMS = ("sleep", "sleep + small batch")
#: The full-window grid with the sleep lever and commands sized to the reach that keeps
#: deadlines (``envelope_deadlines``; the thermostat only), beside :data:`PAPER_SHIPPED`, and the arms.
DEADLINES_SHIPPED = Path("shipped") / "gridcommand-paper-sleep-deadlines"
DEADLINE_ARMS = ("whole reach", "reach within deadlines")
#: What the comparison shows per (regime, fleet size, expert): metric, label, higher is better, format.
LEVER_METRICS: dict[str, tuple[str, bool, str]] = {
    "band_reached_share": ("events reaching the band", True, ".0%"),
    "tracking_mae_rel": ("tracking error", False, ".3f"),
    "misses_caused": ("misses caused", False, ".0f"),
}


def lever_rows(without: pd.DataFrame, with_lever: pd.DataFrame, arms: tuple[str, str] = LEVERS) -> pd.DataFrame:
    """The two stores stacked with a ``lever`` column (``arms``: by default ``none``, ``sleep``;
    :data:`ENVELOPE_RUNS` for the envelope's two ways), restricted to the methods, fleet sizes
    and seeds both have."""
    keys = ["method", "servers", "seed"]
    common = without[keys].drop_duplicates().merge(with_lever[keys].drop_duplicates(), on=keys)
    parts = [t.merge(common, on=keys).assign(lever=name) for name, t in zip(arms, (without, with_lever))]
    return pd.concat(parts, ignore_index=True)


def lever_table(rows: pd.DataFrame, reps: int = S.DEFAULT_REPS, arms: tuple[str, str] = LEVERS) -> pd.DataFrame:
    """Per regime, fleet size, method and metric: the seed means without and with the lever (the
    first and the second of ``arms``) and the paired change (positive: better with the second;
    :func:`ilets.report.stats.compare`)."""
    directions = {k: v[1] for k, v in LEVER_METRICS.items()}
    parts = [S.compare(g, arms[1], arms[0], list(LEVER_METRICS), ("regime", "servers"), label="lever",
                       directions=directions, reps=reps).assign(method=method)
             for method, g in rows.groupby("method", sort=False)]
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=["regime", "servers", "method", "metric", "mean_x", "mean_y", "rel_pct",
                                     "rel_ci_low", "rel_ci_high", "verdict", "n_x"])
    return pd.concat(parts, ignore_index=True)


def lever_display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`lever_table` for display: one row per (regime, fleet size, expert), each metric as
    ``without -> with``, and the paired change of the tracking error."""
    if len(table) == 0:
        return pd.DataFrame()
    out = []
    for (regime, servers, method), g in table.groupby(["regime", "servers", "method"], sort=False):
        row = {"regime": regime, "servers": int(servers), "expert": LABELS.get(method, method)}
        by = {r["metric"]: r for r in g.to_dict("records")}
        for metric, (label, _, spec) in LEVER_METRICS.items():
            r = by.get(metric)
            row[label] = "n/a" if r is None else f"{r['mean_y']:{spec}} → {r['mean_x']:{spec}}"
        track = by.get("tracking_mae_rel")
        row["tracking error, change"] = S.says(track)
        row["seeds"] = int(track["n_x"]) if track is not None else 0
        out.append(row)
    return pd.DataFrame(out)


def band_bar(table: pd.DataFrame, bar: float = BAND_BAR, arms: tuple[str, str] = LEVERS) -> pd.DataFrame:
    """Per regime and fleet size, for each of ``arms`` (by default without the lever and with
    it): the expert whose events reach the band most often (seed means), its share, and
    whether it meets ``bar``."""
    share = table[table["metric"] == "band_reached_share"]
    rows = []
    for (regime, servers), g in share.groupby(["regime", "servers"], sort=False):
        for lever, col in ((arms[0], "mean_y"), (arms[1], "mean_x")):
            v = g.set_index("method")[col].dropna()
            if v.empty:
                continue
            best = str(v.idxmax())
            rows.append({"regime": regime, "servers": int(servers), "lever": lever, "best": best,
                         "share": float(v[best]), "meets": bool(v[best] >= bar)})
    return pd.DataFrame(rows, columns=["regime", "servers", "lever", "best", "share", "meets"])


def reach_table(without: Path, with_lever: Path, arms: tuple[str, str] = LEVERS) -> pd.DataFrame:
    """Per regime and fleet size, with the lever and without: how many down events there were,
    how many events the envelope dropped as unreachable (either direction), the down events'
    mean reachable depth as the envelope found it (a fraction of the baseline) and the mean
    change they asked for after sizing (W), from the cells' records (one cell per seed: every
    method of a seed has the same events), over the seeds both folders have."""
    rows, drops = [], []
    for lever, folder in zip(arms, (without, with_lever)):
        seen: set[tuple] = set()
        for r in done_records(Path(folder)):
            for role, scores in r.get("scores", {}).items():
                key = (r["servers"], r["seed"], r["regimes"][role])
                if key in seen:
                    continue
                seen.add(key)
                drops.append({"lever": lever, "servers": r["servers"], "seed": r["seed"], "regime": key[2],
                              "dropped": scores.get("events_dropped", 0.0),
                              "redrawn": scores.get("events_redrawn", 0.0)})
                rows += [{"lever": lever, "servers": r["servers"], "seed": r["seed"], "regime": key[2],
                          "reachable": e["reachable_depth"], "asked_w": e["requested_w"]}
                         for e in scores.get("per_event", []) if e["direction"] == "down" and "reachable_depth" in e]
    t = pd.DataFrame(rows, columns=["lever", "servers", "seed", "regime", "reachable", "asked_w"])
    keys = ["servers", "seed", "regime"]
    both = t[t["lever"] == arms[0]][keys].drop_duplicates().merge(t[t["lever"] == arms[1]][keys].drop_duplicates())
    t = t.merge(both, on=keys)  # the seeds both folders have, so the two means are over the same workloads
    if t.empty:
        return pd.DataFrame(columns=["regime", "servers", "lever", "events", "dropped", "redrawn", "reachable",
                                     "asked_w"])
    counts = (pd.DataFrame(drops).merge(both, on=keys).groupby(["regime", "servers", "lever"])[["dropped", "redrawn"]]
              .sum().astype(int))
    out = (t.groupby(["regime", "servers", "lever"], sort=False)
           .agg(events=("reachable", "size"), reachable=("reachable", "mean"), asked_w=("asked_w", "mean"))
           .reset_index())
    at = list(zip(out["regime"], out["servers"], out["lever"]))
    for place, col in ((4, "dropped"), (5, "redrawn")):
        out.insert(place, col, [int(counts[col].get(k, 0)) for k in at])
    return out


def reach_display(reach: pd.DataFrame) -> pd.DataFrame:
    """:func:`reach_table` for display."""
    return (reach.assign(reachable=reach["reachable"].map("{:.1%}".format), asked_w=reach["asked_w"].map("{:,.0f}".format))
            .rename(columns={"events": "down events", "dropped": "events dropped", "redrawn": "events moved",
                             "reachable": "mean reachable depth",
                             "asked_w": "mean change asked (W)"}))


def _reach_said(reach: pd.DataFrame, arms: tuple[str, str]) -> str:
    """How the envelope's mean reachable depth of a down event moves from one arm to the other."""
    said = []
    for (regime, servers), g in reach.groupby(["regime", "servers"], sort=False):
        by = g.set_index("lever")
        if set(arms) <= set(by.index):
            said.append(f"{regime} at {int(servers)} servers {by.loc[arms[0], 'reachable']:.0%} → "
                        f"{by.loc[arms[1], 'reachable']:.0%}")
    return "The envelope's mean reachable depth of a down event goes " + "; ".join(said) + ". " if said else ""


def _bar_said(bars: pd.DataFrame, arms: tuple[str, str], bar: float, first_words: str) -> str:
    """The expert reaching the band most often under the second arm, per (regime, fleet size),
    and in how many pairs the bar is met with each arm (``first_words`` names the first in prose)."""
    after, before = bars[bars["lever"] == arms[1]], bars[bars["lever"] == arms[0]]
    parts = [f"{r['regime']} at {r['servers']} servers {r['share']:.0%} ({LABELS.get(r['best'], r['best'])})"
             for r in after.to_dict("records")]
    met, met_before = int(after["meets"].sum()), int(before["meets"].sum())
    verdict = ("so the bar is met everywhere" if met == len(after) else
               f"so the bar is met in {met} of the {len(after)} (regime, fleet size) pairs")
    return (f"the expert whose events reach the band most often reaches it on {'; '.join(parts)}: {verdict} (an "
            f"expert reaching the band on at least {bar:.0%} of events; {first_words}, in {met_before} of "
            f"{len(before)})")


def _tracking_said(table: pd.DataFrame, lever: str) -> str:
    track = table[(table["metric"] == "tracking_mae_rel")]
    better, worse = int((track["verdict"] == "better").sum()), int((track["verdict"] == "worse").sum())
    return (f"Per expert, paired by seed, {lever} makes the tracking error better in {better} and worse in {worse} "
            f"of {len(track)} (regime, fleet size, expert) comparisons, each against its own, deeper commands.")


def lever_sentence(table: pd.DataFrame, bars: pd.DataFrame, reach: pd.DataFrame, bar: float = BAND_BAR) -> str:
    """What the lever does to the envelope and to the experts, and whether an expert reaches the
    band on at least ``bar`` of the events in every regime and fleet size."""
    if len(table) == 0 or len(bars) == 0:
        return "No results with the sleep lever are in this checkout."
    reach_text = _reach_said(reach, LEVERS)
    if "dropped" in reach and len(reach):
        lost = reach.groupby("lever")["dropped"].sum()
        if lost.get("sleep", 0) > lost.get("none", 0):
            reach_text += (f"With the lever, though, the envelope dropped {int(lost['sleep'])} events as unreachable "
                           f"(without it {int(lost.get('none', 0))}): its extreme run wakes every sleeper at an "
                           "event's end and lands the deferred work there, and an event that follows soon starts in "
                           "that backlog (one extreme run per event avoids it: below); the extreme is a simple rule, an "
                           "inner estimate of the reach. ")
    bar_text = _bar_said(bars, LEVERS, bar, "without the lever")
    return f"{reach_text}With the lever, {bar_text}. {_tracking_said(table, 'the lever')}"


def batch_sentence(table: pd.DataFrame, bars: pd.DataFrame, reach: pd.DataFrame, bar: float = BAND_BAR) -> str:
    """What the batch class adds to the sleep lever (:data:`BATCH_ARMS`): the envelope's reach,
    the events dropped, the band bar and each expert's tracking error."""
    if len(table) == 0 or len(bars) == 0 or BATCH_ARMS[1] not in set(bars["lever"]):
        return "The grid with the batch class is not in this checkout."
    lost = reach.groupby("lever")["dropped"].sum() if len(reach) else pd.Series(dtype=float)
    return (f"{_reach_said(reach, BATCH_ARMS)}The envelope dropped {int(lost.get(BATCH_ARMS[1], 0))} events as "
            f"unreachable with the batch class (with sleep alone {int(lost.get(BATCH_ARMS[0], 0))}). With the batch "
            f"class, {_bar_said(bars, BATCH_ARMS, bar, 'with sleep only')}. {_tracking_said(table, 'the batch class')}")


def deadlines_sentence(table: pd.DataFrame, bars: pd.DataFrame, reach: pd.DataFrame, bar: float = BAND_BAR) -> str:
    """What sizing the commands to the reach that keeps deadlines (:data:`DEADLINE_ARMS`) does:
    the envelope's reach and the events it dropped, then per (regime, fleet size) each expert's
    share of events reaching the band and the deadline misses it causes, whole reach → reach
    within deadlines (seed means over the seeds both grids have), and in how many pairs an
    expert reaches the band on at least ``bar`` of the events with each."""
    whole, within = DEADLINE_ARMS
    if len(table) == 0 or len(bars) == 0 or within not in set(bars["lever"]):
        return "The grid with commands sized to the reach that keeps deadlines has not run."
    lost = reach.groupby("lever")["dropped"].sum() if len(reach) else pd.Series(dtype=float)
    parts = []
    for (regime, servers, method), g in table.groupby(["regime", "servers", "method"], sort=False):
        by = g.set_index("metric")
        if not {"band_reached_share", "misses_caused"} <= set(by.index):
            continue
        band, miss = by.loc["band_reached_share"], by.loc["misses_caused"]
        parts.append(f"{regime} at {int(servers)} servers, {LABELS.get(method, method)}: {band['mean_y']:.0%} → "
                     f"{band['mean_x']:.0%} of events, at {miss['mean_y']:+,.0f} → {miss['mean_x']:+,.0f} deadline "
                     "misses caused")
    n = {arm: bars[bars["lever"] == arm] for arm in DEADLINE_ARMS}
    return (f"{_reach_said(reach, DEADLINE_ARMS)}The envelope dropped {int(lost.get(within, 0))} events as unreachable "
            f"within deadlines (with the whole reach {int(lost.get(whole, 0))}). Reaching the band, whole reach → "
            f"reach within deadlines: {'; '.join(parts)}. An expert reaches the band on at least {bar:.0%} of events "
            f"in {int(n[within]['meets'].sum())} of the {len(n[within])} (regime, fleet size) pairs with commands "
            f"sized within deadlines (with the whole reach, among the same experts: {int(n[whole]['meets'].sum())} "
            f"of {len(n[whole])}). Each run is scored against its own commands.")


def batch_share_sentence(bars: pd.DataFrame, low_bars: pd.DataFrame, shares: tuple[float, float],
                         bar: float = BAND_BAR) -> str:
    """Whether the band bar's verdict with the batch class (``bars``, share ``shares[0]``)
    holds with the smaller share (``low_bars``, ``shares[1]``), per regime and fleet size."""
    if len(low_bars) == 0 or BATCH_LOW_ARMS[1] not in set(low_bars["lever"]) or len(bars) == 0:
        return "The grid with the smaller batch share has not run."
    high = bars[bars["lever"] == BATCH_ARMS[1]].set_index(["regime", "servers"])
    low = low_bars[low_bars["lever"] == BATCH_LOW_ARMS[1]].set_index(["regime", "servers"])
    same: list[str] = []
    changed: list[str] = []
    for key in high.index.intersection(low.index):
        where = f"{key[0]} at {int(key[1])} servers ({high.loc[key, 'share']:.0%} → {low.loc[key, 'share']:.0%})"
        (same if bool(high.loc[key, "meets"]) == bool(low.loc[key, "meets"]) else changed).append(where)
    return (f"With a batch share of {shares[1]:.0%} instead of {shares[0]:.0%}, the band bar's verdict (an expert "
            f"reaching the band on at least {bar:.0%} of events) stays the same for {'; '.join(same) or 'none'}"
            + (f" and changes for {'; '.join(changed)}" if changed else "") + ".")


def load_lever(without: Path, with_lever: Path, arms: tuple[str, str] = LEVERS) -> pd.DataFrame:
    """:func:`lever_rows` of two grid-command results folders (empty when either has none)."""
    a, b = load_results(Path(without)), load_results(Path(with_lever))
    if a is None or b is None:
        return pd.DataFrame(columns=["method", "servers", "seed", "regime", "lever", *LEVER_METRICS])
    return lever_rows(a.table, b.table, arms)



def sensitivity_table(root: Path, method: str = "lyapunov") -> pd.DataFrame:
    """Per regime and fleet size, ``method``'s seed means under each timing variant of the lever
    (:data:`VARIANTS`, those present): the share of events reaching the band and the tracking
    error, over the seeds every present variant has."""
    parts = []
    for label, rel in VARIANTS.items():
        res = load_results(Path(root) / rel)
        if res is not None:
            parts.append(res.table[res.table["method"] == method].assign(variant=label))
    cols = ["regime", "servers", "variant", "seeds", "band_reached_share", "tracking_mae_rel"]
    if not parts:
        return pd.DataFrame(columns=cols)
    t = pd.concat(parts, ignore_index=True)
    n = t["variant"].nunique()
    common = t.groupby(["servers", "seed"])["variant"].nunique()
    keep = common[common == n].reset_index()[["servers", "seed"]]
    t = t.merge(keep, on=["servers", "seed"])
    out = (t.groupby(["regime", "servers", "variant"], sort=False)
           .agg(seeds=("seed", "nunique"), band_reached_share=("band_reached_share", "mean"),
                tracking_mae_rel=("tracking_mae_rel", "mean")).reset_index())
    order = {v: i for i, v in enumerate(VARIANTS)}
    return out.sort_values(["regime", "servers", "variant"], key=lambda c: c.map(order) if c.name == "variant"
                           else c).reset_index(drop=True)[cols]


def sensitivity_sentence(table: pd.DataFrame, bar: float = BAND_BAR, expert: str | None = None) -> str:
    """Whether the bar's verdict (the method reaching the band on at least ``bar`` of events)
    changes with the lever's timing, per regime and fleet size; ``expert``: the method's name,
    said first."""
    if table.empty or table.loc[table["variant"] != "off", "variant"].nunique() < 2:
        return "The lever's timing variants have not run." if expert is None else f"{expert}: the timing variants have not run."
    same, changed = [], []
    for (regime, servers), g in table[table["variant"] != "off"].groupby(["regime", "servers"], sort=False):
        meets = {r["variant"]: r["band_reached_share"] >= bar for r in g.to_dict("records")}
        where = f"{regime} at {int(servers)} servers"
        if len(set(meets.values())) == 1:
            same.append(f"{where} ({'met' if next(iter(meets.values())) else 'not met'})")
        else:
            changed.append(f"{where} (met with " + ", ".join(v for v, ok in meets.items() if ok) + ")")
    lead = "With" if expert is None else f"For {expert}, with"
    return (f"{lead} the lever's timing varied, the bar's verdict stays the same for {'; '.join(same) or 'none'}"
            + (f" and changes for {'; '.join(changed)}" if changed else "") + ".")


#: The experts whose sensitivity to the lever's timing the timing grids measure.
SENSITIVITY_EXPERTS = ("lyapunov", "thermostat")


def sensitivity_tables(root: Path, methods: tuple[str, ...] = SENSITIVITY_EXPERTS) -> pd.DataFrame:
    """:func:`sensitivity_table` of each of ``methods``, stacked with an ``expert`` column (its label)."""
    parts = [sensitivity_table(root, m).assign(expert=LABELS.get(m, m)) for m in methods]
    return pd.concat(parts, ignore_index=True)


def sensitivity_sentences(tables: pd.DataFrame, bar: float = BAND_BAR) -> str:
    """:func:`sensitivity_sentence` per expert of :func:`sensitivity_tables`, each named."""
    return " ".join(sensitivity_sentence(g, bar, str(expert)) for expert, g in tables.groupby("expert", sort=False))


def runs_sentence(bars: pd.DataFrame, reach: pd.DataFrame, bar: float = BAND_BAR,
                  arms: tuple[str, str] = ENVELOPE_RUNS) -> str:
    """What another way of fitting the envelope (the second of ``arms``: one envelope run per
    event, :data:`ENVELOPE_RUNS`, or unreachable events moved, :data:`REDRAW_ARMS`) changes
    against the joint run (both with the lever, ``arms`` as the arms of :func:`band_bar` and
    :func:`reach_table`): the events generated, moved and dropped, and in how many
    (regime, fleet size) pairs an expert reaches the band on at least ``bar`` of the events."""
    joint, each = arms
    said = RUNS_WORDS[each]
    if len(bars) == 0 or each not in set(bars["lever"]):
        return f"The grid {said[0].lower() + said[1:]} is not in this checkout."
    sums = reach.groupby("lever")[["dropped", "redrawn", "events"]].sum()  # reach_table has them, empty or not
    lost, moved, kept = sums["dropped"], sums["redrawn"], sums["events"]
    met = {arm: bars[bars["lever"] == arm] for arm in arms}
    parts = [f"{r['regime']} at {r['servers']} servers {r['share']:.0%} ({LABELS.get(r['best'], r['best'])})"
             for r in met[each].to_dict("records")]
    n_each, n_joint = int(met[each]["meets"].sum()), int(met[joint]["meets"].sum())
    did = ([f"kept {int(kept.get(each, 0))} down events"]
           + ([f"moved {int(moved.get(each, 0))} events to a start they could be followed from"]
              if moved.get(each, 0) else [])
           + [f"dropped {int(lost.get(each, 0))} events as unreachable"])
    return (f"{said}, the envelope {', '.join(did[:-1])} and {did[-1]} (the joint run: {int(kept.get(joint, 0))} kept, "
            f"{int(lost.get(joint, 0))} dropped), on the same seeds. The expert whose events reach the band most "
            f"often then reaches it on {'; '.join(parts)}: an expert reaches the band on at least {bar:.0%} of events "
            f"in {n_each} of the {len(met[each])} (regime, fleet size) pairs (the joint run: {n_joint} of "
            f"{len(met[joint])}). Each run is scored against its own commands, which the two envelopes size "
            "differently.")


def runs_comparison(root: Path, joint: Path, each: Path, profile: str,
                    arms: tuple[str, str] = ENVELOPE_RUNS) -> tuple[str, pd.DataFrame, str]:
    """The grid with another way of fitting the envelope (``each``, made by grid ``profile``:
    one run per event, or with ``arms`` :data:`REDRAW_ARMS` unreachable events moved) beside
    the joint run's (``joint``), both under ``root``: its status sentence
    (:func:`~ilets.report.grid_command.status_sentence`), the :func:`reach_table` of the two and
    the :func:`runs_sentence` over the experts both have."""
    root = Path(root)
    status = status_sentence(load_results(root / each), root / each, profile)
    runs = lever_table(load_lever(root / joint, root / each, arms), arms=arms)
    reach = reach_table(root / joint, root / each, arms)
    return status, reach, runs_sentence(band_bar(runs, arms=arms), reach, arms=arms)
