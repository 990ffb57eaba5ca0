"""Chapter 10's lead and tables (ilets.report.findings.reproduce) on hand-made verification records."""

from __future__ import annotations

import pandas as pd
from text_numbers import numbers_in

from ilets.report.findings import reproduce as FR


def _recorded():
    return pd.DataFrame({
        "results": ["shipped/paper", "shipped/paper", "shipped/quick"],
        "checked on": ["2026-12-01T13:42:14+00:00 UTC, x86_64",
                       "2026-12-02T01:49:26+00:00 UTC, AMD EPYC (family 26 model 2 stepping 1) x 2 cores",
                       "2026-12-04T15:25:28+00:00 UTC, Intel(R) Xeon(R) Processor x 2 cores"],
        "checked with": ["not recorded", "portable", "portable"], "reproduced": ["yes", "yes", "no"]})


def _kernels():
    return pd.DataFrame({"method": ["drl+", "drl+", "greedy-cost"], "variant": ["", "no-critic", ""],
                         "cells": [3, 1, 4], "identical": [0, 0, 4],
                         **{f"{m} {k}": v for m in ("response time", "energy", "success rate")
                            for k, v in (("mean %", [1.0, -3.0, 0.0]), ("largest %", [2.0, -5.0, 0.0]))}})


def test_the_summary_has_a_row_per_folder_with_its_days_vendors_and_kernels():
    t = FR.verification_summary(_recorded()).set_index("results")
    paper, quick = t.loc["shipped/paper"], t.loc["shipped/quick"]
    assert (paper["re-runs"], paper["reproduced exactly"], quick["reproduced exactly"]) == (2, 2, 0)
    assert paper["checked"] == "2026-12-01 to 2026-12-02" and quick["checked"] == "2026-12-04"
    assert paper["on"] == "CPU not named, AMD" and quick["on"] == "Intel"
    assert paper["kernels"] == "not recorded (1), portable (1)"
    assert FR.verification_summary(_recorded().iloc[0:0]).empty


def test_the_kernels_are_pooled_over_variants_per_method():
    t = FR.kernels_by_method(_kernels()).set_index("method")
    # DRL+: (3 x 1.0 + 1 x -3.0) / 4 = 0.00 on average, the largest change -5.0 (the variant's)
    assert (t.loc["DRL+", "cells"], t.loc["DRL+", "identical"]) == (4, 0)
    assert t.loc["DRL+", "response time %, mean (largest)"] == "+0.00 (-5.0)" and t.loc["greedy-cost", "identical"] == 4
    assert FR.kernels_by_method(_kernels().iloc[0:0]).empty


def test_the_lead_counts_the_checks_says_which_verdict_to_expect_and_what_the_kernels_did():
    lead = FR.reproduce_lead(_recorded(), _kernels())
    checks, verdicts, kernels = lead.split(". ")
    assert numbers_in(checks) == ["2", "3", "2"]  # reproduced of recorded, over 2 folders
    assert '"reproduced exactly"' in verdicts and '"agrees within the seed-to-seed spread"' in verdicts
    # 4 of 4 heuristic cells identical, 0 of 4 learner cells; DRL+'s cell-weighted mean response-time change
    # is 0.00 %, the only learner's, so the range is 0.00 to 0.00
    assert numbers_in(kernels) == ["4", "4", "0", "4", "0.00", "0.00"]
    bare = FR.reproduce_lead(_recorded().iloc[0:0], _kernels().iloc[0:0])
    assert bare.count(". ") == 1 and "kernels" not in bare and numbers_in(bare) == []
