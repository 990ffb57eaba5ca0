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
    d = summary.reset_index()
    return d.assign(mean_gap=(100 * d["mean_gap"]).map("{:.2f}%".format),
                    max_gap=(100 * d["max_gap"]).map("{:.1f}%".format),
                    optimal_share=(100 * d["optimal_share"]).map("{:.0f}%".format)) \
        .rename(columns={"mean_gap": "mean gap", "max_gap": "max gap", "optimal_share": "optimal"})


def timing_display(timing: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.agents.experts.timing_table` formatted for the page."""
    return timing.assign(
        ms_per_call=timing["ms_per_call"].map("{:.1f}".format), ms_p90=timing["ms_p90"].map("{:.1f}".format),
        cpu_ms_per_call=timing["cpu_ms_per_call"].map("{:.1f}".format),
        ratio_to_greedy=timing["ratio_to_greedy"].map("{:.1f}".format),
        mean_saving_vs_greedy=(100 * timing["mean_saving_vs_greedy"]).map("{:.2f}%".format),
        max_saving_vs_greedy=(100 * timing["max_saving_vs_greedy"]).map("{:.2f}%".format),
        cpu_util=(100 * timing["cpu_util"]).map("{:.0f}%".format)) \
        .rename(columns={"ms_per_call": "ms/call", "ms_p90": "p90 ms", "cpu_ms_per_call": "CPU ms/call",
                         "ratio_to_greedy": "x greedy", "mean_saving_vs_greedy": "mean saving vs greedy",
                         "max_saving_vs_greedy": "max saving", "cpu_util": "CPU utilisation"})
