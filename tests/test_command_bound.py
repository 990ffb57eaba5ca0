"""ilets.gridcommand.report.bound on hand-built tables and cell records: the bound's check counts
what it must, and the sentences say what the numbers say."""

from __future__ import annotations

import json

import pandas as pd
from text_numbers import numbers_in

from ilets.gridcommand.report import bound as B
from ilets.gridcommand.report.results import method_label

#: total reward per rung (higher is better), tracking error (lower is better)
RUNGS = {"hindsight": (-100.0, 0.20), "oracle": (-110.0, 0.15), "mpc-perfect": (-105.0, 0.30),
         "lyapunov": (-120.0, 0.40), "rule": (-150.0, 0.60)}


def table(beaten_on: int | None = None) -> pd.DataFrame:
    rows = []
    for role, regime in (("train", "shallow-long"), ("eval", "deep-short")):
        for servers in (50, 200):
            for seed in range(3):
                for m, (reward, err) in RUNGS.items():
                    if m == "hindsight" and beaten_on == seed and role == "train" and servers == 50:
                        reward = -106.0  # mpc-perfect (-105) above it on this one episode
                    rows.append({"method": m, "servers": servers, "seed": seed, "role": role, "regime": regime,
                                 "episode_reward": reward + seed, "tracking_mae_rel": err, "misses_caused": 1.0})
    rows.append({"method": "bc", "servers": 50, "seed": 0, "role": "train", "regime": "shallow-long",
                 "episode_reward": 0.0, "tracking_mae_rel": 0.1, "misses_caused": 0.0})  # not a rung
    return pd.DataFrame(rows)


def test_the_bound_holds_and_is_the_top_rung():
    b = B.bound_table(table())
    assert set(b["method"]) == set(RUNGS) and (b["seeds"] == 3).all()
    assert (b.loc[b["method"] == "hindsight", "violations"] == 0).all()
    said = B.bound_sentence(b)
    bound, below, tracking = said.split(". ")
    # episodes with a rung above the bound (of all), pairs where the bound is the top rung (of all)
    assert "above the hindsight rung" in bound and "top of the ladder" in bound
    assert numbers_in(bound) == ["0", "12", "4", "4"]
    # the oracle is below MPC perfect on the reward everywhere; it tracks best everywhere
    assert "oracle is not the best" in below and below.count(f"({method_label('mpc-perfect')})") == 4
    assert below.startswith("Below it") and numbers_in(below) == ["50", "200", "50", "200"]
    assert f"{method_label('oracle')} in 4 of the 4" in tracking and tracking.startswith("On tracking error")
    shown = B.bound_display(b)
    assert list(shown.columns) == ["regime", "servers", "rung", "total reward", "tracking error", "misses caused",
                                   "seeds"]


def test_a_rung_above_the_bound_is_counted_not_hidden():
    b = B.bound_table(table(beaten_on=1))
    row = b[(b["method"] == "hindsight") & (b["role"] == "train") & (b["servers"] == 50)]
    assert int(row["violations"].iloc[0]) == 1
    assert numbers_in(B.bound_sentence(b).split(". ")[0])[:2] == ["1", "12"]  # episodes above the bound, of all


def test_without_the_bound_there_is_nothing_to_say():
    t = table()
    assert len(B.bound_table(t[t["method"] != "hindsight"])) == 0
    none = B.bound_sentence(B.bound_table(t.iloc[0:0]))
    assert none.startswith("The hindsight rung's grid") and "not in these results" in none


def test_members_are_read_from_the_cells_records(tmp_path):
    (tmp_path / "cells").mkdir()
    rec = {"method": "hindsight", "servers": 50, "seed": 0, "status": "done",
           "regimes": {"train": "shallow-long", "eval": "deep-short"},
           "train": {"members[shallow-long]": ["oracle", "lyapunov", "oracle", "reference"],
                     "simulations[shallow-long]": 12, "members[deep-short]": ["rule"],
                     "simulations[deep-short]": 5}}
    (tmp_path / "cells" / "hindsight-M50-s0.json").write_text(json.dumps(rec))
    m = B.member_table(tmp_path)
    share = m[m["role"] == "train"].set_index("member")["share"]
    assert share["oracle"] == 0.5 and share["reference"] == 0.25
    assert m.loc[m["role"] == "train", "simulations_per_switch"].iloc[0] == 3.0
    said = B.member_sentence(m, {"train": "shallow-long", "eval": "deep-short"})
    assert f"shallow-long at 50 servers: {method_label('oracle')} 50%" in said and "doing nothing 25%" in said
    assert B.member_sentence(B.member_table(None), {}) == ""
    assert B.members_said(tmp_path / "nothing") == ""
