"""Files written so that a reader never sees half of one: one temporary file and one rename;
and the content digest of arrays that keys the caches written so."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ilets.config.strict import ConfigError

#: The provenance file of a shipped results folder.
PROVENANCE = "PROVENANCE.json"


class ShipRefused(ConfigError):
    """A shipped folder that cannot go where it was asked without deleting something no ship
    made, or the results themselves (the message names the folder and what was expected)."""


class HeldByAnother(RuntimeError):
    """A shared input that another process is making now (a cached clone two cells of a grid
    share): the cell that needs it is busy too, and is left to a later pass
    (:func:`ilets.study.run.run_claimed`) instead of making the same input a second time."""

    def __init__(self, lock: Path) -> None:
        super().__init__(f"{lock}: held by another process")
        self.lock = Path(lock)


def content_digest(arrays: Mapping[str, np.ndarray | None]) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes (a cache file's content digest)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` on a fresh temporary file beside ``path``, then rename it to ``path``.

    The temporary name is unique (``mkstemp``), so two writers of the same file, two grids
    on one folder or two threads building one store, never rename each other's half-written
    file; the one that renames last wins with a complete file. The parent folder is created
    if missing, and the file is made readable by others (``mkstemp`` makes it private).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    tmp.chmod(0o644)
    try:
        write(tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def check_ship_target(dest: Path, sources: tuple[Path, ...] = ()) -> Path:
    """``dest`` (resolved) where a shipped folder may be written: absent, empty, or a folder an
    earlier ship made (it holds its :data:`PROVENANCE`), which is replaced; and neither holding
    nor inside any of ``sources`` (the results being shipped). :class:`ShipRefused` naming the
    folder otherwise. Why: a ship replaces its target whole, so a user's folder named by
    mistake (``--to shipped`` for ``shipped/quick``, ``--to .``) would be deleted with every
    file in it, and a target holding the results would delete the grid being shipped."""
    there = Path(dest).resolve()
    if there.parent == there:
        raise ShipRefused(f"{dest}: the file system's root; expected a folder of its own, such as shipped/<name>")
    for src in sources:
        here = Path(src).resolve()
        if there == here or there in here.parents:
            raise ShipRefused(f"{dest}: holds the results folder {src} (replacing it would delete them); expected "
                              "a folder of its own, such as shipped/<name>")
        if here in there.parents:
            raise ShipRefused(f"{dest}: lies inside the results folder {src}; expected a folder outside it")
    if there.exists() and not there.is_dir():
        raise ShipRefused(f"{dest}: is a file; expected a new folder, or one an earlier ship made")
    if there.is_dir() and not (there / PROVENANCE).is_file() and any(there.iterdir()):
        raise ShipRefused(f"{dest}: holds files no ship made (no {PROVENANCE}); a ship replaces only a folder an "
                          f"earlier ship made: expected a new or empty folder, such as {Path(dest) / 'NAME'}")
    return there


def staging_folder(dest: Path) -> Path:
    """A new hidden folder beside ``dest`` (resolved) to stage a shipped copy in: a name of its
    own (two ships at once, or a user's ``<dest>.tmp``, are never overwritten)."""
    there = Path(dest).resolve()
    there.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=there.parent, prefix=f".{there.name}.", suffix=".tmp"))


def publish_folder(tmp: Path, dest: Path, info: dict[str, Any], note: str, indent: int = 2) -> dict[str, Any]:
    """Finish a staged copy ``tmp`` of shipped results and put it in place of ``dest``.

    ``info`` (the folder's provenance) gains ``note`` and ``size_mb`` (the staged files' size)
    and is written to ``tmp`` as :data:`PROVENANCE`; then ``dest`` is replaced by ``tmp``: only
    when it is absent, empty or an earlier ship's (:func:`check_ship_target`, checked again
    here since the copy took a while; ``tmp`` is removed on refusal). The old folder is renamed
    aside first and removed last, so a kill in between leaves it hidden beside ``dest``, never
    lost. Returns ``info``.
    """
    import json
    import shutil

    tmp, dest = Path(tmp), Path(dest)
    try:
        there = check_ship_target(dest)
    except ShipRefused:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    info["note"] = note
    info["size_mb"] = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file()) / 2**20
    (tmp / PROVENANCE).write_text(json.dumps(info, indent=indent))
    old = None
    if there.exists():  # onto an empty folder of its own name (a rename may replace an empty folder)
        old = Path(tempfile.mkdtemp(dir=there.parent, prefix=f".{there.name}.", suffix=".old"))
        there.replace(old)
    tmp.replace(there)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return info


class MarkerError(ValueError):
    """A file lacks the markers of the block a generator writes into it."""


def replace_marked(doc: str, markers: tuple[str, str], text: str, where: object) -> str:
    """``doc`` with what sits between ``markers`` (one start, then one end) replaced by ``text``;
    :class:`MarkerError` naming ``where`` and the markers otherwise. Every generated README
    paragraph and table is written through this."""
    start, end = markers
    if doc.count(start) != 1 or doc.count(end) != 1 or doc.index(start) > doc.index(end):
        raise MarkerError(f"{where}: expected one {start} followed by one {end}")
    head, rest = doc.split(start, 1)
    return f"{head}{start}\n{text}{end}{rest.split(end, 1)[1]}"


def marked_block_main(argv: list[str] | None, prog: str, description: str | None, source: tuple[str, Path | None, str],
                      block: Callable[[Path | None], str], markers: tuple[str, str], what: str) -> int:
    """A README generator's command line: ``--<flag>`` (``source``: the flag, its default and
    its help; where the generator reads its results) and ``--write``; the ``block`` made from
    that folder printed, or written between ``markers`` (:func:`print_or_write_marked`)."""
    import argparse

    flag, default, help_text = source
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument(f"--{flag}", type=Path, default=default, help=help_text)
    ap.add_argument("--write", type=Path, default=None, help="the file whose marked block to replace")
    args = ap.parse_args(argv)
    return print_or_write_marked(block(getattr(args, flag)), args.write, markers, what)


def print_or_write_marked(text: str, target: Path | None, markers: tuple[str, str], what: str) -> int:
    """A README generator's output: ``text`` printed, or with ``target`` written between its
    ``markers`` (atomically); 0, or 2 with a one-line error when the markers are missing."""
    import sys

    if target is None:
        print(text, end="")
        return 0
    try:
        doc = replace_marked(target.read_text() if target.is_file() else "", markers, text, target)
    except MarkerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    atomic_write(target, lambda tmp: tmp.write_text(doc))
    print(f"wrote {what} into {target}")
    return 0
