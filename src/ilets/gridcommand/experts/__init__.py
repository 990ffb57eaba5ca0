"""The grid-command expert ladder: hindsight oracle, MPC (perfect and realistic forecast),
Lyapunov drift-plus-penalty, and a simple rule, behind one interface.

Every expert is a policy ``act(env) -> int`` on :class:`ilets.gridcommand.env.GridCommandEnv`:
an action valid under ``env.action_masks()`` (``0..M-1`` place the current task on that
server, ``env.defer_action`` defers it by ``env.config.defer_s``), plus ``reset(seed)``. They
read the environment through its attributes and never change it; each declares which it
reads (``reads``, the names of :data:`ENV_READS`, where each is marked observed, static or
privileged: what the observation does not show), and a test replays every expert through a
recording proxy to hold it to that. :func:`make_expert` builds one by name (:data:`EXPERTS`);
:func:`expert_rollout_policy` lets ``imitation``'s rollout tools drive one.

The rungs, from the most to the least informed (the CityLearn MPC study's ladder), above
them a bound:

``hindsight``
    :class:`HindsightExpert`: parallel rollout over the other rungs and doing nothing
    (:class:`ReferenceExpert`); at the first decision and every event's announcement and end
    it simulates each to the episode's end on a copy of the environment and follows the best
    on the episode's total reward, so it is never worse than any of them on that score.
``oracle``
    :class:`OracleExpert`: the exact hindsight MILP of :func:`ilets.gridcommand.milp.solve_window`
    over a window of the next ``window`` arrivals (known in hindsight from the episode's task
    table) and the tasks it has deferred and not yet placed. Start candidates are the task's
    re-arrival times (``release + i * defer_s``, ``i`` up to its remaining deferrals), so a
    plan is exactly executable; classes from :func:`ilets.gridcommand.milp.make_classes`.
    Execution: defer until the planned start, then place on a member of the planned class
    chosen by the tracking error now (:func:`_best_in_class`).
``mpc-perfect`` / ``mpc-forecast``
    :class:`MPCExpert`: every ``dt`` (default ``defer_s``) it solves the fluid LP of
    :func:`ilets.gridcommand.fluid.solve_fluid` over the next ``horizon`` slots and applies
    only the first slot's admissions, as per-class work budgets; a task is placed on the
    cheapest class with budget left (a member chosen as for the oracle), else deferred.
    The forecast of arrivals is either the true future (``perfect``) or, declared [ours],
    an exponential moving average (weight ``alpha`` of the newest slot) of the work
    observed per slot and deadline cohort, persisted flat over the horizon (``forecast``).
``lyapunov``
    :class:`LyapunovExpert`: virtual queues for tracking debt and deadline misses; per task
    the action minimising ``V * cost + Q_track * drift + Q_deadline * risk``. No solver.
``rule``
    :class:`RuleExpert`: during a down event defer what has slack and place the rest on the
    least-energy server that meets its deadline; otherwise earliest-finish.

Beside the ladder, tracking first:

``thermostat``
    :class:`ThermostatExpert`: during an event, feedback on the current slot's projected
    average power: above the target the flexibility envelope's low action, below it the
    high one, each kept to deadlines where the slack allows. It shows whether the band is
    reachable; it does not optimise the reward.
``cap``
    :class:`PowerCapExpert`: the counterfactual's earliest finish, unchanged, under an
    admission cap (``cap_levels``) stepped by the same slot feedback during down events: what
    the operator's own lever, power capping, reaches without touching the scheduler.

:class:`SleepManager` wraps any of them with the sleep lever's power manager taken as actions,
for the sleep head (``sleep_actions``).
:func:`ladder_gaps` splits the gap between rungs into horizon and forecast error.

Units of the experts' internal prices are those of :class:`ilets.gridcommand.milp.Weights`
(fleet-full-power-seconds, tasks, task-seconds); they are the experts' own objective
[ours], not the environment's reward.

The package's modules: :mod:`~ilets.gridcommand.experts.reading` (the interface and what the
experts read from the environment), :mod:`~ilets.gridcommand.experts.rollout` (an expert as
``imitation``'s rollout policy), one module per expert (:mod:`~ilets.gridcommand.experts.oracle`,
:mod:`~ilets.gridcommand.experts.mpc`, :mod:`~ilets.gridcommand.experts.lyapunov`,
:mod:`~ilets.gridcommand.experts.rule`, :mod:`~ilets.gridcommand.experts.thermostat`,
:mod:`~ilets.gridcommand.experts.power_cap`) and
:mod:`~ilets.gridcommand.experts.ladder` (the experts by name, :func:`ladder_gaps`). Their public names are importable from here.
"""

from ilets.gridcommand.experts.hindsight import HindsightExpert, ReferenceExpert
from ilets.gridcommand.experts.ladder import (BOUND, CAP_RUNG, DECIDING, EXPERT_LABELS, EXPERT_READS, EXPERT_SPECS, EXPERTS,
                                              LADDER, GridExpertSpec, ladder_gaps, make_expert)
from ilets.gridcommand.experts.lyapunov import LyapunovExpert
from ilets.gridcommand.experts.mpc import MPCExpert
from ilets.gridcommand.experts.oracle import OracleExpert
from ilets.gridcommand.experts.power_cap import PowerCapExpert
from ilets.gridcommand.experts.reading import (ENV_READS, TARGET_SAMPLES, GridExpert, committed_cpu, future_tasks,
                                              privileged_reads, slot_inputs)
from ilets.gridcommand.experts.rollout import expert_rollout_policy
from ilets.gridcommand.experts.rule import RuleExpert
from ilets.gridcommand.experts.sleep_manager import SleepManager
from ilets.gridcommand.experts.thermostat import ThermostatExpert

__all__ = ["BOUND", "CAP_RUNG", "DECIDING", "ENV_READS", "EXPERTS", "EXPERT_LABELS", "EXPERT_READS", "EXPERT_SPECS", "LADDER",
           "TARGET_SAMPLES", "GridExpert", "GridExpertSpec", "HindsightExpert", "LyapunovExpert", "MPCExpert", "OracleExpert",
           "PowerCapExpert", "ReferenceExpert", "RuleExpert", "SleepManager", "ThermostatExpert",
           "committed_cpu", "expert_rollout_policy", "future_tasks", "ladder_gaps",
           "make_expert", "privileged_reads", "slot_inputs"]
