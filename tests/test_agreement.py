"""The second verdict of ilets verify: a re-run that is not bit-identical agrees within the seed-to-seed spread."""

from __future__ import annotations

import pandas as pd
import pytest

from ilets.study.agreement import AGREEMENT_METRICS, SPREAD_MULTIPLE, spread_agreement


def store(values: list[float], method: str = "drl+", servers: int = 50) -> pd.DataFrame:
    return pd.DataFrame([{"method": method, "variant": "", "servers": servers, "seed": s,
                          **{m: v * (1 + i) for i, m in enumerate(AGREEMENT_METRICS)}} for s, v in enumerate(values)])


def test_a_difference_inside_one_spread_agrees_and_one_outside_does_not():
    table = store([1.0, 1.1, 0.9, 1.05])  # spread of the first metric: about 0.085
    spread = table["avg_response_s"].std(ddof=1)
    recorded = table.iloc[0][list(AGREEMENT_METRICS)].to_dict()
    near = {m: v + 0.5 * SPREAD_MULTIPLE * table[m].std(ddof=1) for m, v in recorded.items()}
    far = {**near, "avg_response_s": recorded["avg_response_s"] + 1.5 * SPREAD_MULTIPLE * spread}
    ok = spread_agreement(table, "drl+", "", 50, recorded, near)
    assert ok is not None and ok.agrees and ok.seeds == 4
    assert "agrees within the seed-to-seed spread" in ok.text() and "avg_response_s" in ok.text()
    bad = spread_agreement(table, "drl+", "", 50, recorded, far)
    assert bad is not None and not bad.agrees
    assert bad.rows[0][3] == pytest.approx(spread)


def test_no_verdict_without_seeds_to_measure_a_spread():
    table = store([1.0])
    rec = table.iloc[0][list(AGREEMENT_METRICS)].to_dict()
    assert spread_agreement(table, "drl+", "", 50, rec, rec) is None
    assert spread_agreement(store([1.0, 1.1]), "drl", "", 50, rec, rec) is None  # another method's seeds
    assert spread_agreement(store([1.0, 1.1]), "drl+", "", 50, {}, rec) is None  # a metric missing
