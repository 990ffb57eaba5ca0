"""Worlds as replicates: do the study's comparisons hold when the data centre changes with the seed?

Every cell of the main grids schedules one world: the fleet drawn with seed 0 and the one
designed event schedule; its seeds vary the policy only, so its intervals cover policy noise
alone. In the worlds grid (profile ``worlds``) seed ``s`` draws its own fleet (fleet seed
``s``) and moves every burst and trend knot by up to ``event_jitter_s``, and trains its
learner with policy seed ``s``. Methods compared at one seed share that world.

The intervals here are the study's one resampler (:func:`ilets.report.stats.seed_effect`,
paired by seed): on the worlds grid, resampling seeds resamples worlds, each carrying its
policy draw. That is the two-level (hierarchical) bootstrap of worlds and policy seeds with
one policy seed per world; with one seed per world the inner level has nothing to resample,
and the between-world spread already contains the policy noise. So one resampler gives both
columns: intervals over policy seeds in one world, and over worlds and policy seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ilets.config import HEURISTICS
from ilets.method_table import LEARNERS, METHOD_LABELS
from ilets.metric_table import METRIC_SPECS
from ilets.report import stats as S

#: what is compared in both designs: the imitation claim, a learner against the two best
#: one-line heuristics, and those two against each other
COMPARISONS: tuple[tuple[str, str], ...] = (("drl+", "drl"), ("drl+", "greedy-cost"), ("drl+", "earliest-finish"),
                                            ("earliest-finish", "greedy-cost"))
MEASURES = ("avg_response_s", "mean_reward", "energy_kwh")
#: the two designs, as the table names them
ONE_WORLD, WORLDS = "one world", "worlds"
COLUMNS = ["servers", "x", "y", "metric", "seeds_one_world", "seeds_worlds",
           "rel_pct_one_world", "ci_low_one_world", "ci_high_one_world", "verdict_one_world",
           "rel_pct_worlds", "ci_low_worlds", "ci_high_worlds", "verdict_worlds", "width_ratio", "holds"]


def family_cells(worlds: pd.DataFrame, family: str) -> pd.DataFrame:
    """One learner family's cells of a worlds grid with its heuristic cells (variant "").

    The flat learners are the grid's main cells; the per-server learners are its
    ``per-server`` variant, relabelled as main cells so they pair with the heuristics by seed."""
    if "method" not in worlds:
        return worlds
    heur = worlds[worlds["method"].isin(HEURISTICS) & (worlds["variant"] == "")]
    want = "" if family == "flat" else family
    learn = worlds[worlds["method"].isin(LEARNERS) & (worlds["variant"] == want)].assign(variant="")
    return pd.concat([learn, heur], ignore_index=True)


def worlds_table(one_world: pd.DataFrame, worlds: pd.DataFrame, comparisons: Sequence[tuple[str, str]] = COMPARISONS,
                 measures: Sequence[str] = MEASURES, reps: int = S.DEFAULT_REPS, seed: int = 0) -> pd.DataFrame:
    """Each comparison per fleet size and measure, judged in one world and over worlds.

    ``one_world`` and ``worlds`` are per-cell tables of one learner family with its heuristics
    (``method``, ``servers``, ``seed`` and the measures). Only the fleet sizes of ``worlds``
    are compared. Per design: the signed relative improvement of ``x`` over ``y`` in percent
    with its 95 % interval and the book's verdict (:func:`ilets.report.stats.compare`);
    ``width_ratio`` is the worlds interval's width over the one-world interval's; ``holds``
    is whether the verdict is the same in both designs."""
    if not len(worlds) or "servers" not in worlds:
        return pd.DataFrame(columns=COLUMNS)
    sizes = set(worlds["servers"])
    one_world = one_world[one_world["servers"].isin(sizes)]
    keys = ["servers", "x", "y", "metric"]
    parts = []
    for x, y in comparisons:
        sides = []
        for name, table in ((ONE_WORLD, one_world), (WORLDS, worlds)):
            c = S.compare(table, x, y, [m for m in measures if m in table], reps=reps, seed=seed)
            c = c[keys + ["n_x", "rel_pct", "rel_ci_low", "rel_ci_high", "verdict"]]
            sides.append(c.rename(columns={"n_x": f"seeds_{name.replace(' ', '_')}",
                                           **{k: f"{k.replace('rel_ci', 'ci')}_{name.replace(' ', '_')}"
                                              for k in ("rel_pct", "rel_ci_low", "rel_ci_high", "verdict")}}))
        parts.append(sides[0].merge(sides[1], on=keys, how="inner"))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    width = lambda d: out[f"ci_high_{d}"] - out[f"ci_low_{d}"]  # noqa: E731
    with np.errstate(divide="ignore", invalid="ignore"):
        out["width_ratio"] = width("worlds") / width("one_world")
    out["holds"] = out["verdict_one_world"] == out["verdict_worlds"]
    both = (out["verdict_one_world"] != "no data") & (out["verdict_worlds"] != "no data")
    return out[both][COLUMNS].reset_index(drop=True)


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`worlds_table` as the chapter shows it: one column per design, each cell the
    improvement in percent with its 95 % interval and verdict."""
    def cell(r: pd.Series, d: str) -> str:
        return (f"{r[f'rel_pct_{d}']:+.1f} [{r[f'ci_low_{d}']:+.1f}, {r[f'ci_high_{d}']:+.1f}] "
                f"{r[f'verdict_{d}']} (n={r[f'seeds_{d}']})")

    rows = [{"comparison": f"{METHOD_LABELS.get(r['x'], r['x'])} vs {METHOD_LABELS.get(r['y'], r['y'])}",
             "servers": r["servers"], "measure": METRIC_SPECS[r["metric"]].label,
             "one world (%)": cell(r, "one_world"), "over worlds (%)": cell(r, "worlds"),
             "width ratio": f"{r['width_ratio']:.1f}x"} for _, r in table.iterrows()]
    return pd.DataFrame(rows)


def findings_table(found: "WorldsFindings") -> pd.DataFrame:
    """Every family's :func:`display_table` in one frame, a ``learners`` column first (empty
    when no family has worlds results), so the chapter shows one table without a branch."""
    parts = [display_table(t).assign(learners=family) for family, t in found.tables.items() if len(t)]
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[["learners", *[c for c in out.columns if c != "learners"]]]


def _name(row: pd.Series) -> str:
    return (f"{METHOD_LABELS.get(row['x'], row['x'])} vs {METHOD_LABELS.get(row['y'], row['y'])} on "
            f"{METRIC_SPECS[row['metric']].label} at {row['servers']} servers")


def worlds_sentence(table: pd.DataFrame, family: str) -> str:
    """What changes when worlds are replicates, for one learner family, from :func:`worlds_table`."""
    if table.empty:
        return (f"No worlds results for the {family} learners yet: their comparisons are judged in one world "
                f"only (fleet seed 0, the designed events), so their intervals cover policy noise alone.")
    n, kept = len(table), int(table["holds"].sum())
    ratio = table["width_ratio"].replace([np.inf, -np.inf], np.nan).dropna()
    seeds = int(table["seeds_worlds"].min())
    text = (f"Over {seeds}+ worlds ({family} learners), {kept} of {n} comparisons keep the verdict they have in the "
            f"one world of the main grid")
    if len(ratio):
        text += f"; their intervals are a median {ratio.median():.1f}x as wide"
    changed = table[~table["holds"]]
    if len(changed):
        shown = [f"{_name(r)} ({r['verdict_one_world']} -> {r['verdict_worlds']})" for _, r in changed.iterrows()]
        text += ". Changed: " + "; ".join(shown)
    return text + "."


@dataclass(frozen=True, kw_only=True)
class WorldsFindings:
    """The worlds section of the results chapter: per learner family, its table and sentence."""

    tables: dict[str, pd.DataFrame]  #: family -> :func:`worlds_table`
    sentences: dict[str, str]  #: family -> :func:`worlds_sentence`


def chapter_findings(ctx, per_server: Path | None = None, worlds: Path | None = None) -> WorldsFindings:
    """Both families judged in one world (the faithful grid ``ctx`` and the per-server grid
    ``per_server``, default :func:`ilets.study.results.per_server_dir`) and over worlds (the
    worlds grid ``worlds``, default :func:`ilets.study.results.worlds_dir`)."""
    from ilets.report.heuristic_gap import family_metrics
    from ilets.study.results import has_store, load_metrics, per_server_dir, worlds_dir

    per_server = Path(per_server) if per_server is not None else per_server_dir()
    worlds = Path(worlds) if worlds is not None else worlds_dir()
    # every cell, variants included: the per-server learners are the grid's `per-server` variant,
    # which the loader's default (the main cells only) would drop (family_cells picks each family)
    grid = load_metrics(worlds, variant=None) if has_store(worlds) else pd.DataFrame()
    ps = load_metrics(per_server) if has_store(per_server) else ctx.metrics.iloc[0:0]
    one_world = {"flat": ctx.metrics, "per-server": family_metrics(ps, ctx.metrics)}
    tables = {f: worlds_table(one_world[f], family_cells(grid, f), reps=ctx.reps) for f in one_world}
    return WorldsFindings(tables=tables, sentences={f: worlds_sentence(t, f) for f, t in tables.items()})
