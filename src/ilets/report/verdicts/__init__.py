"""Verdicts on the paper's claims: reproduced, partly, not reproduced, with the evidence.

Each of the paper's eight claims (its abstract and results, as the book's summary chapter
quotes them; :data:`CLAIMS`) is broken into
**components**: one comparison of a method ``a`` against a method ``b`` on one measure, e.g.
"DRL+ vs DRL, average response time". A component's **effect** at one scale (fleet size)
is the relative improvement of ``a`` over ``b`` in percent, signed so that **positive means
the way the paper claims** (``a`` better), exactly :func:`ilets.report.stats.improvement_table`:
``(b - a) / |b|`` of the seed means for lower-is-better measures, ``(a - b) / |b|`` for
higher-is-better ones. Its 95 % CI is that function's percentile bootstrap, **paired** by
seed (a seed fixes the workload for every method, so the seeds both methods have are
resampled jointly, as :func:`ilets.report.stats.compare` does by default); the **pooled** effect
is the unweighted mean of the per-scale effects over the scales where both methods have
results, with its CI from the same resamples. The direction of every measure is given to
that function explicitly, so convergence decisions and oscillation (lower is better) get
exactly ``(b - a) / |b|``. The resampler is the study's one (:func:`ilets.report.stats.seed_effect`):
a chapter's :func:`ilets.report.stats.compare` of the same pair, measure and seed gives the same
interval and per-scale verdict.

The verdicts are layered, each module importing only those above it in this list:

* :mod:`~ilets.report.verdicts.rule`: one component's effect and status, one claim's verdict
  from its components (the rule), the effects as the book prints them;
* :mod:`~ilets.report.verdicts.heuristics`: the heuristic baselines against the learners, and
  the best heuristic claim 8 compares ILETS with;
* :mod:`~ilets.report.verdicts.claims`: the paper's eight claims (:data:`CLAIMS`), the
  :class:`Verdict` each gives, and the claims on the final metrics (1-3, 8);
* :mod:`~ilets.report.verdicts.curve_claims`: the claims on the learning curves (4-7);
* :mod:`~ilets.report.verdicts.all_claims`: every claim judged at once for one learner family,
  and a variant's verdicts beside the main ones;
* :mod:`~ilets.report.verdicts.prose`: an effect and the heuristics' standing in plain words.

This package re-exports their public names, so ``from ilets.report import verdicts as V`` gives
``V.all_verdicts``, ``V.component_table``, ... wherever they live.
"""

from ilets.report.verdicts.rule import (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE, VERDICTS, component_effects, HOLDS,
                                        HOLDS_POOLED, HOLDS_SOME, DIRECTION_ONLY, FAILS, REVERSES, NO_DATA, COMPONENT_STATUSES,
                                        SUPPORTING, STATUS_WORDS, paper_figure, component_status, effect_numbers, effect_text,
                                        component_table, judge, verdict_of)
from ilets.report.verdicts.heuristics import (BEST_HEURISTIC, best_heuristic_rows, heuristic_effects, heuristics_vs_learners,
                                              heuristics_per_fleet)
from ilets.report.verdicts.claims import CLAIMS, FAMILY_LABELS, Verdict, whole, claim_improves, claim_beats_heuristics
from ilets.report.verdicts.curve_claims import (COLD_START_WINDOWS, claim_cold_start, cold_start_windows, convergence_cells,
                                                claim_convergence, cumulative_at, claim_cumulative, trend_change_ranges,
                                                claim_oscillation)
from ilets.report.verdicts.all_claims import all_verdicts, VERDICT_ORDER, variant_verdicts, verdict_table
from ilets.report.verdicts.prose import describe_effect, describe_heuristics

__all__ = ["REPRODUCED", "PARTLY", "NOT_REPRODUCED", "NOT_TESTABLE", "VERDICTS", "component_effects", "HOLDS", "HOLDS_POOLED",
           "HOLDS_SOME", "DIRECTION_ONLY", "FAILS", "REVERSES", "NO_DATA", "COMPONENT_STATUSES", "SUPPORTING", "STATUS_WORDS",
           "paper_figure", "component_status", "effect_numbers", "effect_text", "component_table", "judge",
           "verdict_of", "BEST_HEURISTIC",
           "best_heuristic_rows", "heuristic_effects", "heuristics_vs_learners", "heuristics_per_fleet", "CLAIMS",
           "FAMILY_LABELS", "Verdict", "whole", "claim_improves", "claim_beats_heuristics", "COLD_START_WINDOWS",
           "claim_cold_start", "cold_start_windows", "convergence_cells", "claim_convergence", "cumulative_at",
           "claim_cumulative", "trend_change_ranges", "claim_oscillation", "all_verdicts", "VERDICT_ORDER", "variant_verdicts",
           "verdict_table", "describe_effect", "describe_heuristics"]
