"""How well a run followed the operator: per-event tracking metrics, and one scorer for all.

Everything is computed from exact slot power (:func:`ilets.gridcommand.power.power_profile`)
of the finished run and of the counterfactual baseline, never from the reward, so experts,
heuristics and learned policies are scored the same way (:func:`evaluate`).

Per event ``[start, end)`` [ours]:

* the event's slots are those overlapping it, each weighted by its overlap ``o_k``; the
  slot's target is the target at the midpoint of the overlap, given the slot's baseline;
* ``mae_w``: overlap-weighted mean of ``|P_k - target_k|``; ``mae_rel``: the same over the
  mean requested change at full depth (0 when both are 0, inf when only the change is);
* in band: ``|P_k - target_k| <= band * requested change`` (plus 1e-9 relative slack for
  rounding); ``in_band_fraction``: overlap-weighted share of in-band slots;
  ``time_to_band_s``: from the start to the first in-band slot whose midpoint is past the
  ramp (the target at full depth; during the ramp the target is near the baseline and doing
  nothing would count), inf if never: a response time to the full request, so a perfect
  follower scores about ``ramp_s``; over the events of a run, its median and the share of
  events that reach the band (:func:`band_summary`);
* ``misses_caused``: deadline misses among the tasks first arriving in the event, run minus
  counterfactual (negative: the run missed fewer); ``deferrals``: deferral decisions taken
  in the event;
* ``energy_shift_j``: energy during the event minus the counterfactual's (exact, J);
  ``energy_after_j``: the same over the window of equal length right after the event (the
  rebound, where deferred work lands).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ilets.gridcommand.command import CommandSchedule
from ilets.gridcommand.config import GridCommandConfig
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.power import power_profile, records_of
from ilets.gridcommand.tracking import event_slots
from ilets.simulator.cloud import Fleet, meets_deadline

#: relative slack of the in-band test (float rounding of slot averages)
BAND_RTOL = 1e-9


@dataclass(frozen=True)
class EventMetrics:
    """Tracking metrics of one event (module docstring)."""

    index: int
    direction: str
    start_s: float
    end_s: float
    requested_w: float  #: mean requested change at full depth over the event, W
    mae_w: float
    mae_rel: float
    time_to_band_s: float
    in_band_fraction: float
    misses_caused: int
    deferrals: int
    energy_shift_j: float
    energy_after_j: float


def _misses_by_task(records: Mapping[str, Any]) -> dict[int, bool]:
    arrival = np.asarray(records["arrival"], dtype=float)
    response = np.asarray(records["finish"], dtype=float) - arrival
    missed = ~meets_deadline(response, np.asarray(records["deadline"], dtype=float))
    return dict(zip(np.asarray(records["task"]).tolist(), missed.tolist()))


def _energy(records: Mapping[str, Any], fleet: Fleet, cpu: np.ndarray, a: float, b: float) -> float:
    if not b > a:
        return 0.0
    return float(power_profile(records, fleet, [a, b], cpu)[0] * (b - a))


def event_metrics(schedule: CommandSchedule, edges: np.ndarray, power_w: np.ndarray, baseline_w: np.ndarray,
                  run_records: Mapping[str, Any], baseline_records: Mapping[str, Any], fleet: Fleet, cpu: np.ndarray,
                  arrival: np.ndarray, deferral_times: np.ndarray | None = None,
                  saved_j: Callable[[float, float], float] | None = None) -> list[EventMetrics]:
    """Metrics of every event with a duration, from slot power of the run and of the baseline.

    ``edges``, ``power_w`` and ``baseline_w``: the slot grid and the two slot profiles;
    ``run_records``/``baseline_records``: the two runs' cloud records; ``cpu`` and
    ``arrival``: the task table's requests and first arrivals; ``deferral_times``: when
    each deferral was decided; ``saved_j(a, b)``: joules the run's sleeping servers saved in
    ``[a, b)`` (the sleep lever, :mod:`ilets.gridcommand.sleep`), taken off its energy.
    """
    edges = np.asarray(edges, dtype=float)
    power_w, baseline_w = np.asarray(power_w, float), np.asarray(baseline_w, float)
    if len(power_w) != len(edges) - 1 or len(baseline_w) != len(edges) - 1:
        raise ValueError(f"power_w and baseline_w: expected one value per slot ({len(edges) - 1}), got "
                         f"{len(power_w)} and {len(baseline_w)}")
    run_miss, base_miss = _misses_by_task(run_records), _misses_by_task(baseline_records)
    arrival = np.asarray(arrival, dtype=float)
    deferral_times = np.asarray([] if deferral_times is None else deferral_times, dtype=float)
    out = []
    for i, c in enumerate(schedule):
        if c.duration_s <= 0:
            continue
        sel, o, mid, target = event_slots(c, edges, baseline_w)
        if not len(o):  # the event lies outside the slot grid
            raise ValueError(f"event {i} [{c.start_s}, {c.end_s}) s lies outside the slot edges")
        base = baseline_w[sel]
        err = np.abs(power_w[sel] - target)
        change = c.change(base)
        inside = err <= c.band_w(base) + BAND_RTOL * np.maximum(base, 1.0)
        total = o.sum()
        mae = float(o @ err / total)
        requested = float(o @ change / total)
        rel = mae / requested if requested > 0 else (0.0 if mae == 0 else math.inf)
        # response time: the first in-band slot once the target is at full depth (during the
        # ramp the target is near the baseline, where doing nothing would count as in band)
        full = mid >= min(c.start_s + c.ramp_s, mid[-1])
        first = np.flatnonzero(inside & full)
        to_band = float(max(edges[sel[first[0]]], c.start_s) - c.start_s) if len(first) else math.inf
        tasks = np.flatnonzero((arrival >= c.start_s) & (arrival < c.end_s)).tolist()
        caused = sum(int(run_miss.get(j, False)) - int(base_miss.get(j, False)) for j in tasks)
        n_def = int(((deferral_times >= c.start_s) & (deferral_times < c.end_s)).sum())
        after = c.end_s + c.duration_s
        shift, shift_after = (_energy(run_records, fleet, cpu, a, b) - _energy(baseline_records, fleet, cpu, a, b)
                              - (saved_j(a, b) if saved_j is not None else 0.0)
                              for a, b in ((c.start_s, c.end_s), (c.end_s, after)))
        out.append(EventMetrics(i, c.direction, c.start_s, c.end_s, requested, mae, rel, to_band,
                                float(o[inside].sum() / total), caused, n_def, shift, shift_after))
    return out


def band_summary(per_event: list[dict[str, Any]]) -> dict[str, float]:
    """How the events reached the band, from their ``time_to_band_s``: the median over events
    (an event that never reaches it counts as infinitely late, so the median is finite only
    when more than half reach it) and the share of events that reach it. NaN without events.

    Beside ``time_to_band_s`` (the duration-weighted mean), which one event that never reaches
    the band makes infinite."""
    t = np.array([e["time_to_band_s"] for e in per_event], dtype=float)
    if not len(t):
        return {"time_to_band_median_s": math.nan, "band_reached_share": math.nan}
    return {"time_to_band_median_s": float(np.median(t)), "band_reached_share": float(np.isfinite(t).mean())}


def tracking_metrics(env: GridCommandEnv) -> dict[str, Any]:
    """Summary, baseline summary and tracking metrics of a *finished* episode of ``env``."""
    cloud = env.cloud
    if cloud is None or env._next_new < len(env.tasks) or env._pending or cloud._events:
        raise ValueError("tracking_metrics: the episode is not finished (step until terminated)")
    edges = env.slot_edges
    power = env.realised_profile(edges)  # less what sleeping servers saved (the sleep lever)
    base = env.baseline
    times = np.array([t for t, _ in env.deferral_log], dtype=float)
    events = event_metrics(env.schedule, edges, power, base.power_w, records_of(cloud), base.records, env.fleet,
                           env.tasks.cpu, env.tasks.arrival, times,
                           None if env.sleep is None else env.sleep.saved_j)
    run_miss = sum(_misses_by_task(cloud.records).values())
    base_miss = sum(_misses_by_task(base.records).values())
    out: dict[str, Any] = dict(cloud.summary())
    out.update(env.sleep_summary())  # the sleep lever: the energy less what the sleeps saved
    out.update(env.cap_summary())  # the cap as an action: how often the policy moved it
    out.update({f"baseline_{k}": v for k, v in base.summary.items()})
    weights = np.array([e.end_s - e.start_s for e in events])
    def mean(key: str) -> float:
        if not events:
            return math.nan
        vals = np.array([getattr(e, key) for e in events], dtype=float)
        return float(weights @ vals / weights.sum()) if np.all(np.isfinite(vals)) else float(np.mean(vals))
    out.update(
        events=len(events),
        tracking_mae_w=mean("mae_w"),
        tracking_mae_rel=mean("mae_rel"),
        in_band_fraction=mean("in_band_fraction"),
        time_to_band_s=mean("time_to_band_s"),
        misses_caused=int(run_miss - base_miss),
        misses_caused_in_events=int(sum(e.misses_caused for e in events)),
        deferrals=len(env.deferral_log),
        energy_shift_j=float(sum(e.energy_shift_j for e in events)),
        energy_after_j=float(sum(e.energy_after_j for e in events)),
        per_event=[asdict(e) for e in events],
    )
    out.update(band_summary(out["per_event"]))
    out.update(envelope_summary(env, out["per_event"]))
    return out


def envelope_summary(env: GridCommandEnv, per_event: list[dict[str, Any]]) -> dict[str, float]:
    """The flexibility envelope's record (:mod:`ilets.gridcommand.envelope`): each scored
    event's requested and reachable depth and whether its depth fits (added to ``per_event``,
    in place), how many events were dropped as unreachable and how many made shallower (and,
    with ``envelope_redraws``, how many were moved to a start they could be followed from), the
    share of events that fit, and
    the tracking error over those that fit (duration-weighted). NaN with ``envelope: off``."""
    found = [r for r in env.envelope if r.kept]
    nan = {"events_dropped": math.nan, "events_clipped": math.nan, "feasible_share": math.nan,
           "tracking_mae_rel_feasible": math.nan}
    if not env.envelope:
        return nan
    for row, r in zip(per_event, found):
        row.update(requested_depth=r.requested_depth, reachable_depth=r.reachable_depth, feasible=r.feasible)
        if env.config.envelope_redraws:
            row["redraws"] = r.redraws
    fits = [row for row in per_event if row.get("feasible")]
    weights = np.array([row["end_s"] - row["start_s"] for row in fits])
    errors = np.array([row["mae_rel"] for row in fits], dtype=float)
    out = {"events_dropped": float(sum(not r.kept for r in env.envelope)),
           "events_clipped": float(sum(r.kept and r.depth < r.requested_depth for r in env.envelope)),
           "feasible_share": float(np.mean([row.get("feasible", False) for row in per_event])) if per_event else math.nan,
           "tracking_mae_rel_feasible": float(weights @ errors / weights.sum()) if len(fits) else math.nan}
    if env.config.envelope_redraws:  # only then: the records made before the knob stay as they were
        out["events_redrawn"] = float(sum(r.kept and r.redraws > 0 for r in env.envelope))
    return out


#: A grid policy: the observation and the environment in, an action out.
GridPolicy = Callable[[np.ndarray, GridCommandEnv], int]


def as_grid_policy(policy: Any) -> GridPolicy:
    """Adapt ``policy`` to ``(obs, env) -> action``.

    Accepted: such a callable; a grid-command expert (``grid_expert``: ``act(env)``,
    :mod:`ilets.gridcommand.experts`); a plain-scenario policy with ``act(cloud, task, mask)``
    (:mod:`ilets.agents.policies`, it never defers; given the server part of the mask); a
    model with ``predict(obs, action_masks=...)`` (sb3-contrib's MaskablePPO), deterministic.
    """
    if getattr(policy, "grid_expert", False):
        def expert(obs: np.ndarray, env: GridCommandEnv) -> int:
            return int(policy.act(env))
        return expert
    if hasattr(policy, "act") and callable(policy.act):
        def plain(obs: np.ndarray, env: GridCommandEnv) -> int:
            return int(policy.act(env.cloud, env.current_task, env.action_masks()[:len(env.fleet)]))
        return plain
    if hasattr(policy, "predict") and callable(policy.predict):
        def model(obs: np.ndarray, env: GridCommandEnv) -> int:
            action, _ = policy.predict(obs, action_masks=env.action_masks(), deterministic=True)
            return int(action)
        return model
    if callable(policy):
        return policy
    raise TypeError(f"policy: expected a callable (obs, env) -> action, an object with act(cloud, task, mask) "
                    f"or one with predict(obs, action_masks=...), got {type(policy).__name__}")


def evaluate(policy: Any, config: GridCommandConfig, seed: int | None = None, observing: bool = True,
             **env_kwargs: Any) -> dict[str, Any]:
    """Run one episode with ``policy`` and return its summary and tracking metrics.

    ``seed`` (default: the run's seed) draws the workload and the generated commands;
    ``observing`` False: the policy reads the environment, never the observation (an expert
    of the ladder), so none is built (:attr:`GridCommandEnv.observing`: about a third of a
    step's cost; the same numbers);
    ``env_kwargs`` go to :class:`GridCommandEnv` (tasks, fleet, window, schedule). The result
    also holds ``mean_reward``, ``episode_reward`` (:func:`episode_reward`) and
    ``infeasible_actions`` of the episode.
    """
    act = as_grid_policy(policy)
    env = GridCommandEnv(config, **env_kwargs)
    env.observing = observing
    if hasattr(policy, "reset") and callable(policy.reset) and not hasattr(policy, "predict"):
        policy.reset(seed if seed is not None else config.run.seed)
    obs, _ = env.reset(seed=seed if seed is not None else config.run.seed)
    while True:
        obs, _, terminated, truncated, info = env.step(act(obs, env))
        if terminated or truncated:
            break
    out = tracking_metrics(env)
    final = info["final"]
    out.update(mean_reward=final["mean_reward"], infeasible_actions=final["infeasible_actions"],
               tracking_cost=final["tracking_cost"], decisions=final["decisions"])
    out["episode_reward"] = episode_reward(out)
    return out


def episode_reward(scores: dict[str, Any]) -> float:
    """The episode's total reward: the mean reward per decision times the decisions. A
    deferral is a decision too, so the mean per decision falls as deferrals rise while the
    total does not; runs on the same tasks compare on the total (the pilot's score)."""
    return float(scores["mean_reward"]) * float(scores["decisions"])
