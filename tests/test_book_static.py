"""No experiment at book time: a chapter reads recorded results; it never simulates, plans,
trains, re-runs or times anything while the book builds.

The rule, checked with :mod:`ast` on the source of every ``notebooks/*.py`` chapter (nothing is
imported or executed; fast):

1. **No clock.** A chapter imports neither ``time`` nor ``timeit`` nor a profiler, and calls
   nothing named like a timer (:data:`TIMERS`, whatever the receiver).
2. **Only the readable names of an experiment module.** :data:`EXPERIMENT_MODULES` are the
   modules that run the scheduling world or measure it: the simulator, the agents (policies,
   environment, experts, learners), the grid-command scenario, and the study modules that run
   cells, grids, re-runs and measurements. From them a chapter may use only the names of
   :data:`READABLE` (constants, configuration classes, pure functions of recorded data, and
   ``make_fleet``, which draws a fleet's parameters from its settings and a seed: an input,
   no dynamics). This holds for ``from m import name`` and for ``x.name`` after
   ``import m as x`` / ``from package import m as x``.
3. **No running call.** Whatever the receiver (an expert object, a module re-exporting a
   function), a chapter calls nothing named in :data:`RUNNING` (``schedule``, ``drive``,
   ``run_method``, ``plan``, ``measure``, ...).
4. **Nor through the report layer.** The package functions a chapter calls live in
   ``ilets.report`` or a scenario's report part (:data:`SCENARIO_REPORTS`); no module there
   imports a name of :data:`RUNNING` or :data:`TIMERS`, nor ``time``/``timeit`` (so a chapter
   cannot run an experiment by calling a helper that does).

Building a chapter's *inputs* is not an experiment: ``ilets.workloads`` (a seeded workload
table, a fraction of a second at paper scale) is not an experiment module, and neither is
``ilets.config``. What the chapters quote that was measured (the fleet-load table, the
experts' optimality gaps and call costs, the decision latency) is recorded once by
``make artifacts`` (:mod:`ilets.study.book_measurements`) and read through
:mod:`ilets.report.measurements`.

No chapter is exempt: chapter 10 shows the verification recorded with each shipped folder
(``VERIFY.json``) and the command that repeats it, and re-runs nothing while the book builds.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))

#: Modules that run the scheduling world or measure it (each with its submodules).
EXPERIMENT_MODULES = (
    "ilets.simulator", "ilets.agents", "ilets.gridcommand",
    "ilets.study.run", "ilets.study.grid", "ilets.study.latency", "ilets.study.expert_tables",
    "ilets.study.book_measurements", "ilets.study.evaluate", "ilets.study.positive_control", "ilets.study.verify",
)
#: A scenario's report part (its chapter's numbers, tables and sentences): report modules,
#: pure functions of recorded results, though they live in the scenario's experiment package.
SCENARIO_REPORTS = ("ilets.gridcommand.report",)

#: The names a chapter may use from an experiment module: module -> {name: why it runs nothing}.
READABLE: dict[str, dict[str, str]] = {
    "ilets.simulator.cloud": {"make_fleet": "draws a fleet's parameters from its settings and a seed (an input)"},
    "ilets.agents.oinpt": {"HELDOUT_TASKS": "a constant"},
    "ilets.gridcommand.config": {"load_gridcommand_config": "reads a profile's settings"},
    "ilets.gridcommand.command": {"DRIFT_LOAD": "a constant"},
    "ilets.gridcommand.batch": {"batch_slack_s": "converts a setting's hours into the window's seconds"},
    "ilets.gridcommand.experts": {"EXPERTS": "the experts' names", "DECIDING": "the names of the rungs but the bound"},
    "ilets.gridcommand.pipeline_config": {"PipelineConfig": "a settings class"},
    "ilets.study.latency": {"PAPER_DECISION_MS": "the paper's figures", "summarise": "a function of recorded timings"},
    "ilets.study.expert_tables": {"gap_table": "a function of recorded gap rows"},
    "ilets.study.book_measurements": {"measurements_dir": "where the records are", "DEPENDS": "a constant"},
    "ilets.study.verify": {name: "reads recorded cells or reports, or words them" for name in (
        "verdict_table", "recorded_table", "numerics_sentence", "kernel_effects", "kernel_effects_sentence",
        "native_kernels_folder", "recorded_tables", "VERIFY_REPORT")},
}

#: Timer functions, by name (``time.perf_counter``, ``timeit.timeit``, ...).
TIMERS = frozenset({"perf_counter", "perf_counter_ns", "process_time", "process_time_ns", "monotonic", "monotonic_ns",
                    "thread_time", "thread_time_ns", "timeit", "default_timer"})
#: Modules a chapter may not import: clocks and profilers.
CLOCK_MODULES = frozenset({"time", "timeit", "cProfile", "profile", "pstats"})
#: Functions and methods that run the world, an expert, a learner, a cell or a measurement, by name.
RUNNING = frozenset({
    # the simulator and the environment (not Cloud.assign: DataFrame.assign shares its name; a
    # chapter cannot hold a Cloud without importing it, which rule 2 refuses)
    "schedule", "drive", "run_to_completion", "advance", "emulator_copy",
    # methods, heuristics, learners, experts
    "run_method", "run_heuristic", "run_learner", "decision_latency", "make_heuristic", "make_ppo", "learn",
    "predict", "make_expert", "plan", "plan_window", "exact_optimum", "small_case", "demonstrate", "online_pass",
    "cached_clone",
    # measurements
    "measure", "measured_latency", "load_table", "gap_cases", "timing_table", "paper_timing_table",
    "loaded_snapshots", "paper_snapshots", "workload_record", "experts_record", "decision_time_record",
    # cells, grids, re-runs
    "run_cell", "run_cell_status", "run_grid", "run_unit", "verify", "evaluate",
})


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of the source tree."""
    path = SRC.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _inside(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == m or module.startswith(m + ".") for m in packages)


def _experiment(module: str) -> bool:
    return _inside(module, EXPERIMENT_MODULES) and not _inside(module, SCENARIO_REPORTS)


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]`` (None unless the chain starts at a plain name)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *parts]
    return None


def _callee_name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def violations(source: str) -> list[str]:
    """What breaks the rule in one chapter's source, as ``"line N: ..."`` (empty when it reads only)."""
    tree = ast.parse(source)
    found: list[tuple[int, str, str]] = []  # (line, name, message)
    aliases: dict[str, str] = {}  # local name -> the module it is bound to

    def flag(node: ast.AST, name: str, message: str) -> None:
        found.append((getattr(node, "lineno", 0), name, message))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in CLOCK_MODULES:
                    flag(node, alias.name, f"imports the clock or profiler module {alias.name}")
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in CLOCK_MODULES:
                flag(node, node.module, f"imports from the clock or profiler module {node.module}")
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if _is_module(full):  # a module imported by name: its uses are checked below
                    aliases[alias.asname or alias.name] = full
                elif _experiment(node.module) and alias.name not in READABLE.get(node.module, {}):
                    flag(node, alias.name, f"imports {alias.name} from the experiment module {node.module}")
    # names used through a module bound above (x.name, a.b.c.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):  # a chain a.b.c is seen at each level; a finding counts once
            chain = _dotted(node)
            if not chain or chain[0] not in aliases:
                continue
            dotted = [*aliases[chain[0]].split("."), *chain[1:]]
            # the longest prefix that is a module, then the first name used from it
            for cut in range(len(dotted) - 1, 0, -1):
                module = ".".join(dotted[:cut])
                if _is_module(module):
                    name = dotted[cut]
                    if _experiment(module) and not _is_module(f"{module}.{name}") \
                            and name not in READABLE.get(module, {}):
                        flag(node, name, f"uses {name} of the experiment module {module}")
                    break
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _callee_name(node.func)
            if name in TIMERS:
                flag(node, name, f"calls the timer {name}")
            elif name in RUNNING:
                flag(node, name, f"calls {name}, which runs an experiment")
    out = sorted({(line, message) for line, _name, message in found})
    return [f"line {line}: {message}" for line, message in out]


# --- the checker itself ----------------------------------------------------------------------
@pytest.mark.parametrize("source, expected", [
    ("import time\nt = time.perf_counter()\n", ["imports the clock", "calls the timer perf_counter"]),
    ("from time import perf_counter\n", ["imports from the clock"]),
    ("from ilets.agents.experts import make_expert\nmake_expert('ga', c, r)\n",
     ["imports make_expert from the experiment module", "calls make_expert"]),
    ("from ilets.study import latency as L\nx = L.measure\n", ["uses measure of the experiment module ilets.study.latency"]),
    ("import ilets.study.expert_tables\nrows = ilets.study.expert_tables.gap_cases\n",
     ["uses gap_cases of the experiment module ilets.study.expert_tables"]),
    ("e = get()\ne.plan(cloud, window, rng)\n", ["calls plan, which runs an experiment"]),
    ("from ilets.report import findings as F\nF.measured_latency(run, (50,), 10, 5)\n", ["calls measured_latency"]),
    ("from ilets.simulator.cloud import Cloud\n", ["imports Cloud from the experiment module ilets.simulator.cloud"]),
])
def test_the_checker_finds_each_kind_of_experiment(source, expected):
    found = violations(source)
    assert len(found) == len(expected), found
    for message, part in zip(found, expected):
        assert part in message, (message, part)


def test_the_checker_accepts_reading():
    source = ("from ilets.study.latency import PAPER_DECISION_MS\nfrom ilets.simulator.cloud import make_fleet\n"
              "from ilets.report import measurements as MS\nfrom ilets.workloads.workload import synthetic_workload\n"
              "from ilets.study import verify as VF\nr = MS.of_context(ctx, 'experts')\nVF.recorded_table(out)\n"
              "fleet = make_fleet(cfg, 0)\nw = synthetic_workload(cfg, seed=0)\nnp.repeat(x, 2)\n")
    assert violations(source) == []


def test_a_live_verification_is_flagged_in_every_chapter():
    source = "from ilets.study import verify as VF\nVF.verify(out, cells, scratch)\n"
    assert len(violations(source)) == 2  # the use and the call


def test_every_readable_name_is_in_an_experiment_module_that_exists():
    for module in READABLE:
        assert _experiment(module) and _is_module(module), module


# --- the book -------------------------------------------------------------------------------
def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 10


@pytest.mark.parametrize("chapter", NOTEBOOKS, ids=lambda p: p.name)
def test_no_chapter_runs_an_experiment_at_book_time(chapter):
    found = violations(chapter.read_text())
    assert not found, (f"notebooks/{chapter.name} computes while the book builds (record it with `make artifacts`, "
                       f"ilets.study.book_measurements, and read it through ilets.report.measurements):\n  "
                       + "\n  ".join(found))


#: Every report module: the report layer and the scenarios' report parts.
REPORT_MODULES = sorted([*(SRC / "ilets" / "report").rglob("*.py"),
                         *(p for s in SCENARIO_REPORTS for p in SRC.joinpath(*s.split(".")).rglob("*.py"))])


def test_a_scenario_report_is_read_as_a_report_and_its_study_part_as_an_experiment():
    assert not _experiment("ilets.gridcommand.report.results") and _experiment("ilets.gridcommand.study.pilot")
    assert _experiment("ilets.gridcommand.env") and any("gridcommand" in str(p) for p in REPORT_MODULES)


@pytest.mark.parametrize("module", REPORT_MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_report_module_imports_an_experiment_or_a_clock(module):
    bad = []
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.split(".")[0] in CLOCK_MODULES]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            if (node.module or "").split(".")[0] in CLOCK_MODULES:
                bad.append(node.module)
            bad += [f"{node.module}.{a.name}" for a in node.names if a.name in RUNNING | TIMERS]
    assert not bad, f"{module.relative_to(SRC)} imports what runs an experiment or reads a clock: {bad}"
