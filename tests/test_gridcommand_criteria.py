"""The grid-command scenario's bar, each criterion's rule on small tables and on the shipped results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from text_numbers import numbers_in

from ilets.gridcommand.command import DRIFT_FACTORS
from ilets.gridcommand.designs import label
from ilets.gridcommand.report import positive_control as C
from ilets.gridcommand.report import criteria as K

ROOT = Path(__file__).resolve().parents[1]


def results(dropped: int = 0, share: float = 0.9, fleets=(50, 200), fits: float = 1.0) -> pd.DataFrame:
    """A results table: two experts, both regimes, two seeds; the envelope dropped ``dropped``
    events per seed, ``fits`` of those kept are within its reach, and the better expert reaches
    the band on ``share`` of events."""
    return pd.DataFrame([{"role": role, "servers": m, "seed": seed, "method": method, "events": 4,
                          "events_dropped": dropped, "events_clipped": 1, "feasible_share": fits,
                          "band_reached_share": share if method == "lyapunov" else share / 2, "misses_caused": 3.0}
                         for role in ("train", "eval") for m in fleets for seed in (0, 1)
                         for method in ("lyapunov", "rule")])


def test_the_envelope_criterion_needs_every_grid_to_drop_nothing_and_reach_the_band():
    good = K.envelope_status({"a": results(), "b": results()})
    assert good.status == K.MET
    # per grid: its fleet sizes, dropped of generated events, kept outside, the bar (80%), pairs meeting it
    assert good.evidence.startswith("a (") and "; b (" in good.evidence
    assert numbers_in(good.evidence) == ["50", "200", "0", "32", "0", "80", "4", "4"] * 2
    assert "dropped as unreachable" in good.evidence and "kept outside the envelope" in good.evidence
    assert K.envelope_status({"a": results(), "b": results(dropped=1)}).status == K.IN_PART
    outside = K.envelope_status({"a": results(fits=0.75)})  # one of each seed's 4 events asks past the reach
    assert outside.status == K.NOT_MET and "8 kept outside the envelope" in outside.evidence
    unrecorded = K.envelope_status({"a": results().drop(columns="feasible_share")})
    assert unrecorded.status == K.NOT_MET and "outside unrecorded" in unrecorded.evidence
    assert K.envelope_status({"a": results(share=0.5), "b": results(dropped=1)}).status == K.NOT_MET
    assert K.envelope_status({"a": results(fleets=(50,))}).status == K.NOT_MET  # one fleet size is not both
    unshipped = K.envelope_status({"a": results(), "b": None})  # a listed grid not shipped fails
    assert unshipped.status == K.IN_PART and "b: not shipped" in unshipped.evidence
    assert K.envelope_status({"b": None}).status == K.NOT_RUN
    # one seed without a recorded share: the count is unknown, not zero
    gap = results()
    gap.loc[gap["seed"] == 1, "feasible_share"] = float("nan")
    assert K.envelope_status({"a": gap}).status == K.NOT_MET
    # context grids are reported, not judged
    told = K.envelope_status({"a": results()}, {"c": results(dropped=1)})
    not_judged = told.evidence.split(" Not judged: ")[1]
    assert told.status == K.MET and not_judged.startswith("c (")
    assert numbers_in(not_judged) == ["50", "200", "8", "40", "0", "80", "4", "4"]
    # events moved to a new start are said, and count for the criterion as the events they are
    moved = K.envelope_status({"a": results().assign(events_redrawn=1.0)})
    assert moved.status == K.MET and "moved to a new start" in moved.evidence
    assert numbers_in(moved.evidence) == ["50", "200", "0", "32", "8", "0", "80", "4", "4"]


def bound(violations: int = 0, top: str = "hindsight") -> pd.DataFrame:
    return pd.DataFrame([{"role": "train", "regime": "r", "servers": m, "method": method, "seeds": 3,
                          "episode_reward": 2.0 if method == top else 1.0, "tracking_mae_rel": 0.5,
                          "misses_caused": 0.0, "violations": violations if method == "hindsight" else float("nan")}
                         for m in (50, 200) for method in ("hindsight", "oracle", "rule")])


def test_the_bound_criterion_counts_episodes_above_the_bound_and_the_top_rung():
    met = K.bound_status({"q": bound(), "f": bound()})
    # per grid: fleet sizes, seeds, episodes with a rung above the hindsight rung (of all), pairs it tops (of all)
    assert met.status == K.MET and "above the hindsight rung" in met.evidence and "on top in" in met.evidence
    assert numbers_in(met.evidence) == ["50", "200", "3", "0", "6", "2", "2"] * 2
    assert K.bound_status({"q": bound(), "f": bound(violations=1)}).status == K.IN_PART
    assert K.bound_status({"q": bound(top="oracle")}).status == K.NOT_MET
    assert K.bound_status({"q": pd.DataFrame(columns=["servers"])}).status == K.NOT_RUN
    assert K.bound_status({"q": bound(), "f": pd.DataFrame(columns=["servers"])}).status == K.IN_PART


def control(design: str, meets: dict[int, bool], track: float = -1.0) -> pd.DataFrame:
    return pd.DataFrame([{"design": design, "role": role, "servers": m, "method": method, "meets_bar": ok,
                          "track_pct": track, "miss_ratio": 0.95}
                         for m, ok in meets.items() for role in ("train", "eval") for method in ("bc", "bc+ppo")])


def test_the_clone_criterion_is_met_only_by_a_learner_without_privileged_terms():
    episodes = control(C.EPISODES_DESIGN, {50: True, 200: True})
    own_ok, own_bad = (control(C.OWN_DESIGN, {50: ok}, track=-13.0) for ok in (True, False))
    terms = control(C.TERMS_DESIGN, {50: True, 200: True})
    without = control(C.CONTROL_DESIGN, {50: False, 200: False}, track=-18.0)
    assert K.clone_status(pd.concat([episodes, own_ok])).status == K.MET
    # the 16-episode clone stands only while its own-workloads twin meets the bar too
    assert K.clone_status(pd.concat([episodes, own_bad])).status == K.IN_PART
    # met by the terms design alone: in part, and the evidence opens by saying so
    said = K.clone_status(pd.concat([episodes, own_bad, terms, without]))
    assert said.status == K.IN_PART and said.evidence.startswith(K.PRIVILEGED_ONLY + ". ")
    without_terms = said.evidence.split(f"{label(C.CONTROL_DESIGN)}: ")[1]
    assert without_terms.startswith("misses it") and numbers_in(without_terms)[:3] == ["50", "+18", "0.95"]
    assert K.clone_status(terms).status == K.IN_PART
    # the tracking change's interval over seeds, where the table has it (as the error's change)
    ranged = episodes.assign(track_low=-27.0, track_high=12.0)
    with_range = K.clone_status(ranged).evidence.split("meets it (")[1]
    assert "[-12, +27]" in with_range and numbers_in(with_range)[:5] == ["50", "+1", "-12", "+27", "0.95"]
    # the bar is read under the training regime, for the frozen clone only
    eval_only = episodes.assign(meets_bar=episodes["role"] == "eval")
    assert K.clone_status(eval_only).status == K.NOT_MET
    assert K.clone_status(pd.DataFrame()).status == K.NOT_RUN


def heldout(worse_at: tuple = (), better: bool = True) -> pd.DataFrame:
    rows = [{"method": m, "against": "bc", "servers": s, "verdict": "worse" if s in worse_at else "unresolved",
             "miss_verdict": "unresolved", "n_x": 8} for m in ("bc+ppo", "bc+ppo+oail") for s in (50, 200)]
    rows += [{"method": m, "against": "lyapunov", "servers": s,
              "verdict": "better" if better and m == "bc+ppo" and s == 200 else "unresolved",
              "miss_verdict": "unresolved", "n_x": 8} for m in ("bc", "bc+ppo") for s in (50, 200)]
    return pd.DataFrame(rows)


def test_the_finetuning_criterion_reads_worse_verdicts_against_the_clone():
    met = K.finetune_status("d", heldout())
    assert met.status == K.MET
    from ilets.gridcommand.report.results import method_label

    clone, teacher = met.evidence.split("; ")
    assert clone.startswith(f"Design *d*, {method_label('bc+ppo')}, {method_label('bc+ppo+oail')}:")
    assert "clone at no fleet size" in clone and numbers_in(clone) == ["8"]  # paired seeds
    assert teacher.endswith(f"teacher: {method_label('bc+ppo')} at 200 servers.")
    part = K.finetune_status("d", heldout(worse_at=(200,), better=False))
    assert part.status == K.IN_PART and "clone at 200 servers (8" in part.evidence and part.evidence.endswith(": none.")
    misses = heldout()
    misses.loc[misses["against"] == "bc", "miss_verdict"] = "worse"
    assert K.finetune_status("d", misses).status == K.NOT_MET
    # the clone itself better than the teacher is not fine-tuning beating it
    clone = heldout(better=False)
    clone.loc[(clone["method"] == "bc") & (clone["against"] == "lyapunov"), "verdict"] = "better"
    assert K.finetune_status("d", clone).evidence.endswith(": none.")
    assert K.finetune_status("d", pd.DataFrame()).status == K.NOT_RUN


def drift(seeds: int, events: int, fewer: int | None = None) -> pd.DataFrame:
    """A family's rows: every factor's two grids with ``seeds`` seeds (``fewer`` in the load
    factor's control), each episode holding ``events``."""
    return pd.DataFrame([{"factor": f, "kind": k, "regime": f"{f}-{k}", "servers": 50, "seed": s, "events": events}
                         for f in DRIFT_FACTORS for k in ("shifted", "control")
                         for s in range(fewer if fewer is not None and (f, k) == ("load", "control") else seeds)])


@pytest.mark.parametrize("families,status", [
    ({"whole": (list(DRIFT_FACTORS), drift(10, 25))}, K.MET),
    ({"few events": (list(DRIFT_FACTORS), drift(10, 3)), "short": (["depth"], drift(10, 25))}, K.IN_PART),
    ({"few seeds": (list(DRIFT_FACTORS), drift(2, 25))}, K.IN_PART),
    ({"one grid short": (list(DRIFT_FACTORS), drift(10, 25, fewer=2))}, K.IN_PART),
    ({"none whole": ([], drift(10, 25))}, K.NOT_MET),
    ({"unshipped": ([], drift(0, 25))}, K.NOT_RUN)])
def test_the_drift_criterion_wants_one_family_whole_with_enough_events_and_seeds(families, status):
    assert K.drift_status(families).status == status


def test_the_drift_criterion_says_each_familys_factors_seeds_and_events():
    said = K.drift_status({"f": (list(DRIFT_FACTORS), drift(10, 25))}).evidence
    # factors with their control (of all), seeds in the fewest of their grids, events in the median episode
    assert said.startswith("f: ") and numbers_in(said) == [str(len(DRIFT_FACTORS))] * 2 + ["10", "25"]
    assert "median episode" in said and "archive table" in said
    none = K.drift_status({"f": ([], drift(10, 25))}).evidence  # a family that is neither read nor met: unnamed
    assert none == "No drift family is archived."


def test_the_full_window_criterion_wants_every_cell_traced_and_every_rerun_exact():
    ok, traced = pd.DataFrame({"reproduced": ["yes", "yes"]}), {"cells": 94}
    assert K.full_window_status(94, 94, traced, ok).status == K.MET
    said = K.full_window_status(94, 94, traced, ok).evidence
    # shipped of planned cells, those in the provenance, re-runs reproduced exactly of recorded
    assert numbers_in(said) == ["94", "94", "94", "2", "2"] and "in its provenance" in said and "exactly" in said
    assert K.full_window_status(90, 94, {"cells": 90}, ok).status == K.IN_PART
    assert K.full_window_status(94, 94, {}, ok).status == K.IN_PART  # no provenance
    assert K.full_window_status(94, 94, traced, pd.DataFrame({"reproduced": ["yes", "no"]})).status == K.IN_PART
    assert K.full_window_status(94, 94, traced, pd.DataFrame({"reproduced": []})).status == K.IN_PART
    assert K.full_window_status(0, 94, traced, ok).status == K.NOT_RUN


def test_the_shipped_results_give_every_criterion_a_status():
    table = K.criteria_table(ROOT)
    assert len(table) == 6 and set(table["status"]) <= {K.STATUS_WORDS[s] for s in K.STATUSES}
    assert all(table["evidence"].str.len() > 0)
    counts = table["status"].value_counts()
    said = K.criteria_sentence(table)
    assert numbers_in(said.split(":")[0]) == ["6"] and "shipped results" in said
    words = [K.STATUS_WORDS[s] for s in K.STATUSES]
    assert said.split(": ", 1)[1] == ", ".join(f"{counts[w]} {w}" for w in words if w in counts) + "."


def test_the_readme_block_is_generated_from_the_shipped_results():
    readme = (ROOT / "book" / "records.md").read_text()
    start, end = K.README_MARKERS
    assert readme.split(start, 1)[1].split(end, 1)[0] == "\n" + K.readme_block(ROOT)


def test_the_readme_block_is_written_between_its_markers(tmp_path, capsys):
    target = tmp_path / "README.md"
    target.write_text(f"before\n{K.README_MARKERS[0]}\nSTALE\n{K.README_MARKERS[1]}\nafter\n")
    assert K.main(["--root", str(ROOT), "--write", str(target)]) == 0
    text = target.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "STALE" not in text
    assert "| criterion | status | evidence |" in text
    assert K.main(["--root", str(ROOT), "--write", str(tmp_path / "none.md")]) == 2  # no markers: one line
    assert capsys.readouterr().err.count("\n") == 1

