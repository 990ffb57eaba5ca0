"""The expert table: every row builds its expert, and what derives from it agrees with it."""

from __future__ import annotations

import dataclasses

import pytest

from ilets.agents.experts import EXPERTS, make_expert
from ilets.config import ExpertConfig, RewardConfig
from ilets.expert_table import (EXPERT_LABELS, EXPERT_NAMES, EXPERT_SPECS, REFERENCE_EXPERT, SEARCH_EXPERTS,
                                expert_label, setting_meanings, team)


@pytest.mark.parametrize("name", EXPERT_NAMES)
def test_every_row_builds_its_expert_with_the_settings_given(name):
    cfg = ExpertConfig(miss_penalty=2.5, ga_population=7, pso_particles=5)
    reward = RewardConfig(theta=0.6)
    expert = make_expert(name, cfg, reward)
    assert expert.name == name
    assert expert.reward == reward
    assert getattr(expert, "cfg", cfg) == cfg and getattr(expert, "miss_penalty", cfg.miss_penalty) == 2.5


def test_the_derived_names_follow_the_table():
    assert EXPERTS == EXPERT_NAMES == tuple(EXPERT_SPECS) == ("ga", "pso", "greedy")
    assert REFERENCE_EXPERT == "greedy" and SEARCH_EXPERTS == ("ga", "pso")
    assert [s.reference for s in EXPERT_SPECS.values()].count(True) == 1
    assert dict(EXPERT_LABELS) == {"ga": "GA", "pso": "PSO", "greedy": "greedy"}
    assert all(s.meaning and "\n" not in s.meaning for s in EXPERT_SPECS.values())


def test_an_unknown_name_is_refused_naming_the_table():
    with pytest.raises(ValueError, match=r"expert 'sa'; .*'ga', 'pso', 'greedy'"):
        make_expert("sa")


def test_teams_are_registered_names_joined_by_plus():
    assert team("ga+pso") == ("ga", "pso") and team("greedy") == ("greedy",)
    assert expert_label("ga+pso") == "GA+PSO" and expert_label("pso") == "PSO"
    assert expert_label("earliest-finish") == "earliest-finish"  # not an expert: printed as it is
    with pytest.raises(ValueError, match=r"unknown expert\(s\) \['sa'\]"):
        team("ga+sa")
    with pytest.raises(ValueError, match="names an expert twice"):
        team("ga+ga")


def test_the_settings_table_covers_every_expert_setting_once():
    meanings = setting_meanings()
    assert set(meanings) == {f.name for f in dataclasses.fields(ExpertConfig)}
    own = [k for s in EXPERT_SPECS.values() for k in s.settings]
    assert len(own) == len(set(own))
    # the chapter's order: shared settings first, then each expert's own
    assert list(meanings)[:3] == ["window", "candidates", "miss_penalty"]
