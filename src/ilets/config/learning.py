"""The sections of a run's configuration that describe its learners: PPO, the experts, OINPT, OAIL, fine-tuning."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ilets.config.strict import ConfigError, _Typed
from ilets.config.validate import Validated, bounded
from ilets.expert_table import EXPERT_SPECS, team


@dataclass(frozen=True)
class PPOConfig(_Typed, Validated):
    """PPO for one online pass; see ``configs/methods.yaml`` for why these values."""

    learning_rate: float = bounded(3e-4, gt=0)  #: Adam's step size (SB3's default) [ours]
    n_steps: int = bounded(256, gt=0)  #: decisions per rollout, between two updates [ours]
    batch_size: int = bounded(64, gt=0)  #: samples per gradient step [code]
    n_epochs: int = bounded(2, gt=0)  #: passes over each rollout, the pilot's choice [ours]
    #: discount factor [code]; 0: the return is the step's own reward (a cost fixed at assignment)
    gamma: float = bounded(0.98, ge=0, le=1)
    gae_lambda: float = bounded(0.95, ge=0, le=1)
    clip_range: float = bounded(0.2, gt=0)
    ent_coef: float = bounded(0.01, ge=0)  #: the pilot's choice
    vf_coef: float = bounded(0.5, ge=0)
    max_grad_norm: float = bounded(0.5, gt=0)
    hidden: int = bounded(128, gt=0)  #: one hidden layer of this width for actor and critic [paper]
    #: collect rollouts with the numpy loop of :class:`ilets.agents.ppo.FastMaskablePPO` (same
    #: distribution, SB3's own update); False runs sb3-contrib's stock loop [ours]
    fast_rollout: bool = True


@dataclass(frozen=True)
class ExpertConfig(_Typed, Validated):
    """GA and PSO over a window of tasks [ours: the paper gives no settings]."""

    window: int = bounded(30, gt=0)  #: tasks per expert call [code]
    ga_population: int = bounded(32, gt=0)
    ga_generations: int = bounded(30, gt=0)
    ga_mutation: float = bounded(0.1, ge=0, le=1)  #: per-gene probability of a random feasible server
    ga_elite: int = bounded(2, ge=0)
    pso_particles: int = bounded(32, gt=0)
    pso_iterations: int = bounded(30, gt=0)
    pso_inertia: float = bounded(0.7, ge=0)
    pso_c1: float = bounded(1.5, ge=0)
    pso_c2: float = bounded(1.5, ge=0)
    miss_penalty: float = bounded(1.0, ge=0)  #: fitness cost per missed deadline, in reward units
    #: probability that a child mixes two parents (uniform crossover)
    ga_crossover: float = bounded(0.9, ge=0, le=1)
    pso_vmax: float = bounded(0.5, gt=0)  #: PSO velocity clip, in score units (scores start in [0, 1))
    #: per task and iteration, probability a particle's scores are redrawn
    pso_turbulence: float = bounded(0.3, ge=0, le=1)
    #: genes range over each task's this-many cheapest feasible servers (0: all feasible)
    candidates: int = bounded(16, ge=0, note="0: all feasible")


#: heuristics OINPT can clone (``oinpt.expert``): their decisions are recorded one by one on the
#: offline half, as the window experts' plans are (a test keeps them among ilets.config.HEURISTICS)
HEURISTIC_TEACHERS = ("earliest-finish", "min-energy", "greedy-cost", "least-loaded")
#: how the fine-tuned actor is updated (``finetune.actor_update``)
ACTOR_UPDATES = ("ppo", "awr")
#: what OAIL's corrections label (``finetune.oail_targets``)
OAIL_TARGETS = ("plans", "dagger")
#: the experts OAIL can call: the rows of :data:`ilets.expert_table.EXPERT_SPECS`
EXPERT_NAMES = tuple(EXPERT_SPECS)


def valid_teacher(name: str) -> bool:
    """Whether OINPT can clone ``name``: a heuristic of :data:`HEURISTIC_TEACHERS`, or experts
    of :data:`EXPERT_NAMES` joined by "+", each once (:func:`ilets.expert_table.team`)."""
    if name in HEURISTIC_TEACHERS:
        return True
    try:
        team(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class OINPTConfig(_Typed, Validated):
    """Offline behaviour cloning into PPO's policy [code: lr 1e-3, batch 64]."""

    #: an expert of ilets.expert_table, or a team joined by "+" whose cheaper plan per window is
    #: kept: "ga+pso" (the paper's) or "greedy"; or a heuristic of :data:`HEURISTIC_TEACHERS`,
    #: recorded decision by decision (the RL stage's positive control clones a weaker teacher)
    expert: str = bounded("ga+pso", test=valid_teacher,
                          what=f"experts of {EXPERT_NAMES} joined by '+', each once (e.g. 'ga+pso', 'greedy'), "
                               f"or a heuristic of {HEURISTIC_TEACHERS}")
    #: cap on offline tasks demonstrated (GA/PSO cost; the pilot's choice) [ours]
    max_demo_tasks: int = bounded(5_000, gt=0)
    bc_epochs: int = bounded(10, gt=0)  #: the pilot's choice [ours]
    batch_size: int = bounded(64, gt=0)
    learning_rate: float = bounded(1e-3, gt=0)
    critic_pretrain: bool = True  #: regress V on discounted expert returns [ours]
    critic_epochs: int = bounded(20, gt=0)
    #: share of the cloned labels replaced by a uniformly random allowed server (a noisy
    #: expert, for the expert-quality shift of ``configs/shifts.yaml``) [ours]
    label_noise: float = bounded(0.0, ge=0, le=1, what="a share")


OAIL_CLOCKS = ("simulated", "wall", "sync")
#: what an OAIL request plans: the tasks before it (an online scheduler's view) or after (the authors')
WINDOW_MODES = ("past", "upcoming")
#: fault-injection experts of the tests (``ilets.agents.emulator``): ``slow:<seconds>:<expert>`` delays
#: a real expert, ``crash`` raises, ``exit`` kills its worker process
_FAULT = re.compile(r"slow:(?P<s>[^:]+):(?P<name>[^:]+)|crash|exit")


def valid_expert_name(name: str) -> bool:
    """Whether ``name`` is a real OAIL expert or a fault-injection one (see :data:`_FAULT`)."""
    if name in EXPERT_NAMES:
        return True
    m = _FAULT.fullmatch(name)
    if m is None:
        return False
    if m.group("name") is None:  # crash / exit
        return True
    try:
        seconds = float(m.group("s"))
    except ValueError:
        return False
    return math.isfinite(seconds) and seconds >= 0 and m.group("name") in EXPERT_NAMES


@dataclass(frozen=True)
class OAILConfig(_Typed, Validated):
    """Online asynchronous imitation [code: every 30 tasks, GA+PSO, weights 0.6/0.4]."""

    every: int = bounded(30, gt=0)
    #: a mode of WINDOW_MODES: "past" (an online scheduler's view) or "upcoming" (authors')
    window_mode: str = bounded("past", choices=WINDOW_MODES)
    experts: tuple[str, ...] = bounded(("ga", "pso"), nonempty=True, test=valid_expert_name,
                                       what=f"an expert of {EXPERT_NAMES}")
    weights: tuple[float, ...] = bounded((0.6, 0.4), ge=0)  #: better expert first
    workers: int = bounded(1, gt=0)
    #: requests that may wait for a busy slot; beyond it they are dropped (0: a request that
    #: finds every slot busy is dropped)
    max_pending: int = bounded(4, ge=0)
    bc_steps: int = bounded(1, gt=0)  #: gradient steps per expert demonstration batch
    learning_rate: float = bounded(1e-4, gt=0)
    #: "simulated" (default): a request submitted at simulated time t is planned by one of
    #: ``workers`` emulator slots and its plans reach the learner at t + ``latency_s``
    #: simulated seconds, so served, dropped and applied windows never depend on the host's
    #: speed and the run is bit-reproducible. "wall": plans are used whenever the worker
    #: process happens to finish (host-speed dependent; kept for comparison). "sync": every
    #: window's plans are in before the next decision (the authors' synchronous emulator).
    clock: str = bounded("simulated", choices=OAIL_CLOCKS)
    #: simulated seconds from submitting a window to its plans reaching the learner; the
    #: default is the measured time of one request (GA then PSO, shared preparation) on
    #: paper-scale snapshots (see configs/methods.yaml and benchmarks/bench_experts.py) [ours]
    latency_s: float = bounded(0.04, ge=0, what="a number of seconds")
    #: wall seconds the learner waits for a request's plans once they are due (simulated
    #: clock); past it the request counts as failed, with a warning, and the run goes on. A
    #: safety net against a hung expert, far above the ~0.04 s one request takes, so that a
    #: slow host never reaches it (reaching it makes the run depend on the host's speed) [ours]
    request_timeout_s: float = bounded(60.0, gt=0, what="a number of seconds")

    def relations(self, where: str) -> None:
        """One weight per expert, with a positive sum."""
        if len(self.weights) != len(self.experts):
            raise ConfigError(f"{where}.weights: expected one weight per expert ({len(self.experts)})")
        if not sum(self.weights) > 0:
            raise ConfigError(f"{where}.weights: expected weights >= 0 with a positive sum, got {list(self.weights)}")


@dataclass(frozen=True)
class FinetuneConfig(_Typed, Validated):
    """Fine-tuning a cloned policy with PPO so that it keeps what imitation taught [ours].

    Every part is off at its default, which is the faithful study's PPO (the authors fine-tune
    with plain PPO). The book's pilot chapter says which parts the per-server learners use.
    """

    #: critic warm-up: PPO updates only the critic (the actor is frozen) until the critic's
    #: explained variance on a rollout reaches ``critic_warmup_ev`` for two rollouts in a row,
    #: or for at most this many rollouts (0: off). The rule is written before any run.
    critic_warmup_rollouts: int = bounded(0, ge=0)
    critic_warmup_ev: float = bounded(0.5, ge=-1, le=1)  #: explained variance at which the warm-up ends
    #: kickstarting: each PPO minibatch adds ``kl_coef * decay**k * KL(clone || policy)``
    #: on its states, k the number of PPO updates so far (0: off)
    kl_coef: float = bounded(0.0, ge=0)
    kl_decay: float = bounded(0.99, gt=0, le=1)  #: per-update factor of the KL weight
    #: OAIL corrections that relabel the learner's own recent states with the expert's
    #: choice (DAgger-style), beside the window plans: "plans" (the authors') or "dagger"
    oail_targets: str = bounded("plans", choices=OAIL_TARGETS)
    #: held-out greedy evaluations through the pass (ilets.agents.checkpoints; 0: none)
    checkpoints: int = bounded(0, ge=0)
    #: tasks of each held-out evaluation (the end of the offline half)
    checkpoint_tasks: int = bounded(5_000, gt=0)
    #: heuristics scored once on the same held-out segment, for the RL stage's control (its
    #: gap to close); recorded as ``heldout_ref_<name>_<metric>``
    checkpoint_references: tuple[str, ...] = bounded((), choices=HEURISTIC_TEACHERS, what="a heuristic")
    #: "ppo": SB3's clipped surrogate updates the actor; "awr": SB3's update trains the critic
    #: only, then the actor takes advantage-weighted regression steps on the rollout's own
    #: actions (weights ``exp(A / awr_beta)`` of the normalised advantages, clipped at 20) [ours]
    actor_update: str = bounded("ppo", choices=ACTOR_UPDATES)
    awr_beta: float = bounded(1.0, gt=0)
    #: record the RL stage's diagnostics per update: the policy gradient's signal-to-noise and
    #: the share of the rollout's states where the greedy action differs from the clone's
    diagnostics: bool = False
