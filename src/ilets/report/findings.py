"""The book's findings: every number and sentence a results chapter states, as tested code.

Each chapter calls one function of this module with its :class:`ilets.report.report_context.ReportContext`
and gets a typed object of tables, numbers and sentences; the chapter only glues and plots
them. The rules that pick a sentence ("yes / no evidence / mixed") live here, next to
their tests, and every comparison comes from the study's one resampler
(:func:`ilets.report.stats.seed_effect`, through :func:`ilets.report.stats.compare` and
:func:`ilets.report.verdicts.component_effects`). Where a chapter speaks of a claim of the paper,
it shows the components of that claim's verdict (:func:`ilets.report.verdicts.component_table`),
so it states exactly the statuses the summary chapter uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ilets.config import FleetConfig
from ilets.method_table import METHOD_LABELS, learners_with
from ilets.metric_table import names as metric_names
from ilets.report import stats as S
from ilets.report import heuristic_gap as G
from ilets.report import verdicts as V
from ilets.report.report_context import ReportContext, and_join

#: Final metrics the chapters compare over the whole pass.
FINAL = ("mean_reward", "avg_response_s", "success_rate", "energy_kwh")
#: Curve columns compared over the first decisions.
FIRST = ("reward", "response", "success")
#: Directions of the measures that :data:`ilets.report.stats.HIGHER_IS_BETTER` does not know.
DIRECTIONS = {"var": False, "bc_agreement_after": True, "oail_applied": True}
#: The heuristic whose curve removes the workload's own swings (chapter 6; the claims' curve measures).
REFERENCE = S.GAP_REFERENCE
#: Workload descriptions for the summary's scope.
WORKLOADS = {
    "synthetic": "the embedded synthetic window calibrated to the paper's (same counts, arrival rate, bursts "
                 "and trend change; CPU requests from the real trace's distribution), because the Google "
                 "trace cannot be downloaded where this book is built",
    "google": "a window of the Google cluster trace (May 2011) chosen to match the paper's task counts",
}


def _label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


def _no_data(comp: pd.DataFrame) -> pd.DataFrame:
    return comp[comp["verdict"] != "no data"].reset_index(drop=True) if len(comp) else comp


def says(row: Mapping | None) -> str:
    """:func:`ilets.report.stats.says` (a comparison row as prose)."""
    return S.says(row)


# --- summary chapter ----------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class SummaryFindings:
    """The summary chapter: the scope of the results and the verdict on every claim."""

    n_done: int
    n_failed: int
    cpu_hours: float
    workload_text: str
    verdicts: list = field(repr=False)
    table: pd.DataFrame = field(repr=False)
    counts: dict = field(default_factory=dict)


def summary_findings(ctx: ReportContext) -> SummaryFindings:
    """Scope counts (finished cells, failed attempts, CPU hours) and :func:`ilets.report.verdicts.all_verdicts`."""
    verdicts = V.all_verdicts(ctx.metrics, ctx.curves, ctx.profile, reps=ctx.reps, out=ctx.out, family=ctx.family)
    table = V.verdict_table(verdicts)
    counts = {v: int((table["verdict"] == v).sum()) for v in V.VERDICTS}
    kind = ctx.run.workload.kind
    return SummaryFindings(n_done=ctx.n_done, n_failed=ctx.n_failed, cpu_hours=ctx.cpu_hours,
                           workload_text=WORKLOADS.get(kind, kind), verdicts=verdicts, table=table, counts=counts)


def scale_comparison(main: SummaryFindings, small: SummaryFindings | None, main_label: str,
                     small_label: str) -> pd.DataFrame:
    """The verdicts of the main results beside those of a reduced-scale run of the same claims,
    one row per claim, with a column that says whether the verdict depends on the scale.

    ``small`` None (no reduced-scale results at hand) gives the main verdicts alone.
    """
    table = main.table[["claim", "statement", "verdict"]].rename(columns={"verdict": main_label})
    if small is None:
        return table
    other = small.table[["claim", "verdict"]].rename(columns={"verdict": small_label})
    table = table.merge(other, on="claim", how="left")
    table["same at both scales"] = np.where(table[main_label] == table[small_label], "yes", "no")
    return table


@dataclass(frozen=True)
class Rerun:
    """The cells a book build re-runs live (chapter 10) and the folder they come from."""

    cells: tuple[str, ...]
    out: object = None  #: the folder they are re-run from (None: nothing is re-run)

    @property
    def from_md(self) -> str:
        """The folder re-run from, as Markdown (or a note that nothing is re-run)."""
        if self.out is None:
            return "no folder (only paper-scale results are at hand, and the build re-runs none of them)"
        from pathlib import Path

        root = Path(__file__).resolve().parents[3]
        out = Path(self.out).resolve()
        return f"`{out.relative_to(root) if out.is_relative_to(root) else out}`"

    @property
    def md(self) -> str:
        """The re-run cells as Markdown (code-formatted names), or "no cell"."""
        return and_join(f"`{c}`" for c in self.cells) or "no cell"


def _small_results(ctx: ReportContext, small_out=None):
    """The reduced-scale results folder shown beside ``ctx`` (:func:`ilets.study.results.scale_dir`
    unless ``small_out``), or None when it has no store or is ``ctx``'s own folder."""
    from pathlib import Path

    from ilets.study.results import scale_dir

    small_out = Path(small_out) if small_out else scale_dir()
    has_small = (small_out / "store" / "metrics.parquet").is_file() and small_out.resolve() != ctx.out.resolve()
    return small_out if has_small else None


def _small_context(ctx: ReportContext, small_out=None) -> ReportContext | None:
    """The context of :func:`_small_results` (with ``ctx``'s resamples), or None."""
    small_dir = _small_results(ctx, small_out)
    return ReportContext.load(small_dir, reps=ctx.reps) if small_dir is not None else None


def rerun_findings(ctx: ReportContext, small_out=None) -> Rerun:
    """What a build re-runs: a sample of the reduced-scale results (:func:`ilets.study.verify.book_sample`;
    :func:`ilets.study.results.scale_dir` unless ``small_out``), or of the main results when
    they are themselves reduced and nothing else is at hand. A paper-scale cell takes minutes,
    so a build re-runs none of those."""
    from ilets.study.verify import book_sample

    small = _small_results(ctx, small_out)
    source = small if small is not None else (None if ctx.paper_scale else ctx.out)
    cells = tuple(book_sample(source)) if source is not None else ()
    return Rerun(cells, source if cells else None)


@dataclass(frozen=True, kw_only=True)
class ScaleFindings:
    """The main verdicts beside a reduced-scale run's, and what the build read and re-ran."""

    table: pd.DataFrame
    small_name: str  #: profile of the reduced-scale results ("" when there are none)
    sentence: str  #: how many verdicts depend on the scale
    read_text: str  #: the folders this build read
    rerun: Rerun  #: the cells the build re-runs live (chapter 10)


def _at_servers(table: pd.DataFrame, servers) -> pd.DataFrame:
    return table[table["servers"].isin(list(servers))].reset_index(drop=True)


def scale_findings(ctx: ReportContext, small_out=None, summary: SummaryFindings | None = None) -> ScaleFindings:
    """Verdicts at the main results' scale beside those of the reduced-scale results
    (:func:`ilets.study.results.scale_dir` unless ``small_out``), judged on the main results'
    fleet sizes only; the reduced results are left out when they are the main results
    themselves or have no store. ``summary``: :func:`summary_findings` of ``ctx``, if already
    computed."""
    small = _small_context(ctx, small_out)
    if small is not None and set(small.scales) - set(ctx.scales):
        # the same fleet sizes at both scales, so a difference is one of scale, not of coverage
        small = replace(small, metrics=_at_servers(small.metrics, ctx.scales),
                                    curves=_at_servers(small.curves, ctx.scales))
    main_label = f"verdict ({ctx.name}, {ctx.scale_pct} scale, {ctx.scales_text} servers, {ctx.seeds_text} seeds)"
    small_label = (f"verdict at the reduced scale ({small.name}, {small.scale_pct}, {small.scales_text} servers, "
                   f"{small.seeds_text} seeds)" if small else "")
    table = scale_comparison(summary or summary_findings(ctx), summary_findings(small) if small else None, main_label,
                             small_label)
    if small is None:
        sentence = "No reduced-scale results are at hand, so no verdict here can be set beside another scale's."
    else:
        differ = int((table["same at both scales"] == "no").sum())
        sentence = (f"{differ} of {len(table)} verdicts differ between the two scales"
                    + (": those conclusions depend on the scale they are judged at." if differ else "."))
    read = f"`{ctx._shown_path}` ({ctx.name} profile)"
    if small is not None:
        read += f" and `{small._shown_path}` ({small.name} profile)"
    return ScaleFindings(table=table, small_name=small.name if small else "", sentence=sentence, read_text=read,
                         rerun=rerun_findings(ctx, small_out))


#: The faithful learner family, as the sentences name it.
FLAT_FAMILY = "the authors' flat policy"
#: The paper's three metrics, as the improvement table names them.
PAPER_LABELS = metric_names("label", S.PAPER_METRICS)
#: README's headline table sits between these markers (written by :mod:`ilets.report.headline`).
HEADLINE_MARKERS = ("<!-- headline:start -->", "<!-- headline:end -->")


#: The learner families as README's headline table names them.
HEADLINE_FAMILIES = {"flat": "faithful (flat)", "per-server": "competent (per-server)"}


def shipped_per_server(ctx: ReportContext):
    """The per-server grid shipped beside ``ctx``'s folder (``shipped/per-server`` beside
    ``shipped/paper``), None when ``ctx`` is not a shipped folder or nothing is shipped there:
    README is written from shipped folders only, never from a local ``results/`` grid."""
    from ilets.study.results import PER_SERVER_SEARCH

    folder = Path(ctx.out).parent / Path(PER_SERVER_SEARCH[-1]).name
    shipped = Path(ctx.out).parent.name == "shipped"
    return folder if shipped and (folder / "store" / "metrics.parquet").is_file() else None


def headline_gap_markdown(ctx: ReportContext, per_server=None) -> str:
    """README's lead: how every learner of both families compares with the best heuristic at
    each fleet size (:func:`ilets.report.heuristic_gap.learner_gaps`, the book's resamples), a
    sentence per family and one table. ``per_server``: the per-server grid's folder (judged
    beside ``ctx``'s heuristic cells, :meth:`ReportContext.load_family`); None: not shipped yet."""
    flat = G.learner_gaps(ctx.metrics, reps=ctx.reps)
    tables = {HEADLINE_FAMILIES["flat"]: flat}
    lines = [G.every_learner_sentence(flat, FLAT_FAMILY)]
    if per_server is None:
        lines.append("The per-server learners' grid is not shipped yet (`shipped/per-server`), so only the authors' "
                     "flat learners are compared here.")
    else:
        ps = ReportContext.load_family(per_server, ctx, "per-server")
        gaps = G.learner_gaps(ps.metrics, reps=ctx.reps)
        tables[HEADLINE_FAMILIES["per-server"]] = gaps
        pending = f" {ps.coverage_text}" if ps.pending_text else ""
        lines.append(f"{G.every_learner_sentence(gaps, 'the per-server policy')} (Read from "
                     f"`{Path(per_server).parent.name}/{Path(per_server).name}` beside the faithful grid's heuristic "
                     f"cells on the same seeds.{pending})")
    head = f"**Every learner against the best heuristic.** {' '.join(lines)}\n"
    table = G.learner_gaps_markdown(tables)
    if not table:
        return head
    best = " ".join(f"With the {family} learners, the best heuristic (by seed mean) is, {G.best_heuristics_text(t)}."
                    for family, t in tables.items() if len(t))
    return (f"{head}\nEach learner's improvement over the best heuristic at each fleet size (%, positive: the learner "
            f"is better; 95 % bootstrap CI over seeds, paired; `ilets.report.heuristic_gap`). {best}\n\n{table}\n")


def headline_markdown(ctx: ReportContext, per_server=None) -> str:
    """README's headline: how every learner of both families compares with the best heuristic
    (:func:`headline_gap_markdown`; the per-server grid shipped beside ``ctx``'s folder unless
    ``per_server``, :func:`shipped_per_server`), then the paper's improvement table beside ours
    (per fleet size and pooled, 95 % CIs), with what the results are (:attr:`ReportContext.banner`)."""
    from ilets.report import plots

    table = plots.comparison_display(paper_tables(ctx)[1], PAPER_LABELS).reset_index()
    gap = headline_gap_markdown(ctx, per_server if per_server is not None else shipped_per_server(ctx))
    return (f"{gap}\n"
            f"Improvement over DRL (%), the paper's and ours with 95 % bootstrap CIs over seeds "
            f"(paired; `ilets.report.stats.improvement_table`).\n\n{table.to_markdown(index=False)}\n\n"
            f"{ctx.banner}\n")


def gap_texts(ctx: ReportContext, per_server=None) -> dict[str, str]:
    """The summary's "Does any learner beat the best heuristic?" for each learner family:
    ``gap_flat`` (``ctx``'s own learners, :func:`ilets.report.heuristic_gap.gap_sentence`) and
    ``gap_per_server`` (Markdown: the per-server grid, :func:`ilets.study.results.per_server_dir`
    unless ``per_server``, against the faithful grid's heuristic cells on the same seeds; a
    sentence saying it is not here yet when it has no store)."""
    from pathlib import Path

    from ilets.report.report_context import coverage_sentence
    from ilets.study.results import load_metrics, per_server_dir

    texts = {"gap_flat": G.gap_sentence(G.gap_table(ctx.metrics, reps=ctx.reps), FLAT_FAMILY)}
    folder = Path(per_server) if per_server is not None else per_server_dir()
    if (folder / "store" / "metrics.parquet").is_file():
        metrics = load_metrics(folder)
        gap = G.gap_table(G.family_metrics(metrics, ctx.metrics), reps=ctx.reps)
        texts["gap_per_server"] = (f"{G.gap_sentence(gap, 'the per-server policy')} "
                                   f"{coverage_sentence(folder, metrics)} The heuristics are the faithful grid's "
                                   "cells on the same seeds.")
    else:
        texts["gap_per_server"] = ("The per-server learners' grid is not in this checkout yet, so the per-server "
                                   "family is judged only by its positive control above: frozen and greedy, its "
                                   "clones match their experts (Earliest-Finish, Greedy-Cost and GA+PSO) to within "
                                   "the control's tolerance.")
    return texts


def sci(x: float) -> str:
    """A rate as the book writes it: ``2.5e-6``, ``3e-4`` (no padded exponent)."""
    mantissa, exponent = f"{x:e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def learner_settings_text(run) -> str:
    """What the authors' code fixes of the learner and what we changed (the summary's "What
    was easy"), from the results' run configuration (:class:`ilets.config.RunConfig`) and the
    authors' learning rate (:data:`ilets.report.deviations.AUTHORS_LEARNING_RATE`)."""
    from ilets.report.deviations import AUTHORS_LEARNING_RATE

    theta = run.reward.theta
    ours = run.ppo.learning_rate
    lr = (f"its learning rate ({sci(AUTHORS_LEARNING_RATE)}) we did not keep: PPO learns at {sci(ours)} here"
          if not np.isclose(ours, AUTHORS_LEARNING_RATE) else f"so does its learning rate ({sci(ours)}), which we keep")
    return (f"the authors' code fixes the reward's weights (power and wait weighted {theta:g}/{1 - theta:g}; their "
            f"scales are ours) and the state layout; {lr}")


# --- chapter 5: OINPT and the cold start --------------------------------------------------

def agreement_sentence(after: pd.Series) -> str:
    """Whether the clone picks the expert's server on most demonstrated decisions, from the
    mean BC agreement after cloning at each fleet size."""
    after = after.dropna()
    if after.empty:
        return "no cloning statistics are recorded in this results store"
    majority = int((after >= 0.5).sum())
    if majority == len(after):
        return f"the clone picks the expert's server on most demonstrated decisions at all {len(after)} fleet sizes"
    return (f"the clone picks the expert's server on fewer than half of the demonstrated decisions at "
            f"{len(after) - majority} of {len(after)} fleet sizes")


def bottleneck_sentence(agree: Mapping | None, warm: Mapping | None) -> str:
    """Is the paper's state the bottleneck of cloning? From the rich-state variant's
    comparisons of the BC agreement and of the cloned start (``verdict`` of each)."""
    verdicts = [r["verdict"] for r in (agree, warm) if r is not None]
    if verdicts and all(v == "better" for v in verdicts) and len(verdicts) == 2:
        return ("yes: the richer state both raises the agreement and improves the cloned start, so the paper's "
                "state limits what cloning can copy")
    if not any(v == "better" for v in verdicts):
        return "no evidence of it: neither the agreement nor the cloned start improves, resolved, with the richer state"
    return "the evidence is mixed: only one of the agreement and the cloned start improves (resolved)"


@dataclass(frozen=True)
class VariantFindings:
    """A variant against the main study: the comparison table and a sentence."""

    name: str
    table: pd.DataFrame = field(repr=False)
    text: str = ""

    @property
    def present(self) -> bool:
        return len(self.table) > 0


def against_main(ctx: ReportContext, variant: str, first_main: pd.DataFrame, n_first: int,
                 final_cols: Sequence[str] = FINAL) -> pd.DataFrame:
    """First-``n_first`` and whole-pass comparisons of a variant with the main learners
    (:func:`ilets.report.stats.variant_comparison`), with an ``over`` column; empty if absent."""
    vm, vc = ctx.variant_metrics(variant), ctx.variant_curves(variant)
    if vm.empty:
        return pd.DataFrame()
    firsts = S.variant_comparison(first_main, S.first_n(vc, n_first), FIRST, reps=ctx.reps).assign(over="first N")
    finals = S.variant_comparison(ctx.learner_metrics, vm, final_cols, directions=DIRECTIONS, reps=ctx.reps) \
        .assign(over="whole pass")
    return _no_data(pd.concat([firsts, finals], ignore_index=True))


def _pick(comp: pd.DataFrame, metric: str, method: str = "drl+", over: str = "whole pass") -> dict | None:
    return S.comparison_row(comp, metric=metric, method=method, over=over)


@dataclass(frozen=True, kw_only=True)
class ColdStartFindings:
    """Chapter 5: the cold start (claim 4), what cloning achieved, and three variants."""

    n_first: int
    n_online: int
    curve_every: int
    first: pd.DataFrame = field(repr=False)
    first_summary: pd.DataFrame = field(repr=False)
    claim: V.Verdict = field(repr=False)
    components: pd.DataFrame = field(repr=False)
    first_pairs: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    bc_summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    texts: dict = field(default_factory=dict)
    no_critic: VariantFindings | None = None
    greedy_expert: VariantFindings | None = None
    floor: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    rich_state: VariantFindings | None = None

    @property
    def share(self) -> str:
        return f"{self.n_first / self.n_online:.0%}" if self.n_online else "n/a"


BC_COLS = ("bc_agreement_before", "bc_agreement_after", "critic_mse_before", "critic_mse_after", "demo_tasks",
           "demo_seconds", "oinpt_seconds")
#: the cloning report (ilets.agents.oinpt.cloning_report): top-k agreement and one-step regret,
#: on the cloned states and on held-out expert states
CLONE_COLS = ("bc_top1_train", "bc_top5_train", "bc_top1_heldout", "bc_top5_heldout", "bc_regret_rel_train",
              "bc_regret_rel_heldout")


#: Held-out agreement within this of the cloned one: the demonstrations are not memorised.
MEMORISED_GAP = 0.05
#: A richer state "helps" the flat clone when it raises its held-out agreement by more than this.
STATE_HELPS = 0.05
#: Exact agreement is "strict" when more than this share of the clone's disagreements are near-ties.
STRICT_SHARE = 0.5
#: The positive control's design keys: the authors' flat policy on their state, on the rich state, per-server.
FLAT_PAPER, FLAT_RICH, PER_SERVER = ("flat", "paper"), ("flat", "rich"), ("per-server", "per-server")
#: Experts that plan one step ahead (the others plan a window).
ONE_STEP_EXPERTS = ("earliest-finish", "greedy-cost")


def _design(control: pd.DataFrame, key: tuple[str, str]) -> pd.DataFrame:
    return control[(control["policy"] == key[0]) & (control["layout"] == key[1])]


def cloning_limit_sentence(control: pd.DataFrame | None) -> str:
    """What limits cloning, from the positive control's per-(expert, fleet size, design) summary
    (:func:`ilets.report.positive_control.summary`): the state (a richer state helps the flat
    clone by more than :data:`STATE_HELPS`), the planning horizon (the flat clone of a one-step
    expert agrees more than that of GA+PSO), or the flat policy itself (neither, while the
    per-server policy on a table of the servers' features matches its experts)."""
    if control is None or control.empty:
        return "The positive control is not in these results, so what limits cloning is not tested here."
    paper, rich, per = (_design(control, k) for k in (FLAT_PAPER, FLAT_RICH, PER_SERVER))
    if paper.empty:
        return "The positive control has no clone of the authors' flat design, so what limits cloning is not tested."
    a_paper = float(paper["agreement_exact"].mean())
    parts, helps, plans = [], None, None
    if len(rich):
        a_rich = float(rich["agreement_exact"].mean())
        helps = a_rich - a_paper > STATE_HELPS
        parts.append(f"Given every server's features (the rich state), the flat clone's held-out agreement is "
                     f"{a_rich:.1%} against {a_paper:.1%} on the paper's state (positive control, mean over "
                     f"experts and fleet sizes): "
                     + ("the state limits it." if helps else "what the state shows is not the limit."))
    one, plan = paper[paper["expert"].isin(ONE_STEP_EXPERTS)], paper[~paper["expert"].isin(ONE_STEP_EXPERTS)]
    if len(one) and len(plan):
        a_one, a_plan = float(one["agreement_exact"].mean()), float(plan["agreement_exact"].mean())
        plans = a_one - a_plan > STATE_HELPS
        parts.append(f"The flat clone of a one-step expert agrees on {a_one:.1%}, of GA+PSO on {a_plan:.1%}: "
                     + ("the expert's planning beyond one step is part of the limit." if plans else
                        "the expert's planning beyond one step is not the limit either."))
    if len(per):
        matched = int(per["matches"].sum())
        parts.append(f"The per-server policy, scoring each server from its row of the same features, agrees on "
                     f"{per['agreement_exact'].mean():.1%} and matches its expert in {matched} of {len(per)} "
                     "(expert, fleet size) cases"
                     + (": the limit is the flat policy, which must learn one output per server position from one "
                        "flat vector." if matched == len(per) and helps is False and plans is False else "."))
    return " ".join(parts)


def cloning_sentence(per: pd.DataFrame, control: pd.DataFrame | None = None) -> str:
    """What cloning achieved and what limits it, in numbers: per-fleet-size means of
    :data:`CLONE_COLS` (``per``, indexed by fleet size) and the positive control's summary
    (``control``, :func:`cloning_limit_sentence`).

    An empty ``per`` (or missing columns: results made before the cloning report existed)
    gives a sentence saying so.
    """
    if per is None or len(per) == 0 or not set(CLONE_COLS) <= set(per.columns) or per[list(CLONE_COLS)].isna().all().all():
        return "The cloning report (top-k agreement and regret) is not in these results."
    r = S.range_text
    gap = per["bc_top1_train"] - per["bc_top1_heldout"]
    return (f"On the cloned states the clone's first choice is the expert's in {r(per['bc_top1_train'], '.1%')} "
            f"of decisions and among its five most likely servers in {r(per['bc_top5_train'], '.1%')}; on held-out "
            f"expert states {r(per['bc_top1_heldout'], '.1%')} and {r(per['bc_top5_heldout'], '.1%')}. Its first "
            f"choice costs {r(per['bc_regret_rel_heldout'], '.1%')} more than the expert's, one step at a time, "
            f"on held-out states ({r(per['bc_regret_rel_train'], '.1%')} on cloned ones). "
            + ("Held-out agreement is close to the cloned one, so the demonstrations are not memorised: the clone "
               "fits even the states it was cloned on poorly. "
               if float(gap.abs().max()) < MEMORISED_GAP else
               "Agreement drops on held-out states: more demonstrations would help the clone. ")
            + cloning_limit_sentence(control))


def exact_agreement_sentence(control: pd.DataFrame | None) -> str:
    """Is exact agreement too strict a score? From the positive control's held-out agreement,
    exact and tie-aware (a server whose criterion is within :data:`ilets.agents.cloning.TIE_TOL`
    of the expert's counts as agreeing): it is strict when more than :data:`STRICT_SHARE` of
    the flat clone's disagreements are near-ties, i.e. near-equivalent servers."""
    from ilets.agents.cloning import TIE_TOL

    paper = _design(control, FLAT_PAPER) if control is not None and len(control) else pd.DataFrame()
    if paper.empty:
        return ("The positive control is not in these results, so whether the clone's disagreements are "
                "near-equivalent servers is not measured here.")
    exact, tie = float(paper["agreement_exact"].mean()), float(paper["agreement_tie"].mean())
    share = (tie - exact) / (1 - exact) if exact < 1 else 0.0
    regret = float(paper["regret_rel_heldout" if "regret_rel_heldout" in paper else "regret_rel"].mean())
    head = (f"Counting as agreement any server within a relative {TIE_TOL:g} of the expert's criterion raises the "
            f"flat clone's held-out agreement only from {exact:.1%} to {tie:.1%} (positive control): {share:.0%} of "
            f"its disagreements are near-ties, and its first choice costs {regret:.1%} more than the expert's. ")
    if share > STRICT_SHARE:
        return head + ("Most disagreements are near-equivalent servers, so exact agreement is a strict score here "
                       "and the curves, not the agreement, are the test of OINPT.")
    return head + ("Its disagreements are not near-equivalent servers, so exact agreement is not too strict a "
                   "score here: the clone picks worse servers.")


def _control_summary() -> pd.DataFrame:
    """The positive control's summary on the fleet size each clone was trained on (empty when
    its results are not in this checkout)."""
    from ilets.report import positive_control as PC

    same, _ = PC.split(PC.load(PC.control_dir())[0])
    return PC.summary(same)


def cold_start_findings(ctx: ReportContext) -> ColdStartFindings:
    """Everything chapter 5 states (see :class:`ColdStartFindings`)."""
    learn, lm = ctx.learner_curves, ctx.learner_metrics
    claim = V.claim_cold_start(ctx.curves, reps=ctx.reps)
    n = S.cold_start_decisions(learn, frac=0.1)
    online = int(learn.groupby("cell")["decision_end"].max().min()) if len(learn) else 0
    first = S.first_n(learn, n) if len(learn) else pd.DataFrame()
    first_summary = S.summary_table(first, metrics_cols=FIRST, reps=ctx.reps) if len(first) else pd.DataFrame()
    components = V.component_table(claim.effects)
    pairs = _no_data(S.compare_pairs(first, learners_with(oinpt=True), learners_with(oinpt=False), FIRST, reps=ctx.reps)) \
        if len(first) else pd.DataFrame(columns=["x", "y"])
    pairs = pairs.assign(pair=[f"{_label(x)} vs {_label(y)}" for x, y in zip(pairs["x"], pairs["y"])])
    texts: dict[str, str] = {"claim_verdict": claim.verdict}
    texts["claim_counts"] = _status_counts(components)

    # what cloning achieved (DRL+; ILETS clones the same demonstrations)
    cols = [c for c in (*BC_COLS, *CLONE_COLS) if c in lm]
    cloned = lm[lm["method"].isin(learners_with(oinpt=True))]
    bc_summary = S.summary_table(cloned, metrics_cols=cols, reps=ctx.reps) if len(cloned) and cols else pd.DataFrame()
    drlp = cloned[cloned["method"] == "drl+"]
    if len(drlp) and "bc_agreement_after" in drlp:
        per = drlp.groupby("servers")[["bc_agreement_before", "bc_agreement_after"]].mean()
        texts["agree_before"] = S.range_text(per["bc_agreement_before"], ".1%")
        texts["agree_after"] = S.range_text(per["bc_agreement_after"], ".1%")
        texts["agree_verdict"] = agreement_sentence(per["bc_agreement_after"])
    else:
        texts.update(agree_before="not measured", agree_after="not measured",
                     agree_verdict=agreement_sentence(pd.Series(dtype=float)))
    clone_cols = [c for c in CLONE_COLS if c in drlp]
    control = _control_summary()
    texts["cloning"] = cloning_sentence(drlp.groupby("servers")[clone_cols].mean() if clone_cols else pd.DataFrame(),
                                        control)
    texts["exact_agreement"] = exact_agreement_sentence(control)
    if len(drlp) and "critic_mse_after" in drlp and drlp["critic_mse_after"].notna().any():
        mse = drlp.groupby("servers")[["critic_mse_before", "critic_mse_after"]].mean()
        texts["critic_drop"] = S.range_text(1 - mse["critic_mse_after"] / mse["critic_mse_before"], ".0%")
    else:
        texts["critic_drop"] = "an unmeasured share"
    texts["demo_s"] = f"{drlp['demo_seconds'].mean():.1f}" if len(drlp) and "demo_seconds" in drlp else "n/a"
    texts["oinpt_s"] = f"{drlp['oinpt_seconds'].mean():.1f}" if len(drlp) and "oinpt_seconds" in drlp else "n/a"

    # the variants
    nc = against_main(ctx, "no-critic", first, n)
    if nc.empty:
        nc_text = f"{ctx.variant_missing_text('no-critic')}, so the effect of critic pre-training is not measured here."
    else:
        nc_text = (f"At {int(nc['servers'].min())} servers, DRL+ without critic pre-training changes the reward over "
                   f"the first {n:,} decisions by {says(_pick(nc, 'reward', over='first N'))}, and the whole-pass "
                   f"mean reward by {says(_pick(nc, 'mean_reward'))} (relative change of the variant against the "
                   "main DRL+; positive = the variant is better).")
    ge = against_main(ctx, "greedy-expert", first, n, final_cols=(*FINAL, "bc_agreement_after"))
    if ge.empty:
        ge_text = f"{ctx.variant_missing_text('greedy-expert')}, so the two teachers are not compared here."
    else:
        ge_text = (f"At {int(ge['servers'].min())} servers, cloning the greedy expert instead of GA/PSO changes "
                   f"DRL+'s reward over the first {n:,} decisions by {says(_pick(ge, 'reward', over='first N'))} "
                   f"and its whole-pass mean reward by {says(_pick(ge, 'mean_reward'))}, with a BC agreement change "
                   f"of {says(_pick(ge, 'bc_agreement_after'))}.")
    floor = S.compare(ctx.metrics, "drl+", "greedy-cost", FINAL, reps=ctx.reps).assign(clone="GA/PSO (main)")
    ge_metrics = ctx.variant_metrics("greedy-expert")
    if len(ge_metrics):
        floor = pd.concat([floor, S.compare(pd.concat([ge_metrics, ctx.metrics[ctx.metrics["method"] == "greedy-cost"]]),
                                            "drl+", "greedy-cost", FINAL, reps=ctx.reps)
                          .assign(clone="greedy (variant)")], ignore_index=True)
    floor = _no_data(floor)
    fr = floor[(floor["metric"] == "mean_reward") & (floor["clone"] == "GA/PSO (main)")] if len(floor) else floor
    if len(fr) == 0:
        texts["floor_text"] = ("The greedy-cost heuristic is not in this results store, so the clone is not compared "
                               "with its expert's level.")
    else:
        texts["floor_text"] = (f"Over the whole pass, the main DRL+ (cloned from GA/PSO, then learning) ends below "
                               f"the greedy heuristic's mean reward, resolved, at {int((fr['verdict'] == 'worse').sum())}"
                               f" of {len(fr)} fleet sizes (relative change {S.range_text(fr['rel_pct'], '+.1f')}%, "
                               "positive = DRL+ better).")
    rs = against_main(ctx, "rich-state", first, n, final_cols=(*FINAL, "bc_agreement_after"))
    if rs.empty:
        rs_text = f"{ctx.variant_missing_text('rich-state')}, so the state question is not answered here."
        texts["rs_verdict"] = "not measured"
    else:
        agree, warm = _pick(rs, "bc_agreement_after"), _pick(rs, "reward", over="first N")
        rs_text = (f"At {int(rs['servers'].min())} servers the richer state changes DRL+'s BC agreement by "
                   f"{says(agree)}, its reward over the first {n:,} decisions by {says(warm)} and its whole-pass mean "
                   f"reward by {says(_pick(rs, 'mean_reward'))}; for DRL (no cloning) the first-decision reward "
                   f"changes by {says(_pick(rs, 'reward', method='drl', over='first N'))} and the whole-pass mean "
                   f"reward by {says(_pick(rs, 'mean_reward', method='drl'))}.")
        texts["rs_verdict"] = bottleneck_sentence(agree, warm)
    return ColdStartFindings(n_first=n, n_online=online, curve_every=int(learn["decisions"].max()) if len(learn) else 0,
                             first=first, first_summary=first_summary, claim=claim, components=components,
                             first_pairs=pairs, bc_summary=bc_summary, texts=texts,
                             no_critic=VariantFindings("no-critic", nc, nc_text),
                             greedy_expert=VariantFindings("greedy-expert", ge, ge_text), floor=floor,
                             rich_state=VariantFindings("rich-state", rs, rs_text))


# --- chapter 6: OAIL and adaptation -------------------------------------------------------

def burst_sentence(pairs: pd.DataFrame) -> str:
    """ILETS against DRL after the bursts, from :func:`ilets.report.stats.compare_pairs` rows
    (``event``, ``y``, ``verdict``): counts of (fleet size, burst) cases by verdict."""
    v = pairs[pairs["event"].astype(str).str.startswith("burst") & (pairs["y"] == "drl")]["verdict"].value_counts() \
        if len(pairs) else pd.Series(dtype=int)
    if int(v.sum()) == 0:
        return "after the bursts, ILETS and DRL cannot be compared here."
    return (f"after the bursts, ILETS oscillates less than DRL (resolved) in {int(v.get('better', 0))} of "
            f"{int(v.sum())} (fleet size, burst) cases, more (resolved) in {int(v.get('worse', 0))}, and "
            f"indistinguishably in {int(v.get('unresolved', 0))}.")


def oscillation_pairs(osc: pd.DataFrame, reps: int) -> pd.DataFrame:
    """ILETS against each other learner on ``mad`` per (servers, event), paired by seed;
    ``verdict == "better"``: ILETS oscillates less."""
    if osc.empty:
        return pd.DataFrame(columns=["servers", "event", "x", "y", "metric", "verdict"])
    return _no_data(S.compare_pairs(osc, ["ilets"], ["drl", "drl+", "ilets-"], ["mad"], ("servers", "event"),
                                    directions=DIRECTIONS, reps=reps))


@dataclass(frozen=True, kw_only=True)
class AdaptationFindings:
    """Chapter 6: events, oscillation (claim 7), convergence (claim 5), cumulative reward
    (claim 6), the OAIL counters and effect, and the upcoming-window variant."""

    markers: dict
    event_order: list
    span_decisions: int
    gap: pd.DataFrame = field(repr=False)
    osc_reward: pd.DataFrame = field(repr=False)
    osc_gap: pd.DataFrame = field(repr=False)
    osc_summary: pd.DataFrame = field(repr=False)
    claims: dict = field(repr=False, default_factory=dict)
    components: dict = field(repr=False, default_factory=dict)
    conv: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    conv_summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    cum: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    leaders: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    lead_table: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    oail_summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    oail_effect: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    upcoming: VariantFindings | None = None
    texts: dict = field(default_factory=dict)
    #: :func:`curve_measures`: every method's convergence and oscillation on the gap to the reference
    measures: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: :func:`ilets.report.verdicts.cold_start_windows`: claim 4 over each window of first decisions
    cold_windows: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)


def _event_names() -> dict[str, str]:
    from ilets.workloads.workload import RATE_SHAPE

    return {**{f"burst_{i}": f"burst ({s:.0f} s)" for i, (s, _, _) in enumerate(RATE_SHAPE["bursts"])},
            "trend_change": f"trend change ({RATE_SHAPE['trend_change']:.0f} s)"}


#: Display names of the workload's designed events (their times in the paper's window).
EVENT_NAMES = _event_names()


def event_list_text(order: Sequence[str], names: Mapping[str, str] = EVENT_NAMES) -> str:
    """The events in ``order`` by their display names, comma-separated; ``"none"`` for none."""
    return ", ".join(names.get(e, e) for e in order) or "none"


#: Share of submitted OAIL windows that must come back for the emulators to "mostly keep up".
KEEP_UP_SHARE = 0.9


def oail_throughput_text(oail: pd.DataFrame, clock: str, latency_s: float) -> str:
    """How OAIL's emulators ran and whether they kept up, from the ILETS- and ILETS cells'
    metrics (``oail``: their rows, with ``oail_requests``, ``oail_completed``,
    ``oail_dropped``) and the run's ``oail.clock`` and ``oail.latency_s``.

    "keep up" when no window was dropped, "mostly keep up" when at least
    :data:`KEEP_UP_SHARE` of the windows came back, else "cannot keep up"."""
    requests, completed, dropped = (int(oail[c].sum()) for c in ("oail_requests", "oail_completed", "oail_dropped"))
    how = {"simulated": ("in simulated time (`oail.clock: simulated`): a window's plans reach the learner "
                         f"{1e3 * latency_s:.0f} ms of simulated time after it was submitted (the measured cost "
                         "of one request), whatever the host's speed"),
           "wall": "in wall-clock time (`oail.clock: wall`), so how many windows they serve depends on the host's speed",
           "sync": "synchronously (`oail.clock: sync`): the learner waits for every plan"}.get(clock, f"with clock {clock!r}")
    if not requests:
        return f"The emulators run {how}; no window was submitted in these results"
    share = completed / requests
    keep = "keep up" if dropped == 0 else "mostly keep up" if share >= KEEP_UP_SHARE else "cannot keep up"
    return (f"Our simulation runs as fast as it can rather than in real time, so the emulators run {how}. "
            f"They {keep}: over the {len(oail):,} ILETS- and ILETS cells, {requests:,} windows were submitted, "
            f"{completed:,} ({100 * share:.1f}%) came back and {dropped:,} were dropped")


#: Convergence settings: those of the claim-5 verdict (:func:`ilets.report.verdicts.claim_convergence`).
CONVERGENCE = {"tol": 0.05, "final_frac": 0.2, "smooth": 3}
OAIL_COLS = ("oail_requests", "oail_completed", "oail_applied", "oail_dropped", "oail_failed", "oail_updates",
             "oail_lag_p50")


def curve_measures(curves: pd.DataFrame, events, reference: str = REFERENCE, tol: float = 0.05,
                   final_frac: float = 0.2, smooth: int = 3) -> pd.DataFrame:
    """Every method's curve measures per fleet size, heuristics included, so the reader sees
    what a policy that does not learn scores on them.

    Per (servers, method), means over seeds: ``settled`` (share of runs whose gap to
    ``reference`` settles, :func:`ilets.report.stats.gap_convergence_table`),
    ``reference_settled`` (share of seeds on which the reference itself settles: where it is
    0 the convergence claim is not testable), ``convergence_decisions`` (censored at the run's
    length, :func:`ilets.report.verdicts.convergence_cells`), ``raw_settled`` (the same measure on
    the raw reward, :func:`ilets.report.stats.convergence_table`), ``mad_gap`` and ``mad_raw``
    (oscillation after the trend change on the gap and on the raw reward). ``events``: as
    :func:`ilets.report.stats.oscillation_table` takes them (None: no oscillation columns)."""
    cols = ["servers", "method", "settled", "reference_settled", "convergence_decisions", "raw_settled", "mad_gap",
            "mad_raw"]
    if curves is None or curves.empty or reference not in set(curves["method"]):
        return pd.DataFrame(columns=cols)
    keys = ["servers", "method"]
    conv = V.convergence_cells(curves, tol, final_frac, smooth, reference)
    out = conv.groupby(keys)[["settled", "reference_settled", "convergence_decisions"]].mean()
    raw = S.convergence_table(curves, tol=tol, final_frac=final_frac, smooth=smooth)
    out["raw_settled"] = raw.groupby(keys)["settled"].mean()
    if events is not None:
        for name, table in (("mad_gap", S.gap_oscillation_table(curves, events, reference)),
                            ("mad_raw", S.oscillation_table(curves, events))):
            trend = table[table["event"] == "trend_change"] if len(table) else table
            out[name] = trend.groupby(keys)["mad"].mean() if len(trend) else np.nan
    out = out.reindex(columns=cols[2:]).reset_index()
    order = {m: i for i, m in enumerate(S.method_order(out["method"].unique()))}
    return out.sort_values(["servers", "method"], key=lambda c: c.map(order) if c.name == "method" else c) \
        .reset_index(drop=True)[cols]


def curve_measures_sentence(measures: pd.DataFrame, reference: str = REFERENCE) -> str:
    """What the curve measures give a policy that does not learn, against the learners, from
    :func:`curve_measures`: the heuristics' and the learners' oscillation after the trend change
    on the raw reward and on the gap, and the fleet sizes where the reference settles."""
    from ilets.config import HEURISTICS
    from ilets.method_table import LEARNERS

    if measures.empty:
        return f"The {reference} heuristic is not in these results, so the curve measures cannot be taken."
    h = measures[measures["method"].isin(HEURISTICS) & ~measures["method"].isin(["random", "round-robin"])]
    learners = measures[measures["method"].isin(LEARNERS)]
    ref = measures[measures["method"] == reference].set_index("servers")["reference_settled"]
    testable = [int(s) for s, v in ref.items() if v > 0]
    parts = []
    if "mad_gap" in measures and measures["mad_gap"].notna().any():
        def per(t, col):
            return "/".join(f"{v:.4f}" for v in t.groupby("servers")[col].mean())
        sizes = "/".join(str(int(x)) for x in sorted(measures["servers"].unique()))
        parts.append(f"After the trend change the heuristics that look at the fleet oscillate by {per(h, 'mad_raw')} "
                     f"on the raw reward (mean absolute change between windows at {sizes} servers) against the "
                     f"learners' {per(learners, 'mad_raw')}: the raw measure follows the load. On the gap to "
                     f"{reference} they oscillate by {per(h, 'mad_gap')} and the learners by "
                     f"{per(learners, 'mad_gap')}.")
    settle = h.groupby("servers")["settled"].mean()
    parts.append(f"On the gap those heuristics settle in {S.range_text(settle, '.0%')} of their runs, against "
                 f"{S.range_text(h.groupby('servers')['raw_settled'].mean(), '.0%')} on the raw reward. "
                 + (f"{reference} itself settles on the raw reward at "
                    f"{and_join(f'{s} servers ({ref[s]:.0%} of seeds)' for s in testable)} only, so convergence is "
                    f"judged there and is not testable at the other fleet sizes."
                    if testable and len(testable) < len(ref) else
                    f"{reference} settles at every fleet size, so convergence is judged at all of them."
                    if testable else f"{reference} itself never settles, so convergence is not testable here."))
    return " ".join(parts)


def cold_windows_display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.report.verdicts.cold_start_windows` as the chapter shows it."""
    return pd.DataFrame({"first decisions": [f"{n:,}" for n in table["decisions"]], "verdict": table["verdict"],
                         "comparisons holding at every fleet size": [f"{a}/{n}" for a, n in
                                                                     zip(table["holds"], table["components"])],
                         "comparisons reversed at some fleet size": [f"{a}/{n}" for a, n in
                                                                     zip(table["reverses"], table["components"])]})


def cold_windows_sentence(table: pd.DataFrame) -> str:
    """Whether claim 4's verdict depends on the window of first decisions it is judged over."""
    if table.empty:
        return "No learner curves are in these results, so the cold start is not judged."
    verdicts = dict(zip(table["decisions"], table["verdict"]))
    listed = and_join(f"{v} over the first {n:,}" for n, v in verdicts.items())
    if len(set(verdicts.values())) == 1:
        return f"The verdict is the same over every window: {listed} decisions."
    return f"The verdict depends on the window: {listed} decisions."


def adaptation_findings(ctx: ReportContext) -> AdaptationFindings:
    """Everything chapter 6 states (see :class:`AdaptationFindings`)."""
    learn, lm, reps = ctx.learner_curves, ctx.learner_metrics, ctx.reps
    seeds = sorted(int(s) for s in ctx.curves["seed"].unique())
    ranges = {s: ctx.event_ranges(s) for s in seeds}
    markers = S.event_markers(ranges)
    event_order = sorted(markers, key=markers.get)
    first_range = next(iter(ranges[seeds[0]].values()), (0, 0)) if seeds else (0, 0)
    gap = S.relative_curves(ctx.curves, REFERENCE)
    gap = gap[gap["method"].isin(learn["method"].unique())] if len(gap) else gap
    texts: dict[str, str] = {"event_list": event_list_text(event_order)}
    texts["gap_text"] = (f"the same curve minus the {REFERENCE} heuristic's curve on the same tasks" if len(gap)
                         else f"(the {REFERENCE} heuristic is not in this results store, so the workload's own "
                              "swings cannot be removed here)")

    # oscillation after every event (claim 7 is the trend change; the bursts are the paper's other claim)
    def ev(s):
        return ranges.get(int(s), {})

    osc_reward = S.oscillation_table(learn, ev) if len(learn) else pd.DataFrame()
    osc_gap = S.oscillation_table(gap, ev) if len(gap) else pd.DataFrame()
    osc_summary = pd.concat(
        [S.summary_table(o, metrics_cols=("mad",), by=("servers", "event", "method"), reps=reps).assign(metric=name)
         for o, name in ((osc_reward, "reward"), (osc_gap, f"gap to {REFERENCE}")) if len(o)],
        ignore_index=True) if len(osc_reward) else pd.DataFrame()
    claims = {5: V.claim_convergence(ctx.curves, reps=reps, **CONVERGENCE), 6: V.claim_cumulative(ctx.curves, reps=reps),
              7: V.claim_oscillation(ctx.curves, V.trend_change_ranges(ctx.profile, ctx.out), reps=reps)}
    texts["claim5_evidence"] = claims[5].evidence
    components = {k: V.component_table(v.effects) for k, v in claims.items()}
    texts["osc_bursts"] = burst_sentence(oscillation_pairs(osc_reward, reps))
    texts["osc_gap_bursts"] = burst_sentence(oscillation_pairs(osc_gap, reps)) if len(osc_gap) else \
        "nothing is measured."
    if len(osc_reward):  # the raw reward's oscillation, for contrast with the claim's measure (the gap)
        raw_trend = osc_reward[osc_reward["event"] == "trend_change"]
        raw_eff = pd.concat([V.component_effects(raw_trend, "ilets", b, "mad", False, reps=reps)
                             for b in ("drl", "drl+", "ilets-")], ignore_index=True)
        texts["osc_raw_trend"] = _status_counts(V.component_table(raw_eff))
    else:
        texts["osc_raw_trend"] = "nothing is measured"
    texts["osc_trend"] = _status_counts(components[7])
    texts["verdict_7"] = claims[7].verdict

    # convergence: the censored measure of the claim-5 verdict, on the gap to the reference
    with_ref = ctx.curves[ctx.curves["method"].isin([*learn["method"].unique(), REFERENCE])]
    conv = V.convergence_cells(with_ref, **CONVERGENCE) if len(learn) else pd.DataFrame()
    conv = conv[conv["method"] != REFERENCE] if len(conv) else conv
    conv_summary = S.summary_table(conv, metrics_cols=("convergence_decisions",), reps=reps) if len(conv) \
        else pd.DataFrame()
    if len(conv):
        unsettled = conv.assign(unsettled=~conv["settled"]).groupby(["servers", "method"])["unsettled"].sum()
        testable = conv.groupby(["servers", "method"])["testable"].all().map({True: "yes", False: "no"})
        conv_summary = conv_summary.merge(unsettled.reset_index(), on=["servers", "method"], how="left") \
            .merge(testable.reset_index(), on=["servers", "method"], how="left")
    texts["conv_settled"] = f"{conv['settled'].mean():.0%}" if len(conv) else "n/a"
    trend_events = V.trend_change_ranges(ctx.profile, ctx.out)
    measures = curve_measures(ctx.curves, trend_events, REFERENCE, **CONVERGENCE)
    texts["measures_text"] = curve_measures_sentence(measures)
    cold_windows = V.cold_start_windows(ctx.curves, reps=reps)
    texts["cold_windows_text"] = cold_windows_sentence(cold_windows)
    texts["conv_text"] = _status_counts(components[5])
    texts["verdict_5"] = claims[5].verdict

    # cumulative reward
    cum = S.cumulative_reward(learn) if len(learn) else pd.DataFrame()
    leaders = S.leader_table(cum)
    final_summary = S.summary_table(S.last_checkpoint(cum), metrics_cols=("cum_reward",), reps=reps) if len(cum) \
        else pd.DataFrame()
    lead_table = leaders.merge(S.ci_table(final_summary, formats={"cum_reward": ",.1f"}), on=["servers", "method"],
                               how="left") if len(leaders) else leaders
    if len(lead_table):  # display strings: a share, and a blank where the method does not lead at the end
        lead_table = lead_table.assign(share_led=lead_table["share_led"].map("{:.0%}".format),
                                       leads_from=[("" if pd.isna(v) else f"{v:,.0f}") for v in lead_table["leads_from"]],
                                       Method=[_label(m) for m in lead_table["method"]])
        lead_table = lead_table[["servers", "Method", "share_led", "final_rank", "leads_from", "cum_reward"]]
    il = leaders[leaders["method"] == "ilets"] if len(leaders) else leaders
    at = il[il["final_rank"] == 1] if len(il) else il
    if len(il):
        texts["cum_lead_text"] = (f"ILETS has the highest mean cumulative reward at the end of the pass at {len(at)} "
                                  f"of {len(il)} fleet sizes"
                                  + (" (leading without interruption from decision " + ", ".join(
                                      f"{int(r.leads_from):,} at {r.servers} servers" for r in at.itertuples()) + ")"
                                     if len(at) else ""))
    else:
        texts["cum_lead_text"] = "ILETS is not in this results store"
    winners = leaders[leaders["final_rank"] == 1] if len(leaders) else leaders
    texts["cum_winners"] = "; ".join(f"{r.servers} servers: {_label(r.method)}" for r in winners.itertuples()) \
        or "none"
    texts["cum_text"] = _status_counts(components[6])
    texts["verdict_6"] = claims[6].verdict

    # OAIL counters and effect
    cols = [c for c in OAIL_COLS if c in lm]
    with_oail = lm[lm["method"].isin(learners_with(oail=True))]
    oail_summary = S.summary_table(with_oail, metrics_cols=cols, reps=reps) if len(with_oail) and cols \
        else pd.DataFrame()
    if len(oail_summary):
        totals = with_oail.groupby("servers")[["oail_requests", "oail_applied", "oail_dropped", "oail_failed"]].sum()
        texts["oail_share"] = S.range_text(totals["oail_applied"] / totals["oail_requests"], ".0%")
        texts["oail_lost"] = (f"{int(totals['oail_dropped'].sum()):,} dropped and "
                              f"{int(totals['oail_failed'].sum()):,} failed")
        texts["oail_lag"] = f"{with_oail['oail_lag_p50'].median():,.0f}"
    else:
        texts.update(oail_share="n/a", oail_lost="n/a", oail_lag="n/a")
    effect = _no_data(pd.concat([S.compare(lm, x, y, FINAL, reps=reps) for x, y in (("ilets-", "drl"), ("ilets", "drl+"))],
                                ignore_index=True))
    effect = effect.assign(pair=[f"{_label(x)} vs {_label(y)}" for x, y in zip(effect["x"], effect["y"])]) \
        if len(effect) else effect
    er = effect[effect["metric"] == "mean_reward"] if len(effect) else effect
    texts["oail_effect"] = "; ".join(f"{_label(r['x'])} vs {_label(r['y'])} at {r['servers']} servers: {says(r)}"
                                     for r in er.to_dict("records")) or "not measured"

    # the upcoming window
    um = ctx.variant_metrics("upcoming")
    up = _no_data(S.variant_comparison(lm, um, (*FINAL, "oail_applied"), directions=DIRECTIONS, reps=reps)) \
        if len(um) else pd.DataFrame()
    if up.empty:
        up_text = f"{ctx.variant_missing_text('upcoming')}, so the two windows are not compared here."
    else:
        up_text = ("With the upcoming window instead of the past one, the whole-pass mean reward changes by "
                   + "; ".join(f"{says(r)} for {_label(r['method'])} at {r['servers']} servers"
                               for r in up[up["metric"] == "mean_reward"].to_dict("records"))
                   + " (positive = the upcoming window is better). Peeking at future tasks is not available to a "
                   "real scheduler, so a gain here is an upper bound on what a better-informed OAIL could add, not "
                   "a result the paper's setting can reach.")
    return AdaptationFindings(markers=markers, event_order=event_order,
                              span_decisions=int(first_range[1] - first_range[0]), gap=gap, osc_reward=osc_reward,
                              osc_gap=osc_gap, osc_summary=osc_summary, claims=claims, components=components, conv=conv,
                              conv_summary=conv_summary, cum=cum, leaders=leaders, lead_table=lead_table,
                              oail_summary=oail_summary, oail_effect=effect,
                              upcoming=VariantFindings("upcoming", up, up_text), texts=texts, measures=measures,
                              cold_windows=cold_windows)


def component_display(components: pd.DataFrame) -> pd.DataFrame:
    """A claim's :func:`ilets.report.verdicts.component_table` as a display table: the comparison,
    its status (the summary's), its effect with the 95 % CI (pooled when every fleet size points
    the same way, else per fleet size: :func:`ilets.report.verdicts.effect_numbers`), the paper's
    figure where it gives one, and at how many fleet sizes the CI is above and below zero."""
    return pd.DataFrame({
        "comparison": components["component"],
        "status": components["status"],
        "effect (95 % CI)": [V.effect_numbers(r.same_sign, r.pooled, r.pooled_low, r.pooled_high, r.per_scale)
                             for r in components.itertuples()],
        "paper": ["" if not np.isfinite(p) else f"{p:+.2f} %" for p in components["paper_pct"]],
        "fleet sizes with CI above 0": [f"{r.scales_ok}/{r.scales}" for r in components.itertuples()],
        "below 0": [f"{r.scales_worse}/{r.scales}" for r in components.itertuples()]})


def claims_display(components: Mapping[int, pd.DataFrame], claims: Sequence[int]) -> pd.DataFrame:
    """:func:`component_display` of several claims stacked, with a ``claim`` column first."""
    parts = [component_display(components[c]).assign(claim=c) for c in claims if len(components.get(c, ()))]
    cols = ["claim", "comparison", "status", "effect (95 % CI)", "paper", "fleet sizes with CI above 0", "below 0"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def _status_counts(components: pd.DataFrame) -> str:
    """``"2 of 3 components hold at every fleet size, ..."`` from :func:`ilets.report.verdicts.component_table`."""
    if components is None or components.empty:
        return "no component could be measured"
    c = components["status"].value_counts()

    def n(status: str, one: str, many: str) -> str:
        k = int(c.get(status, 0))
        return f"{k} {one if k == 1 else many}"

    held = int(c.get(V.HOLDS, 0))
    return (f"{held} of {len(components)} comparisons {'holds' if held == 1 else 'hold'} at every fleet size, "
            f"{n(V.HOLDS_POOLED, 'holds', 'hold')} pooled over fleet sizes only, "
            f"{n(V.HOLDS_SOME, 'is', 'are')} resolved the claimed way at some fleet sizes only, "
            f"{n(V.DIRECTION_ONLY, 'points', 'point')} the claimed way without being resolved, "
            f"{n(V.FAILS, 'is', 'are')} resolved nowhere and not the claimed way everywhere, and "
            f"{n(V.REVERSES, 'reverses', 'reverse')} (resolved against the claim at some fleet size)")


# --- chapter 7: main results --------------------------------------------------------------

#: Policies that ignore the servers' state: they spread tasks over slow, power-hungry servers
#: as readily as over good ones, so their energy is no bound a scheduler would meet.
STATE_BLIND = ("random", "round-robin")
#: The heuristic that spends the least energy (its greedy rule picks the least energy per task).
ENERGY_FLOOR = "min-energy"


def energy_room(metrics: pd.DataFrame, baseline: str = "drl", floor: str = ENERGY_FLOOR,
                blind: Sequence[str] = STATE_BLIND) -> pd.DataFrame:
    """The energy the model lets a policy spend, per fleet size, from seed means.

    ``floor_kwh``: the ``floor`` heuristic's (the least any policy here spends);
    ``ceiling_kwh``/``ceiling``: the most any sensible policy spends (every method but the
    state-blind ``blind`` ones); ``range_pct``: ``100 (ceiling - floor) / ceiling``, the room
    scheduling has at all; ``baseline_kwh`` and ``room_pct``: ``100 (baseline - floor) /
    baseline``, the largest energy improvement over ``baseline`` any policy can make here;
    ``blind_kwh``: the state-blind policies' mean, for scale. Empty without the floor or the
    baseline."""
    cols = ["servers", "floor_kwh", "ceiling", "ceiling_kwh", "range_pct", "baseline_kwh", "room_pct", "blind_kwh",
            "cheapest"]
    present = set(metrics["method"]) if len(metrics) else set()
    if floor not in present or baseline not in present:
        return pd.DataFrame(columns=cols)
    means = metrics.groupby(["servers", "method"])["energy_kwh"].mean().unstack("method")
    sensible = means[[m for m in means.columns if m not in blind]]
    out = pd.DataFrame({"floor_kwh": means[floor], "ceiling": sensible.idxmax(axis=1),
                        "ceiling_kwh": sensible.max(axis=1), "baseline_kwh": means[baseline]})
    out["range_pct"] = 100 * (out["ceiling_kwh"] - out["floor_kwh"]) / out["ceiling_kwh"]
    out["room_pct"] = 100 * (out["baseline_kwh"] - out["floor_kwh"]) / out["baseline_kwh"]
    out["blind_kwh"] = means[[m for m in blind if m in means]].mean(axis=1) if any(m in means for m in blind) \
        else np.nan
    out["cheapest"] = means.idxmin(axis=1)  # the floor is the least only where this is the floor itself
    return out.reset_index()[cols]


def energy_room_display(room: pd.DataFrame) -> pd.DataFrame:
    """:func:`energy_room` as the results chapter shows it."""
    return pd.DataFrame({
        "servers": room["servers"], f"{ENERGY_FLOOR} (kWh)": room["floor_kwh"].map("{:.3f}".format),
        "costliest sensible policy": [_label(c) for c in room["ceiling"]],
        "its energy (kWh)": room["ceiling_kwh"].map("{:.3f}".format),
        "range (% of it)": room["range_pct"].map("{:.1f}".format),
        "DRL (kWh)": room["baseline_kwh"].map("{:.3f}".format),
        "room below DRL (%)": room["room_pct"].map("{:.1f}".format),
        "state-blind policies (kWh)": room["blind_kwh"].map("{:.3f}".format)})


def energy_room_sentence(room: pd.DataFrame, paper: Mapping[str, Mapping[str, float]] = S.PAPER_IMPROVEMENTS,
                         baseline: str = "drl") -> str:
    """Which energy effects over ``baseline`` the model can show at all, from :func:`energy_room`:
    the room at each fleet size beside the paper's reported energy gains."""
    if room.empty:
        return f"The {ENERGY_FLOOR} heuristic or {_label(baseline)} is missing, so the energy room is not measured."
    sizes = and_join(f"{r.room_pct:.1f} % at {int(r.servers)}" for r in room.itertuples())
    span = S.range_text(room["range_pct"], ".0f")
    ceilings = and_join(sorted({_label(c) for c in room["ceiling"]}))
    blind = ("more still" if (room["blind_kwh"] > room["ceiling_kwh"]).all()
             else "more at some fleet sizes and less at others")
    parts = [f"The {ENERGY_FLOOR} heuristic, which puts each task where it adds the least energy, spends {span} % "
             f"less than the costliest policy that looks at the fleet ({ceilings}); the state-blind policies "
             f"({and_join(STATE_BLIND)}) spend {blind}. It spends only {sizes} servers less than "
             f"{_label(baseline)}: an energy gain over {_label(baseline)} larger than that would need a policy that "
             f"saves more energy than {ENERGY_FLOOR}, which "
             + ("no policy run here does." if (room["cheapest"] == ENERGY_FLOOR).all() else
                f"only {and_join(sorted(set(room['cheapest']) - {ENERGY_FLOOR}))} does at some fleet size.")]
    gains = {m: v["energy_kwh"] for m, v in paper.items() if "energy_kwh" in v}
    over = {m: int((room["room_pct"] < g).sum()) for m, g in gains.items()}

    def named(methods: Sequence[str]) -> str:
        return and_join(f"{gains[m]:+.2f} % for {_label(m)}" for m in methods)

    everywhere = [m for m, k in over.items() if k == len(room)]
    some = [m for m, k in over.items() if 0 < k < len(room)]
    fits = [m for m, k in over.items() if k == 0]
    if everywhere:
        parts.append(f"The paper's energy gains over {_label(baseline)} of {named(everywhere)} exceed that room at "
                     "every fleet size: effects of that size lie beyond what any policy run here reaches, so they "
                     "cannot be tested here; only effects within the room can.")
    for m in some:
        parts.append(f"The paper's {named([m])} exceeds the room at {over[m]} of {len(room)} fleet sizes.")
    if fits:
        parts.append(f"The paper's {named(fits)} fit{'s' if len(fits) == 1 else ''} within the room.")
    return " ".join(parts)


_FRACTION_WORDS = {Fraction(1, 2): "half", Fraction(1, 3): "one third", Fraction(1, 4): "one quarter",
                   Fraction(1, 5): "one fifth", Fraction(1, 6): "one sixth", Fraction(1, 8): "one eighth",
                   Fraction(1, 10): "one tenth", Fraction(2, 3): "two thirds", Fraction(3, 4): "three quarters"}


def speed_change(main: FleetConfig, variant: FleetConfig) -> str:
    """The variant's servers relative to the main fleet's, in words, from the configured
    MIPS ranges: e.g. ``"servers one sixth slower (500-1,500 MIPS instead of 600-1,800)"``.

    The ratio is that of the midpoints of the ranges (both are uniform steps over the
    range); a simple fraction is named in words, anything else as a percentage."""
    lo, hi = variant.mips
    mlo, mhi = main.mips
    r = (lo + hi) / (mlo + mhi)
    frac = Fraction(r).limit_denominator(12)
    exact = abs(float(frac) - r) < 1e-9  # a simple fraction is named, anything else is a percentage
    ranges = f"({lo:,.0f}-{hi:,.0f} MIPS instead of {mlo:,.0f}-{mhi:,.0f})"
    if abs(r - 1) < 1e-12:
        return f"servers as fast as the main grid's {ranges}"
    if r > 1:
        word = "twice as fast" if exact and frac == 2 else f"{r:.3g} times as fast"
    elif exact and frac == Fraction(1, 2):
        word = "half as fast"
    else:
        name = _FRACTION_WORDS.get(1 - frac) if exact else None
        word = f"{name or f'{1 - r:.0%}'} slower"
    return f"servers {word} {ranges}"


@dataclass(frozen=True, kw_only=True)
class ResultsFindings:
    """Chapter 7: the metrics per fleet size, the improvement table against the paper's, the
    claim verdicts 1-3 and 8, the aggregates across fleet sizes (IQM and probability of
    improvement), the heuristics against the learners, and the heavier-load variant. Every
    interval uses the context's resamples (:attr:`ilets.report.report_context.ReportContext.reps`)."""

    improvements: pd.DataFrame = field(repr=False)
    comparison: pd.DataFrame = field(repr=False)
    pooled: pd.DataFrame = field(repr=False)
    verdicts: dict = field(repr=False)
    components: dict = field(repr=False)
    heuristics: pd.DataFrame = field(repr=False)
    heavy: pd.DataFrame | None = field(repr=False, default=None)
    heavy_summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    heavy_caption: str = ""
    texts: dict = field(default_factory=dict)
    #: :func:`ilets.report.stats.summary_table` of :data:`FINAL` per fleet size and method
    summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: :func:`ilets.report.stats.iqm_table` of each of :data:`FINAL`, with a ``Method`` display name
    iqm: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: :func:`ilets.report.stats.probability_of_improvement` of ILETS over every other method on
    #: each paper metric (``method``: the other one), with a ``Method`` display name
    poi: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: :func:`ilets.report.verdicts.heuristics_per_fleet`: each heuristic against the best
    #: learner at each fleet size, with 95 % CIs
    heuristics_fleet: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: :func:`energy_room`: the energy range the model allows, per fleet size
    energy_room: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)


HEAVY = "heavy-load"
#: The heavier-load caption when the profile has no such variant.
NO_HEAVY = "no variant"


def heavy_purpose(paper_scale: bool) -> str:
    """What the slower servers of the ``heavy-load`` variant do at this results' scale: on the
    full window they load the fleet beyond the calibration; on a reduced window (which keeps
    the arrival rate but not the full window's build-up of queues) they restore the load."""
    if paper_scale:
        return ("On the full window this loads the fleet beyond our calibration of the servers' speeds, which "
                "the paper does not publish, so it shows how the comparisons move with the load")
    return ("A reduced window keeps the arrival rate but not the full window's build-up of queues, so it loads "
            "the same fleet less; the slower servers bring its queues back towards the full window's size")


def unpool_opposite_signs(comparison: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.report.stats.paper_comparison` rows (``servers=None``) with the pooled
    numbers of each (method, metric) blanked (NaN) where the effects at the fleet sizes differ
    in sign: such effects are reported per fleet size, never averaged into one number."""
    out = comparison.copy()
    per = out[out["servers"].astype(str) != "all"]
    mixed = {k for k, g in per.groupby(["method", "metric"]) if len(set(np.sign(g["ours_pct"]))) > 1}
    rows = (out["servers"].astype(str) == "all") & np.array([k in mixed for k in zip(out["method"], out["metric"])],
                                                            dtype=bool)
    out.loc[rows, ["ours_pct", "ci_low_pct", "ci_high_pct", "ours_minus_paper"]] = np.nan
    out.loc[rows, "paper_in_ci"] = False
    return out


def paper_effect_texts(comparison: pd.DataFrame) -> tuple[dict[str, str], int]:
    """Our effect over DRL for each (method, metric) of :func:`unpool_opposite_signs`' table, as
    :func:`ilets.report.verdicts.effect_numbers` prints it (pooled where every fleet size has one
    sign, else per fleet size), keyed ``ours_drlp_<metric>``/``ours_iletsm_<metric>``; and the
    number of them whose paper figure lies inside one of our intervals (the pooled one, or,
    where it is not pooled, a fleet size's)."""
    texts, inside = {}, 0
    for (method, metric), g in comparison.groupby(["method", "metric"], sort=False):
        per = g[g["servers"].astype(str) != "all"]
        pooled = g[g["servers"].astype(str) == "all"]
        same = len(pooled) > 0 and bool(np.isfinite(pooled["ours_pct"]).all())
        p = pooled.iloc[0] if len(pooled) else None
        per_scale = tuple((int(r.servers), r.ours_pct, r.ci_low_pct, r.ci_high_pct) for r in per.itertuples())
        texts[f"ours_{method.replace('+', 'p').replace('-', 'm')}_{metric}"] = V.effect_numbers(
            same or len(per) == 1, p["ours_pct"] if same else np.nan, p["ci_low_pct"] if same else np.nan,
            p["ci_high_pct"] if same else np.nan, per_scale)
        inside += bool(p["paper_in_ci"]) if same else bool(per["paper_in_ci"].any())
    return texts, inside


def paper_tables(ctx: ReportContext) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(improvements, comparison per fleet size, pooled comparison)``: the paper's
    improvement table and ours (:func:`ilets.report.stats.improvement_table`, paired, over DRL),
    the pooled numbers blanked where the fleet sizes differ in sign (:func:`unpool_opposite_signs`)."""
    improvements = S.improvement_table(ctx.metrics, baseline="drl", paired=True, reps=ctx.reps)
    comparison = unpool_opposite_signs(S.paper_comparison(improvements, servers=None))
    return improvements, comparison, comparison[comparison["servers"].astype(str) == "all"].reset_index(drop=True)


def across_scales(metrics: pd.DataFrame, reps: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(iqm, poi)``: the IQM of the normalised score of each of :data:`FINAL`
    (:func:`ilets.report.stats.iqm_table`; a method lacking a fleet size is left out, silently:
    the chapter's caption says so) and ILETS's probability of improvement over every other
    method on each paper metric (:func:`ilets.report.stats.probability_of_improvement`), both
    with ``reps`` resamples and a ``Method`` column of display names."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        parts = [S.iqm_table(metrics, c, reps=reps, seed=seed) for c in FINAL]
    iqm = pd.concat(parts, ignore_index=True)
    methods = set(metrics["method"])
    others = [y for y in S.method_order(methods) if y != "ilets"] if "ilets" in methods else []
    rows = [S.probability_of_improvement(metrics, "ilets", y, c, reps=reps, seed=seed)
            for y in others for c in PAPER_LABELS]
    poi = pd.DataFrame(rows, columns=["x", "y", "metric", "prob", "ci_low", "ci_high", "n_x", "n_y", "tasks"]) \
        .rename(columns={"y": "method"})
    return (iqm.assign(Method=[_label(x) for x in iqm["method"]]),
            poi.assign(Method=[_label(x) for x in poi["method"]]))


def results_findings(ctx: ReportContext) -> ResultsFindings:
    """Everything chapter 7 states (see :class:`ResultsFindings`)."""
    m, reps = ctx.metrics, ctx.reps
    improvements, comparison, pooled = paper_tables(ctx)
    summary = S.summary_table(m, metrics_cols=FINAL, reps=reps)
    iqm, poi = across_scales(m, reps)
    verdicts = {1: V.claim_improves(m, 1, "drl+", "drl", reps=reps), 2: V.claim_improves(m, 2, "ilets-", "drl", reps=reps),
                3: V.claim_improves(m, 3, "drl+", "ilets-", reps=reps), 8: V.claim_beats_heuristics(m, reps=reps)}
    components = {k: V.component_table(v.effects) for k, v in verdicts.items()}
    effect_texts, inside = paper_effect_texts(comparison)
    drlp_iletsm = V.component_effects(m, "drl+", "ilets-", "avg_response_s", False, reps=reps)
    texts = {"paper_in_ci": f"{inside} of {len(pooled)}", **effect_texts,
             # per fleet size: the effects differ in sign across sizes
             "drlp_vs_iletsm": "; ".join(f"{V.describe_effect(drlp_iletsm, s)} at {s} servers"
                                         for s in sorted(m["servers"].unique()))}
    for method, vals in S.PAPER_IMPROVEMENTS.items():
        for metric, val in vals.items():
            texts[f"paper_{method.replace('+', 'p').replace('-', 'm')}_{metric}"] = f"+{val:.2f} %"
    effects = V.heuristic_effects(m, reps=reps)
    heuristics = V.heuristics_vs_learners(m, reps=reps, effects=effects)
    per_fleet = V.heuristics_per_fleet(m, reps=reps, effects=effects)
    texts["heuristic_sentence"] = V.describe_heuristics(heuristics)
    room = energy_room(m)
    texts["energy_room"] = energy_room_sentence(room)
    heavy = ctx.variant_metrics(HEAVY)
    vrun = ctx.variant_run(HEAVY)
    texts["heavy_purpose"] = heavy_purpose(ctx.paper_scale)
    if heavy.empty or vrun is None:
        texts["heavy_text"] = f"{ctx.variant_missing_text(HEAVY)}, so this check is not shown on this page."
        texts["heavy_caption"] = NO_HEAVY
        return ResultsFindings(improvements=improvements, comparison=comparison, pooled=pooled, verdicts=verdicts,
                               components=components, heuristics=heuristics, heavy=None, heavy_summary=pd.DataFrame(),
                               heavy_caption="", texts=texts, summary=summary, iqm=iqm, poi=poi,
                               heuristics_fleet=per_fleet, energy_room=room)
    caption = speed_change(ctx.run.fleet, vrun.fleet)
    texts["heavy_caption"] = caption
    main = m[m["servers"].isin(heavy["servers"].unique()) & m["method"].isin(heavy["method"])]
    both = pd.concat([main.assign(setting="main grid"), heavy.assign(setting="heavier load")], ignore_index=True)
    parts = [f"The variant ran {and_join(_label(x) for x in S.method_order(heavy['method'].unique()))} at "
             f"{and_join(sorted(int(s) for s in heavy['servers'].unique()))} servers, with {caption}."]
    if {"drl", "drl+"} <= set(heavy["method"]):
        for setting, table in (("main grid", main), ("heavier load", heavy)):
            e = V.component_effects(table, "drl+", "drl", "avg_response_s", False, reps=reps)
            parts.append(f"In the {setting}, DRL+ is " + "; ".join(
                f"{V.describe_effect(e, at)} at {at} servers" for at in sorted(int(x) for x in table["servers"].unique()))
                + " on response time.")
    if {"greedy-cost", "drl+"} <= set(heavy["method"]):
        e = V.component_effects(heavy, "greedy-cost", "drl+", "avg_response_s", False, reps=reps)
        parts.append("Under the heavier load greedy-cost is " + "; ".join(
            f"{V.describe_effect(e, at)} at {at} servers" for at in sorted(int(x) for x in heavy["servers"].unique()))
            + " on response time.")
    texts["heavy_text"] = " ".join(parts)
    heavy_summary = S.summary_table(both, metrics_cols=FINAL, by=("method", "setting"), reps=reps)
    return ResultsFindings(improvements=improvements, comparison=comparison, pooled=pooled, verdicts=verdicts,
                           components=components, heuristics=heuristics, heavy=both, heavy_summary=heavy_summary,
                           heavy_caption=caption, texts=texts, summary=summary, iqm=iqm, poi=poi,
                           heuristics_fleet=per_fleet, energy_room=room)


# --- chapters 3, 4, 8 and 9: sentences and display tables -------------------------------

def ks_sentence(generated: np.ndarray, real: np.ndarray | None) -> str:
    """The synthetic CPU requests against the real sample (two-sample Kolmogorov-Smirnov,
    scipy), or why there is no comparison."""
    if real is None:
        return "the real sample is not present on this machine, so only the synthetic CDF is shown"
    import scipy.stats

    return f"the two-sample Kolmogorov-Smirnov distance is {scipy.stats.ks_2samp(generated, real).statistic:.3f}"


def load_display(load: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.report.calibration.load_table` as the workload chapter shows it."""
    shown = load.assign(**{"success rate (%)": 100 * load["success_rate"]}).rename(columns={
        "avg_response_s": "mean response (s)", "avg_wait_s": "mean wait (s)", "tasks": "online tasks"})
    return shown[["scale", "servers", "online tasks", "mean response (s)", "mean wait (s)", "success rate (%)"]] \
        .round(3)


def budget_note(cfg, defaults) -> str:
    """How a profile's expert search budget differs from the method defaults (two
    :class:`ilets.config.ExpertConfig`)."""
    keys = ("ga_population", "ga_generations", "pso_particles", "pso_iterations")
    changed = [f"{k.replace('_', ' ')} {getattr(cfg, k):g} (default {getattr(defaults, k):g})"
               for k in keys if getattr(cfg, k) != getattr(defaults, k)]
    return ("it shrinks the search budget to keep the grid short: " + ", ".join(changed)) if changed \
        else "it uses the method defaults"


def config_texts(cfg) -> dict[str, str]:
    """Every field of a settings dataclass as text (``cfg_<field>``), floats with ``:g``."""
    import dataclasses

    return {f"cfg_{k}": (f"{v:g}" if isinstance(v, float) else str(v)) for k, v in dataclasses.asdict(cfg).items()}


#: Mean optimality gap below which the search is not the experts' bottleneck.
SEARCH_GAP_OK = 0.01


def search_sentence(mean_gaps: pd.Series) -> str:
    """Whether the GA/PSO search is the experts' bottleneck, from their mean optimality gaps."""
    return "so the search itself is not the bottleneck" if float(mean_gaps.max()) < SEARCH_GAP_OK \
        else "so with this budget the search itself leaves part of the way to the optimum"


def ms_text(ms: float) -> str:
    """Milliseconds as the expert chapter prints them: whole above 10, one decimal below."""
    return f"{ms:.0f}" if ms >= 10 else f"{ms:.1f}"


def gap_display(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.agents.experts.gap_table` (indexed by expert) as percentages for the page."""
    d = summary.reset_index()
    return d.assign(mean_gap=(100 * d["mean_gap"]).map("{:.2f}%".format),
                    max_gap=(100 * d["max_gap"]).map("{:.1f}%".format),
                    optimal_share=(100 * d["optimal_share"]).map("{:.0f}%".format)) \
        .rename(columns={"mean_gap": "mean gap", "max_gap": "max gap", "optimal_share": "optimal"})


def timing_display(timing: pd.DataFrame) -> pd.DataFrame:
    """:func:`ilets.agents.experts.timing_table` formatted for the page."""
    return timing.assign(
        ms_per_call=timing["ms_per_call"].map("{:.1f}".format), ms_p90=timing["ms_p90"].map("{:.1f}".format),
        cpu_ms_per_call=timing["cpu_ms_per_call"].map("{:.1f}".format),
        ratio_to_greedy=timing["ratio_to_greedy"].map("{:.1f}".format),
        mean_saving_vs_greedy=(100 * timing["mean_saving_vs_greedy"]).map("{:.2f}%".format),
        max_saving_vs_greedy=(100 * timing["max_saving_vs_greedy"]).map("{:.2f}%".format),
        cpu_util=(100 * timing["cpu_util"]).map("{:.0f}%".format)) \
        .rename(columns={"ms_per_call": "ms/call", "ms_p90": "p90 ms", "cpu_ms_per_call": "CPU ms/call",
                         "ratio_to_greedy": "x greedy", "mean_saving_vs_greedy": "mean saving vs greedy",
                         "max_saving_vs_greedy": "max saving", "cpu_util": "CPU utilisation"})


def latency_wide(summary: pd.DataFrame, scales: Sequence[int]) -> pd.DataFrame:
    """:func:`ilets.study.latency.summarise` as one row per (method, path), p50/p95 per fleet size,
    ``"-"`` where a path has no figure (the paper reports one number per method and size)."""
    wide = summary.pivot_table(index=["method", "path"], columns="servers", values=["p50_ms", "p95_ms"])
    wide.columns = [f"{stat.split('_')[0]} ms, {m} servers" for stat, m in wide.columns]
    wide = wide[[f"{s} ms, {m} servers" for m in scales for s in ("p50", "p95")]]
    order = [(meth, path) for meth in ("DRL", "ILETS") for path in ("our decision", "sb3 predict", "paper")]
    out = wide.reindex(order).reset_index().astype(object)
    return out.where(out.notna(), "-")


def measured_latency(run, scales: Sequence[int], n: int, predict_every: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Decision times measured now (:func:`ilets.study.latency.measure`, DRL and ILETS at each
    fleet size): ``(timings, oail counters per fleet size)``."""
    from ilets.study.latency import measure

    frames, counters = [], {}
    for m in scales:
        frames.append(measure(m, n, run, with_oail=False, predict_every=predict_every))
        with_oail = measure(m, n, run, with_oail=True, predict_every=predict_every)
        frames.append(with_oail)
        counters[m] = with_oail.attrs.get("oail", {})
    return pd.concat(frames, ignore_index=True), pd.DataFrame(counters).T


def store_latency(metrics: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Decision times recorded in the cells (µs, mean over seeds): a display table with
    learners first, then heuristics, and the numbers the prose quotes."""
    from ilets.config import HEURISTICS
    from ilets.study.results import LEARNERS

    labelled = metrics.assign(Method=[_label(m) for m in metrics["method"]])
    store = labelled.groupby(["method", "servers"])[["decision_p50_ms", "decision_p95_ms"]].mean().mul(1e3)
    present = set(store.index.get_level_values(0))
    learners = store.loc[[m for m in LEARNERS if m in present]]
    heur = store.loc[[m for m in HEURISTICS if m in present]]
    texts = {"store_learner_us_lo": f"{learners['decision_p50_ms'].min():.0f}",
             "store_learner_us_hi": f"{learners['decision_p50_ms'].max():.0f}",
             "store_slowest_heuristic": str(heur["decision_p50_ms"].idxmax()[0]) if len(heur) else "n/a",
             "store_slowest_us": f"{heur['decision_p50_ms'].max():.0f}" if len(heur) else "n/a"}
    order = [m for m in (*LEARNERS, *HEURISTICS) if m in present]
    table = store.rename(columns={"decision_p50_ms": "p50 µs", "decision_p95_ms": "p95 µs"}).unstack("servers")
    table = table[[(stat, m) for m in sorted(table.columns.levels[1]) for stat in ("p50 µs", "p95 µs")]]
    table.columns = [f"{stat}, {m} servers" for stat, m in table.columns]
    table = table.reindex(order).reset_index()
    table["method"] = [_label(m) for m in table["method"]]
    return table.rename(columns={"method": "Method"}), texts


# --- chapter 10: reproducing the study ----------------------------------------------------

def profiles_table(names: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per profile (default: the built-in ones, :data:`ilets.study.profiles.BUILTIN`):
    description, methods, fleet sizes, seeds, workload scale, variants (``"-"`` for none), cells."""
    from ilets.study.profiles import BUILTIN, load_profile

    rows = []
    for name in BUILTIN if names is None else names:
        p = load_profile(name)
        rows.append({"profile": name, "description": p.description,
                     "methods": len(p.methods), "servers": ", ".join(map(str, p.servers)), "seeds": len(p.seeds),
                     "workload scale": p.run.workload.scale,
                     "variants": ", ".join(v.name for v in p.variants) or "-", "cells": len(p.cells())})
    return pd.DataFrame(rows)


def hardware_table(info: Mapping) -> pd.DataFrame:
    """A cell's ``system.json`` (:func:`ilets.study.results.system_info`) as ``item``/``value``
    rows: CPU, cores, RAM, Python, platform, then every recorded package version."""
    hw = {"CPU": info.get("cpu_model"), "cores": info.get("cores"), "RAM (GiB)": info.get("ram_gb"),
          "Python": info.get("python"), "platform": info.get("platform"), **dict(info.get("packages") or {})}
    return pd.DataFrame(list(hw.items()), columns=["item", "value"])


# --- where we differ from the paper, and the variant that tests an explanation -------------

@dataclass(frozen=True, kw_only=True)
class DifferenceFindings:
    """The summary's "where we differ" section: for each claim the main results do not
    reproduce, every variant that can test a reconstruction choice behind it, with the claim's
    verdict under the main choice and under the variant's (:func:`ilets.report.verdicts.variant_verdicts`)."""

    table: pd.DataFrame = field(repr=False)  #: one row per (claim, variant)
    sentence: str  #: which variants change which verdicts
    untested: str  #: the variants with no results to test (not run, or not judged yet)

    @property
    def untested_text(self) -> str:
        """The untested variants as a sentence (or that every variant has results)."""
        if self.untested:
            return f"No results test these variants yet: {self.untested}."
        return "Every variant of the study has results at one scale or the other."


def difference_findings(ctx: ReportContext, small_out=None, summary: SummaryFindings | None = None
                        ) -> DifferenceFindings:
    """For each claim not reproduced in ``ctx``, the variants of :data:`ilets.report.deviations.DEVIATIONS`
    that can test it: from ``ctx`` where the variant is judged there, else from the
    reduced-scale results (:func:`ilets.study.results.scale_dir` unless ``small_out``),
    labelled as a quick look. A main-grid method the variant's change does not touch
    (:func:`ilets.method_table.reads_section` of the sections :meth:`ReportContext.variant_sections`
    finds changed) keeps its main cells on both sides. ``summary``: :func:`summary_findings`
    of ``ctx``, if already computed."""
    from ilets.method_table import reads_section
    from ilets.report.deviations import DEVIATIONS

    cols = ["claim", "verdict here", "variant", "choice it tests", "results", "verdict, our choice",
            "verdict, the variant's"]
    verdicts = (summary or summary_findings(ctx)).table.set_index("claim")["verdict"]
    failing = [int(c) for c, v in verdicts.items() if v != V.REPRODUCED]
    small = _small_context(ctx, small_out)
    rows, untested = [], []
    for dev in (d for d in DEVIATIONS if d.variant and failing):
        source = ctx if len(ctx.variant_metrics(dev.variant)) else \
            small if small is not None and len(small.variant_metrics(dev.variant)) else None
        if source is None:
            untested.append(f"{ctx.variant_missing_text(dev.variant)} ({dev.topic.lower()})")
            continue
        vm = source.variant_metrics(dev.variant)
        sections = source.variant_sections(dev.variant)
        kept = [m for m in source.metrics["method"].unique()
                if m not in set(vm["method"]) and not any(reads_section(m, s) for s in sections)]
        vv = V.variant_verdicts(source.metrics, source.curves, vm, source.variant_curves(dev.variant), kept,
                                source.profile, reps=ctx.reps, out=source.out, claims=failing)
        where = (f"{'' if source is ctx else 'quick look, '}{source.scale_pct} of the window, "
                 f"{and_join(sorted(int(s) for s in vm['servers'].unique()))} servers, "
                 f"{vm['seed'].nunique()} seeds")
        for r in vv[vv["claim"].isin(failing)].itertuples():
            rows.append({"claim": r.claim, "verdict here": verdicts[r.claim], "variant": f"`{dev.variant}`",
                         "choice it tests": dev.topic, "results": where, "verdict, our choice": r.main,
                         "verdict, the variant's": r.variant})
    table = pd.DataFrame(rows, columns=cols).sort_values(["claim", "variant"], kind="stable").reset_index(drop=True)
    return DifferenceFindings(table=table, sentence=difference_sentence(table, failing), untested="; ".join(untested))


def difference_sentence(table: pd.DataFrame, failing: Sequence[int]) -> str:
    """Which variants move a verdict towards the paper (or away), claim by claim, from
    :func:`difference_findings`' table; claims no variant tests are named too."""
    if not failing:
        return "Every claim is reproduced here, so no reconstruction choice is needed to explain a difference."
    rank = {v: i for i, v in enumerate(V.VERDICT_ORDER)}
    parts = []
    for claim in failing:
        t = table[table["claim"] == claim]
        if t.empty:
            parts.append(f"no variant tests claim {claim}")
            continue
        better = [f"{r.variant} ({r[5]} → {r[6]})" for r in t.itertuples(index=False)
                  if rank.get(r[6], 9) < rank.get(r[5], 9)]
        worse = [f"{r.variant} ({r[5]} → {r[6]})" for r in t.itertuples(index=False)
                 if rank.get(r[6], 9) > rank.get(r[5], 9)]
        words = f"claim {claim}: " + (f"closer to the paper with {and_join(better)}" if better else
                                      f"no tested variant brings it closer to the paper ({and_join(t['variant'])})")
        if worse:
            words += f", further from it with {and_join(worse)}"
        parts.append(words)
    return "By claim, " + "; ".join(parts) + "."
