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
# # Following a grid power command
#
# {glue:text}`gc_finding`
#
# This scenario is the study's own; the paper has none. A grid operator asks the data centre
# to cut (or raise) its power for a while, and the scheduler, which may now also defer a task,
# must follow that request while it keeps the tasks' deadlines. The experts range from a
# simple rule to an optimising planner; the learners clone an expert and then learn online,
# as in the rest of the study. Nothing is re-run when the book builds: the page reads results
# computed once. Every design tried and dropped is one row of the appendix,
# {doc}`12a_grid_command_designs`.

# %% tags=["remove-cell"]
from pathlib import Path

from myst_nb import glue

from ilets.gridcommand.report import chapter as X
from ilets.gridcommand.report import positive_control as C
from ilets.gridcommand.report import results as R
from ilets.report import plots
from ilets.gridcommand.report.criteria import criteria_table

root = Path.cwd().parent  # chapters execute in notebooks/
numbers = X.finding_numbers(root)
glue("gc_finding", X.finding_sentences(numbers), display=False)
results = R.load_results(root / R.SHIPPED)
table = R.results_table(results)
criteria = criteria_table(root)
control = C.control_table(C.load_designs(root))
glue("gc_misses_50", "{:,.0f} to {:,.0f}".format(*numbers["misses"][50]["learned"]), display=False)
glue("gc_misses_200", "{:,.0f} to {:,.0f}".format(*numbers["misses"][200]["learned"]), display=False)

# %% [markdown]
# :::{dropdown} Reproduce this
# The scenario is the package `ilets.gridcommand` (environment `ilets/GridCommand-v0`); the
# numbers on this page come from `ilets.gridcommand.report.chapter` and
# `ilets.gridcommand.report.criteria`. The kept results are `shipped/gridcommand` (grid
# `gridcommand-grid-quick`), `shipped/gridcommand-hindsight` (`gridcommand-grid-hindsight`),
# `shipped/gridcommand-paper` and `shipped/gridcommand-paper-hindsight` (the full window),
# `shipped/gridcommand-paper-sleep-redraw`, and the clone designs
# `shipped/gridcommand-per-server-episodes`, `-episodes-own`, `-terms` and `-film-later`, each
# filled by one design, a row of `ilets.gridcommand.designs.DESIGNS` whose id names its profile. Run one
# with `ilets grid --scenario gridcommand --profile <profile>`; re-run a shipped cell with
# `ilets verify --scenario gridcommand --results shipped/<folder> --sample 1`. Every retired
# design is a row of `shipped/archive/gridcommand-designs.parquet` (read with
# `ilets.gridcommand.archive.load_archive`), with the command and the commit at which its
# profile existed.
# :::
#
# ## The task
#
# A command asks for a change of the fleet's power against the **baseline**, the power the
# same tasks would draw under the plain earliest-finish schedule. It is announced some time
# ahead, ramps to its full depth, holds, and ends; a moment counts as tracked when the fleet's
# power lies within a band around the target. The commands are calibrated on public field
# trials (cuts of 25 to 40 % held for hours, some reached within 30 seconds) and sized so that
# the fleet can reach them: before each episode the environment runs the fleet at its two
# extremes and never asks for more than that reach. Two settings of commands are scored:
# shallow and long (the training setting) and deep and short (never seen in training), at 50
# and 200 servers, on five seeds, at a reduced workload (the full window is read at the end).
#
# **Tracking error** is the mean distance to the target as a share of the requested change
# (0 is perfect, 1 is as bad as ignoring the command). The **reward** the learners are trained
# on, and the total by which every run is compared, adds the tracking error to the plain
# scenario's cost of energy, waiting and missed deadlines.
#
# ## Where the scenario stands against its bar
#
# The scenario was built to meet six criteria, each decided by a rule from the kept results.

# %% tags=["remove-input"]
plots.markdown_table(criteria, {})

# %% [markdown]
# *Table 1: the bar. The clone row is met only by the design whose inputs carry the teacher's
# own score terms, declared privileged state; without them no clone meets it with independent
# training data, so the row reads "in part".*
#
# ## The experts: tracking against reward
#
# The ladder runs from the most to the least informed expert: a planner that solves a mixed
# integer program over windows of the next few dozen tasks, a receding-horizon planner with a
# perfect and with a realistic forecast of arrivals, a Lyapunov rule that weighs a running
# tracking debt against energy and deadlines, and a simple rule. The windowed planner is not
# an oracle: it plans a fraction of a second of arrivals at this scale, and the Lyapunov rule
# beats it on tracking and on reward in three of the four settings. Beside the ladder sits a
# **feedback thermostat**, a rung of its own: it projects the current slot's average power
# and takes the fleet's low action above the target and its high action below it, keeping
# deadlines where the slack allows. The last row follows, at each switch time, whichever rung's
# simulated rollout scores best on the total reward: the best of the ladder's rollouts. It is
# never below any rung on that score (checked on every episode), so it bounds the ladder, not
# every policy.

# %% tags=["remove-input"]
plots.markdown_table(X.experts_display(root), {}, empty="The quick grid is not in this checkout.")

# %% [markdown]
# *Table 2: each expert's tracking error / total reward (seed means over five seeds; lower
# error and higher reward are better).*
#
# The thermostat has the lowest tracking error of every rung in three of the four settings
# and reaches the band on nearly every event, yet at 200 servers the total reward puts it
# below every expert, the simple rule included: it buys its tracking with energy and waiting
# that the reward prices above the tracking it gains. A learner trained on this reward is
# therefore pulled toward the planners, not toward the expert that follows the operator best.
# Which expert is "best" here is a property of the reward's weights, not of the task.
#
# ## The learners
#
# Every learner starts from a clone of the Lyapunov rule, made by behaviour cloning, and then
# learns online with PPO, with or without the expert's corrections; PPO alone starts from
# scratch. All are scored on the pass they learn in, as in the rest of the study.

# %% tags=["remove-input"]
fig = R.comparison_figure(R.comparison_table(table, "train"), "tracking_mae_rel")

# %% [markdown]
# *Figure: tracking error per method under the training setting (mean and 95 % interval over
# seeds), one panel per fleet size; lower is better.*
#
# The learned policies track worse than every expert, and each causes {glue:text}`gc_misses_50`
# more deadline misses per episode than the baseline schedule at 50 servers
# ({glue:text}`gc_misses_200` at 200), where no expert causes more than about a hundred. The
# authors' flat network agrees with its teacher on few decisions (the cloning bottleneck of
# the study's fifth chapter), and PPO within one pass does not recover the loss.
#
# ## Can a clone follow its teacher at all?
#
# A network that scores each server from that server's own row clones far better. Four
# designs of it are kept: one trained on 16 episodes whose seeds share most of their training
# workloads, the same with each seed's own workloads, one whose rows also show the terms the
# teacher scores every placement by (declared privileged: the teacher's own internal state),
# and that design without the terms. The bar: a frozen clone's tracking error at most 10 %
# above its teacher's and at most 1.1 times its deadline misses.

# %% tags=["remove-input"]
plots.markdown_table(X.clones_display(control), {}, empty="No clone design is in this checkout.")

# %% [markdown]
# *Table 3: each kept design's frozen clone against its teacher, under the training setting
# (tracking error: positive is worse than the teacher; misses as a multiple of the
# teacher's).*
#
# With shared training workloads the 16-episode clone meets the bar, but with independent
# workloads per seed it does not, so that success leaned on the seeds' shared data. Only the
# clone shown the teacher's own score terms meets the bar at both fleet sizes with its
# training data independent; the same design without the terms misses it at both. The
# pipeline can therefore transmit the rule when the rule's inputs are shown; finding them is
# what the learner could not do. The thirty-odd designs tried on the way (queues shown,
# more BC epochs, DAgger rounds, deferral weighting, more data, a sleep head, a different
# teacher) are rows of the appendix.
#
# ## Limits of these results
#
# * **Scale.** The ladder and the learners are read at a reduced workload (two per cent of the
#   online window) on five seeds; the full window, read in the appendix, is on fewer seeds for
#   the planner.
# * **The reward.** Its weights were not tuned for the learners, and the finding above says
#   they decide the experts' order; a reward that priced tracking higher would rank the
#   thermostat otherwise.
# * **Drift.** The drift protocol (one factor of the command moved at a time, with a control
#   trained under the moved setting) was run on five families; its rows are in the archive,
#   and the criterion reads the one family with twenty events per episode and ten seeds.
# * **The regulation signal.** A band-limited regulation-like signal is generated, but no
#   environment follows it yet: only event commands are tracked.

# %% [markdown]
# :::{dropdown} Using the environment
# `gym.make("ilets/GridCommand-v0")` with no arguments builds a small episode in about a
# second. The experts act on the environment itself, so the package's collector steps the
# unwrapped environment. This example clones the Lyapunov expert on 300 decisions and
# fine-tunes the clone with `MaskablePPO`; a test runs it from this page.
#
# <!-- tested example: begin -->
# ```python
# import gymnasium as gym
# import numpy as np
# from sb3_contrib import MaskablePPO
# from stable_baselines3.common.monitor import Monitor
#
# import ilets
# from ilets.agents.oinpt import behaviour_clone
# from ilets.config import OINPTConfig
# from ilets.gridcommand.teacher import demonstrate
#
# env = gym.make(ilets.GRID_ENV_ID)  # no arguments: the small gridcommand-quick episode
# # the expert reads the environment itself: the package's collector steps the unwrapped env
# demos = demonstrate(env.unwrapped, "lyapunov", max_decisions=300)
# # the Monitor inside the mask wrapper: sb3-contrib reads the masks without a warning
# model = MaskablePPO("MlpPolicy", ilets.ActionMaskWrapper(Monitor(env)), n_steps=128, batch_size=64, seed=0)
# behaviour_clone(model, demos, OINPTConfig(bc_epochs=5), seed=0)  # imitation's BC on PPO's own policy
# model.learn(total_timesteps=256)  # fine-tune online: two rollouts of 128 decisions
# actions, _ = model.predict(demos.obs, action_masks=demos.masks, deterministic=True)
# print(f"agreement with the expert after fine-tuning: {np.mean(actions == demos.acts):.2f}")
# ```
# <!-- tested example: end -->
# :::
