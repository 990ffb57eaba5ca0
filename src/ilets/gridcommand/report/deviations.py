"""The grid-command scenario's choices, one row each (kind :data:`EXTENSION`): this study's own
extension, with no paper or authors' code to follow.

Kept apart from :data:`ilets.report.deviations.DEVIATIONS`, which the deviations chapter counts
as "reconstructed" or "bug not reproduced"; each row quotes the code's values, so a test holds
it to the code (tests/test_grid_command_report.py).
"""

from __future__ import annotations

import pandas as pd

from ilets.report.deviations import Deviation, span as _span
from ilets.study.profiles import method_defaults

#: The method defaults the rows quote (``ilets/configs/methods.yaml``), as the paper's rows do.
_D = method_defaults()
_O = _D.oail

#: ``kind`` of a row about a scenario this study adds (no paper or code to follow).
EXTENSION = "extension (ours)"
_NO_PAPER = "silent: the paper has no grid command (a scenario this study adds)"


#: The design the whole-epoch floor is shown at (training episodes, BC epochs): the own-workloads
#: pilot's widened candidate 256 at the designs' 300 epochs.
FLOOR_EXAMPLE = (256, 300)


def _extension_rows() -> tuple[Deviation, ...]:
    """The grid-command rows, quoting the code's values (imported here: the scenario's modules
    bring in torch, which importing this module need not pay)."""
    from ilets.gridcommand.command import (DAY_S, DRIFT_BASE, DRIFT_EVENTS, DRIFT_EVENTS_RISK, DRIFT_FACTORS, DRIFT_LOAD,
                                           DRIFT_TOWARD, FIELD_REGIMES, PAPER_ONLINE_WINDOW_S)
    from ilets.gridcommand.config import GridCommandConfig, load_gridcommand_config
    from ilets.gridcommand import pilot as PL
    from ilets.gridcommand.study.scenario import load_profile as load_grid_profile
    from ilets.gridcommand.experts import LyapunovExpert
    from ilets.gridcommand.features import SLOT_ERROR_BANDS, TERM_SCALE, TRACK_SCALE
    from ilets.gridcommand.cloning import whole_epoch_step_shares
    from ilets.gridcommand.episodes import HELDOUT_SEED_OFFSET, TRAIN_COMMAND_OFFSET, TRAIN_EPISODE_OFFSET
    from ilets.gridcommand.pipeline_config import PipelineConfig
    from ilets.gridcommand.queues import MISS_BUDGET
    from ilets.gridcommand.experts.hindsight import MEMBERS, ORACLE_NODE_LIMIT
    from types import SimpleNamespace

    # the retired clone pilots' candidates and settings (their rows are in the archive table,
    # ilets.gridcommand.archive; their profiles as at its recompute commit)
    PILOT_REPEATS, PILOT_EPOCHS, PILOT_ROUNDS = (1, 4, 16), (10, 30, 100, 300, 900), (1, 2, 4, 8, 16)
    PILOT_EVENT_REPEATS = PILOT_SLEEP_REPEATS = PILOT_DEFER_REPEATS = (1, 4, 16, 64)
    PILOT_TRAIN_EPISODES, PILOT_TRAIN_EPISODES_WIDENED = (1, 4, 16), (64,)
    PILOT_TRAIN_EPISODES_OWN, PILOT_TRAIN_EPISODES_OWN_WIDENED = (16, 64), (256, 1024)
    pilot_fleet = SimpleNamespace(servers=(50,), seeds=tuple(range(100, 106)))

    g, pipe, quick = GridCommandConfig(), PipelineConfig(), load_grid_profile("quick")
    sleepy = load_gridcommand_config("quick-per-server-sleep-energy")
    defer_pilot = episodes_pilot = pilot_fleet
    floor = whole_epoch_step_shares(*FLOOR_EXAMPLE, dagger_rounds=1)
    batchy = SimpleNamespace(batch_share=0.3, batch_slack_h=4.0)  # the retired batch-class grid's
    multi_day = load_gridcommand_config("quick", window_days=14, run={"workload": {"scale": 0.28}})
    oracle_seeds = "seeds " + ", ".join(map(str, quick.oracle_seeds)) if quick.oracle_seeds else "every seed"

    def _seeds(values) -> str:
        return ", ".join(f"{v:,g}" for v in values)

    def regime(name: str) -> str:
        r = FIELD_REGIMES[name]
        return (f"{name}: {r.events_per_window:g} events per window (Poisson), depth {_span(r.depth, '.0%')}, "
                f"{_span(r.duration_s, '.4g')} s long, notice {_span(r.notice_s, 'g')} s, ramp {r.ramp_s:g} s, band "
                f"{r.band:g}, {r.p_down:.0%} down")

    return (
        Deviation("Command durations", "field trials: a 25 % cut held 3 h; more than 30 % within 30 s, held up "
                  "to 10 h (EPRI DCFlex, arXiv 2507.00909)",
                  f"durations scaled by {PAPER_ONLINE_WINDOW_S:g}/{DAY_S:g} (the {PAPER_ONLINE_WINDOW_S:g} s online "
                  "window stands for a day: 3 h -> 187.5 s); notice and ramp are response times, not scaled by the "
                  "day; every time then multiplied by window/1500 at reduced workload scales",
                  "ilets.gridcommand.command (DAY_TO_WINDOW, generate_schedule)", kind=EXTENSION),
        Deviation("Command regimes", "the trials above (no distribution is published)",
                  "; ".join(regime(n) for n in FIELD_REGIMES) + "; events placed by a flat Dirichlet split of the "
                  "free time, drawn from their own seed stream",
                  "ilets.gridcommand.command.FIELD_REGIMES", kind=EXTENSION),
        Deviation("Drift protocol", "the paper shows no drift of this kind (its drift is the workload's)",
                  f"{DRIFT_BASE} with one factor at a time set as in {DRIFT_TOWARD} ("
                  + ", ".join(f"{k}: {'/'.join(v)}" for k, v in DRIFT_FACTORS.items())
                  + f"); the load, which the trials do not move, goes to arrival rate x{DRIFT_LOAD:g} (the "
                  "generalisation study's rate shift); learners trained under the base are scored under each, "
                  "beside a control trained under it. Families: the authors' flat policy (one day and "
                  "several days of commands per window) and the per-server clone of the last clone design, "
                  "with that grid's scenario and pipeline unchanged (gridcommand-drift-per-server, 50 servers), "
                  "the same with the 16-episode clone that meets the bar (gridcommand-drift-per-server-episodes), "
                  "and that family on several days of commands per scored episode with the same 16-episode "
                  "clone, its training episodes kept one day long (pipeline.train_days; "
                  "gridcommand-drift-per-server-days), chosen by a clone pilot on pilot seeds over the clone the "
                  "family first ran with, one multi-day training episode with as many gradient steps (its BC "
                  "epochs cut in proportion), by a rule committed before either ran "
                  "(gridcommand-grid-clone-pilot-y*, choose_train_days); "
                  "a family's grids share one clone cache, which changes no number",
                  "ilets.gridcommand.command.DRIFT_FACTORS, ilets.gridcommand.study.drift", kind=EXTENSION),
        Deviation("Days of commands per window", _NO_PAPER,
                  "opt-in (window_days, default 1): one window stands for that many days of commands, the "
                  "regime's times fitted to window / days and its expected events multiplied by days; the "
                  "workload stays the window's own (only the command clock is compressed). The multi-day drift "
                  "scenario (gridcommand-quick-days) takes the fewest days for which a shallow-long episode has "
                  f"fewer than {DRIFT_EVENTS} events with probability under {DRIFT_EVENTS_RISK:.0%} "
                  f"({multi_day.window_days:g}), its window longer "
                  f"in proportion (scale {multi_day.run.workload.scale:g}), so events keep their quick-scale "
                  "lengths; 50 servers only, for the cost",
                  "GridCommandConfig.window_days, ilets.gridcommand.command.days_for_events", kind=EXTENSION),
        Deviation("Training window of a clone", _NO_PAPER,
                  "opt-in (pipeline.train_days, default 0: the scenario's own window_days): the clone's training "
                  "episodes and DAgger rounds hold that many days of commands, the workload scale cut in the same "
                  "proportion so a day keeps its tasks and events, while the scored and held-out episodes keep the "
                  "scenario's window; one day of the fourteen-day per-server scenario is the one-day scenario field "
                  "for field (tested), so a clone of it is the 16-episode design's clone",
                  "ilets.gridcommand.episodes.training_base, PipelineConfig.train_days", kind=EXTENSION),
        Deviation("Per-server policy on the grid command", _NO_PAPER,
                  "opt-in (run.policy: per-server): the command's blocks follow the task numbers, so the pooled "
                  "summary reads them; deferring is one more logit from that summary; with speed levels the table "
                  "has one row per (level, server), the server seen running the task at that speed, so the one "
                  "shared scorer rates every placement at every speed (no separate speed head)",
                  "ilets.gridcommand.env.GridCommandEnv.table_layout, ilets.agents.per_server.PerServerNet.n_extra, "
                  "ilets.agents.observation.ServerTable",
                  kind=EXTENSION),
        Deviation("The teacher's queues shown", _NO_PAPER,
                  "opt-in (observe_queues, off by default): the env keeps the Lyapunov expert's tracking debt and "
                  f"deadline queue with the expert's own recursion (miss budget {MISS_BUDGET:g}) along the episode, "
                  f"whatever policy acts, and shows log1p({TRACK_SCALE:g} x debt) and log1p(deadline queue) as one "
                  "more block; declared privileged information made observable, run as a third grid beside the "
                  "flat and per-server ones", "ilets.gridcommand.queues, ilets.gridcommand.features.QueueState",
                  kind=EXTENSION),
        Deviation("The slot's meter shown", _NO_PAPER,
                  "opt-in (observe_slot, off by default): the env keeps the thermostat's projection of the current "
                  "slot's average power (the power sampled at each decision, trapezoids between them, the power now "
                  "held to the slot's end) and shows its excess over the target and its shortfall, in bands of the "
                  f"active event over {SLOT_ERROR_BANDS:g} and capped at 1, as one more block; what a meter on the "
                  "fleet shows, run as the thermostat-taught design",
                  "ilets.gridcommand.slot_meter, ilets.gridcommand.features.SlotError", kind=EXTENSION),
        Deviation("Servers ranked by energy", _NO_PAPER,
                  "opt-in (observe_energy, off by default, per-server layout only): each server's row gains one "
                  "column, the log of the task's active energy there over the least of any server it fits (0 on "
                  "that one), scale-free; the row's own energy column is log1p of the energy over the largest server's "
                  "power times the wait scale, a small number that differs little between servers, while the "
                  "thermostat and the envelope pick by it; suggested by a "
                  "probe of the thermostat's clone on pilot seed 100",
                  "ilets.agents.observation.ServerTable(energy_gap=True), GridCommandConfig.observe_energy",
                  kind=EXTENSION),
        Deviation("Deferral scored per server", _NO_PAPER,
                  f"opt-in (run.defer_head, default {_D.defer_head!r}; per-server policy, grid-command scenario "
                  "only): the per-server policy scores the defer action as a 'later' score per server from the "
                  "same hidden layer as its placement score, the defer logit their logsumexp, instead of one logit "
                  "from the pooled summary; the Lyapunov teacher scores a deferral as its best placement defer_s "
                  "later, a minimum over servers; a structure with no number of its own, so no pilot; one design "
                  "(gridcommand-grid-per-server-later) changes only this over the energy-ranked design",
                  "ilets.agents.per_server.PerServerNet(defer_rows=True), ilets.config.run.DEFER_HEADS",
                  kind=EXTENSION),
        Deviation("Cap levels scored by a head of their own", _NO_PAPER,
                  f"opt-in (run.cap_head, default {_D.cap_head!r}; per-server policy, grid-command scenario with "
                  "cap_levels only): the admission-cap levels' logits come from a hidden ReLU layer of "
                  "server_hidden units over the pooled summary instead of one linear logit each; the power-cap "
                  "rung's choice turns on the event's direction, the sign of the slot's gap to the target and the "
                  "cap in force together; its width is the scorer's, not tuned, so no pilot; its positive control "
                  "(gridcommand-grid-per-server-cap, the power-cap rung as the teacher) runs beside the same clone "
                  "with the linear logits (gridcommand-grid-per-server-cap-pooled)",
                  "ilets.agents.per_server.PerServerNet(cap_hidden=...), ilets.config.run.CAP_HEADS",
                  kind=EXTENSION),
        Deviation("Placement scores modulated by the pooled summary (film)", _NO_PAPER,
                  f"opt-in (run.server_film, default {_D.server_film}; per-server policy): each placement score "
                  "gains a term of the given rank, the server's row (and its expm1, undoing the table's log1p, "
                  "clamped at 7) times a vector a hidden ReLU layer makes from the pooled summary; Lyapunov's score "
                  "sums a task's energy and wait there (linear once un-logged) and its deadline queue times a miss "
                  "there, forms the plain scorer can only piece together; the design "
                  "gridcommand-grid-per-server-film runs it on the own-workloads design at rank 4, one per term "
                  "of that score, not tuned, so no pilot; with deferral scored per server (run.defer_head rows) "
                  "each later score gains the same term with its own row weights",
                  "ilets.agents.per_server.PerServerNet(film=...), ilets.config.run.RunConfig.server_film",
                  kind=EXTENSION),
        Deviation("The Lyapunov teacher's terms in each row", _NO_PAPER,
                  "opt-in (observe_terms, off by default; per-server table, queues shown): each server's row gains "
                  "the terms Lyapunov scores a placement there by and placing the task there defer_s later (the "
                  "task's energy there, the tracking debt or credit it adds in the next defer_s, the deadline queue "
                  f"where it would miss, each as log1p of {TERM_SCALE:g} times the cost, a unit that also sets where "
                  "the film term's clamp cuts in; and the wait and the miss defer_s later), computed from the queues "
                  "the environment keeps, so on the teacher's own episodes its score of every allowed action is one "
                  "fixed linear combination of their expm1 and the table's wait, less a shared offset (tested along "
                  "the design's training episode): the expert's choice exposed as a function of the observation plus "
                  "declared privileged state (on DAgger's learner states the teacher keeps its own deadline queue); "
                  "the "
                  "design gridcommand-grid-per-server-terms runs it on the film design with deferral scored per "
                  "server, the clone learned on 50 servers, as the pipeline's positive control, not a learner's "
                  "result",
                  "ilets.gridcommand.features.TermRows, GridCommandConfig.observe_terms", kind=EXTENSION),
        Deviation("How the grid-command clone is scored and taught", _NO_PAPER,
                  f"the frozen clone samples its softmax by default (clone_action: {pipe.clone_action}), as a learner "
                  "acts; one declared grid scores it greedily, as the positive control scores every clone; each "
                  f"demonstrated deferral may be shown n times in BC (defer_repeat, default {pipe.defer_repeat}): "
                  "a clone pilot on seeds no grid evaluates, with its rule written first, chose among "
                  + ", ".join(map(str, PILOT_REPEATS)) + "; a sixth clone pilot weighs deferrals again in the "
                  f"energy-ranked design ({'/'.join(map(str, defer_pilot.servers))} servers, pilot seeds "
                  f"{min(defer_pilot.seeds)}-{max(defer_pilot.seeds)}, the budget pilot's rule, written first) "
                  "among " + ", ".join(map(str, PILOT_DEFER_REPEATS)) + "; "
                  f"with heldout (default {pipe.heldout}) every method's final policy is also scored frozen and "
                  f"greedy on another workload's online segment (run seed + {HELDOUT_SEED_OFFSET:,}, its own commands)",
                  "ilets.gridcommand.pipeline_config.PipelineConfig, "
                  "ilets.gridcommand.report.positive_control.choose_defer_repeat/choose_defer_repeat_energy",
                  kind=EXTENSION),
        Deviation("The grid-command clone's BC budget and DAgger", "the study's BC epochs (oinpt.bc_epochs: chosen by the "
                  "paper-scale pilot for the flat policy on 5,000 GA+PSO decisions)",
                  f"pipeline.bc_epochs (default {pipe.bc_epochs}: the run's) replaces it for the grid-command clone, "
                  "which learns one teacher's whole training episode; a second clone pilot on seeds no grid "
                  "evaluates, its rule written and committed before any candidate ran, chose among "
                  + ", ".join(map(str, PILOT_EPOCHS)) + " (the design with the sleep lever and the queues shown); "
                  "a scratch probe on pilot seed 100 suggested the candidates; with pipeline.dagger_rounds "
                  f"(default {pipe.dagger_rounds}) DAgger rounds follow BC: the clone plays the training episode as "
                  "it is scored, the teacher labels the states it visits (its queues follow the episode played; "
                  "its deadline queue counts its own answer's miss), BC goes on over all labels so far for the first "
                  "BC's number of gradient steps; a third clone pilot at 50 servers (the fleet size where one round "
                  "missed the bar) chose among " + ", ".join(map(str, PILOT_ROUNDS)) + " rounds by the same rule",
                  "ilets.gridcommand.pipeline_config.PipelineConfig.bc_epochs/dagger_rounds, ilets.gridcommand.teacher."
                  "relabel, ilets.gridcommand.report.positive_control.choose_bc_epochs/choose_dagger_rounds", kind=EXTENSION),
        Deviation("The grid-command clone's training episodes", "one training episode (the offline segment)",
                  f"pipeline.train_episodes (default {pipe.train_episodes}: the run's training episode only) lets the "
                  "teacher demonstrate on further training episodes, the offline segments of other workloads (run "
                  f"seed x pipeline.train_episode_stride + {TRAIN_EPISODE_OFFSET:,} + k) with their own commands, "
                  "never scored; BC learns them all "
                  "with the gradient steps it takes on the first (its epochs cut in proportion, rounded to whole epochs, "
                  "at least one: past about as many episodes as BC's epochs that floor gives more steps than meant, "
                  f"e.g. {floor[0]:.2f} times in the first BC and {floor[1]:.2f} in the DAgger round at "
                  f"{FLOOR_EXAMPLE[0]} episodes and {FLOOR_EXAMPLE[1]} epochs, episodes of equal length "
                  "(ilets.gridcommand.cloning.whole_epoch_step_shares); pipeline.bc_step_budget: exact "
                  "takes the first episode's minibatches in every BC, and each clone records the share it took, "
                  "bc_step_share; it bounds the critic's regression likewise, critic_epochs passes' worth of the first "
                  "episode's minibatches, where whole epochs pass over every episode, which leaves the actor, and so a "
                  "frozen clone's scores, untouched) and each DAgger round "
                  f"relabels the clone's states on each; at the default stride ({pipe.train_episode_stride}) the "
                  "further episodes of neighbouring run seeds overlap (seed "
                  "s's k-th is seed s + 1's (k - 1)-th), so their clones share training workloads (their scored "
                  "episodes do not) and seed-paired intervals are narrower than independent seeds would give; a "
                  "stride of at least train_episodes - 1 gives each seed its own (the 16-episode design with "
                  "stride 16, gridcommand-grid-per-server-episodes-own, reads its positive control on independent "
                  "clones, and a pilot of its own, gridcommand-grid-clone-pilot-o*, on pilot seeds, chooses among "
                  + ", ".join(map(str, PILOT_TRAIN_EPISODES_OWN)) + " such episodes, widening to "
                  + ", ".join(map(str, PILOT_TRAIN_EPISODES_OWN_WIDENED)) + ", by the rule of the pilot below, "
                  "committed first); a seventh clone pilot (the "
                  "energy-ranked design, "
                  f"{'/'.join(map(str, episodes_pilot.servers))} servers, pilot seeds {min(episodes_pilot.seeds)}-"
                  f"{max(episodes_pilot.seeds)}, the budget pilot's rule, committed first) chose among "
                  + ", ".join(map(str, PILOT_TRAIN_EPISODES)) + ", then, its rule having picked the largest, also "
                  + ", ".join(map(str, PILOT_TRAIN_EPISODES_WIDENED)) + "; a probe of that design's clone on its teacher's "
                  "states (ilets.gridcommand.study.clone_transfer, evaluation seed 5, shipped; it chose nothing) suggested it",
                  "ilets.gridcommand.episodes.training_episodes, PipelineConfig.train_episodes/train_episode_stride/"
                  "bc_step_budget, "
                  "ilets.gridcommand.report.positive_control.choose_train_episodes/choose_train_episodes_own", kind=EXTENSION),
        Deviation("The grid-command clone's fleet", "each fleet size its own policy, trained on that fleet",
                  f"pipeline.train_servers (default {pipe.train_servers}: the scored fleet's) lets a per-server clone "
                  "learn on another fleet size (its training episodes and DAgger rounds have that many servers) and "
                  "be scored, and fine-tuned, on the scored fleet: no weight of the per-server policy depends on the "
                  "number of servers, and the command and power numbers of its observation are over the fleet's "
                  "maximum power; the clone of one seed is made once and shared by its cells at every scored fleet "
                  "size (the clone cache); the flat policy, whose weights depend on the fleet, refuses it with a "
                  "named error",
                  "ilets.gridcommand.pipeline_config.PipelineConfig.train_servers, check_train_servers", kind=EXTENSION),
        Deviation("The grid-command clone's event weighting", _NO_PAPER,
                  f"pipeline.event_repeat (default {pipe.event_repeat}: as demonstrated) shows each decision made "
                  "during an event (read from its observation) that many times in every BC, the first and each "
                  "DAgger round's, with BC's epochs cut in proportion so the gradient steps stay those of the "
                  "unweighted BC; a fourth clone pilot (the thermostat-taught design, 50 servers, seeds no grid "
                  "evaluates, the budget pilot's rule, written first) chose among "
                  + ", ".join(map(str, PILOT_EVENT_REPEATS)) + "; every clone records its agreement on event and "
                  "off-event decisions apart",
                  "ilets.gridcommand.cloning.event_rows/event_epochs, ilets.gridcommand.teacher.agreement_split, "
                  "ilets.gridcommand.report.positive_control.choose_event_repeat", kind=EXTENSION),
        Deviation("The sleep head's clone: sleep weighting", _NO_PAPER,
                  f"pipeline.sleep_repeat (default {pipe.sleep_repeat}: as demonstrated) shows each demonstrated "
                  "sleep action of the sleep head that many times in every BC, the first and each DAgger round's "
                  "(a teacher sleeps a few dozen servers in thousands of decisions; the added rows are a few per "
                  "cent, so the epochs are not cut); a fifth clone pilot (the sleep head's design, 50 servers, "
                  "seeds no grid evaluates, the budget pilot's rule, written first) chose among "
                  + ", ".join(map(str, PILOT_SLEEP_REPEATS)) + "; a named error without sleep actions",
                  "ilets.gridcommand.cloning.label_repeats, ilets.gridcommand.report.positive_control.choose_sleep_repeat",
                  kind=EXTENSION),
        Deviation("The sleep head's clone: the rule's inputs in each row", _NO_PAPER,
                  "opt-in (observe_sleep, off by default): each server's row gains how long the server has had "
                  "nothing to run in the active down event (log1p over sleep_after_s) and whether its sleep "
                  "saving fits in the fleet's power above the target, what the power manager's rule (the head's "
                  "teacher) reads per server, so its choice is a function of the rows; run as its own design "
                  "(gridcommand-quick-per-server-sleep-rows), the sleep head's settings unchanged",
                  "ilets.gridcommand.features.SleepRows, GridCommandConfig.observe_sleep", kind=EXTENSION),
        Deviation("The ladder's bound", _NO_PAPER,
                  "a hindsight rung above the ladder: at the first decision and every event's announcement and end "
                  "it simulates each of " + ", ".join(MEMBERS) + " (reference: the counterfactual policy, doing "
                  "nothing) to the episode's end on a copy of the environment and follows the best on the "
                  "episode's total reward until the next switch time (parallel rollout); never below any member "
                  f"on that score; its oracle member runs on a node limit ({ORACLE_NODE_LIMIT} by default, the "
                  "grid's own in its grid), never a clock, so its replays are exact; at the paper scale "
                  "(gridcommand-grid-paper-hindsight, the oracle's seeds only) its members also include the "
                  "thermostat (bound_members), so it bounds every rung of the full-window grid",
                  "ilets.gridcommand.experts.hindsight, gridcommand-grid-hindsight, "
                  "gridcommand-grid-paper-hindsight", kind=EXTENSION),
        Deviation("Server sleep", _NO_PAPER,
                  f"opt-in (sleep_fraction, default {g.sleep_fraction:g}: off; {sleepy.sleep_fraction:g} in "
                  "gridcommand-quick-sleep): only during a down event, a server idle for "
                  f"{sleepy.sleep_after_s:g} s may fall asleep, the longest idle first and only as far as the power "
                  f"is above the target (a power manager following the operator, not the policy's choice); it draws "
                  f"sleep_fraction of its idle power; a task placed on it starts {sleepy.wake_s:g} s later "
                  "(wake_s, not scaled with the window), and the sleepers wake at the event's end; the envelope "
                  "counts the lever with every timed-out server asleep; with the sleep head (sleep_actions, "
                  "opt-in, gridcommand-quick-per-server-sleep-head) the policy puts an idle server to sleep at once, "
                  "one action per server, the manager none, and the experts take the manager's rule as actions, at "
                  "decisions rather than at each timeout",
                  "ilets.gridcommand.sleep, Cloud.hold, GridCommandConfig.sleep_fraction/sleep_after_s/wake_s/"
                  "sleep_actions, ilets.gridcommand.experts.SleepManager",
                  kind=EXTENSION),
        Deviation("Batch class", _NO_PAPER,
                  f"opt-in (batch_share, default {g.batch_share:g}: none; {batchy.batch_share:g} in "
                  "gridcommand-quick-sleep-batch, a declared round share, not measured from the trace): each task "
                  "drawn into the class from the run seed's own stream keeps its CPU and length, and its deadline "
                  f"becomes the longer of its own and {batchy.batch_slack_h:g} h of the day (batch_slack_h, on the "
                  "episode's clock as event durations are); it may be deferred while it can still meet it "
                  "(max_deferrals binds interactive tasks only); the envelope's extreme run defers it too",
                  "ilets.gridcommand.batch, GridCommandConfig.batch_share/batch_slack_h", kind=EXTENSION),
        Deviation("Thermostat expert", _NO_PAPER,
                  "a tracking-first rung beside the ladder [ours]: during an event it projects the current slot's "
                  "average power (the power seen at its own decisions, trapezoids between them, then the power now "
                  "held to the slot's end) and takes the envelope's low action above the target, its high action "
                  "below it; it defers only a task whose slack allows it and replaces a placement that would miss "
                  "the deadline by the least- (lowering) or most-energy (raising) server that meets it; not one of "
                  "the quick-scale hindsight bound's members, so that bound need not beat it (chapter 12 reads "
                  "whether it does); a member of the paper-scale bound",
                  "ilets.gridcommand.experts.thermostat, ilets.gridcommand.envelope.low_action/high_action",
                  kind=EXTENSION),
        Deviation("Power-cap expert", _NO_PAPER,
                  "the operator's own lever as a rung [ours]: the baseline's scheduler (earliest finish among the "
                  "servers the cap allows) with only the admission cap set (cap_levels; scenario "
                  "gridcommand-quick-cap: 0.6-1.0 of each server's maximum), stepped one level per task by the "
                  "thermostat's slot meter during down events (down above the target, up below it) and lifted "
                  "outside them; a cap cannot raise the power, so it follows no up event; not a member of any "
                  "bound; a grid that runs it needs cap levels (named error)",
                  "ilets.gridcommand.experts.power_cap, ExperimentProfile.validate", kind=EXTENSION),
        Deviation("Target shape", _NO_PAPER, "linear ramp from the baseline to full depth over ramp_s, a step "
                  "back to the baseline at the end (the trials ramp in; the return is not specified)",
                  "GridCommand.ramp_factor", kind=EXTENSION),
        Deviation("Tolerance band", _NO_PAPER, "a fraction of the requested change at full depth, strictly "
                  "between 0 and 1 (1 would count doing nothing as tracking)", "GridCommand.band", kind=EXTENSION),
        Deviation("Baseline", _NO_PAPER, f"the counterfactual run of the plain scenario with the "
                  f"'{g.reference}' heuristic (exact slot-average power, {g.slot_s:g} s slots at paper scale)",
                  "ilets.gridcommand.power.counterfactual, GridCommandConfig.reference", kind=EXTENSION),
        Deviation("Deferral", _NO_PAPER, f"a deferred task re-arrives {g.defer_s:g} s later, at most "
                  f"{g.max_deferrals} times; its deadline still counts from its first arrival; defer is masked "
                  "when even the fastest server could not meet the deadline after it (optimistic: queues ignored)",
                  "GridCommandEnv.action_masks, GridCommandConfig.defer_s/max_deferrals", kind=EXTENSION),
        Deviation("Admission cap", _NO_PAPER, f"only during down events, a server refuses a task that would "
                  f"lift its power above cap_fraction of its maximum (default {g.cap_fraction:g}: no cap); or, as "
                  "an action (cap_levels, opt-in, default none), the policy sets the cap to one of the levels: the "
                  "same task is handed over again at the same time, at no cost, with the servers the cap excludes "
                  "masked from then on until it sets another, one change per task; the cap in force is observed",
                  "GridCommandConfig.cap_fraction/cap_levels, GridCommandEnv.first_cap_action", kind=EXTENSION),
        Deviation("Reward's tracking term", _NO_PAPER, f"the plain cost plus (tracking: {g.tracking}) the change "
                  f"an assignment makes to the scored slots' error, {g.track_weight:g} x tasks per second x "
                  "overlap x |committed slot-average power - target| / max power, exact since starts are fixed at "
                  "assignment, so the episode's tracking costs add up to the slot error the metrics score; plus "
                  f"{g.smooth_weight:g} x the slot-to-slot change of that error within an event (smoothness); a "
                  f"deferral costs {g.defer_penalty:g}. The first design (tracking: instant) compared the power now "
                  "with a slot-average target, a ripple no policy removes, and at weight 1 ranked Earliest-Finish, "
                  "which ignores commands, above the Lyapunov follower at 200 servers",
                  "ilets.gridcommand.tracking, GridCommandConfig.tracking/track_weight/smooth_weight",
                  kind=EXTENSION),
        Deviation("DVFS lever", _NO_PAPER, "a placement may run the task at another clock speed f (speed_levels, "
                  f"the nominal 1.0 first; default {list(g.speed_levels)}: no lever): it executes in length / (MIPS x "
                  f"f) and draws f^{g.dvfs_exponent:g} of its active power (dynamic power ~ f V^2 with the voltage "
                  "scaled with f), both fixed at assignment; one action per (server, level) plus defer",
                  "Cloud.assign(speed, power_factor), GridCommandConfig.speed_levels/dvfs_exponent", kind=EXTENSION),
        Deviation("Flexibility envelope", _NO_PAPER, f"before each episode, the episode run twice with the "
                  "levers at an extreme inside the events (down: defer what the mask allows, else the server adding "
                  "the least energy; up: the server adding the most energy among those starting the task at once) "
                  "and the reference outside; an event's reachable depth is the least change past its ramp; "
                  f"envelope: {g.envelope} sizes each command to at most {g.envelope_margin:g} of it and drops an "
                  "event that cannot move the power (an inner estimate: simple extremes that ignore deadlines); "
                  f"envelope_runs: {g.envelope_runs} (one run per direction serves all its events, so an event "
                  "starts in what the extreme left of the one before); per-event (opt-in, "
                  "gridcommand-quick-sleep-each, gridcommand-paper-sleep-each): a run per event with that event "
                  "alone, stopped at its end, from the counterfactual's state; envelope_deadlines (opt-in, "
                  "gridcommand-paper-sleep-deadlines): both extremes give way to a deadline they could keep, by "
                  "the thermostat's rule, so the commands are sized to the reach within deadlines; "
                  f"envelope_redraws: {g.envelope_redraws} (an event that cannot move the power is dropped as drawn); "
                  "with N > 0 (opt-in, gridcommand-paper-sleep-redraw: 8) such an event is first moved to a new start "
                  "drawn uniformly between its neighbours and their gaps (depth, duration, notice and direction as "
                  "drawn), up to N draws measured by the same runs, and dropped only when none reaches",
                  "ilets.gridcommand.envelope, GridCommandConfig.envelope/envelope_margin/envelope_runs/"
                  "envelope_deadlines/envelope_redraws",
                  kind=EXTENSION),
        Deviation("SLA penalty", _NO_PAPER, f"the grid-command profiles charge a task that will miss its deadline "
                  f"{load_gridcommand_config('quick').run.reward.deadline_penalty:g} more (reward.deadline_penalty; the plain "
                  f"study's {_D.reward.deadline_penalty:g}), the miss penalty the experts' fitness charges",
                  "ilets/configs/gridcommand-*.yaml run.reward", kind=EXTENSION),
        Deviation("Tracking metrics", _NO_PAPER, "per event from exact slot power: overlap-weighted mean "
                  "|P - target| (also over the requested change), share of slots in band, time to band counted "
                  "from the first in-band slot past the ramp, deadline misses caused (run minus counterfactual), "
                  "energy shifted during the event and rebound after it", "ilets.gridcommand.metrics",
                  kind=EXTENSION),
        Deviation("Grid-command pipeline", _NO_PAPER,
                  f"demonstrations by the '{pipe.teacher}' expert on the offline segment under the training regime "
                  f"(commands from seed + {TRAIN_COMMAND_OFFSET:,}); BC and critic pre-training with the study's "
                  f"OINPT settings ({_D.oinpt.bc_epochs} epochs, lr {_D.oinpt.learning_rate:g}); PPO learns over "
                  "one online pass that is also its score (the study's protocol); learned policies and the frozen "
                  "clone act by sampling (a greedy near-uniform policy sends every task to one server)",
                  "ilets.gridcommand.pipeline", kind=EXTENSION),
        Deviation("Expert corrections", "OAIL: asynchronous emulators (the study: in simulated time)",
                  f"synchronous (declared: simulated time, no latency); the teacher shadows every decision and, "
                  f"every {pipe.every} decisions, its answers on the last {pipe.window} states are applied at "
                  f"the next rollout start as {_O.bc_steps} BC step(s) at lr {_O.learning_rate:g}, loss weight "
                  f"{pipe.weight:g}", "ilets.gridcommand.online.GridCorrections", kind=EXTENSION),
        Deviation("Oracle budget (quick grid)", _NO_PAPER,
                  f"the hindsight MILP on {oracle_seeds}, over {quick.oracle_window}-task windows, at most "
                  f"{quick.oracle_node_limit} branch-and-bound nodes per solve, no wall-clock limit (a solve cut by "
                  "the limit keeps its best plan: an upper rung, not a proven optimum); the same cut on any host. "
                  f"The limit was chosen on pilot seeds {_seeds(PL.PILOT_SEEDS)} by a rule fixed before the run: the "
                  f"smallest of {_seeds(PL.NODE_LIMITS)} nodes within {PL.NODE_TOLERANCE:.1%} of the best tracking "
                  "error",
                  "configs/gridcommand-grid-quick.yaml, ilets.gridcommand.pilot", kind=EXTENSION),
        Deviation("Lyapunov gain", _NO_PAPER,
                  f"the tracking queue's weight track_gain = {LyapunovExpert().track_gain:g}, chosen on pilot seeds "
                  f"{_seeds(PL.PILOT_SEEDS)} (no grid evaluates them) as the lowest tracking error of "
                  f"{_seeds(PL.TRACK_GAINS)}, a best candidate at an end of the range widening it "
                  f"x{PL.WIDEN_FACTOR:g} beyond that end (at most {PL.MAX_WIDEN} times)"
                  + "; the Lyapunov rung is also the learners' teacher",
                  "ilets.gridcommand.experts.LyapunovExpert, ilets.gridcommand.pilot",
                  kind=EXTENSION),
        Deviation("Regulation signal", "PJM RegD data may not be redistributed",
                  "a synthetic band-limited, bounded, zero-mean signal; no PJM data", "ilets.gridcommand.command."
                  "regulation_signal", kind=EXTENSION),
    )


def extensions_table() -> pd.DataFrame:
    """The grid-command scenario's choices (kind :data:`EXTENSION`), one row each."""
    return pd.DataFrame([d.__dict__ for d in _extension_rows()])
