"""Re-run shipped cells and check that their results reproduce exactly.

A shipped result is a claim anyone can check: :func:`verify` takes cells of a results folder
(named, or a seeded random sample), re-runs each into a scratch folder, and compares the
outcome with the recorded one. How a cell is read back, re-run and compared is its
scenario's (:class:`ilets.study.scenario.Scenario`; everything else here is shared):

* ``cloud``, the paper's study: each cell re-runs from its own ``config.yaml``; compared are
  ``metrics.json``, every key except those that measure the host rather than the result
  (:data:`HOST_KEYS`: wall and CPU seconds, decision latencies, phase timings), and
  ``curve.csv``, the whole learning curve, value for value;
* ``gridcommand``: each cell re-runs from the folder's ``profile.json``; compared are the
  training record and the scores of both regime roles, except CPU and wall seconds (the
  scenario's :meth:`~ilets.study.scenario.Scenario.compare_cells`).

A verification certifies only what it re-ran itself: before anything runs, every recorded
file it will compare is checked (:func:`check_recorded`: a damaged or missing file, or a
record that is not its cell's, is named), and the re-runs go to a scratch
folder it owns (:func:`prepare_scratch`: never inside the results, an earlier
verification's re-runs cleared, any other non-empty folder refused), so it never compares
two stored files.

A key only the re-run has is taken for one added to the code after the cell was computed
(listed, not compared), unless a cell of the same method computed at the same commit records
it: then it was deleted from the record, a difference (:func:`deleted_keys`).

Equality is exact (``==`` on the parsed numbers). Every method is deterministic from its seed
and configuration on the same kind of machine (OAIL included: its emulators run in simulated
time); a different CPU, BLAS or library version can change the last bits of a learner's
floating-point arithmetic, which the report then shows as a difference.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from typing import Any

import pandas as pd

from ilets import cell_pack
from ilets.numerics import NOT_RECORDED, recorded_mode
# re-exported: the paper study's comparison of two cell folders lives with its scenario
from ilets.study.scenario import HOST_KEYS, added_metrics  # noqa: F401
from ilets.study.scenario import DEFAULT_SCENARIO, Scenario, compare_folders, get_scenario, scenario_hint

#: :func:`ilets.study.scenario.compare_folders`: the differences between two cell folders of the
#: paper's study (empty when they reproduce)
compare = compare_folders


@dataclass(frozen=True)
class CellCheck:
    """One re-run cell: whether it reproduced, and where it did not."""

    cell: str
    reproduced: bool
    differences: tuple[str, ...]  #: "key: recorded -> re-run" lines
    wall_s: float
    added: tuple[str, ...] = ()  #: metrics the re-run has and the record predates (not differences)
    #: the second verdict of a cell that differs (:mod:`ilets.study.agreement`): its line, and
    #: whether it agrees within the seed-to-seed spread (None: not judged, e.g. too few seeds)
    agreement: str = ""
    agrees: bool | None = None
    #: the cell was computed on a CPU of another vendor than the re-run's (:func:`vendors`)
    other_vendor: bool = False


class VerifyError(ValueError):
    """A verification that cannot start or cannot be trusted; the message names the file or folder."""


def _cells(folder: Path, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> list[str]:
    return get_scenario(scenario).recorded_cells(Path(folder))


def pick(folder: Path, names: list[str] | None = None, sample: int = 0, seed: int = 0,
         methods: list[str] | None = None, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> list[str]:
    """The cells of ``scenario`` to verify: ``names`` (checked to exist; each once), else ``sample`` random
    ones (of ``methods`` if given), drawn with ``seed``. A method the scenario does not have
    raises :class:`VerifyError`."""
    folder, sc = Path(folder), get_scenario(scenario)
    every = _cells(folder, sc)
    if names:
        missing = [n for n in names if n not in every]
        if missing:
            raise FileNotFoundError(f"{folder / 'cells'}: no cell(s) {missing}{scenario_hint(folder, sc)}")
        return list(dict.fromkeys(names))  # a cell named twice is re-run once
    unknown = [m for m in methods or () if m not in sc.method_names()]
    if unknown:
        raise VerifyError(f"--methods: {unknown} are not methods of scenario {sc.name!r}; expected some of "
                          f"{list(sc.method_names())}")
    pool = [c for c in every if methods is None or sc.method_of(c) in methods]
    rng = random.Random(seed)
    rng.shuffle(pool)
    return sorted(pool[:sample])


def recorded_cell(path: Path, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> Any:
    """The cell a recorded cell of ``scenario`` ran, after checking every file the comparison
    reads (:meth:`ilets.study.scenario.Scenario.recorded_cell`). Raises :class:`VerifyError`
    naming the file."""
    try:
        return get_scenario(scenario).recorded_cell(Path(path))
    except ValueError as err:  # ConfigError too: e.g. a key this version no longer has
        raise VerifyError(str(err)) from None


def recorded_config(cell: Path):
    """The :class:`ilets.config.RunConfig` a recorded cell folder of the paper's study ran with
    (:func:`recorded_cell`: present, complete, the config's digest the cell's). Raises
    :class:`VerifyError` naming the file."""
    return recorded_cell(cell, "cloud")


def check_recorded(folder: Path, cells: list[str], scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> list:
    """:func:`recorded_cell` of every cell of ``cells`` in ``folder``, in order; the first
    damaged file raises :class:`VerifyError` before any cell is re-run."""
    sc = get_scenario(scenario)
    configs, problems = [], []
    for name in cells:
        try:
            configs.append(recorded_cell(sc.cell_path(Path(folder), name), sc))
        except VerifyError as err:
            problems.append(str(err))
    if problems:
        more = f" (and {len(problems) - 1} more damaged cell(s))" if len(problems) > 1 else ""
        raise VerifyError(f"{problems[0]}{more}; nothing was re-run")
    return configs


#: The file that marks a scratch folder as an ``ilets verify`` one (cleared on reuse).
SCRATCH_MARK = ".ilets-verify-scratch"


def prepare_scratch(folder: Path, scratch: Path) -> Path:
    """Make ``scratch`` an empty folder of this verification's own, so that every cell is
    re-run now: it may not be, lie inside or hold the results ``folder``; an earlier
    verification's scratch (:data:`SCRATCH_MARK`) is cleared; any other non-empty folder is
    refused (its files are not ours to delete). Raises :class:`VerifyError`."""
    import shutil

    folder, scratch = Path(folder), Path(scratch)
    here, there = folder.resolve(), scratch.resolve()
    if there == here or here in there.parents:
        raise VerifyError(f"scratch folder {scratch}: inside the results folder {folder}; the re-runs need a "
                          "folder of their own (a re-run found there would be compared with itself)")
    if there in here.parents:
        raise VerifyError(f"scratch folder {scratch}: holds the results folder {folder}; give another folder")
    if scratch.exists() and not scratch.is_dir():
        raise VerifyError(f"scratch folder {scratch}: expected a folder, but it is a file")
    if scratch.is_dir() and any(scratch.iterdir()):
        if not (scratch / SCRATCH_MARK).is_file():
            raise VerifyError(f"scratch folder {scratch}: not empty and not an earlier verification's; give a new "
                              "or empty folder")
        # an earlier verification's re-runs: compared again, they would certify old code
        for child in scratch.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    try:
        scratch.mkdir(parents=True, exist_ok=True)
        (scratch / SCRATCH_MARK).write_text("re-runs of `ilets verify`; the next verification here clears them\n")
    except OSError as err:
        raise VerifyError(f"scratch folder {scratch}: expected a writable folder ({err.strerror or err})") from None
    return scratch


def check_report(path: Path) -> None:
    """Refuse a ``--report`` target before any work: a folder, an existing file that is not a
    :data:`VERIFY_REPORT` record (:func:`write_report` keeps its checks), or a place where no
    file can be written. Raises :class:`VerifyError` naming the path."""
    import tempfile

    path = Path(path)
    if path.is_dir():
        raise VerifyError(f"report {path}: is a folder; expected a file path such as {path / VERIFY_REPORT}")
    if path.exists():
        try:
            _recorded_checks(path)
        except ValueError as err:
            raise VerifyError(f"{err}; move it away or name another report file") from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".ilets-write-test-"):
            pass
    except OSError as err:
        raise VerifyError(f"report {path}: its folder is not writable ({err.strerror or err})") from None


def verify(folder: Path, cells: list[str], scratch: Path, progress: bool = False,
           scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO, processes: int = 1,
           cpu: str | None = None) -> list[CellCheck]:
    """Re-run ``cells`` of ``folder`` (of ``scenario``) into ``scratch`` and compare (see the
    module docstring). ``processes``: how many processes each re-run may use for work it
    splits (:meth:`Scenario.run_cell`; the numbers do not depend on it).

    Checks every recorded cell first (:func:`check_recorded`) and makes ``scratch`` a folder
    of its own (:func:`prepare_scratch`); raises :class:`VerifyError` before any re-run when
    either fails, and if a cell was not computed by this call."""
    from ilets.study.run import RAN

    folder, scratch, sc = Path(folder), Path(scratch), get_scenario(scenario)
    recorded_cells = check_recorded(folder, cells, sc)
    prepare_scratch(folder, scratch)
    checks = []
    for name, cell in zip(cells, recorded_cells):
        rerun, status = sc.rerun_cell(cell, scratch, progress, processes)
        if status != RAN:  # cannot happen in a folder of our own; never certify a stored file
            raise VerifyError(f"{rerun}: found there ({status}), not re-run by this verification")
        diffs, added, wall = sc.compare_cells(sc.cell_path(folder, name), rerun)
        deleted = deleted_keys(folder, name, added, sc) if added else []
        diffs += [f"{key}: missing from the record, though the cells of its method computed at its commit "
                  "record it (deleted?)" for key in deleted]
        added = [key for key in added if key not in deleted]
        was, here = vendors(folder, name, sc, cpu)
        second = second_verdict(folder, name, rerun, sc) if diffs else None
        checks.append(CellCheck(name, not diffs, tuple(diffs), wall, tuple(added),
                                "" if second is None else second.text(), None if second is None else second.agrees,
                                bool(was and here and was != here)))
    return checks


def vendors(folder: Path, cell: str, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO,
            cpu: str | None = None) -> tuple[str, str]:
    """The CPU vendor ``cell`` of ``folder`` was computed on and this host's (``cpu``: a CPU
    model name standing in for this host's); ``""`` where unknown."""
    from ilets.host import cpu_model, cpu_vendor

    sc = get_scenario(scenario)
    system = sc.cell_system(sc.cell_path(Path(folder), cell))
    return cpu_vendor(system.get("cpu_model", "")) or "", cpu_vendor(cpu_model() if cpu is None else cpu) or ""


def second_verdict(folder: Path, cell: str, rerun: Path, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO):
    """:func:`ilets.study.agreement.spread_agreement` of a re-run that differs, for the paper
    study's cells (their ``metrics.json``; the spread from the folder's store); None for other
    scenarios or where it cannot be judged."""
    from ilets.study.agreement import spread_agreement
    from ilets.study.results import load_metrics
    from ilets.study.run import parse_cell_name

    sc = get_scenario(scenario)
    if sc.name != DEFAULT_SCENARIO:
        return None
    try:
        recorded = json.loads(cell_pack.read_text(sc.cell_path(Path(folder), cell) / "metrics.json"))
        again = json.loads((Path(rerun) / "metrics.json").read_text())
        store = load_metrics(Path(folder), variant=None)
        key = parse_cell_name(cell)
    except (OSError, ValueError, KeyError):
        return None
    return spread_agreement(store, key["method"], key["variant"], int(key["servers"]), recorded, again)


def accepted(check: CellCheck) -> bool:
    """Whether ``ilets verify`` counts ``check`` as a success: reproduced exactly, or, computed
    on another CPU vendor (where exact reproduction is not expected), agreeing within the
    seed-to-seed spread. On a host of the cell's own vendor only exact reproduction counts."""
    return check.reproduced or (check.other_vendor and bool(check.agrees))


def deleted_keys(folder: Path, name: str, added: list[str], scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO,
                 ) -> list[str]:
    """The keys of ``added`` (what a re-run of cell ``name`` has and its record lacks) that the
    record cannot predate: another cell of ``folder`` of the same method, computed at the same
    commit and no later, records them. A key only the re-run has is taken for a metric added to
    the code after the cell was computed (not compared); one its siblings of that code have
    was deleted from the record, and the cell must not count as reproduced."""
    sc = get_scenario(scenario)
    folder = Path(folder)
    own = _cell_record(folder, name, sc)
    commit, started = own.get("commit"), str(own.get("started_utc") or "")
    if not commit:
        return []
    method, found = sc.method_of(name), set()
    for other in _cells(folder, sc):
        if other == name or sc.method_of(other) != method:
            continue
        record = _cell_record(folder, other, sc)
        if record.get("commit") != commit or str(record.get("started_utc") or "") > started:
            continue
        try:  # what the sibling records and this cell lacks
            found |= set(sc.compare_cells(sc.cell_path(folder, name), sc.cell_path(folder, other))[1])
        except (OSError, ValueError, KeyError):  # a damaged sibling tells nothing
            continue
    return [key for key in added if key in found]


#: The file a shipped folder keeps its recorded verification in.
VERIFY_REPORT = "VERIFY.json"


def _check_record(v: CellCheck, when: str, machine: str, code: dict, numerics: str | None = None) -> dict:
    record = {"cell": v.cell, "reproduced": v.reproduced, "differences": list(v.differences), "wall_s": v.wall_s,
              "checked_utc": when, "machine": machine, "code": code, "numerics": numerics}
    if v.agreement:  # the second verdict, only where it was judged (earlier records stay as they were)
        record.update(agreement=v.agreement, agrees=v.agrees, other_vendor=v.other_vendor)
    return record


def write_report(path: Path, folder: Path, checks: list[CellCheck]) -> None:
    """Record ``checks`` as JSON: where and when each cell was checked.

    Checks of other cells already in the file are kept (each with its own date, machine and
    commit), so verifying a few cells at a time builds up one record; a cell checked again
    keeps only its newest check."""
    import datetime

    from ilets.host import cpu_id, cpu_model, machine_label
    from ilets.numerics import record as numerics_record
    from ilets.study.run import atomic_json, source_version

    path = Path(path)
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    machine = machine_label(cpu_model() or "an unknown CPU", os.cpu_count(), cpu_id())
    code = source_version()
    numerics = numerics_record()["effective"]
    new = {v.cell: _check_record(v, when, machine, code, numerics) for v in checks}
    kept = [c for c in _recorded_checks(path) if c["cell"] not in new] if path.is_file() else []
    atomic_json(path, {"results": str(folder), "checked_utc": when, "machine": machine, "code": code,
                       "cells": kept + list(new.values())})


def _recorded_checks(path: Path) -> list[dict]:
    """The per-cell checks of a :data:`VERIFY_REPORT` (an older file's top-level date, machine
    and commit stand for every cell it lists). A malformed file is named."""
    try:
        rep = json.loads(Path(path).read_text())
        top = {k: rep.get(k) for k in ("checked_utc", "machine", "code")}
        checks = [{**top, **c} for c in rep["cells"]]
        for c in checks:
            missing = [k for k in ("cell", "reproduced", "differences", "wall_s") if k not in c]
            if missing:
                raise KeyError(f"a check lacks {missing}")
        return checks
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: unreadable verification record, field 'cells' ({err!r})") from None


def check_table(checks: list[CellCheck]) -> pd.DataFrame:
    """One row per re-run cell: reproduced or not, the first difference, the re-run's wall time."""
    return pd.DataFrame([{"cell": v.cell, "reproduced": "yes" if v.reproduced else "no",
                          "first difference": v.differences[0] if v.differences else "",
                          "re-run wall s": round(v.wall_s, 1)} for v in checks],
                        columns=["cell", "reproduced", "first difference", "re-run wall s"])


def _cell_record(folder: Path, cell: str, sc: Scenario[Any, Any]) -> dict[str, Any]:
    """What a recorded cell says of its making: a cloud cell's ``system.json``, a grid-command
    cell's own record (both name the commit); empty when unreadable."""
    path = sc.cell_path(Path(folder), cell)
    try:
        data = json.loads(cell_pack.read_text(path / "system.json" if cell_pack.is_dir(path) else path))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _cell_commit(folder: Path, cell: str, sc: Scenario[Any, Any]) -> str:
    return str(_cell_record(folder, cell, sc).get("commit", "unknown"))[:12]


#: The columns of :func:`recorded_table`.
RECORDED_COLUMNS = ["cell", "computed at", "computed with", "checked at", "checked on", "checked with", "reproduced",
                    "first difference", "re-run wall s"]


def recorded_table(folder: Path, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO) -> tuple[pd.DataFrame, str]:
    """The recorded verification of a shipped folder of ``scenario`` (:data:`VERIFY_REPORT`)
    as a table, and a sentence saying when and where it was made, and which commits of the
    folder's cells it covers (empty table and a sentence when there is none)."""
    folder = Path(folder)
    sc = get_scenario(scenario)
    path = folder / VERIFY_REPORT
    if not path.is_file():
        return (pd.DataFrame(columns=RECORDED_COLUMNS),
                f"No verification is recorded with these results ({path.name} is absent).")
    checks = _recorded_checks(path)
    table = pd.DataFrame([{"cell": c["cell"], "computed at": _cell_commit(folder, c["cell"], sc),
                           "computed with": recorded_mode(sc.cell_system(sc.cell_path(folder, c["cell"]))),
                           "checked at": str((c.get("code") or {}).get("commit"))[:12],
                           "checked on": f"{c.get('checked_utc')} UTC, {c.get('machine')}",
                           "checked with": c.get("numerics") or NOT_RECORDED,
                           "reproduced": "yes" if c["reproduced"] else "no",
                           "first difference": c["differences"][0] if c["differences"] else "",
                           "re-run wall s": round(float(c["wall_s"]), 1)} for c in checks], columns=RECORDED_COLUMNS)
    ok = int((table["reproduced"] == "yes").sum())
    commits = pd.Series([_cell_commit(folder, c, sc) for c in _cells(folder, sc)], dtype=object).value_counts()
    checked = table["computed at"].value_counts()
    cover = ", ".join(f"{commit} ({n:,} cells, {int(checked.get(commit, 0))} checked)"
                      for commit, n in commits.items())
    return table, (f"{ok} of {len(table)} recorded re-runs reproduced their metrics and learning curves exactly"
                   f"{'' if ok == len(table) else ' (the others list their first difference)'}. The folder's "
                   f"cells by the commit that computed them: {cover or 'none'}.")


def recorded_tables(folders: dict[str, tuple[Path, str]]) -> tuple[pd.DataFrame, str]:
    """:func:`recorded_table` of several shipped folders (label -> (folder, scenario)) in one
    table, a ``results`` column first, and a sentence: how many recorded re-runs reproduced
    exactly, over which folders, and which folders carry no record. What the book shows
    instead of re-running anything while it builds."""
    parts, missing = [], []
    for label, (folder, scenario) in folders.items():
        table, _ = recorded_table(folder, scenario)
        if table.empty:
            missing.append(f"`{label}`")
        else:
            parts.append(table.assign(results=label))
    if not parts:
        return pd.DataFrame(columns=["results", *RECORDED_COLUMNS]), "No shipped folder carries a recorded verification."
    out = pd.concat(parts, ignore_index=True)[["results", *RECORDED_COLUMNS]]
    ok = int((out["reproduced"] == "yes").sum())
    text = (f"{ok} of {len(out)} recorded re-runs, over {len(parts)} shipped folder{'s' if len(parts) > 1 else ''}, "
            f"reproduced their results exactly")
    text += "." if ok == len(out) else " (the others list their first difference)."
    if missing:
        text += f" No verification is recorded for {', '.join(missing)}."
    return out, text


def kernels_hint(folder: Path, cell: str, now: str, scenario: str | Scenario[Any, Any] = DEFAULT_SCENARIO,
                 cpu: str | None = None) -> str:
    """Why a re-run in ``now`` kernels (:func:`ilets.numerics.record`'s ``effective``) on
    ``cpu`` (a CPU model name; this host's by default) may differ from ``cell`` of ``folder``
    (of ``scenario``), judged from the kernels and the CPU the cell recorded.

    The portable kernels make AMD hosts of two families and AVX2 and AVX-512 hosts agree, but
    not CPUs of two vendors: per-server grid-command cells computed on an Intel Xeon did not
    reproduce on an AMD EPYC (2026-12-06), where cells computed on another AMD family did."""
    sc = get_scenario(scenario)
    made = recorded_mode(sc.cell_system(sc.cell_path(Path(folder), cell)))
    if made == now:
        was, here = vendors(folder, cell, sc, cpu)
        if was and here and was != here:
            return (f"computed and re-run with {now} kernels, but computed on an {was} CPU and re-run on an {here} "
                    f"one: the portable kernels do not make results agree across CPU vendors; re-run on an {was} host")
        return f"computed and re-run with {now} kernels: the difference is not the CPU's kernels"
    if made == NOT_RECORDED:
        return (f"the cell predates the kernels' record; re-run here with {now} kernels. A cell computed with an "
                "AVX-512 host's own kernels reproduces only on such a host, with ILETS_NUMERICS=native")
    return f"computed with {made} kernels, re-run with {now} ones: re-run where and how it was computed"


def numerics_sentence(table: pd.DataFrame) -> str:
    """The recorded checks of :func:`recorded_table` by the kernels the cell was computed with
    and checked with (:mod:`ilets.numerics`): how many of each pair reproduced."""
    if table.empty:
        return ""
    parts = []
    for (made, checked), g in table.groupby(["computed with", "checked with"], sort=False):
        ok = int((g["reproduced"] == "yes").sum())
        made_text = "cells that predate the kernels' record" if made == NOT_RECORDED else \
            f"cells computed with {made} kernels"
        checked_text = "an unrecorded mode" if checked == NOT_RECORDED else f"{checked} mode"
        parts.append(f"{made_text}, re-run in {checked_text}: {ok} of {len(g)} reproduced")
    return "By floating-point kernels: " + "; ".join(parts) + "."


#: The result metrics :func:`kernel_effects` reports, as (metric, label).
KERNEL_METRICS = (("avg_response_s", "response time"), ("energy_kwh", "energy"), ("success_rate", "success rate"))


def native_kernels_folder(folder: Path) -> Path:
    """Where cells of ``folder`` computed with other kernels are kept beside it:
    ``<folder>-native-kernels`` (the paper grid's cells first computed with an AVX-512 host's
    own kernels, then recomputed with the portable ones: ``shipped/paper-native-kernels``,
    which chapter 10's kernel table reads)."""
    return Path(folder).with_name(Path(folder).name + "-native-kernels")


def kernel_effects(folder: Path, other: Path) -> pd.DataFrame:
    """The same cells computed twice with different floating-point kernels: for every cell
    name in both ``folder/cells`` and ``other/cells``, per method and variant (``""`` for the
    main grid), how many reproduce exactly
    (:func:`compare`) and the change of :data:`KERNEL_METRICS` from ``other`` to ``folder``
    (mean, and the largest in absolute value, in %). Empty when they share no cell."""
    rows = []
    both = all(cell_pack.has_cells(Path(f)) for f in (folder, other))
    names = sorted(set(_cells(Path(other))) & set(_cells(Path(folder)))) if both else []
    for name in names:
        a, b = Path(other) / "cells" / name, Path(folder) / "cells" / name
        ma, mb = (json.loads(cell_pack.read_text(p / "metrics.json")) for p in (a, b))
        # a variant's cells apart from its method's main-grid cells: their kernels' effect may differ
        row = {"method": ma["method"], "variant": ma.get("variant") or "", "identical": not compare(a, b)}
        for key, label in KERNEL_METRICS:
            row[label] = 100 * (mb[key] / ma[key] - 1) if ma.get(key) else float("nan")
        rows.append(row)
    cols = ["method", "variant", "cells", "identical"] + [f"{label} {kind}" for _, label in KERNEL_METRICS
                                              for kind in ("mean %", "largest %")]
    if not rows:
        return pd.DataFrame(columns=cols)
    t = pd.DataFrame(rows)
    out = []
    for (method, variant), g in t.groupby(["method", "variant"], sort=False):
        r = {"method": method, "variant": variant, "cells": len(g), "identical": int(g["identical"].sum())}
        for _, label in KERNEL_METRICS:
            r[f"{label} mean %"] = g[label].mean()
            r[f"{label} largest %"] = g[label].iloc[g[label].abs().to_numpy().argmax()]
        out.append(r)
    return pd.DataFrame(out, columns=cols)


def kernel_effects_sentence(table: pd.DataFrame, other: Path) -> str:
    """What :func:`kernel_effects`' table shows, introducing it (``other``: the folder of the
    cells computed with the host's own kernels)."""
    if table.empty:
        return (f"No cell of these results was also computed with other kernels (`{Path(other).name}/` "
                "beside them holds none), so this build cannot show it.")
    return (f"{int(table['cells'].sum()):,} cells of these results were computed twice, first with an AVX-512 "
            f"host's own kernels (kept in `{Path(other).name}/` beside them), then with the portable ones. Per "
            "method, how many came out bit for bit the same, and how far the portable run moved each metric:")
