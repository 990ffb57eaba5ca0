"""Chapter 4, the experts: the profile's search budget, whether the search is the experts'
bottleneck, and their optimality gaps and timings as the chapter shows them.
"""

from __future__ import annotations

import pandas as pd


def budget_note(cfg, defaults) -> str:
    """How a profile's expert search budget differs from the method defaults (two
    :class:`ilets.config.ExpertConfig`)."""
    keys = ("ga_population", "ga_generations", "pso_particles", "pso_iterations")
    changed = [f"{k.replace('_', ' ')} {getattr(cfg, k):g} (default {getattr(defaults, k):g})"
               for k in keys if getattr(cfg, k) != getattr(defaults, k)]
    return ("it shrinks the search budget to keep the grid short: " + ", ".join(changed)) if changed \
        else "it uses the method defaults"


def config_texts(cfg) -> dict[str, str]:
    """Every field of a settings dataclass as text (``cfg_<field>``), floats with ``:g``."""
    import dataclasses

    return {f"cfg_{k}": (f"{v:g}" if isinstance(v, float) else str(v)) for k, v in dataclasses.asdict(cfg).items()}


#: Mean optimality gap below which the search is not the experts' bottleneck.
SEARCH_GAP_OK = 0.01

def search_sentence(mean_gaps: pd.Series) -> str:
    """Whether the GA/PSO search is the experts' bottleneck, from their mean optimality gaps."""
    return "so the search itself is not the bottleneck" if float(mean_gaps.max()) < SEARCH_GAP_OK \
        else "so with this budget the search itself leaves part of the way to the optimum"


def ms_text(ms: float) -> str:
    """Milliseconds as the expert chapter prints them: whole above 10, one decimal below."""
    return f"{ms:.0f}" if ms >= 10 else f"{ms:.1f}"


def gap_display(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.agents.experts.gap_table` (indexed by expert) as percentages for the page."""
    from ilets.expert_table import EXPERT_LABELS

    d = summary.reset_index()
    return d.assign(expert=d["expert"].map(lambda e: EXPERT_LABELS.get(e, e)),
                    mean_gap=(100 * d["mean_gap"]).map("{:.2f}%".format),
                    max_gap=(100 * d["max_gap"]).map("{:.1f}%".format),
                    optimal_share=(100 * d["optimal_share"]).map("{:.0f}%".format)) \
        .rename(columns={"mean_gap": "mean gap", "max_gap": "max gap", "optimal_share": "optimal"})


def timing_display(timing: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.agents.experts.timing_table` formatted for the page: per fleet size and expert,
    wall and CPU milliseconds per call, the ratio to greedy, the mean saving over greedy's plan
    and the snapshots' CPU load."""
    from ilets.expert_table import EXPERT_LABELS

    return pd.DataFrame({
        "servers": timing["servers"], "expert": timing["expert"].map(lambda e: EXPERT_LABELS.get(e, e)),
        "ms per call": timing["ms_per_call"].map("{:.1f}".format),
        "CPU ms per call": timing["cpu_ms_per_call"].map("{:.1f}".format),
        "x greedy": timing["ratio_to_greedy"].map("{:.1f}".format),
        "saving over greedy": (100 * timing["mean_saving_vs_greedy"]).map("{:.2f}%".format),
        "CPU load": (100 * timing["cpu_util"]).map("{:.0f}%".format)})


#: The mean saving over greedy's plan, at every fleet size, below which cloning the experts is
#: largely cloning the one-step greedy rule [ours].
PLANNING_MARGIN = 0.10


def experts_lead(summary: pd.DataFrame, timing: pd.DataFrame, oail: pd.DataFrame) -> str:
    """Chapter 4's finding in three sentences: how often the search experts find the optimum on
    the small cases (``summary``: :func:`ilets.report.measurements.gap_summary`) against greedy;
    how much their plans save over greedy's on the study's snapshots (``timing``:
    :func:`ilets.report.measurements.timing_frame`, the better search expert per fleet size) and
    what that means for a clone; what a call costs and the share of the online imitation's windows
    that came back (``oail``: the ILETS- and ILETS cells' metrics)."""
    from ilets.expert_table import EXPERT_LABELS, REFERENCE_EXPERT, SEARCH_EXPERTS

    from ilets.report.report_context import and_join

    search = [e for e in SEARCH_EXPERTS if e in summary.index]
    optimal = and_join(f"{100 * summary.loc[e, 'optimal_share']:.0f}%" for e in search)
    first = (f"Our {and_join(EXPERT_LABELS[e] for e in search)} experts find the optimal plan in {optimal} of "
             f"{int(summary['cases'].max())} small cases, against {100 * summary.loc[REFERENCE_EXPERT, 'optimal_share']:.0f}% "
             f"for one-step greedy, {search_sentence(summary.loc[search, 'mean_gap'])}.")
    best = timing[timing["expert"].isin(search)].groupby("servers")["mean_saving_vs_greedy"].max()
    saving = and_join(f"{100 * v:.1f}%" for v in best)
    means = ("so cloning them is largely cloning a one-step rule a policy can read almost directly from its state"
             if float(best.max()) < PLANNING_MARGIN else "so planning a window adds a real margin over greedy")
    second = (f"On the study's snapshots, though, their plans cost {saving} less than greedy's at "
              f"{and_join(int(m) for m in best.index)} servers, {means}.")
    t = timing.set_index(["servers", "expert"])
    m = int(timing["servers"].min())
    calls = and_join(f"{ms_text(t.loc[(m, e), 'ms_per_call'])} ms ({EXPERT_LABELS[e]})" for e in search)
    requests, completed = int(oail["oail_requests"].sum()), int(oail["oail_completed"].sum())
    served = f"{100 * completed / requests:.1f}%" if requests else "none"
    third = (f"A call takes {calls} at {m} servers, and the online imitation got back {served} of the windows it "
             "sent to them.")
    return f"{first} {second} {third}"
