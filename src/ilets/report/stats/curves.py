"""Cold start and adaptation on learning curves: the first decisions, convergence,
oscillation after the workload's events, cumulative reward and who leads it, and the same
measures on the gap to a non-learning reference (one row per cell; aggregate with
:func:`ilets.report.stats.tables.summary_table`)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ilets.report.stats.resampling import method_order
# where the workload's events strike: recorded by the grid (OUT/events.json), re-exported here
from ilets.study.grid import event_decisions, online_event_ranges  # noqa: F401


#: Curve columns aggregated by :func:`first_n`.
CURVE_COLS = ("reward", "response", "success", "energy_kwh")

_CELL_KEYS = ("method", "servers", "seed", "cell")


# --- cold start and adaptation on learning curves ----------------------------------------

def _cells_of(curves: pd.DataFrame):
    key = "cell" if "cell" in curves else ["method", "servers", "seed"]
    for _, g in curves.groupby(key, sort=True):
        g = g.sort_values("window")
        yield {k: g[k].iloc[0] for k in _CELL_KEYS if k in g}, g


def _window_bounds(curve: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """0-based [start, end) decision indices of each window of one cell's curve."""
    end = curve["decision_end"].to_numpy(dtype=np.int64)
    return end - curve["decisions"].to_numpy(dtype=np.int64), end


def first_n(curves: pd.DataFrame, n_decisions: int) -> pd.DataFrame:
    """Per cell: metrics over its first ``n_decisions`` decisions (the cold start).

    Uses the curve windows that lie entirely within the first ``n_decisions`` decisions
    (``decision_end <= n_decisions``), so ``n_decisions`` is rounded down to whole windows
    (``curve_every`` decisions each); ``decisions`` says how many were covered (0 and NaNs
    if ``n_decisions`` is below the first window). ``reward``, ``response`` and ``success``
    are decision-weighted means of the window means, ``sum(x_w d_w) / sum(d_w)`` with
    ``d_w`` the window's decisions, i.e. exactly the mean over those decisions;
    ``energy_kwh`` is the sum of the windows' energy. Aggregate per method and scale with
    ``summary_table(first_n(...), metrics_cols=CURVE_COLS)``.
    """
    rows = []
    for keys, c in _cells_of(curves):
        c = c[c["decision_end"] <= n_decisions]
        d = c["decisions"].to_numpy(dtype=float)
        tot = d.sum()
        row = {**keys, "n_decisions": n_decisions, "decisions": int(tot)}
        for col in ("reward", "response", "success"):
            row[col] = float(np.sum(c[col].to_numpy(dtype=float) * d) / tot) if tot > 0 else np.nan
        row["energy_kwh"] = float(c["energy_kwh"].sum()) if tot > 0 and "energy_kwh" in c else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def convergence_decisions(curve: pd.DataFrame, tol: float = 0.05, final_frac: float = 0.2, smooth: int = 1,
                          column: str = "reward", band: float | None = None) -> float:
    """Decisions until one cell's windowed reward enters its final band and never leaves.

    ``curve``: one cell's curve rows. Let ``r_w`` be the windowed mean reward (optionally a
    trailing rolling mean over ``smooth`` windows), ``final`` the mean of ``r_w`` over the
    last ``ceil(final_frac * W)`` of the ``W`` windows, and the band ``|r_w - final| <= tol *
    |final|``. With ``k`` the first window such that every window ``w >= k`` is in the band,
    the result is the number of decisions made before window ``k`` starts
    (``decision_end[k] - decisions[k]``; 0 if in the band from the first window). NaN if the
    last window is outside the band (never settles) or the curve is empty. Note: with a
    noisy reward and a small ``tol`` many runs never settle; report the fraction settled.

    ``band``: an absolute half-width instead of ``tol * |final|`` (for a gap to a reference,
    whose final level may be near 0, :func:`gap_convergence_table`).
    """
    c = curve.sort_values("window")
    r = c[column].to_numpy(dtype=float)
    if len(r) == 0:
        return np.nan
    if smooth > 1:
        r = pd.Series(r).rolling(smooth, min_periods=1).mean().to_numpy()
    k_final = max(1, int(np.ceil(final_frac * len(r))))
    final = float(np.mean(r[-k_final:]))
    half = tol * abs(final) if band is None else float(band)
    inside = np.abs(r - final) <= half + 1e-12 * max(1.0, abs(final))  # a constant curve is inside its own band
    if not inside[-1]:
        return np.nan
    outside = np.flatnonzero(~inside)
    k = 0 if len(outside) == 0 else int(outside[-1]) + 1
    start, _ = _window_bounds(c)
    return float(start[k])


def convergence_table(curves: pd.DataFrame, tol: float = 0.05, final_frac: float = 0.2, smooth: int = 1,
                      column: str = "reward") -> pd.DataFrame:
    """:func:`convergence_decisions` of every cell, with ``settled`` (not NaN) and the total
    ``decisions`` of the cell. Aggregate with ``summary_table(..., metrics_cols=
    ("convergence_decisions",))``; its ``n_nan`` counts cells that never settled."""
    rows = []
    for keys, c in _cells_of(curves):
        v = convergence_decisions(c, tol, final_frac, smooth, column)
        rows.append({**keys, "convergence_decisions": v, "settled": bool(np.isfinite(v)),
                     "decisions": int(c["decision_end"].max())})
    return pd.DataFrame(rows)


def oscillation(curve: pd.DataFrame, events: Mapping[str, int | tuple[int, int]], span: int | None = None,
                column: str = "reward") -> pd.DataFrame:
    """Oscillation of one cell's windowed reward after each event.

    ``events`` maps an event name to the 0-based decision index ``d`` at which it strikes
    (with ``span`` in decisions) or directly to a decision range ``(d, d_end)`` (see
    :func:`event_decisions`; the curves table has decision counts, not times). The windows
    of the event are those overlapping ``[d, d_end)`` (``d_end = d + span``): window ``w``
    covers decisions ``[decision_end_w - decisions_w, decision_end_w)``, so the window in
    which the event strikes is included. Over these ``n`` windowed values ``r_1..r_n``:

    * ``var``: sample variance ``sum (r_i - mean r)^2 / (n - 1)``;
    * ``mad``: mean absolute first difference ``sum |r_{i+1} - r_i| / (n - 1)`` (sensitive to
      back-and-forth swings rather than to a level shift).

    Both are NaN with fewer than 2 windows (choose ``span`` >= 2 curve windows). One row per
    event: ``event``, ``start``, ``end``, ``windows``, ``var``, ``mad``.
    """
    c = curve.sort_values("window")
    start, end = _window_bounds(c)
    r = c[column].to_numpy(dtype=float)
    rows = []
    for name, ev in events.items():
        if isinstance(ev, (tuple, list)):
            d, d_end = int(ev[0]), int(ev[1])
        else:
            if span is None:
                raise ValueError("oscillation: give span (decisions) or (start, end) decision ranges")
            d, d_end = int(ev), int(ev) + int(span)
        sel = r[(start < d_end) & (end > d)]
        n = len(sel)
        rows.append({"event": name, "start": d, "end": d_end, "windows": n,
                     "var": float(np.var(sel, ddof=1)) if n > 1 else np.nan,
                     "mad": float(np.mean(np.abs(np.diff(sel)))) if n > 1 else np.nan})
    return pd.DataFrame(rows, columns=["event", "start", "end", "windows", "var", "mad"])


def oscillation_table(curves: pd.DataFrame, events, span: int | None = None, column: str = "reward") -> pd.DataFrame:
    """:func:`oscillation` of every cell. ``events`` is a mapping (same for every cell) or a
    callable ``seed -> mapping`` (the online arrivals, hence the events' decision indices,
    depend on the workload seed). Aggregate with ``summary_table(..., metrics_cols=("var",
    "mad"), by=("servers", "method", "event"))``."""
    out = []
    for keys, c in _cells_of(curves):
        ev = events(keys["seed"]) if callable(events) else events
        o = oscillation(c, ev, span, column).assign(**keys)
        out.append(o[[*keys, "event", "start", "end", "windows", "var", "mad"]])
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def cumulative_reward(curves: pd.DataFrame) -> pd.DataFrame:
    """Cumulative reward against decisions, per cell.

    For each window ``w`` of a cell: ``cum_reward_w = sum_{v <= w} reward_v * decisions_v``
    (the sum of the per-decision rewards so far; rewards are negative costs, so this falls,
    and "highest" means least negative) and ``mean_reward_so_far = cum_reward_w /
    decision_end_w``. Columns: cell keys, ``window``, ``decision_end``, ``cum_reward``,
    ``mean_reward_so_far``. Compare methods at equal ``decision_end`` (every method of a
    scale and seed schedules the same tasks), e.g. with :func:`summary_table` on one
    ``decision_end`` slice.
    """
    out = []
    for keys, c in _cells_of(curves):
        cum = np.cumsum(c["reward"].to_numpy(dtype=float) * c["decisions"].to_numpy(dtype=float))
        de = c["decision_end"].to_numpy()
        out.append(pd.DataFrame({**{k: [v] * len(c) for k, v in keys.items()}, "window": c["window"].to_numpy(),
                                 "decision_end": de, "cum_reward": cum, "mean_reward_so_far": cum / de}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def cold_start_decisions(curves: pd.DataFrame, frac: float = 0.1, min_windows: int = 1) -> int:
    """The ``N`` of "the first N decisions": ``frac`` of the online segment, in whole windows.

    ``frac`` times the shortest cell's decision count, rounded down to a multiple of the
    curve window (``curve_every``: the largest ``decisions`` of a window), and at least
    ``min_windows`` windows. 0 for an empty table.
    """
    if len(curves) == 0:
        return 0
    every = int(curves["decisions"].max())
    total = int(curves.groupby("cell" if "cell" in curves else ["method", "servers", "seed"])["decision_end"]
                .max().min())
    n = int(frac * total) // every * every
    return int(min(max(n, min_windows * every), total))


def event_markers(per_seed: Mapping[Any, Mapping[str, int | tuple[int, int]]]) -> dict[str, float]:
    """Mean start decision of each event over seeds (for plot markers): ``per_seed`` maps a
    seed to :func:`event_decisions` or :func:`online_event_ranges` output. Events missing
    from some seed are averaged over the seeds that have them."""
    acc: dict[str, list[float]] = {}
    for ev in per_seed.values():
        for name, d in ev.items():
            acc.setdefault(name, []).append(float(d[0] if isinstance(d, (tuple, list)) else d))
    return {name: float(np.mean(v)) for name, v in acc.items()}


def leader_table(cum: pd.DataFrame, col: str = "cum_reward", higher: bool = True,
                 methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Which method leads on ``col`` along the pass, per fleet size.

    ``cum`` is :func:`cumulative_reward`'s output (or any table with ``method``,
    ``servers``, ``seed``, ``decision_end`` and ``col``). At each checkpoint
    (``decision_end``) every method of ``methods`` (default: all) has a results, the seed
    mean of ``col`` is taken, and the leader is the method with the best mean. Per
    (servers, method): ``checkpoints``, ``share_led`` (fraction of checkpoints led),
    ``final`` (seed mean at the last checkpoint), ``final_rank`` (1 = best at the end) and
    ``leads_from``: the first checkpoint from which the method leads at every later one
    (NaN unless it leads at the end): "reaches the highest and stays there" from this
    decision on.
    """
    cols = ["servers", "method", "checkpoints", "share_led", "final", "final_rank", "leads_from"]
    if len(cum) == 0:
        return pd.DataFrame(columns=cols)
    rows = []
    for s, g in cum.groupby("servers", sort=True):
        ms = method_order(g["method"].unique()) if methods is None else [m for m in methods if m in set(g["method"])]
        if not ms:
            continue
        wide = g[g["method"].isin(ms)].groupby(["decision_end", "method"])[col].mean().unstack("method")
        wide = wide.reindex(columns=ms).dropna().sort_index()
        if wide.empty:
            continue
        leader = (wide.idxmax(axis=1) if higher else wide.idxmin(axis=1)).to_numpy()
        last = wide.iloc[-1]
        ranks = last.rank(ascending=not higher, method="min")
        ends = wide.index.to_numpy()
        for m in ms:
            lead = leader == m
            if lead[-1]:
                not_lead = np.flatnonzero(~lead)
                k = 0 if len(not_lead) == 0 else int(not_lead[-1]) + 1
                since = float(ends[k])
            else:
                since = np.nan
            rows.append({"servers": s, "method": m, "checkpoints": len(wide), "share_led": float(lead.mean()),
                         "final": float(last[m]), "final_rank": int(ranks[m]), "leads_from": since})
    return pd.DataFrame(rows, columns=cols)


def relative_curves(curves: pd.DataFrame, reference: str = "greedy-cost",
                    cols: Sequence[str] = ("reward", "response", "success"), keep_reference: bool = False
                    ) -> pd.DataFrame:
    """Learning curves minus a reference method's curve on the same tasks.

    Every method of one fleet size and seed schedules the same online tasks in the same
    order, so window ``w`` of every cell covers the same decisions; the arrival bursts and
    the trend move all of them together. Subtracting the ``reference`` cell's value of the
    same (servers, seed, window) from ``cols`` removes that shared, workload-driven part and
    leaves the method's own gap (same sign convention: for reward, > 0 means better than the
    reference). Cells without a reference cell are dropped, and so are the reference's own
    rows unless ``keep_reference`` (then its gap is 0 in every window); other columns are
    kept, so every curve function applies to the result.
    """
    if len(curves) == 0 or reference not in set(curves["method"]):
        return curves.iloc[0:0].copy()
    keys = ["servers", "seed", "window"]
    ref = curves[curves["method"] == reference][keys + list(cols)].drop_duplicates(keys)
    ref = ref.rename(columns={c: f"_ref_{c}" for c in cols})
    out = (curves if keep_reference else curves[curves["method"] != reference]).merge(ref, on=keys, how="inner")
    for c in cols:
        out[c] = out[c] - out.pop(f"_ref_{c}")
    return out.reset_index(drop=True)


def last_checkpoint(table: pd.DataFrame, x: str = "decision_end") -> pd.DataFrame:
    """Rows of a per-checkpoint table (e.g. :func:`cumulative_reward`) at the last checkpoint
    every cell of the fleet size reached (the smallest per-cell maximum of ``x``), so every
    method is compared after the same decisions."""
    if len(table) == 0:
        return table.copy()
    cell = "cell" if "cell" in table else ["method", "seed"]
    out = []
    for _, g in table.groupby("servers", sort=True):
        end = g.groupby(cell)[x].max().min()
        out.append(g[g[x] == end])
    return pd.concat(out, ignore_index=True)


# --- curve measures on the gap to a non-learning reference -------------------------------

#: The non-learning reference of the curve measures: a heuristic whose windowed reward over the
#: same tasks carries the workload's own swings (bursts, trend), which the gap removes.
GAP_REFERENCE = "greedy-cost"


def gap_convergence_table(curves: pd.DataFrame, reference: str = GAP_REFERENCE, tol: float = 0.05,
                          final_frac: float = 0.2, smooth: int = 3) -> pd.DataFrame:
    """Convergence measured on the gap to ``reference``'s windowed reward over the same tasks.

    Per (servers, seed), the reference's own windowed reward is first asked to settle
    (:func:`convergence_decisions` with ``tol``, ``final_frac`` and ``smooth``):
    ``reference_settled``. Then every cell's gap to it (:func:`relative_curves`, the reference
    kept, its gap 0) is asked to settle within the same absolute band, ``tol`` times the
    reference's final level: a gap that is constant, as a non-learning policy's is where it
    tracks the load like the reference, settles at decision 0. ``testable`` is
    ``reference_settled``: where the reference itself does not settle, the load never
    settles within the band either, and the decisions a learner needs cannot be told from
    the load's shape. Columns: cell keys, ``convergence_decisions`` (NaN: the gap never
    settles), ``settled``, ``decisions``, ``reference_settled``, ``testable``. Empty without
    the reference.
    """
    cols = [*_CELL_KEYS, "convergence_decisions", "settled", "decisions", "reference_settled", "testable"]
    if len(curves) == 0 or reference not in set(curves["method"]):
        return pd.DataFrame(columns=cols)
    ref = curves[curves["method"] == reference]
    level = {}
    for keys, c in _cells_of(ref):
        r = c["reward"].to_numpy(dtype=float)
        if smooth > 1:
            r = pd.Series(r).rolling(smooth, min_periods=1).mean().to_numpy()
        final = float(np.mean(r[-max(1, int(np.ceil(final_frac * len(r)))):]))
        settled = bool(np.isfinite(convergence_decisions(c, tol, final_frac, smooth)))
        level[(keys["servers"], keys["seed"])] = (tol * abs(final), settled)
    rows = []
    for keys, c in _cells_of(relative_curves(curves, reference, keep_reference=True)):
        band, ref_settled = level[(keys["servers"], keys["seed"])]
        v = convergence_decisions(c, tol, final_frac, smooth, band=band)
        rows.append({**keys, "convergence_decisions": v, "settled": bool(np.isfinite(v)),
                     "decisions": int(c["decision_end"].max()), "reference_settled": ref_settled,
                     "testable": ref_settled})
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=cols)


def gap_oscillation_table(curves: pd.DataFrame, events, reference: str = GAP_REFERENCE, span: int | None = None
                          ) -> pd.DataFrame:
    """:func:`oscillation_table` of the gap to ``reference`` (:func:`relative_curves`, the
    reference kept): the swings the workload drives in every policy's reward cancel, so a
    policy whose reward moves with the load like the reference's (any fixed rule, the
    reference itself) scores ``mad == 0``. Empty without the reference."""
    gap = relative_curves(curves, reference, keep_reference=True)
    return oscillation_table(gap, events, span) if len(gap) else pd.DataFrame()
