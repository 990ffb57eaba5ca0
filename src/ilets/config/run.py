"""The whole configuration of one cell (:class:`RunConfig`), what a run may name, and its digest."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ilets.config.learning import ExpertConfig, FinetuneConfig, OAILConfig, OINPTConfig, PPOConfig
from ilets.config.strict import ConfigError, _Typed, merge, read_yaml, to_dict
from ilets.config.validate import check_config, bounded
from ilets.config.world import SEED_MAX, SYNTHETIC_TASKS, FleetConfig, RewardConfig, WorkloadConfig
from ilets.method_table import LEARNERS, METHOD_SPECS

#: The learning methods (their table, with what each adds to PPO, is ilets.method_table).
METHODS = LEARNERS
#: Observation layouts a run may name; each is a tuple of feature blocks in ilets.agents.observation.LAYOUTS.
OBSERVATIONS = ("paper", "rich", "per-server")
#: Policy networks a run may name (ilets.agents.per_server, ilets.agents.ppo): "flat", the
#: authors' MLP over the concatenated observation, and "per-server", one shared network that
#: scores each server from its own row (it reads the "per-server" layout only) [ours].
POLICIES = ("flat", "per-server")
#: which observation layouts each policy can read
POLICY_LAYOUTS = {"flat": OBSERVATIONS, "per-server": ("per-server",)}
#: How the per-server policy scores deferring (the grid-command scenario's defer action):
#: "pooled", one logit from the pooled summary; "rows", a "later" score per server, the defer
#: logit their logsumexp (ilets.agents.per_server.PerServerNet, defer_rows) [ours].
DEFER_HEADS = ("pooled", "rows")
#: How the per-server policy scores the admission-cap levels (``RunConfig.cap_head``): one
#: logit each, linear in the pooled summary, or a small ReLU network over it.
CAP_HEADS = ("pooled", "mlp")
HEURISTICS = ("random", "round-robin", "least-loaded", "earliest-finish", "min-energy", "greedy-cost")


@dataclass(frozen=True)
class RunConfig(_Typed):
    """Everything that determines one cell (method x fleet size x seed)."""

    method: str = bounded("drl", choices=METHODS + HEURISTICS)
    seed: int = bounded(0, ge=0, le=SEED_MAX)
    variant: str = ""  #: label of an ablation/sensitivity variant ("" = the main study)
    #: a layout of OBSERVATIONS: "paper" (2M+2, the authors'), "rich" (5M+2) or "per-server" [ours]
    observation: str = bounded("paper", choices=OBSERVATIONS)
    #: a network of POLICIES: "flat" (the authors') or "per-server" [ours]
    policy: str = bounded("flat", choices=POLICIES)
    server_hidden: int = bounded(32, gt=0)  #: units of each layer of the per-server policy [ours]
    #: a scorer of DEFER_HEADS for the per-server policy's defer action [ours]
    defer_head: str = bounded("pooled", choices=DEFER_HEADS)
    #: a scorer of CAP_HEADS for the per-server policy's admission-cap actions (the grid-command
    #: scenario's ``cap_levels``): "pooled", one logit per level linear in the pooled summary;
    #: "mlp", a hidden ReLU layer of ``server_hidden`` units over it first [ours]
    cap_head: str = bounded("pooled", choices=CAP_HEADS)
    #: rank of the term the per-server policy's placement scores gain from each row times a
    #: vector made from the pooled summary (ilets.agents.per_server.PerServerNet, ``film``;
    #: 0: none) [ours]
    server_film: int = bounded(0, ge=0, what="a rank", note="0: no term")
    curve_every: int = bounded(500, gt=0)  #: decisions per learning-curve point
    #: a per-server cell folder whose final policy (its ``policy/`` weights) the learner starts
    #: from instead of a fresh network, and fine-tunes toward as it would a clone: a learner
    #: that keeps learning in a shifted world (:mod:`ilets.study.shifts`); only for methods
    #: without OINPT (drl, ilets-); "" = a fresh start [ours]
    warm_start: str = ""
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    fleet: FleetConfig = field(default_factory=FleetConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    experts: ExpertConfig = field(default_factory=ExpertConfig)
    oinpt: OINPTConfig = field(default_factory=OINPTConfig)
    oail: OAILConfig = field(default_factory=OAILConfig)
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)

    def validate(self, where: str = "run") -> "RunConfig":
        """Self once every field of every section is in its declared range and the sections
        agree (:func:`ilets.config.validate.check_config`); else a one-line :class:`ConfigError`."""
        return check_config(self, where)

    def relations(self, where: str) -> None:
        """What one section or field asks of another: the per-server policy's heads and layouts,
        DAgger's window, a warm start, enough demonstrations for one BC batch."""
        if self.finetune.oail_targets == "dagger" and self.oail.window_mode != "past":
            raise ConfigError(f"{where}.finetune.oail_targets: 'dagger' relabels decisions the learner made, "
                              f"which needs oail.window_mode 'past', got {self.oail.window_mode!r}")
        if self.defer_head != "pooled" and self.policy != "per-server":
            raise ConfigError(f"{where}.defer_head: {self.defer_head!r} scores deferring per server, which needs "
                              f"policy 'per-server', got {self.policy!r}")
        if self.cap_head != "pooled" and self.policy != "per-server":
            raise ConfigError(f"{where}.cap_head: {self.cap_head!r} is a head of the per-server policy, got policy "
                              f"{self.policy!r}")
        if self.server_film and self.policy != "per-server":
            raise ConfigError(f"{where}.server_film: a term of the per-server policy's scores, got policy "
                              f"{self.policy!r}")
        if self.observation not in POLICY_LAYOUTS[self.policy]:
            raise ConfigError(f"{where}.observation: the {self.policy!r} policy reads the layouts "
                              f"{POLICY_LAYOUTS[self.policy]}, got {self.observation!r}")
        spec = METHOD_SPECS.get(self.method)
        if self.warm_start and (spec is None or spec.oinpt or self.policy != "per-server"):
            raise ConfigError(f"{where}.warm_start: a warm start replaces OINPT's clone and loads per-server weights; "
                              f"expected a per-server learner without OINPT (drl, ilets-), got method "
                              f"{self.method!r} with policy {self.policy!r}")
        if spec is not None and spec.oinpt and self.workload.kind == "synthetic":
            # behaviour cloning draws batches of oinpt.batch_size from the demonstrated offline tasks
            demos = min(self.oinpt.max_demo_tasks, round(SYNTHETIC_TASKS["offline"] * self.workload.scale))
            if demos < self.oinpt.batch_size:
                raise ConfigError(f"{where}.oinpt.batch_size: {self.oinpt.batch_size} exceeds the {demos} offline "
                                  f"task(s) {self.method} demonstrates (workload.scale {self.workload.scale}, "
                                  f"oinpt.max_demo_tasks {self.oinpt.max_demo_tasks}); expected at most {demos}")

    def digest(self) -> str:
        """A short hash of every field: results are keyed by it."""
        return digest_of(to_dict(self))


#: Fields added to :class:`RunConfig` after results were shipped, with their defaults: at the
#: default a field is left out of the digest, so every cell computed before it existed keeps
#: its name and its digest (``ilets verify`` still finds it). Set to anything else, it counts.
#: The fine-tuning fields of the RL stage's control (added after every grid-command key was made):
#: a configuration that nests a run (the grid-command scenario's) leaves them out as ``run.<name>``.
FINETUNE_ADDED = ("finetune.checkpoint_references", "finetune.actor_update", "finetune.awr_beta",
                  "finetune.diagnostics")
#: the same, as a configuration that nests a run under ``run`` names them (the grid-command
#: scenario's cell digests, clone keys and reach keys)
RUN_FINETUNE_ADDED = tuple(f"run.{name}" for name in FINETUNE_ADDED)
ADDED_FIELDS = ("policy", "server_hidden", "finetune", "oail.request_timeout_s", "workload.event_jitter_s",
                "workload.rate_factor", "workload.burst_factor", "workload.trend_slope", "workload.cpu_factor",
                "workload.cpu_source", "warm_start", "oinpt.label_noise", "defer_head",
                "cap_head", "server_film") + FINETUNE_ADDED


def drop_added_defaults(plain: dict[str, Any], added: tuple[str, ...] = ADDED_FIELDS,
                        defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of a run configuration as plain data without the :data:`ADDED_FIELDS` that are at
    their defaults (a dotted name is a field of a section, ``oail.request_timeout_s``); a
    missing section or field is left as it is. What makes records made before a field existed
    compare equal to today's (cell digests, event keys, the book's recorded measurements).
    Another configuration passes its own ``added`` fields and ``defaults`` (as plain data)."""
    defaults = to_dict(RunConfig()) if defaults is None else defaults
    kept = dict(plain)
    # deepest names first: a section added whole (``finetune``) is compared with its default
    # after the fields added to it since (``finetune.diagnostics``) have left both, so a record
    # made before those fields existed still reads as that section at its default
    for dotted in sorted(added, key=lambda name: -name.count(".")):
        *sections, leaf = dotted.split(".")
        holder, default = kept, defaults
        for section in sections:
            if not isinstance(holder.get(section), dict):
                break
            holder[section] = dict(holder[section])  # a copy: ``plain`` is left as it was
            holder, default = holder[section], default[section]
        else:
            if leaf in holder and _without_added(holder[leaf], default[leaf], dotted, added) == \
                    _without_added(default[leaf], default[leaf], dotted, added):
                del holder[leaf]
    return kept


def _without_added(value: Any, default: Any, name: str, added: tuple[str, ...]) -> Any:
    """``value`` (a section as plain data) without its fields named in ``added`` under ``name``
    that are at their defaults; anything that is not a section is returned as it is."""
    if not isinstance(value, dict):
        return value
    return {k: v for k, v in value.items() if not (f"{name}.{k}" in added and v == default.get(k))}


def digest_of(plain: dict[str, Any]) -> str:
    """:meth:`RunConfig.digest` of a configuration as plain data (e.g. read back from a
    cell's ``config.yaml``): the first 12 hex digits of the SHA-256 of its sorted JSON,
    :data:`ADDED_FIELDS` at their defaults left out (:func:`drop_added_defaults`)."""
    kept = drop_added_defaults(plain)
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:12]


def load_run_config(path: str | Path | None = None, **overrides: Any) -> RunConfig:
    """A validated :class:`RunConfig` from an optional YAML file plus keyword overrides."""
    data = read_yaml(path) if path else {}
    where = str(path) if path else "run"
    cfg = merge(RunConfig(), data, where)
    cfg = merge(cfg, overrides, where)
    return cfg.validate(where)
