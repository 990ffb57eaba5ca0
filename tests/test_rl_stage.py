"""The RL stage on trial: a heuristic teacher for OINPT, the AWR actor update, the held-out
yardsticks and diagnostics, and the headroom bounds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ilets.agents.env import StateSpec
from ilets.agents.oinpt import collect_demonstrations
from ilets.agents.policies import make_heuristic, schedule
from ilets.config import HEURISTICS, ConfigError, RunConfig, merge
from ilets.config.learning import HEURISTIC_TEACHERS
from ilets.simulator.cloud import make_fleet
from ilets.study.headroom import task_bounds
from ilets.study.profiles import load_profile
from ilets.workloads.workload import load_workload


def test_heuristic_teachers_are_heuristics():
    assert set(HEURISTIC_TEACHERS) <= set(HEURISTICS)


@pytest.mark.parametrize("teacher", ["earliest-finish", "min-energy"])
def test_a_heuristic_teacher_demonstrates_its_own_decisions(tiny_config, teacher):
    cfg = tiny_config
    wl, fleet = load_workload(cfg.workload, 0), make_fleet(cfg.fleet, 0)
    d = collect_demonstrations(wl.offline, fleet, teacher, cfg.experts, cfg.reward, 90, 0, StateSpec.of(cfg),
                               heldout=40)
    assert len(d) == 90 and len(d.heldout) == 40
    chosen: list[int] = []
    schedule(wl.offline.slice(0, 130), fleet, make_heuristic(teacher),
             on_decision=lambda j, cloud, task, s: chosen.append(s))
    np.testing.assert_array_equal(np.concatenate([d.acts, d.heldout.acts]), chosen)
    assert d.masks[np.arange(len(d)), d.acts].all()
    assert (d.experts == teacher).all()


def test_config_errors_name_the_field():
    with pytest.raises(ConfigError, match=r"run\.oinpt\.expert"):
        merge(RunConfig(), {"oinpt": {"expert": "fastest"}}, "run").validate("run")
    with pytest.raises(ConfigError, match=r"finetune\.actor_update"):
        merge(RunConfig(), {"finetune": {"actor_update": "sgd"}}, "run").validate("run")
    with pytest.raises(ConfigError, match=r"finetune\.checkpoint_references"):
        merge(RunConfig(), {"finetune": {"checkpoint_references": ["random"]}}, "run").validate("run")
    with pytest.raises(ConfigError, match=r"finetune\.awr_beta"):
        merge(RunConfig(), {"finetune": {"awr_beta": 0.0}}, "run").validate("run")
    assert merge(RunConfig(), {"oinpt": {"expert": "min-energy"}}, "run").validate("run").oinpt.expert == "min-energy"


def test_new_fields_at_their_defaults_leave_digests_alone():
    base = RunConfig(policy="per-server", observation="per-server")
    tuned = dataclasses.replace(base, finetune=dataclasses.replace(base.finetune, kl_coef=1.0))
    # a field of the digest's ADDED_FIELDS at its default is left out: the per-server cells keep their names
    same = dataclasses.replace(tuned, finetune=dataclasses.replace(tuned.finetune, diagnostics=False, awr_beta=1.0))
    assert same.digest() == tuned.digest()
    moved = dataclasses.replace(tuned, finetune=dataclasses.replace(tuned.finetune, actor_update="awr"))
    assert moved.digest() != tuned.digest()


def test_the_control_profile_declares_at_most_six_candidates_on_pilot_seeds():
    p = load_profile("rl-control")
    candidates = [v for v in p.variants if v.name.startswith("c")]
    assert 1 <= len(candidates) <= 6
    assert min(p.seeds) >= 1000  # pilot seeds only: the evaluation seeds are never tuned on
    for cell in p.cells():
        if cell.method == "drl+":
            assert cell.oinpt.expert in ("earliest-finish", "min-energy")
            assert "min-energy" in cell.finetune.checkpoint_references
    budgets = {(c.oinpt.max_demo_tasks, c.oinpt.bc_epochs, c.finetune.checkpoint_tasks) for c in p.cells()
               if c.method == "drl+"}
    assert len(budgets) == 1  # one budget for every candidate


def _fine_tuned(tiny_config, **finetune):
    from ilets.agents.methods import run_learner

    cfg = dataclasses.replace(
        tiny_config, method="drl+", policy="per-server", observation="per-server",
        oinpt=dataclasses.replace(tiny_config.oinpt, expert="earliest-finish"),
        finetune=dataclasses.replace(tiny_config.finetune, checkpoints=2, checkpoint_tasks=100,
                                     checkpoint_references=("min-energy",), diagnostics=True, **finetune)).validate()
    wl = load_workload(cfg.workload, cfg.seed)
    return run_learner(cfg, wl, make_fleet(cfg.fleet, cfg.fleet.seed))


def test_awr_moves_the_actor_and_the_run_records_its_yardsticks_and_diagnostics(tiny_config):
    out = _fine_tuned(tiny_config, actor_update="awr")
    for key in ("heldout_ref_min-energy_mean_reward", "heldout_mean_reward_start", "heldout_mean_reward_end",
                "heldout_success_rate_end", "final_differs_from_clone", "median_gradient_snr"):
        assert np.isfinite(out.extra[key]), key
    log = out.tables["finetune"]
    assert {"gradient_snr", "differs_from_clone", "advantage_std"} <= set(log.columns)
    assert log["kl_to_clone"].iloc[-1] > 0  # the actor moved away from the clone
    again = _fine_tuned(tiny_config, actor_update="awr")
    assert again.extra["heldout_mean_reward_end"] == out.extra["heldout_mean_reward_end"]  # deterministic


def test_the_bounds_hold_for_every_heuristic(tiny_config):
    cfg = tiny_config
    wl, fleet = load_workload(cfg.workload, 0), make_fleet(cfg.fleet, 0)
    bound = task_bounds(wl.online, fleet, cfg.reward)
    assert bound["tasks"] == len(wl.online)
    for name in ("earliest-finish", "min-energy", "greedy-cost", "least-loaded"):
        from ilets.agents.env import CloudSchedulingEnv
        from ilets.agents.episode import DecisionLog, drive

        env = CloudSchedulingEnv(dataclasses.replace(cfg, method=name), tasks=wl.online, fleet=fleet)
        env.observing = False
        env.reset()
        log = DecisionLog()
        drive(env, make_heuristic(name, reward=cfg.reward), log)
        assert log.final["avg_response_s"] >= bound["response_bound_s"] - 1e-9, name
        assert float(np.mean(log.reward)) <= bound["reward_bound"] + 1e-9, name


def test_a_record_made_before_the_new_finetune_fields_still_reads_as_the_default():
    from ilets.config import to_dict
    from ilets.config.run import drop_added_defaults

    plain = to_dict(RunConfig())
    old = {k: v for k, v in plain["finetune"].items()
           if k not in ("checkpoint_references", "actor_update", "awr_beta", "diagnostics")}
    assert "finetune" not in drop_added_defaults({**plain, "finetune": old})
    assert drop_added_defaults({**plain, "finetune": old}) == drop_added_defaults(plain)
    moved = {**old, "kl_coef": 1.0}
    assert drop_added_defaults({**plain, "finetune": moved})["finetune"] == moved


def _cell(variant, seed, start, end, target=-0.26, clone_resp=1.19, end_resp=1.2, target_resp=1.25,
          clone_succ=0.97, end_succ=0.96, target_succ=0.95):
    return {"method": "drl+", "variant": variant, "seed": seed, "servers": 50, "tasks": 259368,
            "heldout_mean_reward_start": start, "heldout_mean_reward_end": end,
            "heldout_ref_min-energy_mean_reward": target, "heldout_ref_earliest-finish_mean_reward": -0.275,
            "heldout_avg_response_s_start": clone_resp, "heldout_avg_response_s_end": end_resp,
            "heldout_ref_min-energy_avg_response_s": target_resp, "heldout_success_rate_start": clone_succ,
            "heldout_success_rate_end": end_succ, "heldout_ref_min-energy_success_rate": target_succ,
            "final_differs_from_clone": 0.1, "median_gradient_snr": 0.5, "final_explained_variance": 0.2,
            "final_kl_to_clone": 0.01, "final_entropy": 1.0}


def _pilot(moves):
    """Cells of every candidate on three seeds: clone at -0.28, target at -0.26 (a gap of 0.02)."""
    import pandas as pd

    from ilets.report import rl_stage as R

    return pd.DataFrame([_cell(v, s, -0.28, -0.28 + 0.02 * moves.get(v, 0.0), **({"end_resp": 2.0} if v == "c5-large"
                                                                             else {}))
                         for v in R.CANDIDATES for s in (1000, 1001, 1002)])


def test_the_gap_closed_and_the_rule():
    from ilets.report import rl_stage as R

    cells = R.control_cells(_pilot({"c2-bandit": 0.6, "c4-awr": 0.3, "c5-large": 0.9}))
    assert cells.loc[cells["variant"] == "c2-bandit", "gap_closed"].tolist() == pytest.approx([0.6] * 3)
    summary = R.summarise(cells)
    row = summary.set_index("variant")
    assert row.loc["c2-bandit", "seeds"] == 3 and row.loc["c2-bandit", "no_worse"]
    assert not row.loc["c5-large", "no_worse"]  # slower than both the clone and the target: the guard breaks
    assert R.choose(summary) == "c2-bandit"  # c5 closes more but breaks the guard
    v = R.verdict(summary, "c2-bandit")
    assert v is not None and v.passed and v.gap_closed == pytest.approx(0.6)
    assert not R.verdict(summary, "c4-awr").passed  # 30 % < 50 %
    assert R.choose(R.summarise(R.control_cells(_pilot({})))) in R.CANDIDATES
    nothing = summary.assign(no_worse=False)
    assert R.choose(nothing) == R.STATUS_QUO


def test_the_chapter_counts_its_candidates_and_pilot_seeds_from_the_pilot():
    from ilets.report import rl_stage as R
    from ilets.report.stats.prose import count_text

    cells = R.control_cells(_pilot({"c2-bandit": 0.6}))
    report = R.RLStageReport({}, R.summarise(cells), R.summarise(cells), None, None, None, None, cells)
    counts = R.design_counts(report)
    assert counts["candidates"] == count_text(len(R.CANDIDATES))
    assert counts["pilot_seeds"] == count_text(int(cells["seed"].nunique())) == "three"
    assert [count_text(n) for n in (0, 6, 12)] == ["no", "six", "12"]


def test_the_guard_reads_between_the_clone_and_the_target():
    import pandas as pd

    from ilets.report.rl_stage import no_worse

    base = {"clone_response_s": 1.19, "target_response_s": 1.25, "clone_success": 0.97, "target_success": 0.95}
    assert no_worse(pd.Series({**base, "end_response_s": 1.25, "end_success": 0.95}))  # equal to the target
    assert not no_worse(pd.Series({**base, "end_response_s": 1.26, "end_success": 0.96}))
    assert not no_worse(pd.Series({**base, "end_response_s": 1.2, "end_success": 0.94}))


def test_the_target_clone_check_and_the_block():
    import pandas as pd

    from ilets.report import rl_stage as R

    cells = R.control_cells(pd.DataFrame([_cell("me-clone", s, -0.2601, -0.2601, clone_resp=1.251)
                                          for s in (0, 1)]))
    check = R.target_clone_check(R.summarise(cells))
    assert check is not None and check["matches"] and check["reward_distance"] == pytest.approx(0.0001 / 0.26, rel=1e-3)
    empty = R.RLStageReport({}, pd.DataFrame(), pd.DataFrame(), None, None, None, None, pd.DataFrame())
    assert "no verdict yet" in R.finding(empty)
    summary = R.summarise(R.control_cells(_pilot({"c2-bandit": 0.2})))
    failed = R.RLStageReport({}, summary, summary, "c2-bandit", R.verdict(summary, "c2-bandit"), None, None, cells)
    assert "fails" in R.finding(failed) and "20%" in R.block(failed)


def test_the_along_pass_shares_read_each_cells_checkpoints(tmp_path):
    import pandas as pd

    from ilets.report import rl_stage as R

    cells = R.control_cells(pd.DataFrame([_cell("c2-bandit", 1000, -0.28, -0.27)]))
    folder = tmp_path / "cells" / "drl+@c2-bandit-M50-s1000-abcdef012345"
    folder.mkdir(parents=True)
    pd.DataFrame({"decisions": [0, 100, 200], "mean_reward": [-0.28, -0.27, -0.26]}).to_csv(
        folder / "checkpoints.csv", index=False)
    table = R.along_pass(tmp_path, cells)
    assert table["share"].tolist() == pytest.approx([0.0, 0.5, 1.0])
    assert R.steps_to_half(tmp_path, "c2-bandit", cells) == 100
    R.plot_along_pass(table)


def test_the_headroom_table_measures_the_room_from_the_clone():
    import pandas as pd

    from ilets.report.rl_stage import headroom_table

    paper = pd.DataFrame([{"method": m, "variant": "", "servers": 50, "seed": s, "mean_reward": r, "avg_response_s": t}
                          for m, r, t in (("min-energy", -0.37, 3.2), ("earliest-finish", -0.39, 3.3))
                          for s in (0, 1)])
    learners = pd.DataFrame([{"method": "drl+", "variant": "", "servers": 50, "seed": s, "mean_reward": -0.4,
                              "avg_response_s": 3.6} for s in (0, 1, 2)])
    bounds = pd.DataFrame([{"servers": 50, "seed": s, "reward_bound": -0.15, "response_bound_s": 1.0}
                           for s in (0, 1)])
    t = headroom_table(paper, learners, bounds, 50).set_index("method")
    assert t.loc["min-energy", "reward_room"] == pytest.approx(0.03)
    assert t.loc["min-energy", "response_room_s"] == pytest.approx(0.4)
    assert t.loc["bound", "reward_room"] == pytest.approx(0.25) and t.loc["drl+", "seeds"] == 2  # shared seeds only


def test_the_claims_table_carries_the_rl_stage_row():
    import pandas as pd

    from ilets.report import claims_table as C
    from ilets.report import rl_stage as R

    summary = R.summarise(R.control_cells(_pilot({"c2-bandit": 0.2})))
    report = R.RLStageReport({}, summary, summary, "c2-bandit", R.verdict(summary, "c2-bandit"), None, None,
                             pd.DataFrame())
    row = C._rl_stage_row(report)
    assert row.verdict == "fails its control" and row.per_server.startswith("20% of the gap")
    waiting = C._rl_stage_row(R.RLStageReport({}, summary, pd.DataFrame(), None, None, None, None, pd.DataFrame()))
    assert waiting.verdict == C.NO_RESULTS


def test_the_diagnosis_reads_the_pilots_numbers():
    import pandas as pd

    from ilets.report import rl_stage as R

    summary = R.summarise(R.control_cells(_pilot({"c2-bandit": 0.2})))
    report = R.RLStageReport({}, summary, pd.DataFrame(), None, None,
                             {"reward_distance": 0.001, "response_distance": 0.004, "matches": True}, None,
                             pd.DataFrame())
    text = R.diagnosis(report)
    assert "0.020 above" in text and "0.50 to 0.50" in text and "0.1%" in text
    assert R.diagnosis(R.RLStageReport({}, pd.DataFrame(), pd.DataFrame(), None, None, None, None,
                                       pd.DataFrame())) == ""


def test_the_evaluation_profile_runs_the_pilots_choice_with_its_settings():
    import dataclasses

    from ilets.report import rl_stage as R
    from ilets.study.results import load_metrics, repo_root

    pilot, evaluation = load_profile("rl-control"), load_profile("rl-control-eval")
    shipped = repo_root() / R.PILOT_FOLDER
    chosen = R.choose(R.summarise(R.control_cells(load_metrics(shipped, variant=None))))
    assert {v.name for v in evaluation.variants} == {chosen, R.TARGET_CLONE}
    assert not set(evaluation.seeds) & set(pilot.seeds)  # evaluation seeds were never tuned on
    by_variant = {c.variant: c for c in pilot.cells() if c.method == "drl+" and c.seed == pilot.seeds[0]}
    for cell in evaluation.cells():
        if cell.method == "drl+":
            assert dataclasses.replace(cell, seed=pilot.seeds[0]).digest() == by_variant[cell.variant].digest()


def test_readme_rl_stage_block_is_generated_from_the_shipped_results():
    # after shipping: `python -m ilets.report.rl_stage --write README.md` (make readme)
    from ilets.report import rl_stage as R
    from ilets.study.results import repo_root

    readme = (repo_root() / "README.md").read_text()
    start, end = R.README_MARKERS
    assert start in readme and end in readme, "README lacks the rl-stage markers"
    block = readme.split(start, 1)[1].split(end, 1)[0]
    assert block.strip("\n") == R.readme_block().strip("\n")
