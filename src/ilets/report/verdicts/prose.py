"""The verdicts' plain-language helpers for the results chapters: one component's effect in a
phrase, and which heuristics beat every learner in a sentence."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ilets.metric_table import names as metric_names
from ilets.report import stats as S
from ilets.report.verdicts.rule import _and, _label


_LONG_NAMES = metric_names("long")


def describe_effect(effects: pd.DataFrame, servers="all", digits: int = 1) -> str:
    """One phrase for one component's effect (rows of :func:`component_effects`) at
    ``servers`` (``"all"``: pooled): "better than DRL by 12.3 % (95 % CI 10.1 to 14.2)",
    "worse than DRL by ...", or "indistinguishable from DRL (...)" when the CI includes 0.
    ``b``'s display name is used; "no results" if the row is missing."""
    rows = effects[effects["servers"].astype(str) == str(servers)]
    if rows.empty or not np.isfinite(rows["effect_pct"].iloc[0]):
        return "no results"
    r = rows.iloc[0]
    ci = f"95 % CI {r['ci_low_pct']:+.{digits}f} to {r['ci_high_pct']:+.{digits}f} %"
    verdict = r["verdict"] if "verdict" in r else S.effect_verdict(r["ci_low_pct"], r["ci_high_pct"], 2, 2)
    if verdict == "better":
        return f"better than {_label(r['b'])} by {r['effect_pct']:.{digits}f} % ({ci})"
    if verdict == "worse":
        return f"worse than {_label(r['b'])} by {-r['effect_pct']:.{digits}f} % ({ci})"
    return f"indistinguishable from {_label(r['b'])} ({r['effect_pct']:+.{digits}f} %, {ci})"


def describe_heuristics(table: pd.DataFrame) -> str:
    """A plain sentence from :func:`heuristics_vs_learners`: which heuristics beat every
    learner, on which metrics, at every scale."""
    if table.empty:
        return "There are no heuristic baselines in these results."
    n_metrics = table["metric"].nunique()
    names = {c: _LONG_NAMES.get(c, c) for c in table["metric"].unique()}
    everything = [h for h, g in table.groupby("heuristic", sort=False) if g["beats_all"].all()]
    some = [(h, [names[c] for c in g.loc[g["beats_all"], "metric"]]) for h, g in table.groupby("heuristic", sort=False)
            if g["beats_all"].any() and not g["beats_all"].all()]
    parts = []
    if everything:
        who = _and(everything)
        verb = "is" if len(everything) == 1 else "are each"
        parts.append(f"{who} {verb} better than every learner on all {n_metrics} metrics "
                     f"({_and(list(names.values()))}) at every scale")
    for h, ms in some:
        parts.append(f"{h} is better than every learner on {_and(ms)} at every scale")
    if not parts:
        return "No heuristic is better than every learner on any metric at every scale."
    return "; ".join(parts) + "."
