"""Process lifetime helpers: child processes that never outlive the process that started them,
and the local pools' workers (:func:`pool_worker`, :func:`kill_pool`).

A grid worker or an OAIL emulator blocks on a queue or a pipe waiting for work. When its
parent is killed (SIGKILL from the OOM killer, SIGTERM from ``kill``, ``timeout`` or SLURM)
nothing closes that pipe for it, so it would wait for ever holding hundreds of MB. Two
mechanisms make it die instead:

* on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` asks the kernel to kill the child when its
  parent dies. The kernel ties this to the *thread* that forked the child, not the whole
  process: a pool forks its workers from a helper thread, which may end while the parent
  lives on (a false kill is then avoided only because such threads usually last), and the
  signal is lost if the parent died before ``prctl`` ran;
* a daemon watchdog thread polls ``os.getppid()`` and leaves with ``os._exit`` as soon as the
  parent changed (the child was re-parented to init or a subreaper). It works on every POSIX
  system and covers the cases above, at the cost of up to one poll period of delay.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
POLL_S = 0.5
ORPHAN_EXIT_CODE = 70  # an unusual code so that a log shows why the process left


def _set_pdeathsig() -> bool:
    """Ask the Linux kernel for SIGKILL when the parent (thread) dies; False if unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int, poll_s: float) -> None:
    while True:
        time.sleep(poll_s)
        if os.getppid() != parent:
            # os._exit, not sys.exit: the main thread may be blocked in a read that no
            # exception can interrupt, and no cleanup handler should wait on the dead parent.
            os._exit(ORPHAN_EXIT_CODE)


_started = False
_lock = threading.Lock()


def die_with_parent(parent: int | None = None, poll_s: float = POLL_S) -> None:
    """Make this process exit when its parent dies; call it first in a child process.

    Usable directly as (or from) a ``ProcessPoolExecutor`` ``initializer``. Sets
    ``PR_SET_PDEATHSIG`` to SIGKILL on Linux and starts a daemon thread that polls
    ``os.getppid()`` every ``poll_s`` seconds and calls ``os._exit`` when the parent changed,
    the portable safety net for the cases the kernel signal misses. ``parent`` is the pid the
    parent had when it started the child (``os.getpid()`` there, e.g. through
    ``functools.partial``); with it, a parent that died before this call is noticed at once.
    Idempotent.
    """
    global _started
    current = os.getppid()
    _set_pdeathsig()
    # Checked after prctl: a parent that dies from now on gets the kernel signal, one that
    # died before is seen here (the signal is not sent retroactively).
    if parent is not None and os.getppid() != parent:
        os._exit(ORPHAN_EXIT_CODE)
    parent = current if parent is None else parent
    with _lock:
        if _started:
            return
        _started = True
    threading.Thread(target=_watch, args=(parent, poll_s), name="ilets-die-with-parent",
                     daemon=True).start()


def one_thread() -> None:
    """One torch (and OpenMP) thread in this process: processes run side by side on separate
    cores."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


def pool_worker() -> None:
    """Initializer of a local pool worker: die with the parent, leave Ctrl-C to it, one thread."""
    die_with_parent()
    # A terminal's Ctrl-C reaches the whole process group; the parent alone reacts (it
    # cancels the queue and kills the workers), so a worker does not half-stop its work.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the worker started with SIGINT blocked (_QuietSpawn): a Ctrl-C during its start-up is
    # pending, and discarded now that it is ignored
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    one_thread()


class _QuietSpawnProcess(SpawnProcess):
    """A spawned pool worker that starts with SIGINT blocked (the mask is inherited through
    fork and exec) until :func:`pool_worker` ignores it. Why: a spawned worker imports its
    modules and reads its job for up to seconds before its initializer runs, and a Ctrl-C in
    that time would print the worker's cut traceback under the parent's one-line message."""

    def start(self) -> None:
        if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover -- not POSIX
            return super().start()
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return super().start()
        finally:  # a Ctrl-C meanwhile reaches this process now, as KeyboardInterrupt
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class _QuietSpawnContext(SpawnContext):
    """The spawn context, its processes :class:`_QuietSpawnProcess`."""

    Process = _QuietSpawnProcess


@contextlib.contextmanager
def local_pool(workers: int, initializer: Callable[..., None] = pool_worker,
               initargs: tuple[Any, ...] = ()) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` spawned processes (set up by ``initializer``), shut down when the
    block ends, and killed at once (:func:`kill_pool`) when it ends by an exception: an
    interrupt, an error, or a generator around it closed. Why not ``ProcessPoolExecutor``'s own
    ``with``: its exit calls ``shutdown(wait=True)``, which waits for every queued task and so
    undoes the cancellation an interrupt asks for."""
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=_QuietSpawnContext(), initializer=initializer,
                               initargs=initargs)
    try:
        yield pool
    except BaseException:
        kill_pool(pool)
        raise
    pool.shutdown(wait=True)


def kill_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the pool's queue and kill its workers now (an interrupt: nothing is waited for)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        try:
            p.kill()  # SIGKILL: a worker leaves only what it had not yet made whole
        except (OSError, ValueError):
            pass
    for p in processes:
        try:
            p.join(timeout=5)
        except (OSError, ValueError, AssertionError):
            pass
