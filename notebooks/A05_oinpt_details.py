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
# # Appendix: the cold start in detail
#
# The details behind {doc}`05_oinpt`: the other learning curves, three variants of the
# pre-training, and the positive control.

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import findings as F
from ilets.report import plots, stats
from ilets.report import positive_control as PC
from ilets.metric_table import formats
from ilets.report.report_context import ReportContext

# %matplotlib inline

NAMES = {"reward": "reward", "response": "response (s)", "success": "success"}

plots.use_style()
ctx = ReportContext.load()
found = F.cold_start_findings(ctx)
learn, N = ctx.learner_curves, found.n_first
glue("banner", Markdown(ctx.banner), display=False)
for key in ("floor_text", "rs_verdict", "exact_agreement", "demo_s", "oinpt_s"):
    glue(key, found.texts[key], display=False)
for variant in (found.no_critic, found.greedy_expert, found.rich_state):
    glue(f"{variant.name.replace('-', '_')}_text", variant.text, display=False)
control_folder = PC.control_dir()
control, control_prov = PC.load(control_folder)
same_fleet, moved = PC.split(control)
control_summary = PC.summary(same_fleet)
glue("control_verdict", PC.verdict(control_summary).text, display=False)
glue("control_prefix", Markdown(PC.prefix_sentence(control_summary)), display=False)
glue("control_banner", Markdown(PC.banner(control_folder, control_prov, control_summary)), display=False)

# %% [markdown]
# ## The first decisions: response time and success

# %% tags=["remove-input"]
fig = plots.learning_curves(learn, "response", "response time (s)", events={"first N": N})

# %% tags=["remove-input"]
fig = plots.learning_curves(learn, "success", "success rate", events={"first N": N})

# %% [markdown]
# *Figures: mean response time (waiting plus execution) and share of tasks that met their
# deadline, per window of decisions; lines and 95% bands over seeds.*

# %% tags=["remove-input"]
plots.markdown_table(stats.ci_table(plots.label_methods(found.first_summary), index=("servers", "Method"),
                                    formats=formats()), NAMES)

# %% [markdown]
# *Table: each learner over the first decisions, mean over seeds with a 95% interval.*
#
# ## Three variants of the pre-training
#
# Each variant runs at the smallest fleet size with the main study's seeds; the change is
# relative to the main DRL+, positive when the variant is better.
#
# **No critic pre-training.** Without a trained critic, the first learning updates rest on a
# random value function, which could pull the cloned policy away from its expert.
# {glue:text}`no_critic_text`
#
# **A simpler expert.** Imitation can at best reproduce its teacher. Cloning the one-step
# greedy expert (the feasible server of least immediate cost) instead of GA and PSO:
# {glue:text}`greedy_expert_text` The same greedy rule is a heuristic of the main study, and
# GA/PSO's plans are never worse than its plan of the same window, so its result is roughly
# the level a perfect clone should reach. {glue:text}`floor_text`
#
# **A richer state.** The paper's state is small (the task's CPU request and one more number,
# then each server's free CPU and task count), while the experts also see each server's queue,
# speed and power. Adding those to the state: {glue:text}`rich_state_text` Is the state the
# bottleneck of cloning? {glue:text}`rs_verdict`.
#
# Producing the demonstrations took {glue:text}`demo_s` s per run on average and the whole
# pre-training {glue:text}`oinpt_s` s.
#
# ## The positive control: can a learner clone its expert at all?
#
# A reproduction that finds "not reproduced" owes proof that its learner can do the job. The
# control clones three experts (Earliest-Finish, Greedy-Cost and the paper's GA+PSO) with one
# cloning budget into three designs: the authors' flat network on the paper's state, the same
# network on a richer state, and a per-server policy, in which one small network shared by all
# servers scores each server from the task and what placing it there would cost (wait,
# response, energy, whether the deadline holds), and the best-scored feasible server is taken.
# Each clone then schedules the online half frozen, beside its expert on the same tasks.
# A clone's choice agrees when it is as good as the expert's by the expert's own criterion.

# %% tags=["remove-input"]
plots.markdown_table(PC.display(control_summary), {}, empty="No positive-control results are shipped yet.")

# %% [markdown]
# {glue:text}`control_verdict` The gaps are relative to the expert (positive: the clone is
# worse). {glue:md}`control_prefix` {glue:text}`exact_agreement`
#
# No weight of the per-server policy depends on the number of servers, so a clone trained on
# one fleet size also schedules another:

# %% tags=["remove-input"]
plots.markdown_table(PC.transfer_display(moved), {}, empty="No fleet-size transfer results are shipped yet.")

# %% [markdown]
# :::{dropdown} Reproduce this
# {glue:md}`banner`
#
# {glue:md}`control_banner`
#
# The variants are the profiles' variants `no-critic`, `greedy-expert` and `rich-state` (the
# greedy expert is the `greedy-cost` heuristic); the positive control is
# `ilets.study.positive_control`, read by `ilets.report.positive_control`, its per-server
# design `policy: per-server` with `observation: per-server` (`ilets.agents.per_server`).
# The held-out expert decisions number `ilets.agents.oinpt.HELDOUT_TASKS`.
# {doc}`10_reproduce` gives the commands.
# :::
