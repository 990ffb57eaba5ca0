"""The grid-command scenario's pilot: expert settings chosen on seeds no grid evaluates.

Two settings of the expert ladder were first set by hand, one of them by looking at the
episodes that were then reported. This pilot chooses them by rules written before it ran
(the study's own pilot, ``configs/pilot.yaml``, does the same for the learners):

1. ``lyapunov.track_gain``: the weight of the tracking queue in the drift-plus-penalty
   score; the Lyapunov rung is also the learners' teacher. Candidates :data:`TRACK_GAINS`,
   at 50 and 200 servers. Rule: the candidate with the **best** score; a best candidate at
   an end of the range widens it by one more candidate beyond that end (times or divided by
   :data:`WIDEN_FACTOR`), at most :data:`MAX_WIDEN` times, and the choice is made again.
2. ``oracle.node_limit``: the hindsight MILP's branch-and-bound budget per window. It
   replaces a wall-clock limit, which cut hard windows at a point that depended on the
   host's speed and load. Candidates :data:`NODE_LIMITS`, at 50 servers only (at 200 every
   window was proven optimal within the old limit). Rule: the **smallest** candidate whose
   score is within :data:`NODE_TOLERANCE` (of its magnitude) of the best candidate's; a
   larger budget only costs time.

Score of a candidate: the metric the scenario is scored on (:data:`SCORE`, the tracking
error as a share of the requested change, :mod:`ilets.gridcommand.metrics`; lower is better)
averaged over the pilot seeds, the fleets and both regimes of the grid profile (training
and evaluation regime), each on the online segment as the grid scores it. Not the mean
reward per decision: deferrals are decisions too, so it falls as they rise, and it chose
the edge of the range with its candidates 1.8 % apart. The episode's total reward and the
deadline misses caused are recorded beside it. Pilot seeds :data:`PILOT_SEEDS` are outside
every grid profile's seeds (checked by the tests).

The study runs, resumes and ships the pilot (:mod:`ilets.gridcommand.study.pilot`)::

    ilets pilot --scenario gridcommand --profile quick --out results/gridcommand-pilot
    ilets ship --scenario gridcommand --results results/gridcommand-pilot --to shipped/gridcommand-pilot
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ilets.gridcommand.experiment import ExperimentProfile
from ilets.gridcommand.experts import make_expert
from ilets.gridcommand.metrics import evaluate
from ilets.gridcommand.episodes import evaluation_config

PILOT_SEEDS = (100, 101)
#: Every seed set aside for pilots, which no grid evaluates: the scenario pilot's
#: :data:`PILOT_SEEDS`, and the further seeds a clone pilot may take (the second deferral
#: pilot, ``gridcommand-grid-clone-pilot-w*``, takes all six).
RESERVED_SEEDS = (*PILOT_SEEDS, 102, 103, 104, 105)
NODE_LIMITS = (50, 200, 1000)
NODE_TOLERANCE = 0.005
TRACK_GAINS = (50.0, 100.0, 200.0, 400.0, 800.0)
#: The episode metric a candidate is chosen on, and whether higher is better.
SCORE, HIGHER_IS_BETTER = "tracking_mae_rel", False
#: How far past an end of its range a "best" stage's range is widened, and how many times.
WIDEN_FACTOR = 2.0
MAX_WIDEN = 3


def stages(profile: ExperimentProfile) -> list[dict[str, Any]]:
    """The pilot's two stages: which expert option, its candidates, fleets and rule."""
    big = [s for s in profile.servers if s != min(profile.servers)]
    return [
        {"expert": "lyapunov", "option": "track_gain", "candidates": list(TRACK_GAINS),
         "servers": [min(profile.servers), *big], "rule": "best", "tolerance": 0.0, "fixed": {},
         "widen": MAX_WIDEN},
        {"expert": "oracle", "option": "node_limit", "candidates": list(NODE_LIMITS),
         "servers": [min(profile.servers)], "rule": "smallest-within", "tolerance": NODE_TOLERANCE,
         "fixed": {"window": profile.oracle_window, "time_limit": None}, "widen": 0},
    ]


def widened(candidates: list, chosen: Any, stage: dict, times: int) -> Any | None:
    """The candidate that widens a stage's range after ``times`` widenings, or None: only
    for a ``best`` stage whose choice is its largest or smallest candidate, while fewer than
    ``stage["widen"]`` widenings were made (:data:`WIDEN_FACTOR` beyond that end)."""
    if stage["rule"] != "best" or times >= stage.get("widen", 0) or len(candidates) < 2:
        return None
    if chosen == max(candidates):
        return type(chosen)(chosen * WIDEN_FACTOR)
    if chosen == min(candidates):
        return type(chosen)(chosen / WIDEN_FACTOR)
    return None


def episode(profile: ExperimentProfile, expert: str, options: dict, servers: int, seed: int, regime: str) -> dict:
    """One episode of ``expert`` with ``options`` (the grid's scenario and scoring)."""
    cfg = evaluation_config(profile.scenario_config(), regime, servers, seed)
    policy = make_expert(expert, **options)
    c0 = time.process_time()
    scores = evaluate(lambda obs, env: int(policy.act(env)), cfg, seed=seed)
    row = {"mean_reward": float(scores["mean_reward"]), "episode_reward": float(scores["episode_reward"]),
           "decisions": int(scores["decisions"]), SCORE: float(scores[SCORE]),
           "misses_caused": int(scores["misses_caused"]), "deferrals": int(scores["deferrals"]),
           "cpu_s": time.process_time() - c0}
    statuses = getattr(policy, "statuses", None)
    if statuses:
        row["optimal_share"] = float(np.mean([s == "optimal" for s in statuses]))
    return row


def choose(scores: dict[Any, float], rule: str, tolerance: float = 0.0) -> Any:
    """The candidate a rule picks from ``{candidate: score}`` (higher is better: pass
    :data:`SCORE`'s means signed by :func:`signed`).

    ``"best"``: the highest score (the first candidate on a tie). ``"smallest-within"``: the
    smallest candidate within ``tolerance * |best|`` of the best score.
    """
    if not scores:
        raise ValueError("choose: no scores")
    best = max(scores.values())
    if rule == "best":
        return next(c for c, v in scores.items() if v == best)
    if rule == "smallest-within":
        return min(c for c, v in scores.items() if v >= best - tolerance * abs(best))
    raise ValueError(f"choose: unknown rule {rule!r}; expected 'best' or 'smallest-within'")


def signed(means: dict[Any, float]) -> dict[Any, float]:
    """:data:`SCORE`'s means as :func:`choose` reads them (higher is better)."""
    return {k: (v if HIGHER_IS_BETTER else -v) for k, v in means.items()}


def chosen(pilot: dict, expert: str, option: str) -> Any:
    """The value the pilot chose for ``expert.option``."""
    for stage in pilot["stages"]:
        if stage["expert"] == expert and stage["option"] == option:
            return stage["chosen"]
    raise KeyError(f"the pilot has no stage for {expert}.{option}")
