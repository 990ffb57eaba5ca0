"""The Lyapunov teacher's terms in each server's row (``observe_terms``, :class:`TermRows`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ilets.agents.per_server import FILM_CLAMP
from ilets.config import ConfigError
from ilets.gridcommand.config import load_gridcommand_config, settings_plain
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts import make_expert
from ilets.gridcommand.features import TERM_ROW_FEATURES, TERM_SCALE

PER_SERVER = {"policy": "per-server", "observation": "per-server"}


def _scenario(**fields):
    fields.setdefault("run", PER_SERVER)
    return load_gridcommand_config("smoke", observe_queues=True, **fields)


def _terms(env: GridCommandEnv, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the table's rows, each row's term columns) of one observation."""
    n_task, width = env.table_layout
    rows = obs[n_task:].reshape(len(env.fleet), width).astype(np.float64)
    return rows, rows[:, width - len(TERM_ROW_FEATURES):]


def _scores_from_rows(env: GridCommandEnv, obs: np.ndarray, expert, clamp: float = np.inf) -> np.ndarray:
    """Lyapunov's scores recomputed from the observation alone (placements, then defer; inf
    where masked), less the wait since arrival every action shares: a fixed linear combination
    of its rows' expm1 (its weights V and V wait_weight), as the columns promise; with
    ``clamp``, the columns clamped first, as the film term reads them."""
    rows, terms = _terms(env, obs)
    lift = np.expm1(np.minimum(terms, clamp))
    ws = env.state.wait_scale_s
    wait = np.expm1(rows[:, 1]) * ws  # the table's wait column: log1p(wait / wait_scale_s)
    energy = lift[:, 0] / TERM_SCALE
    now = expert.v * (energy + expert.wait_weight * wait) + (lift[:, 1] - lift[:, 2] + lift[:, 3]) / TERM_SCALE
    later = expert.v * (energy + expert.wait_weight * lift[:, 4] * ws) + lift[:, 5] / TERM_SCALE
    mask = env.action_masks()
    m = len(env.fleet)
    servers = mask[:m]
    out = np.full(m + 1, np.inf)
    out[:m] = np.where(servers, now, np.inf)
    if mask[env.defer_action]:
        pick = servers if servers.any() else np.ones(m, bool)
        out[m] = np.min(np.where(pick, later, np.inf)) + 1e-12
    return out


def _follow(cfg, max_steps: int) -> dict[str, int]:
    """Play Lyapunov along ``cfg``'s episode; at every decision check the columns against its
    scores (to float32's rounding) and count the decisions where the argmin of the clamped
    columns' combination is its choice."""
    env = GridCommandEnv(cfg)
    expert = make_expert("lyapunov")
    expert.reset()
    obs, _ = env.reset(seed=0)
    high = env.observation_space.high
    seen = {"steps": 0, "agree": 0, "defers": 0, "debt": 0, "credit": 0, "misses": 0}
    done = False
    while not done and seen["steps"] < max_steps:
        assert np.all(np.isfinite(obs)) and np.all(obs >= 0) and np.all(obs <= high)
        assert np.isclose(env.queues.q_deadline, expert.q_deadline)  # the teacher's after the last placement
        task = env.current_task
        a = int(expert.act(env))
        assert np.isclose(env.queues.q_track, expert.q_track)  # the teacher's step at this decision
        shared = expert.v * expert.wait_weight * (float(env.now) - task.arrival)
        teacher = expert.last_scores
        mine = _scores_from_rows(env, obs, expert) + shared
        np.testing.assert_array_equal(np.isfinite(mine), np.isfinite(teacher))
        ok = np.isfinite(teacher)
        np.testing.assert_allclose(mine[ok], teacher[ok], rtol=1e-5, atol=1e-9)
        seen["agree"] += int(np.argmin(_scores_from_rows(env, obs, expert, FILM_CLAMP))) == a
        terms = _terms(env, obs)[1]
        seen["defers"] += a == env.defer_action
        seen["debt"] += bool(terms[:, 1].any())
        seen["credit"] += bool(terms[:, 2].any())
        seen["misses"] += bool(terms[:, 3].any())
        obs, _, done, _, _ = env.step(a)
        seen["steps"] += 1
    return seen


#: the smoke scenario's down event, then an up event, so both tracking columns are exercised
_DOWN_UP = [{"direction": "down", "depth": 0.25, "depth_unit": "fraction", "start_after_s": 0.5, "duration_s": 1.2,
             "notice_s": 0.3, "ramp_s": 0.2, "band": 0.2},
            {"direction": "up", "depth": 1.5, "depth_unit": "fraction", "start_after_s": 2.0, "duration_s": 0.8,
             "notice_s": 0.3, "ramp_s": 0.1, "band": 0.05}]


def test_the_rows_give_lyapunovs_scores_along_its_episode():
    """Along Lyapunov's episode (a down and an up event, deferrals, misses), its score of every
    allowed action is the linear combination of the term columns' expm1, to float32's
    rounding; with the columns clamped as the film term reads them, the argmin is still its
    choice on all but near-ties; every column is finite and within its bounds."""
    # the smoke scenario's 10 servers fall behind the down event (debt, deferrals); 22 fall
    # behind the up event (credit) and start its tasks within defer_s
    for servers, exercised in ((10, ("defers", "debt", "misses")), (22, ("credit",))):
        seen = _follow(_scenario(observe_terms=True, commands=_DOWN_UP,
                                 run={**PER_SERVER, "fleet": {"servers": servers}}), 3000)
        assert min(seen[key] for key in exercised) > 0, seen
        assert seen["agree"] >= 0.995 * seen["steps"], seen


@pytest.mark.slow
def test_the_rows_give_lyapunovs_scores_in_the_terms_design():
    """The same in the terms design's own scenario (the energy-ranked table, the sleep lever,
    50 servers), along a whole training episode."""
    from ilets.gridcommand import episodes as EP
    from ilets.gridcommand.study.scenario import load_profile

    grid = load_profile("gridcommand-grid-per-server-terms")
    seen = _follow(EP.training_config(grid.scenario_config(), grid.train_regime, 50, 0), 10_000)
    assert seen["debt"] > 0 and seen["agree"] >= 0.995 * seen["steps"], seen


def test_terms_off_keeps_the_table_and_the_digest():
    """On, each row is the plain row followed by the terms, and everything before the rows is
    unchanged; off (the default), the field is left out of the settings."""
    plain, on = GridCommandEnv(_scenario()), GridCommandEnv(_scenario(observe_terms=True))
    (n_task, width), (n_on, width_on) = plain.table_layout, on.table_layout
    assert n_on == n_task and width_on == width + len(TERM_ROW_FEATURES)
    a, b = plain.reset(seed=0)[0], on.reset(seed=0)[0]
    np.testing.assert_array_equal(a[:n_task], b[:n_task])
    np.testing.assert_array_equal(a[n_task:].reshape(-1, width), b[n_task:].reshape(-1, width_on)[:, :width])
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


def test_the_terms_design_has_a_control_without_the_terms_read_beside_it():
    """The control's profile is the terms design's but for its scenario, which is the terms
    scenario without the terms; it is read beside the terms design."""
    from ilets.gridcommand.report import positive_control as C
    from ilets.gridcommand.study.scenario import load_profile

    control, terms = load_profile("gridcommand-grid-per-server-film-later"), load_profile(
        "gridcommand-grid-per-server-terms")
    assert dataclasses.replace(control, name=terms.name, description=terms.description,
                               scenario=terms.scenario) == terms
    assert dataclasses.replace(terms.scenario_config(), observe_terms=False) == control.scenario_config()
    assert (C.CONTROL_DESIGN, C.TERMS_DESIGN) == (control.name, terms.name) and C.PRIVILEGED == (C.TERMS_DESIGN,)
