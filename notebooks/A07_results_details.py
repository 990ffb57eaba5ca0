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
# # Appendix: the main results in detail
#
# The measurements behind {doc}`07_results`.

# %% tags=["remove-cell"]
from IPython.display import Markdown, display
from myst_nb import glue

from ilets.metric_table import summary_columns
from ilets.report import findings as F
from ilets.report import plots
from ilets.report import stats as S
from ilets.report.report_context import ReportContext
from ilets.study.results import METHOD_LABELS

# %matplotlib inline
plots.use_style()
ctx = ReportContext.load()
metrics = ctx.metrics
found = F.results_findings(ctx)
order_methods = S.method_order(metrics["method"].unique())
order = [METHOD_LABELS.get(m, m) for m in order_methods]

glue("banner", Markdown(ctx.banner), display=False)
glue("n_seeds", ctx.seeds_text, display=False)
glue("online_tasks", f"{ctx.online_tasks:,}", display=False)
glue("reps", f"{ctx.reps:,}", display=False)
for key, text in found.texts.items():
    glue(key, text, display=False)
for claim, verdict in found.verdicts.items():
    glue(f"verdict_{claim}", verdict.verdict, display=False)

METRICS = summary_columns()  # header, decimals, multiplier of each measure (ilets.metric_table)
AXES = {"avg_response_s": "response time (s)", "energy_kwh": "energy (kWh)", "success_rate": "success rate",
        "mean_reward": "mean reward"}
PAPER_LABELS = F.PAPER_LABELS
summary = found.summary

# %% [markdown]
# ## The metrics at each fleet size
#
# Average response time (waiting plus execution, seconds), energy of the whole fleet over the
# online pass (kWh), the share of tasks that met their deadline, and the mean per-decision
# reward (the negative cost the learners optimise, higher is better). Each cell is
# mean ± standard deviation over seeds, then the 95 % CI of the mean in brackets.

# %% tags=["remove-input"]
for s in ctx.scales:
    display(plots.summary_display(summary[summary["servers"] == s], METRICS).style.set_caption(f"{s} servers"))

# %% tags=["remove-input"]
fig = plots.metric_grid(metrics, AXES, order=order)

# %% [markdown]
# *Figure: each metric per method (learners first, then heuristics); colours are fleet
# sizes, points are means over seeds and bars their 95 % bootstrap CIs. Response time,
# energy: lower is better; success rate, reward: higher is better. Where random or
# round-robin lies so far off that drawing it would flatten every other method, its mean is
# written at the edge instead, followed by its fleet size ("at 50": at 50 servers).*
#
# ## Each improvement beside the paper's

# %% tags=["remove-input"]
fig = plots.improvement_vs_paper(found.comparison, PAPER_LABELS)

# %% [markdown]
# *Figure: our improvement over DRL per fleet size (circles) and pooled (diamonds), with 95 %
# intervals, and the paper's figure (black cross).*
#
# DRL+ changes response time by {glue:text}`ours_drlp_avg_response_s` (paper
# {glue:text}`paper_drlp_avg_response_s`), energy by {glue:text}`ours_drlp_energy_kwh` (paper
# {glue:text}`paper_drlp_energy_kwh`) and the success rate by
# {glue:text}`ours_drlp_success_rate` (paper {glue:text}`paper_drlp_success_rate`). ILETS-
# changes them by {glue:text}`ours_iletsm_avg_response_s` (paper
# {glue:text}`paper_iletsm_avg_response_s`), {glue:text}`ours_iletsm_energy_kwh` (paper
# {glue:text}`paper_iletsm_energy_kwh`) and {glue:text}`ours_iletsm_success_rate` (paper
# {glue:text}`paper_iletsm_success_rate`); brackets are 95 % CIs. The paper's figure lies
# inside one of our intervals (the pooled one, or a fleet size's where the effects are not
# pooled) for {glue:text}`paper_in_ci` of these numbers. On response time DRL+ is
# {glue:text}`drlp_vs_iletsm`.
#
# **How much room energy has.** An energy effect can only be as large as the model lets
# energy vary. {glue:text}`energy_room` Per fleet size, the energy per run (mean over seeds)
# of the policy that spends least, of the costliest that looks at the fleet, and of DRL:

# %% tags=["remove-input"]
plots.markdown_table(F.energy_room_display(found.energy_room), {}, empty="(no min-energy or DRL cells)")

# %% [markdown]
# ## Across fleet sizes: IQM and probability of improvement
#
# Raw metrics are not comparable across fleet sizes (a larger fleet uses more energy), so
# for aggregates across scales each run gets a **normalised score**: one plus its relative
# improvement over DRL's mean at the same fleet size, in the paper's sense. DRL's mean scores exactly 1 everywhere; 1.2 is 20 %
# better than DRL, 0.9 is 10 % worse, whatever the metric's direction. The **interquartile
# mean** (IQM) of these scores over all runs and fleet sizes (the mean of the middle 50 %)
# is robust to an outlying run and less noisy than a median {cite}`agarwal2021rliable`; its
# CI is rliable's stratified bootstrap (seeds resampled within each fleet size).

# %% tags=["remove-input"]
fig = plots.interval_panels(found.iqm, "iqm", "ci_low", "ci_high", panel="metric", label="Method",
                            panel_labels=dict(PAPER_LABELS, mean_reward="mean reward"), reference=1.0, order=order,
                            xlabel="normalised score (IQM)")

# %% [markdown]
# *Figure: IQM of the normalised score (1 = DRL, higher is better) with its 95 % stratified
# bootstrap CI, per metric, pooled over fleet sizes. A method without results at every fleet
# size (an unfinished grid) is left out.*
#
# The **probability of improvement** $P(\text{ILETS} > X)$ is the chance that a run of
# ILETS is better than a run of method $X$ at the same fleet size (the Mann-Whitney
# statistic over all pairs of seeds, ties counted half), averaged over fleet sizes; it needs
# no normalisation. 0.5 means indistinguishable, 1 means ILETS always better, 0 always
# worse.

# %% tags=["remove-input"]
fig = plots.interval_panels(found.poi, "prob", "ci_low", "ci_high", panel="metric", label="Method",
                            panel_labels=PAPER_LABELS, reference=0.5,
                            order=[m for m in order if m != "ILETS"], xlabel="P(ILETS better)")

# %% [markdown]
# *Figure: probability that ILETS beats each other method (rows) on each metric, with 95 %
# stratified bootstrap CIs; dashed: 0.5.*
#
# ## The heuristics against the learners
#
# The paper says ILETS beats every baseline. For each heuristic and metric, the table counts
# the learners it beats at every fleet size (effect positive with CI above zero at each
# scale) and gives its pooled improvement over the best learner on that metric (positive:
# the heuristic is better).

# %% tags=["remove-input"]
display(plots.heuristic_display(found.heuristics, PAPER_LABELS)
        .style.set_caption("Heuristics vs learners: learners beaten at every fleet size; pooled effect over the best"))

# %% [markdown]
# Per fleet size, each heuristic against the learner that is best there on the metric
# (relative improvement in %, 95 % CI over seeds, paired; positive: the heuristic is better):

# %% tags=["remove-input"]
display(plots.heuristic_fleet_display(found.heuristics_fleet, PAPER_LABELS)
        .style.set_caption("Heuristics vs the best learner at each fleet size (%, 95 % CI)"))

# %% [markdown]
#
# ## Sensitivity: a heavier load
#
# The servers' service rates are not published; ours (see the model and workload chapters)
# are calibrated on the paper's full online window, where queues build up over 25 minutes
# of bursts. The `heavy-load` variant repeats some methods with {glue:text}`heavy_caption`,
# everything else equal. {glue:text}`heavy_purpose`.

# %% tags=["remove-input"]
for s, part in F.by_fleet(found.heavy_summary).items():  # one table per fleet size (nothing without the variant)
    display(plots.summary_display(part, METRICS, index="method", split="setting").style.set_caption(
        f"{s} servers: main grid vs {found.texts['heavy_caption']} (mean ± std [95 % CI])"))

# %% tags=["remove-input"]
fig = plots.variant_points(found.heavy, AXES, order=order)  # None (no figure) without the variant

# %% [markdown]
# {glue:text}`heavy_text`
#
# *Figure (when the variant exists): each metric per method at the variant's fleet size, in
# the main grid and with {glue:text}`heavy_caption`; means and 95 % CIs over seeds.*

# %% [markdown]
# ## Worlds as replicates
#
# Every cell above schedules one world: the fleet drawn with seed 0 and the one designed
# event schedule, so its intervals cover the learners' own randomness only. A second
# grid draws a world per seed as well: the fleet with
# the run seed and every burst and trend knot moved by up to 100 s [ours]. Each comparison
# below is judged in one world and over worlds, with the same paired resampler (over the
# worlds grid it resamples worlds, each with its learner's draw: a two-level bootstrap with
# one policy seed per world).

# %% tags=["remove-cell"]
from ilets.report import worlds as W  # noqa: E402

worlds_found = W.chapter_findings(ctx)
for family, sentence in worlds_found.sentences.items():
    glue(f"worlds_{family}", sentence, display=False)

# %% [markdown]
# **Flat learners.** {glue:text}`worlds_flat`
#
# **Per-server learners.** {glue:text}`worlds_per-server`

# %% tags=["remove-input"]
display(plots.markdown_table(W.findings_table(worlds_found), {}, empty="(no worlds results yet)"))

# %% [markdown]
# :::{dropdown} Reproduce this
# {glue:md}`banner`
#
# Normalised scores are `ilets.report.stats.normalise_scores`; the heavier load is the
# `heavy-load` variant; worlds are the `worlds` profile (`src/ilets/configs/worlds.yaml`), read
# by `ilets.report.worlds`.
# :::
