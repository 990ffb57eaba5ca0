"""ILETS reproducible study: online cloud task scheduling with imitation-enabled deep RL.

The package is layered; a module imports only its own layer and the ones above it in this
list (``tests/test_layers.py`` checks it):

``ilets.config``, ``ilets.method_table``, ``ilets.lifecycle``
    the base: typed configuration, the method table, process-lifetime helpers.
``ilets.workloads``
    where tasks come from: the trace reader, the shard downloader, task tables.
``ilets.simulator``
    the data centre: the exact event-driven cloud, the cost formula, a SimPy twin.
``ilets.agents``
    who decides: observation blocks, the Gymnasium env, heuristics, GA/PSO experts, PPO,
    OINPT, OAIL and the four methods as one online pass.
``ilets.study``
    running it: profiles, one cell, the grid, the results store, the pilot, the CLI.
``ilets.report``
    what it shows: statistics, claim verdicts, findings, deviations, plots.

Every module used to sit directly under ``ilets``; those names still import, as aliases
of the same module objects (``ilets.oail is ilets.agents.oail``), so code, notebooks and
pickles that name ``ilets.<module>`` keep working.
"""

from __future__ import annotations

# First, before anything loads numpy or torch: portable floating-point kernels (see the module).
from ilets import numerics as _numerics

_numerics.pin()

import importlib  # noqa: E402
import importlib.abc  # noqa: E402
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
from types import MappingProxyType, ModuleType  # noqa: E402

__version__ = "0.1.0"

#: The Gymnasium id of the scheduling environment (:class:`ilets.agents.env.CloudSchedulingEnv`).
ENV_ID = "ilets/CloudScheduling-v0"
#: The Gymnasium id of the grid-command scenario (:class:`ilets.gridcommand.env.GridCommandEnv`).
GRID_ENV_ID = "ilets/GridCommand-v0"

#: Old top-level module name -> the layer package that holds it now.
MOVED: MappingProxyType[str, str] = MappingProxyType({
    **dict.fromkeys(("trace", "download", "workload"), "workloads"),
    **dict.fromkeys(("cloud", "objective", "twin"), "simulator"),
    **dict.fromkeys(("observation", "env", "policies", "experts", "expert_kernels", "ppo", "oinpt", "oail",
                     "methods"), "agents"),
    **dict.fromkeys(("profiles", "run", "grid", "results", "cli", "pilot", "shipping", "latency",
                     "expert_tables", "verify"), "study"),
    **dict.fromkeys(("stats", "verdicts", "findings", "deviations", "plots", "events", "report_context",
                     "calibration"), "report"),
})


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolve ``ilets.<old>`` to the module at ``ilets.<layer>.<old>`` (one object, two names).

    A plain re-exporting module would give every class two identities (``ilets.oail.X`` and
    ``ilets.agents.oail.X``), which breaks pickles, ``isinstance`` and monkeypatching; here
    the import system binds the old name to the very module object of the new one.
    """

    def find_spec(self, fullname: str, path=None, target=None) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.partition(".")
        if package != __name__ or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(f"{__name__}.{MOVED[spec.name.partition('.')[2]]}."
                                         f"{spec.name.partition('.')[2]}")
        # the import system sets __spec__ on what we return; keep the real one to restore
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the module already ran under its new name; only undo the __spec__ overwrite
        module.__spec__ = module.__spec__.loader_state


def _install_aliases() -> None:
    """Put the alias finder first on ``sys.meta_path`` (once per interpreter)."""
    # by name, so that a reloaded ``ilets`` (a new class object) does not install a second one
    if not any(type(f).__qualname__ == "_MovedModules" and type(f).__module__ == __name__ for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedModules())


def register_env() -> None:
    """Register :data:`ENV_ID` and :data:`GRID_ENV_ID` with Gymnasium (idempotent).

    The entry point is a string, so registering imports neither the environment nor torch:
    ``import ilets`` is enough for ``gym.make(ENV_ID, ...)``, and the module loads on first use.
    """
    import gymnasium as gym

    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="ilets.agents.env:CloudSchedulingEnv")
    if GRID_ENV_ID not in gym.registry:
        gym.register(id=GRID_ENV_ID, entry_point="ilets.gridcommand.env:GridCommandEnv")


_install_aliases()
register_env()
