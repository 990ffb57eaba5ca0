"""What a grid planned, what of it is finished, and which fleet sizes a report may judge.

A grid runs for many hours, across sessions, and its results are read (and shipped) while it
is unfinished. Its ``grid.json`` names every planned cell; the cell folders say which are
done. A report that pooled whatever happens to be finished would let one early seed at a new
fleet size decide a verdict (one seed has no interval, so every comparison would fail there)
and would quote "the number of seeds" as a median of unequal groups.

The rule (fixed before the paper grid's 100- and 200-server cells existed)
--------------------------------------------------------------------------
A fleet size of the main grid, or of one variant, is **judged** once every method planned
there has at least ``min(MIN_JUDGED_SEEDS, planned seeds)`` finished seeds. A judged fleet
size enters every table with all the seeds it has (comparisons pair the seeds both methods
have); one that is not judged yet is left out of every table and named, with its finished
and planned cell counts, wherever the results are described. Five is the issue's minimum for
the variants and the smallest seed count at which the book's bootstrap intervals are more
than two or three distinct values. A folder without ``grid.json`` (a hand-made store, a
test) plans exactly what it holds, so everything in it is judged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ilets.study.run import parse_cell_name  # re-exported: the name's fields are read here too

#: Seeds every planned method needs at a fleet size before that fleet size is judged (or all
#: the planned seeds, when fewer are planned).
MIN_JUDGED_SEEDS = 5


#: Columns of :func:`coverage_table`.
COVERAGE_COLUMNS = ("cell", "method", "variant", "servers", "seed", "done")
#: Columns of :func:`fleet_coverage`.
FLEET_COLUMNS = ("variant", "servers", "planned_cells", "done_cells", "planned_seeds", "needed_seeds",
                 "min_method_seeds", "judged")


def coverage_table(out: Path, done: set[str] | None = None) -> pd.DataFrame:
    """One row per planned cell of the grid in ``out``: :data:`COVERAGE_COLUMNS`.

    ``done`` is the set of finished cell names (default: the store's readable cells,
    :func:`ilets.study.results.finished_cells`). Without ``grid.json`` the plan is the finished
    cells themselves."""
    out = Path(out)
    if done is None:
        from ilets.study.results import finished_cells

        done = set(finished_cells(out))
    manifest = out / "grid.json"
    try:
        planned = json.loads(manifest.read_text())["cells"] if manifest.is_file() else sorted(done)
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{manifest}: unreadable grid manifest, field 'cells' ({err})") from None
    rows = []
    for name in planned:
        try:
            fields = parse_cell_name(name)
        except ValueError as err:
            raise ValueError(f"{manifest}: field 'cells': {err}") from None
        rows.append({"cell": name, "method": fields["method"], "variant": fields["variant"],
                     "servers": fields["servers"], "seed": fields["seed"], "done": name in done})
    return pd.DataFrame(rows, columns=list(COVERAGE_COLUMNS)).astype({"done": bool})


def fleet_coverage(coverage: pd.DataFrame, min_seeds: int = MIN_JUDGED_SEEDS) -> pd.DataFrame:
    """Per variant and fleet size (:data:`FLEET_COLUMNS`): planned and finished cells, the
    planned seeds, the seeds each method needs (``min(min_seeds, planned seeds)``), the
    fewest finished seeds of any planned method, and whether it is judged (module docstring)."""
    rows = []
    for (variant, servers), g in coverage.groupby(["variant", "servers"], sort=True):
        planned_seeds = int(g["seed"].nunique())
        needed = min(min_seeds, planned_seeds)
        per_method = g[g["done"]].groupby("method")["seed"].nunique().reindex(g["method"].unique(), fill_value=0)
        fewest = int(per_method.min()) if len(per_method) else 0
        rows.append({"variant": variant, "servers": int(servers), "planned_cells": int(len(g)),
                     "done_cells": int(g["done"].sum()), "planned_seeds": planned_seeds, "needed_seeds": needed,
                     "min_method_seeds": fewest, "judged": fewest >= needed})
    return pd.DataFrame(rows, columns=list(FLEET_COLUMNS))


@dataclass(frozen=True)
class Coverage:
    """The coverage of one results folder: :func:`coverage_table` and :func:`fleet_coverage`."""

    cells: pd.DataFrame
    fleets: pd.DataFrame

    @classmethod
    def of(cls, out: Path, done: set[str] | None = None, min_seeds: int = MIN_JUDGED_SEEDS) -> "Coverage":
        """The coverage of ``out`` (``done``: the finished cells, as in :func:`coverage_table`)."""
        cells = coverage_table(out, done)
        return cls(cells, fleet_coverage(cells, min_seeds))

    def _fleets(self, variant: str) -> pd.DataFrame:
        return self.fleets[self.fleets["variant"] == variant]

    def planned(self, variant: str = "") -> bool:
        """Whether the grid plans any cell of ``variant`` (``""``: the main grid)."""
        return bool(len(self._fleets(variant)))

    def judged_servers(self, variant: str = "") -> tuple[int, ...]:
        """Fleet sizes of ``variant`` that are judged, ascending."""
        f = self._fleets(variant)
        return tuple(int(s) for s in f.loc[f["judged"], "servers"])

    def pending(self, variant: str = "") -> pd.DataFrame:
        """The fleet sizes of ``variant`` planned but not judged yet (rows of :attr:`fleets`)."""
        f = self._fleets(variant)
        return f[~f["judged"]].reset_index(drop=True)

    def pending_text(self, variant: str = "") -> str:
        """The fleet sizes not judged yet, in words (``""`` when there are none):
        ``"100 servers (23 of 100 cells finished) and 200 servers (not yet run)"``."""
        parts = []
        for r in self.pending(variant).itertuples():
            state = "not yet run" if r.done_cells == 0 else f"{r.done_cells:,} of {r.planned_cells:,} cells finished"
            parts.append(f"{r.servers} servers ({state})")
        if len(parts) <= 1:
            return "".join(parts)
        return ", ".join(parts[:-1]) + " and " + parts[-1]

    def judge_mask(self, table: pd.DataFrame, variant: str = "") -> pd.Series:
        """Rows of a metrics or curves table (``servers`` column) that lie at a judged fleet size."""
        return table["servers"].isin(self.judged_servers(variant))
