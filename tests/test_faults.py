"""Damaged result folders and caches, concurrent grids and stale temporaries.

A cell is done only when its folder is complete and valid; anything else is reported with
the file named and recomputed, and the store after the rerun equals an undamaged run's.
Cells are tiny (a ~260-task workload on 5 servers) so the file takes well under a minute.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from filelock import FileLock

from ilets import cell_pack
from ilets.study.grid import run_grid
from ilets.study.profiles import load_profile
from ilets.study.results import build_store
from ilets.study.run import BUSY, DONE, RAN, cell_dir, cell_name, cell_problem, is_done, lock_path, run_cell_status
from ilets.study.verify import HOST_KEYS

#: metrics that measure the host, not the result (wall/CPU seconds, latencies, phase timings)
TIMING = tuple(sorted(HOST_KEYS))
from tiny_profiles import write_profile  # noqa: E402 (tests/ is on the path)


def comparable(out: Path) -> pd.DataFrame:
    m = pd.read_parquet(out / "store" / "metrics.parquet")
    return m.drop(columns=[c for c in TIMING if c in m]).sort_values("cell").reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A finished 3-cell grid (two heuristics and DRL), computed once for the module."""
    root = tmp_path_factory.mktemp("faults")
    path = write_profile(root / "tiny.yaml", methods=["random", "least-loaded", "drl"], servers=[5], seeds=[0],
                         workers=1)
    out = root / "reference"
    summary = run_grid(load_profile(path), out, workers=1, progress=False)
    assert summary["ran"] == 3 and summary["failed"] == 0
    return path, out


def copy_of(reference, tmp_path) -> tuple[Path, Path, list]:
    import shutil

    path, ref = reference
    out = tmp_path / "out"
    shutil.copytree(ref, out)
    return path, out, load_profile(path).cells()


DAMAGE = {
    "metrics-missing": lambda f: (f / "metrics.json").unlink(),
    "metrics-truncated": lambda f: (f / "metrics.json").write_text((f / "metrics.json").read_text()[:40]),
    "metrics-not-an-object": lambda f: (f / "metrics.json").write_text("[1, 2]"),
    "metrics-key-missing": lambda f: (f / "metrics.json").write_text(json.dumps(
        {k: v for k, v in json.loads((f / "metrics.json").read_text()).items() if k != "seed"})),
    "seed-beyond-int64": lambda f: (f / "metrics.json").write_text(json.dumps(
        {**json.loads((f / "metrics.json").read_text()), "seed": 2**64})),
    "curve-empty": lambda f: (f / "curve.csv").write_text(""),
    "curve-header-only": lambda f: (f / "curve.csv").write_text((f / "curve.csv").read_text().splitlines()[0] + "\n"),
    "decisions-truncated": lambda f: (f / "decisions.npz").write_bytes((f / "decisions.npz").read_bytes()[:30]),
    "config-missing": lambda f: (f / "config.yaml").unlink(),
    # cut mid-line: no longer valid YAML
    "config-cut-mid-line": lambda f: (f / "config.yaml").write_text((f / "config.yaml").read_text()[:-3]),
    # cut at a line end: still a valid YAML mapping, but not the config the cell ran with
    "config-cut-at-a-line": lambda f: (f / "config.yaml").write_text(
        "".join((f / "config.yaml").read_text().splitlines(keepends=True)[:10])),
    "config-not-a-mapping": lambda f: (f / "config.yaml").write_text("- 1\n- 2\n"),
    "config-empty": lambda f: (f / "config.yaml").write_text(""),
    "system-truncated": lambda f: (f / "system.json").write_text((f / "system.json").read_text()[:40]),
    "system-empty": lambda f: (f / "system.json").write_text(""),
    "system-not-an-object": lambda f: (f / "system.json").write_text("[1, 2]"),
    # a whole cell's folder copied under this cell's name: every file valid, the identity wrong
    "another-cell-copied-here": lambda f: (shutil.rmtree(f), shutil.copytree(
        next(p for p in f.parent.iterdir() if p.name.startswith("random-")), f)),
}
DAMAGED_FILE = {"metrics-missing": "metrics.json", "curve-empty": "curve.csv", "curve-header-only": "curve.csv",
                "decisions-truncated": "decisions.npz",
                **{k: "config.yaml" for k in DAMAGE if k.startswith("config-")},
                **{k: "system.json" for k in DAMAGE if k.startswith("system-")}}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_cell_is_named_recomputed_and_the_store_complete(reference, tmp_path, capsys, damage):
    path, out, cells = copy_of(reference, tmp_path)
    victim = next(c for c in cells if c.method == "least-loaded")
    folder = cell_dir(victim, out)
    DAMAGE[damage](folder)
    assert not is_done(victim, out)
    file = folder / DAMAGED_FILE.get(damage, "metrics.json")
    assert str(file) in cell_problem(folder)

    # the store leaves the damaged cell out, naming the file, instead of crashing
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stored = pd.read_parquet(build_store(out)["metrics"])
    assert cell_name(victim) not in set(stored["cell"]) and len(stored) == 2
    if file.name == "metrics.json" and file.exists():
        assert any(str(file) in str(w.message) for w in caught)

    summary = run_grid(load_profile(path), out, workers=1, progress=False)
    assert summary["ran"] == 1 and summary["failed"] == 0 and summary["skipped_done"] == 2
    assert str(file) in capsys.readouterr().err, "the rerun should name the damaged file"
    assert is_done(victim, out)
    pd.testing.assert_frame_equal(comparable(out), comparable(reference[1]), check_exact=True)


def test_an_unreadable_system_record_is_named(reference, tmp_path, monkeypatch):
    # _cells checks every folder, so only a file damaged after that check reaches the reader
    import ilets.study.results as results

    path, out, cells = copy_of(reference, tmp_path)
    folder = cell_dir(cells[0], out)
    assert results.system_info(out)["cores"] >= 1
    monkeypatch.setattr(results, "_cells", lambda out: [folder])
    (folder / "system.json").write_text('{"cpu_model": "x", "co')
    with pytest.raises(ValueError, match=re.escape(str(folder / "system.json"))):
        results.system_info(out)


def _cached_demonstrations(tmp_path, cfg):
    """(the arguments of collect_demonstrations, its first result, the cache file it wrote)."""
    from ilets.agents.env import StateSpec
    from ilets.agents.oinpt import collect_demonstrations
    from ilets.simulator.cloud import make_fleet
    from ilets.workloads.workload import load_workload

    wl = load_workload(cfg.workload, 0)
    args = (wl.offline, make_fleet(cfg.fleet, 0), "greedy", cfg.experts, cfg.reward, 60, 0, StateSpec.of(cfg))
    first = collect_demonstrations(*args, cache_dir=tmp_path)
    (cache,) = tmp_path.glob("demos-*.npz")
    return args, first, cache


def test_truncated_demonstration_cache_is_recomputed(tmp_path, tiny_config):
    from ilets.agents.oinpt import collect_demonstrations

    args, first, cache = _cached_demonstrations(tmp_path, tiny_config)
    data = cache.read_bytes()
    for broken in (data[: len(data) // 2], b"", b"PK\x03\x04garbage"):
        cache.write_bytes(broken)
        with pytest.warns(UserWarning, match=str(cache) + ": damaged demonstration cache"):
            again = collect_demonstrations(*args, cache_dir=tmp_path)
        np.testing.assert_array_equal(again.acts, first.acts)
        np.testing.assert_array_equal(again.obs, first.obs)
        from ilets.agents.oinpt import Demonstrations
        np.testing.assert_array_equal(Demonstrations.load(cache).acts[:len(first)], first.acts)  # written anew, whole


def test_a_cell_held_by_another_process_is_not_computed_twice(reference, tmp_path):
    path, out, cells = copy_of(reference, tmp_path)
    cfg = next(c for c in cells if c.method == "random")
    import shutil

    shutil.rmtree(cell_dir(cfg, out))
    with FileLock(str(lock_path(out, cell_name(cfg))), timeout=0):  # another grid is on it
        assert run_cell_status(cfg, out, wait=False)[1] == BUSY
        assert not cell_dir(cfg, out).exists()
    assert run_cell_status(cfg, out, wait=False)[1] == RAN
    assert run_cell_status(cfg, out, wait=False)[1] == DONE


def _cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "ilets.study.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)


@pytest.mark.slow  # two `ilets grid` processes of 6 DRL cells at once
def test_two_grids_on_one_folder_share_the_cells(tmp_path):
    # 6 DRL cells of a few seconds each, two grids with one worker each, started together
    path = write_profile(tmp_path / "shared.yaml", methods=["drl"], servers=[5], seeds=[0, 1, 2, 3, 4, 5],
                         workers=1)
    out = tmp_path / "out"
    procs = [_cli("grid", "--profile", str(path), "--out", str(out), "--quiet") for _ in range(2)]
    summaries = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        summaries.append(json.loads(stdout[stdout.find("{"):]))
    ran = [s["ran"] for s in summaries]
    assert sum(ran) == 6, f"cells computed twice (or not at all): ran {ran}"
    for s in summaries:
        assert s["ran"] + s["done_elsewhere"] + s["skipped_done"] == 6 and s["failed"] == 0
    # both stores are complete: a grid waits for the cells the other one holds
    names = {cell_name(c) for c in load_profile(path).cells()}
    assert set(pd.read_parquet(out / "store" / "metrics.parquet")["cell"]) == names


def test_the_store_built_by_many_writers_at_once_is_complete(reference, tmp_path):
    # two grids finishing together build one store at the same moment; before, they shared
    # one temporary name and one of them failed with "metrics.tmp.parquet: No such file"
    from concurrent.futures import ThreadPoolExecutor

    path, out, cells = copy_of(reference, tmp_path)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: build_store(out), range(16)))
    assert set(pd.read_parquet(out / "store" / "metrics.parquet")["cell"]) == {cell_name(c) for c in cells}
    assert sorted(p.name for p in (out / "store").iterdir()) == ["curves.parquet", "metrics.parquet"]


def test_stale_temporary_folders_are_cleaned_live_ones_kept(reference, tmp_path):
    path, out, cells = copy_of(reference, tmp_path)
    name = cell_name(cells[0])
    dead = out / "cells" / f".{name}.tmp-999999"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = out / "cells" / f".{name}.tmp-{sleeper.pid}"
        for p in (dead, live):
            p.mkdir()
            (p / "metrics.json").write_text("{}")
        # a dead PID whose cell another host still holds is kept too
        held = out / "cells" / f".{cell_name(cells[1])}.tmp-999998"
        held.mkdir()
        with FileLock(str(lock_path(out, cell_name(cells[1]))), timeout=0):
            run_grid(load_profile(path), out, workers=1, progress=False)
            assert not dead.exists(), "a temporary folder of a dead process was left"
            assert live.exists(), "a temporary folder of a live process was removed"
            assert held.exists(), "a temporary folder of a held cell was removed"
    finally:
        sleeper.kill()
        sleeper.wait()
    assert len(load_profile(path).cells()) == 3


@pytest.mark.parametrize("tamper", ["wrong-width", "actions-zeroed", "no-digest"])
def test_an_edited_or_foreign_demonstration_cache_is_set_aside_and_recomputed(tmp_path, tiny_config, tamper):
    """A cache of another width (30 frames of 'mat1 and mat2' before) or with its actions
    edited (used silently before) fails its digest or shapes: named, set aside, recomputed."""
    from ilets.agents.oinpt import Demonstrations, collect_demonstrations
    from ilets.files import content_digest

    args, first, cache = _cached_demonstrations(tmp_path, tiny_config)
    arrays = Demonstrations.load(cache).arrays()
    if tamper == "wrong-width":  # a consistent file, digest and all, for another layout
        arrays["obs"] = np.zeros((len(first.acts) + len(first.heldout.acts), 7), np.float32)
        np.savez(cache, **arrays, digest=np.array(content_digest(arrays)))
    elif tamper == "actions-zeroed":
        with np.load(cache) as z:
            kept = {k: z[k] for k in z.files}
        kept["acts"] = np.zeros_like(kept["acts"])
        np.savez(cache, **kept)
    else:
        np.savez(cache, **arrays)
    with pytest.warns(UserWarning, match=re.escape(str(cache)) + ": damaged demonstration cache.*set aside"):
        again = collect_demonstrations(*args, cache_dir=tmp_path)
    np.testing.assert_array_equal(again.acts, first.acts)
    np.testing.assert_array_equal(again.obs, first.obs)
    assert len(list(tmp_path.glob("demos-*.damaged-*.npz"))) == 1  # kept for inspection, not reused


# --- the grid-command scenario on the study's stack (issue 21) --------------------------------
# Faults a hostile sweep found in the grid-command scenario's own runner, checked on the study's
# one runner (`ilets grid|pilot|ship|verify --scenario gridcommand`): every refusal is one line
# naming the file and the field, exit code 2. Cells are the smallest workload on 6 servers.

from ilets.study.cli import main  # noqa: E402
from tiny_profiles import write_command_profile  # noqa: E402

COMMAND = ["--scenario", "gridcommand"]


def _grid(profile: Path, out: Path, *extra: str) -> int:
    return main(["grid", *COMMAND, "--profile", str(profile), "--out", str(out), "--quiet", *extra])


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_command_cells_of_a_changed_profile_are_recomputed_not_reused(tmp_path, capsys):
    # before: "4 already done" under the new train_regime, the old regime's scores reported as the new one's
    out = tmp_path / "out"
    path = write_command_profile(tmp_path / "tiny.yaml")
    assert _grid(path, out) == 0
    assert json.loads(capsys.readouterr().out)["ran"] == 4
    write_command_profile(tmp_path / "tiny.yaml", train_regime="deep-short", eval_regime="shallow-long")
    assert _grid(path, out) == 0
    cap = capsys.readouterr()
    summary = json.loads(cap.out)
    assert (summary["ran"], summary["skipped_done"]) == (4, 0), summary
    assert "train_regime 'shallow-long' -> 'deep-short'" in cap.err and str(out / "cells" / "rule-M6-s0.json") in cap.err
    rec = json.loads((out / "cells" / "rule-M6-s0.json").read_text())
    assert rec["regimes"] == {"train": "deep-short", "eval": "shallow-long"}
    assert len(list((out / "cells").glob(".rule-M6-s0.json.stale-*"))) == 1  # the old record kept aside
    store = pd.read_parquet(out / "store" / "results.parquet")
    assert set(zip(store["role"], store["regime"])) == {("train", "deep-short"), ("eval", "shallow-long")}
    # a change of the scenario behind the profile (same regimes) makes the cells stale too
    write_command_profile(tmp_path / "tiny.yaml", scenario={"defer_s": 0.6}, train_regime="deep-short",
                          eval_regime="shallow-long")
    assert _grid(path, out) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["ran"] == 4 and "computed under other settings" in cap.err
    assert _grid(path, out) == 0
    assert json.loads(capsys.readouterr().out)["skipped_done"] == 4  # and then they are done


def test_command_seeds_beyond_the_seed_range_are_a_one_line_config_error(tmp_path, capsys):
    # before: accepted, then every cell failed ("gridcommand.run.seed: expected an integer in [0, 4294967295]")
    path = write_command_profile(tmp_path / "big.yaml", seeds=[0, 2**32])
    assert _grid(path, tmp_path / "out") == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{path}.seeds" in line and "4294967295" in line
    assert not (tmp_path / "out" / "cells").exists() and not (tmp_path / "out" / "failed").exists()


def test_command_profile_without_its_grid_keys_is_refused(tmp_path, capsys):
    # before: a profile naming only itself became the default grid: every method, 90 cells at quick scale
    named = tmp_path / "named.yaml"
    named.write_text("name: named\ndescription: nothing else\n")
    assert _grid(named, tmp_path / "out", "--max-cells", "1") == 2
    line = _one_line(capsys.readouterr().err)
    assert str(named) in line and "['methods', 'servers', 'seeds', 'scenario']" in line
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    assert _grid(empty, tmp_path / "out") == 2
    assert "empty profile" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "out" / "cells").exists()


@pytest.mark.parametrize("value", ["-1", "0"])
def test_command_max_cells_below_one_is_refused(tmp_path, capsys, value):
    path = write_command_profile(tmp_path / "tiny.yaml")
    with pytest.raises(SystemExit) as code:
        _grid(path, tmp_path / "out", "--max-cells", value)
    assert code.value.code == 2 and "--max-cells" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_command_numerics_switch_of_garbage_is_refused(tmp_path, capsys, monkeypatch):
    path = write_command_profile(tmp_path / "tiny.yaml")
    monkeypatch.setenv("ILETS_NUMERICS", "garbage")
    for args in (["grid", *COMMAND, "--profile", str(path), "--out", str(tmp_path / "out")],
                 ["pilot", *COMMAND, "--profile", str(path), "--out", str(tmp_path / "pilot")],
                 ["verify", *COMMAND, "--results", str(tmp_path), "--sample", "1"]):
        assert main(args) == 2, args
        line = _one_line(capsys.readouterr().err)
        assert "ILETS_NUMERICS" in line and "'portable' or 'native'" in line and "'garbage'" in line
    assert not (tmp_path / "out").exists() and not (tmp_path / "pilot").exists()


def test_command_unwritable_out_is_a_one_line_error(tmp_path, capsys):
    path = write_command_profile(tmp_path / "tiny.yaml")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for cmd in ("grid", "pilot"):
        assert main([cmd, *COMMAND, "--profile", str(path), "--out", str(blocker / "out"), "--quiet"]) == 2
        line = _one_line(capsys.readouterr().err)
        assert f"--out {blocker / 'out'}" in line and "writable folder" in line


COMMAND_DAMAGE = {
    "truncated": lambda f: f.write_text(f.read_text()[:50]),
    "not-an-object": lambda f: f.write_text("[1, 2]"),
    # valid JSON saying "done", the store's fields missing: a KeyError traceback before
    "fields-missing": lambda f: f.write_text(json.dumps({"cell": f.stem, "status": "done"})),
    "scores-not-objects": lambda f: f.write_text(json.dumps({**json.loads(f.read_text()), "scores": [1, 2]})),
    "another-cell-copied-here": lambda f: f.write_text((f.parent / "lyapunov-M6-s1.json").read_text()),
}


@pytest.fixture(scope="module")
def command_reference(tmp_path_factory):
    """A finished 4-cell grid-command grid, computed once for the module; tests damage copies."""
    root = tmp_path_factory.mktemp("command-faults")
    path = write_command_profile(root / "tiny.yaml")
    assert _grid(path, root / "reference") == 0
    return path, root / "reference"


@pytest.mark.parametrize("damage", sorted(COMMAND_DAMAGE))
def test_a_damaged_command_cell_is_named_set_aside_and_recomputed(tmp_path, capsys, damage, command_reference):
    import shutil

    path, out = command_reference[0], tmp_path / "out"
    shutil.copytree(command_reference[1], out)
    capsys.readouterr()
    victim = out / "cells" / "rule-M6-s0.json"
    COMMAND_DAMAGE[damage](victim)
    # shipping and the store leave it out, without a traceback
    assert main(["ship", *COMMAND, "--results", str(out), "--to", str(tmp_path / "shipped")]) == 0
    assert json.loads(capsys.readouterr().out)["cells"] == 3
    assert not cell_pack.exists(tmp_path / "shipped" / "cells" / victim.name)  # not in its table
    assert len(cell_pack.entries(tmp_path / "shipped")) == 3
    # verifying it is refused before anything runs, naming the file
    assert main(["verify", *COMMAND, "--results", str(out), "--cell", victim.stem, "--scratch",
                 str(tmp_path / "scratch"), "--quiet"]) == 2
    assert str(victim) in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "scratch" / "cells").exists()
    # the grid names it, sets it aside and computes it again
    assert _grid(path, out) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["ran"] == 1 and str(victim) in cap.err and "Traceback" not in cap.err
    assert json.loads(victim.read_text())["cell"] == victim.stem
    assert len(pd.read_parquet(out / "store" / "results.parquet")) == 4 * 2


def test_an_interrupt_of_a_command_grid_is_one_line_and_keeps_finished_cells(tmp_path, capsys, monkeypatch):
    # before (the scenario's own runner): a 47-line traceback on Ctrl-C
    from ilets.gridcommand import pipeline

    real, calls = pipeline.run_method, []

    def interrupted(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 2:
            raise KeyboardInterrupt  # what SIGINT raises in the main thread
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run_method", interrupted)
    out = tmp_path / "out"
    assert _grid(write_command_profile(tmp_path / "tiny.yaml"), out) == 130
    assert "interrupted" in _one_line(capsys.readouterr().err)
    assert [p.name for p in (out / "cells").iterdir()] == ["rule-M6-s0.json"]  # kept; nothing half-written
    assert len(pd.read_parquet(out / "store" / "results.parquet")) == 2  # the store lists it
    assert not (out / "failed").exists()  # an interrupt is not a failure


def _pilot(profile: Path, out: Path) -> int:
    return main(["pilot", *COMMAND, "--profile", str(profile), "--out", str(out), "--quiet"])


def _fake_episode(profile, expert, options, servers, seed, regime):
    score = 1.0 / (1 + sum(v for v in options.values() if isinstance(v, (int, float))))
    return {"mean_reward": -score, "episode_reward": -100 * score, "tracking_mae_rel": score, "misses_caused": 0,
            "deferrals": 0, "cpu_s": 0.01}


def test_an_interrupt_of_the_command_pilot_is_one_line_and_keeps_finished_episodes(tmp_path, capsys, monkeypatch):
    # before (python -m ilets.gridcommand.pilot): the whole traceback on Ctrl-C
    from ilets.gridcommand import pilot as rules

    calls = []

    def interrupted(*args, **kwargs):
        calls.append(args)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return _fake_episode(*args, **kwargs)

    monkeypatch.setattr(rules, "episode", interrupted)
    out = tmp_path / "pilot"
    assert _pilot(write_command_profile(tmp_path / "tiny.yaml"), out) == 130
    assert "interrupted" in _one_line(capsys.readouterr().err)
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("row", ['{"expert": "lyapunov"}', "[1, 2]", '{"expert": "lyap'])
def test_a_damaged_pilot_row_is_a_one_line_error_naming_the_file(tmp_path, capsys, monkeypatch, row):
    from ilets.gridcommand import pilot as rules

    monkeypatch.setattr(rules, "episode", _fake_episode)
    path, out = write_command_profile(tmp_path / "tiny.yaml"), tmp_path / "pilot"
    assert _pilot(path, out) == 0
    capsys.readouterr()
    episodes = out / "episodes.jsonl"
    lines = episodes.read_text().splitlines()
    episodes.write_text("\n".join([lines[0], row, *lines[1:]]) + "\n")  # a damaged line amid finished ones
    before = episodes.read_text()
    assert _pilot(path, out) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{episodes}: line 2" in line
    assert episodes.read_text() == before  # nothing dropped or rewritten
    # shipping it is refused the same way, and a missing or damaged pilot.json too
    dest = tmp_path / "shipped"
    assert main(["ship", *COMMAND, "--results", str(out), "--to", str(dest)]) == 2
    assert f"{episodes}: line 2" in _one_line(capsys.readouterr().err) and not dest.exists()
    episodes.write_text("\n".join(lines) + "\n")
    (out / "pilot.json").write_text('{"stages": ')
    assert main(["ship", *COMMAND, "--results", str(out), "--to", str(dest)]) == 2
    assert str(out / "pilot.json") in _one_line(capsys.readouterr().err) and not dest.exists()


@pytest.mark.slow  # two `ilets grid` processes at once
def test_two_command_grids_on_one_folder_share_the_cells(tmp_path):
    # 8 cells, two grids started together: a lock makes each skip (then wait for) the other's cells
    path = write_command_profile(tmp_path / "shared.yaml", methods=["rule", "lyapunov"], seeds=[0, 1, 2, 3])
    out = tmp_path / "out"
    procs = [_cli("grid", *COMMAND, "--profile", str(path), "--out", str(out), "--quiet") for _ in range(2)]
    summaries = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        summaries.append(json.loads(stdout[stdout.find("{"):]))
    ran = [s["ran"] for s in summaries]
    assert sum(ran) == 8, f"cells computed twice (or not at all): ran {ran}"
    for s in summaries:
        assert s["ran"] + s["done_elsewhere"] + s["skipped_done"] == 8 and s["failed"] == 0
    assert len(pd.read_parquet(out / "store" / "results.parquet")) == 8 * 2
