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
# {glue:text}`lead`
#
# A policy that learns online schedules real tasks while it learns, so its first decisions
# count. The paper's answer is to pre-train: before going online, optimisation experts (a
# genetic algorithm and particle-swarm optimisation) schedule the offline tasks, and the
# learner's actor is trained to imitate their choices, its critic to predict their returns
# {cite}`kang2024ilets`. DRL+ and ILETS start from this policy; DRL and ILETS- start from
# random weights.

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import findings as F
from ilets.report import plots, stats
from ilets.metric_table import formats
from ilets.report.report_context import ReportContext

# %matplotlib inline

FORMATS = {**formats(), "bc_agreement_before": ".1%", "bc_agreement_after": ".1%", "bc_top5_heldout": ".1%",
           "bc_regret_rel_heldout": "+.1%"}
NAMES = {"bc_agreement_before": "agreement before cloning", "bc_agreement_after": "agreement after cloning",
         "bc_top5_heldout": "expert's server in top 5 (new states)",
         "bc_regret_rel_heldout": "extra cost of the clone's choice (new states)"}

plots.use_style()
ctx = ReportContext.load()
found = F.cold_start_findings(ctx)
learn, N = ctx.learner_curves, found.n_first
glue("lead", found.texts["lead"], display=False)
glue("banner", Markdown(ctx.banner), display=False)
glue("n_first", f"{N:,}", display=False)
glue("n_share", found.share, display=False)
for key in ("agree_verdict", "cloning", "critic_drop"):
    glue(key, found.texts[key], display=False)

# %% [markdown]
# ## Learning curves from the first decision

# %% tags=["remove-input"]
fig = plots.learning_curves(learn, "reward", "reward per decision", events={"first N": N})

# %% [markdown]
# *Figure: reward per decision (higher is better), averaged over consecutive windows of
# decisions, one panel per fleet size. Lines: mean over seeds; bands: 95% bootstrap interval
# over seeds. The vertical line ends the first {glue:text}`n_first` decisions
# ({glue:text}`n_share` of the online pass), where the cold start is measured.*
#
# ## Are DRL+ and ILETS far better from the very start?
#
# Each pre-trained learner is compared with each learner trained from scratch on the mean
# reward over the first decisions, seed by seed (runs with the same seed schedule the same
# tasks on the same fleet). The change is relative, positive when the pre-trained learner is
# better, with a 95% interval over seeds; with few seeds "resolved" means "every seed
# agrees", so read the intervals as descriptive.

# %% tags=["remove-input"]
plots.markdown_table(F.component_display(found.components), {}, empty="No learner curves are in this results store.")

# %% [markdown]
# ## What cloning achieved
#
# Cloning is scored by the *agreement*: the share of the experts' decisions where the
# pre-trained policy's most likely server is the expert's. Across fleet sizes,
# {glue:text}`agree_verdict`. {glue:text}`cloning` Pre-training the critic
# {glue:text}`critic_drop`.

# %% tags=["remove-input"]
bc = F.rows(found.bc_summary, method="drl+", metric=list(NAMES))
plots.markdown_table(stats.ci_table(plots.label_methods(bc), index=("servers", "Method"), formats=FORMATS), NAMES,
                     empty="No DRL+ cell is in this results store.")

# %% [markdown]
# *Table: DRL+ after pre-training, mean over seeds with a 95% interval (ILETS clones the same
# demonstrations and scores the same). "New states" are later expert decisions that were
# never cloned.*
#
# Whether a learner can clone these experts at all, with the same cloning budget, is tested
# by a positive control in {doc}`A05_oinpt_details`, which also holds the other learning
# curves and three variants: no critic pre-training, a simpler expert to clone, and a richer
# state.
#
# :::{dropdown} Reproduce this
# {glue:md}`banner`
#
# The pre-training is `ilets.agents.oinpt`: GA and PSO plan the offline tasks window by window,
# the better plan of each window is the demonstration, PPO's policy is behaviour-cloned on it
# with `imitation`'s BC and the critic regressed on the discounted returns of the expert's
# trajectory (how the paper pre-trains the critic is not published; this is our choice). The
# findings are `ilets.report.findings.cold_start_findings` and the claim's verdict
# `ilets.report.verdicts.claim_cold_start`. {doc}`10_reproduce` gives the commands.
# :::
