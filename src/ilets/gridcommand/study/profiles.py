"""Grid-command grid profiles: read from a design of the table (:mod:`ilets.gridcommand.designs`),
a YAML file or a results folder's ``profile.json``, and the cells they plan, named as their files are.

Apart from running the cells (:mod:`ilets.gridcommand.study.scenario`): the report, the grid's
manifest and the shipped folders' provenance read profiles and cell names without the
runner's records and checks.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ilets.config import ConfigError, from_dict, read_yaml
from ilets.gridcommand import designs

if TYPE_CHECKING:
    from ilets.gridcommand.experiment import Cell, ExperimentProfile

#: The profile's keys a grid-command profile file must give: without them it would be the
#: default grid (every method, 50 and 200 servers, seeds 0-4: the 90-cell quick grid).
REQUIRED_KEYS = ("methods", "servers", "seeds", "scenario")
#: The file a results folder keeps its profile in, as data.
PROFILE_FILE = "profile.json"

#: Packages whose versions a grid-command record (a cell's, the pilot's) lists.
COMMAND_PACKAGES = ("numpy", "scipy", "torch", "stable-baselines3", "sb3-contrib", "imitation", "gymnasium",
                    "pandas")
#: A cell file's name (without ``.json``): ``<method>-M<servers>-s<seed>``.
CELL_NAME = re.compile(r"^(?P<method>.+)-M(?P<servers>\d+)-s(?P<seed>\d+)$")


# --- profiles --------------------------------------------------------------------------------

def load_profile(name_or_path: str | Path) -> ExperimentProfile:
    """A validated :class:`ilets.gridcommand.experiment.ExperimentProfile` from a design's name
    (a row of :data:`ilets.gridcommand.designs.DESIGNS`: ``gridcommand-grid-quick``,
    ``gridcommand-quick`` or ``quick``) or a YAML or JSON path; its scenario profile must load too."""
    from ilets.study.profiles import SAFE_NAME

    text = str(name_or_path)
    if text.endswith((".yaml", ".yml", ".json")) or os.sep in text:
        path = Path(text)
        data, where = read_yaml(path), str(path)
    else:
        data, where = designs.profile_data(text), f"design {designs.design_id(text)}"
    if not data:
        raise ConfigError(f"{where}: empty profile; expected a mapping with {', '.join(REQUIRED_KEYS[:-1])} "
                          f"and {REQUIRED_KEYS[-1]}")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise ConfigError(f"{where}: missing key(s) {missing}; a grid-command profile names its {', '.join(REQUIRED_KEYS)} "
                          "(without them it would be the default 90-cell grid)")
    profile = profile_from_data(data, where)
    if not SAFE_NAME.fullmatch(profile.name):
        raise ConfigError(f"{where}.name: {profile.name!r}: expected letters, digits and . _ + - (not starting "
                          f"with a dot; it names the folder results/<name>)")
    profile.scenario_config()  # a bad scenario profile fails here, before any cell runs
    return profile


def profile_from_data(data: Mapping[str, Any], where: str = PROFILE_FILE) -> ExperimentProfile:
    """A validated profile from plain data (a YAML file's mapping, or ``OUT/profile.json``);
    :class:`ConfigError` at ``where`` otherwise."""
    from ilets.gridcommand.experiment import ExperimentProfile

    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    data = dict(data)
    pipe = data.pop("pipeline", {}) or {}
    if not isinstance(pipe, dict):
        raise ConfigError(f"{where}.pipeline: expected a mapping, got {type(pipe).__name__}")
    return from_dict(ExperimentProfile, {**data, "pipeline": pipe}, where).validate(where)


def recorded_profile(folder: Path) -> ExperimentProfile:
    """The profile a results folder's grid ran (``OUT/profile.json``); :class:`ConfigError`
    naming the file when it is missing or damaged."""
    path = Path(folder) / PROFILE_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: missing; the grid's profile is needed to re-run its cells") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ConfigError(f"{path}: not valid JSON ({err})") from None
    return profile_from_data(data, str(path))


def profile_cells(profile: Mapping[str, Any]) -> list[Cell]:
    """The cells a grid profile plans, from the profile as data (``OUT/profile.json``)."""
    return list(profile_from_data(profile).cells())


def profile_cell_count(profile: Mapping[str, Any]) -> int:
    """How many cells a grid profile plans, from the profile as data (``OUT/profile.json``; a
    folder's ``grid.json`` manifest is read by :func:`ilets.study.grid.manifest_cell_count`)."""
    return len(profile_cells(profile))


# --- cells -----------------------------------------------------------------------------------

def cell_name(cell: Cell) -> str:
    """``<method>-M<servers>-s<seed>``: the name of the cell's file (never changed once shipped)."""
    return f"{cell.method}-M{cell.servers}-s{cell.seed}"


def parse_cell_name(name: str) -> Cell:
    """The cell a file name (without ``.json``) names; ``ValueError`` naming it otherwise."""
    from ilets.gridcommand.experiment import Cell

    m = CELL_NAME.match(name)
    if m is None:
        raise ValueError(f"{name!r}: not a grid-command cell name (expected <method>-M<servers>-s<seed>)")
    return Cell(m["method"], int(m["servers"]), int(m["seed"]))
