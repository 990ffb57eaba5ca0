"""What a frozen grid-command clone carries from its training episodes to the scored one [ours].

A clone is judged on the scored episode (the online segment), but it learns from its
training episodes (offline segments, :func:`ilets.gridcommand.episodes.training_episodes`).
When it falls short there, two causes look alike in its tracking error: it cannot express
what its teacher does (then it disagrees on the training episode too), or it learned the
training episode rather than the rule (then it agrees there and not on the scored one).
This probe tells them apart. On the teacher's own states (its demonstrations, so neither
episode drifts under the clone's errors) it measures the clone's greedy agreement with the
teacher, overall and on the decisions made during events, and its *deferral recall*: the
share of the teacher's deferrals the clone also makes; once on the first training episode
(what BC saw) and once on the scored episode (what it did not).

Where the teacher scores its actions (Lyapunov), the probe also weighs each disagreement in
the teacher's own terms (:func:`regret_of`): a clone that disagrees only between actions the
teacher all but ties is short of resolution, not of the rule, and one whose disagreements cost
the teacher much has not learned it.

``python -m ilets.gridcommand.study.clone_transfer --profile P --servers 50 --seeds 5 --out F.json``
clones as the grid does (read from ``--cache``, a grid's ``cache/`` folder, when it holds the
clone) and writes the rows with the machine, the date and the commit
(:func:`ilets.host.write_benchmark`; each row also keeps its own commit and date, so
``--append`` adds another profile's rows to a record). Chapter 12 reads the shipped record
(:func:`ilets.gridcommand.report.positive_control.transfer_sentence`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from ilets.agents.masked import unchecked_distributions
from ilets.agents.oinpt import Demonstrations
from ilets.agents.ppo import make_run_ppo
from ilets.config import ConfigError
from ilets.gridcommand import teacher as T
from ilets.gridcommand.clone_cache import cached_clone
from ilets.gridcommand.config import GridCommandConfig
from ilets.gridcommand.env import GridCommandEnv
from ilets.gridcommand.episodes import evaluation_config, training_config

#: The episodes the probe reads: the first training episode and the scored one.
EPISODES = ("training", "scored")


#: A disagreement whose cost is at most this share of the median allowed action's margin over
#: the teacher's choice is a near-tie (:func:`regret_of`).
NEAR_TIE = 0.05


def regret_of(chosen: np.ndarray, labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """What each choice in ``chosen`` costs in the teacher's own terms: its score minus that of
    the teacher's label, over the median allowed action's margin over the label (``scores``:
    one row per state, ``inf`` where masked, the teacher picking the least). 0 where they
    agree (or tie), 1 for a choice as costly as the median allowed action, more for a worse
    one: scale-free, since the scores' own scale moves with the task and the queues, and the
    median, not the worst, since one action that would miss a deadline scores far above the
    rest while the queue is long. 0 where the median ties the label (more than half the
    allowed actions tie it), whatever the choice."""
    rows = np.arange(len(labels))
    typical = np.nanmedian(np.where(np.isfinite(scores), scores, np.nan), axis=1)
    best = scores[rows, labels]
    spread = typical - best
    gap = scores[rows, chosen] - best
    return np.where(spread > 0, gap / np.where(spread > 0, spread, 1.0), 0.0)


def agreement_on(state: dict, cfg: GridCommandConfig, demos: Demonstrations, env: GridCommandEnv,
                 scores: np.ndarray | None = None) -> dict[str, float]:
    """The clone (a policy ``state`` made for ``cfg``) on the teacher's demonstrations
    ``demos`` of ``env``: its greedy agreement overall and during events, and its deferral
    recall (NaN where the teacher never deferred), with the teacher's and the clone's
    deferral counts on those states. With the teacher's ``scores`` on those states
    (:func:`ilets.gridcommand.teacher.scored_demonstration`), also what the clone's
    disagreements cost it (:func:`regret_of`): their median (``regret_median``) and the share
    that are near-ties (``near_tie_share``, at most :data:`NEAR_TIE`); NaN without a
    disagreement."""
    run = cfg.run
    model = make_run_ppo(env, run)
    model.policy.load_state_dict(state)
    with th.no_grad(), unchecked_distributions():
        probs = model.policy.get_distribution(th.as_tensor(np.array(demos.obs)), action_masks=demos.masks)
        chosen = probs.distribution.probs.argmax(dim=1).numpy()
    agreed = chosen == demos.acts
    during = env.during_event(demos.obs)
    teacher, clone = demos.acts == env.defer_action, chosen == env.defer_action
    row = {"decisions": int(len(agreed)), "agreement": float(agreed.mean()),
           "event_agreement": float(agreed[during].mean()) if during.any() else float("nan"),
           "teacher_deferrals": int(teacher.sum()), "clone_deferrals": int(clone.sum()),
           "deferral_recall": float((teacher & clone).sum() / teacher.sum()) if teacher.any() else float("nan")}
    if scores is not None:
        if scores.shape != demos.masks.shape:
            raise ValueError(f"scores: expected one per state and action {demos.masks.shape}, got {scores.shape}")
        regret = regret_of(chosen, demos.acts, scores)[~agreed]
        row["regret_median"] = float(np.median(regret)) if len(regret) else float("nan")
        row["near_tie_share"] = float(np.mean(regret <= NEAR_TIE)) if len(regret) else float("nan")
        row["near_tie"] = NEAR_TIE  # the row says what it counted
    return row


def probe(profile: str, servers: int, seed: int, cache_dir: Path | None = None) -> list[dict[str, Any]]:
    """One row per episode of :data:`EPISODES` for the clone of ``profile`` (a grid profile
    with a clone-based method) at ``servers`` and ``seed``, cloned as the grid clones it
    (:func:`ilets.gridcommand.clone_cache.cached_clone`)."""
    from ilets.gridcommand.study.scenario import load_profile

    grid = load_profile(profile)
    base, pipe = grid.scenario_config(), grid.pipeline.validate()
    train_cfg = training_config(base, grid.train_regime, servers, seed)
    c0 = time.process_time()
    state, info = cached_clone(train_cfg, pipe, seed, cache_dir)
    rows = []
    for episode, cfg in zip(EPISODES, (train_cfg, evaluation_config(base, grid.train_regime, servers, seed))):
        env = GridCommandEnv(cfg)
        if T.scores_kept(env, pipe.teacher):
            demos, scores = T.scored_demonstration(env, pipe.teacher, pipe.demo_tasks)
        else:
            demos, scores = T.demonstrate(env, pipe.teacher, pipe.demo_tasks), None
        rows.append({"profile": grid.name, "servers": servers, "seed": seed, "episode": episode,
                     **agreement_on(state, train_cfg, demos, env, scores)})
    for row in rows:
        row["cpu_s"] = time.process_time() - c0
        row["clone_cached"] = bool(info.get("clone_cached", False))
    return rows


def _kept_rows(path: Path) -> list[dict[str, Any]]:
    """The rows an earlier run wrote to ``path`` (none when it does not exist)."""
    if not path.is_file():
        return []
    try:
        rows = json.loads(path.read_text())["rows"]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ConfigError(f"{path}: not a clone-transfer record (rows: {err}); expected the JSON this probe writes")
    return list(rows)


def main(argv: list[str] | None = None) -> int:
    """Probe the clones of a grid profile and write the rows as JSON."""
    from ilets.host import host_record, write_benchmark

    ap = argparse.ArgumentParser(prog="python -m ilets.gridcommand.study.clone_transfer", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", required=True, help="a grid profile whose methods clone a teacher")
    ap.add_argument("--servers", type=int, nargs="+", default=[50])
    ap.add_argument("--seeds", type=int, nargs="+", required=True)
    ap.add_argument("--cache", type=Path, default=None, help="a grid's cache/ folder (clones read or written there)")
    ap.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows --out already holds for other (profile, servers, seed)")
    args = ap.parse_args(argv)
    try:
        if any(m < 1 for m in args.servers):
            raise ConfigError(f"--servers: expected fleet sizes >= 1, got {args.servers}")
        kept = _kept_rows(args.out) if args.append else []
        host = host_record()
        rows = [{**row, "commit": host["commit"], "date_utc": host["date_utc"]}
                for m in args.servers for s in args.seeds for row in probe(args.profile, m, s, args.cache)]
        new = {(r["profile"], r["servers"], r["seed"]) for r in rows}
        rows = [r for r in kept if (r["profile"], r["servers"], r["seed"]) not in new] + rows
        write_benchmark(args.out, {"probe": "clone_transfer", "rows": rows})
    except (ConfigError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
