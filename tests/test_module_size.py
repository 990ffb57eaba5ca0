"""No module of the package over 600 lines (DESIGN.md's budget), held here.

A module that outgrows it is split by concept (one concept per module), not let through: the
list of exceptions this test once kept is empty and gone.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET = 600


def test_no_module_is_over_the_budget():
    sizes = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines())
             for p in sorted((ROOT / "src" / "ilets").rglob("*.py"))}
    over = {path: n for path, n in sizes.items() if n > BUDGET}
    assert not over, f"modules over {BUDGET} lines (split them by concept): {over}"
