"""The grid-command pipeline (demonstrate, clone, fine-tune, correct) and its grid profiles, on
tiny fleets and the smoke workload (~520 tasks a segment, a few hundred PPO steps). The grid
itself runs through the study's runner: tests/test_scenario.py."""

from __future__ import annotations


import numpy as np
import pytest
import yaml

from ilets.config import ConfigError
from ilets.gridcommand import clone_cache as CC, cloning as CL, episodes as EP, metrics as GM, online as ON, pipeline as P
from ilets.gridcommand import pipeline_config as PC, teacher as TE
from ilets.gridcommand.config import load_gridcommand_config
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.study import scenario as G

#: the smoke scenario with a small, fast learner (results mean nothing; mechanics do)
SCENARIO = {"regime": "none", "slot_s": 0.1, "defer_s": 0.3,
            "run": {"workload": {"scale": 0.002}, "fleet": {"servers": 6},
                    "ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1, "hidden": 16},
                    "oinpt": {"bc_epochs": 2, "critic_epochs": 2}}}


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    return path


def grid_profile(tmp_path, scenario, **fields):
    data = {"name": "tiny", "scale": "smoke", "scenario": str(scenario), "methods": ["rule", "bc", "bc+ppo+oail"],
            "servers": [6], "seeds": [0, 1], "train_regime": "shallow-long", "eval_regime": "deep-short",
            "pipeline": {"every": 40, "window": 20}, **fields}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_demonstrations_are_the_teachers_valid_decisions(scenario):
    cfg = EP.training_config(load_gridcommand_config(scenario), "deep-short", 6, 0)
    env = GridCommandEnv(cfg)
    demos = TE.demonstrate(env, "rule", max_decisions=200)
    assert len(demos) == 200 and demos.obs.shape == (200, env.observation_space.shape[0])
    assert demos.masks.shape == (200, env.action_space.n)
    assert demos.masks[np.arange(200), demos.acts].all()  # every action allowed where taken
    assert (demos.experts == "rule").all() and np.isfinite(demos.rewards).all()


def test_training_and_scored_episodes_differ_in_segment_and_commands(scenario):
    base = load_gridcommand_config(scenario)
    tr, ev = EP.training_config(base, "deep-short", 6, 3), EP.evaluation_config(base, "deep-short", 6, 3)
    assert (tr.segment, ev.segment) == ("offline", "online")
    assert tr.command_seed == 3 + EP.TRAIN_COMMAND_OFFSET and ev.command_seed == -1
    assert tr.run.fleet.servers == ev.run.fleet.servers == 6 and tr.commands == ()
    a, b = GridCommandEnv(tr), GridCommandEnv(ev)
    rel = lambda env: [(c.start_s - env.window[0], c.duration_s) for c in env.schedule]  # noqa: E731
    assert rel(a) != rel(b)  # not the same pattern shifted by one window
    with pytest.raises(ValueError, match="regime"):
        EP.scenario_config(base, "nope", 6, 0, "online")


def test_bc_raises_agreement_with_the_teacher(scenario):
    cfg = EP.training_config(load_gridcommand_config(scenario, run={"oinpt": {"bc_epochs": 15}}), "deep-short", 6, 0)
    state, info = CL.clone(cfg, PC.PipelineConfig(teacher="rule"), 0)
    assert info["bc_agreement_after"] > info["bc_agreement_before"]
    assert info["critic_mse_after"] < info["critic_mse_before"]
    assert "action_net.weight" in state


def test_same_seed_same_metrics_and_another_seed_differs(scenario):
    base = load_gridcommand_config(scenario)
    pipe = PC.PipelineConfig(every=40, window=20)
    one = P.run_method("bc+ppo+oail", base, 6, 0, "shallow-long", ("deep-short",), pipe)
    two = P.run_method("bc+ppo+oail", base, 6, 0, "shallow-long", ("deep-short",), pipe)
    keys = ("tracking_mae_w", "in_band_fraction", "misses_caused", "energy_kwh", "mean_reward", "deferrals")
    assert [one["scores"]["deep-short"][k] for k in keys] == [two["scores"]["deep-short"][k] for k in keys]
    assert one["train"]["oail_applied[deep-short]"] > 0
    assert one["train"]["oail_updates[deep-short]"] == one["train"]["oail_applied[deep-short]"]
    other = P.run_method("ppo", base, 6, 1, "shallow-long", ("deep-short",), pipe)
    assert other["scores"]["deep-short"]["mean_reward"] != one["scores"]["deep-short"]["mean_reward"]


def test_online_pass_scores_the_pass_it_learns_in_and_corrections_change_it(scenario):
    base = load_gridcommand_config(scenario)
    pipe = PC.PipelineConfig(every=40, window=20, weight=5.0)
    state, _ = CL.clone(EP.training_config(base, "shallow-long", 6, 0), pipe, 0)
    cfg = EP.evaluation_config(base, "shallow-long", 6, 0)
    m1, i1, plain = ON.online_pass("bc+ppo", cfg, pipe, 0, state)
    m2, i2, corrected = ON.online_pass("bc+ppo+oail", cfg, pipe, 0, state)
    n_tasks = len(GridCommandEnv(cfg).tasks)
    assert m1["tasks"] == n_tasks and m1["decisions"] == n_tasks + m1["deferrals"]  # exactly one pass
    assert i1["ppo_timesteps"] == m1["decisions"]
    w = lambda model: model.policy.action_net.weight.detach().numpy()  # noqa: E731
    assert not np.allclose(w(plain), w(corrected))
    assert i2["oail_applied"] > 0 and 0 <= i2["oail_agreement"] <= 1
    with pytest.raises(ValueError, match="needs the cloned policy"):
        ON.online_pass("bc+ppo", cfg, pipe, 0)


def test_bad_method_and_pipeline_values_are_named():
    with pytest.raises(ValueError, match="method: unknown 'dqn'"):
        PC.check_method("dqn")
    with pytest.raises(ConfigError, match="pipeline.teacher"):
        PC.PipelineConfig(teacher="ga").validate()
    with pytest.raises(ConfigError, match="pipeline.window"):
        PC.PipelineConfig(every=10, window=20).validate()
    with pytest.raises(ConfigError, match="pipeline.weight"):
        PC.PipelineConfig(weight=0).validate()


# --- the grid ------------------------------------------------------------------------------

def test_shipped_grid_profiles_load():
    quick = G.load_profile("quick")
    assert quick.scale == "quick" and set(quick.servers) == {50, 200} and len(quick.seeds) >= 5
    # every method but the hindsight bound, which has its own grid, and the thermostat that puts
    # deadlines second, which runs in the full-window sleep grid only
    assert quick.train_regime != quick.eval_regime
    assert set(quick.methods) == set(PC.METHODS) - {"hindsight", "thermostat-firm", "cap"}
    assert G.load_profile("gridcommand-grid-smoke").scale == "smoke"


@pytest.mark.parametrize("fields, match", [
    ({"methodz": ["rule"]}, r"unknown key\(s\) \['methodz'\]"),
    ({"methods": ["rule", "dqn"]}, r"methods\[1\]: expected one of \(.*\), got 'dqn'"),
    ({"servers": [0]}, r"\.servers\[0\]: expected a fleet size >= 1"),
    ({"seeds": [0, 0]}, r"\.seeds: expected distinct values"),
    ({"eval_regime": "deep"}, r"\.eval_regime: expected one of"),
    ({"oracle_seeds": [7]}, r"\.oracle_seeds: \[7\]"),
    ({"scale": "huge"}, r"\.scale: expected"),
    ({"pipeline": {"teachr": "rule"}}, r"pipeline: unknown key\(s\) \['teachr'\]"),
    ({"pipeline": {"every": "often"}}, r"pipeline\.every: expected an integer"),
])
def test_bad_grid_profile_keys_are_named(tmp_path, scenario, fields, match):
    path = grid_profile(tmp_path, scenario, **fields)
    with pytest.raises(ConfigError, match=match):
        G.load_profile(path)


def test_a_bad_scenario_profile_fails_before_any_cell(tmp_path):
    bad = tmp_path / "scenario.yaml"
    bad.write_text(yaml.safe_dump({"slot_s": -1.0}))
    with pytest.raises(ConfigError, match="slot_s"):
        G.load_profile(grid_profile(tmp_path, bad))


def test_oracle_runs_on_its_seeds_only(tmp_path, scenario):
    p = G.load_profile(grid_profile(tmp_path, scenario, methods=["rule", "oracle"], seeds=[0, 1, 2],
                                         oracle_seeds=[1]))
    assert [G.cell_name(c) for c in p.cells()] == ["rule-M6-s0", "rule-M6-s1", "oracle-M6-s1", "rule-M6-s2"]
    assert p.expert_options("oracle") == {"window": p.oracle_window, "time_limit": None,
                                          "node_limit": p.oracle_node_limit}


@pytest.mark.parametrize("limits, match", [
    ({"oracle_node_limit": 0}, "oracle_node_limit: expected an integer >= 1"),
    ({"oracle_time_limit": -1.0}, "oracle_time_limit: expected a number of seconds > 0"),
    ({"oracle_node_limit": None, "oracle_time_limit": None}, "both null"),
])
def test_the_oracle_budget_is_checked(tmp_path, scenario, limits, match):
    with pytest.raises(ConfigError, match=match):
        G.load_profile(grid_profile(tmp_path, scenario, **limits))


def test_a_cached_clone_is_the_fresh_one(tmp_path, scenario):
    import torch as th

    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    pipe = PC.PipelineConfig()
    fresh, _ = CL.clone(cfg, pipe, 0)
    first, info1 = CC.cached_clone(cfg, pipe, 0, tmp_path)
    second, info2 = CC.cached_clone(cfg, pipe, 0, tmp_path)
    assert "clone_cached" not in info1 and info2["clone_cached"] is True
    assert all(th.equal(fresh[k], second[k]) and th.equal(first[k], second[k]) for k in fresh)
    assert len(list(tmp_path.glob("clone-*.pt"))) == 1
    other = CC.clone_key(cfg, PC.PipelineConfig(teacher="rule"), 0)
    assert other != CC.clone_key(cfg, pipe, 0) != CC.clone_key(cfg, pipe, 1)
    cache = next(tmp_path.glob("clone-*.pt"))
    cache.write_bytes(b"cut short")
    with pytest.warns(UserWarning, match=f"{cache.name}: damaged clone cache"):
        again, info3 = CC.cached_clone(cfg, pipe, 0, tmp_path)  # a damaged file is made again
    assert "clone_cached" not in info3 and all(th.equal(fresh[k], again[k]) for k in fresh)
    assert {k: v for k, v in info2.items() if k != "clone_cached"} == pytest.approx(info1)


def test_a_clone_another_process_is_making_is_waited_for_or_left_busy(tmp_path, scenario):
    import threading

    import torch as th
    from filelock import FileLock

    from ilets.files import HeldByAnother
    from ilets.study.run import BUSY, RAN, run_claimed

    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    pipe = PC.PipelineConfig()
    path = tmp_path / f"clone-{CC.clone_key(cfg, pipe, 0)}.pt"
    fresh, _ = CL.clone(cfg, pipe, 0)
    held, finish = threading.Event(), threading.Event()

    def other() -> None:  # another process making this clone: it holds the lock, writes, lets go
        with FileLock(str(path) + ".lock"):
            held.set()
            finish.wait(60)
            th.save({"state": fresh, "info_json": "{}"}, path)

    maker = threading.Thread(target=other)
    maker.start()
    held.wait(60)
    try:
        with pytest.raises(HeldByAnother, match=f"{path.name}.lock: held by another process"):
            CC.cached_clone(cfg, pipe, 0, tmp_path, wait=False)
        assert not path.exists()
        # its cell is busy, not failed; asked to wait, a cell's compute waits itself, so the error is raised
        make = lambda: CC.cached_clone(cfg, pipe, 0, tmp_path, wait=False)  # noqa: E731
        assert run_claimed(tmp_path / "grid", "bc-M6-s0", lambda: False, make, wait=False) == BUSY
        with pytest.raises(HeldByAnother):
            run_claimed(tmp_path / "grid", "bc-M6-s0", lambda: False, make, wait=True)
        threading.Timer(0.5, finish.set).start()
        # the waiting one reads the other's clone when it lets go, and does not make it again
        waited, info = CC.cached_clone(cfg, pipe, 0, tmp_path)
    finally:
        finish.set()
        maker.join()
    assert info == {"clone_cached": True} and all(th.equal(fresh[k], waited[k]) for k in fresh)
    assert run_claimed(tmp_path / "grid", "bc-M6-s0", lambda: False, make, wait=False) == RAN


class _Payload:
    """An object whose unpickling would run code: the cache must never unpickle it."""

    def __reduce__(self):
        return (print, ("ran code from the cache",))


def test_the_clone_cache_never_unpickles_objects(tmp_path, scenario, capsys):
    import torch as th

    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    pipe = PC.PipelineConfig()
    path = tmp_path / f"clone-{CC.clone_key(cfg, pipe, 0)}.pt"
    th.save({"state": {}, "info_json": "{}", "payload": _Payload()}, path)
    with pytest.warns(UserWarning, match="damaged clone cache"):
        state, info = CC.cached_clone(cfg, pipe, 0, tmp_path)
    assert "ran code from the cache" not in capsys.readouterr().out
    assert "clone_cached" not in info and state


def test_a_grid_cache_of_envelopes_changes_no_number(tmp_path, scenario, monkeypatch):
    """Every episode a method makes or scores (training, scored, held out) reads its envelope
    from the cache the second time: the same numbers as computing it."""
    base = load_gridcommand_config(scenario)
    pipe = PC.PipelineConfig(every=40, window=20, heldout=True, train_episodes=2)
    host = lambda out: {part: {k: v for k, v in d.items() if not G.host_key(k)}  # noqa: E731
                        for part, d in (("train", out["train"]), *out["scores"].items())}
    fresh = {}
    for method in ("rule", "bc+ppo"):
        fresh[method] = host(P.run_method(method, base, 6, 0, "shallow-long", ("shallow-long", "deep-short"), pipe))
        cold = P.run_method(method, base, 6, 0, "shallow-long", ("shallow-long", "deep-short"), pipe,
                            cache_dir=tmp_path / method)
        assert host(cold) == fresh[method]
        assert len(list((tmp_path / method).glob("reach-*.json"))) == (3 if method == "rule" else 5)
    import ilets.gridcommand.envelope as E  # sized_schedule measures the reach there

    def no_runs(*args, **kwargs):
        raise AssertionError("an envelope was computed again")

    monkeypatch.setattr(E, "reach", no_runs)
    for method in ("rule", "bc+ppo"):  # bc+ppo: its clone's training episodes too (clone cache cleared)
        for clone in (tmp_path / method).glob("clone-*.pt"):
            clone.unlink()
        warm = P.run_method(method, base, 6, 0, "shallow-long", ("shallow-long", "deep-short"), pipe,
                            cache_dir=tmp_path / method)
        assert host(warm) == fresh[method]


@pytest.mark.parametrize("expert", ["lyapunov", "rule"])
def test_an_expert_scored_without_observations_scores_the_same(scenario, expert):
    cfg = EP.evaluation_config(load_gridcommand_config(scenario), "deep-short", 6, 0)
    seen = [GM.evaluate(TE.expert_policy(expert), cfg, observing=flag) for flag in (True, False)]
    assert seen[0] == seen[1]
