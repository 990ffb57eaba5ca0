"""What fine-tuning did to a clone: the held-out greedy score before and after the online pass.

A cell with ``finetune.checkpoints`` schedules a held-out segment greedily before its online
pass (for DRL+ and ILETS: the frozen clone after OINPT) and after it
(``heldout_mean_reward_start`` / ``_end`` in its metrics; higher is better). The change of a
cell is ``(end - start) / |start|``; over seeds it gets Student's t interval, because the
pilot has three seeds and a bootstrap over three values cannot reach past the observed
extremes, which would understate the doubt.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

CHANGE_COLUMNS = ["seeds", "start", "end", "change", "change_low", "change_high"]


def t_half_width(x: np.ndarray, level: float = 0.95) -> float:
    """Half the width of the ``level`` Student's t interval of the mean of ``x`` (``n - 1``
    degrees of freedom; infinite with one value)."""
    from scipy import stats

    if len(x) < 2:
        return float("inf")
    return float(stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))


def heldout_change(metrics: pd.DataFrame, by: Sequence[str], level: float = 0.95) -> pd.DataFrame:
    """Per group of ``by``: seeds, mean held-out reward before and after the pass, and the mean
    relative change with its ``level`` t-interval (``n - 1`` degrees of freedom; infinite with
    one seed). Cells without held-out scores are left out."""

    cols = list(by) + CHANGE_COLUMNS
    need = {"heldout_mean_reward_start", "heldout_mean_reward_end"}
    if not need <= set(metrics.columns):
        return pd.DataFrame(columns=cols)
    cells = metrics.dropna(subset=list(need))
    change = (cells["heldout_mean_reward_end"] - cells["heldout_mean_reward_start"]) / cells[
        "heldout_mean_reward_start"].abs()
    rows = []
    for key, idx in change.groupby([cells[b] for b in by]).groups.items():
        x = change.loc[idx].to_numpy(float)
        mean = float(x.mean())
        half = t_half_width(x, level)
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key)), "seeds": len(x),
                     "start": float(cells.loc[idx, "heldout_mean_reward_start"].mean()),
                     "end": float(cells.loc[idx, "heldout_mean_reward_end"].mean()),
                     "change": mean, "change_low": mean - half, "change_high": mean + half})
    return pd.DataFrame(rows, columns=cols)
