"""The slot's meter shown to a learner (``observe_slot``): the environment keeps exactly the
thermostat expert's projection of the current slot's average power, writes it against the
target in bands as one more block (the default's observation and digests:
test_gridcommand_queues)."""

from __future__ import annotations

import numpy as np
import pytest

from ilets.gridcommand import episodes as EP
from ilets.gridcommand.config import load_gridcommand_config
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts import ReferenceExpert, ThermostatExpert
from ilets.gridcommand.features import SLOT_ERROR_BANDS, grid_size
from ilets.gridcommand.slot_meter import SlotMeter
from test_gridcommand_queues import scenario  # noqa: F401  (the fixture: one event the tiny fleet cannot fully follow)


def test_the_meter_integrates_samples_by_trapezoids_and_holds_across_an_edge():
    meter, edges = SlotMeter(), np.array([0.0, 1.0, 2.0])
    assert meter.projected(edges, 0.2, 100.0) == pytest.approx(100.0)  # the first sample: its power all slot
    # 100 W for 0.2 s, the trapezoid 100 -> 200 W over 0.4 s, then 200 W for the last 0.4 s
    assert meter.projected(edges, 0.6, 200.0) == pytest.approx(100 * 0.2 + 150 * 0.4 + 200 * 0.4)
    assert meter.projected(edges, 1.5, 50.0) == pytest.approx(200 * 0.5 + 50 * 0.5)  # the last power held in
    meter.reset()
    assert meter.projected(edges, 1.5, 50.0) == pytest.approx(50.0)


def test_the_env_keeps_the_thermostats_meter_and_shows_it_in_bands(scenario):  # noqa: F811  (the fixture)
    base = load_gridcommand_config(scenario, observe_slot=True)
    env = GridCommandEnv(EP.evaluation_config(base, "shallow-long", 6, 0))
    assert env.observation_space.shape == (2 * 6 + 2 + grid_size(observe_slot=True),)
    expert, baseline = ThermostatExpert(), ReferenceExpert()
    obs, _ = env.reset(seed=0)
    expert.reset()
    seen = {"above": False, "below": False}
    done = False
    while not done:
        assert expert.projected_slot_power(env) == env.slot_projection  # the same samples, the same sums
        c = env.active_command
        if c is None:
            np.testing.assert_array_equal(obs[-2:], np.float32([0.0, 0.0]))
        else:
            bands = (env.slot_projection - env.target_now) / c.band_w(env.baseline_now)
            want = np.float32([min(1.0, max(0.0, bands) / SLOT_ERROR_BANDS), min(1.0, max(0.0, -bands) / SLOT_ERROR_BANDS)])
            np.testing.assert_allclose(obs[-2:], want, rtol=1e-6)
            seen["above" if bands > 0 else "below"] = True
        obs, _, term, trunc, _ = env.step(baseline.act(env))  # the counterfactual's own choices
        done = term or trunc
    assert seen["above"]  # ignoring the cut leaves the slot above its target
