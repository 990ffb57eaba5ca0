"""The aggregate a clone learns from: every labelled decision, in order, in one growing buffer.

A clone (:func:`ilets.gridcommand.cloning.clone`) labels the teacher's demonstrations of
every training episode, then each DAgger round's states, and BC reads all of them at once.
With hundreds of training episodes that is tens of gigabytes of observations, so the buffer
lives in one of three places, by the same values in the same order (tested):

- in memory, while its estimated observations fit :data:`SPILL_SHARE` of the memory free;
- past that, its observations in an unnamed temporary file (:func:`_file_backed`) that the
  operating system pages in and out, gone when the process ends;
- in a **folder** (``folder=``): every column a ``.npy`` file, with a progress record
  (:meth:`Aggregate.commit`) that names how many rows are whole and what the caller needs
  to go on. A killed clone then resumes from its last record (:meth:`Aggregate.reopen`)
  instead of starting again: at 1,024 training episodes a clone takes longer than a work
  session, and a session's stop would otherwise throw it away each time.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import mmap
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ilets.agents.oinpt import Demonstrations
from ilets.files import atomic_write

#: The share of the memory this host has free, when a clone starts collecting, past which its
#: aggregate's observations are kept in a temporary file rather than in memory (:class:`Aggregate`).
SPILL_SHARE = 0.5
#: Room an aggregate kept in files takes past its estimated capacity, as a share of it: the
#: files are sparse, so rows never written take no disk, while a buffer that outgrows its
#: estimate is copied whole, its old files kept until the next record (twice the aggregate on
#: disk for a while: about 80 GB for 256 one-day episodes at 200 servers).
FILE_HEADROOM = 0.5
#: The columns an aggregate holds: :class:`~ilets.agents.oinpt.Demonstrations`' arrays and,
#: per decision, whether the action played was the teacher's label.
COLUMNS = ("obs", "acts", "masks", "rewards", "experts", "agreed")
#: The progress record of an aggregate kept in a folder.
PROGRESS = "progress.json"
#: Bump when the layout of a folder's files or its record changes: an older folder is refused.
FOLDER_VERSION = 1


def aggregate_memory_limit(meminfo: Path = Path("/proc/meminfo")) -> int:
    """Bytes of observations an aggregate keeps in memory: :data:`SPILL_SHARE` of the memory
    available now (``MemAvailable``; of the physical memory where the kernel does not say), so
    that two clones made side by side do not both hold theirs. Only where the values live
    depends on the host, never the values: a clone is the same either way (tested)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(SPILL_SHARE * int(line.split()[1]) * 1024)
    except OSError:
        pass
    return int(SPILL_SHARE * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def _file_backed(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of ``shape`` held in an unnamed temporary file (in ``TMPDIR``) that the
    operating system pages in and out: the file is unlinked at once, and its mapping keeps it
    until the array is dropped, so a killed run leaves nothing behind."""
    size = max(1, math.prod(shape) * np.dtype(dtype).itemsize)
    with tempfile.TemporaryFile(prefix="ilets-aggregate-") as f:
        f.truncate(size)  # sparse: disk is taken as rows are written
        return np.memmap(f, dtype=dtype, mode="r+", shape=shape)


class AggregateFolderError(ValueError):
    """A folder's aggregate cannot be read back (a damaged or older record, a missing column)."""


def _open_column(path: Path) -> np.ndarray:
    """A folder's column file mapped for reading and writing, after checking that it holds
    every byte its header promises. Why: ``open_memmap`` in ``r+`` mode extends a short file
    with zeros, so a column cut short (a full disk, a copy cut off) would come back as rows of
    zeros that a resumed clone learns from, silently. :class:`AggregateFolderError` naming the
    file then."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(f)
        want = f.tell() + math.prod(shape) * np.dtype(dtype).itemsize
    size = os.path.getsize(path)
    if size < want:
        raise AggregateFolderError(f"{path}: {size:,} bytes, its header promises {want:,} (cut short)")
    return np.lib.format.open_memmap(path, mode="r+")


class Aggregate:
    """Labelled decisions in order, each column held once in a buffer that grows in place:
    the demonstrations of every training episode, then each DAgger round's states [ours].
    Why not ``np.concatenate``: joining the aggregate with a round's states holds the old
    aggregate, the round and the joined copy at once, about twice the aggregate at its
    largest, and with hundreds of training episodes that passes this machine's memory.
    :meth:`view` returns views, so the arrays BC reads are the same values in the same order.
    Observations past ``memory_limit`` bytes (estimated from ``capacity``) are kept in a
    temporary file (:func:`_file_backed`): 256 one-day episodes at 200 servers hold about
    40 GB of them. BC reads them by the minibatch, without read-ahead (:meth:`random_reads`). With
    ``folder``, every column is kept there instead, and :meth:`commit` records progress
    (module docstring). Kept in files, the buffer takes :data:`FILE_HEADROOM` past its
    estimated capacity, which costs no disk until it is written."""

    def __init__(self, capacity: int, memory_limit: int | None = None, folder: Path | None = None) -> None:
        self._capacity = max(1, capacity)
        self._memory_limit = memory_limit
        self._folder = None if folder is None else Path(folder)
        self._generation = 0  # a folder's files are renamed by generation when the buffer grows
        self._n = 0
        self._arrays: dict[str, np.ndarray] = {}
        self.seconds = 0.0
        self.file_backed = self._folder is not None
        if self._folder is not None:
            self._folder.mkdir(parents=True, exist_ok=True)

    def _file(self, name: str, generation: int) -> Path:
        assert self._folder is not None
        return self._folder / f"{name}-{generation}.npy"

    def _empty(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        if self._folder is not None:  # sparse too: ``open_memmap`` seeks to the end and writes one byte
            return np.lib.format.open_memmap(self._file(name, self._generation), mode="w+", dtype=dtype, shape=shape)
        if name == "obs" and self.file_backed:
            return _file_backed(shape, dtype)
        return np.empty(shape, dtype)

    def __len__(self) -> int:
        return self._n

    def add(self, part: Demonstrations, agreed: np.ndarray | None = None) -> None:
        """Append ``part``'s decisions (its obs, actions, masks, rewards and experts) and, per
        decision, whether the action played was the teacher's label (``agreed``; a
        demonstration's always is: the default)."""
        new = {"obs": part.obs, "acts": part.acts, "masks": part.masks, "rewards": part.rewards,
               "experts": part.experts,
               "agreed": np.ones(len(part), bool) if agreed is None else np.asarray(agreed, bool)}
        end = self._n + len(part)
        if not self._arrays:
            rows = max(self._capacity, end)
            row_bytes = math.prod(part.obs.shape[1:]) * part.obs.dtype.itemsize
            if self._folder is None:
                self.file_backed = self._memory_limit is not None and rows * row_bytes > self._memory_limit
            if self.file_backed:
                rows += int(rows * FILE_HEADROOM)
            self._arrays = {k: self._empty(k, (rows, *a.shape[1:]), a.dtype) for k, a in new.items()}
        else:
            size = len(self._arrays["acts"])
            # e.g. a longer expert name: the column is widened
            dtypes = {k: np.result_type(self._arrays[k].dtype, a.dtype) for k, a in new.items()}
            if end > size or any(dtypes[k] != self._arrays[k].dtype for k in new):
                self._check_room(sum(a[:self._n].nbytes for k, a in self._arrays.items() if self._on_disk(k)))
                self._reallocate(max(end, 2 * size) if end > size else size, dtypes)
        self._check_room(sum(a.nbytes for k, a in new.items() if self._on_disk(k)))
        for k, a in new.items():
            self._arrays[k][self._n:end] = a
        self._n = end
        self.seconds += part.seconds

    def _on_disk(self, name: str) -> bool:
        """Whether column ``name`` lives in a file (a folder's columns; else only the observations
        of a buffer past its memory limit)."""
        return self._folder is not None or (self.file_backed and name == "obs")

    def _check_room(self, need: int) -> None:
        """``OSError`` (``ENOSPC``) naming the place when the disk holding the columns kept in
        files has less than ``need`` bytes free. Why: those files are sparse memory maps, and
        writing to one on a full disk does not raise, it kills the process with a bare ``Bus
        error``; checked before each write, the clone stops with a line that says why (its
        last record kept, for a rerun once there is room)."""
        if need <= 0 or not (self._folder is not None or self.file_backed):
            return
        where = self._folder if self._folder is not None else Path(tempfile.gettempdir())
        free = shutil.disk_usage(where).free
        if free < need:
            raise OSError(errno.ENOSPC, f"the disk is full: {free:,} bytes free, the clone's next rows need "
                                        f"{need:,} (free some space and run again)", str(where))

    def _reallocate(self, size: int, dtypes: dict[str, np.dtype]) -> None:
        """Move every column to a buffer of ``size`` rows and the given dtypes (a copy, rare:
        past the capacity's estimate). A folder's new files take the next generation's names;
        the old ones stay until :meth:`commit`, so a kill meanwhile resumes from them."""
        self._generation += 1
        grown = {k: self._empty(k, (size, *a.shape[1:]), dtypes[k]) for k, a in self._arrays.items()}
        for k, a in self._arrays.items():
            grown[k][:self._n] = a[:self._n]
        self._arrays = grown

    def view(self, start: int = 0, stop: int | None = None) -> Demonstrations:
        """Decisions ``start:stop`` (all so far by default), as views of the buffer."""
        cut = slice(start, self._n if stop is None else stop)
        a = self._arrays
        return Demonstrations(obs=a["obs"][cut], acts=a["acts"][cut], masks=a["masks"][cut],
                              rewards=a["rewards"][cut], experts=a["experts"][cut], seconds=self.seconds)

    def agreed(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Whether the action played at decisions ``start:stop`` was the teacher's label (a view)."""
        return self._arrays["agreed"][start:self._n if stop is None else stop]

    @contextlib.contextmanager
    def random_reads(self) -> Iterator[None]:
        """Within it, the columns kept in files are read a row at a time, without read-ahead
        (``madvise(MADV_RANDOM)``), then back to the kernel's default. Why: BC gathers its
        minibatches from rows drawn at random, and on a page fault the kernel reads the pages
        around it too, as far as the disk's read-ahead (``read_ahead_kb``: 8 MB on the study's
        host), in case the next read follows. When the observations pass the page cache, each
        row of a few kilobytes that BC needs brings megabytes from disk, and BC waits on it
        (measured from a cold cache by ``benchmarks/bench_aggregate_reads.py``). The
        values read are the same either way; an aggregate in memory, or a host without
        ``madvise``, is left as it is."""
        # numpy keeps a memmap's mapping as ``_mmap`` (None for an empty one); no madvise: Windows
        maps = [m for a in self._arrays.values() if (m := getattr(a, "_mmap", None)) is not None
                and hasattr(mmap, "MADV_RANDOM")]
        for m in maps:
            m.madvise(mmap.MADV_RANDOM)
        try:
            yield
        finally:
            for m in maps:
                m.madvise(mmap.MADV_NORMAL)

    def commit(self, state: dict[str, Any]) -> None:
        """Record that every row so far is whole, with ``state`` (JSON; what the caller needs
        to go on), so that :meth:`reopen` finds them after a kill. The columns are flushed
        first and the record replaced in one rename, so a record never names rows that are not
        on disk. Nothing is written without a folder."""
        if self._folder is None:
            return
        for a in self._arrays.values():
            if isinstance(a, np.memmap):
                a.flush()
        record = {"version": FOLDER_VERSION, "rows": self._n, "generation": self._generation,
                  "seconds": self.seconds, "state": state}
        # numpy scalars in the state are written as plain numbers, as a clone cache writes them
        atomic_write(self._folder / PROGRESS, lambda tmp: tmp.write_text(json.dumps(record, default=float)))
        current = {self._file(k, self._generation).name for k in self._arrays}
        for stale in self._folder.glob("*-*.npy"):  # an earlier generation's columns
            if stale.name not in current:
                stale.unlink(missing_ok=True)

    @classmethod
    def reopen(cls, folder: Path) -> tuple["Aggregate", dict[str, Any]] | None:
        """The aggregate kept in ``folder`` as its last :meth:`commit` left it, and the state
        recorded there; None when ``folder`` holds no record. Rows past the record (written
        before a kill) are overwritten by the next :meth:`add`. Raises
        :class:`AggregateFolderError` when the record or a column cannot be read back."""
        folder = Path(folder)
        path = folder / PROGRESS
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text())
            if record.get("version") != FOLDER_VERSION:
                raise AggregateFolderError(f"{path}: version {record.get('version')!r}, expected {FOLDER_VERSION}")
            out = cls(1, folder=folder)
            out._generation = int(record["generation"])
            out._arrays = {k: _open_column(out._file(k, out._generation)) for k in COLUMNS}
            out._n, out.seconds = int(record["rows"]), float(record["seconds"])
            if any(len(a) < out._n for a in out._arrays.values()):
                raise AggregateFolderError(f"{folder}: a column holds fewer rows than the record's {out._n}")
            return out, dict(record["state"])
        except AggregateFolderError:
            raise
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise AggregateFolderError(f"{folder}: cannot read the aggregate back ({type(err).__name__}: {err})") from err
