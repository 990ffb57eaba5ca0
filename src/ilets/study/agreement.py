"""A second verdict for a re-run that is not bit-identical: does it agree within the seed-to-seed spread?

``ilets verify`` certifies that a cell reproduces exactly, and a learner's cell does only on a
CPU of the vendor that computed it (the portable kernels make hosts of one vendor agree, not
two vendors: :func:`ilets.study.verify.kernels_hint`). A reviewer on another CPU still wants to
know whether the difference matters. The rule, declared here before any use:

* the metrics judged are :data:`AGREEMENT_METRICS` (what the book reports of a cell);
* a metric's *spread* is the standard deviation over seeds of that metric among the cells of
  the same method, variant and fleet size in the same results folder (at least
  :data:`MIN_SEEDS` seeds; fewer: no verdict);
* the re-run *agrees within the seed-to-seed spread* when, for every judged metric, the
  difference from the record is at most :data:`SPREAD_MULTIPLE` spreads.

It is a weaker verdict than exact reproduction: it says the re-run tells the same story as the
record at the resolution the study's seeds give, not that it is the same computation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: the metrics judged: the ones the book's tables report of every cell
AGREEMENT_METRICS = ("avg_response_s", "mean_reward", "energy_kwh", "success_rate")
#: a difference counts as agreeing up to this many seed-to-seed standard deviations
SPREAD_MULTIPLE = 1.0
#: seeds needed to measure a spread
MIN_SEEDS = 2


@dataclass(frozen=True)
class Agreement:
    """The second verdict of one cell: each metric's difference against its spread."""

    rows: tuple[tuple[str, float, float, float], ...]  #: (metric, recorded, re-run, spread)
    seeds: int  #: cells the spread was measured over
    agrees: bool

    def text(self) -> str:
        """One line: each metric's relative difference against the relative spread, and the verdict."""
        parts = []
        for metric, recorded, rerun, spread in self.rows:
            scale = abs(recorded) or 1.0
            parts.append(f"{metric} {100 * (rerun - recorded) / scale:+.2f} % (spread {100 * spread / scale:.2f} %)")
        verdict = "agrees" if self.agrees else "does not agree"
        return (f"{verdict} within the seed-to-seed spread ({SPREAD_MULTIPLE:g} standard deviation over {self.seeds} "
                f"seeds): " + ", ".join(parts))


def spread_agreement(store: pd.DataFrame, method: str, variant: str, servers: int, recorded: dict,
                     rerun: dict) -> Agreement | None:
    """The second verdict (module docstring) of a cell of ``method``/``variant`` at ``servers``
    whose record is ``recorded`` and re-run ``rerun`` (metrics as dicts), the spread measured on
    ``store`` (the folder's metrics table); None when fewer than :data:`MIN_SEEDS` seeds or a
    judged metric is missing."""
    if store.empty or not {"method", "servers", "seed"} <= set(store.columns):
        return None
    same = store[(store["method"] == method) & (store["servers"] == servers)
                 & (store.get("variant", pd.Series("", index=store.index)).fillna("") == variant)]
    if same["seed"].nunique() < MIN_SEEDS:
        return None
    rows, agrees = [], True
    for metric in AGREEMENT_METRICS:
        if metric not in same or metric not in recorded or metric not in rerun:
            return None
        spread = float(same[metric].astype(float).std(ddof=1))
        a, b = float(recorded[metric]), float(rerun[metric])
        if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(spread)):
            return None
        agrees &= abs(b - a) <= SPREAD_MULTIPLE * spread
        rows.append((metric, a, b, spread))
    return Agreement(tuple(rows), int(same["seed"].nunique()), bool(agrees))


def verdicts_text() -> str:
    """What each of ``ilets verify``'s two verdicts means and which one a reader should expect
    (the reproduction chapter's paragraph, from the rule's constants)."""
    from ilets.metric_table import METRIC_SPECS

    judged = [METRIC_SPECS[m].label for m in AGREEMENT_METRICS]
    return ("`ilets verify` re-runs a cell and gives one of two verdicts. **Reproduced exactly**: every recorded "
            "metric and the whole learning curve come out bit for bit equal; expect it on a CPU of the vendor that "
            "computed the cell (its record names the CPU). **Agrees within the seed-to-seed spread**: the numbers "
            f"differ, but the {', '.join(judged[:-1])} and {judged[-1]} each lie within {SPREAD_MULTIPLE:g} standard "
            "deviation of that metric over the seeds of the same method and fleet size (at least "
            f"{MIN_SEEDS} seeds); expect it on another vendor's CPU or an ARM laptop, where a learner's last bits "
            "drift. Both exit 0; only the first says that the same computation ran.")
