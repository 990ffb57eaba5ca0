"""OAIL's emulators start with the experts' kernels loaded, and that changes no plan.

:meth:`OAILCallback._new_pool` loads the compiled kernels (:func:`ilets.agents.experts.registry.warm_up`)
before it forks its workers, so that a worker's first request no longer pays for loading them.
These tests pin that the plans an emulator returns are, bit for bit, the plans a direct call
computes on the same snapshot, window and seed, and that warming up touches no caller's state.
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np

import ilets.agents.experts.registry as experts
from ilets.agents.experts import make_expert, plan_window, small_case, window_from_table
from ilets.agents.emulator import EmulatorRequest, run_emulator
from ilets.agents.oail import OAILCallback
from ilets.agents.observation import StateSpec
from ilets.agents.policies import EarliestFinish
from ilets.simulator.cloud import Cloud, make_fleet
from ilets.study.profiles import method_defaults
from ilets.workloads.workload import load_workload

#: ExpertPlan fields that are results (``seconds`` is a wall time)
PLAN_FIELDS = ("expert", "assignment", "cost", "task_costs", "rewards", "misses", "observations", "masks",
               "evaluations", "action_costs")


def assert_same_plans(got: list, want: list) -> None:
    """Every result field of every plan identical, bit for bit."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for name in PLAN_FIELDS:
            a, b = getattr(g, name), getattr(w, name)
            if isinstance(b, np.ndarray):
                assert a.dtype == b.dtype and np.array_equal(a, b), f"{w.expert}.{name} differs"
            else:
                assert a == b, f"{w.expert}.{name}: {a!r} != {b!r}"


def oail_snapshot(cfg, placed: int) -> tuple[Cloud, list]:
    """An emulator copy as OAIL takes it for a past window: the tiny workload's online tasks
    scheduled by Earliest-Finish up to ``placed``, copied before the next ``cfg.experts.window``."""
    tasks = load_workload(cfg.workload, 0).online
    fleet = make_fleet(cfg.fleet, 0)
    cloud = Cloud(fleet, t0=float(tasks.arrival[0]), record=False)
    policy = EarliestFinish()
    window = window_from_table(tasks, placed, placed + cfg.experts.window)
    for task in window_from_table(tasks, 0, placed):
        cloud.advance(task.arrival)
        cloud.assign(task.index, task.arrival, task.cpu, task.length, task.deadline,
                     policy.act(cloud, task, cloud.feasible(task.cpu)))
    return cloud.emulator_copy(window[-1].arrival), window


def requests(tiny_config) -> list[EmulatorRequest]:
    """Requests with the study's expert settings (30-task windows, GA 32x30, PSO 32x30) on
    OAIL-style snapshots of a loaded 10-server cloud, and GA/PSO on small loaded cases."""
    cfg = dataclasses.replace(tiny_config, experts=method_defaults().experts)
    state = StateSpec.of(cfg)
    out = []
    for rid, placed in enumerate((200, 450), 1):
        cloud, window = oail_snapshot(cfg, placed)
        out.append(EmulatorRequest(rid, placed + 30, cloud, window, ("ga", "pso"), cfg.experts, cfg.reward,
                                   state, 1_000_003 + rid))
    for rid in (3, 4):
        cloud, window = small_case(rid, servers=5, window=8, background=15)
        out.append(EmulatorRequest(rid, 0, cloud, window, ("ga", "pso", "greedy"), cfg.experts, cfg.reward,
                                   state, rid))
    return out


def direct(req: EmulatorRequest) -> list:
    """The experts' plans computed in this process, without the emulator."""
    planners = [make_expert(n, req.experts_cfg, req.reward, req.state) for n in req.experts]
    return plan_window(planners, req.cloud, req.window, np.random.default_rng(req.seed))


def worker_state() -> tuple[bool, int]:
    """In a worker, before any request: whether it is warm and how many kernel signatures it holds."""
    from ilets.agents import expert_kernels as k

    kernels = (k.schedule_plans, k.standalone_starts, k.pso_move, k.decode_scores, k.pso_shake, k.keep_better)
    return experts._WARM, min(len(f.signatures) for f in kernels)


def test_emulator_plans_are_the_direct_plans_bit_for_bit(tiny_config):
    reqs = requests(tiny_config)
    want = [direct(r) for r in reqs]  # before the pool exists
    callback = OAILCallback(tiny_config.oail, tiny_config.experts, tiny_config.reward, seed=0)
    pool = callback._new_pool()
    try:
        warm, signatures = pool.submit(worker_state).result(timeout=60)
        # a request travels pickled, as OAIL sends it
        got = [pool.submit(run_emulator, pickle.loads(pickle.dumps(r))).result(timeout=60) for r in reqs]
    finally:
        callback._stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
    assert warm and signatures >= 1, "the worker was forked before the kernels were loaded"
    for r, result, plans in zip(reqs, got, want):
        assert result.rid == r.rid
        assert_same_plans(result.plans, plans)
    assert_same_plans(run_emulator(reqs[0]).plans, want[0])  # and in this (warm) process


def test_warm_up_changes_no_state_and_no_plan(tiny_config, monkeypatch):
    req = requests(tiny_config)[0]
    before = direct(req)
    np.random.seed(7)
    global_rng = np.random.get_state()[1].copy()
    monkeypatch.setattr(experts, "_WARM", False)  # as in a process that has not warmed up
    experts.warm_up()
    assert experts._WARM
    assert np.array_equal(np.random.get_state()[1], global_rng)  # numpy's global stream untouched
    snapshot = pickle.dumps((req.cloud, req.window))
    assert_same_plans(direct(req), before)
    assert pickle.dumps((req.cloud, req.window)) == snapshot  # the snapshot is not mutated


def test_a_forking_pool_loads_the_kernels_before_it_forks(tiny_config, monkeypatch):
    monkeypatch.setattr(experts, "_WARM", False)  # as in a process that has not run an expert
    callback = OAILCallback(tiny_config.oail, tiny_config.experts, tiny_config.reward, seed=0, mp_context="fork")
    pool = callback._new_pool()
    callback._stop.set()
    pool.shutdown(wait=True, cancel_futures=True)
    assert experts._WARM  # so every worker it forks (and every replacement pool) inherits them
