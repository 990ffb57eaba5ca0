"""The per-server policy in the grid-command scenario: the command's blocks in the pooled
summary, deferring as one more logit, the same numbers in torch and numpy, cloning that
imitates its teacher, and named errors; the plain per-server policy is unchanged."""

from __future__ import annotations

import dataclasses
import json
import resource


import numpy as np
import pandas as pd
import pytest
import torch as th
import yaml

from ilets.agents.observation import SERVER_FEATURES, TASK_FEATURES, ServerTable
from ilets.agents.per_server import PerServerPolicy
from ilets.agents.ppo import make_ppo, numpy_actor_critic
from ilets.config import ConfigError
from ilets.gridcommand import actors as AC, clone_cache as CC, cloning as CL, episodes as EP, pipeline as P
from ilets.gridcommand import pipeline_config as PC, teacher as TE
from ilets.gridcommand.config import load_gridcommand_config
from ilets.gridcommand.designs import label
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.features import grid_blocks
from test_gridcommand_pipeline import SCENARIO as PIPELINE_SCENARIO

#: the pipeline tests' tiny scenario, with the per-server policy, commands and a longer clone
SCENARIO = {**PIPELINE_SCENARIO, "regime": "shallow-long",
            "run": {**PIPELINE_SCENARIO["run"], "policy": "per-server", "observation": "per-server",
                    "oinpt": {"bc_epochs": 15, "critic_epochs": 2}}}


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    return path


@pytest.mark.parametrize("caps, defer_head", [((), "pooled"), ((0.9, 1.0), "pooled"), ((), "rows"),
                                              ((0.9, 1.0), "rows")])
def test_the_command_blocks_sit_before_the_rows_and_defer_is_one_more_logit(scenario, caps, defer_head):
    """Defer, and each admission-cap level when the policy may set one, is one more logit;
    with deferral scored per server, the defer logit is the logsumexp of a "later" score per
    server, and numpy computes the same logits as torch."""
    base = load_gridcommand_config(scenario, cap_levels=list(caps), run={"defer_head": defer_head})
    cfg = EP.evaluation_config(base, "shallow-long", 6, 0)
    env = GridCommandEnv(cfg)
    n_command = sum(b.size(6) for b in grid_blocks(env))
    assert env.table_layout == (len(TASK_FEATURES) + n_command, len(SERVER_FEATURES))
    assert env.observation_space.shape == (len(TASK_FEATURES) + n_command + 6 * len(SERVER_FEATURES),)
    model = make_ppo(env, cfg.run.ppo, 0, "per-server", cfg.run.server_hidden, defer_head=defer_head)
    assert isinstance(model.policy, PerServerPolicy) and model.policy.n_extra == 1 + len(caps)
    extractor = model.policy.mlp_extractor
    assert (extractor.later is not None) == (defer_head == "rows")
    # the pooled summary scores every extra action but the defer when deferral is scored per server
    pooled = 1 + len(caps) - (defer_head == "rows")
    assert (extractor.extra.out_features if extractor.extra is not None else 0) == pooled
    th.manual_seed(0)
    with th.no_grad():  # weights off their tiny initial gains, so every head's logits differ
        for w in model.policy.parameters():
            w.add_(0.3 * th.randn_like(w))
    if defer_head == "rows":
        obs, _ = env.reset(seed=0)
        x = th.as_tensor(obs[None])
        rows, ctx = extractor.split(x)
        h = th.relu(extractor.row(rows) + extractor.context(ctx).unsqueeze(1))
        with th.no_grad():
            logits = extractor.forward_actor(x)[0]
            assert th.allclose(logits[env.defer_action], th.logsumexp(extractor.later(h)[0, :, 0], 0))
    net = numpy_actor_critic(model.policy)
    obs, _ = env.reset(seed=0)
    for _ in range(40):
        with th.no_grad():
            torch_logits = model.policy.get_distribution(th.as_tensor(obs[None])).distribution.logits.numpy()[0]
        z = net.logits(obs)
        assert z.shape == (env.action_space.n,)
        np.testing.assert_allclose(torch_logits, z - np.log(np.exp(z - z.max()).sum()) - z.max(), atol=1e-5)
        mask = env.action_masks()
        a = net.act(obs, mask)
        assert mask[a]
        obs, *_ = env.step(a)


def _defer_or_place(n: int, servers: int, rng: np.random.Generator) -> tuple[th.Tensor, th.Tensor]:
    """Observations (one task number q, then rows (a_i, b_i)) and the action of a teacher that,
    as Lyapunov, places on the server of least cost now, ``a_i + q b_i``, or defers (action
    ``servers``) when its best placement later, ``min_i a_i + 0.3``, costs less."""
    q = rng.uniform(0, 2, (n, 1))
    a, b = rng.uniform(0, 1, (n, servers)), rng.uniform(0, 1, (n, servers))
    cost = np.concatenate([a + q * b, a.min(axis=1, keepdims=True) + 0.3], axis=1)
    obs = np.concatenate([q, np.stack([a, b], axis=2).reshape(n, -1)], axis=1).astype(np.float32)
    return th.as_tensor(obs), th.as_tensor(cost.argmin(axis=1))


def test_deferral_scored_per_server_learns_the_teachers_minimum_over_servers_better_than_one_pooled_logit():
    """The reason for ``defer_head: rows``, on a teacher whose deferral compares two minima
    over servers: trained alike, the per-server defer score gets the defer-or-place decision
    right on nearly every held-out state, the pooled logit on markedly fewer."""
    from ilets.agents.per_server import PerServerNet

    right = {}
    for rows in (False, True):
        th.manual_seed(0)
        rng = np.random.default_rng(0)
        (x, y), (x_test, y_test) = _defer_or_place(2000, 6, rng), _defer_or_place(2000, 6, rng)
        net = PerServerNet(1, 2, 32, n_extra=1, defer_rows=rows)
        opt = th.optim.Adam(net.parameters(), lr=1e-2)
        for _ in range(800):
            loss = th.nn.functional.cross_entropy(net.forward_actor(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with th.no_grad():
            chosen = net.forward_actor(x_test).argmax(dim=1)
        right[rows] = float(((chosen == 6) == (y_test == 6)).float().mean())
    assert right[True] >= 0.95 and right[True] - right[False] >= 0.04, right


def test_the_clone_cache_key_is_unchanged_by_the_defer_and_cap_heads_at_their_defaults():
    """Clones cached before run.defer_head and run.cap_head existed are still found; the rows
    head and the cap head key their own."""
    from ilets.gridcommand.study.scenario import load_profile

    grid = load_profile("gridcommand-grid-per-server-episodes")
    train = EP.training_config(grid.scenario_config(), grid.train_regime, 50, 0)
    assert CC.clone_key(train, grid.pipeline, 0) == "1b59e9e39bb08028"  # as computed at 522cbc03, before the fields
    rows = dataclasses.replace(train, run=dataclasses.replace(train.run, defer_head="rows"))
    assert CC.clone_key(rows, grid.pipeline, 0) != CC.clone_key(train, grid.pipeline, 0)
    caps = dataclasses.replace(train, run=dataclasses.replace(train.run, cap_head="mlp"))
    assert CC.clone_key(caps, grid.pipeline, 0) != CC.clone_key(train, grid.pipeline, 0)


def test_deferral_scored_per_server_is_named_where_it_cannot_apply(scenario, tmp_path):
    from ilets.agents.policy_io import PolicyLoadError, load_policy, save_policy
    from ilets.config import RunConfig

    with pytest.raises(ConfigError, match=r"run\.defer_head: .*'pooled', 'rows'.*got 'max'"):
        dataclasses.replace(RunConfig(), defer_head="max").validate()
    with pytest.raises(ConfigError, match=r"run\.defer_head: 'rows' .*'per-server', got 'flat'"):
        dataclasses.replace(RunConfig(), defer_head="rows").validate()
    assert dataclasses.replace(RunConfig(), policy="per-server", observation="per-server",
                               defer_head="rows").digest() != dataclasses.replace(
        RunConfig(), policy="per-server", observation="per-server").digest()
    # the plain scenario has nothing to defer
    from test_per_server import env_of, per_server

    plain = dataclasses.replace(per_server(RunConfig(fleet=dataclasses.replace(RunConfig().fleet, servers=4))),
                                defer_head="rows")
    with pytest.raises(ValueError, match="defer_head 'rows'.*this env has none"):
        make_ppo(env_of(plain), plain.ppo, 0, "per-server", defer_head="rows")
    # and the cloud study's profile says so when it loads, naming the file and field
    from ilets.study.profiles import load_profile as load_cloud_profile

    path = tmp_path / "cloud.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "methods": ["drl"], "servers": [4], "seeds": [0],
                                    "run": {"policy": "per-server", "observation": "per-server",
                                            "defer_head": "rows"}}))
    with pytest.raises(ConfigError, match=r"cloud\.yaml\.run\.defer_head: 'rows' scores the grid-command"):
        load_cloud_profile(path)
    # a policy folder says how it scores deferring; a run that scores it otherwise is told so
    cfg = EP.evaluation_config(load_gridcommand_config(scenario, run={"defer_head": "rows"}), "shallow-long", 6, 0)
    env = GridCommandEnv(cfg)
    save_policy(make_ppo(env, cfg.run.ppo, 0, "per-server", defer_head="rows"), tmp_path / "p", "per-server",
                "per-server", 6)
    with pytest.raises(PolicyLoadError, match=r"policy\.json: defer_head: .*'rows'.*run's 'pooled'"):
        load_policy(tmp_path / "p", make_ppo(env, cfg.run.ppo, 0, "per-server"))
    assert load_policy(tmp_path / "p", make_ppo(env, cfg.run.ppo, 0, "per-server", defer_head="rows"))["servers"] == 6
    # the numbers before the rows are the run's (here with the command's blocks), not the layout's alone
    meta = json.loads((tmp_path / "p" / "policy.json").read_text())
    (tmp_path / "p" / "policy.json").write_text(json.dumps({**meta, "n_task": len(TASK_FEATURES)}))
    with pytest.raises(PolicyLoadError, match=rf"policy\.json: n_task/width: expected \({env.table_layout[0]}, "):
        load_policy(tmp_path / "p", make_ppo(env, cfg.run.ppo, 0, "per-server", defer_head="rows"))


@pytest.mark.slow  # two clones and two method cells
def test_the_per_server_clone_imitates_its_teacher_better_than_the_flat_one(scenario):
    base = load_gridcommand_config(scenario)
    flat = load_gridcommand_config(scenario, run={"policy": "flat", "observation": "paper"})
    pipe = PC.PipelineConfig(teacher="lyapunov")
    _, ours = CL.clone(EP.training_config(base, "shallow-long", 6, 0), pipe, 0)
    _, theirs = CL.clone(EP.training_config(flat, "shallow-long", 6, 0), pipe, 0)
    assert ours["bc_agreement_after"] > theirs["bc_agreement_after"]
    # the method cells run the per-server clone: sampled as a learner acts, and deterministic
    result = P.run_method("bc", base, 6, 0, "shallow-long", ("shallow-long",), pipe)
    again = P.run_method("bc", base, 6, 0, "shallow-long", ("shallow-long",), pipe)
    timeless = lambda r: {k: v for k, v in r["scores"]["shallow-long"].items() if "cpu" not in k}  # noqa: E731
    assert timeless(result) == timeless(again) and result["train"]["bc_agreement_after"] > 0.2


def test_with_speed_levels_the_per_server_table_has_a_row_per_placement(scenario):
    plain = GridCommandEnv(EP.evaluation_config(load_gridcommand_config(scenario), "shallow-long", 6, 0))
    cfg = load_gridcommand_config(scenario, speed_levels=[1.0, 0.6])
    env = GridCommandEnv(EP.evaluation_config(cfg, "shallow-long", 6, 0))
    n_task, width = env.table_layout
    assert env.table_layout == plain.table_layout and env.action_space.n == 2 * 6 + 1
    obs, _ = env.reset(seed=0)
    base, _ = plain.reset(seed=0)
    rows, nominal = obs[n_task:].reshape(12, width), base[n_task:].reshape(6, width)
    assert len(obs) == n_task + 12 * width
    # the nominal level's rows are the plain table's, but for the response ratio to the best
    # candidate (now over both levels)
    np.testing.assert_array_equal(rows[:6, :13], nominal[:, :13])
    # at 0.6 the execution takes 1/0.6 as long and the active power is 0.6 ** 3 as high
    task, scale = env.current_task, env.state.wait_scale_s
    np.testing.assert_allclose(rows[6:, 3], np.log1p(task.length / (env.fleet.mips * 0.6) / scale), rtol=1e-6)
    np.testing.assert_allclose(rows[6:, 9], rows[:6, 9] * 0.6 ** 3, rtol=1e-6)
    # a per-server policy scores all 13 actions, and its choice decodes to (server, level)
    model = make_ppo(env, cfg.run.ppo, 0, cfg.run.policy, cfg.run.server_hidden)
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert 0 <= int(action) <= env.defer_action and env.action_masks()[int(action)]
    with pytest.raises(ValueError, match="nominal speed 1.0 first"):
        ServerTable((0.6, 1.0), (0.2, 1.0))


def test_the_shipped_per_server_profiles_load():
    from ilets.gridcommand.study.scenario import load_profile

    grid = load_profile("gridcommand-grid-per-server-episodes")
    run = grid.scenario_config().run
    assert (run.policy, run.observation) == ("per-server", "per-server")
    quick = load_gridcommand_config("quick")
    assert grid.scenario_config().run.workload == quick.run.workload and set(grid.methods) <= set(PC.METHODS)


def _store_rows(design_track: dict[str, float]) -> pd.DataFrame:
    rows = []
    for design, clone_track in design_track.items():
        for seed in range(3):
            for method, track, success in (("lyapunov", 0.30, 0.95), ("bc", clone_track, 0.946)):
                rows.append({"design": design, "method": method, "servers": 50, "seed": seed, "role": "train",
                             "regime": "shallow-long", "tracking_mae_rel": track + 0.001 * seed,
                             "miss_rate": 1.0 - success, "success_rate": success,
                             "agreement": np.nan if method == "lyapunov" else 0.4})
    return pd.DataFrame(rows)


def test_the_control_table_judges_each_clone_against_its_own_grids_teacher():
    from ilets.gridcommand.report import positive_control as C

    table = C.control_table(_store_rows({"flat": 0.60, "per-server": 0.32}), reps=300)
    got = table.set_index("design")
    assert got.loc["flat", "track_pct"] == pytest.approx(-100.0, abs=1.0) and not got.loc["flat", "meets_bar"]
    assert got.loc["per-server", "track_pct"] == pytest.approx(-6.6, abs=0.5)
    assert got.loc["per-server", "meets_bar"] and got.loc["per-server", "miss_ratio"] == pytest.approx(1.08, abs=0.01)
    said = C.control_sentence(table)
    assert 'design "per-server" (50 servers:' in said and "agreement 40%" in said and "meets the bar" in said
    assert list(C.control_display(table)["meets the bar"]) == ["no", "yes"]
    assert C.control_sentence(table.iloc[0:0]).startswith("No clone of any design")
    same = C.control_sentence(table.replace({"design": {"flat": C.CONTROL_DESIGN}}))
    assert f'design "{label(C.CONTROL_DESIGN)}" (50' in same and "the the" not in same


def test_repeats_show_a_label_more_often_and_leave_the_rest(scenario):
    from ilets.agents.oinpt import with_repeats

    env = GridCommandEnv(EP.evaluation_config(load_gridcommand_config(scenario), "shallow-long", 6, 0))
    demos = TE.demonstrate(env, "lyapunov", 0)
    assert with_repeats(demos, {env.defer_action: 1}) is demos
    label = int(demos.acts[0])  # a label that occurs (the tiny episode has no deferral to weigh)
    count = int((demos.acts == label).sum())
    more = with_repeats(demos, {label: 3})
    assert len(more) == len(demos) + 2 * count and (more.acts == label).sum() == 3 * count
    np.testing.assert_array_equal(more.obs[more.acts != label], demos.obs[demos.acts != label])
    np.testing.assert_array_equal(more.obs[:3], demos.obs[[0, 0, 0]])  # in decision order, side by side


@pytest.mark.parametrize("field,value", [("clone_action", "argmax"), ("defer_repeat", 0), ("defer_repeat", 2.5),
                                         ("bc_epochs", -1), ("bc_epochs", 2.5), ("dagger_rounds", -1),
                                         ("dagger_rounds", 1.5), ("event_repeat", 0), ("event_repeat", 1.5),
                                         ("event_repeat", True), ("sleep_repeat", 0), ("sleep_repeat", 2.5),
                                         ("train_episodes", 0), ("train_episodes", 2.5),
                                         ("train_episode_stride", 0), ("train_episode_stride", True),
                                         ("train_days", -1), ("train_days", float("nan")), ("train_days", True),
                                         ("train_days", "1")])
def test_bad_clone_options_are_named(field, value):
    with pytest.raises(ConfigError, match=f"pipeline.{field}"):
        PC.PipelineConfig(**{field: value}).validate()


def test_clone_options_at_their_defaults_leave_the_settings_as_they_were():
    assert set(PC.PipelineConfig().plain()) == {"teacher", "demo_tasks", "every", "window", "weight"}
    assert PC.PipelineConfig(clone_action="greedy", defer_repeat=4).plain()["defer_repeat"] == 4
    assert PC.PipelineConfig(bc_epochs=30).plain()["bc_epochs"] == 30
    assert PC.PipelineConfig(event_repeat=4).plain()["event_repeat"] == 4
    assert PC.PipelineConfig(sleep_repeat=4).plain()["sleep_repeat"] == 4
    assert PC.PipelineConfig(train_episodes=4).plain()["train_episodes"] == 4
    assert PC.PipelineConfig(train_episode_stride=16).plain()["train_episode_stride"] == 16
    assert PC.PipelineConfig(train_days=1).plain()["train_days"] == 1


def test_a_shorter_training_window_cuts_the_days_and_the_workload_together(monkeypatch):
    one = load_gridcommand_config("gridcommand-quick-per-server-sleep-energy")
    # the retired fourteen-day scenario: the one-day one with fourteen days of commands and a
    # fourteen-fold workload scale
    days = load_gridcommand_config("gridcommand-quick-per-server-sleep-energy", window_days=14,
                                   run={"workload": {"scale": 0.28}})
    assert days.window_days == 14 and one.window_days == 1
    # one day of the fourteen-day scenario is the one-day scenario, field for field
    assert EP.training_base(days, PC.PipelineConfig(train_days=1)) == one
    for same in (0, 14):  # 0 and the scenario's own window: the scenario itself
        assert EP.training_base(days, PC.PipelineConfig(train_days=same)) is days
    with pytest.raises(ConfigError, match="pipeline.train_days: 1000 days .*fit.*workload.scale"):
        EP.training_base(days, PC.PipelineConfig(train_days=1000))

    class Stop(Exception):
        pass

    def spy(train_cfg, pipe, seed, cache_dir=None, wait=True, processes=1):
        asked.append(train_cfg)
        raise Stop

    asked: list = []
    monkeypatch.setattr(P, "cached_clone", spy)
    with pytest.raises(Stop):  # the clone learns on one-day episodes; the scored ones keep fourteen
        P.run_method("bc", days, 50, 3, "shallow-long", ("shallow-long",), PC.PipelineConfig(train_days=1))
    assert asked == [EP.training_config(one, "shallow-long", 50, 3)]


def test_the_pipelines_bc_budget_replaces_the_runs_and_zero_keeps_it(scenario, monkeypatch):
    seen = []

    def spy(model, demos, cfg, seed, repeat=None, rows=None, report=True, batches=None):
        assert batches is None  # whole epochs, the default count
        seen.append(cfg.bc_epochs)
        return {"bc_agreement_before": 0.0, "bc_agreement_after": 0.0}

    monkeypatch.setattr(CL, "behaviour_clone", spy)
    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    CL.clone(cfg, PC.PipelineConfig(bc_epochs=7), 0)
    CL.clone(cfg, PC.PipelineConfig(), 0)
    assert seen == [7, cfg.run.oinpt.bc_epochs]
    assert CC.clone_key(cfg, PC.PipelineConfig(bc_epochs=7), 0) != CC.clone_key(cfg, PC.PipelineConfig(), 0)


def test_heldout_scores_the_final_policy_on_an_episode_no_method_saw(scenario):
    pipe = PC.PipelineConfig(clone_action="greedy", heldout=True)
    base = load_gridcommand_config(scenario)
    teacher = P.run_method("lyapunov", base, 6, 0, "shallow-long", ("shallow-long",), pipe)
    clone = P.run_method("bc", base, 6, 0, "shallow-long", ("shallow-long",), pipe)
    keys = {f"heldout_{k}" for k in EP.HELDOUT_METRICS}
    assert keys <= set(teacher["train"]) and keys <= set(clone["train"])
    # the same numbers again
    again = P.run_method("lyapunov", base, 6, 0, "shallow-long", ("shallow-long",), pipe)
    assert {k: again["train"][k] for k in keys} == {k: teacher["train"][k] for k in keys}
    assert "heldout" not in PC.PipelineConfig().plain() and PC.PipelineConfig(heldout=True).plain()["heldout"] is True
    held = EP.heldout_config(base, "shallow-long", 6, 0)
    assert held.run.seed == EP.HELDOUT_SEED_OFFSET and held.segment == "online"
    # the recorded numbers are the held-out episode's, not the scored episode's again
    from ilets.gridcommand.metrics import evaluate

    own = evaluate(TE.expert_policy("lyapunov"), held)
    scored = evaluate(TE.expert_policy("lyapunov"), EP.evaluation_config(base, "shallow-long", 6, 0))
    assert {k: own[k] for k in EP.HELDOUT_METRICS} == {k[len("heldout_"):]: v for k, v in teacher["train"].items()
                                                       if k.startswith("heldout_")}
    assert own["decisions"] != scored["decisions"] or own["tracking_mae_rel"] != scored["tracking_mae_rel"]


def _ends_no_worse(said: str, method: str, servers: int = 50) -> bool:
    """Whether a held-out sentence says ``method`` ends no worse than the frozen clone."""
    from ilets.gridcommand.report.results import method_label

    return said.split(f"{method_label(method)} at {servers} servers ends ")[1].startswith("no worse")


def test_the_heldout_table_judges_fine_tuning_against_the_clone_and_the_teacher():
    from ilets.gridcommand.report import positive_control as C

    track = {"lyapunov": 0.30, "bc": 0.50, "bc+ppo": 0.40, "bc+ppo+oail": 0.60}
    rows = pd.DataFrame([{"method": m, "servers": 50, "seed": s, "tracking_mae_rel": v + 0.01 * s,
                          "success_rate": 0.9, "episode_reward": -1.0, "in_band_fraction": 0.5, "deferrals": 1.0}
                         for m, v in track.items() for s in range(4)])
    table = C.heldout_table(rows, reps=500)
    verdict = {(r["method"], r["against"]): r["verdict"] for r in table.to_dict("records")}
    assert verdict[("bc+ppo", "bc")] == "better" and verdict[("bc+ppo+oail", "bc")] == "worse"
    assert verdict[("bc", "lyapunov")] == "worse"
    said = C.heldout_sentence(table)
    assert _ends_no_worse(said, "bc+ppo") and not _ends_no_worse(said, "bc+ppo+oail")
    assert said.endswith("none of them tracks better.")
    # tracking better by missing more deadlines is not "no worse"
    missing = rows.assign(success_rate=np.where(rows["method"] == "bc+ppo", 0.8 - 0.01 * rows["seed"], 0.9))
    table_m = C.heldout_table(missing, reps=500)
    tuned = table_m[(table_m["method"] == "bc+ppo") & (table_m["against"] == "bc")].iloc[0]
    assert tuned["verdict"] == "better" and tuned["miss_verdict"] == "worse"
    assert tuned["miss_mean_x"] == pytest.approx(0.215) and tuned["miss_mean_y"] == pytest.approx(0.1)
    assert not _ends_no_worse(C.heldout_sentence(table_m), "bc+ppo")
    assert "% / " in C.heldout_display(table_m)["miss rate (method / against)"].iloc[0]
    assert len(C.heldout_display(table)) == len(table)
    assert C.heldout_sentence(table.iloc[0:0]).startswith("No method was scored")
    # a grid part-way: at 200 servers the clone and its teacher ran, the fine-tuning not yet; no
    # row and no verdict there for what did not run
    more = rows[rows["method"].isin(["bc", "lyapunov"])].assign(servers=200)
    table = C.heldout_table(pd.concat([rows, more], ignore_index=True), reps=200)
    assert set(table[table["servers"] == 200]["method"]) == {"bc"}
    assert "at 200 servers ends" not in C.heldout_sentence(table) and "n/a" not in C.heldout_sentence(table)


def test_relabelling_with_the_teacher_as_actor_is_its_demonstration_and_another_actor_visits_other_states(scenario):
    env = GridCommandEnv(EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0))
    demos = TE.demonstrate(env, "lyapunov")
    teacher = TE.expert_policy("lyapunov")
    same, agreed = TE.relabel(env, "lyapunov", teacher)
    assert agreed.all() and len(agreed) == len(same)
    np.testing.assert_array_equal(same.acts, demos.acts)
    np.testing.assert_array_equal(same.obs, demos.obs)

    def last_server(obs, env):  # a poor actor: the highest-numbered allowed server
        return int(np.flatnonzero(env.action_masks()[:len(env.fleet)])[-1])

    other, agreed = TE.relabel(env, "lyapunov", last_server)
    assert not agreed.all() and other.masks[np.arange(len(other)), other.acts].all()  # valid labels
    assert len(other) != len(demos) or not np.array_equal(other.obs, demos.obs)  # the actor's own states


def test_dagger_rounds_relabel_the_clones_states_and_stay_deterministic(scenario):
    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    pipe = PC.PipelineConfig(clone_action="greedy", dagger_rounds=2, bc_epochs=2)
    first, info = CL.clone(cfg, pipe, 0)
    second, _ = CL.clone(cfg, pipe, 0)
    assert all(th.equal(first[k], second[k]) for k in first)
    assert {"dagger_agreement[0]", "dagger_agreement[1]"} <= set(info) and info["dagger_states"] > 0
    plain, _ = CL.clone(cfg, PC.PipelineConfig(clone_action="greedy", bc_epochs=2), 0)
    assert any(not th.equal(first[k], plain[k]) for k in first)


def test_a_clone_whose_observations_are_kept_in_a_file_is_the_clone_kept_in_memory(scenario, monkeypatch):
    # the aggregate goes to a temporary file past a share of the host's memory: only where
    # the values live may depend on the host, so the clone must be the same tensor for tensor
    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    pipe = PC.PipelineConfig(clone_action="greedy", dagger_rounds=1, bc_epochs=2, train_episodes=2)
    in_memory, info = CL.clone(cfg, pipe, 0)
    backed = []
    real = CL.Aggregate

    def spy(capacity, memory_limit=None, folder=None):
        # the pipeline passes the host's limit (read again here it may have moved: memory is in use)
        assert memory_limit is not None and memory_limit > 0
        backed.append(real(capacity, 0))
        return backed[-1]

    monkeypatch.setattr(CL, "Aggregate", spy)
    in_file, info_file = CL.clone(cfg, pipe, 0)
    assert backed and backed[0].file_backed and isinstance(backed[0].view().obs, np.memmap)
    assert all(th.equal(in_memory[k], in_file[k]) for k in in_memory)
    same = {k for k in info if not k.endswith(("_s", "seconds"))}
    assert {k: info[k] for k in same} == {k: info_file[k] for k in same}


class Killed(Exception):
    """A clone stopped where a test says, as a session's stop would kill it."""


def _count_and_kill(monkeypatch, kill: tuple[str, int, bool] | None = None) -> dict[str, int]:
    """Count the calls of the clone's three costly steps; with ``kill`` (name, call, after),
    raise :class:`Killed` at that call of that step, before it runs or after it returns."""
    calls = {"demonstrate": 0, "relabel": 0, "behaviour_clone": 0}
    for name in calls:
        def spy(*args, _real=getattr(CL, name), _name=name, **kw):
            calls[_name] += 1
            stop = kill is not None and kill[0] == _name and kill[1] == calls[_name]
            if stop and not kill[2]:
                raise Killed
            out = _real(*args, **kw)
            if stop:
                raise Killed
            return out
        monkeypatch.setattr(CL, name, spy)
    return calls


@pytest.mark.parametrize("kill, redone", [
    (("demonstrate", 3, False), {"demonstrate": 1, "relabel": 6, "behaviour_clone": 3}),  # in the demonstrations
    (("behaviour_clone", 1, True), {"demonstrate": 0, "relabel": 6, "behaviour_clone": 3}),  # before BC's record
    (("relabel", 5, False), {"demonstrate": 0, "relabel": 2, "behaviour_clone": 1}),  # in the second round
    (("behaviour_clone", 3, True), {"demonstrate": 0, "relabel": 0, "behaviour_clone": 1}),  # in the last BC
])
def test_a_killed_clone_goes_on_from_its_last_record_to_the_same_clone(scenario, tmp_path, monkeypatch, kill, redone):
    # a clone of 1,024 training episodes outlasts a work session: killed anywhere, it must go
    # on from its last record and end as the clone made in one go, tensor for tensor (BC's
    # minibatches come from torch's global generator: its state is part of the record)
    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    pipe = PC.PipelineConfig(dagger_rounds=2, bc_epochs=2, train_episodes=3)  # sampled: each round draws
    whole, info = CL.clone(cfg, pipe, 0)
    progress = tmp_path / "partial"
    with monkeypatch.context() as m:
        _count_and_kill(m, kill)
        with pytest.raises(Killed):
            CL.clone(cfg, pipe, 0, progress=progress)
    assert (progress / "progress.json").is_file()
    with monkeypatch.context() as m:
        calls = _count_and_kill(m)
        resumed, resumed_info = CL.clone(cfg, pipe, 0, progress=progress)
    assert calls == redone  # only what the record did not hold is done again
    assert all(th.equal(whole[k], resumed[k]) for k in whole)
    same = {k for k in info if not k.endswith(("_s", "seconds"))}
    assert {k: info[k] for k in same} == {k: resumed_info[k] for k in same} and list(info) == list(resumed_info)
    assert resumed_info["clone_cpu_s"] > 0


def test_a_clone_whose_episodes_are_played_on_more_processes_is_the_same_clone(scenario, tmp_path):
    # the demonstrations and each DAgger round's episodes are independent of one another: on
    # two worker processes they must give the clone made in one, tensor for tensor, with the
    # same records (the sampled clone: each episode its own draws), the workers' CPU counted
    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    pipe = PC.PipelineConfig(dagger_rounds=1, bc_epochs=2, train_episodes=3)
    one, info = CL.clone(cfg, pipe, 0)
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    two, info_two = CL.clone(cfg, pipe, 0, progress=tmp_path / "partial", processes=2)
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime > children  # worker processes played
    assert all(th.equal(one[k], two[k]) for k in one)
    same = {k for k in info if not k.endswith(("_s", "seconds"))}
    assert {k: info[k] for k in same} == {k: info_two[k] for k in same} and list(info) == list(info_two)
    assert info_two["clone_cpu_s"] > 0.5 * info["clone_cpu_s"]  # the workers' seconds, not only BC's
    with pytest.raises(ValueError, match="processes: expected >= 1, got 0"):
        CL.clone(cfg, pipe, 0, processes=0)


def test_a_grid_killed_in_a_clone_goes_on_from_its_cache(scenario, tmp_path, monkeypatch):
    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    pipe = PC.PipelineConfig(clone_action="greedy", dagger_rounds=1, bc_epochs=2, train_episodes=2)
    cache = tmp_path / "cache"
    with monkeypatch.context() as m:
        _count_and_kill(m, ("relabel", 2, False))
        with pytest.raises(Killed):
            CC.cached_clone(cfg, pipe, 0, cache)
    partial = cache / f"clone-{CC.clone_key(cfg, pipe, 0)}.partial"
    assert (partial / "progress.json").is_file() and not partial.with_suffix(".pt").exists()
    with monkeypatch.context() as m:
        calls = _count_and_kill(m)
        state, _ = CC.cached_clone(cfg, pipe, 0, cache)
    assert calls == {"demonstrate": 0, "relabel": 1, "behaviour_clone": 1}
    assert partial.with_suffix(".pt").is_file() and not partial.exists()  # the record goes once the clone is kept
    fresh, _ = CL.clone(cfg, pipe, 0)
    assert all(th.equal(fresh[k], state[k]) for k in fresh)
    # a damaged record: the clone is made from the start, with a warning, and is the same
    with monkeypatch.context() as m:
        _count_and_kill(m, ("relabel", 1, False))
        with pytest.raises(Killed):
            CL.clone(cfg, pipe, 0, progress=partial)
    (partial / "progress.json").write_text("{")
    with pytest.warns(UserWarning, match="damaged clone progress"):
        again, _ = CL.clone(cfg, pipe, 0, progress=partial)
    assert all(th.equal(fresh[k], again[k]) for k in fresh)


def test_an_exact_step_budget_takes_the_first_episodes_minibatches_in_every_bc(scenario, monkeypatch):
    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    batch = cfg.run.oinpt.batch_size
    one = PC.PipelineConfig(clone_action="greedy", bc_epochs=3)
    # one training episode, no DAgger: the meant steps are whole epochs, so the two budgets
    # are one clone (imitation's minibatches come in the same order counted either way)
    plain, plain_info = CL.clone(cfg, one, 0)
    exact, exact_info = CL.clone(cfg, dataclasses.replace(one, bc_step_budget="exact"), 0)
    assert all(th.equal(plain[k], exact[k]) for k in plain)
    assert plain_info["bc_step_share"] == exact_info["bc_step_share"] == 1.0
    one = dataclasses.replace(one, dagger_rounds=1)
    # four episodes: whole epochs (rounded, at least one) take another share, recorded; exact
    # takes the first episode's minibatches in each BC, counted at imitation's trainer
    taken: list[tuple[int | None, int]] = []
    real = CL.behaviour_clone

    def spy(model, demos, bc_cfg, seed, **kw):
        taken.append((kw.get("batches"), bc_cfg.bc_epochs))
        return real(model, demos, bc_cfg, seed, **kw)

    monkeypatch.setattr(CL, "behaviour_clone", spy)
    critic: list[int | None] = []  # and the critic's regression: passes over all, or the first episode's count
    real_critic = CL.pretrain_critic
    monkeypatch.setattr(CL, "pretrain_critic", lambda *a, batches=None, **kw: (
        critic.append(batches), real_critic(*a, batches=batches, **kw))[1])
    four = dataclasses.replace(one, train_episodes=4, train_episode_stride=4)
    first = len(TE.demonstrate(GridCommandEnv(cfg), "lyapunov"))
    meant = 3 * (first // batch)
    _, whole = CL.clone(cfg, four, 0)
    assert [b for b, _ in taken] == [None, None]  # epochs, as the designs ran
    shown = whole["demo_decisions"]
    assert whole["bc_step_share"] == taken[0][1] * (shown // batch) / meant
    assert whole["bc_step_share[0]"] == taken[1][1] * ((shown + whole["dagger_states"]) // batch) / meant
    taken.clear()
    _, info = CL.clone(cfg, dataclasses.replace(four, bc_step_budget="exact"), 0)
    assert [b for b, _ in taken] == [meant, meant]
    assert info["bc_step_share"] == info["bc_step_share[0]"] == 1.0
    assert critic == [None, cfg.run.oinpt.critic_epochs * -(-first // batch)]
    with pytest.raises(ConfigError, match=r"pipeline.bc_step_budget: .*'whole_epochs', 'exact'"):
        PC.PipelineConfig(bc_step_budget="steps").validate()
    # the default is left out of a settings digest: what was computed before it keeps its key
    assert "bc_step_budget" not in one.plain() and four.plain() != dataclasses.replace(
        four, bc_step_budget="exact").plain()


def test_a_clone_learned_on_one_fleet_is_scored_on_another(scenario, tmp_path):
    base = load_gridcommand_config(scenario)
    pipe = PC.PipelineConfig(clone_action="greedy", bc_epochs=2, train_servers=4)
    cache = tmp_path / "cache"
    cache.mkdir()
    # the 4-server cell makes the clone; the 6-server cell scores that same clone on its own fleet
    small = P.run_method("bc", base, 4, 0, "shallow-long", ("shallow-long",), pipe, cache_dir=cache)
    moved = P.run_method("bc", base, 6, 0, "shallow-long", ("shallow-long",), pipe, cache_dir=cache)
    assert not small["train"].get("clone_cached") and moved["train"]["clone_cached"]
    assert moved["train"]["demo_decisions"] == small["train"]["demo_decisions"]
    # the same numbers without the cache (the clone is made again, on 4 servers)
    again = P.run_method("bc", base, 6, 0, "shallow-long", ("shallow-long",), pipe)
    def numbers(cell: dict) -> dict:  # what the cell scored, less the seconds it took
        return {k: v for k, v in cell["scores"]["shallow-long"].items() if k != "eval_cpu_s"}

    assert numbers(again) == numbers(moved)
    # learned on its own fleet, the 6-server clone is another
    own = P.run_method("bc", base, 6, 0, "shallow-long", ("shallow-long",), dataclasses.replace(pipe, train_servers=0))
    assert numbers(own) != numbers(moved) and own["train"]["bc_agreement_after"] != small["train"]["bc_agreement_after"]
    # and so is every learner that starts from the clone
    tuned = P.run_method("bc+ppo", base, 6, 0, "shallow-long", ("shallow-long",), pipe, cache_dir=cache)
    assert tuned["train"]["clone_cached"]
    # the flat policy's weights depend on the fleet: named, before anything runs
    flat = dataclasses.replace(base, run=dataclasses.replace(base.run, policy="flat"))
    with pytest.raises(ConfigError, match=r"pipeline.train_servers: 4 servers: .*per-server policy"):
        P.run_method("bc", flat, 6, 0, "shallow-long", ("shallow-long",), pipe)
    with pytest.raises(ConfigError, match=r"pipeline.train_servers: expected 0 or .*>= 1"):
        PC.PipelineConfig(train_servers=-1).validate()
    assert "train_servers" not in PC.PipelineConfig().plain()
    # and in a grid profile, when it is loaded
    from ilets.gridcommand.study.scenario import load_profile as load_grid_profile

    grid = load_grid_profile("gridcommand-grid-per-server-episodes")
    moved = dataclasses.replace(grid, pipeline=dataclasses.replace(grid.pipeline, train_servers=50))
    assert moved.validate() is moved
    assert moved.scenario_config().run.policy == "per-server"
    flat_grid = dataclasses.replace(moved, scenario="gridcommand-quick")
    assert flat_grid.scenario_config().run.policy == "flat"
    with pytest.raises(ConfigError, match=r"grid.pipeline.train_servers: 50 servers: .*per-server policy"):
        flat_grid.validate()
    # the shipped transfer grid: the 16-episode design's teacher and clone at 200 servers, the
    # clone learned on 50, nothing else changed


def test_each_training_episode_of_a_sampled_dagger_round_draws_its_own_stream(scenario, monkeypatch):
    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    env = GridCommandEnv(cfg)
    model = make_ppo(env, cfg.run.ppo, 0, cfg.run.policy, cfg.run.server_hidden)
    obs, _ = env.reset()

    def draws(policy) -> list[int]:
        return [policy(obs, env) for _ in range(40)]

    # stream 0 is the stream a single episode always drew
    actor = numpy_actor_critic(model.policy)
    rng = np.random.default_rng(np.random.SeedSequence(3, spawn_key=(0x424300,)))
    assert draws(AC.sampled_policy(model, 3)) == [actor.act(obs, env.action_masks(), rng) for _ in range(40)]
    assert draws(AC.sampled_policy(model, 3, 0)) == draws(AC.sampled_policy(model, 3))
    assert draws(AC.sampled_policy(model, 3, 1)) != draws(AC.sampled_policy(model, 3, 0))
    streams = []
    real = CL.sampled_policy

    def spy(m, seed, stream=0):
        streams.append((seed, stream))
        return real(m, seed, stream)

    monkeypatch.setattr(CL, "sampled_policy", spy)
    CL.clone(cfg, PC.PipelineConfig(dagger_rounds=1, bc_epochs=1, train_episodes=3), 0)
    assert streams == [(1, 0), (1, 1), (1, 2)]  # round 0 draws seed + 1, one stream per episode


def test_the_clone_takes_its_training_workloads_at_the_pipelines_stride(scenario, monkeypatch):
    asked = []

    class Stop(Exception):
        pass

    def spy(train_cfg, n, stride=1):
        asked.append((train_cfg.run.seed, n, stride))
        raise Stop

    monkeypatch.setattr(CL, "training_episodes", spy)
    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 2)
    for pipe in (PC.PipelineConfig(train_episodes=3), PC.PipelineConfig(train_episodes=3, train_episode_stride=8)):
        with pytest.raises(Stop):
            CL.clone(cfg, pipe, 2)
    assert asked == [(2, 3, 1), (2, 3, 8)]


def _bc_calls(monkeypatch) -> list[tuple[int, int]]:
    """Every BC call the pipeline makes from now on, as (decisions shown, epochs); each must
    leave out the cloning report (the pipeline records none of it, and over many training
    episodes its one forward pass holds gigabytes)."""
    seen: list[tuple[int, int]] = []
    real = CL.behaviour_clone

    def spy(model, demos, cfg, seed, repeat=None, rows=None, report=True, batches=None):
        assert report is False, "the pipeline's BC must leave out the cloning report"
        assert batches is None  # whole epochs, the default count: the epochs seen are the steps
        seen.append((len(demos), cfg.bc_epochs))
        return real(model, demos, cfg, seed, repeat, rows, report)

    monkeypatch.setattr(CL, "behaviour_clone", spy)
    return seen


def test_each_dagger_round_takes_the_first_bcs_gradient_steps(scenario, monkeypatch):
    seen = _bc_calls(monkeypatch)
    cfg = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 0)
    CL.clone(cfg, PC.PipelineConfig(clone_action="greedy", dagger_rounds=2, bc_epochs=12), 0)
    (n, e0), *rounds = seen
    assert e0 == 12 and len(rounds) == 2
    for size, epochs in rounds:  # the aggregate grows; epochs x size stays that of the first BC
        assert size > n and epochs == max(1, round(12 * n / size))


def test_more_training_episodes_are_other_workloads_and_bc_keeps_the_first_episodes_gradient_steps(scenario,
                                                                                                  monkeypatch,
                                                                                                  tmp_path):
    train = EP.training_config(load_gridcommand_config(scenario), "shallow-long", 6, 3)
    episodes = EP.training_episodes(train, 3)
    assert episodes[0] is train and EP.training_episodes(train, 1) == [train]
    seeds = [e.run.seed for e in episodes]
    assert seeds == [3, 3 + EP.TRAIN_EPISODE_OFFSET + 1, 3 + EP.TRAIN_EPISODE_OFFSET + 2]
    # other workloads' offline segments, their own commands, the same fleet and regime; none is
    # the scored or the held-out episode of any seed a grid runs
    assert {e.segment for e in episodes} == {"offline"} and {e.regime for e in episodes} == {"shallow-long"}
    assert [e.command_seed for e in episodes[1:]] == [s + EP.TRAIN_COMMAND_OFFSET for s in seeds[1:]]
    assert all(e.run.fleet == train.run.fleet for e in episodes)
    assert min(seeds[1:]) > EP.HELDOUT_SEED_OFFSET + 10_000
    # stride 1 (the default): neighbouring seeds share all but one further workload; a stride of
    # at least n - 1 gives every seed its own, and the first episode is the run's either way
    def further(seed: int, n: int, stride: int) -> set[int]:
        run = dataclasses.replace(train, run=dataclasses.replace(train.run, seed=seed))
        return {e.run.seed for e in EP.training_episodes(run, n, stride)[1:]}
    assert len(further(3, 5, 1) & further(4, 5, 1)) == 3
    assert all(not further(s, 5, 4) & further(t, 5, 4) for s in range(10) for t in range(s))
    assert EP.training_episodes(train, 3, 4)[0] is train
    assert [e.run.seed for e in EP.training_episodes(train, 3, 4)[1:]] == [3 * 4 + EP.TRAIN_EPISODE_OFFSET + k
                                                                           for k in (1, 2)]
    envs = [GridCommandEnv(e) for e in episodes]
    tasks = [len(e.tasks) for e in envs]
    lengths = {tuple(e.tasks.length[:20]) for e in envs}
    seen = _bc_calls(monkeypatch)
    pipe = PC.PipelineConfig(clone_action="greedy", dagger_rounds=1, bc_epochs=12, train_episodes=3)
    state, info = CL.clone(train, pipe, 3)
    (n, epochs), (aggregate, round_epochs) = seen
    first = len(TE.demonstrate(GridCommandEnv(train), "lyapunov"))
    assert info["train_episodes"] == 3 and info["demo_decisions"] == n > first and len(lengths) == 3  # three workloads
    assert epochs == max(1, round(12 * first / n))  # the first episode's steps over all three
    # the demonstrations' seconds are wall seconds: the record names them so (not "cpu")
    assert info["demo_wall_s"] > 0 and "demo_cpu_s" not in info
    assert aggregate == n + info["dagger_states"] and info["dagger_states"] >= sum(tasks)  # each episode relabelled
    again, _ = CL.clone(train, pipe, 3)
    assert all(th.equal(state[k], again[k]) for k in state)  # deterministic
    # the episodes' envs are built again for each round: with a kept envelope cache or the
    # clone's own temporary one, the same clone
    cached, _ = CL.clone(train, pipe, 3, tmp_path)
    assert all(th.equal(state[k], cached[k]) for k in state) and any(tmp_path.iterdir())


def test_the_energy_column_ranks_the_servers_beside_the_rows_as_they_were(scenario):
    from ilets.gridcommand.envelope import _marginal_energy

    base = load_gridcommand_config(scenario)
    plain = GridCommandEnv(EP.evaluation_config(base, "shallow-long", 6, 2))
    ranked = GridCommandEnv(EP.evaluation_config(load_gridcommand_config(scenario, observe_energy=True),
                                                "shallow-long", 6, 2))
    n_task, width = ranked.table_layout
    assert (n_task, width) == (plain.table_layout[0], plain.table_layout[1] + 1)
    a, _ = plain.reset()
    b, _ = ranked.reset()
    for _ in range(60):
        rows_a, rows_b = a[n_task:].reshape(6, -1), b[n_task:].reshape(6, -1)
        np.testing.assert_array_equal(rows_b[:, :-1], rows_a)  # the table as it was, one column more
        np.testing.assert_array_equal(b[:n_task], a[:n_task])
        fits = rows_b[:, 0] > 0
        gap, energy = rows_b[fits, -1], _marginal_energy(ranked)[fits]
        assert gap.min() == 0.0 and (gap >= 0).all() and (rows_b[~fits, -1] == 0).all()
        np.testing.assert_allclose(gap, np.log(energy / energy.min()), rtol=1e-5, atol=1e-6)
        act = int(np.flatnonzero(plain.action_masks())[0])
        a, *_ = plain.step(act)
        b, *_ = ranked.step(act)
    with pytest.raises(ConfigError, match="observe_energy: adds a column.*per-server"):
        load_gridcommand_config(scenario, observe_energy=True, run={"observation": "paper", "policy": "flat"})


def test_the_env_reads_an_active_event_from_the_observation_itself(scenario):
    # seed 2's scored episode has events (the tiny training episodes have none)
    env = GridCommandEnv(EP.evaluation_config(load_gridcommand_config(scenario), "shallow-long", 6, 2))
    obs, _ = env.reset()
    seen, truth = [], []
    while True:
        seen.append(obs)
        truth.append(env.active_command is not None)
        obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
        if terminated or truncated:
            break
    assert 0 < sum(truth) < len(truth)  # the tiny episode has decisions in and out of events
    np.testing.assert_array_equal(env.during_event(np.array(seen)), truth)
    assert env.during_event(seen[truth.index(True)]).tolist() == [True]  # one observation


def test_event_decisions_are_repeated_in_every_bc_and_the_gradient_steps_stay(scenario, monkeypatch):
    seen = []
    real = CL.behaviour_clone

    def spy(model, demos, cfg, seed, repeat=None, rows=None, report=True, batches=None):
        assert batches is None  # whole epochs, the default count
        seen.append((demos, cfg.bc_epochs, rows))
        return real(model, demos, cfg, seed, repeat, rows, report)

    monkeypatch.setattr(CL, "behaviour_clone", spy)
    cfg = EP.evaluation_config(load_gridcommand_config(scenario), "shallow-long", 6, 2)  # an episode with events
    env = GridCommandEnv(cfg)
    CL.clone(cfg, PC.PipelineConfig(clone_action="greedy", dagger_rounds=1, bc_epochs=12, event_repeat=3), 0)
    (first, e0, rows0), (aggregate, e1, rows1) = seen
    for demos, rows in ((first, rows0), (aggregate, rows1)):
        np.testing.assert_array_equal(rows, np.where(env.during_event(demos.obs), 3, 1))
        assert (rows == 3).any() and (rows == 1).any()
    assert e0 == max(1, round(12 * len(first) / rows0.sum()))  # the same steps as 12 epochs unrepeated
    assert e1 == max(1, round(round(12 * len(first) / len(aggregate)) * len(aggregate) / rows1.sum()))
    seen.clear()
    CL.clone(cfg, PC.PipelineConfig(bc_epochs=12), 0)
    assert seen[0][1:] == (12, None)  # the default shows each decision once, with the budget as it was


def test_agreement_is_split_between_event_decisions_and_the_rest(scenario):
    cfg = EP.evaluation_config(load_gridcommand_config(scenario), "shallow-long", 6, 2)  # an episode with events
    env = GridCommandEnv(cfg)
    demos = TE.demonstrate(env, "lyapunov")
    during = env.during_event(demos.obs)
    split = TE.agreement_split(env, demos, during.copy(), "a", "[0]")  # agree exactly on the event decisions
    assert split == {"a[0]": float(during.mean()), "a_event[0]": 1.0, "a_off[0]": 0.0}
    assert TE.agreement_split(env, demos, np.zeros(0, bool), "a") == {}  # no decisions: no share
    _, info = CL.clone(cfg, PC.PipelineConfig(clone_action="greedy", dagger_rounds=1, bc_epochs=2), 0)
    for whole, event, off in (("bc_agreement_after", "bc_agreement_after_event", "bc_agreement_after_off"),
                              ("dagger_agreement[0]", "dagger_agreement_event[0]", "dagger_agreement_off[0]")):
        assert 0.0 <= min(info[event], info[off]) <= info[whole] <= max(info[event], info[off]) <= 1.0


def test_rows_repeat_decisions_on_top_of_the_label_repeats(scenario):
    from ilets.agents.oinpt import with_repeats

    env = GridCommandEnv(EP.evaluation_config(load_gridcommand_config(scenario), "shallow-long", 6, 0))
    demos = TE.demonstrate(env, "lyapunov", 0)
    rows = np.ones(len(demos), np.int64)
    rows[1] = 4
    label = int(demos.acts[1])
    more = with_repeats(demos, {label: 2}, rows)
    assert len(more) == len(demos) + int((demos.acts == label).sum()) + 6  # decision 1: 2 x 4 times
    with pytest.raises(ValueError, match="rows has 1 entries"):
        with_repeats(demos, {}, rows[:1])


def test_the_chapter_reads_the_last_design_shipped_with_heldout_scores(tmp_path):
    import json

    from ilets.gridcommand.report import positive_control as C

    def ship(design: str, heldout: bool) -> None:
        cells = tmp_path / C.DESIGNS[design] / "cells"
        cells.mkdir(parents=True)
        train = {f"heldout_{k}": 0.5 for k in EP.HELDOUT_METRICS} if heldout else {}
        (cells / "bc-M50-s0.json").write_text(json.dumps({"method": "bc", "servers": 50, "seed": 0,
                                                          "status": "done", "train": train}))

    design, rows = C.heldout_design(tmp_path)
    assert design == C.HELDOUT_DESIGNS[0] and len(rows) == 0  # nothing shipped: the first, no rows
    ship(C.HELDOUT_DESIGNS[-1], True)
    design, rows = C.heldout_design(tmp_path)
    assert design == C.HELDOUT_DESIGNS[-1] and rows.to_dict("records") == [
        {"method": "bc", "servers": 50, "seed": 0, **{k: 0.5 for k in EP.HELDOUT_METRICS}}]
