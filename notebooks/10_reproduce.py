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
# ## Commands
#
# On a fresh machine with Python 3.11 (the CPU build of PyTorch is pinned; see the README
# for machines whose pip does not find it by default):
#
# ```bash
# make book   # venv + this book from the results at hand (shipped/ on a fresh clone), strict build
# make test   # the test suite, including a strict smoke build of the book in a browser
# ```
#
# One cell, any method, any scale:
#
# ```bash
# .venv/bin/ilets run --method ilets --servers 100 --seed 3 --profile quick   # into results/quick
# ```
#
# The full study, on a SLURM cluster through submitit, then the book on its results:
#
# ```bash
# .venv/bin/ilets grid --profile paper --executor slurm --out /scratch/ilets
# ILETS_RESULTS=/scratch/ilets .venv/bin/jupyter-book build . -W --keep-going --all
# ```
#
# A grid is resumable: every cell is written atomically and skipped once done, so killing
# and rerunning the command loses at most the cells in flight.
#
# ## Profiles

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import findings as F
from ilets.report import plots
from ilets.report.report_context import ReportContext
from ilets.study.results import system_info

profiles = F.profiles_table()
ctx = ReportContext.load()
glue("profile_name", ctx.name, display=False)
glue("book_reruns", F.book_reruns_text(), display=False)  # the one count README and the Makefile state

# %% tags=["remove-input"]

Markdown(f"> {ctx.banner}")  # what these results are: scale, completeness, provenance

# %% tags=["remove-input"]
Markdown(profiles.to_markdown(index=False))

# %% [markdown]
# This build shows the {glue:text}`profile_name` profile.
#
# ## Compute used
#
# Wall and CPU seconds of every cell in this results store, failed attempts included
# (CPU includes the OAIL emulator processes).

# %% tags=["remove-cell"]
compute = ctx.compute
glue("cells_done", str(ctx.n_done), display=False)
glue("cells_failed", str(ctx.n_failed), display=False)
glue("cpu_total_min", f"{compute['cpu_s'].sum() / 60:.1f}", display=False)
glue("wall_total_min", f"{compute['wall_s'].sum() / 60:.1f}", display=False)
per = compute.assign(variant=compute["variant"].replace("", "(main)")).groupby(
    ["variant", "method", "status"], as_index=False).agg(cells=("cell", "size"), wall_s=("wall_s", "sum"),
                                                         cpu_s=("cpu_s", "sum"))

# %% [markdown]
# {glue:text}`cells_done` cells finished and {glue:text}`cells_failed` attempts failed; together
# they used {glue:text}`cpu_total_min` CPU minutes ({glue:text}`wall_total_min` minutes of
# cell wall time, summed over cells that ran side by side).

# %% tags=["remove-input"]
plots.markdown_table(per, {})

# %% [markdown]
# ## Do the shipped results reproduce?
#
# A shipped result is a claim anyone can check: `ilets verify --results <folder> --cell <name>`
# (or `--sample N`; `--scenario gridcommand` for the grid-command results) re-runs cells from
# their own configuration and compares every metric that does not measure the host, and the
# whole learning curve, for exact equality (`ilets.study.verify`). The book
# {glue:text}`book_reruns` while it builds (a paper-scale cell takes minutes); each shipped folder carries the record
# of its verification instead (`VERIFY.json`, written by `ilets verify --report`), which
# anyone repeats with the same command, e.g. in a few minutes on the reduced-scale results:
#
# ```bash
# .venv/bin/ilets verify --results shipped/quick --sample 3
# ```
#
# {glue:md}`recorded_text`

# %% tags=["remove-cell"]
from ilets.study import verify as VF
from ilets.study.agreement import verdicts_text

recorded, recorded_text = VF.recorded_tables(F.verified_folders(ctx.out))
glue("recorded_text", Markdown(recorded_text), display=False)
glue("numerics_text", VF.numerics_sentence(recorded), display=False)
glue("verdicts_text", Markdown(verdicts_text()), display=False)
kernels = VF.kernel_effects(ctx.out, VF.native_kernels_folder(ctx.out))
glue("kernels_text", Markdown(VF.kernel_effects_sentence(kernels, VF.native_kernels_folder(ctx.out))), display=False)

# %% tags=["remove-input"]
plots.markdown_table(recorded, {})

# %% [markdown]
# ### Across CPUs
#
# numpy, OpenBLAS, PyTorch, MKL and oneDNN choose their SIMD kernels from the CPU when they
# load. On a CPU with AVX-512 they take kernels that add in another order than on an
# AVX2-only CPU: one PPO update differs in its last bits, and the learner's whole trajectory
# drifts from there. The paper grid met this when it moved to an AVX-512 host of the same
# model name. `import ilets` therefore caps all five at AVX2 before they load
# (`ilets.numerics`; `ILETS_NUMERICS=native` opts out), the Makefile pins the book's kernels
# the same way, and every cell and every check records the kernels in effect ("computed
# with" and "checked with" above). {glue:text}`numerics_text` A cell that predates the
# record and reproduces in portable mode was computed with kernels equal to the portable
# ones (an AVX2 host); one that does not was computed with an AVX-512 host's own kernels
# before the pin, and reproduces only on such a host with `ILETS_NUMERICS=native` (a
# folder's provenance note says which cells those are, if any).
#
# The cap does not reach across CPU vendors. Per-server grid-command cells computed on an
# Intel Xeon did not reproduce on an AMD EPYC host in portable mode, where cells computed on
# another AMD family did (checked 2026-12-06; the libraries may still pick their kernels or
# their blocking by vendor). Every cell records its CPU, and `ilets verify` names a re-run on
# the other vendor as such: such a re-run checks the cap, not the cell.
#
# {glue:md}`verdicts_text`
#
# How much do the kernels matter? {glue:md}`kernels_text`

# %% tags=["remove-input"]
plots.markdown_table(kernels.round(2).replace({"variant": {"": "main grid"}}), {},
                     empty="No cell of these results was computed with other kernels.")

# %% [markdown]
# A heuristic's decisions use no floating-point kernel that the cap changes; at most a
# learning curve's sum differs in its last bit. A learner's trajectory drifts and its
# metrics move by the amounts above: for the learners the kernels are a source of
# run-to-run noise, like the seed, which portable mode fixes so that every cell reproduces.

# %% [markdown]
# ## Hardware and versions
#
# As recorded by the cells (`system.json` in every result folder):

# %% tags=["remove-input"]
Markdown(F.hardware_table(system_info(ctx.out)).to_markdown(index=False))
