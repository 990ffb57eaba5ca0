"""Chapter 8, decision time: the recorded latency measurement (:mod:`ilets.report.measurements`) and the
decision times recorded in the cells.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ilets.report.findings.base import _label


def time_text(ms: float) -> str:
    """A decision time for people: microseconds below a millisecond, else milliseconds, three
    significant digits at most ("25 µs", "544 µs", "21 ms", "1.5 ms"); "-" when not measured."""
    if not np.isfinite(ms):
        return "-"
    return f"{1e3 * ms:.0f} µs" if ms < 1 else f"{ms:.3g} ms"


#: The paths of the recorded latency measurement, as the chapter's table names them.
PATHS = {"our decision": "ours", "sb3 predict": "Stable-Baselines3 predict", "paper": "paper"}


def latency_display(summary: pd.DataFrame, scales: Sequence[int]) -> pd.DataFrame:
    """:func:`ilets.study.latency.summarise` as one row per (method, path), the median decision
    time per fleet size as :func:`time_text` ("-" where a path has no figure)."""
    wide = summary.pivot_table(index=["method", "path"], columns="servers", values="p50_ms")
    order = [(meth, path) for meth in ("DRL", "ILETS") for path in PATHS]
    wide = wide.reindex(order)[list(scales)]
    out = pd.DataFrame({"method": [m for m, _ in order], "path": [PATHS[p] for _, p in order]})
    for m in scales:
        out[f"{m} servers"] = [time_text(v) for v in wide[m]]
    return out


def _span(values, spec: str = ",.0f") -> str:
    """The range of ``values`` as "lo-hi" (one number when they round alike)."""
    lo, hi = f"{min(values):{spec}}", f"{max(values):{spec}}"
    return lo if lo == hi else f"{lo}-{hi}"


def decision_texts(summary: pd.DataFrame, scales: Sequence[int]) -> dict[str, str]:
    """Chapter 8's sentences from the recorded latency summary
    (:func:`ilets.report.measurements.latency_summary`): ``lead``, the finding in three sentences
    (our median decision times against the paper's, the factor between them, ILETS's extra cost
    over DRL here and in the paper, and whether ours grows with the fleet); ``sb3_ratio``, how
    many times longer Stable-Baselines3's ``predict`` takes than our decision (DRL, smallest
    fleet, medians); ``p95_extra``, ILETS's 95th percentile over DRL's per fleet size."""
    p = summary.set_index(["method", "servers", "path"])["p50_ms"]
    p95 = summary.set_index(["method", "servers", "path"])["p95_ms"]
    ours = {m: [float(p[(m, s, "our decision")]) for s in scales] for m in ("DRL", "ILETS")}
    paper = {m: [float(p[(m, s, "paper")]) for s in scales] for m in ("DRL", "ILETS")}
    factor = [pp / o for m in ours for pp, o in zip(paper[m], ours[m])]
    extra = [100 * (i / d - 1) for i, d in zip(ours["ILETS"], ours["DRL"])]
    paper_extra = [100 * (i / d - 1) for i, d in zip(paper["ILETS"], paper["DRL"])]
    grows = "grows with the fleet here too" if extra[-1] > extra[0] else "does not grow with the fleet"
    if min(extra) > 0:
        cost = (f"As in the paper, ILETS costs more per decision than DRL, but {_span(extra, '.0f')}% more at the "
                f"median rather than {_span(paper_extra, '.0f')}%, and the extra cost {grows}.")
    else:
        cost = (f"Unlike the paper, where ILETS takes {_span(paper_extra, '.0f')}% longer than DRL, ILETS's median "
                f"decision differs from DRL's by {_span(extra, '+.0f')}% here.")
    lead = (f"A scheduling decision takes {_span([1e3 * v for v in ours['DRL']])} µs with our DRL and "
            f"{_span([1e3 * v for v in ours['ILETS']])} µs with ILETS at {scales[0]} to {scales[-1]} servers, "
            f"{_span(factor)} times less than the paper's {_span([*paper['DRL'], *paper['ILETS']], 'g')} ms. "
            f"{cost} The paper's figures measure its implementation (its network library, wall-clock timer "
            "threads and imitation running in line with the decisions) as much as its method, so only the "
            "claim's shape, ILETS slower than DRL, can be compared.")
    sb3 = p[("DRL", scales[0], "sb3 predict")] / p[("DRL", scales[0], "our decision")]
    p95_extra = [100 * (p95[("ILETS", s, "our decision")] / p95[("DRL", s, "our decision")] - 1) for s in scales]
    return {"lead": lead, "sb3_ratio": f"{sb3:.0f}", "p95_extra": ", ".join(f"{x:+.0f}%" for x in p95_extra)}


def store_latency(metrics: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Decision times recorded in the cells (µs, mean over seeds): a display table with
    learners first, then heuristics, and the numbers the prose quotes."""
    from ilets.config import HEURISTICS
    from ilets.study.results import LEARNERS

    labelled = metrics.assign(Method=[_label(m) for m in metrics["method"]])
    store = labelled.groupby(["method", "servers"])[["decision_p50_ms", "decision_p95_ms"]].mean().mul(1e3)
    present = set(store.index.get_level_values(0))
    learners = store.loc[[m for m in LEARNERS if m in present]]
    heur = store.loc[[m for m in HEURISTICS if m in present]]
    texts = {"store_learner_us_lo": f"{learners['decision_p50_ms'].min():.0f}",
             "store_learner_us_hi": f"{learners['decision_p50_ms'].max():.0f}",
             "store_slowest_heuristic": str(heur["decision_p50_ms"].idxmax()[0]) if len(heur) else "n/a",
             "store_slowest_us": f"{heur['decision_p50_ms'].max():.0f}" if len(heur) else "n/a"}
    order = [m for m in (*LEARNERS, *HEURISTICS) if m in present]
    table = store.rename(columns={"decision_p50_ms": "p50 µs", "decision_p95_ms": "p95 µs"}).unstack("servers")
    table = table[[(stat, m) for m in sorted(table.columns.levels[1]) for stat in ("p50 µs", "p95 µs")]]
    table.columns = [f"{stat}, {m} servers" for stat, m in table.columns]
    table = table.reindex(order).reset_index()
    table["method"] = [_label(m) for m in table["method"]]
    return table.rename(columns={"method": "Method"}), texts
