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
# # Reproducibility summary

# %% tags=["remove-cell"]
from IPython.display import Markdown
from myst_nb import glue

from ilets.report import claim_figures as CF
from ilets.report import claims_table as CT
from ilets.report import families as FF
from ilets.report import findings as F
from ilets.report import plots
from ilets.report import positive_control as PC
from ilets.report.report_context import ReportContext

ctx = ReportContext.load()  # the same resamples as every chapter, so the verdicts agree
found = F.summary_findings(ctx)
both = FF.families_findings(ctx, summary=found)  # each claim with the flat and the per-server learner
ps_ctx = FF.per_server_context(ctx)
claims = CT.summary_claims(ctx, found, both, ps_ctx)  # with the shipped RL stage's row
forest = CF.summary_forest(claims, found, both, ps_ctx)  # the table's numbers, one point each
plots.use_style()

# %% tags=["remove-input"]
Markdown(claims.abstract)

# %% tags=["remove-input"]
Markdown(claims.table_markdown)  # the same table as the landing page and README (from the shipped results)

# %% tags=["remove-input"]
fig = CF.claim_forest_figure(forest)

# %% [markdown]
# *Figure: each claim of the table as a percent change, positive the way the paper claims:
# the paper's figure (black cross; the paper gives no interval, and for some claims no number),
# ours with the authors' flat learner (blue) and with the per-server learner (orange), each
# with its 95 % interval over seeds. Each panel has its own scale and carries the table's
# verdict. A diamond pools the three fleet sizes; where the effect changes sign between them,
# each fleet size is shown instead. Decision time and the fine-tuning control are not percent
# changes, so they appear in the table only.*

# %% tags=["remove-input"]
Markdown(claims.notes_markdown)

# %% tags=["remove-cell"]
glue("banner", Markdown(ctx.banner), display=False)
glue("scope", Markdown(
    f"{ctx.n_methods} methods on fleets of {ctx.scales_text} servers, {ctx.seeds_text} seeds each; "
    f"{found.n_done:,} finished runs, {found.cpu_hours:,.1f} CPU-hours in all. {found.workload_text[0].upper()}"
    f"{found.workload_text[1:]}. Each run schedules {ctx.online_tasks:,} online tasks after offline training on "
    "the window's first half."), display=False)
glue("dependence", CT.dependence_text(both.table), display=False)
glue("learner_settings", F.learner_settings_text(ctx.run), display=False)
scale = F.scale_findings(ctx, summary=found)  # the verdicts above, not computed again
glue("scale_sentence", scale.sentence, display=False)
glue("read_text", Markdown(scale.read_text), display=False)
difference = F.difference_findings(ctx, summary=found)
glue("difference_untested", Markdown(difference.untested_text), display=False)
glue("difference_table", plots.markdown_table(difference.table, {}, empty="Every claim is reproduced here, or no "
                                              "variant can test one."), display=False)
glue("families_source", Markdown(both.source), display=False)
_gap = F.gap_texts(ctx)  # the per-server family's sentence names its folder in a code span: Markdown
glue("gap_flat", _gap["gap_flat"], display=False)
glue("gap_per_server", Markdown(_gap["gap_per_server"]), display=False)
_control_folder = PC.control_dir()
_control, _control_prov = PC.load(_control_folder)
_same, _moved = PC.split(_control)
glue("control_summary", Markdown(f"{PC.verdict(PC.summary(_same)).text} {PC.transfer_sentence(_moved)}"),
     display=False)
glue("control_banner", Markdown(PC.banner(_control_folder, _control_prov, PC.summary(_same))), display=False)

# %% [markdown]
# **Words used here.** *Faithful*: judged with the authors' own design, a flat network over
# their state. *Per-server*: judged with a network that scores each server from that server's
# row, a design of ours that can copy its experts. *Pooled*: one effect over the three fleet
# sizes (50, 100 and 200 servers), given only when every fleet size points the same way.
# *Reproduced*: the effect's 95 % interval lies above zero at every fleet size.
#
# :::{dropdown} Limits of this study
# * Only the paper's abstract and a study note were available: the full text, the data files and
#   half of the authors' code were not, so the simulator, the experts and every parameter range
#   were rebuilt or chosen by us ({doc}`09_deviations` lists each choice).
# * The default workload is synthetic: the paper's window of the Google cluster trace is not
#   identified and the trace could not be fetched where the results were computed, so a
#   synthetic window with the paper's task counts, arrival rate, bursts and trend change stands
#   in for it.
# * One trace window, one fleet draw per seed and one trend change: the intervals describe
#   these runs, not scheduling in general.
#
# {glue:md}`scope`
# :::
#
# :::{dropdown} How a verdict is decided
# Each claim is split into comparisons (one method against another on one measure). A
# comparison's effect is the relative improvement in the direction the paper claims, with a
# 95 % bootstrap interval over seeds, paired by seed, at each fleet size. At a fleet size a
# comparison is *resolved for* the claim when its interval lies above zero and *resolved
# against* it when the interval lies below, with at least two seeds per method. A comparison
#
# * **reverses** if it is resolved against the claim at any fleet size;
# * **holds** if it is resolved for the claim at every fleet size;
# * **holds pooled** if not, but its effect is positive at every fleet size and the pooled
#   interval is above zero;
# * **holds at some sizes**, **direction only** or **fails** otherwise.
#
# A claim is **reproduced** if every comparison holds; **partly** if at least one holds or holds
# pooled and none reverses; **not reproduced** otherwise; **not testable** if the results lack
# what it needs. The size of an effect is not part of the verdict; the chapters set the paper's
# figure beside ours. With ten seeds and one fleet draw per seed the intervals are descriptive,
# not tests.
# :::
#
# ## Every claim, with both learners
#
# {glue:text}`dependence` The evidence behind each verdict is in {doc}`05_oinpt` (the cold
# start), {doc}`06_oail` (convergence, cumulative reward, oscillation), {doc}`07_results` (the
# improvement table and the baselines) and {doc}`13_per_server` (the per-server learner).

# %% tags=["remove-input"]
(both.display[["#", "the paper says", FF.FAITHFUL, FF.COMPETENT]].style.hide(axis="index")
 .set_properties(**{"text-align": "left", "vertical-align": "top", "white-space": "normal"})
 .set_caption("The paper's eight claims and our verdicts, with each learner"))

# %% [markdown]
# ## Can the learner do the job at all?
#
# Before a method built on a learner is judged, the learner must be shown able to do the job:
# each expert is cloned into each network design and the clone schedules frozen and greedy
# ({doc}`05_oinpt`). {glue:md}`control_summary`
#
# :::{dropdown} Does any learner beat the best heuristic? Fleet size by fleet size
# {glue:text}`gap_flat` {glue:md}`gap_per_server`
# :::
#
# ## Which conclusions depend on the scale or on a reconstructed detail
#
# The eight claims (numbered as above), judged by the same rule on the reduced-scale results
# (2 % of the window, fewer seeds): {glue:text}`scale_sentence` Every claim not reproduced
# could also rest on a detail we had to reconstruct; where a variant of the study changes such a detail, the claim
# is judged again on the variant's runs and on the main runs they replace.

# %% tags=["remove-input"]
(scale.table.drop(columns=["statement"], errors="ignore").style.hide(axis="index")
 .set_properties(**{"text-align": "left", "vertical-align": "top", "white-space": "normal"})
 .set_caption("The verdicts at the two scales"))

# %% [markdown]
# :::{dropdown} Each variant's verdicts beside the main ones
# A variant changes one reconstructed detail; each claim is judged on its runs and on the main
# runs they replace. {glue:md}`difference_untested`
#
# ```{glue:md} difference_table
# :format: myst
# ```
# :::

# %% [markdown]
# ## What was easy, and what was hard
#
# Easy: PPO {cite}`schulman2017ppo` from stable-baselines3 {cite}`raffin2021sb3` with masked
# actions and behaviour cloning {cite}`gleave2022imitation` give DRL and OINPT in a few hundred
# lines ({glue:text}`learner_settings`); the heuristics are a few lines each; every interval is
# a pure function of two tables {cite}`agarwal2021rliable`. Hard: what was missing (the text, a
# runnable version of the authors' code, the data, the trace window), bugs not to copy (time on
# wall-clock timers, a synchronous "background" imitation, future tasks shown to the online
# experts), how loaded the fleet should be, and compute (minutes of CPU per full-window run).
#
# :::{dropdown} Reproduce this
# This page reads {glue:md}`read_text`; nothing in it was computed while the book was built.
# {glue:md}`banner`
#
# {glue:md}`families_source`
#
# {glue:md}`control_banner`
#
# The claims table is `ilets.report.claims_table` (`python -m ilets.report.claims_table
# --write README.md` and `--write book/intro.md` write it from `shipped/`; a test keeps both
# equal), on the verdicts of `ilets.report.verdicts` (the rule: `ilets.report.verdicts.rule`;
# every comparison through `ilets.report.stats.seed_effect`) for each learner
# (`ilets.report.families`). The variants' verdicts are
# `ilets.report.verdicts.variant_verdicts`; the measurements some chapters quote are recorded
# by `make artifacts`. {doc}`10_reproduce` re-runs shipped cells and gives the commands.
# :::
