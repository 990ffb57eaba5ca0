"""``ilets evaluate`` and :func:`ilets.study.evaluate.evaluate`: a user's task table scheduled by a
shipped policy (frozen, greedy) or a heuristic, with one-line errors for malformed files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from ilets import cell_pack
from ilets.config import WorkloadConfig
from ilets.study.cli import main
from ilets.study.evaluate import EvaluateError, evaluate
from ilets.workloads.task_file import TaskFileError, read_task_file
from ilets.workloads.workload import synthetic_workload

ROOT = Path(__file__).resolve().parents[1]
#: a shipped per-server cell (trained at 50 servers; its policy/ and clone/ weight folders)
PER_SERVER_CELL = cell_pack.cell_paths(ROOT / "shipped" / "per-server", "drl+-M50-s0-*")[0]
FLAT_CELL = cell_pack.cell_paths(ROOT / "shipped" / "paper", "drl+-M50-s0-*")[0]
#: keys every evaluation shares with a cell's metrics.json that must not depend on the host
SCHEDULE_KEYS = ("tasks", "avg_response_s", "avg_wait_s", "success_rate", "energy_kwh", "makespan_s", "mean_reward")


@pytest.fixture(scope="module")
def tasks():
    return synthetic_workload(WorkloadConfig(scale=0.001), 0).online.slice(0, 300)


@pytest.fixture
def task_csv(tmp_path, tasks):
    path = tmp_path / "tasks.csv"
    tasks.to_frame().to_csv(path, index=False)
    return path


def _run(capsys, *argv):
    code = main(["evaluate", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_shipped_per_server_policy_schedules_a_users_csv_at_another_fleet_size(tmp_path, task_csv, tasks, capsys):
    code, out, err = _run(capsys, "--policy", PER_SERVER_CELL, "--workload", task_csv, "--servers", 20,
                          "--out", tmp_path / "a")
    assert code == 0, err
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    cell = json.loads(cell_pack.read_text(PER_SERVER_CELL / "metrics.json"))
    assert metrics["tasks"] == len(tasks) and metrics["servers"] == 20
    assert set(SCHEDULE_KEYS) <= set(metrics) and set(SCHEDULE_KEYS) <= set(cell)  # the same record as a cell
    assert metrics["evaluated"]["weights"] == "policy"
    assert {"config.yaml", "command.txt", "system.json", "curve.csv"} <= {p.name for p in (tmp_path / "a").iterdir()}
    # the Python entry point on the table the file holds gives the same numbers (and is
    # deterministic); read from a file, the arrivals start at 0 (any origin, the same schedule)
    again = evaluate(PER_SERVER_CELL, read_task_file(task_csv), 20)
    assert {k: again.metrics[k] for k in SCHEDULE_KEYS} == {k: metrics[k] for k in SCHEDULE_KEYS}


def test_weights_clone_loads_the_clone_not_the_final_policy(tasks):
    import torch as th

    clone = evaluate(PER_SERVER_CELL, tasks, 10, weights="clone")
    assert clone.metrics["evaluated"]["weights"] == "clone" and clone.metrics["tasks"] == len(tasks)
    final, cloned = (th.load(io.BytesIO(cell_pack.read_bytes(PER_SERVER_CELL / w / "policy.pt")), weights_only=True)
                     for w in ("policy", "clone"))
    assert any(not th.equal(final[k], cloned[k]) for k in final)  # so the flag chooses between two policies
    with pytest.raises(EvaluateError, match="weights: expected one of"):
        evaluate(PER_SERVER_CELL, tasks, 10, weights="model.zip")


def test_a_heuristic_by_name_reads_parquet(tmp_path, tasks, capsys):
    path = tmp_path / "tasks.parquet"
    tasks.to_frame().to_parquet(path)
    code, out, err = _run(capsys, "--policy", "earliest-finish", "--workload", path, "--servers", 10,
                          "--out", tmp_path / "ef")
    assert code == 0, err
    metrics = json.loads((tmp_path / "ef" / "metrics.json").read_text())
    assert metrics["method"] == "earliest-finish" and metrics["tasks"] == len(tasks)
    assert metrics["avg_response_s"] == evaluate("earliest-finish", read_task_file(path), 10).metrics["avg_response_s"]


def test_a_flat_cell_computed_before_flat_cells_kept_weights_says_so(tasks):
    with pytest.raises(EvaluateError, match=r"policy: not found; .*flat cell.*before"):
        evaluate(FLAT_CELL, tasks, 50)


#: a flat cell of the worlds grid whose weights were written by a re-run (its metrics unchanged)
FLAT_WEIGHTS_CELL = cell_pack.cell_paths(ROOT / "shipped" / "worlds", "drl+-M50-s0-*")[0]


def test_a_flat_policy_with_its_weights_schedules_at_its_own_fleet_size_only(tasks):
    metrics = evaluate(FLAT_WEIGHTS_CELL, tasks, 50).metrics
    assert metrics["tasks"] == len(tasks) and metrics["evaluated"]["weights"] == "policy"
    from ilets.agents.policy_io import PolicyLoadError

    with pytest.raises(PolicyLoadError, match="servers: .*flat policy.*50 servers.*20"):
        evaluate(FLAT_WEIGHTS_CELL, tasks, 20)


def test_an_existing_evaluation_is_never_overwritten(tmp_path, task_csv, capsys):
    assert _run(capsys, "--policy", "min-energy", "--workload", task_csv, "--servers", 10, "--out", tmp_path / "e")[0] == 0
    before = (tmp_path / "e" / "metrics.json").read_text()
    code, out, err = _run(capsys, "--policy", "random", "--workload", task_csv, "--servers", 10, "--out", tmp_path / "e")
    assert code == 2 and "already holds an evaluation" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "e" / "metrics.json").read_text() == before


HEADER = "arrival,cpu,length,deadline\n"
BAD_FILES = {
    "missing column": ("arrival,cpu,length\n0,0.1,100\n", "column 'deadline' is missing"),
    "not a number": (HEADER + "0,0.1,100,2\n1,abc,100,2\n",
                     "line 3, column 'cpu': expected a finite number > 0, got 'abc'"),
    "negative deadline": (HEADER + "0,0.1,100,-2\n", "line 2, column 'deadline': expected a finite number > 0"),
    "empty cell": (HEADER + "0,0.1,,2\n", "line 2, column 'length': expected a finite number > 0"),
    "unsorted": (HEADER + "5,0.1,100,2\n1,0.1,100,2\n",
                 "line 3, column 'arrival': expected arrivals in non-decreasing order"),
    "no rows": (HEADER, "no rows"),
    "too big a task": (HEADER + "0,7.5,100,2\n", "task 1, column 'cpu': 7.5 exceeds the largest server's capacity"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_malformed_task_file_gets_one_line_naming_file_row_and_column(tmp_path, capsys, case):
    text, expected = BAD_FILES[case]
    path = tmp_path / "bad.csv"
    path.write_text(text)
    code, out, err = _run(capsys, "--policy", "earliest-finish", "--workload", path, "--servers", 5,
                          "--out", tmp_path / "out")
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and expected in err
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_other_bad_inputs_are_one_line(tmp_path, task_csv, capsys):
    (tmp_path / "tasks.txt").write_text("arrival,cpu,length,deadline\n")
    for change, expected in [
        ({"--workload": tmp_path / "nope.csv"}, "nope.csv: not found"),
        ({"--workload": tmp_path / "tasks.txt"}, "expected a .csv or .parquet file"),
        ({"--policy": tmp_path / "no-cell"}, "expected a heuristic"),
    ]:
        args = {"--policy": "earliest-finish", "--workload": task_csv, "--servers": 5, "--out": tmp_path / "o", **change}
        code, out, err = _run(capsys, *[x for kv in args.items() for x in kv])
        assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(TaskFileError, match="cannot be read as parquet"):
        (tmp_path / "broken.parquet").write_text("not parquet")
        read_task_file(tmp_path / "broken.parquet")
    assert pd.read_csv(task_csv).shape[1] == 4
