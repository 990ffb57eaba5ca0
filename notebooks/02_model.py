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
# # Problem and system model
#
# The paper's equations are not available to us; the model below is reconstructed from its
# abstract, the authors' public code and the same group's earlier simulators (see the
# deviations chapter). It is implemented in `ilets.simulator.cloud` (simulator), `ilets.simulator.objective`
# (cost) and `ilets.agents.env` (the MDP), and tested against hand-computed scenarios and an
# independent SimPy implementation.
#
# ## Servers and tasks
#
# Server $i \in \{1..M\}$ has CPU capacity $C_i$ (trace units, the largest machine is 1),
# service rate $\mu_i$ (MIPS), idle power $P^{idle}_i$ and active power $P^{act}_i$. Task
# $j$ arrives at $a_j$ with CPU request $c_j$, length $L_j$ (MI) and relative deadline
# $d_j$. Each server has one FCFS queue: a task starts when every task queued before it on
# that server has started **and** the free CPU covers its request, so a waiting task blocks
# the ones behind it (head-of-line blocking). Running tasks share the server without slowing
# each other:
#
# $$ s_j = \min\{t \ge \max(a_j, s_{prev(j)}) : C_{i} - \textstyle\sum_{k \text{ running at } t} c_k \ge c_j\},
# \qquad f_j = s_j + L_j/\mu_i . $$
#
# Response time $R_j = f_j - a_j$ (waiting plus execution); task $j$ succeeds if
# $R_j \le d_j$. Because queues are FCFS and nothing preempts, $s_j$ is fixed the moment
# the task is assigned, which is what lets the simulator, the reward and the experts compute
# exact start times.
#
# ## Energy
#
# $$ P(t) = \sum_i \Big(P^{idle}_i + P^{act}_i\,\frac{U_i(t)}{C_i}\Big), \qquad
#    E = \int_{t_0}^{t_{end}} P(t)\,dt , $$
#
# with $U_i(t)$ the CPU in use. $P$ is piecewise constant between start and finish events,
# so the simulator accumulates the integral exactly between consecutive events; it never
# reads the wall clock (the authors' code advanced time on timer threads).
#
# ## The MDP
#
# One decision per arriving task. **State** (size $2M+2$, the authors' layout): the task's
# CPU request and length, then each server's free CPU and number of tasks (running plus
# waiting). **Action**: a server index; servers whose capacity is below the request are
# masked (sb3-contrib's `MaskablePPO`). **Reward** $= -\text{cost}$, the authors' weighted
# power-and-wait cost, normalised, with the waiting term in the form the results shown were
# computed with (read from their configuration, `ilets.report.parameters.cost_equation`):

# %% tags=["remove-input"]
from IPython.display import Markdown

from ilets.report.parameters import cost_equation, wait_form_text
from ilets.report.report_context import ReportContext

ctx = ReportContext.load()
Markdown(cost_equation(ctx.run.reward) + "\n\n" + wait_form_text(ctx.run.reward))

# %% [markdown]
# Here $\theta$ is the authors' power weight [code], $\tau$ = `wait_scale_s` and $\lambda$ =
# `deadline_penalty` (values in the table below; our normalisation; the authors' code had no
# deadline term). An episode is one workload
# segment; the online segment is scheduled in a single pass while the policy learns.
#
# ## Parameters
#
# The table is generated from the configuration the results were produced with: each value
# from the results' settings, its meaning and source (paper, the authors' code, the group's
# earlier simulators, or ours) from the documentation of its field in `ilets.config`.

# %% tags=["remove-input"]
import pandas as pd

from ilets.simulator.cloud import make_fleet
from ilets.report.parameters import parameter_table

profile, run = ctx.profile, ctx.run
Markdown(parameter_table(run, profile["servers"]).to_markdown(index=False))

# %% [markdown]
# A sample fleet of 50 servers (fleet seed 0) shows the heterogeneity that makes
# response time and energy pull in different directions: fast servers are not the frugal
# ones.

# %% tags=["remove-input"]
import dataclasses

import seaborn as sns

from ilets.report import plots

plots.use_style()
fleet = make_fleet(dataclasses.replace(run.fleet, servers=50), run.fleet.seed)
frame = pd.DataFrame({"MIPS": fleet.mips, "W per CPU unit": fleet.p_act / fleet.capacity,
                      "capacity": fleet.capacity.astype(str)})
ax = sns.scatterplot(data=frame, x="MIPS", y="W per CPU unit", hue="capacity")

# %% [markdown]
# *Figure: the 50-server fleet: service rate against active power per unit of CPU, by
# capacity.*
