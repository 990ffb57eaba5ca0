"""The figures that carry the argument (ilets.report.claim_figures) and the metric grid's scale
(ilets.report.plots.metric_grid): the forest shows the claims table's numbers and no number
where the table has none; the gap figure shows heuristic_gap's numbers."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd
import pytest

from claims_fixtures import HOLD, REVERSE
from claims_fixtures import effects as _effects
from claims_fixtures import metrics as _metrics
from claims_fixtures import verdict as _verdict

from ilets.report import claim_figures as CF
from ilets.report import claims_table as C
from ilets.report import heuristic_gap as G

matplotlib.use("Agg")


ONE = [(50, -2.25, -3.5, -1.0)]


def _families():
    flat = [_verdict(1, [_effects("drl+", "drl", c, REVERSE) for c in C.MEASURES], "not reproduced"),
            _verdict(2, [_effects("ilets-", "drl", c, HOLD, pooled=(4.04, 3.1, 5.06)) for c in C.MEASURES],
                     "reproduced"),
            _verdict(4, [_effects("drl+", "drl", "reward", HOLD), _effects("ilets", "drl", "reward", REVERSE)],
                     "not reproduced"),
            _verdict(8, [_effects("ilets", "best-heuristic", c, ONE) for c in C.MEASURES], "not reproduced")]
    per_server = [_verdict(1, [_effects("drl+", "drl", c, HOLD) for c in C.MEASURES], "reproduced"),
                  _verdict(7, [_effects("ilets", "drl+", "mad", REVERSE)], "not reproduced")]
    return flat, per_server


def _shown(points: pd.DataFrame) -> str:
    """The cell text a source's points stand for (the claims table's two forms)."""
    if len(points) == 1:
        r = points.iloc[0]
        return f"{C.pct(r.effect_pct)} % [{C.pct(r.low_pct)}, {C.pct(r.high_pct)}]"
    return " / ".join(C.pct(e) for e in points["effect_pct"]) + " %"


def test_the_forest_shows_the_claims_table_numbers():
    flat, per_server = _families()
    table = C.build(flat, per_server, _metrics(), _metrics(), {50: 0.025, 100: 0.031})
    forest = CF.claim_forest(flat, per_server, table)
    rows = {r.claim: r for r in table.rows}
    assert set(forest["claim_row"]) <= set(rows)  # every panel is a row of the table
    compared = 0
    for (claim_row, source), g in forest.groupby(["claim_row", "source"]):
        row, points = rows[claim_row], g[g["effect_pct"].notna()]
        cell = {CF.PAPER: row.paper, CF.FLAT: row.flat, CF.PER_SERVER: row.per_server}[source]
        if source == CF.PAPER:
            assert cell == (f"{C.pct(points['effect_pct'].iloc[0], 2)} %" if len(points) else cell)
        elif len(points):
            assert cell.endswith(_shown(points)), (claim_row, source, cell)  # a claim of several names its comparison
            compared += 1
        else:
            assert not any(ch.isdigit() for ch in cell), (claim_row, source, cell)
        assert (g["verdict"] == row.verdict).all()
    assert compared >= 10
    # the forms behind the cells: the pooled effect, each fleet size where the signs differ, one fleet size alone
    oinpt = forest[forest["claim_row"] == "OINPT: DRL+ vs DRL, response time"]
    assert oinpt.loc[oinpt["source"] == CF.FLAT, "where"].tolist() == ["50 servers", "100 servers"]
    assert oinpt.loc[oinpt["source"] == CF.PER_SERVER, "where"].tolist() == [CF.POOLED]
    oail = forest[(forest["claim_row"] == "OAIL: ILETS- vs DRL, energy") & (forest["source"] == CF.FLAT)]
    assert oail[["effect_pct", "low_pct", "high_pct"]].iloc[0].tolist() == [4.04, 3.1, 5.06]
    assert oinpt.loc[oinpt["source"] == CF.PAPER, "effect_pct"].iloc[0] == pytest.approx(36.73)


def test_a_claim_with_no_learner_value_yields_no_point():
    flat, per_server = _families()
    forest = CF.claim_forest(flat, None, C.build(flat, None, _metrics(), None))
    ps = forest[forest["source"] == CF.PER_SERVER]
    assert ps["effect_pct"].isna().all() and set(ps["note"]) == {C.NO_RESULTS}
    assert len(ps) == forest["claim_row"].nunique()  # one row each, saying why, never a point
    trend = forest[forest["claim"] == 7]  # no flat verdict on the trend change
    assert trend["effect_pct"].isna().all()
    assert trend.loc[trend["source"] == CF.FLAT, "note"].tolist() == [CF.NOT_MEASURED]
    heuristics = forest[(forest["claim"] == 8) & (forest["source"] == CF.PAPER)]
    assert heuristics["effect_pct"].isna().all() and heuristics["note"].str.contains("beats all").all()
    # the per-server family present, a claim it lacks (the cold start) is not measured with it
    cold = CF.claim_forest(flat, per_server)
    cold = cold[(cold["claim"] == 4) & (cold["source"] == CF.PER_SERVER)]
    assert cold["effect_pct"].isna().all() and cold["note"].tolist() == [CF.NOT_MEASURED]


def test_a_claim_judged_not_testable_shows_no_point():
    v = _verdict(4, [_effects("drl+", "drl", "reward", HOLD)], "not testable")
    forest = CF.claim_forest([v], None)
    assert forest.loc[(forest["claim"] == 4) & (forest["source"] == CF.FLAT), "effect_pct"].isna().all()


def _gap_metrics(learner_shift: float = 0.0):
    rows = []
    for servers in (50, 100, 200):
        for seed in range(4):
            for method, reward in (("drl", -0.5), ("ilets", -0.45), ("min-energy", -0.4), ("greedy-cost", -0.42),
                                   ("random", -0.6)):
                shift = learner_shift if method in ("drl", "ilets") else 0.0
                rows.append({"method": method, "servers": servers, "seed": seed, "variant": "",
                             "mean_reward": reward + shift + 0.01 * seed, "avg_response_s": 2 - reward + 0.1 * seed})
    return pd.DataFrame(rows)


def test_the_gap_frame_is_heuristic_gaps_numbers_for_each_family():
    flat, ps = _gap_metrics(), _gap_metrics(0.05)
    ctx, ps_ctx = SimpleNamespace(metrics=flat, reps=200), SimpleNamespace(metrics=ps, reps=200)
    frame = CF.gap_by_fleet(ctx, ps_ctx)
    assert list(dict.fromkeys(frame["family"])) == [CF.FLAT, CF.PER_SERVER]
    for family, metrics in ((CF.FLAT, flat), (CF.PER_SERVER, ps)):
        expected = G.learner_gaps(metrics, (CF.GAP_MEASURE,), reps=200)
        got = frame[frame["family"] == family].drop(columns="family").reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected)
    assert set(CF.gap_by_fleet(ctx)["family"]) == {CF.FLAT}  # no per-server grid: the flat family alone


def test_the_figures_have_a_panel_per_claim_and_per_family():
    flat, per_server = _families()
    forest = CF.claim_forest(flat, per_server, C.build(flat, per_server, _metrics(), _metrics()))
    fig = CF.claim_forest_figure(forest)
    assert isinstance(fig, matplotlib.figure.Figure)
    assert len(fig.axes) == forest["claim_row"].nunique() == 11
    assert [len(s.axes) for s in fig.subfigs] == [3, 3, 3, 2]
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert CF.NOT_MEASURED in texts and any("beats all" in t for t in texts)
    ctx = SimpleNamespace(metrics=_gap_metrics(), reps=200)
    assert len(CF.gap_figure(CF.gap_by_fleet(ctx, SimpleNamespace(metrics=_gap_metrics(0.05), reps=200))).axes) == 2
    assert len(CF.gap_figure(CF.gap_by_fleet(ctx)).axes) == 1
    # a partial grid (as the book's smoke build reads): nothing to draw is said, not an error
    empty = CF.gap_figure(pd.DataFrame(columns=G.COLUMNS + ["family"]))
    assert len(empty.axes) == 1 and empty.axes[0].texts
    nothing = CF.claim_forest([], None)
    assert nothing["effect_pct"].notna().sum() == 6  # the paper's figures alone
    assert len(CF.claim_forest_figure(nothing).axes) == 11
    matplotlib.pyplot.close("all")


def test_the_metric_grid_writes_off_scale_methods_instead_of_flattening_the_rest():
    from ilets.report.plots import metric_grid

    metrics = _gap_metrics()
    metrics.loc[metrics["method"] == "random", "avg_response_s"] = 240.0  # a hundred times the rest
    fig = metric_grid(metrics, {"avg_response_s": "response time (s)", "mean_reward": "mean reward"})
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 2
    response, reward = fig.axes
    assert response.get_xlim()[1] < 10  # the others' range, not random's
    assert any("240 at 50" in t.get_text() for t in response.texts)
    assert reward.get_xlim()[0] < -0.6 < reward.get_xlim()[1]  # within reach of the rest: drawn as it is
    assert not reward.texts
    for ax in fig.axes:
        assert all(t.get_fontsize() >= 10 for t in ax.get_xticklabels() + ax.get_yticklabels())
    matplotlib.pyplot.close("all")


def test_the_cell_points_follow_the_cells_rule():
    pooled = {"per_scale": ((50, 1, 0.5, 2), (100, 2, 1, 3)), "same_sign": True, "pooled": 1.5, "pooled_low": 0.8,
              "pooled_high": 2.2}
    assert CF.cell_points(pooled) == [(CF.POOLED, 1.5, 0.8, 2.2)]
    split = {**pooled, "per_scale": ((50, 1, 0.5, 2), (100, -2, -3, -1)), "same_sign": False}
    assert [p[0] for p in CF.cell_points(split)] == ["50 servers", "100 servers"]
    assert CF.cell_points({"per_scale": (), "same_sign": False}) == []
    assert np.isclose(CF.cell_points({**pooled, "per_scale": ((200, 4, 3, 5),)})[0][1], 4)
