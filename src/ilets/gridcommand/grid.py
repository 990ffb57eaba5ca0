"""The grid-command scenario's grid profile: methods x fleet sizes x seeds, trained under
one regime and scored under two; what each cell of such a grid is and how it is named.

One *cell* is (method, servers, seed): the method is trained (or, for an expert, used as it
is) under the profile's ``train_regime`` and scored by :func:`ilets.gridcommand.metrics.evaluate`
on the online segment under ``train_regime`` (in distribution) and ``eval_regime`` (drift),
on the same workload draw (:func:`ilets.gridcommand.pipeline.run_method`). The study runs,
stores and ships these grids like its own (:mod:`ilets.study.scenario`, scenario
``gridcommand``)::

    ilets grid --scenario gridcommand --profile gridcommand-quick --out results/gridcommand-quick
    ilets ship --scenario gridcommand --results results/gridcommand-quick --to shipped/gridcommand

Profiles (``ilets/configs/gridcommand-grid-*.yaml``, :class:`GridProfile`) are loaded
strictly: an unknown key, a wrong type or an impossible value raises
:class:`ilets.config.ConfigError` naming the file and the key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from ilets.config import ConfigError, from_dict, read_yaml
from ilets.gridcommand.command import REGIMES
from ilets.gridcommand.config import GridCommandConfig, load_gridcommand_config
from ilets.gridcommand.pipeline import METHODS, PipelineConfig

#: The regime labels of a cell's two scores.
ROLES = ("train", "eval")


@dataclass(frozen=True)
class GridProfile:
    """What a grid-command grid runs (one YAML file)."""

    name: str = "gridcommand-grid"
    description: str = ""
    scale: str = "quick"  #: the label every table and sentence carries ("smoke", "quick", "paper")
    scenario: str = "gridcommand-quick"  #: the scenario profile (a gridcommand-* name or a path)
    methods: tuple[str, ...] = METHODS
    servers: tuple[int, ...] = (50, 200)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    train_regime: str = "shallow-long"
    eval_regime: str = "deep-short"
    #: seeds the oracle runs on (empty: every seed); its MILP is the grid's slowest cell [ours]
    oracle_seeds: tuple[int, ...] = ()
    oracle_window: int = 60  #: tasks per oracle MILP window
    #: branch-and-bound nodes per oracle solve: the same cut on any host (chosen on pilot
    #: seeds by :mod:`ilets.gridcommand.pilot`) [ours]
    oracle_node_limit: int | None = 50
    #: seconds per oracle solve, None: none. A wall-clock limit cuts a hard window at a
    #: point that depends on the host's speed and load, so the grids use the node limit
    oracle_time_limit: float | None = None
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)

    def validate(self, where: str = "grid") -> "GridProfile":
        """Named :class:`ConfigError` for every impossible value; returns self."""
        if self.scale not in ("smoke", "quick", "paper"):
            raise ConfigError(f"{where}.scale: expected 'smoke', 'quick' or 'paper', got {self.scale!r}")
        if not self.methods:
            raise ConfigError(f"{where}.methods: expected at least one method of {METHODS}")
        for i, m in enumerate(self.methods):
            if m not in METHODS:
                raise ConfigError(f"{where}.methods[{i}]: unknown method {m!r}; expected one of {METHODS}")
        for key in ("methods", "servers", "seeds"):
            values = getattr(self, key)
            if len(set(values)) != len(values):
                raise ConfigError(f"{where}.{key}: repeated entries in {list(values)}")
        if not self.servers or any(s < 1 for s in self.servers):
            raise ConfigError(f"{where}.servers: expected fleet sizes >= 1, got {list(self.servers)}")
        if not self.seeds or any(s < 0 for s in self.seeds):
            raise ConfigError(f"{where}.seeds: expected seeds >= 0, got {list(self.seeds)}")
        for key in ("train_regime", "eval_regime"):
            if getattr(self, key) not in REGIMES:
                raise ConfigError(f"{where}.{key}: expected one of {tuple(REGIMES)}, got {getattr(self, key)!r}")
        missing = sorted(set(self.oracle_seeds) - set(self.seeds))
        if missing:
            raise ConfigError(f"{where}.oracle_seeds: {missing} are not among the grid's seeds {list(self.seeds)}")
        if self.oracle_window < 1:
            raise ConfigError(f"{where}.oracle_window: expected >= 1 task, got {self.oracle_window}")
        if self.oracle_time_limit is not None and not self.oracle_time_limit > 0:
            raise ConfigError(f"{where}.oracle_time_limit: expected > 0 s or null, got {self.oracle_time_limit}")
        if self.oracle_node_limit is not None and self.oracle_node_limit < 1:
            raise ConfigError(f"{where}.oracle_node_limit: expected >= 1 node or null, got {self.oracle_node_limit}")
        if self.oracle_node_limit is None and self.oracle_time_limit is None:
            raise ConfigError(f"{where}: oracle_node_limit and oracle_time_limit are both null; a hard "
                              "window could then run for hours: set one (the node limit is host-independent)")
        self.pipeline.validate(f"{where}.pipeline")
        return self

    @property
    def regimes(self) -> dict[str, str]:
        """``{"train": regime, "eval": regime}``."""
        return {"train": self.train_regime, "eval": self.eval_regime}

    def expert_options(self, method: str) -> dict:
        """Keyword options of :func:`ilets.gridcommand.experts.make_expert` for ``method``."""
        if method == "oracle":
            return {"window": self.oracle_window, "time_limit": self.oracle_time_limit,
                    "node_limit": self.oracle_node_limit}
        return {}


def grid_profile_path(name: str) -> Path:
    """The path of a shipped grid profile: ``gridcommand-grid-quick``, ``gridcommand-quick``
    (as ``ilets grid --scenario gridcommand --profile`` takes it) or just ``quick``."""
    short = name.removeprefix("gridcommand-grid-").removeprefix("gridcommand-")
    return Path(str(resources.files("ilets.configs").joinpath(f"gridcommand-grid-{short}.yaml")))


def load_grid_profile(name_or_path: str | Path) -> GridProfile:
    """A validated :class:`GridProfile` from a shipped name (``quick``, ``gridcommand-quick``,
    ``gridcommand-grid-quick``) or a YAML path; its scenario profile must load too."""
    text = str(name_or_path)
    path = Path(text) if text.endswith((".yaml", ".yml")) or os.sep in text else grid_profile_path(text)
    data = read_yaml(path)
    where = str(path)
    if not data:  # an empty file would otherwise be the default grid: every method, 50 cells
        raise ConfigError(f"{where}: empty profile; expected a mapping with methods, servers, seeds and scenario")
    pipe = data.pop("pipeline", {}) or {}
    if not isinstance(pipe, dict):
        raise ConfigError(f"{where}.pipeline: expected a mapping, got {type(pipe).__name__}")
    profile = from_dict(GridProfile, {**data, "pipeline": pipe}, where).validate(where)
    scenario_of(profile)  # a bad scenario profile fails here, before any cell runs
    return profile


def scenario_of(profile: GridProfile) -> GridCommandConfig:
    """The profile's scenario configuration (workload scale, reward, learners)."""
    return load_gridcommand_config(profile.scenario)


@dataclass(frozen=True)
class Cell:
    """One cell of a grid-command grid: a method on a fleet size with a seed."""

    method: str
    servers: int
    seed: int

    @property
    def name(self) -> str:
        """``<method>-M<servers>-s<seed>``: the name of the cell's file (never changed once shipped)."""
        return f"{self.method}-M{self.servers}-s{self.seed}"


def cells(profile: GridProfile) -> list[Cell]:
    """The grid's cells, seed by seed (each seed's methods finish together, so a partial grid
    already holds paired comparisons), the oracle on ``oracle_seeds`` only when given."""
    out = []
    for seed in profile.seeds:
        for servers in profile.servers:
            for method in profile.methods:
                if method == "oracle" and profile.oracle_seeds and seed not in profile.oracle_seeds:
                    continue
                out.append(Cell(method, servers, seed))
    return out


def planned_cells(profile: Mapping[str, Any]) -> int:
    """How many cells a grid profile plans, from the profile as data (``OUT/profile.json``)."""
    return len(cells(from_dict(GridProfile, dict(profile), "profile.json")))
