"""OINPT's cloning report: top-k agreement and one-step regret, on the demonstrations and held out."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th

from ilets.agents.env import StateSpec
from ilets.agents.oinpt import Demonstrations, cloning_report, collect_demonstrations
from ilets.simulator.cloud import make_fleet
from ilets.workloads.workload import load_workload


class FixedPolicy:
    """A stand-in policy whose masked action probabilities are given."""

    def __init__(self, probs: np.ndarray) -> None:
        self.probs = th.as_tensor(probs)

    def get_distribution(self, obs, action_masks=None):
        class D:
            pass
        d = D()
        d.distribution = th.distributions.Categorical(probs=self.probs[: len(obs)])
        return d


def demos(acts, costs) -> Demonstrations:
    n, m = np.shape(costs)
    return Demonstrations(obs=np.zeros((n, 2), np.float32), acts=np.asarray(acts), masks=np.ones((n, m), bool),
                          rewards=np.zeros(n, np.float32), experts=np.array(["ga"] * n),
                          action_costs=np.asarray(costs, np.float32))


def test_top_k_and_regret_hand_computed():
    costs = [[1.0, 2.0, 4.0], [3.0, 1.0, 2.0]]
    d = demos([0, 1], costs)  # the expert takes the cheapest server both times
    d.heldout = demos([2], [[1.0, 5.0, 3.0]])
    probs = np.array([[0.2, 0.5, 0.3], [0.1, 0.6, 0.3]])
    report = cloning_report(FixedPolicy(probs), d)
    # decision 0: the clone's top is server 1 (cost 2, expert's 1): regret 1, expert 2nd of 3
    # decision 1: the clone agrees: regret 0
    assert report["bc_top1_train"] == 0.5 and report["bc_top3_train"] == 1.0
    assert report["bc_regret_train"] == pytest.approx(0.5)
    assert report["bc_regret_rel_train"] == pytest.approx(0.5 / 1.0)
    # held out: the clone's top is server 1 (cost 5) against the expert's server 2 (cost 3)
    assert report["bc_top1_heldout"] == 0.0 and report["bc_regret_heldout"] == pytest.approx(2.0)


def test_demonstrations_carry_every_servers_cost_and_held_out_states(tiny_config):
    cfg = tiny_config
    wl, fleet = load_workload(cfg.workload, 0), make_fleet(cfg.fleet, 0)
    args = (wl.offline, fleet, "greedy", cfg.experts, cfg.reward, 90, 0, StateSpec.of(cfg))
    d = collect_demonstrations(*args, heldout=60)
    assert len(d) == 90 and len(d.heldout) == 60
    rows = np.arange(len(d))
    chosen = d.action_costs[rows, d.acts]
    # greedy picks the cheapest feasible server one step at a time: its choice is the minimum
    np.testing.assert_allclose(chosen, d.action_costs.min(axis=1), rtol=0, atol=1e-6)
    assert np.isinf(d.action_costs[~d.masks]).all()
    # the training decisions do not depend on how many are held out
    alone = collect_demonstrations(*args, heldout=0)
    np.testing.assert_array_equal(alone.acts, d.acts)
    np.testing.assert_array_equal(alone.obs, d.obs)
