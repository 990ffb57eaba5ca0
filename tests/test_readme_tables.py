"""README's generated tables stay equal to what is shipped (no hand-typed counts or sizes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from text_numbers import numbers_in

from ilets.report import headline as H

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # reads every shipped paper cell's records (430 config.yaml files)
def test_readme_shipped_table_is_generated_from_the_shipped_folders():
    # after shipping: `python -m ilets.report.headline --results shipped/paper --write book/records.md`
    readme = (ROOT / "book" / "records.md").read_text()
    start, end = H.SHIPPED_MARKERS
    assert start in readme and end in readme, "README lacks the shipped-table markers"
    block = readme.split(start, 1)[1].split(end, 1)[0].strip("\n")
    assert block == H.shipped_block(ROOT / "shipped").strip("\n")


def test_shipped_table_reads_provenance_and_plans(tmp_path):
    study = tmp_path / "shipped" / "a"
    study.mkdir(parents=True)
    (study / "PROVENANCE.json").write_text(json.dumps({"cells": 2, "cpu_hours": 1.5, "note": "two cells",
                                                       "commits": {"abcdef0123": 1, "1234567aaa+dirty": 1}}))
    (study / "grid.json").write_text(json.dumps({"cells": ["x", "y", "z"]}))
    (tmp_path / "shipped" / "no-provenance").mkdir()
    text = H.shipped_markdown(tmp_path / "shipped")
    lines = text.splitlines()
    assert len(lines) == 3  # header, rule, one folder (the one without provenance is not listed)
    # folder, note, cells of planned, CPU-hours, commits
    assert [c.strip() for c in lines[2].split("|")[1:6]] == ["`shipped/a/`", "two cells", "2 of 3", "1.50",
                                                              "abcdef0, 1234567+dirty"]


@pytest.mark.slow  # reads every shipped paper cell's records (430 config.yaml files) first
def test_write_needs_both_marker_pairs_and_changes_nothing_without(tmp_path):
    target = tmp_path / "README.md"
    original = "x\n<!-- headline:start -->\n<!-- headline:end -->\n"
    target.write_text(original)
    with pytest.raises(ValueError, match="shipped:start"):
        H.write_headline(ROOT / "shipped" / "paper", target)
    assert target.read_text() == original


def test_cost_per_cell_from_the_cells_records(tmp_path, monkeypatch):
    import pandas as pd

    from ilets.study import results as R

    table = pd.DataFrame([
        {"cell": "drl-M50-s0-a", "method": "drl", "variant": "", "servers": 50, "seed": 0, "status": R.STATUS_DONE,
         "wall_s": 1.0, "cpu_s": 90.0},
        {"cell": "drl-M50-s1-b", "method": "drl", "variant": "", "servers": 50, "seed": 1, "status": R.STATUS_DONE,
         "wall_s": 1.0, "cpu_s": 110.0},
        {"cell": "random-M50-s0-c", "method": "random", "variant": "", "servers": 50, "seed": 0, "status": R.STATUS_DONE,
         "wall_s": 1.0, "cpu_s": 30.0},
        {"cell": "drl@heavy-load-M50-s0-d", "method": "drl", "variant": "heavy-load", "servers": 50, "seed": 0,
         "status": R.STATUS_DONE, "wall_s": 1.0, "cpu_s": 999.0},
        {"cell": "drl-M50-s2-e", "method": "drl", "variant": "", "servers": 50, "seed": 2, "status": R.STATUS_FAILED,
         "wall_s": 1.0, "cpu_s": 5.0},
    ])
    monkeypatch.setattr(R, "compute_table", lambda out=None: table)
    text = H.cost_markdown(tmp_path / "paper")
    per_cell = text.split("at 50 servers")[1].split(". ")[0]  # seeds, DRL's CPU seconds, the heuristics' range
    assert "DRL 100" in per_cell and numbers_in(per_cell) == ["2", "100", "30", "30"]
    # no grid.json: the plan is the finished cells; the failed attempt's 5 s are not counted
    measured = text.split("Measured: ")[1]  # main grid: CPU-hours, cells of planned; then the variants'
    assert measured.index("main grid") < measured.index("variants")
    assert numbers_in(measured) == ["0.06", "3", "3", "0.28", "1", "1"]
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "grid.json").write_text(json.dumps({"cells": [
        "drl-M50-s0-a", "drl-M50-s1-b", "drl-M50-s2-e", "random-M50-s0-c", "drl@heavy-load-M50-s0-d",
        "drl@heavy-load-M50-s1-f"]}))
    planned = H.cost_markdown(tmp_path / "paper").split("Measured: ")[1]
    assert numbers_in(planned) == ["0.06", "3", "4", "0.28", "1", "2"]


def test_verification_line_counts_checked_cells_from_the_record(tmp_path):
    folder = tmp_path / "paper"
    for name in ("drl-M50-s0-aaaa", "drl@heavy-load-M200-s1-bbbb", "ilets-M50-s2-cccc"):
        (folder / "cells" / name).mkdir(parents=True)
        (folder / "cells" / name / "system.json").write_text(json.dumps({"commit": "0123456789abcdef"}))
    assert H.verification_markdown(folder) == ""  # no record, no line
    check = {"checked_utc": "2026-01-01T00:00:00+00:00", "machine": "m", "code": {"commit": "fedcba"},
             "differences": [], "wall_s": 1.0}
    (folder / "VERIFY.json").write_text(json.dumps({"cells": [
        {**check, "cell": "drl-M50-s0-aaaa", "reproduced": True},
        {**check, "cell": "drl@heavy-load-M200-s1-bbbb", "reproduced": False, "differences": ["x differs"]}]}))
    text = H.verification_markdown(folder)
    assert "DRL at 50 servers, " in text and "DRL (heavy-load) at 200 servers." in text
    assert "1 of 2 recorded re-runs" in text
    assert "0123456789ab (3 cells, 2 checked)" in text


def test_numerics_sentence_groups_checks_by_kernels():
    import pandas as pd

    from ilets.study.verify import numerics_sentence

    table = pd.DataFrame({"computed with": ["not recorded", "not recorded", "portable"],
                          "checked with": ["portable", "portable", "portable"],
                          "reproduced": ["yes", "no", "yes"]})
    groups = numerics_sentence(table).split(": ", 1)[1].split("; ")
    assert "predate the kernels' record" in groups[0] and "computed with portable kernels" in groups[1]
    assert all("re-run in portable mode" in g for g in groups)
    assert [numbers_in(g) for g in groups] == [["1", "2"], ["1", "1"]]  # reproduced of re-run
    assert numerics_sentence(table.iloc[:0]) == ""


def test_kernels_hint_names_the_kernels_of_cell_and_rerun(tmp_path):
    from ilets.study.verify import kernels_hint

    intel = {"numerics": {"effective": "portable"}, "cpu_model": "Intel(R) Xeon(R) Processor"}
    for name, system in (("a", intel), ("b", {})):
        (tmp_path / "cells" / name).mkdir(parents=True)
        (tmp_path / "cells" / name / "system.json").write_text(json.dumps(system))
    assert "not the CPU's kernels" in kernels_hint(tmp_path, "a", "portable", cpu="Intel(R) Xeon(R) Gold")
    assert "not the CPU's kernels" in kernels_hint(tmp_path, "a", "portable", cpu="")  # an unknown vendor: no claim
    across = kernels_hint(tmp_path, "a", "portable", cpu="AMD EPYC")
    assert across.index("on an Intel CPU") < across.index("on an AMD one")
    assert across.endswith("re-run on an Intel host")
    native = kernels_hint(tmp_path, "a", "native")
    assert native.startswith("computed with portable kernels") and "re-run with native" in native
    assert "ILETS_NUMERICS=native" in kernels_hint(tmp_path, "b", "portable")


def test_cpu_vendor_from_model_names():
    from ilets.host import cpu_vendor

    assert cpu_vendor("Intel(R) Xeon(R) Processor") == "Intel"
    assert cpu_vendor("AMD EPYC") == "AMD"
    assert cpu_vendor("AMD EPYC 9B14 96-Core Processor") == "AMD"
    assert cpu_vendor("") == "" and cpu_vendor("Apple M2") == ""


def test_kernel_effects_pairs_the_same_cells_computed_twice(tmp_path):
    from ilets.study.verify import kernel_effects, native_kernels_folder

    main, other = tmp_path / "paper", native_kernels_folder(tmp_path / "paper")
    assert other.name == "paper-native-kernels"
    assert kernel_effects(main, other).empty  # nothing beside it
    curve = "step,reward\n0,-0.5\n"
    for folder, response in ((main, 1.1), (other, 1.0)):
        for name, method, variant, r in (("drl-M50-s0-a", "drl", "", response), ("random-M50-s0-b", "random", "", 2.0),
                                         ("drl@heavy-M50-s0-d", "drl", "heavy", 3.0)):
            cell = folder / "cells" / name
            cell.mkdir(parents=True)
            cell.joinpath("metrics.json").write_text(json.dumps(
                {"method": method, "variant": variant, "avg_response_s": r, "energy_kwh": 5.0, "success_rate": 0.9,
                 "wall_s": 1.0}))
            cell.joinpath("curve.csv").write_text(curve)
    (main / "cells" / "drl-M50-s1-c").mkdir()  # only on one side: not paired
    t = kernel_effects(main, other).set_index(["method", "variant"])
    assert t.loc[("drl", ""), "cells"] == 1 and t.loc[("drl", ""), "identical"] == 0
    assert abs(t.loc[("drl", ""), "response time mean %"] - 10.0) < 1e-9 and t.loc[("drl", ""), "energy largest %"] == 0
    assert t.loc[("random", ""), "identical"] == 1 and t.loc[("random", ""), "response time largest %"] == 0
    # a variant's cells apart from its method's main-grid cells
    assert t.loc[("drl", "heavy"), "cells"] == 1 and t.loc[("drl", "heavy"), "identical"] == 1


def test_kernel_effects_sentence_with_and_without_pairs(tmp_path):
    import pandas as pd

    from ilets.study.verify import kernel_effects_sentence

    assert "No cell of these results" in kernel_effects_sentence(pd.DataFrame(columns=["cells"]), tmp_path / "x")
    text = kernel_effects_sentence(pd.DataFrame({"cells": [3, 4]}), tmp_path / "paper-native-kernels")
    assert numbers_in(text)[0] == "7" and "computed twice" in text and "`paper-native-kernels/`" in text


def _bench_tables():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "benchmarks" / "readme_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_benchmark_block_is_generated_from_the_benchmarks_json():
    # after `make bench`: `python benchmarks/readme_tables.py --write book/records.md`
    tables = _bench_tables()
    readme = (ROOT / "book" / "records.md").read_text()
    start, end = tables.MARKERS
    assert start in readme and end in readme, "README lacks the benchmark markers"
    block = readme.split(start, 1)[1].split(end, 1)[0]
    assert block.strip("\n") == tables.render().strip("\n")
    assert "is missing" not in block, "README quotes a benchmark whose JSON is not committed"


def test_benchmark_tables_say_what_is_missing_and_where_each_ran(tmp_path):
    tables = _bench_tables()
    assert "`benchmarks/results/simulator.json` is missing" in tables.render(tmp_path)
    host = {"date_utc": "2026-12-02T05:00:00Z", "cpu_model": "CPU X", "cpu_id": "family 1", "cpus": 2,
            "numerics": {"effective": "portable"}, "commit": "0123456789abcdef"}
    (tmp_path / "a.json").write_text(json.dumps({"host": host}))
    (tmp_path / "b.json").write_text(json.dumps({"host": {**host, "date_utc": "2026-12-03T01:00:00Z"}}))
    line = tables.host_line(tmp_path)
    assert line.startswith("Measured on CPU X") and "(family 1), 2 cores" in line and "portable kernels" in line
    assert line.endswith("commit 0123456 (2026-12-02, 2026-12-03).")


def test_aggregate_reads_paragraph_says_when_the_read_ahead_is_not_known():
    tables = _bench_tables()
    measured = json.loads((ROOT / "benchmarks" / "results" / "aggregate_reads.json").read_text())
    assert f"read-ahead {measured['read_ahead_kb']:,} KB" in tables.aggregate_reads(measured)[0]
    assert "read-ahead not known" in tables.aggregate_reads({**measured, "read_ahead_kb": None})[0]


def test_benchmark_targets_are_judged_from_the_numbers(tmp_path):
    tables = _bench_tables()
    row = {"servers": 200, "tasks": 10, "twin_tasks": 5, "main_s": 20.0, "main_tasks_per_s": 0.5, "twin_tasks_per_s": 1.0,
           "ratio_main_over_twin": 5.0, "assignments_agree": True}
    text = "\n".join(tables.simulator({"scale": 1.0, "twin_scale": 0.5, "tasks": 10, "rows": [row]}))
    replay, ratio = text.split("Targets: ")[1].split(". ", 1)
    assert "**not met**" in replay and numbers_in(replay) == ["200", "15", "20.0"]  # servers, target s, measured s
    assert "size: met (lowest" in ratio and numbers_in(ratio)[:3] == ["4", "5.0", "200"]
    text = "\n".join(tables.simulator({"scale": 1.0, "twin_scale": 0.5, "tasks": 10,
                                       "rows": [{**row, "main_s": 9.0, "assignments_agree": False}]}))
    replay = text.split("Targets: ")[1].split(". ")[0]
    assert ": met (9.0 s)" in replay and "**they differ**" in text
    from ilets.files import MarkerError, replace_marked

    with pytest.raises(MarkerError, match="README.md: expected one <!-- benchmarks:start -->"):
        replace_marked("no markers here", tables.MARKERS, "x", "README.md")
    doubled = f"{tables.MARKERS[0]} a {tables.MARKERS[1]} {tables.MARKERS[0]} b {tables.MARKERS[1]}"
    with pytest.raises(MarkerError):
        replace_marked(doubled, tables.MARKERS, "x", "README.md")
    assert replace_marked(f"<{tables.MARKERS[0]}old{tables.MARKERS[1]}>", tables.MARKERS, "new\n", "R") == \
        f"<{tables.MARKERS[0]}\nnew\n{tables.MARKERS[1]}>"


def test_readme_per_server_paragraph_is_generated_from_the_shipped_folders():
    # after shipping: `python -m ilets.report.per_server --write book/records.md`
    from ilets.report import per_server as P

    readme = (ROOT / "book" / "records.md").read_text()
    start, end = P.README_MARKERS
    assert start in readme and end in readme, "README lacks the per-server markers"
    block = readme.split(start, 1)[1].split(end, 1)[0]
    assert block.strip("\n") == P.readme_block(ROOT / "shipped").strip("\n")


def test_a_generator_writes_between_its_markers_or_names_them_and_leaves_the_file(tmp_path, capsys):
    from ilets.files import print_or_write_marked

    markers = ("<!-- x:start -->", "<!-- x:end -->")
    target = tmp_path / "README.md"
    target.write_text(f"head\n{markers[0]}\nold\n{markers[1]}\ntail\n")
    assert print_or_write_marked("new\n", target, markers, "the x paragraph") == 0
    assert target.read_text() == f"head\n{markers[0]}\nnew\n{markers[1]}\ntail\n"
    bare = tmp_path / "BARE.md"
    bare.write_text("no markers\n")
    assert print_or_write_marked("new\n", bare, markers, "the x paragraph") == 2
    assert bare.read_text() == "no markers\n" and "x:start" in capsys.readouterr().err
    assert print_or_write_marked("printed\n", None, markers, "the x paragraph") == 0
    assert capsys.readouterr().out == "printed\n"
