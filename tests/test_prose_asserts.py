"""Tests assert numbers and fields, not prose: a budget on assert lines pinned to sentences.

A test that compares against a whole sentence breaks when the wording changes and lets a
changed number inside the sentence slip by; it should assert the number or field the sentence
is built from (DESIGN.md; issue 63 step 6). This test counts what is left and holds the count
at most ``BUDGET``.

What counts, one per statement, in every ``tests/*.py``:
- an ``assert`` statement whose tested expression (not its failure message, which is only
  printed) holds a string literal of ``MIN_WORDS`` or more words;
- a ``pytest.raises(..., match=...)`` or ``pytest.warns(..., match=...)`` call whose ``match``
  is such a literal (it pins an error message's wording the same way).

A word is a whitespace-separated token with a letter or digit in it. An f-string's literal
parts are joined; an interpolated value is no word (``f"# {a}\\n{b} {c}"`` is a template, not
prose). Literals bound to a name before the assert are not followed: the count is a budget on
the plain cases, not a proof.
A stored snapshot file compared whole is one assert, as it should be (one per chapter).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MIN_WORDS = 6
BUDGET = 40  # issue 63: at most 40 (the config tests hold most of what is left)
_WORD = re.compile(r"\w")


def _words(text: str) -> int:
    return sum(1 for token in text.split() if _WORD.search(token))


def _literal_texts(node: ast.AST) -> Iterator[str]:
    """Every string literal under ``node``; an f-string as its literal parts joined."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.JoinedStr):
            yield "".join(part.value if isinstance(part, ast.Constant) else " "
                          for part in sub.values if isinstance(part, ast.Constant | ast.FormattedValue))
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value


def _is_prose(node: ast.AST) -> bool:
    return any(_words(text) >= MIN_WORDS for text in _literal_texts(node))


def _is_match_call(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("raises", "warns")


def prose_asserts(source: str) -> list[int]:
    """The line of each assert (or ``match=``) in ``source`` pinned to a literal of six words or more."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert) and _is_prose(node.test):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and _is_match_call(node):
            lines.extend(node.lineno for kw in node.keywords
                         if kw.arg == "match" and _is_prose(kw.value))
    return sorted(lines)


def test_prose_asserts_count_each_shape():
    source = (
        'def t(text):\n'
        '    assert "a b c d e f" in text\n'
        '    assert "12.3 %" in text, "a failure message of many words is not counted"\n'
        '    assert f"{n} servers ran for {d} days in all" in text\n'
        '    assert f"{n} servers {a} {b} {c} ran {d} days" in text\n'
        '    with pytest.raises(ValueError, match="must be a positive number of seeds"):\n'
        '        pass\n'
    )
    assert prose_asserts(source) == [2, 4, 6]


def test_asserts_pinned_to_prose_stay_within_budget():
    found = [f"{path.name}:{line}" for path in sorted(TESTS.glob("*.py"))
             for line in prose_asserts(path.read_text())]
    assert len(found) <= BUDGET, (
        f"{len(found)} asserts compare against a literal of {MIN_WORDS}+ words (budget {BUDGET}); "
        "assert the numbers and fields the sentence is built from instead:\n" + "\n".join(found))
