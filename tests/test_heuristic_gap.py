"""The best learner against the best heuristic, per fleet size (ilets.report.heuristic_gap)."""

import numpy as np
import pandas as pd
from text_numbers import numbers_in

from ilets.report.heuristic_gap import gap_sentence, gap_table


def _cells(method, servers, response, reward, seeds=range(5)):
    rng = np.random.default_rng(abs(int(1000 * response)) + servers)
    return [{"method": method, "servers": servers, "seed": s, "avg_response_s": response * (1 + 0.001 * rng.normal()),
             "mean_reward": reward} for s in seeds]


def _metrics():
    rows = []
    # 50 servers: DRL+ clearly faster than every heuristic; 200: every learner slower
    rows += _cells("drl+", 50, 1.0, -0.30) + _cells("drl", 50, 1.5, -0.40)
    rows += _cells("earliest-finish", 50, 1.2, -0.32) + _cells("greedy-cost", 50, 1.3, -0.31)
    rows += _cells("drl+", 200, 2.0, -0.50) + _cells("earliest-finish", 200, 1.0, -0.20)
    return pd.DataFrame(rows)


def test_the_gap_picks_the_best_of_each_side_per_fleet_size():
    t = gap_table(_metrics(), reps=200).set_index(["measure", "servers"])
    r = t.loc[("avg_response_s", 50)]
    assert (r["learner"], r["heuristic"]) == ("drl+", "earliest-finish")
    assert r["beats"] and abs(r["effect_pct"] - 100 * (1.2 - 1.0) / 1.2) < 0.5
    assert t.loc[("mean_reward", 50), "heuristic"] == "greedy-cost"
    assert not t.loc[("avg_response_s", 200), "beats"] and t.loc[("avg_response_s", 200), "effect_pct"] < -90


def test_the_sentence_names_where_a_learner_wins_and_says_so_when_none_does():
    t = gap_table(_metrics(), reps=200)
    text = gap_sentence(t, "the test family")
    # where a learner beats the best heuristic: response time and mean reward, both at 50 servers
    assert text.startswith("With the test family,") and "a learner beats" in text
    beats = text.split("beats the best heuristic on ")[1].split(". ")[0]
    assert beats.startswith("response time at 50") and "), mean reward at 50" in beats
    assert beats.count("at 50 servers (DRL+") == 2 and "200" not in beats
    losing = gap_sentence(t[t["servers"] == 200], "the test family")
    assert losing.startswith("With the test family,") and "no learner beats" in losing
    assert "at any fleet size tested" in losing
    assert "no learner and heuristic" in gap_sentence(t.iloc[0:0], "x")


def test_the_per_server_cost_sentence_reads_the_cells_records():
    from ilets.report.per_server import cost_sentence

    cells = pd.DataFrame({"method": ["drl", "ilets", "ilets", "ilets-"], "servers": [50, 50, 50, 200],
                          "cpu_s": [100.0, 400.0, 600.0, 900.0]})
    text = cost_sentence(cells)
    # 2,000 CPU s in all (0.56 CPU-hours); the costliest cell on average: ILETS- at 200 servers (900 s; ILETS
    # at 50 servers averages 500 s and is not named)
    assert numbers_in(text) == ["0.56", "200", "900"] and "ILETS-" in text
    assert cost_sentence(pd.DataFrame()) == ""


def test_one_seed_never_beats_or_loses():
    rows = _cells("drl+", 50, 1.0, -0.30, seeds=[0]) + _cells("earliest-finish", 50, 1.2, -0.32, seeds=[0])
    t = gap_table(pd.DataFrame(rows), reps=200)
    assert (t["seeds"] == 1).all() and not t["beats"].any() and (t["verdict"] != "worse").all()


def test_a_store_without_cells_gives_no_family_rows():
    from ilets.report.heuristic_gap import family_metrics

    assert family_metrics(pd.DataFrame({"variant": []}), pd.DataFrame(_metrics())).empty



def test_chapter_13_leads_with_the_numbers_of_its_tables():
    from ilets.report.per_server import chapter_lead, gap_display, heldout_display

    comparison = pd.DataFrame({"method": ["drl+", "drl+", "drl+", "ilets-", "ilets-"],
                               "metric": ["avg_response_s"] * 2 + ["energy_kwh"] + ["avg_response_s"] * 2,
                               "servers": [50, 200, 50, 50, "all"], "ours_pct": [50.06, 17.35, 3.0, 41.01, 19.6],
                               "paper_pct": [36.73, 36.73, 20.92, 22.3, 22.3]})
    gap = gap_table(_metrics(), reps=200)
    held = pd.DataFrame({"method": ["drl", "drl+", "drl+", "ilets"], "servers": [50, 50, 200, 50],
                         "change": [0.636, -0.0002, 0.0005, -0.0018], "change_low": [0.38, -0.0015, 0.0, -0.0038],
                         "change_high": [0.89, 0.0011, 0.001, 0.0001]})
    lead = chapter_lead(comparison, gap, held)
    r50, r200 = (gap.set_index(["measure", "servers"]).loc[("avg_response_s", s), "effect_pct"] for s in (50, 200))
    first, second, third = lead.split(". ")
    # each number of the lead is its table's: DRL+'s and ILETS-'s range over fleet sizes (energy and the
    # pooled row left out), then the paper's figures; the best learner per fleet size; the held-out changes
    assert numbers_in(first) == ["+17.4", "+50.1", "+41.0", "36.73", "22.30"]
    assert numbers_in(second) == [f"{r50:+.1f}", "50", f"{r200:+.1f}", "200"]
    assert numbers_in(third) == ["-0.18", "+0.05", "+63.6"] and third.endswith("clone.")
    moved = held.assign(change=held["change"].where(held["method"] == "drl", 0.02))
    assert chapter_lead(comparison, gap, moved).count("clone") == 1  # moved by 2 %: no longer read as the clone
    empty = chapter_lead(pd.DataFrame(), gap.iloc[0:0], held.iloc[0:0])  # nothing to state but that
    assert numbers_in(empty) == [] and "per-server grid" in empty
    shown = gap_display(gap)
    assert list(shown.columns) == ["measure", "servers", "best learner", "best heuristic", "learner's improvement (%)"]
    assert shown.iloc[0]["best learner"] == "DRL+" and shown.iloc[0]["measure"] == "response time"
    wide = heldout_display(held)
    assert list(wide["method"]) == ["DRL", "DRL+", "ILETS"] and list(wide.columns) == ["method", "50 servers", "200 servers"]
    assert wide.set_index("method").loc["DRL+", "50 servers"] == "-0.02 [-0.15, +0.11]"
    assert heldout_display(held.iloc[0:0]).empty
