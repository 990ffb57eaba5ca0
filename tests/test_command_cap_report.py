"""The chapter's numbers on the admission cap: the power-cap rung beside rungs that never set
the cap, seed means on the cap rung's seeds, the bar counted, and the runs where it never bound."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ilets.report import command_cap as K
from ilets.report import grid_command as R


def rows() -> pd.DataFrame:
    out = []
    for servers in (50, 200):
        for role, regime in (("train", "shallow-long"), ("eval", "deep-short")):
            for seed in (0, 1, 2):
                cap_defers = 0 if servers == 200 else 10 * (seed + 1)
                for method, band, err, defers in (("cap", 0.9 if servers == 50 and role == "train" else 0.4, 0.7,
                                                   cap_defers),
                                                  ("thermostat", 1.0, 0.2, 100), ("bc", 1.0, 0.1, 5)):
                    if method == "thermostat" and seed == 2:
                        continue  # a seed the cap ran on and the thermostat did not
                    out.append({"method": method, "servers": servers, "seed": seed, "role": role, "regime": regime,
                                "band_reached_share": band, "tracking_mae_rel": err + seed / 100,
                                "misses_caused": 10.0 * seed, "deferrals": defers})
    # a seed the cap rung did not run on stays out of every mean
    out.append({"method": "thermostat", "servers": 50, "seed": 7, "role": "train", "regime": "shallow-long",
                "band_reached_share": 0.0, "tracking_mae_rel": 9.0, "misses_caused": 1e6, "deferrals": 0})
    return pd.DataFrame(out)


def test_the_table_sets_the_cap_beside_the_experts_on_its_seeds():
    t = K.cap_table(rows())
    assert set(t["method"]) == {"cap", "thermostat"}  # experts only
    th = t[(t["method"] == "thermostat") & (t["servers"] == 50) & (t["role"] == "train")].iloc[0]
    assert th["seeds"] == 2 and th["tracking_mae_rel"] == pytest.approx(0.205) and th["misses_caused"] == 5.0
    never = t[t["method"] == "cap"].set_index(["servers", "role"])["never_deferred"]
    assert never[(200, "train")] and never[(200, "eval")] and not never[(50, "train")]
    assert list(t["servers"]) == sorted(t["servers"])  # 50 servers first


def test_the_sentence_counts_the_bar_and_names_where_the_cap_never_bound():
    said = K.cap_sentence(K.cap_table(rows()))
    assert "90% under shallow-long at 50 servers" in said and "seed means over 3 seeds" in said
    assert "the thermostat (slot feedback): 100%, 0.21, +5" in said
    assert "in 1 of 4 (regime, fleet size) pairs" in said
    assert "Under shallow-long at 200 servers and deep-short at 200 servers it deferred no task" in said
    assert K.cap_sentence(K.cap_table(rows().query("method != 'cap'"))) == "The power-cap grid has not run."


def test_the_shipped_grid_reads():
    root = Path(__file__).resolve().parents[1]
    res = R.load_results(root / K.SHIPPED)
    assert res is not None and res.profile.get("name") == K.PROFILE
    t = K.cap_table(R.results_table(res))
    assert set(t["method"]) >= {"cap", "thermostat"} and len(K.cap_display(t)) == len(t)


def test_the_shipped_rungs_that_never_set_the_cap_equal_the_main_grids_runs():
    """What the chapter says of the cap grid: its rule, Lyapunov and thermostat runs are the
    main quick grid's, so the power-cap rung is set beside the very runs of that grid."""
    root = Path(__file__).resolve().parents[1]
    cap, main = (R.results_table(R.load_results(root / p)) for p in (K.SHIPPED, R.SHIPPED))
    keys = ["method", "servers", "seed", "role"]
    both = cap[cap["method"] != "cap"].merge(main, on=keys, suffixes=("", "_main"))
    assert len(both) == (cap["method"] != "cap").sum() > 0
    for col in ("episode_reward", "tracking_mae_rel", "misses_caused", "energy_kwh"):
        assert (both[col] == both[f"{col}_main"]).all(), col
