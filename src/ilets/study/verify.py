"""Re-run shipped cells and check that their results reproduce exactly.

A shipped result is a claim anyone can check: :func:`verify` takes cells of a results folder
(named, or a seeded random sample), re-runs each from its own ``config.yaml`` into a scratch
folder, and compares the outcome with the recorded one:

* ``metrics.json``: every key except those that measure the host rather than the result
  (:data:`HOST_KEYS`: wall and CPU seconds, decision latencies, phase timings);
* ``curve.csv``: the whole learning curve, value for value.

A verification certifies only what it re-ran itself: before anything runs, every recorded
file it will compare is checked (:func:`check_recorded`: a damaged or missing file, or a
``config.yaml`` whose digest is not its cell's, is named), and the re-runs go to a scratch
folder it owns (:func:`prepare_scratch`: never inside the results, an earlier
verification's re-runs cleared, any other non-empty folder refused), so it never compares
two stored files.

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

import pandas as pd

from ilets.numerics import NOT_RECORDED, recorded_mode
from ilets.study.coverage import parse_cell_name

#: metrics that describe the machine's speed, not the result
HOST_KEYS = frozenset({"wall_s", "cpu_s", "decision_p50_ms", "decision_p95_ms", "demo_seconds", "oinpt_seconds",
                       "cpu_demos_s", "cpu_bc_s", "cpu_rollout_s", "cpu_update_s", "oail_expert_cpu_s",
                       "oail_imitation_cpu_s"})


@dataclass(frozen=True)
class Verdict:
    """One re-run cell: whether it reproduced, and where it did not."""

    cell: str
    reproduced: bool
    differences: tuple[str, ...]  #: "key: recorded -> re-run" lines
    wall_s: float
    added: tuple[str, ...] = ()  #: metrics the re-run has and the record predates (not differences)


class VerifyError(ValueError):
    """A verification that cannot start or cannot be trusted; the message names the file or folder."""


def _cells(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "cells").iterdir() if p.is_dir() and not p.name.startswith("."))


def pick(folder: Path, names: list[str] | None = None, sample: int = 0, seed: int = 0,
         methods: list[str] | None = None) -> list[str]:
    """The cells to verify: ``names`` (checked to exist), else ``sample`` random ones (of
    ``methods`` if given, one per method first), drawn with ``seed``."""
    folder = Path(folder)
    every = _cells(folder)
    if names:
        missing = [n for n in names if n not in every]
        if missing:
            raise FileNotFoundError(f"{folder / 'cells'}: no cell(s) {missing}")
        return list(names)
    pool = [c for c in every if methods is None or parse_cell_name(c)["method"] in methods]
    rng = random.Random(seed)
    rng.shuffle(pool)
    return sorted(pool[:sample])


#: The methods a book build re-runs, one cell each: plain PPO and both imitation stages.
BOOK_METHODS = ("drl", "drl+", "ilets")


def book_sample(folder: Path, methods: tuple[str, ...] = BOOK_METHODS) -> list[str]:
    """The cells a book build re-runs live: for each of ``methods``, its main-study cell on
    the smallest fleet with the lowest seed (the cheapest, and the same on every build)."""
    import pandas as pd

    store = Path(folder) / "store" / "metrics.parquet"
    if not store.is_file():
        return []
    m = pd.read_parquet(store, columns=["cell", "method", "variant", "servers", "seed"])
    m = m[(m["variant"].fillna("") == "") & m["method"].isin(methods)]
    m = m.sort_values(["servers", "seed", "cell"]).drop_duplicates("method")
    order = {name: i for i, name in enumerate(methods)}
    return list(m.sort_values("method", key=lambda s: s.map(order))["cell"])


def added_metrics(recorded: Path, rerun: Path) -> list[str]:
    """Metrics the re-run writes that the recorded cell does not have: added to the code after
    the cell was computed, so there is nothing to compare them with (:func:`compare` skips
    them; a metric the record has and the re-run lacks is a difference)."""
    a = json.loads((recorded / "metrics.json").read_text())
    b = json.loads((rerun / "metrics.json").read_text())
    return sorted(set(b) - set(a) - HOST_KEYS)


def compare(recorded: Path, rerun: Path) -> list[str]:
    """The differences between two cell folders' results (empty when they reproduce).

    A metric only the re-run has is not a difference (:func:`added_metrics`)."""
    out = []
    a = json.loads((recorded / "metrics.json").read_text())
    b = json.loads((rerun / "metrics.json").read_text())
    for key in sorted(set(a)):
        if key in HOST_KEYS:
            continue
        va, vb = a.get(key), b.get(key)
        if va != vb and not (isinstance(va, float) and isinstance(vb, float) and va != va and vb != vb):
            out.append(f"metrics.json {key}: {va!r} -> {vb!r}")
    ca, cb = pd.read_csv(recorded / "curve.csv"), pd.read_csv(rerun / "curve.csv")
    if ca.shape != cb.shape or list(ca.columns) != list(cb.columns):
        out.append(f"curve.csv: shape {ca.shape} -> {cb.shape}")
    else:
        diff = (ca != cb) & ~(ca.isna() & cb.isna())
        if diff.to_numpy().any():
            row, col = next(zip(*diff.to_numpy().nonzero()))
            out.append(f"curve.csv: {int(diff.to_numpy().sum())} values differ, first at row {row} "
                       f"{ca.columns[col]}: {ca.iat[row, col]!r} -> {cb.iat[row, col]!r}")
    return out


def recorded_config(cell: Path):
    """The :class:`ilets.config.RunConfig` a recorded cell folder ran with, after checking
    every file :func:`compare` reads (:func:`ilets.study.run.cell_problem`: present, complete,
    the config's digest the cell's). Raises :class:`VerifyError` naming the file."""
    from ilets.config import ConfigError, RunConfig, from_dict, read_yaml
    from ilets.study.run import cell_problem

    cell = Path(cell)
    problem = cell_problem(cell)
    if problem is not None:
        raise VerifyError(problem)
    path = cell / "config.yaml"
    try:
        return from_dict(RunConfig, read_yaml(path), str(path)).validate(str(path))
    except ConfigError as err:  # e.g. a key this version no longer has
        raise VerifyError(str(err)) from None


def check_recorded(folder: Path, cells: list[str]) -> list:
    """:func:`recorded_config` of every cell of ``cells`` in ``folder``, in order; the first
    damaged file raises :class:`VerifyError` before any cell is re-run."""
    configs, problems = [], []
    for name in cells:
        try:
            configs.append(recorded_config(Path(folder) / "cells" / name))
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


def verify(folder: Path, cells: list[str], scratch: Path, progress: bool = False) -> list[Verdict]:
    """Re-run ``cells`` of ``folder`` into ``scratch`` and compare (see the module docstring).

    Checks every recorded cell first (:func:`check_recorded`) and makes ``scratch`` a folder
    of its own (:func:`prepare_scratch`); raises :class:`VerifyError` before any re-run when
    either fails, and if a cell was not computed by this call."""
    from ilets.study.run import RAN, run_cell_status

    folder, scratch = Path(folder), Path(scratch)
    configs = check_recorded(folder, cells)
    prepare_scratch(folder, scratch)
    verdicts = []
    for name, cfg in zip(cells, configs):
        recorded = folder / "cells" / name
        rerun, status = run_cell_status(cfg, scratch, command=f"ilets verify {name}", progress=progress,
                                        save_model=False)
        if status != RAN:  # cannot happen in a folder of our own; never certify a stored file
            raise VerifyError(f"{rerun}: found there ({status}), not re-run by this verification")
        diffs = compare(recorded, rerun)
        wall = json.loads((rerun / "metrics.json").read_text()).get("wall_s", float("nan"))
        verdicts.append(Verdict(name, not diffs, tuple(diffs), wall, tuple(added_metrics(recorded, rerun))))
    return verdicts


#: The file a shipped folder keeps its recorded verification in.
VERIFY_REPORT = "VERIFY.json"


def _check_record(v: Verdict, when: str, machine: str, code: dict, numerics: str | None = None) -> dict:
    return {"cell": v.cell, "reproduced": v.reproduced, "differences": list(v.differences), "wall_s": v.wall_s,
            "checked_utc": when, "machine": machine, "code": code, "numerics": numerics}


def write_report(path: Path, folder: Path, verdicts: list[Verdict]) -> None:
    """Record ``verdicts`` as JSON: where and when each cell was checked.

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
    new = {v.cell: _check_record(v, when, machine, code, numerics) for v in verdicts}
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


def verdict_table(verdicts: list[Verdict]) -> pd.DataFrame:
    """One row per re-run cell: reproduced or not, the first difference, the re-run's wall time."""
    return pd.DataFrame([{"cell": v.cell, "reproduced": "yes" if v.reproduced else "no",
                          "first difference": v.differences[0] if v.differences else "",
                          "re-run wall s": round(v.wall_s, 1)} for v in verdicts],
                        columns=["cell", "reproduced", "first difference", "re-run wall s"])


def _cell_system(folder: Path, cell: str) -> dict:
    try:
        return json.loads((Path(folder) / "cells" / cell / "system.json").read_text())
    except (OSError, ValueError):
        return {}


def _cell_commit(folder: Path, cell: str) -> str:
    return str(_cell_system(folder, cell).get("commit", "unknown"))[:12]


def _cell_numerics(folder: Path, cell: str) -> str:
    """The floating-point kernels a cell recorded (:func:`ilets.numerics.recorded_mode`)."""
    return recorded_mode(_cell_system(folder, cell))


def recorded_table(folder: Path) -> tuple[pd.DataFrame, str]:
    """The recorded verification of a shipped folder (:data:`VERIFY_REPORT`) as a table, and a
    sentence saying when and where it was made, and which commits of the folder's cells it
    covers (empty table and a sentence when there is none)."""
    folder = Path(folder)
    path = folder / VERIFY_REPORT
    cols = ["cell", "computed at", "computed with", "checked at", "checked on", "checked with", "reproduced",
            "first difference", "re-run wall s"]
    if not path.is_file():
        return pd.DataFrame(columns=cols), f"No verification is recorded with these results ({path.name} is absent)."
    checks = _recorded_checks(path)
    table = pd.DataFrame([{"cell": c["cell"], "computed at": _cell_commit(folder, c["cell"]),
                           "computed with": _cell_numerics(folder, c["cell"]),
                           "checked at": str((c.get("code") or {}).get("commit"))[:12],
                           "checked on": f"{c.get('checked_utc')} UTC, {c.get('machine')}",
                           "checked with": c.get("numerics") or NOT_RECORDED,
                           "reproduced": "yes" if c["reproduced"] else "no",
                           "first difference": c["differences"][0] if c["differences"] else "",
                           "re-run wall s": round(float(c["wall_s"]), 1)} for c in checks], columns=cols)
    ok = int((table["reproduced"] == "yes").sum())
    commits = pd.Series([_cell_commit(folder, c) for c in _cells(folder)] if (folder / "cells").is_dir() else [],
                        dtype=object).value_counts()
    checked = table["computed at"].value_counts()
    cover = ", ".join(f"{commit} ({n:,} cells, {int(checked.get(commit, 0))} checked)"
                      for commit, n in commits.items())
    return table, (f"{ok} of {len(table)} recorded re-runs reproduced their metrics and learning curves exactly"
                   f"{'' if ok == len(table) else ' (the others list their first difference)'}. The folder's "
                   f"cells by the commit that computed them: {cover or 'none'}.")


def kernels_hint(folder: Path, cell: str, now: str) -> str:
    """Why a re-run in ``now`` kernels (:func:`ilets.numerics.record`'s ``effective``) may
    differ from ``cell`` of ``folder``, judged from the kernels the cell recorded."""
    made = _cell_numerics(folder, cell)
    if made == now:
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
    own kernels, then recomputed with the portable ones)."""
    return Path(folder).with_name(Path(folder).name + "-native-kernels")


def kernel_effects(folder: Path, other: Path) -> pd.DataFrame:
    """The same cells computed twice with different floating-point kernels: for every cell
    name in both ``folder/cells`` and ``other/cells``, per method and variant (``""`` for the
    main grid), how many reproduce exactly
    (:func:`compare`) and the change of :data:`KERNEL_METRICS` from ``other`` to ``folder``
    (mean, and the largest in absolute value, in %). Empty when they share no cell."""
    rows = []
    both = all((Path(f) / "cells").is_dir() for f in (folder, other))
    names = sorted(set(_cells(Path(other))) & set(_cells(Path(folder)))) if both else []
    for name in names:
        a, b = Path(other) / "cells" / name, Path(folder) / "cells" / name
        ma, mb = (json.loads((p / "metrics.json").read_text()) for p in (a, b))
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


def verify_live(folder: Path | None, cells: list[str] | tuple[str, ...]) -> list[Verdict]:
    """:func:`verify` into a fresh temporary folder, removed afterwards; ``[]`` when there is
    nothing to re-run (``folder`` None or no cells). What a book build re-runs live."""
    import shutil
    import tempfile

    if folder is None or not cells:
        return []
    scratch = Path(tempfile.mkdtemp(prefix="ilets-book-verify-"))
    try:
        return verify(Path(folder), list(cells), scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
