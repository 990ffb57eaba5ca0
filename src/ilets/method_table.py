"""The four learning methods as one table: what each adds to PPO and how it is printed.

=========  ===========  ==========  ==========================================
name       label        ``oinpt``   ``oail``
=========  ===========  ==========  ==========================================
``drl``    DRL          no          no    (plain maskable PPO)
``drl+``   DRL+         yes         no    (PPO pre-trained from demonstrations)
``ilets-`` ILETS-       no          yes   (PPO with online imitation)
``ilets``  ILETS        yes         yes   (both: the paper's method)
=========  ===========  ==========  ==========================================

Code asks the table (``METHOD_SPECS[name].oail``) instead of testing names, so a new
variant is one row here. Heuristics have no row: they are plain policies
(:data:`ilets.config.HEURISTICS`) and print under their own names.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class MethodSpec:
    """What a learning method adds to PPO, and its printed label."""

    label: str  #: how tables, figures and prose name it
    oinpt: bool  #: starts from behaviour cloning (and critic pre-training) on expert demonstrations
    oail: bool  #: imitates GA/PSO emulators online while it learns


#: The learning methods by configuration name, in the study's order.
METHOD_SPECS: MappingProxyType[str, MethodSpec] = MappingProxyType({
    "drl": MethodSpec("DRL", oinpt=False, oail=False),
    "drl+": MethodSpec("DRL+", oinpt=True, oail=False),
    "ilets-": MethodSpec("ILETS-", oinpt=False, oail=True),
    "ilets": MethodSpec("ILETS", oinpt=True, oail=True),
})

#: Names of the learning methods, in the study's order.
LEARNERS: tuple[str, ...] = tuple(METHOD_SPECS)

#: Printed label of each learning method (heuristics print under their own names).
METHOD_LABELS: MappingProxyType[str, str] = MappingProxyType({name: s.label for name, s in METHOD_SPECS.items()})


def learners_with(*, oinpt: bool | None = None, oail: bool | None = None) -> tuple[str, ...]:
    """The learning methods (in table order) that have, or lack, OINPT and OAIL (None: either)."""
    return tuple(name for name, s in METHOD_SPECS.items()
                 if (oinpt is None or s.oinpt == oinpt) and (oail is None or s.oail == oail))


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
    spec = METHOD_SPECS.get(method)
    if spec is None:
        return section not in ("observation", "ppo", "experts", "oinpt", "oail")
    return {"oinpt": spec.oinpt, "oail": spec.oail, "experts": spec.oinpt or spec.oail}.get(section, True)
