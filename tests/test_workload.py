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


# --- shifts of the window (WorkloadConfig's rate_factor ... cpu_source) ---------------------

def _shifted(**kw):
    import dataclasses

    cfg = dataclasses.replace(WorkloadConfig(scale=0.2), **kw)
    cfg.validate("workload")
    return synthetic_workload(cfg, seed=2)


def test_shifts_at_their_defaults_draw_the_papers_window_unchanged():
    base, same = synthetic_workload(WorkloadConfig(scale=0.2), seed=2), _shifted(rate_factor=1.0, burst_factor=1.0,
                                                                               trend_slope=0.0, cpu_factor=1.0)
    for half in ("offline", "online"):
        a, b = getattr(base, half), getattr(same, half)
        for col in ("arrival", "cpu", "length", "deadline"):
            assert np.array_equal(getattr(a, col), getattr(b, col)), (half, col)


def test_the_rate_factor_scales_the_counts_over_the_same_window():
    base, fast = _shifted(), _shifted(rate_factor=1.5)
    assert len(fast.online) == round(PAPER_ONLINE_TASKS * 0.2 * 1.5)
    assert abs(fast.online.arrival.max() - base.online.arrival.max()) < 1.0  # same window, denser


def test_no_bursts_flatten_the_burst_windows_and_doubled_ones_rise():
    def ratio(wl, start, dur):
        t = np.concatenate([wl.offline.arrival, wl.online.arrival]) / 0.2
        counts, _ = np.histogram(t, bins=np.arange(0, 3001, 10))
        return counts[int(start // 10): int((start + dur) // 10)].mean() / \
            counts[int((start - 60) // 10): int((start - 10) // 10)].mean()

    start, dur, mult = RATE_SHAPE["bursts"][2]
    assert ratio(_shifted(burst_factor=0.0), start, dur) < 1.2 < 0.6 * mult < ratio(_shifted(), start, dur)
    assert ratio(_shifted(burst_factor=2.0), start, dur) > 0.6 * (1 + 2 * (mult - 1))


def test_a_rising_trend_moves_tasks_to_the_end_of_each_half():
    late = lambda wl: float(np.mean(wl.online.arrival > 0.2 * 2250.0))  # noqa: E731
    assert late(_shifted(trend_slope=1.5)) > late(_shifted()) + 0.03 > late(_shifted(trend_slope=-1.5)) + 0.06


def test_the_cpu_factor_scales_requests_and_caps_them_at_a_machine():
    base, heavy = _shifted(), _shifted(cpu_factor=4.0)
    assert np.allclose(heavy.online.cpu, np.minimum(4.0 * base.online.cpu, 1.0)) and heavy.online.cpu.max() <= 1.0


@pytest.mark.skipif(not GOOGLE_SAMPLE.is_file(), reason="the real Google sample is not beside the repository")
def test_cpu_from_the_real_sample_takes_its_values():
    real = set(np.loadtxt(GOOGLE_SAMPLE, delimiter=";", usecols=(8,)).tolist())
    assert set(_shifted(cpu_source="sample").online.cpu.tolist()) <= real


def test_a_missing_real_sample_is_named(monkeypatch):
    import ilets.workloads.workload as W

    monkeypatch.setattr(W, "default_cpu_sample_path", lambda: W.Path("/nowhere/sample.csv"))
    with pytest.raises(FileNotFoundError, match=r"/nowhere/sample\.csv: workload.cpu_source 'sample' needs"):
        _shifted(cpu_source="sample")


@pytest.mark.parametrize("key, value, expected", [
    ("rate_factor", 0.0, "expected a factor in (0, 10]"), ("burst_factor", -1.0, "expected a factor in [0, 10]"),
    ("trend_slope", 2.0, "expected a number in (-2, 2)"), ("cpu_factor", 11.0, "expected a factor in (0, 10]"),
    ("cpu_source", "mine", "expected one of ('table', 'sample')")])
def test_an_impossible_shift_is_named(key, value, expected):
    import dataclasses

    from ilets.config import ConfigError

    import re

    with pytest.raises(ConfigError, match=re.escape(f"workload.{key}: {expected}")):
        dataclasses.replace(WorkloadConfig(), **{key: value}).validate("workload")


def test_only_the_synthetic_window_shifts():
    import dataclasses

    from ilets.config import ConfigError

    with pytest.raises(ConfigError, match=r"workload\.rate_factor: .*synthetic window.*shifted"):
        dataclasses.replace(WorkloadConfig(kind="google", trace_dir="x"), rate_factor=2.0).validate("workload")
