"""The method table is the one place that says what each learning method adds to PPO."""

from __future__ import annotations

from ilets.config import HEURISTICS, METHODS
from ilets.method_table import LEARNERS, METHOD_LABELS, METHOD_SPECS, learners_with, method_label


def test_the_table_names_every_learning_method_once_in_order():
    assert METHODS == LEARNERS == ("drl", "drl+", "ilets-", "ilets")
    assert not set(LEARNERS) & set(HEURISTICS)


def test_components_and_labels():
    parts = {name: (s.oinpt, s.oail) for name, s in METHOD_SPECS.items() if s.scenario == "cloud"}
    assert parts == {"drl": (False, False), "drl+": (True, False), "ilets-": (False, True), "ilets": (True, True)}
    assert dict(METHOD_LABELS) == {"drl": "DRL", "drl+": "DRL+", "ilets-": "ILETS-", "ilets": "ILETS"}
    assert method_label("ilets") == "ILETS" and method_label("greedy-cost") == "greedy-cost"


def test_learners_by_component():
    assert learners_with(oinpt=True) == ("drl+", "ilets") and learners_with(oinpt=False) == ("drl", "ilets-")
    assert learners_with(oail=True) == ("ilets-", "ilets") and learners_with() == LEARNERS
    assert learners_with(oinpt=True, oail=False) == ("drl+",)


def test_reads_section_by_method():
    from ilets.method_table import reads_section

    assert not reads_section("drl", "oinpt") and not reads_section("drl", "oail") and not reads_section("drl", "experts")
    assert reads_section("drl+", "oinpt") and reads_section("drl+", "experts") and not reads_section("drl+", "oail")
    assert reads_section("ilets-", "oail") and not reads_section("ilets-", "oinpt")
    assert all(reads_section("ilets", s) for s in ("oinpt", "oail", "experts", "ppo", "observation", "reward"))
    assert not reads_section("greedy-cost", "ppo") and not reads_section("random", "observation")
    assert reads_section("greedy-cost", "fleet") and reads_section("drl", "reward")


def test_a_section_a_method_does_not_read_leaves_its_cell_unchanged(tiny_config, tmp_path):
    """What reads_section declares, checked by running: DRL with other OINPT/OAIL/expert
    settings, and a heuristic with another policy and observation, give the same metrics."""
    import dataclasses
    import json

    from ilets.method_table import reads_section
    from ilets.study.run import run_cell
    from ilets.study.verify import HOST_KEYS

    def metrics(cfg, where):
        cell = run_cell(cfg, tmp_path / where, command="test", progress=False, save_model=False)
        return {k: v for k, v in json.loads((cell / "metrics.json").read_text()).items()
                if k not in HOST_KEYS and k != "digest"}

    base = dataclasses.replace(tiny_config, method="drl")
    other = dataclasses.replace(base, oinpt=dataclasses.replace(base.oinpt, critic_pretrain=False, expert="greedy"),
                                oail=dataclasses.replace(base.oail, window_mode="upcoming"),
                                experts=dataclasses.replace(base.experts, ga_population=6))
    assert not any(reads_section("drl", s) for s in ("oinpt", "oail", "experts"))
    assert metrics(base, "a") == metrics(other, "b")
    base = dataclasses.replace(tiny_config, method="greedy-cost")
    other = dataclasses.replace(base, observation="rich", ppo=dataclasses.replace(base.ppo, n_steps=32))
    assert not reads_section("greedy-cost", "ppo") and not reads_section("greedy-cost", "observation")
    assert metrics(base, "c") == metrics(other, "d")
