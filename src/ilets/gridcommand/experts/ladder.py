"""The expert ladder by name (:data:`EXPERT_SPECS`: how each rung is built and printed) and
:func:`ladder_gaps`, which splits the gap between rungs into horizon and forecast error.

Adding a grid-command expert is its own module (a :class:`~ilets.gridcommand.experts.reading._Expert`
with ``act(env)``) plus one row of :data:`EXPERT_SPECS`; :data:`EXPERTS`, :func:`make_expert`,
the pipeline's teacher check and the report's labels follow from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping, cast

import numpy as np

from ilets.gridcommand.experts.hindsight import HindsightExpert
from ilets.gridcommand.experts.lyapunov import LyapunovExpert
from ilets.gridcommand.experts.mpc import MPCExpert
from ilets.gridcommand.experts.oracle import OracleExpert
from ilets.gridcommand.experts.power_cap import PowerCapExpert
from ilets.gridcommand.experts.reading import GridExpert
from ilets.gridcommand.experts.rule import RuleExpert
from ilets.gridcommand.experts.thermostat import ThermostatExpert


@dataclass(frozen=True)
class GridExpertSpec:
    """How a rung of the ladder is built and printed."""

    factory: Callable[..., GridExpert]  #: builds the expert from keyword options (those of its class)
    label: str  #: how tables, figures and prose name it


#: The rung whose only lever is the admission cap: it needs a scenario with ``cap_levels``.
CAP_RUNG = "cap"

#: The expert ladder by name, most informed first, then the tracking-first thermostat and the
#: power cap.
EXPERT_SPECS: MappingProxyType[str, GridExpertSpec] = MappingProxyType({
    "hindsight": GridExpertSpec(lambda **kw: HindsightExpert(make_expert, **kw), "hindsight (best rung, rolled out)"),
    "oracle": GridExpertSpec(lambda **kw: OracleExpert(**kw), "oracle (hindsight MILP)"),
    "mpc-perfect": GridExpertSpec(lambda **kw: MPCExpert(forecast="perfect", **kw), "MPC, perfect forecast"),
    "mpc-forecast": GridExpertSpec(lambda **kw: MPCExpert(forecast="ewma", **kw), "MPC, realistic forecast"),
    "lyapunov": GridExpertSpec(lambda **kw: LyapunovExpert(**kw), "Lyapunov"),
    "rule": GridExpertSpec(lambda **kw: RuleExpert(**kw), "rule"),
    # tracking first, beside the ladder: it reads no more than the rule, plus the sleep ledger
    "thermostat": GridExpertSpec(lambda **kw: ThermostatExpert(**kw), "thermostat (slot feedback)"),
    # the same, deadlines second: the envelope's own actions, to tell a reach from its price
    "thermostat-firm": GridExpertSpec(lambda **kw: ThermostatExpert(keep_deadlines=False, **kw),
                                      "thermostat, deadlines second"),
    # the operator's own lever: the baseline's scheduler under an admission cap set by feedback
    # (a scenario with cap_levels); it reads the rule's state less the baseline, plus the cap
    CAP_RUNG: GridExpertSpec(lambda **kw: PowerCapExpert(**kw), "power cap (slot feedback)"),
})

#: The expert ladder's names, most informed first.
EXPERTS: tuple[str, ...] = tuple(EXPERT_SPECS)

#: The rung that bounds the others by simulating them to the episode's end
#: (:mod:`~ilets.gridcommand.experts.hindsight`): its cost is whole episodes at switch times,
#: so the per-decision benchmark and the pipeline's teachers leave it out.
BOUND = "hindsight"
#: The rungs that decide from the current state (every rung but :data:`BOUND`).
DECIDING: tuple[str, ...] = tuple(n for n in EXPERTS if n != BOUND)

#: Printed label of each expert.
EXPERT_LABELS: MappingProxyType[str, str] = MappingProxyType({name: s.label for name, s in EXPERT_SPECS.items()})


def make_expert(name: str, **kw: Any) -> GridExpert:
    """An expert of the ladder by name (one of :data:`EXPERTS`); ``kw`` go to its class."""
    if name not in EXPERT_SPECS:
        raise ValueError(f"expert name: unknown {name!r}; expected one of {EXPERTS}")
    try:
        return EXPERT_SPECS[name].factory(**kw)
    except TypeError as err:
        raise ValueError(f"expert {name!r}: bad option ({err})") from None


#: What each rung reads of the environment (``expert.reads``, names of
#: :data:`~ilets.gridcommand.experts.reading.ENV_READS`), by name: built once at import (an
#: expert's construction runs nothing), so a report reads the declarations without making one.
EXPERT_READS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {name: tuple(make_expert(name).reads) for name in EXPERTS})

#: The rungs :func:`ladder_gaps` needs, in ladder order.
LADDER = ("oracle", "mpc-perfect", "mpc-forecast", "rule")


def ladder_gaps(scores: Mapping[str, float | Mapping[str, float]], higher_is_better: bool = False,
                reference: float | Mapping[str, float] | None = None) -> dict:
    """Gaps between the ladder's rungs, as the CityLearn MPC study splits them.

    ``scores[rung]`` is one score (or a mapping metric -> score, e.g. tracking error and SLA
    miss rate) per rung of :data:`LADDER`. With ``reference`` (the no-control score, or one
    per metric) scores are divided by it first, so no control is 1.0 as in that study.
    Returned per metric (or flat for scalar scores), every gap oriented so that > 0 means
    the lower rung is worse:

    * ``horizon_gap``: MPC with a perfect forecast minus the oracle (receding-horizon error),
    * ``forecast_gap``: MPC with the realistic forecast minus MPC with a perfect one,
    * ``rule_gap``: the rule minus the realistic MPC,
    * ``total_gap``: the rule minus the oracle (the sum of the three).
    """
    missing = [r for r in LADDER if r not in scores]
    if missing:
        raise ValueError(f"scores: missing rung(s) {missing}; expected all of {LADDER}")
    scalar = not isinstance(scores[LADDER[0]], Mapping)
    first = ["score"] if scalar else list(cast(Mapping[str, float], scores[LADDER[0]]))
    # every rung must have the first rung's form (a number, or a mapping of the same metrics)
    # before any is read as one
    for r in LADDER:
        form_differs = scalar == isinstance(scores[r], Mapping)
        if form_differs or (not scalar and set(cast(Mapping[str, float], scores[r])) != set(first)):
            raise ValueError(f"scores[{r!r}]: expected the same metrics as scores['oracle'] ({first})")
    per: dict[str, dict[str, float]] = {
        r: ({"score": cast(float, scores[r])} if scalar else dict(cast(Mapping[str, float], scores[r])))
        for r in LADDER}
    metrics = list(per[LADDER[0]])
    out: dict[str, dict[str, float]] = {}
    sign = -1.0 if higher_is_better else 1.0
    for m in metrics:
        ref = None if reference is None else (reference if not isinstance(reference, Mapping) else reference.get(m))
        if reference is not None and (ref is None or not (np.isfinite(ref) and ref != 0)):
            raise ValueError(f"reference[{m!r}]: expected a finite non-zero score, got {ref}")
        v = {}
        for r in LADDER:
            x = float(per[r][m])
            if not np.isfinite(x):
                raise ValueError(f"scores[{r!r}][{m!r}]: expected a finite score, got {x}")
            v[r] = x / ref if ref is not None else x
        out[m] = {"horizon_gap": sign * (v["mpc-perfect"] - v["oracle"]),
                  "forecast_gap": sign * (v["mpc-forecast"] - v["mpc-perfect"]),
                  "rule_gap": sign * (v["rule"] - v["mpc-forecast"]),
                  "total_gap": sign * (v["rule"] - v["oracle"]),
                  **{f"score[{r}]": v[r] for r in LADDER}}
    return out["score"] if scalar else out
