"""Experiment profiles: a grid of cells (methods x fleet sizes x seeds) plus run settings.

A profile is a YAML file (``smoke``, ``quick`` and ``paper`` ship in ``ilets/configs``; any
path works too) with the keys of :class:`Profile`. Its ``run`` mapping overrides the
method hyperparameters of ``ilets/configs/methods.yaml``, which override the dataclass
defaults. Everything is validated when the profile is loaded, before any cell runs: an
unknown key, a wrong type or an impossible value raises :class:`ilets.config.ConfigError`
naming the file and the key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ilets.config import HEURISTICS, METHODS, ConfigError, RunConfig, from_dict, merge, read_yaml

BUILTIN = ("smoke", "quick", "paper")


@dataclass(frozen=True)
class Profile:
    """A grid of cells and the settings shared by all of them."""

    name: str = "custom"
    description: str = ""
    methods: tuple[str, ...] = METHODS + HEURISTICS
    servers: tuple[int, ...] = (50, 100, 200)
    seeds: tuple[int, ...] = (0,)
    workers: int = 2  #: cells run at once by the local executor
    run: RunConfig = field(default_factory=RunConfig)

    def cells(self) -> list[RunConfig]:
        """One validated RunConfig per (method, servers, seed), in a stable order."""
        out = []
        for servers in self.servers:
            for seed in self.seeds:
                for method in self.methods:
                    cfg = dataclasses.replace(self.run, method=method, seed=seed,
                                              fleet=dataclasses.replace(self.run.fleet, servers=servers))
                    out.append(cfg.validate(f"{self.name}.run"))
        return out


def config_path(name: str) -> Path:
    """The path of a shipped YAML file in ``ilets/configs``."""
    return Path(str(resources.files("ilets.configs").joinpath(f"{name}.yaml")))


def method_defaults() -> RunConfig:
    """RunConfig with ``ilets/configs/methods.yaml`` applied."""
    path = config_path("methods")
    return merge(RunConfig(), read_yaml(path), str(path))


def load_profile(name_or_path: str | Path) -> Profile:
    """A validated profile by shipped name (``smoke``, ``quick``, ``paper``) or YAML path."""
    path = config_path(str(name_or_path)) if str(name_or_path) in BUILTIN else Path(name_or_path)
    data = read_yaml(path)
    where = str(path)
    run_overrides = data.pop("run", {}) or {}
    if not isinstance(run_overrides, dict):
        raise ConfigError(f"{where}.run: expected a mapping, got {type(run_overrides).__name__}")
    data.setdefault("name", path.stem)
    run = merge(method_defaults(), run_overrides, f"{where}.run")
    profile = from_dict(Profile, {**data, "run": {}}, where)
    profile = dataclasses.replace(profile, run=run)
    _validate(profile, where)
    return profile


def _validate(p: Profile, where: str) -> None:
    bad = [m for m in p.methods if m not in METHODS + HEURISTICS]
    if bad:
        raise ConfigError(f"{where}.methods: unknown method(s) {bad}; expected some of {list(METHODS + HEURISTICS)}")
    if not p.methods or not p.servers or not p.seeds:
        raise ConfigError(f"{where}: methods, servers and seeds must each list at least one value")
    for s in p.servers:
        if not 1 <= s <= 100_000:
            raise ConfigError(f"{where}.servers: impossible server count {s}; expected 1..100000")
    if p.workers < 1:
        raise ConfigError(f"{where}.workers: expected >= 1, got {p.workers}")
    p.run.validate(f"{where}.run")
    p.cells()
