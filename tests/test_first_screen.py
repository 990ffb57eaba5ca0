"""Defects of the rendered book found on its first screens (issue 61, "The answer on the first
screen"): each test reads the package function that makes a table or a phrase, and failed on
the code before its fix."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from text_numbers import numbers_in

from ilets.report import plots
from ilets.report import stats as S

ROOT = Path(__file__).resolve().parents[1]


# --- 1. chapter 6: the cumulative-reward table keeps its Method column -----------------------

def test_labelling_an_already_labelled_table_keeps_its_method_names():
    # adaptation_findings' lead_table already has Method (and no method): labelling it again
    # used to blank the column
    shown = pd.DataFrame({"servers": [50, 50], "Method": ["ILETS", "DRL"], "share_led": ["79%", "0%"]})
    assert list(plots.label_methods(shown)["Method"]) == ["ILETS", "DRL"]
    assert list(plots.label_methods(plots.label_methods(pd.DataFrame({"method": ["drl+"]})))["Method"]) == ["DRL+"]


def test_chapter_6_shows_the_lead_table_as_the_findings_make_it():
    code = (ROOT / "notebooks" / "A06_oail_details.py").read_text()
    assert "label_methods(found.lead_table)" not in code and "markdown_table(found.lead_table" in code


# --- 2. chapter 7: worlds per-server rows, the heavy load per fleet size -----------------------

def _worlds_cells(variant: str, methods: dict[str, float], servers=(50,), seeds=range(6)) -> pd.DataFrame:
    rng = np.random.default_rng(len(variant))
    rows = [{"method": m, "variant": variant, "servers": s, "seed": k, "digest": "x",
             "avg_response_s": 1.0 + d + 0.01 * rng.standard_normal(), "mean_reward": -(1.0 + d),
             "energy_kwh": 1.0}
            for s in servers for k in seeds for m, d in methods.items()]
    return pd.DataFrame(rows)


def test_the_worlds_table_has_per_server_learners(tmp_path):
    from types import SimpleNamespace

    from ilets.report.worlds import chapter_findings

    worlds = tmp_path / "worlds"
    (worlds / "store").mkdir(parents=True)
    heur = {"earliest-finish": 0.0, "greedy-cost": 0.1}
    pd.concat([_worlds_cells("", {"drl": 0.3, "drl+": 0.2, **heur}),
               _worlds_cells("per-server", {"drl": 0.05, "drl+": -0.05})]).to_parquet(worlds / "store" / "metrics.parquet")
    per_server = tmp_path / "per-server"
    (per_server / "store").mkdir(parents=True)
    _worlds_cells("", {"drl": 0.05, "drl+": -0.05}).to_parquet(per_server / "store" / "metrics.parquet")
    ctx = SimpleNamespace(metrics=_worlds_cells("", {"drl": 0.3, "drl+": 0.2, **heur}), reps=100)
    found = chapter_findings(ctx, per_server=per_server, worlds=worlds)
    ps = found.tables["per-server"]
    # before, the loader's default (the main cells) dropped the per-server variant: no learner row
    assert {"drl+"} <= set(ps["x"]) and len(ps[ps["x"] == "drl+"]) >= 3
    assert "No worlds results" not in found.sentences["per-server"]


def test_the_heavy_load_table_is_per_fleet_size():
    from ilets.report import findings as F

    both = pd.concat([
        pd.DataFrame({"method": "drl", "servers": s, "seed": k, "setting": setting, "avg_response_s": base + (k % 2),
                      "energy_kwh": base, "success_rate": 0.9, "mean_reward": -base}, index=[0])
        for s, base in ((50, 10.0), (200, 1.0)) for setting in ("main grid", "heavier load") for k in range(4)],
        ignore_index=True)
    table = F.heavy_summary(both, reps=50)
    assert set(table["servers"]) == {50, 200}
    resp = table[(table["metric"] == "avg_response_s") & (table["setting"] == "main grid")].set_index("servers")
    assert resp.loc[50, "mean"] == pytest.approx(10.5) and resp.loc[200, "mean"] == pytest.approx(1.5)  # never 6.0
    parts = F.by_fleet(table)
    assert list(parts) == [50, 200] and set(parts[200]["servers"]) == {200}
    shown = plots.summary_display(parts[50], {"avg_response_s": ("response (s)", 2, 1.0)}, index="method",
                                  split="setting")
    assert shown.loc[("DRL", "main grid"), "response (s)"].startswith("10.50 ")
    assert F.by_fleet(pd.DataFrame()) == {}


# --- 3. chapter 9: no "<IPython.core.display.Markdown object>" --------------------------------

def test_a_blank_note_shows_nothing():
    # Markdown("") has no Markdown to show, and the page printed its repr instead
    assert plots.note("") is None and plots.note("  ") is None and plots.note(None) is None
    assert plots.note("Variants planned.").data == "Variants planned."
    assert plots.markdown_table(pd.DataFrame(), {}, empty="") is None
    assert plots.summary_or_note(pd.DataFrame(), {}, "caption", empty="") is None
    assert "plots.note(ctx.pending_variants_text)" in (ROOT / "notebooks" / "09_deviations.py").read_text()


# --- 4. a share of the window in words -----------------------------------------------------------

@pytest.mark.parametrize("x,text", [(1.0, "the whole"), (0.5, "half"), (0.1, "a tenth"), (0.25, "a quarter"),
                                    (0.02, "1/50"), (0.002, "1/500"), (0.4, "2/5"), (0.0357, "3.57 %")])
def test_a_share_reads_as_a_fraction(x, text):
    assert S.share_text(x) == text


def test_the_workload_chapter_says_the_whole_window_at_paper_scale():
    from ilets.report import findings as F

    full = F.window_text(1.0, 590_000)
    assert full.endswith("the whole window (590,000 tasks)") and " 1 of" not in full and "( " not in full
    quick = F.window_text(0.02, 11_800)
    assert "shortens the window to 1/50" in quick and quick.endswith("(11,800 tasks)")


# --- 5. chapter 2's equation shows the wait form the results used ----------------------------

def test_the_cost_equation_shows_the_configured_wait_form():
    from ilets.config import RewardConfig
    from ilets.report.parameters import PARAMETERS, cost_equation, wait_form_text

    log = cost_equation(RewardConfig(wait_form="log"))
    assert r"\log" in log and r"\min" not in log and log.startswith("$$") and log.endswith("$$")
    assert r"\min" in cost_equation(RewardConfig(wait_form="capped"))
    text = wait_form_text(RewardConfig(wait_form="log"))
    assert "`wait_form: log`" in text and "(capped)" in text and "(linear)" in text
    assert "reward.wait_form" in PARAMETERS
    # every shipped main grid the book shows ran the log form, read from its recorded profile
    import yaml

    for folder in ("paper", "quick", "per-server"):
        profile = yaml.safe_load((ROOT / "shipped" / folder / "profile.yaml").read_text())
        assert profile["run"]["reward"]["wait_form"] == "log"
    code = (ROOT / "notebooks" / "02_model.py").read_text()
    assert "cost_equation(ctx.run.reward)" in code and r"\min\!\Big(1" not in code


# --- 6. chapter 14: which heuristics its best heuristic is the best of ------------------------

def test_the_shifts_chapter_names_the_heuristics_it_ran():
    from ilets.report import shifts as SH

    rows = pd.DataFrame({"actor": ["drl+", "earliest-finish", "greedy-cost"], "kind": ["learner", "heuristic", "heuristic"]})
    text = SH.heuristics_text(rows)
    assert text.split("the shift family ran, ")[1].startswith("earliest-finish and greedy-cost")
    assert "min-energy" in text.split("did not run")[0]
    assert SH.heuristics_text(pd.DataFrame()).startswith("No heuristic has run")
    table = pd.DataFrame([
        {"shift": "none", "factor": "none", "servers": 50, "train_servers": 50, "learner": "drl", "measure": "mean_reward",
         "heuristic": "greedy-cost", "seeds": 3, "rel_pct": -1.0, "ci_low": -1.1, "ci_high": -0.9, "verdict": "worse",
         "unshifted_rel_pct": np.nan},
        {"shift": "expert-greedy", "factor": "expert quality", "servers": 50, "train_servers": 50, "learner": "drl+",
         "measure": "mean_reward", "heuristic": "greedy-cost", "seeds": 3, "rel_pct": 0.1, "ci_low": 0.0,
         "ci_high": 0.2, "verdict": "better", "unshifted_rel_pct": 0.0}])
    shown = SH.display_table(table, "mean_reward").set_index("shift")
    assert "best heuristic run" in shown.columns
    # a learner a world did not run is said, not "nan"
    assert shown.loc["expert greedy", "DRL"] == SH.NOT_RUN and shown.loc["unshifted", "DRL+"] == SH.NOT_RUN


# --- 7. numbers for people -----------------------------------------------------------------------

@pytest.mark.parametrize("value,text", [(0.03572049936337862, "0.0357"), (-10.5293, "-10.5"), (5000.0, "5,000"),
                                        (True, "yes"), (np.bool_(False), "no"), (np.nan, "—"), (None, "—"),
                                        (np.int64(259368), "259,368"), (1.5, "1.5"), (12345.678, "12,346")])
def test_a_cell_reads_for_people(value, text):
    assert S.cell_text(value) == text


def test_markdown_tables_show_no_raw_values():
    frame = pd.DataFrame({"method": ["drl", "greedy-cost"], "error": [0.03572049936337862, np.nan],
                          "reward": [-10.5293, -1.0], "tasks": [5000.0, 3.0], "settled": [True, False]})
    md = plots.markdown_table(frame, {}).data
    for raw in ("0.03572049936337862", "-10.5293", "5000.0", "True", "False", "nan"):
        assert raw not in md
    assert "| DRL " in md and "0.0357" in md and "5,000" in md and "| yes" in md and "—" in md


def test_a_ratio_replaces_a_meaningless_percentage():
    assert S.ratio_text(968.03, 1.0) == "968x"
    assert S.ratio_text(0.0004, 1.0) == "1/2,500"
    assert S.ratio_text(0.0, 1.2) == "0 (from 1.2)" and S.ratio_text(1.0, 0.0) == "—"


def test_the_positive_control_gap_over_100_percent_is_a_multiple():
    from ilets.report.positive_control import gap_text

    assert gap_text(967.0303) == "968x the expert's" and gap_text(8.8426) == "9.84x the expert's"
    assert gap_text(0.0228) == "+2.28%" and gap_text(np.nan) == "—"


def test_the_critic_error_falls_by_a_factor_not_by_100_percent():
    from ilets.report.findings.cold_start import critic_drop_text

    mse = pd.DataFrame({"critic_mse_before": [254.0, 90.1], "critic_mse_after": [0.722, 0.202]},
                       index=pd.Index([50, 200], name="servers"))
    text = critic_drop_text(mse)
    assert "100%" not in text and "by a factor of 352" in text and numbers_in(text.split("factor of")[1])[:2] == ["352", "446"]
    assert "254" in text and "0.722" in text
    assert "no measured effect" in critic_drop_text(pd.DataFrame())


# --- 8. table cells do not break words; wide tables scroll in their box --------------------------

def test_table_css_keeps_words_whole_and_scrolls_wide_tables():
    css = (ROOT / "_static" / "tables.css").read_text()
    rules = dict(re.findall(r"([^{}]+)\{([^{}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S)))
    cells = next(body for sel, body in rules.items() if "td" in sel and "th" in sel)
    for decl in ("word-break: normal", "overflow-wrap: normal", "hyphens: none"):
        assert decl in cells
    assert "anywhere" not in css and "break-all" not in css
    box = next(body for sel, body in rules.items() if "pst-scrollable-table-container" in sel)
    assert "overflow-x: auto" in box


# --- 9. what `make book` re-runs, said once ------------------------------------------------------

def test_make_book_reruns_are_stated_from_one_place():
    from ilets.report import findings as F

    assert F.BOOK_RERUNS == 0 and F.book_reruns_text() == "re-runs no cell"
    assert F.book_reruns_text(1) == "re-runs 1 cell" and F.book_reruns_text(3) == "re-runs 3 cells"
    said = F.book_reruns_text()
    readme = (ROOT / "README.md").read_text()
    make_book = re.search(r"^make book .*$", readme, re.M)
    assert make_book and said in make_book.group(0)
    claims = re.findall(r"re-run(?:s|ning)? (?:no|one|\d+|the few) cells?", readme)
    assert claims and set(claims) == {said}
    makefile = (ROOT / "Makefile").read_text().split("\nbook: env")[0].rsplit("\n\n", 1)[-1]
    assert said in makefile and "few cells" not in makefile
    chapter = (ROOT / "notebooks" / "10_reproduce.py").read_text()
    assert "F.book_reruns_text()" in chapter and "re-runs nothing" not in chapter


def test_no_chapter_calls_a_cell_runner():
    # the truth behind BOOK_RERUNS == 0 (tests/test_book_static.py holds the wider rule)
    from ilets.report import findings as F
    import jupytext

    called = []
    for path in sorted((ROOT / "notebooks").glob("*.py")):
        nb = jupytext.read(path)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and not c.source.lstrip().startswith("%"))
        code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in F.CELL_RUNNERS:
                    called.append(f"{path.name}: {name}")
    assert len(called) == F.BOOK_RERUNS, called
