"""The hindsight rung (ilets.gridcommand.experts.hindsight): an upper bound on every member by
construction, an exact replay of its own prediction, doing nothing as the counterfactual, and
its named errors; the grid profile that runs it."""

from __future__ import annotations

import numpy as np
import pytest
from test_gridcommand_experts import episode, tiny_env

from ilets.config import ConfigError
from ilets.gridcommand.experts import HindsightExpert, ReferenceExpert, make_expert
from ilets.gridcommand.metrics import episode_reward, tracking_metrics

#: the members the fast tests use (the oracle's MILP only in `make test`)
LIGHT = ("mpc-perfect", "mpc-forecast", "lyapunov", "rule", "reference")


def member(name: str):
    return ReferenceExpert() if name == "reference" else make_expert(name)


def scores(env, expert) -> dict:
    actions, info = episode(env, expert)
    return {"episode_reward": episode_reward(info["final"]),
            "tracking_mae_rel": tracking_metrics(env)["tracking_mae_rel"], "actions": actions}


@pytest.mark.parametrize("criterion", ["episode_reward", "tracking_mae_rel"])
def test_the_bound_is_no_worse_than_any_member_and_ends_where_it_predicted(criterion):
    env = tiny_env()
    alone = {name: scores(env, member(name))[criterion] for name in LIGHT}
    bound = make_expert("hindsight", members=LIGHT, criterion=criterion)
    got = scores(env, bound)[criterion]
    if criterion == "episode_reward":
        assert got >= max(alone.values()), (got, alone)
    else:
        assert got <= min(alone.values()), (got, alone)
    # the last choice's simulated episode is the real one, to the last bit
    assert got == bound.choices[-1][2]
    # the first choice is made on whole-episode simulations: each member's own score
    first = bound.choices[0]
    assert first[2] == (max if criterion == "episode_reward" else min)(alone.values())
    # switch times: the first decision, and each event's announcement and end
    assert len(bound.choices) == 1 + 2 * len(env.schedule)
    # the chosen member is not simulated again: fewer runs than members x switch times
    assert bound.simulations < len(LIGHT) * len(bound.choices)


def test_the_bound_beats_a_member_that_is_best_only_in_part():
    """Not a relabelled member: on the tiny episode the best member changes at a switch time,
    and following each in its stretch scores strictly above every member alone."""
    env = tiny_env()
    alone = {name: scores(env, member(name))["episode_reward"] for name in LIGHT}
    bound = make_expert("hindsight", members=LIGHT)
    got = scores(env, bound)["episode_reward"]
    assert len({m for _, m, _ in bound.choices}) > 1 and got > max(alone.values())


def test_a_bound_of_one_member_plays_that_member_exactly():
    env = tiny_env()
    plain = scores(env, make_expert("lyapunov"))
    alone = scores(env, make_expert("hindsight", members=("lyapunov",)))
    assert alone["actions"] == plain["actions"] and alone["episode_reward"] == plain["episode_reward"]


def test_the_reference_member_is_the_counterfactual_doing_nothing():
    env = tiny_env()
    episode(env, ReferenceExpert())
    np.testing.assert_allclose(env.realised_profile(env.slot_edges), env.baseline.power_w, rtol=1e-12)
    assert env.deferral_log == []


def test_the_bound_is_deterministic():
    env = tiny_env()
    first = scores(env, make_expert("hindsight", members=("lyapunov", "rule", "reference")))
    second = scores(env, make_expert("hindsight", members=("lyapunov", "rule", "reference")))
    assert first == second


@pytest.mark.slow
def test_with_the_oracle_member_the_bound_is_above_the_oracle():
    env = tiny_env()
    oracle = scores(env, make_expert("oracle", time_limit=None, node_limit=200))["episode_reward"]
    bound = make_expert("hindsight")  # every member; the oracle's node limit by default
    assert bound.member_options["oracle"] == {"time_limit": None, "node_limit": 200}
    assert scores(env, bound)["episode_reward"] >= oracle


@pytest.mark.parametrize("kw, match", [
    ({"members": ()}, "members: expected at least one"),
    ({"members": ("rule", "rule")}, "members: expected distinct"),
    ({"members": ("rule", "ga")}, "members: expected distinct names"),
    ({"criterion": "mean_reward"}, "criterion: expected one of"),
    ({"members": ("rule",), "member_options": {"lyapunov": {}}}, r"member_options: \['lyapunov'\] are not members"),
    ({"member_options": {"oracle": {"node_limit": None}}}, r"member_options\['oracle'\]: expected a node_limit"),
    ({"member_options": {"oracle": {"node_limit": 200, "time_limit": 2.0}}}, "a wall-clock limit"),
])
def test_named_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        make_expert("hindsight", **kw)


def test_the_grid_profile_runs_the_quick_rungs_and_gives_the_bound_the_oracle_budget():
    from ilets.gridcommand.study.scenario import load_profile, settings_digest

    bound, quick = load_profile("gridcommand-grid-hindsight"), load_profile("gridcommand-grid-quick")
    assert set(bound.methods) - {"hindsight"} <= set(quick.methods)
    oracle = quick.expert_options("oracle")
    assert bound.expert_options("hindsight") == {"member_options": {"oracle": oracle}}
    # the shared rungs' cells are the quick grid's: the same settings, the same digests
    for cell in bound.cells():
        if cell.method != "hindsight":
            assert settings_digest(bound, cell) == settings_digest(quick, cell)
    expert = make_expert("hindsight", **bound.expert_options("hindsight"))
    assert isinstance(expert, HindsightExpert) and expert.member_options["oracle"] == oracle


def test_a_grid_with_the_bound_needs_a_node_limit_and_keeps_it_to_the_oracle_seeds():
    import dataclasses

    from ilets.gridcommand.study.scenario import load_profile

    bound = load_profile("gridcommand-grid-hindsight")
    with pytest.raises(ConfigError, match="grid.oracle_node_limit: the hindsight rung"):
        dataclasses.replace(bound, oracle_node_limit=None, oracle_time_limit=2.0).validate()
    fewer = dataclasses.replace(bound, oracle_seeds=(0,)).validate()
    assert {c.seed for c in fewer.cells() if c.method == "hindsight"} == {0}


def test_the_thermostat_may_be_a_member_and_is_then_bounded_too():
    env = tiny_env()
    members = ("lyapunov", "rule", "thermostat", "reference")
    thermostat = scores(env, make_expert("thermostat"))["episode_reward"]
    bound = make_expert("hindsight", members=members)
    assert bound.members == members
    assert scores(env, bound)["episode_reward"] >= thermostat


def test_the_paper_grid_names_its_members_and_shares_the_full_window_rung_cells():
    from ilets.gridcommand.experts.hindsight import CANDIDATES
    from ilets.gridcommand.study.scenario import load_profile, settings_digest

    bound, paper = load_profile("gridcommand-grid-paper-hindsight"), load_profile("gridcommand-grid-paper")
    assert bound.scale == paper.scale == "paper" and set(bound.methods) - {"hindsight"} <= set(paper.methods)
    options = bound.expert_options("hindsight")
    # every rung of the full-window grid that is an expert is a member, and so is doing nothing
    assert set(options["members"]) == set(bound.methods) - {"hindsight"} | {"reference"}
    assert options["members"] == tuple(m for m in CANDIDATES if m in options["members"])
    assert options["member_options"] == {"oracle": paper.expert_options("oracle")}
    for cell in bound.cells():
        if cell.method != "hindsight":
            assert settings_digest(bound, cell) == settings_digest(paper, cell)
    expert = make_expert("hindsight", **options)
    assert expert.members == options["members"]


def test_bound_members_unset_keeps_the_digest_and_set_is_validated():
    import dataclasses

    from ilets.gridcommand.study.scenario import load_profile

    quick = load_profile("gridcommand-grid-hindsight")
    assert quick.bound_members is None and "members" not in quick.expert_options("hindsight")
    light = dataclasses.replace(quick, bound_members=("lyapunov", "rule")).validate()
    # without the oracle among the members, its options are not passed (they would be refused)
    assert light.expert_options("hindsight") == {"members": ("lyapunov", "rule"), "member_options": {}}
    make_expert("hindsight", **light.expert_options("hindsight"))
    for members, match in [((), ": expected at least one value"), (("rule", "rule"), ": expected distinct values"),
                           (("rule", "ga"), r"\[1\]: expected one of \(.*'rule'.*\), got 'ga'")]:
        with pytest.raises(ConfigError, match=rf"grid\.bound_members{match}"):
            dataclasses.replace(quick, bound_members=members).validate()
    without = dataclasses.replace(quick, methods=("rule",), bound_members=("rule",))
    with pytest.raises(ConfigError, match="grid.bound_members: set, .*does not run"):
        without.validate()
