"""Typed configuration: every knob of a run in one tree of frozen dataclasses.

Defaults live here. ``configs/methods.yaml`` restates the methods' hyperparameters with the
reason and source of each value (a test keeps the two equal); profiles and run files
(``configs/*.yaml``) override them; loading
is strict: an unknown key, a wrong type or an impossible value raises :class:`ConfigError`
naming the file and the dotted key, before anything runs. Choices the paper does not state
are marked ``[ours]`` and listed in the book's deviations table.

The package's modules: :mod:`~ilets.config.strict` (the typed base, strict (de)serialisation
and YAML), :mod:`~ilets.config.validate` (each field's declared range or choices, and the one
validator that checks them), :mod:`~ilets.config.world` (workload, fleet, reward),
:mod:`~ilets.config.learning` (PPO, experts, OINPT, OAIL, fine-tuning) and
:mod:`~ilets.config.run` (:class:`RunConfig`, the names a run may use, the digest). Every public name is importable from here.
"""

from ilets.config.learning import (EXPERT_NAMES, OAIL_CLOCKS, ExpertConfig, FinetuneConfig, OAILConfig, OINPTConfig,
                                   PPOConfig, valid_expert_name)
from ilets.config.run import (ADDED_FIELDS, CAP_HEADS, DEFER_HEADS, HEURISTICS, METHODS, OBSERVATIONS, POLICIES,
                              POLICY_LAYOUTS, RunConfig, digest_of, drop_added_defaults, load_run_config)
from ilets.config.strict import ConfigError, from_dict, merge, read_yaml, to_dict
from ilets.config.validate import bounded, check_config
from ilets.config.world import (MAX_EVENT_JITTER_S, SEED_MAX, SYNTHETIC_TASKS, WAIT_FORMS, FleetConfig, RewardConfig,
                                WorkloadConfig)

__all__ = ["ADDED_FIELDS", "CAP_HEADS", "DEFER_HEADS", "EXPERT_NAMES", "HEURISTICS", "MAX_EVENT_JITTER_S", "METHODS",
           "OAIL_CLOCKS", "OBSERVATIONS", "POLICIES", "POLICY_LAYOUTS", "SEED_MAX", "SYNTHETIC_TASKS", "WAIT_FORMS",
           "ConfigError", "ExpertConfig", "FinetuneConfig", "FleetConfig", "OAILConfig", "OINPTConfig", "PPOConfig",
           "RewardConfig", "RunConfig", "WorkloadConfig", "bounded", "check_config", "digest_of", "drop_added_defaults",
           "from_dict", "load_run_config", "merge", "read_yaml", "to_dict", "valid_expert_name"]
