"""The grid-command pilot: its rules, its seeds, resuming, shipping, and the defaults it chose.
Its faults (interrupts, damaged rows, unwritable folders) are in tests/test_faults.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ilets.gridcommand import designs as DS, pilot as PL
from ilets.gridcommand.experiment import ExperimentProfile
from ilets.gridcommand.experts import LyapunovExpert
from ilets.gridcommand.study import pilot as CP
from ilets.gridcommand.study import scenario as G
from ilets.study.cli import main

#: The retired pilot folder's record, kept in the archive's provenance.
ARCHIVED = Path(__file__).resolve().parents[1] / "shipped" / "archive" / "gridcommand-designs.json"


def test_the_rules_pick_by_hand():
    scores = {50: -0.300, 200: -0.2990, 1000: -0.2985}
    assert PL.choose(scores, "best") == 1000
    # within 0.5 % of |best| = 0.0014925: 200 (-0.2990) is, 50 (-0.300) is not
    assert PL.choose(scores, "smallest-within", 0.005) == 200
    assert PL.choose(scores, "smallest-within", 0.01) == 50
    assert PL.choose({1.0: -1.0, 2.0: -1.0}, "best") == 1.0  # a tie: the first
    with pytest.raises(ValueError, match="unknown rule"):
        PL.choose(scores, "median")
    with pytest.raises(ValueError, match="no scores"):
        PL.choose({}, "best")
    # the score is the tracking error: lower is better, so the choice reads it negated
    assert PL.SCORE == "tracking_mae_rel" and PL.choose(PL.signed({1: 0.4, 2: 0.3}), "best") == 2


@pytest.mark.parametrize("design", DS.ids())
def test_pilot_seeds_are_never_evaluated_by_a_grid(design):
    assert set(PL.PILOT_SEEDS) <= set(PL.RESERVED_SEEDS)
    assert not set(PL.RESERVED_SEEDS) & set(G.load_profile(design).seeds)


def test_the_pilot_resumes_without_recomputing(tmp_path, monkeypatch):
    profile = G.load_profile("smoke")
    plan = [{"expert": "lyapunov", "option": "track_gain", "candidates": [1.0, 200.0], "servers": [5],
             "rule": "best", "tolerance": 0.0, "fixed": {}}]
    first = CP.run_pilot(profile, tmp_path, seeds=(100,), plan=plan, log=lambda s: None)
    lines = (tmp_path / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 2 * len(set(profile.regimes.values()))
    stage = first["stages"][0]
    assert stage["chosen"] == PL.choose(PL.signed({json.loads(k): v for k, v in stage["scores"].items()}), "best")

    def no_episode(*a, **k):
        raise AssertionError("a finished episode was recomputed")

    monkeypatch.setattr(PL, "episode", no_episode)
    again = CP.run_pilot(profile, tmp_path, seeds=(100,), plan=plan, log=lambda s: None)
    assert again["stages"][0]["scores"] == stage["scores"]
    assert json.loads((tmp_path / "pilot.json").read_text())["stages"][0]["chosen"] == stage["chosen"]


def test_a_best_choice_at_an_end_of_its_range_widens_it_until_it_is_inside(tmp_path, monkeypatch):
    import math

    def peaked(profile, expert, options, servers, seed, regime):  # best at 1600: past the range's end
        return {"mean_reward": 0.0, "episode_reward": 0.0, "tracking_mae_rel": math.log2(options["track_gain"] / 1600) ** 2,
                "misses_caused": 0, "deferrals": 0, "cpu_s": 0.0}

    monkeypatch.setattr(PL, "episode", peaked)
    plan = [{"expert": "lyapunov", "option": "track_gain", "candidates": [200.0, 400.0, 800.0], "servers": [5],
             "rule": "best", "tolerance": 0.0, "fixed": {}, "widen": 3}]
    stage = CP.run_pilot(G.load_profile("smoke"), tmp_path, seeds=(100,), plan=plan, log=lambda s: None)["stages"][0]
    assert stage["chosen"] == 1600.0 and stage["widened"] == [1600.0, 3200.0] and not stage["at_edge"]
    assert stage["candidates"] == [200.0, 400.0, 800.0, 1600.0, 3200.0]
    # a budget chosen as the smallest within a tolerance is never widened
    assert PL.widened([50, 200], 50, {"rule": "smallest-within", "widen": 3}, 0) is None
    assert PL.widened([1.0, 2.0], 1.0, {"rule": "best", "widen": 3}, 0) == 0.5  # the low end too
    assert PL.widened([1.0, 2.0], 2.0, {"rule": "best", "widen": 1}, 1) is None  # as often as allowed


def test_the_defaults_are_the_shipped_pilots_choices():
    shipped = json.loads(ARCHIVED.read_text())["gridcommand_pilot"]
    assert LyapunovExpert().track_gain == PL.chosen(shipped, "lyapunov", "track_gain")
    node_limit = PL.chosen(shipped, "oracle", "node_limit")
    assert ExperimentProfile().oracle_node_limit == node_limit
    for name in ("quick", "smoke"):
        p = G.load_profile(name)
        assert p.oracle_time_limit is None, name  # host-independent: the node limit only
    assert G.load_profile("quick").oracle_node_limit == node_limit


def test_shipping_a_missing_or_unfinished_folder_is_a_one_line_error(tmp_path, capsys):
    ship = ["ship", "--scenario", "gridcommand", "--to", str(tmp_path / "dest"), "--results"]
    assert main([*ship, str(tmp_path / "absent")]) == 2
    assert "pilot.json" in capsys.readouterr().err
    (tmp_path / "unfinished").mkdir()
    assert main([*ship, str(tmp_path / "unfinished")]) == 2
    err = capsys.readouterr().err
    assert "pilot.json" in err and "Traceback" not in err and not (tmp_path / "dest").exists()
    assert list((tmp_path / "unfinished").iterdir()) == []
    # the grid's own shipping: tests/test_scenario.py


def test_ilets_pilot_runs_resumes_and_ships_with_the_one_provenance_schema(tmp_path, capsys, monkeypatch):
    from ilets.study.scenario import get_scenario

    def fake_episode(profile, expert, options, servers, seed, regime):
        value = options["track_gain"] if expert == "lyapunov" else options["node_limit"]
        return {"mean_reward": 0.0, "episode_reward": 0.0, "tracking_mae_rel": 1.0 / value,
                "misses_caused": 0, "deferrals": 0, "cpu_s": 0.5}

    monkeypatch.setattr(PL, "episode", fake_episode)
    out, dest = tmp_path / "pilot", tmp_path / "shipped"
    assert main(["pilot", "--scenario", "gridcommand", "--profile", "smoke", "--out", str(out), "--quiet"]) == 0
    # the best gain (always the largest here: the range is widened as far as allowed), and the
    # smallest node limit within 0.5 % of the best: the largest, here (a budget is never widened)
    assert json.loads(capsys.readouterr().out) == {"lyapunov.track_gain": max(PL.TRACK_GAINS) * 2 ** PL.MAX_WIDEN,
                                                   "oracle.node_limit": max(PL.NODE_LIMITS)}
    gain = json.loads((out / "pilot.json").read_text())["stages"][0]
    assert gain["widened"] == [max(PL.TRACK_GAINS) * 2 ** k for k in range(1, PL.MAX_WIDEN + 1)] and gain["at_edge"]
    rows = (out / "episodes.jsonl").read_text().splitlines()
    assert all({"wall_s", "started_utc", "commit"} <= set(json.loads(r)) for r in rows)
    assert main(["ship", "--scenario", "gridcommand", "--results", str(out), "--to", str(dest), "--note", "n"]) == 0
    info = json.loads(capsys.readouterr().out)
    schema = set(provenance_keys(get_scenario("gridcommand"), tmp_path))
    assert set(info) == schema | {"finished_utc", "chosen", "note", "size_mb"}
    assert info["cells"] == len(rows) and info["chosen"]["oracle.node_limit"] == max(PL.NODE_LIMITS)
    assert abs(info["cpu_hours"] - 0.5 * len(rows) / 3600) < 1e-12
    assert sorted(p.name for p in dest.iterdir()) == ["PROVENANCE.json", "episodes.jsonl", "pilot.json"]


def provenance_keys(scenario, tmp_path) -> dict:
    """The study's one provenance schema (of an empty folder)."""
    from ilets.study.shipping import provenance

    return provenance(tmp_path, scenario)


def test_a_line_cut_short_by_a_kill_is_run_again(tmp_path, monkeypatch):
    profile = G.load_profile("smoke")
    plan = [{"expert": "rule", "option": "unused", "candidates": [1], "servers": [5],
             "rule": "best", "tolerance": 0.0, "fixed": {}}]
    calls = []

    def fake_episode(profile, expert, options, servers, seed, regime):
        calls.append(regime)
        return {"mean_reward": -1.0, "episode_reward": -1.0, "tracking_mae_rel": 0.5, "misses_caused": 0,
                "deferrals": 0, "cpu_s": 0.0}

    monkeypatch.setattr(PL, "episode", fake_episode)
    CP.run_pilot(profile, tmp_path, seeds=(100,), plan=plan, log=lambda s: None)
    lines = (tmp_path / "episodes.jsonl").read_text().splitlines()
    n = len(lines)
    assert n == len(calls) == len(set(profile.regimes.values()))
    (tmp_path / "episodes.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    calls.clear()
    with pytest.warns(UserWarning, match="cut short"):
        CP.run_pilot(profile, tmp_path, seeds=(100,), plan=plan, log=lambda s: None)
    assert len(calls) == 1  # only the torn episode ran again
    again = (tmp_path / "episodes.jsonl").read_text().splitlines()
    assert len(again) == n and all(json.loads(line) for line in again)
