"""The package's layers are one-directional: no import cycle, no lower layer imports a higher one.

Imports are read with :mod:`ast` from every module under ``src/ilets`` (nothing is
imported), including imports inside functions and ``TYPE_CHECKING`` blocks: a lazy or
type-only import is still a dependency, and a lazy one is how cycles usually hide.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "ilets"

#: The scenario packages (plug-ins); every other module of the package is the core.
SCENARIO_PACKAGES: tuple[str, ...] = ("ilets.gridcommand",)
#: The root package: as an entry it places only its own ``__init__``, so every module directly
#: under ``ilets`` has to be listed by name (a new one in no layer fails the test below).
ROOT = "ilets"
#: The layers, lowest first; a module may import its own layer and the ones before it.
#: Each entry is a module or a subpackage (its modules and subpackages); :data:`ROOT` is only itself.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", (ROOT, "ilets.cell_pack", "ilets.config", "ilets.files", "ilets.host", "ilets.numerics", "ilets.random_state",
              "ilets.lifecycle", "ilets.method_table", "ilets.expert_table", "ilets.metric_table", "ilets.configs",
              "ilets.data")),
    ("workloads", ("ilets.workloads",)),
    ("simulator", ("ilets.simulator",)),
    ("agents", ("ilets.agents",)),
    ("study", ("ilets.study",)),
    ("report", ("ilets.report",)),
    # a scenario is a plug-in above the study and the report it uses (the study finds it by
    # import path, :data:`ilets.study.scenario.SCENARIOS`): the core never imports it
    ("scenarios", SCENARIO_PACKAGES),
)


def module_name(path: Path) -> str:
    """``src/ilets/a/b.py`` -> ``ilets.a.b``; a package's ``__init__.py`` is the package."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def raw_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Dotted names ``name`` imports, relative imports resolved, before mapping to modules."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: climb from this module's package
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports (resolving relative imports and
    ``from ilets import trace``, which names a module, not an attribute)."""
    found = raw_imports(name, path, known)
    resolved = set()
    for target in found:
        # ``import ilets.a.b`` depends on ilets.a.b (the closest known module)
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target.split(".")[0] == "ilets" and target != name:
            resolved.add(target)
    return resolved


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    mods = modules()
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path ``[a, b, ..., a]``, or None when the graph is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def covers(entry: str, module: str) -> bool:
    """Whether a :data:`LAYERS` entry places ``module``: the entry itself, or a module inside it
    (the root package places only itself)."""
    return module == entry or (entry != ROOT and module.startswith(entry + "."))


def layer_of(module: str) -> int:
    """Index of the layer holding ``module`` (the longest matching entry wins), -1 for none."""
    best, index = "", -1
    for i, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            if covers(entry, module) and len(entry) > len(best):
                best, index = entry, i
    return index


def test_a_module_nobody_listed_is_in_no_layer():
    # the root package's entry used to match every module, so the check below could not fail
    names = [name for name, _ in LAYERS]
    assert layer_of("ilets.brand_new_module") == -1
    assert layer_of("ilets") == names.index("base") and layer_of("ilets.host") == names.index("base")
    assert layer_of("ilets.agents.brand_new_module") == names.index("agents")
    assert layer_of("ilets.configs.anything") == names.index("base")


def test_the_checker_finds_a_cycle_and_accepts_a_chain():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_relative_and_package_imports_are_resolved(tmp_path):
    pkg = tmp_path / "ilets" / "agents"
    pkg.mkdir(parents=True)
    (pkg / "env.py").write_text("from . import observation\nfrom ..simulator import cloud\nfrom ilets import ENV_ID\n")
    known = {"ilets", "ilets.agents", "ilets.agents.env", "ilets.agents.observation", "ilets.simulator",
             "ilets.simulator.cloud"}
    assert imports_of("ilets.agents.env", pkg / "env.py", known) == {
        "ilets.agents.observation", "ilets.simulator.cloud", "ilets"}


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in modules() if layer_of(m) < 0)
    assert not unplaced, f"modules in no layer of tests/test_layers.py LAYERS: {unplaced}"


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_import_graph_has_no_cycle(graph):
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_module_imports_a_higher_layer(module, graph):
    mine = layer_of(module)
    upward = sorted(dep for dep in graph[module] if layer_of(dep) > mine)
    names = [name for name, _ in LAYERS]
    assert not upward, (f"{module} (layer {names[mine]}) imports higher layers: "
                        + ", ".join(f"{d} ({names[layer_of(d)]})" for d in upward))


def test_the_readme_architecture_table_lists_exactly_the_modules():
    """README's architecture table names every module of the tree, and no module that is gone."""
    text = (SRC.parent / "README.md").read_text()
    section = text[text.index("## Architecture"):]
    section = section[:section.index("\n## ", 1)]
    listed = {name for line in section.splitlines() if line.startswith("| `ilets.")
              for name in re.findall(r"`(ilets[\w.]*)`", line.split("|")[1])}
    packages = {m for m, p in modules().items() if p.name == "__init__.py"}
    assert listed == set(modules()) - packages


# --- the core imports no scenario -------------------------------------------------------------

#: Calls that import a module named by a string (``importlib.import_module("ilets.x")``).
IMPORTING_CALLS = frozenset({"import_module", "__import__"})


def in_scenario(dotted: str) -> bool:
    """Whether ``dotted`` is a scenario package or inside one."""
    return any(dotted == p or dotted.startswith(p + ".") for p in SCENARIO_PACKAGES)


def scenario_imports(name: str, path: Path) -> list[tuple[int, str]]:
    """``(line, what)`` for every place module ``name`` reaches a scenario package: an
    ``import`` or ``from ... import`` anywhere (a function body, a ``TYPE_CHECKING`` block;
    relative imports resolved), and an ``import_module``/``__import__`` call on a string
    literal. A scenario's import path kept as data (the registry's ``"module:Class"``) is no
    import: the study resolves it when the scenario is asked for."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in IMPORTING_CALLS:
                targets = [node.args[0].value]
        hits = [t for t in targets if in_scenario(t)]
        if hits:  # the most specific name the node reaches
            found.append((node.lineno, max(hits, key=len)))
    return sorted(found)


def test_the_scenario_checker_finds_every_kind_of_import(tmp_path):
    source = ("import json\nfrom ilets.study import grid\n"
              "def f():\n    from ilets.gridcommand.study import scenario\n"
              "def g():\n    import importlib\n    return importlib.import_module('ilets.gridcommand.env')\n"
              "from ilets import gridcommand\nimport ilets.gridcommand.report.results as R\n"
              "from ..gridcommand import env\n"
              "TABLE = {'gridcommand': 'ilets.gridcommand.study.scenario:GridCommandScenario'}\n")
    path = tmp_path / "core.py"
    path.write_text(source)
    assert scenario_imports("ilets.study.core", path) == [
        (4, "ilets.gridcommand.study.scenario"), (7, "ilets.gridcommand.env"), (8, "ilets.gridcommand"),
        (9, "ilets.gridcommand.report.results"), (10, "ilets.gridcommand.env")]


def test_the_core_imports_no_scenario():
    """The core (study, report, agents, config, simulator, workloads and the top-level modules)
    imports no scenario package, not even inside a function: a scenario registers by import
    path and the core asks it through :class:`ilets.study.scenario.Scenario`."""
    core = {name: path for name, path in modules().items() if not in_scenario(name)}
    assert "ilets.study.scenario" in core and "ilets.report.headline" in core
    found = [f"{path.relative_to(SRC.parent)}:{line}: {name} imports {target}"
             for name, path in sorted(core.items()) for line, target in scenario_imports(name, path)]
    assert not found, "the core reaches a scenario package:\n  " + "\n  ".join(found)
