"""Chapter 8, decision time: the recorded latency measurement (:mod:`ilets.report.measurements`) and the
decision times recorded in the cells.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from ilets.report.findings.base import _label


def latency_wide(summary: pd.DataFrame, scales: Sequence[int]) -> pd.DataFrame:
    """:func:`ilets.study.latency.summarise` as one row per (method, path), p50/p95 per fleet size,
    ``"-"`` where a path has no figure (the paper reports one number per method and size)."""
    wide = summary.pivot_table(index=["method", "path"], columns="servers", values=["p50_ms", "p95_ms"])
    wide.columns = [f"{stat.split('_')[0]} ms, {m} servers" for stat, m in wide.columns]
    wide = wide[[f"{s} ms, {m} servers" for m in scales for s in ("p50", "p95")]]
    order = [(meth, path) for meth in ("DRL", "ILETS") for path in ("our decision", "sb3 predict", "paper")]
    out = wide.reindex(order).reset_index().astype(object)
    return out.where(out.notna(), "-")


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
