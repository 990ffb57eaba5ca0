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
# # OINPT and the cold start
#
# A policy that learns online schedules real tasks while it learns, so its first decisions
# count. The paper's answer to the cold start is **OINPT**: before the online segment,
# optimisation experts schedule the offline segment and the actor-critic is trained to
# imitate them {cite}`kang2024ilets`. In this package (`ilets.agents.oinpt`) GA and PSO plan the
# offline tasks window by window, the better plan of each window is kept as the
# demonstration, PPO's own policy is behaviour-cloned on it with `imitation`'s BC, and the
# critic is regressed on the discounted returns of the expert's trajectory (how the paper
# pre-trains the critic is not published; this is our choice). DRL+ and ILETS start from
# this policy; DRL and ILETS- start from random weights.
#
# The paper claims that **DRL+ and ILETS are far better than DRL and ILETS- from the very
# start**. This chapter checks that claim from the first decision, looks at what cloning
# achieved, and asks three questions the paper leaves open: does the critic pre-training
# matter, does the expert's quality bound the clone, and is the paper's small state the
# bottleneck of cloning? Results are from the {glue:text}`profile_name` profile
# ({glue:text}`profile_desc`): fleets of {glue:text}`scales` servers,
# {glue:text}`n_seeds` seeds each, and OINPT on at most {glue:text}`demo_cap` offline
# tasks.

# %% tags=["remove-cell"]
from myst_nb import glue

from ilets.agents.oinpt import HELDOUT_TASKS
from ilets.report import findings as F
from ilets.report import plots, stats
from ilets.metric_table import formats
from ilets.report.report_context import ReportContext

# %matplotlib inline

FORMATS = {**formats(), "bc_agreement_before": ".1%", "bc_agreement_after": ".1%",
           "critic_mse_before": ".3g", "critic_mse_after": ".3g", "demo_tasks": ",.0f", "demo_seconds": ".1f",
           "oinpt_seconds": ".1f", "bc_top1_train": ".1%", "bc_top5_train": ".1%", "bc_top1_heldout": ".1%",
           "bc_top5_heldout": ".1%", "bc_regret_rel_train": "+.1%", "bc_regret_rel_heldout": "+.1%"}
NAMES = {"reward": "reward", "response": "response (s)", "success": "success", "mean_reward": "mean reward",
         "avg_response_s": "response (s)", "success_rate": "success rate", "energy_kwh": "energy (kWh)",
         "bc_agreement_before": "agreement before BC", "bc_agreement_after": "agreement after BC",
         "critic_mse_before": "critic MSE before", "critic_mse_after": "critic MSE after",
         "demo_tasks": "demonstrated tasks", "demo_seconds": "demo time (s)", "oinpt_seconds": "OINPT time (s)",
         "bc_top1_train": "top-1 (cloned)", "bc_top5_train": "top-5 (cloned)", "bc_top1_heldout": "top-1 (held out)",
         "bc_top5_heldout": "top-5 (held out)", "bc_regret_rel_train": "regret (cloned)",
         "bc_regret_rel_heldout": "regret (held out)"}

plots.use_style()
ctx = ReportContext.load()
found = F.cold_start_findings(ctx)
learn, N = ctx.learner_curves, found.n_first
glue("profile_name", ctx.name, display=False)
glue("profile_desc", ctx.description, display=False)
glue("scales", ctx.scales_text, display=False)
glue("n_seeds", ctx.seeds_text, display=False)
glue("demo_cap", f"{ctx.run.oinpt.max_demo_tasks:,}", display=False)
glue("heldout_tasks", f"{HELDOUT_TASKS:,}", display=False)
glue("n_first", f"{N:,}", display=False)
glue("n_online", f"{found.n_online:,}", display=False)
glue("n_share", found.share, display=False)
glue("curve_every", f"{found.curve_every:,}", display=False)
for key, text in found.texts.items():
    glue(key, text, display=False)
for variant in (found.no_critic, found.greedy_expert, found.rich_state):
    glue(f"{variant.name.replace('-', '_')}_text", variant.text, display=False)

# %% tags=["remove-input"]
from IPython.display import Markdown

Markdown(f"> {ctx.banner}")  # what these results are: scale, completeness, provenance

# %% [markdown]
# ## Learning curves from the first decision
#
# Every decision of the online pass is logged; a curve point is the mean over
# {glue:text}`curve_every` consecutive decisions (out of {glue:text}`n_online` in the
# online segment). The purple line marks the end of the first {glue:text}`n_first`
# decisions, the cold-start period measured below.

# %%
fig = plots.learning_curves(learn, "reward", "reward per decision", events={"first N": N})

# %% [markdown]
# *Figure: reward per decision (negative normalised cost; higher is better), mean over
# each window of decisions, against decisions made. Lines: mean over seeds; bands: 95%
# bootstrap confidence interval of that mean over seeds (seaborn, 500 resamples). One
# panel per fleet size.*

# %%
fig = plots.learning_curves(learn, "response", "response time (s)", events={"first N": N})

# %% [markdown]
# *Figure: mean response time (waiting plus execution) of the tasks scheduled in each
# window; lines and 95% bands over seeds as above.*

# %%
fig = plots.learning_curves(learn, "success", "success rate", events={"first N": N})

# %% [markdown]
# *Figure: share of the tasks of each window that met their deadline; lines and 95%
# bands over seeds as above.*
#
# ## The first decisions
#
# The cold start is measured over the first {glue:text}`n_first` decisions
# ({glue:text}`n_share` of the online segment: a tenth of it, rounded to whole curve windows):
# decision-weighted means of the windows, one value per run, then the mean over seeds with
# a 95% percentile-bootstrap interval over seeds.

# %% tags=["remove-input"]
plots.markdown_table(stats.ci_table(plots.label_methods(found.first_summary), index=("servers", "Method"),
                                    formats=FORMATS), NAMES)

# %%
fig = plots.scale_points(found.first, "reward", f"reward, first {N:,} decisions")

# %% [markdown]
# *Figure: mean reward over the first decisions per method and fleet size; points are
# means over seeds, bars 95% bootstrap intervals over seeds.*
#
# ### Are DRL+ and ILETS far better from the very start?
#
# This is claim 4 of the summary. Its comparisons are DRL+ and ILETS each against DRL and
# ILETS- on the mean reward over the first decisions, seed by seed: runs with the same seed
# schedule the same tasks on the same fleet, so the comparison is paired and the interval
# resamples seeds. Of these comparisons, {glue:text}`claim_counts`; the summary's verdict
# on the claim is **{glue:text}`claim_verdict`**. Each comparison, with the status the
# summary uses:

# %% tags=["remove-input"]
plots.markdown_table(F.component_display(found.components), {}, empty="No learner curves are in this results store.")

# %% [markdown]
# The same pairs on response time and success rate over the first decisions, per fleet size
# (not part of the claim's verdict; a pair is *better* when its 95% interval is above zero):

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(found.first_pairs, by=("servers", "pair"), formats=FORMATS,
                                           names={m: "pre-trained" for m in ("drl+", "ilets")}
                                           | {m: "from scratch" for m in ("drl", "ilets-")}), NAMES,
                     empty="(no pairs to compare)")

# %% [markdown]
# With few seeds (this page's counts are in its banner), "resolved" means "every seed agrees", not a
# test at the 5% level; read the intervals as descriptive. "Far better" is the paper's
# wording; the gains above say how far.
#
# ## What cloning achieved
#
# Behaviour cloning is scored by the *agreement*: the share of demonstrated decisions where
# the policy's most likely (masked) server is the expert's. The critic is scored by its
# mean squared error on the discounted expert returns. DRL+ and ILETS of one seed clone the
# same demonstrations from the same initial weights, so their cloning scores agree; their
# OINPT times differ because whichever runs second reads the demonstrations from the cache
# (the demonstration time is that of the run that produced them).

# %% tags=["remove-input"]
plots.markdown_table(stats.ci_table(plots.label_methods(found.bc_summary), index=("servers", "Method"),
                                    formats=FORMATS), NAMES, empty="No DRL+ or ILETS cell is in this results store.")

# %% [markdown]
# Across fleet sizes the agreement of DRL+ rises from {glue:text}`agree_before` (random
# weights) to {glue:text}`agree_after` after cloning: {glue:text}`agree_verdict`. Is exact
# agreement too strict, counting a near-equivalent server as a miss?
# {glue:text}`exact_agreement` Critic pre-training {glue:text}`critic_drop`.
#
# What limits cloning: the table's top-k columns ask whether the expert's server is among the
# clone's k most likely, and its regret columns what the clone's first choice costs more than
# the expert's at the expert's own state (one step, costed as the expert's plan; relative to the
# expert's mean cost), on the cloned states and on {glue:text}`heldout_tasks` later expert decisions that were
# never cloned. {glue:text}`cloning`
# Producing the demonstrations took {glue:text}`demo_s` s on average (GA and PSO on every
# window; cached and reused across methods) and the whole of OINPT
# {glue:text}`oinpt_s` s per run.
#
# ## Does the critic pre-training matter?
#
# Without a trained critic, PPO's first updates use advantages from a random value
# function, which can pull the cloned actor away from the expert. The `no-critic` variant
# runs DRL+ with the actor cloned but the critic left at its random initialisation;
# it is compared with the main DRL+ at the same fleet size and seeds, over the first
# decisions and over the whole pass.

# %% [markdown]
# {glue:text}`no_critic_text`

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(found.no_critic.table, by=("servers", "method", "over"),
                                           names={"variant": "no critic", "main": "main"}, formats=FORMATS), NAMES,
                     empty="(no `no-critic` cells)")

# %% [markdown]
# ## Does the expert's quality bound the clone?
#
# Imitation can at best reproduce its teacher. Two comparisons bound DRL+ by its experts.
# First, the `greedy-expert` variant clones the one-step greedy expert (the feasible server
# of least immediate cost) instead of GA and PSO: if the expert's quality matters, the
# better teacher gives the better start. Second, the greedy expert is itself the
# `greedy-cost` heuristic of the main grid, and the GA/PSO plans are by construction never
# worse than the greedy plan of the same window, so the greedy heuristic's online result is
# roughly the level the clone of GA/PSO should reach if cloning were perfect.

# %% [markdown]
# {glue:text}`greedy_expert_text` {glue:text}`floor_text`

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(found.greedy_expert.table, by=("servers", "method", "over"),
                                           names={"variant": "greedy clone", "main": "main"}, formats=FORMATS), NAMES,
                     empty="(no `greedy-expert` cells)")

# %% [markdown]
# The clone against the greedy heuristic (its teacher's one-step level), whole pass:

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(found.floor, by=("clone", "servers"),
                                           names={"drl+": "DRL+", "greedy-cost": "greedy heuristic"}, formats=FORMATS),
                     NAMES, empty="(no greedy-cost cells)")

# %% [markdown]
# ## Is the state the bottleneck of cloning?
#
# The paper's observation is small: the task's CPU request and one more task scalar, then
# each server's free CPU and task count (2M+2 numbers). The experts decide on much more:
# each server's queue, speed and power. If the state hides what the expert sees, no amount
# of cloning can copy it. The `rich-state` variant adds each server's wait bound, speed
# and power to the observation (5M+2 numbers) for DRL and DRL+.

# %% [markdown]
# {glue:text}`rich_state_text` Is the state the bottleneck? In these results,
# {glue:text}`rs_verdict`.

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(found.rich_state.table, by=("servers", "method", "over"),
                                           names={"variant": "rich state", "main": "paper state"}, formats=FORMATS),
                     NAMES, empty="(no `rich-state` cells)")

# %% [markdown]
# In all comparison tables the change is the relative difference of the means, signed so
# that positive is better for the first-named arm, with a 95% paired percentile-bootstrap
# interval over seeds; *verdict* says whether that interval excludes zero.

# %% [markdown]
# ## The positive control: can a learner clone its expert at all?
#
# A reproduction that finds "not reproduced" owes a positive control: proof that its learner
# can do the job. The control clones three experts, Earliest-Finish, Greedy-Cost and the
# paper's GA+PSO, into three designs with one BC budget (`imitation`'s BC, the same epochs,
# batch and learning rate for each):
#
# * the authors' **flat** MLP on the paper's state (2M+2 numbers);
# * the same flat MLP on the **rich** state (5M+2);
# * the **per-server** policy (`policy: per-server`, `ilets.agents.per_server`): one small
#   network, shared by all servers, scores each server from the task's numbers, that server's
#   row and a pooled summary of the fleet (mean and max of the rows), and a masked softmax
#   picks among the servers. Its observation (`observation: per-server`) is a table of what the
#   scheduler knows exactly about placing this task on each server: its wait and response
#   there, its execution time, the server's free CPU, tasks and time to drain, speed, power,
#   the task's marginal power and energy there, whether the deadline holds, and the
#   response relative to the deadline and to the fleet's best. Times are on uncapped log
#   scales, so nothing saturates in a burst.
#
# Each clone then schedules the online half **frozen and greedy** (its most likely feasible
# server, no learning), beside its expert on the same tasks; GA+PSO, which has no online
# form, is set beside Greedy-Cost. Agreement is counted *tie-aware*: the clone's server agrees
# when it is as good as the expert's by the expert's own criterion (finish time for
# Earliest-Finish, one-step cost for the others). The regret is the extra one-step cost of
# the clone's server at the expert's own held-out states.

# %% tags=["remove-cell"]
from ilets.report import positive_control as PC

control_folder = PC.control_dir()
control, control_prov = PC.load(control_folder)
same_fleet, moved = PC.split(control)
control_summary = PC.summary(same_fleet)
glue("control_verdict", PC.verdict(control_summary).text, display=False)
glue("control_prefix", Markdown(PC.prefix_sentence(control_summary)), display=False)

# %% tags=["remove-input"]
Markdown(f"> {PC.banner(control_folder, control_prov, control_summary)}")

# %% tags=["remove-input"]
plots.markdown_table(PC.display(control_summary), {}, empty="No positive-control results are shipped yet.")

# %% [markdown]
# {glue:text}`control_verdict` The gaps are relative to the expert (positive: the clone is
# worse). {glue:md}`control_prefix`
#
# ### One policy, any fleet size
#
# No weight of the per-server policy depends on the number of servers, so a clone trained on
# the smallest fleet also schedules the largest, and back. Rows: the clone trained on one fleet
# size, scheduling the whole online half of another, beside its expert there.

# %% tags=["remove-input"]
plots.markdown_table(PC.transfer_display(moved), {}, empty="No fleet-size transfer results are shipped yet.")
