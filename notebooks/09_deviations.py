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
# The paper's full text, its environment, network and expert modules and its data files are
# not available {cite}`kang2024ilets`. Everything below had to be chosen; every choice is a
# typed configuration field or a documented function, and the list itself is
# `ilets.report.deviations.DEVIATIONS`, rendered here. Where a profile variant measures a choice,
# its effect is shown after the table.

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import deviations, plots
from ilets.report.report_context import ReportContext

ctx = ReportContext.load()
glue("profile_name", ctx.name, display=False)
table = deviations.table()
glue("n_reconstructed", str(int((table["kind"] == "reconstructed").sum())), display=False)
glue("n_bugs", str(int((table["kind"] != "reconstructed").sum())), display=False)

# %% tags=["remove-input"]

Markdown(f"> {ctx.banner}")  # what these results are: scale, completeness, provenance

# %% [markdown]
# ## The table
#
# {glue:text}`n_reconstructed` details are reconstructed and {glue:text}`n_bugs` bugs of
# the authors' code are deliberately not reproduced.

# %% tags=["remove-input"]
shown = table.rename(columns={"topic": "topic", "source": "paper / authors' code", "ours": "this study",
                              "where": "where", "variant": "measured by variant", "kind": "kind"})
Markdown(shown.to_markdown(index=False))

# %% [markdown]
# ## Measured effects
#
# For each choice with a variant, the change of the final metrics of the variant's cells
# relative to the same methods and fleet size in the main grid of the
# {glue:text}`profile_name` profile (mean over the seeds both ran; 95% paired percentile-bootstrap
# interval over seeds in brackets). Negative response or energy changes and positive success changes
# are improvements.

# %% tags=["remove-input"]
plots.markdown_table(deviations.effects_display(ctx.all_metrics), {},
                     empty="No variant of this results store is judged yet, so no effect is measured here.")

# %% tags=["remove-input"]
plots.note(ctx.pending_variants_text)  # nothing when every planned variant is judged

# %% [markdown]
# Variants the profile does not define, or not judged yet, do not appear. The
# chapters on OINPT ({doc}`05_oinpt`) and OAIL ({doc}`06_oail`) discuss the critic,
# expert, state and window variants in context; the heavy-load variant shows how much the
# comparison depends on the reconstructed service rates.
