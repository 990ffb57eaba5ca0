"""Chapter 12's example runs as printed: it is read from the chapter's source and executed.

The chapter shows the example in a markdown cell (the book never trains anything while it
builds, ``tests/test_book_static.py``); this test takes the ``python`` block between the
chapter's ``tested example`` markers and runs it, so the page cannot show code that no
longer works. It clones an expert of the grid-command ladder on a few hundred decisions and
fine-tunes with ``MaskablePPO`` for a few hundred steps: seconds.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

CHAPTER = Path(__file__).resolve().parents[1] / "notebooks" / "12_grid_command.py"
BEGIN, END = "<!-- tested example: begin -->", "<!-- tested example: end -->"


def example_code(text: str) -> str:
    """The ``python`` block between the markers of a jupytext ``py:percent`` markdown cell."""
    lines = [line[2:] if line.startswith("# ") else line.lstrip("#") for line in text.splitlines()]
    begin, end = lines.index(BEGIN), lines.index(END)
    block = lines[begin + 1:end]
    assert block[0] == "```python" and block[-1] == "```", "the example is one fenced python block"
    return "\n".join(block[1:-1]) + "\n"


def test_the_example_is_found_between_its_markers():
    code = example_code(CHAPTER.read_text())
    compile(code, str(CHAPTER), "exec")
    assert "gym.make(ilets.GRID_ENV_ID)" in code and "MaskablePPO" in code and "behaviour_clone" in code
    assert len(code.splitlines()) <= 25  # about twenty lines, as the chapter promises


def test_the_chapter_example_runs_and_prints_one_number():
    code = example_code(CHAPTER.read_text())
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")  # every warning recorded, the package's own filters too
        exec(compile(code, str(CHAPTER), "exec"), {"__name__": "chapter12_example"})
    printed = out.getvalue().strip().splitlines()
    assert len(printed) == 1, printed
    match = re.fullmatch(r"agreement with the expert after fine-tuning: (\d\.\d\d)", printed[0])
    assert match and 0.0 <= float(match.group(1)) <= 1.0, printed
    # the masks are read through the wrappers without Gymnasium 0.29's deprecation warning
    assert not [w for w in caught if "action_masks" in str(w.message)], [str(w.message) for w in caught]
