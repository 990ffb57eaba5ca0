"""The Lyapunov teacher's terms in each server's row (``observe_terms``, :class:`TermRows`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from ilets.config import ConfigError
from ilets.gridcommand.config import load_gridcommand_config, settings_plain
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts import make_expert
from ilets.gridcommand.features import TERM_ROW_FEATURES, TERM_SCALE

PER_SERVER = {"policy": "per-server", "observation": "per-server"}


def _scenario(**fields):
    return load_gridcommand_config("smoke", run=PER_SERVER, observe_queues=True, **fields)


def _terms(env: GridCommandEnv, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the table's rows, each row's term columns) of one observation."""
    n_task, width = env.table_layout
    rows = obs[n_task:].reshape(len(env.fleet), width).astype(np.float64)
    return rows, rows[:, width - len(TERM_ROW_FEATURES):]


def _lyapunov_from_rows(env: GridCommandEnv, obs: np.ndarray, expert) -> int:
    """Lyapunov's choice recomputed from the observation alone: a fixed linear combination of
    its rows' expm1 (its weights V and V wait_weight), as the columns promise."""
    rows, terms = _terms(env, obs)
    lift = np.expm1(terms)
    ws = env.state.wait_scale_s
    wait = np.expm1(rows[:, 1]) * ws  # the table's wait column: log1p(wait / wait_scale_s)
    energy = lift[:, 0] / TERM_SCALE
    now = expert.v * (energy + expert.wait_weight * wait) + (lift[:, 1] - lift[:, 2] + lift[:, 3]) / TERM_SCALE
    later = expert.v * (energy + expert.wait_weight * np.expm1(terms[:, 4]) * ws) + lift[:, 5] / TERM_SCALE
    mask = env.action_masks()
    m = len(env.fleet)
    servers = mask[:m]
    score = np.where(servers, now, np.inf)
    best = int(np.argmin(score))
    if mask[env.defer_action]:
        pick = servers if servers.any() else np.ones(m, bool)
        if np.min(np.where(pick, later, np.inf)) + 1e-12 < score[best]:
            return int(env.defer_action)
    return best


def test_the_rows_give_lyapunovs_choice_along_its_episode():
    """Along Lyapunov's episode (with events and deferrals), the teacher's choice is the argmin
    of a linear combination of the term columns' expm1, on all but float32's near-ties; the
    columns are finite and within the declared bounds."""
    cfg = _scenario(observe_terms=True)
    env = GridCommandEnv(cfg)
    expert = make_expert("lyapunov")
    expert.reset()
    obs, _ = env.reset(seed=0)
    high = env.observation_space.high
    agree, defers, debt, steps = 0, 0, 0, 0
    done = False
    while not done and steps < 3000:
        assert np.all(np.isfinite(obs)) and np.all(obs >= 0) and np.all(obs <= high)
        assert np.isclose(env.queues.q_deadline, expert.q_deadline)  # the teacher's after the last placement
        a = int(expert.act(env))
        assert np.isclose(env.queues.q_track, expert.q_track)  # the teacher's step at this decision
        agree += _lyapunov_from_rows(env, obs, expert) == a
        defers += a == env.defer_action
        debt += bool(_terms(env, obs)[1][:, 1].any())
        obs, _, done, _, _ = env.step(a)
        steps += 1
    assert defers > 0 and debt > 0  # the episode exercises the deferral and the tracking term
    assert agree >= 0.995 * steps, (agree, steps)


def test_terms_off_keeps_the_table_and_the_digest():
    """Off (the default), the rows are as before and the field is left out of the settings."""
    plain, on = GridCommandEnv(_scenario()), GridCommandEnv(_scenario(observe_terms=True))
    assert on.table_layout[1] == plain.table_layout[1] + len(TERM_ROW_FEATURES)
    assert "observe_terms" not in settings_plain(_scenario())
    assert settings_plain(_scenario(observe_terms=True))["observe_terms"] is True


@pytest.mark.parametrize("fields, says", [
    ({"observe_terms": True, "observe_queues": False}, "observe_queues: true"),
    ({"observe_terms": True, "run": {"policy": "flat", "observation": "rich"}}, "run.observation: per-server"),
    ({"observe_terms": "yes"}, "expected true or false"),
])
def test_terms_need_the_queues_and_the_table(fields, says):
    fields = dict(fields)
    run = fields.pop("run", PER_SERVER)
    fields.setdefault("observe_queues", True)
    with pytest.raises(ConfigError, match=rf"observe_terms: .*{says}|observe_terms: {says}"):
        load_gridcommand_config("smoke", run=run, **fields)


def test_the_terms_design_is_the_own_workloads_fleet_twin_with_the_film_the_later_rows_and_the_terms():
    """Its profile is the own-workloads design learned on 50 servers but for its scenario, and
    that scenario is the film design's with deferral per row and the terms."""
    from ilets.study.command_scenario import load_profile

    terms, twin = load_profile("gridcommand-grid-per-server-terms"), load_profile(
        "gridcommand-grid-per-server-episodes-own-from50")
    assert dataclasses.replace(terms, name=twin.name, description=twin.description, scenario=twin.scenario) == twin
    film = load_profile("gridcommand-grid-per-server-film").scenario_config()
    mine = terms.scenario_config()
    assert mine.observe_terms and mine.run.defer_head == "rows" and mine.run.server_film == 4
    assert dataclasses.replace(mine, observe_terms=False, run=dataclasses.replace(mine.run, defer_head="pooled")) == film


def test_the_terms_design_is_read_beside_the_design_that_learns_on_the_same_fleets():
    from test_gridcommand_per_server import _store_rows

    from ilets.report import command_control as C

    terms = next(iter(C.TERMS_DESIGN))
    base = C.LATER_DESIGNS[terms]
    assert base == next(iter(C.OWN_FROM50_DESIGN))
    assert C.design_profile(C.TERMS_DESIGN[terms]) == "gridcommand-grid-per-server-terms"
    rows = _store_rows({base: 0.60, terms: 0.31})
    mine = rows["design"] == terms
    assert C.later_sentence(rows[~mine], terms) == "The design with the teacher's terms in each row has not run."
    said = C.later_sentence(pd.concat([rows[~mine], rows[mine & (rows["seed"] < 2)]]), terms, reps=300)
    assert said.startswith("On the seeds both designs have (2: 0, 1): ")
    before, after = said.split(f'the clone of design "{terms}"')
    assert "misses the bar" in before and "meets the bar" in after
