"""The method table is the one place that says what each learning method adds to PPO."""

from __future__ import annotations

from ilets.config import HEURISTICS, METHODS
from ilets.method_table import LEARNERS, METHOD_LABELS, METHOD_SPECS, learners_with, method_label


def test_the_table_names_every_learning_method_once_in_order():
    assert METHODS == LEARNERS == ("drl", "drl+", "ilets-", "ilets")
    assert not set(LEARNERS) & set(HEURISTICS)


def test_components_and_labels():
    parts = {name: (s.oinpt, s.oail) for name, s in METHOD_SPECS.items()}
    assert parts == {"drl": (False, False), "drl+": (True, False), "ilets-": (False, True), "ilets": (True, True)}
    assert dict(METHOD_LABELS) == {"drl": "DRL", "drl+": "DRL+", "ilets-": "ILETS-", "ilets": "ILETS"}
    assert method_label("ilets") == "ILETS" and method_label("greedy-cost") == "greedy-cost"


def test_learners_by_component():
    assert learners_with(oinpt=True) == ("drl+", "ilets") and learners_with(oinpt=False) == ("drl", "ilets-")
    assert learners_with(oail=True) == ("ilets-", "ilets") and learners_with() == LEARNERS
    assert learners_with(oinpt=True, oail=False) == ("drl+",)
