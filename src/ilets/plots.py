"""Figures in one seaborn style, used by the book's chapters (no computation here).

Every function returns the matplotlib Figure; the chapter shows it and writes the caption.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from ilets.results import METHOD_LABELS  # noqa: E402

METHOD_ORDER = ["DRL", "DRL+", "ILETS-", "ILETS"]
PALETTE = dict(zip(METHOD_ORDER, sns.color_palette("colorblind", 4)))


def use_style() -> None:
    """The book's style: whitegrid, colour-blind palette, compact fonts."""
    sns.set_theme(style="whitegrid", palette="colorblind", context="notebook", font_scale=0.95)
    plt.rcParams.update({"figure.dpi": 110, "savefig.bbox": "tight", "axes.titleweight": "bold"})


def label_methods(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with a ``Method`` column of display names (DRL, DRL+, ..., heuristics as is)."""
    out = df.copy()
    out["Method"] = out["method"].map(lambda m: METHOD_LABELS.get(m, m))
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
                    x: str = "decision_end") -> plt.Figure:
    """Windowed metric vs decisions, one panel per fleet size, mean and 95% CI band over seeds."""
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


def metric_points(metrics: pd.DataFrame, y: str, ylabel: str, order: list[str] | None = None) -> plt.Figure:
    """Point plot of a final metric per method and fleet size (mean and 95% CI over seeds)."""
    data = label_methods(metrics)
    fig, ax = plt.subplots(figsize=(9, 3.4))
    sns.pointplot(data=data, x="Method", y=y, hue="servers", order=order, errorbar=("ci", 95), n_boot=500,
                  seed=0, dodge=0.4, linestyle="none", markers="o", ax=ax)
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
    sns.pointplot(data=frame, x="servers", y="ms", hue="path", dodge=0.3, linestyle="none", ax=ax, errorbar=None)
    if paper is not None:
        sns.pointplot(data=paper, x="servers", y="ms", hue="path", markers="x", linestyle="--", ax=ax,
                      errorbar=None, palette="dark:gray")
    ax.set(yscale="log", xlabel="servers", ylabel="decision time (ms, log)")
    return fig
