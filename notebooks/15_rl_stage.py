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
# # The RL stage on trial
#
# {glue:md}`rl_finding`
#
# The study's plan is expert, then imitation, then RL fine-tuning. The imitation stage passed
# its positive control ({doc}`05_oinpt`); this chapter puts the RL stage through one. First, how
# much room there is: every heuristic and the per-server learners on the same tasks, beside a
# bound no scheduler beats. Then a setting whose answer is known: a per-server clone of
# Earliest-Finish, the weaker teacher, is fine-tuned by PPO; Min-Energy is better on the same
# tasks, and the same network clones Min-Energy itself, so the better policy is within reach.
# The learner never sees Min-Energy's actions: any move toward it comes from the reward.

# %% tags=["remove-cell"]
from IPython.display import Markdown, display
from myst_nb import glue

from ilets.report import plots
from ilets.report import rl_stage as R
from ilets.workloads.workload import PAPER_ONLINE_TASKS

report = R.load_report()
glue("rl_finding", Markdown(R.finding(report)), display=False)
glue("rl_target_clone", Markdown(R.target_clone_text(report)), display=False)
glue("rl_verdict", Markdown(R.verdict_text(report)), display=False)
glue("rl_online_tasks", f"{PAPER_ONLINE_TASKS:,}", display=False)
glue("rl_diagnosis", Markdown(R.diagnosis(report)), display=False)
glue("rl_chosen", R.chosen_text(report), display=False)
counts = R.design_counts(report)
glue("rl_candidates", counts["candidates"].capitalize(), display=False)
glue("rl_pilot_seeds", counts["pilot_seeds"], display=False)

# %% [markdown]
# ## The room
#
# Mean reward and mean response time of each heuristic and per-server learner over the ten
# evaluation seeds of the grids (the same tasks), at each fleet size, and the room each row
# leaves over the per-server DRL+ (the expert's clone that fine-tuning starts from; positive:
# better than it). The bound is each task's best case taken alone (no wait, its best server,
# an otherwise idle fleet): loose, but no scheduler beats it. The clone's teacher, GA+PSO, plans
# windows of tasks and has no online form here; its per-server clone, DRL+, stands in for it
# ({doc}`05_oinpt` shows the clone within its tolerance of the teacher).

# %% tags=["remove-input"]
display(R.headroom_display(report))

# %% [markdown]
# At 50 servers the room is real: Min-Energy is ahead of the clone on reward and response time.
# At 100 and 200 servers the clone is within a few thousandths of the best heuristic, so there
# the RL stage has almost nothing to gain, whatever it does.
#
# ## The positive control
#
# {glue:md}`rl_target_clone`
#
# {glue:text}`rl_candidates` candidate recipes were declared before any of their cells ran, with one budget (the same
# clone, one online pass of {glue:text}`rl_online_tasks` decisions at 50 servers, the paper's scale)
# and one rule:
# on {glue:text}`rl_pilot_seeds` pilot seeds that are never evaluated, the candidate that closes the largest share of
# the gap between the clone and Min-Energy (held-out mean reward, frozen and greedy) while
# keeping response time and success between the clone's and Min-Energy's is chosen
# ({glue:text}`rl_chosen`); it alone then runs on the evaluation seeds.
#
# {glue:md}`rl_verdict`

# %% tags=["remove-input"]
plots.markdown_table(R.control_display(report.pilot), {}, empty="The pilot has not run yet.")

# %% [markdown]
# {glue:md}`rl_diagnosis`
#
# How to read the diagnostics: "off the clone" is the share of the last rollout's states where
# the fine-tuned policy's greedy server differs from the clone's; the gradient's signal-to-noise
# is the squared norm of the rollout's mean policy gradient over its variance (below 1 the
# update is mostly noise); the critic's explained variance says how much of the return the
# critic predicts; the entropy is the policy's, in nats, at the end of the pass.

# %% tags=["remove-input"]
fig = R.figure(report)

# %% [markdown]
# ```{dropdown} Reproduce this
# The pilot: `ilets grid --profile rl-control --out results/rl-control` (profile
# `src/ilets/configs/rl-control.yaml`, where the candidates and the rule are declared, with the
# amendment of its guard); the verdict: `ilets grid --profile rl-control-eval --out
# results/rl-control-eval`; both shipped under `shipped/rl-control` and `shipped/rl-control-eval`
# and read by `ilets.report.rl_stage`. The bound: `make artifacts` (record `headroom`).
# ```
