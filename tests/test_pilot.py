"""The pilot's selection rule (ilets.study.pilot) on hand-made results, and its seed hygiene."""

from __future__ import annotations

import pandas as pd
import pytest

from ilets.study.pilot import MIN_GAIN, PILOT_SEEDS, candidates, chosen_overrides, objective, select
from ilets.study.profiles import BUILTIN, Profile, Variant, load_profile


def profile() -> Profile:
    return Profile(name="p", methods=("drl", "earliest-finish"), servers=(50,), seeds=(1000, 1001),
                   variants=(Variant("lr-hi", methods=("drl",), run={"ppo": {"learning_rate": 1e-3}}),
                             Variant("lr-lo", methods=("drl",), run={"ppo": {"learning_rate": 1e-4}}),
                             Variant("ent", methods=("drl",), run={"ppo": {"ent_coef": 0.01}})))


def rows(method, variant, responses, energies, seeds=(1000, 1001)):
    return [{"method": method, "variant": variant, "servers": 50, "seed": s, "avg_response_s": r, "energy_kwh": e}
            for s, r, e in zip(seeds, responses, energies)]


def metrics(lr_hi=(1.0, 1.0), ent=(2.0, 2.0)) -> pd.DataFrame:
    return pd.DataFrame(rows("earliest-finish", "", [2.0, 4.0], [10.0, 10.0])
                        + rows("drl", "", [4.0, 8.0], [10.0, 10.0])        # J = 0.3 + 0.7 * 2 = 1.7
                        + rows("drl", "lr-hi", [2 * lr_hi[0], 4 * lr_hi[1]], [10.0, 10.0])
                        + rows("drl", "lr-lo", [6.0, 12.0], [10.0, 10.0])  # J = 0.3 + 0.7 * 3 = 2.4
                        + rows("drl", "ent", [2 * ent[0], 4 * ent[1]], [10.0, 10.0]))


def test_objective_is_normalised_by_the_yardstick_on_the_same_seed():
    scored = objective(metrics(), theta=0.3)
    drl = scored[(scored["method"] == "drl") & (scored["variant"] == "")]
    assert drl["J"].tolist() == pytest.approx([1.7, 1.7])
    ef = scored[scored["method"] == "earliest-finish"]
    assert ef["J"].tolist() == pytest.approx([1.0, 1.0])


def test_the_best_value_is_chosen_when_it_gains_enough():
    table = select(profile(), metrics(lr_hi=(1.0, 1.0)))  # lr-hi: J = 0.3 + 0.7 = 1.0 < 1.7
    lr = table[table["setting"] == "ppo.learning_rate"].set_index("variant")
    assert lr.loc["lr-hi", "chosen"] and not lr.loc["", "chosen"] and not lr.loc["lr-lo", "chosen"]
    assert lr.loc["lr-hi", "gain_vs_default"] == pytest.approx((1.7 - 1.0) / 1.7)
    assert chosen_overrides(table) == {"ppo.learning_rate": 1e-3}


def test_a_gain_below_the_threshold_keeps_the_default():
    # ent: J just under the default's, by less than MIN_GAIN
    factor = (1.7 * (1 - MIN_GAIN / 2) - 0.3) / 0.7 / 1.0  # response ratio giving that J
    table = select(profile(), metrics(ent=(factor, factor)))
    ent = table[table["setting"] == "ppo.ent_coef"].set_index("variant")
    assert ent.loc["", "chosen"] and not ent.loc["ent", "chosen"]
    assert 0 < ent.loc["ent", "gain_vs_default"] < MIN_GAIN


def test_a_setting_with_an_unfinished_cell_is_undecided_and_keeps_its_default():
    m = metrics(lr_hi=(1.0, 1.0))
    m = m[~((m["variant"] == "lr-lo") & (m["seed"] == 1001))]  # one cell of an alternative missing
    lr = select(profile(), m).query("setting == 'ppo.learning_rate'").set_index("variant")
    assert not lr["decided"].any()
    assert lr.loc["", "chosen"] and not lr.loc["lr-hi", "chosen"]
    assert lr.loc["lr-lo", "cells"] == 1 and lr.loc["lr-lo", "expected"] == 2


def test_candidates_list_each_default_once():
    cs = candidates(profile())
    assert [(c.setting, c.variant) for c in cs] == [("ppo.learning_rate", ""), ("ppo.learning_rate", "lr-hi"),
                                                    ("ppo.learning_rate", "lr-lo"), ("ppo.ent_coef", ""),
                                                    ("ppo.ent_coef", "ent")]
    assert cs[0].value == profile().run.ppo.learning_rate


def test_a_variant_changing_two_settings_is_refused():
    bad = Profile(name="p", methods=("drl",), variants=(Variant("two", methods=("drl",),
                                                                run={"ppo": {"n_steps": 64, "n_epochs": 2}}),))
    with pytest.raises(ValueError, match="exactly one setting"):
        candidates(bad)


def test_missing_yardstick_is_named():
    m = metrics()
    with pytest.raises(ValueError, match="earliest-finish"):
        objective(m[m["method"] != "earliest-finish"], theta=0.3)


def test_evaluation_profiles_never_use_pilot_seeds_and_the_pilot_only_them():
    pilots = {"rl-control"}  # the RL stage's pilot (its verdict: rl-control-eval, on evaluation seeds)
    for name in BUILTIN:
        p = load_profile(name)
        seeds = set(p.seeds).union(*(set(v.seeds) for v in p.variants))
        if name in pilots:
            assert seeds <= set(PILOT_SEEDS), name
            continue
        if name.startswith("pilot"):
            assert seeds <= set(PILOT_SEEDS), name
        if name == "pilot":
            assert {c.setting for c in candidates(p)} >= {"reward.wait_form", "ppo.learning_rate", "ppo.n_steps",
                                                          "ppo.n_epochs", "ppo.ent_coef", "oinpt.max_demo_tasks",
                                                          "oinpt.bc_epochs", "oail.learning_rate"}
        elif not name.startswith("pilot"):
            assert not seeds & set(PILOT_SEEDS), name


def test_methods_yaml_holds_the_pilots_choices():
    """The shipped pilot's chosen values are the defaults every profile uses."""
    from pathlib import Path

    from ilets.config import to_dict
    from ilets.study.pilot import SHIPPED, report
    from ilets.study.profiles import method_defaults

    folder = Path(__file__).resolve().parents[1] / SHIPPED
    if not (folder / "store" / "metrics.parquet").is_file():
        pytest.skip("no shipped pilot results in this checkout")
    rep = report(folder)
    defaults = to_dict(method_defaults())
    for setting, value in rep.changes.items():
        node = defaults
        for part in setting.split("."):
            node = node[part]
        assert node == value, setting


def test_report_reads_a_folder_and_says_what_was_decided(tmp_path):
    import json

    from ilets.study.pilot import report

    m = metrics(lr_hi=(1.0, 1.0))
    m = m[~((m["variant"] == "ent") & (m["seed"] == 1001))]  # ent-0.01 incomplete
    (tmp_path / "store").mkdir()
    m.to_parquet(tmp_path / "store" / "metrics.parquet")
    for i, row in m.reset_index(drop=True).iterrows():
        cell = tmp_path / "cells" / f"c{i}"
        cell.mkdir(parents=True)
        (cell / "metrics.json").write_text(json.dumps({"cpu_s": 36.0, "wall_s": 40.0}))
        (cell / "system.json").write_text(json.dumps({"commit": "a" * 40, "dirty": False, "cpu_model": "cpu",
                                                      "cores": 2, "started_utc": "2026-12-01T09:00:00+00:00"}))
    rep = report(tmp_path, profile())
    assert rep.decided == ["ppo.learning_rate"] and rep.undecided == ["ppo.ent_coef"]
    assert rep.changes == {"ppo.learning_rate": 1e-3}
    assert rep.cells == len(m) and rep.expected == len(profile().cells())
    assert "`ppo.learning_rate` to 0.001" in rep.summary and "`ppo.ent_coef`" in rep.summary
    assert f"{len(m)} cells" in rep.provenance and f"{len(m) * 36 / 3600:.2f} CPU-hours" in rep.provenance
    assert set(rep.table["chosen"]) == {"chosen", ""}


def test_the_joint_pilots_candidates_are_the_declared_draws():
    from ilets.study.pilot import JOINT_BASELINE, SEARCH_SPACE, random_search
    from ilets.study.profiles import load_profile

    profile = load_profile("pilot-per-server")
    variants = {v.name: v.run for v in profile.variants}
    assert variants[JOINT_BASELINE] == {}
    for i, draw in enumerate(random_search(SEARCH_SPACE, 5, seed=2026), start=1):
        run = variants[f"rs-{i:02d}"]
        assert {f"{a}.{b}": v for a, inner in run.items() for b, v in inner.items()} == draw
    assert set(profile.seeds) <= set(PILOT_SEEDS)


def test_the_joint_rule_keeps_the_baseline_unless_a_candidate_earns_its_place():
    import pandas as pd

    from ilets.study.pilot import select_joint

    def cells(variant, response, seeds=(1000, 1001, 1002)):
        return [{"method": "drl+" if variant else "earliest-finish", "variant": variant, "seed": s, "servers": 50,
                 "energy_kwh": 1.0, "avg_response_s": response} for s in seeds]

    base = cells("", 1.0) + cells("rs-00", 2.0)
    close = pd.DataFrame(base + cells("rs-01", 1.99))
    assert select_joint(close, 0.3).set_index("variant")["chosen"].to_dict() == {"rs-00": True, "rs-01": False}
    better = pd.DataFrame(base + cells("rs-01", 1.5) + cells("rs-02", 1.2, seeds=(1000,)))
    table = select_joint(better, 0.3).set_index("variant")
    # rs-02 is incomplete: rs-01 leads, nothing is chosen until every candidate has its cells
    assert table["leading"].to_dict() == {"rs-00": False, "rs-01": True, "rs-02": False}
    assert not table["chosen"].any()
    done = pd.DataFrame(base + cells("rs-01", 1.5) + cells("rs-02", 1.8))
    assert select_joint(done, 0.3).set_index("variant")["chosen"].to_dict() == {"rs-00": False, "rs-01": True,
                                                                                   "rs-02": False}
    unfinished = pd.DataFrame(cells("", 1.0) + cells("rs-00", 2.0, seeds=(1000,)) + cells("rs-01", 1.0))
    assert not select_joint(unfinished, 0.3)["chosen"].any()


def test_the_joint_report_without_results_says_so(tmp_path):
    from ilets.study.pilot import joint_report

    rep = joint_report(tmp_path)
    assert rep.chosen is None and "no results" in rep.summary


def _joint_cells(variant, response, start=-0.25, ends=(-0.25, -0.25, -0.25), seeds=(1000, 1001, 1002)):
    return [{"method": "drl+" if variant else "earliest-finish", "variant": variant, "seed": s, "servers": 50,
             "energy_kwh": 1.0, "avg_response_s": response, "heldout_mean_reward_start": start,
             "heldout_mean_reward_end": end} for s, end in zip(seeds, ends)]


def test_a_candidate_keeps_its_clone_only_when_its_whole_interval_clears_the_margin():
    import pandas as pd

    from ilets.study.pilot import clone_kept

    cells = pd.DataFrame(_joint_cells("rs-01", 1.0, ends=(-0.2505, -0.2495, -0.2500))      # +-0.2 %: kept
                         + _joint_cells("rs-02", 1.0, ends=(-0.2530, -0.2531, -0.2529))    # -1.2 % every seed
                         + _joint_cells("r2-00", 1.0, ends=(-0.2400, -0.2600, -0.2500)))   # mean 0, wide
    table = clone_kept(cells).set_index("variant")
    assert table["keeps"].to_dict() == {"r2-00": False, "rs-01": True, "rs-02": False}
    assert abs(table.loc["rs-02", "change"] + 0.012) < 1e-9
    # t with 2 degrees of freedom: 4.303 * sd / sqrt(3)
    assert abs(table.loc["rs-01", "change_high"] - 4.3027 * 0.002 / 3 ** 0.5) < 1e-5


def test_round_two_chooses_the_lowest_j_among_candidates_that_keep_their_clone():
    import pandas as pd

    from ilets.study.pilot import select_round_two

    base = _joint_cells("", 1.0)
    drifting = _joint_cells("rs-05", 1.1, ends=(-0.254, -0.2541, -0.2539))   # best J, loses 1.6 %
    keeping = _joint_cells("r2-01", 1.3, ends=(-0.2501, -0.2499, -0.25))
    worse = _joint_cells("rs-01", 1.4)
    table = select_round_two(pd.DataFrame(base + drifting + keeping + worse), 0.3, expected=3,
                             candidates=3).set_index("variant")
    assert table["chosen"].to_dict() == {"r2-01": True, "rs-01": False, "rs-05": False}
    assert table.loc["r2-01", "round"] == 2 and table.loc["rs-05", "round"] == 1
    # one candidate short of its cells: a leader, but no choice yet
    short = select_round_two(pd.DataFrame(base + drifting + keeping + worse[:2]), 0.3, expected=3, candidates=3)
    assert short["leading"].any() and not short["chosen"].any()
    # nobody keeps the clone: nothing leads, nothing is chosen
    none = select_round_two(pd.DataFrame(base + drifting), 0.3, expected=3, candidates=1)
    assert not none["leading"].any() and not none["chosen"].any()


def test_the_per_server_grid_runs_the_per_server_pilots_choice():
    """per-server.yaml's learner settings are those of the candidate the shipped pilot chose, and
    its cells are the faithful grid's (same methods, fleets, seeds, workload)."""
    from pathlib import Path

    from ilets.config import to_dict
    from ilets.study.pilot import joint_report

    grid, pilot, paper = load_profile("per-server"), load_profile("pilot-per-server"), load_profile("paper")
    assert (grid.run.policy, grid.run.observation) == ("per-server", "per-server")
    assert set(grid.methods) == {"drl", "drl+", "ilets-", "ilets"}
    assert (grid.servers, grid.seeds, grid.run.workload) == (paper.servers, paper.seeds, paper.run.workload)
    assert grid.run.fleet == paper.run.fleet
    assert grid.run.oinpt == pilot.run.oinpt
    folder = Path(__file__).resolve().parents[1] / "shipped" / "pilot-per-server"
    if not (folder / "store" / "metrics.parquet").is_file():
        pytest.skip("no shipped per-server pilot in this checkout")
    chosen = joint_report(folder).chosen
    assert chosen is not None, "the shipped per-server pilot chose nothing"
    settings = {v.name: v.run for v in pilot.variants}[chosen]
    mine = to_dict(grid.run)
    for section, values in settings.items():
        for key, value in values.items():
            assert mine[section][key] == value, f"{section}.{key}"
