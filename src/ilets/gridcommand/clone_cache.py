"""Finished grid-command clones kept on disk, shared by the methods and processes that need one.

``bc``, ``bc+ppo`` and ``bc+ppo+oail`` of one (seed, fleet, training regime) learn from the
same clone, so a grid makes it once (:func:`cached_clone`, keyed by :func:`clone_key`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import torch as th

from ilets.config import to_dict
from ilets.config.run import RUN_FINETUNE_ADDED, drop_added_defaults
from ilets.files import HeldByAnother, atomic_write
from ilets.gridcommand.cloning import clone
from ilets.gridcommand.config import GridCommandConfig
from ilets.gridcommand.pipeline_config import PipelineConfig

#: Bump when cloning changes (the cache key of :func:`cached_clone`).
CLONE_CACHE_VERSION = 2

#: Fields added to the configuration after clones were cached: at their defaults they are left
#: out of :func:`clone_key`, so a cache made before they existed is still found.
CLONE_KEY_ADDED = ("run.defer_head", "envelope_redraws", "run.cap_head", "run.server_film",
                   "observe_terms") + RUN_FINETUNE_ADDED


def clone_key(train_cfg: GridCommandConfig, pipe: PipelineConfig, seed: int) -> str:
    """A hash of everything that determines :func:`clone`'s result (its cache key)."""
    plain = drop_added_defaults(to_dict(train_cfg), CLONE_KEY_ADDED, to_dict(GridCommandConfig()))
    blob = json.dumps([CLONE_CACHE_VERSION, plain, pipe.plain(), seed], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cached_clone(train_cfg: GridCommandConfig, pipe: PipelineConfig, seed: int,
                 cache_dir: Path | None = None, wait: bool = True, processes: int = 1) -> tuple[dict, dict]:
    """:func:`clone`, read from ``cache_dir`` when it holds this key, written there otherwise.

    ``bc``, ``bc+ppo`` and ``bc+ppo+oail`` of one (seed, fleet, training regime) share the
    same clone (cloning is deterministic from the seed: the cached state is the one a fresh
    clone makes, tested), so a grid computes it once [ours]. A damaged file is recomputed.
    The training episodes' envelopes are kept in ``cache_dir`` too (:func:`clone`), and so
    is a clone in the making (``clone-<key>.partial``, :func:`clone`'s ``progress``): a grid
    killed in the middle of a clone goes on from its last record when it is run again.

    The clone is made under a lock beside its file, so processes sharing ``cache_dir`` (two
    grids on one folder, whose neighbouring cells ``bc`` and ``bc+ppo`` of a seed share a
    clone) make it once: the second waits for it and reads it, or with ``wait=False`` raises
    :class:`~ilets.files.HeldByAnother` at once (its cell is then busy, and taken up again
    once the process has done the cells nobody holds). ``processes``: :func:`clone`'s.
    """
    from filelock import FileLock, Timeout

    if cache_dir is None:
        return clone(train_cfg, pipe, seed, processes=processes)
    path = Path(cache_dir) / f"clone-{clone_key(train_cfg, pipe, seed)}.pt"

    def cached() -> tuple[dict, dict] | None:
        if not path.is_file():
            return None
        try:
            # tensors and a JSON string only: torch's safe loader, no unpickling of code
            saved = th.load(path, weights_only=True)
            return saved["state"], {**json.loads(saved["info_json"]), "clone_cached": True}
        except Exception as err:  # noqa: BLE001 -- a file cut short by a kill: make the clone again
            warnings.warn(f"{path}: damaged clone cache ({type(err).__name__}); cloning again", stacklevel=2)
            path.unlink(missing_ok=True)
            return None

    found = cached()  # a clone written whole (one rename) is read without the lock
    if found is not None:
        return found
    lock = FileLock(str(path) + ".lock", timeout=-1 if wait else 0)
    try:
        lock.acquire()
    except Timeout:
        raise HeldByAnother(Path(lock.lock_file)) from None
    try:
        found = cached()  # made by the process that held the lock
        if found is not None:
            return found
        progress = path.with_suffix(".partial")  # a killed clone goes on from here (:func:`clone`)
        state, info = clone(train_cfg, pipe, seed, cache_dir, progress, processes)
        atomic_write(path, lambda tmp: th.save({"state": state, "info_json": json.dumps(info, default=float)}, tmp))
        shutil.rmtree(progress, ignore_errors=True)
        return state, info
    finally:
        lock.release()
