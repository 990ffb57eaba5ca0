"""The book's findings: every number and sentence a results chapter states, as tested code.

Each chapter calls one function of this module with its :class:`ilets.report.report_context.ReportContext`
and gets a typed object of tables, numbers and sentences; the chapter only glues and plots
them. The rules that pick a sentence ("yes / no evidence / mixed") live here, next to
their tests, and every comparison comes from the study's one resampler
(:func:`ilets.report.stats.seed_effect`, through :func:`ilets.report.stats.compare` and
:func:`ilets.report.verdicts.component_effects`). Where a chapter speaks of a claim of the paper,
it shows the components of that claim's verdict (:func:`ilets.report.verdicts.component_table`),
so it states exactly the statuses the summary chapter uses.

One module per chapter (or topic) over :mod:`~ilets.report.findings.base`, which they share:
:mod:`~ilets.report.findings.summary`, :mod:`~ilets.report.findings.scales` and
:mod:`~ilets.report.findings.differences` (chapter 1), :mod:`~ilets.report.findings.workload` (3),
:mod:`~ilets.report.findings.experts` (4), :mod:`~ilets.report.findings.cold_start` (5),
:mod:`~ilets.report.findings.adaptation` (6), :mod:`~ilets.report.findings.results` (7),
:mod:`~ilets.report.findings.decision_time` (8), :mod:`~ilets.report.findings.reproduce` (10),
:mod:`~ilets.report.findings.pilot` (11) and
:mod:`~ilets.report.findings.readme` (README's headline). This package re-exports their public
names, so ``from ilets.report import findings as F`` gives ``F.results_findings``, ... wherever
they live.
"""

from ilets.report.findings.base import (FINAL, FIRST, DIRECTIONS, REFERENCE, FLAT_FAMILY, PAPER_LABELS, says, VariantFindings,
                                        component_display, claims_display, rows)
from ilets.report.findings.summary import WORKLOADS, SummaryFindings, summary_findings, gap_texts, sci, learner_settings_text
from ilets.report.findings.scales import scale_comparison, ScaleFindings, scale_findings, scale_sentence
from ilets.report.findings.differences import (DifferenceFindings, difference_findings, difference_sentence,
                                              verdict_changes, verdict_changes_sentence)
from ilets.report.findings.cold_start import (agreement_sentence, bottleneck_sentence, against_main, ColdStartFindings, BC_COLS,
                                              CLONE_COLS, MEMORISED_GAP, STATE_HELPS, STRICT_SHARE, FLAT_PAPER, FLAT_RICH,
                                              PER_SERVER, ONE_STEP_EXPERTS, cloning_limit_sentence, cloning_sentence,
                                              exact_agreement_sentence, cold_start_findings,
                                              cold_start_lead)
from ilets.report.findings.adaptation import (burst_sentence, oscillation_pairs, AdaptationFindings, EVENT_NAMES,
                                              event_list_text, KEEP_UP_SHARE, oail_throughput_text, CONVERGENCE, OAIL_COLS,
                                              curve_measures, curve_measures_sentence, cold_windows_display,
                                              cold_windows_sentence, adaptation_findings,
                                              adaptation_lead)
from ilets.report.findings.results import (STATE_BLIND, ENERGY_FLOOR, energy_room, energy_room_display, energy_room_sentence,
                                           speed_change, ResultsFindings, HEAVY, NO_HEAVY, heavy_purpose, heavy_summary, by_fleet,
                                           unpool_opposite_signs,
                                           paper_effect_texts, paper_tables, across_scales, results_findings,
                                           results_lead)
from ilets.report.findings.readme import (HEADLINE_MARKERS, HEADLINE_FAMILIES, shipped_per_server, headline_gap_markdown,
                                          headline_markdown)
from ilets.report.findings.workload import ks_sentence, load_display, window_text
from ilets.report.findings.experts import (budget_note, config_texts, SEARCH_GAP_OK, search_sentence, ms_text, gap_display,
                                           timing_display, PLANNING_MARGIN, experts_lead)
from ilets.report.findings.decision_time import time_text, latency_display, decision_texts, store_latency
from ilets.report.findings.pilot import SETTING_TEXT, flat_display, joint_display, pilot_lead
from ilets.report.findings.reproduce import (profiles_table, hardware_table, verified_folders, BOOK_RERUNS, CELL_RUNNERS,
                                              book_reruns_text)

__all__ = ["FINAL", "FIRST", "DIRECTIONS", "REFERENCE", "FLAT_FAMILY", "PAPER_LABELS", "says", "VariantFindings", "rows",
           "component_display", "claims_display", "WORKLOADS", "SummaryFindings", "summary_findings", "gap_texts", "sci",
           "learner_settings_text", "scale_comparison", "ScaleFindings", "scale_findings", "scale_sentence",
           "DifferenceFindings", "difference_findings", "difference_sentence", "verdict_changes",
           "verdict_changes_sentence", "agreement_sentence", "bottleneck_sentence",
           "against_main", "ColdStartFindings", "BC_COLS", "CLONE_COLS", "MEMORISED_GAP", "STATE_HELPS", "STRICT_SHARE",
           "FLAT_PAPER", "FLAT_RICH", "PER_SERVER", "ONE_STEP_EXPERTS", "cloning_limit_sentence", "cloning_sentence",
           "exact_agreement_sentence", "cold_start_findings", "cold_start_lead",
           "burst_sentence", "oscillation_pairs", "AdaptationFindings",
           "EVENT_NAMES", "event_list_text", "KEEP_UP_SHARE", "oail_throughput_text", "CONVERGENCE", "OAIL_COLS",
           "curve_measures", "curve_measures_sentence", "cold_windows_display", "cold_windows_sentence", "adaptation_findings",
           "adaptation_lead",
           "STATE_BLIND", "ENERGY_FLOOR", "energy_room", "energy_room_display", "energy_room_sentence", "speed_change",
           "ResultsFindings", "HEAVY", "NO_HEAVY", "heavy_purpose", "heavy_summary", "by_fleet",
           "unpool_opposite_signs", "paper_effect_texts",
           "paper_tables", "across_scales", "results_findings", "results_lead",
           "HEADLINE_MARKERS", "HEADLINE_FAMILIES", "shipped_per_server",
           "headline_gap_markdown", "headline_markdown", "ks_sentence", "load_display", "window_text", "budget_note",
           "config_texts",
           "SEARCH_GAP_OK", "search_sentence", "ms_text", "gap_display", "timing_display", "time_text", "latency_display",
           "decision_texts", "store_latency", "profiles_table", "hardware_table", "verified_folders", "BOOK_RERUNS",
           "CELL_RUNNERS", "book_reruns_text", "PLANNING_MARGIN", "experts_lead", "SETTING_TEXT", "flat_display",
           "joint_display", "pilot_lead"]
