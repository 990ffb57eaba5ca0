"""ilets.report.findings and ilets.report.report_context: the chapters' numbers and sentences, on a small
synthetic results folder (no simulation), and the rules that pick each sentence."""

from __future__ import annotations

import ast
import json
import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from ilets.config import FleetConfig, RunConfig, WorkloadConfig, to_dict
from ilets.report import findings as F
from ilets.report import verdicts as V
from ilets.report.report_context import ReportContext, build_stamp
from ilets.study.results import STATUS_DONE, STATUS_FAILED, build_store, compute_table
from text_numbers import numbers_in

# one pytest-xdist worker runs the whole file (--dist loadfile), so its module fixtures (the
# synthetic store, its context and each chapter's findings, seconds each) are computed once

REPS = 200
SCALE = 0.002  # the smoke profile's window: ~519 online tasks
METHODS = {"drl": 0.0, "drl+": 0.08, "ilets-": 0.01, "ilets": 0.1, "greedy-cost": 0.2, "random": -0.3}
NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.py"))


def _cell(out: Path, method: str, servers: int, seed: int, gain: float, variant: str = "",
          fleet: FleetConfig | None = None) -> None:
    # a stable seed (Python's hash() of a str is salted per process)
    rng = np.random.default_rng(zlib.crc32(repr((method, servers, seed, variant)).encode()))
    cfg = RunConfig(workload=WorkloadConfig(scale=SCALE), fleet=fleet or FleetConfig(servers=servers))
    # the folder is named as a real cell is (readers check the recorded identity against it)
    name = f"{method}{'@' + variant if variant else ''}-M{servers}-s{seed}-{cfg.digest()}"
    d = out / "cells" / name
    d.mkdir(parents=True)
    n_win, every, total = 11, 50, 519
    decisions = np.full(n_win, every)
    decisions[-1] = total - every * (n_win - 1)
    reward = -0.3 + gain * 0.3 + 0.005 * rng.standard_normal(n_win)
    pd.DataFrame({"window": np.arange(n_win), "reward": reward, "response": 2 - gain + 0 * reward,
                  "success": 0.8 + 0 * reward, "decisions": decisions, "energy_kwh": 0.002 + 0 * reward,
                  "decision_end": np.cumsum(decisions)}).to_csv(d / "curve.csv", index=False)
    noise = 0.01 * rng.standard_normal(3)
    m = {"method": method, "variant": variant, "servers": servers, "seed": seed, "digest": cfg.digest(), "tasks": total,
         "avg_response_s": 2.0 * (1 - gain) + noise[0], "avg_wait_s": 0.4, "success_rate": 0.8 + gain / 10 + noise[1],
         "energy_kwh": 0.02 * (1 - gain / 2) + noise[2] / 100, "mean_reward": float(reward.mean()),
         "decision_p50_ms": 0.02, "decision_p95_ms": 0.05, "wall_s": 1.0, "cpu_s": 2.0}
    if method in ("drl+", "ilets"):
        m.update(bc_agreement_before=0.01, bc_agreement_after=0.6, critic_mse_before=1.0, critic_mse_after=0.2,
                 demo_tasks=100, demo_seconds=1.0, oinpt_seconds=1.2)
    if method in ("ilets-", "ilets"):
        m.update(oail_requests=10, oail_completed=9, oail_applied=8, oail_dropped=1, oail_failed=0, oail_updates=8,
                 oail_lag_p50=100)
    (d / "metrics.json").write_text(json.dumps(m))
    (d / "command.txt").write_text("synthetic\n")
    (d / "system.json").write_text(json.dumps({"cpu_model": "test CPU", "cores": 2}))
    np.savez(d / "decisions.npz", server=np.zeros(1, dtype=np.int64))
    (d / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg)))


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("results")
    for method, gain in METHODS.items():
        for servers in (50, 100):
            for seed in range(3):
                _cell(out, method, servers, seed, gain)
    slow = FleetConfig(servers=50, mips=(500.0, 1500.0))
    for method, gain in (("drl", 0.0), ("drl+", 0.05), ("greedy-cost", 0.2)):
        for seed in range(3):
            _cell(out, method, 50, seed, gain, variant="heavy-load", fleet=slow)
    (out / "failed").mkdir()
    (out / "failed" / "drl-M50-s9-0.123.json").write_text(json.dumps(
        {"cell": "drl-M50-s9-0", "method": "drl", "variant": "", "servers": 50, "seed": 9, "wall_s": 1.0,
         "cpu_s": 1.0, "error": "boom"}))
    run = to_dict(RunConfig(workload=WorkloadConfig(scale=SCALE)))
    (out / "profile.yaml").write_text(yaml.safe_dump({"name": "test", "description": "synthetic", "run": run}))
    build_store(out)
    return out


@pytest.fixture(scope="module")
def ctx(store) -> ReportContext:
    return ReportContext.load(store, reps=REPS)


# Each chapter's findings on the synthetic store, computed once for the module (seconds each;
# the tests only read them). A test that spies on how they are computed calls F itself.
@pytest.fixture(scope="module")
def summary_found(ctx):
    return F.summary_findings(ctx)


@pytest.fixture(scope="module")
def cold_found(ctx):
    return F.cold_start_findings(ctx)


@pytest.fixture(scope="module")
def adaptation_found(ctx):
    return F.adaptation_findings(ctx)


@pytest.fixture(scope="module")
def results_found(ctx):
    return F.results_findings(ctx)


# --- the context --------------------------------------------------------------------------

def test_context_facts(ctx):
    assert ctx.scales == (50, 100) and ctx.scales_text == "50 and 100"
    assert ctx.n_seeds == 3 and ctx.online_tasks == 519 and ctx.n_methods == len(METHODS)
    assert set(ctx.learner_metrics["method"]) == {"drl", "drl+", "ilets-", "ilets"}
    assert len(ctx.variant_metrics("heavy-load")) == 9 and ctx.variant_metrics("nope").empty
    assert ctx.variant_run("heavy-load").fleet.mips == (500.0, 1500.0) and ctx.variant_run("nope") is None


def test_failed_attempts_are_counted(ctx, store, summary_found):
    # the summary used to count status == "failed", which compute_table never writes
    assert set(compute_table(store)["status"]) == {STATUS_DONE, STATUS_FAILED}
    assert ctx.n_failed == 1 and ctx.n_done == 6 * 2 * 3 + 9
    found = summary_found
    assert (found.n_failed, found.n_done) == (1, ctx.n_done)
    assert sum(found.counts.values()) == len(V.CLAIMS)


def test_event_ranges_come_from_the_workload_config(ctx):
    ev = ctx.event_ranges(0)
    assert "trend_change" in ev and 0 <= ev["trend_change"][0] < ev["trend_change"][1] <= 519
    assert ctx.event_ranges(0) == ev  # cached, deterministic


def test_build_stamp_names_machine_and_date(monkeypatch):
    import os
    import re

    import ilets.host

    # the machine as the cells' system.json names it (CPU model and cores), not platform.machine()'s "x86_64"
    monkeypatch.setattr(ilets.host, "cpu_model", lambda: "Test CPU 9000 @ 1.00GHz")
    monkeypatch.setattr(os, "cpu_count", lambda: 7)
    stamp = build_stamp()
    assert "Test CPU 9000 @ 1.00GHz" in stamp and " x 7 cores (" in stamp
    assert re.search(r"\), \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$", stamp)


# --- chapters state the summary's statuses ------------------------------------------------

def test_chapters_show_the_summary_statuses(summary_found, cold_found, adaptation_found, results_found):
    summary = {v.claim: V.component_table(v.effects) for v in summary_found.verdicts}
    cold, adapt, res = cold_found, adaptation_found, results_found
    chapter = {4: cold.components, **adapt.components, **res.components}
    assert set(chapter) == {1, 2, 3, 4, 5, 6, 7, 8}
    for claim, comp in chapter.items():
        pd.testing.assert_frame_equal(comp.reset_index(drop=True), summary[claim].reset_index(drop=True),
                                      obj=f"claim {claim}")
    assert cold.claim.verdict == summary_found.table.set_index("claim").loc[4, "verdict"]


def test_cold_start_findings(cold_found, ctx):
    cold = cold_found
    assert cold.n_first == 50 and cold.n_online == 519 and cold.share == "10%"
    assert len(cold.components) == 4 and set(cold.components["status"]) <= set(V.COMPONENT_STATUSES)
    assert cold.texts["agree_after"] == "60.0%" and "at all 2 fleet sizes" in cold.texts["agree_verdict"]
    # a factor, not a share of the error removed (which reads "by 100 %" once it all but vanishes)
    assert "by a factor of 5 (" in cold.texts["critic_drop"]
    assert not cold.no_critic.present and cold.no_critic.text.startswith(ctx.variant_missing_text("no-critic"))
    assert (cold.floor["verdict"] == "worse").any()  # DRL+ below greedy-cost in this table
    assert "pair" in cold.first_pairs


def test_adaptation_findings(adaptation_found):
    adapt = adaptation_found
    assert "trend_change" in adapt.markers and adapt.span_decisions > 0
    assert set(adapt.texts) >= {"osc_bursts", "osc_trend", "conv_text", "cum_text", "oail_share", "oail_effect"}
    assert adapt.texts["oail_share"] == "80%"
    assert list(adapt.lead_table.columns) == ["servers", "Method", "share_led", "final_rank", "leads_from",
                                               "cum_reward"]
    assert not adapt.upcoming.present


def _spy(seen: list, name: str, real):
    def call(*args, **kw):
        seen.append((name, kw.get("reps")))
        return real(*args, **kw)

    return call


def test_results_findings_heavy_load_caption_from_config(ctx, monkeypatch):
    from ilets.report import stats as S

    seen: list = []
    for name in ("summary_table", "iqm_table", "probability_of_improvement"):
        monkeypatch.setattr(S, name, _spy(seen, name, getattr(S, name)))
    res = F.results_findings(ctx)
    # chapter 7's tables and aggregates resample here, all with the context's one count
    assert {n for n, _ in seen} == {"summary_table", "iqm_table", "probability_of_improvement"}
    assert {r for _, r in seen} == {ctx.reps}
    assert set(res.iqm["metric"]) == set(F.FINAL) and "Method" in res.iqm
    assert set(res.poi["metric"]) == set(F.PAPER_LABELS) and set(res.poi["method"]) == set(METHODS) - {"ilets"}
    assert set(res.summary["metric"]) == set(F.FINAL) and set(res.summary["servers"]) == {50, 100}
    assert res.texts["heavy_caption"] == res.heavy_caption
    assert "one sixth slower" in res.heavy_caption and numbers_in(res.heavy_caption) == ["500", "1,500", "600", "1,800"]
    assert "one sixth slower" in res.texts["heavy_text"] and "twice as fast" not in res.texts["heavy_text"]
    assert set(res.heavy["setting"]) == {"main grid", "heavier load"} and len(res.heavy_summary)
    assert res.texts["paper_drlp_avg_response_s"] == "+36.73 %"


# --- sentence rules -------------------------------------------------------------------------

@pytest.mark.parametrize("main, variant, words", [
    ((600, 1800), (500, 1500), "one sixth slower"), ((600, 1800), (1200, 3600), "twice as fast"),
    ((600, 1800), (600, 1800), "as fast as"), ((600, 1800), (300, 900), "half as fast"),
    ((600, 1800), (590, 1790), "1% slower"), ((600, 1800), (900, 2700), "1.5 times as fast")])
def test_speed_change(main, variant, words):
    assert words in F.speed_change(FleetConfig(mips=main), FleetConfig(mips=variant))


def test_bottleneck_sentence():
    better, unresolved = {"verdict": "better"}, {"verdict": "unresolved"}
    assert F.bottleneck_sentence(better, better).startswith("yes")
    assert F.bottleneck_sentence(unresolved, unresolved).startswith("no evidence")
    assert F.bottleneck_sentence(better, unresolved).startswith("the evidence is mixed")
    assert F.bottleneck_sentence(None, None).startswith("no evidence")
    assert F.bottleneck_sentence(better, None).startswith("the evidence is mixed")


def test_agreement_and_search_sentences():
    assert "fewer than half" in F.agreement_sentence(pd.Series([0.6, 0.4]))
    assert "at all 2 fleet sizes" in F.agreement_sentence(pd.Series([0.6, 0.5]))
    assert "no cloning statistics" in F.agreement_sentence(pd.Series([], dtype=float))
    assert "not the bottleneck" in F.search_sentence(pd.Series([0.002, 0.009]))
    assert "leaves part of the way" in F.search_sentence(pd.Series([0.002, 0.02]))
    assert (F.ms_text(12.34), F.ms_text(1.234)) == ("12", "1.2")


def test_burst_sentence_counts_verdicts():
    pairs = pd.DataFrame({"event": ["burst_1", "burst_2", "burst_1", "trend_change"], "y": ["drl", "drl", "drl+", "drl"],
                          "verdict": ["better", "unresolved", "worse", "worse"]})
    text = F.burst_sentence(pairs)
    # less in 1 of 2 (fleet size, burst) cases, more in 0, indistinguishably in 1
    assert "(fleet size, burst)" in text and numbers_in(text)[-4:] == ["1", "2", "0", "1"]
    assert "cannot be compared" in F.burst_sentence(pairs.iloc[0:0])


def test_budget_note():
    from ilets.config import ExpertConfig

    assert F.budget_note(ExpertConfig(), ExpertConfig()) == "it uses the method defaults"
    small = ExpertConfig(ga_population=ExpertConfig().ga_population // 2)
    assert "ga population" in F.budget_note(small, ExpertConfig())


def test_component_display_and_empty_tables():
    from ilets.report import plots

    assert F.claims_display({}, (1, 2)).empty
    assert plots.markdown_table(pd.DataFrame(), {}, empty="nothing here").data == "nothing here"
    assert plots.summary_display(pd.DataFrame(), {"x": ("x", 1, 1.0)}).empty
    assert plots.learning_curves(pd.DataFrame(), "reward", "r") is None


# --- chapters only call, glue and plot ----------------------------------------------------

@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebooks_define_no_functions_and_do_not_branch(path):
    tree = ast.parse(path.read_text())
    found = [(type(n).__name__, n.lineno) for n in ast.walk(tree)
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.If, ast.IfExp))]
    assert not found, f"{path.name}: logic belongs in ilets.report.findings: {found}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebooks_do_not_retype_paper_constants(path):
    text = path.read_text().replace("_", "").replace(",", "")
    for constant in ("590000", "330632", "259368"):
        assert constant not in text, f"{path.name} types {constant}; use ilets.workloads.workload"


# --- the deviations table quotes the code's values ----------------------------------------

def test_deviations_quote_the_method_defaults():
    from ilets.report import deviations
    from ilets.study.profiles import method_defaults
    from ilets.workloads.workload import PAPER_OFFLINE_TASKS

    d = method_defaults()
    rows = {r.topic: r for r in deviations.DEVIATIONS}
    assert f"{d.fleet.mips[0]:,g}-{d.fleet.mips[1]:,g} MIPS" in rows["Server speed"].ours
    assert f"lr {d.ppo.learning_rate:g}" in rows["Learner"].ours
    assert f"{PAPER_OFFLINE_TASKS:,}" in rows["OINPT budget"].source
    assert deviations.effects_display(pd.DataFrame()).empty


def test_deviation_effects_display(store):
    from ilets.report import deviations
    from ilets.study.results import load_metrics

    shown = deviations.effects_display(load_metrics(store, variant=None))
    assert set(shown["variant"]) == {deviations.VARIANT_TEXT["heavy-load"]} and "avg_response_s" in shown
    assert shown["avg_response_s"].str.match(r"[+-]\d+\.\d% \[[+-]\d+\.\d, [+-]\d+\.\d\]").all()


def test_the_deviations_table_shows_plain_words_and_every_row():
    from ilets.report import deviations

    shown = deviations.display()
    assert len(shown) == len(deviations.DEVIATIONS) and "where" not in shown
    assert not shown.apply(lambda col: col.str.contains("ilets.|_", regex=False)).any().any()
    tested = {d.variant for d in deviations.DEVIATIONS if d.variant}
    assert set(shown["tested by"]) - {""} == {deviations.VARIANT_TEXT[v] for v in tested}


def test_the_deviations_finding_names_the_choices_that_move_a_learner():
    from ilets.report import deviations

    main = [{"variant": "", "method": m, "servers": 50, "seed": s, "avg_response_s": 2.0 + 0.1 * s,
             "energy_kwh": 1.0, "success_rate": 0.5} for m in ("drl", "drl+") for s in range(3)]
    slower = [{**r, "variant": "heavy-load", "avg_response_s": 2 * r["avg_response_s"]} for r in main[:3]]
    critic = [{**r, "variant": "no-critic", "avg_response_s": 1.01 * r["avg_response_s"]} for r in main[3:]]
    text = deviations.effects_lead(pd.DataFrame(main + slower + critic))
    # 2 choices tested; the slower fleet doubles DRL's response (+100 %), no critic moves DRL+ by 1 %
    assert "2 choices" in text and "1 change" in text and "+100%" in text and "DRL at 50 servers" in text
    assert text.index(deviations.VARIANT_TEXT["heavy-load"]) < text.index(deviations.VARIANT_TEXT["no-critic"])
    assert "1%" not in text.replace("+100%", "")
    assert "no choice" in deviations.effects_lead(pd.DataFrame()).lower()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_chapters_read_results_through_one_context_with_the_book_resamples(path):
    # one number of resamples for the whole book: the same comparison gets the same interval
    # (and status) on the summary and on its chapter
    text = path.read_text()
    assert "load_profile_info" not in text and "results_dir()" not in text
    assert "ReportContext.load(" not in text.replace("ReportContext.load()", "")
    # a chapter that resamples on its own (``reps=500``, or a resampler's default 2000) states
    # intervals the summary does not: resampling goes through ilets.report.findings, with ctx.reps
    assert "reps=" not in text.replace(" ", ""), f"{path.name} sets its own number of resamples"
    calls = {n.func.attr for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute)}
    assert not calls & RESAMPLERS, f"{path.name} resamples outside ilets.report.findings: {sorted(calls & RESAMPLERS)}"


def _resamplers() -> frozenset[str]:
    """The functions of ilets.report.stats and ilets.report.verdicts that resample (they take ``reps``)."""
    import inspect

    from ilets.report import stats as S

    return frozenset(name for module in (S, V) for name, f in vars(module).items()
                     if inspect.isfunction(f) and not name.startswith("_") and "reps" in inspect.signature(f).parameters)


RESAMPLERS = _resamplers()


def test_the_resamplers_are_known():
    assert {"summary_table", "iqm_table", "probability_of_improvement", "compare", "improvement_table",
            "all_verdicts", "component_effects"} <= RESAMPLERS


def test_status_counts_sentence():
    from ilets.report.findings.base import _status_counts, status_counts

    comp = pd.DataFrame({"status": [V.HOLDS, V.FAILS, V.DIRECTION_ONLY, V.DIRECTION_ONLY, V.REVERSES]})
    n = status_counts(comp)
    assert (n["total"], n[V.HOLDS], n[V.HOLDS_POOLED], n[V.HOLDS_SOME], n[V.DIRECTION_ONLY], n[V.FAILS],
            n[V.REVERSES]) == (5, 1, 0, 0, 2, 1, 1)
    text = _status_counts(comp)  # one sentence: the total, those that hold, then only the statuses present
    assert text.startswith("1 of the 5 ") and "pooled" not in text and "some fleet sizes" not in text
    assert [int(k) for k in re.findall(r"\b(\d+)\b", text)] == [1, 5, 2, 1, 1]
    assert status_counts(pd.DataFrame(columns=["status"]))["total"] == 0
    assert _status_counts(pd.DataFrame(columns=["status"])) == "no comparison could be measured"
    assert _status_counts(pd.DataFrame({"status": [V.HOLDS] * 3})).startswith("all 3 ")


def test_cloning_sentence_states_the_numbers_and_the_limit():
    import pandas as pd

    from ilets.report.findings import CLONE_COLS, cloning_sentence

    per = pd.DataFrame({"bc_top1_train": [0.13, 0.11], "bc_top5_train": [0.5, 0.4], "bc_top1_heldout": [0.12, 0.10],
                        "bc_top5_heldout": [0.48, 0.39], "bc_regret_rel_train": [0.02, 0.03],
                        "bc_regret_rel_heldout": [0.025, 0.035]}, index=[50, 200])
    text = cloning_sentence(per)
    assert "11.0%" in text and "13.0%" in text and "not memorised" in text
    assert "not in these results" in text  # no positive control given
    worse = per.assign(bc_top1_heldout=[0.02, 0.01])
    assert "more demonstrations would help" in cloning_sentence(worse)
    assert "not in these results" in cloning_sentence(pd.DataFrame())
    assert "not in these results" in cloning_sentence(per.drop(columns=[CLONE_COLS[0]]))


# --- scale, provenance and what a build reads and re-runs ---------------------------------

def test_banner_states_scale_completeness_and_provenance(ctx, store):
    assert not ctx.paper_scale and "quick look" in ctx.scale_text
    assert ctx.planned_cells == ctx.n_done  # no grid.json: the finished count
    banner = ctx.banner
    assert "the test profile" in banner and f"{ctx.n_done} of {ctx.n_done} planned cells" in banner
    assert "CPU-hours" in banner and "not finished" not in banner


def test_banner_says_when_the_grid_is_unfinished(store, tmp_path):
    import shutil

    out = tmp_path / "partial"
    shutil.copytree(store, out)
    names = [p.name for p in (out / "cells").iterdir()]
    (out / "grid.json").write_text(json.dumps({"cells": names + ["drl-M200-s0-x", "drl-M200-s1-x"]}))
    partial = ReportContext.load(out, reps=REPS)
    assert partial.planned_cells == partial.n_done + 2
    assert f"{partial.n_done} of {partial.n_done + 2} planned cells" in partial.banner
    assert "not finished" in partial.banner


def _partial_grid(store, tmp_path, extra_seeds: int):
    """A copy of ``store`` whose grid also plans 200 servers for every method, seeds 0-4, of
    which DRL has ``extra_seeds`` finished, plus a planned, unrun `no-critic` variant."""
    import shutil

    out = tmp_path / f"partial{extra_seeds}"
    shutil.copytree(store, out)
    for seed in range(extra_seeds):
        _cell(out, "drl", 200, seed, 0.0)
    build_store(out)
    names = [p.name for p in (out / "cells").iterdir()]
    d200 = RunConfig(workload=WorkloadConfig(scale=SCALE), fleet=FleetConfig(servers=200)).digest()  # as _cell names them
    planned = [f"{m}-M200-s{k}-{d200}" for m in METHODS for k in range(5)] + [f"drl+@no-critic-M50-s{k}-0" for k in range(5)]
    (out / "grid.json").write_text(json.dumps({"cells": sorted(set(names) | set(planned))}))
    return ReportContext.load(out, reps=REPS)


def test_a_fleet_size_with_too_few_seeds_is_left_out_and_named(store, tmp_path):
    partial = _partial_grid(store, tmp_path, extra_seeds=2)
    # 200 servers has two DRL seeds only: in no table, named in the banner, verdicts provisional
    assert partial.scales == (50, 100) and 200 not in set(partial.curves["servers"])
    assert partial.seeds_text == "3" and partial.n_seeds == 3
    assert numbers_in(partial.pending_text) == ["200", "2", "30"] and "cells finished" in partial.pending_text
    assert partial.pending_text in partial.banner and "50 and 100 servers only" in partial.banner
    assert "provisional" in partial.coverage_text
    unrun = partial.variant_missing_text("no-critic")
    assert "`no-critic` variant" in unrun and "not judged yet" in unrun and "50 servers (not yet run)" in unrun
    assert "`test` profile has no `upcoming`" in partial.variant_missing_text("upcoming")
    assert "`no-critic`: 50 servers" in partial.pending_variants_text and "not yet run" in partial.pending_variants_text
    # the verdicts are those of the judged fleet sizes alone (the two DRL seeds change nothing)
    whole = F.summary_findings(ReportContext.load(store, reps=REPS)).table
    assert F.summary_findings(partial).table["verdict"].tolist() == whole["verdict"].tolist()


def test_every_variant_metric_is_at_a_judged_fleet_size(ctx):
    every = ctx.all_metrics
    assert set(every["variant"]) == {"", "heavy-load"} and len(every) == ctx.n_done
    assert ctx.coverage_text.startswith("Every fleet size") and ctx.pending_text == ""


def test_scale_findings_set_two_scales_side_by_side(ctx, store, tmp_path):
    import shutil

    alone = F.scale_findings(ctx, small_out=store)  # the same folder: nothing beside it
    assert alone.small_name == "" and "No reduced-scale" in alone.sentence
    assert list(alone.table.columns[:2]) == ["claim", "statement"] and len(alone.table.columns) == 3
    # the verdict column names the profile, its scale (%), its fleet sizes and its seeds
    assert "(test," in alone.table.columns[2] and numbers_in(alone.table.columns[2]) == [f"{100 * SCALE:.3g}", "50", "100", "3"]
    other = tmp_path / "other"
    shutil.copytree(store, other)
    beside = F.scale_findings(ctx, small_out=other)
    assert beside.small_name == "test" and len(beside.table) == len(alone.table)
    assert set(beside.table["same at both scales"]) == {"yes"} and "0 of the paper's " in beside.sentence
    # main results at 50 servers only: the reduced results are judged at 50 servers too, so a
    # difference between the columns is one of scale, not of which fleet sizes ran
    from dataclasses import replace

    at50 = replace(ctx, metrics=ctx.metrics[ctx.metrics["servers"] == 50], curves=ctx.curves[ctx.curves["servers"] == 50])
    narrow = F.scale_findings(at50, small_out=other)
    reduced = narrow.table.columns[-2]
    assert "reduced scale (test," in reduced and numbers_in(reduced) == [f"{100 * SCALE:.3g}", "50", "3"]


def test_the_scale_sentence_names_each_claim_whose_verdict_moves():
    table = pd.DataFrame({"statement": ["A beats B", "C beats D"], "main": ["not reproduced", "partly"],
                          "small": ["partly", "partly"], "same at both scales": ["no", "yes"]})
    sentence = F.scale_sentence(table, "main", "small")
    assert numbers_in(sentence) == ["1", "2"] and "A beats B (not reproduced" in sentence and "C beats D" not in sentence
    assert F.scale_sentence(table.assign(**{"same at both scales": "yes"}), "main", "small").endswith("reduced scale.")


def test_scale_comparison_marks_verdicts_that_depend_on_scale():
    def findings(verdicts):
        return F.SummaryFindings(n_done=0, n_failed=0, cpu_hours=0.0, workload_text="", verdicts={}, table=pd.DataFrame(
            {"claim": [1, 2], "statement": ["a", "b"], "verdict": verdicts, "evidence": ["", ""]}))

    main, small = findings(["reproduced", "partly"]), findings(["reproduced", "not reproduced"])
    table = F.scale_comparison(main, small, "paper", "quick")
    assert list(table["same at both scales"]) == ["yes", "no"] and list(table["quick"]) == ["reproduced",
                                                                                           "not reproduced"]
    assert list(F.scale_comparison(main, None, "paper", "quick").columns) == ["claim", "statement", "paper"]


def test_the_book_reads_local_grids_first_then_shipped_results(tmp_path, monkeypatch):
    from ilets.study import results as R

    monkeypatch.delenv("ILETS_RESULTS", raising=False)
    monkeypatch.delenv("ILETS_SCALE_RESULTS", raising=False)
    monkeypatch.setattr(R, "repo_root", lambda: tmp_path)
    assert R.results_dir() == tmp_path / "shipped/quick"  # nothing anywhere: the last resort
    for rel in ("shipped/quick", "shipped/paper"):
        (tmp_path / rel / "store").mkdir(parents=True)
        (tmp_path / rel / "store" / "metrics.parquet").write_bytes(b"")
    assert R.results_dir() == tmp_path / "shipped/paper" and R.scale_dir() == tmp_path / "shipped/quick"
    (tmp_path / "results/quick/store").mkdir(parents=True)
    (tmp_path / "results/quick/store/metrics.parquet").write_bytes(b"")
    assert R.results_dir() == tmp_path / "shipped/paper" and R.scale_dir() == tmp_path / "results/quick"
    monkeypatch.setenv("ILETS_SCALE_RESULTS", "/x")
    monkeypatch.setenv("ILETS_RESULTS", "/y")
    assert R.results_dir() == Path("/y") and R.scale_dir() == Path("/x")


def test_headline_sets_the_papers_improvements_beside_ours(ctx, store, tmp_path, capsys):
    from ilets.report.headline import main

    text = F.headline_markdown(ctx)
    assert "paper (%)" in text and "pooled" in text and "50 servers" in text and ctx.banner in text
    import shutil

    from ilets.report.headline import SHIPPED_MARKERS, shipped_block

    repo = tmp_path / "repo"
    shutil.copytree(store, repo / "shipped" / "paper")  # the shipped folders sit beside the README
    readme = repo / "README.md"
    start, end = F.HEADLINE_MARKERS
    s_start, s_end = SHIPPED_MARKERS
    readme.write_text(f"# x\n{start}\nold table\n{end}\nmiddle\n{s_start}\nold list\n{s_end}\ntail\n")
    assert main(["--results", str(store), "--write", str(readme)]) == 0
    written = F.headline_markdown(ReportContext.load(store))  # the command's resamples (the book's)
    block = shipped_block(repo / "shipped")
    assert "CPU seconds" in block and "`shipped/paper/`" in block
    assert readme.read_text() == f"# x\n{start}\n{written}{end}\nmiddle\n{s_start}\n{block}{s_end}\ntail\n"
    (tmp_path / "lone").mkdir()
    (tmp_path / "lone" / "README.md").write_text(readme.read_text())
    assert main(["--results", str(store), "--write", str(tmp_path / "lone" / "README.md")]) == 2
    assert "expected the shipped folders" in capsys.readouterr().err
    assert main(["--results", str(tmp_path / "nowhere")]) == 2
    assert "store/metrics.parquet" in capsys.readouterr().err


@pytest.mark.slow  # reads every shipped paper cell's records (430 config.yaml files)
def test_readme_headline_is_the_shipped_results_table():
    # README quotes the shipped paper-scale results; regenerate with
    # `python -m ilets.report.headline --results shipped/paper --write book/records.md` after shipping
    root = Path(__file__).resolve().parents[1]
    shipped = root / "shipped" / "paper"
    readme = (root / "book" / "records.md").read_text()
    start, end = F.HEADLINE_MARKERS
    assert start in readme and end in readme, "README lacks the headline markers"
    if not (shipped / "store" / "metrics.parquet").is_file():
        pytest.skip("no shipped paper-scale results in this checkout")
    block = readme.split(start, 1)[1].split(end, 1)[0].strip("\n")
    assert block == F.headline_markdown(ReportContext.load(shipped)).strip("\n")


def test_plots_dodge_only_with_several_hue_levels():
    # one fleet size (a partial paper grid): seaborn's dodge divided by zero
    from ilets.report.plots import dodge, metric_grid

    assert dodge(0.4, [50, 50]) is False and dodge(0.4, [50, 200]) == 0.4
    one = pd.DataFrame({"method": ["drl", "drl", "drl+", "drl+"], "servers": 50, "seed": [0, 1, 0, 1],
                        "avg_response_s": [1.0, 2.0, 1.5, 1.7]})
    assert metric_grid(one, {"avg_response_s": "response"}, order=None) is not None


# --- the display and sentence helpers of chapters 3, 4, 8 and 10 -------------------------

def test_ks_sentence_measures_the_distance_or_says_why_not():
    gen = np.array([0.1, 0.2, 0.3, 0.4])
    assert "not present on this machine" in F.ks_sentence(gen, None)
    # 0.3 and 0.4 lie above every real value: the CDFs are 0.5 apart at 0.2
    assert F.ks_sentence(gen, np.array([0.05, 0.15, 0.2, 0.25])).endswith("distance is 0.500")
    assert F.ks_sentence(gen, gen.copy()).endswith("is 0.000")


def _latency_metrics(with_heuristics: bool = True) -> pd.DataFrame:
    rows = [("drl", 50, 0.020, 0.050), ("drl", 50, 0.040, 0.070), ("drl", 100, 0.030, 0.060),
            ("ilets", 50, 0.100, 0.300), ("ilets", 100, 0.200, 0.400)]
    if with_heuristics:
        rows += [("random", 50, 0.001, 0.002), ("random", 100, 0.001, 0.002),
                 ("greedy-cost", 50, 0.005, 0.009), ("greedy-cost", 100, 0.007, 0.011)]
    return pd.DataFrame(rows, columns=["method", "servers", "decision_p50_ms", "decision_p95_ms"])


def test_store_latency_orders_learners_then_heuristics_and_quotes_the_extremes():
    table, texts = F.store_latency(_latency_metrics())
    assert list(table["Method"]) == ["DRL", "ILETS", "random", "greedy-cost"]
    assert list(table.columns) == ["Method", "p50 µs, 50 servers", "p95 µs, 50 servers", "p50 µs, 100 servers",
                                   "p95 µs, 100 servers"]
    drl = table.set_index("Method").loc["DRL"]
    assert drl["p50 µs, 50 servers"] == pytest.approx(30.0) and drl["p95 µs, 100 servers"] == pytest.approx(60.0)
    # learners' p50 means: DRL 30 and 30 µs, ILETS 100 and 200 µs; slowest heuristic greedy-cost at 100 servers
    assert texts == {"store_learner_us_lo": "30", "store_learner_us_hi": "200",
                     "store_slowest_heuristic": "greedy-cost", "store_slowest_us": "7"}


def test_store_latency_without_heuristics_says_so():
    table, texts = F.store_latency(_latency_metrics(with_heuristics=False))
    assert list(table["Method"]) == ["DRL", "ILETS"]
    assert texts["store_slowest_heuristic"] == "n/a" and texts["store_slowest_us"] == "n/a"
    assert (texts["store_learner_us_lo"], texts["store_learner_us_hi"]) == ("30", "200")


def test_component_display_formats_the_pooled_effect_and_the_scales():
    per = ((50, 10.0, 1.0, 20.0), (100, 12.0, -1.0, 25.0), (200, 15.0, -2.0, 30.0))
    comp = pd.DataFrame({"component": ["DRL+ vs DRL: response time"], "status": [V.HOLDS_POOLED], "pooled": [12.345],
                         "pooled_low": [-0.04], "pooled_high": [20.0], "scales_ok": [1], "scales_worse": [0],
                         "scales": [3], "same_sign": [True], "paper_pct": [36.73], "per_scale": [per]})
    shown = F.component_display(comp)
    # comparison, status, effect (95 % CI), paper, fleet sizes with the CI above 0, below 0
    assert shown.iloc[0].tolist() == ["DRL+ vs DRL: response time", V.HOLDS_POOLED, "+12.3 % [-0.0, +20.0] pooled",
                                      "+36.73 %", "1/3", "0/3"]
    mixed = comp.assign(same_sign=[False], paper_pct=[np.nan],
                        per_scale=[((50, 10.0, 1.0, 20.0), (200, -5.0, -8.0, -2.0))], scales_worse=[1])
    row = F.component_display(mixed).iloc[0]
    effect = row["effect (95 % CI)"]
    assert numbers_in(effect) == ["+10.0", "+1.0", "+20.0", "50", "-5.0", "-8.0", "-2.0", "200"]
    assert "not pooled" in effect
    assert row["paper"] == "" and row["below 0"] == "1/3"
    stacked = F.claims_display({1: comp, 2: comp.iloc[0:0]}, (1, 2))
    assert list(stacked["claim"]) == [1] and stacked.columns[0] == "claim"


def test_config_texts_name_every_field():
    from ilets.config import ExpertConfig

    import dataclasses

    texts = F.config_texts(ExpertConfig(window=7))
    assert texts["cfg_window"] == "7" and len(texts) == len(dataclasses.fields(ExpertConfig))
    assert all(k.startswith("cfg_") for k in texts)
    assert F.config_texts(WorkloadConfig(scale=0.25, kind="google"))["cfg_scale"] == "0.25"
    assert F.config_texts(WorkloadConfig())["cfg_kind"] == "synthetic"


def test_gap_display_as_percentages():
    summary = pd.DataFrame({"mean_gap": [0.00123, 0.05], "max_gap": [0.0456, 0.2], "optimal_share": [0.875, 0.1]},
                           index=pd.Index(["ga", "pso"], name="expert"))
    shown = F.gap_display(summary)
    assert shown.to_dict("records") == [
        {"expert": "GA", "mean gap": "0.12%", "max gap": "4.6%", "optimal": "88%"},
        {"expert": "PSO", "mean gap": "5.00%", "max gap": "20.0%", "optimal": "10%"}]


def test_load_display_renames_and_rounds():
    load = pd.DataFrame({"scale": [1.0], "servers": [50], "policy": ["earliest-finish"], "tasks": [1000],
                         "avg_response_s": [1.23456], "avg_wait_s": [0.1234], "success_rate": [0.87654],
                         "energy_kwh": [1.0]})
    shown = F.load_display(load)
    assert shown.to_dict("records") == [{"scale": 1.0, "servers": 50, "online tasks": 1000,
                                         "mean response (s)": 1.235, "mean wait (s)": 0.123,
                                         "success rate (%)": 87.654}]


def test_timing_display_formats_every_column():
    timing = pd.DataFrame({"servers": [50], "expert": ["ga"], "ms_per_call": [12.345], "ms_p90": [20.0],
                           "cpu_ms_per_call": [11.0], "ratio_to_greedy": [150.26], "mean_saving_vs_greedy": [0.01234],
                           "max_saving_vs_greedy": [0.1], "cpu_util": [0.987]})
    shown = F.timing_display(timing)
    assert shown.to_dict("records") == [{"servers": 50, "expert": "GA", "ms per call": "12.3", "CPU ms per call": "11.0",
                                         "x greedy": "150.3", "saving over greedy": "1.23%", "CPU load": "99%"}]


def _expert_inputs(saving: float):
    summary = pd.DataFrame({"cases": [80, 80, 80], "mean_gap": [0.001, 0.002, 0.14], "max_gap": [0.04, 0.04, 1.2],
                            "optimal_share": [0.9375, 0.9, 0.25]}, index=pd.Index(["ga", "pso", "greedy"], name="expert"))
    timing = pd.DataFrame([(m, e, ms, s) for m in (50, 200)
                           for e, ms, s in (("ga", 16.26, saving if m == 50 else 0.0), ("pso", 24.2, 0.01),
                                            ("greedy", 2.2, 0.0))],
                          columns=["servers", "expert", "ms_per_call", "mean_saving_vs_greedy"])
    oail = pd.DataFrame({"oail_requests": [100, 100], "oail_completed": [100, 99]})
    return summary, timing, oail


def test_the_experts_finding_quotes_the_recorded_gaps_savings_and_costs():
    lead = F.experts_lead(*_expert_inputs(0.047))
    # optimal in 94 % and 90 % of 80 cases, greedy 25 %; the better saving per fleet 4.7 % and 1.0 %;
    # a call 16 ms (GA) and 24 ms (PSO) at 50 servers; 199 of 200 windows back
    assert numbers_in(lead) == ["94", "90", "80", "25", "4.7", "1.0", "50", "200", "16", "24", "50", "99.5"]
    assert "not the bottleneck" in lead and "largely cloning" in lead
    assert "largely cloning" not in F.experts_lead(*_expert_inputs(0.2))


def test_latency_display_one_row_per_method_and_path():
    summary = pd.DataFrame([
        ("DRL", 50, "our decision", 0.1, 0.2), ("DRL", 100, "our decision", 0.15, 0.3),
        ("DRL", 50, "paper", 1.0, np.nan), ("DRL", 100, "paper", 2.0, np.nan),
        ("ILETS", 50, "our decision", 0.5, 0.9), ("ILETS", 100, "our decision", 0.6, 1.1),
        ("ILETS", 50, "sb3 predict", 0.3, 0.4), ("ILETS", 100, "sb3 predict", 0.35, 0.45)],
        columns=["method", "servers", "path", "p50_ms", "p95_ms"])
    wide = F.latency_display(summary, (50, 100))
    assert list(wide.columns) == ["method", "path", "50 servers", "100 servers"]
    assert [tuple(r) for r in wide[["method", "path"]].values] == [
        (m, F.decision_time.PATHS[p]) for m in ("DRL", "ILETS") for p in ("our decision", "sb3 predict", "paper")]
    rows = wide.set_index(["method", "path"])
    # medians for people: microseconds below a millisecond, milliseconds above
    assert rows.loc[("DRL", "paper"), "100 servers"] == "2 ms" and rows.loc[("DRL", "ours"), "50 servers"] == "100 µs"
    assert (rows.loc[("DRL", F.decision_time.PATHS["sb3 predict"])] == "-").all()
    assert rows.loc[("ILETS", F.decision_time.PATHS["sb3 predict"]), "100 servers"] == "350 µs"
    assert (F.time_text(0.0247), F.time_text(21.0), F.time_text(1.5)) == ("25 µs", "21 ms", "1.5 ms")


def _decision_summary(ilets_factor: float) -> pd.DataFrame:
    rows = []
    for m, drl in ((50, 0.02), (200, 0.04)):
        rows += [("DRL", m, "our decision", drl, 2 * drl), ("ILETS", m, "our decision", ilets_factor * drl, 6 * drl),
                 ("DRL", m, "sb3 predict", 20 * drl, 40 * drl), ("DRL", m, "paper", 1e3 * drl, np.nan),
                 ("ILETS", m, "paper", 1.5e3 * drl, np.nan)]
    return pd.DataFrame(rows, columns=["method", "servers", "path", "p50_ms", "p95_ms"])


def test_decision_texts_quote_the_recorded_times():
    texts = F.decision_texts(_decision_summary(1.1), (50, 200))
    lead = texts["lead"]
    # ours 20-40 µs (DRL), 22-44 µs (ILETS); the paper 20-60 ms; the paper 1,000 and ~1,364 times slower
    assert numbers_in(lead)[:8] == ["20", "40", "22", "44", "50", "200", "1,000", "1,364"]
    assert "20-60 ms" in lead and "10% more" in lead and "rather than 50%" in lead and "does not grow" in lead
    assert texts["sb3_ratio"] == "20" and texts["p95_extra"] == "+200%, +200%"
    # an ILETS no slower than DRL is not said to cost more
    assert "costs more" not in F.decision_texts(_decision_summary(0.9), (50, 200))["lead"]


def test_event_list_profiles_and_hardware_texts():
    assert F.event_list_text([]) == "none"
    events = F.event_list_text(["trend_change", "burst_1"])
    assert events.startswith("trend change (") and "), burst (" in events and numbers_in(events) == ["2250", "1100"]
    assert F.event_list_text(["odd"], {}) == "odd"
    profiles = F.profiles_table(["smoke"])
    from ilets.study.profiles import load_profile

    variants = [v.name for v in load_profile("smoke").variants]
    assert list(profiles["profile"]) == ["smoke"]
    assert profiles["variants"].iloc[0] == (", ".join(variants) if variants else "-")
    assert int(profiles["cells"].iloc[0]) > 0
    hw = F.hardware_table({"cpu_model": "X", "cores": 4, "packages": {"numpy": "2.0"}})
    assert hw.to_dict("records")[0] == {"item": "CPU", "value": "X"}
    assert list(hw["item"]) == ["CPU", "cores", "RAM (GiB)", "Python", "platform", "numpy"]
    assert list(F.hardware_table({"packages": None})["item"]) == ["CPU", "cores", "RAM (GiB)", "Python", "platform"]


def test_heuristic_fleet_display_puts_metrics_then_fleet_sizes_in_columns():
    from ilets.report import plots

    t = pd.DataFrame({"heuristic": ["greedy-cost"] * 3, "metric": ["energy_kwh", "avg_response_s", "avg_response_s"],
                      "servers": [50, 200, 50], "learner": ["ilets", "drl+", "drl+"], "effect_pct": [1.25, -3.0, 12.0],
                      "ci_low_pct": [0.5, -5.0, 10.0], "ci_high_pct": [2.0, -1.0, 14.0], "verdict": ["better"] * 3,
                      "seeds": [10] * 3})
    d = plots.heuristic_fleet_display(t, F.PAPER_LABELS)
    assert list(d.columns) == [("energy", "50 servers"), ("response time", "50 servers"),
                               ("response time", "200 servers")]
    assert d.loc["greedy-cost", ("response time", "50 servers")] == "+12.0 [+10.0, +14.0] vs DRL+"
    assert plots.heuristic_fleet_display(t.iloc[0:0], F.PAPER_LABELS).empty


def test_differences_are_tested_on_the_variants_that_can_explain_them(ctx, store, tmp_path, summary_found):
    found = F.difference_findings(ctx, small_out=store)  # the same folder: no quick look beside it
    failing = [c for c, v in zip(summary_found.table["claim"], summary_found.table["verdict"]) if v != V.REPRODUCED]
    assert set(found.table["claim"]) <= set(failing)
    heavy = found.table[found.table["variant"] == "`heavy-load`"]
    # the store's heavy-load variant ran DRL, DRL+ and greedy-cost: claim 1 at most, at 50 servers
    assert set(heavy["claim"]) <= {1} and all(numbers_in(r) == ["0.2", "50", "3"] for r in heavy["results"])
    assert "`upcoming`" in found.untested and "not in" not in found.untested
    assert found.untested_text.startswith("No results test") and found.untested_text.endswith(f"{found.untested}.")


def test_difference_sentence_names_what_moves_a_verdict():
    t = pd.DataFrame({"claim": [1, 1, 5], "verdict here": ["partly", "partly", "not reproduced"],
                      "variant": ["`a`", "`b`", "`a`"], "choice it tests": ["x", "y", "x"], "results": ["r"] * 3,
                      "verdict, our choice": ["partly", "partly", "not reproduced"],
                      "verdict, the variant's": ["reproduced", "not reproduced", "not reproduced"]})
    s = F.difference_sentence(t, [1, 5, 7])
    # claim 1: closer with `a` (partly → reproduced), further with `b`; claim 5: none closer; claim 7: no variant
    assert re.findall(r"claim (\d)", s) == ["1", "5", "7"]
    assert s.index("closer") < s.index("`a` (partly → reproduced)") < s.index("further") < s.index("`b` (partly → not")
    assert "no tested variant" in s.split("claim 5")[1] and s.endswith("no variant tests claim 7.")
    assert F.difference_sentence(t.iloc[0:0], []).startswith("Every claim is reproduced here")


def test_summary_or_note_says_an_absent_table_in_words():
    from IPython.display import Markdown

    from ilets.report import plots

    note = plots.summary_or_note(pd.DataFrame(), {}, "caption", empty="nothing here")
    assert isinstance(note, Markdown) and note.data == "nothing here"


@pytest.mark.parametrize("completed, dropped, verdict", [(20, 0, "They keep up:"), (19, 1, "They mostly keep up:"),
                                                          (10, 10, "They cannot keep up:")])
def test_oail_throughput_says_whether_the_emulators_keep_up(completed, dropped, verdict):
    oail = pd.DataFrame({"oail_requests": [10, 10], "oail_completed": [completed - completed // 2, completed // 2],
                         "oail_dropped": [dropped, 0]})
    text = F.oail_throughput_text(oail, "simulated", 0.04)
    assert verdict in text
    assert "40 ms of simulated time" in text and "whatever the host's speed" in text
    came_back = text.split("20 windows were submitted")[1]
    assert numbers_in(came_back)[:3] == [str(completed), f"{100 * completed / 20:.1f}", str(dropped)]
    assert "depends on the host's speed" in F.oail_throughput_text(oail, "wall", 0.04)
    empty = F.oail_throughput_text(oail.iloc[:0], "simulated", 0.04)
    assert "no window was submitted" in empty


def test_heavy_load_purpose_depends_on_the_scale():
    assert "beyond our calibration" in F.heavy_purpose(True)
    assert "back towards the full window" in F.heavy_purpose(False)


# --- issue 22: sentences generated from the data --------------------------------------------

def _control(flat_exact=0.12, flat_tie=0.14, rich_exact=0.10, per_exact=0.8, per_matches=True,
             one_step=0.12, planner=0.11) -> pd.DataFrame:
    rows = []
    for expert in ("earliest-finish", "greedy-cost", "ga+pso"):
        flat = one_step if expert != "ga+pso" else planner
        rows += [{"expert": expert, "servers": 50, "policy": "flat", "layout": "paper", "agreement_exact": flat,
                  "agreement_tie": flat + (flat_tie - flat_exact), "regret_rel": 0.08, "matches": False},
                 {"expert": expert, "servers": 50, "policy": "flat", "layout": "rich", "agreement_exact": rich_exact,
                  "agreement_tie": rich_exact, "regret_rel": 0.09, "matches": False},
                 {"expert": expert, "servers": 50, "policy": "per-server", "layout": "per-server",
                  "agreement_exact": per_exact, "agreement_tie": per_exact, "regret_rel": 0.0,
                  "matches": per_matches}]
    return pd.DataFrame(rows)


def _limits(text: str) -> tuple[bool, bool, bool]:
    """Which limit a cloning-limit sentence names: the state, the planning horizon, the flat policy."""
    return "the state limits it" in text, "is part of the limit" in text, "limit is the flat policy" in text


def test_cloning_limit_is_the_flat_policy_only_when_the_control_says_so():
    text = F.cloning_limit_sentence(_control())
    assert _limits(text) == (False, False, True) and "not the limit either" in text
    assert _limits(F.cloning_limit_sentence(_control(rich_exact=0.4))) == (True, False, False)
    assert _limits(F.cloning_limit_sentence(_control(one_step=0.3, planner=0.1))) == (False, True, False)
    unmatched = F.cloning_limit_sentence(_control(per_matches=False))
    assert _limits(unmatched) == (False, False, False) and "expert in 0 of 3" in unmatched
    assert "not tested here" in F.cloning_limit_sentence(pd.DataFrame())


def test_exact_agreement_is_strict_only_when_disagreements_are_near_ties():
    # 12 % exact, 14 % with ties: 2 of the 88 % disagreements are ties: not strict
    loose = F.exact_agreement_sentence(_control(flat_exact=0.12, flat_tie=0.14, one_step=0.12, planner=0.12))
    assert "not too strict" in loose and "from 12.0% to 14.0%" in loose and "2% of its disagreements" in loose
    strict = F.exact_agreement_sentence(_control(flat_exact=0.12, flat_tie=0.9, one_step=0.12, planner=0.12))
    assert "a strict score here" in strict and "not too strict" not in strict
    assert "not measured here" in F.exact_agreement_sentence(None)


def test_learner_settings_text_quotes_the_run_not_a_typed_rate():
    from dataclasses import replace

    from ilets.config import RunConfig
    from ilets.report.deviations import AUTHORS_LEARNING_RATE

    run = RunConfig()
    text = F.learner_settings_text(run)
    assert f"PPO learns at {F.sci(run.ppo.learning_rate)} here" in text and "2.5e-6" in text
    assert f"{run.reward.theta:g}/{1 - run.reward.theta:g}" in text
    same = replace(run, ppo=replace(run.ppo, learning_rate=AUTHORS_LEARNING_RATE))
    assert "which we keep" in F.learner_settings_text(same)
    assert F.sci(3e-4) == "3e-4" and F.sci(2.5e-6) == "2.5e-6"


def test_energy_room_and_which_paper_gains_fit():
    m = pd.DataFrame([{"method": meth, "servers": s, "seed": k, "energy_kwh": e * (1 + s / 1000)}
                      for s in (50, 200) for k in range(2)
                      for meth, e in (("drl", 10.0), ("min-energy", 9.0), ("least-loaded", 11.0), ("random", 20.0))])
    room = F.energy_room(m)
    assert room["ceiling"].tolist() == ["least-loaded", "least-loaded"]
    assert room["room_pct"].tolist() == pytest.approx([10.0, 10.0])
    assert room["range_pct"].tolist() == pytest.approx([100 * 2 / 11] * 2)
    text = F.energy_room_sentence(room, paper={"drl+": {"energy_kwh": 20.92}, "ilets-": {"energy_kwh": 5.0}})
    assert "+20.92 % for DRL+ exceed" in text and "+5.00 % for ILETS- fits" in text
    assert "10.0 % at 50" in text and "10.0 % at 200" in text
    assert F.energy_room(m[m["method"] != "min-energy"]).empty


def test_heavy_load_sentence_names_the_fleet_size(results_found):
    res = results_found
    text = res.texts["heavy_text"]
    assert "main grid, DRL+ is" in text and "heavier load, DRL+ is" in text
    assert text.count(" at 50 servers") >= 3  # every comparison names its fleet size


def test_curve_measures_give_the_reference_zero_and_the_windows_their_verdicts(adaptation_found):
    found = adaptation_found
    ref = found.measures[found.measures["method"] == F.REFERENCE]
    assert len(ref) and (ref["convergence_decisions"] == 0).all() and (ref["settled"] == 1).all()
    assert ref["mad_gap"].fillna(0).eq(0).all()
    assert list(found.cold_windows["decisions"]) == list(V.COLD_START_WINDOWS)
    assert found.texts["cold_windows_text"].startswith("The verdict")


# --- every claim judged twice: the flat and the per-server learner ---------------------------

def _verdicts(pairs):
    return pd.DataFrame([{"claim": c, "statement": f"claim {c}", "verdict": v, "evidence": f"e{c}"}
                         for c, v in pairs])


def test_families_table_marks_the_claims_whose_verdict_depends_on_the_learner():
    from ilets.report import families as FM

    flat = _verdicts([(1, V.NOT_REPRODUCED), (2, V.NOT_REPRODUCED), (3, V.PARTLY), (4, V.NOT_REPRODUCED),
                      (5, V.NOT_TESTABLE)])
    per = _verdicts([(1, V.REPRODUCED), (2, V.NOT_REPRODUCED), (3, V.PARTLY), (4, V.NOT_TESTABLE),
                     (5, V.REPRODUCED)])
    t = FM.families_table(flat, per)
    assert list(t[FM.DEPENDS]) == [FM.YES, FM.NO, FM.NO, FM.CANNOT_TELL, FM.CANNOT_TELL]
    assert list(t[FM.COMPETENT]) == list(per["verdict"]) and list(t["evidence, competent"])[0] == "e1"
    text = FM.dependence_sentence(t)
    # claim 1 depends (flat: not reproduced, per-server: reproduced); 2 and 3 agree; 4 and 5 cannot be compared
    assert text.startswith("The verdict depends") and "claim 1 (not reproduced" in text
    assert text.index("flat learner, reproduced") < text.index("either learner")
    assert "claim 2 not reproduced" in text and "claim 3 partly" in text and "claims 4 and 5 cannot" in text
    assert text.index("claim 5 not testable") < text.index("flat learner;") < text.index("claim 4 not testable")
    same = FM.families_table(flat.iloc[1:3], per.iloc[1:3])
    assert FM.dependence_sentence(same).startswith("No verdict tested")
    absent = FM.families_table(flat, None)
    assert set(absent[FM.COMPETENT]) == {FM.NO_RESULTS} and set(absent[FM.DEPENDS]) == {FM.CANNOT_TELL}
    assert "no results here yet" in FM.dependence_sentence(absent)
    only_per = FM.dependence_sentence(FM.families_table(flat.iloc[3:4], per.iloc[3:4]))
    assert only_per.startswith("Claim 4 cannot") and only_per.endswith("with the per-server learner.")


@pytest.fixture(scope="module")
def per_server_store(tmp_path_factory) -> Path:
    """A partial per-server grid: DRL and DRL+ learner cells only, no heuristic cells."""
    out = tmp_path_factory.mktemp("repo") / "shipped" / "per-server"
    for method, gain in (("drl", 0.0), ("drl+", 0.15)):
        for servers in (50, 100):
            for seed in range(3):
                _cell(out, method, servers, seed, gain)
    run = to_dict(RunConfig(workload=WorkloadConfig(scale=SCALE)))
    (out / "profile.yaml").write_text(yaml.safe_dump({"name": "per-server", "description": "synthetic", "run": run}))
    build_store(out)
    return out


def test_every_claim_is_judged_on_a_partial_per_server_grid_without_crashing(ctx, per_server_store):
    from ilets.report import families as FM

    ps = FM.per_server_context(ctx, per_server_store)
    assert ps.family == "per-server" and ps.reps == ctx.reps
    # the faithful grid's heuristic cells on the per-server cells' fleet sizes and seeds
    assert {"greedy-cost", "random"} <= set(ps.metrics["method"]) and "ilets" not in set(ps.metrics["method"])
    assert set(ps.curves["method"]) >= {"drl", "drl+", "greedy-cost"}
    found = FM.families_findings(ctx, folder=per_server_store)
    got = dict(zip(found.table["claim"], found.table[FM.COMPETENT]))
    assert got[1] != V.NOT_TESTABLE  # DRL+ against DRL: both there
    assert all(got[c] == V.NOT_TESTABLE for c in (2, 3, 4, 5, 6, 7, 8))  # each needs ILETS- or ILETS
    assert "3 of its 4 comparisons" in found.table.set_index("claim").loc[4, "evidence, competent"]
    assert set(found.per_server.table["family"]) == {"per-server"}
    assert found.source.startswith("The per-server verdicts") and "12 of 12 planned cells" in found.source
    assert found.sentence == FM.dependence_sentence(found.table)
    assert list(found.display.columns[:2]) == ["#", "the paper says"]
    none = FM.families_findings(ctx, folder=per_server_store.parent / "absent")
    assert none.per_server is None and "not in this checkout yet" in none.source


def test_headline_compares_every_learner_of_both_families_with_the_best_heuristic(ctx, per_server_store):
    from ilets.report import heuristic_gap as G

    assert F.shipped_per_server(ctx) is None  # the test store is no shipped folder
    flat_only = F.headline_gap_markdown(ctx)
    assert "is not shipped yet (`shipped/per-server`)" in flat_only and "competent (per-server)" not in flat_only
    both = F.headline_gap_markdown(ctx, per_server_store)
    assert "With the per-server policy" in both and "| competent (per-server) | DRL+" in both
    gaps = G.learner_gaps(ctx.metrics, reps=ctx.reps)
    assert set(gaps["learner"]) == {"drl", "drl+", "ilets-", "ilets"} and set(gaps["servers"]) == {50, 100}
    assert G.every_learner_sentence(gaps, F.FLAT_FAMILY) in both
    # a shipped folder finds the per-server grid shipped beside it, and only there
    import shutil

    shipped = per_server_store.parent
    shutil.copytree(ctx.out, shipped / "paper")
    paper = ReportContext.load(shipped / "paper", reps=REPS)
    assert F.shipped_per_server(paper) == per_server_store
    assert F.headline_markdown(paper).startswith(both)


def test_every_learner_sentence_says_who_does_not_lose():
    from ilets.report import heuristic_gap as G

    t = pd.DataFrame({"measure": ["avg_response_s"] * 3, "servers": [50, 100, 50], "learner": ["drl", "drl", "ilets"],
                      "heuristic": "greedy-cost", "effect_pct": [-10.0, -5.0, 3.0], "ci_low_pct": [-12.0, -8.0, 1.0],
                      "ci_high_pct": [-8.0, 0.5, 5.0], "verdict": ["worse", "unresolved", "better"]})
    text = G.every_learner_sentence(t, "the test family")
    assert "loses to the best heuristic" in text and "in 1 of 3 comparisons" in text
    beats = text.split("beats it on ")[1].split(";")[0]
    assert beats.startswith("ILETS on response time") and numbers_in(beats) == ["50", "+3.0", "+1.0", "+5.0"]
    unresolved = text.split("unresolved: ")[1]
    assert unresolved.startswith("DRL on response time") and numbers_in(unresolved) == ["100", "-5.0", "-8.0", "+0.5"]
    # one seed: an interval of one point decides nothing, whatever its sign
    one = t.assign(verdict="unresolved")
    assert "in 0 of 3 comparisons" in G.every_learner_sentence(one, "f") and "beats" not in \
        G.every_learner_sentence(one, "f")
    t["ci_high_pct"], t["verdict"] = -1.0, "worse"
    all_lose = G.every_learner_sentence(t, "f")
    assert all_lose.startswith("With f, every learner") and "(DRL and ILETS) loses" in all_lose
    assert "every fleet size tested" in all_lose and numbers_in(all_lose) == ["50", "100", "95"]
    best = G.best_heuristics_text(t)
    assert best.startswith("on response time greedy-cost") and numbers_in(best) == ["50", "100"]


def test_chapter_10_shows_the_recorded_reruns_of_both_shipped_grid_command_grids():
    from ilets.report.findings import verified_folders
    from ilets.gridcommand.report.results import PAPER_SHIPPED, SHIPPED
    from ilets.study.verify import recorded_table

    root = Path(__file__).resolve().parents[1]
    shown = verified_folders(root / "shipped" / "paper")
    for folder in (SHIPPED, PAPER_SHIPPED):
        assert shown[str(folder)] == (root / folder, "gridcommand")
        table, _ = recorded_table(root / folder, "gridcommand")
        assert len(table) and set(table["reproduced"]) == {"yes"}


def test_cold_start_lead_is_three_sentences_of_the_numbers():
    from ilets.report.findings import cold_start_lead

    comp = pd.DataFrame({"status": [V.HOLDS, V.HOLDS, V.REVERSES, V.REVERSES]})
    tested = {(d, e): [50, 200] for d in ("per-server policy, server table", "flat MLP, rich state") for e in ("a", "b")}
    matched = {k: (v if k[0].startswith("per-server") else []) for k, v in tested.items()}
    text = cold_start_lead("not reproduced", comp, 25_000, pd.Series([0.062, 0.103]), matched, tested)
    assert text.count(". ") == 2 and text.endswith(".")
    assert "25,000" in text and "not reproduced" in text and "6% to 10%" in text
    assert [int(k) for k in re.findall(r"\b(\d) ", text.split(":")[1])] == [2, 4, 2]
    assert "per-server policy clones every expert" in text and "richer state matches none" in text
    assert cold_start_lead("reproduced", comp.iloc[:2], 10, pd.Series(dtype=float)).count(".") == 1


def test_adaptation_lead_states_the_verdicts_and_the_effect_per_fleet_size():
    from ilets.report.findings import adaptation_lead

    eff = pd.DataFrame({"servers": [50, 50, 200, 200, 100, 100], "metric": ["mean_reward"] * 6,
                        "rel_pct": [4.1, 4.3, -12.5, -13.0, 1.0, -2.0],
                        "verdict": ["better", "better", "worse", "worse", "better", "worse"]})
    text = adaptation_lead({5: "not reproduced", 6: "partly", 7: "reproduced"}, eff, {50: "ILETS", 100: "DRL", 200: "DRL"})
    assert text.count(". ") == 2 and text.endswith(".")
    assert "is not reproduced" in text and "is partly" in text and "is reproduced" in text
    effect, best = text.split(". ")[1:3]
    # raises it at 50 servers (by 4.1 to 4.3%), lowers it at 200 (12.5 to 13.0%), nowhere clearly at 100
    assert effect.index("raises") < effect.index("lowers") < effect.index("nowhere clearly")
    assert numbers_in(effect) == ["50", "4.1", "4.3", "200", "12.5", "13.0", "100"]
    assert best.index("ILETS's at") < best.index("DRL's at") and numbers_in(best) == ["50", "100", "200"]
    assert adaptation_lead({}, pd.DataFrame()).count(".") == 1


def test_rows_filters_without_a_branch_in_the_chapter():
    table = pd.DataFrame({"method": ["drl", "drl+", "drl+"], "metric": ["a", "a", "b"]})
    assert len(F.rows(table, method="drl+")) == 2 and len(F.rows(table, method="drl+", metric=["b"])) == 1
    assert F.rows(pd.DataFrame(), method="drl+").empty and len(F.rows(table, missing=1)) == 3


def test_results_lead_states_the_verdicts_and_the_counts():
    from ilets.report.findings import results_lead

    v = {1: "not reproduced", 2: "partly", 3: "reproduced", 8: "not reproduced"}
    text = results_lead(v, 1, 6, ["min-energy"])
    assert text.count(". ") == 1 and text.endswith(".")
    # claims 1, 2, 3 and 8 in order
    assert re.findall(r"is (not reproduced|partly|reproduced)", text) == ["not reproduced", "partly", "reproduced",
                                                                         "not reproduced"]
    assert "1 of its 6 figures" in text and text.split(": ")[1].startswith("min-energy is better")
    assert "are better" in results_lead(v, 0, 6, ["a", "b"]) and ":" not in results_lead(v, 0, 6).split(";")[1]
