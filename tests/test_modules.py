"""Every module of src/ilets imports, and the coverage check (tests/module_coverage.py) judges right.

``make test-fast`` runs this file, so each module at least imports in the fast tests; that each
one also *runs* there (a function of it called) is what ``make coverage`` checks.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import ilets
from module_coverage import PACKAGE, functions, judge, module_name  # tests/ is on the path


def _all_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(ilets.__path__, "ilets."))


def test_every_module_of_the_package_imports():
    found = _all_modules()
    on_disk = sorted(module_name(p) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)
    assert set(found) == set(on_disk), "pkgutil and the files disagree: a folder without __init__.py?"
    failed = {}
    for name in found:
        try:
            importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 - every failure is listed
            failed[name] = f"{type(err).__name__}: {err}"
    assert not failed, failed


SOURCE = '''
import numba

CONSTANT = 1


def plain(x):
    y = x + 1
    return y


class Thing:
    def method(self):
        def inner():
            return 2
        return inner()


@numba.njit(cache=True)
def kernel(x):
    return x * 2
'''


def test_functions_lists_bodies_and_counts_compiled_ones():
    found = functions(SOURCE)
    assert set(found.bodies) == {"plain", "Thing.method", "Thing.method.inner"}
    assert found.bodies["plain"] == {8, 9}
    assert found.bodies["Thing.method.inner"] == {15} and found.bodies["Thing.method"] == {14, 15, 16}
    assert found.compiled == 1


@pytest.mark.parametrize("executed,verdict", [(None, "NOT IMPORTED"), ({2, 4, 7, 12, 13, 19}, "NO FUNCTION RAN"),
                                              ({2, 4, 7, 12, 13, 19, 15}, "ok")])
def test_a_module_is_covered_only_once_one_of_its_functions_ran(executed, verdict):
    record = judge("ilets.made_up", SOURCE, executed, 10, len(executed or ()))
    assert record.verdict == verdict and record.ok == (verdict == "ok")


def test_modules_without_python_functions_are_covered_by_their_import():
    compiled = "from numba import njit\n\n@njit\ndef k(x):\n    return x\n"
    assert judge("k", compiled, {1, 3}, 2, 2).verdict == "compiled"
    assert judge("d", '"""Data files."""\n', {1}, 1, 1).verdict == "imported (no functions)"
    assert not judge("d", '"""Data files."""\n', None, 0, 0).ok


def test_module_names_and_the_package_folder():
    assert PACKAGE == Path(ilets.__file__).resolve().parent
    assert module_name(PACKAGE / "study" / "grid.py") == "ilets.study.grid"
    assert module_name(PACKAGE / "report" / "__init__.py") == "ilets.report"
