"""The embedded synthetic workload: counts, shape, determinism, CPU distribution."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ilets.config import WorkloadConfig
from ilets.workloads.workload import (PAPER_OFFLINE_TASKS, PAPER_ONLINE_TASKS, RATE_SHAPE, TaskTable, cpu_quantile_table,
                            load_workload, rate_shape, sample_cpu, synthetic_workload)

from conftest import GOOGLE_SAMPLE


def test_full_scale_matches_the_papers_split():
    wl = synthetic_workload(WorkloadConfig(scale=1.0), seed=0)
    assert len(wl.offline) == PAPER_OFFLINE_TASKS == 330_632
    assert len(wl.online) == PAPER_ONLINE_TASKS == 259_368
    assert wl.offline.arrival.max() < 1500.0 <= wl.online.arrival.min()
    assert wl.online.arrival.max() < 3000.0


@pytest.mark.parametrize("scale", [0.01, 0.1])
def test_scale_keeps_the_rate_and_shrinks_the_window(scale):
    wl = synthetic_workload(WorkloadConfig(scale=scale), seed=1)
    full_rate = (PAPER_OFFLINE_TASKS + PAPER_ONLINE_TASKS) / 3000.0
    n = len(wl.offline) + len(wl.online)
    assert n / (3000.0 * scale) == pytest.approx(full_rate, rel=1e-3)
    assert wl.split_time == pytest.approx(1500.0 * scale)


def test_bursts_are_visible_in_the_arrival_rate():
    wl = synthetic_workload(WorkloadConfig(scale=0.2), seed=2)
    arrivals = np.concatenate([wl.offline.arrival, wl.online.arrival]) / 0.2  # back to window seconds
    counts, _ = np.histogram(arrivals, bins=np.arange(0, 3001, 10))
    for start, dur, mult in RATE_SHAPE["bursts"]:
        inside = counts[int(start // 10): int((start + dur) // 10)].mean()
        before = counts[int((start - 60) // 10): int((start - 10) // 10)].mean()
        assert inside / before > 0.6 * mult, (start, inside, before)


def test_trend_change_turns_the_online_baseline():
    t = np.array([1600.0, 2200.0, 2300.0, 2900.0])
    r = rate_shape(t)
    assert r[1] > r[0]  # rising before the trend change at 2250 s
    assert r[3] < r[2]  # falling after it


def test_same_seed_same_tasks_different_seed_different_tasks():
    a = synthetic_workload(WorkloadConfig(scale=0.01), seed=3)
    b = synthetic_workload(WorkloadConfig(scale=0.01), seed=3)
    c = synthetic_workload(WorkloadConfig(scale=0.01), seed=4)
    np.testing.assert_array_equal(a.online.arrival, b.online.arrival)
    np.testing.assert_array_equal(a.online.length, b.online.length)
    assert not np.array_equal(a.online.cpu, c.online.cpu)


def test_lengths_and_deadlines_stay_in_their_ranges():
    cfg = WorkloadConfig(scale=0.01, length_mi=(500.0, 3000.0), deadline_s=(1.5, 4.5))
    wl = synthetic_workload(cfg, seed=0)
    assert wl.online.length.min() >= 500 and wl.online.length.max() <= 3000
    assert wl.online.deadline.min() >= 1.5 and wl.online.deadline.max() <= 4.5


def test_quantile_table_is_monotone_and_in_trace_units():
    p, q = cpu_quantile_table()
    assert p[0] == 0 and p[-1] == 1
    assert np.all(np.diff(q) >= 0) and q.min() > 0 and q.max() <= 1.0


@pytest.mark.skipif(not GOOGLE_SAMPLE.is_file(), reason=f"real Google sample not present at {GOOGLE_SAMPLE}")
def test_generated_cpu_requests_match_the_real_sample():
    real = np.loadtxt(GOOGLE_SAMPLE, delimiter=";", usecols=(8,))
    real = real[real > 0]
    generated = sample_cpu(np.random.default_rng(0), 50_000)
    ks = stats.ks_2samp(generated, real).statistic
    assert ks < 0.02, ks
    # and a clearly different distribution is rejected by the same yardstick
    assert stats.ks_2samp(np.random.default_rng(0).uniform(0, 0.2, 50_000), real).statistic > 0.1


def test_task_table_rejects_unsorted_or_ragged_input():
    with pytest.raises(ValueError, match="sorted"):
        TaskTable(np.array([1.0, 0.5]), np.ones(2), np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="cpu has 1 rows"):
        TaskTable(np.array([0.0, 1.0]), np.ones(1), np.ones(2), np.ones(2))


def test_unknown_workload_kind_is_named():
    with pytest.raises(ValueError, match="workload.kind"):
        load_workload(WorkloadConfig(kind="azure"), 0)
