"""Every detail this study had to reconstruct, and every authors'-code bug it did not copy.

:data:`DEVIATIONS` is the single list the book's deviations chapter renders; each entry
says what the paper or the authors' code does (or that it is silent), what we do, where it
lives in the code, and, where a profile variant measures it, the variant's name.
:func:`variant_effect` computes that measured effect from the results store.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ilets.agents.cloning import TIE_TOL
from ilets.config import MAX_EVENT_JITTER_S
from ilets.agents.observation import SERVER_FEATURES, TASK_FEATURES
from ilets.study.pilot import KEEP_MARGIN as _KEEP
from ilets.report.rl_stage import CANDIDATES as _RL_CANDIDATES
from ilets.report.stats.prose import count_text
from ilets.study.profiles import load_profile, method_defaults
from ilets.workloads.workload import PAPER_OFFLINE_TASKS

#: The method defaults the rows quote (``ilets/configs/methods.yaml`` on ``RunConfig``), so
#: the table states the values the code runs with instead of copies of them.
_D = method_defaults()
_WORLDS = load_profile("worlds")
_PS_PILOT = load_profile("pilot-per-server")
_W, _F, _P, _E, _O = _D.workload, _D.fleet, _D.ppo, _D.experts, _D.oail
#: The learning rate of the authors' actor-critic [code] (we do not use it: PPO's is in ``methods.yaml``).
AUTHORS_LEARNING_RATE = 2.5e-6


def _servers(profile) -> str:
    """A profile's fleet sizes as prose ("50" or "50 and 200")."""
    sizes = [str(s) for s in profile.servers]
    return sizes[0] if len(sizes) == 1 else ", ".join(sizes[:-1]) + " and " + sizes[-1]


def span(pair, spec: str = ",g") -> str:
    """A pair as a range ("1-4"), each end in ``spec``."""
    return f"{pair[0]:{spec}}-{pair[1]:{spec}}"


def _shares(values) -> str:
    return "/".join(f"{v:g}" for v in values)


@dataclass(frozen=True)
class Deviation:
    topic: str
    source: str  #: what the paper / authors' code says ("silent" if nothing)
    ours: str  #: what this study does
    where: str  #: module or file
    variant: str = ""  #: profile variant that measures the effect ("" = not measured)
    kind: str = "reconstructed"  #: "reconstructed" or "bug not reproduced"


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("Workload", "Google trace day 10, a 50-min window (start unpublished)",
              "a synthetic window with the paper's counts, bursts and a trend change; a trace loader is provided",
              "ilets.workloads.workload, ilets.workloads.trace"),
    Deviation("CPU requests", "from the trace", "drawn from a real 33,302-task sample's distribution",
              "ilets/data/google_cpu_quantiles.csv"),
    Deviation("Task length", "a range (unpublished)", f"uniform {span(_W.length_mi)} MI",
              "WorkloadConfig.length_mi"),
    Deviation("Deadline", "unpublished", f"uniform {span(_W.deadline_s, 'g')} s after arrival",
              "WorkloadConfig.deadline_s"),
    Deviation("Server speed", "a range (unpublished)",
              f"{span(_F.mips)} MIPS, so that 50 servers are loaded but not swamped",
              "FleetConfig.mips", variant="heavy-load"),
    Deviation("Server capacity and power", "static power per server (unpublished)",
              f"capacity {_shares(_F.capacity_levels)} (shares {_shares(_F.capacity_probs)}); idle "
              f"{span(_F.idle_w)} W, active {span(_F.active_w)} W per 0.5 capacity",
              "FleetConfig"),
    Deviation("Queueing model", "unpublished", "first come, first served per server, head-of-line blocking",
              "ilets.simulator.cloud"),
    Deviation("Reward normalisation", "theta x power + (1 - theta) x estimated wait, unnormalised [code]",
              f"power over the fleet's maximum; response over {_D.reward.wait_scale_s:g} s, "
              f"{_D.reward.wait_form} wait form (the pilot's choice)", "ilets.simulator.objective",
              variant="reward-capped"),
    Deviation("State", "2M+2: task CPU, one more scalar, free CPU and task count per server [code]",
              "the same, the extra scalar being the task length",
              "ilets.agents.env", variant="rich-state"),
    Deviation("Infeasible actions", "silent", "masked; if taken anyway, redirected and penalised",
              "ilets.agents.env"),
    Deviation("Learner", f"actor-critic, 128 units, Adam, lr {AUTHORS_LEARNING_RATE:g}, replay 10,000 [code]",
              f"masked PPO, one {_P.hidden}-unit layer, lr {_P.learning_rate:g}, {_P.n_steps}-step rollouts, "
              f"{_P.n_epochs} epochs",
              "ilets/configs/methods.yaml"),
    Deviation("Critic in OINPT", "trained; how is unknown",
              f"regressed on the expert's discounted returns (gamma {_P.gamma:g})", "ilets.agents.oinpt.pretrain_critic",
              variant="no-critic"),
    Deviation("OINPT budget", f"all {PAPER_OFFLINE_TASKS:,} offline tasks",
              f"the first {_D.oinpt.max_demo_tasks:,} offline tasks, cloned for {_D.oinpt.bc_epochs} epochs",
              "OINPTConfig"),
    Deviation("Experts", "GA and PSO, settings unpublished",
              f"our GA ({_E.ga_population}x{_E.ga_generations}) and PSO ({_E.pso_particles}x{_E.pso_iterations}) "
              "with exact plan costs, started from the greedy plan",
              "ilets.agents.experts, ilets.agents.expert_kernels", variant="greedy-expert"),
    Deviation("OAIL updates", "at once on the live policy, strength unpublished",
              f"at the next rollout; {_O.bc_steps} cloning step at lr {_O.learning_rate:g} per expert result",
              "ilets.agents.oail, OAILConfig", variant="oail-strong"),
    Deviation("Simulated time", "advanced by wall-clock timer threads [code]",
              "event-driven: results do not depend on host speed", "ilets.simulator.cloud",
              kind="bug not reproduced"),
    Deviation("Background thread", "the 'asynchronous' emulator ran synchronously [code]",
              f"a separate process paced in simulated time ({_O.workers} emulator, backlog {_O.max_pending}); "
              "runs are bit-reproducible",
              "ilets.agents.oail (EmulatorSlots), OAILConfig.clock", variant="oail-sync", kind="bug not reproduced"),
    Deviation("OAIL latency", "unpublished",
              f"{_O.latency_s:g} s per request, the measured cost of GA then PSO on one {_E.window}-task window",
              "OAILConfig.latency_s, configs/methods.yaml, benchmarks/bench_experts.py, ilets.agents.oail.admission"),
    Deviation("Tuning", "unpublished",
              "a pilot on seeds never evaluated, one setting at a time, by a rule fixed before it ran",
              "ilets.study.pilot, configs/pilot.yaml"),
    Deviation("PSO data", "both cloning updates used GA's plans [code]",
              f"each expert's own, weighted {_shares(_O.weights)} by plan cost", "ilets.agents.oail",
              kind="bug not reproduced"),
    Deviation("OAIL window", "the next (future) tasks [code]", "the last W scheduled tasks",
              "OAILConfig.window_mode", variant="upcoming", kind="bug not reproduced"),
    Deviation("Policy network", "flat network, 128 units, over the 2M+2 state",
              f"flat by default; a per-server network ({_D.server_hidden} units) scores each server from its row "
              "and the fleet's summary", "RunConfig.policy, ilets.agents.per_server"),
    Deviation("Per-server observation", "the 2M+2 state",
              f"{len(TASK_FEATURES)} task numbers and {len(SERVER_FEATURES)} per server (times, load, speed, power, "
              "deadline margins)", "ilets.agents.observation.SERVER_FEATURES"),
    Deviation("Positive control", "none", "each expert cloned into each design with one budget, scored frozen; "
              "ties count as agreement", "ilets.study.positive_control, ilets.agents.cloning, "
              f"configs/positive-control.yaml (tie tolerance {TIE_TOL:g})"),
    Deviation("Fine-tuning aids", "plain PPO after cloning",
              "off by default: critic warm-up, a pull toward the frozen clone, imitation on the learner's own "
              "states, held-out checkpoints", "FinetuneConfig, ilets.agents.ppo, ilets.agents.checkpoints"),
    Deviation("Per-server tuning", "unpublished",
              f"a random search at {_servers(_PS_PILOT)} servers; a second round, declared after the first, "
              f"admits only candidates that keep their clone (within {_KEEP:.0%})",
              "ilets.study.pilot.select_round_two, configs/pilot-per-server.yaml"),
    Deviation("Worlds as replicates", "one data centre and one window",
              "a second grid draws each seed's fleet and moves bursts and trend knots by up to "
              f"{_WORLDS.run.workload.event_jitter_s:g} s",
              f"Profile.worlds, WorkloadConfig.event_jitter_s (at most {MAX_EVENT_JITTER_S:g} s), configs/worlds.yaml"),
    Deviation("Shifted worlds", "none shown",
              "a declared family of worlds, each moving one factor (arrivals, bursts, trend, requests, lengths, "
              "deadlines, theta, fleet, expert quality)",
              "WorkloadConfig (rate_factor ... cpu_source), RunConfig.warm_start, OINPTConfig.label_noise, "
              "configs/shifts.yaml, ilets.study.shifts"),
    Deviation("RL stage control", "none (fine-tuning is assumed to help)",
              "a per-server clone of a weaker heuristic (Earliest-Finish) fine-tuned toward a better one "
              "(Min-Energy) it never sees; judged on a held-out segment of the window; "
              f"{count_text(len(_RL_CANDIDATES))} recipes declared before any ran, one of them "
              "advantage-weighted regression instead of PPO's actor step; the guard "
              "amended once, before any result was read",
              "OINPTConfig.expert (a heuristic teacher), FinetuneConfig.actor_update, configs/rl-control.yaml, "
              "ilets.report.rl_stage"),
)


#: Each variant a deviation names, in plain words: what it changes (the chapter's tables and
#: sentences say these; the variants' own names are for the "Reproduce this" box).
VARIANT_TEXT: dict[str, str] = {
    "heavy-load": "slower servers", "reward-capped": "capped wait", "rich-state": "richer state",
    "no-critic": "no critic pre-training", "greedy-expert": "greedy expert", "oail-strong": "stronger imitation",
    "oail-sync": "synchronous emulator", "upcoming": "future window",
}
#: A learner's response-time change under a variant that counts as moving the results [ours]: at
#: least this large, with its 95 % interval clear of zero.
MATERIAL = 0.05


def table() -> pd.DataFrame:
    """The deviations as a DataFrame (one row each)."""
    return pd.DataFrame([d.__dict__ for d in DEVIATIONS])


def display() -> pd.DataFrame:
    """The deviations as the chapter shows them: topic, the paper's or the authors' choice, ours,
    the kind, and the variant that tests it in plain words (:data:`VARIANT_TEXT`); the code
    locations (``where``) stay in :data:`DEVIATIONS`."""
    t = table()
    return pd.DataFrame({"topic": t["topic"], "paper or authors' code": t["source"], "this study": t["ours"],
                         "kind": t["kind"], "tested by": t["variant"].map(lambda v: VARIANT_TEXT.get(v, ""))})


def variant_effect(metrics: pd.DataFrame, variant: str,
                   columns: tuple[str, ...] = ("avg_response_s", "energy_kwh", "success_rate")) -> pd.DataFrame:
    """Relative change of each metric in ``variant`` against the main study, same cells.

    For every (method, servers) the variant ran: ``100 * (mean(variant) / mean(main) - 1)``
    over the seeds both ran, with a 95% paired percentile-bootstrap CI over seeds
    (:func:`ilets.report.stats.variant_comparison` with every metric read as "higher is better",
    so its relative improvement is the plain relative change). ``metrics`` must hold every
    cell (``load_metrics(variant=None)``).
    """
    from ilets.report.stats import variant_comparison

    comp = variant_comparison(metrics[metrics["variant"] == ""], metrics[metrics["variant"] == variant],
                              columns, directions=True)
    comp = comp[comp["verdict"] != "no data"]
    return pd.DataFrame({"variant": variant, "method": comp["method"], "servers": comp["servers"],
                         "metric": comp["metric"], "change_pct": comp["rel_pct"], "ci_low_pct": comp["rel_ci_low"],
                         "ci_high_pct": comp["rel_ci_high"], "seeds": comp["n_x"]}).reset_index(drop=True)


def _effects(metrics: pd.DataFrame, names: tuple[str, ...] | None = None) -> pd.DataFrame:
    """:func:`variant_effect` of every variant a deviation names (``names``: default all) that
    ran, stacked (empty when none ran)."""
    names = tuple(d.variant for d in DEVIATIONS if d.variant) if names is None else names
    parts = [variant_effect(metrics, v) for v in names] if len(metrics) else []
    parts = [p for p in parts if len(p)]  # variants the profile lacks add nothing
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def effects_display(metrics: pd.DataFrame, names: tuple[str, ...] | None = None) -> pd.DataFrame:
    """:func:`variant_effect` of every variant a deviation names (``names``: default all),
    one row per (variant in plain words, method, servers, seeds), one column per metric holding
    ``"+1.2% [-0.3, +2.5]"``; empty when no variant ran."""
    effects = _effects(metrics, names)
    if effects.empty:
        return effects
    effects["variant"] = effects["variant"].map(lambda v: VARIANT_TEXT.get(v, v))
    effects["change"] = [f"{r.change_pct:+.1f}% [{r.ci_low_pct:+.1f}, {r.ci_high_pct:+.1f}]"
                         for r in effects.itertuples()]
    return effects.pivot_table(index=["variant", "method", "servers", "seeds"], columns="metric", values="change",
                               aggfunc="first").reset_index().rename_axis(columns=None)


def effects_lead(metrics: pd.DataFrame, names: tuple[str, ...] | None = None) -> str:
    """Which tested choices move a learner's mean response time (:data:`MATERIAL` or more, the
    95 % interval clear of zero), with the largest such change of each, and which do not: the
    chapter's finding, from :func:`variant_effect` of every variant a deviation names."""
    from ilets.method_table import LEARNERS, METHOD_LABELS
    from ilets.report.report_context import and_join

    effects = _effects(metrics, names)
    if effects.empty:
        return "No variant of these results is judged yet, so no choice's effect is measured here."
    rows = effects[(effects["metric"] == "avg_response_s") & effects["method"].isin(LEARNERS)].copy()
    rows["clear"] = (rows["ci_low_pct"] > 0) | (rows["ci_high_pct"] < 0)
    rows["size"] = rows["change_pct"].abs().where(rows["clear"], 0.0)
    tested = list(dict.fromkeys(rows["variant"]))
    moving = [v for v in tested if rows.loc[rows["variant"] == v, "size"].max() >= 100 * MATERIAL]
    rest = [VARIANT_TEXT.get(v, v) for v in tested if v not in moving]
    parts = []
    for v in moving:
        top = rows.loc[rows.loc[rows["variant"] == v, "size"].idxmax()]
        parts.append(f"{VARIANT_TEXT.get(v, v)} ({top.change_pct:+,.0f}% for {METHOD_LABELS.get(top.method, top.method)} at "
                     f"{int(top.servers)} servers)")
    text = (f"Of the {len(tested)} choices a variant tests, {len(moving)} change a learner's mean response time "
            f"by {MATERIAL:.0%} or more: {and_join(parts)}." if moving else
            f"None of the {len(tested)} choices a variant tests changes a learner's mean response time by "
            f"{MATERIAL:.0%} or more.")
    if moving and rest:
        text += (f" The other {len(rest)} ({and_join(rest)}) change it by less, or within the seed-to-seed "
                 "interval.")
    return text
