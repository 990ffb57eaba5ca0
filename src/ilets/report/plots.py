"""Figures in one seaborn style, used by the book's chapters (no computation here).

Every function returns the matplotlib Figure; the chapter shows it and writes the caption.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from ilets.expert_table import EXPERT_LABELS
from ilets.method_table import METHOD_LABELS

if TYPE_CHECKING:
    from matplotlib.artist import Artist

METHOD_ORDER = list(METHOD_LABELS.values())
PALETTE = dict(zip(METHOD_ORDER, sns.color_palette("colorblind", 4)))


def use_style() -> None:
    """The book's style: whitegrid, colour-blind palette, compact fonts."""
    sns.set_theme(style="whitegrid", palette="colorblind", context="notebook", font_scale=0.95)
    plt.rcParams.update({"figure.dpi": 110, "savefig.bbox": "tight", "axes.titleweight": "bold"})


def label_methods(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with a ``Method`` column of display names (DRL, DRL+, ..., heuristics as is);
    a table already labelled (a ``Method`` column and no ``method``) is returned as it is, so
    labelling twice changes nothing; a table with neither (e.g. an empty one) gets an empty
    ``Method``."""
    out = df.copy()
    if "method" not in out and "Method" in out:
        return out
    methods = out["method"] if "method" in out else pd.Series([None] * len(out), index=out.index, dtype=object)
    out["Method"] = methods.map(lambda m: METHOD_LABELS.get(m, m))
    return out


def arrival_rate(arrival: np.ndarray, split: float, events: dict[str, float], bin_s: float) -> plt.Figure:
    """Tasks per second over the window, with the split and the designed changes marked."""
    fig, ax = plt.subplots(figsize=(9, 3.2))
    edges = np.arange(0, arrival.max() + bin_s, bin_s)
    counts, _ = np.histogram(arrival, bins=edges)
    ax.plot(edges[:-1], counts / bin_s, lw=0.9, color="0.25")
    ax.axvline(split, color="k", ls="--", lw=1)
    ax.text(split, ax.get_ylim()[1] * 0.95, " offline | online", ha="center", va="top", fontsize=8,
            bbox=dict(fc="white", ec="none"))
    for name, t in events.items():
        color = "tab:red" if name.startswith("burst") else "tab:purple"
        ax.axvline(t, color=color, lw=1, alpha=0.7)
    ax.set(xlabel="time in the window (s)", ylabel="arrivals per second")
    return fig


def cpu_distribution(generated: np.ndarray, real: np.ndarray | None) -> plt.Figure:
    """Empirical CDFs of CPU requests: generated vs the real Google sample."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    data = pd.DataFrame({"cpu": generated, "source": "synthetic (shipped quantile table)"})
    if real is not None:
        data = pd.concat([data, pd.DataFrame({"cpu": real, "source": "real Google 2011 sample"})])
    sns.ecdfplot(data=data, x="cpu", hue="source", ax=ax)
    ax.set(xscale="log", xlabel="CPU request (largest machine = 1)", ylabel="fraction of tasks")
    return fig


def task_parameters(frame: pd.DataFrame) -> plt.Figure:
    """Histograms of task length and relative deadline."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3))
    sns.histplot(frame["length"], bins=40, ax=axes[0], color="tab:blue")
    axes[0].set(xlabel="task length (MI)", ylabel="tasks")
    sns.histplot(frame["deadline"], bins=40, ax=axes[1], color="tab:orange")
    axes[1].set(xlabel="relative deadline (s)", ylabel="tasks")
    return fig


def learning_curves(curves: pd.DataFrame, y: str, ylabel: str, events: dict[str, float] | None = None,
                    x: str = "decision_end") -> plt.Figure | None:
    """Windowed metric vs decisions, one panel per fleet size, mean and 95% CI band over seeds
    (None, no figure, for an empty table: a chapter on partial results shows its note instead)."""
    if curves is None or len(curves) == 0:
        return None
    data = label_methods(curves)
    scales = sorted(data["servers"].unique())
    fig, axes = plt.subplots(1, len(scales), figsize=(4.2 * len(scales), 3.3), sharey=False, squeeze=False)
    for ax, m in zip(axes[0], scales):
        d = data[data["servers"] == m]
        sns.lineplot(data=d, x=x, y=y, hue="Method", hue_order=[h for h in METHOD_ORDER if h in set(d["Method"])],
                     palette=PALETTE, errorbar=("ci", 95), n_boot=500, seed=0, ax=ax, lw=1.2)
        for name, t in (events or {}).items():
            ax.axvline(t, color="tab:red" if name.startswith("burst") else "tab:purple", lw=0.8, alpha=0.6)
        ax.set(title=f"{m} servers", xlabel="decisions", ylabel=ylabel)
        if ax is not axes[0][-1]:
            leg = ax.get_legend()
            if leg is not None:
                leg.remove()
    return fig


def dodge(width: float, levels) -> float | bool:
    """``width`` for seaborn's ``dodge`` when there are several hue levels, else False: with
    one level (a single fleet size, as in a partial paper grid) seaborn divides by zero."""
    return width if len(set(levels)) > 1 else False


def metric_points(metrics: pd.DataFrame, y: str, ylabel: str, order: list[str] | None = None) -> plt.Figure:
    """Point plot of a final metric per method and fleet size (mean and 95% CI over seeds)."""
    data = label_methods(metrics)
    fig, ax = plt.subplots(figsize=(9, 3.4))
    sns.pointplot(data=data, x="Method", y=y, hue="servers", order=order, errorbar=("ci", 95), n_boot=500,
                  seed=0, dodge=dodge(0.4, data["servers"]), linestyle="none", markers="o", ax=ax)
    ax.set(xlabel="", ylabel=ylabel)
    ax.tick_params(axis="x", rotation=30)
    ax.legend(title="servers")
    return fig


def bars(frame: pd.DataFrame, x: str, y: str, hue: str | None, ylabel: str, xlabel: str = "") -> plt.Figure:
    """A plain bar chart of precomputed values (e.g. improvement over DRL)."""
    fig, ax = plt.subplots(figsize=(8, 3.2))
    sns.barplot(data=frame, x=x, y=y, hue=hue, ax=ax, errorbar=None)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    ax.axhline(0, color="k", lw=0.8)
    return fig


def latency(frame: pd.DataFrame, paper: pd.DataFrame | None = None) -> plt.Figure:
    """Decision latency (ms, log scale) per method and fleet size, with the paper's figures."""
    fig, ax = plt.subplots(figsize=(7, 3.4))
    sns.pointplot(data=frame, x="servers", y="ms", hue="path", dodge=dodge(0.3, frame["path"]), linestyle="none", ax=ax,
                  errorbar=None)
    if paper is not None:
        sns.pointplot(data=paper, x="servers", y="ms", hue="path", markers="x", linestyle="--", ax=ax,
                      errorbar=None, palette="dark:gray")
    ax.set(yscale="log", xlabel="servers", ylabel="decision time (ms, log)")
    return fig


def optimality_gaps(cases: pd.DataFrame) -> plt.Figure:
    """Each expert's gap to the exact optimum per small case (``expert``, ``gap`` columns).

    Points are cases (jittered), the black bar each expert's mean; the y axis is symlog so
    that the many exact zeros and the occasional large miss are both visible.
    """
    data = cases.assign(Expert=cases["expert"].map(lambda n: EXPERT_LABELS.get(n, n)), gap_pct=100 * cases["gap"])
    order = [EXPERT_LABELS.get(n, n) for n in dict.fromkeys(cases["expert"])]
    fig, ax = plt.subplots(figsize=(6, 3.3))
    sns.stripplot(data=data, x="Expert", y="gap_pct", hue="Expert", order=order, hue_order=order, jitter=0.3,
                  size=3.5, alpha=0.6, ax=ax, legend=False)
    means = data.groupby("Expert")["gap_pct"].mean().reindex(order)
    ax.scatter(range(len(order)), means.to_numpy(), marker="_", s=900, color="k", lw=2, zorder=5, label="mean")
    ax.set_yscale("symlog", linthresh=0.1)
    ax.set(xlabel="", ylabel="gap to the optimum (%, symlog)")
    ax.legend(loc="upper left")
    return fig


def expert_cost(timing: pd.DataFrame) -> plt.Figure:
    """Wall ms per expert call (log scale) against fleet size: median (filled), p90 (hollow)."""
    from matplotlib.ticker import LogLocator, NullLocator, ScalarFormatter

    names = list(dict.fromkeys(timing["expert"]))
    colors = dict(zip(names, sns.color_palette("colorblind", len(names))))
    fig, ax = plt.subplots(figsize=(6, 3.3))
    for name in names:
        g = timing[timing["expert"] == name].sort_values("servers")
        ax.plot(g["servers"], g["ms_per_call"], marker="o", color=colors[name], label=EXPERT_LABELS.get(name, name))
        ax.plot(g["servers"], g["ms_p90"], marker="o", ls="none", mfc="none", color=colors[name])
    ax.set(xscale="log", yscale="log", xlabel="servers", ylabel="ms per call (log)")
    scales = sorted(timing["servers"].unique())
    ax.set_xticks(scales, labels=[str(m) for m in scales])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.legend(title="median; hollow: p90", fontsize=8, title_fontsize=8)
    return fig


def decision_times(summary: pd.DataFrame) -> plt.Figure:
    """Per-task decision time (ms, log) vs fleet size, one panel per method.

    ``summary`` has the columns of :func:`ilets.study.latency.summarise` (method, servers, path,
    p50_ms, p95_ms): filled markers are medians, hollow markers p95, dashed the paper's
    figures.
    """
    methods = [m for m in ("DRL", "ILETS") if m in set(summary["method"])]
    paths = list(dict.fromkeys(summary["path"]))
    colors = dict(zip(paths, sns.color_palette("colorblind", len(paths))))
    fig, axes = plt.subplots(1, len(methods), figsize=(4.4 * len(methods), 3.4), sharey=True, squeeze=False)
    for ax, method in zip(axes[0], methods):
        d = summary[summary["method"] == method]
        for path in paths:
            g = d[d["path"] == path].sort_values("servers")
            ls = "--" if path == "paper" else "-"
            label = f"{path} (reported)" if path == "paper" else f"{path} (p50)"
            ax.plot(g["servers"], g["p50_ms"], marker="o", ls=ls, color=colors[path], label=label)
            if g["p95_ms"].notna().any():
                ax.plot(g["servers"], g["p95_ms"], marker="o", ls="none", mfc="none", color=colors[path],
                        label=f"{path} (p95)")
        ax.set(yscale="log", xscale="log", title=method, xlabel="servers", ylabel="decision time (ms, log)")
        ax.set_xticks(sorted(d["servers"].unique()), labels=[str(s) for s in sorted(d["servers"].unique())])
        ax.minorticks_off()
    axes[0][-1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig


def event_points(table: pd.DataFrame, y: str, ylabel: str,
                 event_order: list[str] | None = None) -> plt.Figure | None:
    """A per-event measure (e.g. oscillation after each burst and the trend change): one panel
    per fleet size, events on x, methods as hue, mean and 95% CI over seeds (cells); None for
    an empty table."""
    if table is None or len(table) == 0:
        return None
    data = label_methods(table)
    scales = sorted(data["servers"].unique())
    order = event_order or list(dict.fromkeys(data["event"]))
    hue_order = [h for h in METHOD_ORDER if h in set(data["Method"])]
    fig, axes = plt.subplots(1, max(1, len(scales)), figsize=(4.2 * max(1, len(scales)), 3.3), squeeze=False)
    for ax, m in zip(axes[0], scales):
        sns.pointplot(data=data[data["servers"] == m], x="event", y=y, hue="Method", order=order,
                      hue_order=hue_order, palette=PALETTE, errorbar=("ci", 95), n_boot=500, seed=0,
                      dodge=dodge(0.4, hue_order),
                      linestyle="none", markers="o", ax=ax)
        ax.set(title=f"{m} servers", xlabel="", ylabel=ylabel)
        ax.tick_params(axis="x", rotation=20)
        if ax is not axes[0][-1]:
            leg = ax.get_legend()
            if leg is not None:
                leg.remove()
    return fig


# --- results chapters: figures and display tables ---------------------------------------

#: Methods whose results can lie far off every other method's scale (random and round-robin's
#: response time at 50 servers is about a hundred times the others'): where drawing them would
#: stretch a panel of :func:`metric_grid` more than :data:`OFF_SCALE_STRETCH` times the other
#: methods' range, their off-scale means are written at the axis' edge instead of drawn.
OFF_SCALE = ("random", "round-robin")
OFF_SCALE_STRETCH = 2.0
#: Font size (pt) of the grid's labels: >= 10 pt in the book's ~700 px column at its width.
GRID_FONT = 10.5


def metric_grid(metrics: pd.DataFrame, columns: dict[str, str], order: list[str] | None = None,
                ncols: int = 2, off_scale: tuple[str, ...] = OFF_SCALE) -> plt.Figure:
    """One panel per metric (``columns``: column -> axis label), methods as rows (display names,
    in ``order``): mean and 95 % CI over seeds, one colour per fleet size. Where the methods of
    ``off_scale`` would stretch a panel more than :data:`OFF_SCALE_STRETCH` times the range of
    the others' runs, the panel shows that range and each off-scale mean is written at the
    edge it lies beyond (with its fleet size), so the other methods are not flattened."""
    data = label_methods(metrics)
    scales = sorted(data["servers"].unique())
    hues = [str(x) for x in scales]
    data["servers"] = data["servers"].astype(str)
    order = list(order) if order is not None else list(dict.fromkeys(data["Method"]))
    far = {METHOD_LABELS.get(m, m) for m in off_scale}
    colors = dict(zip(hues, sns.color_palette("colorblind", len(hues))))
    nrows = int(np.ceil(len(columns) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.6, nrows * (0.3 * len(order) + 1.0)), sharey=True,
                             squeeze=False, layout="constrained")
    for ax, (col, label) in zip(axes.ravel(), columns.items()):
        kept = data.loc[~data["Method"].isin(far), col].dropna()
        every = data[col].dropna()
        lo, hi = (float(kept.min()), float(kept.max())) if len(kept) else (np.nan, np.nan)
        clip = len(kept) > 0 and float(every.max() - every.min()) > OFF_SCALE_STRETCH * (hi - lo)
        pad = 0.06 * ((hi - lo) or abs(hi) or 1.0)
        means = data[data["Method"].isin(far)].groupby(["Method", "servers"])[col].mean()
        beyond = means[(means < lo - pad) | (means > hi + pad)] if clip else means.iloc[0:0]
        shown = data[[k not in beyond.index for k in zip(data["Method"], data["servers"])]]
        sns.pointplot(data=shown, x=col, y="Method", hue="servers", order=order, hue_order=hues, palette=colors,
                      errorbar=("ci", 95), n_boot=500, seed=0, dodge=dodge(0.5, scales), linestyle="none",
                      markers="o", markersize=4, err_kws={"linewidth": 1.2}, orient="y", ax=ax)
        if clip:
            ax.set_xlim(lo - pad, hi + pad)
            _write_off_scale(ax, beyond, order, hi)
        ax.set(xlabel=label, ylabel="")
        ax.xaxis.label.set_size(GRID_FONT)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.tick_params(axis="both", labelsize=GRID_FONT)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    for ax in axes.ravel()[len(columns):]:
        ax.set_visible(False)
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="servers", loc="outside upper center", ncol=len(labels), fontsize=GRID_FONT,
               title_fontsize=GRID_FONT, frameon=False)
    return fig


def _write_off_scale(ax, beyond: pd.Series, order: list[str], hi: float) -> None:
    """Each off-scale method's means (``beyond``: (method, fleet size) -> mean) written at the
    edge of the axis they lie beyond, with an arrow pointing that way."""
    from ilets.report.stats.prose import number_text

    for method, g in beyond.groupby(level=0, sort=False):
        values = g.droplevel(0).sort_index(key=lambda s: s.astype(int))
        right = bool((values > hi).all())
        said = "; ".join(f"{number_text(v)} at {s}" for s, v in values.items())
        ax.text(0.98 if right else 0.02, order.index(method), f"{said} →" if right else f"← {said}",
                transform=ax.get_yaxis_transform(), ha="right" if right else "left",
                va="center", fontsize=GRID_FONT, color="0.25",
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "0.7", "alpha": 0.9})


def improvement_vs_paper(comparison: pd.DataFrame, metric_labels: dict[str, str]) -> plt.Figure:
    """Our improvement over DRL (points with 95 % CI, per scale and pooled) next to the
    paper's figure (black cross), one panel per metric; rows of
    :func:`ilets.report.stats.paper_comparison` with ``servers=None``."""
    data = label_methods(comparison)
    data["where"] = data["servers"].map(lambda s: "pooled" if str(s) == "all" else f"{s} servers")
    wheres = [w for w in sorted(data["where"].unique(), key=lambda w: (w == "pooled", len(w), w))]
    methods = [m for m in METHOD_ORDER if m in set(data["Method"])]
    colors = dict(zip(wheres, sns.color_palette("colorblind", len(wheres))))
    fig, axes = plt.subplots(1, len(metric_labels), figsize=(7.6, 3.6), squeeze=False, layout="constrained")
    width = 0.6
    labelled: set[str] = set()
    for ax, (metric, label) in zip(axes[0], metric_labels.items()):
        d = data[data["metric"] == metric]
        for i, m in enumerate(methods):
            dm = d[d["Method"] == m]
            for j, w in enumerate(wheres):
                r = dm[dm["where"] == w]
                if r.empty:
                    continue
                x = i - width / 2 + width * (j + 0.5) / len(wheres)
                y, lo, hi = r["ours_pct"].iloc[0], r["ci_low_pct"].iloc[0], r["ci_high_pct"].iloc[0]
                ax.errorbar(x, y, yerr=[[y - lo], [hi - y]], fmt="D" if w == "pooled" else "o", color=colors[w],
                            ms=5, capsize=2, label=None if w in labelled else w)
                labelled.add(w)
            if len(dm):
                ax.plot(i, dm["paper_pct"].iloc[0], marker="X", color="k", ms=9, ls="none",
                        label=None if "paper" in labelled else "paper")
                labelled.add("paper")
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_xticks(range(len(methods)), methods)
        ax.set_title(label, fontsize=GRID_FONT)
        ax.set_ylabel("improvement over DRL (%)" if ax is axes[0][0] else "", fontsize=GRID_FONT)
        ax.tick_params(axis="both", labelsize=GRID_FONT)
    handles: list[Artist] = []
    labels: list[str] = []
    for ax in axes[0]:
        h, lab = ax.get_legend_handles_labels()
        handles, labels = handles + h, labels + lab
    fig.legend(handles, labels, loc="outside upper center", ncol=len(labels), fontsize=GRID_FONT, frameon=False)
    return fig


def interval_panels(frame: pd.DataFrame, value: str, low: str, high: str, panel: str, label: str,
                    panel_labels: dict[str, str], reference: float | None = None,
                    order: list[str] | None = None, xlabel: str | None = None) -> plt.Figure:
    """Horizontal intervals (point and 95 % CI) per ``label`` row, one panel per ``panel``
    value; a dashed line at ``reference`` (e.g. 1 for normalised scores, 0.5 for a
    probability of improvement). Used for IQMs and probabilities of improvement."""
    panels = [p for p in panel_labels if p in set(frame[panel])]
    rows = order or list(dict.fromkeys(frame[label]))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels), 0.32 * len(rows) + 1.2), sharey=True,
                             squeeze=False)
    pal = sns.color_palette("colorblind", len(rows))
    for ax, p in zip(axes[0], panels):
        d = frame[frame[panel] == p].set_index(label)
        for i, r in enumerate(rows):
            if r not in d.index:
                continue
            v, lo, hi = d.loc[r, value], d.loc[r, low], d.loc[r, high]
            ax.plot([lo, hi], [i, i], color=pal[i], lw=5, alpha=0.45, solid_capstyle="butt")
            ax.plot(v, i, "|", color="k", ms=10)
        if reference is not None:
            ax.axvline(reference, color="0.3", ls="--", lw=0.8)
        ax.set_yticks(range(len(rows)), rows)
        ax.invert_yaxis() if ax is axes[0][0] else None
        ax.set(title=panel_labels[p], xlabel=(xlabel or value) if ax is axes[0][0] else "")
    fig.tight_layout()
    return fig


def variant_points(frame: pd.DataFrame | None, columns: dict[str, str], setting: str = "setting",
                   order: list[str] | None = None) -> plt.Figure | None:
    """Per metric, mean and 95 % CI over seeds per method, one colour per ``setting`` (e.g.
    the main grid vs a sensitivity variant at the same fleet size); None without data.
    ``order`` lists display names; those absent from ``frame`` are dropped."""
    if frame is None or len(frame) == 0:
        return None
    data = label_methods(frame)
    order = [m for m in order if m in set(data["Method"])] if order is not None else None
    fig, axes = plt.subplots(1, len(columns), figsize=(3.6 * len(columns), 3.3), squeeze=False)
    for ax, (col, label) in zip(axes[0], columns.items()):
        sns.pointplot(data=data, x="Method", y=col, hue=setting, order=order, errorbar=("ci", 95), n_boot=500,
                      seed=0, dodge=dodge(0.35, data[setting]), linestyle="none", markers="o", markersize=4, ax=ax)
        ax.set(xlabel="", ylabel=label)
        ax.tick_params(axis="x", rotation=45, labelsize=8)
        if ax is not axes[0][0] and ax.get_legend() is not None:
            ax.get_legend().remove()
        elif ax.get_legend() is not None:
            ax.legend(fontsize=7, title_fontsize=8)
    fig.tight_layout()
    return fig


def _fmt(x: float, digits: int) -> str:
    return "–" if not np.isfinite(x) else f"{x:.{digits}f}"


def _digits(x: float, sig: int = 4) -> int:
    """Decimals that show ``x`` with ``sig`` significant figures (0 for large numbers)."""
    return 0 if not np.isfinite(x) or x == 0 else max(0, sig - 1 - int(np.floor(np.log10(abs(x)))))


def summary_display(summary: pd.DataFrame, columns: Mapping[str, tuple[str, int | None, float]],
                    index: str = "method", split: str | None = None) -> pd.DataFrame:
    """A display table from :func:`ilets.report.stats.summary_table` rows: one row per ``index``
    value (method display names; with ``split``, per (``index``, ``split``) value), one
    column per metric, cells "mean ± std [CI low, CI high]". ``columns``: metric ->
    (header, decimals, multiplier, e.g. 100 for percent); decimals ``None``: four
    significant figures of the mean."""
    out: dict[Any, dict[str, str]] = {}  # keyed by method label, or (label, split value)
    for _, r in summary.iterrows():
        if r["metric"] not in columns:
            continue
        head, digits, mult = columns[r["metric"]]
        digits = _digits(mult * r["mean"]) if digits is None else digits
        key = METHOD_LABELS.get(r[index], r[index])
        key = (key, r[split]) if split else key
        cell = f"{_fmt(mult * r['mean'], digits)} ± {_fmt(mult * r['std'], digits)} " \
               f"[{_fmt(mult * r['ci_low'], digits)}, {_fmt(mult * r['ci_high'], digits)}]"
        out.setdefault(key, {})[head] = cell
    if not out:  # no rows (e.g. a variant the profile lacks): an empty table with the headers
        return pd.DataFrame(columns=[h for h, _, _ in columns.values()])
    df = pd.DataFrame.from_dict(out, orient="index")[[h for h, _, _ in columns.values()]]
    if split:
        df.index = pd.MultiIndex.from_tuples(df.index, names=["method", split])
    else:
        df.index.name = "method"
    return df


def heuristic_display(table: pd.DataFrame, metric_labels: dict[str, str]) -> pd.DataFrame:
    """A display table from :func:`ilets.report.verdicts.heuristics_vs_learners`: per heuristic and
    metric, the learners it beats at every fleet size and the pooled effect over the best learner with its CI."""
    rows: dict[str, dict[tuple[str, str], str]] = {}
    for _, r in table.iterrows():
        label = metric_labels.get(r["metric"], r["metric"])
        best = METHOD_LABELS.get(r["best_learner"], r["best_learner"])
        rows.setdefault(r["heuristic"], {})[(label, "learners beaten")] = \
            ", ".join(METHOD_LABELS.get(m, m) for m in r["beats"]) or "none"
        rows[r["heuristic"]][(label, "vs best learner (%)")] = \
            f"{r['vs_best_pct']:+.1f} [{r['vs_best_low_pct']:+.1f}, {r['vs_best_high_pct']:+.1f}] vs {best}"
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.columns = pd.MultiIndex.from_tuples(df.columns)
    df.index.name = "heuristic"
    return df


def heuristic_fleet_display(table: pd.DataFrame, metric_labels: dict[str, str]) -> pd.DataFrame:
    """A display table from :func:`ilets.report.verdicts.heuristics_per_fleet`: one row per
    heuristic, one column per (metric, fleet size) holding ``"+1.2 [-0.3, +2.5] vs DRL+"``
    (the heuristic's effect over the best learner there; positive = the heuristic is better)."""
    if table.empty:
        return pd.DataFrame()
    rows: dict[str, dict[tuple[str, str], str]] = {}
    for r in table.itertuples():
        key = (metric_labels.get(r.metric, r.metric), f"{r.servers} servers")
        rows.setdefault(r.heuristic, {})[key] = (f"{r.effect_pct:+.1f} [{r.ci_low_pct:+.1f}, {r.ci_high_pct:+.1f}] "
                                                 f"vs {METHOD_LABELS.get(r.learner, r.learner)}")
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.columns = pd.MultiIndex.from_tuples(df.columns)
    order = list(dict.fromkeys(metric_labels.get(m, m) for m in table["metric"]))
    df = df[sorted(df.columns, key=lambda c: (order.index(c[0]), int(c[1].split()[0])))]
    df.index.name = "heuristic"
    return df


def comparison_display(comparison: pd.DataFrame, metric_labels: dict[str, str]) -> pd.DataFrame:
    """A display table from :func:`ilets.report.stats.paper_comparison` (``servers=None``): one row
    per (method, metric), the paper's figure, then ours with its 95 % CI per scale and pooled
    (when there are several scales; a NaN pooled effect, where the fleet sizes differ in sign
    (:func:`ilets.report.findings.unpool_opposite_signs`), reads "not pooled: signs differ")."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for _, r in comparison.iterrows():
        key = (METHOD_LABELS.get(r["method"], r["method"]), metric_labels.get(r["metric"], r["metric"]))
        row = rows.setdefault(key, {"paper (%)": f"{r['paper_pct']:.2f}"})
        where = "pooled" if str(r["servers"]) == "all" else f"{r['servers']} servers"
        row[where] = (f"{r['ours_pct']:+.1f} [{r['ci_low_pct']:+.1f}, {r['ci_high_pct']:+.1f}]"
                      if np.isfinite(r["ours_pct"]) else "not pooled: signs differ")
    df = pd.DataFrame.from_dict(rows, orient="index")
    sizes = sorted([c for c in df.columns if c.endswith("servers")], key=lambda c: int(c.split()[0]))
    # pooled over one fleet size is that fleet size again: shown only when it pools several
    cols = ["paper (%)"] + sizes + (["pooled"] if "pooled" in df.columns and len(sizes) > 1 else [])
    df = df[cols]
    df.index = pd.MultiIndex.from_tuples(df.index, names=["method", "metric"])
    return df


def scale_points(table: pd.DataFrame, y: str, ylabel: str) -> plt.Figure:
    """A per-cell measure per method (x) and fleet size (hue), mean and 95% CI over seeds;
    like :func:`metric_points` but also drawn when there is a single fleet size."""
    data = label_methods(table)
    data["servers"] = data["servers"].astype(str)
    order = [h for h in METHOD_ORDER if h in set(data["Method"])] + \
        sorted(h for h in set(data["Method"]) if h not in METHOD_ORDER)
    hues = sorted(data["servers"].unique(), key=int)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    sns.pointplot(data=data, x="Method", y=y, hue="servers", order=order, hue_order=hues,
                  palette=sns.color_palette("crest", len(hues)), errorbar=("ci", 95), n_boot=500, seed=0,
                  dodge=dodge(0.4, hues), linestyle="none", markers="o", ax=ax)
    ax.set(xlabel="", ylabel=ylabel)
    ax.legend(title="servers")
    return fig


def note(text: str | None):
    """``text`` as a Markdown output for a chapter cell, or None (the cell shows nothing) when
    it is blank: an empty Markdown object has no Markdown to show and is printed as its
    Python repr (``<IPython.core.display.Markdown object>``) instead."""
    from IPython.display import Markdown

    return Markdown(text) if text and text.strip() else None


def summary_or_note(summary: pd.DataFrame, metrics: dict[str, tuple[str, int, float]], caption: str, empty: str,
                    **kw):
    """:func:`summary_display` of ``summary`` styled with ``caption``, or the note ``empty``
    when it has no row (an absent variant is said in words, not shown as an empty table;
    nothing at all for a blank ``empty``, :func:`note`)."""
    if summary is None or len(summary) == 0:
        return note(empty)
    return summary_display(summary, metrics, **kw).style.set_caption(caption)


def markdown_table(frame: pd.DataFrame | None, names: dict[str, str], empty: str = "(no results for this table)"):
    """A table for the book as Markdown, column and cell names spelled out with ``names`` and
    every cell as :func:`ilets.report.stats.cell_text` prints it; the note ``empty`` instead
    when there is no row (a variant or method missing from the results), so chapters need no
    branch of their own (nothing for a blank ``empty``)."""
    from IPython.display import Markdown

    from ilets.report.stats.prose import people_table

    if frame is None or len(frame) == 0:
        return note(empty)
    with pd.option_context("future.no_silent_downcasting", True):  # the downcast made explicit: no FutureWarning
        shown = frame.rename(columns=names).replace({**names, **METHOD_LABELS}).infer_objects(copy=False)
    # every cell for people (no raw float, True/False or nan: stats.prose.cell_text), numbers
    # right-aligned as before; the text is kept as written (no re-parsing of numbers)
    align = ["right" if pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t) else "left"
             for t in shown.dtypes]
    return Markdown(people_table(shown).to_markdown(index=False, disable_numparse=True, colalign=align))
