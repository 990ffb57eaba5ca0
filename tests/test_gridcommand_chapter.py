"""Chapter 12's finding, the archive of retired designs, and who reads each shipped folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from ilets.gridcommand.archive import ARCHIVE, DESIGNS, archive_provenance, load_archive
from ilets.gridcommand.report import chapter as X

ROOT = Path(__file__).resolve().parents[1]


def test_the_finding_rests_on_these_numbers():
    n = X.finding_numbers(ROOT)
    assert len(n["pairs"]) == 4
    # the thermostat tracks better than every rung in three of four settings, not at 200 shallow-long
    assert sorted(n["thermostat_best"]) == [("deep-short", 50), ("deep-short", 200), ("shallow-long", 50)]
    # ... and the reward ranks it last of the experts at 200 servers, in both settings
    assert sorted(n["thermostat_last"]) == [("deep-short", 200), ("shallow-long", 200)]
    learned, experts = n["misses"][50]["learned"], n["misses"][50]["experts"]
    assert (round(learned[0]), round(learned[1])) == (1614, 1957)
    assert (round(experts[0]), round(experts[1])) == (-97, 101)


def test_the_findings_wording():  # the chapter's one snapshot
    assert X.finding_sentences(X.finding_numbers(ROOT)) == (
        "A simple feedback thermostat follows the grid operator's command more closely than every expert of the "
        "optimising ladder in three of the four fleet and command settings tried, yet the reward the study scores "
        "ranks it last of the experts at 200 servers, so the reward, not the tracking, decides which expert looks "
        "best. Every learned policy misses far more deadlines than the schedule without a command: +1,614 to "
        "+1,957 more per episode at 50 servers, where the experts range from -97 to +101. A frozen clone tracks "
        "like its teacher only when its inputs carry the teacher's own score terms; without them it misses the bar.")


def test_the_archive_reads_and_holds_every_retired_design():
    archive = load_archive(ROOT)
    assert (ROOT / ARCHIVE).is_file() and len(archive)
    assert set(archive["folder"]) == set(DESIGNS)  # every retired design, and nothing else
    for column in ("design", "method", "servers", "seed", "role", "tracking_mae_rel", "profile", "cell_commit",
                   "cpu_hours", "recompute", "recompute_commit", "changed", "dropped"):
        assert column in archive.columns, column
    assert archive["recompute"].str.len().gt(0).all() and archive["profile"].str.len().gt(0).all()
    for folder in DESIGNS:
        assert not (ROOT / "shipped" / folder).exists(), folder  # retired: a row, not a folder
    provenance = archive_provenance(ROOT)
    assert provenance["rows"] == len(archive) and len(provenance["recompute_commit"]) == 40
    # the drift criterion reads its family's plans from here
    assert provenance["grids"]["gridcommand-drift-per-server-days/band/shifted"]["planned_cells"] == 40


def test_the_appendix_has_one_row_per_design():
    table = X.designs_table(ROOT)
    assert len(table) == len(X.KEPT) + len(DESIGNS) and table["design"].is_unique
    assert (table["kept or dropped"] == "kept").sum() == len(X.KEPT)


#: Every folder of shipped/ -> (the chapter that reads it, the module or notebook that names it).
READERS = {
    "archive": ("12a_grid_command_designs", "src/ilets/gridcommand/archive.py"),
    "book": ("08_decision_time", "src/ilets/study/book_measurements.py"),
    "gridcommand": ("12_grid_command", "src/ilets/gridcommand/report/results.py"),
    "gridcommand-hindsight": ("12_grid_command", "src/ilets/gridcommand/report/chapter.py"),
    "gridcommand-paper": ("12a_grid_command_designs", "src/ilets/gridcommand/report/results.py"),
    "gridcommand-paper-hindsight": ("12_grid_command", "src/ilets/gridcommand/report/bound.py"),
    "gridcommand-paper-sleep-redraw": ("12_grid_command", "src/ilets/gridcommand/report/criteria.py"),
    "gridcommand-per-server-episodes": ("12_grid_command", "src/ilets/gridcommand/designs.py"),
    "gridcommand-per-server-episodes-own": ("12_grid_command", "src/ilets/gridcommand/designs.py"),
    "gridcommand-per-server-terms": ("12_grid_command", "src/ilets/gridcommand/designs.py"),
    "gridcommand-per-server-film-later": ("12_grid_command", "src/ilets/gridcommand/designs.py"),
    "paper": ("07_results", "src/ilets/study/results.py"),
    "quick": ("10_reproduce", "src/ilets/study/results.py"),
    "per-server": ("13_per_server", "src/ilets/study/results.py"),
    "worlds": ("14_generalisation", "src/ilets/study/results.py"),
    "pilot": ("11_pilot", "src/ilets/study/pilot.py"),
    "pilot-per-server": ("11_pilot", "src/ilets/study/pilot.py"),
    "positive-control": ("05_oinpt", "src/ilets/report/positive_control.py"),
    "shifts": ("14_generalisation", "src/ilets/report/shifts.py"),
    "shifts-worlds": ("14_generalisation", "notebooks/14_generalisation.py"),
    "paper-native-kernels": ("10_reproduce", "src/ilets/study/verify.py"),
    "rl-control": ("15_rl_stage", "src/ilets/report/rl_stage.py"),
    "rl-control-eval": ("15_rl_stage", "src/ilets/report/rl_stage.py"),
}
#: Folders that no chapter or module reads today: their owners decide (listed, not deleted).
UNREAD: set[str] = set()


@pytest.mark.parametrize("folder", sorted(READERS))
def test_each_shipped_folder_is_read_by_a_chapter(folder):
    chapter, reader = READERS[folder]
    assert (ROOT / "shipped" / folder).is_dir(), f"the mapping names shipped/{folder}, which is absent"
    assert (ROOT / "notebooks" / f"{chapter}.py").is_file(), chapter
    assert f'"{folder}"' in (ROOT / reader).read_text() or f"shipped/{folder}" in (ROOT / reader).read_text() \
        or f"shifts_dir(\"{folder}\")" in (ROOT / reader).read_text(), (folder, reader)


def test_every_shipped_folder_has_a_reader_or_is_listed_unread():
    folders = {p.name for p in (ROOT / "shipped").iterdir() if p.is_dir()}
    assert folders == set(READERS) | UNREAD, folders ^ (set(READERS) | UNREAD)
    assert not UNREAD & set(READERS)


def test_the_archive_names_the_commit_that_recomputes_it(tmp_path):
    from ilets.gridcommand.report.chapter import recompute_commit

    assert recompute_commit(tmp_path) == "unknown"
    assert len(recompute_commit(ROOT)) == 8
