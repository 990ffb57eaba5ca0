"""The aggregate a clone learns from (:mod:`ilets.gridcommand.aggregate`): in memory, in a
temporary file and in a folder that a killed clone resumes from; and the global random states
a resumed clone sets back (:mod:`ilets.random_state`)."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
import torch as th

from ilets import random_state
from ilets.agents.oinpt import Demonstrations
from ilets.gridcommand.aggregate import (FILE_HEADROOM, PROGRESS, SPILL_SHARE, Aggregate, AggregateFolderError,
                                        aggregate_memory_limit)


def part(n: int, start: int, expert: str = "lyapunov") -> Demonstrations:
    return Demonstrations(obs=np.arange(start, start + 3 * n, dtype=np.float32).reshape(n, 3),
                          acts=np.arange(start, start + n, dtype=np.int64), masks=np.ones((n, 2), bool),
                          rewards=np.full(n, -1.0, np.float32), experts=np.array([expert] * n), seconds=0.5)


def test_the_aggregate_holds_the_joined_decisions_in_order_and_grows_in_place():
    parts = [part(2, 0), part(3, 100), part(4, 200, "thermostat-firm")]  # past the capacity, a longer name
    aggregate = Aggregate(capacity=3)
    for p in parts:
        aggregate.add(p)
    joined = aggregate.view()
    assert len(aggregate) == len(joined) == 9 and joined.seconds == 1.5
    for name in ("obs", "acts", "masks", "rewards", "experts"):
        expected = np.concatenate([getattr(p, name) for p in parts])
        assert np.array_equal(getattr(joined, name), expected), name
        assert getattr(joined, name).dtype == expected.dtype, name
    assert np.array_equal(aggregate.view(2, 5).acts, [100, 101, 102])
    # a view taken before the aggregate grows keeps its values
    early = Aggregate(capacity=2)
    early.add(parts[0])
    first = early.view()
    early.add(parts[1])
    assert np.array_equal(first.acts, [0, 1]) and len(early.view()) == 5
    # kept in a file (its estimate past the memory limit): the same values, grown the same way
    spilled = Aggregate(capacity=3, memory_limit=0)
    for p in parts:
        spilled.add(p)
    assert spilled.file_backed and isinstance(spilled.view().obs, np.memmap)
    for name in ("obs", "acts", "masks", "rewards", "experts"):
        assert np.array_equal(getattr(spilled.view(), name), getattr(joined, name)), name
    roomy = Aggregate(capacity=3, memory_limit=10**9)
    roomy.add(parts[0])
    assert not roomy.file_backed and not isinstance(roomy.view().obs, np.memmap)


def test_the_aggregates_memory_limit_is_half_the_memory_available_now(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   16000000 kB\n")
    assert aggregate_memory_limit(meminfo) == int(SPILL_SHARE * 16_000_000 * 1024)
    # no MemAvailable (or no file): the share of the physical memory
    physical = int(SPILL_SHARE * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    meminfo.write_text("MemTotal:       24000000 kB\n")
    assert aggregate_memory_limit(meminfo) == physical == aggregate_memory_limit(tmp_path / "absent")



def test_a_folders_aggregate_reopens_as_its_last_record_left_it(tmp_path):
    parts = [part(2, 0), part(3, 100), part(4, 200, "thermostat-firm")]  # past the capacity, a longer name
    folder = tmp_path / "partial"
    kept = Aggregate(capacity=3, folder=folder)
    assert Aggregate.reopen(folder) is None  # nothing recorded yet
    kept.add(parts[0])
    kept.add(parts[1], agreed=np.array([True, False, True]))
    kept.commit({"phase": 0, "played": 2, "share": np.float32(0.5)})  # a numpy number, written as a plain one
    kept.add(parts[2])  # grown and widened, never recorded: a kill here
    # the recorded generation's files stay beside the new one's
    assert {p.name for p in folder.glob("obs-*.npy")} == {"obs-1.npy", "obs-2.npy"}
    back, state = Aggregate.reopen(folder)
    assert state == {"phase": 0, "played": 2, "share": 0.5} and len(back) == 5 and back.seconds == 1.0
    memory = Aggregate(capacity=3)
    for p in parts[:2]:
        memory.add(p)
    for name in ("obs", "acts", "masks", "rewards", "experts"):
        assert np.array_equal(getattr(back.view(), name), getattr(memory.view(), name)), name
    assert back.agreed().tolist() == [True, True, True, False, True]
    # going on from the record: the rows past it are written again, and the record moves on
    back.add(parts[2])
    back.commit({"phase": 1, "played": 0})
    memory.add(parts[2])
    again, state = Aggregate.reopen(folder)
    assert state["phase"] == 1 and len(again) == 9
    for name in ("obs", "acts", "experts"):
        assert np.array_equal(getattr(again.view(), name), getattr(memory.view(), name)), name
    # only the recorded generation's columns are left on disk
    generation = json.loads((folder / PROGRESS).read_text())["generation"]
    assert {p.name for p in folder.glob("*.npy")} == {f"{c}-{generation}.npy" for c in
                                                     ("obs", "acts", "masks", "rewards", "experts", "agreed")}
    # without a folder, a record writes nothing
    Aggregate(capacity=3).commit({"phase": 0})


def test_a_damaged_folder_is_refused_with_its_name(tmp_path):
    folder = tmp_path / "partial"
    kept = Aggregate(capacity=3, folder=folder)
    kept.add(part(2, 0))
    kept.commit({})
    (folder / PROGRESS).write_text("{not json")
    with pytest.raises(AggregateFolderError, match="partial: .*read the aggregate back"):
        Aggregate.reopen(folder)
    kept.commit({})
    record = json.loads((folder / PROGRESS).read_text())
    (folder / PROGRESS).write_text(json.dumps({**record, "version": 0}))
    with pytest.raises(AggregateFolderError, match="version 0, expected 1"):
        Aggregate.reopen(folder)
    kept.commit({})
    (folder / "masks-0.npy").unlink()
    with pytest.raises(AggregateFolderError, match="FileNotFoundError"):
        Aggregate.reopen(folder)


def test_the_global_random_states_are_set_back_as_captured():
    th.manual_seed(3)
    np.random.seed(4)
    random.seed(5)
    th.rand(2), np.random.rand(), np.random.randn(), random.random()  # a state part-way along
    saved = json.loads(json.dumps(random_state.capture()))  # as a progress record keeps it
    ahead = (th.rand(4), np.random.rand(3), np.random.randn(), random.random())
    th.manual_seed(0), np.random.seed(0), random.seed(0)
    random_state.restore(saved)
    again = (th.rand(4), np.random.rand(3), np.random.randn(), random.random())
    assert th.equal(ahead[0], again[0]) and np.array_equal(ahead[1], again[1]) and ahead[2:] == again[2:]


def _vm_flags(array: np.ndarray) -> set[str]:
    """The kernel's flags of the mapping that holds ``array``'s first byte (``/proc/self/smaps``;
    ``rr``: read at random, no read-ahead)."""
    address, inside = array.ctypes.data, False
    for line in open("/proc/self/smaps"):
        first = line.split()[0] if line.strip() else ""
        if "-" in first and all(c in "0123456789abcdef-" for c in first):  # a mapping's header line
            lo, hi = (int(x, 16) for x in first.split("-"))
            inside = lo <= address < hi
        elif inside and line.startswith("VmFlags:"):
            return set(line.split()[1:])
    raise AssertionError(f"no mapping holds address {address:#x}")


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads the kernel's flags from /proc (Linux)")
def test_random_reads_turns_read_ahead_off_for_the_columns_on_disk_and_back_on(tmp_path):
    kept = Aggregate(capacity=3, folder=tmp_path / "partial")
    spilled = Aggregate(capacity=3, memory_limit=0)  # its observations in an unlinked temporary file
    memory = Aggregate(capacity=3)
    for aggregate in (kept, spilled, memory):
        aggregate.add(part(3, 0))
    before = kept.view().obs.copy()
    columns = {"kept": [kept.view().obs, kept.view().acts, kept.view().masks, kept.agreed()],
               "spilled": [spilled.view().obs]}
    for aggregate, name in ((kept, "kept"), (spilled, "spilled")):
        assert all("rr" not in _vm_flags(c) for c in columns[name]), name
        with aggregate.random_reads():
            assert all("rr" in _vm_flags(c) for c in columns[name]), name  # every column on disk
            assert np.array_equal(aggregate.view().obs, before)  # the same values, read without read-ahead
        assert all("rr" not in _vm_flags(c) for c in columns[name]), name
    with memory.random_reads():  # in memory: nothing to advise
        assert np.array_equal(memory.view().obs, before)


def test_an_aggregate_in_files_takes_room_past_its_estimate_without_taking_disk(tmp_path):
    # a buffer that outgrows its estimate is copied whole beside its old files: the sparse
    # files take room past the estimate instead, which costs no disk until rows are written
    wide = Demonstrations(obs=np.ones((10, 4096), np.float32), acts=np.zeros(10, np.int64), masks=np.ones((10, 2), bool),
                          rewards=np.zeros(10, np.float32), experts=np.array(["lyapunov"] * 10), seconds=0.0)
    kept = Aggregate(capacity=1000, folder=tmp_path / "partial")
    spilled = Aggregate(capacity=1000, memory_limit=0)
    memory = Aggregate(capacity=1000)
    for aggregate in (kept, spilled, memory):
        aggregate.add(wide)
    assert len(kept._arrays["obs"]) == len(spilled._arrays["obs"]) == 1000 + int(1000 * FILE_HEADROOM)
    assert len(memory._arrays["obs"]) == 1000  # in memory: the estimate
    obs = tmp_path / "partial" / "obs-0.npy"
    assert os.stat(obs).st_blocks * 512 < 0.1 * obs.stat().st_size  # only the written rows are on disk
