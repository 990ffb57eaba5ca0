"""The worlds comparison (:mod:`ilets.report.worlds`) on hand-made cells."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ilets.report.worlds import family_cells, worlds_sentence, worlds_table


def _cells(spread: float, shift: dict[str, float], seeds=range(8), variant: str = "") -> pd.DataFrame:
    """Cells whose response time is ``1 + shift[method]`` plus per-seed noise of ``spread``
    (shared by the methods of one seed, as a world is, plus a small own part)."""
    rng = np.random.default_rng(0)
    rows = []
    for s in seeds:
        world = spread * rng.standard_normal()
        for method, d in shift.items():
            own = 0.002 * rng.standard_normal()
            rows.append({"method": method, "variant": variant, "servers": 50, "seed": s,
                         "avg_response_s": 1.0 + d + world + own, "mean_reward": -(1.0 + d + world + own)})
    return pd.DataFrame(rows)


def test_a_comparison_resolved_in_one_world_can_dissolve_over_worlds():
    # in one world DRL+ is 1 % faster than DRL with tiny noise; over worlds the worlds still
    # move both methods together (paired), but the effect itself varies from world to world
    one = _cells(0.0, {"drl": 0.01, "drl+": 0.0})
    worlds = _cells(0.05, {"drl": 0.01, "drl+": 0.0})
    rng = np.random.default_rng(1)
    worlds.loc[worlds["method"] == "drl+", "avg_response_s"] += 0.03 * rng.standard_normal(8)
    t = worlds_table(one, worlds, comparisons=(("drl+", "drl"),), measures=("avg_response_s",), reps=500)
    (row,) = t.to_dict("records")
    assert row["verdict_one_world"] == "better" and row["verdict_worlds"] == "unresolved" and not row["holds"]
    assert row["width_ratio"] > 3
    text = worlds_sentence(t, "per-server")
    moved = text.split("DRL+ vs DRL on ")[1]
    assert "0 of 1 comparisons keep" in text and moved.startswith("response time at 50 servers")
    assert moved.split(" servers ")[1].startswith("(better -> unresolved)")


def test_a_robust_comparison_holds_and_only_shared_sizes_are_compared():
    one = pd.concat([_cells(0.0, {"earliest-finish": 0.0, "greedy-cost": 0.1}),
                     _cells(0.0, {"earliest-finish": 0.0, "greedy-cost": 0.1}).assign(servers=100)])
    worlds = _cells(0.05, {"earliest-finish": 0.0, "greedy-cost": 0.1})
    t = worlds_table(one, worlds, comparisons=(("earliest-finish", "greedy-cost"),), measures=("avg_response_s",),
                     reps=500)
    assert list(t["servers"]) == [50] and bool(t["holds"].all()) and t["verdict_worlds"].iloc[0] == "better"
    assert "1 of 1 comparisons keep" in worlds_sentence(t, "flat")


def test_no_worlds_results_say_so():
    empty = pd.DataFrame()
    t = worlds_table(_cells(0.0, {"drl": 0.0, "drl+": 0.0}), empty)
    none = worlds_sentence(t, "flat")
    assert t.empty and none.startswith("No worlds results") and "flat learners" in none


def test_family_cells_relabels_the_per_server_variant_and_keeps_the_heuristics():
    grid = pd.concat([_cells(0.0, {"drl": 0.0, "earliest-finish": 0.0}),
                      _cells(0.0, {"drl": 0.5}, variant="per-server")])
    ps = family_cells(grid, "per-server")
    assert set(ps["variant"]) == {""} and ps[ps["method"] == "drl"]["avg_response_s"].min() > 1.4
    flat = family_cells(grid, "flat")
    assert flat[flat["method"] == "drl"]["avg_response_s"].max() < 1.4
    assert set(flat["method"]) == set(ps["method"]) == {"drl", "earliest-finish"}


def test_the_chapter_reads_both_families_and_says_when_no_worlds_grid_exists(tmp_path):
    from types import SimpleNamespace

    from ilets.report.worlds import chapter_findings, display_table

    main = _cells(0.0, {"drl": 0.01, "drl+": 0.0, "earliest-finish": 0.0, "greedy-cost": 0.1})
    ctx = SimpleNamespace(metrics=main, reps=200)
    found = chapter_findings(ctx, per_server=tmp_path / "none", worlds=tmp_path / "none")
    assert set(found.sentences) == {"flat", "per-server"}
    assert all("No worlds results" in s for s in found.sentences.values())
    t = worlds_table(main, _cells(0.05, {"drl": 0.01, "drl+": 0.0}), comparisons=(("drl+", "drl"),),
                     measures=("avg_response_s",), reps=200)
    shown = display_table(t)
    assert list(shown.columns) == ["comparison", "servers", "measure", "one world (%)", "over worlds (%)",
                                   "width ratio"]
    assert shown["comparison"].iloc[0] == "DRL+ vs DRL" and "(n=8)" in shown["over worlds (%)"].iloc[0]


def test_the_findings_table_stacks_the_families_that_have_results():
    from ilets.report.worlds import WorldsFindings, findings_table

    one = _cells(0.0, {"earliest-finish": 0.0, "greedy-cost": 0.1})
    t = worlds_table(one, _cells(0.05, {"earliest-finish": 0.0, "greedy-cost": 0.1}),
                     comparisons=(("earliest-finish", "greedy-cost"),), measures=("avg_response_s",), reps=200)
    found = WorldsFindings(tables={"flat": t, "per-server": t.iloc[0:0]}, sentences={})
    shown = findings_table(found)
    assert list(shown.columns[:2]) == ["learners", "comparison"] and list(shown["learners"]) == ["flat"]
    assert findings_table(WorldsFindings(tables={"flat": t.iloc[0:0]}, sentences={})).empty
