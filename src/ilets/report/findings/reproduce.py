"""Chapter 10, reproducing the study: the built-in profiles and the hardware a cell ran on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

#: Cells a book build re-runs: none. Chapter 10 shows the verification recorded with each
#: shipped folder (``VERIFY.json``, written by ``ilets verify --report``) and re-runs nothing
#: (a paper-scale cell takes minutes); README's and the Makefile's ``make book`` say the same
#: (tests/test_first_screen.py reads them, and checks that no chapter calls a cell runner).
BOOK_RERUNS = 0
#: The functions that compute a cell (:mod:`ilets.study.run`, :mod:`ilets.study.grid`,
#: :mod:`ilets.study.verify`, a scenario's ``rerun_cell``): a chapter that called one would re-run cells.
CELL_RUNNERS = ("run_cell", "run_cell_status", "run_claimed", "run_grid", "rerun_cell", "verify")


def book_reruns_text(n: int = BOOK_RERUNS) -> str:
    """What a book build re-runs, as README, the Makefile and chapter 10 say it:
    ``"re-runs no cell"``, ``"re-runs 1 cell"``, ``"re-runs 3 cells"``."""
    return "re-runs no cell" if n == 0 else f"re-runs {n} cell{'s' if n != 1 else ''}"


def profiles_table(names: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per profile (default: the built-in ones, :data:`ilets.study.profiles.BUILTIN`):
    description, methods, fleet sizes, seeds, workload scale, variants (``"-"`` for none), cells."""
    from ilets.study.profiles import BUILTIN, load_profile

    rows = []
    for name in BUILTIN if names is None else names:
        p = load_profile(name)
        rows.append({"profile": name, "description": p.description,
                     "methods": len(p.methods), "servers": ", ".join(map(str, p.servers)), "seeds": len(p.seeds),
                     "workload scale": p.run.workload.scale,
                     "variants": ", ".join(v.name for v in p.variants) or "-", "cells": len(p.cells())})
    return pd.DataFrame(rows)


def hardware_table(info: Mapping) -> pd.DataFrame:
    """A cell's ``system.json`` (:func:`ilets.study.results.system_info`) as ``item``/``value``
    rows: CPU, cores, RAM, Python, platform, then every recorded package version."""
    hw = {"CPU": info.get("cpu_model"), "cores": info.get("cores"), "RAM (GiB)": info.get("ram_gb"),
          "Python": info.get("python"), "platform": info.get("platform"), **dict(info.get("packages") or {})}
    return pd.DataFrame(list(hw.items()), columns=["item", "value"])


def verified_folders(main: Path) -> dict[str, tuple[Path, str]]:
    """The results folders whose recorded verification chapter 10 shows, label -> (folder,
    scenario): the main results ``main``, the reduced-scale, per-server and worlds grids the
    book reads beside them (:mod:`ilets.study.results`) and the shipped grid-command results,
    quick and full-window; a folder that is absent, has no cells, or is one already listed is
    left out."""
    from ilets.gridcommand.report.results import PAPER_SHIPPED, SHIPPED
    from ilets.study.results import repo_root, per_server_dir, scale_dir, worlds_dir

    root = repo_root()
    found: dict[str, tuple[Path, str]] = {}
    seen: set[Path] = set()
    for folder, scenario in ((Path(main), "cloud"), (scale_dir(), "cloud"), (per_server_dir(), "cloud"),
                             (worlds_dir(), "cloud"), (root / SHIPPED, "gridcommand"),
                             (root / PAPER_SHIPPED, "gridcommand")):
        where = folder.resolve()
        if where in seen or not (where / "cells").is_dir():
            continue
        seen.add(where)
        found[str(where.relative_to(root)) if where.is_relative_to(root) else str(where)] = (folder, scenario)
    return found
