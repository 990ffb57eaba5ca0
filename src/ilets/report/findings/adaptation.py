"""Chapter 6, OAIL and adaptation: the workload's events, oscillation (claim 7), convergence
(claim 5), cumulative reward (claim 6), the curve measures of every method, the OAIL counters
and effect, and the upcoming-window variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence, TypedDict

import numpy as np
import pandas as pd

from ilets.method_table import learners_with
from ilets.report import stats as S
from ilets.report import verdicts as V
from ilets.report.findings.base import (DIRECTIONS, FINAL, REFERENCE, VariantFindings, _label, _no_data,
                                        _status_counts, says)
from ilets.report.report_context import ReportContext, and_join


def burst_sentence(pairs: pd.DataFrame) -> str:
    """ILETS against DRL after the bursts, from :func:`ilets.report.stats.compare_pairs` rows
    (``event``, ``y``, ``verdict``): counts of (fleet size, burst) cases by verdict."""
    v = pairs[pairs["event"].astype(str).str.startswith("burst") & (pairs["y"] == "drl")]["verdict"].value_counts() \
        if len(pairs) else pd.Series(dtype=int)
    if int(v.sum()) == 0:
        return "after the bursts, ILETS and DRL cannot be compared here."
    return (f"after the bursts, ILETS oscillates less than DRL (resolved) in {int(v.get('better', 0))} of "
            f"{int(v.sum())} (fleet size, burst) cases, more (resolved) in {int(v.get('worse', 0))}, and "
            f"indistinguishably in {int(v.get('unresolved', 0))}.")


def oscillation_pairs(osc: pd.DataFrame, reps: int) -> pd.DataFrame:
    """ILETS against each other learner on ``mad`` per (servers, event), paired by seed;
    ``verdict == "better"``: ILETS oscillates less."""
    if osc.empty:
        return pd.DataFrame(columns=["servers", "event", "x", "y", "metric", "verdict"])
    return _no_data(S.compare_pairs(osc, ["ilets"], ["drl", "drl+", "ilets-"], ["mad"], ("servers", "event"),
                                    directions=DIRECTIONS, reps=reps))


@dataclass(frozen=True, kw_only=True)
class AdaptationFindings:
    """Chapter 6: events, oscillation (claim 7), convergence (claim 5), cumulative reward
    (claim 6), the OAIL counters and effect, and the upcoming-window variant."""

    markers: dict
    event_order: list
    span_decisions: int
    gap: pd.DataFrame = field(repr=False)
    osc_reward: pd.DataFrame = field(repr=False)
    osc_gap: pd.DataFrame = field(repr=False)
    osc_summary: pd.DataFrame = field(repr=False)
    claims: dict = field(repr=False, default_factory=dict)
    components: dict = field(repr=False, default_factory=dict)
    conv: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    conv_summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    cum: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    leaders: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    lead_table: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    oail_summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    oail_effect: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    upcoming: VariantFindings | None = None
    texts: dict = field(default_factory=dict)
    #: :func:`curve_measures`: every method's convergence and oscillation on the gap to the reference
    measures: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: :func:`ilets.report.verdicts.cold_start_windows`: claim 4 over each window of first decisions
    cold_windows: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)


def _event_names() -> dict[str, str]:
    from ilets.workloads.workload import RATE_SHAPE

    return {**{f"burst_{i}": f"burst ({s:.0f} s)" for i, (s, _, _) in enumerate(RATE_SHAPE["bursts"])},
            "trend_change": f"trend change ({RATE_SHAPE['trend_change']:.0f} s)"}


#: Display names of the workload's designed events (their times in the paper's window).
EVENT_NAMES = _event_names()

def event_list_text(order: Sequence[str], names: Mapping[str, str] = EVENT_NAMES) -> str:
    """The events in ``order`` by their display names, comma-separated; ``"none"`` for none."""
    return ", ".join(names.get(e, e) for e in order) or "none"


#: Share of submitted OAIL windows that must come back for the emulators to "mostly keep up".
KEEP_UP_SHARE = 0.9

def oail_throughput_text(oail: pd.DataFrame, clock: str, latency_s: float) -> str:
    """How OAIL's emulators ran and whether they kept up, from the ILETS- and ILETS cells'
    metrics (``oail``: their rows, with ``oail_requests``, ``oail_completed``,
    ``oail_dropped``) and the run's ``oail.clock`` and ``oail.latency_s``.

    "keep up" when no window was dropped, "mostly keep up" when at least
    :data:`KEEP_UP_SHARE` of the windows came back, else "cannot keep up"."""
    requests, completed, dropped = (int(oail[c].sum()) for c in ("oail_requests", "oail_completed", "oail_dropped"))
    how = {"simulated": ("in simulated time: a window's plans reach the learner "
                         f"{1e3 * latency_s:.0f} ms of simulated time after it was submitted (the measured cost "
                         "of one request), whatever the host's speed"),
           "wall": "in wall-clock time, so how many windows they serve depends on the host's speed",
           "sync": "synchronously: the learner waits for every plan"}.get(clock, f"with clock {clock!r}")
    if not requests:
        return f"The emulators run {how}; no window was submitted in these results"
    share = completed / requests
    keep = "keep up" if dropped == 0 else "mostly keep up" if share >= KEEP_UP_SHARE else "cannot keep up"
    return (f"The emulators run {how}. "
            f"They {keep}: over the {len(oail):,} ILETS- and ILETS cells, {requests:,} windows were submitted, "
            f"{completed:,} ({100 * share:.1f}%) came back and {dropped:,} were dropped")


#: Convergence settings: those of the claim-5 verdict (:func:`ilets.report.verdicts.claim_convergence`).
class ConvergenceSettings(TypedDict):
    """The keyword arguments of the convergence measures (:data:`CONVERGENCE`)."""

    tol: float
    final_frac: float
    smooth: int


CONVERGENCE: ConvergenceSettings = {"tol": 0.05, "final_frac": 0.2, "smooth": 3}

OAIL_COLS = ("oail_requests", "oail_completed", "oail_applied", "oail_dropped", "oail_failed", "oail_updates",
             "oail_lag_p50")


def curve_measures(curves: pd.DataFrame, events, reference: str = REFERENCE, tol: float = 0.05,
                   final_frac: float = 0.2, smooth: int = 3) -> pd.DataFrame:
    """Every method's curve measures per fleet size, heuristics included, so the reader sees
    what a policy that does not learn scores on them.

    Per (servers, method), means over seeds: ``settled`` (share of runs whose gap to
    ``reference`` settles, :func:`ilets.report.stats.gap_convergence_table`),
    ``reference_settled`` (share of seeds on which the reference itself settles: where it is
    0 the convergence claim is not testable), ``convergence_decisions`` (censored at the run's
    length, :func:`ilets.report.verdicts.convergence_cells`), ``raw_settled`` (the same measure on
    the raw reward, :func:`ilets.report.stats.convergence_table`), ``mad_gap`` and ``mad_raw``
    (oscillation after the trend change on the gap and on the raw reward). ``events``: as
    :func:`ilets.report.stats.oscillation_table` takes them (None: no oscillation columns)."""
    cols = ["servers", "method", "settled", "reference_settled", "convergence_decisions", "raw_settled", "mad_gap",
            "mad_raw"]
    if curves is None or curves.empty or reference not in set(curves["method"]):
        return pd.DataFrame(columns=cols)
    keys = ["servers", "method"]
    conv = V.convergence_cells(curves, tol, final_frac, smooth, reference)
    out = conv.groupby(keys)[["settled", "reference_settled", "convergence_decisions"]].mean()
    raw = S.convergence_table(curves, tol=tol, final_frac=final_frac, smooth=smooth)
    out["raw_settled"] = raw.groupby(keys)["settled"].mean()
    if events is not None:
        for name, table in (("mad_gap", S.gap_oscillation_table(curves, events, reference)),
                            ("mad_raw", S.oscillation_table(curves, events))):
            trend = table[table["event"] == "trend_change"] if len(table) else table
            out[name] = trend.groupby(keys)["mad"].mean() if len(trend) else np.nan
    out = out.reindex(columns=cols[2:]).reset_index()
    order = {m: i for i, m in enumerate(S.method_order(out["method"].unique()))}
    return out.sort_values(["servers", "method"], key=lambda c: c.map(order) if c.name == "method" else c) \
        .reset_index(drop=True)[cols]


def curve_measures_sentence(measures: pd.DataFrame, reference: str = REFERENCE) -> str:
    """What the curve measures give a policy that does not learn, against the learners, from
    :func:`curve_measures`: the heuristics' and the learners' oscillation after the trend change
    on the raw reward and on the gap, and the fleet sizes where the reference settles."""
    from ilets.config import HEURISTICS
    from ilets.method_table import LEARNERS

    if measures.empty:
        return f"The {reference} heuristic is not in these results, so the curve measures cannot be taken."
    h = measures[measures["method"].isin(HEURISTICS) & ~measures["method"].isin(["random", "round-robin"])]
    learners = measures[measures["method"].isin(LEARNERS)]
    ref = measures[measures["method"] == reference].set_index("servers")["reference_settled"]
    testable = [int(s) for s, v in ref.items() if v > 0]
    parts = []
    if "mad_gap" in measures and measures["mad_gap"].notna().any():
        def per(t, col):
            return "/".join(f"{v:.4f}" for v in t.groupby("servers")[col].mean())
        sizes = "/".join(str(int(x)) for x in sorted(measures["servers"].unique()))
        parts.append(f"After the trend change the heuristics that look at the fleet oscillate by {per(h, 'mad_raw')} "
                     f"on the raw reward (mean absolute change between windows at {sizes} servers) against the "
                     f"learners' {per(learners, 'mad_raw')}: the raw measure follows the load. On the gap to "
                     f"{reference} they oscillate by {per(h, 'mad_gap')} and the learners by "
                     f"{per(learners, 'mad_gap')}.")
    settle = h.groupby("servers")["settled"].mean()
    parts.append(f"On the gap those heuristics settle in {S.range_text(settle, '.0%')} of their runs, against "
                 f"{S.range_text(h.groupby('servers')['raw_settled'].mean(), '.0%')} on the raw reward. "
                 + (f"{reference} itself settles on the raw reward at "
                    f"{and_join(f'{s} servers ({ref[s]:.0%} of seeds)' for s in testable)} only, so convergence is "
                    f"judged there and is not testable at the other fleet sizes."
                    if testable and len(testable) < len(ref) else
                    f"{reference} settles at every fleet size, so convergence is judged at all of them."
                    if testable else f"{reference} itself never settles, so convergence is not testable here."))
    return " ".join(parts)


def cold_windows_display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.report.verdicts.cold_start_windows` as the chapter shows it."""
    return pd.DataFrame({"first decisions": [f"{n:,}" for n in table["decisions"]], "verdict": table["verdict"],
                         "comparisons holding at every fleet size": [f"{a}/{n}" for a, n in
                                                                     zip(table["holds"], table["components"])],
                         "comparisons reversed at some fleet size": [f"{a}/{n}" for a, n in
                                                                     zip(table["reverses"], table["components"])]})


def cold_windows_sentence(table: pd.DataFrame) -> str:
    """Whether claim 4's verdict depends on the window of first decisions it is judged over."""
    if table.empty:
        return "No learner curves are in these results, so the cold start is not judged."
    verdicts = dict(zip(table["decisions"], table["verdict"]))
    listed = and_join(f"{v} over the first {n:,}" for n, v in verdicts.items())
    if len(set(verdicts.values())) == 1:
        return f"The verdict is the same over every window: {listed} decisions."
    return f"The verdict depends on the window: {listed} decisions."


def adaptation_lead(verdicts: Mapping[int, str], oail_effect: pd.DataFrame,
                    winners: Mapping[int, str] | None = None) -> str:
    """Chapter 6's finding in at most three plain sentences: the verdicts of claims 5, 6 and 7
    (``verdicts``), what online imitation does to the whole-pass mean reward at each fleet size
    (``oail_effect``: rows of :func:`ilets.report.stats.compare` with ``servers``, ``metric``,
    ``rel_pct`` and ``verdict``) and the leader in cumulative reward at the end of the pass
    (``winners``: fleet size -> method label)."""
    text = (f"Of the paper's three claims on learning online, that ILETS- converges faster than DRL is "
            f"{verdicts.get(5, 'not measured')}, that ILETS collects the most reward fastest is "
            f"{verdicts.get(6, 'not measured')}, and that ILETS oscillates least after a trend change is "
            f"{verdicts.get(7, 'not measured')}.")
    eff = oail_effect[oail_effect["metric"] == "mean_reward"] if len(oail_effect) else oail_effect
    if len(eff):
        by = {int(k): set(g["verdict"]) for k, g in eff.groupby("servers")}
        parts: list[str] = []
        for word, verdict in (("raises", "better"), ("lowers", "worse")):
            sizes = [k for k, v in by.items() if v == {verdict}]
            if sizes:
                rel = eff[eff["servers"].isin(sizes)]["rel_pct"].abs()
                parts.append(f"{word} {'the whole-pass mean reward' if not parts else 'it'} at "
                             f"{and_join([f'{k:,}' for k in sizes])} servers (by {S.range_text(rel, '.1f')}%)")
        mixed = [k for k, v in by.items() if v not in ({"better"}, {"worse"})]
        if mixed:
            parts.append(f"{'changes the whole-pass mean reward' if not parts else 'changes it'} nowhere clearly at "
                         f"{and_join([f'{k:,}' for k in mixed])} servers")
        text += " Online imitation " + " and ".join(parts) + ", against the same learner without it."
    if winners:
        by_method: dict[str, list[int]] = {}
        for k, m in sorted(winners.items()):
            by_method.setdefault(m, []).append(int(k))
        text += (" The highest cumulative reward at the end of the pass is "
                 + and_join([f"{m}'s at {and_join([f'{k:,}' for k in ks])} servers" for m, ks in by_method.items()])
                 + ".")
    return text


def adaptation_findings(ctx: ReportContext) -> AdaptationFindings:
    """Everything chapter 6 states (see :class:`AdaptationFindings`)."""
    learn, lm, reps = ctx.learner_curves, ctx.learner_metrics, ctx.reps
    seeds = sorted(int(s) for s in ctx.curves["seed"].unique())
    ranges = {s: ctx.event_ranges(s) for s in seeds}
    markers = S.event_markers(ranges)
    event_order = sorted(markers, key=markers.__getitem__)
    first_range = next(iter(ranges[seeds[0]].values()), (0, 0)) if seeds else (0, 0)
    gap = S.relative_curves(ctx.curves, REFERENCE)
    gap = gap[gap["method"].isin(learn["method"].unique())] if len(gap) else gap
    texts: dict[str, str] = {"event_list": event_list_text(event_order)}
    texts["gap_text"] = (f"the same curve minus the {REFERENCE} heuristic's curve on the same tasks" if len(gap)
                         else f"(the {REFERENCE} heuristic is not in this results store, so the workload's own "
                              "swings cannot be removed here)")

    # oscillation after every event (claim 7 is the trend change; the bursts are the paper's other claim)
    def ev(s):
        return ranges.get(int(s), {})

    osc_reward = S.oscillation_table(learn, ev) if len(learn) else pd.DataFrame()
    osc_gap = S.oscillation_table(gap, ev) if len(gap) else pd.DataFrame()
    osc_summary = pd.concat(
        [S.summary_table(o, metrics_cols=("mad",), by=("servers", "event", "method"), reps=reps).assign(metric=name)
         for o, name in ((osc_reward, "reward"), (osc_gap, f"gap to {REFERENCE}")) if len(o)],
        ignore_index=True) if len(osc_reward) else pd.DataFrame()
    claims = {5: V.claim_convergence(ctx.curves, reps=reps, **CONVERGENCE), 6: V.claim_cumulative(ctx.curves, reps=reps),
              7: V.claim_oscillation(ctx.curves, V.trend_change_ranges(ctx.profile, ctx.out), reps=reps)}
    texts["claim5_evidence"] = claims[5].evidence
    components = {k: V.component_table(v.effects) for k, v in claims.items()}
    texts["osc_bursts"] = burst_sentence(oscillation_pairs(osc_reward, reps))
    texts["osc_gap_bursts"] = burst_sentence(oscillation_pairs(osc_gap, reps)) if len(osc_gap) else \
        "nothing is measured."
    if len(osc_reward):  # the raw reward's oscillation, for contrast with the claim's measure (the gap)
        raw_trend = osc_reward[osc_reward["event"] == "trend_change"]
        raw_eff = pd.concat([V.component_effects(raw_trend, "ilets", b, "mad", False, reps=reps)
                             for b in ("drl", "drl+", "ilets-")], ignore_index=True)
        texts["osc_raw_trend"] = _status_counts(V.component_table(raw_eff))
    else:
        texts["osc_raw_trend"] = "nothing is measured"
    texts["osc_trend"] = _status_counts(components[7])
    texts["verdict_7"] = claims[7].verdict

    # convergence: the censored measure of the claim-5 verdict, on the gap to the reference
    with_ref = ctx.curves[ctx.curves["method"].isin([*learn["method"].unique(), REFERENCE])]
    conv = V.convergence_cells(with_ref, **CONVERGENCE) if len(learn) else pd.DataFrame()
    conv = conv[conv["method"] != REFERENCE] if len(conv) else conv
    conv_summary = S.summary_table(conv, metrics_cols=("convergence_decisions",), reps=reps) if len(conv) \
        else pd.DataFrame()
    if len(conv):
        unsettled = conv.assign(unsettled=~conv["settled"]).groupby(["servers", "method"])["unsettled"].sum()
        testable = conv.groupby(["servers", "method"])["testable"].all().map({True: "yes", False: "no"})
        conv_summary = conv_summary.merge(unsettled.reset_index(), on=["servers", "method"], how="left") \
            .merge(testable.reset_index(), on=["servers", "method"], how="left")
    texts["conv_settled"] = f"{conv['settled'].mean():.0%}" if len(conv) else "n/a"
    trend_events = V.trend_change_ranges(ctx.profile, ctx.out)
    measures = curve_measures(ctx.curves, trend_events, REFERENCE, **CONVERGENCE)
    texts["measures_text"] = curve_measures_sentence(measures)
    cold_windows = V.cold_start_windows(ctx.curves, reps=reps)
    texts["cold_windows_text"] = cold_windows_sentence(cold_windows)
    texts["conv_text"] = _status_counts(components[5])
    texts["verdict_5"] = claims[5].verdict

    # cumulative reward
    cum = S.cumulative_reward(learn) if len(learn) else pd.DataFrame()
    leaders = S.leader_table(cum)
    final_summary = S.summary_table(S.last_checkpoint(cum), metrics_cols=("cum_reward",), reps=reps) if len(cum) \
        else pd.DataFrame()
    lead_table = leaders.merge(S.ci_table(final_summary, formats={"cum_reward": ",.1f"}), on=["servers", "method"],
                               how="left") if len(leaders) else leaders
    if len(lead_table):  # display strings: a share, and a blank where the method does not lead at the end
        lead_table = lead_table.assign(share_led=lead_table["share_led"].map("{:.0%}".format),
                                       leads_from=[("" if pd.isna(v) else f"{v:,.0f}") for v in lead_table["leads_from"]],
                                       Method=[_label(m) for m in lead_table["method"]])
        lead_table = lead_table[["servers", "Method", "share_led", "final_rank", "leads_from", "cum_reward"]]
    il = leaders[leaders["method"] == "ilets"] if len(leaders) else leaders
    at = il[il["final_rank"] == 1] if len(il) else il
    if len(il):
        texts["cum_lead_text"] = (f"ILETS has the highest mean cumulative reward at the end of the pass at {len(at)} "
                                  f"of {len(il)} fleet sizes"
                                  + (" (leading without interruption from decision " + ", ".join(
                                      f"{int(r.leads_from):,} at {r.servers} servers" for r in at.itertuples()) + ")"
                                     if len(at) else ""))
    else:
        texts["cum_lead_text"] = "ILETS is not in this results store"
    winners = leaders[leaders["final_rank"] == 1] if len(leaders) else leaders
    texts["cum_winners"] = "; ".join(f"{r.servers} servers: {_label(r.method)}" for r in winners.itertuples()) \
        or "none"
    texts["cum_text"] = _status_counts(components[6])
    texts["verdict_6"] = claims[6].verdict

    # OAIL counters and effect
    cols = [c for c in OAIL_COLS if c in lm]
    with_oail = lm[lm["method"].isin(learners_with(oail=True))]
    oail_summary = S.summary_table(with_oail, metrics_cols=cols, reps=reps) if len(with_oail) and cols \
        else pd.DataFrame()
    if len(oail_summary):
        totals = with_oail.groupby("servers")[["oail_requests", "oail_applied", "oail_dropped", "oail_failed"]].sum()
        texts["oail_share"] = S.range_text(totals["oail_applied"] / totals["oail_requests"], ".0%")
        texts["oail_lost"] = (f"{int(totals['oail_dropped'].sum()):,} dropped and "
                              f"{int(totals['oail_failed'].sum()):,} failed")
        texts["oail_lag"] = f"{with_oail['oail_lag_p50'].median():,.0f}"
    else:
        texts.update(oail_share="n/a", oail_lost="n/a", oail_lag="n/a")
    effect = _no_data(pd.concat([S.compare(lm, x, y, FINAL, reps=reps) for x, y in (("ilets-", "drl"), ("ilets", "drl+"))],
                                ignore_index=True))
    effect = effect.assign(pair=[f"{_label(x)} vs {_label(y)}" for x, y in zip(effect["x"], effect["y"])]) \
        if len(effect) else effect
    er = effect[effect["metric"] == "mean_reward"] if len(effect) else effect
    texts["oail_effect"] = "; ".join(f"{_label(r['x'])} vs {_label(r['y'])} at {r['servers']} servers: {says(r)}"
                                     for r in er.to_dict("records")) or "not measured"

    texts["lead"] = adaptation_lead({k: texts[f"verdict_{k}"] for k in (5, 6, 7)}, effect,
                                    {int(r.servers): _label(r.method) for r in winners.itertuples()}
                                    if len(winners) else None)

    # the upcoming window
    um = ctx.variant_metrics("upcoming")
    up = _no_data(S.variant_comparison(lm, um, (*FINAL, "oail_applied"), directions=DIRECTIONS, reps=reps)) \
        if len(um) else pd.DataFrame()
    if up.empty:
        up_text = f"{ctx.variant_missing_text('upcoming')}, so the two windows are not compared here."
    else:
        up_text = ("With the upcoming window instead of the past one, the whole-pass mean reward changes by "
                   + "; ".join(f"{says(r)} for {_label(r['method'])} at {r['servers']} servers"
                               for r in up[up["metric"] == "mean_reward"].to_dict("records"))
                   + " (positive = the upcoming window is better). Peeking at future tasks is not available to a "
                   "real scheduler, so a gain here is an upper bound on what a better-informed OAIL could add, not "
                   "a result the paper's setting can reach.")
    return AdaptationFindings(markers=markers, event_order=event_order,
                              span_decisions=int(first_range[1] - first_range[0]), gap=gap, osc_reward=osc_reward,
                              osc_gap=osc_gap, osc_summary=osc_summary, claims=claims, components=components, conv=conv,
                              conv_summary=conv_summary, cum=cum, leaders=leaders, lead_table=lead_table,
                              oail_summary=oail_summary, oail_effect=effect,
                              upcoming=VariantFindings("upcoming", up, up_text), texts=texts, measures=measures,
                              cold_windows=cold_windows)
