"""The grid-command pilot on the study's stack: its episodes run, resumed and shipped by the
``ilets`` command, with the study's one provenance schema.

The pilot's rules (which expert options, which candidates, which seeds, how a candidate is
chosen) are the scenario's: :mod:`ilets.gridcommand.pilot`. Here they are run:

    ilets pilot --scenario gridcommand --profile quick --out results/gridcommand-pilot
    ilets ship --scenario gridcommand --results results/gridcommand-pilot --to shipped/gridcommand-pilot

The pilot is resumable: each episode is one JSON line of ``OUT/episodes.jsonl``, skipped when
present (a line cut short by a kill, the file's last, is dropped with a warning and its
episode runs again; any other damaged line is an error naming the file and the line);
``OUT/pilot.json`` holds the rules, the scores and the choices. A shipped pilot's
``PROVENANCE.json`` counts its episodes as a grid's counts its cells
(:func:`ilets.host.provenance_of`), with the choices.
"""

from __future__ import annotations

import datetime
import json
import shutil
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ilets.files import atomic_write, check_ship_target, publish_folder, staging_folder
from ilets.host import ComputeRecord, machine_record, provenance_of, source_version
from ilets.numerics import NOT_RECORDED, recorded_mode
from ilets.gridcommand.study.profiles import COMMAND_PACKAGES
from ilets.study.scenario import ScenarioError

if TYPE_CHECKING:
    from ilets.gridcommand.experiment import ExperimentProfile

#: The pilot's result: rules, scores and choices.
PILOT_FILE = "pilot.json"
#: One finished episode per line.
EPISODES_FILE = "episodes.jsonl"
#: What every episode line holds (besides its other scores and provenance).
EPISODE_KEYS = ("expert", "option", "value", "servers", "seed", "regime", "mean_reward", "episode_reward", "cpu_s")


class PilotError(ScenarioError):
    """A pilot folder that cannot be resumed or shipped (the message names the file)."""


def episode_key(row: dict) -> tuple:
    """What identifies an episode: expert, option, value, fleet size, seed and regime."""
    return row["expert"], row["option"], json.dumps(row["value"]), row["servers"], row["seed"], row["regime"]


def read_episodes(path: Path) -> list[dict]:
    """The finished episodes of ``OUT/episodes.jsonl``.

    The file's last line cut short (no line end: a kill while it was written) is dropped with
    a warning, and the file rewritten without it, so its episode runs again; any other line
    that is not an episode (:data:`EPISODE_KEYS`) raises :class:`PilotError` naming the file
    and the line (its episode is not ours to drop)."""
    path = Path(path)
    if not path.is_file():
        return []
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise PilotError(f"{path}: unreadable ({err})") from None
    lines = text.splitlines()
    torn = bool(text) and not text.endswith("\n")
    rows = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            if torn and i == len(lines) - 1:
                warnings.warn(f"{path}: line {i + 1} is cut short; its episode runs again", stacklevel=3)
                continue
            raise PilotError(f"{path}: line {i + 1} is not valid JSON; move the file away or mend the line") from None
        missing = [k for k in EPISODE_KEYS if k not in row] if isinstance(row, dict) else list(EPISODE_KEYS)
        if missing:
            raise PilotError(f"{path}: line {i + 1} is not an episode (missing {missing}); move the file away or "
                             "mend the line")
        rows.append(row)
    if torn:  # rewrite without the torn tail, so appends start clean
        atomic_write(path, lambda tmp: tmp.write_text("".join(json.dumps(r) + "\n" for r in rows)))
    return rows


def run_pilot(profile: ExperimentProfile, out: Path, seeds: tuple[int, ...] | None = None,
              plan: list[dict] | None = None, log: Callable[[str], None] = print) -> dict:
    """Run (or resume) every episode of the pilot (:mod:`ilets.gridcommand.pilot`'s stages on
    ``seeds``, default its pilot seeds) into ``out`` and write ``OUT/pilot.json``."""
    from filelock import FileLock, Timeout

    from ilets.gridcommand import pilot as rules

    seeds = rules.PILOT_SEEDS if seeds is None else tuple(seeds)
    out = Path(out)
    (out / "locks").mkdir(parents=True, exist_ok=True)
    # one run at a time per folder: a second one waits, then resumes (finding the episodes done)
    lock = FileLock(str(out / "locks" / "pilot.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        log(f"{out}: another process is running this pilot; waiting for it")
        lock.acquire()
    try:
        return _run_pilot(profile, out, seeds, plan, log)
    finally:
        lock.release()


def _run_pilot(profile: ExperimentProfile, out: Path, seeds: tuple[int, ...], plan: list[dict] | None,
               log: Callable[[str], None]) -> dict:
    import numpy as np

    from ilets.gridcommand import pilot as rules

    lines = out / EPISODES_FILE
    rows = read_episodes(lines)
    done = {episode_key(r) for r in rows}
    regimes = list(dict.fromkeys(profile.regimes.values()))
    result: dict[str, Any] = {"profile": profile.name, "scale": profile.scale, "seeds": list(seeds),
                              "regimes": regimes, "score": f"{rules.SCORE} over seeds, fleets and regimes "
                              f"({'higher' if rules.HIGHER_IS_BETTER else 'lower'} is better)",
                              "stages": []}

    def mean_of(stage: dict, value: Any) -> float:
        """The candidate's score: its episodes run (those not done yet), their scores averaged."""
        options = {**stage["fixed"], stage["option"]: value}
        got = []
        for servers in stage["servers"]:
            for seed in seeds:
                for regime in regimes:
                    key = (stage["expert"], stage["option"], json.dumps(value), servers, seed, regime)
                    if key not in done:
                        started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
                        w0 = time.perf_counter()
                        scores = rules.episode(profile, stage["expert"], options, servers, seed, regime)
                        row = {"expert": stage["expert"], "option": stage["option"], "value": value,
                               "servers": servers, "seed": seed, "regime": regime, **scores,
                               "wall_s": time.perf_counter() - w0, "started_utc": started, **source_version()}
                        with lines.open("a") as f:
                            f.write(json.dumps(row) + "\n")
                        rows.append(row)
                        done.add(key)
                        log(f"{stage['expert']} {stage['option']}={value} M{servers} s{seed} {regime}: "
                            f"{row[rules.SCORE]:.5f} in {row['cpu_s']:.1f} CPU s")
                    got += [r[rules.SCORE] for r in rows if episode_key(r) == key]
        return float(np.mean(got))

    for stage in plan or rules.stages(profile):
        candidates = list(stage["candidates"])
        means = {value: mean_of(stage, value) for value in candidates}
        chosen = rules.choose(rules.signed(means), stage["rule"], stage["tolerance"])
        added: list[Any] = []
        while (extra := rules.widened(candidates, chosen, stage, len(added))) is not None:
            candidates.append(extra)
            added.append(extra)
            means[extra] = mean_of(stage, extra)
            chosen = rules.choose(rules.signed(means), stage["rule"], stage["tolerance"])
        at_edge = stage["rule"] == "best" and chosen in (max(candidates), min(candidates))
        result["stages"].append({**{k: v for k, v in stage.items() if k != "fixed"}, "candidates": candidates,
                                 "widened": added, "at_edge": at_edge,
                                 "scores": {json.dumps(k): v for k, v in means.items()}, "chosen": chosen})
    result["cpu_hours"] = sum(r["cpu_s"] for r in rows) / 3600
    result["commits"] = sorted({str(r.get("commit")) + ("+dirty" if r.get("dirty") else "") for r in rows})
    result["machine"] = machine_record(COMMAND_PACKAGES)
    result["finished_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    atomic_write(out / PILOT_FILE, lambda tmp: tmp.write_text(json.dumps(result, indent=1)))
    return result


def read_pilot(folder: Path) -> dict:
    """A finished pilot's ``pilot.json``; :class:`PilotError` naming it when missing or damaged."""
    path = Path(folder) / PILOT_FILE
    if not path.is_file():
        raise PilotError(f"{Path(folder)}: expected a finished pilot folder with {PILOT_FILE} (run the pilot first)")
    try:
        pilot = json.loads(path.read_text())
        missing = [k for k in ("stages", "machine", "finished_utc") if k not in pilot]
        if missing:
            raise KeyError(f"missing {missing}")
        pilot["chosen"] = {f"{s['expert']}.{s['option']}": s["chosen"] for s in pilot["stages"]}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise PilotError(f"{path}: not a finished pilot's record ({type(err).__name__}: {err})") from None
    return pilot


def provenance(folder: Path) -> dict:
    """A pilot folder's provenance in the study's one schema (:func:`ilets.host.provenance_of`,
    one unit per episode; the machine is the one ``pilot.json`` recorded), with when it
    finished and what it chose."""
    pilot = read_pilot(folder)
    m = pilot["machine"] if isinstance(pilot["machine"], dict) else {}
    records = [ComputeRecord(commit=r.get("commit"), dirty=r.get("dirty"), cpu_model=m.get("cpu_model", "unknown CPU"),
                             cores=m.get("cores", "?"), cpu_id=m.get("cpu_id", ""),
                             numerics=recorded_mode(m) if m else NOT_RECORDED, started_utc=r.get("started_utc"),
                             cpu_s=float(r["cpu_s"]), wall_s=float(r.get("wall_s", 0.0)))
               for r in read_episodes(Path(folder) / EPISODES_FILE)]
    return {**provenance_of(records), "finished_utc": pilot["finished_utc"], "chosen": pilot["chosen"]}


def ship_pilot(src: Path, dest: Path, note: str = "") -> dict:
    """Copy a finished pilot folder (``pilot.json``, ``episodes.jsonl``) into ``dest`` (new,
    empty or an earlier ship's, replaced; anything else is refused,
    :func:`ilets.files.check_ship_target`), with its provenance (:func:`provenance`); returns
    the provenance."""
    src, dest = Path(src), Path(dest)
    if not (src / EPISODES_FILE).is_file():
        raise PilotError(f"{src / EPISODES_FILE}: missing; a finished pilot folder holds its episodes")
    check_ship_target(dest, (src,))  # a user's folder, or the pilot's own, is never replaced
    info = provenance(src)  # checks both files before anything is copied
    tmp = staging_folder(dest)
    for name in (PILOT_FILE, EPISODES_FILE):
        shutil.copy2(src / name, tmp / name)
    return publish_folder(tmp, dest, info, note, indent=1)
