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
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from ilets.config import HEURISTICS, METHODS, ConfigError, RunConfig, bounded, check_config, from_dict, merge, read_yaml

BUILTIN = ("smoke", "quick", "paper", "pilot", "pilot-per-server", "per-server", "worlds", "rl-control",
           "rl-control-eval")
#: profile and variant names become folder names (results/<profile>, cells/<method>@<variant>-...):
#: no path separators, no leading dot, nothing a shell or a file system treats specially
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")
#: what a profile's name must be, as its error says
SAFE_NAME_RULE = "letters, digits and . _ + - (not starting with a dot; it names the folder results/<name>)"


@dataclass(frozen=True)
class Variant:
    """Extra cells that change some settings of the main grid (labelled ``variant``)."""

    name: str
    methods: tuple[str, ...] = ()
    servers: tuple[int, ...] = ()
    seeds: tuple[int, ...] = ()
    run: dict = field(default_factory=dict)
    #: worlds as replicates: each cell's fleet is drawn with its run seed (None: the main grid's)
    worlds: bool | None = None


@dataclass(frozen=True)
class Profile:
    """A grid of cells and the settings shared by all of them."""

    name: str = bounded("custom", test=SAFE_NAME.fullmatch, what=SAFE_NAME_RULE)
    description: str = ""
    methods: tuple[str, ...] = bounded(METHODS + HEURISTICS, nonempty=True, choices=METHODS + HEURISTICS,
                                       what="a method")
    servers: tuple[int, ...] = bounded((50, 100, 200), nonempty=True, ge=1, le=100_000, what="a server count")
    seeds: tuple[int, ...] = bounded((0,), nonempty=True)  #: each checked as ``run.seed`` by :meth:`cells`
    workers: int = bounded(2, ge=1)  #: cells run at once by the local executor
    run: RunConfig = field(default_factory=RunConfig)
    #: ablations and sensitivity checks: name -> {methods, servers, seeds, run overrides};
    #: omitted grid keys default to the main grid's
    variants: tuple[Variant, ...] = ()
    #: worlds as replicates [ours]: each cell's fleet is drawn with its run seed instead of
    #: ``run.fleet.seed`` (one data centre for every seed), so the fleet changes with the seed
    #: as the workload does; with ``run.workload.event_jitter_s`` the event schedule does too
    worlds: bool = False

    def cells(self, where: str | None = None) -> list[RunConfig]:
        """One validated RunConfig per (method, servers, seed), in a stable order; an invalid
        one raises ConfigError at ``where`` (the profile's file; default its name)."""
        where_ = where or self.name
        out = []
        for servers in self.servers:
            for seed in self.seeds:
                for method in self.methods:
                    out.append(_cell(self.run, method, servers, seed, self.worlds).validate(f"{where_}.run"))
        for v in self.variants:
            where = f"{where_}.variants.{v.name}"
            base = dataclasses.replace(merge(self.run, v.run, f"{where}.run"), variant=v.name)
            worlds = self.worlds if v.worlds is None else v.worlds
            for servers in v.servers or self.servers:
                for seed in v.seeds or self.seeds:
                    for method in v.methods or self.methods:
                        out.append(_cell(base, method, servers, seed, worlds).validate(f"{where}.run"))
        return out


def _cell(run: RunConfig, method: str, servers: int, seed: int, worlds: bool) -> RunConfig:
    """One cell of a grid: ``run`` for ``method`` on ``servers`` servers with ``seed``; with
    ``worlds`` its fleet is drawn with the run seed too."""
    fleet = (dataclasses.replace(run.fleet, servers=servers, seed=seed) if worlds
             else dataclasses.replace(run.fleet, servers=servers))
    return dataclasses.replace(run, method=method, seed=seed, fleet=fleet)


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
    if not data:
        # an empty file would otherwise mean the full default grid at scale 1.0 (hours)
        raise ConfigError(f"{where}: empty profile; expected a mapping with methods, servers, seeds and run")
    run_overrides = data.pop("run", {}) or {}
    if not isinstance(run_overrides, dict):
        raise ConfigError(f"{where}.run: expected a mapping, got {type(run_overrides).__name__}")
    data.setdefault("name", path.stem)
    if "variant" in run_overrides:  # it would turn the main grid's cells into a variant's
        raise ConfigError(f"{where}.run.variant: not a run setting; a variant is named by its key under "
                          f"variants:, and the main grid's cells have none")
    run = merge(method_defaults(), run_overrides, f"{where}.run")
    variants = data.pop("variants", {}) or {}
    if not isinstance(variants, dict):
        raise ConfigError(f"{where}.variants: expected a mapping of name -> settings")
    for k, v in variants.items():
        if v is not None and not isinstance(v, dict):
            raise ConfigError(f"{where}.variants.{k}: expected a mapping (methods, servers, seeds, run), "
                              f"got {type(v).__name__}")
        if not isinstance(k, str) or not SAFE_NAME.fullmatch(k):
            raise ConfigError(f"{where}.variants: name {k!r}: expected letters, digits and . _ + - "
                              f"(not starting with a dot)")
        if not isinstance((v or {}).get("run", {}) or {}, dict):
            raise ConfigError(f"{where}.variants.{k}.run: expected a mapping of run settings")
        if "variant" in ((v or {}).get("run") or {}):
            raise ConfigError(f"{where}.variants.{k}.run.variant: not a run setting; the variant is named by "
                              f"its key, {k!r}")
    parsed = tuple(from_dict(Variant, {"name": k, **(v or {})}, f"{where}.variants.{k}") for k, v in variants.items())
    profile = from_dict(Profile, {**data, "run": {}}, where)
    profile = dataclasses.replace(profile, run=run, variants=parsed)
    _validate(profile, where)
    return profile


def _validate(p: Profile, where: str) -> None:
    check_config(p, where)  # every field's declared range, the run's too
    # a variant's method list is named at the variant: its typo is not the main grid's
    for v in p.variants:
        bad = [m for m in v.methods if m not in METHODS + HEURISTICS]
        if bad:
            raise ConfigError(f"{where}.variants.{v.name}.methods: unknown method(s) {bad}; expected some of "
                              f"{list(METHODS + HEURISTICS)}")
    if p.run.defer_head != "pooled":  # the plain scenario has no action to defer
        raise ConfigError(f"{where}.run.defer_head: {p.run.defer_head!r} scores the grid-command scenario's defer "
                          "action, which the cloud study has not; expected 'pooled'")
    if p.run.cap_head != "pooled":  # nor an admission cap
        raise ConfigError(f"{where}.run.cap_head: {p.run.cap_head!r} scores the grid-command scenario's "
                          "admission-cap actions, which the cloud study has not; expected 'pooled'")
    p.cells(where)


#: Profile fields that choose which cells a grid runs, or how many at once, not their numbers:
#: grids that differ only in them (a family run seed by seed) may share one folder at once.
SELECTION_FIELDS = frozenset({"name", "description", "methods", "servers", "seeds", "workers"})


def settings_key(data: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the SHA-256 of a profile as plain data without
    :data:`SELECTION_FIELDS` (sorted JSON): :meth:`Scenario.settings_key`."""
    import hashlib

    kept = {k: v for k, v in data.items() if k not in SELECTION_FIELDS}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:16]
