"""The grid-command observation's layout: the run's blocks (``paper``, ``rich`` or a table
layout), then the command's (:func:`ilets.gridcommand.features.grid_blocks`).

Apart from the environment's step logic: which block sits where is decided once, when the
env is made, and read back from an observation (:func:`during_event`) without stepping it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ilets.agents.observation import TABLE_LAYOUTS, FeatureBlock, ServerTable
from ilets.gridcommand.features import CommandShape, EventTiming, RowColumns, SleepRows, TermRows, grid_blocks


def observation_layout(env: Any) -> tuple[tuple[FeatureBlock, ...], tuple[int, int] | None]:
    """The blocks of ``env``'s observation (a :class:`ilets.gridcommand.env.GridCommandEnv`,
    its fleet, run layout, speed levels and configuration set) and, for a table layout, its
    ``(task numbers, row width)`` (``table_layout``; None otherwise): the run's layout, then
    the command's blocks (which read the env); a table layout (one row per server,
    ``per-server``) takes them after its task numbers, before the rows, so the per-server
    policy reads them in its pooled summary."""
    state, m = env.state, len(env.fleet)
    if state.features not in TABLE_LAYOUTS:
        return state.blocks + grid_blocks(env), None
    n_task, width = TABLE_LAYOUTS[state.features]
    head, rows = state.blocks[:1], state.blocks[1:]
    # one row per (level, server) with speed levels: the policy scores every placement;
    # one more column with observe_energy
    cfg = env.config
    if len(env.speeds) > 1 or cfg.observe_energy or cfg.observe_sleep or cfg.observe_terms:
        plain = ServerTable(env.speeds, env.power_factors, energy_gap=cfg.observe_energy)
        table: ServerTable | RowColumns = SleepRows(plain, env) if cfg.observe_sleep else plain  # two sleep columns
        if cfg.observe_terms:  # and the Lyapunov teacher's terms
            table = TermRows(table, env)
        rows, width = (table,), table.width
    command = grid_blocks(env)
    return head + command + rows, (n_task + sum(b.size(m) for b in command), width)


def during_event(blocks: tuple[FeatureBlock, ...], servers: int, obs: np.ndarray) -> np.ndarray:
    """Whether each observation of the layout ``blocks`` on ``servers`` servers (a row of
    ``obs``, or one observation) was made while an event was active
    (:meth:`ilets.gridcommand.env.GridCommandEnv.during_event`)."""
    rows = np.atleast_2d(np.asarray(obs))
    start, at = 0, {}
    for block in blocks:
        at[type(block)] = start
        start += block.size(servers)
    shape, timing = at[CommandShape], at[EventTiming]
    shown = (rows[:, shape] > 0) | (rows[:, shape + 1] > 0)
    return shown & (rows[:, timing] == 0) & (rows[:, timing + 1] > 0)
