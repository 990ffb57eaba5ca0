"""The grid-command pipeline's methods and its own knobs (:class:`PipelineConfig`).

Apart from the pipeline's steps so every step (the episodes, the clone, the online pass)
reads the same settings without importing the steps that use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ilets.config import ConfigError, to_dict
from ilets.config.run import drop_added_defaults
from ilets.config.validate import bounded, check_config
from ilets.gridcommand.config import GridCommandConfig
from ilets.gridcommand.experts import DECIDING, EXPERTS
from ilets.method_table import methods

#: The scenario's name in the method table (:attr:`ilets.method_table.MethodSpec.scenario`) and
#: in :data:`ilets.study.scenario.SCENARIOS`.
SCENARIO = "gridcommand"
#: The learned methods, in pipeline order: the method table's grid-command rows.
LEARNED = methods(SCENARIO)
#: The learned methods that start from the clone of the teacher (:func:`ilets.gridcommand.cloning.clone`).
CLONED = methods(SCENARIO, oinpt=True)
#: The learned methods that learn with PPO over the scored pass (:func:`ilets.gridcommand.online.online_pass`).
ONLINE = methods(SCENARIO, online=True)
#: The learned methods with the teacher's online corrections (:class:`ilets.gridcommand.online.GridCorrections`).
CORRECTED = methods(SCENARIO, oail=True)
#: The clone frozen: scored as cloned, without an online pass (exactly one row).
(FROZEN,) = methods(SCENARIO, oinpt=True, online=False)
#: Every method the pipeline runs: the expert ladder (``rule`` included), then the learners.
METHODS = EXPERTS + LEARNED

#: How the frozen clone acts when scored (:attr:`PipelineConfig.clone_action`).
CLONE_ACTIONS = ("sampled", "greedy")
#: How BC's gradient steps are counted when a clone learns from more than its training
#: episode (:attr:`PipelineConfig.bc_step_budget`).
BC_STEP_BUDGETS = ("whole_epochs", "exact")
#: Fields added to :class:`PipelineConfig` after cells were shipped (left out at their defaults).
PIPELINE_ADDED_FIELDS = ("clone_action", "defer_repeat", "heldout", "bc_epochs", "dagger_rounds", "event_repeat",
                         "sleep_repeat", "train_episodes", "train_episode_stride", "train_days",
                         "bc_step_budget", "train_servers")


@dataclass(frozen=True)
class PipelineConfig:
    """The pipeline's own knobs; PPO, BC and OAIL's learning rate come from the run's config.

    BC uses ``run.oinpt`` (epochs, batch size, learning rate, critic pre-training) and PPO
    ``run.ppo``, the study's settings (``ilets/configs/methods.yaml``); the corrections'
    optimiser uses ``run.oail.learning_rate`` and ``run.oail.bc_steps``.
    """

    #: expert that demonstrates and corrects [ours]; not the hindsight bound, which simulates
    #: whole episodes per switch
    teacher: str = bounded("lyapunov", choices=DECIDING, what="an expert")
    #: decisions demonstrated; 0: the whole training episode [ours]
    demo_tasks: int = bounded(0, ge=0, note="0: all")
    every: int = bounded(250, ge=1)  #: decisions between two corrections [ours]
    window: int = bounded(50, ge=1)  #: recent states a correction labels [ours]
    weight: float = bounded(1.0, gt=0)  #: weight of the corrections' BC loss [ours]
    #: how the frozen clone (method ``bc``) acts when scored [ours]: ``sampled`` from its masked
    #: softmax, as a learner acts during its pass (the scenario's first protocol), or ``greedy``,
    #: its most likely allowed action, as the study's positive control scores every clone
    clone_action: str = bounded("sampled", choices=CLONE_ACTIONS)
    #: times each demonstrated deferral appears in BC's data [ours]: the teacher defers on a few
    #: per cent of its decisions, so plain cross-entropy learns to place; imitation's BC takes
    #: no sample weights, and repeating a sample weighs it the same in expectation. 1: as
    #: demonstrated
    defer_repeat: int = bounded(1, ge=1, note="1: as demonstrated")
    #: also score each method's final policy (the clone for ``bc``, the policy after the
    #: training regime's pass for the others, the teacher itself for an expert) frozen and
    #: greedy on a held-out episode (:func:`heldout_config`), recorded with the cell's training
    #: record as ``heldout_<metric>`` [ours]
    heldout: bool = False
    #: passes of BC over the demonstrations [ours]; 0: the study's ``run.oinpt.bc_epochs``
    #: (10, the paper-scale pilot's choice for the flat policy on 5,000 GA+PSO decisions). The
    #: grid-command clone learns one teacher's whole training episode, a different task, so
    #: its budget has its own pilot (``gridcommand-grid-clone-pilot-e*``)
    bc_epochs: int = bounded(0, ge=0, note="0: the run's oinpt.bc_epochs")
    #: DAgger rounds after BC [ours]: the clone plays the training episode, the teacher labels
    #: the states it visits, and BC goes on over all labels so far, for as many gradient steps
    #: as the first BC took (:func:`relabel`); 0: none
    dagger_rounds: int = bounded(0, ge=0, note="0: no DAgger")
    #: times each decision made during an event appears in BC's data (the first BC's and
    #: every DAgger round's) [ours]: events hold a few tenths of an episode's decisions, and
    #: the states where a tracking teacher turns (e.g. the thermostat raising power after an
    #: overshoot) a few per cent, so plain cross-entropy learns the off-event placement first.
    #: BC's epochs are cut in proportion (:func:`event_epochs`), so every value takes the same
    #: gradient steps: a weight, not a larger budget. 1: as demonstrated
    event_repeat: int = bounded(1, ge=1, note="1: as demonstrated")
    #: times each demonstrated sleep action (the sleep head's, ``sleep_actions``) appears in
    #: BC's data, the first BC's and every DAgger round's [ours]: a teacher puts a few dozen
    #: servers to sleep in an episode of thousands of decisions, so plain cross-entropy learns
    #: to place and almost never to sleep. The added rows are a few per cent of the data, so
    #: the epochs are not cut (``defer_repeat``'s reasoning). 1: as demonstrated
    sleep_repeat: int = bounded(1, ge=1, note="1: as demonstrated")
    #: training episodes the clone learns from [ours]: the teacher demonstrates on each, BC
    #: learns them all, and each DAgger round relabels the clone's states on each. The first is
    #: the run's training episode; the others are other workloads' offline segments with their
    #: own commands (:func:`training_episodes`), so the clone meets more events than one
    #: episode's few. BC takes the gradient steps it would take on the first episode alone
    #: (its epochs cut in proportion, rounded to whole epochs, as ``event_repeat`` does): more
    #: data, not a larger budget. At ``train_episode_stride`` 1 the further episodes of run
    #: seeds s and s + 1 overlap (seed s's k-th is seed s + 1's (k - 1)-th), so the clones of
    #: neighbouring seeds share training workloads; their scored episodes do not.
    #: 1: the training episode only
    train_episodes: int = bounded(1, ge=1, note="1: the training episode only")
    #: how far apart the further training workloads of neighbouring run seeds start [ours]:
    #: run seed s learns from workloads ``s * stride + TRAIN_EPISODE_OFFSET + k``, k = 1 ..
    #: ``train_episodes - 1`` (:func:`training_episodes`). 1 (the first designs'): neighbouring
    #: seeds share all but one workload, so their clones are not independent draws and a
    #: seed-paired interval is narrower than independent seeds would give; a stride of at least
    #: ``train_episodes - 1`` gives every seed workloads of its own
    train_episode_stride: int = bounded(1, ge=1, note="1: neighbouring seeds share training workloads")
    #: days of commands in each episode the clone learns from [ours]: 0, the scenario's own
    #: ``window_days``; else its training episodes (and its DAgger rounds) are the scenario's
    #: with ``window_days`` set to this and the workload scale cut in the same proportion, so a
    #: day holds the same tasks and events (:func:`training_base`); the scored and held-out
    #: episodes keep the scenario's window. A clone of fourteen-day episodes can so learn from
    #: the one-day episodes of the clone that met the bar
    train_days: float = bounded(0.0, ge=0, what="a number of days", note="0: the scenario's own window_days")
    #: how BC's gradient steps are counted [ours]. Every BC (the first and each DAgger
    #: round's) is meant to take the steps BC takes on the first training episode alone:
    #: ``bc_epochs`` passes over its decisions. ``whole_epochs`` (the designs as run) scales the
    #: epochs to the data BC is shown and rounds them to whole epochs, at least one; past
    #: about ``bc_epochs`` training episodes that floor gives more steps than meant (256
    #: episodes at 300 epochs: 0.85 times the steps in the first BC, 1.7 times in a DAgger
    #: round over twice the data). ``exact`` takes ``bc_epochs`` x the first episode's decisions
    #: / the batch size minibatches in every BC, whatever the data. Each clone records the
    #: share it took (``bc_step_share``, :func:`clone`)
    bc_step_budget: str = bounded("whole_epochs", choices=BC_STEP_BUDGETS)
    #: the fleet size the clone learns on [ours]: 0, the scored fleet's; else its training
    #: episodes (and DAgger rounds) have this many servers and the clone is scored, and
    #: fine-tuned, on the scored fleet. Only the per-server policy can be moved so (no weight
    #: of it depends on the number of servers; the observation's command and power numbers
    #: are over the fleet's maximum power): a clone of 50 servers scored at 200 asks whether
    #: what it learned holds on another fleet, at a quarter of the observations a 200-server
    #: clone holds (:func:`check_train_servers`)
    train_servers: int = bounded(0, ge=1, also=(0,), what="a number of servers", note="0: the scored fleet")

    def validate(self, where: str = "pipeline") -> "PipelineConfig":
        """Named :class:`ConfigError` for an impossible value (each field's declared range, then
        :meth:`relations`, :func:`ilets.config.validate.check_config`); returns self."""
        return check_config(self, where)

    def relations(self, where: str) -> None:
        """A correction's window must not overlap the next one."""
        if self.window > self.every:
            raise ConfigError(f"{where}.window: {self.window} states per correction overlap the next one "
                              f"(every {self.every}); expected window <= every")

    def plain(self) -> dict[str, Any]:
        """As plain data for a settings digest or a cache key: :data:`PIPELINE_ADDED_FIELDS` at
        their defaults left out, so what was computed before they existed keeps its keys."""
        return drop_added_defaults(to_dict(self), PIPELINE_ADDED_FIELDS, to_dict(PipelineConfig()))


def check_train_servers(base: GridCommandConfig, pipe: PipelineConfig, where: str = "pipeline") -> int:
    """The fleet size ``pipe``'s clone learns on, given the scored fleet ``base`` (0: the scored
    fleet's own, :attr:`PipelineConfig.train_servers`); a named :class:`ConfigError` when the
    clone is to be moved to another fleet with a policy whose weights depend on its size."""
    if pipe.train_servers and base.run.policy != "per-server":
        raise ConfigError(f"{where}.train_servers: {pipe.train_servers} servers: only the per-server policy runs on "
                          f"a fleet it did not learn on (the {base.run.policy!r} policy's weights depend on the "
                          "number of servers); expected 0")
    return pipe.train_servers


def check_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else a ValueError listing them."""
    if method not in METHODS:
        raise ValueError(f"method: unknown {method!r}; expected one of {METHODS}")
    return method

