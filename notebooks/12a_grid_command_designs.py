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
# # Grid command: the designs tried
#
# Every design of the grid-command scenario, one row each: the kept ones that the chapter
# {doc}`12_grid_command` reads, then each design tried and dropped, with what it changed, its
# result and why it was dropped. A dropped design's numbers are rows of one archive table, not
# a folder of results; each row names the command and the commit that recompute it.

# %% tags=["remove-cell"]
from pathlib import Path

from myst_nb import glue

from ilets.gridcommand.report import chapter as X
from ilets.gridcommand.report import results as R
from ilets.report import plots

root = Path.cwd().parent  # chapters execute in notebooks/
designs = X.designs_table(root)
glue("gca_dropped", f"{(designs['kept or dropped'] != 'kept').sum():,}", display=False)
glue("gca_cpu", f"{X.cpu_hours(root):,.0f}", display=False)
glue("gca_commit", X.recompute_commit(root), display=False)
paper = R.load_results(root / R.PAPER_SHIPPED)

# %% [markdown]
# The {glue:text}`gca_dropped` dropped designs took about {glue:text}`gca_cpu` CPU-hours; their
# profiles are those at commit {glue:text}`gca_commit`. A clone's result is its tracking error
# as a multiple of its teacher's at each fleet size (the bar is 1.10); an expert grid's is
# the lowest tracking error among its experts.

# %% tags=["remove-input"]
plots.markdown_table(designs, {}, empty="No design is in this checkout.")

# %% [markdown]
# ## At the full online window
#
# The same ladder and learners on the whole online window (the paper's scale, 10-second
# slots), the planner on two seeds only for its cost.

# %% tags=["remove-input"]
plots.markdown_table(R.comparison_display(R.comparison_table(R.results_table(paper), "train")), {},
                     empty="The full-window grid is not in this checkout.")
