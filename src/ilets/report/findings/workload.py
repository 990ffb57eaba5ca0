"""Chapter 3, the workload: the synthetic CPU requests against the real sample, and the fleet-load
calibration as the chapter shows it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ilets.report.stats.prose import share_text


def ks_sentence(generated: np.ndarray, real: np.ndarray | None) -> str:
    """The synthetic CPU requests against the real sample (two-sample Kolmogorov-Smirnov,
    scipy), or why there is no comparison."""
    if real is None:
        return "the real sample is not present on this machine, so only the synthetic CDF is shown"
    import scipy.stats

    return f"the two-sample Kolmogorov-Smirnov distance is {scipy.stats.ks_2samp(generated, real).statistic:.3f}"


def load_display(load: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.study.book_measurements.load_table` (as recorded) as the workload chapter shows it."""
    shown = load.assign(**{"success rate (%)": 100 * load["success_rate"]}).rename(columns={
        "avg_response_s": "mean response (s)", "avg_wait_s": "mean wait (s)", "tasks": "online tasks"})
    return shown[["scale", "servers", "online tasks", "mean response (s)", "mean wait (s)", "success rate (%)"]] \
        .round(3)


def window_text(scale: float, tasks: int) -> str:
    """What a profile of workload ``scale`` keeps of the paper's window of ``tasks`` tasks (its
    own count), as chapter 3 says it: the whole window at scale 1, else the share of its length
    as a fraction (:func:`ilets.report.stats.share_text`, ``0.02`` -> ``"1/50"``)."""
    if np.isclose(scale, 1.0):
        return f"keeps this shape, the arrival rate and the whole window ({tasks:,} tasks)"
    return (f"keeps this shape and the arrival rate but shortens the window to {share_text(scale)} of its length "
            f"({tasks:,} tasks)")
