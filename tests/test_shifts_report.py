"""The shifted-worlds chapter's comparisons (:mod:`ilets.report.shifts`) on hand-made rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ilets.report import shifts as R


def _rows(shift, factor, learner_reward, heuristics, seeds=4, servers=50, noise=0.001):
    rng = np.random.default_rng(len(shift))
    out = []
    for seed in range(seeds):
        for actor, kind, reward in ([("drl+", "learner", learner_reward)]
                                    + [(h, "heuristic", r) for h, r in heuristics.items()]):
            out.append({"shift": shift, "factor": factor, "actor": actor, "kind": kind,
                        "condition": "frozen" if kind == "learner" else "heuristic", "servers": servers,
                        "train_servers": servers if kind == "learner" else None, "seed": seed,
                        "mean_reward": reward + noise * rng.standard_normal(), "avg_response_s": 1.0 - reward})
    return out


def _table(reps=300):
    rows = pd.DataFrame(_rows("none", "none", -0.50, {"earliest-finish": -0.55, "greedy-cost": -0.52})
                        + _rows("rate-x2", "arrival rate", -0.90, {"earliest-finish": -0.80, "greedy-cost": -0.85}))
    return rows, R.frozen_table(rows, measures=("mean_reward",), reps=reps)


def test_the_frozen_policy_is_judged_against_the_best_heuristic_of_each_world():
    rows, t = _table()
    by = t.set_index("shift")
    # unshifted: greedy-cost is the better heuristic and the learner beats it by 0.02/0.52
    assert by.loc["none", "heuristic"] == "greedy-cost" and by.loc["none", "verdict"] == "better"
    assert by.loc["none", "rel_pct"] > 0
    # doubled rate: earliest-finish is best now, and the frozen policy falls behind it
    assert by.loc["rate-x2", "heuristic"] == "earliest-finish" and by.loc["rate-x2", "verdict"] == "worse"
    assert by.loc["rate-x2", "unshifted_rel_pct"] == by.loc["none", "rel_pct"]


def test_the_sentence_counts_verdicts_and_says_what_did_not_run():
    rows, t = _table()
    text = R.shifts_sentence(t, rows)
    assert "over 1 shifted worlds and 4 seeds each" in text and "worse in 1" in text and "rate-x2" in text
    assert "not yet run: online without OAIL, online with OAIL" in text
    one = rows[rows["seed"] == 0]
    assert "one seed: no interval resolves" in R.shifts_sentence(R.frozen_table(one, measures=("mean_reward",),
                                                                                 reps=50), one)
    assert "No results of the shift family `shifts` yet" in R.shifts_sentence(R.frozen_table(pd.DataFrame()),
                                                                                pd.DataFrame())
    mixed = rows[~((rows["shift"] == "rate-x2") & (rows["seed"] > 0))]
    said = R.shifts_sentence(R.frozen_table(mixed, measures=("mean_reward",), reps=50), mixed)
    assert "1 to 4 seeds each" in said and "a world with one seed has no verdict" in said
    # what the declared family has not run is read from its record: frozen only, no expert shift
    declared = {"name": "shifts-worlds", "conditions": ["frozen"], "shifts": [{"factor": "none"}]}
    assert text.endswith("expert) have not run yet.") and "not yet run: online" in text
    quiet = R.shifts_sentence(t, rows, declared=declared)
    assert "not yet run" not in quiet and "expert-quality" not in quiet


def test_the_display_has_a_row_per_world_and_a_column_per_learner():
    rows, t = _table()
    shown = R.display_table(t, "mean_reward")
    assert list(shown["shift"]) == ["none", "rate-x2"] and "DRL+" in shown.columns
    assert "(unshifted" in shown.set_index("shift").loc["rate-x2", "DRL+"]
    assert R.display_table(t, "avg_response_s").empty


def test_oail_is_judged_against_the_same_learner_continuing_without_it():
    rows, _ = _table()
    assert R.oail_table(rows).empty  # only frozen policies ran
    online = rows[rows["kind"] == "learner"].assign(condition="online")
    with_oail = online.assign(condition="online-oail", mean_reward=online["mean_reward"] + 0.05)
    every = pd.concat([rows, online, with_oail], ignore_index=True)
    t = R.oail_table(every, measures=("mean_reward",), reps=300).set_index("shift")
    assert set(t["verdict"]) == {"better"} and (t["rel_pct"] > 0).all()
    # the frozen table still reads the frozen rows only
    assert R.frozen_table(every, measures=("mean_reward",), reps=300).equals(_table()[1])
    assert "not yet run" not in R.shifts_sentence(_table()[1], every)
    said = R.oail_sentence(t.reset_index())
    assert "improves the mean reward in 1 of 1 (shifted world, learner)" in said
    assert "; in the unshifted world: +" in said and said.rstrip(".").endswith("better")
    assert "DRL+" in R.condition_display(t.reset_index()).columns
    assert "not measured yet" in R.oail_sentence(R.oail_table(rows)) and R.condition_display(R.oail_table(rows)).empty
    # the declared family's shifts without a verdict are named: no runs, or a shift its online learner skips
    family = {"online_learners": ["drl+"], "shifts": [{"name": "none"}, {"name": "rate-x2"}, {"name": "theta-0.5"},
                                                      {"name": "expert-greedy", "learners": ["drl"]}]}
    said = R.oail_sentence(t.reset_index(), declared=family)
    assert said.endswith("No verdict yet (no runs, or one seed) in 1 of the family's shifts: theta-0.5.")
    # a comparison on one seed is no verdict: it is not counted, and its shift is named with the others
    one = t.reset_index().iloc[[-1]].assign(shift="theta-0.5", factor="objective weight", seeds=1, rel_pct=50.0,
                                             verdict="unresolved")
    said = R.oail_sentence(pd.concat([t.reset_index(), one], ignore_index=True), declared=family)
    assert "in 1 of 1 (shifted world, learner)" in said and "+50" not in said and said.endswith(": theta-0.5.")
    shown = R.condition_display(pd.concat([t.reset_index(), one], ignore_index=True)).set_index("shift")
    assert shown.loc["theta-0.5", "DRL+"] == "+50.0 (one seed, no verdict)"
    alone = R.oail_sentence(pd.concat([t.reset_index()[lambda d: d["factor"] == "none"], one]))
    assert "has run in 1 (shifted world, learner) comparisons, each on one seed" in alone


def test_learning_on_is_set_against_the_frozen_policy_it_started_from():
    rows, _ = _table()
    frozen = rows[rows["kind"] == "learner"]
    online = frozen.assign(condition="online", mean_reward=frozen["mean_reward"] - 0.05)
    t = R.continuing_table(pd.concat([rows, online], ignore_index=True), measures=("mean_reward",), reps=300)
    assert list(t["shift"]) == ["none", "rate-x2"] and (t["rel_pct"] < 0).all() and set(t["verdict"]) == {"worse"}
    text = R.continuing_sentence(t)
    assert text.startswith("Learning on online as plain PPO (DRL+)") and "worsens it in 2 of 2" not in text
    assert "in 0 of 1 (shifted world, learner) comparisons, worsens it in 1" in text
    assert "in the unshifted world: -10.0 % [-10.0, -10.0] worse" in text
    assert "not measured yet" in R.continuing_sentence(R.continuing_table(rows))


def test_two_unshifted_worlds_are_named_by_their_fleet_size():
    rows, _ = _table()
    frozen = rows[rows["kind"] == "learner"]
    online = frozen.assign(condition="online", mean_reward=frozen["mean_reward"] - 0.05)
    t = R.continuing_table(pd.concat([rows, online], ignore_index=True), measures=("mean_reward",), reps=300)
    at200 = t[t["factor"] == "none"].assign(servers=200, shift="none-at-200")
    text = R.continuing_sentence(pd.concat([t, at200], ignore_index=True))
    assert "worse at 50 servers, -10.0 % [-10.0, -10.0] worse at 200 servers" in text
