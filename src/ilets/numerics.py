"""Portable numerics: the same floating-point results on x86-64 CPUs with AVX2 and FMA of one vendor.

Why: numpy, OpenBLAS, PyTorch (ATen), MKL and oneDNN each pick their SIMD kernels at run
time from the CPU. On a CPU with AVX-512 they choose other kernels than on an AVX2-only
CPU, which sum in another order, so a learner's first update rounds differently and its
whole trajectory drifts. The paper grid met this: DRL, DRL+ and ILETS cells computed on an
AVX2 host did not reproduce on an AVX-512 host of the same model name (``"AMD EPYC"``);
with the kernels capped at AVX2 by :data:`PORTABLE_ENV` they reproduced bit for bit. The cap
does not reach across vendors: per-server grid-command cells computed on an Intel Xeon did not
reproduce on an AMD EPYC, where cells computed on another AMD family did (checked 2026-12-06;
the libraries may still choose their kernels or blocking by vendor). A verification therefore
runs on the vendor that computed the cell (:func:`ilets.study.verify.kernels_hint` says so).

``import ilets`` calls :func:`pin` before anything imports numpy, so the ``ilets`` command,
its grid workers (they inherit the environment) and scripts that import ``ilets`` first run
in portable mode. A process that loaded numpy or torch before ``ilets`` keeps the kernels it
chose: :func:`record` says what is in effect, and every cell records it. To pin a notebook
kernel or any other process from outside, run it as ``env <words> command`` with the
``KEY=value`` words :func:`env_words` returns, as the Makefile does for the book and tests.

``ILETS_NUMERICS=native`` opts out (the host's fastest kernels; results then reproduce only on
the same kind of CPU). Variables already set are never overridden. On a CPU without AVX2 and
FMA, or not x86-64, nothing is pinned (the mode is ``native``).
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

#: The environment switch: ``portable`` (default) or ``native``.
SWITCH = "ILETS_NUMERICS"
PORTABLE, NATIVE = "portable", "native"

#: What portable mode sets (unless already set) before the numerical libraries load: numpy's
#: dispatch without its AVX-512 targets, OpenBLAS's Haswell (AVX2) kernels, ATen's AVX2
#: kernels, MKL and oneDNN capped at AVX2.
PORTABLE_ENV: MappingProxyType[str, str] = MappingProxyType({
    "NPY_DISABLE_CPU_FEATURES": "X86_V4,AVX512_ICL,AVX512_SPR",
    "OPENBLAS_CORETYPE": "Haswell",
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
})


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def can_pin() -> bool:
    """Whether this CPU runs the portable kernels: x86-64 with AVX2 and FMA."""
    return platform.machine().lower() in ("x86_64", "amd64") and {"avx2", "fma"} <= _cpu_flags()


def check_switch() -> None:
    """Raise ``ValueError`` naming the variable when :data:`SWITCH` holds anything but
    ``portable`` or ``native`` (the ``ilets`` command checks it before it runs anything;
    ``import ilets`` itself never fails on it and reads any other value as portable)."""
    value = os.environ.get(SWITCH, PORTABLE)
    if value not in (PORTABLE, NATIVE):
        raise ValueError(f"environment variable {SWITCH}: expected {PORTABLE!r} or {NATIVE!r}, got {value!r}")


def requested() -> str:
    """The mode asked for: :data:`NATIVE` when ``ILETS_NUMERICS=native`` or the CPU cannot
    run the portable kernels, else :data:`PORTABLE`."""
    return NATIVE if os.environ.get(SWITCH) == NATIVE or not can_pin() else PORTABLE


def pin() -> str:
    """Set :data:`PORTABLE_ENV` in this process's environment where not already set, unless
    the mode is native; returns the mode (:func:`requested`). It acts on libraries loaded
    afterwards (and on child processes), not on ones already loaded."""
    mode = requested()
    if mode == PORTABLE:
        for key, value in PORTABLE_ENV.items():
            os.environ.setdefault(key, value)
    return mode


def record() -> dict[str, Any]:
    """What is in effect in this process: the mode asked for, whether numpy dispatches
    AVX-512 kernels, ATen's CPU capability (None before torch is imported), the pinning
    variables as set, and ``effective``: :data:`PORTABLE` only when the mode is portable and
    neither numpy nor torch runs AVX-512 kernels."""
    numpy_avx512 = None
    if "numpy" in sys.modules:
        from numpy._core._multiarray_umath import __cpu_features__

        numpy_avx512 = bool(__cpu_features__.get("X86_V4") or __cpu_features__.get("AVX512_ICL"))
    torch_capability = None
    if "torch" in sys.modules:
        torch_capability = str(sys.modules["torch"].backends.cpu.get_cpu_capability())
    mode = requested()
    effective = PORTABLE if (mode == PORTABLE and not numpy_avx512
                             and not (torch_capability or "").upper().startswith("AVX512")) else NATIVE
    return {"requested": mode, "effective": effective, "numpy_avx512": numpy_avx512,
            "torch_cpu_capability": torch_capability, "env": {k: os.environ.get(k) for k in PORTABLE_ENV}}


#: The mode of a result computed before results recorded their numerics.
NOT_RECORDED = "not recorded"


def recorded_mode(system: dict[str, Any]) -> str:
    """The effective mode a result's system record (a cell's ``system.json``) holds, or
    :data:`NOT_RECORDED` when it predates :func:`record`."""
    return (system.get("numerics") or {}).get("effective") or NOT_RECORDED


def env_words() -> str:
    """The portable variables as ``KEY=value`` words for ``env`` (empty in native mode)."""
    if requested() != PORTABLE:
        return ""
    return " ".join(f"{key}={value}" for key, value in PORTABLE_ENV.items())

