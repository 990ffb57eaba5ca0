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

from ilets import cell_pack
from ilets.config import RunConfig, from_dict
from ilets.study.coverage import MIN_JUDGED_SEEDS, Coverage
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


def _judged(table: pd.DataFrame, coverage: Coverage, variant: str) -> pd.DataFrame:
    """``table``'s rows at the fleet sizes ``coverage`` judges for ``variant`` (all of them
    when the grid plans no such cells: a folder without a manifest plans what it holds)."""
    if not coverage.planned(variant) or table.empty:
        return table
    return table[coverage.judge_mask(table, variant)].reset_index(drop=True)


@dataclass(frozen=True, eq=False)  # identity hash: the cached methods key on the instance
class ReportContext:
    """The results a chapter shows and the facts its prose quotes about them."""

    out: Path
    profile: Mapping
    metrics: pd.DataFrame = field(repr=False)
    curves: pd.DataFrame = field(repr=False)
    reps: int = BOOK_REPS
    #: What the grid planned and finished; the tables hold only its judged fleet sizes
    #: (:mod:`ilets.study.coverage`). None: the tables are taken as they are.
    coverage: Coverage | None = field(default=None, repr=False)
    #: The learner family whose learner cells the tables hold (a key of
    #: :data:`ilets.report.verdicts.FAMILY_LABELS`): ``"flat"``, the authors' policy, for a
    #: grid's own folder; see :meth:`load_family` for another family's.
    family: str = "flat"

    @classmethod
    def load(cls, out: Path | str | None = None, reps: int = BOOK_REPS) -> "ReportContext":
        """The context of a results folder (default: :func:`ilets.study.results.results_dir`).

        Only the fleet sizes the coverage rule judges enter the metrics and curves (an
        unfinished grid's first seeds at a new fleet size would otherwise decide verdicts);
        the others are named by :attr:`coverage_text`."""
        out = Path(out) if out else results_dir()
        every = load_metrics(out, None)
        # the store lists the finished cells (each checked when the store was built): reading
        # every cell folder again would cost a minute on a paper-scale grid
        cov = Coverage.of(out, done=set(every["cell"]) if "cell" in every else set())
        return cls(out, load_profile_info(out), _judged(every[every["variant"] == ""].reset_index(drop=True), cov, ""),
                   _judged(load_curves(out), cov, ""), reps, cov)

    @classmethod
    def load_family(cls, out: Path | str, reference: "ReportContext", family: str = "per-server") -> "ReportContext":
        """The context of another learner family's grid in ``out`` (learner cells only, e.g. the
        per-server policy's), judged beside ``reference``'s heuristic cells.

        The metrics and curves are ``out``'s learner cells at the fleet sizes its coverage rule
        judges (the same rule as :meth:`load`: a fleet size enters once every planned method has
        its seeds there) plus ``reference``'s heuristic cells on the same (fleet size, seed)
        pairs (:func:`ilets.report.heuristic_gap.family_metrics`: a heuristic does not depend on
        the learner); ``reference``'s resamples. A grid with no judged fleet size gives empty
        tables, on which every claim is not testable."""
        from ilets.report.heuristic_gap import family_metrics

        out = Path(out)
        every = load_metrics(out, None)
        cov = Coverage.of(out, done=set(every["cell"]) if "cell" in every else set())
        learners = _judged(every[every["variant"] == ""].reset_index(drop=True), cov, "") if len(every) else every
        curves = load_curves(out)
        curves = _judged(curves, cov, "") if len(curves) else curves
        return cls(out, load_profile_info(out), family_metrics(learners, reference.metrics),
                   family_metrics(curves, reference.curves), reference.reps, cov, family)

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
    def seeds_text(self) -> str:
        """Seeds per method and fleet size in words: ``"10"``, or ``"9-10"`` while a grid is
        unfinished (the fewest and the most of any method at any fleet size shown)."""
        if self.metrics.empty:
            return "0"
        n = self.metrics.groupby(["method", "servers"])["seed"].nunique()
        lo, hi = int(n.min()), int(n.max())
        return str(hi) if lo == hi else f"{lo}-{hi}"

    @property
    def pending_text(self) -> str:
        """The main grid's planned fleet sizes not judged yet, in words (``""`` for none)."""
        return self.coverage.pending_text("") if self.coverage is not None else ""

    @property
    def coverage_text(self) -> str:
        """Which fleet sizes the tables judge and which they leave out (:mod:`ilets.study.coverage`)."""
        pending = self.pending_text
        if not pending:
            return "Every fleet size the profile plans is in the tables."
        left = (f"{pending} {'are' if ' and ' in pending else 'is'} left out of every table until each method has "
                f"{MIN_JUDGED_SEEDS} seeds there (`ilets.study.coverage`)")
        if not self.scales_text:
            return f"No fleet size is judged yet: {left}."
        return f"The tables judge {self.scales_text} servers only; {left}, so a verdict on every fleet size is provisional."

    def variant_missing_text(self, variant: str) -> str:
        """Why ``variant`` has no results shown, in words (no final full stop): not in the
        profile, or planned and not judged yet with its cell counts."""
        if self.coverage is not None and self.coverage.planned(variant):
            return (f"The `{variant}` variant of the `{self.name}` profile is not judged yet: "
                    f"{self.coverage.pending_text(variant)}")
        return f"The `{self.name}` profile has no `{variant}` variant"

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
        """Metrics of one variant's cells at its judged fleet sizes (empty when the profile
        has no such variant or none of its fleet sizes is judged yet)."""
        return self._judged(load_metrics(self.out, variant), variant)

    @functools.cache
    def variant_curves(self, variant: str) -> pd.DataFrame:
        return self._judged(load_curves(self.out, variant), variant)

    @functools.cached_property
    def all_metrics(self) -> pd.DataFrame:
        """Metrics of the main grid and every variant (``variant`` column), each at its judged
        fleet sizes: what a table of every variant's effect may show."""
        every = load_metrics(self.out, None)
        if self.coverage is None or every.empty:
            return every
        parts = [self._judged(g, str(v)) for v, g in every.groupby("variant", sort=False)]
        return pd.concat(parts, ignore_index=True)

    @property
    def pending_variants_text(self) -> str:
        """The planned variants with a fleet size not judged yet, as a sentence (``""`` for none)."""
        if self.coverage is None:
            return ""
        names = sorted(v for v in self.coverage.fleets["variant"].unique() if v and len(self.coverage.pending(v)))
        if not names:
            return ""
        return (f"Variants planned but not judged yet (each method needs {MIN_JUDGED_SEEDS} seeds at a fleet size "
                "first): " + "; ".join(f"`{v}`: {self.coverage.pending_text(v)}" for v in names) + ".")

    def _judged(self, table: pd.DataFrame, variant: str) -> pd.DataFrame:
        return table if self.coverage is None else _judged(table, self.coverage, variant)

    def variant_run(self, variant: str) -> RunConfig | None:
        """The recorded run settings of one of the variant's cells (None without cells)."""
        import yaml

        vm = self.variant_metrics(variant)
        if vm.empty:
            return None
        cfg = yaml.safe_load(cell_pack.read_text(self.out / "cells" / vm["cell"].iloc[0] / "config.yaml"))
        return from_dict(RunConfig, cfg, f"{variant}.config")

    def variant_sections(self, variant: str) -> tuple[str, ...]:
        """The ``RunConfig`` sections (top-level fields) a variant's cells set differently from
        the main grid's settings, from a recorded cell's config (``()`` without cells). The
        cell's own method, seed, label and fleet size are not differences."""
        import dataclasses

        vrun = self.variant_run(variant)
        if vrun is None:
            return ()
        same = dataclasses.replace(vrun, method=self.run.method, seed=self.run.seed, variant=self.run.variant,
                                   fleet=dataclasses.replace(vrun.fleet, servers=self.run.fleet.servers))
        return tuple(f.name for f in dataclasses.fields(RunConfig)
                     if getattr(same, f.name) != getattr(self.run, f.name))

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
        from ilets.study.grid import manifest_cell_count

        planned = manifest_cell_count(self.out)
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
        judged = f" {self.coverage_text}" if self.pending_text else ""
        return (f"Results: the {self.name} profile, {self.scale_text}; {done}, read from "
                f"`{self._shown_path}`.{judged} {self.provenance_text}")

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
    from ilets.host import cpu_model, machine_label

    return (f"measured while this page was built, on {machine_label(cpu_model() or 'an unknown CPU', os.cpu_count())} "
            f"({platform.system()} {platform.release()}, Python {platform.python_version()}), "
            f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC")


def coverage_sentence(folder: Path, learners: pd.DataFrame) -> str:
    """How much of the per-server grid in ``folder`` has finished, per fleet size (Markdown): the
    one sentence chapters 1 and 13 and README use."""
    from ilets.study.grid import manifest_cell_count

    if learners.empty:
        return f"The per-server grid has no finished cell in `{folder.parent.name}/{folder.name}` yet."
    per_size = ", ".join(f"{s} servers: {n}" for s, n in learners.groupby("servers").size().items())
    planned = manifest_cell_count(folder)
    of = f" of {planned}" if planned else ""
    return (f"{len(learners)}{of} cells of the per-server grid have finished ({per_size}; methods "
            f"{', '.join(sorted(learners['method'].unique()))}), read from `{folder.parent.name}/{folder.name}`.")
