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
# # Reproduce it
#
# {glue:md}`lead`
#
# ## Commands
#
# On a fresh machine with Python 3.11 (README says what to do where pip does not find the
# pinned CPU build of PyTorch):
#
# ```bash
# make book   # this book from the results at hand (shipped/ on a fresh clone)
# make test   # the test suite, with a smoke build of the book in a browser
# .venv/bin/ilets run --method ilets --servers 100 --seed 3 --profile quick   # one cell
# .venv/bin/ilets grid --profile paper --executor slurm --out /scratch/ilets  # the study, resumable
# .venv/bin/ilets verify --results shipped/quick --sample 3                   # re-run 3 shipped cells
# ```

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import findings as F
from ilets.report import plots
from ilets.report.findings import reproduce as FR
from ilets.report.report_context import ReportContext
from ilets.study import verify as VF
from ilets.study.agreement import verdicts_text
from ilets.study.results import system_info

ctx = ReportContext.load()
recorded, recorded_text = VF.recorded_tables(F.verified_folders(ctx.out))
kernels = VF.kernel_effects(ctx.out, VF.native_kernels_folder(ctx.out))
glue("lead", Markdown(FR.reproduce_lead(recorded, kernels)), display=False)  # names `ilets verify`
glue("book_reruns", F.book_reruns_text(), display=False)  # the one count README and the Makefile state
glue("verdicts_text", Markdown(verdicts_text()), display=False)
glue("kernels_text", Markdown(VF.kernel_effects_sentence(kernels, VF.native_kernels_folder(ctx.out))), display=False)
glue("banner", Markdown(ctx.banner), display=False)
glue("profile_names", ", ".join(F.profiles_table()["profile"]), display=False)

# %% [markdown]
# ## Checking a shipped result
#
# {glue:md}`verdicts_text`
#
# The book {glue:text}`book_reruns` while it builds (a paper-scale cell takes minutes). Each
# shipped folder carries the record of its own check instead, which anyone repeats with the
# same command:

# %% tags=["remove-input"]
plots.markdown_table(FR.verification_summary(recorded), {}, empty="No shipped folder carries a recorded check.")

# %% [markdown]
# ## Across CPUs
#
# The numerical libraries pick their kernels from the CPU when they load. On a CPU with
# AVX-512 they add in another order than on an AVX2-only one: one PPO update differs in its
# last bits, and a learner's whole run drifts from there. The package therefore caps them at
# AVX2 before they load, and every cell records the kernels it ran with, so AVX2 and AVX-512
# hosts of one vendor reproduce each other's cells bit for bit. The cap does not reach across
# vendors: cells computed on an Intel Xeon did not reproduce bit for bit on an AMD EPYC, where
# cells from another AMD family did. A heuristic uses no kernel the cap changes; for a learner
# the kernels are a source of run-to-run noise, like the seed. {glue:md}`kernels_text`

# %% tags=["remove-input"]
plots.markdown_table(FR.kernels_by_method(kernels), {},
                     empty="No cell of these results was computed with other kernels.")

# %% [markdown]
# ## Hardware and versions
#
# As the cells recorded them:

# %% tags=["remove-input"]
plots.markdown_table(F.hardware_table(system_info(ctx.out)), {})

# %% [markdown]
# :::{dropdown} Reproduce this
# {glue:md}`banner`
#
# The built-in profiles are {glue:text}`profile_names` (`src/ilets/configs/`). To build the book
# on your own grid: `ILETS_RESULTS=/scratch/ilets .venv/bin/jupyter-book build . -W --keep-going --all`.
# The check is `ilets.study.verify` (`ilets verify --results <folder> --cell <name>`, or
# `--scenario gridcommand` for the grid-command results; `--report` writes `VERIFY.json`); the
# kernels' cap is `ilets.numerics` (`ILETS_NUMERICS=native` opts out); each cell's
# `system.json` holds its hardware record.
# :::
