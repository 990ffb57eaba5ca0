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
# # The per-server learners
#
# {glue:text}`lead`
#
# The authors' flat network cannot express "the server where this task finishes first"
# ({doc}`05_oinpt`), while a network that scores each server from its own row clones every
# expert within the positive control's tolerance. This chapter runs the four methods again with that network, with the
# settings its own pilot chose ({doc}`11_pilot`), on the faithful grid's workloads, fleets and
# seeds, beside the same heuristic runs.

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import per_server as P
from ilets.report import plots
from ilets.report.report_context import ReportContext

ctx = ReportContext.load()  # the faithful grid: its heuristic cells are the yardstick here
found = P.chapter_findings(ctx)
glue("lead", found.lead, display=False)
glue("coverage", Markdown(found.coverage), display=False)
glue("judged", Markdown(found.judged), display=False)

# %% [markdown]
# ## The paper's improvement table, with the per-server learners
#
# Each method's improvement over DRL on the same seeds, in percent (positive is better), with
# its 95 % interval, beside the paper's figure; pooled only where every fleet size has the same
# sign. {doc}`07_results` shows the same table for the authors' network.

# %% tags=["remove-input"]
plots.markdown_table(found.comparison.reset_index(), {},
                     empty="No fleet size is judged yet.")

# %% [markdown]
# ## Against the best heuristic
#
# The best learner's improvement over the best heuristic at each fleet size (positive: the
# learner is better), with its 95 % interval over paired seeds.

# %% tags=["remove-input"]
plots.markdown_table(found.gap, {}, empty="No fleet size has both per-server learners and heuristics yet.")

# %% [markdown]
# ## What the online pass did to each policy
#
# Each cell scheduled held-out tasks greedily before and after its online pass. For DRL+ and
# ILETS the policy before the pass is the expert's clone; for DRL and ILETS- it is an untrained
# network. The change in mean held-out reward, in percent, with its 95 % interval over seeds:

# %% tags=["remove-input"]
plots.markdown_table(found.heldout, {}, empty="No per-server cell with held-out scores yet.")

# %% [markdown]
# :::{dropdown} Reproduce this
# {glue:md}`coverage` {glue:md}`judged`
#
# The grid is the `per-server` profile (`policy: per-server` in
# `src/ilets/configs/per-server.yaml`); the chapter's numbers come from
# `ilets.report.per_server.chapter_findings`, the held-out change from `ilets.study.heldout`.
# {doc}`10_reproduce` gives the commands.
# :::
