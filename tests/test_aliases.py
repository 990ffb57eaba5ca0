"""Old import paths (``ilets.<module>``) are the moved modules themselves, not copies."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

import pytest

import ilets
from ilets import MOVED


@pytest.mark.parametrize("name", sorted(MOVED))
def test_the_old_name_is_the_same_module_object(name):
    new = importlib.import_module(f"ilets.{MOVED[name]}.{name}")
    assert importlib.import_module(f"ilets.{name}") is new
    assert getattr(ilets, name) is new
    assert new.__name__ == new.__spec__.name == f"ilets.{MOVED[name]}.{name}"  # the real spec, kept


def test_from_import_and_pickles_naming_the_old_path_resolve_to_one_class():
    from ilets import env as old_env
    from ilets.agents import env
    from ilets.agents.observation import StateSpec

    assert old_env is env and env.StateSpec is StateSpec
    # a pickle written before the move names the class by its old module
    assert pickle.loads(b"cilets.env\nCloudSchedulingEnv\n.") is env.CloudSchedulingEnv
    assert pickle.loads(b"cilets.cloud\nFleet\n.") is importlib.import_module("ilets.simulator.cloud").Fleet
    spec = pickle.loads(pickle.dumps(StateSpec("rich")))
    assert type(spec) is StateSpec and spec == StateSpec("rich")


@pytest.mark.parametrize("first", ["old", "new"])
def test_a_fresh_interpreter_gets_one_module_whichever_name_comes_first(first):
    names = ["ilets.oail", "ilets.agents.oail"] if first == "old" else ["ilets.agents.oail", "ilets.oail"]
    code = ("import importlib, sys\n"
            f"a = importlib.import_module({names[0]!r}); b = importlib.import_module({names[1]!r})\n"
            "assert a is b, (a, b)\n"
            "assert sys.modules['ilets.oail'] is sys.modules['ilets.agents.oail']\n"
            "from ilets.cli import main\n"
            "from ilets.study.cli import main as new_main\n"
            "assert main is new_main\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_unknown_names_still_fail():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ilets.no_such_module")


def test_packaged_files_are_found_where_they_were():
    from ilets.study.profiles import load_profile
    from ilets.workloads.workload import cpu_quantile_table

    assert load_profile("smoke").name == "smoke"
    p, q = cpu_quantile_table()
    assert len(p) == len(q) > 100
