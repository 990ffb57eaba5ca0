"""The two figures that carry the book's argument, their data and their drawing.

* **A forest per claim** (the summary's headline figure): for each row of the claims table that
  is a percent change, the paper's figure (a marker, no interval: the paper gives none), the
  authors' flat learner's effect and the per-server learner's, each with its 95 % interval, on
  one axis. The numbers are the claims table's: each point is read from the comparison the
  table's cell reads (the same component row of :func:`ilets.report.verdicts.rule.component_table`,
  chosen as :mod:`ilets.report.claims_table` chooses it: the row's measure, or for a claim of
  several comparisons :func:`ilets.report.claims_table.weakest`), and shows what the cell shows
  (:func:`ilets.report.claims_table.effect_cell`: the pooled effect, or each fleet size's where
  the sign changes between them). Nothing is judged or resampled again. A column without a
  number says why (not measured, no results yet, the paper gives none) instead of a point.
  Decision time (microseconds) and the RL stage's control (a share of a gap) are not percent
  changes; they stay in the table.
* **Each learner against the best heuristic by fleet size** (chapter 7's): the improvement of
  every learner of both families over the best heuristic on the same tasks, with its 95 %
  interval over seeds (:func:`ilets.report.heuristic_gap.learner_gaps`, the numbers README's
  headline table prints).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D
from matplotlib.transforms import blended_transform_factory

from ilets.method_table import LEARNERS, METHOD_LABELS
from ilets.report import claims_table as CT
from ilets.report import heuristic_gap as G
from ilets.report.plots import PALETTE
from ilets.report import stats as S
from ilets.report.verdicts.claims import Verdict
from ilets.report.verdicts.heuristics import BEST_HEURISTIC
from ilets.report.verdicts.rule import NOT_TESTABLE, component_table

#: The sources of a forest panel, top to bottom (the claims table's column names).
PAPER, FLAT, PER_SERVER = "paper", CT.COLUMNS[2], CT.COLUMNS[3]
SOURCES = (PAPER, FLAT, PER_SERVER)
#: What a source's rows say where the table's cell has no number.
NOT_MEASURED, NO_NUMBER = "not measured", "no number"
#: Where a point stands for: every fleet size pooled, or one fleet size.
POOLED = "pooled"
FOREST_COLUMNS = ["claim_row", "claim", "group", "panel", "source", "comparison", "where", "effect_pct", "low_pct",
                  "high_pct", "note"]

#: The claims table's rows made of one comparison per measure, in its order:
#: (claim, the paper's method (None: the paper gives no number), the row's label, the figure's group).
MEASURE_ROWS = ((1, "drl+", "OINPT: DRL+ vs DRL", "OINPT: DRL+ against DRL"),
                (2, "ilets-", "OAIL: ILETS- vs DRL", "OAIL: ILETS- against DRL"),
                (8, None, "ILETS vs every heuristic", "ILETS against the best heuristic"))
#: The rows made of several comparisons (the weakest speaks): (claim, the row's label, the panel's title).
CLAIM_ROWS = ((4, "Cold start: DRL+ and ILETS ahead from the start", "cold start"),
              (7, "Trend change: ILETS oscillates least", "trend change"))
OVER_TIME = "Over the online pass"


def cell_points(row: Mapping) -> list[tuple[str, float, float, float]]:
    """The points behind the claims table's cell of a component ``row``
    (:func:`ilets.report.claims_table.effect_cell`): ``(where, effect, low, high)``, the pooled
    effect where every fleet size has one sign, else each fleet size's (the one fleet size
    alone where there is one); none for a comparison not measured."""
    per = row["per_scale"]
    if not per:
        return []
    if row["same_sign"] and len(per) > 1:
        return [(POOLED, float(row["pooled"]), float(row["pooled_low"]), float(row["pooled_high"]))]
    return [(f"{int(s)} servers", float(e), float(lo), float(hi)) for s, e, lo, hi in per]


def _comparison(row: Mapping) -> str:
    names = {**METHOD_LABELS, BEST_HEURISTIC: "best heuristic"}
    return f"{names.get(row['a'], row['a'])} vs {names.get(row['b'], row['b'])}"


def _components(v: Verdict | None) -> pd.DataFrame:
    return component_table(v.effects if v is not None and len(v.effects) else None)


def _measure_component(v: Verdict | None, measure: str) -> Mapping | None:
    """The comparison the table's cell of ``measure`` reads (the claim's first on it)."""
    comp = _components(v)
    hit = comp[comp["measure"] == measure]
    return None if hit.empty else hit.iloc[0].to_dict()


def _claim_component(v: Verdict | None) -> Mapping | None:
    """The comparison the table's cell of a claim of several reads: its weakest."""
    if v is None or v.verdict == NOT_TESTABLE:
        return None
    return CT.weakest(_components(v))


def _learner_rows(base: dict, source: str, component: Mapping | None, missing: str) -> list[dict]:
    points = cell_points(component) if component is not None else []
    if component is None or not points:
        return [{**base, "source": source, "comparison": "", "where": "", "effect_pct": np.nan, "low_pct": np.nan,
                 "high_pct": np.nan, "note": missing}]
    return [{**base, "source": source, "comparison": _comparison(component), "where": where, "effect_pct": e,
             "low_pct": lo, "high_pct": hi, "note": ""} for where, e, lo, hi in points]


def _paper_row(base: dict, figure: float | None, words: str) -> dict:
    if figure is None:
        return {**base, "source": PAPER, "comparison": "", "where": "", "effect_pct": np.nan, "low_pct": np.nan,
                "high_pct": np.nan, "note": f"{NO_NUMBER}: \u201c{words}\u201d" if words else NO_NUMBER}
    return {**base, "source": PAPER, "comparison": "", "where": PAPER, "effect_pct": float(figure), "low_pct": np.nan,
            "high_pct": np.nan, "note": ""}


def claim_forest(flat: Sequence[Verdict], per_server: Sequence[Verdict] | None,
                 table: CT.ClaimsTable | None = None) -> pd.DataFrame:
    """The forest's data, one row per point (:data:`FOREST_COLUMNS`): per claims-table row that is
    a percent change (``claim_row``, its label in the table), the paper's figure (``source``
    :data:`PAPER`, no interval) and each family's effect in percent with its 95 % interval
    (``where``: pooled or a fleet size), from the verdicts the table reads (``flat``; ``per_server``
    None: that family has no results). A source with no number is one row with ``effect_pct``
    NaN and a ``note`` saying why. ``table`` (the claims table built from the same verdicts)
    adds each row's ``verdict`` and the paper's words where it gives no number."""
    by_flat = {v.claim: v for v in flat}
    by_ps = {v.claim: v for v in per_server} if per_server is not None else {}
    ps_missing = NOT_MEASURED if per_server is not None else CT.NO_RESULTS
    said = {r.claim: r for r in table.rows} if table is not None else {}
    rows: list[dict] = []

    def add(base: dict, figure: float | None, flat_comp: Mapping | None, ps_comp: Mapping | None) -> None:
        words = said[base["claim_row"]].paper if base["claim_row"] in said else ""
        rows.append(_paper_row(base, figure, words))
        rows.extend(_learner_rows(base, FLAT, flat_comp, NOT_MEASURED))
        rows.extend(_learner_rows(base, PER_SERVER, ps_comp, ps_missing))

    for claim, method, label, group in MEASURE_ROWS:
        for measure, name in CT.MEASURES.items():
            base = {"claim_row": f"{label}, {name}", "claim": claim, "group": group, "panel": name}
            figure = S.PAPER_IMPROVEMENTS[method][measure] if method is not None else None
            add(base, figure, _measure_component(by_flat.get(claim), measure),
                _measure_component(by_ps.get(claim), measure))
    for claim, label, panel in CLAIM_ROWS:
        base = {"claim_row": label, "claim": claim, "group": OVER_TIME, "panel": panel}
        add(base, None, _claim_component(by_flat.get(claim)), _claim_component(by_ps.get(claim)))
    frame = pd.DataFrame(rows, columns=FOREST_COLUMNS)
    if table is not None:
        frame["verdict"] = frame["claim_row"].map({r.claim: r.verdict for r in table.rows}).fillna("")
    return frame


def summary_forest(claims: CT.ClaimsTable, found, both, per_server_ctx) -> pd.DataFrame:
    """:func:`claim_forest` of the summary's claims table (``claims``,
    :func:`ilets.report.claims_table.summary_claims` of the same arguments): the flat verdicts of
    ``found`` (:func:`ilets.report.findings.summary_findings`) and the per-server ones of ``both``
    (:func:`ilets.report.families.families_findings`), taken as the table takes them (none when
    ``per_server_ctx`` has no learner cell)."""
    has_learners = per_server_ctx is not None and per_server_ctx.metrics["method"].isin(LEARNERS).any()
    per_server = both.per_server.verdicts if both.per_server is not None and has_learners else None
    return claim_forest(found.verdicts, per_server, claims)


# --- each learner against the best heuristic ---------------------------------------------

#: The learner families of the gap figure, in its order.
FAMILIES = (FLAT, PER_SERVER)
GAP_MEASURE = "mean_reward"


def gap_by_fleet(ctx, per_server_ctx=None, measures: Sequence[str] = (GAP_MEASURE,)) -> pd.DataFrame:
    """Every learner of both families against the best heuristic on the same tasks, per measure
    and fleet size: :func:`ilets.report.heuristic_gap.learner_gaps` of ``ctx``'s cells (the flat
    family) and of ``per_server_ctx``'s (its learner cells beside the faithful grid's heuristics;
    None: no per-server grid), with the book's resamples, and a ``family`` column."""
    parts = [G.learner_gaps(ctx.metrics, measures, reps=ctx.reps).assign(family=FLAT)]
    if per_server_ctx is not None:
        parts.append(G.learner_gaps(per_server_ctx.metrics, measures, reps=ctx.reps).assign(family=PER_SERVER))
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=G.COLUMNS + ["family"])


# --- drawing -------------------------------------------------------------------------------

#: Font sizes (pt) that read at >= 10 pt in the book's ~700 px column at the figures' widths.
FONT, SMALL = 11.5, 10.5
SOURCE_COLORS = {PAPER: "black", FLAT: sns.color_palette("colorblind")[0], PER_SERVER: sns.color_palette("colorblind")[3]}
LEARNER_MARKERS = ("o", "s", "^", "D")
SOURCE_NAMES = {PAPER: "paper", FLAT: "flat", PER_SERVER: "per-server"}
WHERE_MARKERS = {POOLED: "D", "50 servers": "o", "100 servers": "s", "200 servers": "^", PAPER: "X"}


def _marker(where: str) -> str:
    return WHERE_MARKERS.get(where, "o")


def _row_labels(d: pd.DataFrame, comparisons: bool) -> list[str]:
    """Each band's label: the source, with the comparison it reads where ``comparisons``."""
    labels = []
    for source in SOURCES:
        named = d.loc[(d["source"] == source) & (d["comparison"] != ""), "comparison"]
        labels.append(SOURCE_NAMES[source] + (f"\n{named.iloc[0]}" if comparisons and len(named) else ""))
    return labels


def _forest_panel(ax, d: pd.DataFrame, labels: list[str] | None) -> None:
    """One claim: a band per source, its points (fleet sizes dodged within the band) or its note."""
    text_y = blended_transform_factory(ax.transAxes, ax.transData)
    for y, source in enumerate(SOURCES):
        s = d[d["source"] == source]
        pts = s[s["effect_pct"].notna()]
        if pts.empty:
            note = s["note"].iloc[0] if len(s) else NOT_MEASURED
            ax.text(0.5, y, note, transform=text_y, ha="center", va="center", fontsize=SMALL, style="italic",
                    color="0.35")
            continue
        offsets = np.linspace(-0.22, 0.22, len(pts)) if len(pts) > 1 else [0.0]
        color = SOURCE_COLORS[source]
        for off, r in zip(offsets, pts.itertuples()):
            if np.isfinite(r.low_pct):
                ax.plot([r.low_pct, r.high_pct], [y + off] * 2, color=color, lw=2, solid_capstyle="butt")
            ax.plot(r.effect_pct, y + off, marker=_marker(r.where), color=color, ms=7 if source == PAPER else 5.5,
                    ls="none", mec="white" if source != PAPER else color, mew=0.6)
    ax.axvline(0, color="0.45", lw=0.9, zorder=0)
    values = d[["effect_pct", "low_pct", "high_pct"]].to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    lo, hi = min(0.0, finite.min()) if finite.size else -1.0, max(0.0, finite.max()) if finite.size else 1.0
    pad = 0.1 * (hi - lo or 1.0)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(len(SOURCES) - 0.45, -0.55)
    ax.set_yticks(range(len(SOURCES)), labels if labels is not None else [])
    ax.tick_params(axis="both", labelsize=SMALL)
    ax.grid(axis="y", visible=False)
    verdict = d["verdict"].iloc[0] if "verdict" in d and d["verdict"].iloc[0] else ""
    ax.set_title(f"{d['panel'].iloc[0]}\n{verdict}".rstrip(), fontsize=SMALL, fontweight="normal")


def _forest_legend(where: set[str]) -> tuple[list, list[str], int]:
    """The legend's handles and labels in two rows (what is drawn; which fleet sizes), ordered
    column by column as a figure legend fills them, and its number of columns."""
    first = [(Line2D([], [], marker="X", color="black", ls="none", ms=7), "the paper's figure"),
             (Line2D([], [], color=SOURCE_COLORS[FLAT], lw=2.5), "authors' flat learner"),
             (Line2D([], [], color=SOURCE_COLORS[PER_SERVER], lw=2.5), "per-server learner")]
    second: list[tuple[Line2D, str]] = []
    for w in (POOLED, "50 servers", "100 servers", "200 servers"):
        if w in where:
            (first if w == POOLED else second).append(
                (Line2D([], [], marker=_marker(w), color="0.3", ls="none", ms=6),
                 "fleet sizes pooled" if w == POOLED else w))
    ncol = max(len(first), len(second))
    blank = (Line2D([], [], ls="none"), "")
    rows = [r + [blank] * (ncol - len(r)) for r in (first, second) if r]
    pairs = [row[c] for c in range(ncol) for row in rows]
    return [h for h, _ in pairs], [label for _, label in pairs], ncol


def claim_forest_figure(frame: pd.DataFrame) -> plt.Figure:
    """:func:`claim_forest`'s data as forests: a row of panels per group of claims, a panel per
    claim (titled with its verdict when ``frame`` has one), each with its own percent axis
    (0: no change; positive: the way the paper claims). Where a claim's comparison is not the
    group's (the claims of several comparisons), each band names the one it shows."""
    groups = list(dict.fromkeys(frame["group"]))
    panels = {g: list(dict.fromkeys(frame.loc[frame["group"] == g, "panel"])) for g in groups}
    fig = plt.figure(figsize=(7.6, 2.1 * len(groups) + 0.9), layout="constrained")
    subs = fig.subfigures(len(groups), 1, squeeze=False)[:, 0]
    for sub, g in zip(subs, groups):
        axes = sub.subplots(1, len(panels[g]), squeeze=False)[0]
        sub.suptitle(g, fontsize=FONT, fontweight="bold", x=0.01, ha="left")
        named = g == OVER_TIME  # each claim of the group reads its own weakest comparison
        for i, (ax, p) in enumerate(zip(axes, panels[g])):
            d = frame[(frame["group"] == g) & (frame["panel"] == p)]
            _forest_panel(ax, d, _row_labels(d, named) if named or i == 0 else None)
    handles, labels, ncol = _forest_legend(set(frame["where"]))
    fig.legend(handles, labels, loc="outside upper center", ncol=ncol, fontsize=SMALL, frameon=False,
               handlelength=1.6, columnspacing=1.2)
    fig.supxlabel("change in percent (positive: the way the paper claims)", fontsize=FONT)
    return fig


def gap_figure(frame: pd.DataFrame, measure: str = GAP_MEASURE) -> plt.Figure:
    """:func:`gap_by_fleet`'s ``measure`` as one panel per learner family: each learner's
    improvement over the best heuristic (%, 0: as good; below: worse) at each fleet size, with
    its 95 % interval, the heuristic named under its fleet size."""
    d = frame[frame["measure"] == measure]
    families = [f for f in FAMILIES if f in set(d["family"])]
    sizes = sorted(int(s) for s in d["servers"].unique())
    learners = [m for m in LEARNERS if m in set(d["learner"])]
    fig, axes = plt.subplots(1, max(1, len(families)), figsize=(7.6, 3.6), sharey=True, squeeze=False,
                             layout="constrained")
    width = 0.6
    for ax, family in zip(axes[0], families):
        f = d[d["family"] == family]
        for j, m in enumerate(learners):
            g = f[f["learner"] == m].set_index("servers")
            for i, s in enumerate(sizes):
                if s not in g.index:
                    continue
                r = g.loc[s]
                x = i - width / 2 + width * (j + 0.5) / len(learners)
                color = PALETTE.get(METHOD_LABELS.get(m, m), "0.3")
                ax.plot([x, x], [r["ci_low_pct"], r["ci_high_pct"]], color=color, lw=2.2)
                ax.plot(x, r["effect_pct"], LEARNER_MARKERS[j % len(LEARNER_MARKERS)], color=color, ms=6.5,
                        mec="white", mew=0.6, label=METHOD_LABELS.get(m, m) if i == 0 else None)
        best = f.drop_duplicates("servers").set_index("servers")["heuristic"]
        ax.set_xticks(range(len(sizes)), [f"{s}\n{METHOD_LABELS.get(best.get(s, ''), best.get(s, ''))}"
                                          for s in sizes])
        ax.axhline(0, color="0.3", lw=1)
        ax.grid(axis="x", visible=False)
        ax.set_xlim(-0.5, len(sizes) - 0.5)
        ax.set_title(family, fontsize=FONT, fontweight="bold")
        ax.tick_params(axis="both", labelsize=SMALL)
    axes[0][0].set_ylabel(f"{G.MEASURE_NAMES.get(measure, measure)} against\nthe best heuristic (%)", fontsize=FONT)
    fig.supxlabel("servers, and the best heuristic there", fontsize=FONT)
    if not families:  # e.g. a partial grid: no learner and heuristic cells on the same fleets yet
        axes[0][0].text(0.5, 0.5, "no learner and heuristic runs on the same fleets yet", ha="center", va="center",
                        transform=axes[0][0].transAxes, fontsize=SMALL, style="italic", color="0.35")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if labels:
        fig.legend(handles, labels, loc="outside upper center", ncol=len(labels), fontsize=SMALL, frameon=False)
    return fig
