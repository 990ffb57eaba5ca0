"""Where the grid-command scenario stands against the bar it was built to meet.

The scenario's issue closes on six criteria that shipped results can decide (two more, the
depth-0 scenario equal to the plain one bit for bit and every knob named in a one-line error,
are checked by the test suite, not by results). Each rule here reads the tables the chapter
already shows and says *met*, *in part* or *not met*, with the numbers it read, so the chapter's
summary is generated, never typed, and changes when a grid is shipped. A status is a verdict of
the study's one vocabulary (:data:`ilets.report.verdicts.VERDICTS`): a criterion whose parts
each pass or fail is judged by its rule (:func:`ilets.report.verdicts.verdict_of`, a part that
passes :data:`~ilets.report.verdicts.HOLDS`, one that does not
:data:`~ilets.report.verdicts.FAILS`), and the table words a bar's verdict as *met*, *in part*,
*not met* or *not run* (:data:`STATUS_WORDS`: a criterion is met, not reproduced):

1. every generated event inside the flexibility envelope, and an expert in the band on at
   least :data:`~ilets.gridcommand.report.results.BAND_BAR` of events, at both fleet sizes, in every
   grid of :data:`ENVELOPE_GRIDS` (:func:`envelope_status`);
2. the hindsight rung (the study's upper bound, the issue's "oracle") no worse than any
   rung on the scored objective, per regime (:func:`bound_status`);
3. a frozen clone within the bar of its teacher at both fleet sizes, and still within it when
   each seed's clone learns from workloads of its own; a design whose rows carry the teacher's
   own score terms (declared privileged) meets it only "in part" (:func:`clone_status`);
4. fine-tuning no worse than the frozen clone on held-out episodes (:func:`finetune_status`);
5. a drift family with every factor and its control, at least
   :data:`~ilets.gridcommand.command.DRIFT_EVENTS` events in its median episode and
   :data:`DRIFT_SEEDS` seeds in every grid, read from the archive table (:func:`drift_status`);
6. the full-window grid shipped whole and re-run exactly (:func:`full_window_status`).

:func:`criteria_table` loads the shipped results and applies them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ilets.gridcommand.command import DRIFT_EVENTS, DRIFT_FACTORS
from ilets.gridcommand.archive import archive_provenance, load_archive
from ilets.gridcommand.designs import display_name
from ilets.gridcommand.experts import BOUND
from ilets.gridcommand.report import bound as B
from ilets.gridcommand.report import positive_control as C
from ilets.gridcommand.report import drift as D
from ilets.gridcommand.report import results as R
from ilets.gridcommand.pipeline_config import FROZEN
from ilets.report.verdicts.rule import FAILS, HOLDS, NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED, verdict_of

#: A criterion's statuses: the verdicts of the one vocabulary (module docstring).
MET, IN_PART, NOT_MET, NOT_RUN = REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE
STATUSES = (MET, IN_PART, NOT_MET, NOT_RUN)
#: How the criteria table and sentence word each status.
STATUS_WORDS = {MET: "met", IN_PART: "in part", NOT_MET: "not met", NOT_RUN: "not run"}
#: The fleet sizes every criterion is asked at [issue].
FLEETS = (50, 200)
#: Seeds a drift family needs [issue].
DRIFT_SEEDS = 10
#: The full-window grid with the sleep lever whose generator moves an event the fleet cannot
#: follow to a new start before it drops it (``envelope_redraws``).
PAPER_REDRAW_SHIPPED = Path("shipped") / "gridcommand-paper-sleep-redraw"
#: The grids the envelope criterion judges (label -> shipped folder): the quick grid as it is
#: and the full window with the sleep lever and unreachable events moved (set so before that
#: grid ran).
ENVELOPE_GRIDS = {"quick scale": R.SHIPPED, "full window, sleep lever, unreachable events moved": PAPER_REDRAW_SHIPPED}
#: Grids the envelope criterion reports beside them without judging: the full window without
#: the lever, which its idle power leaves unable to follow most cuts.
ENVELOPE_CONTEXT = {"full window without the sleep lever": R.PAPER_SHIPPED}
#: The grids holding the hindsight rung beside every other rung (label -> shipped folder).
BOUND_GRIDS = {"quick scale": B.SHIPPED, "full window": B.PAPER_SHIPPED}


@dataclass(frozen=True)
class Criterion:
    """One criterion of the bar: what it asks, whether the shipped results meet it, and why."""

    criterion: str
    status: str
    evidence: str


def _overall(passes: list[bool]) -> str:
    """Met when every part passes, not met when none does, in part otherwise, not run without
    parts: the one vocabulary's rule over parts that hold or fail (:func:`verdict_of`)."""
    return verdict_of([HOLDS if ok else FAILS for ok in passes])


def _fleets(servers) -> str:
    return " and ".join(str(int(s)) for s in sorted(set(servers)))


def _covers(servers) -> bool:
    return set(FLEETS) <= {int(s) for s in servers}


def _envelope_said(label: str, table: pd.DataFrame) -> tuple[bool, str]:
    """Whether one grid's results pass criterion 1, and what they show."""
    events, band = R.envelope_table(table), R.band_bar_table(table)
    dropped, generated = int(events["dropped"].sum()), int(events["generated"].sum())
    redrawn = int(events["redrawn"].sum())
    # one unrecorded share leaves the count unknown, which is no evidence of fitting
    outside = np.nan if events["outside"].isna().any() else float(events["outside"].sum())
    ok = (_covers(events["servers"]) and len(events) > 0 and dropped == 0 and outside == 0 and len(band) > 0
          and bool(band["meets"].all()))
    return bool(ok), (
        f"{label} ({_fleets(events['servers']) or 'no'} servers): {dropped} of {generated} generated events dropped "
        "as unreachable, " + (f"{redrawn} moved to a new start first, " if redrawn else "")
        + ("outside unrecorded" if np.isnan(outside) else f"{int(outside)} kept outside the envelope")
        + f"; an expert reaches the band on at least {R.BAND_BAR:.0%} of events in {int(band['meets'].sum())} of "
        f"{len(band)} (regime, fleet size) pairs")


def envelope_status(grids: Mapping[str, pd.DataFrame | None],
                    context: Mapping[str, pd.DataFrame | None] | None = None) -> Criterion:
    """Criterion 1 over results tables (label -> :func:`~ilets.gridcommand.report.results.results_table`,
    None when not shipped): a grid passes when it covers :data:`FLEETS`, the envelope dropped
    none of its generated events and none it kept asks for more than the levers reached
    (:func:`~ilets.gridcommand.report.results.envelope_table`; a drop is a generated event the fleet
    could not move at all, so it counts against the criterion, not for it) and some expert
    reaches the band on at least the bar's share of events in every (regime, fleet size) pair
    (:func:`~ilets.gridcommand.report.results.band_bar_table`); a listed grid not shipped fails. Met
    when every grid passes. The ``context`` grids are reported after them, not judged."""
    passes, said = [], []
    for label, table in grids.items():
        if table is None:
            passes.append(False)
            said.append(f"{label}: not shipped")
            continue
        ok, text = _envelope_said(label, table)
        passes.append(ok)
        said.append(text)
    shown = [_envelope_said(label, t)[1] for label, t in (context or {}).items() if t is not None]
    status = _overall(passes) if any(t is not None for t in grids.values()) else NOT_RUN
    return Criterion("Every generated event within the envelope; an expert in the band on at least "
                     f"{R.BAND_BAR:.0%} of events (50 and 200 servers)", status,
                     "; ".join(said) + "." + (f" Not judged: {'; '.join(shown)}." if shown else ""))


def bound_status(grids: Mapping[str, pd.DataFrame]) -> Criterion:
    """Criterion 2 over bound tables (label -> :func:`~ilets.gridcommand.report.bound.bound_table`;
    empty when not shipped): a grid passes when it covers :data:`FLEETS`, no rung scored above
    the hindsight rung on any episode, and the hindsight rung has the best seed mean of the
    scored objective in every (regime, fleet size) pair; a listed grid not shipped fails. Met
    when every grid passes."""
    passes, said = [], []
    for label, bound in grids.items():
        if len(bound) == 0:
            passes.append(False)
            said.append(f"{label}: not shipped")
            continue
        own = bound[bound["method"] == BOUND]
        groups = list(bound.groupby(["regime", "servers"], sort=False))
        top = sum(B.top_rung(g, B.OBJECTIVE) == BOUND for _, g in groups)
        violations, episodes = int(own["violations"].sum()), int(own["seeds"].sum())
        passes.append(_covers(bound["servers"]) and violations == 0 and top == len(groups))
        said.append(f"{label} ({_fleets(bound['servers'])} servers, {int(own['seeds'].max())} seeds): a rung above "
                    f"the hindsight rung on {violations} of {episodes} episodes; the hindsight rung on top in {top} "
                    f"of {len(groups)} (regime, fleet size) pairs")
    status = _overall(passes) if any(len(b) for b in grids.values()) else NOT_RUN
    return Criterion("The ladder's top (the hindsight rung) no worse than any rung on the scored objective, per "
                     "regime", status, "; ".join(said) + ".")


_CLONE = (f"A frozen clone within {C.TRACKING_BAR:.0%} of its teacher's tracking error and at most "
          f"{C.MISS_BAR - 1:.0%} more deadline misses (50 and 200 servers)")


def _clone_said(rows: pd.DataFrame) -> str:
    """Per fleet size, the clone's tracking error and miss rate against its teacher's
    (``track_pct`` is positive when the clone tracks better, so the error's change is its
    negative), with the change's interval over seeds where the table has it (``track_low``,
    ``track_high``: the paired change's bootstrap interval)."""
    def interval(r: dict) -> str:
        low, high = r.get("track_low"), r.get("track_high")
        if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
            return ""
        return f" [{int(round(-high)):+d}, {int(round(-low)):+d}]"

    return ", ".join(f"{int(r['servers'])} servers: tracking error {int(round(-r['track_pct'])):+d} %{interval(r)}, "
                     f"miss rate {r['miss_ratio']:.2f}x" for r in rows.sort_values("servers").to_dict("records"))


#: The clone criterion's reading when only a design with the teacher's terms meets the bar.
PRIVILEGED_ONLY = "Met only with the teacher's terms in the rows; not met without them"


def clone_status(control: pd.DataFrame) -> Criterion:
    """Criterion 3 over :func:`~ilets.gridcommand.report.positive_control.control_table` of the kept designs
    (:data:`~ilets.gridcommand.report.positive_control.DESIGNS`): per design, whether its frozen clone meets
    the bar under the training regime at each fleet size it ran. Met when a design whose rows
    carry no privileged state (:data:`~ilets.gridcommand.report.positive_control.PRIVILEGED`) meets it at
    every one of :data:`FLEETS` and its twin with each seed's own training workloads
    (:data:`~ilets.gridcommand.report.positive_control.OWN_DESIGN`) meets it too; in part when only a
    privileged design, or only some fleet size, meets it (the evidence then opens with
    :data:`PRIVILEGED_ONLY` where that is why); not met otherwise."""
    bc = control[(control["role"] == "train") & (control["method"] == FROZEN)] if len(control) else control
    if len(bc) == 0:
        return Criterion(_CLONE, NOT_RUN, "No design's frozen clone is shipped.")
    said, full = [], {}
    for design, g in bc.groupby("design", sort=False):
        full[design] = bool(g["meets_bar"].all()) and _covers(g["servers"])
        verb = "meets it" if g["meets_bar"].all() else ("misses it" if not g["meets_bar"].any() else "meets it in part")
        said.append(f"{display_name(design)}: {verb} ({_clone_said(g)})")
    own_ok = full.get(C.OWN_DESIGN, True) or bool(bc.loc[bc["design"] == C.OWN_DESIGN, "meets_bar"].all())
    plain = [d for d, ok in full.items() if ok and d not in C.PRIVILEGED and d != C.OWN_DESIGN
             and (d != C.EPISODES_DESIGN or own_ok)]
    privileged = [d for d, ok in full.items() if ok and d in C.PRIVILEGED]
    if plain:
        return Criterion(_CLONE, MET, "; ".join(said) + ".")
    lead = f"{PRIVILEGED_ONLY}. " if privileged else ""
    status = IN_PART if privileged or bool(bc["meets_bar"].any()) else NOT_MET
    return Criterion(_CLONE, status, lead + "; ".join(said) + ".")


def finetune_status(design: str, heldout: pd.DataFrame) -> Criterion:
    """Criterion 4 over :func:`~ilets.gridcommand.report.positive_control.heldout_table` of the design the
    chapter reads (``design``): met when, at every one of :data:`FLEETS`, no method that
    fine-tunes the clone is worse than the frozen clone on the held-out episode in tracking
    error or deadline misses (paired by seed); in part when that holds at some fleet size.
    Says which, if any, tracks better than the teacher."""
    name = "Fine-tuning no worse than the frozen clone on held-out episodes"
    tuned = heldout[heldout["against"] == FROZEN] if len(heldout) else heldout
    if len(tuned) == 0:
        return Criterion(name, NOT_RUN, f"Design *{display_name(design)}* has no held-out scores.")
    worse = (tuned["verdict"] == "worse") | (tuned["miss_verdict"] == "worse")
    fine = sorted(set(tuned["servers"]) - set(tuned.loc[worse, "servers"]))
    beats_teacher = heldout[(heldout["against"] != FROZEN) & (heldout["method"] != FROZEN)
                            & (heldout["verdict"] == "better")]
    beats = "; ".join(f"{R.method_label(r['method'])} at {int(r['servers'])} servers"
                      for r in beats_teacher.to_dict("records")) or "none"
    status = MET if _covers(fine) else (IN_PART if fine else NOT_MET)
    lo, hi = int(tuned["n_x"].min()), int(tuned["n_x"].max())
    where = _fleets(tuned.loc[worse, "servers"])
    methods = ", ".join(R.method_label(m) for m in dict.fromkeys(tuned["method"]))
    return Criterion(name, status, (
        f"Design *{display_name(design)}*, {methods}: worse than the "
        f"frozen clone {f'at {where} servers' if where else 'at no fleet size'} "
        f"({lo if lo == hi else f'{lo}-{hi}'} paired seeds); tracking better than the teacher: "
        f"{beats}."))


def drift_status(families: Mapping[str, tuple[list[str], pd.DataFrame]]) -> Criterion:
    """Criterion 5 over the drift families (label -> (its factors with both grids whole,
    :func:`~ilets.gridcommand.report.drift.complete_factors`; its rows,
    :func:`~ilets.gridcommand.report.drift.load_drift`), read from the archive table: met when one
    family has every factor with its control, :data:`DRIFT_SEEDS` seeds or more in each of those
    grids and a median episode of at least :data:`~ilets.gridcommand.command.DRIFT_EVENTS`
    events; in part when a family has some factor whole."""
    name = (f"A drift family: a row per factor with its control, at least {DRIFT_EVENTS} events in the median "
            f"episode and {DRIFT_SEEDS} seeds")
    passes, said = [], []
    for family, (complete, rows) in families.items():
        if len(rows) == 0:
            continue
        episodes = D.episode_events(rows)
        whole = rows[rows["factor"].isin(complete)]
        seeds = int(whole.groupby(["factor", "kind"])["seed"].nunique().min()) if len(whole) else 0
        ok = (len(complete) == len(DRIFT_FACTORS) and seeds >= DRIFT_SEEDS
              and float(episodes.median()) >= DRIFT_EVENTS)
        passes.append(ok)
        if ok or family == D.FAMILY:
            said.append(f"{family}: {len(complete)} of {len(DRIFT_FACTORS)} factors with their control"
                        + (f" ({seeds} seeds in the fewest of their grids)" if len(complete) else "")
                        + f", {episodes.median():g} events in the median episode")
    some = any(len(c) for c, r in families.values() if len(r))
    status = NOT_RUN if not passes else (MET if any(passes) else (IN_PART if some else NOT_MET))
    return Criterion(name, status, ("; ".join(said) + " (read from the archive table)." if said
                                    else "No drift family is archived."))


def full_window_status(done: int, planned: int | None, provenance: Mapping, recorded: pd.DataFrame) -> Criterion:
    """Criterion 6: the full-window grid's finished cells (``done``) against its profile's
    (``planned``), its ``PROVENANCE.json`` (``provenance``) and its recorded re-runs
    (:func:`ilets.study.verify.recorded_table`): met when every planned cell is shipped, the
    provenance accounts for every cell, at least one re-run is recorded and every recorded
    re-run reproduced its cell exactly; in part when cells are shipped but not all that."""
    name = "The full-window grid shipped with provenance and verified"
    if not done:
        return Criterion(name, NOT_RUN, "The full-window grid is not shipped.")
    ok = int((recorded["reproduced"] == "yes").sum())
    whole = planned is not None and done >= planned
    traced = int(provenance.get("cells", 0))
    status = MET if whole and traced == done and len(recorded) and ok == len(recorded) else IN_PART
    return Criterion(name, status, f"{done} of {planned if planned is not None else 'unknown'} planned cells "
                                   f"shipped, {traced} of them in its provenance; {ok} of {len(recorded)} recorded "
                                   "re-runs reproduced exactly.")


def criteria_table(root: Path) -> pd.DataFrame:
    """Every criterion over the results shipped under ``root``, one row each (criterion,
    status in words, :data:`STATUS_WORDS`, and evidence)."""
    from ilets.study.verify import recorded_table

    root = Path(root)
    loaded: dict[Path, R.GridResults | None] = {}  # the full window is both judged and shown

    def load(folder: Path) -> R.GridResults | None:
        if folder not in loaded:
            loaded[folder] = R.load_results(root / folder)
        return loaded[folder]

    def results_of(folder: Path) -> pd.DataFrame | None:
        results = load(folder)
        return None if results is None else R.results_table(results)

    bounds = {label: B.bound_table(t) if (t := results_of(folder)) is not None else pd.DataFrame(columns=["servers"])
              for label, folder in BOUND_GRIDS.items()}
    design, rows = C.heldout_design(root)
    archive, grids = load_archive(root), archive_provenance(root).get("grids", {})
    families = {}
    for label, family in D.FAMILIES.items():
        drift = D.load_drift(archive, family)
        families[label] = (D.complete_factors(drift, grids, family) if len(drift) else [], drift)
    paper = load(R.PAPER_SHIPPED)
    done, planned = R.cell_progress(paper) if paper is not None else (0, None)
    criteria = [envelope_status({label: results_of(folder) for label, folder in ENVELOPE_GRIDS.items()},
                                {label: results_of(folder) for label, folder in ENVELOPE_CONTEXT.items()}),
                bound_status(bounds),
                clone_status(C.control_table(C.load_designs(root))),
                finetune_status(design, C.heldout_table(rows)),
                drift_status(families),
                full_window_status(done, planned, paper.provenance if paper is not None else {},
                                   recorded_table(root / R.PAPER_SHIPPED, "gridcommand")[0])]
    return pd.DataFrame([{**asdict(c), "status": STATUS_WORDS[c.status]} for c in criteria],
                        columns=["criterion", "status", "evidence"])


def criteria_sentence(table: pd.DataFrame) -> str:
    """How many criteria :func:`criteria_table` finds met, in part and not met."""
    counts = table["status"].value_counts()
    said = ", ".join(f"{int(counts[w])} {w}" for w in (STATUS_WORDS[s] for s in STATUSES) if w in counts)
    return f"Of the {len(table)} criteria read from the shipped results: {said}."


#: Where README holds :func:`readme_block`.
README_MARKERS = ("<!-- gridcommand-bar:start -->", "<!-- gridcommand-bar:end -->")


def readme_block(root: Path) -> str:
    """README's summary of the bar: :func:`criteria_sentence` and the table of
    :func:`criteria_table` over the results shipped under ``root``, as Markdown."""
    table = criteria_table(root)
    # unpadded pipe rows: tabulate pads every cell to the longest evidence, a wall in the raw file
    rows = ["| criterion | status | evidence |", "|:--|:--|:--|",
            *(f"| {r['criterion']} | {r['status']} | {r['evidence']} |" for r in table.to_dict("records"))]
    return f"{criteria_sentence(table)}\n\n" + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print README's summary of the grid-command bar, or write it between :data:`README_MARKERS`."""
    from ilets.files import marked_block_main

    return marked_block_main(argv, "python -m ilets.gridcommand.report.criteria", main.__doc__,
                             ("root", Path("."), "the repository whose shipped/ to read (default: .)"),
                             lambda root: readme_block(root or Path(".")), README_MARKERS, "the grid-command bar")


if __name__ == "__main__":
    raise SystemExit(main())
