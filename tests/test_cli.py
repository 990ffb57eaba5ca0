"""The ``ilets`` command: clear errors for bad input, and a cell end to end."""

from __future__ import annotations

import json

import pytest
import yaml

from ilets.cli import main


def test_unknown_profile_key_is_named(tmp_path, capsys):
    bad = tmp_path / "p.yaml"
    bad.write_text(yaml.safe_dump({"methods": ["random"], "servers": [5], "seeds": [0], "run": {"ppo": {"lr": 1}}}))
    assert main(["grid", "--profile", str(bad), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "configuration error" in err and str(bad) in err and "'lr'" in err


def test_impossible_server_count_is_refused(tmp_path, capsys):
    assert main(["run", "--method", "random", "--servers", "0", "--profile", "smoke",
                 "--out", str(tmp_path), "--quiet"]) == 2
    assert "fleet.servers" in capsys.readouterr().err


def test_missing_profile_file(tmp_path, capsys):
    assert main(["grid", "--profile", str(tmp_path / "nope.yaml"), "--quiet"]) == 2
    assert "not found" in capsys.readouterr().err


def test_missing_trace_folder_is_a_clean_error(tmp_path, capsys):
    assert main(["trace", "find-window", "--trace-dir", str(tmp_path / "absent")]) == 2
    err = capsys.readouterr().err
    assert "absent" in err and "Traceback" not in err


def test_unknown_method_is_rejected_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--method", "dqn"])
    assert exit_.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_run_writes_a_cell_and_prints_its_metrics(tmp_path, capsys):
    assert main(["run", "--method", "earliest-finish", "--servers", "20", "--profile", "smoke",
                 "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    folder = next((tmp_path / "cells").iterdir())
    metrics = json.loads((folder / "metrics.json").read_text())
    assert str(folder) in out and metrics["servers"] == 20 and metrics["method"] == "earliest-finish"
