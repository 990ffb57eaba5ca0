"""The learning methods as one table: what each adds to PPO and how it is printed.

The paper study's four (scenario ``"cloud"``):

=========  ===========  ==========  ==========================================
name       label        ``oinpt``   ``oail``
=========  ===========  ==========  ==========================================
``drl``    DRL          no          no    (plain maskable PPO)
``drl+``   DRL+         yes         no    (PPO pre-trained from demonstrations)
``ilets-`` ILETS-       no          yes   (PPO with online imitation)
``ilets``  ILETS        yes         yes   (both: the paper's method)
=========  ===========  ==========  ==========================================

The grid-command scenario's four (scenario ``"gridcommand"``, :mod:`ilets.gridcommand.pipeline`)
are rows of the same table: ``bc`` (the clone of an expert, frozen: no online pass), ``ppo``
(PPO from scratch), ``bc+ppo`` (the clone, then PPO) and ``bc+ppo+oail`` (the same with the
teacher's online corrections). Their rows are data here, so this base module imports no
scenario package. Names are unique across scenarios (cell names and digests carry them).

Code asks the table (``METHOD_SPECS[name].oail``, :func:`methods`) instead of testing names,
so a new variant is one row here. Heuristics and the grid-command experts have no row: they
are plain policies (:data:`ilets.config.HEURISTICS`, :mod:`ilets.gridcommand.experts`) and
print under their own names or labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class MethodSpec:
    """What a learning method adds to PPO, and its printed label."""

    label: str  #: how tables, figures and prose name it
    #: starts from behaviour cloning on expert demonstrations (the paper's OINPT, with critic
    #: pre-training; grid-command: the clone of :func:`ilets.gridcommand.cloning.clone`)
    oinpt: bool
    #: imitates experts online while it learns (the paper's OAIL from GA/PSO emulators;
    #: grid-command: the teacher's corrections, :class:`ilets.gridcommand.online.GridCorrections`)
    oail: bool
    #: learns online with PPO over the scored pass; False: the clone frozen, scored as cloned
    online: bool = True
    #: the scenario whose cells run it (:data:`ilets.study.scenario.SCENARIOS`' names)
    scenario: str = "cloud"
    #: how a chapter's sentences name it, where that differs from :attr:`label`
    long: str = ""


#: The learning methods by configuration name, each scenario's in its study's order.
METHOD_SPECS: MappingProxyType[str, MethodSpec] = MappingProxyType({
    "drl": MethodSpec("DRL", oinpt=False, oail=False),
    "drl+": MethodSpec("DRL+", oinpt=True, oail=False),
    "ilets-": MethodSpec("ILETS-", oinpt=False, oail=True),
    "ilets": MethodSpec("ILETS", oinpt=True, oail=True),
    "bc": MethodSpec("BC (clone alone)", oinpt=True, oail=False, online=False, scenario="gridcommand",
                     long="clone (frozen)"),
    "ppo": MethodSpec("PPO (from scratch)", oinpt=False, oail=False, scenario="gridcommand", long="PPO from scratch"),
    "bc+ppo": MethodSpec("BC + PPO", oinpt=True, oail=False, scenario="gridcommand", long="clone + PPO"),
    "bc+ppo+oail": MethodSpec("BC + PPO + OAIL", oinpt=True, oail=True, scenario="gridcommand",
                              long="clone + PPO + corrections"),
})


def methods(scenario: str = "cloud", *, oinpt: bool | None = None, oail: bool | None = None,
            online: bool | None = None) -> tuple[str, ...]:
    """The learning methods of ``scenario`` (in table order) that have, or lack, a clone first
    (``oinpt``), online imitation (``oail``) and an online pass (``online``); None: either."""
    return tuple(name for name, s in METHOD_SPECS.items() if s.scenario == scenario
                 and all(want is None or getattr(s, fact) == want
                         for fact, want in (("oinpt", oinpt), ("oail", oail), ("online", online))))


#: Names of the paper study's learning methods, in the study's order.
LEARNERS: tuple[str, ...] = methods("cloud")

#: Printed label of each of the paper study's learning methods (heuristics print under their own names).
METHOD_LABELS: MappingProxyType[str, str] = MappingProxyType({name: METHOD_SPECS[name].label for name in LEARNERS})


def method_labels(scenario: str = "cloud") -> dict[str, str]:
    """``name -> label`` of ``scenario``'s learning methods, in table order."""
    return {name: METHOD_SPECS[name].label for name in methods(scenario)}


def method_long(name: str) -> str:
    """How a chapter's sentences name ``name``: its :attr:`MethodSpec.long`, else its label,
    else the name itself (a heuristic or an expert)."""
    spec = METHOD_SPECS.get(name)
    return name if spec is None else spec.long or spec.label


def learners_with(*, oinpt: bool | None = None, oail: bool | None = None) -> tuple[str, ...]:
    """The paper study's learning methods (in table order) that have, or lack, OINPT and OAIL
    (None: either)."""
    return methods("cloud", oinpt=oinpt, oail=oail)


def method_label(name: str) -> str:
    """The printed label of ``name``: a learner's label, or the name itself (heuristics)."""
    return METHOD_LABELS.get(name, name)


def reads_section(method: str, section: str) -> bool:
    """Whether a cell of ``method`` reads the ``RunConfig`` section ``section`` (a top-level
    field name: ``"oinpt"``, ``"oail"``, ``"experts"``, ``"ppo"``, ``"observation"``, ...).

    OINPT's settings are read only by the methods with OINPT, OAIL's only by those with OAIL,
    the experts' by either; a heuristic (any name not a learner) reads none of those nor the
    policy's (``ppo``, ``observation``). Every other section is read by every method. So a
    variant that changes only unread sections leaves a method's cells as they were (a test
    runs such pairs and compares their metrics), and its comparisons may use the main cells."""
    spec = METHOD_SPECS.get(method) if method in LEARNERS else None
    if spec is None:
        return section not in ("observation", "ppo", "experts", "oinpt", "oail")
    return {"oinpt": spec.oinpt, "oail": spec.oail, "experts": spec.oinpt or spec.oail}.get(section, True)
