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
# # OAIL and adaptation
#
# Cloning gives a start; the workload then moves. The paper's **OAIL** keeps imitating
# while scheduling: emulators periodically copy the cloud, optimisation experts schedule a
# window of tasks on the copy, and their plans become an imitation loss on the live policy,
# without blocking dispatch {cite}`kang2024ilets`. In this package (`ilets.oail`) every
# {glue:text}`oail_every` decisions a window of {glue:text}`oail_window` tasks and a
# snapshot of the cloud go to a worker process in which {glue:text}`oail_experts` plan it;
# behaviour-cloning steps weighted {glue:text}`oail_weights` (better expert first) are
# applied at the next PPO rollout. The window is the **{glue:text}`oail_mode`** one: the
# last tasks already scheduled, replayed from a snapshot taken before them (the authors'
# code used the *next* tasks, which an online scheduler cannot know; the `upcoming`
# variant measures that choice below). ILETS- is DRL with OAIL, ILETS is DRL+ with OAIL.
#
# The paper claims that ILETS- converges faster than DRL, that ILETS reaches the highest
# cumulative reward fastest at every scale, that under instant changes (bursts) ILETS stays
# smooth and that under trend changes every method oscillates but ILETS least. This
# chapter measures each, on the {glue:text}`profile_name` profile (fleets of
# {glue:text}`scales` servers, {glue:text}`n_seeds` seeds each).

# %% tags=["remove-cell"]
import pandas as pd
from IPython.display import Markdown
from myst_nb import glue

from ilets import plots, stats
from ilets.config import RunConfig, from_dict
from ilets.results import LEARNERS, load_curves, load_metrics, load_profile_info, results_dir
from ilets.workload import RATE_SHAPE, load_workload

# %matplotlib inline
REPS = 1000  # bootstrap resamples
REFERENCE = "greedy-cost"  # the heuristic whose curve removes the workload's own swings
FINAL = ("mean_reward", "avg_response_s", "success_rate", "energy_kwh")
OAIL_COLS = ("oail_requests", "oail_completed", "oail_applied", "oail_dropped", "oail_failed", "oail_updates",
             "oail_lag_p50")
DIRECTIONS = {"mad": False, "var": False, "convergence_decisions": False, "cum_reward": True}
FORMATS = {"mad": ".3g", "convergence_decisions": ",.0f", "cum_reward": ",.1f", "mean_reward": ".3f",
           "avg_response_s": ".2f", "success_rate": ".1%", "energy_kwh": ".3g", "oail_lag_p50": ",.0f",
           **{c: ",.1f" for c in OAIL_COLS if c != "oail_lag_p50"}}
NAMES = {"mean_reward": "mean reward", "avg_response_s": "response (s)", "success_rate": "success rate",
         "energy_kwh": "energy (kWh)", "convergence_decisions": "decisions to converge",
         "cum_reward": "cumulative reward", "oail_requests": "requests", "oail_completed": "completed",
         "oail_applied": "applied", "oail_dropped": "dropped", "oail_failed": "failed",
         "oail_updates": "gradient steps", "oail_lag_p50": "median lag (decisions)",
         "share_led": "checkpoints led", "final_rank": "rank at end", "leads_from": "leads from decision",
         **{f"burst_{i}": f"burst ({s:.0f} s)" for i, (s, _, _) in enumerate(RATE_SHAPE["bursts"])},
         "trend_change": f"trend change ({RATE_SHAPE['trend_change']:.0f} s)"}

plots.use_style()
out = results_dir()
profile = load_profile_info(out)
run = from_dict(RunConfig, profile["run"], "profile.run")
metrics = load_metrics(out)
curves = load_curves(out)
learn = curves[curves["method"].isin(LEARNERS)]
learn_metrics = metrics[metrics["method"].isin(LEARNERS)]
glue("profile_name", profile["name"], display=False)
glue("scales", ", ".join(str(s) for s in sorted(learn["servers"].unique())), display=False)
glue("n_seeds", str(learn["seed"].nunique()), display=False)
glue("oail_every", f"{run.oail.every}", display=False)
glue("oail_window", f"{run.experts.window}", display=False)
glue("oail_experts", " and ".join(e.upper() for e in run.oail.experts), display=False)
glue("oail_weights", "/".join(f"{w:g}" for w in run.oail.weights), display=False)
glue("oail_mode", run.oail.window_mode, display=False)
glue("n_steps", f"{run.ppo.n_steps:,}", display=False)
glue("max_pending", f"{run.oail.max_pending}", display=False)




# %% tags=["remove-cell"]
# Events -> decision indices: the online arrivals depend on the workload seed.
seeds = sorted(int(s) for s in curves["seed"].unique())
workloads = {s: load_workload(run.workload, s) for s in seeds}
ranges = {s: stats.online_event_ranges(w.events, w.online.arrival) for s, w in workloads.items()}
markers = stats.event_markers(ranges)
event_order = sorted(markers, key=markers.get)
w0 = workloads[seeds[0]] if seeds else None
span = next(iter(ranges[seeds[0]].values()), (0, 0)) if seeds else (0, 0)
glue("n_events", str(len(markers)), display=False)
glue("event_list", ", ".join(NAMES.get(e, e) for e in event_order) or "none", display=False)
glue("span_decisions", f"{span[1] - span[0]:,}", display=False)
glue("scale", f"{run.workload.scale:g}", display=False)
gap = stats.relative_curves(curves, REFERENCE)
gap = gap[gap["method"].isin(LEARNERS)]
glue("gap_text", f"the same curve minus the `{REFERENCE}` heuristic's curve on the same tasks" if len(gap)
     else f"(the `{REFERENCE}` heuristic is not in this results store, so the workload's own swings cannot be "
          "removed here)", display=False)

# %% [markdown]
# ## Around the bursts and the trend change
#
# The online segment has {glue:text}`n_events` designed events: {glue:text}`event_list`
# (times in the paper's 3,000 s window; the profile runs {glue:text}`scale` of it, so the
# events come at the same *share* of the segment). Each event is mapped to the decision at
# which it strikes, the first task arriving at or after it, from the regenerated workload
# of each seed (`ilets.workload.load_workload` and `ilets.stats.event_decisions`).
#
# The arrival rate drives the reward of every scheduler: a burst queues tasks on any
# policy. To separate the policy's own instability from the load's swings, the second
# figure shows {glue:text}`gap_text`: positive is better than the heuristic, and what the
# load does to both cancels.

# %%
fig = plots.learning_curves(learn, "reward", "reward per decision", events=markers)

# %% [markdown]
# *Figure: reward per decision, mean per curve window, against decisions made. Lines: mean
# over seeds; bands: 95% bootstrap confidence interval of that mean over seeds. Red lines:
# instant bursts; purple: the trend change (each at the mean over seeds of the decision at
# which it strikes).*

# %%
fig = plots.learning_curves(gap, "reward", f"reward minus {REFERENCE}", events=markers) if len(gap) else None

# %% [markdown]
# *Figure: the gap between each learner's windowed reward and the `greedy-cost`
# heuristic's on the same tasks (positive: the learner is better); lines, 95% bands over
# seeds and event lines as above.*
#
# ## Oscillation after each event
#
# For each run and event, the oscillation is the mean absolute change between consecutive
# curve windows (`ilets.stats.oscillation`, `mad`) over the decisions of the same stretch
# of time after the event: the shortest gap between consecutive events, here
# {glue:text}`span_decisions` decisions, so stretches never overlap and every event is
# measured over equal time. It is computed on the reward and on the gap to the heuristic;
# per method and fleet size, the table gives the mean over seeds and its 95%
# percentile-bootstrap interval over seeds. Lower is smoother.

# %% tags=["remove-cell"]
osc_reward = stats.oscillation_table(learn, lambda s: ranges.get(int(s), {}))
osc_gap = stats.oscillation_table(gap, lambda s: ranges.get(int(s), {})) if len(gap) else pd.DataFrame()
osc_summary = pd.concat(
    [stats.summary_table(o, metrics_cols=("mad",), by=("servers", "event", "method"), reps=REPS)
     .assign(metric=name) for o, name in ((osc_reward, "reward"), (osc_gap, f"gap to {REFERENCE}")) if len(o)],
    ignore_index=True) if len(osc_reward) else pd.DataFrame()


def oscillation_verdicts(osc: pd.DataFrame) -> str:
    """Sentences on the paper's oscillation claims, from the counts of `stats.event_claims`."""
    if osc.empty:
        return "no oscillation could be measured (no online events or no learner curves)."
    pairs, least = stats.event_claims(osc, reps=REPS)
    burst = pairs["event"].str.startswith("burst")
    v = pairs[burst & (pairs["y"] == "drl")]["verdict"].value_counts()
    o = pairs[pairs["y"] == "drl+"]["verdict"].value_counts()
    t = least[least["event"] == "trend_change"]["status"].value_counts()
    n_t = int(t.sum())
    return (f"after the bursts, ILETS oscillates less than DRL (resolved) in {v.get('better', 0)} of {int(v.sum())} "
            f"(fleet size, burst) cases, more (resolved) in {v.get('worse', 0)}, and indistinguishably in "
            f"{v.get('unresolved', 0)}. After the trend change, ILETS oscillates least of the four methods, "
            f"resolved against each, at {t.get('holds', 0)} of {n_t} fleet sizes; it has the lowest mean without "
            f"every interval excluding a tie at {t.get('direction only', 0)}; and it is not the least at "
            f"{t.get('fails', 0)}" + (f" (and cannot be compared at {t['no data']})" if t.get("no data", 0) else "") +
            f". Against DRL+, which differs from ILETS only by OAIL, ILETS "
            f"oscillates less (resolved) in {o.get('better', 0)} of {int(o.sum())} (fleet size, event) cases and "
            f"more in {o.get('worse', 0)}.")


glue("osc_reward_text", oscillation_verdicts(osc_reward), display=False)
osc_named = osc_reward.replace({"event": NAMES}) if len(osc_reward) else osc_reward
event_labels = [NAMES.get(e, e) for e in event_order]
glue("osc_gap_text", oscillation_verdicts(osc_gap) if len(osc_gap) else "nothing is measured.", display=False)

# %% tags=["remove-input"]
plots.markdown_table(stats.ci_table(plots.label_methods(osc_summary), index=("servers", "event", "Method"), formats=FORMATS), NAMES) \
    if len(osc_summary) else Markdown("No online event lies within the online segment of this profile.")

# %%
fig = plots.event_points(osc_named, "mad", "oscillation of reward (MAD)", event_labels) if len(osc_named) else None

# %% [markdown]
# *Figure: oscillation (mean absolute change between consecutive windows of the reward)
# after each event, per method and fleet size; points are means over seeds, bars 95%
# bootstrap intervals over seeds.*
#
# On the reward, {glue:text}`osc_reward_text`
#
# On the gap to the heuristic, where the load's swings cancel,
# {glue:text}`osc_gap_text`
#
# With a few seeds "resolved" means that every resampling of seeds agrees; cases that are
# not resolved are not evidence of equality either.
#
# ## Convergence
#
# A run has converged once its reward (a trailing mean over {glue:text}`conv_smooth` curve
# windows) enters a band of ±{glue:text}`conv_tol` around its final level (the mean of the
# last {glue:text}`conv_final` of the windows) and never leaves it; the measure is the
# number of decisions made before that (`ilets.stats.convergence_decisions`). Runs whose
# last window is outside the band never settled and are counted, not averaged. Because the
# load itself rises and falls, the "final level" is the level of the last stretch of the
# segment, so this measures how soon a method tracks that level, not a steady state.

# %% tags=["remove-cell"]
CONV = {"tol": 0.05, "final_frac": 0.2, "smooth": 3}
glue("conv_tol", f"{CONV['tol']:.0%}", display=False)
glue("conv_final", f"{CONV['final_frac']:.0%}", display=False)
glue("conv_smooth", str(CONV["smooth"]), display=False)
conv = stats.convergence_table(learn, **CONV)
conv_summary = stats.summary_table(conv, metrics_cols=("convergence_decisions",), reps=REPS)
conv_vs = stats.compare(conv, "ilets-", "drl", ["convergence_decisions"], directions=DIRECTIONS, reps=REPS)
conv_vs = conv_vs[conv_vs["verdict"] != "no data"]
cv = conv_vs["verdict"].value_counts()
glue("conv_text", f"ILETS- converges faster than DRL (resolved, on the seeds where both settled) at "
     f"{cv.get('better', 0)} of {len(conv_vs)} fleet sizes, slower at {cv.get('worse', 0)}, and "
     f"indistinguishably at {cv.get('unresolved', 0)}" if len(conv_vs) else
     "ILETS- and DRL cannot be compared (missing or never settled)", display=False)
glue("conv_settled", f"{conv['settled'].mean():.0%}" if len(conv) else "n/a", display=False)

# %% tags=["remove-input"]
plots.markdown_table(stats.ci_table(plots.label_methods(conv_summary.assign(
    unsettled=conv_summary["n_nan"])), index=("servers", "Method", "unsettled"), formats=FORMATS), NAMES) \
    if len(conv_summary) else Markdown("No learner curves in this results store.")

# %% [markdown]
# Of all runs, {glue:text}`conv_settled` settled. The paper's claim, ILETS- converges
# faster than DRL: {glue:text}`conv_text`.
#
# ## Cumulative reward
#
# Every method of one fleet size and seed schedules the same tasks, so cumulative rewards
# compare at equal decisions: the method that is highest at a given decision has collected
# the most reward by then ("reaches the highest cumulative reward fastest").

# %%
cum = stats.cumulative_reward(learn)
fig = plots.learning_curves(cum, "mean_reward_so_far", "cumulative reward / decisions", events=markers)

# %% [markdown]
# *Figure: cumulative reward divided by the decisions made so far (the cumulative reward
# itself, a sum of negative costs, falls almost linearly and hides the differences; at a
# given decision both rank the methods identically; higher is better). Lines: mean over
# seeds; bands: 95% bootstrap intervals over seeds; event lines as above.*

# %% tags=["remove-cell"]
leaders = stats.leader_table(cum)
final_cum = stats.last_checkpoint(cum)
final_summary = stats.summary_table(final_cum, metrics_cols=("cum_reward",), reps=REPS)
top = stats.claim_status(stats.compare_pairs(final_cum, ["ilets"], ["drl", "drl+", "ilets-"], ["cum_reward"],
                                             directions=DIRECTIONS, reps=REPS))
ilets_lead = leaders[leaders["method"] == "ilets"]
lead_at = ilets_lead[ilets_lead["final_rank"] == 1]
glue("cum_lead_text", (f"ILETS has the highest mean cumulative reward at the end of the pass at {len(lead_at)} of "
                       f"{len(ilets_lead)} fleet sizes" + (" (leading without interruption from decision " +
                       ", ".join(f"{int(r.leads_from):,} at {r.servers} servers" for r in lead_at.itertuples()) + ")"
                       if len(lead_at) else "")) if len(ilets_lead) else "ILETS is not in this results store",
     display=False)
ts = top["status"].value_counts()
glue("cum_resolved_text", f"its final cumulative reward is above every other method's, resolved against each, at "
     f"{ts.get('holds', 0)} of {len(top)} fleet sizes", display=False)
winners = leaders[leaders["final_rank"] == 1]
glue("cum_winners", "; ".join(f"{r.servers} servers: {r.method.upper()}" for r in winners.itertuples()) or "none",
     display=False)

# %% [markdown]
# {glue:text}`cum_lead_text`, and {glue:text}`cum_resolved_text`. Leader at the end of
# the pass, per fleet size: {glue:text}`cum_winners`. The table gives the share of curve
# checkpoints each method leads, its rank at the end, the decision from which it leads
# without interruption (blank unless it leads at the end), and its final cumulative reward
# (mean over seeds, 95% interval).

# %% tags=["remove-input"]
lead_table = leaders.merge(stats.ci_table(final_summary, formats=FORMATS), on=["servers", "method"], how="left") \
    if len(leaders) else leaders
plots.markdown_table(plots.label_methods(lead_table).assign(
    share_led=lambda d: d["share_led"].map("{:.0%}".format),
    leads_from=lambda d: d["leads_from"].map(lambda v: "" if pd.isna(v) else f"{v:,.0f}"))
    [["servers", "Method", "share_led", "final_rank", "leads_from", "cum_reward"]], NAMES) \
    if len(lead_table) else Markdown("No learner curves in this results store.")

# %% [markdown]
# ## Does OAIL run, and does it change anything?
#
# The emulator counters of ILETS- and ILETS: windows handed to the emulators (requests),
# results received (completed) and used for imitation (applied), requests dropped from a
# full backlog or lost to a failing expert, gradient steps, and the median lag between a
# request and the use of its result, in decisions (per run; mean over seeds with 95%
# interval).

# %% tags=["remove-cell"]
oail_cols = [c for c in OAIL_COLS if c in learn_metrics]
with_oail = learn_metrics[learn_metrics["method"].isin(["ilets-", "ilets"])]
oail_summary = stats.summary_table(with_oail, metrics_cols=oail_cols, reps=REPS) \
    if len(with_oail) and oail_cols else pd.DataFrame()
if len(oail_summary):
    totals = with_oail.groupby("servers")[["oail_requests", "oail_applied", "oail_dropped", "oail_failed"]].sum()
    share = totals["oail_applied"] / totals["oail_requests"]
    glue("oail_share", stats.range_text(share, ".0%"), display=False)
    glue("oail_lost", f"{int(totals['oail_dropped'].sum()):,} dropped and {int(totals['oail_failed'].sum()):,} "
         "failed", display=False)
    glue("oail_lag", f"{with_oail['oail_lag_p50'].median():,.0f}", display=False)
else:
    for key in ("oail_share", "oail_lost", "oail_lag"):
        glue(key, "n/a", display=False)
effect = pd.concat([stats.compare(learn_metrics, x, y, FINAL, reps=REPS)
                    for x, y in (("ilets-", "drl"), ("ilets", "drl+"))], ignore_index=True)
effect = effect[effect["verdict"] != "no data"]
er = effect[effect["metric"] == "mean_reward"]
glue("oail_effect", "; ".join(f"{r['x'].upper()} vs {r['y'].upper()} at {r['servers']} servers: "
                              f"{stats.says(r)}" for r in er.to_dict("records")) or "not measured", display=False)

# %% tags=["remove-input"]
plots.markdown_table(stats.ci_table(plots.label_methods(oail_summary), index=("servers", "Method"), formats=FORMATS), NAMES) \
    if len(oail_summary) else Markdown("No ILETS- or ILETS cell with OAIL counters is in this results store.")

# %% [markdown]
# Across fleet sizes, {glue:text}`oail_share` of the requests were applied
# ({glue:text}`oail_lost` in all); the median lag is {glue:text}`oail_lag` decisions,
# against a request every {glue:text}`oail_every` decisions: results are applied only at
# the start of the next PPO rollout (every {glue:text}`n_steps` decisions), so the lag is
# mostly that wait, and a backlog beyond {glue:text}`max_pending` requests drops the
# oldest. Whether the imitation
# changes the outcome is the comparison of each method with and without OAIL, on the
# whole-pass mean reward (relative change, positive = with OAIL better; paired 95%
# interval over seeds): {glue:text}`oail_effect`.

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(effect.assign(pair=effect["x"].str.upper() + " vs " + effect["y"].str.upper()),
                                           by=("servers", "pair"), formats=FORMATS,
                                           names={"ilets-": "with OAIL", "ilets": "with OAIL", "drl": "without",
                                                  "drl+": "without"}), NAMES) \
    if len(effect) \
    else Markdown("(the methods with and without OAIL are not both in this results store)")

# %% [markdown]
# ## Past window or upcoming window?
#
# The authors' code let the experts plan the *next* tasks, which have not arrived when an
# online scheduler decides; this study uses the last tasks already scheduled. The
# `upcoming` variant runs ILETS- and ILETS with the authors' window, against the main
# study's past window at the same fleet size and seeds.

# %% tags=["remove-cell"]
up_metrics = load_metrics(out, "upcoming")
up = stats.variant_comparison(learn_metrics, up_metrics, (*FINAL, "oail_applied"),
                              directions={"oail_applied": True}, reps=REPS) if len(up_metrics) else pd.DataFrame()
if up.empty:
    glue("up_text", "The `upcoming` variant is not in this results store, so the two windows are not compared "
         "here.", display=False)
else:
    glue("up_text", "With the upcoming window instead of the past one, the whole-pass mean reward changes by " +
         "; ".join(f"{stats.says(r)} for {r['method'].upper()} at {r['servers']} servers"
                   for r in up[up["metric"] == "mean_reward"].to_dict("records")) +
         " (positive = the upcoming window is better). Peeking at future tasks is not available to a real "
         "scheduler, so a gain here is an upper bound on what a better-informed OAIL could add, not a result "
         "the paper's setting can reach.", display=False)

# %% [markdown]
# {glue:text}`up_text`

# %% tags=["remove-input"]
plots.markdown_table(stats.compare_display(up, by=("servers", "method"), names={"variant": "upcoming", "main": "past"},
                            formats=FORMATS), NAMES) if len(up) else Markdown("(no `upcoming` cells)")

# %% [markdown]
# In the comparison tables the change is the relative difference of the means, signed so
# that positive is better for the first-named arm, with a 95% paired percentile-bootstrap
# interval over seeds; *verdict* says whether that interval excludes zero.
