"""The book's recorded measurements: written with their settings and provenance
(:mod:`ilets.study.book_measurements`), read back only for the settings they were measured with
(:mod:`ilets.report.measurements`), and shipped for the paper-scale results the book shows."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from ilets.config import RunConfig, WorkloadConfig, from_dict, to_dict
from ilets.report import measurements as MS
from ilets.study import book_measurements as BM

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_PAPER = ROOT / "shipped" / "paper"


def _fake_records(monkeypatch):
    """Each record measured by a stand-in that returns fixed rows (no simulation)."""
    monkeypatch.setitem(BM.RECORDS, "workload", lambda run: {
        "servers": [50], "scales": [1.0], "seed": 0, "policy": "earliest-finish",
        "load": [{"scale": 1.0, "servers": 50, "policy": "earliest-finish", "tasks": 10, "avg_response_s": 1.5,
                  "avg_wait_s": 0.25, "success_rate": 0.9}]})
    monkeypatch.setitem(BM.RECORDS, "experts", lambda run: {
        "evaluations": {"ga": 900, "pso": 960},
        "gaps": [{"case": 0, "expert": "ga", "gap": 0.0, "optimum_ms": 2.0},
                 {"case": 0, "expert": "greedy", "gap": 0.1, "optimum_ms": 2.0}],
        "timing": [{"servers": 50, "expert": "ga", "ms_per_call": 5.0}]})
    monkeypatch.setitem(BM.RECORDS, "decision_time", lambda run: {
        "servers": [50], "decisions": 10, "predict_every": 5,
        "summary": [{"method": "DRL", "servers": 50, "path": "paper", "p50_ms": 21.0, "p95_ms": float("nan")}],
        "oail_seconds": {"mean": 1e-5, "max": 2e-3, "decisions": 9},
        "oail_counters": {"50": {"oail_requests": 3, "oail_completed": 2}}})


def test_a_record_reads_back_with_its_settings_and_provenance(tmp_path, monkeypatch):
    _fake_records(monkeypatch)
    run = RunConfig()
    for name in BM.RECORDS:
        BM.record(name, run, "custom", tmp_path)
        m = MS.read(name, "custom", run, tmp_path)
        assert m["record"] == name and m["profile"] == "custom" and m["run"] == json.loads(json.dumps(to_dict(run)))
        assert {"date_utc", "cpu_model", "cpus", "commit", "numerics"} <= set(m.host)
        assert m.stamp.startswith("recorded on ") and " UTC, at commit " in m.stamp and "`" not in m.stamp
    assert MS.load_frame(MS.read("workload", "custom", run, tmp_path))["success_rate"].tolist() == [0.9]
    experts = MS.read("experts", "custom", run, tmp_path)
    assert MS.gap_summary(experts).loc["greedy", "mean_gap"] == 0.1 and MS.timing_frame(experts)["ms_per_call"].tolist() == [5.0]
    latency = MS.read("decision_time", "custom", run, tmp_path)
    assert pd.isna(MS.latency_summary(latency)["p95_ms"].iloc[0])
    assert MS.oail_counters(latency).to_dict("index") == {50: {"oail_requests": 3, "oail_completed": 2}}


def test_a_record_measured_with_other_settings_is_refused(tmp_path, monkeypatch):
    _fake_records(monkeypatch)
    run = RunConfig()
    for name in BM.RECORDS:
        BM.record(name, run, "custom", tmp_path)
    slower = dataclasses.replace(run, fleet=dataclasses.replace(run.fleet, mips=(500.0, 1500.0)))
    with pytest.raises(MS.MeasurementError, match="other fleet settings.*make artifacts"):
        MS.read("workload", "custom", slower, tmp_path)
    MS.read("experts", "custom", slower, tmp_path)  # the experts' record does not depend on the fleet
    with pytest.raises(MS.MeasurementError, match="other fleet settings"):
        MS.read("decision_time", "custom", slower, tmp_path)  # the latency depends on the whole run
    cheaper = dataclasses.replace(run, experts=dataclasses.replace(run.experts, ga_generations=5))
    with pytest.raises(MS.MeasurementError, match="other experts settings"):
        MS.read("experts", "custom", cheaper, tmp_path)


def test_a_missing_record_names_the_command_that_records_it(tmp_path):
    with pytest.raises(MS.MeasurementError, match="no recorded measurement.*custom profile.*make artifacts"):
        MS.read("workload", "custom", RunConfig(), tmp_path)
    with pytest.raises(MS.MeasurementError, match="no recorded measurement is called"):
        MS.read("nothing", "custom", RunConfig(), tmp_path)


def test_the_records_folder_is_per_profile_and_can_be_moved(tmp_path, monkeypatch):
    monkeypatch.delenv(BM.ENV_VAR, raising=False)
    assert BM.measurements_dir("paper") == ROOT / "shipped" / "book" / "paper"
    monkeypatch.setenv(BM.ENV_VAR, str(tmp_path))
    assert BM.measurements_dir("smoke") == tmp_path / "smoke"


def test_the_load_table_replays_the_online_segment_per_fleet_size_and_scale():
    table = BM.load_table(WorkloadConfig(scale=0.0005), RunConfig().fleet, (5, 10), (0.0005,), seed=0)
    assert table[["scale", "servers", "policy"]].values.tolist() == [[0.0005, 5, "earliest-finish"],
                                                                      [0.0005, 10, "earliest-finish"]]
    assert (table["tasks"] == round(259_368 * 0.0005)).all()
    # more servers, less waiting on the same tasks
    assert table["avg_wait_s"].iloc[1] <= table["avg_wait_s"].iloc[0]
    assert BM.load_scales(dataclasses.replace(RunConfig(), workload=WorkloadConfig(scale=0.02))) == (0.02, 1.0)


def test_full_window_rows_are_taken_from_a_record_with_the_same_settings_and_measured_otherwise(tmp_path,
                                                                                                 monkeypatch):
    small = dataclasses.replace(RunConfig(), workload=WorkloadConfig(scale=0.0005))
    rows = BM.load_table(small.workload, small.fleet, BM.LOAD_SERVERS, (0.0005,)).to_dict("records")
    # a record of another profile at that scale, written before a newer workload field existed
    recorded = to_dict(dataclasses.replace(small, workload=WorkloadConfig(scale=0.3)))
    del recorded["workload"]["rate_factor"]
    path = tmp_path / "other" / "workload.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"profile": "other", "run": recorded, "seed": BM.LOAD_SEED, "policy": BM.LOAD_POLICY,
                                "load": rows, "host": {"commit": "abc1234", "date_utc": "2026-01-02T03:04:05Z"}}))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    found = BM.recorded_load_rows(small.workload, small.fleet, 0.0005, [broken, path])
    assert found is not None and found[0] == rows and found[1]["profile"] == "other"
    # another fleet, another seed or a missing fleet size: measured, not taken
    slow = dataclasses.replace(small.fleet, mips=(500.0, 1500.0))
    assert BM.recorded_load_rows(small.workload, slow, 0.0005, [path]) is None
    assert BM.recorded_load_rows(small.workload, small.fleet, 0.0005, [path], seed=1) is None
    assert BM.recorded_load_rows(small.workload, small.fleet, 0.0005, [path], servers=(50, 100, 200, 400)) is None
    # the record: the rows it found are taken and listed, the scale it lacks is measured
    measured = []
    monkeypatch.setattr(BM, "load_table", lambda workload, fleet, servers, scales, **kw: (
        measured.append(scales), pd.DataFrame([{"scale": s, "servers": m} for s in scales for m in servers]))[1])
    monkeypatch.setattr(BM, "load_scales", lambda run: (0.0005, 1.0))
    out = BM.workload_record(small, reuse=[path])
    assert measured == [(1.0,)] and out["load"][:len(rows)] == rows
    assert [r["scale"] for r in out["reused"]] == [0.0005]
    stamp = MS.Measurement("workload", path, {**out, "host": {"commit": "def5678"}}).stamp
    assert "scale 0.0005" in stamp and "other profile's record" in stamp and "abc1234" in stamp
    # measuring a profile again measures it anew: the shipped paper record is not its own source
    paper = ROOT / "shipped" / "book" / "paper" / "workload.json"
    run = from_dict(RunConfig, json.loads(paper.read_text())["run"], "paper")
    assert BM._measured_with(paper, run) and not BM._measured_with(paper, small)


def test_measured_latency_times_both_paths_at_every_fleet_size(monkeypatch):
    import ilets.study.latency as L

    calls = []

    def fake_measure(servers, n, cfg, with_oail, predict_every=5, seed=0):
        calls.append((servers, n, with_oail, predict_every))
        t = pd.DataFrame({"method": ["ILETS" if with_oail else "DRL"], "servers": [servers], "seconds": [1e-4]})
        if with_oail:
            t.attrs["oail"] = {"requests": servers // 10, "applied": servers // 20}
        return t

    monkeypatch.setattr(L, "measure", fake_measure)
    timings, counters = L.measured_latency(RunConfig(), (50, 100), n=200, predict_every=4)
    assert calls == [(50, 200, False, 4), (50, 200, True, 4), (100, 200, False, 4), (100, 200, True, 4)]
    assert list(timings["method"]) == ["DRL", "ILETS", "DRL", "ILETS"] and list(timings["servers"]) == [50, 50, 100, 100]
    assert counters.to_dict("index") == {50: {"requests": 5, "applied": 2}, 100: {"requests": 10, "applied": 5}}


def test_the_latency_record_keeps_the_summary_the_oail_times_and_the_counters(monkeypatch):
    import ilets.study.latency as L

    timings = pd.DataFrame({"decision": [0, 0, 0, 1, 0, 1, 1], "servers": 50,
                            "path": ["numpy actor", "sb3 predict", "numpy actor", "numpy actor", "oail", "numpy actor", "oail"],
                            "method": ["DRL", "DRL", "ILETS", "DRL", "ILETS", "ILETS", "ILETS"],
                            "seconds": [1e-5, 5e-4, 1e-5, 3e-5, 2e-6, 1e-5, 4e-6]})
    counters = pd.DataFrame({50: {"oail_requests": 3.0, "oail_served_share": 0.5}}).T
    monkeypatch.setattr(L, "measured_latency", lambda run, scales, n, every: (timings, counters))
    rec = BM.decision_time_record(RunConfig())
    assert rec["oail_seconds"] == {"mean": pytest.approx(3e-6), "max": 4e-6, "decisions": 2}
    assert rec["oail_counters"] == {"50": {"oail_requests": 3, "oail_served_share": 0.5}}  # counts whole, shares kept
    summary = pd.DataFrame(rec["summary"]).set_index(["method", "servers", "path"])
    assert summary.loc[("DRL", 50, "our decision"), "p50_ms"] == pytest.approx(2e-2)
    assert summary.loc[("ILETS", 50, "our decision"), "p50_ms"] == pytest.approx(1.3e-2)  # numpy actor + oail


@pytest.mark.parametrize("name", sorted(BM.RECORDS))
def test_the_shipped_paper_results_have_their_records(name):
    # the book shows shipped/paper on a fresh clone: its chapters read these without measuring
    if not (SHIPPED_PAPER / "profile.yaml").is_file():
        pytest.skip("no shipped paper-scale results in this checkout")
    profile, run = BM.results_run(SHIPPED_PAPER)
    m = MS.read(name, profile, run, ROOT / "shipped" / "book" / profile)
    assert m.host.get("commit") and m.host.get("date_utc")
