"""The grid-command experiment: what one grid of the scenario runs (:class:`ExperimentProfile`).

A profile names the methods, the fleet sizes and the seeds, the command regime every
method is trained under (``train_regime``) and the two it is scored under (``train_regime``
in distribution, ``eval_regime`` drift), the oracle's budget and the pipeline's settings;
the shipped ones are the rows of :data:`ilets.gridcommand.designs.DESIGNS`. One *cell* (:class:`Cell`) is
(method, servers, seed): the method is trained (or, for an expert, used as it is) under
``train_regime`` and scored by :func:`ilets.gridcommand.metrics.evaluate` on the online
segment under both regimes, on the same workload draw
(:func:`ilets.gridcommand.pipeline.run_method`).

The study loads these profiles strictly, names the cells on disk, runs, stores, verifies and
ships them like its own (:mod:`ilets.gridcommand.study.scenario`, scenario ``gridcommand``)::

    ilets grid --scenario gridcommand --profile gridcommand-quick --out results/gridcommand-quick
    ilets verify --scenario gridcommand --results shipped/gridcommand --sample 2
    ilets ship --scenario gridcommand --results results/gridcommand-quick --to shipped/gridcommand
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ilets.config import SEED_MAX, ConfigError
from ilets.config.validate import bounded, check_config
from ilets.gridcommand.command import REGIMES
from ilets.gridcommand.config import GridCommandConfig, load_gridcommand_config
from ilets.gridcommand.experts import BOUND, CAP_RUNG
from ilets.gridcommand.experts.hindsight import CANDIDATES
from ilets.gridcommand.episodes import training_base
from ilets.gridcommand.pipeline_config import METHODS, PipelineConfig, check_train_servers

#: The regime labels of a cell's two scores.
ROLES = ("train", "eval")
#: The rungs that run the MILP oracle: on ``oracle_seeds`` only, when given.
SOLVER_RUNGS = ("oracle", BOUND)
#: The grid's labels of its scale: every table and sentence carries one.
SCALES = ("smoke", "quick", "paper")


@dataclass(frozen=True)
class Cell:
    """One cell of a grid-command grid: a method on a fleet size with a seed."""

    method: str
    servers: int
    seed: int


@dataclass(frozen=True)
class ExperimentProfile:
    """What a grid-command grid runs (one YAML file)."""

    name: str = "gridcommand-grid"
    description: str = ""
    scale: str = bounded("quick", choices=SCALES)  #: the label every table and sentence carries (:data:`SCALES`)
    scenario: str = "gridcommand-quick"  #: the scenario profile (a gridcommand-* name or a path)
    #: every method but the hindsight bound (its own grid: whole simulated episodes per switch)
    #: and the power cap (a scenario with cap levels)
    methods: tuple[str, ...] = bounded(tuple(m for m in METHODS if m not in (BOUND, CAP_RUNG)), nonempty=True,
                                       distinct=True, choices=METHODS)
    servers: tuple[int, ...] = bounded((50, 200), nonempty=True, distinct=True, ge=1, what="a fleet size")
    #: run seeds, each one the run's configuration accepts (else every cell would fail, one after another)
    seeds: tuple[int, ...] = bounded((0, 1, 2, 3, 4), nonempty=True, distinct=True, ge=0, le=SEED_MAX)
    train_regime: str = bounded("shallow-long", choices=tuple(REGIMES))
    eval_regime: str = bounded("deep-short", choices=tuple(REGIMES))
    #: seeds the oracle runs on (empty: every seed); its MILP is the grid's slowest cell [ours]
    oracle_seeds: tuple[int, ...] = ()
    oracle_window: int = bounded(60, ge=1)  #: tasks per oracle MILP window
    #: branch-and-bound nodes per oracle solve: the same cut on any host (chosen on pilot
    #: seeds by :mod:`ilets.gridcommand.pilot`) [ours]
    oracle_node_limit: int | None = bounded(200, ge=1, note="or null")
    #: seconds per oracle solve, None: none. A wall-clock limit cuts a hard window at a
    #: point that depends on the host's speed and load, so the grids use the node limit
    oracle_time_limit: float | None = bounded(None, gt=0, what="a number of seconds", note="or null")
    #: the hindsight rung's members in tie order (names of
    #: :data:`~ilets.gridcommand.experts.hindsight.CANDIDATES`); None: its default
    #: :data:`~ilets.gridcommand.experts.hindsight.MEMBERS`, and the cell's settings digest is
    #: the one it had before this field existed [ours]
    bound_members: tuple[str, ...] | None = bounded(None, nonempty=True, distinct=True, choices=CANDIDATES)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)

    def validate(self, where: str = "grid") -> "ExperimentProfile":
        """Named :class:`ConfigError` for every impossible value (each field's declared range,
        the pipeline's, then :meth:`relations`, :func:`ilets.config.validate.check_config`);
        returns self."""
        return check_config(self, where)

    def relations(self, where: str) -> None:
        """The oracle's seeds and limits, the hindsight rung's members and the pipeline's knobs
        against the grid's methods and scenario."""
        missing = sorted(set(self.oracle_seeds) - set(self.seeds))
        if missing:
            raise ConfigError(f"{where}.oracle_seeds: {missing} are not among the grid's seeds {list(self.seeds)}")
        if self.oracle_node_limit is None and self.oracle_time_limit is None:
            raise ConfigError(f"{where}: oracle_node_limit and oracle_time_limit are both null; a hard "
                              "window could then run for hours: set one (the node limit is host-independent)")
        if BOUND in self.methods and self.oracle_node_limit is None:
            raise ConfigError(f"{where}.oracle_node_limit: the hindsight rung replays its oracle member exactly, "
                              "which a wall-clock limit does not allow; set a node limit")
        if self.bound_members is not None and BOUND not in self.methods:
            raise ConfigError(f"{where}.bound_members: set, but the grid does not run the {BOUND!r} rung")
        # the power-cap rung's only lever is the cap: without levels it would be the baseline
        if CAP_RUNG in self.methods and not self.scenario_config().cap_levels:
            raise ConfigError(f"{where}.methods: the {CAP_RUNG!r} rung sets the admission cap, but scenario "
                              f"{self.scenario!r} has no cap levels (cap_levels)")
        # a training window the scenario refuses would fail every learner's cell, one after another
        # (the scenario is loaded only when the knob is set: profile loading stays as it was)
        if self.pipeline.train_days:
            training_base(self.scenario_config(), self.pipeline, f"{where}.pipeline")
        if self.pipeline.train_servers:  # a clone moved to a fleet its policy cannot run on
            check_train_servers(self.scenario_config(), self.pipeline, f"{where}.pipeline")
        if self.pipeline.sleep_repeat != 1 and not self.scenario_config().sleep_actions:
            raise ConfigError(f"{where}.pipeline.sleep_repeat: {self.pipeline.sleep_repeat} repeats of a demonstrated "
                              f"sleep action, but scenario {self.scenario!r} has no sleep actions (sleep_actions)")

    @property
    def regimes(self) -> dict[str, str]:
        """``{"train": regime, "eval": regime}``."""
        return {"train": self.train_regime, "eval": self.eval_regime}

    def expert_options(self, method: str) -> dict:
        """Keyword options of :func:`ilets.gridcommand.experts.make_expert` for ``method``."""
        oracle = {"window": self.oracle_window, "time_limit": self.oracle_time_limit,
                  "node_limit": self.oracle_node_limit}
        if method == "oracle":
            return oracle
        if method == BOUND:  # its oracle member is the grid's oracle rung
            if self.bound_members is None:
                return {"member_options": {"oracle": oracle}}
            options = {"oracle": oracle} if "oracle" in self.bound_members else {}
            return {"members": tuple(self.bound_members), "member_options": options}
        return {}

    def scenario_config(self) -> GridCommandConfig:
        """The profile's scenario configuration (workload scale, reward, learners)."""
        return load_gridcommand_config(self.scenario)

    def cells(self) -> list[Cell]:
        """The grid's cells, seed by seed (each seed's methods finish together, so a partial
        grid already holds paired comparisons), the oracle and the hindsight rung (which runs
        it) on ``oracle_seeds`` only when given."""
        out = []
        for seed in self.seeds:
            for servers in self.servers:
                for method in self.methods:
                    if method in SOLVER_RUNGS and self.oracle_seeds and seed not in self.oracle_seeds:
                        continue
                    out.append(Cell(method, servers, seed))
        return out
