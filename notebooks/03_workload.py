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
# # Workload
#
# The paper schedules a 50-minute, high-dynamic window of day 10 of the Google cluster
# trace {cite}`reiss2011google`: {glue:text}`paper_offline` tasks in the first 25 minutes train the policy
# offline (OINPT), {glue:text}`paper_online` in the last 25 are scheduled online {cite}`kang2024ilets`. The
# window's start is not published, and the trace cannot be downloaded on the machines this
# book is built on, so the book runs on an **embedded synthetic window** calibrated to it.
# With the trace at hand, `ilets trace download` and `ilets trace find-window` fetch the
# shards and find the window whose halves best match the paper's counts; setting
# `workload.kind: google` in a profile runs everything on it.

# %% tags=["remove-cell"]
import numpy as np
from myst_nb import glue

from ilets.report import plots
from ilets.config import WorkloadConfig
from ilets.report import findings as F
from ilets.report import measurements as MS
from ilets.report.report_context import ReportContext
from ilets.workloads.workload import PAPER_OFFLINE_TASKS, PAPER_ONLINE_TASKS, PAPER_WINDOW_S, RATE_SHAPE, real_cpu_sample, \
    synthetic_workload

plots.use_style()
full = synthetic_workload(WorkloadConfig(scale=1.0), seed=0)
arrival = np.concatenate([full.offline.arrival, full.online.arrival])
glue("n_offline", f"{len(full.offline):,}", display=False)
glue("n_online", f"{len(full.online):,}", display=False)
glue("rate_mean", f"{len(arrival) / PAPER_WINDOW_S:,.0f}", display=False)
glue("paper_offline", f"{PAPER_OFFLINE_TASKS:,}", display=False)
glue("paper_online", f"{PAPER_ONLINE_TASKS:,}", display=False)
ctx = ReportContext.load()
profile = ctx.profile
glue("profile_name", profile["name"], display=False)
scale = profile["run"]["workload"]["scale"]
glue("profile_window", F.window_text(scale, round((PAPER_OFFLINE_TASKS + PAPER_ONLINE_TASKS) * scale)),
     display=False)

# %% [markdown]
# ## Arrivals: bursts and a trend change
#
# The embedded window has exactly {glue:text}`n_offline` offline and {glue:text}`n_online`
# online tasks (on average {glue:text}`rate_mean` arrivals per second, the paper's burst
# level). Arrival times are a non-homogeneous Poisson process conditioned on those counts:
# a piecewise-linear baseline (`ilets.workloads.workload.RATE_SHAPE`) with short **instant bursts**
# (red) and, in the online half, a **trend change** (purple) where the rising baseline turns
# to falling. The results in this book use the {glue:text}`profile_name` profile, which
# {glue:text}`profile_window`.

# %%
fig = plots.arrival_rate(arrival, full.split_time, full.events | {
    f"burst_{i}": s for i, (s, _, _) in enumerate(RATE_SHAPE["bursts"]) if s < full.split_time}, bin_s=10)

# %% [markdown]
# *Figure: arrivals per second in 10 s bins over the 3,000 s window. Dashed: the
# offline/online split; red: instant bursts; purple: the online trend change.*
#
# ## CPU requests follow the real trace
#
# CPU requests are drawn from a 201-point quantile table of real Google 2011 tasks shipped
# with the package (`ilets/data/google_cpu_quantiles.csv`, provenance in its header). When
# the real sample is present beside the repository, the chapter compares them.

# %% tags=["remove-cell"]
real = real_cpu_sample()
gen = full.online.cpu
glue("ks_text", F.ks_sentence(gen, real), display=False)

# %%
fig = plots.cpu_distribution(gen, real)

# %% [markdown]
# *Figure: empirical CDF of CPU requests (log scale) of the synthetic online segment and of
# the real Google sample.* Here {glue:text}`ks_text`.

# %% tags=["remove-cell"]
run = profile["run"]
(l_lo, l_hi), (d_lo, d_hi) = run["workload"]["length_mi"], run["workload"]["deadline_s"]
m_lo, m_hi = run["fleet"]["mips"]
glue("length_range", f"{l_lo:,.0f}-{l_hi:,.0f} MI", display=False)
glue("deadline_range", f"{d_lo:g}-{d_hi:g} s", display=False)
glue("exec_range", f"{l_lo / m_hi:.2g}-{l_hi / m_lo:.2g} s", display=False)
glue("mips_range", f"{m_lo:,.0f}-{m_hi:,.0f} MIPS", display=False)

# %% [markdown]
# ## Task length and deadline
#
# The trace has neither. Lengths are uniform on {glue:text}`length_range`, as in the group's
# earlier simulators; relative deadlines are uniform on {glue:text}`deadline_range` (our
# choice: a task needs {glue:text}`exec_range` on the fleet's {glue:text}`mips_range`
# servers, so the deadline binds on slow servers and in queues). Both are listed in the
# deviations chapter.

# %%
fig = plots.task_parameters(full.online.to_frame())

# %% [markdown]
# *Figure: distributions of task length and relative deadline in the online segment.*
#
# ## How loaded is the fleet?
#
# The service rates are our choice, calibrated so that over the paper's full online window
# (scale 1) the 50-server fleet is loaded but not swamped. The table replays the online
# segment with the Earliest-Finish heuristic at each fleet size, on the full window and on
# the reduced window of the profile shown. A reduced window keeps the arrival rate, but
# bursts are shorter in absolute time, so less queueing builds up: the same fleet is less
# loaded than over the full window. The `heavy-load` variant (results chapter) runs some
# methods on slower servers: on a reduced window it brings the queues back towards the full
# window's size, on the full window it loads the fleet beyond the calibration.

# %% tags=["remove-input"]
recorded = MS.of_context(ctx, "workload")  # the replay, recorded by `make artifacts`
load = MS.load_frame(recorded)
glue("load_seed", f"{recorded['seed']}", display=False)
glue("load_stamp", recorded.stamp, display=False)
plots.markdown_table(F.load_display(load), {})

# %% [markdown]
# *Table: Earliest-Finish on the online segment, workload and fleet seed
# {glue:text}`load_seed`; a replay {glue:text}`load_stamp` (not a result of the grid).*
