"""The grid-command chapter's numbers on the admission cap as the operator's lever.

Read from one grid (``shipped/gridcommand-cap``, profile :data:`PROFILE`): the power-cap rung
(:mod:`ilets.gridcommand.experts.power_cap`: the baseline's scheduler, only the cap set by
slot feedback) beside rungs that never set the cap (the rule, Lyapunov and the thermostat,
whose cells equal the main quick grid's: a rung that never sets the cap plays the plain
episode, tested). :func:`cap_table` puts them side by side per regime and fleet size, and
:func:`cap_sentence` says what the cap reached, at what price, and where it never bound.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ilets.gridcommand.experts import CAP_RUNG, EXPERTS
from ilets.report.grid_command import BAND_BAR, LABELS, rungs_display

#: Where the book reads the shipped grid (relative to the repository root), and its profile.
SHIPPED = Path("shipped") / "gridcommand-cap"
PROFILE = "gridcommand-grid-cap"
#: The rung the cap is set beside in the sentence: the tracking-first one, which moves placements.
BESIDE = "thermostat"
#: What the table shows: metric -> (label, format).
CAP_METRICS: dict[str, tuple[str, str]] = {
    "band_reached_share": ("events reaching the band", ".0%"),
    "tracking_mae_rel": ("tracking error", ".2f"),
    "misses_caused": ("misses caused", "+,.0f"),
    "deferrals": ("deferrals", ",.0f"),
}


def cap_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per regime, fleet size and expert: the seed means of :data:`CAP_METRICS` over the
    seeds on which the cap rung ran, and ``never_deferred``: whether the cap rung's runs
    deferred no task at all (the cap then never left a task without a server under it)."""
    cols = ["role", "regime", "servers", "method", "seeds", *CAP_METRICS, "never_deferred"]
    t = table[table["method"].isin(EXPERTS)]
    cap = t[t["method"] == CAP_RUNG]
    if len(cap) == 0:
        return pd.DataFrame(columns=cols)
    t = t.merge(cap[["role", "servers", "seed"]].drop_duplicates(), on=["role", "servers", "seed"])
    rows = []
    for (role, servers), g in t.sort_values(["servers", "role"], ascending=[True, False]).groupby(
            ["role", "servers"], sort=False):
        never = bool((g.loc[g["method"] == CAP_RUNG, "deferrals"] == 0).all())
        means = g.groupby("method")[list(CAP_METRICS)].mean()
        for method in [m for m in EXPERTS if m in means.index]:
            rows.append({"role": role, "regime": g["regime"].iloc[0], "servers": servers, "method": method,
                         "seeds": int(g.loc[g["method"] == method, "seed"].nunique()), **means.loc[method].to_dict(),
                         "never_deferred": never if method == CAP_RUNG else None})
    return pd.DataFrame(rows, columns=cols)


def cap_display(cap: pd.DataFrame) -> pd.DataFrame:
    """:func:`cap_table` for display: one row per regime, fleet size and expert."""
    return rungs_display(cap, CAP_METRICS, name="expert")


def cap_sentence(cap: pd.DataFrame, bar: float = BAND_BAR, beside: str = BESIDE) -> str:
    """What the cap alone reached, per regime and fleet size, beside ``beside``; whether it
    meets the band bar anywhere; and where it never deferred a task."""
    if len(cap) == 0:
        return "The power-cap grid has not run."
    parts, never, met = [], [], 0
    for (servers, regime), g in cap.groupby(["servers", "regime"], sort=False):
        row = g.set_index("method")
        c = row.loc[CAP_RUNG]
        other = (f"; the {LABELS.get(beside, beside)}: {row.loc[beside, 'band_reached_share']:.0%}, "
                 f"{row.loc[beside, 'tracking_mae_rel']:.2f}, {row.loc[beside, 'misses_caused']:+,.0f}"
                 if beside in row.index else "")
        parts.append(f"{c['band_reached_share']:.0%} under {regime} at {int(servers)} servers (tracking error "
                     f"{c['tracking_mae_rel']:.2f}, {c['misses_caused']:+,.0f} misses{other})")
        met += int(c["band_reached_share"] >= bar)
        if c["never_deferred"]:
            never.append(f"{regime} at {int(servers)} servers")
    seeds = int(cap.loc[cap["method"] == CAP_RUNG, "seeds"].min())
    text = (f"With the admission cap as its only lever, the power-cap rung reaches the band on this share of events: "
            f"{'; '.join(parts)} (tracking error as a share of doing nothing's; seed means over {seeds} seeds). It meets the bar "
            f"of {bar:.0%} of events in {met} of {len(parts)} (regime, fleet size) pairs.")
    if never:
        where = never[0] if len(never) == 1 else f"{', '.join(never[:-1])} and {never[-1]}"
        text += (f" Under {where} it deferred no task in any run: the cap always left a task a server with room "
                 "under it (or the task could not wait), so it only moved work between servers, and a cap cuts the "
                 "fleet's draw only by making work wait.")
    return text
