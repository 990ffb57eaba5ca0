"""The ``ilets`` command: clear errors for bad input, and a cell end to end."""

from __future__ import annotations

import json

import pytest
import yaml

from ilets.study.cli import main


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


# --- user errors: one line naming the file, field or flag, exit 2, never a traceback -------

def _profile(tmp_path, text: str, name: str = "p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


GOOD = "methods: [random]\nservers: [5]\nseeds: [0]\nrun: {workload: {scale: 0.001}}\n"


def _google_trace(folder):
    """Two shards of trace: SUBMITs only after the middle of day 10's first 50 minutes."""
    import gzip

    folder.mkdir()
    rows0 = ["0,,1,0,,0,u,0,2,0.05,0.03,0.0001,0", "863990000000,,1,0,,1,u,0,2,0.05,0.03,0.0001,0"]
    rows1 = [f"{s * 1_000_000},,{s},0,,0,u,0,2,0.05,0.03,0.0001,0" for s in range(865_600, 867_100)]
    (folder / "part-00000-of-00500.csv.gz").write_bytes(gzip.compress(("\n".join(rows0) + "\n").encode()))
    (folder / "part-00001-of-00500.csv.gz").write_bytes(gzip.compress(("\n".join(rows1) + "\n").encode()))
    return folder


USER_ERRORS = {
    "out-is-a-file": (lambda t: ["grid", "--profile", "smoke", "--out", str(_file(t)), "--quiet"],
                      "--out", "expected a folder"),
    "out-unwritable": (lambda t: ["run", "--method", "random", "--profile", "smoke",
                                  "--out", str(_file(t) / "sub"), "--quiet"], "--out", "expected a writable folder"),
    "seed-negative": (lambda t: ["run", "--method", "random", "--seed", "-1"], "--seed", "[0, 4294967295]"),
    "seed-too-large-learner": (lambda t: ["run", "--method", "drl", "--seed", "4294967296"], "--seed",
                               "[0, 4294967295]"),
    "seed-not-a-number": (lambda t: ["run", "--method", "drl", "--seed", "x"], "--seed", "expected an integer"),
    "workers-zero": (lambda t: ["grid", "--profile", "smoke", "--workers", "0"], "--workers", ">= 1"),
    "shards-abc": (lambda t: ["trace", "download", "--shards", "abc", "--dest", str(t)], "--shards", "'abc'"),
    "shards-negative": (lambda t: ["trace", "download", "--shards=-1", "--dest", str(t)], "--shards", "'-1'"),
    "shards-empty-range": (lambda t: ["trace", "download", "--shards", "5-2", "--dest", str(t)], "--shards",
                           "is empty"),
    "shards-too-large": (lambda t: ["trace", "download", "--shards", "0-500", "--dest", str(t)], "--shards",
                         "out of range"),
    "dest-is-a-file": (lambda t: ["trace", "download", "--shards", "0", "--dest", str(_file(t))], "--dest",
                       "expected a folder"),
    "variant-not-a-mapping": (lambda t: ["grid", "--profile", _profile(t, GOOD + "variants: {v: [random]}\n"),
                                         "--out", str(t / "o")], "p.yaml.variants.v", "expected a mapping"),
    "empty-profile": (lambda t: ["grid", "--profile", _profile(t, ""), "--out", str(t / "o")], "p.yaml",
                      "empty profile"),
    "duplicate-key": (lambda t: ["grid", "--profile", _profile(t, GOOD + "seeds: [1]\n"), "--out", str(t / "o")],
                      "p.yaml", "duplicate key 'seeds'"),
    "evil-name": (lambda t: ["grid", "--profile", _profile(t, GOOD + "name: ../../evil\n")], "p.yaml.name",
                  "expected letters"),
    "misspelled-expert": (lambda t: ["run", "--method", "ilets-", "--profile",
                                     _profile(t, GOOD.replace("}}", "}, oail: {experts: [gaa, pso]}}")),
                                     "--out", str(t / "o")], "oail.experts", "'gaa'"),
    "nan-penalty": (lambda t: ["run", "--method", "random", "--profile",
                               _profile(t, GOOD.replace("}}", "}, reward: {deadline_penalty: .nan}}")),
                               "--out", str(t / "o")], "reward.deadline_penalty", "finite"),
    "negative-clip": (lambda t: ["run", "--method", "drl", "--profile",
                                 _profile(t, GOOD.replace("}}", "}, ppo: {clip_range: -1}}")),
                                 "--out", str(t / "o")], "ppo.clip_range", "> 0"),
    "empty-offline-half": (lambda t: ["run", "--method", "random", "--profile",
                                      _profile(t, "methods: [random]\nservers: [5]\nseeds: [0]\nrun: {workload: "
                                                  f"{{kind: google, trace_dir: {_google_trace(t / 'trace')}}}}}\n"),
                                      "--out", str(t / "o"), "--quiet"], "offline half", "no SUBMIT tasks"),
}


def _file(tmp_path):
    path = tmp_path / "afile"
    path.write_text("not a folder")
    return path


@pytest.mark.parametrize("case", sorted(USER_ERRORS))
def test_user_errors_are_one_line_naming_the_flag_or_field(tmp_path, capsys, case):
    make_args, where, what = USER_ERRORS[case]
    args = make_args(tmp_path)
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse
        code = exit_.code
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, f"{case}: exit {code}, stderr {err!r}"
    assert "Traceback" not in err and "\n" not in err, f"{case}: not one line: {err!r}"
    assert where in err and what in err, f"{case}: {err!r} should name {where!r} and say {what!r}"
    assert not (tmp_path.parent / "evil").exists()


def test_a_benchmark_record_names_its_host_and_commit(tmp_path):
    import numpy as np

    from ilets.host import write_benchmark

    out = tmp_path / "deep" / "bench.json"
    result = write_benchmark(out, {"ratio": np.float64(2.5)})
    written = json.loads(out.read_text())
    assert written == json.loads(json.dumps(result, default=float)) and written["ratio"] == 2.5
    assert written["host"]["cpus"] >= 1 and written["host"]["python"].count(".") == 2
    assert {"cpu_model", "machine", "commit", "dirty"} <= set(written["host"])
    assert write_benchmark(None, {})["host"]["cpus"] >= 1  # no file asked for, none written
