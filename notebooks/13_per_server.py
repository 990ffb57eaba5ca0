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

from ilets.report import per_server as P
from ilets.report import plots
from ilets.report.report_context import ReportContext

ctx = ReportContext.load()  # the faithful grid: its heuristic cells are the yardstick here
found = P.chapter_findings(ctx)
glue("coverage", Markdown(found.coverage), display=False)
glue("gap_sentence", found.gap_sentence, display=False)
glue("judged", Markdown(found.judged), display=False)

# %% [markdown]
# {glue:md}`coverage` A partial grid is read in two ways. The metrics, the comparison with the
# best heuristic and the held-out changes read every finished cell and name their seeds. The
# improvement table, like chapter 1's verdicts, judges only the fleet sizes where every method
# has its seeds (the coverage rule): {glue:md}`judged`
#
# ## The metrics at each fleet size
#
# The online pass of each per-server learner, beside the heuristics on the same seeds (mean ±
# standard deviation over seeds, then the 95 % bootstrap interval of the mean). The online
# metrics of a learner include the exploration of its first decisions.

# %% tags=["remove-input"]
for servers, table in found.summaries.items():
    display(table.style.set_caption(f"{servers} servers"))

# %% [markdown]
# ## The paper's improvement table, with the per-server learners
#
# Each method's improvement over per-server DRL on the same seeds, paired by seed, at each fleet
# size, beside the paper's figure (the same table as {doc}`07_results` shows for the authors'
# flat learners; a pooled effect only where every fleet size has one sign). Fleet sizes where a
# method has no cells yet are absent.

# %% tags=["remove-input"]
plots.markdown_table(found.comparison.reset_index(), {},
                     empty="No fleet size is judged yet (see the coverage rule above).")

# %% [markdown]
# ## Does a per-server learner beat the best heuristic?
#
# {glue:text}`gap_sentence`

# %% tags=["remove-input"]
plots.markdown_table(found.gap.round(4),
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
# relative change in percent with its 95 % t-interval over seeds (`ilets.study.heldout`).

# %% tags=["remove-input"]
plots.markdown_table(found.heldout.round(4), {"method": "method", "servers": "servers", "seeds": "seeds",
                                              "start": "before the pass", "end": "after the pass",
                                              "change": "change (%)", "change_low": "95 % low",
                                              "change_high": "95 % high"},
                     empty="No per-server cell with held-out scores yet.")
