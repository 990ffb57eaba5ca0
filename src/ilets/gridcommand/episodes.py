"""Which episodes a grid-command method learns and is scored on.

Episodes [ours]: the clone is made on the workload's *offline* segment under the training
regime, with that regime's commands drawn from their own seed (``seed + TRAIN_COMMAND_OFFSET``:
the online and offline windows are equally long, so the run seed would draw the same
command pattern shifted by one window); with ``train_episodes`` also on other workloads'
offline segments (:func:`training_episodes`). Every method is scored on the *online* segment
(:func:`evaluation_config`); with ``pipeline.heldout`` its final policy also on another
workload's online segment (:func:`heldout_config`).
"""

from __future__ import annotations

import dataclasses

from ilets.config import ConfigError
from ilets.gridcommand.command import REGIMES
from ilets.gridcommand.config import GridCommandConfig
from ilets.gridcommand.pipeline_config import PipelineConfig

#: Training commands are drawn with ``seed + TRAIN_COMMAND_OFFSET`` [ours] (module docstring).
TRAIN_COMMAND_OFFSET = 10_000
#: A clone's further training episodes (``train_episodes``) take the offline segment of the
#: workload of run seed ``seed * train_episode_stride + TRAIN_EPISODE_OFFSET + k``, k = 1, 2, ...
#: [ours]: workloads no grid scores (the scored episode is the run seed's online segment, the held-out one
#: ``seed + HELDOUT_SEED_OFFSET``'s).
TRAIN_EPISODE_OFFSET = 40_000
#: The held-out episode's workload and command seed: the run seed plus this [ours]
HELDOUT_SEED_OFFSET = 20_000
#: What the held-out episode records (``heldout_<name>``).
HELDOUT_METRICS = ("tracking_mae_rel", "success_rate", "episode_reward", "in_band_fraction", "deferrals")


def scenario_config(base: GridCommandConfig, regime: str, servers: int, seed: int, segment: str,
                    command_seed: int = -1) -> GridCommandConfig:
    """``base`` with the regime, fleet size, run seed, workload segment and command seed set."""
    if regime not in REGIMES:
        raise ValueError(f"regime: expected one of {tuple(REGIMES)}, got {regime!r}")
    run = dataclasses.replace(base.run, seed=seed, fleet=dataclasses.replace(base.run.fleet, servers=servers))
    return dataclasses.replace(base, run=run, regime=regime, commands=(), segment=segment,
                               command_seed=command_seed).validate()


def training_config(base: GridCommandConfig, regime: str, servers: int, seed: int) -> GridCommandConfig:
    """The training episode's configuration: offline segment, commands from their own seed."""
    return scenario_config(base, regime, servers, seed, "offline", seed + TRAIN_COMMAND_OFFSET)


def training_base(base: GridCommandConfig, pipe: PipelineConfig, where: str = "pipeline") -> GridCommandConfig:
    """The scenario a clone's training episodes are drawn from (``train_days``): ``base``
    itself at 0 or at its own window; else ``base`` with ``window_days`` set to ``train_days``
    and the workload scale cut in the same proportion (a day keeps its tasks). Only those two
    fields change, so the observation and action spaces are the scored episodes'. A named
    :class:`ConfigError` when the shorter scenario is not valid."""
    days = pipe.train_days
    if not days or days == base.window_days:
        return base
    workload = base.run.workload
    run = dataclasses.replace(base.run, workload=dataclasses.replace(
        workload, scale=workload.scale * days / base.window_days))
    try:
        return dataclasses.replace(base, run=run, window_days=days).validate()
    except ConfigError as err:
        raise ConfigError(f"{where}.train_days: {days:g} days of training episodes do not fit the scenario "
                          f"({err})") from None


def training_episodes(train_cfg: GridCommandConfig, n: int, stride: int = 1) -> list[GridCommandConfig]:
    """The ``n`` episodes a clone learns from (``train_episodes``): ``train_cfg`` (the run's
    training episode, :func:`training_config`), then the offline segments of the workloads of
    run seeds ``seed * stride + TRAIN_EPISODE_OFFSET + k`` (``train_episode_stride``) with
    commands from their own seeds (``+ TRAIN_COMMAND_OFFSET``), on the same fleet and under the
    same regime."""
    first = train_cfg.run.seed * stride + TRAIN_EPISODE_OFFSET
    more = [dataclasses.replace(train_cfg, run=dataclasses.replace(train_cfg.run, seed=first + k),
                                command_seed=first + k + TRAIN_COMMAND_OFFSET).validate()
            for k in range(1, n)]
    return [train_cfg, *more]


def evaluation_config(base: GridCommandConfig, regime: str, servers: int, seed: int) -> GridCommandConfig:
    """The scored episode's configuration: online segment, commands from the run seed."""
    return scenario_config(base, regime, servers, seed, "online")


def heldout_config(base: GridCommandConfig, regime: str, servers: int, seed: int) -> GridCommandConfig:
    """The held-out episode: the online segment of another workload (run seed ``seed`` plus
    :data:`HELDOUT_SEED_OFFSET`), with its own commands, the same fleet: no method saw it."""
    return scenario_config(base, regime, servers, seed + HELDOUT_SEED_OFFSET, "online")

