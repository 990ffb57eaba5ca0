"""The sleep lever's chapter numbers (ilets.report.command_sleep) on hand-built results."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ilets.report import command_sleep as C


def _store(shift: float, seeds=(0, 1, 2, 3), methods=("lyapunov", "rule")) -> pd.DataFrame:
    rows = []
    for m in methods:
        for s in seeds:
            for regime in ("shallow-long", "deep-short"):
                good = m == "lyapunov"
                rows.append({"method": m, "servers": 50, "seed": s, "regime": regime, "role": "train",
                             "band_reached_share": min(1.0, (0.6 if good else 0.2) + shift),
                             "tracking_mae_rel": (0.4 if good else 0.9) - shift / 2 + 0.01 * s,
                             "misses_caused": 10.0 + s})
    return pd.DataFrame(rows)


def test_rows_keep_what_both_stores_have():
    rows = C.lever_rows(_store(0.0, seeds=(0, 1, 2)), _store(0.3, seeds=(1, 2, 3)))
    assert set(rows["seed"]) == {1, 2} and set(rows["lever"]) == {"none", "sleep"}


def test_the_lever_table_says_better_when_it_helps_and_the_bar_reads_the_best_expert():
    table = C.lever_table(C.lever_rows(_store(0.0), _store(0.3)), reps=200)
    track = table[table["metric"] == "tracking_mae_rel"]
    assert set(track["verdict"]) == {"better"}
    bars = C.band_bar(table)
    sleep = bars[bars["lever"] == "sleep"]
    assert set(sleep["best"]) == {"lyapunov"} and sleep["share"].tolist() == pytest.approx([0.9, 0.9])
    assert sleep["meets"].all() and not bars[bars["lever"] == "none"]["meets"].any()
    said = C.lever_sentence(table, bars, pd.DataFrame(columns=["regime", "servers", "lever", "reachable"]))
    assert "so the bar is met everywhere" in said and "without the lever, in 0 of 2" in said
    assert "better in 4 and worse in 0 of 4" in said
    shown = C.lever_display(table)
    assert len(shown) == 4 and shown.loc[0, "events reaching the band"] == "60% → 90%"


def test_a_lever_that_hurts_fails_the_bar():
    table = C.lever_table(C.lever_rows(_store(0.0), _store(-0.3)), reps=200)
    bars = C.band_bar(table)
    assert not bars["meets"].any()
    said = C.lever_sentence(table, bars, pd.DataFrame(columns=["regime", "servers", "lever", "reachable"]))
    assert "met in 0 of the 2" in said and "worse in 4" in said


def test_reach_reads_down_events_once_per_seed(tmp_path):
    for lever, reach in (("none", 0.2), ("sleep", 0.5)):
        cells = tmp_path / lever / "cells"
        cells.mkdir(parents=True)
        for m in ("lyapunov", "rule"):  # two methods, the same events: counted once
            events = [{"direction": "down", "reachable_depth": reach, "requested_w": 100.0},
                      {"direction": "up", "reachable_depth": 0.9, "requested_w": 50.0}]
            record = {"status": "done", "method": m, "servers": 50, "seed": 0,
                      "regimes": {"train": "shallow-long"},
                      "scores": {"train": {"per_event": events, "events_dropped": 0.0 if lever == "none" else 2.0}}}
            (cells / f"{m}-M50-s0.json").write_text(json.dumps(record))
    t = C.reach_table(tmp_path / "none", tmp_path / "sleep")
    assert t["events"].tolist() == [1, 1] and t["reachable"].tolist() == [0.2, 0.5]
    assert t["dropped"].tolist() == [0, 2]
    said = C.lever_sentence(C.lever_table(C.lever_rows(_store(0.0), _store(0.3)), reps=100),
                            C.band_bar(C.lever_table(C.lever_rows(_store(0.0), _store(0.3)), reps=100)), t)
    assert "shallow-long at 50 servers 20% → 50%" in said
    assert "the envelope dropped 2 events as unreachable (without it 0)" in said


def test_reach_display_formats_shares_and_watts():
    reach = pd.DataFrame([{"regime": "r", "servers": 50, "lever": "sleep", "events": 3, "reachable": 0.256,
                           "asked_w": 1234.4}])
    shown = C.reach_display(reach)
    assert shown.loc[0, "mean reachable depth"] == "25.6%" and shown.loc[0, "mean change asked (W)"] == "1,234"


def test_reach_keeps_the_seeds_both_folders_have(tmp_path):
    for lever, seeds in (("none", (0, 1)), ("sleep", (1, 2))):
        cells = tmp_path / lever / "cells"
        cells.mkdir(parents=True)
        for seed in seeds:
            record = {"status": "done", "method": "rule", "servers": 50, "seed": seed,
                      "regimes": {"train": "shallow-long"},
                      "scores": {"train": {"per_event": [{"direction": "down", "reachable_depth": 0.1 * (seed + 1),
                                                          "requested_w": 10.0}]}}}
            (cells / f"rule-M50-s{seed}.json").write_text(json.dumps(record))
    t = C.reach_table(tmp_path / "none", tmp_path / "sleep")
    assert t["events"].tolist() == [1, 1] and t["reachable"].tolist() == pytest.approx([0.2, 0.2])


def _grid(folder, shares):
    """A results folder of Lyapunov rows with the band shares given per fleet size."""
    (folder / "store").mkdir(parents=True)
    rows = [{"method": "lyapunov", "servers": s, "seed": seed, "role": "train", "regime": "shallow-long",
             "scale": "quick", "workload_scale": 0.02, "band_reached_share": share, "tracking_mae_rel": 0.3}
            for s, share in shares.items() for seed in (0, 1)]
    pd.DataFrame(rows).to_parquet(folder / "store" / "results.parquet")


def test_sensitivity_says_where_the_timing_changes_the_bar(tmp_path):
    for label, rel in C.VARIANTS.items():
        shares = {"off": {50: 0.5, 200: 0.5}, "fast": {50: 0.9, 200: 0.9}, "default": {50: 0.9, 200: 0.85},
                  "slow": {50: 0.9, 200: 0.6}}[label]
        _grid(tmp_path / rel, shares)
    t = C.sensitivity_table(tmp_path)
    assert t["variant"].tolist() == list(C.VARIANTS) * 2 and set(t["seeds"]) == {2}
    said = C.sensitivity_sentence(t)
    assert "stays the same for shallow-long at 50 servers (met)" in said
    assert "changes for shallow-long at 200 servers (met with fast, default)" in said
    assert C.sensitivity_sentence(t.iloc[0:0]) == "The lever's timing variants have not run."
    only_default = t[t["variant"].isin(["off", "default"])]
    assert C.sensitivity_sentence(only_default) == "The lever's timing variants have not run."
    both = C.sensitivity_tables(tmp_path, ("lyapunov", "rule"))  # the fixture's grids hold Lyapunov only
    assert list(both["expert"].unique()) == ["Lyapunov"]
    assert C.sensitivity_sentences(both) == f"For Lyapunov, w{said[1:]}"


def test_the_envelope_runs_sentence_reads_both_arms():
    arms = C.ENVELOPE_RUNS
    table = C.lever_table(C.lever_rows(_store(0.0), _store(0.3), arms), reps=200, arms=arms)
    bars = C.band_bar(table, arms=arms)
    assert set(bars["lever"]) == set(arms)
    reach = pd.DataFrame([{"regime": "deep-short", "servers": 50, "lever": "joint", "events": 8, "dropped": 3,
                           "redrawn": 0, "reachable": 0.06, "asked_w": 1.0},
                          {"regime": "deep-short", "servers": 50, "lever": "per-event", "events": 11, "dropped": 0,
                           "redrawn": 0, "reachable": 0.14, "asked_w": 1.0}])
    said = C.runs_sentence(bars, reach)
    assert "kept 11 down events and dropped 0" in said and "(the joint run: 8 kept, 3 dropped)" in said
    assert "in 2 of the 2 (regime, fleet size) pairs (the joint run: 0 of 2)" in said
    assert C.runs_sentence(bars.iloc[0:0], reach).startswith("The grid with one envelope run per event is not")
    # the same comparison with unreachable events moved: the moved events are said
    arms = C.REDRAW_ARMS
    bars = C.band_bar(C.lever_table(C.lever_rows(_store(0.0), _store(0.3), arms), reps=200, arms=arms), arms=arms)
    moved = reach.assign(lever=list(arms), redrawn=[0, 3], dropped=[3, 0])
    said = C.runs_sentence(bars, moved, arms=arms)
    assert said.startswith("With unreachable events moved to a new start, the envelope kept 11 down events, moved 3 "
                           "events to a start they could be followed from and dropped 0 events as unreachable")
    assert C.runs_sentence(bars.iloc[0:0], moved, arms=arms).startswith("The grid with unreachable events moved")


def test_the_batch_sentence_sets_the_batch_class_beside_sleep_alone():
    arms = C.BATCH_ARMS
    table = C.lever_table(C.lever_rows(_store(0.0), _store(0.3), arms), reps=200, arms=arms)
    bars = C.band_bar(table, arms=arms)
    reach = pd.DataFrame([{"regime": "shallow-long", "servers": 50, "lever": arm, "events": 2, "dropped": d,
                           "reachable": r, "asked_w": 1.0} for arm, d, r in zip(arms, (3, 1), (0.3, 0.45))])
    said = C.batch_sentence(table, bars, reach)
    assert "shallow-long at 50 servers 30% → 45%" in said and "dropped 1 events as unreachable with the batch" in said
    assert "(with sleep alone 3)" in said and "so the bar is met everywhere" in said
    assert "with sleep only, in 0 of 2" in said and "the batch class makes the tracking error better in 4" in said
    assert C.batch_sentence(table.iloc[0:0], bars, reach) == "The grid with the batch class is not in this checkout."


def test_the_batch_share_sentence_says_where_the_smaller_share_changes_the_verdict():
    def bars(arm, shares):
        return pd.DataFrame([{"regime": r, "servers": 50, "lever": arm, "best": "lyapunov", "share": v,
                              "meets": v >= C.BAND_BAR} for r, v in shares.items()])

    high = bars(C.BATCH_ARMS[1], {"shallow-long": 0.9, "deep-short": 0.85})
    low = bars(C.BATCH_LOW_ARMS[1], {"shallow-long": 0.95, "deep-short": 0.6})
    said = C.batch_share_sentence(high, low, (0.3, 0.1))
    assert "stays the same for shallow-long at 50 servers (90% → 95%)" in said
    assert "changes for deep-short at 50 servers (85% → 60%)" in said and "10% instead of 30%" in said
    assert "has not run" in C.batch_share_sentence(high, low.iloc[0:0], (0.3, 0.1))


def test_the_deadlines_sentence_gives_each_experts_band_and_misses_with_both_envelopes():
    arms = C.DEADLINE_ARMS
    table = C.lever_table(C.lever_rows(_store(0.0, methods=("lyapunov",)), _store(0.3, methods=("lyapunov",)), arms),
                          reps=200, arms=arms)
    bars = C.band_bar(table, arms=arms)
    reach = pd.DataFrame([{"regime": "deep-short", "servers": 50, "lever": arm, "events": 4, "dropped": d,
                           "reachable": r, "asked_w": 1.0} for arm, d, r in zip(arms, (2, 5), (0.48, 0.2))])
    said = C.deadlines_sentence(table, bars, reach)
    assert "deep-short at 50 servers 48% → 20%" in said and "dropped 5 events as unreachable within deadlines" in said
    assert "(with the whole reach 2)" in said
    assert "deep-short at 50 servers, Lyapunov: 60% → 90% of events, at +12 → +12 deadline misses caused" in said
    assert "in 2 of the 2 (regime, fleet size) pairs with commands sized within deadlines" in said
    assert "among the same experts: 0 of 2)" in said
    assert C.deadlines_sentence(table, bars.iloc[0:0], reach).endswith("keeps deadlines has not run.")


def test_runs_comparison_reads_the_shipped_quick_grids_and_says_when_one_is_absent(tmp_path):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    status, reach, said = C.runs_comparison(root, C.SHIPPED, C.EACH_SHIPPED, "gridcommand-grid-sleep-each")
    assert "quick-scale" in status and set(reach["lever"]) == set(C.ENVELOPE_RUNS)
    assert said.startswith("With one envelope run per event, the envelope kept")
    status, reach, said = C.runs_comparison(tmp_path, C.SHIPPED, C.EACH_SHIPPED, "gridcommand-grid-sleep-each")
    assert "run `ilets grid --scenario gridcommand --profile gridcommand-grid-sleep-each" in status
    assert reach.empty and said.startswith("The grid with one envelope run per event is not")
