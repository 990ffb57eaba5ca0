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
