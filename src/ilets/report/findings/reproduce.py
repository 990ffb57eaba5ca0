"""Chapter 10, reproducing the study: the built-in profiles and the hardware a cell ran on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ilets.cell_pack import has_cells

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
    scenario): the main results ``main``, then each scenario's shipped folders the book reads
    (:meth:`ilets.study.scenario.Scenario.verified_folders`: the paper study's reduced-scale,
    per-server and worlds grids, the grid-command quick and full-window grids); a folder that is
    absent, has no cells, or is one already listed is left out."""
    from ilets.study.results import repo_root
    from ilets.study.scenario import scenarios

    root = repo_root()
    found: dict[str, tuple[Path, str]] = {}
    seen: set[Path] = set()
    listed = [(Path(main), "cloud")] + [(folder, sc.name) for sc in scenarios() for folder in sc.verified_folders()]
    for folder, scenario in listed:
        where = folder.resolve()
        if where in seen or not has_cells(where):
            continue
        seen.add(where)
        found[str(where.relative_to(root)) if where.is_relative_to(root) else str(where)] = (folder, scenario)
    return found


def _checked_day(text: str) -> str:
    """The day of a recorded check (``"2026-12-01T13:42:14+00:00 UTC, x86_64"`` -> ``"2026-12-01"``)."""
    return str(text)[:10]


def verification_summary(recorded: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.study.verify.recorded_tables`' rows as chapter 10 shows them: one row per
    shipped folder with its recorded re-runs, how many reproduced exactly, the days they were
    checked, the CPU vendors they were checked on, and the kernels they were re-run with."""
    from ilets.host import cpu_vendor

    cols = ["results", "re-runs", "reproduced exactly", "checked", "on", "kernels"]
    if recorded.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for results, g in recorded.groupby("results", sort=False):
        days = sorted({_checked_day(t) for t in g["checked on"]})
        cpus = [cpu_vendor(str(t).split(", ", 1)[-1]) or "CPU not named" for t in g["checked on"]]
        kernels = g["checked with"].value_counts()
        rows.append({"results": results, "re-runs": len(g), "reproduced exactly": int((g["reproduced"] == "yes").sum()),
                     "checked": days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}",
                     "on": ", ".join(dict.fromkeys(cpus)),
                     "kernels": ", ".join(f"{k} ({n})" for k, n in kernels.items())})
    return pd.DataFrame(rows, columns=cols)


def kernels_by_method(kernels: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.study.verify.kernel_effects` pooled over variants, as chapter 10 shows it: per
    method the cells computed with both kernels, how many came out identical, and the mean
    change of each metric (largest in brackets), in percent."""
    from ilets.method_table import METHOD_LABELS
    from ilets.study.verify import KERNEL_METRICS

    cols = ["method", "cells", "identical"] + [f"{label} %, mean (largest)" for _, label in KERNEL_METRICS]
    if kernels.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for method, g in kernels.groupby("method", sort=False):
        row = {"method": METHOD_LABELS.get(method, method), "cells": int(g["cells"].sum()),
               "identical": int(g["identical"].sum())}
        for _, label in KERNEL_METRICS:
            mean = (g[f"{label} mean %"] * g["cells"]).sum() / g["cells"].sum()
            largest = g[f"{label} largest %"].iloc[g[f"{label} largest %"].abs().to_numpy().argmax()]
            row[f"{label} %, mean (largest)"] = f"{mean:+.2f} ({largest:+.1f})"
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)


def reproduce_lead(recorded: pd.DataFrame, kernels: pd.DataFrame) -> str:
    """Chapter 10's finding in at most three plain sentences: how many recorded re-runs of the
    shipped folders reproduced bit for bit (``recorded``: :func:`ilets.study.verify.recorded_tables`),
    which verdict of ``ilets verify`` a reader should expect on which CPU, and what other
    floating-point kernels did to the heuristic and the learner cells (``kernels``:
    :func:`ilets.study.verify.kernel_effects`)."""
    from ilets.method_table import LEARNERS

    if recorded.empty:
        first = "No shipped folder carries a recorded re-run yet."
    else:
        ok = int((recorded["reproduced"] == "yes").sum())
        first = (f"{ok} of {len(recorded)} recorded re-runs, over {recorded['results'].nunique()} shipped "
                 "folders, reproduced their results bit for bit.")
    parts = [first, 'On a CPU of the vendor that computed a cell, expect `ilets verify` to say "reproduced exactly"; '
                    'on another vendor\'s CPU or an ARM laptop, expect "agrees within the seed-to-seed spread".']
    if not kernels.empty:
        learner = kernels["method"].isin(LEARNERS)
        heur, learn = kernels[~learner], kernels[learner]
        text = (f"Recomputed with another host's floating-point kernels, {int(heur['identical'].sum())} of "
                f"{int(heur['cells'].sum())} heuristic cells and {int(learn['identical'].sum())} of "
                f"{int(learn['cells'].sum())} learner cells came out identical")
        if len(learn):
            moved = learn.groupby("method").apply(
                lambda g: (g["response time mean %"] * g["cells"]).sum() / g["cells"].sum(), include_groups=False).abs()
            text += f"; a learner's mean response time moved by {moved.min():.2f} to {moved.max():.2f} % per method"
        parts.append(text + ".")
    return " ".join(parts)
