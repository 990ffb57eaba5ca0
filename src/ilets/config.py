"""Typed configuration: every knob of a run in one tree of frozen dataclasses.

Defaults live here. ``configs/methods.yaml`` restates the methods' hyperparameters with the
reason and source of each value (a test keeps the two equal); profiles and run files
(``configs/*.yaml``) override them; loading
is strict: an unknown key, a wrong type or an impossible value raises :class:`ConfigError`
naming the file and the dotted key, before anything runs. Choices the paper does not state
are marked ``[ours]`` and listed in the book's deviations table.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import numbers
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ilets.method_table import LEARNERS, METHOD_SPECS


class ConfigError(ValueError):
    """A configuration value is missing, unknown, of the wrong type or out of range."""


class _Typed:
    """Base of the configuration dataclasses: a field given a value of the wrong type (from
    Python; YAML goes through :func:`from_dict`) raises a :class:`TypeError` that names the
    field and the type it expects, instead of failing later deep inside numpy or torch."""

    def __post_init__(self) -> None:
        for name, tp in _field_types(type(self)).items():
            problem = _type_problem(getattr(self, name), tp)
            if problem is not None:
                raise TypeError(f"{type(self).__name__}.{name}{problem}")


@functools.lru_cache(maxsize=None)
def _field_types(cls: type) -> dict:
    return {f.name: typing.get_type_hints(cls)[f.name] for f in dataclasses.fields(cls)}


def _type_problem(value: Any, tp: Any) -> str | None:
    """``": expected ..., got ..."`` (prefixed ``[i]`` for a tuple's item) when ``value`` is
    not of type ``tp``; None when it is. An integer counts as a number; a bool as neither."""
    got = f"got {type(value).__name__} {value!r}"
    if dataclasses.is_dataclass(tp):
        return None if isinstance(value, tp) else f": expected a {tp.__name__}, {got}"
    if typing.get_origin(tp) is tuple:
        if not isinstance(value, (tuple, list)):
            return f": expected a tuple, {got}"
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * len(value)
        elif len(value) != len(args):
            return f": expected {len(args)} items, got {len(value)}"
        for i, (v, a) in enumerate(zip(value, args)):
            problem = _type_problem(v, a)
            if problem is not None:
                return f"[{i}]{problem}"
        return None
    if tp is float:
        ok, expected = isinstance(value, numbers.Real), "a number (float)"
    elif tp is int:
        ok, expected = isinstance(value, numbers.Integral), "an integer (int)"
    elif tp is bool:
        return None if isinstance(value, bool) else f": expected true or false (bool), {got}"
    elif tp is str:
        return None if isinstance(value, str) else f": expected a string (str), {got}"
    else:
        return None
    return None if ok and not isinstance(value, bool) else f": expected {expected}, {got}"


#: Task counts of the synthetic window's offline and online halves at scale 1 (the paper's;
#: ilets.workloads.trace.PAPER_OFFLINE_TASKS and PAPER_ONLINE_TASKS: this base module cannot
#: import them, a test checks that they agree). A scale gives ``round(count * scale)`` tasks.
SYNTHETIC_TASKS = {"offline": 330_632, "online": 259_368}


#: the largest event jitter, s: under half the smallest gap (310 s) between the synthetic
#: window's designed knots and bursts (ilets.workloads.workload.RATE_SHAPE), so that events
#: keep their order whatever the draw (a test checks the gap)
MAX_EVENT_JITTER_S = 150.0


@dataclass(frozen=True)
class WorkloadConfig(_Typed):
    """Where tasks come from and the parameters the trace lacks."""

    kind: str = "synthetic"  #: "synthetic" (embedded default) or "google" (trace shards)
    scale: float = 1.0  #: fraction of the paper's 590,000-task window (counts and duration)
    length_mi: tuple[float, float] = (500.0, 3000.0)  #: task length range, MI [lineage]
    deadline_s: tuple[float, float] = (1.5, 4.5)  #: relative deadline range, s [ours]
    trace_dir: str = ""  #: folder with task_events shards (google only)
    window_start_s: float = -1.0  #: trace time of the window start; -1: day 10 start [ours]
    window_s: float = 3000.0  #: window length, s (paper: 50 minutes)
    #: the synthetic window's designed events (bursts, trend knots) each move by a uniform draw
    #: in [-event_jitter_s, +event_jitter_s] seconds, drawn from the run seed, so that the event
    #: schedule changes with the seed ("worlds as replicates"); 0: the designed schedule [ours]
    event_jitter_s: float = 0.0

    def validate(self, where: str) -> None:
        if self.kind not in ("synthetic", "google"):
            raise ConfigError(f"{where}.kind: expected 'synthetic' or 'google', got {self.kind!r}")
        if not 0 < self.scale <= 1:
            raise ConfigError(f"{where}.scale: expected a number in (0, 1], got {self.scale}")
        if self.kind == "synthetic":
            for half, count in SYNTHETIC_TASKS.items():
                if round(count * self.scale) < 1:  # every cell would fail late, or run on one task
                    raise ConfigError(f"{where}.scale: {self.scale} gives no task in the {half} half "
                                      f"({count:,} x scale rounds to 0); expected a scale above "
                                      f"{0.5 / count:.3g}")
        for key in ("length_mi", "deadline_s"):
            lo, hi = getattr(self, key)
            if not 0 < lo <= hi:
                raise ConfigError(f"{where}.{key}: expected 0 < low <= high, got {(lo, hi)}")
        if self.window_s <= 0:
            raise ConfigError(f"{where}.window_s: expected > 0, got {self.window_s}")
        if not 0 <= self.event_jitter_s <= MAX_EVENT_JITTER_S:
            raise ConfigError(f"{where}.event_jitter_s: expected a number of seconds in [0, {MAX_EVENT_JITTER_S:g}] "
                              f"(events must keep their order in the window), got {self.event_jitter_s}")
        if self.event_jitter_s and self.kind != "synthetic":
            raise ConfigError(f"{where}.event_jitter_s: only the synthetic window has designed events; "
                              f"expected 0 with kind {self.kind!r}")
        if self.window_start_s < 0 and self.window_start_s != -1:
            raise ConfigError(f"{where}.window_start_s: expected -1 (day 10) or a time >= 0 s, "
                              f"got {self.window_start_s}")


@dataclass(frozen=True)
class FleetConfig(_Typed):
    """A heterogeneous fleet; ranges are [ours] (the paper does not publish them)."""

    servers: int = 50
    seed: int = 0  #: the fleet is a fixed data centre: run seeds vary workload and learning
    #: CPU capacities in trace units and their shares (the 2011 trace: mostly 0.5, some 1.0,
    #: a few 0.25).
    capacity_levels: tuple[float, ...] = (0.25, 0.5, 1.0)
    capacity_probs: tuple[float, ...] = (0.1, 0.7, 0.2)
    #: service rate range, MIPS, steps of 50; chosen so that in the paper's full online
    #: window 50 servers are loaded but not swamped (see the workload chapter's load table)
    mips: tuple[float, float] = (600.0, 1800.0)
    idle_w: tuple[float, float] = (50.0, 100.0)  #: idle power per 0.5 capacity, W
    active_w: tuple[float, float] = (70.0, 300.0)  #: extra power at full use per 0.5 cap., W

    def validate(self, where: str) -> None:
        if not 1 <= self.servers <= 100_000:
            raise ConfigError(f"{where}.servers: expected an integer in [1, 100000], got {self.servers}")
        if len(self.capacity_levels) != len(self.capacity_probs) or not self.capacity_levels:
            raise ConfigError(f"{where}.capacity_probs: expected one share per capacity level")
        if any(c <= 0 for c in self.capacity_levels):
            raise ConfigError(f"{where}.capacity_levels: capacities must be > 0")
        if abs(sum(self.capacity_probs) - 1) > 1e-9 or min(self.capacity_probs) < 0:
            raise ConfigError(f"{where}.capacity_probs: expected non-negative shares summing to 1")
        for key in ("mips", "idle_w", "active_w"):
            lo, hi = getattr(self, key)
            if not 0 <= lo <= hi or (key == "mips" and lo <= 0):
                raise ConfigError(f"{where}.{key}: expected 0 < low <= high, got {(lo, hi)}")
        if self.idle_w[1] + self.active_w[1] <= 0:
            raise ConfigError(f"{where}.idle_w/active_w: expected a fleet whose maximum power is > 0, "
                              f"got idle {self.idle_w} and active {self.active_w} W")
        if not 0 <= self.seed <= SEED_MAX:
            raise ConfigError(f"{where}.seed: expected an integer in [0, {SEED_MAX}], got {self.seed}")


WAIT_FORMS = ("capped", "linear", "log")


@dataclass(frozen=True)
class RewardConfig(_Typed):
    """The scheduling cost of the authors' code, normalised [code + ours]."""

    theta: float = 0.3  #: weight of power against waiting [code]
    wait_scale_s: float = 10.0  #: estimated response is divided by this (then shaped by wait_form) [ours]
    #: how the scaled response x = R / wait_scale_s enters the cost [ours, chosen by the pilot]:
    #: "capped" min(1, x), "linear" x, "log" log(1 + x)
    wait_form: str = "log"
    include_execution: bool = True  #: count the task's own execution time in the wait [ours]
    deadline_penalty: float = 0.0  #: added to the cost when the estimate misses the deadline
    infeasible_penalty: float = 1.0  #: added when an action names a server too small

    def validate(self, where: str) -> None:
        if not 0 <= self.theta <= 1:
            raise ConfigError(f"{where}.theta: expected a number in [0, 1], got {self.theta}")
        if self.wait_scale_s <= 0:
            raise ConfigError(f"{where}.wait_scale_s: expected > 0, got {self.wait_scale_s}")
        if self.wait_form not in WAIT_FORMS:
            raise ConfigError(f"{where}.wait_form: expected one of {WAIT_FORMS}, got {self.wait_form!r}")
        for key in ("deadline_penalty", "infeasible_penalty"):
            if not getattr(self, key) >= 0:
                raise ConfigError(f"{where}.{key}: expected a number >= 0, got {getattr(self, key)}")


@dataclass(frozen=True)
class PPOConfig(_Typed):
    """PPO for one online pass; see ``configs/methods.yaml`` for why these values."""

    learning_rate: float = 3e-4
    n_steps: int = 256
    batch_size: int = 64
    n_epochs: int = 2  #: the pilot's choice
    gamma: float = 0.98  #: [code]
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


@dataclass(frozen=True)
class OINPTConfig(_Typed):
    """Offline behaviour cloning into PPO's policy [code: lr 1e-3, batch 64]."""

    expert: str = "ga+pso"  #: "ga+pso" (the paper's) or "greedy"
    max_demo_tasks: int = 5_000  #: cap on offline tasks demonstrated (GA/PSO cost; the pilot's choice) [ours]
    bc_epochs: int = 10  #: the pilot's choice [ours]
    batch_size: int = 64
    learning_rate: float = 1e-3
    critic_pretrain: bool = True  #: regress V on discounted expert returns [ours]
    critic_epochs: int = 20

    def validate(self, where: str) -> None:
        if self.expert not in ("ga+pso", "greedy"):
            raise ConfigError(f"{where}.expert: expected 'ga+pso' or 'greedy', got {self.expert!r}")
        for key in ("max_demo_tasks", "bc_epochs", "batch_size", "critic_epochs", "learning_rate"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"{where}.{key}: expected > 0, got {getattr(self, key)}")


OAIL_CLOCKS = ("simulated", "wall", "sync")
#: the experts OAIL can call (``ilets.agents.experts``); kept here so that config needs no import
EXPERT_NAMES = ("ga", "pso", "greedy")
#: fault-injection experts of the tests (``ilets.agents.oail``): ``slow:<seconds>:<expert>`` delays
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
        if self.oail_targets not in ("plans", "dagger"):
            raise ConfigError(f"{where}.oail_targets: expected 'plans' or 'dagger', got {self.oail_targets!r}")


#: The learning methods (their table, with what each adds to PPO, is ilets.method_table).
METHODS = LEARNERS
#: run seeds go to numpy and torch, which take seeds in [0, 2**32)
SEED_MAX = 2**32 - 1
#: Observation layouts a run may name; each is a tuple of feature blocks in ilets.agents.observation.LAYOUTS.
OBSERVATIONS = ("paper", "rich", "per-server")
#: Policy networks a run may name (ilets.agents.per_server, ilets.agents.ppo): "flat", the
#: authors' MLP over the concatenated observation, and "per-server", one shared network that
#: scores each server from its own row (it reads the "per-server" layout only) [ours].
POLICIES = ("flat", "per-server")
#: which observation layouts each policy can read
POLICY_LAYOUTS = {"flat": OBSERVATIONS, "per-server": ("per-server",)}
HEURISTICS = ("random", "round-robin", "least-loaded", "earliest-finish", "min-energy", "greedy-cost")


@dataclass(frozen=True)
class RunConfig(_Typed):
    """Everything that determines one cell (method x fleet size x seed)."""

    method: str = "drl"
    seed: int = 0
    variant: str = ""  #: label of an ablation/sensitivity variant ("" = the main study)
    observation: str = "paper"  #: a layout of OBSERVATIONS: "paper" (2M+2, the authors'), "rich" (5M+2) or "per-server" [ours]
    policy: str = "flat"  #: a network of POLICIES: "flat" (the authors') or "per-server" [ours]
    server_hidden: int = 32  #: units of each layer of the per-server policy [ours]
    curve_every: int = 500  #: decisions per learning-curve point
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    fleet: FleetConfig = field(default_factory=FleetConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    experts: ExpertConfig = field(default_factory=ExpertConfig)
    oinpt: OINPTConfig = field(default_factory=OINPTConfig)
    oail: OAILConfig = field(default_factory=OAILConfig)
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)

    def validate(self, where: str = "run") -> "RunConfig":
        if self.method not in METHODS + HEURISTICS:
            raise ConfigError(f"{where}.method: expected one of {METHODS + HEURISTICS}, got {self.method!r}")
        if self.observation not in OBSERVATIONS:
            raise ConfigError(f"{where}.observation: expected one of {OBSERVATIONS}, got {self.observation!r}")
        if self.server_hidden <= 0:
            raise ConfigError(f"{where}.server_hidden: expected > 0, got {self.server_hidden}")
        if self.finetune.oail_targets == "dagger" and self.oail.window_mode != "past":
            raise ConfigError(f"{where}.finetune.oail_targets: 'dagger' relabels decisions the learner made, "
                              f"which needs oail.window_mode 'past', got {self.oail.window_mode!r}")
        if self.policy not in POLICIES:
            raise ConfigError(f"{where}.policy: expected one of {POLICIES}, got {self.policy!r}")
        if self.observation not in POLICY_LAYOUTS[self.policy]:
            raise ConfigError(f"{where}.observation: the {self.policy!r} policy reads the layouts "
                              f"{POLICY_LAYOUTS[self.policy]}, got {self.observation!r}")
        if self.curve_every <= 0:
            raise ConfigError(f"{where}.curve_every: expected > 0, got {self.curve_every}")
        if not 0 <= self.seed <= SEED_MAX:
            raise ConfigError(f"{where}.seed: expected an integer in [0, {SEED_MAX}], got {self.seed}")
        spec = METHOD_SPECS.get(self.method)
        if spec is not None and spec.oinpt and self.workload.kind == "synthetic":
            # behaviour cloning draws batches of oinpt.batch_size from the demonstrated offline tasks
            demos = min(self.oinpt.max_demo_tasks, round(SYNTHETIC_TASKS["offline"] * self.workload.scale))
            if demos < self.oinpt.batch_size:
                raise ConfigError(f"{where}.oinpt.batch_size: {self.oinpt.batch_size} exceeds the {demos} offline "
                                  f"task(s) {self.method} demonstrates (workload.scale {self.workload.scale}, "
                                  f"oinpt.max_demo_tasks {self.oinpt.max_demo_tasks}); expected at most {demos}")
        # NaN fails every comparison, so the range checks below would let it through
        check_finite(self, where)
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if dataclasses.is_dataclass(value):
                value.validate(f"{where}.{f.name}")
        return self

    def digest(self) -> str:
        """A short hash of every field: results are keyed by it."""
        return digest_of(to_dict(self))


#: Fields added to :class:`RunConfig` after results were shipped, with their defaults: at the
#: default a field is left out of the digest, so every cell computed before it existed keeps
#: its name and its digest (``ilets verify`` still finds it). Set to anything else, it counts.
ADDED_FIELDS = ("policy", "server_hidden", "finetune", "oail.request_timeout_s", "workload.event_jitter_s")


def digest_of(plain: dict) -> str:
    """:meth:`RunConfig.digest` of a configuration as plain data (e.g. read back from a
    cell's ``config.yaml``): the first 12 hex digits of the SHA-256 of its sorted JSON.

    :data:`ADDED_FIELDS` at their defaults are left out (see there); a dotted name is a
    field of a section (``oail.request_timeout_s``)."""
    defaults = to_dict(RunConfig())
    kept = dict(plain)
    for dotted in ADDED_FIELDS:
        *sections, leaf = dotted.split(".")
        holder, default = kept, defaults
        for section in sections:
            if not isinstance(holder.get(section), dict):
                break
            holder[section] = dict(holder[section])  # a copy: ``plain`` is left as it was
            holder, default = holder[section], default[section]
        else:
            if leaf in holder and holder[leaf] == default[leaf]:
                del holder[leaf]
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:12]


# --- generic strict (de)serialisation ---------------------------------------------------

def to_dict(obj: Any) -> Any:
    """A dataclass tree as plain dicts/lists (tuples become lists), for YAML/JSON."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    return obj


def check_finite(obj: Any, where: str) -> None:
    """Raise ConfigError naming the first float (or float in a tuple) of ``obj`` that is NaN or inf."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            check_finite(value, f"{where}.{f.name}")
            continue
        items = value if isinstance(value, tuple) else (value,)
        for i, v in enumerate(items):
            if isinstance(v, float) and not math.isfinite(v):
                at = f"{where}.{f.name}" + (f"[{i}]" if isinstance(value, tuple) else "")
                raise ConfigError(f"{at}: expected a finite number, got {v}")


def _coerce(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
        return from_dict(tp, value, where)
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise ConfigError(f"{where}: expected a list of {len(args)} items, got {len(value)}")
        return tuple(_coerce(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
    if origin in (typing.Union, types.UnionType):
        for a in typing.get_args(tp):
            try:
                return _coerce(value, a, where)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: expected {tp}, got {value!r}")
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        try:
            value = float(value)
        except OverflowError:
            raise ConfigError(f"{where}: expected a finite number, got an integer too large") from None
        if not math.isfinite(value):
            raise ConfigError(f"{where}: expected a finite number, got {value}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def from_dict(cls: type, data: dict, where: str = "config") -> Any:
    """Build dataclass ``cls`` from ``data``; unknown keys and wrong types raise ConfigError."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(names)}")
    kwargs = {k: _coerce(v, hints[k], f"{where}.{k}") for k, v in data.items()}
    return cls(**kwargs)


def merge(base: Any, overrides: dict, where: str = "config") -> Any:
    """A copy of dataclass ``base`` with nested ``overrides`` applied (validated)."""
    current = to_dict(base)

    def deep(a: dict, b: dict) -> dict:
        out = dict(a)
        for k, v in b.items():
            out[k] = deep(a[k], v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
        return out

    return from_dict(type(base), deep(current, overrides or {}), where)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with a repeated key (PyYAML keeps the last silently)."""

    def construct_mapping(self, node, deep=False):  # type: ignore[override]
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: the base class reports it
                    continue
                if repeated:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (each key may appear once per mapping)",
                        key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 (PyYAML) reads 1e9 and 2e-3 as strings: a float needs a dot and a signed exponent
# there. Numbers in exponent form are numbers here, as in YAML 1.2 and JSON.
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def read_yaml(path: str | Path) -> dict:
    """A YAML mapping from ``path``; a missing file, a folder, a repeated key or a non-mapping
    raises ConfigError."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; expected a YAML file")
    if not path.is_file():
        raise ConfigError(f"{path}: configuration file not found")
    try:
        data = yaml.load(path.read_text(), Loader=_StrictLoader)  # noqa: S506 -- a SafeLoader subclass
    except yaml.YAMLError as err:
        # one line: the problem and where, without PyYAML's multi-line excerpt
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        mark = getattr(err, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML: {problem}{at}") from err
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: unreadable: {err}") from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def load_run_config(path: str | Path | None = None, **overrides: Any) -> RunConfig:
    """A validated :class:`RunConfig` from an optional YAML file plus keyword overrides."""
    data = read_yaml(path) if path else {}
    where = str(path) if path else "run"
    cfg = merge(RunConfig(), data, where)
    cfg = merge(cfg, overrides, where)
    return cfg.validate(where)
