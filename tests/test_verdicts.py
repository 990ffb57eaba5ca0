"""Tests of ilets.report.verdicts on synthetic metric and curve tables whose verdicts are known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from text_numbers import numbers_in

from ilets.config import HEURISTICS
from ilets.report import stats as S
from ilets.report import verdicts as V

REPS = 300
SCALES = (50, 100, 200)
BASE = {"avg_response_s": 2.0, "energy_kwh": 1.0, "success_rate": 0.7, "mean_reward": -0.4}
GOOD = {"avg_response_s": 0.7, "energy_kwh": 0.8, "success_rate": 1.12, "mean_reward": 0.8}  # ~20-30 % better


def metrics_table(factors: dict, n_seeds: int = 5, noise: float = 0.01, seed: int = 0) -> pd.DataFrame:
    """``factors[method]``: ``{metric: multiplier of BASE}`` (or ``{(metric, servers): ...}``);
    missing metrics are 1 (the DRL level). Multiplicative noise of ``noise`` per cell."""
    rng = np.random.default_rng(seed)
    rows = []
    for method, f in factors.items():
        for servers in SCALES:
            for s in range(n_seeds):
                row = {"method": method, "servers": servers, "seed": s}
                for col, base in BASE.items():
                    k = f.get((col, servers), f.get(col, 1.0))
                    row[col] = base * k * (1 + noise * rng.standard_normal())
                rows.append(row)
    return pd.DataFrame(rows)


def curve_cell(rewards, method, servers, seed, every=100) -> pd.DataFrame:
    r = np.asarray(rewards, float)
    d = np.full(len(r), every)
    return pd.DataFrame({"window": np.arange(len(r)), "reward": r, "response": -r, "success": 0.8 + 0 * r,
                         "decisions": d, "energy_kwh": 0.1 + 0 * r, "decision_end": np.cumsum(d),
                         "method": method, "servers": servers, "seed": seed, "cell": f"{method}-M{servers}-s{seed}"})


def curves_table(shapes: dict, n_seeds: int = 4, noise: float = 0.002, seed: int = 0) -> pd.DataFrame:
    """``shapes[method]``: the mean windowed reward (array); small noise per window and seed."""
    rng = np.random.default_rng(seed)
    cells = [curve_cell(np.asarray(r) + noise * rng.standard_normal(len(r)), m, s, k)
             for m, r in shapes.items() for s in SCALES for k in range(n_seeds)]
    return pd.concat(cells, ignore_index=True)


# --- component effects ---------------------------------------------------------------------

def test_component_effect_matches_hand_computation_both_directions():
    t = pd.DataFrame({"method": ["a"] * 2 + ["b"] * 2, "servers": 50, "seed": [0, 1, 0, 1],
                      "x": [8.0, 8.0, 10.0, 10.0]})
    lower = V.component_effects(t, "a", "b", "x", higher_is_better=False, reps=REPS)
    per = lower[lower["servers"] == 50].iloc[0]
    assert per["effect_pct"] == pytest.approx(20.0)  # (10 - 8) / 10
    assert per["mean_a"] == pytest.approx(8.0) and per["mean_b"] == pytest.approx(10.0)
    higher = V.component_effects(t, "a", "b", "x", higher_is_better=True, reps=REPS)
    assert higher.loc[higher["servers"] == 50, "effect_pct"].iloc[0] == pytest.approx(-20.0)
    assert set(lower["servers"].astype(str)) == {"50", "all"}


def test_component_effects_of_known_metric_agree_with_improvement_table():
    from ilets.report import stats as S

    m = metrics_table({"drl": {}, "drl+": GOOD})
    eff = V.component_effects(m, "drl+", "drl", "avg_response_s", False, reps=REPS, seed=3)
    imp = S.improvement_table(m, metrics_cols=("avg_response_s",), methods=["drl+"], reps=REPS, seed=3, paired=True)
    np.testing.assert_allclose(eff["effect_pct"], imp["improvement_pct"])
    np.testing.assert_allclose(eff["ci_low_pct"], imp["ci_low_pct"])
    unpaired = V.component_effects(m, "drl+", "drl", "avg_response_s", False, reps=REPS, seed=3, paired=False)
    imp = S.improvement_table(m, metrics_cols=("avg_response_s",), methods=["drl+"], reps=REPS, seed=3,
                              paired=False)
    np.testing.assert_allclose(unpaired["ci_high_pct"], imp["ci_high_pct"])


def test_component_effects_empty_when_method_missing():
    m = metrics_table({"drl": {}})
    assert V.component_effects(m, "drl+", "drl", "energy_kwh", False).empty


# --- the rule --------------------------------------------------------------------------------

def test_improvement_everywhere_is_reproduced_and_quotes_the_paper():
    m = metrics_table({"drl": {}, "drl+": GOOD})
    v = V.claim_improves(m, 1, "drl+", "drl", reps=REPS)
    assert v.verdict == V.REPRODUCED
    assert "paper +36.73 %" in v.evidence and "3/3 sizes" in v.evidence


def test_no_effect_is_not_reproduced_even_if_point_estimates_lean_the_right_way():
    m = metrics_table({"drl": {}, "ilets-": {c: 0.999 if c != "success_rate" else 1.001 for c in BASE}},
                      noise=0.05)
    v = V.claim_improves(m, 2, "ilets-", "drl", reps=REPS)
    assert v.verdict == V.NOT_REPRODUCED


def test_wrong_direction_is_not_reproduced():
    worse = {c: 1 / k for c, k in GOOD.items()}
    v = V.claim_improves(metrics_table({"drl": {}, "drl+": worse}), 1, "drl+", "drl", reps=REPS)
    assert v.verdict == V.NOT_REPRODUCED


def test_improvement_at_one_scale_only_is_partly():
    f = {("avg_response_s", 50): 0.5}  # 50 % better at 50 servers, equal elsewhere
    v = V.claim_improves(metrics_table({"drl": {}, "drl+": f}), 1, "drl+", "drl", reps=REPS)
    assert v.verdict == V.PARTLY


def test_one_metric_of_three_is_partly():
    v = V.claim_improves(metrics_table({"drl": {}, "drl+": {"energy_kwh": 0.8}}), 1, "drl+", "drl", reps=REPS)
    assert v.verdict == V.PARTLY


def test_single_seed_never_establishes_a_component():
    m = metrics_table({"drl": {}, "drl+": GOOD}, n_seeds=1)
    assert V.claim_improves(m, 1, "drl+", "drl", reps=REPS).verdict == V.NOT_REPRODUCED


def test_missing_method_is_not_testable():
    v = V.claim_improves(metrics_table({"drl": {}}), 3, "drl+", "ilets-", reps=REPS)
    assert v.verdict == V.NOT_TESTABLE and v.effects.empty


def test_judge_on_nothing_is_not_testable():
    assert V.judge(pd.DataFrame()) == V.NOT_TESTABLE


# --- claim 8: heuristics ------------------------------------------------------------------------

def test_ilets_better_than_every_heuristic_is_reproduced():
    m = metrics_table({"ilets": GOOD, **{h: {} for h in HEURISTICS}})
    assert V.claim_beats_heuristics(m, reps=REPS).verdict == V.REPRODUCED


def test_one_heuristic_better_than_ilets_on_everything_is_not_reproduced_and_named():
    better = {c: k * k for c, k in GOOD.items()}  # greedy-cost beats ILETS on everything
    m = metrics_table({"ilets": GOOD, **{h: {} for h in HEURISTICS if h != "greedy-cost"}, "greedy-cost": better})
    v = V.claim_beats_heuristics(m, reps=REPS)
    assert v.verdict == V.NOT_REPRODUCED
    assert "5/6 heuristics" in v.evidence and "greedy-cost beats ILETS" in v.evidence and "at every scale" in v.evidence


def test_one_heuristic_better_on_one_metric_reverses_the_claim():
    # min-energy beats ILETS on energy (a significant reversal of one metric of the claim), so the
    # two metrics ILETS wins cannot make it "partly"
    better = {"energy_kwh": GOOD["energy_kwh"] ** 2}
    m = metrics_table({"ilets": GOOD, **{h: {} for h in HEURISTICS if h != "min-energy"}, "min-energy": better})
    v = V.claim_beats_heuristics(m, reps=REPS)
    assert v.verdict == V.NOT_REPRODUCED
    assert "best heuristic (min-energy)" in v.evidence
    assert numbers_in(v.evidence.split("below 0 at ")[1])[:3] == ["50", "100", "200"]  # reversed at every size
    tied = {"energy_kwh": GOOD["energy_kwh"]}  # min-energy exactly ties ILETS on energy: partly
    m = metrics_table({"ilets": GOOD, **{h: {} for h in HEURISTICS if h != "min-energy"}, "min-energy": tied},
                      noise=0.0)
    assert V.claim_beats_heuristics(m, reps=REPS).verdict == V.PARTLY


def test_best_heuristic_is_chosen_per_scale():
    f = {("avg_response_s", 50): 0.5}
    m = metrics_table({"random": f, "greedy-cost": {"avg_response_s": 0.8}})
    rows, chosen = V.best_heuristic_rows(m, "avg_response_s")
    assert chosen == {50: "random", 100: "greedy-cost", 200: "greedy-cost"}
    assert set(rows["method"]) == {V.BEST_HEURISTIC} and len(rows) == 15


def test_heuristics_per_fleet_face_the_best_learner_at_each_size():
    # DRL+ is the best learner at 50 servers, ILETS at 100 and 200; greedy-cost beats DRL+ at 50
    m = metrics_table({"drl": {}, "drl+": {("avg_response_s", 50): 0.6}, "ilets": {"avg_response_s": 0.7},
                       "greedy-cost": {"avg_response_s": 0.5}, "random": {"avg_response_s": 1.5}})
    t = V.heuristics_per_fleet(m, columns=("avg_response_s",), reps=REPS)
    assert len(t) == 2 * len(SCALES) and set(t["seeds"]) == {5}
    g = t[t["heuristic"] == "greedy-cost"].set_index("servers")
    assert g["learner"].to_dict() == {50: "drl+", 100: "ilets", 200: "ilets"}
    assert g.loc[50, "effect_pct"] == pytest.approx(100 * (0.6 - 0.5) / 0.6, abs=2)
    assert (g["verdict"] == "better").all() and (g["ci_low_pct"] > 0).all()
    r = t[t["heuristic"] == "random"]
    assert (r["effect_pct"] < 0).all() and (r["verdict"] == "worse").all()
    assert V.heuristics_per_fleet(m[m["method"] != "greedy-cost"].iloc[0:0], reps=REPS).empty


def test_every_heuristic_better_than_ilets_is_not_reproduced():
    m = metrics_table({"ilets": {}, **{h: GOOD for h in HEURISTICS}})
    assert V.claim_beats_heuristics(m, reps=REPS).verdict == V.NOT_REPRODUCED


# --- curve claims -------------------------------------------------------------------------------

W = 20
RISING = -0.5 + 0.3 * (1 - np.exp(-np.arange(W) / 2.0))  # cold start at -0.5, settles near -0.2


def test_cold_start_claim():
    warm = np.full(W, -0.2)
    good = curves_table({"drl": RISING, "ilets-": RISING, "drl+": warm, "ilets": warm})
    assert V.claim_cold_start(good, reps=REPS).verdict == V.REPRODUCED
    same = curves_table({m: RISING for m in ("drl", "ilets-", "drl+", "ilets")})
    assert V.claim_cold_start(same, reps=REPS).verdict == V.NOT_REPRODUCED
    assert V.claim_cold_start(pd.DataFrame(), reps=REPS).verdict == V.NOT_TESTABLE


def test_cold_start_uses_the_first_tenth_of_the_pass():
    warm = np.full(W, -0.2)
    v = V.claim_cold_start(curves_table({"drl": RISING, "ilets-": RISING, "drl+": warm, "ilets": warm}), reps=REPS)
    assert "first 200 decisions" in v.evidence


FLAT = np.full(W, -0.2)  # a reference that settles from the first window


def test_convergence_claim():
    fast = -0.5 + 0.3 * (1 - np.exp(-np.arange(W) / 0.7))  # settles after ~3 windows
    slow = -0.5 + 0.3 * np.clip(np.arange(W) / 12.0, 0, 1)  # settles after ~11 windows
    ref = {"greedy-cost": FLAT}
    assert V.claim_convergence(curves_table({"drl": slow, "ilets-": fast, **ref}), reps=REPS).verdict == V.REPRODUCED
    assert V.claim_convergence(curves_table({"drl": fast, "ilets-": slow, **ref}), reps=REPS).verdict \
        == V.NOT_REPRODUCED
    assert V.claim_convergence(curves_table({"drl": slow, "ilets-": fast}), reps=REPS).verdict == V.NOT_TESTABLE


def test_convergence_is_measured_on_the_gap_to_the_reference():
    # the load drifts down until window 14, then holds: on the raw reward every policy, a fixed
    # rule included, "settles" when the load does; on the gap to the reference a policy that
    # tracks the load settles at once and a learner when it has learnt
    w = np.arange(W)
    load = -0.3 - 0.1 * np.minimum(w, 14) / 14
    learner = load - 0.2 * np.exp(-w / 2.0)
    t = curves_table({"greedy-cost": load, "earliest-finish": load + 0.05, "ilets-": load, "drl": learner},
                     noise=0.0)
    conv = V.convergence_cells(t).groupby("method")["convergence_decisions"].max()
    assert conv["greedy-cost"] == 0 and conv["earliest-finish"] == 0 and conv["ilets-"] == 0
    assert 0 < conv["drl"] < 1000
    raw = S.convergence_table(t, smooth=3).groupby("method")["convergence_decisions"].min()
    assert raw["earliest-finish"] > 1000 and raw["ilets-"] > 1000  # the load's shape, not learning
    assert V.claim_convergence(t, reps=REPS).verdict == V.REPRODUCED


def test_convergence_is_not_testable_where_the_reference_does_not_settle():
    zigzag = -0.3 + 0.1 * (-1.0) ** np.arange(W)  # never inside a 5 % band of its own level
    fast = -0.5 + 0.3 * (1 - np.exp(-np.arange(W) / 0.7))
    v = V.claim_convergence(curves_table({"drl": RISING, "ilets-": fast, "greedy-cost": zigzag}), reps=REPS,
                            smooth=1)
    assert v.verdict == V.NOT_TESTABLE and "greedy-cost itself never settles" in v.evidence


def test_never_settled_runs_are_censored_at_their_length():
    zigzag = -0.3 + 0.1 * (-1.0) ** np.arange(W)  # never inside a 10 % band
    conv = V.convergence_cells(curves_table({"drl": zigzag, "greedy-cost": FLAT}, n_seeds=1))
    drl = conv[conv["method"] == "drl"]
    assert (~drl["settled"]).all() and (drl["convergence_decisions"] == W * 100).all() and drl["testable"].all()


def test_cumulative_claim():
    shapes = {"drl": RISING, "ilets-": RISING + 0.01, "drl+": np.full(W, -0.25), "ilets": np.full(W, -0.2)}
    assert V.claim_cumulative(curves_table(shapes), reps=REPS).verdict == V.REPRODUCED
    shapes["drl+"] = np.full(W, -0.15)  # DRL+ ahead of ILETS: a reversal, so not even partly
    assert V.claim_cumulative(curves_table(shapes), reps=REPS).verdict == V.NOT_REPRODUCED
    shapes["drl+"] = np.full(W, -0.2)  # DRL+ exactly level with ILETS: ILETS still ahead of the other two
    assert V.claim_cumulative(curves_table(shapes, noise=0.0), reps=REPS).verdict == V.PARTLY


def test_cumulative_at_picks_the_window_at_the_fraction():
    at = V.cumulative_at(curves_table({"drl": np.full(W, -0.2)}, n_seeds=1, noise=0), 0.5)
    assert (at["decision_end"] == W * 100 // 2).all()
    np.testing.assert_allclose(at["cum_reward"], -0.2 * W * 100 / 2)


def test_oscillation_claim():
    t = np.arange(W)
    swing = np.where(t >= 10, -0.3 + 0.05 * (-1.0) ** t, -0.3)
    calm = np.where(t >= 10, -0.3 + 0.005 * (-1.0) ** t, -0.3)
    events = {"trend_change": (1000, W * 100)}
    good = curves_table({"drl": swing, "drl+": swing, "ilets-": swing, "ilets": calm, "greedy-cost": FLAT})
    assert V.claim_oscillation(good, events, reps=REPS).verdict == V.REPRODUCED
    bad = curves_table({"drl": calm, "drl+": calm, "ilets-": calm, "ilets": swing, "greedy-cost": FLAT})
    assert V.claim_oscillation(bad, events, reps=REPS).verdict == V.NOT_REPRODUCED
    assert V.claim_oscillation(good, None, reps=REPS).verdict == V.NOT_TESTABLE
    no_ref = good[good["method"] != "greedy-cost"]
    assert V.claim_oscillation(no_ref, events, reps=REPS).verdict == V.NOT_TESTABLE


def test_oscillation_is_the_gap_to_the_reference_so_the_load_does_not_count():
    # every policy swings with the load after the trend change; ILETS swings with it exactly
    # (a heuristic-like zero gap), the others add their own swing: ILETS oscillates least
    t = np.arange(W)
    load = np.where(t >= 10, -0.3 + 0.05 * (-1.0) ** t, -0.3)
    own = np.where(t >= 10, 0.02 * (-1.0) ** (t // 2), 0.0)
    events = {"trend_change": (1000, W * 100)}
    c = curves_table({"drl": load + own, "drl+": load + own, "ilets-": load + own, "ilets": load - 0.01,
                      "greedy-cost": load})
    assert V.claim_oscillation(c, events, reps=REPS).verdict == V.REPRODUCED


def test_trend_change_ranges_from_a_profile():
    profile = {"run": {"workload": {"scale": 0.002}}}
    ranges = V.trend_change_ranges(profile)
    d, d_end = ranges(1)["trend_change"]
    from ilets.config import WorkloadConfig
    from ilets.workloads.workload import synthetic_workload

    w = synthetic_workload(WorkloadConfig(scale=0.002), 1)
    assert 0 < d < d_end <= len(w.online)
    assert w.online.arrival[d] >= w.events["trend_change"] > w.online.arrival[d - 1]
    later = [t for t in w.events.values() if t > w.events["trend_change"]]  # the next burst is not included
    assert all(w.online.arrival[d_end - 1] < t for t in later)


def test_trend_change_ranges_read_the_recorded_events(tmp_path, monkeypatch):
    import json

    import ilets.workloads.workload as W
    from ilets.config import WorkloadConfig
    from ilets.report import events as E
    from ilets.study.grid import EVENTS_FILE, workload_key

    def refuse(*args, **kw):
        raise AssertionError("a workload was rebuilt")

    E._rebuilt.cache_clear()
    monkeypatch.setattr(W, "load_workload", refuse)
    cfg = WorkloadConfig(scale=0.002)
    record = {"workload": {}, "seeds": {"3": {"events": {"burst_0": 1.0, "trend_change": 4.5},
                                              "ranges": {"burst_0": [10, 20], "trend_change": [300, 340]}}}}
    (tmp_path / EVENTS_FILE).write_text(json.dumps({workload_key(cfg): record}))
    ranges = V.trend_change_ranges({"run": {"workload": {"scale": 0.002}}}, tmp_path)
    assert ranges(3) == {"trend_change": (300, 340)}
    # a recorded workload without a trend change (e.g. a trace window): claim 7 is not testable
    record["seeds"]["3"] = {"events": {}, "ranges": {}}
    (tmp_path / EVENTS_FILE).write_text(json.dumps({workload_key(cfg): record}))
    assert V.trend_change_ranges({"run": {"workload": {"scale": 0.002}}}, tmp_path) is None
    E._rebuilt.cache_clear()


def test_all_verdicts_and_table():
    m = metrics_table({"drl": {}, "drl+": GOOD, "ilets-": {}, "ilets": GOOD, **{h: {} for h in HEURISTICS}})
    c = curves_table({"drl": RISING, "ilets-": RISING, "drl+": np.full(W, -0.2), "ilets": np.full(W, -0.2)})
    vs = V.all_verdicts(m, c, profile=None, reps=REPS, family="per-server")
    table = V.verdict_table(vs)
    assert set(table["family"]) == {"per-server"} and set(V.FAMILY_LABELS) >= set(table["family"])
    assert list(table["claim"]) == list(V.CLAIMS) and set(table["verdict"]) <= set(V.VERDICTS)
    got = dict(zip(table["claim"], table["verdict"]))
    assert got[1] == V.REPRODUCED and got[2] == V.NOT_REPRODUCED and got[3] == V.REPRODUCED
    assert got[4] == V.REPRODUCED and got[7] == V.NOT_TESTABLE and got[8] == V.REPRODUCED


def test_a_variant_is_judged_against_the_main_cells_it_replaces():
    main = metrics_table({"drl": {}, "drl+": {"avg_response_s": 1.3, "energy_kwh": 1.2, "success_rate": 0.9},
                          "ilets": {}})                                                # DRL+ worse than DRL
    var = metrics_table({"drl+": GOOD}, seed=1)
    var = var[var["servers"] == 50]                                                   # one fleet size
    # DRL kept from the main grid (the variant changes only what DRL+ reads): claim 1 flips
    vv = V.variant_verdicts(main, None, var, None, kept=["drl"], reps=REPS)
    assert vv[["claim", "main", "variant"]].values.tolist() == [[1, V.NOT_REPRODUCED, V.REPRODUCED]]
    assert "response" in vv["evidence"].iloc[0]
    # without DRL nothing the variant ran can be compared; ILETS alone (kept) is no test of it
    assert V.variant_verdicts(main, None, var, None, reps=REPS).empty
    assert V.variant_verdicts(main, None, var, None, kept=["ilets"], reps=REPS).empty
    assert V.variant_verdicts(main, None, var.iloc[0:0], None, kept=["drl"], reps=REPS).empty


def test_a_claim_is_judged_whole_never_on_the_comparisons_a_partial_grid_holds():
    # a partial grid: DRL and DRL+ only (the per-server grid's first stage)
    warm = np.full(W, -0.2)
    c = curves_table({"drl": RISING, "drl+": warm, "ilets-": RISING, "ilets": warm})
    part = c[c["method"].isin(["drl", "drl+"])]
    assert V.claim_cold_start(part, reps=REPS).verdict == V.REPRODUCED  # one of four comparisons
    v = V.all_verdicts(None, part, reps=REPS, claims=[4])[0]
    assert (v.verdict, v.components, v.measured) == (V.NOT_TESTABLE, 4, 1)
    assert v.evidence.startswith("3 of its 4 comparisons") and "it would be reproduced" in v.evidence
    assert V.all_verdicts(None, part, reps=REPS, claims=[4], partial=True)[0].verdict == V.REPRODUCED
    whole = V.all_verdicts(None, c, reps=REPS, claims=[4])[0]
    assert (whole.verdict, whole.components, whole.measured) == (V.REPRODUCED, 4, 4)
    # nothing measured: the claim's own reason, not the count
    m = metrics_table({"drl": {}, "drl+": GOOD})
    v2 = V.all_verdicts(m, None, reps=REPS, claims=[2])[0]
    assert v2.verdict == V.NOT_TESTABLE and v2.evidence.startswith("the methods it compares")
    assert v2.evidence.endswith("not in the results")


def test_all_verdicts_can_judge_a_few_claims():
    m = metrics_table({"drl": {}, "drl+": GOOD})
    assert [v.claim for v in V.all_verdicts(m, None, reps=REPS, claims=[3, 1])] == [3, 1]


# --- the rule: reversals, pooling, the paper's figure ------------------------------------------

def test_partly_never_rests_on_a_component_whose_sibling_reverses():
    # energy holds at every fleet size; response time is resolved the other way at 200 servers
    reversed_response = {"energy_kwh": 0.8, ("avg_response_s", 200): 1.5}
    v = V.claim_improves(metrics_table({"drl": {}, "drl+": reversed_response}), 1, "drl+", "drl", reps=REPS)
    statuses = dict(zip(V.component_table(v.effects)["measure"], V.component_table(v.effects)["status"]))
    assert statuses["energy_kwh"] == V.HOLDS and statuses["avg_response_s"] == V.REVERSES
    assert v.verdict == V.NOT_REPRODUCED
    assert "below 0 at 200 servers" in v.evidence
    # the same energy effect with no reversal beside it is partly
    v = V.claim_improves(metrics_table({"drl": {}, "drl+": {"energy_kwh": 0.8}}), 1, "drl+", "drl", reps=REPS)
    assert v.verdict == V.PARTLY


def test_a_reversal_at_one_size_outweighs_holding_pooled():
    # +40 % at 50 and 100 servers, -10 % at 200: positive pooled, but reverses
    f = {("avg_response_s", 50): 0.6, ("avg_response_s", 100): 0.6, ("avg_response_s", 200): 1.1}
    e = V.component_effects(metrics_table({"drl": {}, "drl+": f}), "drl+", "drl", "avg_response_s", False,
                            reps=REPS)
    st = V.component_status(e)
    assert st["pooled_low"] > 0 and st["status"] == V.REVERSES and st["worse_at"] == [200]
    assert V.judge(e) == V.NOT_REPRODUCED


def test_effects_of_opposite_sign_are_reported_per_size_never_pooled():
    f = {("avg_response_s", 50): 0.6, ("avg_response_s", 100): 0.6, ("avg_response_s", 200): 1.1}
    v = V.claim_improves(metrics_table({"drl": {}, "drl+": f}), 1, "drl+", "drl", columns=("avg_response_s",),
                         reps=REPS)
    assert "not pooled" in v.evidence and " at 50; " in v.evidence and "at 200 servers" in v.evidence
    assert "pooled," not in v.evidence  # no pooled number for it
    assert "(paper +36.73 %, inside" in v.evidence and "at 0/3 sizes)" in v.evidence
    comp = V.component_table(v.effects)
    assert not comp["same_sign"].iloc[0] and comp["paper_pct"].iloc[0] == pytest.approx(36.73)
    same = V.claim_improves(metrics_table({"drl": {}, "drl+": {"avg_response_s": 0.7}}), 1, "drl+", "drl",
                            columns=("avg_response_s",), reps=REPS)
    assert "pooled, CI above 0" in same.evidence and "3/3 sizes (paper +36.73 %, outside" in same.evidence


def test_holds_pooled_needs_the_same_sign_at_every_size():
    e = pd.DataFrame({"component": "c", "a": "drl+", "b": "drl", "measure": "energy_kwh",
                      "servers": [50, 100, 200, "all"], "effect_pct": [1.0, 1.5, 0.5, 1.0],
                      "ci_low_pct": [-0.5, -0.2, -1.0, 0.2], "ci_high_pct": [2.0, 3.0, 2.0, 1.8],
                      "n_a": 5, "n_b": 5})
    assert V.component_status(e)["status"] == V.HOLDS_POOLED and V.judge(e) == V.PARTLY
    e.loc[2, "effect_pct"] = -0.5  # one size points the other way (unresolved): no pooled holding
    assert V.component_status(e)["status"] == V.FAILS and V.judge(e) == V.NOT_REPRODUCED
    e.loc[0, ["ci_low_pct", "effect_pct"]] = [0.3, 1.0]  # resolved at 50 only: not enough for partly
    assert V.component_status(e)["status"] == V.HOLDS_SOME and V.judge(e) == V.NOT_REPRODUCED
    assert V.paper_figure("drl+", "drl", "energy_kwh") == pytest.approx(20.92)
    assert V.paper_figure("drl+", "ilets-", "energy_kwh") is None


def test_cold_start_is_judged_over_each_window():
    # DRL+ and ILETS start warm, but DRL overtakes them after 300 decisions
    warm = np.full(W, -0.2)
    late = np.where(np.arange(W) < 3, -0.5, -0.1)
    c = curves_table({"drl": late, "ilets-": np.full(W, -0.5), "drl+": warm, "ilets": warm})
    t = V.cold_start_windows(c, windows=(300, 2000), reps=REPS)
    assert list(t["decisions"]) == [300, 2000] and list(t["components"]) == [4, 4]
    assert t["verdict"].tolist() == [V.REPRODUCED, V.NOT_REPRODUCED]
    assert t["reverses"].tolist() == [0, 2] and "first 2,000 decisions" in t["evidence"].iloc[1]
