"""Statistics of the study: seed-level summaries, the paper's improvement table, rliable
aggregates across scales, and cold-start / adaptation measures on learning curves.

Everything here is a pure function of the results store's tables (see :mod:`ilets.study.results`)
or of numpy arrays: no plotting, no files, no global state left behind. Every bootstrap is
seeded, so the same call gives the same numbers.

The statistics are layered, each module importing only those above it in this list:

* :mod:`~ilets.report.stats.resampling`: the one seed-level resampler (:func:`seed_effect`),
  its interval rule and verdict, the generic bootstrap, the measures' directions;
* :mod:`~ilets.report.stats.prose`: a comparison row as the book's sentences print it, and any
  number, bool or missing value as a table cell prints it;
* :mod:`~ilets.report.stats.curves`: cold start, convergence, oscillation and cumulative reward
  on learning curves, also on the gap to a non-learning reference;
* :mod:`~ilets.report.stats.aggregates`: rliable's IQM and probability of improvement across
  fleet sizes;
* :mod:`~ilets.report.stats.tables`: summaries over seeds, the paper's improvement table and
  every comparison table of the chapters.

This package re-exports their public names, so ``from ilets.report import stats as S`` gives
``S.compare``, ``S.seed_effect``, ... wherever they live.
"""

from ilets.report.stats.resampling import (HIGHER_IS_BETTER, DEFAULT_REPS, CI, method_order, bootstrap_ci, SeedEffect,
                                           seed_effect, percentile_interval, effect_verdict)
from ilets.report.stats.prose import (change_text, VERDICT_WORDS, says, comparison_row, range_text, MISSING, number_text,
                                      cell_text, people_table, share_text, ratio_text)
from ilets.report.stats.curves import (CURVE_COLS, first_n, convergence_decisions, convergence_table, oscillation,
                                       oscillation_table, cumulative_reward, cold_start_decisions, event_markers, leader_table,
                                       relative_curves, last_checkpoint, GAP_REFERENCE, gap_convergence_table,
                                       gap_oscillation_table, event_decisions, online_event_ranges)
from ilets.report.stats.aggregates import (numpy_global_seed, normalise_scores, aggregate_iqm, improvement_probability,
                                           iqm_table, probability_of_improvement)
from ilets.report.stats.tables import (PAPER_METRICS, PAPER_IMPROVEMENTS, summary_table, improvement_table, paper_comparison,
                                       VERDICTS, compare, compare_pairs, variant_comparison, ci_table, compare_display)

__all__ = ["HIGHER_IS_BETTER", "DEFAULT_REPS", "CI", "method_order", "bootstrap_ci", "SeedEffect", "seed_effect",
           "percentile_interval", "effect_verdict", "change_text", "VERDICT_WORDS", "says", "comparison_row", "range_text",
           "MISSING", "number_text", "cell_text", "people_table", "share_text", "ratio_text",
           "CURVE_COLS", "first_n", "convergence_decisions", "convergence_table", "oscillation", "oscillation_table",
           "cumulative_reward", "cold_start_decisions", "event_markers", "leader_table", "relative_curves", "last_checkpoint",
           "GAP_REFERENCE", "gap_convergence_table", "gap_oscillation_table", "event_decisions", "online_event_ranges",
           "numpy_global_seed", "normalise_scores", "aggregate_iqm", "improvement_probability", "iqm_table",
           "probability_of_improvement", "PAPER_METRICS", "PAPER_IMPROVEMENTS", "summary_table", "improvement_table",
           "paper_comparison", "VERDICTS", "compare", "compare_pairs", "variant_comparison", "ci_table", "compare_display"]
