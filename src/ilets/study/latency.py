"""Per-task decision latency on the main thread, for DRL and ILETS, at a given fleet size.

Three timings per decision, all in one run so they share the machine's state:

* ``numpy actor``: building the observation and choosing the action with
  :class:`ilets.agents.ppo.NumpyActor` (what :class:`ilets.agents.ppo.PPOPolicy` does);
* ``sb3 predict``: the same decision through SB3's ``model.predict`` (torch forward,
  tensor conversion, action masks), the conventional path;
* ``oail``: the OAIL callback's per-decision work on the main thread (snapshot, submit,
  poll). ILETS's latency is the numpy-actor time plus this; its emulators run in another
  process meanwhile, and their imitation updates happen between rollouts (reported apart,
  as PPO's own updates are).

The paper's per-task decision times [paper] are quoted in :data:`PAPER_DECISION_MS`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Sequence

import numpy as np
import pandas as pd
from stable_baselines3.common.vec_env import DummyVecEnv

from ilets.agents.env import CloudSchedulingEnv
from ilets.agents.observation import StateSpec, build_observation
from ilets.agents.ppo import NumpyActor, make_ppo
from ilets.config import RunConfig, WorkloadConfig
from ilets.method_table import METHOD_LABELS
from ilets.simulator.cloud import make_fleet
from ilets.workloads.workload import PAPER_ONLINE_TASKS, load_workload

#: Per-task decision time reported by the paper, ms [paper].
PAPER_DECISION_MS = {"DRL": {50: 21.0, 100: 27.0, 200: 38.0}, "ILETS": {50: 26.0, 100: 47.0, 200: 74.0}}


def measure(servers: int, n: int, cfg: RunConfig, with_oail: bool, predict_every: int = 5,
            seed: int = 0) -> pd.DataFrame:
    """Time ``n`` decisions on ``servers`` servers; one row per (decision, path) timing, seconds.

    ``cfg`` supplies PPO, expert and OAIL settings; the workload is the embedded default
    scaled so that the online segment has at least ``n`` tasks. SB3's predict path is timed
    on every ``predict_every``-th decision (it is slow and only serves as the reference).
    """
    from ilets.agents.oail import OAILCallback

    scale = min(1.0, max(cfg.workload.scale, 1.2 * n / PAPER_ONLINE_TASKS))
    cfg = dataclasses.replace(cfg, workload=WorkloadConfig(scale=scale),
                              fleet=dataclasses.replace(cfg.fleet, servers=servers))
    wl = load_workload(cfg.workload, seed)
    fleet = make_fleet(cfg.fleet, cfg.fleet.seed)
    env = CloudSchedulingEnv(cfg, tasks=wl.online.slice(0, n), fleet=fleet)
    model = make_ppo(env, cfg.ppo, seed)
    vec_env = model.get_env()
    assert isinstance(vec_env, DummyVecEnv), "SB3 wraps the env it is given in a DummyVecEnv"
    raw = vec_env.envs[0].unwrapped
    assert isinstance(raw, CloudSchedulingEnv), "the env given to make_ppo, under SB3's Monitor"
    raw.reset()
    assert raw.cloud is not None, "reset() makes the cloud"
    callback = None
    if with_oail:
        callback = OAILCallback(cfg.oail, cfg.experts, cfg.reward, seed, StateSpec.of(cfg))
        callback.init_callback(model)
        callback.on_training_start({}, {})
    actor = NumpyActor(model.policy)
    state = StateSpec.of(cfg)
    buf = np.empty(state.size(servers), np.float32)
    rows: list[tuple[int, str, float]] = []
    try:
        for i in range(n):
            t0 = time.perf_counter()
            obs = build_observation(raw.cloud, raw.current_task, state, buf)
            mask = raw.action_masks()
            a = actor.act(obs, mask)
            t1 = time.perf_counter()
            rows.append((i, "numpy actor", t1 - t0))
            if i % predict_every == 0:
                t2 = time.perf_counter()
                model.predict(build_observation(raw.cloud, raw.current_task, state), action_masks=mask,
                              deterministic=True)
                rows.append((i, "sb3 predict", time.perf_counter() - t2))
            done = raw.step(a)[2]
            if callback is not None and not done:
                callback.update_locals({"dones": np.array([done])})
                t3 = time.perf_counter()
                callback.on_step()
                rows.append((i, "oail", time.perf_counter() - t3))
                if (i + 1) % cfg.ppo.n_steps == 0:  # between rollouts, as in training
                    callback.on_rollout_start()
                    actor.refresh()
            if done:
                break
    finally:
        if callback is not None:
            counters = callback.counters.as_dict()
            callback.close()
    out = pd.DataFrame(rows, columns=["decision", "path", "seconds"])
    out["servers"] = servers
    out["method"] = METHOD_LABELS["ilets" if with_oail else "drl"]
    if callback is not None:
        out.attrs["oail"] = counters
    return out


def measured_latency(run: RunConfig, scales: Sequence[int], n: int,
                     predict_every: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`measure` for DRL and ILETS at each fleet size in ``scales``: ``(timings, OAIL
    counters per fleet size)``. What the decision-time chapter quotes
    (:mod:`ilets.study.book_measurements` records it)."""
    frames, counters = [], {}
    for m in scales:
        frames.append(measure(m, n, run, with_oail=False, predict_every=predict_every))
        with_oail = measure(m, n, run, with_oail=True, predict_every=predict_every)
        frames.append(with_oail)
        counters[m] = with_oail.attrs.get("oail", {})
    return pd.concat(frames, ignore_index=True), pd.DataFrame(counters).T


def summarise(timings: pd.DataFrame) -> pd.DataFrame:
    """p50/p95 latency (ms) per method, fleet size and path; ILETS = numpy actor + oail."""
    t = timings.copy()
    per = t.pivot_table(index=["method", "servers", "decision"], columns="path", values="seconds").reset_index()
    rows = []
    for (method, servers), g in per.groupby(["method", "servers"]):
        decision = g["numpy actor"] + (g["oail"].fillna(0.0) if "oail" in g else 0.0)
        rows.append({"method": method, "servers": servers, "path": "our decision",
                     "p50_ms": decision.median() * 1e3, "p95_ms": decision.quantile(0.95) * 1e3})
        sb3 = g["sb3 predict"].dropna() if "sb3 predict" in g else pd.Series(dtype=float)
        if len(sb3):
            rows.append({"method": method, "servers": servers, "path": "sb3 predict",
                         "p50_ms": sb3.median() * 1e3, "p95_ms": sb3.quantile(0.95) * 1e3})
        rows.append({"method": method, "servers": servers, "path": "paper",
                     "p50_ms": PAPER_DECISION_MS[method][servers] if servers in PAPER_DECISION_MS[method]
                     else float("nan"), "p95_ms": float("nan")})
    return pd.DataFrame(rows)
