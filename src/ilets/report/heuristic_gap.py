"""Does any learner beat the best heuristic? The gap per fleet size, for one learner family.

The study's plainest question, asked of each learner family (the authors' flat policy, the
per-server policy): at each fleet size, take the learner with the best seed mean on a measure
and the heuristic with the best seed mean on it, and compare them paired by seed with the
book's resampler (:func:`ilets.report.verdicts.component_effects`). Both picks are made on the
data they are compared on: the learner's favours the learners, the heuristic's the heuristics,
so neither side is handicapped. A learner *beats* the best heuristic at a fleet size when the
book's rule calls its improvement resolved (``verdict`` "better": the 95 % interval above zero,
with at least two seeds on each side, :func:`ilets.report.stats.effect_verdict`), and *loses*
when it calls it "worse".
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from ilets.config import HEURISTICS
from ilets.method_table import LEARNERS, METHOD_LABELS
from ilets.metric_table import names as metric_names
from ilets.report import stats as S
from ilets.report.verdicts.heuristics import BEST_HEURISTIC, best_heuristic_rows
from ilets.report.verdicts.rule import component_effects

#: the measures of the question: what schedules feel (response time) and what the learners are
#: trained on (the mean reward)
MEASURES = ("avg_response_s", "mean_reward")
MEASURE_NAMES = metric_names("label", MEASURES)
COLUMNS = ["measure", "servers", "learner", "heuristic", "learner_mean", "heuristic_mean", "effect_pct",
           "ci_low_pct", "ci_high_pct", "seeds", "verdict", "beats"]


def gap_table(metrics: pd.DataFrame, measures: Sequence[str] = MEASURES, heuristics: Sequence[str] = HEURISTICS,
              learners: Sequence[str] = LEARNERS, reps: int = S.DEFAULT_REPS, seed: int = 0) -> pd.DataFrame:
    """One row per (measure, fleet size): the best learner against the best heuristic.

    ``metrics`` holds the learner cells of one family and the heuristic cells on the same
    seeds and fleets. ``effect_pct`` is the learner's improvement over the heuristic (positive:
    the learner is better), with its 95 % interval and the book's ``verdict`` of it; ``beats``
    is True when that verdict is "better" (never from one seed). Fleet sizes without a learner or a heuristic are left out.
    """
    rows = []
    for measure in measures:
        if measure not in metrics:
            continue
        higher = S.HIGHER_IS_BETTER[measure]
        best_h, chosen = best_heuristic_rows(metrics, measure, heuristics)
        for servers, heuristic in sorted(chosen.items()):
            at = metrics[(metrics["servers"] == servers) & metrics["method"].isin(learners)]
            means = at.groupby("method")[measure].mean().dropna()
            if means.empty:
                continue
            learner = means.idxmax() if higher else means.idxmin()
            pair = pd.concat([at[at["method"] == learner], best_h[best_h["servers"] == servers]])
            e = component_effects(pair, learner, BEST_HEURISTIC, measure, higher, reps=reps, seed=seed)
            r = e[e["servers"].astype(str) == str(servers)]
            if r.empty:
                continue
            r = r.iloc[0]
            rows.append({"measure": measure, "servers": int(servers), "learner": learner, "heuristic": heuristic,
                         "learner_mean": r["mean_a"], "heuristic_mean": r["mean_b"], "effect_pct": r["effect_pct"],
                         "ci_low_pct": r["ci_low_pct"], "ci_high_pct": r["ci_high_pct"],
                         "seeds": int(min(r["n_a"], r["n_b"])), "verdict": r["verdict"],
                         "beats": r["verdict"] == "better"})
    return pd.DataFrame(rows, columns=COLUMNS)


def gap_sentence(table: pd.DataFrame, family: str) -> str:
    """The answer in one or two sentences for ``family`` (e.g. "the authors' flat policy")."""
    if table.empty:
        return f"With {family} there are no learner and heuristic cells on the same fleets to compare."
    wins = table[table["beats"]]
    parts = []
    for measure, g in table.groupby("measure", sort=False):
        sizes = ", ".join(f"{r.effect_pct:+.1f} % at {r.servers} servers ({METHOD_LABELS.get(r.learner, r.learner)} "
                          f"vs {METHOD_LABELS.get(r.heuristic, r.heuristic)})" for r in g.itertuples())
        parts.append(f"on {MEASURE_NAMES.get(measure, measure)} {sizes}")
    detail = "; ".join(parts)
    if wins.empty:
        head = f"With {family}, no learner beats the best heuristic at any fleet size tested"
    else:
        where = ", ".join(f"{MEASURE_NAMES.get(r.measure, r.measure)} at {r.servers} servers "
                          f"({METHOD_LABELS.get(r.learner, r.learner)}, {r.effect_pct:+.1f} %, 95 % interval "
                          f"{r.ci_low_pct:+.1f} to {r.ci_high_pct:+.1f} %)" for r in wins.itertuples())
        head = f"With {family}, a learner beats the best heuristic on {where}"
    seeds = int(table["seeds"].min())
    return (f"{head}. The best learner's improvement over the best heuristic (positive: the learner is better; "
            f"at least {seeds} paired seeds per fleet size): {detail}.")


def family_metrics(learner_metrics: pd.DataFrame, reference: pd.DataFrame,
                   heuristics: Sequence[str] = HEURISTICS, learners: Sequence[str] = LEARNERS) -> pd.DataFrame:
    """A family's learner cells (main grid) with the heuristic cells of ``reference`` on the same
    fleet sizes and seeds: heuristics do not depend on the learner's policy or observation, so
    the per-server family is compared with the heuristic cells of the faithful grid."""
    if "method" not in learner_metrics:  # a store built before any cell finished
        return reference.iloc[0:0]
    mine = learner_metrics[learner_metrics["method"].isin(learners) & (learner_metrics.get("variant", "") == "")]
    keys = set(zip(mine["servers"], mine["seed"]))
    ref = reference[reference["method"].isin(heuristics) & (reference.get("variant", "") == "")]
    ref = ref[[k in keys for k in zip(ref["servers"], ref["seed"])]]
    return pd.concat([mine, ref], ignore_index=True)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def learner_gaps(metrics: pd.DataFrame, measures: Sequence[str] = MEASURES, heuristics: Sequence[str] = HEURISTICS,
                 learners: Sequence[str] = LEARNERS, reps: int = S.DEFAULT_REPS, seed: int = 0) -> pd.DataFrame:
    """Every learner of ``metrics`` against the best heuristic: :func:`gap_table` of each learner
    alone (the same resampler and the same best heuristic per measure and fleet size), one row
    per (learner, measure, fleet size), learners in ``learners``' order."""
    present = set(metrics["method"]) if "method" in metrics else set()
    parts = [gap_table(metrics, measures, heuristics, (m,), reps, seed) for m in learners if m in present]
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)


def every_learner_sentence(table: pd.DataFrame, family: str) -> str:
    """Whether every learner of ``family`` loses to the best heuristic (verdict "worse": the 95 %
    interval below zero, two seeds or more) on every measure at every fleet size of
    :func:`learner_gaps`' ``table``; else which do not lose, and where one beats it ("better")."""
    if table.empty:
        return f"With {family} there are no learner and heuristic cells on the same fleets to compare."
    names = _and([METHOD_LABELS.get(m, m) for m in dict.fromkeys(table["learner"])])
    sizes = _and([str(int(s)) for s in sorted(table["servers"].unique())])
    measures = " and ".join(MEASURE_NAMES.get(m, m) for m in dict.fromkeys(table["measure"]))
    lose, wins = table["verdict"] == "worse", table["verdict"] == "better"
    if lose.all():
        return (f"With {family}, every learner ({names}) loses to the best heuristic at every fleet size tested "
                f"({sizes} servers) on {measures}: each one's 95 % interval lies below zero.")

    def where(rows: pd.DataFrame) -> str:
        return "; ".join(f"{METHOD_LABELS.get(r.learner, r.learner)} on {MEASURE_NAMES.get(r.measure, r.measure)} at "
                         f"{r.servers} servers ({r.effect_pct:+.1f} %, {r.ci_low_pct:+.1f} to {r.ci_high_pct:+.1f})"
                         for r in rows.itertuples())

    beats = table[wins]
    unresolved = table[~lose & ~wins]
    text = (f"With {family} ({names}; {sizes} servers; {measures}), a learner loses to the best heuristic (95 % "
            f"interval below zero) in {int(lose.sum())} of {len(table)} comparisons")
    if len(beats):
        text += f"; it beats it on {where(beats)}"
    if len(unresolved):
        text += f"; unresolved: {where(unresolved)}"
    return text + "."


def learner_gaps_markdown(tables: dict[str, pd.DataFrame]) -> str:
    """A Markdown table of :func:`learner_gaps` for each family (``{family label: table}``): one
    row per family, learner and measure, one column per fleet size with the improvement over
    the best heuristic and its 95 % interval (``-`` where the family has no judged cells)."""
    rows = [t.assign(family=f) for f, t in tables.items() if len(t)]
    if not rows:
        return ""
    t = pd.concat(rows, ignore_index=True)
    t["cell"] = [f"{r.effect_pct:+.1f} [{r.ci_low_pct:+.1f}, {r.ci_high_pct:+.1f}]" for r in t.itertuples()]
    wide = t.pivot_table(index=["family", "learner", "measure"], columns="servers", values="cell", aggfunc="first",
                         sort=False).reset_index()
    wide.columns = [f"{c} servers" if isinstance(c, (int, float)) else c for c in wide.columns]
    wide["learner"] = wide["learner"].map(lambda m: METHOD_LABELS.get(m, m))
    wide["measure"] = wide["measure"].map(lambda m: MEASURE_NAMES.get(m, m))
    return wide.fillna("-").to_markdown(index=False)


def best_heuristics_text(table: pd.DataFrame) -> str:
    """The best heuristic of :func:`learner_gaps`' ``table`` per measure and fleet size, in words:
    ``"on response time min-energy at 50 servers and greedy-cost at 100 and 200 servers; on ..."``."""
    parts = []
    for measure, g in table.drop_duplicates(["measure", "servers"]).groupby("measure", sort=False):
        by = g.groupby("heuristic", sort=False)["servers"].apply(lambda s: _and([str(int(x)) for x in sorted(s)]))
        parts.append(f"on {MEASURE_NAMES.get(measure, measure)} " + _and(
            [f"{METHOD_LABELS.get(h, h)} at {s} servers" for h, s in by.items()]))
    return "; ".join(parts)
