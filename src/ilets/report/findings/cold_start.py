"""Chapter 5, OINPT and the cold start: claim 4, what cloning achieved and what limits it (with
the positive control), and the no-critic, greedy-expert and rich-state variants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import pandas as pd

from ilets.method_table import learners_with
from ilets.report import stats as S
from ilets.report import verdicts as V
from ilets.report.findings.base import (DIRECTIONS, FINAL, FIRST, VariantFindings, _label, _no_data,
                                        _status_counts, says)
from ilets.report.report_context import ReportContext


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


def critic_drop_text(mse: pd.DataFrame) -> str:
    """What critic pre-training does to the critic's error on the expert returns (the predicate
    of "Critic pre-training ..."), from the mean ``critic_mse_before``/``critic_mse_after`` per
    fleet size: the factor it divides the error by (a share of the error removed would read
    "by 100 %" once the error all but vanishes) and the errors themselves."""
    what = "the critic's error on the expert returns"
    if mse.empty:
        return f"has no measured effect on {what} here (not recorded)"
    before, after = mse["critic_mse_before"], mse["critic_mse_after"]
    errors = (f"mean squared error {S.range_text(before, '.3g')} before pre-training, "
              f"{S.range_text(after, '.3g')} after")
    if bool((after < before).all()):
        return f"cuts {what} by a factor of {S.range_text(before / after, '.3g')} ({errors})"
    return f"does not cut {what} at every fleet size ({errors})"


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


#: The positive control's designs, as the chapter's first sentences name them.
PLAIN_DESIGNS = {"flat MLP, paper state (the authors')": "the authors' flat network",
                 "flat MLP, rich state": "the flat network with a richer state",
                 "per-server policy, server table": "a per-server policy"}


def cold_start_lead(verdict: str, components: pd.DataFrame, n_first: int, agree_after: pd.Series,
                    matched: Mapping | None = None, tested: Mapping | None = None) -> str:
    """Chapter 5's finding in at most three plain sentences: claim 4 over the first ``n_first``
    decisions (its comparisons, :func:`ilets.report.findings.base._status_counts`), the agreement
    of the clone with its expert (``agree_after``, one mean per fleet size), and the positive
    control (``matched``/``tested``: (design, expert) -> fleet sizes, as
    :class:`ilets.report.positive_control.ControlVerdict` holds them)."""
    text = (f"Over the first {n_first:,} decisions, the paper's claim that pre-training on the experts' plans makes "
            f"DRL+ and ILETS far better than DRL and ILETS- from the start is {verdict}: {_status_counts(components)}.")
    after = agree_after.dropna()
    if len(after):
        text += (f" The cloned policy picks the expert's server on {'only ' if after.max() < 0.5 else ''}"
                 f"{S.range_text(after, '.0%')} of the demonstrated decisions.")
    if matched and tested:
        designs = list(dict.fromkeys(d for d, _ in tested))
        every = [PLAIN_DESIGNS.get(d, d) for d in designs if all(matched[k] == tested[k] for k in tested if k[0] == d)]
        never = [PLAIN_DESIGNS.get(d, d) for d in designs if not any(matched[k] for k in tested if k[0] == d)]
        parts = ([f"{' and '.join(every)} {'clones' if len(every) == 1 else 'clone'} every expert at every fleet size "
                  "tested"] if every else []) + \
                ([f"{' and '.join(never)} {'matches' if len(never) == 1 else 'match'} none"] if never else [])
        if parts:
            text += f" In a positive control, {', while '.join(parts)}."
    return text


def _control_matches(control: pd.DataFrame) -> tuple[dict, dict]:
    """The positive control's (design, expert) -> fleet sizes matched and tested (empty without it)."""
    from ilets.report import positive_control as PC

    if control is None or control.empty:
        return {}, {}
    found = PC.verdict(control)
    return found.matched, found.tested

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
    texts["lead"] = cold_start_lead(claim.verdict, components, n, drlp.groupby("servers")["bc_agreement_after"].mean()
                                    if len(drlp) and "bc_agreement_after" in drlp else pd.Series(dtype=float),
                                    *_control_matches(control))
    texts["cloning"] = cloning_sentence(drlp.groupby("servers")[clone_cols].mean() if clone_cols else pd.DataFrame(),
                                        control)
    texts["exact_agreement"] = exact_agreement_sentence(control)
    if len(drlp) and "critic_mse_after" in drlp and drlp["critic_mse_after"].notna().any():
        texts["critic_drop"] = critic_drop_text(drlp.groupby("servers")[["critic_mse_before", "critic_mse_after"]]
                                                .mean())
    else:
        texts["critic_drop"] = critic_drop_text(pd.DataFrame())
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
