"""A shipped folder's cells as one table (``cells.parquet``), and one way to read a results
folder's cells in either layout.

A grid writes each cell as an entry of ``OUT/cells/``: a folder of files for the paper's study
(:mod:`ilets.study.run`), one JSON file for the grid-command scenario. Thousands of small files
are a poor thing to commit, so a shipped folder keeps its cells as one table instead
(:func:`pack_folder`, called by ``ilets ship``), ``<folder>/cells.parquet``:

* one row per entry of ``cells/``, sorted by name; column ``cell``: the entry's name as it was
  on disk (a folder's name, or a file's name with its suffix);
* one binary column per file path inside an entry (``metrics.json``, ``policy/policy.pt``),
  its bytes exactly; null where an entry has no such file; an entry that is itself one file
  has its bytes in the column ``"."`` (:data:`WHOLE`: the entry itself);
* zstd-compressed (:data:`ZSTD_LEVEL`), one row group, no statistics, no dictionary: the same
  cells give the same bytes every time (with the same pyarrow), so a ship repeated changes no
  committed byte. File modes and dates are not kept; every byte of every file is (a packed
  folder read back, :func:`materialise`, is the folder as it was, byte for byte).

A folder's cells are the entries of its ``cells/`` folder and those of its ``cells.parquet``
that ``cells/`` lacks: a grid run on a copy of a shipped folder (to grow it) writes the cells it
computes as plain files beside the table, and reads the packed ones where they are. The path
``<folder>/cells/<entry>[/<file>]`` addresses a cell and its files in either layout:
:func:`exists`, :func:`is_file`, :func:`is_dir`, :func:`read_bytes`, :func:`read_text` and
:func:`files` take it and read the folder's files or the table, and :func:`entries` and
:func:`cell_paths` list the cells. Code that needs a cell on disk (loading its policy's weights, a warm start) asks
:func:`on_disk`: the folder itself, or for a packed cell a byte-for-byte copy in a temporary
folder of this process (removed when it exits).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

#: The folder of a results folder that holds its cells, one entry each (a running grid's layout).
CELLS = "cells"
#: The table a shipped folder holds its cells in instead.
PACK = "cells.parquet"
#: The table's column of entry names.
NAME = "cell"
#: The column of an entry that is itself one file (a grid-command cell's JSON record).
WHOLE = "."
#: zstd's level: high. The small text files of a cell (JSON, CSV, YAML) shrink to a fraction, which
#: keeps ``shipped/`` small: its cells, 62 MB of files, pack into 27.3 MB (22, the highest level,
#: gives 27.2 MB in twice the time; 9 gives 28.9 MB).
ZSTD_LEVEL = 19
#: The key of the table's schema metadata that marks it as a cell table, and its format.
MARK, FORMAT = b"ilets.cell_pack", 1


class PackError(ValueError):
    """A cell table that cannot be read as one (the message names the file and what was expected)."""


# --- reading a table ------------------------------------------------------------------------

@dataclass
class _Table:
    """One ``cells.parquet``, opened: its entry names and, read when first asked, its columns."""

    path: Path
    names: list[str]
    files: list[str]  #: the file columns (every column but :data:`NAME`)
    row: dict[str, int]  #: entry name -> row
    columns: dict[str, list[bytes | None]] = field(default_factory=dict)

    def column(self, file: str) -> list[bytes | None]:
        """The bytes of ``file`` of every entry, in row order (None where an entry has none)."""
        if file not in self.columns:
            import pyarrow.parquet as pq

            self.columns[file] = pq.read_table(self.path, columns=[file]).column(0).to_pylist()
        return self.columns[file]

    def get(self, entry: str, file: str) -> bytes | None:
        """The bytes of ``file`` of ``entry`` (None when the entry or the file is absent)."""
        i = self.row.get(entry)
        return None if i is None or file not in self.files else self.column(file)[i]

    def entry_files(self, entry: str) -> list[str]:
        """The file paths of ``entry`` (``[WHOLE]`` for an entry that is one file), sorted."""
        return [f for f in self.files if self.get(entry, f) is not None]


#: Opened tables by (path, modification time, size): a changed table is read again.
_OPENED: dict[tuple[str, int, int], _Table] = {}
_KEEP_OPEN = 8


def _open(path: Path) -> _Table:
    """The table at ``path``, read once per version of the file (:class:`PackError` naming it
    when it is not a cell table)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    stat = path.stat()
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if key in _OPENED:
        return _OPENED[key]
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as err:
        raise PackError(f"{path}: not a readable parquet file ({err}); expected a cell table written by "
                        "`ilets ship`") from None
    meta = json.loads((schema.metadata or {}).get(MARK, b"{}"))
    if meta.get("format") != FORMAT or NAME not in schema.names or schema.field(NAME).type != pa.string():
        raise PackError(f"{path}: not a cell table (schema metadata {MARK.decode()!r} format {FORMAT} and a string "
                        f"column {NAME!r} expected)")
    bad = [f.name for f in schema if f.name != NAME and f.type != pa.binary()]
    if bad:
        raise PackError(f"{path}: column(s) {bad}: expected binary (a file's bytes)")
    names = pq.read_table(path, columns=[NAME]).column(0).to_pylist()
    if names != sorted(set(names)) or any(not n for n in names):
        raise PackError(f"{path}: column {NAME!r}: expected unique non-empty entry names in sorted order")
    table = _Table(path, names, [n for n in schema.names if n != NAME], {n: i for i, n in enumerate(names)})
    if len(_OPENED) >= _KEEP_OPEN:
        _OPENED.pop(next(iter(_OPENED)))
    _OPENED[key] = table
    return table


def pack_path(folder: Path) -> Path:
    """Where ``folder`` keeps its packed cells: ``<folder>/cells.parquet``."""
    return Path(folder) / PACK


def is_packed(folder: Path) -> bool:
    """Whether ``folder`` keeps cells in a table (``cells.parquet``)."""
    return pack_path(folder).is_file()


def has_cells(folder: Path) -> bool:
    """Whether ``folder`` holds cells in either layout (a ``cells/`` folder or ``cells.parquet``)."""
    return (Path(folder) / CELLS).is_dir() or is_packed(folder)


def entries(folder: Path) -> list[str]:
    """The names of ``folder``'s cell entries, sorted: those of ``cells/`` (hidden ones, a
    running grid's temporaries, left out) and those of ``cells.parquet``; empty when it holds no
    cells."""
    root = Path(folder) / CELLS
    found = {p.name for p in root.iterdir() if not p.name.startswith(".")} if root.is_dir() else set()
    if is_packed(folder):
        found |= set(_open(pack_path(folder)).names)
    return sorted(found)


def cell_paths(folder: Path, pattern: str = "*") -> list[Path]:
    """The paths ``<folder>/cells/<entry>`` of ``folder``'s entries whose names match ``pattern``
    (as :meth:`pathlib.Path.glob` matches one name, case-sensitive), sorted, in either layout:
    what ``sorted((folder / "cells").glob(pattern))`` was for a plain folder, hidden entries left out."""
    import fnmatch

    return [Path(folder) / CELLS / name for name in entries(folder) if fnmatch.fnmatchcase(name, pattern)]


def _locate(path: Path) -> tuple[_Table, str, str] | None:
    """``(table, entry, file)`` for ``path`` of the form ``<folder>/cells/<entry>[/<file>]``
    whose entry is not in ``<folder>/cells/`` on disk and ``<folder>`` has a table; ``file`` is
    :data:`WHOLE` for the entry itself. None for any other path (read from disk as it is): an
    entry on disk is read whole from disk, never mixed with the table's."""
    parts = Path(path).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == CELLS:
            # plain os.path: this runs for every file a reader asks for
            folder = os.path.join(*parts[:i]) if i else "."
            pack = os.path.join(folder, PACK)
            if os.path.exists(os.path.join(folder, CELLS, parts[i + 1])) or not os.path.isfile(pack):
                return None
            return _open(Path(pack)), parts[i + 1], "/".join(parts[i + 2:]) or WHOLE
    return None


def _packed_kind(table: _Table, entry: str, file: str) -> str | None:
    """``"file"``, ``"dir"`` or None (absent) for ``file`` of ``entry`` in ``table``."""
    if entry not in table.row:
        return None
    if file == WHOLE:
        return "file" if table.get(entry, WHOLE) is not None else "dir"
    if table.get(entry, file) is not None:
        return "file"
    inside = file.rstrip("/") + "/"
    return "dir" if any(f.startswith(inside) for f in table.entry_files(entry)) else None


def _kind(path: Path) -> str | None:
    path = Path(path)
    if path.exists():
        return "dir" if path.is_dir() else "file"
    found = _locate(path)
    return None if found is None else _packed_kind(*found)


def exists(path: Path) -> bool:
    """Whether the cell entry or file ``path`` exists, on disk or in its folder's table."""
    return _kind(path) is not None


def is_file(path: Path) -> bool:
    """Whether ``path`` is a file of a cell (or a cell that is one file), in either layout."""
    return _kind(path) == "file"


def is_dir(path: Path) -> bool:
    """Whether ``path`` is a cell folder or a folder inside one, in either layout."""
    return _kind(path) == "dir"


def read_bytes(path: Path) -> bytes:
    """The bytes of the cell file ``path`` (``<folder>/cells/<entry>[/<file>]``), from disk or
    from its folder's table; ``FileNotFoundError`` naming it when it is neither."""
    path = Path(path)
    if path.exists():
        return path.read_bytes()
    found = _locate(path)
    data = None if found is None else found[0].get(found[1], found[2])
    if data is None:
        where = f" (not in {found[0].path})" if found is not None else ""
        raise FileNotFoundError(f"{path}: no such file{where}")
    return data


def read_text(path: Path) -> str:
    """:func:`read_bytes` decoded as UTF-8."""
    return read_bytes(path).decode("utf-8")


def files(path: Path) -> list[str]:
    """The files of the cell entry ``path``, as paths relative to it (``[WHOLE]`` for an entry
    that is one file), sorted; ``FileNotFoundError`` when there is no such entry."""
    path = Path(path)
    if path.is_dir():
        return sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())
    if path.is_file():
        return [WHOLE]
    found = _locate(path)
    if found is None or found[1] not in found[0].row or found[2] != WHOLE:
        raise FileNotFoundError(f"{path}: no such cell")
    return found[0].entry_files(found[1])


def materialise(path: Path, dest: Path) -> Path:
    """Write the cell entry ``path`` (either layout) to ``dest`` byte for byte: a folder of its
    files, or the one file; returns ``dest``. ``dest`` must not exist."""
    path, dest = Path(path), Path(dest)
    if dest.exists():
        raise FileExistsError(f"{dest}: exists; expected a new path to write the cell {path.name} to")
    names = files(path)
    if names == [WHOLE]:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(read_bytes(path))
        return dest
    dest.mkdir(parents=True)
    for name in names:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(read_bytes(path / name))
    return dest


#: This process's folder of cells materialised by :func:`on_disk` (made when first needed).
_SCRATCH: list[Path] = []


def _scratch() -> Path:
    if not _SCRATCH:
        root = Path(tempfile.mkdtemp(prefix="ilets-cells-"))
        owner = os.getpid()
        # a forked worker shares the folder and leaves it to the process that made it
        atexit.register(lambda: shutil.rmtree(root, ignore_errors=True) if os.getpid() == owner else None)
        _SCRATCH.append(root)
    return _SCRATCH[0]


def on_disk(path: Path) -> Path:
    """``path`` (a cell entry or a file or folder inside one) as a path on disk: itself when it
    is there, else, for a packed cell, the same path inside a byte-for-byte copy of the cell
    (:func:`materialise`) in a temporary folder of this process. ``FileNotFoundError`` when the
    cell is in neither."""
    path = Path(path)
    if path.exists():
        return path
    found = _locate(path)
    if found is None or found[1] not in found[0].row:
        raise FileNotFoundError(f"{path}: no such cell or file")
    table, entry, file = found
    key = hashlib.sha256(str(table.path.resolve()).encode()).hexdigest()[:16]
    stat = table.path.stat()
    home = _scratch() / f"{key}-{stat.st_mtime_ns}-{stat.st_size}" / CELLS
    cell = home / entry
    if not cell.exists():
        tmp = home / f".{entry}.tmp-{os.getpid()}"
        _remove(tmp)
        materialise(Path(table.path.parent) / CELLS / entry, tmp)
        try:
            tmp.replace(cell)
        except OSError:  # made meanwhile by another process sharing the folder
            _remove(tmp)
    return cell if file == WHOLE else cell / file


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


# --- writing a table ------------------------------------------------------------------------

def contents(folder: Path, names: list[str] | None = None) -> dict[str, dict[str, bytes]]:
    """Every file of the cells ``names`` of ``folder`` (default: all, :func:`entries`), in either
    layout: entry -> file path -> bytes (:data:`WHOLE` for an entry that is one file); what
    :func:`write_pack` writes."""
    cells = Path(folder) / CELLS
    return {name: {f: read_bytes(cells / name if f == WHOLE else cells / name / f) for f in files(cells / name)}
            for name in (entries(folder) if names is None else sorted(names))}


def write_pack(content: dict[str, dict[str, bytes]], dest: Path) -> Path:
    """Write cells given as entry -> file path -> bytes (:data:`WHOLE` for an entry that is one
    file) as the cell table ``dest`` (see the module docstring); returns ``dest``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ilets.files import atomic_write

    names = sorted(content)
    columns = sorted({f for found in content.values() for f in found})
    if NAME in columns:
        raise PackError(f"{dest}: a cell holds a file named {NAME!r}, the table's column of names; rename it")
    schema = pa.schema([(NAME, pa.string()), *((f, pa.binary()) for f in columns)],
                       metadata={MARK: json.dumps({"format": FORMAT}).encode()})
    table = pa.table([pa.array(names, pa.string()),
                      *(pa.array([content[n].get(f) for n in names], pa.binary()) for f in columns)], schema=schema)

    def write(tmp: Path) -> None:
        pq.write_table(table, tmp, compression="zstd", compression_level=ZSTD_LEVEL, use_dictionary=False,
                       write_statistics=False, row_group_size=max(1, len(names)))

    atomic_write(Path(dest), write)
    return Path(dest)


def differences(content: dict[str, dict[str, bytes]], pack: Path) -> list[str]:
    """Where the table ``pack`` does not hold ``content`` (entry -> file path -> bytes) exactly:
    ``<entry>/<file>`` of every file missing, added or with other bytes (``entries [...]`` for
    entries one side lacks); empty when it is the same, byte for byte."""
    table = _open(Path(pack))
    wrong = [] if table.names == sorted(content) else [f"entries {sorted(set(content) ^ set(table.names))}"]
    for name in sorted(set(content) & set(table.names)):
        have = table.entry_files(name)
        wrong += [f"{name}/{f}" for f in sorted(set(content[name]) ^ set(have))]
        wrong += [f"{name}/{f}" for f in sorted(content[name]) if f in have and table.get(name, f) != content[name][f]]
    return wrong


def pack_folder(folder: Path, names: list[str] | None = None) -> Path:
    """Put the cells ``names`` of ``folder`` (default: every entry, :func:`entries`) into its
    table ``folder/cells.parquet``, and remove ``folder/cells/``: the table is written, read back
    and compared file by file with what it was written from (:class:`PackError` naming the first
    difference, nothing removed), before the folder goes. Returns the table's path. What the
    ship of a results folder and the conversion of a shipped one both call."""
    folder = Path(folder)
    if not has_cells(folder):
        raise FileNotFoundError(f"{folder}: no {CELLS}/ and no {PACK}; expected a results folder's cells to pack")
    content = contents(folder, names)
    fd, name = tempfile.mkstemp(dir=folder, prefix=f".{PACK}.", suffix=".new")
    os.close(fd)
    new = write_pack(content, Path(name))
    try:
        wrong = differences(content, new)
        if wrong:
            raise PackError(f"{pack_path(folder)}: does not read back as the cells it was written from ({len(wrong)} "
                            f"difference(s), first {wrong[0]}); nothing changed")
        new.replace(pack_path(folder))
    finally:
        new.unlink(missing_ok=True)
    shutil.rmtree(folder / CELLS, ignore_errors=True)
    return pack_path(folder)
