"""The shifted-worlds chapter's comparisons (:mod:`ilets.report.shifts`) on hand-made rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
from text_numbers import numbers_in

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


def test_the_sentence_gives_the_range_and_the_worst_world_and_says_what_did_not_run():
    rows, t = _table()
    text = R.shifts_sentence(t, rows)
    rel = t.set_index("shift").loc["rate-x2", "rel_pct"]
    assert text.startswith("Deployed frozen in 1") and numbers_in(text)[:2] == ["1", "4"]  # worlds, seeds each
    assert f"lies {rel:+.1f} % from the best heuristic's" in text and f"under rate ×2 ({rel:+.1f} % on average)" in text
    assert text.split("not yet run: ")[1].split(", so")[0].split(", ") == ["online without OAIL", "online with OAIL"]
    one = rows[rows["seed"] == 0]
    assert "one seed: no interval resolves" in R.shifts_sentence(R.frozen_table(one, measures=("mean_reward",),
                                                                                 reps=50), one)
    none = R.shifts_sentence(R.frozen_table(pd.DataFrame()), pd.DataFrame())
    assert none.startswith("No results") and "family `shifts` yet" in none
    mixed = rows[~((rows["shift"] == "rate-x2") & (rows["seed"] > 0))]
    said = R.shifts_sentence(R.frozen_table(mixed, measures=("mean_reward",), reps=50), mixed)
    assert "(1 to 4 seeds each)" in said and "one seed has no verdict" in said
    # what the declared family has not run is read from its record: frozen only, no expert shift
    declared = {"name": "shifts-worlds", "conditions": ["frozen"], "shifts": [{"factor": "none"}]}
    assert text.endswith("expert) have not run yet.") and "not yet run: online" in text
    quiet = R.shifts_sentence(t, rows, declared=declared, who="the flat ones")
    assert "not yet run" not in quiet and "expert-quality" not in quiet and "the flat ones' mean reward" in quiet


def test_the_display_has_a_row_per_world_and_a_column_per_learner():
    rows, t = _table()
    shown = R.display_table(t, "mean_reward")
    assert list(shown["shift"]) == ["unshifted", "rate ×2"] and "DRL+" in shown.columns
    r = t.set_index("shift").loc["rate-x2"]
    assert shown.set_index("shift").loc["rate ×2", "DRL+"] == f"{r['rel_pct']:+.1f} [{r['ci_low']:+.1f}, {r['ci_high']:+.1f}]"
    assert R.display_table(t, "avg_response_s").empty
    assert [R.shift_label(n) for n in ("bursts-none", "none-at-200")] == ["bursts none", "unshifted at 200"]
    assert R.shift_label("trained-at-50-run-at-200") == "trained-at-50-run-at-200".replace("-", " ")


def test_the_designs_sentence_sets_the_flat_learners_beside_the_per_server_ones():
    _, t = _table()
    flat = t.assign(learner="drl")
    both = pd.concat([flat.assign(rel_pct=flat["rel_pct"] * 100), t.assign(learner="drl+@per-server")])
    shifted = both[both["factor"] != "none"].set_index("learner")["rel_pct"]
    text = R.designs_sentence(both)
    # shifted worlds, then the gap of the authors' flat learners and of the per-server ones, in that order
    assert text.startswith("Over the 1 shifted worlds") and text.index("flat learners") < text.index("per-server learners")
    assert numbers_in(text) == ["1", f"{shifted['drl']:+,.1f}", f"{shifted['drl+@per-server']:+.1f}"]
    not_run = R.designs_sentence(t.iloc[0:0])
    assert not_run.startswith("The flat and per-server") and "have not run" in not_run


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
    median = t.loc["rate-x2", "rel_pct"]
    said = R.online_sentence(pd.DataFrame(), t.reset_index())
    # the median change, over how many shifted worlds, better in, worse in
    assert said.startswith("Adding online imitation (OAIL)") and "mean reward" in said
    assert numbers_in(said)[:4] == [f"{median:+.1f}", "1", "1", "0"]
    assert "DRL+" in " ".join(R.conditions_display(pd.DataFrame(), t.reset_index()).columns)
    assert "has not run yet" in R.online_sentence(R.continuing_table(rows), R.oail_table(rows))
    assert R.conditions_display(R.continuing_table(rows), R.oail_table(rows)).empty
    # the declared family's shifts without a verdict are named: no runs, or a shift its online learner skips
    family = {"online_learners": ["drl+"], "shifts": [{"name": "none"}, {"name": "rate-x2"}, {"name": "theta-0.5"},
                                                      {"name": "expert-greedy", "learners": ["drl"]}]}
    said = R.condition_clause(t.reset_index(), declared=family)
    assert said.endswith("of the family's shifts (theta-0.5)") and numbers_in(said.split("no verdict yet")[1]) == ["1", "0.5"]
    # a comparison on one seed is no verdict: it is not counted, and its shift is named with the others
    one = t.reset_index().iloc[[-1]].assign(shift="theta-0.5", factor="objective weight", seeds=1, rel_pct=50.0,
                                             verdict="unresolved")
    said = R.condition_clause(pd.concat([t.reset_index(), one], ignore_index=True), declared=family)
    assert "over 1 shifted worlds" in said and "+50" not in said and said.endswith("(theta-0.5)")
    shown = R.conditions_display(pd.DataFrame(), pd.concat([t.reset_index(), one], ignore_index=True))
    assert shown.set_index("shift").loc["theta 0.5", "with OAIL vs without (DRL+)"] == "+50.0 (one seed)"
    alone = R.condition_clause(pd.concat([t.reset_index()[lambda d: d["factor"] == "none"], one]))
    assert alone.startswith("is measured in 1 shifted") and "each on one seed" in alone and "not judged" in alone


def test_learning_on_is_set_against_the_frozen_policy_it_started_from():
    rows, _ = _table()
    frozen = rows[rows["kind"] == "learner"]
    online = frozen.assign(condition="online", mean_reward=frozen["mean_reward"] - 0.05)
    t = R.continuing_table(pd.concat([rows, online], ignore_index=True), measures=("mean_reward",), reps=300)
    assert list(t["shift"]) == ["none", "rate-x2"] and (t["rel_pct"] < 0).all() and set(t["verdict"]) == {"worse"}
    oail = t.assign(rel_pct=1.0, verdict="better")
    text = R.online_sentence(t, oail)
    median = t.set_index("shift").loc["rate-x2", "rel_pct"]
    # one sentence: learning on against frozen in full, then OAIL from "by" on; the unshifted world is left out
    assert text.startswith("Learning on as plain PPO") and text.count(". ") == 0 and text.endswith(".")
    assert text.index("the same policy frozen") < text.index("adding online imitation (OAIL)")
    # learning on: its median change, shifted worlds, better in, worse in; then OAIL's change, better in, worse in
    assert numbers_in(text) == [f"{median:+.1f}", "1", "0", "1", "+1.0", "1", "0"]
    assert R.condition_clause(R.continuing_table(rows)) == ""


def test_a_table_without_context_keeps_only_the_shift_and_the_learners():
    _, t = _table()
    assert list(R.display_table(t, "mean_reward", context=False).columns) == ["shift", "DRL+"]
    assert "what moved" in R.display_table(t, "mean_reward").columns
