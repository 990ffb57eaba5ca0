"""Measurement tables of the experts: time per call, saving over greedy, optimality gap.

Shared by ``benchmarks/bench_experts.py`` and the experts chapter; kept out of
:mod:`ilets.agents.experts` so that the algorithm package holds algorithms only.

Snapshots [ours]: the online segment of the synthetic window is scheduled by earliest-finish
(a good heuristic, so the queues are those a decent scheduler leaves) and the cloud is copied
at chosen points. :func:`paper_snapshots` picks, at the paper's full scale, a *light* moment
(early in the online window) and the most *loaded* one (the largest number of queued tasks in
the first ``horizon`` tasks, which hold the window's instant bursts).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ilets.agents.experts import (EXPERTS, ExpertPlan, exact_optimum, make_expert, plan_window, small_case,
                                 window_from_table)
from ilets.config import ExpertConfig, RewardConfig
from ilets.expert_table import REFERENCE_EXPERT, SEARCH_EXPERTS
from ilets.simulator.cloud import Cloud
from ilets.simulator.objective import Task



def loaded_snapshots(servers: int, stops: list[int], window: int, scale: float = 0.02,
                     seed: int = 0) -> list[tuple[Cloud, list[Task]]]:
    """Snapshots of a ``servers``-server cloud, each with the next ``window`` tasks.

    The online segment of ``synthetic_workload(WorkloadConfig(scale=scale), seed)`` is
    scheduled by earliest-finish; after the first ``stops[k]`` tasks (increasing) the cloud
    is cloned, advanced to the next task's arrival, and returned with that window.
    """
    from ilets.agents.policies import EarliestFinish
    from ilets.config import FleetConfig, WorkloadConfig
    from ilets.simulator.cloud import make_fleet
    from ilets.workloads.workload import synthetic_workload

    tasks = synthetic_workload(WorkloadConfig(scale=scale), seed).online
    cloud = Cloud(make_fleet(FleetConfig(servers=servers), seed), t0=float(tasks.arrival[0]), record=False)
    policy = EarliestFinish()
    out, done = [], 0
    for stop in stops:
        for task in window_from_table(tasks, done, stop):
            cloud.advance(task.arrival)
            cloud.assign(task.index, task.arrival, task.cpu, task.length, task.deadline,
                         policy.act(cloud, task, cloud.feasible(task.cpu)))
        done = stop
        win = window_from_table(tasks, stop, stop + window)
        snap = cloud.clone()
        snap.advance(win[0].arrival)
        out.append((snap, win))
    return out


def timing_table(cfg: ExpertConfig, reward: RewardConfig, sizes: list[int], stops: list[int],
                 repeats: int, experts: tuple[str, ...] = EXPERTS) -> list[dict]:
    """Cost per expert call on :func:`loaded_snapshots` windows of ``cfg.window`` tasks.

    One row per (fleet size, expert): median and p90 wall ms per call, median CPU ms (not
    inflated by other processes on a shared host), the ratio of median wall time to the
    greedy expert's in the same run (greedy is always timed), the mean and max relative
    cost saving over greedy's plan (exact costs), the number of calls, and the snapshots'
    mean CPU utilisation. Each expert is called ``repeats`` times per snapshot with seeds
    ``1000 * snapshot + repeat``, after one untimed warm-up call. Greedy is the expert table's
    reference (:data:`ilets.expert_table.REFERENCE_EXPERT`).
    """
    names = tuple(dict.fromkeys((*experts, REFERENCE_EXPERT)))
    rows = []
    for m in sizes:
        snaps = loaded_snapshots(m, stops, cfg.window)
        util = float(np.mean([s.used.sum() / s.fleet.capacity.sum() for s, _ in snaps]))
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        costs: dict[str, list[float]] = {n: [] for n in names}
        for n in names:
            expert = make_expert(n, cfg, reward)
            expert.plan(*snaps[0], np.random.default_rng(0))  # warm caches and imports
            for i, (cloud, win) in enumerate(snaps):
                for r in range(repeats):
                    t0, c0 = time.perf_counter(), time.process_time()
                    plan = expert.plan(cloud, win, np.random.default_rng(1000 * i + r))
                    wall[n].append(time.perf_counter() - t0)
                    cpu[n].append(time.process_time() - c0)
                    costs[n].append(plan.cost)
        greedy_ms = 1e3 * float(np.median(wall[REFERENCE_EXPERT]))
        greedy_cost = np.array(costs[REFERENCE_EXPERT])
        for n in experts:
            ms = 1e3 * float(np.median(wall[n]))
            saving = (greedy_cost - np.array(costs[n])) / greedy_cost
            rows.append({"servers": m, "expert": n, "ms_per_call": ms,
                         "ms_p90": 1e3 * float(np.quantile(wall[n], 0.9)),
                         "cpu_ms_per_call": 1e3 * float(np.median(cpu[n])),
                         "ratio_to_greedy": ms / greedy_ms, "mean_saving_vs_greedy": float(saving.mean()),
                         "max_saving_vs_greedy": float(saving.max()), "calls": len(wall[n]), "cpu_util": util})
    return rows


def gap_cases(cfg: ExpertConfig, reward: RewardConfig, cases: int,
              experts: tuple[str, ...] = EXPERTS) -> list[dict]:
    """Each expert's relative gap to :func:`exact_optimum` on ``cases`` small loaded cases.

    Case ``k`` is ``small_case(k, servers=3 + k % 3, window=4 + k % 3, background=3 * servers)``
    (3-5 servers, 4-6 tasks); each expert plans it with ``default_rng(k)``. One row per
    (case, expert): servers, tasks, the expert's cost, the optimum's, the gap
    ``(cost - optimum) / optimum`` and the enumeration's wall ms (the same for every expert
    of a case).
    """
    planners = {n: make_expert(n, cfg, reward) for n in experts}
    rows = []
    for k in range(cases):
        m, w = 3 + k % 3, 4 + k % 3
        cloud, win = small_case(k, servers=m, window=w, background=3 * m)
        t0 = time.perf_counter()
        opt = exact_optimum(cloud, win, reward, cfg.miss_penalty)
        opt_ms = 1e3 * (time.perf_counter() - t0)
        for n, expert in planners.items():
            cost = expert.plan(cloud, win, np.random.default_rng(k)).cost
            rows.append({"case": k, "servers": m, "tasks": w, "expert": n, "cost": cost, "optimum": opt.cost,
                         "gap": (cost - opt.cost) / opt.cost, "optimum_ms": opt_ms})
    return rows


def gap_table(rows: list[dict], tol: float = 1e-9) -> list[dict]:
    """Per expert (in first-seen order), from :func:`gap_cases` rows: cases, mean and max
    gap, and the share of cases solved optimally (gap below ``tol``)."""
    out = []
    for n in dict.fromkeys(r["expert"] for r in rows):
        g = np.array([r["gap"] for r in rows if r["expert"] == n])
        out.append({"expert": n, "cases": len(g), "mean_gap": float(g.mean()), "max_gap": float(g.max()),
                    "optimal_share": float((g < tol).mean())})
    return out


def paper_snapshots(servers: int, window: int = 30, seed: int = 0, light_at: int = 20_000,
                    horizon: int = 100_000, every: int = 1000) -> dict[str, tuple[Cloud, list[Task]]]:
    """``{"light": ..., "loaded": ...}`` snapshots of the full paper-scale online window.

    Earliest-finish schedules the first ``horizon`` online tasks of
    ``synthetic_workload(WorkloadConfig(scale=1.0), seed)``; ``light`` is the state after
    ``light_at`` tasks, ``loaded`` the state with the most tasks queued among every ``every``
    tasks. Each snapshot is an emulator copy (:meth:`Cloud.emulator_copy`) advanced to its
    window's first arrival, exactly what OAIL ships to an emulator.
    """
    from ilets.agents.policies import EarliestFinish
    from ilets.config import FleetConfig, WorkloadConfig
    from ilets.simulator.cloud import make_fleet
    from ilets.workloads.workload import synthetic_workload

    tasks = synthetic_workload(WorkloadConfig(scale=1.0), seed).online
    cloud = Cloud(make_fleet(FleetConfig(servers=servers), 0), t0=float(tasks.arrival[0]), record=False)
    policy = EarliestFinish()
    picks: dict[str, tuple[int, Cloud]] = {}
    most = -1
    for task in window_from_table(tasks, 0, min(horizon, len(tasks) - window)):
        cloud.advance(task.arrival)
        cloud.assign(task.index, task.arrival, task.cpu, task.length, task.deadline,
                     policy.act(cloud, task, cloud.feasible(task.cpu)))
        i = task.index + 1
        if i == light_at:
            picks["light"] = (i, cloud.clone())
        if i % every == 0 and cloud.n_tasks.sum() > most:
            most = int(cloud.n_tasks.sum())
            picks["loaded"] = (i, cloud.clone())
    out = {}
    for name in ("light", "loaded"):
        i, snap = picks[name]
        win = window_from_table(tasks, i, i + window)
        copy = snap.emulator_copy(win[-1].arrival)
        copy.advance(win[0].arrival)
        out[name] = (copy, win)
    return out


def paper_timing_table(cfg: ExpertConfig, reward: RewardConfig, sizes: list[int], repeats: int,
                       experts: tuple[str, ...] = SEARCH_EXPERTS) -> list[dict]:
    """Time per call of each expert, and of one OAIL request (all experts, shared
    preparation), on :func:`paper_snapshots` at each fleet size.

    One row per (fleet size, snapshot, expert or ``"request"``): median and p90 CPU ms per
    call (CPU time: another process on the host does not inflate it), median wall ms, the
    queued tasks and the pickled size of the snapshot in KB. Seeds ``1000 * size + r``.
    """
    import pickle

    rows = []
    for m in sizes:
        for name, (cloud, win) in paper_snapshots(m, cfg.window).items():
            planners = {n: make_expert(n, cfg, reward) for n in experts}
            calls: dict[str, Callable[[np.random.Generator], ExpertPlan | list[ExpertPlan]]]
            calls = {n: (lambda e: (lambda rng: e.plan(cloud, win, rng)))(e) for n, e in planners.items()}
            calls["request"] = lambda rng: plan_window(list(planners.values()), cloud, win, rng)
            for n, call in calls.items():
                call(np.random.default_rng(0))  # compile and warm caches
                cpu, wall = [], []
                for r in range(repeats):
                    rng = np.random.default_rng(1000 * m + r)
                    t0, c0 = time.perf_counter(), time.process_time()
                    call(rng)
                    wall.append(time.perf_counter() - t0)
                    cpu.append(time.process_time() - c0)
                rows.append({"servers": m, "snapshot": name, "expert": n,
                             "cpu_ms": 1e3 * float(np.median(cpu)), "cpu_ms_p90": 1e3 * float(np.quantile(cpu, 0.9)),
                             "wall_ms": 1e3 * float(np.median(wall)), "queued": int(cloud.n_tasks.sum()),
                             "snapshot_kb": len(pickle.dumps(cloud)) / 1024, "calls": repeats})
    return rows
