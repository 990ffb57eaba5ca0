"""The sections of a run's configuration that describe its learners: PPO, the experts, OINPT, OAIL, fine-tuning."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ilets.config.strict import ConfigError, _Typed
from ilets.expert_table import EXPERT_SPECS, team


@dataclass(frozen=True)
class PPOConfig(_Typed):
    """PPO for one online pass; see ``configs/methods.yaml`` for why these values."""

    learning_rate: float = 3e-4  #: Adam's step size (SB3's default) [ours]
    n_steps: int = 256  #: decisions per rollout, between two updates [ours]
    batch_size: int = 64  #: samples per gradient step [code]
    n_epochs: int = 2  #: passes over each rollout, the pilot's choice [ours]
    gamma: float = 0.98  #: discount factor [code]
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01  #: the pilot's choice
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 128  #: one hidden layer of this width for actor and critic [paper]
    #: collect rollouts with the numpy loop of :class:`ilets.agents.ppo.FastMaskablePPO` (same
    #: distribution, SB3's own update); False runs sb3-contrib's stock loop [ours]
    fast_rollout: bool = True

    def validate(self, where: str) -> None:
        for key in ("learning_rate", "n_steps", "batch_size", "n_epochs", "hidden"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"{where}.{key}: expected > 0, got {getattr(self, key)}")
        if not 0 <= self.gamma <= 1:  # 0: the return is the step's own reward (a cost fixed at assignment)
            raise ConfigError(f"{where}.gamma: expected a number in [0, 1], got {self.gamma}")
        if not 0 <= self.gae_lambda <= 1:
            raise ConfigError(f"{where}.gae_lambda: expected a number in [0, 1], got {self.gae_lambda}")
        for key in ("clip_range", "max_grad_norm"):
            if not getattr(self, key) > 0:
                raise ConfigError(f"{where}.{key}: expected > 0, got {getattr(self, key)}")
        for key in ("ent_coef", "vf_coef"):
            if not getattr(self, key) >= 0:
                raise ConfigError(f"{where}.{key}: expected a number >= 0, got {getattr(self, key)}")


@dataclass(frozen=True)
class ExpertConfig(_Typed):
    """GA and PSO over a window of tasks [ours: the paper gives no settings]."""

    window: int = 30  #: tasks per expert call [code]
    ga_population: int = 32
    ga_generations: int = 30
    ga_mutation: float = 0.1  #: per-gene probability of a random feasible server
    ga_elite: int = 2
    pso_particles: int = 32
    pso_iterations: int = 30
    pso_inertia: float = 0.7
    pso_c1: float = 1.5
    pso_c2: float = 1.5
    miss_penalty: float = 1.0  #: fitness cost per missed deadline, in reward units
    ga_crossover: float = 0.9  #: probability that a child mixes two parents (uniform crossover)
    pso_vmax: float = 0.5  #: PSO velocity clip, in score units (scores start in [0, 1))
    pso_turbulence: float = 0.3  #: per task and iteration, probability a particle's scores are redrawn
    #: genes range over each task's this-many cheapest feasible servers (0: all feasible)
    candidates: int = 16

    def validate(self, where: str) -> None:
        for key in ("window", "ga_population", "ga_generations", "pso_particles", "pso_iterations"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"{where}.{key}: expected > 0, got {getattr(self, key)}")
        for key in ("ga_mutation", "ga_crossover", "pso_turbulence"):
            if not 0 <= getattr(self, key) <= 1:
                raise ConfigError(f"{where}.{key}: expected a number in [0, 1], got {getattr(self, key)}")
        if self.ga_elite < 0 or self.candidates < 0:
            raise ConfigError(f"{where}.ga_elite/candidates: expected >= 0, got {self.ga_elite}/{self.candidates}")
        if self.pso_vmax <= 0:
            raise ConfigError(f"{where}.pso_vmax: expected > 0, got {self.pso_vmax}")
        for key in ("pso_inertia", "pso_c1", "pso_c2", "miss_penalty"):
            if not getattr(self, key) >= 0:
                raise ConfigError(f"{where}.{key}: expected a number >= 0, got {getattr(self, key)}")


#: heuristics OINPT can clone (``oinpt.expert``): their decisions are recorded one by one on the
#: offline half, as the window experts' plans are (a test keeps them among ilets.config.HEURISTICS)
HEURISTIC_TEACHERS = ("earliest-finish", "min-energy", "greedy-cost", "least-loaded")
#: how the fine-tuned actor is updated (``finetune.actor_update``)
ACTOR_UPDATES = ("ppo", "awr")


@dataclass(frozen=True)
class OINPTConfig(_Typed):
    """Offline behaviour cloning into PPO's policy [code: lr 1e-3, batch 64]."""

    #: an expert of ilets.expert_table, or a team joined by "+" whose cheaper plan per window is
    #: kept: "ga+pso" (the paper's) or "greedy"; or a heuristic of :data:`HEURISTIC_TEACHERS`,
    #: recorded decision by decision (the RL stage's positive control clones a weaker teacher)
    expert: str = "ga+pso"
    max_demo_tasks: int = 5_000  #: cap on offline tasks demonstrated (GA/PSO cost; the pilot's choice) [ours]
    bc_epochs: int = 10  #: the pilot's choice [ours]
    batch_size: int = 64
    learning_rate: float = 1e-3
    critic_pretrain: bool = True  #: regress V on discounted expert returns [ours]
    critic_epochs: int = 20
    #: share of the cloned labels replaced by a uniformly random allowed server (a noisy
    #: expert, for the expert-quality shift of ``configs/shifts.yaml``) [ours]
    label_noise: float = 0.0

    def validate(self, where: str) -> None:
        if not 0 <= self.label_noise <= 1:
            raise ConfigError(f"{where}.label_noise: expected a share in [0, 1], got {self.label_noise}")
        if self.expert in HEURISTIC_TEACHERS:
            pass
        else:
            try:
                team(self.expert)
            except ValueError as err:
                raise ConfigError(f"{where}.expert: {err} (e.g. 'ga+pso', 'greedy' or a heuristic of "
                                  f"{list(HEURISTIC_TEACHERS)}), got {self.expert!r}") from None
        for key in ("max_demo_tasks", "bc_epochs", "batch_size", "critic_epochs", "learning_rate"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"{where}.{key}: expected > 0, got {getattr(self, key)}")


OAIL_CLOCKS = ("simulated", "wall", "sync")
#: the experts OAIL can call: the rows of :data:`ilets.expert_table.EXPERT_SPECS`
EXPERT_NAMES = tuple(EXPERT_SPECS)
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
class OAILConfig(_Typed):
    """Online asynchronous imitation [code: every 30 tasks, GA+PSO, weights 0.6/0.4]."""

    every: int = 30
    window_mode: str = "past"  #: "past" (an online scheduler's view) or "upcoming" (authors')
    experts: tuple[str, ...] = ("ga", "pso")
    weights: tuple[float, ...] = (0.6, 0.4)  #: better expert first
    workers: int = 1
    max_pending: int = 4  #: requests that may wait for a busy slot; beyond it they are dropped
    bc_steps: int = 1  #: gradient steps per expert demonstration batch
    learning_rate: float = 1e-4
    #: "simulated" (default): a request submitted at simulated time t is planned by one of
    #: ``workers`` emulator slots and its plans reach the learner at t + ``latency_s``
    #: simulated seconds, so served, dropped and applied windows never depend on the host's
    #: speed and the run is bit-reproducible. "wall": plans are used whenever the worker
    #: process happens to finish (host-speed dependent; kept for comparison). "sync": every
    #: window's plans are in before the next decision (the authors' synchronous emulator).
    clock: str = "simulated"
    #: simulated seconds from submitting a window to its plans reaching the learner; the
    #: default is the measured time of one request (GA then PSO, shared preparation) on
    #: paper-scale snapshots (see configs/methods.yaml and benchmarks/bench_experts.py) [ours]
    latency_s: float = 0.04
    #: wall seconds the learner waits for a request's plans once they are due (simulated
    #: clock); past it the request counts as failed, with a warning, and the run goes on. A
    #: safety net against a hung expert, far above the ~0.04 s one request takes, so that a
    #: slow host never reaches it (reaching it makes the run depend on the host's speed) [ours]
    request_timeout_s: float = 60.0

    def validate(self, where: str) -> None:
        if self.clock not in OAIL_CLOCKS:
            raise ConfigError(f"{where}.clock: expected one of {OAIL_CLOCKS}, got {self.clock!r}")
        if not self.request_timeout_s > 0:
            raise ConfigError(f"{where}.request_timeout_s: expected a time > 0 s, got {self.request_timeout_s}")
        if not self.latency_s >= 0 or self.latency_s == float("inf"):
            raise ConfigError(f"{where}.latency_s: expected a finite number >= 0, got {self.latency_s}")
        if self.window_mode not in ("past", "upcoming"):
            raise ConfigError(f"{where}.window_mode: expected 'past' or 'upcoming', got {self.window_mode!r}")
        if not self.experts:
            raise ConfigError(f"{where}.experts: expected at least one of {list(EXPERT_NAMES)}")
        bad = [e for e in self.experts if not valid_expert_name(e)]
        if bad:
            raise ConfigError(f"{where}.experts: unknown expert(s) {bad}; expected names from "
                              f"{list(EXPERT_NAMES)}")
        if len(self.weights) != len(self.experts):
            raise ConfigError(f"{where}.weights: expected one weight per expert ({len(self.experts)})")
        if min(self.weights) < 0 or not sum(self.weights) > 0:
            raise ConfigError(f"{where}.weights: expected weights >= 0 with a positive sum, got {list(self.weights)}")
        if not self.learning_rate > 0:
            raise ConfigError(f"{where}.learning_rate: expected > 0, got {self.learning_rate}")
        for key in ("every", "workers", "bc_steps"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"{where}.{key}: expected > 0, got {getattr(self, key)}")
        if self.max_pending < 0:  # 0: a request that finds every slot busy is dropped
            raise ConfigError(f"{where}.max_pending: expected >= 0, got {self.max_pending}")


@dataclass(frozen=True)
class FinetuneConfig(_Typed):
    """Fine-tuning a cloned policy with PPO so that it keeps what imitation taught [ours].

    Every part is off at its default, which is the faithful study's PPO (the authors fine-tune
    with plain PPO). The book's pilot chapter says which parts the per-server learners use.
    """

    #: critic warm-up: PPO updates only the critic (the actor is frozen) until the critic's
    #: explained variance on a rollout reaches ``critic_warmup_ev`` for two rollouts in a row,
    #: or for at most this many rollouts (0: off). The rule is written before any run.
    critic_warmup_rollouts: int = 0
    critic_warmup_ev: float = 0.5  #: explained variance at which the warm-up ends
    #: kickstarting: each PPO minibatch adds ``kl_coef * decay**k * KL(clone || policy)``
    #: on its states, k the number of PPO updates so far (0: off)
    kl_coef: float = 0.0
    kl_decay: float = 0.99  #: per-update factor of the KL weight
    #: OAIL corrections that relabel the learner's own recent states with the expert's
    #: choice (DAgger-style), beside the window plans: "plans" (the authors') or "dagger"
    oail_targets: str = "plans"
    #: held-out greedy evaluations through the pass (ilets.agents.checkpoints; 0: none)
    checkpoints: int = 0
    checkpoint_tasks: int = 5_000  #: tasks of each held-out evaluation (the end of the offline half)
    #: heuristics scored once on the same held-out segment, for the RL stage's control (its
    #: gap to close); recorded as ``heldout_ref_<name>_<metric>``
    checkpoint_references: tuple[str, ...] = ()
    #: "ppo": SB3's clipped surrogate updates the actor; "awr": SB3's update trains the critic
    #: only, then the actor takes advantage-weighted regression steps on the rollout's own
    #: actions (weights ``exp(A / awr_beta)`` of the normalised advantages, clipped at 20) [ours]
    actor_update: str = "ppo"
    awr_beta: float = 1.0
    #: record the RL stage's diagnostics per update: the policy gradient's signal-to-noise and
    #: the share of the rollout's states where the greedy action differs from the clone's
    diagnostics: bool = False

    def validate(self, where: str) -> None:
        if self.critic_warmup_rollouts < 0:
            raise ConfigError(f"{where}.critic_warmup_rollouts: expected >= 0, got {self.critic_warmup_rollouts}")
        if not -1 <= self.critic_warmup_ev <= 1:
            raise ConfigError(f"{where}.critic_warmup_ev: expected a number in [-1, 1], got {self.critic_warmup_ev}")
        if not self.kl_coef >= 0:
            raise ConfigError(f"{where}.kl_coef: expected a number >= 0, got {self.kl_coef}")
        if not 0 < self.kl_decay <= 1:
            raise ConfigError(f"{where}.kl_decay: expected a number in (0, 1], got {self.kl_decay}")
        if self.checkpoints < 0 or self.checkpoint_tasks <= 0:
            raise ConfigError(f"{where}.checkpoints/checkpoint_tasks: expected >= 0 and > 0, got "
                              f"{self.checkpoints}/{self.checkpoint_tasks}")
        bad = [h for h in self.checkpoint_references if h not in HEURISTIC_TEACHERS]
        if bad:
            raise ConfigError(f"{where}.checkpoint_references: expected heuristics of {list(HEURISTIC_TEACHERS)}, "
                              f"got {bad}")
        if self.actor_update not in ACTOR_UPDATES:
            raise ConfigError(f"{where}.actor_update: expected one of {list(ACTOR_UPDATES)}, got {self.actor_update!r}")
        if not self.awr_beta > 0:
            raise ConfigError(f"{where}.awr_beta: expected > 0, got {self.awr_beta}")
        if self.oail_targets not in ("plans", "dagger"):
            raise ConfigError(f"{where}.oail_targets: expected 'plans' or 'dagger', got {self.oail_targets!r}")
