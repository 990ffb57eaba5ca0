"""Words of the built book's article text per page, against the budgets (issue 61, item 2).

    python tools/book_words.py [--html _build/html] [--toc _toc.yml]

Reads each page of ``_toc.yml`` from the rendered HTML (``make book`` first), counts the words of
its article (the ``<article>`` element: prose, tables, figure captions and output text; not the
navigation, scripts or styles; a word is a run of non-space characters holding a letter or a
digit) and checks: each main chapter at most :data:`CHAPTER_MAX` words, the main pages together
at most :data:`MAIN_MAX`, every page at most :data:`TOTAL_MAX`. The main pages are the landing
page and the chapters of every part of ``_toc.yml`` whose caption does not name appendices or
back matter. Exit status 0 when every budget holds, 1 otherwise, 2 when a page is missing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

CHAPTER_MAX, MAIN_MAX, TOTAL_MAX = 3_000, 20_000, 35_000
#: a part of the table of contents whose pages are not main chapters
APPENDIX = re.compile(r"appendi|back matter", re.I)
WORD = re.compile(r"\S*[^\W_]\S*")


def toc_pages(toc_file: Path) -> list[tuple[str, bool]]:
    """Every page of ``toc_file`` (without extension) in order, and whether it is a main page."""
    import yaml

    toc = yaml.safe_load(Path(toc_file).read_text())
    pages = [(str(toc["root"]), True)]

    def files(node) -> list[str]:
        found = []
        if isinstance(node, dict):
            if "file" in node:
                found.append(str(node["file"]))
            for value in node.values():
                if isinstance(value, (list, dict)):
                    found += files(value)
        elif isinstance(node, list):
            for item in node:
                found += files(item)
        return found

    for part in toc.get("parts", []):
        main = not APPENDIX.search(str(part.get("caption", "")))
        pages += [(f, main) for f in files(part.get("chapters", []))]
    pages += [(f, True) for f in files(toc.get("chapters", []))]
    return [(re.sub(r"\.(md|ipynb|py|rst)$", "", p), main) for p, main in pages]


def article_words(html: str) -> int:
    """Words of a page's article text (the ``<article>``, else ``<main>``, else the body)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    box = soup.find("article") or soup.find("main") or soup.body or soup
    for skip in box.select("script, style, noscript, a.headerlink, .headerlink"):
        skip.decompose()
    return len(WORD.findall(box.get_text(" ")))


def measure(html_dir: Path, toc_file: Path) -> list[dict]:
    """One row per page: ``page``, ``main``, ``words`` (None when its HTML is missing)."""
    rows = []
    for page, main in toc_pages(toc_file):
        f = Path(html_dir) / f"{page}.html"
        rows.append({"page": page, "main": main, "words": article_words(f.read_text()) if f.is_file() else None})
    return rows


def problems(rows: list[dict]) -> list[str]:
    """Every budget the pages break, in words."""
    found = [f"{r['page']}: {r['words']:,} words (a main chapter at most {CHAPTER_MAX:,})"
             for r in rows if r["main"] and r["words"] is not None and r["words"] > CHAPTER_MAX]
    main = sum(r["words"] or 0 for r in rows if r["main"])
    total = sum(r["words"] or 0 for r in rows)
    if main > MAIN_MAX:
        found.append(f"the main pages: {main:,} words (at most {MAIN_MAX:,})")
    if total > TOTAL_MAX:
        found.append(f"every page: {total:,} words (at most {TOTAL_MAX:,})")
    return found


def report(rows: list[dict]) -> str:
    lines = [f"{'page':40} {'kind':9} {'words':>7}"]
    lines += [f"{r['page']:40} {'main' if r['main'] else 'appendix':9} "
              f"{'missing' if r['words'] is None else format(r['words'], ','):>7}" for r in rows]
    main = sum(r["words"] or 0 for r in rows if r["main"])
    lines += [f"{'main pages':50} {main:>7,} (at most {MAIN_MAX:,}; each at most {CHAPTER_MAX:,})",
              f"{'all pages':50} {sum(r['words'] or 0 for r in rows):>7,} (at most {TOTAL_MAX:,})"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/book_words.py", description=__doc__.split("\n\n")[0])
    root = Path(__file__).resolve().parents[1]
    ap.add_argument("--html", type=Path, default=root / "_build" / "html", help="the built book (make book)")
    ap.add_argument("--toc", type=Path, default=root / "_toc.yml", help="the table of contents")
    args = ap.parse_args(argv)
    rows = measure(args.html, args.toc)
    print(report(rows))
    missing = [r["page"] for r in rows if r["words"] is None]
    if missing:
        print(f"missing pages (build the book first: make book): {', '.join(missing)}", file=sys.stderr)
        return 2
    found = problems(rows)
    for p in found:
        print(f"over budget: {p}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
