"""Chapter 11's finding and tables (ilets.report.findings.pilot) on hand-made pilot reports."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ilets.report import findings as F
from ilets.study.pilot import JointReport, PilotReport
from text_numbers import numbers_in


def _flat() -> PilotReport:
    table = pd.DataFrame({"method": ["drl", "drl", "drl+", "drl+"],
                          "setting": ["ppo.ent_coef", "ppo.ent_coef", "oinpt.max_demo_tasks", "oinpt.max_demo_tasks"],
                          "value": ["0.0", "0.01", "20000", "5000"], "variant": ["(default)", "ent", "(default)", "d"],
                          "cells": ["4 / 4", "4 / 4", "4 / 4", "3 / 4"], "mean_J": [1.4, 1.3, 2.0, 1.5],
                          "gain_vs_default": [0.0, 7.14, 0.0, 25.0], "chosen": ["", "chosen", "chosen", ""]})
    return PilotReport(table, ["ppo.ent_coef"], ["oinpt.max_demo_tasks"], {"ppo.ent_coef": 0.01}, 15, 16, "", "")


def _joint(chosen: str | None = "r2-00") -> JointReport:
    table = pd.DataFrame({"variant": ["r2-00", "rs-00", "rs-01"], "round": [2, 1, 1],
                          "settings": ["gamma 0.5, KL 1", "methods.yaml's PPO, no aid", "gamma 0"],
                          "mean_J": [1.06, 1.08, 1.05], "change": [0.0002, -0.04, np.nan],
                          "change_low": [-0.0037, -0.06, np.nan], "change_high": [0.004, -0.02, np.nan],
                          "keeps": [True, False, False], "chosen": [chosen is not None, False, False],
                          "round_one_choice": [False, False, True]})
    return JointReport(table, chosen, "")


def test_the_flat_table_has_one_row_per_setting_in_plain_words():
    shown = F.flat_display(_flat().table).set_index("setting")
    assert list(shown.index) == [F.SETTING_TEXT["ppo.ent_coef"], F.SETTING_TEXT["oinpt.max_demo_tasks"]]
    ent = shown.loc[F.SETTING_TEXT["ppo.ent_coef"]]
    assert numbers_in(ent["values tried (mean J)"]) == ["0.0", "1.40", "0.01", "1.30"]
    assert (ent["method"], ent["chosen"], ent["gain"], ent["cells"]) == ("DRL", "0.01", "+7.1%", "8 of 8")
    demos = shown.loc[F.SETTING_TEXT["oinpt.max_demo_tasks"]]
    assert numbers_in(demos["values tried (mean J)"]) == ["20,000", "2.00", "5,000", "1.50"]
    assert (demos["chosen"], demos["cells"]) == ("20,000", "7 of 8")


def test_the_joint_table_marks_each_rounds_choice_and_the_clones_kept():
    shown = F.joint_display(_joint().table).set_index("candidate")
    assert shown["chosen by"].to_dict() == {"r2-00": "round 2", "rs-00": "", "rs-01": "round 1"}
    assert shown["keeps its clone"].to_dict() == {"r2-00": "yes", "rs-00": "no", "rs-01": "no"}
    assert numbers_in(shown.loc["r2-00", "held-out change [95%]"]) == ["+0.02", "-0.37", "+0.40"]
    assert shown.loc["rs-01", "held-out change [95%]"] == "not measured"
    assert "methods.yaml" not in shown.loc["rs-00", "settings"]
    assert F.joint_display(pd.DataFrame()).empty


def test_the_lead_says_what_each_pilot_changed_and_chose():
    lead = F.pilot_lead(_flat(), _joint())
    # flat: 1 of 2 settings decided, 1 changed (entropy bonus to 0.01); per-server: 1 of 2 first-round
    # candidates below its clone (rs-01 has no held-out score), the choice +0.02 % [-0.37, +0.40]
    assert numbers_in(lead) == ["1", "2", "1", "0.01", "1", "2", "+0.02", "95", "-0.37", "+0.40"]
    assert F.SETTING_TEXT["ppo.ent_coef"] in lead
    unchosen = F.pilot_lead(_flat(), _joint(chosen=None))
    assert "+0.02" not in unchosen and "default PPO" in unchosen
