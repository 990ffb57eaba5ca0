"""The test loop's own promise: under ``pytest -n`` the tests of one file share one worker.

The book's tests (tests/test_book.py) share a session fixture that runs a grid and builds the
whole book; on two workers it would be built twice, minutes each. pyproject.toml's addopts
distribute with ``--dist loadfile`` for that. This runs a two-file suite in a child pytest with
two workers and checks that both tests of the file with the shared fixture ran on one worker and
built it once (it fails under ``--dist loadgroup`` with pytest 9, which no longer groups).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# each event is a line appended to a log (a worker's printed output does not reach the parent)
SHARED = '''
import os, pytest
def note(what):
    with open(os.environ["LOOP_LOG"], "a") as log:
        log.write(f"{what} on {os.environ['PYTEST_XDIST_WORKER']}\\n")
@pytest.fixture(scope="session")
def built():
    note("BUILT")
def test_one(built): note("RAN")
def test_two(built): note("RAN")
'''
OTHER = "import time\n" + "".join(f"def test_{i}(): time.sleep(0.2)\n" for i in range(6))


@pytest.mark.slow
def test_a_files_tests_share_one_worker_and_one_session_fixture(tmp_path):
    (tmp_path / "test_shared.py").write_text(SHARED)
    (tmp_path / "test_other.py").write_text(OTHER)
    # the project's own addopts (pyproject.toml), read by the child through -c
    run = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
                          "-n", "2", "-p", "no:cacheprovider", "-q", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "LOOP_LOG": str(tmp_path / "loop.log")})
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    log = (tmp_path / "loop.log").read_text()
    built = re.findall(r"BUILT on (gw\d+)", log)
    ran = set(re.findall(r"RAN on (gw\d+)", log))
    assert len(built) == 1, f"the session fixture was built {len(built)} times: {built}"
    assert ran == set(built)
