"""What the analysis needs at run time is recorded by the grid: ``OUT/events.json`` holds the
decisions at which each workload's events strike, ``ship`` carries it (or computes it for an
older folder), and the report reads it without rebuilding a workload."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

import ilets.workloads.workload as W
from ilets.report import events as E
from ilets.report import verdicts as V
from ilets.report.report_context import ReportContext
from ilets.study.grid import EVENTS_FILE, online_event_ranges, read_events, record_events, run_grid, workload_key
from ilets.study.profiles import load_profile
from ilets.study.shipping import ship

SEEDS = (0, 1)


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """A smoke grid: one heuristic (no learning), two seeds, a tiny window."""
    root = tmp_path_factory.mktemp("events")
    path = root / "tiny.yaml"
    path.write_text("name: tiny\nmethods: [earliest-finish]\nservers: [5]\nseeds: [0, 1]\nworkers: 1\n"
                    "run: {workload: {scale: 0.002}}\n")
    profile = load_profile(path)
    out = root / "results"
    run_grid(profile, out, workers=1, progress=False)
    return profile, out


def _expected(workload, seed) -> dict:
    w = W.load_workload(workload, seed)
    return online_event_ranges(w.events, w.online.arrival)


@pytest.fixture
def no_workloads(monkeypatch):
    """Building a workload raises (and nothing rebuilt earlier is reused)."""
    def refuse(*args, **kw):
        raise AssertionError("a workload was rebuilt during the analysis")

    E._rebuilt.cache_clear()
    monkeypatch.setattr(W, "load_workload", refuse)
    yield
    E._rebuilt.cache_clear()


def test_the_grid_records_the_events_of_each_workload_and_seed(grid):
    profile, out = grid
    recorded = json.loads((out / EVENTS_FILE).read_text())
    key = workload_key(profile.run.workload)
    assert list(recorded) == [key] and recorded[key]["workload"]["scale"] == 0.002
    assert sorted(recorded[key]["seeds"]) == [str(s) for s in SEEDS]
    for seed in SEEDS:
        entry = recorded[key]["seeds"][str(seed)]
        assert {k: tuple(v) for k, v in entry["ranges"].items()} == _expected(profile.run.workload, seed)
        assert "trend_change" in entry["events"] and "trend_change" in entry["ranges"]


def test_the_report_reads_the_record_without_building_a_workload(grid, no_workloads):
    profile, out = grid
    recorded = read_events(out)[workload_key(profile.run.workload)]["seeds"]
    ctx = ReportContext.load(out)
    for seed in SEEDS:
        want = {k: tuple(v) for k, v in recorded[str(seed)]["ranges"].items()}
        assert ctx.event_ranges(seed) == want
        assert E.online_event_ranges_for(profile.run.workload, seed, out) == want
    ranges = V.trend_change_ranges(ctx.profile, out)
    assert ranges is not None and ranges(1) == {"trend_change": tuple(recorded["1"]["ranges"]["trend_change"])}
    with pytest.raises(AssertionError, match="rebuilt"):  # without the record it would have to rebuild
        E.online_event_ranges_for(profile.run.workload, 0)


def test_ship_copies_the_record(grid, tmp_path):
    _, out = grid
    ship(out, tmp_path / "shipped")
    assert (tmp_path / "shipped" / EVENTS_FILE).read_text() == (out / EVENTS_FILE).read_text()


def test_ship_computes_the_record_for_a_folder_made_before_it_existed(grid, tmp_path):
    profile, out = grid
    old = tmp_path / "old"
    shutil.copytree(out, old)
    (old / EVENTS_FILE).unlink()
    ship(old, tmp_path / "shipped")
    assert read_events(tmp_path / "shipped") == read_events(out)
    assert not (old / EVENTS_FILE).exists()  # the grid's folder is not written to


def test_a_workload_that_cannot_be_built_is_left_out_with_a_warning(tmp_path, no_workloads):
    from ilets.config import WorkloadConfig

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert record_events(tmp_path, [(WorkloadConfig(scale=0.002), 0)]) is None
    assert not (tmp_path / EVENTS_FILE).exists()
    assert any("not recorded" in str(w.message) for w in caught)
