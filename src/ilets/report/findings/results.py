"""Chapter 7, the main results: the metrics per fleet size, the paper's improvement table beside
ours, claims 1-3 and 8, the aggregates across fleet sizes, the heuristics against the learners,
the energy the model leaves to scheduling, and the heavier-load variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ilets.config import FleetConfig
from ilets.report import stats as S
from ilets.report import verdicts as V
from ilets.report.findings.base import FINAL, PAPER_LABELS, _label
from ilets.report.report_context import ReportContext, and_join


#: Policies that ignore the servers' state: they spread tasks over slow, power-hungry servers
#: as readily as over good ones, so their energy is no bound a scheduler would meet.
STATE_BLIND = ("random", "round-robin")

#: The heuristic that spends the least energy (its greedy rule picks the least energy per task).
ENERGY_FLOOR = "min-energy"


def energy_room(metrics: pd.DataFrame, baseline: str = "drl", floor: str = ENERGY_FLOOR,
                blind: Sequence[str] = STATE_BLIND) -> pd.DataFrame:
    """The energy the model lets a policy spend, per fleet size, from seed means.

    ``floor_kwh``: the ``floor`` heuristic's (the least any policy here spends);
    ``ceiling_kwh``/``ceiling``: the most any sensible policy spends (every method but the
    state-blind ``blind`` ones); ``range_pct``: ``100 (ceiling - floor) / ceiling``, the room
    scheduling has at all; ``baseline_kwh`` and ``room_pct``: ``100 (baseline - floor) /
    baseline``, the largest energy improvement over ``baseline`` any policy can make here;
    ``blind_kwh``: the state-blind policies' mean, for scale. Empty without the floor or the
    baseline."""
    cols = ["servers", "floor_kwh", "ceiling", "ceiling_kwh", "range_pct", "baseline_kwh", "room_pct", "blind_kwh",
            "cheapest"]
    present = set(metrics["method"]) if len(metrics) else set()
    if floor not in present or baseline not in present:
        return pd.DataFrame(columns=cols)
    means = metrics.groupby(["servers", "method"])["energy_kwh"].mean().unstack("method")
    sensible = means[[m for m in means.columns if m not in blind]]
    out = pd.DataFrame({"floor_kwh": means[floor], "ceiling": sensible.idxmax(axis=1),
                        "ceiling_kwh": sensible.max(axis=1), "baseline_kwh": means[baseline]})
    out["range_pct"] = 100 * (out["ceiling_kwh"] - out["floor_kwh"]) / out["ceiling_kwh"]
    out["room_pct"] = 100 * (out["baseline_kwh"] - out["floor_kwh"]) / out["baseline_kwh"]
    out["blind_kwh"] = means[[m for m in blind if m in means]].mean(axis=1) if any(m in means for m in blind) \
        else np.nan
    out["cheapest"] = means.idxmin(axis=1)  # the floor is the least only where this is the floor itself
    return out.reset_index()[cols]


def energy_room_display(room: pd.DataFrame) -> pd.DataFrame:
    """:func:`energy_room` as the results chapter shows it."""
    return pd.DataFrame({
        "servers": room["servers"], f"{ENERGY_FLOOR} (kWh)": room["floor_kwh"].map("{:.3f}".format),
        "costliest sensible policy": [_label(c) for c in room["ceiling"]],
        "its energy (kWh)": room["ceiling_kwh"].map("{:.3f}".format),
        "range (% of it)": room["range_pct"].map("{:.1f}".format),
        "DRL (kWh)": room["baseline_kwh"].map("{:.3f}".format),
        "room below DRL (%)": room["room_pct"].map("{:.1f}".format),
        "state-blind policies (kWh)": room["blind_kwh"].map("{:.3f}".format)})


def energy_room_sentence(room: pd.DataFrame, paper: Mapping[str, Mapping[str, float]] = S.PAPER_IMPROVEMENTS,
                         baseline: str = "drl") -> str:
    """Which energy effects over ``baseline`` the model can show at all, from :func:`energy_room`:
    the room at each fleet size beside the paper's reported energy gains."""
    if room.empty:
        return f"The {ENERGY_FLOOR} heuristic or {_label(baseline)} is missing, so the energy room is not measured."
    sizes = and_join(f"{r.room_pct:.1f} % at {int(r.servers)}" for r in room.itertuples())
    span = S.range_text(room["range_pct"], ".0f")
    ceilings = and_join(sorted({_label(c) for c in room["ceiling"]}))
    blind = ("more still" if (room["blind_kwh"] > room["ceiling_kwh"]).all()
             else "more at some fleet sizes and less at others")
    parts = [f"The {ENERGY_FLOOR} heuristic, which puts each task where it adds the least energy, spends {span} % "
             f"less than the costliest policy that looks at the fleet ({ceilings}); the state-blind policies "
             f"({and_join(STATE_BLIND)}) spend {blind}. It spends only {sizes} servers less than "
             f"{_label(baseline)}: an energy gain over {_label(baseline)} larger than that would need a policy that "
             f"saves more energy than {ENERGY_FLOOR}, which "
             + ("no policy run here does." if (room["cheapest"] == ENERGY_FLOOR).all() else
                f"only {and_join(sorted(set(room['cheapest']) - {ENERGY_FLOOR}))} does at some fleet size.")]
    gains = {m: v["energy_kwh"] for m, v in paper.items() if "energy_kwh" in v}
    over = {m: int((room["room_pct"] < g).sum()) for m, g in gains.items()}

    def named(methods: Sequence[str]) -> str:
        return and_join(f"{gains[m]:+.2f} % for {_label(m)}" for m in methods)

    everywhere = [m for m, k in over.items() if k == len(room)]
    some = [m for m, k in over.items() if 0 < k < len(room)]
    fits = [m for m, k in over.items() if k == 0]
    if everywhere:
        parts.append(f"The paper's energy gains over {_label(baseline)} of {named(everywhere)} exceed that room at "
                     "every fleet size: effects of that size lie beyond what any policy run here reaches, so they "
                     "cannot be tested here; only effects within the room can.")
    for m in some:
        parts.append(f"The paper's {named([m])} exceeds the room at {over[m]} of {len(room)} fleet sizes.")
    if fits:
        parts.append(f"The paper's {named(fits)} fit{'s' if len(fits) == 1 else ''} within the room.")
    return " ".join(parts)


_FRACTION_WORDS = {Fraction(1, 2): "half", Fraction(1, 3): "one third", Fraction(1, 4): "one quarter",
                   Fraction(1, 5): "one fifth", Fraction(1, 6): "one sixth", Fraction(1, 8): "one eighth",
                   Fraction(1, 10): "one tenth", Fraction(2, 3): "two thirds", Fraction(3, 4): "three quarters"}


def speed_change(main: FleetConfig, variant: FleetConfig) -> str:
    """The variant's servers relative to the main fleet's, in words, from the configured
    MIPS ranges: e.g. ``"servers one sixth slower (500-1,500 MIPS instead of 600-1,800)"``.

    The ratio is that of the midpoints of the ranges (both are uniform steps over the
    range); a simple fraction is named in words, anything else as a percentage."""
    lo, hi = variant.mips
    mlo, mhi = main.mips
    r = (lo + hi) / (mlo + mhi)
    frac = Fraction(r).limit_denominator(12)
    exact = abs(float(frac) - r) < 1e-9  # a simple fraction is named, anything else is a percentage
    ranges = f"({lo:,.0f}-{hi:,.0f} MIPS instead of {mlo:,.0f}-{mhi:,.0f})"
    if abs(r - 1) < 1e-12:
        return f"servers as fast as the main grid's {ranges}"
    if r > 1:
        word = "twice as fast" if exact and frac == 2 else f"{r:.3g} times as fast"
    elif exact and frac == Fraction(1, 2):
        word = "half as fast"
    else:
        name = _FRACTION_WORDS.get(1 - frac) if exact else None
        word = f"{name or f'{1 - r:.0%}'} slower"
    return f"servers {word} {ranges}"


@dataclass(frozen=True, kw_only=True)
class ResultsFindings:
    """Chapter 7: the metrics per fleet size, the improvement table against the paper's, the
    claim verdicts 1-3 and 8, the aggregates across fleet sizes (IQM and probability of
    improvement), the heuristics against the learners, and the heavier-load variant. Every
    interval uses the context's resamples (:attr:`ilets.report.report_context.ReportContext.reps`)."""

    improvements: pd.DataFrame = field(repr=False)
    comparison: pd.DataFrame = field(repr=False)
    pooled: pd.DataFrame = field(repr=False)
    verdicts: dict = field(repr=False)
    components: dict = field(repr=False)
    heuristics: pd.DataFrame = field(repr=False)
    heavy: pd.DataFrame | None = field(repr=False, default=None)
    #: :func:`heavy_summary`: the main grid beside the heavier load, per fleet size
    heavy_summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    heavy_caption: str = ""
    texts: dict = field(default_factory=dict)
    #: :func:`ilets.report.stats.summary_table` of :data:`FINAL` per fleet size and method
    summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: :func:`ilets.report.stats.iqm_table` of each of :data:`FINAL`, with a ``Method`` display name
    iqm: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: :func:`ilets.report.stats.probability_of_improvement` of ILETS over every other method on
    #: each paper metric (``method``: the other one), with a ``Method`` display name
    poi: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: :func:`ilets.report.verdicts.heuristics_per_fleet`: each heuristic against the best
    #: learner at each fleet size, with 95 % CIs
    heuristics_fleet: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: :func:`energy_room`: the energy range the model allows, per fleet size
    energy_room: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)


HEAVY = "heavy-load"


#: The heavier-load caption when the profile has no such variant.
NO_HEAVY = "no variant"

def heavy_purpose(paper_scale: bool) -> str:
    """What the slower servers of the ``heavy-load`` variant do at this results' scale: on the
    full window they load the fleet beyond the calibration; on a reduced window (which keeps
    the arrival rate but not the full window's build-up of queues) they restore the load."""
    if paper_scale:
        return ("On the full window this loads the fleet beyond our calibration of the servers' speeds, which "
                "the paper does not publish, so it shows how the comparisons move with the load")
    return ("A reduced window keeps the arrival rate but not the full window's build-up of queues, so it loads "
            "the same fleet less; the slower servers bring its queues back towards the full window's size")


def heavy_summary(both: pd.DataFrame, reps: int, seed: int = 0) -> pd.DataFrame:
    """The heavier-load table: :func:`ilets.report.stats.summary_table` of :data:`FINAL` per
    fleet size, method and setting (``"main grid"``/``"heavier load"``) of ``both``. Fleet
    sizes are never pooled (a 200-server fleet's energy and queues are not a 50-server one's);
    the chapter shows one table per fleet size (:func:`by_fleet`)."""
    return S.summary_table(both, metrics_cols=FINAL, by=("servers", "method", "setting"), reps=reps, seed=seed)


def by_fleet(summary: pd.DataFrame) -> dict[int, pd.DataFrame]:
    """A summary with a ``servers`` column split into one table per fleet size, smallest first
    (``{}`` for an empty one), for chapters that show each fleet size on its own."""
    if summary is None or len(summary) == 0 or "servers" not in summary:
        return {}
    return {int(s): g.reset_index(drop=True) for s, g in summary.groupby("servers", sort=True)}


def unpool_opposite_signs(comparison: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.report.stats.paper_comparison` rows (``servers=None``) with the pooled
    numbers of each (method, metric) blanked (NaN) where the effects at the fleet sizes differ
    in sign: such effects are reported per fleet size, never averaged into one number."""
    out = comparison.copy()
    per = out[out["servers"].astype(str) != "all"]
    mixed = {k for k, g in per.groupby(["method", "metric"]) if len(set(np.sign(g["ours_pct"]))) > 1}
    rows = (out["servers"].astype(str) == "all") & np.array([k in mixed for k in zip(out["method"], out["metric"])],
                                                            dtype=bool)
    out.loc[rows, ["ours_pct", "ci_low_pct", "ci_high_pct", "ours_minus_paper"]] = np.nan
    out.loc[rows, "paper_in_ci"] = False
    return out


def paper_effect_texts(comparison: pd.DataFrame) -> tuple[dict[str, str], int]:
    """Our effect over DRL for each (method, metric) of :func:`unpool_opposite_signs`' table, as
    :func:`ilets.report.verdicts.effect_numbers` prints it (pooled where every fleet size has one
    sign, else per fleet size), keyed ``ours_drlp_<metric>``/``ours_iletsm_<metric>``; and the
    number of them whose paper figure lies inside one of our intervals (the pooled one, or,
    where it is not pooled, a fleet size's)."""
    texts, inside = {}, 0
    for (method, metric), g in comparison.groupby(["method", "metric"], sort=False):
        per = g[g["servers"].astype(str) != "all"]
        pooled = g[g["servers"].astype(str) == "all"]
        same = len(pooled) > 0 and bool(np.isfinite(pooled["ours_pct"]).all())
        p = pooled.iloc[0] if same else None  # the pooled row, where it is shown
        per_scale = tuple((int(r.servers), r.ours_pct, r.ci_low_pct, r.ci_high_pct) for r in per.itertuples())
        texts[f"ours_{method.replace('+', 'p').replace('-', 'm')}_{metric}"] = V.effect_numbers(
            same or len(per) == 1, p["ours_pct"] if p is not None else np.nan,
            p["ci_low_pct"] if p is not None else np.nan, p["ci_high_pct"] if p is not None else np.nan, per_scale)
        inside += bool(p["paper_in_ci"]) if p is not None else bool(per["paper_in_ci"].any())
    return texts, inside


def paper_tables(ctx: ReportContext) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(improvements, comparison per fleet size, pooled comparison)``: the paper's
    improvement table and ours (:func:`ilets.report.stats.improvement_table`, paired, over DRL),
    the pooled numbers blanked where the fleet sizes differ in sign (:func:`unpool_opposite_signs`)."""
    improvements = S.improvement_table(ctx.metrics, baseline="drl", paired=True, reps=ctx.reps)
    comparison = unpool_opposite_signs(S.paper_comparison(improvements, servers=None))
    return improvements, comparison, comparison[comparison["servers"].astype(str) == "all"].reset_index(drop=True)


def across_scales(metrics: pd.DataFrame, reps: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(iqm, poi)``: the IQM of the normalised score of each of :data:`FINAL`
    (:func:`ilets.report.stats.iqm_table`; a method lacking a fleet size is left out, silently:
    the chapter's caption says so) and ILETS's probability of improvement over every other
    method on each paper metric (:func:`ilets.report.stats.probability_of_improvement`), both
    with ``reps`` resamples and a ``Method`` column of display names."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        parts = [S.iqm_table(metrics, c, reps=reps, seed=seed) for c in FINAL]
    iqm = pd.concat(parts, ignore_index=True)
    methods = set(metrics["method"])
    others = [y for y in S.method_order(methods) if y != "ilets"] if "ilets" in methods else []
    rows = [S.probability_of_improvement(metrics, "ilets", y, c, reps=reps, seed=seed)
            for y in others for c in PAPER_LABELS]
    poi = pd.DataFrame(rows, columns=["x", "y", "metric", "prob", "ci_low", "ci_high", "n_x", "n_y", "tasks"]) \
        .rename(columns={"y": "method"})
    return (iqm.assign(Method=[_label(x) for x in iqm["method"]]),
            poi.assign(Method=[_label(x) for x in poi["method"]]))


def _beat_everything(heuristics: pd.DataFrame) -> list[str]:
    """The heuristics that beat every learner at every fleet size on every metric of
    :func:`ilets.report.verdicts.heuristics_vs_learners` (``beats_all`` on each row), as labels."""
    if heuristics is None or heuristics.empty or "beats_all" not in heuristics:
        return []
    every = heuristics.groupby("heuristic", sort=False)["beats_all"].all()
    return [_label(h) for h, ok in every.items() if ok]


def results_lead(verdicts: Mapping[int, str], inside: int, of: int, beaten_by: Sequence[str] = ()) -> str:
    """Chapter 7's finding in at most three plain sentences: the verdicts of claims 1, 2, 3 and 8
    (``verdicts``), how many of the paper's ``of`` improvement figures lie inside one of our 95%
    intervals (``inside``), and the heuristics better than every learner on every paper metric at
    every fleet size (``beaten_by``, labels)."""
    text = (f"That pre-training (DRL+) improves on plain DRL is {verdicts.get(1, 'not measured')}, that online "
            f"imitation (ILETS-) does is {verdicts.get(2, 'not measured')}, and that DRL+ beats ILETS- is "
            f"{verdicts.get(3, 'not measured')}; the paper's improvement figure lies inside our 95% interval for "
            f"{inside} of its {of} figures.")
    text += f" That ILETS beats every heuristic baseline is {verdicts.get(8, 'not measured')}"
    if beaten_by:
        text += (f": {and_join(beaten_by)} {'is' if len(beaten_by) == 1 else 'are'} better than every learner on "
                 "response time, energy and success rate at every fleet size")
    return text + "."


def results_findings(ctx: ReportContext) -> ResultsFindings:
    """Everything chapter 7 states (see :class:`ResultsFindings`)."""
    m, reps = ctx.metrics, ctx.reps
    improvements, comparison, pooled = paper_tables(ctx)
    summary = S.summary_table(m, metrics_cols=FINAL, reps=reps)
    iqm, poi = across_scales(m, reps)
    verdicts = {1: V.claim_improves(m, 1, "drl+", "drl", reps=reps), 2: V.claim_improves(m, 2, "ilets-", "drl", reps=reps),
                3: V.claim_improves(m, 3, "drl+", "ilets-", reps=reps), 8: V.claim_beats_heuristics(m, reps=reps)}
    components = {k: V.component_table(v.effects) for k, v in verdicts.items()}
    effect_texts, inside = paper_effect_texts(comparison)
    drlp_iletsm = V.component_effects(m, "drl+", "ilets-", "avg_response_s", False, reps=reps)
    texts = {"paper_in_ci": f"{inside} of {len(pooled)}", **effect_texts,
             # per fleet size: the effects differ in sign across sizes
             "drlp_vs_iletsm": "; ".join(f"{V.describe_effect(drlp_iletsm, s)} at {s} servers"
                                         for s in sorted(m["servers"].unique()))}
    for method, vals in S.PAPER_IMPROVEMENTS.items():
        for metric, val in vals.items():
            texts[f"paper_{method.replace('+', 'p').replace('-', 'm')}_{metric}"] = f"+{val:.2f} %"
    effects = V.heuristic_effects(m, reps=reps)
    heuristics = V.heuristics_vs_learners(m, reps=reps, effects=effects)
    per_fleet = V.heuristics_per_fleet(m, reps=reps, effects=effects)
    texts["heuristic_sentence"] = V.describe_heuristics(heuristics)
    texts["lead"] = results_lead({k: v.verdict for k, v in verdicts.items()}, inside, len(pooled),
                                 _beat_everything(heuristics))
    room = energy_room(m)
    texts["energy_room"] = energy_room_sentence(room)
    heavy = ctx.variant_metrics(HEAVY)
    vrun = ctx.variant_run(HEAVY)
    texts["heavy_purpose"] = heavy_purpose(ctx.paper_scale)
    if heavy.empty or vrun is None:
        texts["heavy_text"] = f"{ctx.variant_missing_text(HEAVY)}, so this check is not shown on this page."
        texts["heavy_caption"] = NO_HEAVY
        return ResultsFindings(improvements=improvements, comparison=comparison, pooled=pooled, verdicts=verdicts,
                               components=components, heuristics=heuristics, heavy=None, heavy_summary=pd.DataFrame(),
                               heavy_caption="", texts=texts, summary=summary, iqm=iqm, poi=poi,
                               heuristics_fleet=per_fleet, energy_room=room)
    caption = speed_change(ctx.run.fleet, vrun.fleet)
    texts["heavy_caption"] = caption
    main = m[m["servers"].isin(heavy["servers"].unique()) & m["method"].isin(heavy["method"])]
    both = pd.concat([main.assign(setting="main grid"), heavy.assign(setting="heavier load")], ignore_index=True)
    parts = [f"The variant ran {and_join(_label(x) for x in S.method_order(heavy['method'].unique()))} at "
             f"{and_join(sorted(int(s) for s in heavy['servers'].unique()))} servers, with {caption}."]
    if {"drl", "drl+"} <= set(heavy["method"]):
        for setting, table in (("main grid", main), ("heavier load", heavy)):
            e = V.component_effects(table, "drl+", "drl", "avg_response_s", False, reps=reps)
            parts.append(f"In the {setting}, DRL+ is " + "; ".join(
                f"{V.describe_effect(e, at)} at {at} servers" for at in sorted(int(x) for x in table["servers"].unique()))
                + " on response time.")
    if {"greedy-cost", "drl+"} <= set(heavy["method"]):
        e = V.component_effects(heavy, "greedy-cost", "drl+", "avg_response_s", False, reps=reps)
        parts.append("Under the heavier load greedy-cost is " + "; ".join(
            f"{V.describe_effect(e, at)} at {at} servers" for at in sorted(int(x) for x in heavy["servers"].unique()))
            + " on response time.")
    texts["heavy_text"] = " ".join(parts)
    return ResultsFindings(improvements=improvements, comparison=comparison, pooled=pooled, verdicts=verdicts,
                           components=components, heuristics=heuristics, heavy=both,
                           heavy_summary=heavy_summary(both, reps),
                           heavy_caption=caption, texts=texts, summary=summary, iqm=iqm, poi=poi,
                           heuristics_fleet=per_fleet, energy_room=room)
