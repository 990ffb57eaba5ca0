"""README's headline table, written from a results folder: ``python -m ilets.report.headline``.

The table is :func:`ilets.report.findings.headline_markdown` (the paper's improvements over
DRL beside ours, per fleet size and pooled, with the results' banner). With ``--write FILE``
it replaces what sits between :data:`ilets.report.findings.HEADLINE_MARKERS` in ``FILE``; a
test keeps README's block equal to the shipped paper-scale results' table. It also writes
the table of every shipped folder (:func:`shipped_markdown`, between :data:`SHIPPED_MARKERS`),
so no count, CPU-hour or size in README is typed by hand. It lives in the
report layer (not in the ``ilets`` command of the study layer, which the report layer sits
above).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from ilets.files import PROVENANCE, MarkerError, atomic_write, replace_marked
from ilets.report.findings.readme import HEADLINE_MARKERS, headline_markdown
from ilets.report.report_context import ReportContext


class HeadlineError(ValueError):
    """A folder or file the command cannot use (the message names it)."""


SHIPPED_MARKERS = ("<!-- shipped:start -->", "<!-- shipped:end -->")


def planned_cell_count(folder: Path) -> int | None:
    """How many cells the grid that made ``folder`` planned: its ``grid.json`` manifest
    (:func:`ilets.study.grid.manifest_cell_count`), else the first scenario that can tell from
    what it wrote there (:meth:`ilets.study.scenario.Scenario.planned_cell_count`: the
    grid-command grid's ``profile.json``); None when none can."""
    from ilets.study import grid as study
    from ilets.study.scenario import scenarios

    folder = Path(folder)
    planned = study.manifest_cell_count(folder)
    if planned is not None:
        return planned
    return next((n for n in (sc.planned_cell_count(folder) for sc in scenarios()) if n is not None), None)


#: Where a provenance note's opening phrase ends (the table shows that phrase; the whole note
#: stays in the folder's ``PROVENANCE.json``).
NOTE_END = re.compile(r": |; |\. |\(")


def short_note(note: str) -> str:
    """The opening phrase of a provenance note: up to its first colon, semicolon, full stop or
    bracket (``"paper profile: main grid first, ..."`` -> ``"paper profile"``)."""
    return NOTE_END.split(str(note), 1)[0].strip().rstrip(",")


def _days(prov: dict) -> str:
    """When a folder's cells started, as days: ``2026-12-01 to 2026-12-02`` (``—`` if not recorded)."""
    days = sorted({str(prov[k])[:10] for k in ("first_start_utc", "last_start_utc") if prov.get(k)})
    return " to ".join(days) or "—"


def _vendors(prov: dict) -> str:
    """The CPU vendors a folder's cells ran on (``AMD, Intel``; ``—`` if none is named)."""
    from ilets.host import cpu_vendor

    return ", ".join(dict.fromkeys(v for v in (cpu_vendor(m) for m in prov.get("machines", {})) if v)) or "—"


def shipped_markdown(root: Path) -> str:
    """One row per shipped folder of ``root`` (each with a ``PROVENANCE.json``): the opening
    phrase of its note (:func:`short_note`), cells done of planned, CPU-hours, the commits it
    ran at, the days its cells started, the CPU vendors they ran on, and its size on disk (the
    sum of its files' sizes)."""
    rows = ["| folder | what (its provenance note, opening) | cells | CPU-hours | commits | computed | on | size |",
            "|---|---|---:|---:|---:|---|---|---:|"]
    for folder in sorted(p for p in Path(root).iterdir() if (p / PROVENANCE).is_file()):
        prov = json.loads((folder / PROVENANCE).read_text())
        # a positive-control folder counts units (expert x fleet size x seed), not grid cells
        planned = prov["planned_units"] if "planned_units" in prov else planned_cell_count(folder)
        done = int(prov.get("cells", prov.get("units", 0)))
        cells = f"{done:,}" + (f" of {planned:,}" if planned is not None else "")
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20
        found = list(prov.get("commits", {}))
        dirty = sum(c.endswith("+dirty") for c in found)
        commits = (", ".join(c[:7] + ("+dirty" if c.endswith("+dirty") else "") for c in found) if len(found) <= 2
                   else f"{len(found)}" + (f" ({dirty} with uncommitted edits)" if dirty else ""))
        rows.append(f"| `{root.name}/{folder.name}/` | {short_note(prov.get('note', ''))} | {cells} | "
                    f"{float(prov.get('cpu_hours', 0.0)):.2f} | {commits} | {_days(prov)} | {_vendors(prov)} | "
                    f"{size:.1f} MB |")
    return "\n".join(rows) + "\n"


def cost_markdown(folder: Path) -> str:
    """CPU seconds per main-grid cell of a results folder, per fleet size: each learner's
    mean over the seeds it has, and the heuristics' range (from the cells' own records);
    then the CPU-hours measured so far (:func:`measured_cost_text`)."""
    from ilets.config import HEURISTICS
    from ilets.method_table import METHOD_LABELS
    from ilets.study.results import STATUS_DONE, compute_table

    done = compute_table(Path(folder))
    done = done[done["status"] == STATUS_DONE]
    t = done[done["variant"] == ""]
    if t.empty:
        return ""
    parts = []
    for servers, g in t.groupby("servers"):
        mean = g.groupby("method")["cpu_s"].mean()
        learners = [f"{METHOD_LABELS.get(m, m)} {mean[m]:,.0f}" for m in mean.index if m not in HEURISTICS]
        heur = mean[[m for m in mean.index if m in HEURISTICS]]
        text = ", ".join(learners) + (f", the heuristics {heur.min():,.0f}-{heur.max():,.0f}" if len(heur) else "")
        parts.append(f"at {servers} servers ({g['seed'].nunique()} seed(s)) {text}")
    return (f"CPU seconds per main-grid cell of `{Path(folder).parent.name}/{Path(folder).name}/` (its cells' "
            "own records: the learner process and its emulators; mean over seeds): " + "; ".join(parts) + ". "
            + measured_cost_text(Path(folder), done) + "\n")


def measured_cost_text(folder: Path, done) -> str:
    """The CPU-hours the finished cells of ``folder`` took (``done``: their rows of the
    results table, with ``variant`` and ``cpu_s``), for the main grid and for the variants,
    each with its finished and planned cells (``grid.json``)."""
    from ilets.study.coverage import coverage_table

    plan = coverage_table(Path(folder), set(done["cell"]))
    parts = []
    for label, is_main in (("main grid", True), ("variants", False)):
        planned = plan[(plan["variant"] == "") == is_main]
        if not len(planned):
            continue
        finished = done[(done["variant"] == "") == is_main]
        parts.append(f"{label} {finished['cpu_s'].sum() / 3600:.2f} CPU-hours for {len(finished):,} of "
                     f"{len(planned):,} planned cells")
    return ("Measured: " + "; ".join(parts) + ".") if parts else ""


def verification_markdown(folder: Path) -> str:
    """What the verification recorded with a results folder (``VERIFY.json``, written by
    ``ilets verify --report``) says: the checked cells by method (and variant) and fleet
    size, and :func:`ilets.study.verify.recorded_table`'s sentence; empty without a record."""
    from ilets.method_table import METHOD_LABELS
    from ilets.study.coverage import parse_cell_name
    from ilets.study.verify import VERIFY_REPORT, numerics_sentence, recorded_table

    folder = Path(folder)
    if not (folder / VERIFY_REPORT).is_file():
        return ""
    table, sentence = recorded_table(folder)
    kinds: dict[str, int] = {}
    for name in table["cell"]:
        cell = parse_cell_name(name)
        kind = METHOD_LABELS.get(cell["method"], cell["method"]) + (f" ({cell['variant']})" if cell["variant"] else "")
        key = f"{kind} at {cell['servers']} servers"
        kinds[key] = kinds.get(key, 0) + 1
    checked = ", ".join(f"{k} ({n})" if n > 1 else k for k, n in kinds.items())
    return (f"Re-run with `ilets verify --results {folder.parent.name}/{folder.name} --cell <name>` and recorded in "
            f"its `{VERIFY_REPORT}`: {checked}. {sentence} {numerics_sentence(table)}\n")


def shipped_block(shipped: Path) -> str:
    """README's shipped block: :func:`shipped_markdown` of ``shipped``, then the cost per
    cell of its paper-scale folder (:func:`cost_markdown`) and its recorded verification
    (:func:`verification_markdown`)."""
    paper = Path(shipped) / "paper"
    extra = [cost_markdown(paper), verification_markdown(paper)] if paper.is_dir() else []
    return shipped_markdown(shipped) + "".join("\n" + text for text in extra if text)


def write_headline(results: Path, target: Path | None = None) -> str:
    """The headline table of ``results``; written between the markers of ``target`` if given."""
    results = Path(results)
    if not (results / "store" / "metrics.parquet").is_file():
        raise HeadlineError(f"--results {results}: expected a results folder with store/metrics.parquet")
    text = headline_markdown(ReportContext.load(results))
    if target is None:
        return text
    target = Path(target)
    if not target.is_file():
        raise HeadlineError(f"--write {target}: no such file")
    doc = replace_marked(target.read_text(), HEADLINE_MARKERS, text, f"--write {target}")
    doc = replace_marked(doc, SHIPPED_MARKERS, "", f"--write {target}")  # both marker pairs are there
    # the repository's shipped folders (beside the file written or a folder above it, as for
    # book/records.md), whatever --results is
    found = [p / "shipped" for p in target.resolve().parents if (p / "shipped").is_dir()]
    if not found:
        raise HeadlineError(f"--write {target}: expected the shipped folders beside it or in a folder above it")
    shipped = found[0]
    doc = replace_marked(doc, SHIPPED_MARKERS, shipped_block(shipped), f"--write {target}")
    atomic_write(target, lambda tmp: tmp.write_text(doc))  # both blocks or neither
    return text


def main(argv: list[str] | None = None) -> int:
    """Print the headline table, or write it into a file; 2 with a one-line message on bad input."""
    parser = argparse.ArgumentParser(prog="python -m ilets.report.headline", description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, help="a results or shipped folder (with store/)")
    parser.add_argument("--write", default=None, help="replace the table between the headline markers of this file")
    args = parser.parse_args(argv)
    try:
        text = write_headline(Path(args.results), Path(args.write) if args.write else None)
    except (HeadlineError, MarkerError) as err:
        print(f"headline: {err}", file=sys.stderr)
        return 2
    print(f"wrote the headline and shipped tables into {args.write}" if args.write else text, end="\n" if args.write else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
