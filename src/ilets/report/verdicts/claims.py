"""The paper's eight claims (:data:`CLAIMS`), the verdict object every claim gives, and the
claims on the final metrics (1-3 and 8), each judged from its components by the rule of
:mod:`ilets.report.verdicts.rule`.

How claim 8 is measured
-----------------------
* Claim 8 (beats every baseline): beating every heuristic on a metric is beating the best
  one, so one component per metric (response time, energy, success rate): ILETS against
  the heuristic with the best mean on that metric at each scale (chosen on the same data,
  which slightly favours the heuristics).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

import pandas as pd

from ilets.config import HEURISTICS
from ilets.report import stats as S
from ilets.report.verdicts.heuristics import BEST_HEURISTIC, best_heuristic_rows
from ilets.report.verdicts.rule import (_MEASURE_LABELS, NOT_TESTABLE, _and, component_effects,
                                        component_status, effect_text, judge, paper_figure)


#: The paper's claims, numbered as in this module and in the book's summary chapter.
_P = S.PAPER_IMPROVEMENTS

CLAIMS: dict[int, str] = {
    1: f"DRL+ (offline imitation only) improves on DRL in response time ({_P['drl+']['avg_response_s']:.2f} %), "
       f"energy ({_P['drl+']['energy_kwh']:.2f} %) and success rate ({_P['drl+']['success_rate']:.2f} %)",
    2: f"ILETS- (online imitation only) improves on DRL in response time ({_P['ilets-']['avg_response_s']:.2f} %), "
       f"energy ({_P['ilets-']['energy_kwh']:.2f} %) and success rate ({_P['ilets-']['success_rate']:.2f} %)",
    3: "DRL+ beats ILETS-: offline initialisation matters more than online correction",
    4: "DRL+ and ILETS are better than DRL and ILETS- from the very start",
    5: "ILETS- converges faster than DRL",
    6: "ILETS reaches the highest cumulative reward fastest at every scale",
    7: "under the trend change every method oscillates, ILETS least",
    8: "ILETS beats all heuristic baselines on response time, energy and success rate",
}


#: The learner families a claim can be judged on (item 3 of the issue judges every claim with both).
FAMILY_LABELS = {"flat": "the authors' flat policy (faithful)", "per-server": "the per-server policy (competent)"}

@dataclass(frozen=True)
class Verdict:
    """One claim's verdict: ``claim`` number, ``statement``, ``verdict`` (one of
    :data:`VERDICTS`), ``evidence`` (one line of text), ``effects``: the component
    effects behind it (the output of :func:`component_effects`, concatenated), and the
    learner ``family`` whose cells were judged."""

    claim: int
    statement: str
    verdict: str
    evidence: str
    effects: pd.DataFrame = field(repr=False, compare=False, default_factory=pd.DataFrame)
    family: str = "flat"  #: the learner family judged (a key of :data:`FAMILY_LABELS`)
    components: int = 0  #: comparisons the claim makes
    measured: int = 0  #: of them, those the results could measure


def _evidence(effects: pd.DataFrame, paper: Mapping[str, float] | None = None, short: Callable | None = None) -> str:
    """Evidence line: every component's effect (:func:`effect_text`) with the paper's figure."""
    parts = []
    for name, g in effects.groupby("component", sort=False):
        st = component_status(g)
        label = short(g.iloc[0]) if short else name
        figure = (paper or {}).get(g["measure"].iloc[0])
        if figure is None:
            figure = paper_figure(g["a"].iloc[0], g["b"].iloc[0], g["measure"].iloc[0])
        parts.append(f"{label} {effect_text(st, figure)}")
    return "; ".join(parts)


def _verdict(claim: int, effects: list[pd.DataFrame], evidence: Callable[[pd.DataFrame], str],
             missing: str = "the methods it compares are not in the results") -> Verdict:
    eff = pd.concat([e for e in effects if len(e)], ignore_index=True) if any(len(e) for e in effects) \
        else pd.DataFrame()
    v = judge(eff)
    return Verdict(claim, CLAIMS[claim], v, missing if v == NOT_TESTABLE else evidence(eff), eff,
                   components=len(effects), measured=sum(bool(len(e)) for e in effects))


def whole(v: Verdict) -> Verdict:
    """``v`` if every comparison of its claim was measured (or none was); else not testable,
    with evidence naming how many comparisons are missing and showing the measured ones (the
    module's rule: a claim is judged whole)."""
    if v.verdict == NOT_TESTABLE or v.measured >= v.components:
        return v
    missing = v.components - v.measured
    return replace(v, verdict=NOT_TESTABLE,
                   evidence=f"{missing} of its {v.components} comparisons cannot be measured here (a method they "
                            f"need is not in the results); on the {v.measured} measured, it would be {v.verdict}: "
                            f"{v.evidence}")


# --- the claims on the final metrics ----------------------------------------------------

def claim_improves(metrics: pd.DataFrame, claim: int, a: str, b: str,
                   columns: Sequence[str] = S.PAPER_METRICS, reps: int = S.DEFAULT_REPS, seed: int = 0) -> Verdict:
    """Claims 1-3: ``a`` improves on ``b`` on each of ``columns`` (final metrics table).

    With ``b == "drl"`` and ``a`` in :data:`ilets.report.stats.PAPER_IMPROVEMENTS` the evidence
    quotes the paper's magnitude for each metric.
    """
    paper = S.PAPER_IMPROVEMENTS.get(a) if b == "drl" else None
    effects = [component_effects(metrics, a, b, c, S.HIGHER_IS_BETTER[c], reps=reps, seed=seed) for c in columns]
    return _verdict(claim, effects, lambda e: _evidence(e, paper, lambda r: _MEASURE_LABELS.get(r["measure"],
                                                                                               r["measure"])))


def claim_beats_heuristics(metrics: pd.DataFrame, heuristics: Sequence[str] = HEURISTICS,
                           columns: Sequence[str] = S.PAPER_METRICS, reps: int = S.DEFAULT_REPS,
                           seed: int = 0) -> Verdict:
    """Claim 8: ILETS beats every heuristic in ``heuristics`` on each of ``columns``.

    "Beats every heuristic on a metric" is "beats the best one": one component per metric,
    ILETS against the heuristic with the best mean on that metric at each scale
    (:func:`best_heuristic_rows`). The evidence also counts the heuristics ILETS beats at
    every scale and names those better than ILETS.
    """
    present = [h for h in heuristics if h in set(metrics["method"])]
    effects, chosen = [], {}
    for c in columns:
        best, chosen[c] = best_heuristic_rows(metrics, c, present)
        effects.append(component_effects(pd.concat([metrics[metrics["method"] == "ilets"], best]), "ilets",
                                         BEST_HEURISTIC, c, S.HIGHER_IS_BETTER[c], reps=reps, seed=seed,
                                         component=f"ILETS vs best heuristic: {_MEASURE_LABELS[c]}"))

    def evidence(e):
        lines = []
        for c in columns:
            st_best = component_status(e[e["measure"] == c])
            names = sorted(set(chosen[c].values()))
            each = [component_status(component_effects(metrics, "ilets", h, c, S.HIGHER_IS_BETTER[c], reps=reps,
                                                       seed=seed)) for h in present]
            rev = {h: component_status(component_effects(metrics, h, "ilets", c, S.HIGHER_IS_BETTER[c], reps=reps,
                                                         seed=seed)) for h in present}
            beaten = sum(s["holds"] for s in each)
            better = [h for h, s in rev.items() if s["holds"]]
            lines.append(f"{_MEASURE_LABELS[c]}: vs the best heuristic ({_and(names)}) {effect_text(st_best)}; "
                         f"ILETS beats {beaten}/{len(present)} heuristics at every scale"
                         + (f", and {_and(better)} beat{'s' if len(better) == 1 else ''} ILETS at every scale"
                            if better else ""))
        return "; ".join(lines)

    return _verdict(8, effects, evidence, "no heuristic baselines or no ILETS in the results")
