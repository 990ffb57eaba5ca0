"""The grid-command scenario's methods and metrics are rows of the core tables
(:data:`ilets.method_table.METHOD_SPECS`, :data:`ilets.metric_table.METRIC_SPECS`): the
pipeline and the report read them from there, not from lists and label maps of their own."""

from __future__ import annotations

import pytest

from ilets.gridcommand import pipeline_config as PC
from ilets.gridcommand.experts import EXPERTS
from ilets.gridcommand.report import bound as B
from ilets.gridcommand.report import chapter as X
from ilets.gridcommand.report import drift as D
from ilets.gridcommand.report import results as R
from ilets.method_table import LEARNERS, METHOD_SPECS, methods
from ilets.metric_table import METRIC_SPECS, SCENARIO_SUMMARY_METRICS, metric_format, scenario_metrics

GRID_METHODS = methods("gridcommand")
#: every metric the scenario's report reads by name
REPORT_METRICS = tuple(dict.fromkeys((*R.COMPARED, *R.LADDER_METRICS, *D.DRIFT_METRICS, *B.BOUND_METRICS)))


def test_the_grid_rows_are_the_pipeline_methods_and_leave_the_paper_learners_alone():
    assert PC.LEARNED == GRID_METHODS == ("bc", "ppo", "bc+ppo", "bc+ppo+oail")
    assert PC.METHODS == EXPERTS + GRID_METHODS
    assert LEARNERS == ("drl", "drl+", "ilets-", "ilets") and not set(GRID_METHODS) & set(LEARNERS)
    assert not set(GRID_METHODS) & set(EXPERTS)
    assert PC.FROZEN == "bc" and PC.CLONED == ("bc", "bc+ppo", "bc+ppo+oail")
    assert PC.ONLINE == ("ppo", "bc+ppo", "bc+ppo+oail") and PC.CORRECTED == ("bc+ppo+oail",)


@pytest.mark.parametrize("method", GRID_METHODS)
def test_every_grid_method_row_is_one_the_pipeline_runs_as_its_row_says(method):
    from ilets.gridcommand.config import GridCommandConfig
    from ilets.gridcommand.experiment import ExperimentProfile
    from ilets.gridcommand.online import online_pass
    from ilets.gridcommand.study.scenario import GridCommandScenario

    spec = METHOD_SPECS[method]
    assert PC.check_method(method) == method and method in GridCommandScenario().method_names()
    assert ExperimentProfile(methods=(method,)).validate().methods == (method,)
    assert spec.label and R.method_label(method) == spec.label and X.chapter_name(method) == (spec.long or spec.label)
    # the online pass takes the rows with an online pass, and asks those with a clone for it
    if not spec.online:
        with pytest.raises(ValueError, match="for an online pass"):
            online_pass(method, GridCommandConfig(), PC.PipelineConfig(), 0)
    elif spec.oinpt:
        with pytest.raises(ValueError, match="needs the cloned policy"):
            online_pass(method, GridCommandConfig(), PC.PipelineConfig(), 0)


@pytest.mark.parametrize("metric", REPORT_METRICS)
def test_every_metric_the_report_reads_is_a_row_of_the_metric_table(metric):
    from ilets.gridcommand.study.scenario import COMMAND_METRICS

    spec = METRIC_SPECS[metric]
    assert "gridcommand" in spec.scenarios and metric in scenario_metrics("gridcommand")
    assert spec.higher_is_better is not None and spec.header and format(0.5, metric_format(metric, "gridcommand"))
    assert metric in COMMAND_METRICS  # a column of the scenario's store


def test_the_scenario_prints_energy_its_own_way_and_summarises_its_own_metrics():
    assert metric_format("energy_kwh", "gridcommand") == ".4f" and metric_format("energy_kwh") == ".3g"
    assert R.COMPARED == SCENARIO_SUMMARY_METRICS["gridcommand"] != SCENARIO_SUMMARY_METRICS["cloud"]
    import pandas as pd

    rows = pd.DataFrame({"method": "bc", "servers": 50, "seed": [0, 1], "role": "train", "tracking_mae_rel": 0.25,
                         "in_band_fraction": 0.5, "misses_caused": 3.0, "energy_kwh": 0.123456})
    shown = R.comparison_display(R.comparison_table(rows, reps=20)).iloc[0]
    assert shown["method"] == METHOD_SPECS["bc"].label
    assert shown[METRIC_SPECS["energy_kwh"].header].startswith("0.1235")  # .4f, not the paper study's .3g
    assert shown[METRIC_SPECS["in_band_fraction"].header].startswith("50.0%")


def test_the_old_label_and_metric_maps_are_gone():
    for module, name in ((R, "LABELS"), (R, "METRICS"), (X, "NAMES"), (X, "LEARNERS")):
        assert not hasattr(module, name), f"{module.__name__}.{name}"
    assert not isinstance(B.BOUND_METRICS, dict)


def test_the_criteria_speak_the_one_verdict_vocabulary():
    from ilets.gridcommand.report import criteria as K
    from ilets.report.verdicts import FAILS, HOLDS, REVERSES, VERDICTS, verdict_of

    assert set(K.STATUSES) == set(VERDICTS) and set(K.STATUS_WORDS) == set(VERDICTS)
    parts = ([True, True], [True, False], [False, False], [])
    assert [K._overall(p) for p in parts] == [K.MET, K.IN_PART, K.NOT_MET, K.NOT_RUN]
    assert [K.STATUS_WORDS[K._overall(p)] for p in parts] == ["met", "in part", "not met", "not run"]
    assert verdict_of([HOLDS, REVERSES]) == K.NOT_MET != verdict_of([HOLDS, FAILS])  # the claims' rule, one place
