"""Files written so that a reader never sees half of one: one temporary file and one rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable


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
