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
# The faithful study judges the paper's claims with the authors' design: one flat MLP over
# their 2M+2 state. Its positive control ({doc}`05_oinpt`) shows that this design cannot
# express "the server where this task finishes first", while a network that scores each
# server from that server's own row clones every expert to within 1 %. This chapter runs the
# four methods again with that per-server policy and observation (a declared choice beside
# the authors', `policy: per-server` in `src/ilets/configs/per-server.yaml`), with the
# settings the per-server pilot chose ({doc}`11_pilot`), on the same workloads, fleets and
# seeds as the faithful grid, whose heuristic cells it is compared with.

# %% tags=["remove-cell"]
from IPython.display import Markdown, display
from myst_nb import glue

from ilets.report import heuristic_gap as G
from ilets.report import per_server as P
from ilets.report import plots
from ilets.report import stats as S
from ilets.report.report_context import ReportContext
from ilets.study.heldout import heldout_change
from ilets.study.results import METHOD_LABELS, load_metrics, per_server_dir

ctx = ReportContext.load()  # the faithful grid: its heuristic cells are the yardstick here
folder = per_server_dir()
has_grid = (folder / "store" / "metrics.parquet").is_file()
learners = load_metrics(folder) if has_grid else ctx.metrics.iloc[0:0]
metrics = G.family_metrics(learners, ctx.metrics)
glue("coverage", Markdown(P.coverage_sentence(folder, learners) if has_grid else
                          "The per-server grid has no results in this checkout yet."), display=False)
gap = G.gap_table(metrics, reps=ctx.reps)
glue("gap_sentence", G.gap_sentence(gap, "the per-server policy"), display=False)
held = heldout_change(learners, ("method", "servers"))
METRICS = {"avg_response_s": ("response time (s)", None, 1.0), "energy_kwh": ("energy (kWh)", None, 1.0),
           "success_rate": ("success rate (%)", 1, 100.0), "mean_reward": ("mean reward", None, 1.0)}

# %% [markdown]
# {glue:md}`coverage` A partial grid is read as it stands: every table names its seeds, and
# a claim is judged only where both sides have cells.
#
# ## The metrics at each fleet size
#
# The online pass of each per-server learner, beside the heuristics on the same seeds (mean ±
# standard deviation over seeds, then the 95 % bootstrap interval of the mean). The online
# metrics of a learner include the exploration of its first decisions.

# %% tags=["remove-input"]
summary = S.summary_table(metrics, tuple(METRICS), reps=ctx.reps)
if summary.empty:
    display(Markdown("No per-server cells yet."))
for s in sorted(summary["servers"].unique()) if len(summary) else []:
    display(plots.summary_display(summary[summary["servers"] == s], METRICS).style.set_caption(f"{s} servers"))

# %% [markdown]
# ## Does a per-server learner beat the best heuristic?
#
# {glue:text}`gap_sentence`

# %% tags=["remove-input"]
plots.markdown_table(gap.assign(learner=gap["learner"].map(lambda m: METHOD_LABELS.get(m, m)),
                                heuristic=gap["heuristic"].map(lambda m: METHOD_LABELS.get(m, m)),
                                measure=gap["measure"].map(G.MEASURE_NAMES)).round(4),
                     {"measure": "measure", "servers": "servers", "learner": "best learner",
                      "heuristic": "best heuristic", "learner_mean": "learner", "heuristic_mean": "heuristic",
                      "effect_pct": "improvement (%)", "ci_low_pct": "95 % low", "ci_high_pct": "95 % high",
                      "seeds": "seeds", "beats": "beats it"},
                     empty="No fleet size has both per-server learners and heuristics yet.")

# %% [markdown]
# ## What the online pass did to each policy
#
# Each cell scheduled a held-out segment (the last tasks of the offline half) greedily before
# its online pass and after it. For DRL+ and ILETS the policy before the pass is the frozen
# clone of OINPT, so the change says whether PPO kept what imitation taught; for DRL and
# ILETS- it is the untrained network. Mean held-out reward (higher is better) and the mean
# relative change with its 95 % t-interval over seeds (`ilets.study.heldout`).

# %% tags=["remove-input"]
shown = held.assign(method=held["method"].map(lambda m: METHOD_LABELS.get(m, m)),
                    **{c: (100 * held[c]).round(2) for c in ("change", "change_low", "change_high")})
plots.markdown_table(shown.round(4), {"method": "method", "servers": "servers", "seeds": "seeds",
                                      "start": "before the pass", "end": "after the pass",
                                      "change": "change (%)", "change_low": "95 % low", "change_high": "95 % high"},
                     empty="No per-server cell with held-out scores yet.")
