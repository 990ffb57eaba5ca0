"""Chapter "Generalisation and adaptation": frozen policies beside the best heuristic in shifted worlds.

Reads the rows of :mod:`ilets.study.shifts` (``shifts.parquet``). For every shift, fleet
size and learner, the frozen final policy is compared with the best heuristic on the same
tasks (the heuristic with the better mean on the measure, in that shifted world), paired
over seeds with the study's one resampler (:func:`ilets.report.stats.seed_effect`), and with
itself in the unshifted world (how much of its standing the shift costs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ilets.metric_table import METRIC_SPECS
from ilets.method_table import METHOD_LABELS
from ilets.report.report_context import and_join
from ilets.report.stats import DEFAULT_REPS, effect_verdict, percentile_interval, seed_effect

#: Where the book looks for a shift family's rows (``{family}``: its name), first found wins.
SHIFTS_SEARCH = ("results/{family}", "shipped/{family}")
#: The fewest paired seeds whose interval can resolve: a comparison on fewer is no verdict.
VERDICT_SEEDS = 2
#: The measures the chapter compares: the one the learners were trained on, and response time.
MEASURES = ("mean_reward", "avg_response_s")
#: The columns of :func:`frozen_table`.
COLUMNS = ["shift", "factor", "servers", "train_servers", "learner", "measure", "heuristic", "seeds", "rel_pct",
           "ci_low", "ci_high", "verdict", "unshifted_rel_pct"]


def shifts_dir(family: str = "shifts") -> Path:
    """``results/<family>`` if it holds rows, else ``shipped/<family>`` (resolved at the
    repository root); ``family`` is a shift family's name (``configs/<family>.yaml``)."""
    from ilets.study.results import repo_root

    root = repo_root()
    for rel in SHIFTS_SEARCH:
        if (root / rel.format(family=family) / "shifts.parquet").is_file():
            return root / rel.format(family=family)
    return root / SHIFTS_SEARCH[-1].format(family=family)


def learner_label(actor: str) -> str:
    """A learner as the chapter names it: its method's label, and a variant in brackets
    (``drl+@per-server`` -> ``DRL+ (per-server)``, where one grid holds both designs)."""
    method, _, variant = actor.partition("@")
    return METHOD_LABELS.get(method, method) + (f" ({variant})" if variant else "")


def load_rows(folder: Path | None = None) -> pd.DataFrame:
    """The rows of ``folder/shifts.parquet`` (default :func:`shifts_dir`); empty when absent."""
    path = Path(folder if folder is not None else shifts_dir()) / "shifts.parquet"
    return pd.read_parquet(path) if path.is_file() else pd.DataFrame()


def _reference(rows: pd.DataFrame, servers: int) -> str | None:
    """The unshifted reference at ``servers`` (the shift whose factor is "none")."""
    names = rows[(rows["factor"] == "none") & (rows["servers"] == servers)]["shift"].unique()
    return str(names[0]) if len(names) else None


def _effect(x: pd.Series, y: pd.Series, metric: str, key: tuple, reps: int) -> tuple[float, float, float, str, int]:
    higher = bool(METRIC_SPECS[metric].higher_is_better)
    eff = seed_effect(x, y, higher, paired=True, reps=reps, key=key)
    if eff is None:
        return np.nan, np.nan, np.nan, "no data", 0
    lo, hi = percentile_interval(eff.rel_reps)
    return 100 * eff.rel, 100 * lo, 100 * hi, effect_verdict(lo, hi, eff.n_x, eff.n_y), eff.n_x


def frozen_table(rows: pd.DataFrame, measures: tuple[str, ...] = MEASURES, reps: int = DEFAULT_REPS) -> pd.DataFrame:
    """One row per shift, fleet size, learner and measure: the frozen policy's improvement
    over the best heuristic on the same tasks (percent, signed so that positive is better,
    95 % interval and verdict over paired seeds), and the same improvement in the unshifted
    world at that fleet size (``unshifted_rel_pct``: where the learner stood before the shift)."""
    if rows.empty:
        return pd.DataFrame(columns=COLUMNS)
    out = []
    for (shift, servers), world in rows.groupby(["shift", "servers"], sort=False):
        heur = world[world["kind"] == "heuristic"]
        frozen = world[(world["kind"] == "learner") & (world["condition"] == "frozen")]
        for metric in measures:
            higher = bool(METRIC_SPECS[metric].higher_is_better)
            means = heur.groupby("actor")[metric].mean()
            if means.empty:
                continue
            best = str(means.idxmax() if higher else means.idxmin())
            y = heur[heur["actor"] == best].set_index("seed")[metric]
            for learner, own in frozen.groupby("actor", sort=False):
                x = own.set_index("seed")[metric]
                rel, lo, hi, verdict, n = _effect(x, y, metric, (str(shift), int(servers), metric, learner, best), reps)
                out.append({"shift": shift, "factor": own["factor"].iloc[0], "servers": int(servers),
                            "train_servers": int(own["train_servers"].iloc[0]), "learner": learner, "measure": metric,
                            "heuristic": best, "seeds": n, "rel_pct": rel, "ci_low": lo, "ci_high": hi,
                            "verdict": verdict})
    table = pd.DataFrame(out, columns=COLUMNS[:-1])
    # where each learner stood before the shift: its own row in the unshifted world at that size
    refs = {int(s): _reference(rows, int(s)) for s in table["servers"].unique()}
    standing = table.set_index(["shift", "servers", "learner", "measure"])["rel_pct"].to_dict()
    table["unshifted_rel_pct"] = [standing.get((refs[s], s, learner, m), np.nan) for s, learner, m in
                                  zip(table["servers"], table["learner"], table["measure"])]
    return table


#: The columns of :func:`condition_table`.
CONDITION_COLUMNS = ["shift", "factor", "servers", "learner", "measure", "seeds", "rel_pct", "ci_low", "ci_high", "verdict"]


def condition_table(rows: pd.DataFrame, x: str, y: str, measures: tuple[str, ...] = MEASURES,
                    reps: int = DEFAULT_REPS) -> pd.DataFrame:
    """A learner under condition ``x`` against the same learner under ``y`` (of
    :data:`ilets.study.shifts.CONDITIONS`), per shift, fleet size, learner and measure, from
    the same policy on the same tasks, paired over seeds (positive: ``x`` better). Learners
    that did not run both are left out; empty until some did."""
    if rows.empty or not {x, y} <= set(rows.get("condition", ())):
        return pd.DataFrame(columns=CONDITION_COLUMNS)
    # the resampler's key names the pair as before conditions were general ("oail")
    tag = "oail" if (x, y) == ("online-oail", "online") else f"{x}-vs-{y}"
    out = []
    for (shift, servers, learner), g in rows[rows["kind"] == "learner"].groupby(["shift", "servers", "actor"],
                                                                                 sort=False):
        with_, without = (g[g["condition"] == c].set_index("seed") for c in (x, y))
        if with_.empty or without.empty:
            continue
        for metric in measures:
            rel, lo, hi, verdict, n = _effect(with_[metric], without[metric], metric,
                                              (str(shift), int(servers), metric, learner, tag), reps)
            out.append({"shift": shift, "factor": g["factor"].iloc[0], "servers": int(servers), "learner": learner,
                        "measure": metric, "seeds": n, "rel_pct": rel, "ci_low": lo, "ci_high": hi,
                        "verdict": verdict})
    return pd.DataFrame(out, columns=CONDITION_COLUMNS)


def oail_table(rows: pd.DataFrame, measures: tuple[str, ...] = MEASURES, reps: int = DEFAULT_REPS) -> pd.DataFrame:
    """Whether OAIL helps under shift: the learner continuing online with OAIL (condition
    ``online-oail``) against the same learner continuing without it (``online``)
    (:func:`condition_table`)."""
    return condition_table(rows, "online-oail", "online", measures, reps)


def continuing_table(rows: pd.DataFrame, measures: tuple[str, ...] = MEASURES,
                     reps: int = DEFAULT_REPS) -> pd.DataFrame:
    """Whether learning on pays in a shifted world: the learner continuing online as plain PPO
    (``online``, its sampled decisions while it learns) against its policy deployed frozen
    and greedy (``frozen``) on the same tasks (:func:`condition_table`)."""
    return condition_table(rows, "online", "frozen", measures, reps)


def shift_label(name: str) -> str:
    """A shift's name for people: ``rate-x1.5`` -> ``rate ×1.5``, ``none-at-200`` -> ``unshifted at 200``."""
    return re.sub(r"^none\b", "unshifted", str(name)).replace("-x", " ×").replace("-", " ")


def _interval(rel: float, lo: float, hi: float) -> str:
    """``-1.5 [-1.6, -1.4]`` (thousands separated: the flat learners fall far behind)."""
    return f"{rel:+,.1f} [{lo:+,.1f}, {hi:+,.1f}]"


def display_table(table: pd.DataFrame, measure: str, context: bool = True) -> pd.DataFrame:
    """:func:`frozen_table` for one measure as the chapter shows it: a row per shifted world
    (:func:`shift_label`; with ``context``, what moved and the better heuristic run there), a
    column per learner, each cell the improvement over that heuristic in percent with its 95 %
    interval."""
    t = table[table["measure"] == measure]
    if t.empty:
        return pd.DataFrame()
    rows = []
    for (shift, _), g in t.groupby(["shift", "servers"], sort=False):
        first = g.iloc[0]
        row = {"shift": shift_label(shift)}
        if context:
            row.update({"what moved": first["factor"],
                        "best heuristic run": METHOD_LABELS.get(first["heuristic"], first["heuristic"])})
        row.update({learner_label(r["learner"]): _interval(r["rel_pct"], r["ci_low"], r["ci_high"])
                    for _, r in g.iterrows()})
        rows.append(row)
    # a learner a world did not run (the expert-quality shifts train DRL+ only): said, not nan
    return pd.DataFrame(rows).fillna(NOT_RUN)


#: A cell of a learner that a shifted world did not run.
NOT_RUN = "not run"


def heuristics_text(rows: pd.DataFrame) -> str:
    """What "best heuristic" means in this chapter: the better, per world and measure, of the
    heuristics the family ran (read from its rows), and the heuristics of the main grid
    (:data:`ilets.config.HEURISTICS`, which chapters 7 and 13 take their best from) it did not
    run, so that nobody reads it as the best heuristic of those chapters."""
    from ilets.config import HEURISTICS

    ran = [h for h in HEURISTICS if "kind" in rows and h in set(rows.loc[rows["kind"] == "heuristic", "actor"])]
    if not ran:
        return "No heuristic has run in these shifted worlds yet."
    left = [h for h in HEURISTICS if h not in ran]
    ran_names, left_names = (and_join(METHOD_LABELS.get(m, m) for m in ms) for ms in (ran, left))
    text = f"The best heuristic here is the best of those the shift family ran, {ran_names}"
    if left:
        text += (f"; {left_names} did not run in the shifted worlds, so it can differ from the best heuristic of "
                 "chapters 7 and 13")
    return text + "."


def _span(values) -> str:
    """``-2.5 to +0.3 %`` (one value: ``-2.5 %``)."""
    lo, hi = (f"{v:+,.1f}" for v in (min(values), max(values)))
    return f"{lo} %" if lo == hi else f"{lo} to {hi} %"


def shifts_sentence(table: pd.DataFrame, rows: pd.DataFrame, measure: str = "mean_reward",
                    declared: dict | None = None, who: str = "the learners") -> str:
    """What the frozen learners (``who``) keep under shift, on ``measure``, in one sentence: over
    how many shifted worlds and seeds, the range of their improvement over the best heuristic,
    and the shift where they fall furthest behind on average; what the ``declared`` family (its
    record in ``shifts.json``; default: the shipped ``shifts`` family's conditions and
    expert-quality shifts) has not run yet."""
    name = (declared or {}).get("name", "shifts")
    if table.empty:
        return (f"No results of the shift family `{name}` yet (`python -m ilets.study.shifts` writes them; the book "
                f"reads `results/{name}` or `shipped/{name}`).")
    t = table[(table["measure"] == measure) & (table["factor"] != "none")]
    per = rows[rows["condition"].isin(["frozen", "heuristic"])] if "condition" in rows else rows
    counts_of = per.groupby(["shift", "servers", "actor"])["seed"].nunique()
    seeds, most = int(counts_of.min()), int(counts_of.max())
    spread = f"{seeds}" if seeds == most else f"{seeds} to {most}"
    text = f"Deployed frozen in {len(t['shift'].unique())} shifted worlds ({spread} seed{'s' if most != 1 else ''} each)"
    if len(t):
        worst = t.groupby("shift")["rel_pct"].mean().sort_values()
        text += (f", {who}' {METRIC_SPECS[measure].long} lies {_span(t['rel_pct'])} from the best heuristic's "
                 f"(positive: better), furthest behind under {shift_label(worst.index[0])} "
                 f"({worst.iloc[0]:+,.1f} % on average)")
    if most < VERDICT_SEEDS:
        text += " (one seed: no interval resolves, so none is a verdict)"
    elif seeds < VERDICT_SEEDS:
        text += " (a world with one seed has no verdict: its interval cannot resolve)"
    conditions = sorted(set(rows["condition"])) if "condition" in rows else []
    names = {"online": "online without OAIL", "online-oail": "online with OAIL"}
    wanted = (declared or {}).get("conditions", list(names))
    missing = [names[c] for c in names if c in wanted and c not in conditions]
    if missing:
        text += (f"; not yet run: {', '.join(missing)}, so this chapter cannot yet say whether OAIL helps under "
                 "shift")
    quality = [s for s in (declared or {}).get("shifts", [{"factor": "expert quality"}])
               if s.get("factor") == "expert quality"]
    if quality and "expert quality" not in set(rows["factor"]):
        text += "; the expert-quality shifts (DRL+ cloning a weaker or a noisy expert) have not run yet"
    return text + "."


def designs_sentence(table: pd.DataFrame, measure: str = "mean_reward") -> str:
    """The two policy designs over the same shifted worlds (a :func:`frozen_table` of a family
    whose learners include variants, ``drl+@per-server``): the range of the flat learners' and
    of the per-server learners' improvement over the best heuristic on ``measure``."""
    t = table[(table["measure"] == measure) & (table["factor"] != "none")] if not table.empty else table
    if t.empty:
        return "The flat and per-server policies have not run in shifted worlds yet."
    variant = t["learner"].str.contains("@")
    parts = [f"{_span(g['rel_pct'])} for the {what}" for what, g in
             (("authors' flat learners", t[~variant]), ("per-server learners", t[variant])) if len(g)]
    return (f"Over the {t['shift'].nunique()} shifted worlds a flat policy can take (each seed its own world), the "
            f"gap to the best heuristic's {METRIC_SPECS[measure].long} is {and_join(parts)}.")


def conditions_display(continuing: pd.DataFrame, oail: pd.DataFrame, measure: str = "mean_reward") -> pd.DataFrame:
    """:func:`continuing_table` and :func:`oail_table` for one measure as the chapter shows them:
    a row per shifted world, per learner a column for learning on against deploying frozen and
    one for learning on with OAIL against without, each cell the improvement in percent with
    its 95 % interval (one seed: the effect alone, no interval)."""
    columns = {"learning on vs frozen": continuing, "with OAIL vs without": oail}
    rows: dict[tuple, dict] = {}
    for heading, t in columns.items():
        t = t[t["measure"] == measure] if not t.empty else t
        for _, r in t.iterrows():
            row = rows.setdefault((r["shift"], r["servers"]), {"shift": shift_label(r["shift"])})
            row[f"{heading} ({learner_label(r['learner'])})"] = (
                _interval(r["rel_pct"], r["ci_low"], r["ci_high"]) if r["seeds"] >= VERDICT_SEEDS
                else f"{r['rel_pct']:+.1f} (one seed)")
    return pd.DataFrame(list(rows.values())).fillna(NOT_RUN)


def _without_verdict(t: pd.DataFrame, declared: dict | None) -> list[str]:
    """The ``declared`` family's shifts where its online learners apply that have no verdict in
    ``t``: no row there, or fewer than two seeds (no interval can resolve)."""
    if not declared or not declared.get("online_learners"):
        return []
    online = set(declared["online_learners"])
    have = set(t.loc[t["seeds"] >= VERDICT_SEEDS, "shift"]) if not t.empty else set()
    return [sh["name"] for sh in declared.get("shifts", []) if sh["name"] not in have
            and (sh.get("learners") is None or online & set(sh["learners"]))]


def condition_clause(t: pd.DataFrame, measure: str = "mean_reward", declared: dict | None = None,
                     lead_in: bool = True) -> str:
    """How a :func:`condition_table` comes out on ``measure``, as a clause: the median change over
    the shifted worlds with a verdict (two seeds or more) and how many are better and worse
    (without ``lead_in``, from "by" on); with the ``declared`` family, the shifts without a
    verdict yet. Empty when nothing has run."""
    t = t[(t["measure"] == measure)] if not t.empty else t
    shifted = t[t["factor"] != "none"] if not t.empty else t
    if shifted.empty:
        return ""
    # a comparison over one seed has no interval that could resolve: it is no verdict, and is
    # counted with the shifts that have none (below), not among the unresolved
    judged = shifted[shifted["seeds"] >= VERDICT_SEEDS]
    where = "shifted worlds" if t["learner"].nunique() == 1 else "shifted worlds and learners"
    if judged.empty:
        text = f"is measured in {len(shifted)} {where}, each on one seed, so not judged yet"
    else:
        counts = judged["verdict"].value_counts()
        text = (f"changes the {METRIC_SPECS[measure].long} by a median of {judged['rel_pct'].median():+.1f} % over "
                f"{len(judged)} {where} " if lead_in else f"by {judged['rel_pct'].median():+.1f} % ")
        text += f"(better in {int(counts.get('better', 0))}, worse in {int(counts.get('worse', 0))})"
    pending = _without_verdict(t, declared)
    if pending:
        text += f", with no verdict yet in {len(pending)} of the family's shifts ({', '.join(pending)})"
    return text


def online_sentence(continuing: pd.DataFrame, oail: pd.DataFrame, measure: str = "mean_reward",
                    declared: dict | None = None) -> str:
    """What learning on in a shifted world buys, in one sentence: continuing online as plain PPO
    against deploying the same policy frozen (:func:`continuing_table`), then continuing with
    OAIL against without (:func:`oail_table`), each as :func:`condition_clause` words it."""
    learners = and_join(learner_label(m) for m in dict.fromkeys(pd.concat([continuing, oail])["learner"])) \
        if len(continuing) or len(oail) else ""
    on = condition_clause(continuing, measure, declared)
    with_oail = condition_clause(oail, measure, declared, lead_in=not on)
    if not on and not with_oail:
        return "Learning on in the shifted worlds, with and without OAIL, has not run yet."
    parts = []
    if on:
        parts.append(f"Learning on as plain PPO ({learners}) rather than deploying the same policy frozen {on}")
    if with_oail:
        parts.append(f"{'a' if on else 'A'}dding online imitation (OAIL) to the learning {with_oail}")
    return ", and ".join(parts) + "."


@dataclass(frozen=True, kw_only=True)
class ShiftFindings:
    """The chapter's tables and sentences."""

    rows: pd.DataFrame  #: the evaluations (:mod:`ilets.study.shifts`)
    table: pd.DataFrame  #: :func:`frozen_table`
    oail: pd.DataFrame  #: :func:`oail_table`
    continuing: pd.DataFrame  #: :func:`continuing_table`
    sentence: str  #: :func:`shifts_sentence` on the trained reward
    response_sentence: str  #: :func:`shifts_sentence` on response time
    online_sentence: str  #: :func:`online_sentence`
    designs_sentence: str  #: :func:`designs_sentence` (a family with both policy designs)
    provenance: str  #: where and when the rows were made, and their CPU-hours
    heuristics: str = ""  #: :func:`heuristics_text`: which heuristics "best heuristic" is the best of


def chapter_findings(folder: Path | None = None, reps: int = DEFAULT_REPS,
                     who: str = "the per-server learners") -> ShiftFindings:
    """Everything the chapter shows of one shift family, from ``folder`` (default
    :func:`shifts_dir`); ``who`` names its learners in the sentences."""
    import json

    folder = Path(folder) if folder is not None else shifts_dir()
    rows = load_rows(folder)
    table = frozen_table(rows, reps=reps)
    prov = "No provenance record (shifts.json) is at hand."
    record_path = folder / "shifts.json"
    rec: dict = {}
    if record_path.is_file():
        rec = json.loads(record_path.read_text())
        commit = str((rec.get("code") or {}).get("commit", "unknown"))[:12]
        prov = (f"{rec['evaluations']:,} evaluations, {rec['cpu_hours']:.2f} CPU-hours, gathered {rec['made_utc']} "
                f"on {rec['machine']} at commit {commit}, from the policies of `{Path(str(rec.get('source'))).name}`.")
    oail = oail_table(rows, reps=reps)
    continuing = continuing_table(rows, reps=reps)
    family = rec.get("family")
    return ShiftFindings(rows=rows, table=table, oail=oail, continuing=continuing,
                         online_sentence=online_sentence(continuing, oail, declared=family),
                         designs_sentence=designs_sentence(table),
                         sentence=shifts_sentence(table, rows, declared=family, who=who),
                         response_sentence=shifts_sentence(table, rows, "avg_response_s", family, who),
                         provenance=prov, heuristics=heuristics_text(rows))


def chapter_lead(found: ShiftFindings, worlds: ShiftFindings) -> str:
    """The chapter's finding in three sentences: the frozen per-server learners against the best
    heuristic (``found``'s :func:`shifts_sentence`), learning on with and without OAIL
    (:func:`online_sentence`), and both policy designs over the same worlds (``worlds``'
    :func:`designs_sentence`)."""
    return " ".join((found.sentence, found.online_sentence, worlds.designs_sentence))
