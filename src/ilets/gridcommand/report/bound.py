"""The grid-command chapter's numbers on the ladder's bound: the hindsight rung beside every rung.

Read from one grid (``shipped/gridcommand-hindsight``, profile ``gridcommand-grid-hindsight``,
or its paper-scale twin :data:`PAPER_SHIPPED`): the grid's rungs, whose cells are the quick (or
full-window) grid's own (same settings digests), and the hindsight rung
(:mod:`ilets.gridcommand.experts.hindsight`), which follows, between switch times, the rung
whose simulated episode scores best on the episode's total reward. The bound
is checked, not assumed: :func:`bound_table` counts the episodes on which some rung scored
above it (none may), per regime and fleet size, and the chapter prints that count.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from ilets.gridcommand.experts import BOUND, EXPERTS
from ilets.gridcommand.pipeline_config import SCENARIO
from ilets.gridcommand.report.results import done_records, higher_is_better, load_results, method_label, rungs_display
from ilets.metric_table import METRIC_SPECS, metric_format

#: Where the book reads the shipped grid (relative to the repository root).
SHIPPED = Path("shipped") / "gridcommand-hindsight"
#: The same at the paper's scale (profile :data:`PAPER_PROFILE`): the full window's rung cells
#: (those of ``shipped/gridcommand-paper``, seeds of its oracle) and the bound over all of them,
#: the thermostat included.
PAPER_SHIPPED = Path("shipped") / "gridcommand-paper-hindsight"
PAPER_PROFILE = "gridcommand-grid-paper-hindsight"
#: The scored objective the bound maximises, then what the ladder's other tables show.
OBJECTIVE = "episode_reward"
#: (Rows of :data:`ilets.metric_table.METRIC_SPECS`: their short name, direction and format.)
BOUND_METRICS = (OBJECTIVE, "tracking_mae_rel", "misses_caused")


def _paired(table: pd.DataFrame) -> pd.DataFrame:
    """The rungs' rows on the (regime, fleet size, seed) episodes where the bound and every
    other rung present ran."""
    t = table[table["method"].isin(EXPERTS)]
    rungs = [m for m in EXPERTS if m in set(t["method"])]
    counts = t.groupby(["role", "servers", "seed"])["method"].nunique()
    full = counts[counts == len(rungs)].reset_index()[["role", "servers", "seed"]]
    return t.merge(full, on=["role", "servers", "seed"])


def bound_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per regime, fleet size and rung: the seed means of :data:`BOUND_METRICS` on the paired
    episodes, the episodes, and for the bound's row ``violations``: the episodes on which some
    rung's total reward was above the bound's (0 by construction; counted from the results)."""
    t = _paired(table)
    cols = ["role", "regime", "servers", "method", "seeds", *BOUND_METRICS, "violations"]
    if len(t) == 0 or BOUND not in set(t["method"]):
        return pd.DataFrame(columns=cols)
    rows = []
    for (role, servers), g in t.groupby(["role", "servers"], sort=False):
        wide = g.pivot_table(index="seed", columns="method", values=OBJECTIVE, aggfunc="first")
        others = wide.drop(columns=BOUND)
        violations = int((others.max(axis=1) > wide[BOUND]).sum())
        means = g.groupby("method")[list(BOUND_METRICS)].mean()
        for method in [m for m in EXPERTS if m in means.index]:
            rows.append({"role": role, "regime": g["regime"].iloc[0], "servers": servers, "method": method,
                         "seeds": len(wide), **means.loc[method].to_dict(),
                         "violations": violations if method == BOUND else np.nan})
    return pd.DataFrame(rows, columns=cols)


def bound_display(bound: pd.DataFrame) -> pd.DataFrame:
    """:func:`bound_table` for display: one row per regime, fleet size and rung."""
    return rungs_display(bound, {key: (METRIC_SPECS[key].short, metric_format(key, SCENARIO)) for key in BOUND_METRICS})


def top_rung(g: pd.DataFrame, metric: str) -> str:
    """The rung with the best seed mean of ``metric`` in one (regime, fleet size) group."""
    higher = higher_is_better([metric])[metric]
    return str(g.loc[g[metric].idxmax() if higher else g[metric].idxmin(), "method"])


def bound_sentence(bound: pd.DataFrame) -> str:
    """Whether the bound holds and tops the ladder on the scored objective, per regime and
    fleet size; where the MILP oracle is not the top of the other rungs, and on tracking
    error (which the bound does not optimise), which rung is lowest."""
    if len(bound) == 0:
        return "The hindsight rung's grid is not in these results."
    groups = list(bound.groupby(["regime", "servers"], sort=False))
    episodes = int(bound.loc[bound["method"] == BOUND, "seeds"].sum())
    violations = int(bound.loc[bound["method"] == BOUND, "violations"].sum())
    top = [f"{regime} at {servers}" for (regime, servers), g in groups if top_rung(g, OBJECTIVE) == BOUND]
    text = [f"On the episode's total reward, the scored objective, a rung scored above the hindsight rung on "
            f"{violations} of {episodes} (regime, fleet size, seed) episodes, and by the seed means the hindsight "
            f"rung is the top of the ladder in {len(top)} of {len(groups)} (regime, fleet size) pairs."]
    below = []
    for (regime, servers), g in groups:
        rest = g[g["method"] != BOUND]
        best = top_rung(rest, OBJECTIVE)
        if best != "oracle" and "oracle" in set(rest["method"]):
            below.append(f"{regime} at {servers} servers ({method_label(best)})")
    if below:
        text.append("Below it, the MILP oracle is not the best of the other rungs under " + "; ".join(below) + ".")
    lowest = Counter(top_rung(g, "tracking_mae_rel") for _, g in groups)
    said = ", ".join(f"{method_label(m)} in {n}" for m, n in lowest.most_common())
    text.append(f"On tracking error, which the hindsight rung does not optimise (the reward also prices energy, "
                f"waiting and missed deadlines), the lowest seed mean is {said} of the {len(groups)} pairs.")
    return " ".join(text)


def member_table(folder: Path | None) -> pd.DataFrame:
    """Per regime role and fleet size: the share of switch times at which the hindsight rung
    chose each member (from its cells' records, ``members[<regime>]``), and the episodes it
    simulated per scored episode."""
    rows = []
    for rec in done_records(folder):
        if rec["method"] != BOUND:
            continue
        for role, regime in rec["regimes"].items():
            members = rec["train"].get(f"members[{regime}]", [])
            rows += [{"role": role, "servers": rec["servers"], "member": m, "simulations":
                      rec["train"].get(f"simulations[{regime}]", np.nan) / max(len(members), 1)} for m in members]
    cols = ["role", "servers", "member", "share", "simulations_per_switch"]
    if not rows:
        return pd.DataFrame(columns=cols)
    t = pd.DataFrame(rows)
    share = t.groupby(["role", "servers"])["member"].value_counts(normalize=True).rename("share").reset_index()
    sims = t.groupby(["role", "servers"])["simulations"].mean().rename("simulations_per_switch").reset_index()
    return share.merge(sims, on=["role", "servers"])[cols]


def member_sentence(members: pd.DataFrame, regimes: dict[str, str]) -> str:
    """Which members the hindsight rung followed most, per regime and fleet size."""
    if len(members) == 0:
        return ""
    parts = []
    for (role, servers), g in members.groupby(["role", "servers"], sort=False):
        g = g.sort_values("share", ascending=False)
        said = ", ".join(f"{method_label(m) if m != 'reference' else 'doing nothing'} {s:.0%}"
                         for m, s in zip(g["member"], g["share"]))
        parts.append(f"{regimes.get(role, role)} at {servers} servers: {said}")
    return "Members followed, as shares of the switch times: " + "; ".join(parts) + "."


def members_said(folder: Path) -> str:
    """:func:`member_sentence` of a shipped grid, its regimes read from its profile ("" when
    the folder holds no results)."""
    results = load_results(Path(folder))
    return "" if results is None else member_sentence(member_table(folder), results.regimes)
