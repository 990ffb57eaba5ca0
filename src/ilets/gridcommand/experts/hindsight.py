"""Rung 0 of the ladder, ``hindsight``: the best rung per stretch of the episode, each judged by
simulating it to the episode's end on an exact copy of the environment.

Why this rung: the MILP oracle (:mod:`~ilets.gridcommand.experts.oracle`) plans windows of a
few dozen tasks in a fluid model and prices its own weights, so lower rungs can and do beat it
on the scored objective; it is an informed expert, not a bound. This rung is a bound on the
ladder by construction. It is *parallel rollout* (Bertsekas, "Rollout algorithms for
discrete optimization", and the multiple-base-policy rollout of Chang, Givan and Chong): at
each switch time it copies the environment and every member's state, runs each member alone
to the episode's end, scores the finished copy on the criterion, and follows the best member
until the next switch time.

Why it is never worse than any member (the cost-improvement argument; tested): let ``J_k``
be the best final score over the members simulated at switch time ``k``. The member chosen
at ``k`` is then followed on the real environment, so at switch ``k + 1`` its own
continuation is one of the candidates and reproduces its simulated episode exactly (the
simulator and every expert are deterministic): ``J_(k+1) >= J_k``. The first switch time is
the first decision, where each member's simulation *is* that member's whole episode, so the
final score is at least every member's own. The argument needs only a deterministic episode
and a score of the finished episode, not an additive one, so the criterion may be the total
reward or the tracking error. It holds per episode, hence for every mean over episodes.

Switch times [ours]: the first decision, and every event's announcement and end (the times
at which the scored objective changes what a good action is). Between switch times the
chosen member acts; the others keep their state from when they last acted (a stale state is
still a policy; the bound needs only the chosen member's exact continuation). The members
are the other rungs plus ``reference``, the counterfactual policy itself (doing nothing), so
the rung is also never worse than ignoring the command on the criterion.

Cost: about (switch times / 2) x (sum of the members' episode costs) per episode, since the
chosen member's continuation is known and is not simulated again. It is for the ladder's
quick-scale grid, not for teaching.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable

from ilets.agents.policies import make_heuristic
from ilets.gridcommand.experts.reading import GridExpert, _cfg, _Expert, _mask
from ilets.gridcommand.metrics import episode_reward, tracking_metrics

#: The rungs it chooses among by default, most informed first, then doing nothing.
MEMBERS: tuple[str, ...] = ("oracle", "mpc-perfect", "mpc-forecast", "lyapunov", "rule", "reference")
#: Every rung it may choose among, in its tie order: the default members plus the
#: tracking-first thermostat, which a grid adds to bound it too (``bound_members``); it comes
#: after the rule, before doing nothing.
CANDIDATES: tuple[str, ...] = (*MEMBERS[:-1], "thermostat", MEMBERS[-1])
#: The oracle member's branch-and-bound node limit when none is given (the grids' own; a
#: time limit would make the simulated and the real continuation differ on a busy host).
ORACLE_NODE_LIMIT = 200
#: What a finished episode is judged on: name -> (the score, whether higher is better).
CRITERIA: dict[str, tuple[Callable[[Any, dict], float], bool]] = {
    "episode_reward": (lambda env, final: episode_reward(final), True),
    "tracking_mae_rel": (lambda env, final: float(tracking_metrics(env)["tracking_mae_rel"]), False),
}


class ReferenceExpert(_Expert):
    """The counterfactual policy (``config.reference``, a plain heuristic) acting in the
    command scenario: doing nothing about the command. It never defers."""

    name = "reference"
    reads = ("action_masks", "current_task", "config", "defer_action", "fleet", "cloud")

    def __init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self._policy: Any = None

    def act(self, env: Any) -> int:
        if self._policy is None:  # built from the env's own settings at the first decision
            run = env.config.run
            self._policy = make_heuristic(_cfg(env, "reference"), seed=run.seed, reward=run.reward)
        servers, defer_ok = _mask(env)
        if not servers.any():
            return int(env.defer_action)
        return int(self._policy.act(env.cloud, env.current_task, servers))


class HindsightExpert(_Expert):
    """Parallel rollout over the ladder's rungs (module docstring): at each switch time, the
    member whose simulated episode scores best on ``criterion`` acts until the next one.

    ``build(name, **options)`` makes a rung by name (the ladder's
    :func:`~ilets.gridcommand.experts.make_expert`, which passes itself: this module does not
    import the ladder, which imports it); ``members``: rung names of :data:`CANDIDATES`
    (default :data:`MEMBERS`), ties kept by the member given first; ``member_options``:
    keyword options per member (e.g. the oracle's node limit). After an
    episode, ``choices`` holds ``(time, member, predicted final score)`` per switch time and
    ``simulations`` the episodes simulated.
    """

    name = "hindsight"
    reads = ("*",)  # every member on a copy of the whole environment

    def __init__(self, build: Callable[..., GridExpert], members: tuple[str, ...] = MEMBERS, criterion: str = "episode_reward",
                 member_options: dict[str, dict] | None = None) -> None:
        if not members:
            raise ValueError(f"members: expected at least one of {CANDIDATES}")
        unknown = [m for m in members if m not in CANDIDATES]
        if unknown or len(set(members)) != len(members):
            raise ValueError(f"members: expected distinct names of {CANDIDATES}, got {list(members)}")
        if criterion not in CRITERIA:
            raise ValueError(f"criterion: expected one of {tuple(CRITERIA)}, got {criterion!r}")
        extra = sorted(set(member_options or {}) - set(members))
        if extra:
            raise ValueError(f"member_options: {extra} are not members {list(members)}")
        self._build = build
        options = dict(member_options or {})
        if "oracle" in members:
            # the bound needs exact replays: a time limit cuts a solve where the host's speed says
            oracle = options.get("oracle", {})
            if "node_limit" not in oracle:
                options["oracle"] = {**oracle, "time_limit": None, "node_limit": ORACLE_NODE_LIMIT}
            elif oracle["node_limit"] is None or oracle.get("time_limit", 2.0) is not None:
                raise ValueError("member_options['oracle']: expected a node_limit and time_limit None (the bound "
                                 f"replays the oracle exactly; a wall-clock limit does not), got {oracle}")
        self.members, self.criterion = tuple(members), criterion
        self.member_options = options
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self._live = {m: ReferenceExpert() if m == "reference" else self._build(m, **self.member_options.get(m, {}))
                      for m in self.members}
        for expert in self._live.values():
            expert.reset(seed)
        self._active: str | None = None
        self._expected = math.nan  # the active member's simulated final score
        self._switches: list[float] | None = None
        self._next = 0
        self.choices: list[tuple[float, str, float]] = []
        self.simulations = 0

    def act(self, env: Any) -> int:
        env = getattr(env, "unwrapped", env)
        now = float(env.now)
        if self._switches is None:
            self._switches = sorted({t for c in env.schedule for t in (c.announce_s, c.end_s)})
        due = self._next < len(self._switches) and now >= self._switches[self._next]
        while self._next < len(self._switches) and now >= self._switches[self._next]:
            self._next += 1
        if self._active is None or due:
            self._choose(env, now)
        assert self._active is not None
        return int(self._live[self._active].act(env))

    def _choose(self, env: Any, now: float) -> None:
        score_of, higher = CRITERIA[self.criterion]
        best, best_score = None, math.nan
        for name in self.members:  # ties keep the earlier (more informed) member
            score = self._expected if name == self._active else self._simulate(env, name, score_of)
            if best is None or (score > best_score if higher else score < best_score):
                best, best_score = name, score
        self._active, self._expected = best, best_score
        self.choices.append((now, str(best), float(best_score)))

    def _simulate(self, env: Any, name: str, score_of: Callable[[Any, dict], float]) -> float:
        """The final score of ``name`` acting alone from here to the episode's end, on copies
        of the environment and of the member (neither original is touched)."""
        sim, member = copy.deepcopy(env), copy.deepcopy(self._live[name])
        self.simulations += 1
        while True:
            _, _, terminated, truncated, info = sim.step(member.act(sim))
            if terminated or truncated:
                return float(score_of(sim, info["final"]))
