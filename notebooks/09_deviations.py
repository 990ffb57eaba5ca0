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
# # Deviations and reconstructed details
#
# The paper's full text, the authors' environment, network and expert code and their data are
# not available {cite}`kang2024ilets`, so {glue:text}`n_reconstructed` details of this study are
# our reconstructions and {glue:text}`n_bugs` bugs of the authors' code are deliberately not
# copied; each is one row below. {glue:text}`lead`

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import deviations, plots
from ilets.report import findings as F
from ilets.report.report_context import ReportContext

ctx = ReportContext.load()
table = deviations.table()
glue("n_reconstructed", str(int((table["kind"] == "reconstructed").sum())), display=False)
glue("n_bugs", str(int((table["kind"] != "reconstructed").sum())), display=False)
glue("lead", deviations.effects_lead(ctx.all_metrics), display=False)
glue("banner", Markdown(ctx.banner), display=False)
difference = F.difference_findings(ctx)  # each claim not reproduced, judged again under each variant
glue("changes_sentence", F.verdict_changes_sentence(difference.table), display=False)
glue("untested", Markdown(difference.untested_text), display=False)  # may name a profile in a code span

# %% tags=["remove-input"]
plots.markdown_table(deviations.display(), {})

# %% [markdown]
# *Table: every detail we had to choose. "[code]": what the authors' code does; "tested by": the
# variant of the study that changes this choice, measured below.*
#
# ## Measured effects

# %% tags=["remove-input"]
plots.markdown_table(deviations.effects_display(ctx.all_metrics), {"avg_response_s": "response", "energy_kwh": "energy",
                                                                   "success_rate": "success"},
                     empty="No variant of this results store is judged yet, so no effect is measured here.")

# %% tags=["remove-input"]
plots.note(ctx.pending_variants_text)  # nothing when every planned variant is judged

# %% [markdown]
# *Table: change of each final metric under a variant, against the same method, fleet size and
# seeds of the main grid (mean, 95% paired bootstrap interval over seeds). Lower response and
# energy and higher success are better.* {doc}`05_oinpt` and {doc}`06_oail` read the critic,
# expert, state and window variants in context.
#
# ## Does a reconstructed detail change a verdict?
#
# Each claim the main results do not reproduce (with the authors' flat learner) is judged again,
# by the same rule, on each variant that tests a choice behind it and on the main runs the
# variant replaces. {glue:text}`changes_sentence` {glue:md}`untested`

# %% tags=["remove-input"]
plots.markdown_table(F.verdict_changes(difference.table), {}, empty="No variant changes a verdict.")

# %% [markdown]
# *Table: the claims whose verdict a variant changes. "Quick look": judged on the reduced-scale
# results only, not a claim about the paper's scale.*
#
# :::{dropdown} Reproduce this
# {glue:md}`banner`
#
# The table is `ilets.report.deviations.DEVIATIONS` (each row's `where` names the module or
# setting), the effects `ilets.report.deviations.effects_display` and the finding
# `effects_lead`; the verdicts under each variant
# `ilets.report.findings.difference_findings`. Each test is a variant of the paper profile: `heavy-load` (slower servers),
# `reward-capped`, `rich-state`, `no-critic`, `greedy-expert` and `upcoming`; `oail-strong` and
# `oail-sync` run in the quick profile only. {doc}`10_reproduce` gives the commands.
# :::
