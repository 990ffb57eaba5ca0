"""The positive control: its runner (resumable, strict), its rule and its sentence."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from text_numbers import numbers_in

from ilets.config import ConfigError
from ilets.report import positive_control as P
from ilets.study import positive_control as S


def frame(gap_by_design: dict, servers=(50, 200), seeds=(0, 1, 2), experts=("earliest-finish",)) -> pd.DataFrame:
    """Hand-made rows: every clone's response and reward off its expert's by the design's gap."""
    rows = []
    for (policy, layout), gap in gap_by_design.items():
        for e in experts:
            for m in servers:
                g = gap[m] if isinstance(gap, dict) else gap
                for s in seeds:
                    rows.append({"expert": e, "servers": m, "trained_on": m, "seed": s, "policy": policy,
                                 "layout": layout, "eval_tasks": 100, "eval_whole_window": True,
                                 "agreement_exact_heldout": 0.5, "agreement_tie_heldout": 0.6,
                                 "regret_rel_heldout": 0.01, "clone_avg_response_s": 2.0 * (1 + g),
                                 "expert_avg_response_s": 2.0, "clone_mean_reward": -0.5 * (1 + g),
                                 "expert_mean_reward": -0.5, "clone_success_rate": 0.9, "expert_success_rate": 0.95})
    return pd.DataFrame(rows)


def test_the_rule_matches_within_tolerance_and_names_the_fleet_sizes():
    df = frame({("per-server", "per-server"): {50: 0.004, 200: 0.03}, ("flat", "paper"): 0.5})
    agg = P.summary(df)
    assert agg.set_index(["design", "servers"])["matches"].to_dict() == {
        (P.DESIGN_LABELS[("per-server", "per-server")], 50): True,
        (P.DESIGN_LABELS[("per-server", "per-server")], 200): False,
        (P.DESIGN_LABELS[("flat", "paper")], 50): False, (P.DESIGN_LABELS[("flat", "paper")], 200): False}
    v = P.verdict(agg)
    per_server, flat = (v.text.split(P.DESIGN_LABELS[k] + " matches ")[1]
                        for k in (("per-server", "per-server"), ("flat", "paper")))
    assert per_server.startswith("Earliest-Finish at 50 of") and numbers_in(per_server)[:3] == ["50", "50", "200"]
    assert flat.startswith("Earliest-Finish at no fleet size")
    assert v.seeds == 3


def test_a_clone_better_than_its_expert_by_more_than_the_tolerance_does_not_match():
    """The rule asks whether the clone *is* its expert; beating it is a different finding."""
    agg = P.summary(frame({("per-server", "per-server"): -0.05}))
    assert not agg["matches"].any()
    text = P.verdict(P.summary(frame({("per-server", "per-server"): 0.0}))).text
    assert "matches Earliest-Finish at 50/200 servers" in text and "(every fleet size tested)" in text


def test_no_results_say_so():
    assert P.verdict(P.summary(pd.DataFrame())).text.startswith("No positive-control results")


@pytest.mark.slow
def test_the_smoke_control_runs_resumes_and_is_strict(tmp_path):
    profile = S.load_profile("positive-control-smoke")
    out = tmp_path / "pc"
    df = S.run(profile, out, "positive-control-smoke")
    units = len(profile.units())
    per_unit = len(S.DESIGNS) + 1  # plus one fleet-size transfer of the per-server clone
    assert len(df) == units * per_unit
    assert set(df.loc[df.servers != df.trained_on, "policy"]) == {"per-server"}
    assert (df["commit"].str.len() >= 12).all() and df["machine"].str.contains("cores").all()
    prov = json.loads((out / "PROVENANCE.json").read_text())
    assert prov["units"] == units and prov["cpu_hours"] > 0  # transfer rows belong to their unit
    assert len(list((out / "policies").iterdir())) == units
    # resumes: nothing is recomputed
    again = S.run(profile, out, "positive-control-smoke")
    pd.testing.assert_frame_equal(df, again)
    # another profile on the same folder is refused; a damaged unit record is named
    other = S.ControlProfile(**{**profile.__dict__, "bc_epochs": 3})
    with pytest.raises(ConfigError, match="holds another positive-control profile"):
        S.run(other, out, "other")
    unit = next((out / "units").glob("*.json"))
    unit.write_text("[{")
    with pytest.raises(ConfigError, match=str(unit) + ": damaged unit record"):
        S.gather(out)


def test_a_bad_profile_is_named(tmp_path):
    path = tmp_path / "pc.yaml"
    path.write_text("experts: [dqn]\n")
    with pytest.raises(ConfigError, match=r"pc\.yaml\.experts\[0\]: expected one of \('earliest-finish'"):
        S.load_profile(str(path))
    path.write_text("bc_epochs: 0\n")
    with pytest.raises(ConfigError, match=r"pc\.yaml\.bc_epochs: .*integer > 0, got 0"):
        S.load_profile(str(path))
    with pytest.raises(ConfigError, match="is a folder"):
        S.load_profile(str(tmp_path))


def test_the_transfer_table_reads_transfer_rows():
    df = frame({("per-server", "per-server"): 0.002}, servers=(200,))
    df["trained_on"] = 50
    shown = P.transfer_display(df)
    assert shown[["trained on (servers)", "scheduling (servers)"]].values.tolist() == [[50, 200]]
    assert shown["response gap"].iloc[0] == "+0.20%"


@pytest.mark.slow
def test_shipping_copies_finished_units_with_their_provenance(tmp_path):
    profile = S.load_profile("positive-control-smoke")
    out = tmp_path / "pc"
    S.run(profile, out, "positive-control-smoke")
    (out / "policies" / "in-flight").mkdir()  # weights of a unit without a row: not shipped
    prov = S.ship_positive_control(out, tmp_path / "shipped")
    assert prov["units"] == prov["planned_units"] == len(profile.units())
    assert not (tmp_path / "shipped" / "policies" / "in-flight").exists()
    df, read = P.load(tmp_path / "shipped")
    assert len(df) and read == json.loads((tmp_path / "shipped" / "PROVENANCE.json").read_text())
    assert f"{prov['units']} of {prov['planned_units']} planned units" in P.banner(tmp_path / "shipped", read,
                                                                                P.summary(P.split(df)[0]))


def test_the_readme_paragraph_is_generated_from_the_shipped_control():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "book" / "records.md").read_text()
    start, end = P.README_MARKERS
    block = readme.split(start, 1)[1].split(end, 1)[0]
    assert block == "\n" + P.readme_block(Path(__file__).resolve().parents[1] / "shipped" / "positive-control")
