"""ilets.numerics: portable floating-point kernels, set before numpy loads and recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ilets import numerics as N

PINNED = tuple(N.PORTABLE_ENV)


def _python(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter without any pinning variable set; its last stdout line as JSON."""
    clean = {k: v for k, v in os.environ.items() if k not in PINNED and k != N.SWITCH}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


RECORD = "import json, numpy, torch; from ilets.numerics import record; print(json.dumps(record()))"


@pytest.mark.skipif(not N.can_pin(), reason="portable kernels need x86-64 with AVX2 and FMA")
def test_import_ilets_pins_the_kernels_before_numpy_loads():
    rec = _python("import ilets; " + RECORD)
    assert rec["requested"] == rec["effective"] == N.PORTABLE
    assert rec["env"] == dict(N.PORTABLE_ENV)
    assert rec["numpy_avx512"] is False and rec["torch_cpu_capability"].upper() in ("AVX2", "DEFAULT")


@pytest.mark.slow  # two fresh interpreters loading torch (test-fast keeps the first test above)
@pytest.mark.skipif(not N.can_pin(), reason="portable kernels need x86-64 with AVX2 and FMA")
def test_a_variable_already_set_is_kept_and_native_pins_nothing():
    rec = _python("import ilets; " + RECORD, ATEN_CPU_CAPABILITY="default")
    assert rec["env"]["ATEN_CPU_CAPABILITY"] == "default" and rec["env"]["OPENBLAS_CORETYPE"] == "Haswell"
    native = _python("import ilets; " + RECORD, ILETS_NUMERICS="native")
    assert native["requested"] == native["effective"] == N.NATIVE
    assert all(v is None for v in native["env"].values())


@pytest.mark.slow  # a fresh interpreter loading torch
def test_numpy_loaded_before_ilets_is_recorded_as_it_is():
    rec = _python("import numpy; import ilets; " + RECORD)
    # numpy chose its kernels before the pin: the record says what numpy really runs
    assert rec["effective"] == (N.NATIVE if rec["numpy_avx512"] else rec["requested"])


def test_env_words_and_the_switch():
    words = N.env_words()
    if N.requested() == N.PORTABLE:
        assert words.split() == [f"{k}={v}" for k, v in N.PORTABLE_ENV.items()] and " " not in "".join(N.PORTABLE_ENV.values())
    os.environ[N.SWITCH] = "fast"
    try:
        with pytest.raises(ValueError, match="ILETS_NUMERICS: .*'portable'.*'native', got 'fast'"):
            N.check_switch()
    finally:
        del os.environ[N.SWITCH]


def test_the_command_refuses_a_bad_switch_in_one_line():
    clean = {k: v for k, v in os.environ.items() if k != N.SWITCH}
    done = subprocess.run([sys.executable, "-m", "ilets.study.cli", "verify", "--results", "nowhere"],
                          env={**clean, N.SWITCH: "fast"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    err = done.stderr.strip()
    assert "\n" not in err and err.startswith("ilets: ") and "ILETS_NUMERICS: " in err
    assert "'portable' or 'native', got 'fast'" in err


def test_every_benchmark_imports_ilets_before_anything_that_loads_numpy():
    # a benchmark started as `python benchmarks/x.py` must time the kernels the cells use
    import ast

    root = Path(__file__).resolve().parents[1] / "benchmarks"
    scripts = sorted(root.glob("bench_*.py"))
    assert scripts
    for path in scripts:
        imports = [node for node in ast.parse(path.read_text()).body if isinstance(node, (ast.Import, ast.ImportFrom))
                   and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
        first = imports[0]
        assert isinstance(first, ast.Import) and first.names[0].name == "ilets", \
            f"{path.name}: the first import must be `import ilets` (portable kernels before numpy loads)"
