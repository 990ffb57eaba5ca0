"""The batch class (``batch_share``): a seeded share of the tasks is deferrable work with a
deadline of hours on the episode's clock; ``max_deferrals`` binds the interactive tasks only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ilets.config import ConfigError
from ilets.gridcommand.batch import batch_mask, batch_slack_s, with_batch
from ilets.gridcommand.config import load_gridcommand_config, settings_plain
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.metrics import evaluate
from ilets.gridcommand.teacher import expert_policy


def test_the_slack_is_on_the_episode_clock_as_event_durations_are():
    assert batch_slack_s(4.0, 1500.0) == pytest.approx(250.0)  # 4 h of the day in the paper's window
    assert batch_slack_s(4.0, 30.0) == pytest.approx(5.0)  # the quick scale's 30-s window
    assert batch_slack_s(3.0, 1500.0) == pytest.approx(187.5)  # the longest shallow-long event


def test_the_mask_is_drawn_from_the_seed_alone_and_only_lengthens_deadlines():
    a, b = batch_mask(10_000, 0.3, 7), batch_mask(10_000, 0.3, 7)
    assert np.array_equal(a, b) and not np.array_equal(a, batch_mask(10_000, 0.3, 8))
    assert abs(a.mean() - 0.3) < 0.02 and not batch_mask(50, 0.0, 7).any()
    env = GridCommandEnv(load_gridcommand_config("smoke"))
    tasks = env.tasks
    marked = with_batch(tasks, a[:len(tasks)], 5.0)
    batch = a[:len(tasks)]
    assert np.array_equal(marked.deadline[~batch], tasks.deadline[~batch])
    assert np.array_equal(marked.deadline[batch], np.maximum(tasks.deadline[batch], 5.0))
    assert np.array_equal(marked.arrival, tasks.arrival) and np.array_equal(marked.length, tasks.length)
    assert with_batch(tasks, np.zeros(len(tasks), bool), 5.0) is tasks


def test_no_batch_share_is_the_scenario_unchanged_and_left_out_of_the_digest():
    smoke = load_gridcommand_config("smoke")
    assert smoke.batch_share == 0.0 and "batch_share" not in settings_plain(smoke)
    assert "batch_share" in settings_plain(dataclasses.replace(smoke, batch_share=0.2))
    assert not GridCommandEnv(smoke).batch.any()


def test_a_batch_task_may_be_deferred_past_max_deferrals_while_it_can_meet_its_deadline():
    cfg = dataclasses.replace(load_gridcommand_config("smoke"), batch_share=0.5)
    env = GridCommandEnv(cfg)
    env.reset(seed=0)
    counts: dict[int, int] = {}
    done = False
    while not done:
        task = env.current_task
        mask = env.action_masks()
        if mask[-1]:
            counts[task.index] = counts.get(task.index, 0) + 1
            # an interactive task is refused a deferral past the cap; a batch task is not
            assert env.batch[task.index] or env.deferrals_of_current < cfg.max_deferrals
        _, _, term, trunc, _ = env.step(env.defer_action if mask[-1] else int(np.flatnonzero(mask[:-1])[0]))
        done = term or trunc
    batch = [n for i, n in counts.items() if env.batch[i]]
    assert max(batch) > cfg.max_deferrals  # deferred again and again
    assert max(n for i, n in counts.items() if not env.batch[i]) <= cfg.max_deferrals


def test_an_expert_defers_batch_work_through_a_cut_and_the_run_is_deterministic():
    cfg = dataclasses.replace(load_gridcommand_config("smoke"), batch_share=0.5)
    one, two = (evaluate(expert_policy("rule"), cfg, seed=0) for _ in range(2))
    assert one == two
    plain = evaluate(expert_policy("rule"), load_gridcommand_config("smoke"), seed=0)
    assert one["deferrals"] > plain["deferrals"]


@pytest.mark.parametrize("knob, value", [("batch_share", 1.5), ("batch_share", -0.1), ("batch_slack_h", 0.0),
                                         ("batch_slack_h", 30.0)])
def test_a_bad_batch_knob_is_named(tmp_path, knob, value):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"extends: gridcommand-smoke\n{knob}: {value}\n")
    with pytest.raises(ConfigError, match=rf"bad\.yaml\.{knob}: expected") as err:
        load_gridcommand_config(bad)
    assert "\n" not in str(err.value)
