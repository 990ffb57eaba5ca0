"""Where the workload's designed events fall in the online pass, from its configuration.

The bursts and the trend change are times in the window; the analysis needs the decision
(the online task) at which each strikes. That index depends only on the workload
configuration and the seed, so it is computed from them here, by regenerating the
arrivals, without running any scheduler. (Recording the indices in each cell at run time
would avoid even that; the cells do not record them yet.)
"""

from __future__ import annotations

import functools

from ilets.config import WorkloadConfig
from ilets.report import stats as S


@functools.lru_cache(maxsize=64)
def online_event_ranges_for(workload: WorkloadConfig, seed: int) -> dict[str, tuple[int, int]]:
    """Decision ranges ``(d, d_end)`` after each online event of the workload ``workload``
    with ``seed`` (:func:`ilets.report.stats.online_event_ranges`: all of one length in time, the
    shortest gap between online events). Raises what :func:`ilets.workloads.workload.load_workload`
    raises when the workload cannot be built here (e.g. trace files absent)."""
    from ilets.workloads.workload import load_workload

    w = load_workload(workload, int(seed))
    return S.online_event_ranges(w.events, w.online.arrival)
