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
# # Main results
#
# {glue:text}`lead`
#
# The four learners (DRL, pre-trained DRL+, ILETS- with online imitation, and ILETS with both)
# and six heuristic baselines schedule the online half of the workload
# ({glue:text}`online_tasks` tasks) at every fleet size, {glue:text}`n_seeds` seeds each
# {cite}`kang2024ilets`. A seed fixes the workload draw and the learners' randomness; every
# interval is a 95% bootstrap over seeds, descriptive rather than a test with so few seeds.

# %% tags=["remove-cell"]
from IPython.display import Markdown, display
from myst_nb import glue

from ilets.metric_table import summary_columns
from ilets.report import claim_figures as CF
from ilets.report import families as FF
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
gaps = CF.gap_by_fleet(ctx, FF.per_server_context(ctx))  # both learner families, the book's resamples

# %% [markdown]
# ## Every learner against the best heuristic
#
# The plainest test of a learned scheduler: does it do better than the best simple rule on the
# same tasks? Each learner's mean reward (the reward it is trained on) is set against the best
# heuristic's at each fleet size, with the authors' flat network and with the per-server one.

# %% tags=["remove-input"]
fig = CF.gap_figure(gaps)

# %% [markdown]
# *Figure: each learner's mean reward against the best heuristic's on the same tasks and seeds,
# in percent of the heuristic's (0: as good; below: worse), with its 95 % interval over seeds,
# paired by seed. The best heuristic is the one with the best mean reward at that fleet size,
# named under it; the per-server learners are set against the same heuristic runs as the
# flat ones.*

# %% [markdown]
# ## The paper's improvement table, and ours
#
# The paper reports how much ILETS- and DRL+ improve on DRL. Ours is the relative change of the
# seed means, positive when better, per fleet size and pooled over fleet sizes where the
# effects at every size have the same sign (an average of opposite effects describes no
# fleet). The paper does not say which fleet size its figures pool over.

# %% tags=["remove-input"]
display(plots.comparison_display(found.comparison, PAPER_LABELS)
        .style.set_caption("Improvement over DRL (%): the paper's, and ours with its 95% interval"))

# %% [markdown]
# ## The claims' comparisons
#
# DRL+ against DRL (claim 1), ILETS- against DRL (claim 2), DRL+ against ILETS- (claim 3)
# and ILETS against the best heuristic on each metric (claim 8), each at every fleet size.
# In plain words: {glue:text}`heuristic_sentence`

# %% tags=["remove-input"]
plots.markdown_table(F.claims_display(found.components, (1, 2, 3, 8)), {})

# %% [markdown]
# The same improvements as a figure, the metrics of every method at each fleet size, the room
# energy has, aggregates across
# fleet sizes, the heuristics per fleet size, a heavier load and worlds drawn per seed are in
# {doc}`A07_results_details`.
#
# :::{dropdown} Reproduce this
# {glue:md}`banner`
#
# The improvement table is `ilets.report.stats.improvement_table` (seeds resampled jointly,
# {glue:text}`reps` resamples); the verdicts `ilets.report.verdicts`; the findings
# `ilets.report.findings.results_findings`. {doc}`10_reproduce` gives the commands.
# :::
