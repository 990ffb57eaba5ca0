"""The word budget of the built book (tools/book_words.py), on a small synthetic book."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from text_numbers import numbers_in

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("book_words", ROOT / "tools" / "book_words.py")
W = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(W)

TOC = """format: jb-book
root: book/intro
parts:
  - caption: The study
    chapters:
      - file: notebooks/01_summary
  - caption: Appendices
    chapters:
      - file: book/records
  - caption: Back matter
    chapters:
      - file: book/references
"""


def _page(words: str) -> str:
    return (f"<html><head><style>p {{ x: y }}</style></head><body><nav>Skip to main content</nav>"
            f"<article class='bd-article'><h1>Title<a class='headerlink' href='#'>#</a></h1><p>{words}</p>"
            "<script>var a = 1;</script></article></body></html>")


def _book(tmp_path, sizes):
    (tmp_path / "_toc.yml").write_text(TOC)
    for page, n in sizes.items():
        f = tmp_path / "html" / f"{page}.html"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(_page(" ".join(["word"] * n) + " 1.5 % — [+0.1,"))
    return W.measure(tmp_path / "html", tmp_path / "_toc.yml")


def test_words_are_the_article_text_only():
    # the title, three words and two numbers; not the navigation, the style, the script or the "#" link;
    # a lone dash is not a word
    assert W.article_words(_page("one two three") .replace("three", "three 4 5.0 -")) == 1 + 3 + 2


def test_main_pages_and_appendices_from_the_toc(tmp_path):
    rows = _book(tmp_path, {"book/intro": 10, "notebooks/01_summary": 20, "book/records": 30,
                            "book/references": 5})
    assert [(r["page"], r["main"]) for r in rows] == [("book/intro", True), ("notebooks/01_summary", True),
                                                      ("book/records", False), ("book/references", False)]
    assert [r["words"] for r in rows] == [10 + 3, 20 + 3, 30 + 3, 5 + 3]  # "Title", "1.5", "[+0.1,"; not "%" or "—"
    assert W.problems(rows) == []
    assert W.main(["--html", str(tmp_path / "html"), "--toc", str(tmp_path / "_toc.yml")]) == 0


def test_each_budget_is_checked(tmp_path, monkeypatch, capsys):
    rows = _book(tmp_path, {"book/intro": 3_100, "notebooks/01_summary": 10, "book/records": 10,
                            "book/references": 10})
    (problem,) = W.problems(rows)
    assert problem.startswith("book/intro: ") and numbers_in(problem) == ["3,103", "3,000"]  # words, the budget
    monkeypatch.setattr(W, "MAIN_MAX", 100)
    monkeypatch.setattr(W, "TOTAL_MAX", 200)
    found = W.problems(rows)
    budgets = {p.split(":")[0]: numbers_in(p) for p in found}
    assert budgets["the main pages"] == ["3,116", "100"] and budgets["every page"] == ["3,142", "200"]
    assert W.main(["--html", str(tmp_path / "html"), "--toc", str(tmp_path / "_toc.yml")]) == 1
    (tmp_path / "html" / "book" / "records.html").unlink()
    assert W.main(["--html", str(tmp_path / "html"), "--toc", str(tmp_path / "_toc.yml")]) == 2
    assert "missing pages" in capsys.readouterr().err
