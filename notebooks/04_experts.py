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
# # Experts
#
# {glue:text}`lead`

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import findings as F
from ilets.report import plots
from ilets.config import RunConfig
from ilets.expert_table import setting_meanings
from ilets.report import measurements as MS
from ilets.report.report_context import ReportContext
from ilets.workloads.workload import PAPER_OFFLINE_TASKS

plots.use_style()
ctx = ReportContext.load()
run = ctx.run
cfg = run.experts
glue("profile_name", ctx.name, display=False)
glue("banner", Markdown(ctx.banner), display=False)
for key, text in F.config_texts(cfg).items():
    glue(key, text, display=False)
recorded = MS.of_context(ctx, "experts")  # measured with these settings by `make artifacts`
glue("measured_stamp", recorded.stamp, display=False)
glue("budget_note", F.budget_note(cfg, RunConfig().experts), display=False)
gaps = MS.gap_frame(recorded)
summary = MS.gap_summary(recorded)
timing = MS.timing_frame(recorded)
glue("n_cases", f"{int(summary['cases'].iloc[0])}", display=False)
glue("opt_ms", f"{gaps['optimum_ms'].mean():.0f}", display=False)
glue("case_servers", f"{gaps['servers'].min()}-{gaps['servers'].max()}", display=False)
glue("case_tasks", f"{gaps['tasks'].min()}-{gaps['tasks'].max()}", display=False)
glue("eval_servers", f"{recorded['evaluations_at']['servers']}", display=False)
glue("stops", " and ".join(f"{n:,}" for n in recorded["timing_settings"]["stops"]), display=False)
glue("ga_evals", f"{recorded['evaluations']['ga']:,}", display=False)
glue("pso_evals", f"{recorded['evaluations']['pso']:,}", display=False)

metrics = ctx.metrics
demo = metrics[metrics["method"].isin(["drl+", "ilets"])]
oail = metrics[metrics["method"].isin(["ilets-", "ilets"])]
glue("lead", F.experts_lead(summary, timing, oail), display=False)
glue("demo_tasks", f"{int(demo['demo_tasks'].median()):,}", display=False)
glue("demo_seconds", f"{demo['demo_seconds'].mean():.1f}", display=False)
glue("demo_full_hours", f"{PAPER_OFFLINE_TASKS * demo['demo_seconds'].mean() / demo['demo_tasks'].mean() / 3600:.1f}",
     display=False)
glue("paper_offline", f"{PAPER_OFFLINE_TASKS:,}", display=False)
glue("oail_throughput", F.oail_throughput_text(oail, run.oail.clock, run.oail.latency_s), display=False)
glue("oail_every", f"{run.oail.every}", display=False)
glue("settings", Markdown(", ".join(f"`{k}` {getattr(cfg, k):g}" for k in setting_meanings())), display=False)

# %% [markdown]
# ## What the experts do
#
# ILETS learns from optimisation experts {cite}`kang2024ilets`: offline, their plans are the
# demonstrations OINPT clones; online, OAIL's emulators run them on copies of the cloud. The
# authors' code names a genetic algorithm (GA) and particle swarm optimisation (PSO), but their
# modules are missing and the paper gives no settings, so ours are our own.
#
# An expert gets a snapshot of the cloud and the next {glue:text}`cfg_window` tasks and returns
# one server per task. A plan's cost is the cost PPO is rewarded with (chapter 2) summed over the
# window, plus {glue:text}`cfg_miss_penalty` per missed deadline, and it is exact: the plan is
# replayed on a copy of the simulator, for a whole population of plans at once. Each task may go
# to its {glue:text}`cfg_candidates` cheapest feasible servers. **Greedy** places the tasks one by
# one on the cheapest server given those already placed; its plan seeds both searches, and an
# expert returns the cheaper of its best plan and greedy's. The **GA**
# ({glue:text}`cfg_ga_population` plans, {glue:text}`cfg_ga_generations` generations) breeds plans
# by tournament, crossover and mutation and scores {glue:text}`ga_evals` plans per call; the
# **PSO** ({glue:text}`cfg_pso_particles` particles, {glue:text}`cfg_pso_iterations` iterations)
# moves a score per task and server, each task taking its best-scored server, and scores
# {glue:text}`pso_evals`.
#
# ## How close to optimal

# %% tags=["remove-input"]
fig = plots.optimality_gaps(gaps)

# %% [markdown]
# *Figure: gap to the optimum, found by enumerating every plan, on {glue:text}`n_cases` small
# cases ({glue:text}`case_servers` loaded servers, {glue:text}`case_tasks` large tasks, where
# planning a window beats one-step greedy); one point per case, the bar is the mean, points on
# zero are optimal plans.*

# %% tags=["remove-input"]
plots.markdown_table(F.gap_display(summary), {"cases": "cases"})

# %% [markdown]
# The enumeration takes {glue:text}`opt_ms` ms per case here but grows as $M^W$, out of reach at
# {glue:text}`cfg_window` tasks and {glue:text}`eval_servers` servers, which is what the
# searches are for.
#
# ## What a call costs and saves
#
# On the study's own snapshots (the online tasks after {glue:text}`stops` decisions of
# earliest-finish) the optimum is unknown, so the experts are compared with greedy.

# %% tags=["remove-input"]
plots.markdown_table(F.timing_display(timing), {})

# %% [markdown]
# *Table: one call on a {glue:text}`cfg_window`-task window (median over calls); CPU load: the
# snapshots' mean CPU utilisation.* The cost hardly grows with the fleet, since each task has a
# fixed number of candidate servers. The saving does not: on a lightly loaded cloud every task
# has an idle, fast server, and the one-step choice is already optimal for the window. A plan is
# also optimal only for its own window: the queues it leaves to later tasks do not enter its
# cost, which caps what OINPT and OAIL can learn from it, as the paper says of any expert.
#
# **In the study.** Each DRL+ and ILETS cell clones GA and PSO plans for {glue:text}`demo_tasks`
# offline tasks, made in {glue:text}`demo_seconds` s; all {glue:text}`paper_offline` offline
# tasks of the paper's window would take {glue:text}`demo_full_hours` hours per fleet size and
# seed, and the number cloned is the tuning pilot's choice (chapter 11). Online, every
# {glue:text}`oail_every` decisions ILETS- and ILETS send the last window to the emulators.
# {glue:text}`oail_throughput`.
#
# :::{dropdown} Reproduce this
# {glue:md}`banner`
#
# The gaps and times were measured once by `make artifacts`, {glue:text}`measured_stamp`;
# `benchmarks/bench_experts.py` runs the same tables (`ilets.study.expert_tables`) with more
# calls and cases. The experts are `ilets.agents.experts` (exact batched costs:
# `WindowFitness`; greedy: `GreedyCost`; the small cases: `small_case`), registered in
# `ilets.expert_table` as `ga`, `pso` and `greedy` (the names `oail.experts` and `oinpt.expert`
# take; the paper's `ga+pso` keeps the cheaper plan per window). The {glue:text}`profile_name`
# profile's settings ({glue:text}`budget_note`, listed with their meanings in `ilets.expert_table`):
# {glue:md}`settings`.
# :::
