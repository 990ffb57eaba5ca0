"""The grid-command designs as data (:mod:`ilets.gridcommand.designs`): every row derives the
grid profile its shipped folder ran, each shipped cell keeps its settings digest, the report
names designs by their labels, and a new design is one added row."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path

import pytest

from ilets import cell_pack
from ilets.config import ConfigError
from ilets.gridcommand import designs as DS
from ilets.gridcommand.experiment import Cell
from ilets.gridcommand.study import scenario as G

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = [d for d in DS.DESIGNS if d.folder is not None]
#: Cells per shipped folder whose digest is recomputed from the derived profile.
SAMPLE = 4


@pytest.mark.parametrize("design", DS.DESIGNS, ids=DS.ids())
def test_every_design_derives_a_valid_profile_of_its_own_name(design):
    profile = G.load_profile(design.id)
    assert profile.name == design.id and profile.cells()
    assert (profile.pipeline.teacher, profile.servers, profile.seeds) == (design.teacher, design.fleets, design.seeds)
    # the short names ``ilets grid --profile`` takes find the same row
    short = design.id.removeprefix(DS.PREFIX)
    assert G.load_profile(short) == G.load_profile(f"gridcommand-{short}") == profile


@pytest.mark.parametrize("design", SHIPPED, ids=[d.id for d in SHIPPED])
def test_a_shipped_design_derives_the_profile_its_folder_ran_and_keeps_its_digests(design):
    folder = ROOT / "shipped" / str(design.folder)
    recorded = G.load_profile(folder / "profile.json")
    assert G.load_profile(design.id) == recorded
    records = [json.loads(cell_pack.read_text(p)) for p in cell_pack.cell_paths(folder, "*.json")[:SAMPLE]]
    assert records
    derived = G.load_profile(design.id)
    for rec in records:
        cell = Cell(rec["method"], rec["servers"], rec["seed"])
        assert cell in derived.cells() and G.settings_digest(derived, cell) == rec["settings_digest"]


def test_the_table_is_whole_and_the_only_place_a_design_is_written():
    ids = DS.ids()
    assert len(set(ids)) == len(ids) and all(i.startswith(DS.PREFIX) for i in ids)
    labels = [d.label for d in DS.DESIGNS]
    assert len(set(labels)) == len(labels) and not any("gridcommand" in x or "-grid-" in x for x in labels)
    assert sum(d.base is None for d in DS.DESIGNS) == 1
    for d in DS.DESIGNS:
        assert {d.base, d.read_beside} - {None} <= set(ids), d.id
        assert "name" not in d.overrides, d.id  # the id names the profile
    # every kept grid-command folder of shipped/ is one row's, and no profile file shadows a row
    kept = {p.name for p in (ROOT / "shipped").glob("gridcommand*") if (p / "profile.json").is_file()}
    assert kept == {d.folder for d in SHIPPED}
    files = [p.name for p in resources.files("ilets.configs").iterdir() if p.name.startswith(DS.PREFIX)]
    assert files == []


def test_a_design_is_named_by_its_label_looked_up_by_id():
    row = DS.design("gridcommand-grid-per-server-terms")
    assert DS.label(row.id) == DS.label("per-server-terms") == row.label == DS.display_name(row.id)
    assert DS.display_name("not a design") == "not a design"  # a hand-made table's name shows as it is
    assert DS.tagged("privileged") == (row.id,)
    with pytest.raises(ConfigError, match=r"design 'nope': not a grid-command design; expected one of \["):
        DS.label("nope")
    with pytest.raises(ConfigError, match="gridcommand-grid-smoke.*not shipped"):
        DS.folder_of("gridcommand-grid-smoke")


def test_adding_a_design_is_adding_one_row(monkeypatch):
    """A newcomer's design: the terms design on five more seeds, one row over its base."""
    base = DS.design("gridcommand-grid-per-server-terms")
    row = DS.Design("gridcommand-grid-per-server-terms-more-seeds", "the teacher's terms, five more seeds", base.id,
                    {"seeds": [10, 11, 12, 13, 14]}, "more seeds for the positive control", read_beside=base.id)
    monkeypatch.setattr(DS, "DESIGNS", (*DS.DESIGNS, row))
    profile = G.load_profile(row.id)  # through the profile's validator, the scenario's too
    parent = G.load_profile(base.id)
    assert dataclasses.replace(profile, name=parent.name, seeds=parent.seeds) == parent
    assert row.seeds == (10, 11, 12, 13, 14) and row.teacher == base.teacher and row.fleets == base.fleets
    # the derived profile's cells have the base's settings but the seed: the same digest as a base cell
    cell = Cell("bc", 50, 10)
    assert G.settings_digest(profile, cell) == G.settings_digest(parent, cell)
    # a bad override fails at load with the design, the field and what was expected
    monkeypatch.setattr(DS, "DESIGNS", (*DS.DESIGNS[:-1], dataclasses.replace(row, overrides={"seeds": [-1]})))
    with pytest.raises(ConfigError, match=r"design gridcommand-grid-per-server-terms-more-seeds\.seeds"):
        G.load_profile(row.id)
    monkeypatch.setattr(DS, "DESIGNS", (*DS.DESIGNS[:-1], dataclasses.replace(row, base="gridcommand-grid-gone")))
    with pytest.raises(ConfigError, match="design 'gridcommand-grid-gone': not a grid-command design"):
        G.load_profile(row.id)
