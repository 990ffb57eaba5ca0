"""Worlds as replicates: the fleet and the event schedule change with the seed (opt-in)."""

import dataclasses

import numpy as np
import pytest

from ilets.config import MAX_EVENT_JITTER_S, ConfigError, RunConfig, WorkloadConfig
from ilets.study.profiles import Profile, Variant
from ilets.workloads.workload import RATE_SHAPE, jittered_shape, synthetic_workload


def _gaps(shape):
    """Gaps between consecutive events: trend knots are instants, bursts intervals that move whole."""
    spans = sorted([(t, t) for t, _ in shape["trend"]] + [(s, s + d) for s, d, _ in shape["bursts"]])
    return np.array([b[0] - a[1] for a, b in zip(spans, spans[1:])])


def test_the_largest_jitter_cannot_reorder_the_designed_events():
    assert 2 * MAX_EVENT_JITTER_S < _gaps(RATE_SHAPE).min()
    for seed in range(50):
        shape = jittered_shape(MAX_EVENT_JITTER_S, seed)
        order = [t for t, _ in shape["trend"]]
        assert order == sorted(order) and order[0] == 0.0 and order[-1] == 3000.0
        for (s, d, m), (s0, d0, m0) in zip(shape["bursts"], RATE_SHAPE["bursts"]):
            assert abs(s - s0) <= MAX_EVENT_JITTER_S and (d, m) == (d0, m0)
        assert shape["trend_change"] in order
        assert _gaps(shape).min() > 0


def test_event_schedules_change_with_the_seed_and_repeat_with_it():
    cfg = WorkloadConfig(scale=0.01, event_jitter_s=100.0)
    a, b, again = (synthetic_workload(cfg, s).online.meta["events"] for s in (1, 2, 1))
    assert a == again and a != b
    designed = synthetic_workload(WorkloadConfig(scale=0.01), 1)
    assert designed.online.meta["events"]["burst_0"] == RATE_SHAPE["bursts"][0][0] * 0.01
    # no jitter: the designed window, task for task
    same = synthetic_workload(WorkloadConfig(scale=0.01, event_jitter_s=0.0), 1)
    assert np.array_equal(same.online.arrival, designed.online.arrival)


def test_worlds_draw_each_cells_fleet_with_its_seed_and_keep_seed_zero_the_faithful_cell():
    p = Profile(methods=("earliest-finish",), servers=(50,), seeds=(0, 3), worlds=False,
                variants=(Variant("worlds", worlds=True),))
    main, worlds = p.cells()[:2], p.cells()[2:]
    assert [c.fleet.seed for c in main] == [0, 0] and [c.fleet.seed for c in worlds] == [0, 3]
    # seed 0's world is the faithful fleet: the same run but for the variant's name
    assert dataclasses.replace(worlds[0], variant="").digest() == main[0].digest()


@pytest.mark.parametrize("bad", [-1.0, MAX_EVENT_JITTER_S + 1])
def test_an_impossible_jitter_is_named(bad):
    with pytest.raises(ConfigError, match=r"workload.event_jitter_s"):
        RunConfig(workload=WorkloadConfig(event_jitter_s=bad)).validate("run")


def test_jitter_is_left_out_of_the_digest_at_its_default():
    from ilets.config import digest_of, to_dict

    plain = to_dict(RunConfig())
    before = {**plain, "workload": {k: v for k, v in plain["workload"].items() if k != "event_jitter_s"}}
    assert RunConfig().digest() == digest_of(before)  # a config written before the field existed
    assert RunConfig().digest() != dataclasses.replace(RunConfig(),
                                                       workload=WorkloadConfig(event_jitter_s=10.0)).digest()


def test_the_worlds_profile_varies_worlds_and_runs_the_per_server_grids_settings():
    from ilets.config import to_dict
    from ilets.study.profiles import load_profile

    worlds, grid = load_profile("worlds"), load_profile("per-server")
    cells = worlds.cells()
    assert all(c.fleet.seed == c.seed and c.workload.event_jitter_s > 0 for c in cells)
    per_server = [c for c in cells if c.variant == "per-server"]
    assert per_server and {c.method for c in per_server} == {"drl", "drl+"}
    mine = to_dict(per_server[0])
    for section in ("oinpt", "ppo", "finetune"):
        assert mine[section] == to_dict(grid.run)[section], section
    assert (per_server[0].policy, per_server[0].observation) == (grid.run.policy, grid.run.observation)


def test_shipped_event_records_keep_their_keys():
    """events.json of the shipped grids is keyed by the workload as it was shipped: the new
    jitter field at its default must not change the key (or every chapter rebuilds workloads)."""
    import json
    from pathlib import Path

    from ilets.study.profiles import load_profile
    from ilets.study.workload_events import workload_key

    root = Path(__file__).resolve().parents[1] / "shipped"
    for name in ("paper", "pilot"):
        events = root / name / "events.json"
        if not events.is_file():
            pytest.skip(f"no shipped/{name}/events.json in this checkout")
        keys = set(json.loads(events.read_text()).get("workloads", json.loads(events.read_text())))
        assert workload_key(load_profile(name).run.workload) in keys, name
    jittered = dataclasses.replace(load_profile("paper").run.workload, event_jitter_s=50.0)
    assert workload_key(jittered) != workload_key(load_profile("paper").run.workload)
