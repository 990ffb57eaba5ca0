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
# # Generalisation and adaptation
#
# {glue:md}`lead`
#
# The paper names generalisation as its limit and argues for OAIL by adaptation
# {cite}`kang2024ilets`. Each shifted world moves one factor of the paper's window [ours]; the
# final policy of each per-server learner ({doc}`13_per_server`) and the heuristics schedule
# the same tasks, paired by seed. Each cell is an improvement in percent (positive is better)
# with its 95 % interval.

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import plots
from ilets.report import shifts as SH

found = SH.chapter_findings()
worlds = SH.chapter_findings(SH.shifts_dir("shifts-worlds"), who="the learners")
glue("lead", Markdown(SH.chapter_lead(found, worlds)), display=False)
glue("provenance", Markdown(found.provenance), display=False)
glue("response_sentence", Markdown(found.response_sentence), display=False)
glue("heuristics", Markdown(found.heuristics), display=False)
glue("worlds_provenance", Markdown(worlds.provenance), display=False)

# %% [markdown]
# ## The frozen policies against the best heuristic
#
# Mean reward, the objective the learners were trained on (under a theta shift, the shifted
# one). {glue:md}`heuristics` {glue:md}`response_sentence`

# %% tags=["remove-input"]
plots.markdown_table(SH.display_table(found.table, "mean_reward"), {}, empty="(no shifted-world results yet)")

# %% [markdown]
# ## Learning on in the shifted world
#
# DRL+ continues online from its final policy in each shifted world, as plain PPO and with
# OAIL; learning on is set against the same policy deployed frozen, OAIL against learning on
# without it (mean reward):

# %% tags=["remove-input"]
plots.markdown_table(SH.conditions_display(found.continuing, found.oail), {}, empty="(not run yet)")

# %% [markdown]
# ## Both designs, over worlds
#
# The authors' flat DRL and DRL+ beside the per-server ones, each seed its own fleet and events
# ({doc}`07_results`), on the shifts a flat policy can take; mean reward against the best
# heuristic:

# %% tags=["remove-input"]
plots.markdown_table(SH.display_table(worlds.table, "mean_reward", context=False), {}, empty="(not run yet)")

# %% [markdown]
# :::{dropdown} Reproduce this
# Per-server learners: {glue:md}`provenance` Both designs: {glue:md}`worlds_provenance`
#
# The shifts are declared in `src/ilets/configs/shifts.yaml` and `shifts-worlds.yaml` and run
# by `python -m ilets.study.shifts` (learning on starts from `RunConfig.warm_start`); the
# chapter's tables and sentences come from `ilets.report.shifts`. {doc}`10_reproduce` gives
# the commands.
# :::
