"""Chapter 9's table of verdicts a variant changes: only the changed pairs, in plain words."""

from __future__ import annotations

import pandas as pd

from ilets.report import findings as F
from ilets.report.verdicts.claims import CLAIMS

COLS = ["claim", "verdict here", "variant", "choice it tests", "results", "verdict, our choice",
        "verdict, the variant's"]


def _table(rows):
    return pd.DataFrame(rows, columns=COLS)


def test_only_the_pairs_whose_verdict_moves_are_listed_with_the_claim_stated():
    table = _table([(1, "not reproduced", "`no-critic`", "Critic", "100 %", "not reproduced", "partly"),
                    (1, "not reproduced", "`heavy-load`", "Server speed", "100 %", "not reproduced", "not reproduced"),
                    (4, "not reproduced", "`oail-sync`", "Thread", "quick look", "partly", "not reproduced")])
    changes = F.verdict_changes(table)
    assert changes["choice it tests"].tolist() == ["Critic", "Thread"]
    assert changes["claim"].tolist() == [f"1. {CLAIMS[1]}", f"4. {CLAIMS[4]}"]
    assert changes[["our choice", "the variant's"]].values.tolist() == [["not reproduced", "partly"],
                                                                       ["partly", "not reproduced"]]
    assert "variant" not in changes  # no profile names on the page
    sentence = F.verdict_changes_sentence(table)
    assert "3 " in sentence and " two " in sentence


def test_no_pairs_give_an_empty_table():
    empty = _table([])
    assert F.verdict_changes(empty).empty
    assert " no " in F.verdict_changes_sentence(empty)
