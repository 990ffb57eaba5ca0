"""Calibration helpers for the book: how loaded the reconstructed fleet is.

These are measurements that informed choices (the service rates of the fleet), not part of
any scheduling algorithm, so they live here rather than in :mod:`ilets.agents.policies`.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from ilets.agents.policies import make_heuristic, schedule
from ilets.config import FleetConfig, WorkloadConfig
from ilets.simulator.cloud import make_fleet
from ilets.workloads.workload import synthetic_workload


def load_table(workload: WorkloadConfig, fleet: FleetConfig, servers: tuple[int, ...],
               scales: tuple[float, ...], seed: int = 0, policy: str = "earliest-finish") -> pd.DataFrame:
    """How loaded each fleet size is: a heuristic's metrics on the online segment per scale.

    Used to calibrate the reconstructed service rates: shortening the window keeps the
    arrival rate but not the queues that build up over a long overload, so the same fleet
    is less loaded on a reduced workload than over the paper's full window. One row per
    (scale, servers) with :meth:`ilets.simulator.cloud.Cloud.summary`'s metrics.
    """
    rows = []
    for scale in scales:
        online = synthetic_workload(dataclasses.replace(workload, scale=scale), seed).online
        for m in servers:
            cloud = schedule(online, make_fleet(dataclasses.replace(fleet, servers=m), fleet.seed),
                             make_heuristic(policy, seed=seed))
            rows.append({"scale": scale, "servers": m, "policy": policy, **cloud.summary()})
    return pd.DataFrame(rows)
