"""Test helper: damage or edit one file of a recorded cell, in either layout (a results
folder's ``cells/``, or a shipped folder's ``cells.parquet``: :mod:`ilets.cell_pack`)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ilets import cell_pack


def rewrite(path: Path, change: Callable[[str], str | None]) -> None:
    """Replace the text of the cell file ``path`` (``<folder>/cells/<entry>/<file>``) by
    ``change(text)``; None removes the file. A packed cell's table is written anew."""
    path = Path(path)
    parts = path.parts
    at = len(parts) - 1 - parts[::-1].index(cell_pack.CELLS)
    folder, entry, file = Path(*parts[:at]), parts[at + 1], "/".join(parts[at + 2:]) or cell_pack.WHOLE
    if (folder / cell_pack.CELLS / entry).exists():
        text = change(path.read_text())
        if text is None:
            path.unlink()
        else:
            path.write_text(text)
        return
    content = cell_pack.contents(folder)
    text = change(content[entry][file].decode())
    if text is None:
        del content[entry][file]
    else:
        content[entry][file] = text.encode()
    cell_pack.write_pack(content, cell_pack.pack_path(folder))
