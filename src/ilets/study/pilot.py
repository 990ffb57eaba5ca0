"""The tuning pilot: which hyperparameters the study uses, chosen by a rule fixed in advance.

The pilot is an ordinary profile (``configs/pilot.yaml``) run by ``ilets grid``. It uses only
pilot seeds, which no evaluation grid uses (:data:`PILOT_SEEDS`; tests check that the
shipped evaluation profiles never include them), at the paper's full scale, at 50 and 200
servers. Each variant of the profile changes **exactly one** setting of the defaults (one
factor at a time) for **one** method; the main grid of the profile holds the defaults of
every method tuned, plus earliest-finish as the yardstick. Every cell has the same budget:
one online pass over the same 259,368 tasks.

The rule [ours], written and committed before any pilot result existed:

1. Score every cell by the paper's objective in natural units, normalised by the
   earliest-finish heuristic on the same seed and fleet size (a yardstick that no choice
   changes), weighted by the reward's ``theta`` as the paper weights energy against
   response time::

       J = theta * energy / energy_EF + (1 - theta) * response / response_EF

   Rewards of different forms are never compared with each other; J can be.
2. For each varied setting, average J over every pilot (seed, fleet size) pair, for the
   default and for each alternative value.
3. The value with the lowest mean J is chosen, unless it improves on the default's mean J by
   less than :data:`MIN_GAIN` (1 %), in which case the default stays (a change must earn
   its place).
4. Settings are chosen independently (interactions are not searched); the PPO settings
   tuned on DRL are shared by every learner, OINPT's on DRL+, OAIL's on ILETS-.
5. A setting is decided only when every cell of its default and of each alternative has
   finished; otherwise the default stays and the setting is reported as undecided (the
   pilot's budget ran out before it). Variants are listed most decision-relevant first.

:func:`select` applies the rule to a results store; the deviations chapter shows its table,
and ``configs/methods.yaml`` holds the chosen values (a test checks they agree with the
shipped pilot results).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ilets.config import to_dict
from ilets.study.profiles import Profile

#: Seeds reserved for tuning; evaluation grids never use them.
PILOT_SEEDS = (1000, 1001, 1002)
#: A change must lower the mean normalised objective by at least this fraction.
MIN_GAIN = 0.01
#: The yardstick heuristic of the normalisation.
YARDSTICK = "earliest-finish"


def _leaf(overrides: dict, prefix: str = "") -> tuple[str, object]:
    """The one (dotted key, value) of a nested override mapping."""
    items = []
    for k, v in overrides.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            items.append(_leaf(v, key + "."))
        else:
            items.append((key, v))
    if len(items) != 1:
        raise ValueError(f"a pilot variant must change exactly one setting, got {overrides!r}")
    return items[0]


def _get(config: dict, dotted: str):
    for part in dotted.split("."):
        config = config[part]
    return config


@dataclass(frozen=True)
class Candidate:
    """One value of one setting for one method: the default (variant "") or a variant."""

    method: str
    setting: str  #: dotted key, e.g. "ppo.learning_rate"
    value: object
    variant: str  #: "" for the default
    cells: int  #: cells the profile runs for it (seeds x fleet sizes)


def candidates(profile: Profile) -> list[Candidate]:
    """Every (method, setting, value) the pilot profile compares, defaults included."""
    base = to_dict(profile.run)
    out: list[Candidate] = []
    seen = set()
    for v in profile.variants:
        if len(v.methods) != 1:
            raise ValueError(f"pilot variant {v.name!r} must name exactly one method")
        setting, value = _leaf(v.run)
        method = v.methods[0]
        if (method, setting) not in seen:
            seen.add((method, setting))
            out.append(Candidate(method, setting, _get(base, setting), "", len(profile.seeds) * len(profile.servers)))
        out.append(Candidate(method, setting, value, v.name,
                             len(v.seeds or profile.seeds) * len(v.servers or profile.servers)))
    return out


def objective(metrics: pd.DataFrame, theta: float) -> pd.DataFrame:
    """``metrics`` with ``J``: energy and response normalised by the yardstick (rule step 1).

    Raises ValueError when a (seed, servers) pair has no yardstick cell.
    """
    ref = metrics[(metrics["method"] == YARDSTICK) & (metrics["variant"] == "")]
    ref = ref.set_index(["seed", "servers"])[["energy_kwh", "avg_response_s"]]
    out = metrics.join(ref, on=["seed", "servers"], rsuffix="_ref")
    missing = out["energy_kwh_ref"].isna()
    if missing.any():
        pairs = sorted(set(zip(out.loc[missing, "seed"], out.loc[missing, "servers"])))
        raise ValueError(f"no {YARDSTICK} cell for (seed, servers) {pairs}")
    out["J"] = (theta * out["energy_kwh"] / out["energy_kwh_ref"]
                + (1 - theta) * out["avg_response_s"] / out["avg_response_s_ref"])
    return out


def select(profile: Profile, metrics: pd.DataFrame) -> pd.DataFrame:
    """The rule applied: one row per candidate, with its mean J and whether it is chosen.

    Columns: method, setting, value, variant, cells (finished), expected (cells the
    profile runs), mean_J, gain_vs_default (relative decrease of mean J), decided, chosen.
    A setting with any unfinished cell is undecided: its default is chosen (rule step 5).
    """
    scored = objective(metrics, profile.run.reward.theta)
    rows = []
    for c in candidates(profile):
        cells = scored[(scored["method"] == c.method) & (scored["variant"] == c.variant)]
        rows.append({"method": c.method, "setting": c.setting, "value": c.value, "variant": c.variant,
                     "cells": len(cells), "expected": c.cells,
                     "mean_J": float(cells["J"].mean()) if len(cells) else np.nan})
    table = pd.DataFrame(rows)
    table["gain_vs_default"] = np.nan
    table["decided"] = False
    table["chosen"] = False
    for _, group in table.groupby(["method", "setting"], sort=False):
        default = group.index[group["variant"] == ""][0]
        complete = bool((group["cells"] >= group["expected"]).all())
        d = table.loc[default, "mean_J"]
        if np.isfinite(d):
            table.loc[group.index, "gain_vs_default"] = (d - group["mean_J"]) / d
        pick = default
        if complete:
            best = group["mean_J"].idxmin()
            if table.loc[best, "gain_vs_default"] >= MIN_GAIN:
                pick = best
        table.loc[group.index, "decided"] = complete
        table.loc[pick, "chosen"] = True
    return table


def chosen_overrides(table: pd.DataFrame) -> dict[str, object]:
    """``{dotted setting: value}`` of the chosen non-default values (what methods.yaml sets)."""
    picked = table[table["chosen"] & (table["variant"] != "")]
    return dict(zip(picked["setting"], picked["value"]))


# --- the book's view ------------------------------------------------------------------------

#: Where the pilot's results are shipped (committed) in the repository.
SHIPPED = "shipped/pilot"


@dataclass(frozen=True)
class PilotReport:
    """Everything the pilot section of the book shows, computed from a results folder."""

    table: pd.DataFrame  #: :func:`select`'s table, display-ready
    decided: list[str]  #: settings the rule decided
    undecided: list[str]  #: settings left at their default because cells are missing
    changes: dict  #: chosen non-default values, ``{dotted setting: value}``
    cells: int  #: finished pilot cells
    expected: int  #: cells the profile runs
    provenance: str  #: one sentence: where, when, at which commit, CPU-hours
    summary: str  #: one paragraph for the page


def report(folder, profile: Profile | None = None) -> PilotReport:
    """The pilot's results in ``folder`` (a grid or shipped folder) read through the rule."""
    from pathlib import Path

    from ilets.study.profiles import load_profile
    from ilets.study.results import load_metrics
    from ilets.study.shipping import load_provenance, provenance_line

    folder = Path(folder)
    profile = profile or load_profile("pilot")
    if not (folder / "store" / "metrics.parquet").is_file():
        return PilotReport(pd.DataFrame(), [], [], {}, 0, len(profile.cells()), f"{folder}: no pilot results.",
                           "No pilot results are shipped in this checkout: every setting keeps its default.")
    metrics = load_metrics(folder, variant=None)
    table = select(profile, metrics)
    settings = list(dict.fromkeys(table["setting"]))
    decided = [s for s in settings if table.loc[table["setting"] == s, "decided"].all()]
    undecided = [s for s in settings if s not in decided]
    changes = chosen_overrides(table)
    shown = table.assign(value=table["value"].astype(str),
                         variant=table["variant"].replace({"": "(default)"}),
                         cells=table["cells"].astype(str) + " / " + table["expected"].astype(str),
                         mean_J=table["mean_J"].round(4), gain_vs_default=(100 * table["gain_vs_default"]).round(2),
                         chosen=table["chosen"].map({True: "chosen", False: ""}))
    shown = shown.drop(columns=["expected", "decided"])
    expected = len(profile.cells())
    if changes:
        change_text = "it changes " + ", ".join(f"`{k}` to {v}" for k, v in changes.items())
    else:
        change_text = "it changes none of the defaults"
    summary = (f"{len(metrics)} of {expected} pilot cells finished. The rule decided "
               f"{len(decided)} of {len(settings)} settings; {change_text}. "
               + (f"Undecided (default kept, cells missing): {', '.join(f'`{s}`' for s in undecided)}."
                  if undecided else "Every setting was decided."))
    return PilotReport(shown, decided, undecided, changes, len(metrics), expected,
                       provenance_line(load_provenance(folder)), summary)


# --- the per-server learners' joint pilot (configs/pilot-per-server.yaml) -------------------

#: The joint search space of the per-server pilot [ours]: the discount and GAE factor suited to
#: a cost almost fixed at assignment, the learning rate, the entropy bonus, the KL toward the
#: clone and the critic's warm-up.
SEARCH_SPACE: dict[str, tuple] = {
    "ppo.gamma": (0.0, 0.5, 0.9, 0.98), "ppo.gae_lambda": (0.5, 0.9, 0.95),
    "ppo.learning_rate": (3e-5, 1e-4, 3e-4), "ppo.ent_coef": (0.0, 0.001, 0.01),
    "finetune.kl_coef": (0.0, 0.1, 1.0), "finetune.critic_warmup_rollouts": (0, 100),
}
#: short names of the searched settings, for the pilot chapter's table
SHORT = {"ppo.gamma": "gamma", "ppo.gae_lambda": "lambda", "ppo.learning_rate": "lr", "ppo.ent_coef": "entropy",
         "finetune.kl_coef": "KL", "finetune.kl_decay": "KL decay", "finetune.critic_warmup_rollouts": "warm-up"}
#: the candidate of the joint pilot that keeps methods.yaml's PPO and no fine-tuning aid
JOINT_BASELINE = "rs-00"


def random_search(space: dict[str, tuple], k: int, seed: int) -> list[dict[str, object]]:
    """``k`` combinations drawn uniformly and independently per setting (in ``space``'s order)."""
    rng = np.random.default_rng(seed)
    return [{key: values[rng.integers(len(values))] for key, values in space.items()} for _ in range(k)]


def _scores(metrics: pd.DataFrame, theta: float, candidate: pd.Series) -> pd.DataFrame:
    """One row per candidate (``metrics[candidate]``): its cells, mean J and mean response time,
    J against the heuristic cells (no variant) on the same seeds and fleets."""
    scored = objective(pd.concat([metrics[metrics["variant"] == ""], metrics[candidate]]), theta)
    scored = scored[scored["variant"] != ""]
    return scored.groupby("variant").agg(cells=("J", "size"), mean_J=("J", "mean"),
                                         mean_response_s=("avg_response_s", "mean")).reset_index()


def select_joint(metrics: pd.DataFrame, theta: float, baseline: str = JOINT_BASELINE,
                 expected: int | None = None, candidates: int | None = None) -> pd.DataFrame:
    """The joint pilot's rule, fixed before its cells ran: one row per candidate (variant).

    1. Score each cell by J (:func:`objective`, Earliest-Finish on the same seed and fleet).
    2. A candidate is complete when it has ``expected`` cells (every pilot seed x fleet size).
    3. Among complete candidates the lowest mean J leads, unless it lowers the baseline's mean J
       by less than :data:`MIN_GAIN`: then the baseline leads (``leading``). With the baseline
       incomplete nothing leads.
    4. The leader is ``chosen`` only once all ``candidates`` (default: those in ``metrics``)
       are complete; before that the pilot is unfinished and its leader provisional.
    """
    table = _scores(metrics, theta, metrics["variant"].str.startswith("rs-"))
    need = expected if expected is not None else int(table["cells"].max()) if len(table) else 0
    table["complete"] = table["cells"] >= need
    table["leading"] = False
    done = table[table["complete"]]
    if baseline in set(done["variant"]):
        base_j = float(done.loc[done["variant"] == baseline, "mean_J"].iloc[0])
        best = done.loc[done["mean_J"].idxmin()]
        pick = best["variant"] if best["mean_J"] <= base_j * (1 - MIN_GAIN) else baseline
        table.loc[table["variant"] == pick, "leading"] = True
    # a choice only once every candidate the profile plans has all its cells
    planned = candidates if candidates is not None else len(table)
    table["chosen"] = table["leading"] & (int(table["complete"].sum()) >= planned)
    return table


#: variant-name prefixes of the joint pilot's candidates, by round
ROUNDS = {"rs-": 1, "r2-": 2}
#: Round 2's non-inferiority margin [ours, declared after round 1]: a candidate keeps its clone
#: when the 95 % t-interval of its held-out change lies above ``-KEEP_MARGIN`` (relative to the
#: clone), the positive control's tolerance for "matches its expert".
KEEP_MARGIN = 0.01


def is_candidate(variant: pd.Series) -> pd.Series:
    """Which variants are candidates of the joint pilot (either round)."""
    return variant.str[:3].isin(list(ROUNDS))


def clone_kept(metrics: pd.DataFrame, margin: float = KEEP_MARGIN, level: float = 0.95) -> pd.DataFrame:
    """Per candidate, how its held-out greedy reward moved over the pass, over the pilot seeds
    (:func:`ilets.study.heldout.heldout_change`); ``keeps`` is True when the interval's lower
    end lies above ``-margin``."""
    from ilets.study.heldout import heldout_change

    table = heldout_change(metrics[is_candidate(metrics["variant"])], ("variant",), level)
    table["keeps"] = table["change_low"] > -margin
    return table[["variant", "seeds", "change", "change_low", "change_high", "keeps"]]


def select_round_two(metrics: pd.DataFrame, theta: float, expected: int, candidates: int,
                     margin: float = KEEP_MARGIN) -> pd.DataFrame:
    """Round 2's rule, written before its cells ran: one row per candidate of both rounds.

    Among the complete candidates that keep their clone (:func:`clone_kept`), the lowest mean
    J leads; the leader is ``chosen`` once all ``candidates`` are complete. With no candidate
    that keeps its clone nothing leads, and the per-server learners keep ``rs-00``'s settings.
    """
    learners = metrics[is_candidate(metrics["variant"])]
    table = _scores(metrics, theta, is_candidate(metrics["variant"]))
    table["round"] = table["variant"].str[:3].map(ROUNDS)
    table["complete"] = table["cells"] >= expected
    table = table.merge(clone_kept(learners, margin), on="variant", how="left")
    table["keeps"] = table["keeps"].eq(True)  # a candidate without held-out scores keeps nothing
    table["leading"] = False
    eligible = table[table["complete"] & table["keeps"]]
    if len(eligible):
        table.loc[eligible["mean_J"].idxmin(), "leading"] = True
    table["chosen"] = table["leading"] & (int(table["complete"].sum()) >= candidates)
    return table


#: where the book looks for the joint pilot's results, first found wins
JOINT_SEARCH = ("results/pilot-per-server", "shipped/pilot-per-server")


def joint_dir():
    """The joint pilot's results the book reads: the first folder of :data:`JOINT_SEARCH` with
    a store (resolved against the repository, wherever a chapter executes)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    for rel in JOINT_SEARCH:
        if (root / rel / "store" / "metrics.parquet").is_file():
            return root / rel
    return root / JOINT_SEARCH[-1]


@dataclass(frozen=True)
class JointReport:
    """The joint pilot read through :func:`select_joint`: the table and its sentence."""

    table: pd.DataFrame  #: one row per candidate (its settings, cells, mean J, held-out scores)
    chosen: str | None  #: the chosen candidate, None while the rule cannot decide
    summary: str


def joint_report(folder, profile: Profile | None = None) -> JointReport:
    """The per-server pilot's results in ``folder`` (a grid or shipped folder), both rounds.

    The table has one row per candidate: its settings, J, held-out scores, the held-out change
    with its interval (:func:`clone_kept`), round 1's choice (:func:`select_joint`) and the
    final choice (:func:`select_round_two`).
    """
    from pathlib import Path

    from ilets.study.profiles import load_profile
    from ilets.study.results import load_metrics

    folder = Path(folder)
    profile = profile or load_profile("pilot-per-server")
    settings = {v.name: ", ".join(f"{SHORT.get(f'{a}.{b}', f'{a}.{b}')} {x:g}" for a, inner in v.run.items()
                                  for b, x in inner.items()) or "methods.yaml's PPO, no aid" for v in profile.variants}
    first = [name for name in settings if name.startswith("rs-")]
    expected = len(profile.seeds) * len(profile.servers)
    if not (folder / "store" / "metrics.parquet").is_file():
        return JointReport(pd.DataFrame(), None, "The per-server pilot has no results in this checkout yet: "
                                                 "the per-server learners keep methods.yaml's PPO settings.")
    metrics = load_metrics(folder, variant=None)
    one = select_joint(metrics, profile.run.reward.theta, expected=expected, candidates=len(first))
    table = select_round_two(metrics, profile.run.reward.theta, expected, candidates=len(settings))
    table = table.merge(one[["variant", "chosen"]].rename(columns={"chosen": "round_one_choice"}), on="variant",
                        how="left")
    table["round_one_choice"] = table["round_one_choice"].eq(True)  # candidates of round 2 had no round-1 choice
    held = metrics[is_candidate(metrics["variant"])].groupby("variant")[
        [c for c in ("heldout_mean_reward_start", "heldout_mean_reward_end") if c in metrics]].mean()
    table = table.join(held, on="variant")
    table.insert(1, "settings", table["variant"].map(settings))
    done = int(table["complete"].sum())
    first_done = int(table.loc[table["round"] == 1, "complete"].sum())
    pick_one = table.loc[table["round_one_choice"], "variant"]
    leading = table.loc[table["leading"], "variant"]
    pick = str(leading.iloc[0]) if len(leading) else None
    text = (f"{done} of {len(settings)} candidates have all {expected} of their cells "
            f"({int(table['cells'].sum())} of {expected * len(settings)} learner cells finished). ")
    if len(pick_one):
        one_row = table.set_index("variant").loc[str(pick_one.iloc[0])]
        r1 = table[table["round"] == 1]
        below = int((r1["change"] < 0).sum())
        text += (f"Round 1's rule chose {pick_one.iloc[0]} ({settings[str(pick_one.iloc[0])]}), which ends "
                 f"its pass {change_text(one_row)} from its frozen clone on the held-out segment; {below} of {len(r1)} "
                 f"round-1 candidates end below their clone (mean over the pilot seeds). ")
    elif first_done < len(first):
        text += f"Round 1 is unfinished ({first_done} of {len(first)} candidates complete). "
    kept = table[table["complete"] & table["keeps"]]["variant"].tolist()
    text += (f"Round 2's rule admits only candidates that keep their clone (95 % interval of the held-out "
             f"change above -{KEEP_MARGIN:.0%}): {', '.join(kept) if kept else 'none of the complete ones'}. ")
    if pick and done == len(settings):
        row = table.set_index("variant").loc[pick]
        text += (f"It chooses {pick} ({settings[pick]}), which ends its pass {change_text(row)} from its frozen "
                 f"clone: the per-server learners' settings.")
    elif pick:
        text += (f"Among the complete candidates it would choose {pick} ({settings[pick]}): provisional until "
                 f"every candidate has its cells.")
    else:
        text += "It chooses nothing, so the per-server learners keep methods.yaml's PPO settings (rs-00)."
    return JointReport(table, pick if done == len(settings) else None, text)


def change_text(row: pd.Series) -> str:
    """A candidate's held-out change as a phrase: mean and 95 % interval, in percent."""
    if not np.isfinite(row["change"]):
        return "by an unmeasured amount (no held-out scores)"
    return (f"{100 * row['change']:+.2f} % (95 % t-interval {100 * row['change_low']:+.2f} to "
            f"{100 * row['change_high']:+.2f} %, {int(row['seeds'])} pilot seeds)")
