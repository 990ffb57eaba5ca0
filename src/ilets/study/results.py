"""The results store: cell folders gathered into tidy parquet tables, and the loader API.

``OUT/store/metrics.parquet``: one row per finished cell (method, servers, seed, final
metrics, compute). ``OUT/store/curves.parquet``: learning-curve rows of every cell, with
method, servers and seed columns. Notebooks read only through the functions here.
"""

from __future__ import annotations

import io
import json
import os
import warnings
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd
import yaml

from ilets import cell_pack
from ilets.method_table import LEARNERS, METHOD_LABELS  # noqa: F401 - re-exported: the names the store's readers use


#: ``status`` values of :func:`compute_table`: a finished cell, and the compute a failed
#: attempt burnt (a cell that failed and later succeeded has one row of each). The one status
#: vocabulary of every scenario (:mod:`ilets.study.scenario`): a grid-command cell's file says
#: ``"status": "done"`` too, and its failed attempts are ``OUT/failed`` records like the study's.
STATUS_DONE = "done"
STATUS_FAILED = "failed attempt"
COMPUTE_STATUSES = (STATUS_DONE, STATUS_FAILED)

#: Where the book looks for its results, first match with a store wins: a grid of the paper
#: profile run here, the shipped paper-scale results, a quick grid run here, the shipped
#: quick results (folders relative to the repository root).
RESULTS_SEARCH = ("results/paper", "shipped/paper", "results/quick", "shipped/quick")
#: Where the book looks for the reduced-scale results it shows beside the main ones.
SCALE_SEARCH = ("results/quick", "shipped/quick")
#: Where the book looks for the per-server learners' grid (profile ``per-server``).
PER_SERVER_SEARCH = ("results/per-server", "shipped/per-server")
#: Where the worlds grid (profile ``worlds``: fleet and events drawn with the seed) is looked for.
WORLDS_SEARCH = ("results/worlds", "shipped/worlds")


def repo_root() -> Path:
    """The repository root (relative result folders are resolved against it)."""
    return Path(__file__).resolve().parents[3]


def has_store(folder: Path | str) -> bool:
    """Whether ``folder`` holds a results store (``store/metrics.parquet``): a grid with
    finished cells, or a shipped copy of one."""
    return (Path(folder) / "store" / "metrics.parquet").is_file()


def _first_store(env_var: str, search: tuple[str, ...]) -> Path:
    env = os.environ.get(env_var)
    if env:
        return Path(env)
    root = repo_root()
    for rel in search:
        if has_store(root / rel):
            return root / rel
    return root / search[-1]


def results_dir() -> Path:
    """The results folder the book shows.

    ``$ILETS_RESULTS`` if set; otherwise the first folder of :data:`RESULTS_SEARCH` that has
    a store (a fresh clone reads the shipped paper-scale results, ``shipped/paper``). The
    notebooks run in ``notebooks/``, so the folders are resolved against the repository root.
    """
    return _first_store("ILETS_RESULTS", RESULTS_SEARCH)


def scale_dir() -> Path:
    """The reduced-scale results shown beside the main ones, so a reader sees which
    conclusions depend on scale: ``$ILETS_SCALE_RESULTS``, else the first folder of
    :data:`SCALE_SEARCH` with a store."""
    return _first_store("ILETS_SCALE_RESULTS", SCALE_SEARCH)


def per_server_dir() -> Path:
    """The per-server learners' grid the book shows beside the faithful one:
    ``$ILETS_PER_SERVER_RESULTS``, else the first folder of :data:`PER_SERVER_SEARCH` with a store."""
    return _first_store("ILETS_PER_SERVER_RESULTS", PER_SERVER_SEARCH)


def worlds_dir() -> Path:
    """The worlds grid the book shows: ``$ILETS_WORLDS_RESULTS``, else the first folder of
    :data:`WORLDS_SEARCH` with a store."""
    return _first_store("ILETS_WORLDS_RESULTS", WORLDS_SEARCH)


def _cells(out: Path) -> list[Path]:
    """Finished cell folders of ``out``; only those of its current grid when it has one. In
    either layout (:mod:`ilets.cell_pack`): a shipped folder's cells are one table, and the
    paths returned address them there.

    A folder can hold cells of an older configuration (a changed setting changes every
    digest); ``grid.json`` lists the cells of the grid last run there, so stale ones are
    left out of the store instead of being mixed in.
    """
    root = Path(out) / "cells"
    if not cell_pack.has_cells(out):
        return []
    manifest = Path(out) / "grid.json"
    wanted = set(json.loads(manifest.read_text())["cells"]) if manifest.is_file() else None
    from ilets.study.run import cell_problem

    # hidden ".<cell>.tmp-<pid>" folders are runs in flight or killed before their rename
    found = [root / name for name in cell_pack.entries(out)
             if cell_pack.is_dir(root / name) and (wanted is None or name in wanted)]
    good = []
    for p in found:
        # a damaged folder (truncated metrics.json, empty curve.csv, ...) is left out with
        # its file named instead of breaking the whole store; `ilets grid` recomputes it
        problem = cell_problem(p)
        if problem is None:
            good.append(p)
        elif cell_pack.exists(p / "metrics.json"):
            warnings.warn(f"{problem}: cell left out of the store", stacklevel=2)
    return good


def finished_cells(out: Path) -> list[str]:
    """Names of the finished, readable cells of ``out`` (those of its current grid)."""
    return [p.name for p in _cells(Path(out))]


def build_store(out: Path) -> dict[str, Path]:
    """Gather every finished cell of ``out`` into ``out/store/*.parquet``; returns the paths."""
    out = Path(out)
    rows, curves = [], []
    for cell in _cells(out):
        m = json.loads(cell_pack.read_text(cell / "metrics.json"))
        m["cell"] = cell.name
        rows.append(m)
        curve = pd.read_csv(io.BytesIO(cell_pack.read_bytes(cell / "curve.csv")))
        curve["method"], curve["variant"] = m["method"], m.get("variant", "")
        curve["servers"], curve["seed"], curve["cell"] = m["servers"], m["seed"], cell.name
        curves.append(curve)
    from ilets.study.run import atomic_write

    store = out / "store"
    store.mkdir(parents=True, exist_ok=True)
    paths = {"metrics": store / "metrics.parquet", "curves": store / "curves.parquet"}
    frames = {"metrics": pd.DataFrame(rows), "curves": pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()}
    for key, path in paths.items():
        # two grids on one folder build the store at the same moment: one unique temporary each
        def write(tmp: Path, frame: pd.DataFrame = frames[key]) -> None:
            frame.to_parquet(tmp, index=False)

        atomic_write(path, write)
    return paths


def _load(out: Path | None, table: str, variant: str | None) -> pd.DataFrame:
    out = Path(out) if out else results_dir()
    path = out / "store" / f"{table}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no results store; run `ilets grid --profile quick --out {out}` first")
    df = pd.read_parquet(path)
    if "variant" not in df:
        df["variant"] = ""
    return df if variant is None else df[df["variant"] == variant].reset_index(drop=True)


def load_metrics(out: Path | None = None, variant: str | None = "") -> pd.DataFrame:
    """Per-cell final metrics, one row per method x servers x seed.

    ``variant=""`` (default) gives the main study, a name gives that variant's cells,
    ``None`` gives every cell (with a ``variant`` column).
    """
    return _load(out, "metrics", variant)


def load_curves(out: Path | None = None, variant: str | None = "") -> pd.DataFrame:
    """Learning-curve rows of every cell (``variant`` as in :func:`load_metrics`)."""
    return _load(out, "curves", variant)


def load_profile_info(out: Path | None = None) -> dict:
    """The profile the results were produced with (name, description, grid, run settings)."""
    out = Path(out) if out else results_dir()
    path = out / "profile.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not a grid results folder")
    return yaml.safe_load(path.read_text())


def compute_table(out: Path | None = None, done: Iterable[Mapping] | None = None) -> pd.DataFrame:
    """Wall and CPU seconds of every finished cell and of every failed attempt.

    A cell that failed and later succeeded appears twice: once as :data:`STATUS_FAILED` (the
    compute it burnt) and once as :data:`STATUS_DONE`. ``done``: the finished cells' rows
    (cell, method, variant, servers, seed, wall_s, cpu_s) for a scenario whose cells are not
    the study's folders (:meth:`ilets.study.scenario.Scenario.compute_rows`); default: the
    cell folders of ``out``. Failed attempts are every scenario's ``OUT/failed/*.json``
    (:func:`ilets.study.run.record_failure`).
    """
    out = Path(out) if out else results_dir()
    rows = []
    if done is None:
        done = []
        for cell in _cells(out):
            m = json.loads(cell_pack.read_text(cell / "metrics.json"))
            done.append({**m, "cell": cell.name})
    for m in done:
        rows.append({"cell": m["cell"], "method": m["method"], "variant": m.get("variant", ""),
                     "servers": m["servers"], "seed": m["seed"], "status": STATUS_DONE,
                     "wall_s": m["wall_s"], "cpu_s": m["cpu_s"]})
    failed = Path(out) / "failed"
    if failed.is_dir():
        for f in sorted(failed.glob("*.json")):
            try:
                m = json.loads(f.read_text())
                m = {k: m[k] for k in ("cell", "method", "variant", "servers", "seed", "wall_s", "cpu_s")}
            except (OSError, ValueError, KeyError, TypeError) as err:  # a record cut short by a kill
                warnings.warn(f"{f}: unreadable failure record ({err!r}); left out", stacklevel=2)
                continue
            rows.append({"cell": m["cell"], "method": m["method"], "variant": m["variant"], "servers": m["servers"],
                         "seed": m["seed"], "status": STATUS_FAILED, "wall_s": m["wall_s"], "cpu_s": m["cpu_s"]})
    return pd.DataFrame(rows, columns=["cell", "method", "variant", "servers", "seed", "status", "wall_s", "cpu_s"])


def system_info(out: Path | None = None) -> dict:
    """The system.json of one finished cell (hardware and versions)."""
    cells = _cells(Path(out) if out else results_dir())
    if not cells:
        return {}
    path = cells[0] / "system.json"
    try:
        return json.loads(cell_pack.read_text(path))
    except (OSError, UnicodeDecodeError, ValueError) as err:  # changed since _cells checked it
        raise ValueError(f"{path}: unreadable system record ({err})") from err
