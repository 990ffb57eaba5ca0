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
# # OINPT and the cold start
#
# A policy that learns online schedules real tasks while it learns, so its first decisions
# count. The paper's answer to the cold start is **OINPT**: before the online segment,
# optimisation experts schedule the offline segment and the actor-critic is trained to
# imitate them {cite}`kang2024ilets`. In this package (`ilets.oinpt`) GA and PSO plan the
# offline tasks window by window, the better plan of each window is kept as the
# demonstration, PPO's own policy is behaviour-cloned on it with `imitation`'s BC, and the
# critic is regressed on the discounted returns of the expert's trajectory (how the paper
# pre-trains the critic is not published; this is our choice). DRL+ and ILETS start from
# this policy; DRL and ILETS- start from random weights.
#
# The paper claims that **DRL+ and ILETS are far better than DRL and ILETS- from the very
# start**. This chapter checks that claim from the first decision, looks at what cloning
# achieved, and asks three questions the paper leaves open: does the critic pre-training
# matter, does the expert's quality bound the clone, and is the paper's small state the
# bottleneck of cloning? Results are from the {glue:text}`profile_name` profile
# ({glue:text}`profile_desc`): fleets of {glue:text}`scales` servers,
# {glue:text}`n_seeds` seeds each, and OINPT on at most {glue:text}`demo_cap` offline
# tasks.

# %% tags=["remove-cell"]
import pandas as pd
from IPython.display import Markdown
from myst_nb import glue

from ilets import plots, stats
from ilets.results import LEARNERS, load_curves, load_metrics, load_profile_info, results_dir

# %matplotlib inline

REPS = 1000  # bootstrap resamples (seeds are few; more reps would not add information)
FIRST = ("reward", "response", "success")
FINAL = ("mean_reward", "avg_response_s", "success_rate", "energy_kwh")
FORMATS = {"reward": ".3f", "response": ".2f", "success": ".1%", "mean_reward": ".3f", "avg_response_s": ".2f",
           "success_rate": ".1%", "energy_kwh": ".3g", "bc_agreement_before": ".1%", "bc_agreement_after": ".1%",
           "critic_mse_before": ".3g", "critic_mse_after": ".3g", "demo_tasks": ",.0f", "demo_seconds": ".1f",
           "oinpt_seconds": ".1f"}
NAMES = {"reward": "reward", "response": "response (s)", "success": "success", "mean_reward": "mean reward",
         "avg_response_s": "response (s)", "success_rate": "success rate", "energy_kwh": "energy (kWh)",
         "bc_agreement_before": "agreement before BC", "bc_agreement_after": "agreement after BC",
         "critic_mse_before": "critic MSE before", "critic_mse_after": "critic MSE after",
         "demo_tasks": "demonstrated tasks", "demo_seconds": "demo time (s)", "oinpt_seconds": "OINPT time (s)"}

plots.use_style()
out = results_dir()
profile = load_profile_info(out)
metrics = load_metrics(out)
curves = load_curves(out)
learn = curves[curves["method"].isin(LEARNERS)]
learn_metrics = metrics[metrics["method"].isin(LEARNERS)]
glue("profile_name", profile["name"], display=False)
glue("profile_desc", profile.get("description", ""), display=False)
glue("scales", ", ".join(str(s) for s in sorted(learn["servers"].unique())), display=False)
glue("n_seeds", str(learn["seed"].nunique()), display=False)
glue("demo_cap", f"{profile['run']['oinpt']['max_demo_tasks']:,}", display=False)

N = stats.cold_start_decisions(learn, frac=0.1)
online = int(learn.groupby("cell")["decision_end"].max().min()) if len(learn) else 0
glue("n_first", f"{N:,}", display=False)
glue("n_online", f"{online:,}", display=False)
glue("n_share", f"{N / online:.0%}" if online else "n/a", display=False)
glue("curve_every", f"{int(learn['decisions'].max()):,}", display=False)



# %% [markdown]
# ## Learning curves from the first decision
#
# Every decision of the online pass is logged; a curve point is the mean over
# {glue:text}`curve_every` consecutive decisions (out of {glue:text}`n_online` in the
# online segment). The purple line marks the end of the first {glue:text}`n_first`
# decisions, the cold-start period measured below.

# %%
fig = plots.learning_curves(learn, "reward", "reward per decision", events={"first N": N})

# %% [markdown]
# *Figure: reward per decision (negative normalised cost; higher is better), mean over
# each window of decisions, against decisions made. Lines: mean over seeds; bands: 95%
# bootstrap confidence interval of that mean over seeds (seaborn, 500 resamples). One
# panel per fleet size.*

# %%
fig = plots.learning_curves(learn, "response", "response time (s)", events={"first N": N})

# %% [markdown]
# *Figure: mean response time (waiting plus execution) of the tasks scheduled in each
# window; lines and 95% bands over seeds as above.*

# %%
fig = plots.learning_curves(learn, "success", "success rate", events={"first N": N})

# %% [markdown]
# *Figure: share of the tasks of each window that met their deadline; lines and 95%
# bands over seeds as above.*
#
# ## The first decisions
#
# The cold start is measured over the first {glue:text}`n_first` decisions
# ({glue:text}`n_share` of the online segment: a tenth of it, rounded to whole curve windows):
# decision-weighted means of the windows, one value per run, then the mean over seeds with
# a 95% percentile-bootstrap interval over seeds.

# %% tags=["remove-input"]
first = stats.first_n(learn, N)
first_summary = stats.summary_table(first, metrics_cols=FIRST, reps=REPS)
plots.markdown_table(stats.ci_table(plots.label_methods(first_summary), index=("servers", "Method"), formats=FORMATS), NAMES)

# %%
fig = plots.scale_points(first, "reward", f"reward, first {N:,} decisions")

# %% [markdown]
# *Figure: mean reward over the first decisions per method and fleet size; points are
# means over seeds, bars 95% bootstrap intervals over seeds.*

# %% tags=["remove-cell"]
pairs = stats.compare_pairs(first, ["drl+", "ilets"], ["drl", "ilets-"], FIRST, reps=REPS)
claim = stats.claim_status(pairs)
on_reward = claim[claim["metric"] == "reward"]
counts = on_reward["status"].value_counts()
glue("claim_scales", str(len(on_reward)), display=False)
glue("claim_holds", str(int(counts.get("holds", 0))), display=False)
glue("claim_direction", str(int(counts.get("direction only", 0))), display=False)
glue("claim_fails", str(int(counts.get("fails", 0) + counts.get("no data", 0))), display=False)
gains = on_reward[on_reward["pairs"] > 0]
glue("claim_gain_range", stats.range_text([gains["rel_min"].min(), gains["rel_max"].max()], "+.1f") + "%"
     if len(gains) else "not measurable", display=False)
STATUS_SAYS = {"holds": "holds (every pair resolved)", "direction only": "holds in direction only",
               "fails": "does not hold", "no data": "cannot be checked (methods missing)"}
claim_lines = [f"- **{s} servers**: " + "; ".join(
    f"{NAMES[r.metric]}: {STATUS_SAYS[r.status]} ({r.resolved} of {r.pairs} pairs resolved, relative gain "
    f"{stats.range_text([r.rel_min, r.rel_max], '+.1f')}%)" for r in g.itertuples())
    for s, g in claim.groupby("servers")]

# %% [markdown]
# ### Are DRL+ and ILETS far better from the very start?
#
# Each of DRL+ and ILETS is compared with each of DRL and ILETS- over the first decisions
# (four pairs per fleet size), seed by seed: runs with the same seed schedule the same
# tasks on the same fleet, so the comparison is paired and the interval resamples seeds.
# A pair is *resolved* when the 95% interval of the difference excludes zero. On the mean
# reward the claim holds at {glue:text}`claim_holds` of {glue:text}`claim_scales` fleet
# sizes, holds in direction only (every point estimate favours the pre-trained methods but
# some interval includes zero) at {glue:text}`claim_direction`, and does not hold at
# {glue:text}`claim_fails`; the relative gains of the four pairs range from
# {glue:text}`claim_gain_range`. Per fleet size and metric:

# %% tags=["remove-input"]
Markdown("\n".join(claim_lines) if claim_lines else "No fleet size has all four methods in this results store.")

# %% [markdown]
# With as few seeds as a quick profile has, "resolved" means "every seed agrees", not a
# test at the 5% level; read the intervals as descriptive. "Far better" is the paper's
# wording; the gains above say how far.
#
# ## What cloning achieved
#
# Behaviour cloning is scored by the *agreement*: the share of demonstrated decisions where
# the policy's most likely (masked) server is the expert's. The critic is scored by its
# mean squared error on the discounted expert returns. DRL+ and ILETS of one seed clone the
# same demonstrations from the same initial weights, so their cloning scores agree; their
# OINPT times differ because whichever runs second reads the demonstrations from the cache
# (the demonstration time is that of the run that produced them).

# %% tags=["remove-input"]
BC_COLS = [c for c in ("bc_agreement_before", "bc_agreement_after", "critic_mse_before", "critic_mse_after",
                       "demo_tasks", "demo_seconds", "oinpt_seconds") if c in learn_metrics]
cloned = learn_metrics[learn_metrics["method"].isin(["drl+", "ilets"])]
bc_summary = stats.summary_table(cloned, metrics_cols=BC_COLS, reps=REPS) if len(cloned) and BC_COLS \
    else pd.DataFrame()
plots.markdown_table(stats.ci_table(plots.label_methods(bc_summary), index=("servers", "Method"), formats=FORMATS), NAMES) \
    if len(bc_summary) else Markdown("No DRL+ or ILETS cell is in this results store.")

# %% tags=["remove-cell"]
drlp = cloned[cloned["method"] == "drl+"] if len(cloned) else cloned
if len(drlp) and "bc_agreement_after" in drlp:
    per_scale = drlp.groupby("servers")[["bc_agreement_before", "bc_agreement_after"]].mean()
    after = per_scale["bc_agreement_after"]
    glue("agree_before", stats.range_text(per_scale["bc_agreement_before"], ".1%"), display=False)
    glue("agree_after", stats.range_text(after, ".1%"), display=False)
    majority = int((after >= 0.5).sum())
    glue("agree_verdict", f"the clone picks the expert's server on most demonstrated decisions at all "
         f"{len(after)} fleet sizes" if majority == len(after) else
         f"the clone picks the expert's server on fewer than half of the demonstrated decisions at "
         f"{len(after) - majority} of {len(after)} fleet sizes", display=False)
else:
    for key in ("agree_before", "agree_after"):
        glue(key, "not measured", display=False)
    glue("agree_verdict", "no cloning statistics are recorded in this results store", display=False)
if len(drlp) and "critic_mse_after" in drlp and drlp["critic_mse_after"].notna().any():
    mse = drlp.groupby("servers")[["critic_mse_before", "critic_mse_after"]].mean()
    glue("critic_drop", stats.range_text(1 - mse["critic_mse_after"] / mse["critic_mse_before"], ".0%"),
         display=False)
else:
    glue("critic_drop", "an unmeasured share", display=False)
glue("demo_s", f"{drlp['demo_seconds'].mean():.1f}" if len(drlp) and "demo_seconds" in drlp else "n/a",
     display=False)
glue("oinpt_s", f"{drlp['oinpt_seconds'].mean():.1f}" if len(drlp) and "oinpt_seconds" in drlp else "n/a",
     display=False)

# %% [markdown]
# Across fleet sizes the agreement of DRL+ rises from {glue:text}`agree_before` (random
# weights) to {glue:text}`agree_after` after cloning: {glue:text}`agree_verdict`. Exact
# agreement is a strict score: on a large fleet several servers often cost almost the
# same, and a policy that picks a near-equivalent server disagrees without scheduling
# worse, which is why the curves above, not the agreement, are the test of OINPT. Critic
# pre-training cuts the critic's error on the expert returns by {glue:text}`critic_drop`.
# Producing the demonstrations took {glue:text}`demo_s` s on average (GA and PSO on every
# window; cached and reused across methods) and the whole of OINPT
# {glue:text}`oinpt_s` s per run.
#
# ## Does the critic pre-training matter?
#
# Without a trained critic, PPO's first updates use advantages from a random value
# function, which can pull the cloned actor away from the expert. The `no-critic` variant
# runs DRL+ with the actor cloned but the critic left at its random initialisation;
# it is compared with the main DRL+ at the same fleet size and seeds, over the first
# decisions and over the whole pass.

# %% tags=["remove-cell"]
def against_main(variant: str, final_cols=FINAL, directions=None):
    """First-N and whole-pass comparison of a variant with the main study (empty if absent)."""
    vm, vc = load_metrics(out, variant), load_curves(out, variant)
    if vm.empty:
        return vm, pd.DataFrame()
    firsts = stats.variant_comparison(first, stats.first_n(vc, N), FIRST, reps=REPS).assign(over="first N")
    finals = stats.variant_comparison(learn_metrics, vm, final_cols, directions=directions, reps=REPS) \
        .assign(over="whole pass")
    both = pd.concat([firsts, finals], ignore_index=True)
    return vm, both[both["verdict"] != "no data"].reset_index(drop=True)


def pick(comp: pd.DataFrame, metric: str, method: str = "drl+", over: str = "whole pass") -> dict | None:
    return stats.comparison_row(comp, metric=metric, method=method, over=over)



nc_metrics, nc = against_main("no-critic")
if nc.empty:
    glue("nc_text", "The `no-critic` variant is not in this results store, so the effect of critic "
         "pre-training is not measured here.", display=False)
else:
    r_first, r_final = pick(nc, "reward", over="first N"), pick(nc, "mean_reward")
    glue("nc_text", f"At {int(nc['servers'].min())} servers, DRL+ without critic pre-training changes the "
         f"reward over the first {N:,} decisions by {stats.says(r_first)}, and the whole-pass mean reward by "
         f"{stats.says(r_final)} (relative change of the variant against the main DRL+; positive = the variant "
         f"is better).", display=False)

# %% [markdown]
# {glue:text}`nc_text`

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(nc, by=("servers", "method", "over"), names={"variant": "no critic", "main": "main"},
                            formats=FORMATS), NAMES) if len(nc) else Markdown("(no `no-critic` cells)")

# %% [markdown]
# ## Does the expert's quality bound the clone?
#
# Imitation can at best reproduce its teacher. Two comparisons bound DRL+ by its experts.
# First, the `greedy-expert` variant clones the one-step greedy expert (the feasible server
# of least immediate cost) instead of GA and PSO: if the expert's quality matters, the
# better teacher gives the better start. Second, the greedy expert is itself the
# `greedy-cost` heuristic of the main grid, and the GA/PSO plans are by construction never
# worse than the greedy plan of the same window, so the greedy heuristic's online result is
# roughly the level the clone of GA/PSO should reach if cloning were perfect.

# %% tags=["remove-cell"]
AGREE = {"bc_agreement_after": True}
ge_metrics, ge = against_main("greedy-expert", final_cols=(*FINAL, "bc_agreement_after"), directions=AGREE)
if ge.empty:
    glue("ge_text", "The `greedy-expert` variant is not in this results store, so the two teachers are not "
         "compared here.", display=False)
else:
    glue("ge_text", f"At {int(ge['servers'].min())} servers, cloning the greedy expert instead of GA/PSO "
         f"changes DRL+'s reward over the first {N:,} decisions by {stats.says(pick(ge, 'reward', over='first N'))} "
         f"and its whole-pass mean reward by {stats.says(pick(ge, 'mean_reward'))}, with a BC agreement change of "
         f"{stats.says(pick(ge, 'bc_agreement_after'))}.", display=False)

floor = stats.compare(metrics, "drl+", "greedy-cost", FINAL, reps=REPS).assign(clone="GA/PSO (main)")
if len(ge_metrics):
    floor = pd.concat([floor, stats.compare(pd.concat([ge_metrics, metrics[metrics["method"] == "greedy-cost"]]),
                                            "drl+", "greedy-cost", FINAL, reps=REPS).assign(clone="greedy (variant)")],
                      ignore_index=True)
floor = floor[floor["verdict"] != "no data"]
floor_reward = floor[(floor["metric"] == "mean_reward") & (floor["clone"] == "GA/PSO (main)")]
floor_reward = floor_reward[floor_reward["verdict"] != "no data"]
below = int((floor_reward["verdict"] == "worse").sum())
if len(floor_reward) == 0:
    glue("floor_text", "The greedy-cost heuristic is not in this results store, so the clone is not "
         "compared with its expert's level.", display=False)
else:
    glue("floor_text", f"Over the whole pass, the main DRL+ (cloned from GA/PSO, then learning) ends below the "
         f"greedy heuristic's mean reward, resolved, at {below} of {len(floor_reward)} fleet sizes "
         f"(relative change {stats.range_text(floor_reward['rel_pct'], '+.1f')}%, positive = DRL+ better).",
         display=False)

# %% [markdown]
# {glue:text}`ge_text` {glue:text}`floor_text`

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(ge, by=("servers", "method", "over"), names={"variant": "greedy clone", "main": "main"},
                            formats=FORMATS), NAMES) if len(ge) else Markdown("(no `greedy-expert` cells)")

# %% [markdown]
# The clone against the greedy heuristic (its teacher's one-step level), whole pass:

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(floor, by=("clone", "servers"), names={"drl+": "DRL+", "greedy-cost": "greedy heuristic"},
                            formats=FORMATS), NAMES)

# %% [markdown]
# ## Is the state the bottleneck of cloning?
#
# The paper's observation is small: the task's CPU request and one more task scalar, then
# each server's free CPU and task count (2M+2 numbers). The experts decide on much more:
# each server's queue, speed and power. If the state hides what the expert sees, no amount
# of cloning can copy it. The `rich-state` variant adds each server's wait bound, speed
# and power to the observation (5M+2 numbers) for DRL and DRL+.

# %% tags=["remove-cell"]
rs_metrics, rs = against_main("rich-state", final_cols=(*FINAL, "bc_agreement_after"), directions=AGREE)
if rs.empty:
    glue("rs_text", "The `rich-state` variant is not in this results store, so the state question is not "
         "answered here.", display=False)
    glue("rs_verdict", "not measured", display=False)
else:
    agree, warm = pick(rs, "bc_agreement_after"), pick(rs, "reward", over="first N")
    cold = pick(rs, "reward", method="drl", over="first N")
    glue("rs_text", f"At {int(rs['servers'].min())} servers the richer state changes DRL+'s BC agreement by "
         f"{stats.says(agree)}, its reward over the first {N:,} decisions by {stats.says(warm)} and its whole-pass mean "
         f"reward by {stats.says(pick(rs, 'mean_reward'))}; for DRL (no cloning) the first-decision reward changes by "
         f"{stats.says(cold)} and the whole-pass mean reward by {stats.says(pick(rs, 'mean_reward', method='drl'))}.",
         display=False)
    verdicts = [r["verdict"] for r in (agree, warm) if r is not None]
    glue("rs_verdict", "yes: the richer state both raises the agreement and improves the cloned start, so the "
         "paper's state limits what cloning can copy" if verdicts and all(v == "better" for v in verdicts)
         else "no evidence of it: neither the agreement nor the cloned start improves, resolved, with the "
         "richer state" if not any(v == "better" for v in verdicts)
         else "the evidence is mixed: only one of the agreement and the cloned start improves (resolved)",
         display=False)

# %% [markdown]
# {glue:text}`rs_text` Is the state the bottleneck? In these results,
# {glue:text}`rs_verdict`.

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(rs, by=("servers", "method", "over"),
                            names={"variant": "rich state", "main": "paper state"}, formats=FORMATS), NAMES) \
    if len(rs) else Markdown("(no `rich-state` cells)")

# %% [markdown]
# In all comparison tables the change is the relative difference of the means, signed so
# that positive is better for the first-named arm, with a 95% paired percentile-bootstrap
# interval over seeds; *verdict* says whether that interval excludes zero.
