"""Issue 63's budget on ``shipped/``: at most 60 MB of tracked files, and at most 4,000 of them.

What keeps it: a shipped folder holds its cells as one table (``cells.parquet``,
:mod:`ilets.cell_pack`), not a folder of small files per cell; a running grid's ``results/``
keeps the plain ``cells/`` folder.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from ilets import cell_pack

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "shipped"
#: The budget (issue 63): bytes of the tracked files under shipped/ (MB of 10**6 bytes), and their number.
MAX_BYTES = 60 * 10**6
MAX_FILES = 4000


def shipped_files() -> list[Path]:
    """The files of ``shipped/``: those git tracks in a git checkout (what a clone downloads),
    every file under it otherwise (an unpacked release)."""
    if (ROOT / ".git").exists():
        listed = subprocess.run(["git", "ls-files", "-z", "--", "shipped"], cwd=ROOT, capture_output=True, check=True)
        return [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    return sorted(p for p in SHIPPED.rglob("*") if p.is_file())


def test_shipped_stays_within_its_budget():
    files = shipped_files()
    size = sum(p.stat().st_size for p in files if p.is_file())  # a tracked file deleted here is not counted
    assert len(files) <= MAX_FILES, f"{len(files):,} files under shipped/ (budget {MAX_FILES:,})"
    assert size <= MAX_BYTES, f"{size / 1e6:.1f} MB under shipped/ (budget {MAX_BYTES / 1e6:.0f} MB)"


def test_no_shipped_folder_keeps_a_folder_per_cell():
    plain = sorted({p.relative_to(SHIPPED).parts[0] for p in shipped_files()
                    if len(p.relative_to(SHIPPED).parts) > 2 and p.relative_to(SHIPPED).parts[1] == cell_pack.CELLS})
    assert not plain, f"shipped folders with a cells/ folder (pack them: ilets.cell_pack.pack_folder): {plain}"


@pytest.mark.parametrize("folder", sorted(p.name for p in SHIPPED.iterdir() if cell_pack.is_packed(p)))
def test_a_shipped_table_holds_the_cells_its_store_lists(folder):
    """Each table reads back (every entry has files) and holds the cells of the folder's store,
    where it has one: the store the book reads and the cells ``ilets verify`` re-runs are the
    same cells (a shifts family has no store: its table holds the cells its online runs trained)."""
    root = SHIPPED / folder
    names = cell_pack.entries(root)
    assert names and all(cell_pack.files(root / "cells" / name) for name in names)
    if (root / "store" / "metrics.parquet").is_file():  # the paper's study: one row per cell, by name
        assert set(pd.read_parquet(root / "store" / "metrics.parquet", columns=["cell"])["cell"]) == set(names)
    elif (root / "store" / "results.parquet").is_file():  # grid command: rows per cell and role, its name's fields
        rows = pd.read_parquet(root / "store" / "results.parquet", columns=["method", "servers", "seed"])
        assert {f"{r.method}-M{r.servers}-s{r.seed}.json" for r in rows.itertuples()} == set(names)
