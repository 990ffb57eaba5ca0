"""The records appendix stays short: its shipped table shows a note's opening phrase and the
provenance in columns (ilets.report.headline), and the package's documentation lives in docs/."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ilets.report import headline as H

ROOT = Path(__file__).resolve().parents[1]


def test_a_note_opens_with_its_first_phrase():
    # the opening phrase ends at the first colon, bracket, semicolon or full stop
    for opening, rest in (("paper profile", ": main grid first, then the variants"),
                          ("the per-server grid", " (profile per-server: the four methods)"),
                          ("tuning pilot, seeds 1000-1001", "; every variant finished. Paper scale"),
                          ("two cells", "")):
        assert H.short_note(opening + rest) == opening
    assert H.short_note("") == ""


def test_the_shipped_table_gives_when_and_on_which_cpus(tmp_path):
    study = tmp_path / "shipped" / "a"
    study.mkdir(parents=True)
    (study / "PROVENANCE.json").write_text(json.dumps({
        "cells": 2, "cpu_hours": 1.5, "note": "two cells: the rest of the note", "commits": {"abcdef0123": 2},
        "first_start_utc": "2026-12-01T10:00:00+00:00", "last_start_utc": "2026-12-02T01:00:00+00:00",
        "machines": {"AMD EPYC x 2 cores": 1, "Intel(R) Xeon(R) Processor x 2 cores": 1}}))
    row = H.shipped_markdown(tmp_path / "shipped").splitlines()[2]
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[1] == "two cells" and cells[5:7] == ["2026-12-01 to 2026-12-02", "AMD, Intel"]
    (study / "PROVENANCE.json").write_text(json.dumps({"cells": 2, "cpu_hours": 1.5, "note": "x", "commits": {}}))
    row = H.shipped_markdown(tmp_path / "shipped").splitlines()[2]
    assert [c.strip() for c in row.split("|")[1:-1]][5:7] == ["—", "—"]


def test_the_package_documentation_is_in_docs_and_readme_points_to_it():
    records = (ROOT / "book" / "records.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for doc in ("using-the-package", "gridcommand", "adding-an-expert"):
        assert (ROOT / "docs" / f"{doc}.md").is_file()
        assert f"(docs/{doc}.md)" in readme
    assert "`docs/`" in records and "## Using the package" not in records
    assert "class Annealing" in (ROOT / "docs" / "adding-an-expert.md").read_text()


def test_the_records_appendix_keeps_to_its_share_of_the_word_budget():
    words = len(re.findall(r"\S*[^\W_]\S*", (ROOT / "book" / "records.md").read_text()))
    assert words <= 4_000, words
