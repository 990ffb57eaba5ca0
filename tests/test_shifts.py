"""Shifted worlds (:mod:`ilets.study.shifts`): the declared family, and frozen shipped
policies beside a heuristic on tiny shifted windows (paired, resumable, deterministic)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from ilets import cell_pack
from ilets.config import ConfigError
from ilets.study import shifts as SH

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "shipped" / "per-server"
TINY = {"scale": 0.001}  # a few hundred online tasks instead of the paper window's 259,368


def _family(tmp_path, **shifts):
    spec = {"name": "tiny", "description": "test", "source": "per-server", "learners": ["drl+"],
            "heuristics": ["earliest-finish"], "servers": [50], "seeds": [0],
            "shifts": {"none": {"factor": "none", "changes": {"workload": TINY}}, **shifts}}
    path = tmp_path / "family.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))  # the reference first, as written
    return path


def test_the_shipped_family_moves_one_factor_per_shift():
    family = SH.load_family()
    assert family.shifts[0].name == "none" and family.learners == ("drl", "drl+", "ilets-", "ilets")
    factors = {s.factor for s in family.shifts}
    assert {"arrival rate", "bursts", "trend", "CPU-request mix", "task lengths", "deadlines", "objective weight",
            "fleet speed", "fleet power", "fleet size", "expert quality"} <= factors
    for s in family.shifts:  # one section, one field each, or a fleet-size transfer with no change
        fields = [f for section in s.changes.values() for f in section]
        assert len(fields) == (0 if s.factor in ("none", "fleet size", "expert quality") else 1), s
        # an expert-quality shift changes one thing of the training instead, and not the world
        assert len([f for section in s.train.values() for f in section]) == (s.factor == "expert quality"), s
    assert family.conditions == ("frozen", "online", "online-oail")
    assert family.continuing == ("drl+",)
    online = len(family.conditions) - 1
    per_seed = sum(len(family.learners_of(s)) + online * len(set(family.continuing) & set(family.learners_of(s)))
                   + len(family.heuristics) for s in family.shifts)
    jobs = SH.plan(family)
    assert len(jobs) == len(family.seeds) * per_seed
    # within a seed, every one-pass evaluation comes before the first online run
    first = [j for j in jobs if j.seed == family.seeds[0]]
    kinds = [j.condition in ("online", "online-oail") for j in first]
    assert kinds == sorted(kinds) and any(kinds)


@pytest.mark.parametrize("shift, message", [
    ({"factor": "x", "changes": {"workload": {"rate_factor": -1}}}, "shifts.bad.changes.workload.rate_factor"),
    ({"factor": "x", "changes": {"weather": {"rain": 1}}}, "shifts.bad.changes: expected sections among"),
    ({"factor": "x", "changes": {"reward": {"thetaa": 0.1}}}, "thetaa"),
    ({"factor": "x", "chnages": {}}, "shifts.bad: expected a mapping with 'factor'"),
])
def test_a_wrong_shift_is_named_with_its_file_and_field(tmp_path, shift, message):
    path = _family(tmp_path, bad=shift)
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")) as err:
        SH.load_family(path)
    assert str(path) in str(err.value)


def test_an_unknown_shift_to_run_is_a_one_line_error(tmp_path, capsys):
    path = _family(tmp_path)
    assert SH.main(["--family", str(path), "--source", str(SOURCE), "--out", str(tmp_path / "o"),
                    "--shifts", "none,rate-x9"]) == 2
    err = capsys.readouterr().err
    assert "--shifts: ['rate-x9']" in err and "family 'tiny'" in err and "Traceback" not in err
    assert SH.main(["--family", str(path), "--source", str(SOURCE), "--out", str(tmp_path / "o"),
                    "--conditions", "online"]) == 2  # the tiny family runs frozen policies only
    err = capsys.readouterr().err
    assert "--conditions: ['online']" in err and "family 'tiny'" in err and "Traceback" not in err
    # a filter keeps its jobs only: the heuristic's row alone
    table = SH.run_family(SH.load_family(path), SOURCE, tmp_path / "h", workers=1, progress=False,
                          conditions=("heuristic",))
    assert list(table["kind"]) == ["heuristic"]


def test_online_learners_must_be_among_the_learners(tmp_path):
    path = _family(tmp_path)
    spec = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**spec, "online_learners": ["ilets"]}))
    with pytest.raises(ConfigError, match="online_learners: .*among the learners") as err:
        SH.load_family(path)
    assert str(path) in str(err.value)


def test_frozen_policies_and_heuristics_run_paired_resume_and_repeat(tmp_path):
    path = _family(tmp_path, **{"rate-x2": {"factor": "arrival rate",
                                            "changes": {"workload": {**TINY, "rate_factor": 2.0}}},
                                "theta-0.7": {"factor": "objective weight",
                                              "changes": {"workload": TINY, "reward": {"theta": 0.7}}}})
    family = SH.load_family(path)
    table = SH.run_family(family, SOURCE, tmp_path / "a", workers=1, progress=False)
    assert len(table) == 6 and set(table["kind"]) == {"learner", "heuristic"}
    tasks = table.groupby("shift")["tasks"].first()
    assert tasks["rate-x2"] == pytest.approx(2 * tasks["none"], abs=1) and tasks["theta-0.7"] == tasks["none"]
    by = table.set_index(["shift", "actor"])
    # theta changes only the reward's weighting: the heuristic's schedule, hence its response time, stays
    assert by.loc[("theta-0.7", "earliest-finish"), "avg_response_s"] == by.loc[("none", "earliest-finish"),
                                                                               "avg_response_s"]
    assert by.loc[("theta-0.7", "earliest-finish"), "mean_reward"] != by.loc[("none", "earliest-finish"), "mean_reward"]
    record = json.loads((tmp_path / "a" / "shifts.json").read_text())
    assert record["evaluations"] == 6 and record["cpu_hours"] > 0 and record["family"]["name"] == "tiny"
    # resumable: a second run computes nothing; deterministic: another folder gets the same numbers
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "a" / "rows").iterdir()}
    SH.run_family(family, SOURCE, tmp_path / "a", workers=1, progress=False)
    assert stamps == {p.name: p.stat().st_mtime_ns for p in (tmp_path / "a" / "rows").iterdir()}
    again = SH.run_family(family, SOURCE, tmp_path / "b", workers=1, progress=False)
    cols = ["key", "tasks", "avg_response_s", "success_rate", "energy_kwh", "mean_reward"]
    assert again[cols].equals(table[cols])


def test_the_command_names_a_missing_source_without_a_traceback(tmp_path, capsys):
    assert SH.main(["--family", str(_family(tmp_path)), "--source", str(tmp_path / "nowhere"),
                    "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "nowhere: --source: " in err and "folder with cells/" in err and "Traceback" not in err


def test_a_warm_start_loads_the_cells_policy_and_only_learners_without_oinpt_take_one(tmp_path):
    import dataclasses

    import torch

    from ilets.study.run import run_cell
    from ilets.study.verify import recorded_config

    cell = cell_pack.cell_paths(SOURCE, "drl+-M50-s0-*")[0]  # a row of the shipped folder's table
    base = recorded_config(cell)
    with pytest.raises(ConfigError, match="run.warm_start: .*replaces OINPT's clone"):
        dataclasses.replace(base, warm_start=str(cell)).validate()
    # a learning rate of 1e-30 (Adam's steps are about that long): the run keeps the weights it
    # started from, so they must be the cell's
    ppo = dataclasses.replace(base.ppo, learning_rate=1e-30)
    cfg = dataclasses.replace(base, method="drl", warm_start=str(cell), ppo=ppo,
                              workload=dataclasses.replace(base.workload, **TINY)).validate()
    folder = run_cell(cfg, tmp_path)
    start, end = (torch.load(io.BytesIO(cell_pack.read_bytes(p / "policy" / "policy.pt")), weights_only=True)
                  for p in (cell, folder))
    assert start.keys() == end.keys() and all(torch.allclose(start[k], end[k], rtol=0, atol=1e-12) for k in start)


def test_a_learner_keeps_learning_in_a_shifted_world_as_a_cell_of_its_own(tmp_path):
    path = _family(tmp_path)
    spec = yaml.safe_load(path.read_text())
    spec.update(conditions=["frozen", "online"], heuristics=[])
    path.write_text(yaml.safe_dump(spec))
    family = SH.load_family(path)
    assert [j.key for j in SH.plan(family)] == ["none--drl+-M50-s0", "none--drl+@online-M50-s0"]
    table = SH.run_family(family, SOURCE, tmp_path / "o", workers=1, progress=False).set_index("condition")
    assert table.loc["online", "tasks"] == table.loc["frozen", "tasks"] and table.loc["online", "cpu_s"] > 0
    (online,) = (tmp_path / "o" / "cells").iterdir()
    assert online.name.startswith("drl@shift-none-drl+-M50-s0-")
    assert yaml.safe_load((online / "config.yaml").read_text())["warm_start"].endswith(table.loc["online", "cell"])


def test_an_expert_quality_shift_trains_its_learner_anew_and_counts_the_training_once(tmp_path):
    # the source cell's DRL+ trained again cloning labels half of which are random, on a tiny window
    train = {"workload": TINY, "oinpt": {"label_noise": 0.5, "max_demo_tasks": 60, "bc_epochs": 1, "batch_size": 32}}
    path = _family(tmp_path, noisy={"factor": "expert quality", "learners": ["drl+"], "train": train,
                                    "changes": {"workload": TINY}})
    spec = yaml.safe_load(path.read_text())
    spec.update(learners=["drl", "drl+"], conditions=["frozen", "online"], online_learners=["drl+"])
    path.write_text(yaml.safe_dump(spec, sort_keys=False))  # the reference stays first
    family = SH.load_family(path)
    keys = [j.key for j in SH.plan(family)]
    assert "noisy--drl-M50-s0" not in keys and {"noisy--drl+-M50-s0", "noisy--drl+@online-M50-s0"} <= set(keys)
    table = SH.run_family(family, SOURCE, tmp_path / "o", workers=1, progress=False)
    noisy = table[table["shift"] == "noisy"].set_index("condition")
    trained = tmp_path / "o" / "cells" / noisy.loc["frozen", "cell"]
    assert trained.name.startswith("drl+@shift-noisy-M50-s0-")
    metrics = json.loads((trained / "metrics.json").read_text())
    assert 0.3 < metrics["bc_labels_changed"] < 0.6  # half redrawn, a few redrawn to the expert's own
    assert noisy.loc["frozen", "train_cpu_s"] == metrics["cpu_s"]
    assert yaml.safe_load((tmp_path / "o" / "cells").glob("drl@*noisy*").__next__().joinpath(
        "config.yaml").read_text())["warm_start"].endswith(trained.name)  # continues from the noisy clone
    assert SH.cpu_seconds(table) == pytest.approx(table["cpu_s"].sum() + metrics["cpu_s"])


@pytest.mark.parametrize("shift, message", [
    ({"factor": "x", "train": {"reward": {"theta": 0.1}}}, "shifts.bad.train: expected sections among"),
    ({"factor": "x", "train": {"oinpt": {"label_noise": 2}}}, "shifts.bad.train.oinpt.label_noise: expected a share"),
    ({"factor": "x", "learners": ["ilets"]}, "shifts.bad.learners: expected a list among the learners"),
])
def test_a_wrong_training_change_is_named(tmp_path, shift, message):
    path = _family(tmp_path, bad=shift)
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        SH.load_family(path)


def test_shipping_copies_the_gathered_results_with_a_provenance_in_units(tmp_path):
    path = _family(tmp_path)
    family = SH.load_family(path)
    SH.run_family(family, SOURCE, tmp_path / "o", workers=1, progress=False)
    # a stopped run left rows only: --gather makes the table and its record from them
    (tmp_path / "o" / "shifts.parquet").unlink()
    assert SH.main(["--family", str(path), "--out", str(tmp_path / "o"), "--gather", "--source", str(SOURCE)]) == 0
    assert len(pd.read_parquet(tmp_path / "o" / "shifts.parquet")) == 2
    assert SH.main(["--family", str(path), "--out", str(tmp_path / "nothing"), "--gather"]) == 2
    assert SH.main(["--family", str(path), "--out", str(tmp_path / "o"), "--ship", str(tmp_path / "s"),
                    "--note", "tiny"]) == 0
    prov = json.loads((tmp_path / "s" / "PROVENANCE.json").read_text())
    assert prov["units"] == prov["planned_units"] == 2 and prov["note"] == "tiny" and prov["cpu_hours"] > 0
    # the study's one provenance schema, from each row's own record of where it ran
    from ilets.study.run import source_version

    here = source_version()
    commit = (here["commit"] or "unrecorded") + ("+dirty" if here["dirty"] else "")
    assert prov["cells"] == 2 and prov["commits"] == {commit: 2} and sum(prov["machines"].values()) == 2
    assert {p.name for p in (tmp_path / "s").iterdir()} == {"shifts.parquet", "shifts.json", "PROVENANCE.json"}


def test_a_variant_learner_of_a_worlds_like_grid_runs_frozen_in_its_own_world(tmp_path, tiny_config):
    """``method@variant`` names a variant's cell; a flat cell with only model.zip gets its
    policy/ written from it (export_policy); the evaluation uses the cell's own fleet."""
    import dataclasses
    import shutil

    from ilets.report.shifts import learner_label
    from ilets.study.run import run_cell

    grid = tmp_path / "grid"
    fleet = dataclasses.replace(tiny_config.fleet, seed=3)  # a world of its own, as the worlds grid draws
    cell = run_cell(dataclasses.replace(tiny_config, method="drl", variant="v", fleet=fleet).validate(), grid)
    assert (cell / "model.zip").is_file() and (cell / "policy").is_dir()
    shutil.rmtree(cell / "policy")  # a flat cell computed before flat cells kept their weights
    spec = {"name": "tiny-worlds", "description": "test", "source": "grid", "learners": ["drl@v"],
            "heuristics": ["earliest-finish"], "servers": [10], "seeds": [0],
            "shifts": {"none": {"factor": "none", "changes": {}},
                       "theta-0.7": {"factor": "objective weight", "changes": {"reward": {"theta": 0.7}}}}}
    path = tmp_path / "family.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    table = SH.run_family(SH.load_family(path), grid, tmp_path / "o", workers=1, progress=False)
    assert (cell / "policy" / "policy.pt").is_file()
    learner = table[table["kind"] == "learner"]
    assert set(learner["actor"]) == {"drl@v"} and set(learner["cell"]) == {cell.name} and len(table) == 4
    # the heuristic's world is the cell's: its fleet (seed 3), not the main grid's (seed 0)
    from ilets.study.evaluate import evaluate
    from ilets.workloads.workload import load_workload

    online = load_workload(tiny_config.workload, 0).online
    own = evaluate("earliest-finish", online, 10, seed=0, fleet_seed=3).metrics["mean_reward"]
    row = table[(table["shift"] == "none") & (table["actor"] == "earliest-finish")]
    assert float(row["mean_reward"].iloc[0]) == own
    assert own != evaluate("earliest-finish", online, 10, seed=0, fleet_seed=0).metrics["mean_reward"]
    assert learner_label("drl+@per-server") == "DRL+ (per-server)" and learner_label("drl") == "DRL"


def test_the_worlds_family_sets_both_designs_in_ten_worlds():
    family = SH.load_family(SH.DEFAULT_FAMILY.with_name("shifts-worlds.yaml"))
    assert family.learners == ("drl", "drl+", "drl@per-server", "drl+@per-server") and len(family.seeds) == 10
    assert "fleet size" not in {s.factor for s in family.shifts}  # a flat policy reads one fleet size only
    assert family.conditions == ("frozen",) and family.shifts[0].factor == "none"
