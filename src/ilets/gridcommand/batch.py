"""The batch class: deferrable tasks with a deadline of hours, beside the interactive ones [ours].

A real data centre follows a cut mostly by postponing work that can wait (batch jobs,
training, indexing), not by slowing what a user waits for. ``batch_share`` of an episode's
tasks are drawn into the batch class, each task independently from the run seed's own
stream (so the class of a task does not depend on which policy runs). A batch task keeps
its CPU request and length; its deadline becomes the longer of its own and the batch slack,
``batch_slack_h`` hours of the day the window stands for, put on the episode's clock as the
events' durations are (``DAY_TO_WINDOW``, then ``window / 1500`` at a reduced workload
scale: :func:`ilets.gridcommand.command.generate_schedule`). The environment lets a batch
task be deferred as long as it can still meet that deadline (``max_deferrals`` binds the
interactive tasks only), so an expert or a learner can move batch work out of a down event.
The rule and Lyapunov rungs decide each deferral from the mask and the task's deadline, so
they use the class as it is; the MPC and oracle rungs still plan every task's deferrals up to
``max_deferrals`` (their models have no class of tasks) [ours].
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ilets.gridcommand.command import DAY_TO_WINDOW, PAPER_ONLINE_WINDOW_S
from ilets.workloads.workload import TaskTable

#: Second word of the batch draw's seed ("btch" in ASCII): independent of the workload and
#: the commands drawn from the same run seed [ours].
_STREAM = 0x62746368


def batch_slack_s(slack_h: float, window_s: float) -> float:
    """A batch deadline of ``slack_h`` hours of the day, in seconds of a window ``window_s`` long."""
    return slack_h * 3600.0 * DAY_TO_WINDOW * (window_s / PAPER_ONLINE_WINDOW_S)


def batch_mask(n: int, share: float, seed: int) -> np.ndarray:
    """Which of ``n`` tasks are batch: each with probability ``share``, from ``seed``'s own stream."""
    if share <= 0:
        return np.zeros(n, bool)
    return np.random.default_rng([seed, _STREAM]).random(n) < share


def with_batch(tasks: TaskTable, batch: np.ndarray, slack_s: float) -> TaskTable:
    """``tasks`` with every batch task's deadline the longer of its own and ``slack_s``."""
    if not batch.any():
        return tasks
    deadline = np.where(batch, np.maximum(tasks.deadline, slack_s), tasks.deadline)
    return dataclasses.replace(tasks, deadline=deadline)
