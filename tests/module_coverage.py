"""Every module of src/ilets runs in the fast tests: the check behind ``make coverage``.

``make coverage`` runs the tests ``make test-fast`` runs (``pytest -m "not slow"``) under
coverage.py, child processes included (pyproject.toml's ``[tool.coverage.run]``), and then
this script reads the data and fails, naming them, if a module of ``src/ilets``

* was never imported, or
* has Python functions and none of them ran a single line (imported, never called).

Functions compiled by numba (``@njit``, ``@jit``, ...) run as machine code that coverage
cannot see: a module whose functions are all compiled is reported as ``compiled`` and is
checked through its callers (``ilets.simulator.cloud`` calls the start kernels, the experts
call theirs, and tests compare both against plain-Python references). A module with no
function at all (a package's ``__init__``, a data folder) is covered once it is imported.

Usage: ``python tests/module_coverage.py [DATA_FILE]`` (default ``.coverage``); prints one
line per module: statements run, functions run, verdict.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "ilets"
#: numba's compiling decorators: a function under one of them is never traced
COMPILING = {"njit", "jit", "vectorize", "guvectorize", "cfunc", "stencil", "generated_jit"}


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


@dataclass
class Functions:
    """The Python functions of one module: each one's body statement lines (nested bodies
    included), and how many functions are compiled by numba."""

    bodies: dict[str, set[int]]
    compiled: int


def functions(source: str) -> Functions:
    """Functions and methods of ``source`` (qualified names) with the first lines of the
    statements in their bodies, compiled functions left out and counted."""
    bodies: dict[str, set[int]] = {}
    compiled = 0

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal compiled
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                if any(_decorator_name(d) in COMPILING for d in child.decorator_list):
                    compiled += 1
                    continue
                bodies[name] = {s.lineno for stmt in child.body for s in ast.walk(stmt) if isinstance(s, ast.stmt)}
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return Functions(bodies, compiled)


@dataclass
class ModuleCoverage:
    module: str
    imported: bool
    statements: int
    statements_run: int
    functions: int
    functions_run: int
    compiled: int

    @property
    def verdict(self) -> str:
        if not self.imported:
            return "NOT IMPORTED"
        if self.functions and not self.functions_run:
            return "NO FUNCTION RAN"
        if not self.functions:
            return "compiled" if self.compiled else "imported (no functions)"
        return "ok"

    @property
    def ok(self) -> bool:
        return self.verdict not in ("NOT IMPORTED", "NO FUNCTION RAN")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def judge(name: str, source: str, executed: set[int] | None, statements: int, statements_run: int) -> ModuleCoverage:
    """One module's record from its source and executed lines (None: never imported)."""
    found = functions(source)
    ran = sum(1 for body in found.bodies.values() if executed and body & executed)
    return ModuleCoverage(name, executed is not None, statements, statements_run, len(found.bodies), ran, found.compiled)


def measure(data_file: Path) -> list[ModuleCoverage]:
    import coverage

    cov = coverage.Coverage(data_file=str(data_file))
    cov.load()
    data = cov.get_data()
    measured = {Path(f).resolve(): f for f in data.measured_files()}
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name, source, recorded = module_name(path), path.read_text(), measured.get(path.resolve())
        if recorded is None:
            out.append(judge(name, source, None, 0, 0))
            continue
        _, statements, _, missing, _ = cov.analysis2(recorded)
        out.append(judge(name, source, set(data.lines(recorded) or ()), len(statements), len(statements) - len(missing)))
    return out


def main(argv: list[str]) -> int:
    data_file = Path(argv[0]) if argv else ROOT / ".coverage"
    if not data_file.is_file():
        print(f"module_coverage: no coverage data at {data_file} (run `make coverage`)", file=sys.stderr)
        return 2
    rows = measure(data_file)
    width = max(len(r.module) for r in rows)
    print(f"{'module':<{width}}  statements run  functions run  verdict")
    for r in rows:
        share = f"{r.statements_run}/{r.statements}"
        funcs = f"{r.functions_run}/{r.functions}" + (f" (+{r.compiled} compiled)" if r.compiled else "")
        print(f"{r.module:<{width}}  {share:>14}  {funcs:>13}  {r.verdict}")
    bad = [r for r in rows if not r.ok]
    run = sum(r.statements_run for r in rows)
    total = sum(r.statements for r in rows if r.imported)
    print(f"\n{len(rows) - len(bad)} of {len(rows)} modules of src/ilets run in the fast tests "
          f"({run} of {total} statements, {100 * run / max(total, 1):.0f}%)")
    if bad:
        print("not covered by `make test-fast`: " + ", ".join(f"{r.module} ({r.verdict.lower()})" for r in bad),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
