"""Chapter 2's parameter table comes from the configuration classes' own field docs
(:mod:`ilets.report.parameters`): nothing in it is typed a second time."""

from __future__ import annotations

import dataclasses

import pytest

from ilets.config import RunConfig
from ilets.report.parameters import PARAMETERS, field_docs, meaning_and_source, parameter_table


@dataclasses.dataclass(frozen=True)
class Toy:
    """A class whose fields are documented every way a config class does it."""

    plain: int = 1
    trailing: float = 2.0  #: one line [paper]
    #: a block above,
    #: on two lines [ours]
    above: tuple[float, float] = (1.0, 2.0)
    #: above and
    both: tuple[float, ...] = (0.5, 1.0)  #: after [code]
    hash_in_string: str = "#: not a doc"


def test_field_docs_read_the_comments_above_and_after_each_field():
    # a block of comment lines reads as one line; a comment above and one after are joined
    assert field_docs(Toy) == {"trailing": "one line [paper]", "above": " ".join(["a block above,", "on two lines [ours]"]),
                               "both": "above and after [code]"}


@pytest.mark.parametrize("doc, expected", [
    ("task length range, MI [lineage]", ("task length range, MI", "lineage")),
    ("[code]", ("", "code")),
    ("no tag here", ("no tag here", "")),
    ("CPU capacities (the trace: mostly 0.5) [ours, trace-like]", ("CPU capacities (the trace: mostly 0.5)", "ours, trace-like")),
    ("how x enters [ours, chosen by the pilot]: capped or log", ("how x enters: capped or log", "ours, chosen by the pilot")),
])
def test_a_doc_splits_into_meaning_and_source(doc, expected):
    assert meaning_and_source(doc) == expected


def test_the_table_shows_each_parameter_with_its_value_meaning_and_source():
    run = RunConfig()
    table = parameter_table(run, (50, 100, 200)).set_index("parameter")
    assert list(table.index) == [f"`{p}`" for p in PARAMETERS]
    assert (table["meaning"] != "").all() and (table["source"] != "").all()  # every shown field documents both
    assert table.loc["`fleet.servers`", "value"] == "50, 100, 200"  # the profile's fleet sizes
    assert table.loc["`fleet.mips`", "value"] == f"{run.fleet.mips[0]:g}-{run.fleet.mips[1]:g}"
    assert table.loc["`fleet.capacity_levels`", "value"] == ", ".join(f"{c:g}" for c in run.fleet.capacity_levels)
    assert table.loc["`ppo.learning_rate`", "value"] == f"{run.ppo.learning_rate:g}"
    assert table.loc["`ppo.hidden`", "value"] == str(run.ppo.hidden)
    assert table.loc["`workload.length_mi`", ["meaning", "source"]].tolist() == ["task length range, MI", "lineage"]
    assert table.loc["`reward.theta`", "source"] == "code" and table.loc["`ppo.hidden`", "source"] == "paper"


def test_a_field_without_a_doc_or_unknown_fails_loudly():
    with pytest.raises(ValueError, match="has no '#:' doc"):
        parameter_table(RunConfig(), (50,), ("ppo.gae_lambda",))
    with pytest.raises(ValueError, match="has no field 'nothing'"):
        parameter_table(RunConfig(), (50,), ("ppo.nothing",))
