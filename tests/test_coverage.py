"""ilets.study.coverage: what a grid planned, what is finished, and which fleet sizes are judged."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from text_numbers import numbers_in

from ilets.config import FleetConfig, RunConfig
from ilets.study.coverage import MIN_JUDGED_SEEDS, Coverage, coverage_table, fleet_coverage, parse_cell_name
from ilets.study.run import cell_name


@pytest.mark.parametrize("method,variant", [("ilets-", ""), ("drl+", "reward-capped"), ("round-robin", "heavy-load"),
                                            ("least-loaded", "")])
def test_a_cell_name_parses_back_to_its_fields(method, variant):
    cfg = RunConfig(method=method, variant=variant, seed=7, fleet=FleetConfig(servers=200))
    fields = parse_cell_name(cell_name(cfg))
    assert fields == {"method": method, "variant": variant, "servers": 200, "seed": 7, "digest": cfg.digest()}


def test_a_name_that_is_not_a_cell_is_named():
    with pytest.raises(ValueError, match="'results.csv': not a cell name"):
        parse_cell_name("results.csv")


def _plan(methods, servers, seeds, done, variant=""):
    at = f"@{variant}" if variant else ""
    rows = [{"cell": f"{m}{at}-M{s}-s{k}-0", "method": m, "variant": variant, "servers": s, "seed": k,
             "done": (m, s, k) in done} for m in methods for s in servers for k in seeds]
    return pd.DataFrame(rows)


def test_a_fleet_size_is_judged_once_every_method_has_enough_seeds():
    methods, seeds = ("drl", "ilets"), range(10)
    done = {(m, 50, k) for m in methods for k in seeds}                       # 50: complete
    done |= {("drl", 100, k) for k in range(MIN_JUDGED_SEEDS)}                 # 100: DRL only
    done |= {("ilets", 100, k) for k in range(MIN_JUDGED_SEEDS - 1)}
    done |= {(m, 200, k) for m in methods for k in range(MIN_JUDGED_SEEDS)}    # 200: just enough
    f = fleet_coverage(_plan(methods, (50, 100, 200), seeds, done)).set_index("servers")
    assert f["judged"].to_dict() == {50: True, 100: False, 200: True}
    assert f.loc[100, "min_method_seeds"] == MIN_JUDGED_SEEDS - 1 and f.loc[100, "needed_seeds"] == MIN_JUDGED_SEEDS
    assert f.loc[100, "done_cells"] == 2 * MIN_JUDGED_SEEDS - 1 and f.loc[100, "planned_cells"] == 20


def test_fewer_planned_seeds_than_the_minimum_need_them_all():
    done = {("drl", 50, 0), ("drl", 50, 1)}
    f = fleet_coverage(_plan(("drl",), (50,), range(3), done))
    assert f["needed_seeds"].iloc[0] == 3 and not f["judged"].iloc[0]
    f = fleet_coverage(_plan(("drl",), (50,), range(3), done | {("drl", 50, 2)}))
    assert f["judged"].iloc[0]


def test_coverage_reads_the_manifest_and_names_what_is_pending(tmp_path):
    plan = pd.concat([_plan(("drl", "drl+"), (50, 100, 200), range(5), set()),
                      _plan(("drl+",), (50,), range(5), set(), variant="no-critic")])
    (tmp_path / "grid.json").write_text(json.dumps({"cells": list(plan["cell"])}))
    done = {f"{m}-M50-s{k}-0" for m in ("drl", "drl+") for k in range(5)} | {"drl-M100-s0-0"}
    cells = coverage_table(tmp_path, done=done)
    assert len(cells) == len(plan) and cells["done"].sum() == len(done)
    cov = Coverage(cells, fleet_coverage(cells))
    assert cov.judged_servers() == (50,) and cov.planned("no-critic") and not cov.planned("upcoming")
    pending = cov.pending_text()
    assert numbers_in(pending) == ["100", "1", "10", "200"] and pending.endswith("200 servers (not yet run)")
    assert cov.pending_text("no-critic") == "50 servers (not yet run)"
    table = pd.DataFrame({"servers": [50, 100, 200]})
    assert cov.judge_mask(table).tolist() == [True, False, False]


def test_without_a_manifest_the_plan_is_what_the_folder_holds(tmp_path):
    cells = coverage_table(tmp_path, done={"drl-M50-s0-0"})
    assert cells["done"].all() and fleet_coverage(cells)["judged"].all()


def test_a_damaged_manifest_is_named(tmp_path):
    (tmp_path / "grid.json").write_text(json.dumps({"cells": ["not a cell"]}))
    with pytest.raises(ValueError, match=r"grid\.json: .*'cells': 'not a cell'"):
        coverage_table(tmp_path, done=set())
    (tmp_path / "grid.json").write_text(json.dumps({"other": []}))
    with pytest.raises(ValueError, match=r"grid\.json: .*field 'cells'"):
        coverage_table(tmp_path, done=set())
