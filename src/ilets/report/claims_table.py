"""The claims table the landing page, the summary and README open with: one row per claim the
paper makes (the paper's figure, ours with the authors' flat learner and with the per-server
learner, one verdict, one caveat), a plain abstract above it and the caveats in full below.

Nothing here judges anew: each row reads the verdicts of :mod:`ilets.report.verdicts` (the
same rule, comparisons and resamples as every chapter; :func:`ilets.report.verdicts.all_verdicts`
for each family) and says them in a cell: a single comparison's pooled effect with its 95 %
interval (``+29.0 % [+28.6, +29.4]``), or, where the effect changes sign between fleet sizes,
the effect at each fleet size (``+14.6 / -9.4 / -36.4 %``); for the claims made of several
comparisons (the cold start, the trend change) the weakest comparison, named.

Two rows are decided beside the rule, each from the results: an energy gain of the paper's
larger than all the room the model allows (the energy that min-energy, the heuristic that
places each task where it adds least power, saves against the authors'-design DRL, at every
fleet size) cannot be tested here; and the decision time holds when ours is below the paper's
at every fleet size. ``python -m ilets.report.claims_table --write README.md`` (and
``--write book/intro.md``) writes the block from the shipped results; tests keep both equal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import pandas as pd

from ilets.method_table import LEARNERS, METHOD_LABELS
from ilets.report import stats as S
from ilets.report.stats.prose import count_text
from ilets.report.verdicts.claims import Verdict

if TYPE_CHECKING:
    from ilets.report.rl_stage import RLStageReport
from ilets.report.verdicts.rule import (DIRECTION_ONLY, FAILS, HOLDS, HOLDS_POOLED, HOLDS_SOME, NO_DATA, NOT_TESTABLE,
                                        PARTLY, REPRODUCED, REVERSES, component_table)

#: README's and the landing page's block (written by ``python -m ilets.report.claims_table``).
MARKERS = ("<!-- claims:start -->", "<!-- claims:end -->")

#: The table's columns.
COLUMNS = ["claim", "paper", "authors' flat learner", "per-server learner", "verdict", "caveat"]

#: A hyphen inside a word ("per-server", "21-38 ms") is written as the non-breaking hyphen in the
#: table's cells, so a browser never breaks the word there (a minus sign before a number is kept).
NB_HYPHEN = "\u2011"
_INNER_HYPHEN = re.compile(r"(?<=\w)-(?=\w)")

#: A family's verdict on one row, in words (best first).
YES, PART, NO, REVERSED, UNTESTABLE = "reproduced", "partly", "not reproduced", "reversed", "untestable here"
WORDS = (YES, PART, NO, REVERSED, UNTESTABLE)
#: What a family without results shows.
NO_RESULTS = "no results yet"

_STATUS_WORD = {HOLDS: YES, HOLDS_POOLED: PART, HOLDS_SOME: NO, DIRECTION_ONLY: NO, FAILS: NO, REVERSES: REVERSED,
                NO_DATA: UNTESTABLE}
_CLAIM_WORD = {REPRODUCED: YES, PARTLY: PART, NOT_TESTABLE: UNTESTABLE}
#: Component statuses from weakest to strongest (the weakest comparison speaks for a claim of several).
_STRENGTH = (REVERSES, FAILS, DIRECTION_ONLY, HOLDS_SOME, HOLDS_POOLED, HOLDS, NO_DATA)

MEASURES = {"avg_response_s": "response time", "energy_kwh": "energy", "success_rate": "success rate"}
ENERGY = "energy_kwh"
#: The heuristic whose energy bounds the energy a scheduler can save here.
ROOM_HEURISTIC = "min-energy"
#: Short caveats, keyed as the notes below the table are.
CLONE, WEAK_DRL, ROOM, BEST, START, DRIFT, FAST = "clone", "weak", "room", "best", "start", "drift", "fast"
ROOM_FLAT = "room-flat"


@dataclass(frozen=True)
class ClaimRow:
    """One row: the claim, the paper's figure, each family's number and verdict word, the
    verdict and the caveat."""

    claim: str
    paper: str
    flat: str
    per_server: str
    verdict: str
    caveat: str = ""
    flat_word: str = ""
    per_server_word: str = ""


@dataclass(frozen=True)
class ClaimsTable:
    rows: list[ClaimRow]
    notes: list[str] = field(default_factory=list)  #: the caveats in full, shown under the table
    abstract: str = ""

    @property
    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([[r.claim, r.paper, r.flat, r.per_server, r.verdict, r.caveat] for r in self.rows],
                            columns=COLUMNS)

    @property
    def table_markdown(self) -> str:
        lines = ["| " + " | ".join(_INNER_HYPHEN.sub(NB_HYPHEN, c) for c in COLUMNS) + " |",
                 "|" + "|".join([":--"] * len(COLUMNS)) + "|"]
        lines += ["| " + " | ".join(_INNER_HYPHEN.sub(NB_HYPHEN, c.replace("|", "/")) for c in row) + " |"
                  for row in self.frame.itertuples(index=False)]
        return "\n".join(lines) + "\n"

    @property
    def notes_markdown(self) -> str:
        return "".join(f"* {n}\n" for n in self.notes)

    @property
    def markdown(self) -> str:
        """The block README and the landing page carry: the abstract, the table, the notes."""
        return f"{self.abstract}\n\n{self.table_markdown}\n{self.notes_markdown}"


# --- cells --------------------------------------------------------------------------------

def pct(x: float, digits: int = 1) -> str:
    """``+1.2``, ``-0.4`` (no ``-0.0``)."""
    text = f"{x:+.{digits}f}"
    return "+" + text[1:] if float(text) == 0 else text


def effect_cell(row: Mapping) -> str:
    """A comparison's effect (a row of :func:`ilets.report.verdicts.rule.component_table`):
    ``+1.0 % [+0.8, +1.1]`` pooled when every fleet size has one sign, else the effect at each
    fleet size, ``+14.6 / -9.4 / -36.4 %`` (never averaged across signs)."""
    per = row["per_scale"]
    if not per:
        return "not measured"
    if row["same_sign"] and len(per) > 1:
        return f"{pct(row['pooled'])} % [{pct(row['pooled_low'])}, {pct(row['pooled_high'])}]"
    if len(per) == 1:
        _, e, lo, hi = per[0]
        return f"{pct(e)} % [{pct(lo)}, {pct(hi)}]"
    return " / ".join(pct(e) for _, e, _, _ in per) + " %"


def weakest(components: pd.DataFrame) -> Mapping | None:
    """The comparison that speaks for a claim of several: the weakest status, then the
    lowest pooled effect."""
    if components.empty:
        return None
    rank = components["status"].map({s: i for i, s in enumerate(_STRENGTH)})
    order = components.assign(_rank=rank, _low=components["pooled"].astype(float)).sort_values(["_rank", "_low"])
    return order.iloc[0].to_dict()


def combined(flat: str, per_server: str) -> str:
    """One verdict from the two families' words: the same word, or which family alone
    reproduces it, or the better word with its family."""
    if per_server == NO_RESULTS or flat == per_server:
        return flat
    if per_server == YES:
        return "per-server only"
    if flat == YES:
        return "flat only"
    better = per_server if WORDS.index(per_server) < WORDS.index(flat) else flat
    return f"{better}, {'per-server' if better == per_server else 'flat'}"


def _components(v: Verdict | None) -> pd.DataFrame:
    return component_table(v.effects) if v is not None and len(v.effects) else component_table(None)


def _measure_cell(v: Verdict | None, measure: str) -> tuple[str, str]:
    comp = _components(v)
    hit = comp[comp["measure"] == measure]
    if hit.empty:
        return "not measured", UNTESTABLE
    row = hit.iloc[0].to_dict()
    return effect_cell(row), _STATUS_WORD[row["status"]]


def _claim_cell(v: Verdict | None) -> tuple[str, str]:
    if v is None:
        return "not measured", UNTESTABLE
    w = weakest(_components(v))
    if w is None or v.verdict == NOT_TESTABLE:
        return "not measured", UNTESTABLE
    label = f"{METHOD_LABELS.get(w['a'], w['a'])} vs {METHOD_LABELS.get(w['b'], w['b'])}"
    return f"{label}: {effect_cell(w)}", _CLAIM_WORD.get(v.verdict, NO)


# --- the facts behind the caveats -----------------------------------------------------------

def energy_room(metrics: pd.DataFrame, heuristic: str = ROOM_HEURISTIC, baseline: str = "drl") -> pd.Series:
    """Per fleet size, how much less energy ``heuristic`` uses than ``baseline`` (%, seed means):
    the room the model leaves a scheduler to save energy against DRL."""
    means = metrics[metrics["method"].isin([heuristic, baseline])].groupby(["method", "servers"])[ENERGY].mean()
    if heuristic not in means.index.get_level_values(0) or baseline not in means.index.get_level_values(0):
        return pd.Series(dtype=float)
    base, best = means.loc[baseline], means.loc[heuristic]
    return (100 * (1 - best / base)).dropna()


def clone_facts(per_server: pd.DataFrame) -> dict:
    """What says the per-server DRL+ stays its clone: the held-out change of its online pass
    (lowest and highest over fleet sizes, %), and the fleet size where DRL+ and ILETS end
    closest in response time, with both means (s)."""
    from ilets.study.heldout import heldout_change

    facts: dict = {}
    held = heldout_change(per_server[per_server["method"] == "drl+"], ("servers",))
    if len(held):
        facts["held_lo"], facts["held_hi"] = 100 * float(held["change"].min()), 100 * float(held["change"].max())
    means = per_server[per_server["method"].isin(["drl+", "ilets"])].groupby(["servers", "method"])[
        "avg_response_s"].mean().unstack()
    if {"drl+", "ilets"} <= set(means.columns) and len(means.dropna()):
        means = means.dropna()
        servers = (means["drl+"] - means["ilets"]).abs().idxmin()
        facts["agree_servers"] = int(servers)
        facts["agree"] = (float(means.loc[servers, "drl+"]), float(means.loc[servers, "ilets"]))
    return facts


def slower_than_best(metrics: pd.DataFrame, learner: str = "drl") -> tuple[int, str, float] | None:
    """At the smallest fleet size: how much slower ``learner`` responds than the heuristic with
    the best mean response time there (%, seed means), and which heuristic."""
    from ilets.config import HEURISTICS

    if metrics.empty or learner not in set(metrics["method"]):
        return None
    servers = int(metrics.loc[metrics["method"] == learner, "servers"].min())
    at = metrics[metrics["servers"] == servers].groupby("method")["avg_response_s"].mean()
    heur = at[[h for h in HEURISTICS if h in at.index]]
    if heur.empty:
        return None
    best = str(heur.idxmin())
    return servers, best, 100 * (float(at[learner]) / float(heur[best]) - 1)


def decision_range_us(values: Mapping[int, float]) -> str:
    lo, hi = min(values.values()), max(values.values())
    return f"{lo:.0f} µs" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} µs"


# --- the table ----------------------------------------------------------------------------

def build(flat: Sequence[Verdict], per_server: Sequence[Verdict] | None, flat_metrics: pd.DataFrame,
          per_server_metrics: pd.DataFrame | None, decision_ms: Mapping[int, float] | None = None,
          per_server_decision_ms: Mapping[int, float] | None = None, measured: bool = True,
          rl_stage: RLStageReport | None = None) -> ClaimsTable:
    """The table from each family's verdicts (:func:`ilets.report.verdicts.all_verdicts`, claims 1,
    2, 4, 7 and 8 at least; ``per_server`` None: no per-server results) and metrics (learner and
    heuristic cells), and DRL's median decision time per fleet size (ms) for each family (the flat
    one ``measured`` on an idle machine, chapter 8, or else from the cells' own records)."""
    paper = S.PAPER_IMPROVEMENTS
    by_flat = {v.claim: v for v in flat}
    by_ps = {v.claim: v for v in per_server} if per_server is not None else {}

    def ps_cell(fn, claim, *args):
        return fn(by_ps.get(claim), *args) if per_server is not None else (NO_RESULTS, NO_RESULTS)

    room = energy_room(flat_metrics)
    # each learner's own room: its DRL against min-energy (the per-server DRL is weaker, so its room is larger)
    ps_room = energy_room(per_server_metrics) if per_server is not None and per_server_metrics is not None \
        and len(per_server_metrics) else pd.Series(dtype=float)
    rows: list[ClaimRow] = []
    for claim, method, label, note in ((1, "drl+", "OINPT: DRL+ vs DRL", CLONE), (2, "ilets-", "OAIL: ILETS- vs DRL",
                                                                                    WEAK_DRL)):
        for measure, name in MEASURES.items():
            figure = paper[method][measure]
            (f_cell, f_word), (p_cell, p_word) = (_measure_cell(by_flat.get(claim), measure),
                                                  ps_cell(_measure_cell, claim, measure))
            verdict, caveat = combined(f_word, p_word), _CAVEATS[note]
            # a learner cannot test a gain larger than its own room at every fleet size
            flat_out = measure == ENERGY and len(room) and figure > float(room.max())
            ps_out = measure == ENERGY and (not len(ps_room) or figure > float(ps_room.max()))
            if flat_out and ps_out:
                verdict, caveat = UNTESTABLE, _CAVEATS[ROOM]
            elif flat_out:
                verdict, caveat, f_word = f"{p_word}, per-server", _CAVEATS[ROOM_FLAT], UNTESTABLE
            rows.append(ClaimRow(f"{label}, {name}", f"{pct(figure, 2)} %", f_cell, p_cell, verdict, caveat,
                                 f_word, p_word))
    for measure, name in MEASURES.items():
        (f_cell, f_word), (p_cell, p_word) = _measure_cell(by_flat.get(8), measure), ps_cell(_measure_cell, 8, measure)
        rows.append(ClaimRow(f"ILETS vs every heuristic, {name}", "beats all", f_cell, p_cell, combined(f_word, p_word),
                             _CAVEATS[BEST], f_word, p_word))
    for claim, label, said, note in ((4, "Cold start: DRL+ and ILETS ahead from the start", "ahead at once", START),
                                     (7, "Trend change: ILETS oscillates least", "least of all", DRIFT)):
        (f_cell, f_word), (p_cell, p_word) = _claim_cell(by_flat.get(claim)), ps_cell(_claim_cell, claim)
        rows.append(ClaimRow(label, said, f_cell, p_cell, combined(f_word, p_word), _CAVEATS[note], f_word, p_word))
    rows.append(_decision_row(decision_ms, per_server_decision_ms if per_server is not None else None,
                              per_server is not None))
    if rl_stage is not None:
        rows.append(_rl_stage_row(rl_stage))
    notes = _notes(flat_metrics, per_server_metrics if per_server is not None else None, room, decision_ms, measured)
    if rl_stage is not None and rl_stage.verdict is not None:
        from ilets.report.rl_stage import finding

        notes.append(f"**The RL stage on trial** (chapter 15). {finding(rl_stage)}")
    return ClaimsTable(rows, notes, abstract_text(rows, flat_metrics, per_server_metrics))


def _decision_row(flat_ms: Mapping[int, float] | None, ps_ms: Mapping[int, float] | None, has_ps: bool) -> ClaimRow:
    from ilets.study.latency import PAPER_DECISION_MS

    drl = PAPER_DECISION_MS["DRL"]
    said = f"{min(drl.values()):g}-{max(drl.values()):g} ms"

    def cell(ms):
        if not ms:
            return "not measured", UNTESTABLE
        fast = all(m in drl and 1e3 * ms[m] < 1e3 * drl[m] for m in ms)
        return decision_range_us({m: 1e3 * v for m, v in ms.items()}), YES if fast else NO

    f_cell, f_word = cell(flat_ms)
    p_cell, p_word = cell(ps_ms) if has_ps else (NO_RESULTS, NO_RESULTS)
    ratios = [drl[m] / v for m, v in (flat_ms or {}).items() if m in drl and v > 0]
    caveat = (f"ours {min(ratios):,.0f}-{max(ratios):,.0f}x faster: other code, host" if ratios
              else _CAVEATS[FAST])
    return ClaimRow("Decision time per task (DRL, median)", said, f_cell, p_cell, combined(f_word, p_word), caveat,
                    f_word, p_word)


def _rl_stage_row(report: RLStageReport) -> ClaimRow:
    """The RL stage's positive control as a row: what the plan behind DRL+ and ILETS assumes
    (fine-tuning improves on the clone) against the share of a known gap it closes."""
    from ilets.report.rl_stage import GAP_TO_PASS

    v = report.verdict
    if v is None:
        cell, verdict = NO_RESULTS, NO_RESULTS
    else:
        cell = f"{v.gap_closed:.0%} of the gap [{v.gap_low:.0%}, {v.gap_high:.0%}]"
        verdict = "passes its control" if v.passed else "fails its control"
    return ClaimRow("RL fine-tuning improves on its clone", "implied by DRL+", "not run", cell, verdict,
                    f"bar {GAP_TO_PASS:.0%}; Earliest-Finish clone toward Min-Energy")


_CAVEATS = {CLONE: "per-server DRL+ is its expert's frozen clone", WEAK_DRL: "per-server DRL, the yardstick, is weak",
            ROOM: "paper's gain exceeds the model's room",
            ROOM_FLAT: "beyond the flat model's room; within the per-server one's", BEST: "the best heuristic at each fleet size",
            START: "mean reward, first tenth of the pass", DRIFT: "one trend change, one window",
            FAST: "other code and host"}


def _notes(flat_metrics: pd.DataFrame, ps_metrics: pd.DataFrame | None, room: pd.Series,
           decision_ms: Mapping[int, float] | None, measured: bool = True) -> list[str]:
    notes = ["**How to read a cell.** An effect is our improvement in the paper's direction (positive: the claim "
             "holds that way), with its 95 % bootstrap interval over seeds, pooled over fleet sizes; where the sign "
             "changes between fleet sizes, the effects at each fleet size (smallest first) stand instead. A claim "
             "made of several comparisons shows its weakest one. The verdict joins both learners' verdicts"
             f": \"{YES}\" when both reproduce the claim, \"per-server only\" or \"flat only\" when one does, "
             f"\"{REVERSED}\" when the effect runs against the paper, \"{UNTESTABLE}\" when these results cannot "
             "test it."]
    if ps_metrics is not None and len(ps_metrics):
        facts = clone_facts(ps_metrics)
        said = []
        if "held_lo" in facts:
            said.append(f"fine-tuning online moves its held-out reward by only {pct(facts['held_lo'], 2)} % to "
                        f"{pct(facts['held_hi'], 2)} % (mean change at each fleet size)")
        if "agree" in facts:
            a, b = facts["agree"]
            same = f"{a:.3f}" == f"{b:.3f}"
            said.append(f"per-server DRL+ and ILETS end {'at the same' if same else 'at nearly the same'} response "
                        f"time ({a:.3f} and {b:.3f} s at {facts['agree_servers']} servers)")
        slow = slower_than_best(ps_metrics)
        weak = (f" Per-server DRL, learning from scratch, responds {slow[2]:.0f} % slower than {slow[1]} at "
                f"{slow[0]} servers." if slow else "")
        if said:
            notes.append("**The per-server DRL+ is its expert's frozen clone:** " + "; ".join(said) + ". So "
                         "\"reproduced\" for DRL+ against DRL with the per-server learner means that an expert's "
                         "clone beats PPO learned from scratch." + weak)
        elif weak:
            notes.append(f"**The per-server yardstick is weak.**{weak}")
    if len(room):
        figures = sorted({S.PAPER_IMPROVEMENTS[m][ENERGY] for m in ("drl+", "ilets-")})
        ps_room = energy_room(ps_metrics) if ps_metrics is not None and len(ps_metrics) else pd.Series(dtype=float)
        also = (f" (against the weaker per-server DRL, {ps_room.min():.1f} to {ps_room.max():.1f} %)"
                if len(ps_room) else "")
        notes.append(f"**Energy.** The paper's energy gains ({' and '.join(f'{f:.2f} %' for f in figures)}) exceed "
                     f"the room the model allows: even {ROOM_HEURISTIC}, which places each task where it adds the "
                     f"least power, uses only {room.min():.1f} to {room.max():.1f} % less energy than DRL with the "
                     f"authors' design{also}. Where the paper's gain exceeds a learner's room at every fleet size, "
                     "that learner cannot test the claim.")
    if decision_ms:
        how = ("as measured once on an idle machine (chapter 8), with the per-server learner as its grid cells "
               "recorded it while they ran" if measured else "and with the per-server learner as the grid cells "
               "recorded it while they ran")
        notes.append(f"**Decision time** is DRL's median per task: with the authors' learner {how}. Both are far "
                     "below the paper's, which were measured on the authors' own code and machine.")
    return notes


def abstract_text(rows: Sequence[ClaimRow], flat_metrics: pd.DataFrame, ps_metrics: pd.DataFrame | None) -> str:
    """The plain abstract above the table (about 150 words), from the rows' verdict words."""
    gains = [r for r in rows if r.claim.startswith(("OINPT", "OAIL")) and r.verdict != UNTESTABLE]
    flat_yes = sum(r.flat_word == YES for r in gains)
    ps_yes = sum(r.per_server_word == YES for r in gains)
    heur = [r for r in rows if r.claim.startswith("ILETS vs every heuristic")]
    beaten = [r for r in heur if YES in (r.flat_word, r.per_server_word)]
    flat_said = ("none of the paper's gains over plain DRL" if flat_yes == 0 else
                 f"{count_text(flat_yes)} of the paper's {count_text(len(gains))} testable gains over plain DRL")
    text = ("ILETS schedules cloud tasks with a deep-RL policy that imitates optimisation experts, offline before it "
            "starts (OINPT) and online while it runs (OAIL). Only the paper's abstract and a study note were "
            "available, so the simulator, experts and settings were rebuilt, and the paper's trace window was "
            "replaced by a synthetic one with its counts and bursts. "
            f"With the authors' network design, {flat_said} "
            f"{'holds' if flat_yes <= 1 else 'hold'}. ")
    if ps_metrics is not None and len(ps_metrics):
        if ps_yes == 0:
            text += "A per-server network, which can copy its experts, reproduces none of them either. "
        else:
            ps_said = ("every testable gain" if ps_yes == len(gains) else
                       f"{count_text(ps_yes)} of the {count_text(len(gains))} testable gains")
            text += (f"A per-server network, which can copy its experts, reproduces {ps_said}, but only because its "
                     "imitating policies stay copies of a strong expert while its plain DRL is weak. ")
    energy = [r for r in rows if r.claim.startswith(("OINPT", "OAIL")) and "energy" in r.claim]
    if energy and all(r.verdict == UNTESTABLE for r in energy):
        text += "The paper's energy gains are larger than the model allows, so they cannot be tested here. "
    elif any(r.verdict == UNTESTABLE or r.flat_word == UNTESTABLE for r in energy):
        text += ("The paper's energy gains are larger than the room the authors' design leaves, so only the "
                 "per-server learner, whose plain DRL leaves more room, can test the smaller one. ")
    text += (("ILETS beats the best simple heuristic on no measure. " if not beaten else
              "ILETS beats the best simple heuristic on some measures only. ")
             + "Bottom line: imitation helps exactly as far as the network can represent the expert.")
    return text


def dependence_text(table: pd.DataFrame) -> str:
    """One plain sentence from :func:`ilets.report.families.families_table`: how many claims each
    learner reproduces and how many verdicts the learner changes."""
    from ilets.report import families as FF

    if table.empty:
        return "There are no claims to compare."

    def said(col):
        n_yes = int((table[col] == REPRODUCED).sum())
        n_part = int((table[col] == PARTLY).sum())
        text = "no claim is reproduced" if n_yes == 0 else f"{count_text(n_yes)} {'is' if n_yes == 1 else 'are'} reproduced"
        return text + (f" and {count_text(n_part)} partly" if n_part else "")

    text = f"With the authors' flat learner {said(FF.FAITHFUL)}"
    if (table[FF.COMPETENT] == FF.NO_RESULTS).all():
        return text + "; the per-server learner has no results here yet."
    changed = int((table[FF.DEPENDS] == FF.YES).sum())
    return (f"{text}; with the per-server learner {said(FF.COMPETENT)}. The learner changes "
            f"{count_text(changed)} of the {count_text(len(table))} verdicts.")


# --- from results folders -----------------------------------------------------------------

def _drl_store_ms(metrics: pd.DataFrame) -> dict[int, float]:
    drl = metrics[metrics["method"] == "drl"]
    if drl.empty or "decision_p50_ms" not in drl:
        return {}
    return {int(s): float(v) for s, v in drl.groupby("servers")["decision_p50_ms"].mean().items() if np.isfinite(v)}


def measured_decision_ms(ctx) -> tuple[dict[int, float], bool]:
    """DRL's median decision time per fleet size (ms) from the recorded latency measurement of
    ``ctx``'s settings (chapter 8; True), else from the cells' own records (False)."""
    from ilets.report import measurements as MS

    try:
        summary = MS.latency_summary(MS.of_context(ctx, "decision_time"))
    except (MS.MeasurementError, FileNotFoundError, KeyError):
        return _drl_store_ms(ctx.metrics), False
    ours = summary[(summary["method"] == "DRL") & (summary["path"] == "our decision")]
    return {int(r.servers): float(r.p50_ms) for r in ours.itertuples()}, True


def claims_table(ctx, flat: Sequence[Verdict] | None = None, per_server_ctx=None,
                 per_server: Sequence[Verdict] | None = None, find_per_server: bool = True,
                 rl_stage: RLStageReport | None = None) -> ClaimsTable:
    """The table of the results ``ctx`` (:class:`ilets.report.report_context.ReportContext`) and
    of the per-server grid beside it (``per_server_ctx``; found by
    :func:`ilets.report.families.per_server_context` when ``find_per_server``). Verdicts already
    computed (``flat``, ``per_server``) are reused, not judged again."""
    from ilets.report import verdicts as V

    def judged(c):
        return V.all_verdicts(c.metrics, c.curves, c.profile, reps=c.reps, out=c.out, claims=(1, 2, 4, 7, 8),
                              family=c.family)

    if per_server_ctx is None and find_per_server:
        from ilets.report.families import per_server_context

        per_server_ctx = per_server_context(ctx)
    flat = list(flat) if flat is not None else judged(ctx)
    ps_verdicts = None
    if per_server_ctx is not None and per_server_ctx.metrics["method"].isin(LEARNERS).any():
        ps_verdicts = list(per_server) if per_server is not None else judged(per_server_ctx)
    ps_metrics = per_server_ctx.metrics if ps_verdicts is not None else None
    decision, measured = measured_decision_ms(ctx)
    return build(flat, ps_verdicts, ctx.metrics, ps_metrics, decision,
                 _drl_store_ms(ps_metrics) if ps_metrics is not None else None, measured, rl_stage)


def summary_claims(ctx, found, both, per_server_ctx) -> ClaimsTable:
    """The summary chapter's table: :func:`claims_table` with the verdicts the chapter already
    judged (``found``: :func:`ilets.report.findings.summary_findings`; ``both``:
    :func:`ilets.report.families.families_findings`) and the shipped RL stage."""
    from ilets.report.rl_stage import load_report

    return claims_table(ctx, found.verdicts, per_server_ctx, both.per_server.verdicts if both.per_server else None,
                        find_per_server=False, rl_stage=load_report())


def shipped_table(shipped: Path | str = "shipped") -> ClaimsTable:
    """The table of the shipped paper-scale results and the shipped per-server grid."""
    from ilets.report.families import per_server_context
    from ilets.report.report_context import ReportContext

    from ilets.report.rl_stage import load_report

    shipped = Path(shipped)
    ctx = ReportContext.load(shipped / "paper")
    return claims_table(ctx, per_server_ctx=per_server_context(ctx, shipped / "per-server"),
                        rl_stage=load_report(shipped.resolve().parent))


def main(argv: list[str] | None = None) -> int:
    """Print the claims block (abstract, table, notes) of the shipped results, or write it
    between :data:`MARKERS` of a file (README.md, book/intro.md)."""
    from ilets.files import marked_block_main

    return marked_block_main(argv, "python -m ilets.report.claims_table", main.__doc__,
                             ("shipped", Path("shipped"), "the shipped folders' root"),
                             lambda shipped: shipped_table(shipped or Path("shipped")).markdown, MARKERS,
                             "the claims table")


if __name__ == "__main__":
    raise SystemExit(main())
