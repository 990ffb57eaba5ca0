"""Configuration loading: strict keys, types and ranges, with the file and key named."""

from __future__ import annotations

import dataclasses
import re

import pytest
import yaml

from ilets.config import ConfigError, RunConfig, load_run_config, to_dict
from ilets.study.profiles import config_path, load_profile, method_defaults


def write(tmp_path, data, name="p.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_defaults_validate_and_round_trip():
    cfg = RunConfig().validate()
    assert load_run_config(None) == cfg
    assert cfg.digest() == RunConfig().digest()


def test_methods_yaml_agrees_with_the_dataclass_defaults():
    # methods.yaml restates the defaults with their reasons; the two must not drift apart
    assert method_defaults() == RunConfig()


@pytest.mark.parametrize("data, needle", [
    ({"ppo": {"n_step": 5}}, "run.ppo: unknown key(s) ['n_step']"),
    ({"ppo": {"n_steps": "many"}}, "ppo.n_steps: expected an integer"),
    ({"ppo": {"learning_rate": True}}, "ppo.learning_rate: expected a number"),
    ({"fleet": {"servers": 0}}, "fleet.servers: expected an integer in [1, 100000]"),
    ({"fleet": {"servers": -50}}, "fleet.servers"),
    ({"workload": {"scale": 2.0}}, "workload.scale: expected a number in (0, 1]"),
    ({"reward": {"theta": 1.5}}, "reward.theta"),
    ({"oail": {"window_mode": "future"}}, "oail.window_mode"),
    ({"oail": {"weights": [1.0]}}, "oail.weights: expected one weight per expert"),
    ({"method": "ppo2"}, "run.method"),
    ({"workload": {"length_mi": [3000, 500]}}, "workload.length_mi"),
])
def test_bad_values_are_named(data, needle):
    with pytest.raises(ConfigError) as err:
        load_run_config(None, **data)
    assert needle in str(err.value)


def test_profile_errors_name_the_file_and_key(tmp_path):
    path = write(tmp_path, {"methods": ["drl"], "servers": [50], "seeds": [0], "run": {"ppo": {"epochs": 3}}})
    with pytest.raises(ConfigError) as err:
        load_profile(path)
    assert str(path) in str(err.value) and "epochs" in str(err.value)
    path = write(tmp_path, {"methods": ["drl", "dqn"], "servers": [50], "seeds": [0]})
    with pytest.raises(ConfigError, match=r"\.methods\[1\]: expected a method of .*got 'dqn'"):
        load_profile(path)
    path = write(tmp_path, {"methods": ["drl"], "servers": [0], "seeds": [0]})
    with pytest.raises(ConfigError, match=r"\.servers\[0\]: expected a server count in \[1, 100000\], got 0"):
        load_profile(path)
    path = write(tmp_path, {"methods": ["drl"], "servers": [50], "seeds": [0], "colour": "red"})
    with pytest.raises(ConfigError, match="colour"):
        load_profile(path)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_profile(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("methods: [drl\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_profile(bad)
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_profile(bad)


@pytest.mark.parametrize("name", ["smoke", "quick", "paper"])
def test_shipped_profiles_load(name):
    p = load_profile(name)
    main = len(p.methods) * len(p.servers) * len(p.seeds)
    extra = sum(len(v.methods or p.methods) * len(v.servers or p.servers) * len(v.seeds or p.seeds)
                for v in p.variants)
    assert p.name == name and len(p.cells()) == main + extra
    names = [c.variant for c in p.cells()]
    assert names.count("") == main and {v.name for v in p.variants} == set(names) - {""}
    assert config_path(name).is_file()


def test_paper_profile_is_the_full_study():
    p = load_profile("paper")
    assert p.run.workload.scale == 1.0 and sorted(p.servers) == [50, 100, 200] and len(p.seeds) == 10
    assert {"drl", "drl+", "ilets-", "ilets"} <= set(p.methods)


def test_paper_profile_has_the_variants_that_could_explain_a_difference():
    # issue: no critic pre-training, the greedy expert, the upcoming window, the rich state,
    # heavy load and the pilot's rejected reward form, at 50 and 200 servers, >= 5 seeds
    p = load_profile("paper")
    variants = {v.name: v for v in p.variants}
    assert {"no-critic", "greedy-expert", "upcoming", "rich-state", "heavy-load", "reward-capped"} <= set(variants)
    for v in variants.values():
        assert {50, 200} <= set(v.servers or p.servers) and len(v.seeds or p.seeds) >= 5, v.name
    # main cells come first, so a partial grid is the main study first
    variant_of = [c.variant for c in p.cells()]
    assert variant_of[:len(p.methods) * len(p.servers) * len(p.seeds)] == [""] * (len(p.methods) * 30)


def test_digest_changes_with_any_field():
    a = RunConfig()
    b = dataclasses.replace(a, ppo=dataclasses.replace(a.ppo, n_epochs=5))
    assert a.digest() != b.digest()
    assert to_dict(a)["ppo"]["n_epochs"] == 2


def test_variant_effect_on_a_hand_worked_table():
    import pandas as pd

    from ilets.report.deviations import DEVIATIONS, variant_effect

    rows = [{"variant": "", "method": "drl", "servers": 50, "seed": s, "avg_response_s": 2.0,
             "energy_kwh": 1.0, "success_rate": 0.5} for s in range(3)]
    rows += [{"variant": "fast", "method": "drl", "servers": 50, "seed": s, "avg_response_s": 1.5,
              "energy_kwh": 1.0, "success_rate": 0.6} for s in range(3)]
    out = variant_effect(pd.DataFrame(rows), "fast").set_index("metric")
    assert out.loc["avg_response_s", "change_pct"] == pytest.approx(-25.0)  # 1.5 / 2.0 - 1
    assert out.loc["success_rate", "change_pct"] == pytest.approx(20.0)  # 0.6 / 0.5 - 1
    assert out.loc["energy_kwh", "change_pct"] == pytest.approx(0.0)
    assert (out["ci_low_pct"] <= out["change_pct"]).all() and (out["change_pct"] <= out["ci_high_pct"]).all()
    # every variant a deviation names exists in the quick profile, so its effect is measured
    quick = {v.name for v in load_profile("quick").variants}
    assert {d.variant for d in DEVIATIONS if d.variant} <= quick


# --- values that must be refused at load time (NaN, inf, impossible ranges, bad names) ----

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("data, needle", [
    # misspelled or unknown OAIL experts: an ILETS- cell would silently be DRL
    ({"oail": {"experts": ["gaa", "pso"]}}, "oail.experts[0]: expected an expert of"),
    ({"oail": {"experts": ["ga", "slow:x:ga"]}}, "oail.experts[1]: expected an expert of"),
    ({"oail": {"experts": ["slow:1:gaa", "ga"]}}, "oail.experts"),
    ({"oail": {"experts": [], "weights": []}}, "oail.experts: expected at least one"),
    # OINPT's expert: a registered one or a team of them joined by "+" (ilets.expert_table)
    ({"oinpt": {"expert": "ga+psoo"}}, "oinpt.expert: expected experts of"),
    ({"oinpt": {"expert": "ga+ga"}}, "oinpt.expert: expected experts of"),
    ({"oinpt": {"expert": ""}}, "oinpt.expert: expected experts of"),
    # NaN and inf, which every range comparison lets through
    ({"fleet": {"capacity_levels": [0.25, NAN, 1.0]}}, "fleet.capacity_levels[1]: expected a finite number"),
    ({"reward": {"deadline_penalty": NAN}}, "reward.deadline_penalty: expected a finite number"),
    ({"reward": {"wait_scale_s": INF}}, "reward.wait_scale_s: expected a finite number"),
    ({"workload": {"length_mi": [500.0, INF]}}, "workload.length_mi[1]: expected a finite number"),
    ({"workload": {"deadline_s": [INF, INF]}}, "workload.deadline_s[0]: expected a finite number"),
    ({"fleet": {"mips": [600.0, INF]}}, "fleet.mips[1]: expected a finite number"),
    ({"ppo": {"gamma": NAN}}, "ppo.gamma: expected a finite number"),
    ({"experts": {"pso_inertia": -INF}}, "experts.pso_inertia: expected a finite number"),
    # impossible ranges
    ({"oail": {"weights": [-0.6, 0.4]}}, "oail.weights[0]: expected a number >= 0"),
    ({"oail": {"weights": [0.0, 0.0]}}, "oail.weights: expected weights >= 0 with a positive sum"),
    ({"oail": {"learning_rate": -1.0}}, "oail.learning_rate: expected a number > 0"),
    ({"oinpt": {"learning_rate": 0.0}}, "oinpt.learning_rate: expected a number > 0"),
    ({"ppo": {"clip_range": -1.0}}, "ppo.clip_range: expected a number > 0"),
    ({"ppo": {"learning_rate": -1.0}}, "ppo.learning_rate: expected a number > 0"),
    ({"ppo": {"ent_coef": -0.1}}, "ppo.ent_coef: expected a number >= 0"),
    ({"reward": {"deadline_penalty": -1.0}}, "reward.deadline_penalty: expected a number >= 0"),
    ({"fleet": {"idle_w": [0.0, 0.0], "active_w": [0.0, 0.0]}}, "maximum power is > 0"),
    ({"fleet": {"idle_w": [-5.0, 10.0]}}, "fleet.idle_w"),
    ({"fleet": {"capacity_levels": [0.0, 0.5, 1.0]}}, "fleet.capacity_levels[0]: expected a number > 0"),
    ({"oail": {"latency_s": INF}}, "oail.latency_s"),
    ({"seed": -1}, "run.seed: expected an integer in [0, 4294967295]"),
    ({"seed": 2**63}, "run.seed: expected an integer in [0, 4294967295]"),
    ({"fleet": {"seed": 2**32}}, "fleet.seed"),
    ({"workload": {"scale": 10**400}}, "workload.scale: expected a finite number"),
])
def test_nan_inf_and_impossible_values_are_named(data, needle):
    with pytest.raises(ConfigError) as err:
        load_run_config(None, **data)
    assert needle in str(err.value)


@pytest.mark.parametrize("experts", [["ga", "pso"], ["greedy"], ["slow:0.5:greedy", "ga"], ["crash", "ga"],
                                     ["exit", "pso"]])
def test_real_and_fault_injection_experts_are_accepted(experts):
    cfg = load_run_config(None, oail={"experts": experts, "weights": [1.0] * len(experts)})
    assert cfg.oail.experts == tuple(experts)


def test_nan_set_in_code_is_caught_by_validate():
    # dataclasses.replace bypasses the YAML coercion: validate() checks every float too
    cfg = dataclasses.replace(RunConfig(), reward=dataclasses.replace(RunConfig().reward, theta=NAN))
    with pytest.raises(ConfigError, match=r"run\.reward\.theta: expected a finite number"):
        cfg.validate()


def test_yaml_nan_in_a_profile_names_the_file(tmp_path):
    path = tmp_path / "nan.yaml"
    path.write_text("methods: [random]\nservers: [5]\nseeds: [0]\nrun:\n  reward: {deadline_penalty: .nan}\n")
    with pytest.raises(ConfigError) as err:
        load_profile(path)
    assert str(path) in str(err.value) and "reward.deadline_penalty: expected a finite number" in str(err.value)


def test_duplicate_yaml_keys_are_refused_naming_key_and_file(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("methods: [random]\nservers: [5]\nseeds: [0]\nrun:\n  ppo: {n_steps: 32}\n  ppo: {n_steps: 64}\n")
    with pytest.raises(ConfigError) as err:
        load_profile(path)
    msg = str(err.value)
    assert str(path) in msg and "duplicate key 'ppo'" in msg and "line 6" in msg and "\n" not in msg
    path.write_text("methods: [random]\nmethods: [drl]\nservers: [5]\nseeds: [0]\n")
    with pytest.raises(ConfigError, match="duplicate key 'methods'"):
        load_profile(path)


def test_empty_profile_is_an_error(tmp_path):
    for text in ("", "# only a comment\n", "{}\n"):
        path = tmp_path / "empty.yaml"
        path.write_text(text)
        with pytest.raises(ConfigError, match=re.escape(str(path)) + ": empty profile"):
            load_profile(path)


@pytest.mark.parametrize("name", ["../../evil", "a/b", ".hidden", "", "x y"])
def test_profile_name_must_be_a_plain_folder_name(tmp_path, name):
    path = write(tmp_path, {"name": name, "methods": ["random"], "servers": [5], "seeds": [0]})
    with pytest.raises(ConfigError, match=re.escape(str(path)) + r"\.name"):
        load_profile(path)


def test_variant_must_be_a_mapping_with_a_plain_name(tmp_path):
    base = {"methods": ["random"], "servers": [5], "seeds": [0]}
    path = write(tmp_path, {**base, "variants": {"v": ["random"]}})
    with pytest.raises(ConfigError, match=re.escape(str(path)) + r"\.variants\.v: expected a mapping"):
        load_profile(path)
    path = write(tmp_path, {**base, "variants": {"v": {"run": 3}}})
    with pytest.raises(ConfigError, match=r"variants\.v\.run: expected a mapping"):
        load_profile(path)
    path = write(tmp_path, {**base, "variants": {"../x": {"methods": ["random"]}}})
    with pytest.raises(ConfigError, match=r"variants: name '\.\./x'"):
        load_profile(path)


def test_seed_out_of_range_in_a_profile(tmp_path):
    path = write(tmp_path, {"methods": ["random"], "servers": [5], "seeds": [2**63]})
    with pytest.raises(ConfigError, match=r"seed: expected an integer in \[0, 4294967295\]"):
        load_profile(path)


@pytest.mark.parametrize("workers", [0, -1])
def test_a_profile_without_workers_is_refused(tmp_path, workers):
    path = write(tmp_path, {"methods": ["random"], "servers": [5], "seeds": [0], "workers": workers})
    with pytest.raises(ConfigError) as err:
        load_profile(path)
    assert str(err.value) == f"{path}.workers: expected an integer >= 1, got {workers}"
    path = write(tmp_path, {"methods": ["random"], "servers": [5], "seeds": [0], "workers": 1})
    assert load_profile(path).workers == 1


# --- issue 20: profiles, YAML numbers, wrong types --------------------------------------

def test_variant_cannot_be_set_from_run(tmp_path):
    from ilets.study.profiles import load_profile

    for text, key in (("run: {variant: heavy}\n", ".run.variant"),
                      ("variants: {heavy: {run: {variant: other}}}\n", ".variants.heavy.run.variant")):
        path = tmp_path / "p.yaml"
        path.write_text("methods: [random]\nservers: [5]\nseeds: [0]\n" + text)
        with pytest.raises(ConfigError, match=re.escape(f"{path}{key}")):
            load_profile(path)


def test_a_variants_unknown_method_is_named_at_the_variant(tmp_path):
    from ilets.study.profiles import load_profile

    path = tmp_path / "p.yaml"
    path.write_text("methods: [random]\nservers: [5]\nseeds: [0]\nvariants: {heavy: {methods: [dqn]}}\n")
    with pytest.raises(ConfigError, match=re.escape(f"{path}.variants.heavy.methods: unknown method(s) ['dqn']")):
        load_profile(path)


@pytest.mark.parametrize("text, value", [("1e9", 1e9), ("2e-3", 2e-3), ("-1.5E+2", -150.0), ("2.5e3", 2500.0),
                                         ("1_000e-3", 1.0)])
def test_yaml_numbers_in_exponent_form_are_numbers(tmp_path, text, value):
    from ilets.config import read_yaml

    path = tmp_path / "c.yaml"
    path.write_text(f"x: {text}\ny: '{text}'\n")
    data = read_yaml(path)
    assert data["x"] == value and isinstance(data["x"], float)
    assert data["y"] == text  # quoted, it stays a string


def test_an_exponent_scale_loads(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("workload: {scale: 2e-3}\nppo: {learning_rate: 3e-4}\n")
    cfg = load_run_config(path)
    assert cfg.workload.scale == 0.002 and cfg.ppo.learning_rate == 3e-4


def test_a_folder_given_as_the_profile_says_so(tmp_path):
    with pytest.raises(ConfigError, match=re.escape(f"{tmp_path}: is a folder; expected a YAML file")):
        load_profile(tmp_path)


def test_a_scale_too_small_for_one_task_fails_at_load(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("workload: {scale: 1.0e-6}\n")
    with pytest.raises(ConfigError, match=re.escape(f"{path}.workload.scale: 1e-06 gives no task")):
        load_run_config(path)
    load_run_config(None, workload={"scale": 1e-5})  # a few tasks in each half: fine


def test_too_few_demonstrations_for_one_batch_fail_at_load(tmp_path):
    # at 1e-5 the offline half has 3 tasks: behaviour cloning needs a batch of 64
    path = tmp_path / "p.yaml"
    path.write_text("methods: [drl, drl+]\nservers: [5]\nseeds: [0]\nrun: {workload: {scale: 1.0e-5}}\n")
    with pytest.raises(ConfigError, match=re.escape(f"{path}.run.oinpt.batch_size: 64")):
        load_profile(path)
    path.write_text("methods: [drl, random]\nservers: [5]\nseeds: [0]\nrun: {workload: {scale: 1.0e-5}}\n")
    load_profile(path)  # methods without demonstrations need none


@pytest.mark.parametrize("make, expected", [
    (lambda C: C.WorkloadConfig(scale="0.002"), "WorkloadConfig.scale: expected a number (float), got str '0.002'"),
    (lambda C: C.FleetConfig(servers=True), "FleetConfig.servers: expected an integer (int), got bool True"),
    (lambda C: C.FleetConfig(servers=5.0), "FleetConfig.servers: expected an integer (int)"),
    (lambda C: C.FleetConfig(mips=(600.0, "1800")), "FleetConfig.mips[1]: expected a number (float)"),
    (lambda C: C.PPOConfig(fast_rollout="yes"), "PPOConfig.fast_rollout: expected true or false (bool)"),
    (lambda C: C.RunConfig(method=3), "RunConfig.method: expected a string (str)"),
    (lambda C: C.RunConfig(fleet={"servers": 5}), "RunConfig.fleet: expected a FleetConfig, got dict"),
])
def test_config_dataclasses_refuse_a_wrong_type(make, expected):
    import ilets.config as C

    with pytest.raises(TypeError, match=re.escape(expected)):
        make(C)


def test_config_dataclasses_keep_what_they_accepted():
    from ilets.config import FleetConfig, WorkloadConfig

    # an int where a float is expected is a number: accepted as given (digests unchanged)
    assert WorkloadConfig(scale=1).scale == 1 and FleetConfig(servers=7, mips=(600, 1800)).mips == (600, 1800)
    assert RunConfig().digest() == load_run_config(None).digest()


def test_the_synthetic_task_counts_are_the_papers():
    from ilets.config import SYNTHETIC_TASKS
    from ilets.workloads.trace import PAPER_OFFLINE_TASKS, PAPER_ONLINE_TASKS

    assert SYNTHETIC_TASKS == {"offline": PAPER_OFFLINE_TASKS, "online": PAPER_ONLINE_TASKS}


@pytest.mark.slow
def test_every_shipped_cell_keeps_its_digest():
    # fields added since (ADDED_FIELDS, nested ones included) leave every shipped name valid
    from pathlib import Path

    from ilets import cell_pack
    from ilets.config import digest_of, from_dict
    from ilets.config.strict import parse_yaml

    root = Path(__file__).resolve().parents[1] / "shipped"
    # in either layout: a shipped folder's cells are one table (ilets.cell_pack)
    configs = [cell / "config.yaml" for folder in sorted(root.iterdir()) for cell in cell_pack.cell_paths(folder)
               if cell_pack.is_file(cell / "config.yaml")]
    assert len(configs) > 400
    for path in configs:
        plain = parse_yaml(cell_pack.read_text(path), path)
        digest = path.parent.name.rsplit("-", 1)[1]
        assert digest_of(plain) == digest, path
        assert from_dict(RunConfig, plain, str(path)).digest() == digest, path


def test_the_oail_request_timeout_counts_in_the_digest_only_when_changed():
    base = RunConfig()
    plain = to_dict(base)
    del plain["oail"]["request_timeout_s"]
    from ilets.config import digest_of

    assert digest_of(plain) == base.digest()  # as before the field existed
    changed = dataclasses.replace(base, oail=dataclasses.replace(base.oail, request_timeout_s=5.0))
    assert changed.digest() != base.digest()
    assert to_dict(base)["oail"]["request_timeout_s"] == 60.0  # digest_of left its argument as it was


@pytest.mark.parametrize("config", [{"workload": {"scale": 0.001}}, "quick"])
def test_gym_make_refuses_a_config_that_is_not_a_run_config(config):
    import gymnasium as gym

    import ilets

    with pytest.raises(TypeError, match="expected a RunConfig"):
        gym.make(ilets.ENV_ID, config=config)
