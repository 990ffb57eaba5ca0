"""The one validator (ilets.config.validate): every declared range and choice is enforced, with a
one-line message naming the file, the field, what was expected and the value found."""

from __future__ import annotations

import dataclasses
import re
import typing

import pytest

from ilets.config import (ConfigError, ExpertConfig, FinetuneConfig, FleetConfig, OAILConfig, OINPTConfig, PPOConfig,
                          RewardConfig, RunConfig, WorkloadConfig, check_config)
from ilets.config.validate import CHECK, Check, bounded
from ilets.gridcommand.command import DIRECTIONS
from ilets.gridcommand.config import CommandSpec, GridCommandConfig
from ilets.gridcommand.experiment import ExperimentProfile
from ilets.gridcommand.pipeline_config import PipelineConfig
from ilets.study.positive_control import ControlProfile

CLASSES = (WorkloadConfig, FleetConfig, RewardConfig, PPOConfig, ExpertConfig, OINPTConfig, OAILConfig, FinetuneConfig,
           RunConfig, CommandSpec, GridCommandConfig, PipelineConfig, ExperimentProfile, ControlProfile)


def _scalar(tp):
    """The type of a field's value, or of its items for a tuple, through ``| None``."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) is tuple or (args and typing.get_origin(args[0]) is tuple):
        inner = args[0] if typing.get_origin(tp) is not tuple else tp
        return typing.get_args(inner)[0]
    return args[0] if args and typing.get_origin(tp) is not tuple else tp


def _outside(check: Check, kind: type) -> list:
    """Values just outside each declared bound (none that ``also`` accepts), and one outside the choices."""
    near = [(check.ge, -1), (check.gt, 0), (check.le, 1), (check.lt, 0)]
    values = [kind(bound + step) for bound, step in near if bound is not None and kind in (int, float)]
    if check.choices is not None:
        values.append("not-a-choice" if kind is str else None)
    return [v for v in values if v is not None and v not in check.also]


CASES = [(cls, f.name, value) for cls in CLASSES for f in dataclasses.fields(cls) if CHECK in f.metadata
         for value in _outside(f.metadata[CHECK], _scalar(typing.get_type_hints(cls)[f.name]))]


def test_the_cases_cover_the_configurations():
    # every class has a declared range or choice, and the rule finds hundreds of values to refuse
    assert {cls for cls, _, _ in CASES} == set(CLASSES) and len(CASES) > 150


@pytest.mark.parametrize("cls, name, value", CASES, ids=[f"{c.__name__}.{n}={v!r}" for c, n, v in CASES])
def test_a_value_outside_a_declared_range_is_named_in_one_line(cls, name, value):
    default = cls()
    current = getattr(default, name)
    is_tuple = isinstance(current, tuple)
    given = (value, *current[1:]) if is_tuple else value  # a tuple's first item moved out of range
    with pytest.raises(ConfigError) as err:
        check_config(dataclasses.replace(default, **{name: given}), "p.yaml.section")
    message = str(err.value)
    field_at = f"p.yaml.section.{name}" + ("[0]" if is_tuple else "")
    assert message.startswith(f"{field_at}: expected ") and message.endswith(f", got {value!r}")
    assert "\n" not in message
    check = next(f.metadata[CHECK] for f in dataclasses.fields(cls) if f.name == name)
    bounds = [b for b in (check.ge, check.gt, check.le, check.lt) if b is not None]
    if isinstance(value, str):
        assert all(repr(c) in message for c in check.choices)
    else:
        assert all((str(b) if isinstance(b, int) else f"{b:g}") in message for b in bounds), (message, bounds)


def test_defaults_pass_and_the_metadata_leaves_the_plain_data_alone():
    for cls in CLASSES:
        check_config(cls(), cls.__name__)
    # the checks are metadata: the fields, their order and defaults (hence every digest) stay
    assert [f.name for f in dataclasses.fields(RewardConfig)][:3] == ["theta", "wait_scale_s", "wait_form"]
    assert dataclasses.asdict(RewardConfig())["theta"] == 0.3 and RewardConfig.theta == 0.3


def test_tuples_nan_types_and_relations():
    run = RunConfig()
    with pytest.raises(ConfigError, match=r"^run\.workload\.length_mi: expected values in increasing order"):
        check_config(dataclasses.replace(run, workload=WorkloadConfig(length_mi=(3000.0, 500.0))), "run")
    with pytest.raises(ConfigError, match=r"^run\.oail\.experts: expected at least one value, got none"):
        check_config(dataclasses.replace(run, oail=OAILConfig(experts=(), weights=())), "run")
    with pytest.raises(ConfigError, match=r"^run\.reward\.theta: expected a finite number, got nan"):
        check_config(dataclasses.replace(run, reward=dataclasses.replace(RewardConfig(), theta=float("nan"))), "run")
    with pytest.raises(ConfigError, match=r"^pipeline\.heldout: expected true or false \(bool\), got int 1"):
        check_config(PipelineConfig(heldout=1), "pipeline")  # type: ignore[arg-type]
    # a relation between two fields is the class's own code, checked once its fields pass
    with pytest.raises(ConfigError, match=r"^pipeline\.window: 300 states per correction overlap the next one"):
        check_config(PipelineConfig(window=300), "pipeline")
    # a section of a tuple is named by its index
    bad = GridCommandConfig(regime="explicit", commands=(CommandSpec(), CommandSpec(direction="sideways")))
    with pytest.raises(ConfigError, match=re.escape(f"g.commands[1].direction: expected one of {DIRECTIONS!r}")):
        check_config(bad, "g")


def test_bounded_is_a_plain_dataclass_field():
    @dataclasses.dataclass(frozen=True)
    class Toy:
        share: float = bounded(0.5, ge=0, le=1, what="a share", note="1: all")
        width: int = bounded(3, gt=0)
        mode: str = bounded("a", choices=("a", "b"))
        days: float = bounded(-1.0, ge=0, also=(-1,), what="a number of days", note="-1: the default")

    assert Toy() == Toy(0.5, 3, "a", -1.0) and check_config(Toy(), "toy") == Toy()
    cases = [(Toy(share=1.5), "toy.share: expected a share in [0, 1] (1: all), got 1.5"),
             (Toy(width=0), "toy.width: expected an integer > 0, got 0"),
             (Toy(mode="c"), "toy.mode: expected one of ('a', 'b'), got 'c'"),
             (Toy(days=-2.0), "toy.days: expected -1 or a number of days >= 0 (-1: the default), got -2.0")]
    for toy, message in cases:
        with pytest.raises(ConfigError) as err:
            check_config(toy, "toy")
        assert str(err.value) == message
