"""What every chapter of the book needs to know about the results it shows, defined once.

A :class:`ReportContext` is built once per chapter from a results folder: the profile, its
run settings, the main study's metrics and curves, and the facts the prose quotes about
them (fleet sizes, the number of seeds, the tasks per run, bootstrap resamples). "The
number of seeds" and the rest are properties here, so every chapter states the same value.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import pandas as pd

from ilets.config import RunConfig, from_dict
from ilets.study.results import (STATUS_DONE, STATUS_FAILED, LEARNERS, compute_table, load_curves, load_metrics,
                           load_profile_info, results_dir)

#: Bootstrap resamples of the book's comparisons (seeds are few; more would add no
#: information, only build time).
BOOK_REPS = 1000


def and_join(items) -> str:
    """``"a, b and c"`` (one item alone, ``""`` for none)."""
    items = [str(i) for i in items]
    if not items:
        return ""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


@dataclass(frozen=True, eq=False)  # identity hash: the cached methods key on the instance
class ReportContext:
    """The results a chapter shows and the facts its prose quotes about them."""

    out: Path
    profile: Mapping
    metrics: pd.DataFrame = field(repr=False)
    curves: pd.DataFrame = field(repr=False)
    reps: int = BOOK_REPS

    @classmethod
    def load(cls, out: Path | str | None = None, reps: int = BOOK_REPS) -> "ReportContext":
        """The context of a results folder (default: :func:`ilets.study.results.results_dir`)."""
        out = Path(out) if out else results_dir()
        return cls(out, load_profile_info(out), load_metrics(out), load_curves(out), reps)

    # --- the profile --------------------------------------------------------------------
    @property
    def name(self) -> str:
        return str(self.profile["name"])

    @property
    def description(self) -> str:
        return str(self.profile.get("description", ""))

    @functools.cached_property
    def run(self) -> RunConfig:
        """The run settings of the main grid (typed)."""
        return from_dict(RunConfig, dict(self.profile["run"]), "profile.run")

    # --- facts about the results ------------------------------------------------------
    @functools.cached_property
    def scales(self) -> tuple[int, ...]:
        """Fleet sizes of the main study, ascending."""
        return tuple(int(s) for s in sorted(self.metrics["servers"].unique()))

    @property
    def scales_text(self) -> str:
        return and_join(self.scales)

    @functools.cached_property
    def n_seeds(self) -> int:
        """Seeds per method and fleet size (the median, so an unfinished cell does not change it)."""
        if self.metrics.empty:
            return 0
        return int(round(float(self.metrics.groupby(["method", "servers"])["seed"].nunique().median())))

    @functools.cached_property
    def online_tasks(self) -> int:
        """Online tasks scheduled per run (median over cells)."""
        return int(self.metrics["tasks"].median()) if len(self.metrics) else 0

    @property
    def n_methods(self) -> int:
        return int(self.metrics["method"].nunique())

    @functools.cached_property
    def learner_metrics(self) -> pd.DataFrame:
        return self.metrics[self.metrics["method"].isin(LEARNERS)].reset_index(drop=True)

    @functools.cached_property
    def learner_curves(self) -> pd.DataFrame:
        return self.curves[self.curves["method"].isin(LEARNERS)].reset_index(drop=True)

    @functools.cache
    def variant_metrics(self, variant: str) -> pd.DataFrame:
        """Metrics of one variant's cells (empty when the profile has no such variant)."""
        return load_metrics(self.out, variant)

    @functools.cache
    def variant_curves(self, variant: str) -> pd.DataFrame:
        return load_curves(self.out, variant)

    def variant_run(self, variant: str) -> RunConfig | None:
        """The recorded run settings of one of the variant's cells (None without cells)."""
        import yaml

        vm = self.variant_metrics(variant)
        if vm.empty:
            return None
        cfg = yaml.safe_load((self.out / "cells" / vm["cell"].iloc[0] / "config.yaml").read_text())
        return from_dict(RunConfig, cfg, f"{variant}.config")

    @functools.cached_property
    def compute(self) -> pd.DataFrame:
        return compute_table(self.out)

    @property
    def n_done(self) -> int:
        """Finished cells (main grid and variants)."""
        return int((self.compute["status"] == STATUS_DONE).sum())

    @property
    def n_failed(self) -> int:
        """Failed attempts recorded (a cell retried later still counts its failure)."""
        return int((self.compute["status"] == STATUS_FAILED).sum())

    @property
    def cpu_hours(self) -> float:
        return float(self.compute["cpu_s"].sum() / 3600)

    # --- scale, completeness and provenance: the banner of every results page ---------------
    @property
    def paper_scale(self) -> bool:
        """Whether the results cover the paper's whole window (workload scale 1)."""
        return self.run.workload.scale >= 1.0

    @property
    def scale_pct(self) -> str:
        """The workload scale as a percentage of the paper's window: "100 %", "2 %", "0.1 %"."""
        return f"{100 * self.run.workload.scale:.3g} %"

    @property
    def scale_text(self) -> str:
        """The scale of the results in words (a reduced profile says it is only a quick look)."""
        if self.paper_scale:
            return "paper scale (the full 590,000-task window)"
        return (f"{self.scale_pct} of the paper's window, a quick look "
                "that cannot judge the paper's claims")

    @functools.cached_property
    def planned_cells(self) -> int:
        """Cells of the grid that produced this folder (``grid.json``; the finished count when
        the folder has no manifest)."""
        from ilets.study.grid import planned_cells

        planned = planned_cells(self.out)
        return self.n_done if planned is None else planned

    @functools.cached_property
    def provenance_text(self) -> str:
        """Where and when the cells were computed (:func:`ilets.study.shipping.provenance_line`)."""
        from ilets.study.shipping import load_provenance, provenance_line

        return provenance_line(load_provenance(self.out))

    @property
    def banner(self) -> str:
        """One sentence on what a results page shows: profile, scale, completeness, provenance."""
        done = f"{self.n_done:,} of {self.planned_cells:,} planned cells"
        if self.n_done < self.planned_cells:
            done += " (the grid is not finished: what is missing is missing from every table)"
        return (f"Results: the {self.name} profile, {self.scale_text}; {done}, read from "
                f"`{self._shown_path}`. {self.provenance_text}")

    @property
    def _shown_path(self) -> str:
        root = Path(__file__).resolve().parents[3]
        try:
            return str(self.out.resolve().relative_to(root))
        except ValueError:
            return str(self.out)

    # --- the workload's events ----------------------------------------------------------
    def event_ranges(self, seed: int) -> dict[str, tuple[int, int]]:
        """Online decision ranges after each workload event for ``seed``
        (:func:`ilets.report.events.online_event_ranges_for` of this profile's workload): read
        from the folder's ``events.json``, which the grid records; the workload is rebuilt only
        when the folder lacks that record. Empty when it is absent and the workload cannot be
        built here."""
        from ilets.report.events import online_event_ranges_for

        try:
            return online_event_ranges_for(self.run.workload, int(seed), self.out)
        except (OSError, ValueError):
            return {}


def build_stamp() -> str:
    """Where and when a measurement made while the book builds was taken, for its caption:
    ``"measured while this page was built, on <CPU model> x <n> cores (<system>, Python <v>), <date> UTC"``.

    The machine is named as the cells' ``system.json`` names it (:func:`ilets.host.cpu_model`
    and the core count), so a build-time figure and the results' provenance read alike."""
    from ilets.host import cpu_model

    return (f"measured while this page was built, on {cpu_model() or 'an unknown CPU'} x {os.cpu_count()} cores "
            f"({platform.system()} {platform.release()}, Python {platform.python_version()}), "
            f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC")

