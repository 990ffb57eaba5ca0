"""Shipped results: compact copies with provenance read from the cells' own records."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from ilets import cell_pack
from ilets.study.grid import run_grid
from ilets.study.profiles import load_profile
from ilets.study.results import load_metrics
from ilets.study.shipping import PROVENANCE, load_provenance, provenance_line, ship


def test_shipped_latency_samples_are_thinned_evenly(tmp_path):
    from ilets.study.shipping import thin_latency_samples

    np.savez_compressed(tmp_path / "big.npz", seconds=np.arange(10_001, dtype=float))
    thin_latency_samples(tmp_path / "big.npz", tmp_path / "thin.npz", limit=2000)
    with np.load(tmp_path / "thin.npz") as z:
        assert int(z["every"]) == 6 and len(z["seconds"]) == 1667
        np.testing.assert_array_equal(z["seconds"], np.arange(0, 10_001, 6))
    np.savez_compressed(tmp_path / "small.npz", seconds=np.arange(5, dtype=float))
    thin_latency_samples(tmp_path / "small.npz", tmp_path / "same.npz", limit=2000)
    with np.load(tmp_path / "same.npz") as z:
        assert int(z["every"]) == 1 and len(z["seconds"]) == 5
    # thinned again (a shipped cell shipped again): the same file, its k kept
    thin_latency_samples(tmp_path / "thin.npz", tmp_path / "again.npz", limit=2000)
    assert (tmp_path / "again.npz").read_bytes() == (tmp_path / "thin.npz").read_bytes()


def test_ship_copies_the_store_and_cells_without_models_and_records_provenance(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text("name: tiny\nmethods: [drl, earliest-finish]\nservers: [10]\nseeds: [0]\nworkers: 1\n"
                    "run: {workload: {scale: 0.001}, ppo: {n_steps: 64}}\n")
    out = tmp_path / "results"
    run_grid(load_profile(path), out, workers=1, progress=False)
    assert list(out.glob("cells/*/model.zip"))  # the learner's model exists in the grid folder
    from ilets.numerics import record

    for system in out.glob("cells/*/system.json"):  # what each cell's numerics were
        assert json.loads(system.read_text())["numerics"]["effective"] == record()["effective"]
    info = ship(out, tmp_path / "shipped", note="test")
    shipped = tmp_path / "shipped"
    # the cells are one table (ilets.cell_pack): every file as the grid wrote it, but the model
    # and the latency samples (thinned, the same samples here: fewer than LATENCY_SAMPLES)
    assert (shipped / cell_pack.PACK).is_file() and not (shipped / "cells").exists()
    assert cell_pack.entries(shipped) == sorted(p.name for p in out.glob("cells/*"))
    for name, files in cell_pack.contents(shipped).items():
        cell = out / "cells" / name
        assert sorted(files) == sorted(p.relative_to(cell).as_posix() for p in cell.rglob("*")
                                       if p.is_file() and p.name != "model.zip")
        assert {f: b for f, b in files.items() if f != "decisions.npz"} == \
            {f: (cell / f).read_bytes() for f in files if f != "decisions.npz"}
        with np.load(io.BytesIO(files["decisions.npz"])) as thin, np.load(cell / "decisions.npz") as full:
            np.testing.assert_array_equal(thin["seconds"], full["seconds"])
    # shipped again, the table is the same bytes (a repeated ship changes no committed byte), and
    # so is a shipped folder shipped again (the latency samples are thinned once)
    ship(out, tmp_path / "again", note="test")
    assert (tmp_path / "again" / cell_pack.PACK).read_bytes() == (shipped / cell_pack.PACK).read_bytes()
    ship(tmp_path / "again", tmp_path / "twice", note="test")
    assert (tmp_path / "twice" / cell_pack.PACK).read_bytes() == (shipped / cell_pack.PACK).read_bytes()
    pd.testing.assert_frame_equal(load_metrics(shipped), load_metrics(out))
    saved = json.loads((shipped / PROVENANCE).read_text())
    assert saved == load_provenance(shipped) == info
    assert info["cells"] == 2 and info["note"] == "test" and 0 < info["size_mb"] < 1
    assert info["cpu_hours"] > 0 and info["first_start_utc"] <= info["last_start_utc"]
    from ilets.host import source_version

    here = source_version()  # the cells record this checkout's commit, or none outside one
    expected = (here["commit"] or "unrecorded") + ("+dirty" if here["dirty"] else "")
    assert info["commits"] == {expected: 2}
    line = provenance_line(info)
    assert "2 cells" in line and "CPU-hours" in line
    # a shipped folder copied back: the grid finds its packed cells done and runs none
    resumed = tmp_path / "resumed"
    shutil.copytree(shipped, resumed)
    summary = run_grid(load_profile(path), resumed, workers=1, progress=False)
    assert (summary["ran"], summary["skipped_done"]) == (0, 2) and not (resumed / "cells").exists()
    pd.testing.assert_frame_equal(load_metrics(resumed), load_metrics(out))
    # a shipped folder copied back and grown by a grid: its provenance is the cells' own now
    grown = tmp_path / "grown"
    shutil.copytree(shipped, grown)
    shutil.copytree(next(out.glob("cells/drl-*")), grown / "cells" / "drl-copy")
    now = load_provenance(grown)
    assert now["cells"] == 3 and now["note"] == "test" and now["cpu_hours"] > info["cpu_hours"]


def test_provenance_tells_machines_of_one_model_name_apart(tmp_path):
    from ilets.host import cpu_id, machine_label
    from ilets.study.shipping import provenance

    records = {"old": {"cpu_model": "AMD EPYC", "cores": 2},  # before cpu_id was recorded
               "new1": {"cpu_model": "AMD EPYC", "cores": 2, "cpu_id": "family 26 model 2 stepping 1"},
               "new2": {"cpu_model": "AMD EPYC", "cores": 2, "cpu_id": "family 26 model 2 stepping 1"}}
    for name, system in records.items():
        (tmp_path / "cells" / name).mkdir(parents=True)
        (tmp_path / "cells" / name / "system.json").write_text(json.dumps(system))
        (tmp_path / "cells" / name / "metrics.json").write_text(json.dumps({"cpu_s": 3600.0, "wall_s": 3600.0}))
    info = provenance(tmp_path)
    # the older record's label, and the newer ones' with their cpu_id in parentheses
    old, new = "AMD EPYC x 2 cores", f"AMD EPYC ({records['new1']['cpu_id']}) x 2 cores"
    assert info["machines"] == {old: 1, new: 2}
    line = provenance_line({**info, "first_start_utc": None})
    assert f"on {new} (2); {old} (1)," in line
    assert machine_label("X", 4) == "X x 4 cores"
    # this machine's, as every new cell records it: "" exactly when /proc/cpuinfo lists no family
    from ilets.host import cpuinfo

    assert (cpu_id() == "") == ("cpu family" not in cpuinfo())
    if cpu_id():
        assert cpu_id().startswith("family ")


def test_every_shipped_folder_keeps_provenance_in_the_one_schema():
    """Every shipped folder's PROVENANCE.json carries what ilets.host.provenance_of writes
    (a folder whose units are not grid cells adds its own counts beside them)."""
    from ilets.host import ComputeRecord, provenance_of

    keys = set(provenance_of([ComputeRecord("c", False, "cpu", 2, "", "portable", None, 1.0, 1.0)]))
    root = Path(__file__).resolve().parents[1] / "shipped"
    found = sorted(root.glob("*/PROVENANCE.json"))
    assert len(found) >= 10
    for path in found:
        prov = json.loads(path.read_text())
        assert keys <= set(prov), f"{path}: missing {sorted(keys - set(prov))}"
        assert all(isinstance(prov[k], dict) for k in ("commits", "machines", "numerics")), path
