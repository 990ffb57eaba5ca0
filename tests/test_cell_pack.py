"""A shipped folder's cells as one table (ilets.cell_pack): lossless, deterministic, and read
through one API in either layout (folder or table) and in a folder that mixes them."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ilets import cell_pack as cp


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by its path relative to it."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results folder whose cells/ holds two cell folders (nested files, binary bytes, an empty
    file, a file only one cell has) and a cell that is one file (a grid-command record)."""
    out = tmp_path / "results"
    a = out / "cells" / "drl-M10-s0-aaaa"
    (a / "policy").mkdir(parents=True)
    (a / "metrics.json").write_text(json.dumps({"method": "drl", "x": 1.5}))
    (a / "curve.csv").write_text("t,r\n1,0.5\n")
    (a / "policy" / "policy.pt").write_bytes(bytes(range(256)) * 3)
    (a / "empty.txt").write_bytes(b"")
    b = out / "cells" / "random-M10-s1-bbbb"
    b.mkdir()
    (b / "metrics.json").write_text("{\"method\": \"random\"}\n")
    (b / "curve.csv").write_text("t,r\n1,0.1\n2,0.2\n")
    (out / "cells" / "rule-M50-s0.json").write_text('{"method": "rule", "ünïcode": "é"}\n')
    (out / "profile.json").write_text("{}")
    return out


def test_a_packed_folder_materialises_byte_for_byte(results, tmp_path):
    before = tree(results / "cells")
    pack = cp.pack_folder(results)
    assert pack == results / "cells.parquet" and not (results / "cells").exists()
    assert cp.entries(results) == ["drl-M10-s0-aaaa", "random-M10-s1-bbbb", "rule-M50-s0.json"]
    for entry in cp.entries(results):
        cp.materialise(results / "cells" / entry, tmp_path / "back" / entry)
    assert tree(tmp_path / "back") == before  # every file, every byte, nothing added


def test_packing_is_deterministic_and_the_table_is_a_plain_parquet_table(results, tmp_path):
    copy = tmp_path / "copy"
    import shutil

    shutil.copytree(results, copy)
    (copy / "cells" / "rule-M50-s0.json").touch()  # another modification time: not recorded
    assert cp.pack_folder(results).read_bytes() == cp.pack_folder(copy).read_bytes()
    table = pq.read_table(results / "cells.parquet")
    assert table.column_names == ["cell", ".", "curve.csv", "empty.txt", "metrics.json", "policy/policy.pt"]
    assert table.column("cell").to_pylist() == sorted(table.column("cell").to_pylist())
    assert table.column(".").to_pylist() == [None, None, b'{"method": "rule", "\xc3\xbcn\xc3\xafcode": "\xc3\xa9"}\n']
    assert table.column("empty.txt").to_pylist() == [b"", None, None]  # an empty file is not a missing one
    meta = pq.ParquetFile(results / "cells.parquet").metadata
    assert meta.num_row_groups == 1 and meta.row_group(0).column(1).compression == "ZSTD"


def test_cell_paths_read_the_same_in_either_layout(results):
    cell, record = results / "cells" / "drl-M10-s0-aaaa", results / "cells" / "rule-M50-s0.json"
    plain = {"metrics": cp.read_text(cell / "metrics.json"), "pt": cp.read_bytes(cell / "policy" / "policy.pt"),
             "files": cp.files(cell), "record": cp.read_text(record), "record_files": cp.files(record)}
    cp.pack_folder(results)
    assert not cell.exists()
    assert plain == {"metrics": cp.read_text(cell / "metrics.json"), "pt": cp.read_bytes(cell / "policy" / "policy.pt"),
                     "files": cp.files(cell), "record": cp.read_text(record), "record_files": cp.files(record)}
    assert plain["files"] == ["curve.csv", "empty.txt", "metrics.json", "policy/policy.pt"]
    assert plain["record_files"] == [cp.WHOLE]
    assert cp.is_dir(cell) and cp.is_dir(cell / "policy") and cp.is_file(cell / "policy" / "policy.pt")
    assert cp.is_file(record) and not cp.is_dir(record) and cp.exists(cell / "empty.txt")
    assert not cp.exists(cell / "model.zip") and not cp.exists(results / "cells" / "drl-M10-s9-cccc")
    assert not cp.is_file(results / "cells" / "random-M10-s1-bbbb" / "empty.txt")  # a file only another cell has
    with pytest.raises(FileNotFoundError, match="model.zip: no such file"):
        cp.read_bytes(cell / "model.zip")
    assert cp.has_cells(results) and cp.is_packed(results) and not cp.has_cells(results / "cells")


def test_on_disk_is_a_byte_for_byte_copy_of_a_packed_cell(results):
    cell = results / "cells" / "drl-M10-s0-aaaa"
    before = tree(cell)
    assert cp.on_disk(cell) == cell  # a plain cell is itself
    cp.pack_folder(results)
    there = cp.on_disk(cell)
    assert there != cell and tree(there) == before
    assert cp.on_disk(cell / "policy") == there / "policy" and cp.on_disk(cell / "policy").is_dir()
    assert cp.on_disk(results / "cells" / "rule-M50-s0.json").read_text(encoding="utf-8").startswith('{"method": "rule"')
    with pytest.raises(FileNotFoundError):
        cp.on_disk(results / "cells" / "drl-M10-s9-cccc")


def test_a_grown_folder_reads_its_plain_cells_before_the_table(results):
    """A shipped folder copied to results/ and grown by a grid: the new cells are plain files
    beside the table, a cell recomputed on disk is read whole from disk, and shipping it again
    packs them all."""
    cp.pack_folder(results)
    grown = results / "cells" / "drl-M10-s1-dddd"
    grown.mkdir(parents=True)
    (grown / "metrics.json").write_text('{"new": 1}')
    redone = results / "cells" / "random-M10-s1-bbbb"
    redone.mkdir()
    (redone / "metrics.json").write_text('{"redone": 1}')
    assert cp.entries(results) == ["drl-M10-s0-aaaa", "drl-M10-s1-dddd", "random-M10-s1-bbbb", "rule-M50-s0.json"]
    assert cp.read_text(redone / "metrics.json") == '{"redone": 1}'
    assert not cp.exists(redone / "curve.csv")  # the packed copy's other files are not mixed in
    cp.pack_folder(results)
    assert not (results / "cells").exists() and len(cp.entries(results)) == 4
    assert cp.files(redone) == ["metrics.json"] and cp.read_text(grown / "metrics.json") == '{"new": 1}'


def test_a_table_that_does_not_read_back_is_refused_and_the_folder_kept(results, monkeypatch):
    real = cp.write_pack

    def lossy(content, dest):  # a writer that drops a file
        content = {k: dict(v) for k, v in content.items()}
        del content["drl-M10-s0-aaaa"]["curve.csv"]
        return real(content, dest)

    monkeypatch.setattr(cp, "write_pack", lossy)
    with pytest.raises(cp.PackError, match=r"first drl-M10-s0-aaaa/curve.csv\); nothing changed"):
        cp.pack_folder(results)
    assert (results / "cells" / "drl-M10-s0-aaaa" / "curve.csv").is_file() and not (results / "cells.parquet").exists()
    assert not [p for p in results.iterdir() if p.name.startswith(".")]  # no temporary left


def test_a_parquet_file_that_is_no_cell_table_is_named(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    pq.write_table(pa.table({"name": ["a"]}), folder / "cells.parquet")
    with pytest.raises(cp.PackError, match=r"cells.parquet: not a cell table"):
        cp.entries(folder)
    (folder / "cells.parquet").write_bytes(b"not parquet")
    with pytest.raises(cp.PackError, match=r"cells.parquet: not a readable parquet"):
        cp.entries(folder)
