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
    from ilets.agents.oinpt import Demonstrations, collect_demonstrations, content_digest

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
