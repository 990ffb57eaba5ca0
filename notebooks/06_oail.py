# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # OAIL and adaptation
#
# Cloning gives a start; the workload then moves. The paper's **OAIL** keeps imitating
# while scheduling: emulators periodically copy the cloud, optimisation experts schedule a
# window of tasks on the copy, and their plans become an imitation loss on the live policy,
# without blocking dispatch {cite}`kang2024ilets`. In this package (`ilets.agents.oail`) every
# {glue:text}`oail_every` decisions a window of {glue:text}`oail_window` tasks and a
# snapshot of the cloud go to a worker process in which {glue:text}`oail_experts` plan it;
# behaviour-cloning steps weighted {glue:text}`oail_weights` (better expert first) are
# applied at the next PPO rollout. The window is the **{glue:text}`oail_mode`** one: the
# last tasks already scheduled, replayed from a snapshot taken before them (the authors'
# code used the *next* tasks, which an online scheduler cannot know; the `upcoming`
# variant measures that choice below). ILETS- is DRL with OAIL, ILETS is DRL+ with OAIL.
#
# The paper claims that ILETS- converges faster than DRL, that ILETS reaches the highest
# cumulative reward fastest at every scale, that under instant changes (bursts) ILETS stays
# smooth and that under trend changes every method oscillates but ILETS least. This
# chapter measures each, on the {glue:text}`profile_name` profile (fleets of
# {glue:text}`scales` servers, {glue:text}`n_seeds` seeds each).

# %% tags=["remove-cell"]
from myst_nb import glue

from ilets.report import findings as F
from ilets.report import plots, stats
from ilets.metric_table import formats
from ilets.report.report_context import ReportContext

# %matplotlib inline
FORMATS = {**formats(), "oail_lag_p50": ",.0f",
           **{c: ",.1f" for c in F.OAIL_COLS if c != "oail_lag_p50"}}
NAMES = {"mean_reward": "mean reward", "avg_response_s": "response (s)", "success_rate": "success rate",
         "energy_kwh": "energy (kWh)", "convergence_decisions": "decisions to converge",
         "cum_reward": "cumulative reward", "oail_requests": "requests", "oail_completed": "completed",
         "oail_applied": "applied", "oail_dropped": "dropped", "oail_failed": "failed",
         "oail_updates": "gradient steps", "oail_lag_p50": "median lag (decisions)",
         "share_led": "checkpoints led", "final_rank": "rank at end", "leads_from": "leads from decision",
         **F.EVENT_NAMES}

plots.use_style()
ctx = ReportContext.load()
run = ctx.run
found = F.adaptation_findings(ctx)
learn = ctx.learner_curves
glue("profile_name", ctx.name, display=False)
glue("scales", ctx.scales_text, display=False)
glue("n_seeds", ctx.seeds_text, display=False)
glue("oail_every", f"{run.oail.every}", display=False)
glue("oail_window", f"{run.experts.window}", display=False)
glue("oail_experts", " and ".join(e.upper() for e in run.oail.experts), display=False)
glue("oail_weights", "/".join(f"{w:g}" for w in run.oail.weights), display=False)
glue("oail_mode", run.oail.window_mode, display=False)
glue("n_steps", f"{run.ppo.n_steps:,}", display=False)
glue("max_pending", f"{run.oail.max_pending}", display=False)
glue("n_events", str(len(found.markers)), display=False)
glue("span_decisions", f"{found.span_decisions:,}", display=False)
glue("window_share", stats.share_text(run.workload.scale), display=False)
glue("conv_tol", f"{F.CONVERGENCE['tol']:.0%}", display=False)
glue("conv_final", f"{F.CONVERGENCE['final_frac']:.0%}", display=False)
glue("conv_smooth", str(F.CONVERGENCE["smooth"]), display=False)
for key, text in found.texts.items():
    glue(key, text, display=False)
glue("up_text", found.upcoming.text, display=False)
markers = found.markers
event_labels = [NAMES.get(e, e) for e in found.event_order]
osc_named = found.osc_reward.replace({"event": NAMES})

# %% tags=["remove-input"]
from IPython.display import Markdown

Markdown(f"> {ctx.banner}")  # what these results are: scale, completeness, provenance

# %% [markdown]
# ## Around the bursts and the trend change
#
# The online segment has {glue:text}`n_events` designed events: {glue:text}`event_list`
# (times in the paper's 3,000 s window; the profile runs {glue:text}`window_share` of it, so the
# events come at the same *share* of the segment). Each event is mapped to the decision at
# which it strikes, the first task arriving at or after it in the workload of each seed
# (`ilets.study.grid.event_decisions`). The grid records these decisions when it runs the
# cells (`events.json` in the results folder) and this page reads them; only a folder made
# before that record existed makes it regenerate the workloads' arrivals.
#
# The arrival rate drives the reward of every scheduler: a burst queues tasks on any
# policy. To separate the policy's own instability from the load's swings, the second
# figure shows {glue:text}`gap_text`: positive is better than the heuristic, and what the
# load does to both cancels.

# %%
fig = plots.learning_curves(learn, "reward", "reward per decision", events=markers)

# %% [markdown]
# *Figure: reward per decision, mean per curve window, against decisions made. Lines: mean
# over seeds; bands: 95% bootstrap confidence interval of that mean over seeds. Red lines:
# instant bursts; purple: the trend change (each at the mean over seeds of the decision at
# which it strikes).*

# %%
fig = plots.learning_curves(found.gap, "reward", f"reward minus {F.REFERENCE}", events=markers)

# %% [markdown]
# *Figure: the gap between each learner's windowed reward and the `greedy-cost`
# heuristic's on the same tasks (positive: the learner is better); lines, 95% bands over
# seeds and event lines as above.*
#
# ## Oscillation after each event
#
# For each run and event, the oscillation is the mean absolute change between consecutive
# curve windows (`ilets.report.stats.oscillation`, `mad`) over the decisions of the same stretch
# of time after the event: the shortest gap between consecutive events, here
# {glue:text}`span_decisions` decisions, so stretches never overlap and every event is
# measured over equal time. It is computed on the reward and on the gap to the heuristic;
# per method and fleet size, the table gives the mean over seeds and its 95%
# percentile-bootstrap interval over seeds. Lower is smoother.

# %% tags=["remove-input"]
plots.markdown_table(stats.ci_table(plots.label_methods(found.osc_summary), index=("servers", "event", "Method"),
                                    formats=FORMATS), NAMES,
                     empty="No online event lies within the online segment of this profile.")

# %%
fig = plots.event_points(osc_named, "mad", "oscillation of reward (MAD)", event_labels)

# %% [markdown]
# *Figure: oscillation (mean absolute change between consecutive windows of the reward)
# after each event, per method and fleet size; points are means over seeds, bars 95%
# bootstrap intervals over seeds.*
#
# On the reward, {glue:text}`osc_bursts` On the gap to the heuristic, where the load's
# swings cancel, {glue:text}`osc_gap_bursts`
#
# After the trend change the paper claims that every method oscillates and ILETS least
# (claim 7 of the summary, verdict **{glue:text}`verdict_7`**): ILETS against each other
# learner on the oscillation of its gap to the `greedy-cost` heuristic over the stretch
# after the trend change. The claim is judged on the gap, not on the raw reward, because the
# raw reward's oscillation follows the load and the reward's level: a heuristic, which does
# not learn, "oscillates" there too (the table of curve measures below). Of these
# comparisons, {glue:text}`osc_trend`; on the raw reward, {glue:text}`osc_raw_trend`. The
# claim's comparisons, with the statuses the summary uses:

# %% tags=["remove-input"]
plots.markdown_table(F.component_display(found.components[7]), {}, empty="(claim 7 cannot be tested on these results)")

# %% [markdown]
# With a few seeds "resolved" means that every resampling of seeds agrees; cases that are
# not resolved are not evidence of equality either.
#
# ## Convergence
#
# The load rises and falls through the pass, so a run's own reward never holds still even
# when its policy does. Convergence is therefore measured on the **gap** to the `greedy-cost`
# heuristic's reward over the same tasks (`ilets.report.stats.gap_convergence_table`): a run
# has converged once its gap (a trailing mean over {glue:text}`conv_smooth` curve windows)
# enters a band around its final level (the mean of the last {glue:text}`conv_final` of the
# windows) and never leaves it; the band's half-width is {glue:text}`conv_tol` of the
# heuristic's own final reward. The measure is the number of decisions made before that. A
# policy that does not learn and moves with the load like the heuristic has a constant gap
# and converges at decision 0. Runs whose gap never settles count with their total number of
# decisions (censored: at best they settled at the end), and the table says how many there
# are (`ilets.report.verdicts.convergence_cells`). Where the heuristic's own reward never
# settles within the same band, the load never settles and a learner's convergence cannot be
# told from it: the claim is judged only on the fleet sizes and seeds where it does (the
# table's *testable* column).

# %% tags=["remove-input"]
plots.markdown_table(stats.ci_table(plots.label_methods(found.conv_summary), index=("servers", "Method", "unsettled"),
                                    formats=FORMATS), NAMES, empty="No learner curves in this results store.")

# %% [markdown]
# Of all learner runs, {glue:text}`conv_settled` settled. The curve measures of every
# method, heuristics included (means over seeds; *settled*: share of runs whose gap settles;
# *ref. settled*: share of seeds on which `greedy-cost` itself settles; *decisions*: decisions
# to converge; *raw settled*: the same measure on the raw reward; *osc. gap* and *osc. raw*:
# oscillation after the trend change on the gap and on the raw reward):

# %% tags=["remove-input"]
plots.markdown_table(plots.label_methods(found.measures)[["servers", "Method", "settled", "reference_settled",
                                                         "convergence_decisions", "raw_settled", "mad_gap", "mad_raw"]]
                     .round({"settled": 2, "reference_settled": 2, "raw_settled": 2, "convergence_decisions": 0,
                             "mad_gap": 4, "mad_raw": 4}),
                     {"reference_settled": "ref. settled", "raw_settled": "raw settled",
                      "convergence_decisions": "decisions", "mad_gap": "osc. gap", "mad_raw": "osc. raw"},
                     empty="(no greedy-cost curves in these results)")

# %% [markdown]
# {glue:text}`measures_text`
#
# The paper's claim, ILETS- converges faster than DRL, is claim 5 of the summary (verdict
# **{glue:text}`verdict_5`**): {glue:text}`claim5_evidence`. Of its comparisons,
# {glue:text}`conv_text`:

# %% tags=["remove-input"]
plots.markdown_table(F.component_display(found.components[5]), {}, empty="(claim 5 cannot be tested on these results)")

# %% [markdown]
# ## The cold start over three windows
#
# Claim 4 (DRL+ and ILETS are better than DRL and ILETS- from the very start, {doc}`05_oinpt`)
# is judged over the first tenth of the pass. Its verdict depends on how many first decisions
# count as "the start", so here it is judged by the same rule over three windows
# (`ilets.report.verdicts.cold_start_windows`). {glue:text}`cold_windows_text`

# %% tags=["remove-input"]
plots.markdown_table(F.cold_windows_display(found.cold_windows), {}, empty="(no learner curves in these results)")

# %% [markdown]
# ## Cumulative reward
#
# Every method of one fleet size and seed schedules the same tasks, so cumulative rewards
# compare at equal decisions: the method that is highest at a given decision has collected
# the most reward by then ("reaches the highest cumulative reward fastest").

# %%
fig = plots.learning_curves(found.cum, "mean_reward_so_far", "cumulative reward / decisions", events=markers)

# %% [markdown]
# *Figure: cumulative reward divided by the decisions made so far (the cumulative reward
# itself, a sum of negative costs, falls almost linearly and hides the differences; at a
# given decision both rank the methods identically; higher is better). Lines: mean over
# seeds; bands: 95% bootstrap intervals over seeds; event lines as above.*

# %% [markdown]
# {glue:text}`cum_lead_text`. Leader at the end of
# the pass, per fleet size: {glue:text}`cum_winners`. The table gives the share of curve
# checkpoints each method leads, its rank at the end, the decision from which it leads
# without interruption (blank unless it leads at the end), and its final cumulative reward
# (mean over seeds, 95% interval).
#
# Claim 6 of the summary (verdict **{glue:text}`verdict_6`**) compares ILETS's cumulative
# reward with each other learner's half-way through the pass and at its end; of these
# comparisons, {glue:text}`cum_text`:

# %% tags=["remove-input"]
plots.markdown_table(F.component_display(found.components[6]), {}, empty="(claim 6 cannot be tested on these results)")

# %% tags=["remove-input"]
plots.markdown_table(found.lead_table, NAMES,
                     empty="No learner curves in this results store.")

# %% [markdown]
# ## Does OAIL run, and does it change anything?
#
# The emulator counters of ILETS- and ILETS: windows handed to the emulators (requests),
# results received (completed) and used for imitation (applied), requests dropped from a
# full backlog or lost to a failing expert, gradient steps, and the median lag between a
# request and the use of its result, in decisions (per run; mean over seeds with 95%
# interval).

# %% tags=["remove-input"]
plots.markdown_table(stats.ci_table(plots.label_methods(found.oail_summary), index=("servers", "Method"),
                                    formats=FORMATS), NAMES,
                     empty="No ILETS- or ILETS cell with OAIL counters is in this results store.")

# %% [markdown]
# Across fleet sizes, {glue:text}`oail_share` of the requests were applied
# ({glue:text}`oail_lost` in all); the median lag is {glue:text}`oail_lag` decisions,
# against a request every {glue:text}`oail_every` decisions: results are applied only at
# the start of the next PPO rollout (every {glue:text}`n_steps` decisions), so the lag is
# mostly that wait, and a backlog beyond {glue:text}`max_pending` requests drops the
# oldest. Whether the imitation
# changes the outcome is the comparison of each method with and without OAIL, on the
# whole-pass mean reward (relative change, positive = with OAIL better; paired 95%
# interval over seeds): {glue:text}`oail_effect`.

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(found.oail_effect, by=("servers", "pair"), formats=FORMATS,
                                           names={"ilets-": "with OAIL", "ilets": "with OAIL", "drl": "without",
                                                  "drl+": "without"}), NAMES,
                     empty="(the methods with and without OAIL are not both in this results store)")

# %% [markdown]
# ## Past window or upcoming window?
#
# The authors' code let the experts plan the *next* tasks, which have not arrived when an
# online scheduler decides; this study uses the last tasks already scheduled. The
# `upcoming` variant runs its profile's OAIL methods with the authors' window, against the main
# study's past window at the same fleet size and seeds.

# %% [markdown]
# {glue:text}`up_text`

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(found.upcoming.table, by=("servers", "method"),
                                           names={"variant": "upcoming", "main": "past"}, formats=FORMATS), NAMES,
                     empty="(no `upcoming` cells)")

# %% [markdown]
# In the comparison tables the change is the relative difference of the means, signed so
# that positive is better for the first-named arm, with a 95% paired percentile-bootstrap
# interval over seeds; *verdict* says whether that interval excludes zero.
