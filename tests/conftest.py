"""Shared fixtures: tiny fleets and workloads so every test runs in seconds on 2 cores."""

from __future__ import annotations

from pathlib import Path

import ilets  # noqa: F401  (first: it pins portable numerics before numpy loads, see ilets.numerics)
import numpy as np
import pytest

from ilets.config import FleetConfig, RunConfig, WorkloadConfig
from ilets.simulator.cloud import Fleet
from ilets.study.profiles import method_defaults

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
GOOGLE_SAMPLE = SHARED_DATA / "google2011_task_requests_sample.csv"


@pytest.fixture
def tiny_config() -> RunConfig:
    """The study's method settings on a 10-server fleet and a ~1,200-task workload."""
    import dataclasses

    base = method_defaults()
    return dataclasses.replace(
        base,
        workload=WorkloadConfig(scale=0.002),
        fleet=FleetConfig(servers=10),
        curve_every=50,
        ppo=dataclasses.replace(base.ppo, n_steps=64),
        experts=dataclasses.replace(base.experts, ga_population=8, ga_generations=4, pso_particles=8, pso_iterations=4),
        oinpt=dataclasses.replace(base.oinpt, max_demo_tasks=120, bc_epochs=2, critic_epochs=2),
    ).validate()


@pytest.fixture
def toy_fleet() -> Fleet:
    """Three servers with round numbers."""
    return Fleet(capacity=np.array([1.0, 0.5, 0.25]), mips=np.array([1000.0, 500.0, 1000.0]),
                 p_idle=np.array([100.0, 50.0, 25.0]), p_act=np.array([200.0, 100.0, 50.0]))
