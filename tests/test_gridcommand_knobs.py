"""Every knob of the grid-command scenario and of its pipeline, walked field by field: a value
of the wrong kind, or a float that is not finite, is refused in one line that names the file
and the field (the per-knob tests beside each lever check the impossible values)."""

from __future__ import annotations

import dataclasses
import math
import typing
from pathlib import Path

import pytest
import yaml

from ilets.config.strict import ConfigError
from ilets.gridcommand.config import GridCommandConfig, load_gridcommand_config
from ilets.gridcommand.pipeline_config import PipelineConfig
from ilets.gridcommand.study.scenario import load_profile

SCENARIO_FIELDS = [f.name for f in dataclasses.fields(GridCommandConfig) if f.name != "run"]
PIPELINE_FIELDS = [f.name for f in dataclasses.fields(PipelineConfig)]


def _floats(cls: type) -> list[str]:
    """The fields holding floats: a float, or a tuple of them."""
    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls)
            if hints[f.name] is float or typing.get_args(hints[f.name])[:1] == (float,)]


def _nan(cls: type, field: str) -> object:
    return [math.nan] if typing.get_origin(typing.get_type_hints(cls)[field]) is tuple else math.nan


def _refused(load, path: Path, field: str) -> str:
    with pytest.raises(ConfigError) as err:
        load(path)
    message = str(err.value)
    assert "\n" not in message, message
    assert message.startswith(f"{path}.{field}:") or message.startswith(f"{path}.{field}["), message
    return message


@pytest.mark.parametrize("field", SCENARIO_FIELDS)
def test_a_scenario_knob_of_the_wrong_kind_names_its_file_and_field(tmp_path, field):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({field: {"not": "a value"}}))
    _refused(load_gridcommand_config, path, field)


@pytest.mark.parametrize("field", _floats(GridCommandConfig))
def test_a_scenario_float_that_is_not_finite_names_its_file_and_field(tmp_path, field):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({field: _nan(GridCommandConfig, field)}))
    _refused(load_gridcommand_config, path, field)


def _grid(tmp_path: Path, pipeline: dict) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({"name": "bad", "scenario": "gridcommand-smoke", "methods": ["rule"],
                                    "servers": [5], "seeds": [0], "pipeline": pipeline}))
    return path


@pytest.mark.parametrize("field", PIPELINE_FIELDS)
def test_a_pipeline_knob_of_the_wrong_kind_names_its_file_and_field(tmp_path, field):
    _refused(load_profile, _grid(tmp_path, {field: {"not": "a value"}}), f"pipeline.{field}")


@pytest.mark.parametrize("field", _floats(PipelineConfig))
def test_a_pipeline_float_that_is_not_finite_names_its_file_and_field(tmp_path, field):
    _refused(load_profile, _grid(tmp_path, {field: _nan(PipelineConfig, field)}), f"pipeline.{field}")


def test_the_walk_covers_the_scenarios_levers_and_the_pipelines_clone_knobs():
    assert {"speed_levels", "cap_levels", "wake_s"} <= set(_floats(GridCommandConfig))
    assert {"speed_levels", "sleep_fraction", "wake_s", "batch_share", "cap_levels", "envelope"} <= set(
        SCENARIO_FIELDS)
    assert {"train_episodes", "train_episode_stride", "train_days", "bc_epochs", "dagger_rounds"} <= set(
        PIPELINE_FIELDS)
