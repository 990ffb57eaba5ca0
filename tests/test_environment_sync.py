"""environment.yml (conda users) describes the same environment as the pip lock.

requirements.in lists the direct dependencies, requirements.lock pins the whole tested set
(``make env`` installs it), pyproject.toml states the ranges the package accepts, and
environment.yml repeats the direct pins for conda. Conda is not available on the project's
machines, so this test is what keeps environment.yml honest.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _requirement_lines(path: Path) -> list[str]:
    lines = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            lines.append(line)
    return lines


def _direct() -> dict[str, Requirement]:
    reqs = [Requirement(line) for line in _requirement_lines(ROOT / "requirements.in")]
    return {canonicalize_name(r.name): r for r in reqs}


def _lock() -> dict[str, Version]:
    out = {}
    for line in _requirement_lines(ROOT / "requirements.lock"):
        req = Requirement(line)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"requirements.lock: {line!r} is not an exact pin"
        out[canonicalize_name(req.name)] = Version(specs[0].version)
    return out


def _environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def _conda_and_pip(env: dict) -> tuple[list[str], list[str]]:
    conda, pip = [], None
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            assert set(dep) == {"pip"}, f"environment.yml: unexpected mapping in dependencies: {dep}"
            assert pip is None, "environment.yml: more than one pip section"
            pip = [str(x).strip() for x in dep["pip"]]
        else:
            conda.append(str(dep).strip())
    assert pip is not None, "environment.yml: no pip section"
    return conda, pip


def _env_pip_requirements(pip: list[str]) -> dict[str, Requirement]:
    out = {}
    for line in pip:
        if line.startswith("-"):
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement as err:  # pragma: no cover - reported as a failure
            pytest.fail(f"environment.yml pip entry {line!r} is not a requirement: {err}")
        name = canonicalize_name(req.name)
        assert name not in out, f"environment.yml: {req.name} listed twice"
        out[name] = req
    return out


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_lock_satisfies_requirements_in():
    lock = _lock()
    for name, req in _direct().items():
        assert name in lock, f"{req.name} (requirements.in) is missing from requirements.lock"
        assert req.specifier.contains(lock[name], prereleases=True), (
            f"requirements.lock pins {req.name}=={lock[name]}, outside requirements.in's {req.specifier}")


def test_environment_yml_pins_every_direct_dependency_at_the_lock_version():
    lock, direct = _lock(), _direct()
    _, pip = _conda_and_pip(_environment())
    env = _env_pip_requirements(pip)
    for name, req in direct.items():
        assert name in env, f"environment.yml lacks {req.name} (a direct dependency in requirements.in)"
        specs = list(env[name].specifier)
        assert len(specs) == 1 and specs[0].operator == "==", (
            f"environment.yml: {env[name]} is not an exact pin (expected {req.name}=={lock[name]})")
        assert Version(specs[0].version) == lock[name], (
            f"environment.yml pins {req.name}=={specs[0].version}, requirements.lock has {lock[name]}")
    extra = sorted(env[n].name for n in set(env) - set(direct))
    assert not extra, f"environment.yml pins packages that requirements.in does not list: {extra}"


def test_environment_yml_installs_the_project_and_cpu_torch():
    _, pip = _conda_and_pip(_environment())
    assert "-e ." in pip, "environment.yml's pip section should install this package (`-e .`)"
    assert "-r requirements.lock" in pip, "environment.yml's pip section should apply requirements.lock"
    assert f"--extra-index-url {CPU_INDEX}" in pip, "environment.yml should take torch's CPU build"


def test_pyproject_dependencies_are_satisfied_by_the_lock():
    lock = _lock()
    project = _pyproject()["project"]
    groups = {"dependencies": project["dependencies"],
              **{f"optional-dependencies.{k}": v for k, v in project.get("optional-dependencies", {}).items()}}
    problems = []
    for group, reqs in groups.items():
        for text in reqs:
            req = Requirement(text)
            name = canonicalize_name(req.name)
            if name not in lock:
                problems.append(f"{group}: {text} is not in requirements.lock")
            elif not req.specifier.contains(lock[name], prereleases=True):
                problems.append(f"{group}: {text} excludes the locked {req.name}=={lock[name]}")
    assert not problems, "pyproject.toml and requirements.lock disagree:\n" + "\n".join(problems)


def test_python_version_agrees():
    conda, _ = _conda_and_pip(_environment())
    pythons = [d for d in conda if re.match(r"python\b(?!-)", d)]
    assert len(pythons) == 1, f"environment.yml should list python once, found {pythons}"
    m = re.fullmatch(r"python\s*=\s*(\d+\.\d+)(\.\*)?", pythons[0])
    assert m, f"environment.yml: expected `python=X.Y`, got {pythons[0]!r}"
    env_minor = m.group(1)
    requires = SpecifierSet(_pyproject()["project"]["requires-python"])
    assert requires.contains(f"{env_minor}.0"), f"environment.yml python={env_minor} is outside requires-python {requires}"
    assert "pip" in conda, "environment.yml should install pip from conda"
    make_py = re.search(r"^PY\s*\?=\s*python(\d+\.\d+)\s*$", (ROOT / "Makefile").read_text(), re.M)
    assert make_py, "Makefile: expected `PY ?= pythonX.Y`"
    assert make_py.group(1) == env_minor, f"Makefile uses python{make_py.group(1)}, environment.yml python={env_minor}"
    head = (ROOT / "requirements.lock").read_text().splitlines()[0]
    lock_py = re.search(r"Python (\d+\.\d+)", head)
    if lock_py:
        assert lock_py.group(1) == env_minor, f"requirements.lock says Python {lock_py.group(1)}, environment.yml {env_minor}"
