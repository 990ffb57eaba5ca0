"""The grid-command teacher: an expert of the ladder in the scenario, and its labels over an
episode (the demonstrations a clone learns from, a DAgger round's relabelled states).

The teacher is asked at every decision, whoever acts [ours]: the ladder's experts keep state
across decisions (Lyapunov's virtual queues, MPC's budgets and deferred tasks), so a teacher
asked only now and then would see its queues jump.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from ilets.agents.oinpt import Demonstrations
from ilets.gridcommand.config import GridCommandConfig
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.experts import GridExpert, SleepManager, make_expert


def scenario_expert(name: str, cfg: GridCommandConfig, **kw: Any) -> GridExpert:
    """An expert of the ladder for the scenario ``cfg``: with the sleep head
    (``sleep_actions``) it takes the power manager's sleep actions first
    (:class:`ilets.gridcommand.experts.SleepManager`), so it meets the lever as the experts
    meet it without the head, and a clone learns the head from its teacher; else the expert
    itself."""
    expert = make_expert(name, **kw)
    return SleepManager(expert) if cfg.sleep_actions else expert


def expert_policy(name: str, cfg: GridCommandConfig | None = None,
                  **kw: Any) -> Callable[[np.ndarray, GridCommandEnv], int]:
    """An expert of the ladder (for the scenario ``cfg`` when given: :func:`scenario_expert`)
    as an ``(obs, env) -> action`` policy for :func:`evaluate` (reset first: experts keep
    state across decisions)."""
    expert = make_expert(name, **kw) if cfg is None else scenario_expert(name, cfg, **kw)
    expert.reset()
    return lambda obs, env: int(expert.act(env))


def demonstrate(env: GridCommandEnv, teacher: str, max_decisions: int = 0, **expert_kw: Any) -> Demonstrations:
    """The teacher's decisions over one episode of ``env`` (the first ``max_decisions``; 0: all)."""
    return _labelled_episode(env, teacher, max_decisions, None, expert_kw)[0]


def scored_demonstration(env: GridCommandEnv, teacher: str, max_decisions: int = 0) -> tuple[Demonstrations, np.ndarray]:
    """:func:`demonstrate`, with the scores behind each of the teacher's decisions (one row per
    decision, one column per action, ``inf`` where masked; the teacher picks the least): what
    weighs another policy's choice on the same state in the teacher's own terms. Only a
    teacher that scores its actions (``lyapunov``) has them, and only where every action is a
    placement or the defer (no sleep or cap actions); ``ValueError`` otherwise."""
    scores: list[np.ndarray] = []
    demos = _labelled_episode(env, teacher, max_decisions, None, {}, scores)[0]
    return demos, np.stack(scores)


def scores_kept(env: GridCommandEnv, teacher: str) -> bool:
    """Whether :func:`scored_demonstration` can keep ``teacher``'s scores on ``env``: a teacher
    that scores its actions itself (not wrapped, as the sleep manager wraps it) in a scenario
    whose every action is a placement or the defer (no sleep or cap actions its scores would
    not cover)."""
    return _scores_cover(env, scenario_expert(teacher, env.config))


def _scores_cover(env: GridCommandEnv, expert: GridExpert) -> bool:
    """:func:`scores_kept` of an expert already made."""
    plain = int(getattr(env.action_space, "n")) == env.defer_action + 1  # Discrete's n
    return plain and "last_scores" in vars(expert)


def relabel(env: GridCommandEnv, teacher: str, actor: Callable[[np.ndarray, GridCommandEnv], int],
            max_decisions: int = 0) -> tuple[Demonstrations, np.ndarray]:
    """One DAgger round: ``actor`` (the clone) acts over one episode of ``env`` and the teacher
    labels every state the actor visits. Returns the labelled states (the actions are the
    teacher's; the rewards the actor's) and, per state, whether the actor did as the teacher
    would have (bool)."""
    demos, taken = _labelled_episode(env, teacher, max_decisions, actor, {})
    return demos, taken == demos.acts


def agreement_split(env: GridCommandEnv, demos: Demonstrations, agreed: np.ndarray, prefix: str,
                    suffix: str = "") -> dict[str, float]:
    """The share of ``agreed`` (one bool for each of the first decisions of ``demos``) over all
    of them, those made during an event and those outside
    (:meth:`GridCommandEnv.during_event`), as ``<prefix><suffix>``, ``<prefix>_event<suffix>``
    and ``<prefix>_off<suffix>``, each left out where there are no such decisions (a record
    keeps no NaN). The events hold the decisions that track, a minority, so the overall share
    can hide them."""
    during = env.during_event(demos.obs[:len(agreed)]) if len(agreed) else np.zeros(0, bool)
    parts = {"": np.ones(len(agreed), bool), "_event": during, "_off": ~during}
    return {f"{prefix}{name}{suffix}": float(np.mean(agreed[rows])) for name, rows in parts.items() if rows.any()}


def _labelled_episode(env: GridCommandEnv, teacher: str, max_decisions: int,
                      actor: Callable[[np.ndarray, GridCommandEnv], int] | None,
                      expert_kw: dict[str, Any], scores: list[np.ndarray] | None = None,
                      ) -> tuple[Demonstrations, np.ndarray]:
    """The teacher's label at every decision of one episode, and the action taken: the
    teacher's own, or ``actor``'s (the teacher still sees every state, so its queues follow
    the episode as it is played; its deadline queue counts its own answer's miss) [ours].
    ``scores``: where to append the scores behind each label (a scoring teacher's)."""
    expert = scenario_expert(teacher, env.config, **expert_kw)
    expert.reset()
    if scores is not None and not _scores_cover(env, expert):
        raise ValueError(f"{teacher}: scores only placements and the defer, so its scores cannot be kept "
                         "in this scenario" if "last_scores" in vars(expert) else
                         f"{teacher}: does not score its actions, so its scores cannot be kept")
    t0 = time.perf_counter()
    obs, _ = env.reset()
    rows_obs, rows_act, rows_mask, rows_rew, taken = [], [], [], [], []
    while True:
        mask = env.action_masks().copy()
        label = int(expert.act(env))
        if scores is not None:
            scores.append(getattr(expert, "last_scores"))  # checked above: a scoring teacher
        a = label if actor is None else int(actor(obs, env))
        rows_obs.append(obs)
        rows_act.append(label)
        rows_mask.append(mask)
        taken.append(a)
        obs, reward, terminated, truncated, _ = env.step(a)
        rows_rew.append(reward)
        if terminated or truncated or (max_decisions and len(rows_act) >= max_decisions):
            break
    # np.stack, not np.asarray: the same array, without asarray's walk over every row's
    # elements (about a tenth of the time, a few per cent of an episode at 200 servers)
    demos = Demonstrations(obs=np.stack(rows_obs).astype(np.float32, copy=False), acts=np.asarray(rows_act, np.int64),
                           masks=np.stack(rows_mask).astype(bool, copy=False), rewards=np.asarray(rows_rew, np.float32),
                           experts=np.array([teacher] * len(rows_act)), seconds=time.perf_counter() - t0)
    return demos, np.asarray(taken, np.int64)

