"""Tests of ilets.report.stats on small synthetic tables with known answers (fast, no simulation)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ilets.report import stats as S

REPS = 400  # enough for the properties tested, keeps the file fast
POI_REPS = 150  # rliable's probability of improvement runs a Mann-Whitney test per resample


# --- synthetic inputs --------------------------------------------------------------------

def metrics_table(spec: dict) -> pd.DataFrame:
    """``spec[(method, servers)] = {column: [one value per seed]}`` -> a metrics table."""
    rows = []
    for (method, servers), cols in spec.items():
        n = len(next(iter(cols.values())))
        for i in range(n):
            rows.append({"method": method, "servers": servers, "seed": i, **{c: v[i] for c, v in cols.items()}})
    return pd.DataFrame(rows)


def random_metrics(rng: np.random.Generator, n_seeds: dict | int = 5) -> pd.DataFrame:
    rows = []
    for method in ("drl", "drl+", "ilets-", "ilets", "least-loaded"):
        for servers in (50, 100, 200):
            n = n_seeds if isinstance(n_seeds, int) else n_seeds.get((method, servers), 5)
            for seed in range(n):
                rows.append({"method": method, "servers": servers, "seed": seed,
                             "avg_response_s": rng.lognormal(np.log(servers / 10), 0.3),
                             "energy_kwh": rng.uniform(1, 3) * servers,
                             "success_rate": rng.uniform(0.5, 0.99),
                             "mean_reward": -rng.uniform(1, 5)})
    return pd.DataFrame(rows)


def curve(rewards, every: int = 100, method="drl", servers=50, seed=0, last: int | None = None) -> pd.DataFrame:
    """A curves-table cell: window ``w`` holds ``every`` decisions (the last ``last``)."""
    r = np.asarray(rewards, float)
    d = np.full(len(r), every)
    if last is not None:
        d[-1] = last
    return pd.DataFrame({"window": np.arange(len(r)), "reward": r, "response": -r, "success": 0.5 + 0 * r,
                         "decisions": d, "energy_kwh": 0.1 + 0 * r, "decision_end": np.cumsum(d),
                         "method": method, "servers": servers, "seed": seed,
                         "cell": f"{method}-M{servers}-s{seed}"})


def brackets(low, point, high) -> np.ndarray:
    low, point, high = (np.asarray(v, float) for v in (low, point, high))
    return (low <= point + 1e-12) & (point <= high + 1e-12)


# --- the stack -----------------------------------------------------------------------------

def test_rliable_imports_and_works_under_pinned_pandas():
    import arch
    from rliable import library as rly
    from rliable import metrics as rm

    # the pins of pyproject.toml; chapter 10 (notebooks/10_reproduce.py) lists the versions in use
    assert int(pd.__version__.split(".")[0]) < 3, "rliable 1.2 with arch 7 needs pandas<3 (pyproject.toml)"
    assert int(arch.__version__.split(".")[0]) < 8
    with S.numpy_global_seed(0):
        point, ci = rly.get_interval_estimates({"a": np.arange(12.0).reshape(4, 3)},
                                               lambda x: np.array([rm.aggregate_iqm(x)]), reps=50)
    assert point["a"].shape == (1,) and ci["a"].shape == (2, 1)


# --- bootstrap_ci and summary_table --------------------------------------------------------

@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0], [5.0, 5.0, 5.0], [7.0], [0.0, 0.0, 100.0], [1.0, 9.0],
                                    list(np.random.default_rng(3).lognormal(size=9)), [np.nan, 2.0, 4.0]])
def test_bootstrap_ci_brackets_point(values):
    ci = S.bootstrap_ci(values, reps=REPS)
    assert brackets(ci.low, ci.point, ci.high)
    assert ci.point == pytest.approx(np.nanmean(values))


def test_bootstrap_ci_degenerate_cases():
    assert S.bootstrap_ci([3.0]) == S.CI(3.0, 3.0, 3.0, 1, "n=1")
    assert S.bootstrap_ci([2.0, 2.0, 2.0]) == S.CI(2.0, 2.0, 2.0, 3, "zero variance")
    e = S.bootstrap_ci([np.nan])
    assert e.n == 0 and e.note == "empty" and np.isnan(e.point)
    # a statistic without axis= (non-vectorised path) and the median
    ci = S.bootstrap_ci([1.0, 2.0, 3.0, 10.0], stat=lambda x: float(np.median(x)), reps=200)
    assert ci.point == 2.5 and brackets(ci.low, ci.point, ci.high)


def test_bootstrap_ci_deterministic_and_seed_dependent():
    x = np.random.default_rng(1).normal(size=7)
    assert S.bootstrap_ci(x, seed=4, reps=REPS) == S.bootstrap_ci(x, seed=4, reps=REPS)
    assert S.bootstrap_ci(x, seed=4, reps=REPS) != S.bootstrap_ci(x, seed=5, reps=REPS)


@pytest.mark.parametrize("n_seeds", [5, 1, 2, {("drl", 50): 1, ("ilets", 200): 2}])
def test_summary_table_brackets(n_seeds):
    m = random_metrics(np.random.default_rng(0), n_seeds)
    # a zero-variance group
    m.loc[(m["method"] == "drl+") & (m["servers"] == 100), "success_rate"] = 0.9
    t = S.summary_table(m, reps=REPS)
    assert len(t) == 5 * 3 * 4
    assert brackets(t["ci_low"], t["mean"], t["ci_high"]).all()
    assert (t.loc[t["n"] == 1, "ci_note"] == "n=1").all()
    assert t.loc[t["n"] == 1, "std"].isna().all()
    zv = t[(t["method"] == "drl+") & (t["servers"] == 100) & (t["metric"] == "success_rate")].iloc[0]
    assert zv["mean"] == zv["ci_low"] == zv["ci_high"] == pytest.approx(0.9)
    # methods in display order: learners first, heuristics after
    assert list(t["method"].unique()) == ["drl", "drl+", "ilets-", "ilets", "least-loaded"]


def test_summary_table_counts_nans_and_known_numbers():
    m = metrics_table({("drl", 50): {"x": [1.0, 2.0, 3.0, np.nan]}})
    row = S.summary_table(m, metrics_cols=("x",), reps=REPS).iloc[0]
    assert (row["n"], row["n_nan"], row["mean"], row["std"]) == (3, 1, 2.0, 1.0)


# --- improvement_table ---------------------------------------------------------------------

HAND = metrics_table({
    ("drl", 50): {"avg_response_s": [10.0, 14.0], "energy_kwh": [2.0, 2.0], "success_rate": [0.80, 0.80]},
    ("ilets-", 50): {"avg_response_s": [9.0, 9.0], "energy_kwh": [1.5, 2.5], "success_rate": [0.84, 0.84]},
    ("drl", 100): {"avg_response_s": [20.0, 20.0], "energy_kwh": [4.0, 4.0], "success_rate": [0.50, 0.50]},
    ("ilets-", 100): {"avg_response_s": [16.0, 16.0], "energy_kwh": [3.0, 3.0], "success_rate": [0.60, 0.60]},
})


def _row(t, metric, servers, method="ilets-"):
    return t[(t["metric"] == metric) & (t["servers"].astype(str) == str(servers)) & (t["method"] == method)].iloc[0]


def test_improvement_table_hand_worked():
    t = S.improvement_table(HAND, reps=2000)
    # response, 50 servers: DRL mean 12, ILETS- mean 9, lower is better: (12 - 9) / 12 = 25 %.
    r = _row(t, "avg_response_s", 50)
    assert r["improvement_pct"] == pytest.approx(25.0)
    assert r["abs_diff"] == pytest.approx(-3.0)
    # Bootstrap: ILETS- is constant (9); a DRL resample of {10, 14} has mean 10 (p 1/4), 12 (1/2)
    # or 14 (1/4), i.e. improvement 10 %, 25 % or 35.71 %; the 2.5/97.5 % quantiles are the ends.
    assert r["ci_low_pct"] == pytest.approx(10.0)
    assert r["ci_high_pct"] == pytest.approx(100 * 5 / 14)
    # response, 100 servers: (20 - 16) / 20 = 20 %, zero variance -> the CI is the point.
    r = _row(t, "avg_response_s", 100)
    assert r["improvement_pct"] == r["ci_low_pct"] == r["ci_high_pct"] == pytest.approx(20.0)
    # pooled: the unweighted mean of the scales, (25 + 20) / 2 = 22.5 %, CI (10+20)/2 .. (35.71+20)/2.
    r = _row(t, "avg_response_s", "all")
    assert r["improvement_pct"] == pytest.approx(22.5)
    assert r["scales"] == 2
    assert r["ci_low_pct"] == pytest.approx(15.0) and r["ci_high_pct"] == pytest.approx((100 * 5 / 14 + 20) / 2)
    # energy, 50 servers: means 2.0 and 2.0 -> 0 %; 100 servers: (4 - 3) / 4 = 25 %.
    assert _row(t, "energy_kwh", 50)["improvement_pct"] == pytest.approx(0.0)
    assert _row(t, "energy_kwh", 100)["improvement_pct"] == pytest.approx(25.0)
    # success, higher is better and *relative*: (0.84 - 0.80) / 0.80 = 5 %, absolute +4 pp;
    # 100 servers: (0.6 - 0.5) / 0.5 = 20 %, +10 pp; pooled 12.5 %, +7 pp.
    r = _row(t, "success_rate", 50)
    assert r["improvement_pct"] == pytest.approx(5.0)
    assert r["abs_diff"] == pytest.approx(4.0) and r["abs_unit"] == "pp"
    r = _row(t, "success_rate", "all")
    assert r["improvement_pct"] == pytest.approx(12.5) and r["abs_diff"] == pytest.approx(7.0)
    assert set(t["method"]) == {"ilets-"}


@pytest.mark.parametrize("paired", [False, True])
@pytest.mark.parametrize("n_seeds", [5, 1, {("drl", 50): 1, ("drl+", 100): 2}])
def test_improvement_table_shape_and_degenerate_cases(n_seeds, paired):
    m = random_metrics(np.random.default_rng(7), n_seeds)
    m.loc[m["method"] == "ilets", "energy_kwh"] = m.loc[m["method"] == "ilets", "servers"] * 1.0  # zero var
    t = S.improvement_table(m, reps=REPS, paired=paired)
    assert len(t) == 3 * 4 * 4  # metrics x methods x (3 scales + pooled)
    one = t[(t["n_method"] == 1) | (t["n_base"] == 1)]
    assert (one["verdict"] == "unresolved").all()  # one seed never resolves a comparison


def test_paired_interval_is_the_hand_computed_quantile_range():
    # two paired seeds with differences d1 < d2: every resample mean is d1, (d1+d2)/2 or d2
    # (probabilities 1/4, 1/2, 1/4), so the 95 % percentile interval is exactly [d1, d2]
    m = metrics_table({("a", 50): {"energy_kwh": [9.0, 7.0]}, ("b", 50): {"energy_kwh": [10.0, 10.0]}})
    c = S.compare(m, "a", "b", ["energy_kwh"], reps=2000).iloc[0]
    assert (c["diff_ci_low"], c["diff_ci_high"]) == pytest.approx((-3.0, -1.0))
    assert (c["rel_ci_low"], c["rel_ci_high"]) == pytest.approx((10.0, 30.0))
    # three seeds: the interval is scipy's percentile bootstrap interval, and by the discrete
    # law of the resampled means P(mean == 1) = P(mean == 6) = 1/27 > 2.5 %: the extremes
    import scipy.stats

    from ilets.report.stats.resampling import _key_seed

    x, zero = np.array([1.0, 2.0, 6.0]), np.zeros(3)
    e = S.seed_effect(pd.Series(x), pd.Series(zero), higher=True, reps=4000, key=(0, "hand"))
    assert S.percentile_interval(e.diff_reps) == pytest.approx((1.0, 6.0))
    ref = scipy.stats.bootstrap((x, zero), lambda a, b, axis=-1: a.mean(axis=axis) - b.mean(axis=axis),
                                paired=True, n_resamples=4000, method="percentile",
                                rng=np.random.default_rng(np.random.SeedSequence(_key_seed(0, "hand", "paired"))))
    assert S.percentile_interval(e.diff_reps) == pytest.approx(
        (ref.confidence_interval.low, ref.confidence_interval.high))


def test_percentile_interval_is_not_widened_to_the_point():
    # a skewed ratio: the interval of the resamples is reported as it is
    lo, hi = S.percentile_interval(np.array([2.0, 3.0, 4.0, 5.0]), level=0.5)
    assert (lo, hi) == pytest.approx((2.75, 4.25))
    assert S.percentile_interval(np.array([np.nan, np.nan])) != S.percentile_interval(np.array([1.0]))


@pytest.mark.parametrize("paired", [True, False])
def test_interval_coverage_near_nominal(paired):
    # normal seeds with a known difference of means: the 90 % interval of the difference
    # should cover it about 90 % of the time with 30 seeds (percentile bootstrap, n large)
    rng = np.random.default_rng(11)
    trials, n, covered = 300, 30, 0
    for k in range(trials):
        common = rng.normal(0, 1, n) if paired else 0.0
        x = pd.Series(common + rng.normal(1.0, 1.0, n))
        y = pd.Series(common + rng.normal(0.0, 1.0, n))
        e = S.seed_effect(x, y, higher=True, paired=paired, reps=300, key=(k,))
        lo, hi = S.percentile_interval(e.diff_reps, level=0.9)
        covered += lo <= 1.0 <= hi
    assert 0.82 <= covered / trials <= 0.96


def test_compare_improvement_table_and_verdicts_share_one_resampler():
    from ilets.report import verdicts as V

    m = random_metrics(np.random.default_rng(5))
    for paired in (True, False):
        imp = S.improvement_table(m, metrics_cols=("energy_kwh",), methods=["drl+"], reps=REPS, seed=4, paired=paired)
        imp = imp[imp["servers"] != "all"].set_index("servers")
        comp = S.compare(m, "drl+", "drl", ["energy_kwh"], reps=REPS, seed=4, paired=paired).set_index("servers")
        eff = V.component_effects(m, "drl+", "drl", "energy_kwh", False, reps=REPS, seed=4, paired=paired)
        eff = eff[eff["servers"] != "all"].set_index("servers")
        for s in (50, 100, 200):
            assert comp.loc[s, "rel_ci_low"] == pytest.approx(imp.loc[s, "ci_low_pct"])
            assert comp.loc[s, "rel_ci_high"] == pytest.approx(eff.loc[s, "ci_high_pct"])
            assert comp.loc[s, "verdict"] == imp.loc[s, "verdict"] == eff.loc[s, "verdict"]


def test_improvement_table_deterministic_and_independent_of_other_methods():
    m = random_metrics(np.random.default_rng(2))
    a = S.improvement_table(m, reps=REPS)
    pd.testing.assert_frame_equal(a, S.improvement_table(m, reps=REPS))
    b = S.improvement_table(m[m["method"] != "least-loaded"], reps=REPS)
    pd.testing.assert_frame_equal(a[a["method"] != "least-loaded"].reset_index(drop=True), b)


def test_paper_comparison():
    m = random_metrics(np.random.default_rng(4))
    c = S.paper_comparison(S.improvement_table(m, reps=REPS))
    assert list(c["method"]) == ["ilets-"] * 3 + ["drl+"] * 3
    assert list(c["metric"]) == list(S.PAPER_METRICS) * 2
    assert list(c["paper_pct"]) == [22.30, 10.56, 5.69, 36.73, 20.92, 12.99]
    assert np.allclose(c["ours_minus_paper"], c["ours_pct"] - c["paper_pct"])
    assert len(S.paper_comparison(S.improvement_table(m, reps=REPS), servers=None)) == 2 * 3 * 4
    with pytest.raises(ValueError):
        S.paper_comparison(S.improvement_table(m, baseline="least-loaded", reps=REPS))


# --- rliable: IQM and probability of improvement -------------------------------------------

def test_iqm_table_known_value():
    # DRL's reward is 1.0 at both scales, so a normalised score is 1 + (x - 1) / 1 = x.
    # Method "a" scores 1..4 at 50 servers and 5..8 at 100: IQM = mean of the middle 50 % of
    # {1..8} = mean(3, 4, 5, 6) = 4.5.
    m = metrics_table({("drl", 50): {"mean_reward": [1.0] * 4}, ("drl", 100): {"mean_reward": [1.0] * 4},
                       ("a", 50): {"mean_reward": [1.0, 2.0, 3.0, 4.0]},
                       ("a", 100): {"mean_reward": [5.0, 6.0, 7.0, 8.0]}})
    t = S.iqm_table(m, "mean_reward", reps=REPS).set_index("method")
    assert t.loc["a", "iqm"] == pytest.approx(4.5)
    assert (t.loc["a", "runs"], t.loc["a", "tasks"]) == (4, 2)
    assert t.loc["drl", "iqm"] == t.loc["drl", "ci_low"] == t.loc["drl", "ci_high"] == pytest.approx(1.0)
    assert brackets(t["ci_low"], t["iqm"], t["ci_high"]).all()


def test_normalise_scores_lower_is_better_and_best_heuristic():
    m = metrics_table({("drl", 50): {"energy_kwh": [2.0, 2.0]}, ("a", 50): {"energy_kwh": [1.0, 1.0]},
                       ("least-loaded", 50): {"energy_kwh": [4.0, 4.0]}, ("random", 50): {"energy_kwh": [8.0, 8.0]}})
    s = S.normalise_scores(m, "energy_kwh").groupby("method")["score"].mean()
    # 1 + (2 - 1) / 2 = 1.5: half the energy is a 50 % improvement
    assert s["a"] == pytest.approx(1.5) and s["drl"] == pytest.approx(1.0) and s["random"] == pytest.approx(-2.0)
    h = S.normalise_scores(m, "energy_kwh", baseline="best-heuristic")
    assert h.groupby("method")["score"].mean()["least-loaded"] == pytest.approx(1.0)
    assert h["normaliser"].iloc[0] == "least-loaded=4"


@pytest.mark.parametrize("n_seeds", [5, 1, {("ilets", 100): 1}])
def test_iqm_table_brackets_and_deterministic(n_seeds):
    m = random_metrics(np.random.default_rng(11), n_seeds)
    state = np.random.get_state()
    for metric in ("avg_response_s", "success_rate"):
        t = S.iqm_table(m, metric, reps=REPS)
        assert brackets(t["ci_low"], t["iqm"], t["ci_high"]).all()
        pd.testing.assert_frame_equal(t, S.iqm_table(m, metric, reps=REPS))
    # the caller's global numpy stream is untouched
    after = np.random.get_state()
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(state, after))


def test_iqm_table_leaves_out_method_missing_a_scale():
    m = random_metrics(np.random.default_rng(1))
    m = m[~((m["method"] == "ilets") & (m["servers"] == 200))]
    with pytest.warns(UserWarning, match="ilets"):
        t = S.iqm_table(m, "energy_kwh", reps=REPS)
    assert "ilets" not in set(t["method"])


def test_probability_of_improvement():
    rng = np.random.default_rng(5)
    rows = []
    for s in (50, 100, 200):
        for seed in range(6):
            rows += [{"method": "x", "servers": s, "seed": seed, "avg_response_s": 1 + rng.random(),
                      "success_rate": 0.9 + 0.01 * rng.random()},
                     {"method": "y", "servers": s, "seed": seed, "avg_response_s": 5 + rng.random(),
                      "success_rate": 0.5 + 0.01 * rng.random()}]
    m = pd.DataFrame(rows)
    # x dominates y: lower response (lower is better) and higher success
    for metric in ("avg_response_s", "success_rate"):
        p = S.probability_of_improvement(m, "x", "y", metric, reps=POI_REPS)
        assert p["prob"] == p["ci_low"] == p["ci_high"] == 1.0
        assert (p["n_x"], p["n_y"], p["tasks"]) == (6, 6, 3)
        assert S.probability_of_improvement(m, "y", "x", metric, reps=POI_REPS)["prob"] == 0.0
    # the direction can be overridden
    flipped = S.probability_of_improvement(m, "x", "y", "avg_response_s", higher_is_better=True, reps=POI_REPS)
    assert flipped["prob"] == 0.0
    # identical distributions (the same values, shuffled seeds) -> 0.5
    z = m[m["method"] == "x"].copy()
    z["method"] = "z"
    z["seed"] = z.groupby("servers")["seed"].transform(lambda s: s.to_numpy()[::-1])
    p = S.probability_of_improvement(pd.concat([m, z]), "x", "z", "avg_response_s", reps=POI_REPS)
    assert p["prob"] == pytest.approx(0.5)
    assert brackets(p["ci_low"], p["prob"], p["ci_high"])
    assert p == S.probability_of_improvement(pd.concat([m, z]), "x", "z", "avg_response_s", reps=POI_REPS)


def test_probability_of_improvement_n1():
    m = metrics_table({("x", 50): {"success_rate": [0.9]}, ("y", 50): {"success_rate": [0.8]}})
    p = S.probability_of_improvement(m, "x", "y", "success_rate", reps=POI_REPS)
    assert p["prob"] == p["ci_low"] == p["ci_high"] == 1.0


# --- curves: cold start, convergence, oscillation, cumulative reward -----------------------

def test_first_n_weighted_by_decisions():
    c = curve([-4.0, -2.0, -1.0], every=100, last=50)
    f = S.first_n(c, 200).iloc[0]
    assert (f["decisions"], f["reward"], f["energy_kwh"]) == (200, -3.0, pytest.approx(0.2))
    f = S.first_n(c, 250).iloc[0]  # the last, shorter window counts by its 50 decisions
    assert f["decisions"] == 250 and f["reward"] == pytest.approx((-400 - 200 - 50) / 250)
    f = S.first_n(c, 150).iloc[0]  # rounded down to whole windows
    assert f["decisions"] == 100 and f["reward"] == -4.0
    assert np.isnan(S.first_n(c, 50).iloc[0]["reward"])
    two = pd.concat([c, curve([-1.0, -1.0, -1.0], method="ilets")])
    t = S.summary_table(S.first_n(two, 200), metrics_cols=S.CURVE_COLS, reps=REPS)
    assert set(t["method"]) == {"drl", "ilets"} and (t["n"] == 1).all()


def test_convergence_settles_at_known_index():
    rng = np.random.default_rng(0)
    # windows 0-6: far and noisy; from window 7 on: -1 +- 0.01, inside the 5 % band of -1.
    r = np.concatenate([-5 + rng.normal(0, 1, 7), -1 + rng.uniform(-0.01, 0.01, 13)])
    assert S.convergence_decisions(curve(r, every=100)) == 700.0
    # a window that leaves the band late moves the answer after it
    r2 = r.copy()
    r2[12] = -1.2
    assert S.convergence_decisions(curve(r2, every=100)) == 1300.0
    # in the band from the start -> 0; last window outside -> never (NaN)
    assert S.convergence_decisions(curve(np.full(10, -2.0))) == 0.0
    r3 = np.concatenate([np.full(9, -1.0), [-3.0]])
    assert np.isnan(S.convergence_decisions(curve(r3)))
    t = S.convergence_table(pd.concat([curve(r, seed=0), curve(r3, seed=1)]))
    assert list(t["settled"]) == [True, False]
    s = S.summary_table(t, metrics_cols=("convergence_decisions",), reps=REPS).iloc[0]
    assert (s["n"], s["n_nan"], s["mean"]) == (1, 1, 700.0)


def test_event_decisions_mapping():
    arrival = 1500.0 + 0.5 * np.arange(2000)  # online tasks at 1500, 1500.5, ..., 2499.5 s
    ev = {"burst_0": 400.0, "burst_2": 1850.0, "trend_change": 2250.0, "burst_3": 2600.0}
    # offline burst and the one past the last arrival are dropped; d = tasks arrived before t
    assert S.event_decisions(ev, arrival) == {"burst_2": 700, "trend_change": 1500}
    assert S.event_decisions(ev, arrival, span_s=50.0) == {"burst_2": (700, 800), "trend_change": (1500, 1600)}


def test_oscillation_larger_for_noisier_curve():
    rng = np.random.default_rng(1)
    base = -1 + 0.01 * rng.normal(size=40)
    noisy = base.copy()
    noisy[10:20] += rng.normal(0, 0.5, 10)  # swings after the event at decision 1000
    events = {"burst": 1000}
    quiet_o = S.oscillation(curve(base), events, span=1000)
    noisy_o = S.oscillation(curve(noisy), events, span=1000)
    assert quiet_o["windows"].iloc[0] == 10 and noisy_o["windows"].iloc[0] == 10
    assert noisy_o["var"].iloc[0] > 100 * quiet_o["var"].iloc[0]
    assert noisy_o["mad"].iloc[0] > 10 * quiet_o["mad"].iloc[0]
    # known numbers: windows overlapping [150, 350) of windows of 100 are windows 1, 2, 3
    o = S.oscillation(curve([0.0, 1.0, 3.0, 0.0, 9.0]), {"e": (150, 350)}).iloc[0]
    assert o["windows"] == 3 and o["var"] == pytest.approx(np.var([1, 3, 0], ddof=1))
    assert o["mad"] == pytest.approx((2 + 3) / 2)
    assert np.isnan(S.oscillation(curve([0.0, 1.0]), {"e": 0}, span=50)["var"].iloc[0])
    with pytest.raises(ValueError):
        S.oscillation(curve(base), events)
    # per cell, events per seed
    both = pd.concat([curve(base, seed=0), curve(noisy, seed=1)])
    t = S.oscillation_table(both, lambda seed: {"burst": 1000}, span=1000)
    assert list(t["seed"]) == [0, 1] and t["var"].iloc[1] > t["var"].iloc[0]
    s = S.summary_table(t, metrics_cols=("var", "mad"), by=("servers", "method", "event"), reps=REPS)
    assert len(s) == 2 and brackets(s["ci_low"], s["mean"], s["ci_high"]).all()


def test_cumulative_reward():
    c = pd.concat([curve([-2.0, -1.0, -1.0], every=100, last=50, seed=0), curve([-1.0, -1.0], seed=1)])
    t = S.cumulative_reward(c)
    a = t[t["seed"] == 0]
    assert list(a["decision_end"]) == [100, 200, 250]
    assert list(a["cum_reward"]) == [-200.0, -300.0, -350.0]
    assert list(a["mean_reward_so_far"]) == pytest.approx([-2.0, -1.5, -1.4])
    assert list(t[t["seed"] == 1]["cum_reward"]) == [-100.0, -200.0]


# --- comparisons, claim checks and display tables (chapters 05-06) -------------------------

def test_compare_paired_verdicts_and_direction():
    m = metrics_table({("a", 50): {"avg_response_s": [1.0, 1.1, 0.9], "success_rate": [0.9, 0.8, 0.85]},
                       ("b", 50): {"avg_response_s": [2.0, 2.2, 1.8], "success_rate": [0.9, 0.8, 0.86]}})
    c = S.compare(m, "a", "b", ["avg_response_s", "success_rate"], reps=REPS).set_index("metric")
    r = c.loc["avg_response_s"]
    assert r["diff"] == pytest.approx(-1.0) and r["rel_pct"] == pytest.approx(50.0)  # lower is better
    assert r["verdict"] == "better" and brackets(r["diff_ci_low"], r["diff"], r["diff_ci_high"])
    s = c.loc["success_rate"]  # per-seed diffs 0, 0, -0.01: never better, not all worse
    assert s["verdict"] == "unresolved" and s["rel_pct"] < 0
    flipped = S.compare(m, "b", "a", ["avg_response_s"], reps=REPS).iloc[0]
    assert flipped["verdict"] == "worse"
    # an explicit direction for a column not in HIGHER_IS_BETTER; missing arm -> no data
    m2 = m.assign(mad=m["avg_response_s"])
    assert S.compare(m2, "a", "b", ["mad"], directions={"mad": False}, reps=REPS).iloc[0]["verdict"] == "better"
    missing = S.compare(m2, "a", "zzz", ["mad"], directions=False, reps=REPS)  # one row per fleet size of "a"
    assert len(missing) == 1 and missing.iloc[0]["verdict"] == "no data" and pd.isna(missing.iloc[0]["rel_pct"])
    one = metrics_table({("a", 50): {"avg_response_s": [1.0]}, ("b", 50): {"avg_response_s": [2.0]}})
    assert S.compare(one, "a", "b", ["avg_response_s"], reps=REPS).iloc[0]["verdict"] == "unresolved"
    assert c.equals(S.compare(m, "a", "b", ["avg_response_s", "success_rate"], reps=REPS).set_index("metric"))


def test_compare_unpaired_uses_all_seeds():
    m = metrics_table({("a", 50): {"avg_response_s": [1.0, 1.2, 1.1, 0.9]},
                       ("b", 50): {"avg_response_s": [2.0, 2.1]}})
    paired = S.compare(m, "a", "b", ["avg_response_s"], reps=REPS).iloc[0]
    unpaired = S.compare(m, "a", "b", ["avg_response_s"], paired=False, reps=REPS).iloc[0]
    assert (paired["n_x"], paired["n_y"], unpaired["n_x"], unpaired["n_y"]) == (2, 2, 4, 2)
    assert unpaired["mean_x"] == pytest.approx(1.05) and unpaired["verdict"] == "better"


def test_variant_comparison():
    main = metrics_table({("drl+", 50): {"success_rate": [0.8, 0.82]}, ("drl+", 100): {"success_rate": [0.5, 0.5]},
                          ("drl", 50): {"success_rate": [0.1, 0.1]}})
    var = metrics_table({("drl+", 50): {"success_rate": [0.9, 0.93]}})
    v = S.variant_comparison(main, var, ["success_rate"], reps=REPS)
    assert len(v) == 1 and (v.iloc[0]["servers"], v.iloc[0]["method"]) == (50, "drl+")
    assert v.iloc[0]["diff"] == pytest.approx(0.105) and v.iloc[0]["verdict"] == "better"
    assert S.variant_comparison(main, var.iloc[0:0], ["success_rate"], reps=REPS).empty


def test_cold_start_decisions():
    c = pd.concat([curve(np.zeros(20), every=50, last=19), curve(np.zeros(21), every=50, seed=1)])
    assert S.cold_start_decisions(c) == 50  # 10 % of 969 = 96 -> one window of 50
    assert S.cold_start_decisions(c, frac=0.25) == 200
    assert S.cold_start_decisions(c, frac=0.01, min_windows=2) == 100
    assert S.cold_start_decisions(c.iloc[0:0]) == 0


def test_online_event_ranges_and_markers():
    arrival = 1500.0 + 0.5 * np.arange(3000)  # 1500 .. 2999.5 s
    ev = {"burst_0": 400.0, "burst_2": 1850.0, "trend_change": 2250.0, "burst_3": 2600.0}
    r = S.online_event_ranges(ev, arrival)  # gaps 400, 350, 399.5 -> span 350 s = 700 decisions
    assert r == {"burst_2": (700, 1400), "trend_change": (1500, 2200), "burst_3": (2200, 2900)}
    assert S.online_event_ranges(ev, arrival, span_s=10.0)["burst_2"] == (700, 720)
    assert S.online_event_ranges({"burst_0": 400.0}, arrival) == {}
    mk = S.event_markers({0: r, 1: {"burst_2": 702, "trend_change": (1504, 1600)}})
    assert mk == {"burst_2": 701.0, "trend_change": 1502.0, "burst_3": 2200.0}


def test_leader_table():
    a = curve([-1.0, -1.0, -1.0, -1.0], method="drl")
    b = curve([-2.0, -0.1, -0.1, -0.1], method="ilets")  # cum: -200, -210, -220, -230 vs -100..-400
    t = S.leader_table(S.cumulative_reward(pd.concat([a, b]))).set_index("method")
    assert t.loc["ilets", "leads_from"] == 300.0 and np.isnan(t.loc["drl", "leads_from"])
    assert t.loc["ilets", "share_led"] == 0.5 and t.loc["ilets", "final_rank"] == 1
    assert t.loc["drl", "final"] == -400.0
    low = S.leader_table(S.cumulative_reward(pd.concat([a, b])), higher=False).set_index("method")
    assert low.loc["drl", "final_rank"] == 1
    assert S.leader_table(pd.DataFrame()).empty


def test_ci_table():
    m = metrics_table({("drl", 50): {"success_rate": [0.8, 0.9], "avg_response_s": [1.0, 1.0]},
                       ("ilets", 50): {"success_rate": [0.7], "avg_response_s": [np.nan]}})
    t = S.ci_table(S.summary_table(m, metrics_cols=("success_rate", "avg_response_s"), reps=REPS),
                   formats={"success_rate": ".0%"})
    assert list(t.columns) == ["servers", "method", "success_rate", "avg_response_s"]
    row = t.set_index("method")
    assert row.loc["drl", "success_rate"].startswith("85% [")
    assert row.loc["drl", "avg_response_s"] == "1 (zero variance)"
    assert row.loc["ilets", "success_rate"] == "70% (n=1)" and row.loc["ilets", "avg_response_s"] == "n/a"


def test_relative_curves_and_last_checkpoint():
    a = curve([-1.0, -2.0, -3.0], method="drl", seed=0)
    ref = curve([-0.5, -1.5, -2.0], method="greedy-cost", seed=0)
    other_seed = curve([-1.0, -1.0, -1.0], method="drl", seed=1)  # no reference at seed 1: dropped
    r = S.relative_curves(pd.concat([a, ref, other_seed]))
    assert list(r["method"].unique()) == ["drl"] and list(r["seed"].unique()) == [0]
    assert list(r["reward"]) == [-0.5, -0.5, -1.0] and list(r["response"]) == [0.5, 0.5, 1.0]
    assert S.relative_curves(a).empty
    cum = S.cumulative_reward(pd.concat([a, curve([-1.0, -1.0], method="ilets", seed=0, servers=50)]))
    last = S.last_checkpoint(cum)
    assert list(last["decision_end"]) == [200, 200] and set(last["method"]) == {"drl", "ilets"}


def test_compare_display():
    m = metrics_table({("a", 50): {"success_rate": [0.9, 0.92]}, ("b", 50): {"success_rate": [0.8, 0.8]}})
    d = S.compare_display(S.compare(m, "a", "b", ["success_rate"], reps=REPS), names={"a": "A"},
                          formats={"success_rate": ".0%"})
    assert list(d.columns) == ["servers", "metric", "A mean", "b mean", "A vs b", "seeds", "verdict"]
    change = d.iloc[0]["A vs b"]
    assert d.iloc[0]["A mean"] == "91%" and change.startswith("+13.") and "[+12.5, +15.0]" in change


def test_comparison_row():
    m = metrics_table({("a", 100): {"success_rate": [0.9, 0.92]}, ("b", 100): {"success_rate": [0.8, 0.8]},
                       ("a", 50): {"success_rate": [0.5, 0.6]}, ("b", 50): {"success_rate": [0.8, 0.8]}})
    c = S.compare(m, "a", "b", ["success_rate"], reps=REPS)
    assert S.comparison_row(c, metric="success_rate")["servers"] == 50
    assert S.comparison_row(c, metric="success_rate", servers=100)["verdict"] == "better"
    assert S.comparison_row(c, metric="energy_kwh") is None and S.comparison_row(c, nope=1) is None
    assert S.comparison_row(c.iloc[0:0], metric="success_rate") is None


def test_range_text():
    assert S.range_text([0.1, 0.25, np.nan], ".0%") == "10% to 25%"
    assert S.range_text([0.081, 0.0812], ".1%") == "8.1%"
    assert S.range_text([np.nan]) == "n/a" and S.range_text([]) == "n/a"


@pytest.mark.parametrize("seed", range(40))
def test_improvement_probability_and_iqm_equal_rliables_bit_for_bit(seed):
    # the study's two bootstrap statistics are rliable's arithmetic without scipy's wrappers
    from rliable import metrics as rm

    rng = np.random.default_rng(seed)
    n_x, n_y, tasks = rng.integers(1, 12), rng.integers(1, 12), rng.integers(1, 4)
    tied = seed % 2 == 0  # integer draws: many ties within and across the two methods
    draw = (lambda n: rng.integers(0, 4, (n, tasks)).astype(float)) if tied else (lambda n: rng.normal(size=(n, tasks)))
    x, y = draw(n_x), draw(n_y)
    if seed % 5 == 0:
        y = x.copy()  # equal columns: 0.5 by rliable's rule
    assert S.improvement_probability(x, y) == rm.probability_of_improvement(x, y)
    assert S.aggregate_iqm(x) == rm.aggregate_iqm(x)


def test_improvement_probability_propagates_nan_as_rliable_does():
    from rliable import metrics as rm

    x, y = np.array([[1.0], [np.nan]]), np.array([[0.0], [2.0]])
    assert np.isnan(S.improvement_probability(x, y)) and np.isnan(rm.probability_of_improvement(x, y))


def test_the_bootstrap_intervals_equal_rliables_functions():
    # the same resamples through rliable's statistics and ours give identical intervals
    from rliable import library as rly
    from rliable import metrics as rm

    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(10, 3)), rng.normal(0.3, size=(10, 3))
    got, want = [], []
    for fns, into in (((S.improvement_probability, S.aggregate_iqm), got),
                      ((rm.probability_of_improvement, rm.aggregate_iqm), want)):
        poi, iqm = fns
        with S.numpy_global_seed(0):
            into.append(rly.get_interval_estimates({"p": [x, y]}, lambda a, b: np.array([poi(a, b)]), reps=200))
        with S.numpy_global_seed(0):
            into.append(rly.get_interval_estimates({"m": x}, lambda a: np.array([iqm(a)]), reps=200))
    for (gp, gi), (wp, wi) in zip(got, want):
        assert gp.keys() == wp.keys()
        for k in gp:
            np.testing.assert_array_equal(gp[k], wp[k])
            np.testing.assert_array_equal(gi[k], wi[k])


# --- curve measures on the gap to a non-learning reference ---------------------------------

def _load_driven(n: int = 30) -> np.ndarray:
    """A reward the load moves: a trend down, bursts, then swings after a trend change."""
    w = np.arange(n)
    return -0.3 - 0.1 * np.minimum(w, 12) / 12 - 0.05 * (w % 7 == 3) + np.where(w >= 20, 0.02 * (-1.0) ** w, 0)


def test_a_heuristic_scores_zero_gap_no_oscillation_and_settles_at_once():
    load = _load_driven()
    cells = [curve(load, method="greedy-cost", seed=s) for s in range(2)]
    cells += [curve(load + 0.07, method="earliest-finish", seed=s) for s in range(2)]  # a fixed rule, tracking the load
    cells += [curve(load - 0.2 * np.exp(-np.arange(30) / 3.0), method="drl", seed=s) for s in range(2)]  # learning
    curves = pd.concat(cells, ignore_index=True)
    gap = S.relative_curves(curves, "greedy-cost", keep_reference=True)
    assert (gap.loc[gap["method"] == "greedy-cost", "reward"] == 0).all()
    events = {"trend_change": (2000, 3000)}
    osc = S.gap_oscillation_table(curves, events).groupby("method")["mad"].max()
    assert osc["greedy-cost"] == 0 and osc["earliest-finish"] == pytest.approx(0, abs=1e-12) and osc["drl"] > 0
    raw = S.oscillation_table(curves, events).groupby("method")["mad"].max()
    assert raw["earliest-finish"] > 0.01  # on the raw reward the heuristic "oscillates" with the load
    conv = S.gap_convergence_table(curves, tol=0.05, smooth=1).set_index(["method", "seed"])
    assert (conv.loc["greedy-cost", "convergence_decisions"] == 0).all()
    assert (conv.loc["earliest-finish", "convergence_decisions"] == 0).all()
    assert (conv.loc["drl", "convergence_decisions"] > 0).all() and conv["testable"].all()
    assert S.gap_convergence_table(curves[curves["method"] != "greedy-cost"]).empty


def test_gap_convergence_is_not_testable_where_the_reference_never_settles():
    zigzag = -0.3 + 0.1 * (-1.0) ** np.arange(30)
    curves = pd.concat([curve(zigzag, method="greedy-cost"), curve(zigzag + 0.01, method="drl")], ignore_index=True)
    conv = S.gap_convergence_table(curves, smooth=1)
    assert not conv["reference_settled"].any() and not conv["testable"].any()
    assert (conv.loc[conv["method"] == "drl", "convergence_decisions"] == 0).all()  # its gap is constant all the same


def test_convergence_with_an_absolute_band():
    c = curve(np.r_[np.full(5, 0.1), 0.001 * (-1.0) ** np.arange(16)])  # settles around 0 from window 5
    assert np.isnan(S.convergence_decisions(c))  # a relative band around 0 is empty
    assert S.convergence_decisions(c, band=0.01) == 500
