"""The measures the study reports, as one table: how each is named, printed and read.

Modelled on :mod:`ilets.method_table`: the report's label maps, formats and directions are
read from :data:`METRIC_SPECS` instead of being typed again in each module and chapter, so a
new measure is one row here.

The rows: the per-cell measures ``avg_response_s`` (lower is better), ``energy_kwh`` (lower),
``success_rate`` (higher) and ``mean_reward`` (higher); the curve measures ``cum_reward``
(higher), ``convergence_decisions`` and ``mad`` (oscillation; both lower).
``reward``, ``response`` and ``success`` are the learning curves' windowed columns.

The grid-command scenario's measures are rows too (their ``scenarios`` name it;
:data:`ilets.gridcommand.study.scenario.COMMAND_METRICS` is its store's columns):
``tracking_mae_rel`` (lower), ``in_band_fraction`` (higher), ``misses_caused`` (lower) and
``episode_reward`` (higher); ``energy_kwh`` is shared, printed there with a format of its own
(:attr:`MetricSpec.formats`). :func:`scenario_metrics` lists one scenario's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class MetricSpec:
    """How one measure is named, printed and compared."""

    short: str  #: in a comparison's name ("DRL+ vs DRL: response")
    label: str  #: in prose and table headers without a unit ("response time")
    long: str  #: in a sentence that names it once ("average response time")
    higher_is_better: bool | None  #: the direction of "better"; None: the measure has none
    header: str  #: a table header with its unit ("response time (s)")
    fmt: str  #: format spec of one value in a table
    decimals: int | None = None  #: decimals of a summary table (None: four significant figures)
    multiplier: float = 1.0  #: factor for display (100 for a share shown in percent)
    #: the scenarios whose report reads it (:data:`ilets.study.scenario.SCENARIOS`' names)
    scenarios: tuple[str, ...] = ("cloud",)
    #: a scenario's own format spec, where it prints the measure otherwise than :attr:`fmt`
    formats: Mapping[str, str] = field(default_factory=dict)


#: The measures by the name of their column in the results store or curves table.
METRIC_SPECS: MappingProxyType[str, MetricSpec] = MappingProxyType({
    "avg_response_s": MetricSpec("response", "response time", "average response time", False, "response time (s)",
                                 ".2f"),
    "energy_kwh": MetricSpec("energy", "energy", "energy", False, "energy (kWh)", ".3g",
                             scenarios=("cloud", "gridcommand"), formats={"gridcommand": ".4f"}),
    "success_rate": MetricSpec("success", "success rate", "success rate", True, "success rate (%)", ".1%",
                               decimals=1, multiplier=100.0),
    "mean_reward": MetricSpec("reward", "mean reward", "mean reward", True, "mean reward", ".3f"),
    "reward": MetricSpec("reward", "reward", "reward", True, "reward", ".3f"),
    "response": MetricSpec("response", "response", "response", False, "response (s)", ".2f"),
    "success": MetricSpec("success", "success", "success", True, "success", ".1%"),
    "cum_reward": MetricSpec("cumulative reward", "cumulative reward", "cumulative reward", True,
                             "cumulative reward", ",.1f"),
    "convergence_decisions": MetricSpec("convergence", "decisions to converge", "decisions to converge", False,
                                        "decisions to converge", ",.0f"),
    "mad": MetricSpec("oscillation", "oscillation", "oscillation", False, "oscillation", ".3g"),
    # the grid-command scenario's (its comparison table, the ladder's bound, drift)
    "tracking_mae_rel": MetricSpec("tracking error", "tracking error", "tracking error", False,
                                   "tracking error (share of the requested change)", ".3f",
                                   scenarios=("gridcommand",)),
    "in_band_fraction": MetricSpec("time in band", "time in band", "time in band", True, "time in band", ".1%",
                                   scenarios=("gridcommand",)),
    "misses_caused": MetricSpec("misses caused", "deadline misses caused", "deadline misses caused", False,
                                "deadline misses caused (vs baseline)", ".0f", scenarios=("gridcommand",)),
    "episode_reward": MetricSpec("total reward", "total reward", "total reward", True, "total reward", ".1f",
                                 scenarios=("gridcommand",)),
})

#: The per-cell measures of each scenario's results store that its summary tables show, in
#: its book's order.
SCENARIO_SUMMARY_METRICS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType({
    "cloud": ("avg_response_s", "energy_kwh", "success_rate", "mean_reward"),
    "gridcommand": ("tracking_mae_rel", "in_band_fraction", "misses_caused", "energy_kwh"),
})
#: The paper study's summary measures (:data:`SCENARIO_SUMMARY_METRICS`' ``"cloud"``).
SUMMARY_METRICS = SCENARIO_SUMMARY_METRICS["cloud"]


def scenario_metrics(scenario: str) -> tuple[str, ...]:
    """The measures ``scenario``'s report reads (:attr:`MetricSpec.scenarios`), in table order."""
    return tuple(k for k, m in METRIC_SPECS.items() if scenario in m.scenarios)


def metric_format(name: str, scenario: str = "cloud") -> str:
    """The format spec ``scenario`` prints ``name`` with: its own (:attr:`MetricSpec.formats`),
    else the measure's."""
    spec = METRIC_SPECS[name]
    return spec.formats.get(scenario, spec.fmt)


def directions() -> dict[str, bool]:
    """``name -> higher is better`` of every measure with a direction."""
    return {k: m.higher_is_better for k, m in METRIC_SPECS.items() if m.higher_is_better is not None}


def names(field: str, metrics=None) -> dict[str, str]:
    """``name -> `` one naming field (``short``, ``label``, ``long`` or ``header``) of ``metrics``
    (default: every measure)."""
    return {k: getattr(METRIC_SPECS[k], field) for k in (metrics or METRIC_SPECS)}


def summary_columns(metrics=SUMMARY_METRICS) -> dict[str, tuple[str, int | None, float]]:
    """``name -> (header, decimals, multiplier)``, the columns of
    :func:`ilets.report.plots.summary_display`."""
    return {k: (METRIC_SPECS[k].header, METRIC_SPECS[k].decimals, METRIC_SPECS[k].multiplier) for k in metrics}


def formats(metrics=None, scenario: str = "cloud") -> dict[str, str]:
    """``name -> format spec`` of ``metrics`` (default: every measure) as ``scenario`` prints them
    (:func:`metric_format`)."""
    return {k: metric_format(k, scenario) for k in (metrics or METRIC_SPECS)}
