"""The grid-command drift protocol: one factor of the command regime moved at a time [ours].

The main grid-command grid scores every method trained under ``shallow-long`` under
``deep-short`` too. That regime differs in depth, duration, notice and ramp, band, event
frequency and the share of up events at once, so a drop there cannot be put on any one of
them, and nothing shows what a learner trained under the new regime would do. The protocol
(a *drift family*, ``ilets/configs/gridcommand-drift-*.yaml``) runs, for each factor of
:data:`ilets.gridcommand.command.DRIFT_FACTORS`, two ordinary grid-command grids:

* ``shifted``: the family's methods trained under the base regime and scored under it (role
  ``train``) and under the base with that one factor moved (role ``eval``: the drift);
* ``control``: the family's ``controls`` (methods whose training reads the regime: the clone
  and what starts from it) trained under the moved regime and scored under it (role
  ``train``) and under the base (role ``eval``).

Both are the study's own grids (:func:`ilets.study.grid.run_grid`, scenario ``gridcommand``):
resumable, verified and shipped like any other, one folder each, ``<out>/<factor>/<kind>``.
The scored episodes of a regime are the same in both (the online segment under the run
seed's commands), so every comparison is paired by seed (:mod:`ilets.gridcommand.report.drift`).

    python -m ilets.gridcommand.study.drift --out results/gridcommand-drift
    python -m ilets.gridcommand.study.drift --ship results/gridcommand-drift --to shipped/gridcommand-drift

Two processes (say) share a family's work by seed, ``--seeds 0,2,4`` and ``--seeds 1,3``
beside each other on one ``--out`` (:func:`only_seeds`), and ship once afterwards.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

from ilets.cell_pack import has_cells
from ilets.config import ConfigError, bounded, check_config, from_dict
from ilets.config.strict import read_yaml
from ilets.gridcommand.command import DRIFT_BASE, DRIFT_FACTORS
from ilets.gridcommand.experiment import SCALES, ExperimentProfile
from ilets.gridcommand.pipeline_config import CLONED, METHODS, PipelineConfig

#: The two grids of a factor.
KINDS = ("shifted", "control")
#: Methods whose training reads the regime: a control of each can be trained under a moved one
#: (PPO from scratch learns on the scored episode itself, and an expert is not trained).
CONTROLLABLE = CLONED


@dataclass(frozen=True)
class DriftFamily:
    """A drift family (one YAML file): what the protocol's grids run."""

    name: str = "gridcommand-drift"
    description: str = ""
    scale: str = bounded("quick", choices=SCALES)  #: the label every table and sentence carries
    scenario: str = "gridcommand-quick"  #: the scenario profile of every grid
    factors: tuple[str, ...] = bounded(tuple(DRIFT_FACTORS), nonempty=True, distinct=True, choices=tuple(DRIFT_FACTORS))
    #: trained under the base regime
    methods: tuple[str, ...] = bounded(("rule", "lyapunov", "bc", "bc+ppo"), nonempty=True, distinct=True,
                                       choices=METHODS)
    #: trained under each moved regime: a learner whose training reads the regime
    controls: tuple[str, ...] = bounded(("bc", "bc+ppo"), nonempty=True, distinct=True, choices=CONTROLLABLE)
    servers: tuple[int, ...] = (50,)
    seeds: tuple[int, ...] = (0, 1, 2)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)

    def validate(self, where: str = "family") -> "DriftFamily":
        """Named :class:`ConfigError` for an unknown factor or method, or a control that no
        training regime changes (each field's declared choices, :func:`ilets.config.check_config`);
        the grids' own checks (fleet sizes, seeds) run in :meth:`relations`, one grid at a time."""
        return check_config(self, where)

    def relations(self, where: str) -> None:
        """Every grid of the family is a valid :class:`ExperimentProfile`."""
        for factor, kind, grid in self.grids():
            grid.validate(f"{where} ({factor}, {kind})")

    def grids(self) -> Iterator[tuple[str, str, ExperimentProfile]]:
        """``(factor, kind, profile)`` of every grid, factor by factor, shifted before control."""
        for factor in self.factors:
            moved = f"{DRIFT_BASE}+{factor}"
            common: dict[str, Any] = dict(description=f"{self.description} ({factor})", scale=self.scale,
                                          scenario=self.scenario, servers=self.servers, seeds=self.seeds,
                                          pipeline=self.pipeline)
            yield factor, "shifted", ExperimentProfile(name=f"{self.name}-{factor}", methods=self.methods,
                                                       train_regime=DRIFT_BASE, eval_regime=moved, **common)
            yield factor, "control", ExperimentProfile(name=f"{self.name}-{factor}-control", methods=self.controls,
                                                       train_regime=moved, eval_regime=DRIFT_BASE, **common)


def family_path(name: str) -> Path:
    """The path of a shipped drift family (``gridcommand-drift-quick`` or ``quick``)."""
    short = name.removeprefix("gridcommand-drift-")
    return Path(str(resources.files("ilets.configs").joinpath(f"gridcommand-drift-{short}.yaml")))


def load_family(name_or_path: str | Path) -> DriftFamily:
    """A validated :class:`DriftFamily` from a shipped name or a YAML path."""
    text = str(name_or_path)
    path = Path(text) if text.endswith((".yaml", ".yml")) or "/" in text else family_path(text)
    data = read_yaml(path)
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: expected a mapping with the family's factors, methods, servers and seeds")
    return from_dict(DriftFamily, data, str(path)).validate(str(path))


def folder_of(out: Path, factor: str, kind: str) -> Path:
    """Where the grid of ``(factor, kind)`` writes: ``<out>/<factor>/<kind>``."""
    return Path(out) / factor / kind


def share_grid_cache(out: Path, grid: Path) -> None:
    """Make ``grid``'s cache (``<grid>/cache``: clones and envelopes) the family's own, ``<out>/cache``.

    Every ``shifted`` grid trains its clones under the base regime, so the seven factors'
    grids would otherwise clone the same teacher seven times; and every grid scores the base
    regime's and the held-out episodes, whose envelopes are then computed once for the family.
    Each cache key is everything that determines what it keeps
    (:func:`ilets.gridcommand.clone_cache.clone_key`, :func:`ilets.gridcommand.envelope.reach_key`)
    and a cached clone or reach is the one a fresh run makes, so sharing them changes no
    number, only the CPU time the cells record. The link is a relative symbolic link; a grid
    whose cache already exists (a folder from before, or a host without symbolic links) keeps
    its own.
    """
    shared, link = Path(out) / "cache", Path(grid) / "cache"
    shared.mkdir(parents=True, exist_ok=True)
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and not link.exists():  # dangling (the shared cache was removed): relink
        link.unlink()
    if link.is_symlink() or link.exists():
        return
    try:
        link.symlink_to(os.path.relpath(shared, link.parent), target_is_directory=True)
    except OSError:  # made meanwhile by another process of the family, or no symbolic links here
        pass  # (the grid then clones on its own, with the same result)


def _subset(option: str, text: str, allowed: tuple, family: str, cast: type = str) -> tuple:
    """The comma-separated entries of ``text`` (each ``cast``), all among ``allowed`` and none
    repeated, in the order given; ``ConfigError`` naming ``option`` otherwise."""
    try:
        picked = tuple(cast(s.strip()) for s in text.split(","))
    except ValueError:
        raise ConfigError(f"{option}: expected comma-separated integers such as 0,2,4, got {text!r}") from None
    for s in picked:
        if s not in allowed:
            raise ConfigError(f"{option}: {s} is not one of family {family!r}'s {option[2:]} {list(allowed)}")
    if len(set(picked)) != len(picked):
        raise ConfigError(f"{option}: repeated entries in {list(picked)}")
    return picked


def only_seeds(family: DriftFamily, seeds: str) -> DriftFamily:
    """``family`` with only ``seeds`` (``"0,2,4"``, a subset of its own): processes that each
    run other seeds share one results folder (processes on the same seeds share it too: a
    seed's clone, which its ``bc`` and ``bc+ppo`` cells share, is made under a lock, once,
    :func:`ilets.gridcommand.clone_cache.cached_clone`). Its grids keep the family's names, so shipping
    the family afterwards lists every seed's cells (:func:`ship`). Named ``ConfigError`` otherwise."""
    return replace(family, seeds=_subset("--seeds", seeds, family.seeds, family.name, int))


def only_factors(family: DriftFamily, factors: str) -> DriftFamily:
    """``family`` with only ``factors`` (``"depth"``, a subset of its own), run in the family's
    order: a costly family runs its first factor's grids, whose ``shifted`` grid holds its
    positive control, before the rest. Its grids keep the family's names, as with
    :func:`only_seeds`. Named ``ConfigError`` otherwise."""
    picked = _subset("--factors", factors, family.factors, family.name)
    return replace(family, factors=tuple(f for f in family.factors if f in picked))


def run(family: DriftFamily, out: Path, progress: bool = True, max_cells: int | None = None) -> dict[str, dict]:
    """Run every grid of ``family`` not yet done (each resumes on its own, all sharing one cache
    of clones and envelopes: :func:`share_grid_cache`); their summaries.

    Processes that share ``out`` each take the cells no other one holds, grid after grid, and
    wait for the held ones only after the last grid: a process that reached the end of a grid
    while another was still on its last cells would otherwise sit idle for up to a cell's time
    (minutes) at every grid's end. A grid's summary adds up both passes. With ``max_cells``
    each grid waits at its own end, as a single grid does, so no grid computes more than that."""
    from ilets.study.grid import run_grid

    def one(factor: str, kind: str, profile: Any, wait: bool, only: list[str] | None = None) -> dict:
        return run_grid(profile, folder_of(out, factor, kind), workers=1, progress=progress, scenario="gridcommand",
                        max_cells=max_cells, wait_busy=wait, only=only)

    summaries = {}
    for factor, kind, profile in family.grids():
        share_grid_cache(out, folder_of(out, factor, kind))
        summaries[f"{factor}/{kind}"] = one(factor, kind, profile, wait=max_cells is not None)
    for factor, kind, profile in family.grids():  # then the cells other processes held, waited for
        first = summaries[f"{factor}/{kind}"]
        if first["busy"]:
            second = one(factor, kind, profile, wait=True, only=first["busy"])
            # a held cell its holder finished before this pass counts as done elsewhere
            between = len(first["busy"]) - sum(second[k] for k in ("ran", "failed", "done_elsewhere"))
            summaries[f"{factor}/{kind}"] = {
                **second, "skipped_done": first["skipped_done"],
                **{k: first[k] + second[k] for k in ("ran", "failed", "grid_wall_s")},
                "done_elsewhere": first["done_elsewhere"] + second["done_elsewhere"] + between}
    return summaries


def ship(src: Path, dest: Path, family: DriftFamily, note: str = "", add: bool = False) -> dict:
    """Ship every grid of ``family`` found under ``src`` to the same place under ``dest``
    (:func:`ilets.study.shipping.ship`: cells, store, profile and provenance each), then the
    family's own ``PROVENANCE.json`` over all their cells, with the cells it plans
    (``planned_units``) and the grids shipped. Each grid is claimed for the family's profile
    first, so runs of several family files that differ only in their seeds ship together.
    ``dest`` is replaced as a whole, when it is new, empty or an earlier ship's (anything else
    is refused, :func:`ilets.files.check_ship_target`).

    ``add=True`` adds to what ``dest`` already holds instead: a grid ``dest`` holds whole is
    kept as it is, file for file (its own provenance and recorded re-runs included), whatever
    ``src`` holds of it; any other grid is shipped only when ``src`` holds it whole (every cell
    done), else ``dest``'s part-way copy, if any, is kept. So a family ships factor by factor as
    its grids finish, from one results folder again and again, with no part-way grid added and
    no shipped grid rewritten. Only the family's grids are kept: ``dest`` is still replaced."""
    import shutil

    from ilets.files import check_ship_target, publish_folder, staging_folder
    from ilets.host import provenance_of
    from ilets.study.grid import claim_folder
    from ilets.study.scenario import get_scenario
    from ilets.study.shipping import ship as ship_grid

    sc = get_scenario("gridcommand")
    check_ship_target(dest, (src,))
    tmp = staging_folder(dest)
    grids, records = [], []
    for factor, kind, profile in family.grids():
        folder, shipped = folder_of(src, factor, kind), folder_of(dest, factor, kind)
        cells = sc.cells(profile)
        held = len(sc.records(shipped)) if add and has_cells(shipped) else None
        if held == len(cells):  # shipped whole before: kept
            shutil.copytree(shipped, folder_of(tmp, factor, kind))
        elif has_cells(folder) and (not add or all(sc.is_done(c, folder) for c in cells)):
            # the family's whole grid: the store then lists every finished cell of it, whichever
            # run (a family file with some of the seeds, say) wrote the folder's manifest last
            claim_folder(profile, folder, cells, sc)
            ship_grid(folder, folder_of(tmp, factor, kind), note=f"{note} ({factor}, {kind})", scenario=sc)
        elif held is not None:  # shipped part-way before, and not whole here either: kept
            shutil.copytree(shipped, folder_of(tmp, factor, kind))
        else:
            continue
        grids.append(f"{factor}/{kind}")
        records += sc.records(folder_of(tmp, factor, kind))
    if not grids:
        shutil.rmtree(tmp)
        raise ConfigError(f"{src}: no grid of the family {family.name!r} there (run it first)")
    info = {**provenance_of(records), "planned_units": sum(len(p.cells()) for _, _, p in family.grids()),
            "grids": grids}
    return publish_folder(tmp, Path(dest), info, note)


def main(argv: list[str] | None = None) -> int:
    """Run (or ship) a drift family's grids."""
    ap = argparse.ArgumentParser(prog="python -m ilets.gridcommand.study.drift", description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="quick", help="a shipped family (quick) or a YAML path")
    ap.add_argument("--out", type=Path, help="where the grids go (<out>/<factor>/<kind>)")
    ap.add_argument("--ship", type=Path, metavar="FROM", help="ship the grids under FROM (with --to) instead")
    ap.add_argument("--to", type=Path, help="where --ship copies them")
    ap.add_argument("--note", default="", help="the provenance note of --ship")
    ap.add_argument("--add", action="store_true", help="with --ship: keep every grid --to holds whole as it is and "
                                                       "add only the grids FROM holds whole")
    ap.add_argument("--max-cells", type=int, default=None, help="compute at most this many cells per grid")
    ap.add_argument("--seeds", help="run only these of the family's seeds (0,2,4): processes with other seeds "
                                    "can share --out; ship once afterwards")
    ap.add_argument("--factors", help="run only these of the family's factors (depth,band), in the family's "
                                      "order; ship once afterwards")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    from ilets.study.grid import FolderInUse

    try:
        family = load_family(args.family)
        if args.add and args.ship is None:
            raise ConfigError("--add: only with --ship FROM --to DEST (it adds FROM's whole grids to DEST)")
        if args.ship is not None:
            if args.to is None:
                raise ConfigError("--ship needs --to (where the shipped grids go)")
            info = ship(args.ship, args.to, family, args.note, add=args.add)
            print(f"shipped {info['cells']} of {info['planned_units']} cells in {len(info['grids'])} grids to "
                  f"{args.to} ({info['cpu_hours']:.2f} CPU-hours)")
            return 0
        if args.out is None:
            raise ConfigError("--out: expected the folder the grids go to")
        if args.max_cells is not None and args.max_cells < 1:
            raise ConfigError(f"--max-cells: expected a number >= 1, got {args.max_cells}")
        if args.seeds is not None:
            family = only_seeds(family, args.seeds)
        if args.factors is not None:
            family = only_factors(family, args.factors)
        for name, summary in run(family, args.out, progress=not args.quiet, max_cells=args.max_cells).items():
            print(f"{name}: ran {summary.get('ran')}, already done {summary.get('skipped_done')}, "
                  f"failed {summary.get('failed')}")
    except FolderInUse as err:  # most often --ship without the --family that ran the folder
        print(f"error: {err}; a family's grids are named after it: pass its --family", file=sys.stderr)
        return 2
    except (ConfigError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: the finished cells are kept; run again to resume", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
