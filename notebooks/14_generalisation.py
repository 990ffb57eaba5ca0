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
# The paper's own stated limit is generalisation: it shows no change of data set, objective
# weight or constraint structure, and it argues for OAIL by adaptation to drift. A reader who
# takes a policy trained here into their own workload needs to know what survives the move.
# This chapter moves one factor of the world at a time away from the paper's window (the
# shift family `src/ilets/configs/shifts.yaml`, run by `python -m ilets.study.shifts`): the
# arrival rate, the bursts, a trend, the CPU-request mix, task lengths, deadlines, the
# objective weight theta, the fleet's speed and power ranges, and the fleet size the policy
# was trained at [ours]. One more factor moves what a learner was taught instead of the world:
# the quality of the expert DRL+ clones (trained anew cloning the one-step greedy expert, or
# GA+PSO with half its labels replaced at random), run in the unshifted world. In every
# shifted world the final policy of each per-server learner cell ({doc}`13_per_server`)
# schedules the online half frozen and greedy, and the heuristics schedule the same tasks, so
# each comparison is paired by seed.
#
# {glue:md}`provenance`

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import plots
from ilets.report import shifts as SH

found = SH.chapter_findings()
glue("provenance", Markdown(found.provenance), display=False)
glue("sentence", Markdown(found.sentence), display=False)
glue("response_sentence", Markdown(found.response_sentence), display=False)
glue("oail_sentence", Markdown(found.oail_sentence), display=False)
glue("continuing_sentence", Markdown(found.continuing_sentence), display=False)
glue("heuristics", Markdown(found.heuristics), display=False)
worlds = SH.chapter_findings(SH.shifts_dir("shifts-worlds"))
glue("worlds_sentence", Markdown(worlds.sentence), display=False)
glue("worlds_provenance", Markdown(worlds.provenance), display=False)

# %% [markdown]
# ## The frozen policies against the best heuristic
#
# On the reward the learners were trained on (theta-weighted power and waiting; under a
# theta shift, the shifted objective): {glue:md}`sentence`
#
# Each cell: the frozen policy's improvement over the best heuristic of that world, in
# percent (positive is better), its 95 % interval over paired seeds and verdict, and in
# brackets the same improvement in the unshifted world at that fleet size.
# {glue:md}`heuristics`

# %% tags=["remove-input"]
plots.markdown_table(SH.display_table(found.table, "mean_reward"), {}, empty="(no shifted-world results yet)")

# %% [markdown]
# On response time: {glue:md}`response_sentence`

# %% tags=["remove-input"]
plots.markdown_table(SH.display_table(found.table, "avg_response_s"), {}, empty="(no shifted-world results yet)")

# %% [markdown]
# ## Does online imitation help when the world shifts?
#
# The paper argues for OAIL by adaptation. Here a learner continues online from its own
# final policy in the shifted world (warm-started, `RunConfig.warm_start`), once as plain PPO
# and once with OAIL, on the same tasks and seeds; the family's `online_learners` names which
# (each run is a paper-scale cell of its own): {glue:md}`oail_sentence`

# %% tags=["remove-input"]
plots.markdown_table(SH.condition_display(found.oail), {}, empty="(not run yet)")

# %% [markdown]
# ## Learning on, or deploying frozen?
#
# The same continuation without OAIL set against the policy it started from, deployed frozen
# and greedy on the same tasks: what a reader gains by letting the learner keep learning in
# the shifted world (its decisions are PPO's samples while it learns, the frozen policy's
# its greedy choice): {glue:md}`continuing_sentence`

# %% tags=["remove-input"]
plots.markdown_table(SH.condition_display(found.continuing), {}, empty="(not run yet)")

# %% [markdown]
# ## Both designs, over worlds
#
# The same shifts for the authors' flat policy and the per-server policy side by side (DRL
# and DRL+ of the worlds grid, {doc}`07_results`), each seed its own world: its own fleet and
# moved events, so the intervals cover worlds and policies together (the shift family
# `src/ilets/configs/shifts-worlds.yaml`; no fleet-size transfer, which a flat policy cannot
# make). {glue:md}`worlds_provenance`
#
# {glue:md}`worlds_sentence`

# %% tags=["remove-input"]
plots.markdown_table(SH.display_table(worlds.table, "mean_reward"), {}, empty="(not run yet)")
