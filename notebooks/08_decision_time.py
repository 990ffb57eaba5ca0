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
# # Decision time
#
# {glue:text}`lead`

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import findings as F
from ilets.report import measurements as MS
from ilets.report import plots
from ilets.report.report_context import ReportContext

plots.use_style()
ctx = ReportContext.load()
run = ctx.run
glue("profile_name", ctx.name, display=False)
glue("banner", Markdown(ctx.banner), display=False)
recorded = MS.of_context(ctx, "decision_time")  # measured with these settings by `make artifacts`
SCALES, N, PREDICT_EVERY = tuple(recorded["servers"]), recorded["decisions"], recorded["predict_every"]
summary = MS.latency_summary(recorded)
for key, text in F.decision_texts(summary, SCALES).items():
    glue(key, text, display=False)
glue("measured_stamp", recorded.stamp, display=False)
glue("n_decisions", f"{N:,}", display=False)
glue("predict_every", f"{PREDICT_EVERY}", display=False)
glue("hidden", f"{run.ppo.hidden}", display=False)
glue("oail_mean_us", f"{1e6 * recorded['oail_seconds']['mean']:.0f}", display=False)
glue("oail_max_ms", f"{1e3 * recorded['oail_seconds']['max']:.0f}", display=False)
glue("oail_every", f"{run.oail.every}", display=False)
glue("n_cpus", f"{recorded.host['cpus']}", display=False)
_, store_texts = F.store_latency(ctx.metrics)
for key, text in store_texts.items():
    glue(key, text, display=False)

# %% [markdown]
# We time {glue:text}`n_decisions` decisions at each fleet size on a fresh model, once for DRL and
# once with the online imitation running (ILETS): building the observation and the action mask and
# evaluating the policy's actor, the way our scheduler decides, and for ILETS the imitation's work
# on the scheduling thread (the experts plan in another process). One decision in
# {glue:text}`predict_every` is also timed through Stable-Baselines3's `predict`
# {cite}`raffin2021sb3`, the conventional path. Gradient updates happen between rollouts, not
# at a decision.

# %% tags=["remove-input"]
fig = plots.decision_times(summary)

# %% [markdown]
# *Figure: decision time (log scale) against fleet size, DRL (left) and ILETS (right); filled:
# medians, hollow: 95th percentiles, dashed: the paper's figures.*

# %% tags=["remove-input"]
plots.markdown_table(F.latency_display(summary, SCALES), {})

# %% [markdown]
# *Table: median decision time (the paper gives one figure per method and size).*
#
# ## Why ours is so much faster
#
# Our policy is one hidden layer of {glue:text}`hidden` units evaluated with numpy, two small
# matrix products; going through torch and Stable-Baselines3 costs {glue:text}`sb3_ratio`
# times more, nearly all of it per-call overhead. Our simulator is event-driven and never reads
# the clock, while the authors' advanced time on wall-clock timer threads that share the
# interpreter with each decision (chapter 9). And our experts run in another process, while the
# authors' "background" imitation ran in line with the decisions, which would explain why the
# paper's ILETS overhead grows with the fleet.
#
# The imitation works on one decision in {glue:text}`oail_every`: it polls the emulators, copies
# the cloud and submits a window. Averaged over all decisions that costs {glue:text}`oail_mean_us`
# µs, and the slowest single decision {glue:text}`oail_max_ms` ms; the emulator process also
# competes for the measuring machine's {glue:text}`n_cpus` CPUs, which lifts ILETS's 95th
# percentile over DRL's ({glue:text}`p95_extra`). At microsecond scales these percentages are
# sensitive to machine noise.
#
# In the study's own runs, the trained learners decide in
# {glue:text}`store_learner_us_lo`-{glue:text}`store_learner_us_hi` µs at the median, whatever
# their training (the same network evaluated the same way); the slowest heuristic,
# {glue:text}`store_slowest_heuristic`, takes {glue:text}`store_slowest_us` µs.
#
# :::{dropdown} Reproduce this
# {glue:md}`banner`
#
# The timings were measured once by `make artifacts` (`ilets.study.latency.measure`, on the
# first online tasks with the {glue:text}`profile_name` profile's settings), {glue:text}`measured_stamp`;
# the book reads that record. Our decision is `NumpyActor` as `PPOPolicy` runs it; the recorded
# per-run times are the cells' `decision_p50_ms`. The finding is
# `ilets.report.findings.decision_lead`. {doc}`10_reproduce` gives the commands.
# :::
