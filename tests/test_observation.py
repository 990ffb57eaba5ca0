"""Observations are bit-identical to the recorded ones of the paper and rich layouts.

``tests/data/observations.npz`` was written by this module (``python tests/test_observation.py``)
with the code from before the observation was split into feature blocks (``env.py``'s
``StateSpec`` with its ``features == "rich"`` branches). The states come from replaying a
fixed action sequence on the tiny workload, so queues, waits and counts are all non-trivial.
Any change to a value, a dtype rounding or the order of blocks fails here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ilets.agents.env import CloudSchedulingEnv
from ilets.agents.observation import LAYOUTS, StateSpec, build_observation, write_blocks
from ilets.config import OBSERVATIONS, FleetConfig, RunConfig, WorkloadConfig
from ilets.simulator.cloud import make_fleet

GOLDEN = Path(__file__).resolve().parent / "data" / "observations.npz"
STEPS = (0, 1, 7, 40, 90, 160, 239)  # states recorded (decision indices)
SPECS = {"paper": StateSpec("paper"), "rich": StateSpec("rich"),
         "paper_scaled": StateSpec("paper", 2000.0, 3.0), "rich_scaled": StateSpec("rich", 2000.0, 3.0)}


def _config(observation: str) -> RunConfig:
    return RunConfig(workload=WorkloadConfig(scale=0.001), fleet=FleetConfig(servers=12),
                     observation=observation, seed=3).validate()


def record() -> dict[str, np.ndarray]:
    """Observations (and bounds) of every spec on the states of a fixed replay."""
    out: dict[str, np.ndarray] = {}
    for layout in ("paper", "rich"):
        env = CloudSchedulingEnv(_config(layout))
        out[f"env_high_{layout}"] = env.observation_space.high
        obs, _ = env.reset(seed=3)
        states = [obs]
        rows = {name: [] for name in SPECS}
        for j in range(max(STEPS) + 1):
            if j in STEPS:
                for name, spec in SPECS.items():
                    rows[name].append(build_observation(env.cloud, env.current_task, spec).copy())
            # piles tasks on a few servers so queues (counts, waits) build up, then spreads them
            action = (j // 3) % 3 if j < 120 else j % len(env.fleet)
            obs, *_ = env.step(action)
            states.append(obs)
        out[f"env_obs_{layout}"] = np.stack([states[j] for j in STEPS])
        if layout == "paper":
            out.update({f"built_{name}": np.stack(r) for name, r in rows.items()})
    fleet = make_fleet(FleetConfig(servers=12), 0)
    out.update({f"high_{name}": spec.high(fleet) for name, spec in SPECS.items()})
    out.update({f"size_{name}": np.array(spec.size(12)) for name, spec in SPECS.items()})
    return out


def test_observations_and_bounds_are_bit_identical_to_the_recorded_ones():
    golden = dict(np.load(GOLDEN))
    now = record()
    assert sorted(now) == sorted(golden)
    for key, want in golden.items():
        got = now[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        np.testing.assert_array_equal(got, want, err_msg=key)  # exact, not approximate


def test_the_rich_layout_writes_into_a_given_buffer():
    env = CloudSchedulingEnv(dataclasses.replace(_config("rich")))
    env.reset(seed=3)
    buf = np.full(env.state.size(len(env.fleet)), -1.0, np.float32)
    assert build_observation(env.cloud, env.current_task, env.state, buf) is buf
    np.testing.assert_array_equal(buf, env.observe())


def test_every_configurable_observation_has_a_layout_of_blocks():
    assert tuple(LAYOUTS) == OBSERVATIONS
    fleet = make_fleet(FleetConfig(servers=7), 0)
    for name, blocks in LAYOUTS.items():
        spec = StateSpec(name)
        assert spec.size(7) == sum(b.size(7) for b in blocks) == len(spec.high(fleet))


class _GridPowerCommand:
    """A new signal, as a block: the operator's power cap as a share of the fleet's peak."""

    def size(self, m: int) -> int:
        return 1

    def high(self, fleet, spec) -> np.ndarray:
        return np.array([1.0])

    def write(self, cloud, task, spec, out: np.ndarray) -> None:
        out[0] = 0.75


def test_a_new_signal_is_one_block_appended_to_a_layout():
    env = CloudSchedulingEnv(_config("paper"))
    env.reset(seed=3)
    blocks = LAYOUTS["paper"] + (_GridPowerCommand(),)
    m = len(env.fleet)
    out = np.empty(sum(b.size(m) for b in blocks), np.float32)
    write_blocks(blocks, env.cloud, env.current_task, env.state, out)
    np.testing.assert_array_equal(out[:-1], env.observe())
    assert out[-1] == np.float32(0.75)


if __name__ == "__main__":
    np.savez(GOLDEN, **record())
    print(f"wrote {GOLDEN}")
