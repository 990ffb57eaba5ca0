"""The numbers a sentence states, in order: what a test of a generated sentence asserts instead
of the sentence's wording (tests/test_prose_asserts.py holds the budget on wording)."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"[+-]?\d+(?:[.,]\d+)*")


def numbers_in(text: str) -> list[str]:
    """Every number in ``text`` as written (``"+12.3"``, ``"1,500"``, ``"-0.4"``), in order; a sign
    is kept only where it opens the number (``"500-1,500"`` gives ``"500"``, ``"1,500"``)."""
    return [m.group().lstrip("+-") if m.start() and text[m.start() - 1].isalnum() else m.group()
            for m in _NUMBER.finditer(text)]
