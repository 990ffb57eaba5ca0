"""A resumable, verifying downloader for the Google 2011 ``task_events`` shards.

Every file is written to ``NAME.part`` and renamed only when whole, so a file under its
final name is always complete; an interrupted download resumes with an HTTP Range request.
A shard whose sha256 is known (:data:`KNOWN_SHA256`) is checked against it, any other is
read to the end of its gzip stream (CRC32 and length trailer) before it is renamed.

Public functions (the ``ilets trace download`` CLI wraps :func:`download_shards`):

``download_shards(indices, dest, base_url=BASE_URL, checksums=None, *, total=500,
attempts=5, timeout_s=60.0, backoff_s=1.0) -> list[Path]``
    Download shards by index into ``dest``; resumable, sha256-verified when known.
``download_window_shards(t0, t1, dest, base_url=BASE_URL, checksums=None, *, total=500,
attempts=5, timeout_s=60.0, backoff_s=1.0) -> list[Path]``
    Download just the shards a window needs (plus one "fence" shard, see its docstring),
    found by probing the head of remote shards; no full scan from shard 0.
``probe_first_timestamp(url) -> int``
    The first row's time (microseconds) of a remote shard, from its first 64 KiB.

Problems raise :class:`ilets.workloads.trace.TraceError` naming the URL or file.
"""

from __future__ import annotations

import bisect
import csv
import gzip
import hashlib
import http.client
import io
import os
import re
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterable
from pathlib import Path

from ilets.workloads.trace import SHARD_COUNT, TraceError, first_timestamp, row_time, shard_name, window_us

BASE_URL = "https://commondatastorage.googleapis.com/clusterdata-2011-2/task_events/"
#: sha256 of shards whose digest is known (part-00000, 4,139,742 bytes, as the public bucket serves it;
#: the trace is the one the workload chapter, notebooks/03_workload.py, describes).
KNOWN_SHA256: dict[str, str] = {
    "part-00000-of-00500.csv.gz": "eae977d521bc6ed5d8deef56f1e06009d41844d4eb9a7e308e610d68e1b10f18",
}
_US = 1_000_000
_CHUNK = 1 << 16


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _gzip_problem(path: Path) -> str | None:
    """Why ``path`` is not a whole gzip file (truncated, corrupt, not gzip), or None."""
    try:
        with gzip.open(path, "rb") as f:
            while f.read(1 << 20):
                pass
    except (OSError, EOFError, zlib.error) as err:  # BadGzipFile is an OSError
        return f"{type(err).__name__}: {err}"
    return None


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, total size) from ``bytes a-b/N`` or ``bytes */N``; None where absent."""
    m = re.match(r"bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)", value or "")
    if not m:
        return None, None
    start = int(m.group(1)) if m.group(1) else None
    total = int(m.group(2)) if m.group(2) != "*" else None
    return start, total


def _fetch_into(url: str, part: Path, timeout_s: float) -> bool:
    """One HTTP attempt appending to ``part``; True when ``part`` holds the whole file.

    Resumes with a Range request when ``part`` has bytes. A 200 answer (server ignored the
    range) restarts the file; a 416 (range past the end) means ``part`` is already whole
    or is longer than the file, in which case it is discarded.
    """
    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout_s)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:
            _, total = _content_range(err.headers.get("Content-Range"))
            if total == have:
                return True
            part.unlink()
            return False
        if 400 <= err.code < 500:  # not found / forbidden: retrying will not help
            raise TraceError(f"{url}: HTTP {err.code} {err.reason}: expected the shard file") from err
        raise
    with resp:
        if resp.status == 206:
            start, total = _content_range(resp.headers.get("Content-Range"))
            if start != have:  # not the range we asked for: start again from scratch
                part.unlink()
                return False
            mode = "ab"
        else:
            length = resp.headers.get("Content-Length")
            total, mode = (int(length) if length else None), "wb"
        with open(part, mode) as f:
            for block in iter(lambda: resp.read(_CHUNK), b""):
                f.write(block)
    size = part.stat().st_size
    if total is not None and size > total:
        part.unlink()
        return False
    # Without a known size, a cleanly ended body is the whole file (http.client raises on a
    # cut chunked body); with one, a short body (connection dropped) is resumed next time.
    return total is None or size == total


def _download_one(url: str, final: Path, sha256: str | None, attempts: int, timeout_s: float,
                  backoff_s: float) -> Path:
    """Download ``url`` to ``final`` via ``final.part`` (resumable), verify, rename."""
    if final.exists():
        if sha256 is None or _sha256(final) == sha256:
            return final  # complete: only whole downloads are ever renamed to the final name
        final.unlink()  # a bad copy with a known digest: fetch it again
    part = final.with_name(final.name + ".part")
    last_err: Exception | None = None
    complete = False
    for attempt in range(attempts):
        if attempt:
            time.sleep(backoff_s * attempt)
        try:
            complete = _fetch_into(url, part, timeout_s)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            last_err = err  # network trouble (or 5xx): keep the partial file and resume
            continue
        if complete:
            break
    if not complete:
        have = part.stat().st_size if part.exists() else 0
        raise TraceError(f"{url}: download incomplete after {attempts} attempt(s): {have} bytes in {part}; "
                         f"run again to resume (last error: {last_err})")
    if sha256 is not None:
        got = _sha256(part)
        if got != sha256:
            part.unlink()
            raise TraceError(f"{final}: sha256 mismatch: expected {sha256}, got {got}; the download "
                             f"was deleted")
    else:
        # No known digest (every shard but part-00000): the gzip stream is the only check
        # there is, so read it to the end (its CRC32 and length trailer) before renaming.
        problem = _gzip_problem(part)
        if problem is not None:
            part.unlink()
            raise TraceError(f"{final}: the download is not a complete gzip file ({problem}); it was "
                             f"deleted, run again to fetch it anew")
    os.replace(part, final)  # atomic: a file under the final name is always whole
    return final


def download_shards(indices: Iterable[int], dest: str | Path, base_url: str = BASE_URL,
                    checksums: dict[str, str] | None = None, *, total: int = SHARD_COUNT,
                    attempts: int = 5, timeout_s: float = 60.0, backoff_s: float = 1.0) -> list[Path]:
    """Download ``task_events`` shards ``indices`` into ``dest``; return their paths.

    Each file is written to ``NAME.part`` and renamed when complete; an interrupted
    download is resumed (HTTP Range) on the next attempt or the next call. Files already in
    ``dest`` are skipped (after re-checking their sha256 when known). ``checksums`` maps
    file names to sha256; ``None`` uses :data:`KNOWN_SHA256`. A mismatch deletes the file
    and raises :class:`TraceError`.
    """
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise TraceError(f"{dest}: expected a folder to download shards into, but it is a file")
    dest.mkdir(parents=True, exist_ok=True)
    known = KNOWN_SHA256 if checksums is None else checksums
    paths = []
    for i in indices:
        if not 0 <= i < total:
            raise TraceError(f"shard index {i}: expected 0 <= index < {total}")
        name = shard_name(i, total)
        paths.append(_download_one(base_url.rstrip("/") + "/" + name, dest / name, known.get(name),
                                   attempts, timeout_s, backoff_s))
    return paths


def probe_first_timestamp(url: str, timeout_s: float = 60.0, probe_bytes: int = _CHUNK) -> int:
    """First row's time (microseconds) of a remote shard, from its first ``probe_bytes``.

    A Range request fetches the head of the gzip file and zlib decompresses it as far as
    it goes (a gzip prefix decodes without error); a server that ignores Range sends the
    whole file, of which we read only the head.
    """
    req = urllib.request.Request(url, headers={"Range": f"bytes=0-{probe_bytes - 1}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            head = resp.read(probe_bytes)
    except urllib.error.HTTPError as err:
        raise TraceError(f"{url}: HTTP {err.code} {err.reason}: expected the shard file") from err
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        raise TraceError(f"{url}: could not read the shard's head: {err}") from err
    try:
        text = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(head)
    except zlib.error as err:
        raise TraceError(f"{url}: line 1: expected a gzip file: {err}") from err
    if b"\n" not in text and len(head) >= probe_bytes:
        raise TraceError(f"{url}: line 1: expected a first row within {probe_bytes} bytes")
    first = text.split(b"\n", 1)[0].decode("ascii", "replace")
    if not first:
        raise TraceError(f"{url}: line 1: expected a first row, the shard is empty")
    row = next(csv.reader(io.StringIO(first)))
    return row_time(row, url, 1)


def download_window_shards(t0: float, t1: float, dest: str | Path, base_url: str = BASE_URL,
                           checksums: dict[str, str] | None = None, *, total: int = SHARD_COUNT,
                           attempts: int = 5, timeout_s: float = 60.0, backoff_s: float = 1.0) -> list[Path]:
    """Download the shards that overlap ``[t0, t1)`` (seconds of trace time) into ``dest``.

    Which shards these are depends on data, so we look: a shard's first timestamp comes
    from probing its first 64 KiB (:func:`probe_first_timestamp`; a shard already in
    ``dest`` is read locally instead), and since shards are time-ordered a binary search
    over the ``total`` first timestamps finds them in about 2*log2(500) = 18 probes -- not
    a download of every shard from part-00000 on. Downloaded: shard a-1 .. e-1, where a is
    the first shard starting at or after t0 and e the first starting at or after t1, plus
    shard e itself as a "fence": it holds no window rows, but its presence proves to
    :func:`load_task_events` that the window ends inside the shards present (~4 MB extra).
    """
    t0_us, t1_us = window_us(t0, t1, base_url)
    dest = Path(dest)
    cache: dict[int, int] = {}

    def first(k: int) -> int:
        if k not in cache:
            local = dest / shard_name(k, total)
            url = base_url.rstrip("/") + "/" + local.name
            cache[k] = first_timestamp(local) if local.is_file() else probe_first_timestamp(url, timeout_s)
        return cache[k]

    keys = range(total)
    a = bisect.bisect_left(keys, t0_us, key=first)
    e = bisect.bisect_left(keys, t1_us, lo=a, key=first)
    if e == 0:
        raise TraceError(f"{base_url}: window [{t0}, {t1}) s ends before the first shard starts "
                         f"({first(0) / _US} s)")
    wanted = list(range(max(a - 1, 0), min(e + 1, total)))
    return download_shards(wanted, dest, base_url, checksums, total=total, attempts=attempts,
                           timeout_s=timeout_s, backoff_s=backoff_s)
