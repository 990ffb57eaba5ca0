"""No file of the package, its tests, its chapters or its benchmarks cites a planning document
that is not in this repository: a pointer a reader cannot follow. Cite a book chapter
(``book/``, ``notebooks/``) or the paper instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Folders whose text files are searched.
FOLDERS = ("src/ilets", "tests", "notebooks", "benchmarks")
#: Names of documents that are not in this repository (case-insensitive).
STALE = re.compile(r"STACK-NOTES|STUDY-BRIEF|GRID-COMMAND-ANCHORS|the brief", re.IGNORECASE)
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".txt", ".toml", ".cfg", ".ini", ".sh"}
THIS = Path(__file__).resolve()


def stale_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of ``text`` that names a missing document."""
    return [(i, line.strip()) for i, line in enumerate(text.splitlines(), 1) if STALE.search(line)]


def files() -> list[Path]:
    found = []
    for folder in FOLDERS:
        for p in sorted((ROOT / folder).rglob("*")):
            if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts and p.resolve() != THIS:
                found.append(p)
    return found


def test_the_pattern_finds_every_name_in_any_case():
    text = "a\nsee STACK-NOTES\nper Study-Brief\ngrid-command-anchors\nas The Brief says\nbriefly\n"
    assert [i for i, _ in stale_lines(text)] == [2, 3, 4, 5]


def test_the_search_covers_the_package_tests_chapters_and_benchmarks():
    found = {p.relative_to(ROOT).parts[0] if p.relative_to(ROOT).parts[0] != "src" else "src/ilets"
             for p in files()}
    assert found == set(FOLDERS)


@pytest.mark.parametrize("path", files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_cites_a_document_not_in_the_repository(path):
    hits = stale_lines(path.read_text(errors="replace"))
    assert not hits, f"{path.relative_to(ROOT)} cites a document not in this repository: {hits}"


#: a benchmark's grid-command profile, as its module names it
BENCH_PROFILE = re.compile(r'^PROFILE = "(gridcommand-[\w-]+)"', re.M)


@pytest.mark.parametrize("path", sorted((ROOT / "benchmarks").glob("bench_*.py")), ids=lambda p: p.name)
def test_a_benchmarks_profile_loads(path):
    """A benchmark that names a grid-command profile names one that exists (a retired profile
    left two of them failing on load)."""
    from ilets.gridcommand.study.profiles import load_profile

    for name in BENCH_PROFILE.findall(path.read_text()):
        assert load_profile(name).name == name, path.name
