"""Tests of ilets.workloads.trace on small synthetic shards in the exact task_events format.

Shards are written here (gzip, 13 columns, empty fields for missing values); the downloader
is tested against a local HTTP server on 127.0.0.1 only.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from ilets.config import WorkloadConfig
from ilets.workloads.download import KNOWN_SHA256, download_shards, download_window_shards, probe_first_timestamp
from ilets.workloads.trace import TraceError, find_window, first_timestamp, list_shards, read_submits, shard_name, submit_counts
from ilets.workloads.workload import google_workload, load_task_events, load_workload

US = 1_000_000


# --- writing shards ---------------------------------------------------------------------

def row(t_s: float, event: int = 0, cpu: str = "0.0625", job: int = 1, task: int = 0) -> str:
    """One task_events line: time, missing, job, task, machine, event, user, class, prio,
    cpu, mem, disk, different-machine (machine and missing-info empty, as in SUBMITs)."""
    return f"{round(t_s * US)},,{job},{task},,{event},user{job},0,2,{cpu},0.03,0.0001,0"


def write_shard(folder: Path, index: int, lines: list[str], total: int = 500, cut: int = 0) -> Path:
    """Write a gzip shard; ``cut`` drops that many bytes from the end (a truncated download)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    path = folder / shard_name(index, total)
    path.write_bytes(data[:len(data) - cut] if cut else data)
    return path


def busy_lines(t_from: int, t_to: int) -> list[str]:
    """Per second: a SUBMIT with CPU, a SCHEDULE; every 10 s also a SUBMIT without CPU."""
    out = []
    for s in range(t_from, t_to):
        out.append(row(s, 0, f"{(s % 16 + 1) / 32}", job=s))
        out.append(row(s, 1, "0.5", job=s))
        if s % 10 == 0:
            out.append(row(s, 0, "", job=s, task=1))
    return out


def make_trace(folder: Path, n: int = 6, total: int = 500, poison: tuple[int, ...] = ()) -> Path:
    """Shards 0..n-1, shard i covering seconds [100 i, 100 i + 100); poisoned ones are cut."""
    for i in range(n):
        write_shard(folder, i, busy_lines(100 * i, 100 * i + 100), total, cut=40 if i in poison else 0)
    return folder


CFG = WorkloadConfig(kind="google")


# --- loading ----------------------------------------------------------------------------

def test_load_window_counts_boundaries_and_stats(tmp_path):
    trace = make_trace(tmp_path)
    table, stats = load_task_events(trace, 150, 250, CFG, seed=1)
    assert len(table) == 100 == stats.kept  # one SUBMIT with CPU per second, [150, 250)
    assert stats.skipped_no_cpu == 10  # 150, 160, ..., 240
    assert stats.shards_read == (shard_name(1), shard_name(2))
    assert table.arrival[0] == 0.0 and table.arrival[-1] == 99.0  # t0 included, t1 excluded
    assert np.all(np.diff(table.arrival) >= 0)
    np.testing.assert_allclose(table.cpu, [(s % 16 + 1) / 32 for s in range(150, 250)])
    assert table.meta["events"] == {} and table.meta["trace"]["kept"] == 100
    # rows_read: all rows of shard 1 up to shard 2's first row at 250 s (which ends the scan)
    assert stats.rows_read == len(busy_lines(100, 200)) + len(busy_lines(200, 250)) + 1


def test_the_reader_returns_arrays_and_the_table_adds_lengths_and_deadlines(tmp_path):
    """ilets.workloads.trace reads (arrival, cpu) only; ilets.workloads.workload draws what the trace lacks."""
    trace = make_trace(tmp_path)
    found = read_submits(trace, 150, 250)
    assert not hasattr(found, "length") and not hasattr(found, "deadline")
    table, stats = load_task_events(trace, 150, 250, CFG, seed=1)
    np.testing.assert_array_equal(found.arrival, table.arrival)
    np.testing.assert_array_equal(found.cpu, table.cpu)
    assert found.stats == stats and found.folder == trace


def test_arrivals_keep_microseconds_and_zero_cpu_is_kept(tmp_path):
    write_shard(tmp_path, 0, [row(0.0, 1), row(10.000001), row(10.5, cpu="0"), row(11.25), row(99.0)])
    table, stats = load_task_events(tmp_path, 10, 20, CFG)
    np.testing.assert_array_equal(table.arrival, [0.000001, 0.5, 1.25])
    assert stats.zero_cpu == 1 and table.cpu[1] == 0.0


def test_only_overlapping_shards_are_streamed(tmp_path):
    # Shards 0, 4 and 5 are truncated after their first rows: loading a window in shards
    # 1-2 must still work, which shows they were never streamed past their first line.
    trace = make_trace(tmp_path, poison=(0, 4, 5))
    table, stats = load_task_events(trace, 150, 250, CFG)
    assert len(table) == 100 and shard_name(4) not in stats.shards_read
    with pytest.raises(TraceError, match=re.escape(shard_name(4)) + r": line \d+: .*truncated"):
        load_task_events(trace, 350, 500, CFG)  # reads shard 4 to its (cut) end


def test_task_events_subfolder_and_list_shards(tmp_path):
    make_trace(tmp_path / "task_events", n=3)
    assert [p.name for p in list_shards(tmp_path)] == [shard_name(i) for i in range(3)]
    (tmp_path / "task_events" / (shard_name(3) + ".part")).write_bytes(b"partial")
    assert len(list_shards(tmp_path)) == 3
    assert len(load_task_events(tmp_path, 50, 150, CFG)[0]) == 100
    assert first_timestamp(list_shards(tmp_path)[1]) == 100 * US


def test_lengths_and_deadlines_seeded(tmp_path):
    trace = make_trace(tmp_path, n=2)
    a, _ = load_task_events(trace, 0, 150, CFG, seed=3)
    b, _ = load_task_events(trace, 0, 150, CFG, seed=3)
    c, _ = load_task_events(trace, 0, 150, CFG, seed=4)
    np.testing.assert_array_equal(a.length, b.length)
    assert not np.array_equal(a.length, c.length)
    assert a.length.min() >= CFG.length_mi[0] and a.length.max() <= CFG.length_mi[1]
    assert a.deadline.min() >= CFG.deadline_s[0] and a.deadline.max() <= CFG.deadline_s[1]


def test_last_shard_of_the_split_needs_no_successor(tmp_path):
    make_trace(tmp_path, n=3, total=3)
    table, _ = load_task_events(tmp_path, 250, 400, CFG)  # runs past the trace end
    assert len(table) == 50


def day10_trace(folder: Path) -> Path:
    # part-00000 starts with rows at time 0 (before the trace start), as the real one does.
    write_shard(folder, 0, [row(0, 0), row(0, 1), row(600, 0)] + busy_lines(863_000, 863_100))
    write_shard(folder, 1, busy_lines(863_100, 867_500))
    write_shard(folder, 2, busy_lines(867_500, 867_600))
    return folder


def test_google_workload_default_window_is_day10_start(tmp_path):
    cfg = WorkloadConfig(kind="google", trace_dir=str(day10_trace(tmp_path)))
    wl = google_workload(cfg, seed=0)
    assert wl.split_time == 1500.0
    assert len(wl.offline) == 1500 and len(wl.online) == 1500
    assert wl.offline.arrival.max() < 1500 <= wl.online.arrival.min()
    assert wl.online.arrival.max() == 2999.0 and wl.events == {}


def test_google_workload_window_start_scale_and_dispatch(tmp_path):
    cfg = WorkloadConfig(kind="google", trace_dir=str(day10_trace(tmp_path)), window_start_s=865_000,
                         window_s=2000, scale=0.5)
    wl = load_workload(cfg, seed=0)
    assert wl.split_time == 500.0 and len(wl.offline) == 500 and len(wl.online) == 500


# --- bad input: every error names the file (or folder) and, where there is one, the line ---

def test_missing_folder(tmp_path):
    with pytest.raises(TraceError, match=re.escape(str(tmp_path / "nope")) + ": trace folder not found"):
        load_task_events(tmp_path / "nope", 0, 10, CFG)


def test_folder_without_shards_and_unset_dir(tmp_path):
    (tmp_path / "notes.csv.gz").write_bytes(b"")
    with pytest.raises(TraceError, match=re.escape(str(tmp_path)) + r": no task_events shards .*part-00000"):
        load_task_events(tmp_path, 0, 10, CFG)
    with pytest.raises(TraceError, match="trace folder not set"):
        google_workload(WorkloadConfig(kind="google"), seed=0)


def test_truncated_gzip(tmp_path):
    path = write_shard(tmp_path, 0, busy_lines(0, 200), cut=60)
    with pytest.raises(TraceError, match=re.escape(str(path)) + r": line \d+: .*complete gzip.*truncated.*EOFError"):
        load_task_events(tmp_path, 50, 500, CFG)


def test_not_gzip(tmp_path):
    path = tmp_path / shard_name(0)
    path.write_text(row(0) + "\n")
    with pytest.raises(TraceError, match=re.escape(str(path)) + r": line 1: .*complete gzip.*BadGzipFile"):
        load_task_events(tmp_path, 0, 10, CFG)


def test_wrong_column_count(tmp_path):
    lines = busy_lines(0, 50)
    lines[2] = lines[2] + ",extra"
    path = write_shard(tmp_path, 0, lines)
    with pytest.raises(TraceError, match=re.escape(str(path)) + r": line 3: .*13 comma-separated.*got 14"):
        load_task_events(tmp_path, 0, 10, CFG)


@pytest.mark.parametrize("bad, expected", [
    (",,1,0,,0,u,0,2,0.5,0.1,0,0", r"expected an integer time in microseconds \(column 1\), got ''"),
    ("12.5e6,,1,0,,0,u,0,2,0.5,0.1,0,0", r"expected an integer time in microseconds \(column 1\), got '12.5e6'"),
    ("-5,,1,0,,0,u,0,2,0.5,0.1,0,0", r"expected a time >= 0 microseconds \(column 1\), got -5"),
    ("3000000,,1,0,,SUBMIT,u,0,2,0.5,0.1,0,0", r"expected an integer event type 0-8 \(column 6\), got 'SUBMIT'"),
    ("3000000,,1,0,,9,u,0,2,0.5,0.1,0,0", r"expected an event type 0-8 \(column 6\), got 9"),
    ("3000000,,1,0,,0,u,0,2,half,0.1,0,0", r"expected a number as CPU request \(column 10\), got 'half'"),
    ("3000000,,1,0,,0,u,0,2,-0.1,0.1,0,0", r"expected a CPU request in \[0, 1\] \(column 10\), got '-0.1'"),
    ("3000000,,1,0,,0,u,0,2,1.5,0.1,0,0", r"expected a CPU request in \[0, 1\] \(column 10\), got '1.5'"),
    ("3000000,,1,0,,0,u,0,2,nan,0.1,0,0", r"expected a CPU request in \[0, 1\] \(column 10\), got 'nan'"),
])
def test_bad_fields(tmp_path, bad, expected):
    lines = [row(1), row(2), bad, row(3), row(20)]  # the bad row is line 3
    path = write_shard(tmp_path, 0, lines)
    with pytest.raises(TraceError, match=re.escape(str(path)) + ": line 3: " + expected):
        load_task_events(tmp_path, 0, 10, CFG)


def test_timestamps_decreasing_within_a_shard(tmp_path):
    path = write_shard(tmp_path, 0, [row(1), row(5), row(4), row(20)])
    with pytest.raises(TraceError, match=re.escape(str(path)) + r": line 3: .*>= 5000000 .*got 4000000"):
        load_task_events(tmp_path, 0, 10, CFG)


def test_timestamps_decreasing_across_shards(tmp_path):
    write_shard(tmp_path, 0, busy_lines(0, 100))
    path = write_shard(tmp_path, 1, busy_lines(50, 200))
    with pytest.raises(TraceError, match=re.escape(str(path)) + r": line 1: .*>= 99000000 us.*" + re.escape(shard_name(0))):
        load_task_events(tmp_path, 20, 150, CFG)


def test_empty_window(tmp_path):
    write_shard(tmp_path, 0, [row(1), row(5, 1), row(6, 0, cpu=""), row(20)])
    with pytest.raises(TraceError, match=re.escape(str(tmp_path)) + r": window \[3, 10\) s: .*SUBMIT.*CPU.*none.*"
                                          + re.escape(shard_name(0)) + r".*without CPU: 1\)"):
        load_task_events(tmp_path, 3, 10, CFG)


@pytest.mark.parametrize("t0, t1, expected", [
    (10, 10, r"window \[10, 10\): expected end > start"),
    (20, 10, r"window \[20, 10\): expected end > start"),
    (-1, 10, r"window \[-1, 10\): expected a start >= 0 s of trace time"),
])
def test_bad_window_bounds(tmp_path, t0, t1, expected):
    make_trace(tmp_path, n=1)
    with pytest.raises(TraceError, match=re.escape(str(tmp_path)) + ": " + expected):
        load_task_events(tmp_path, t0, t1, CFG)


def test_shard_missing_inside_the_window(tmp_path):
    make_trace(tmp_path, n=4)
    (tmp_path / shard_name(2)).unlink()
    with pytest.raises(TraceError, match=re.escape(str(tmp_path)) + f": shard {shard_name(2)} is missing"):
        load_task_events(tmp_path, 150, 350, CFG)


def test_shard_missing_before_the_window(tmp_path):
    make_trace(tmp_path, n=4)
    (tmp_path / shard_name(0)).unlink()
    (tmp_path / shard_name(1)).unlink()
    path = tmp_path / shard_name(2)
    with pytest.raises(TraceError, match=re.escape(str(path)) + r": line 1: .*200.0 s.*150.0 s.*" + re.escape(shard_name(1))):
        load_task_events(tmp_path, 150, 250, CFG)


def test_shard_missing_after_the_window(tmp_path):
    make_trace(tmp_path, n=2)
    path = tmp_path / shard_name(1)
    with pytest.raises(TraceError, match=re.escape(str(path)) + r": .*ends at 199.0 s.*250 s.*" + re.escape(shard_name(2))):
        load_task_events(tmp_path, 150, 250, CFG)


def test_empty_shard_file(tmp_path):
    make_trace(tmp_path, n=3)
    path = tmp_path / shard_name(1)
    path.write_bytes(gzip.compress(b""))
    with pytest.raises(TraceError, match=re.escape(str(path)) + ": line 1: .*shard is empty"):
        load_task_events(tmp_path, 150, 250, CFG)


# --- the window finder ------------------------------------------------------------------

def burst_day(folder: Path, day_start: int) -> Path:
    """A 600 s day: one task every 10 s, plus 30 tasks in [200, 230) and 20 in [230, 260)."""
    times = [day_start + s for s in range(0, 600, 10)]
    times += [day_start + 200 + k for k in range(30)] + [day_start + 230 + 1.5 * k for k in range(20)]
    lines = [row(0, 1)] + [row(t, job=i) for i, t in enumerate(sorted(times))] + [row(day_start + 700)]
    write_shard(folder, 0, lines)
    return folder


def test_submit_counts_per_second(tmp_path):
    counts, stats = submit_counts(burst_day(tmp_path, 1000), 1000, 1600)
    assert len(counts) == 600 and counts.sum() == 110 == stats.kept
    assert counts[200] == 2 and counts[201] == 1 and counts[10] == 1 and counts[5] == 0


def test_find_window_matches_the_halves(tmp_path):
    trace = burst_day(tmp_path, 1000)
    fit = find_window(trace, day_start=1000, day_end=1600, span_s=60, step_s=10, targets=(33, 23))
    assert fit.start_s == 1200 and (fit.first_half, fit.second_half) == (33, 23)
    assert fit.error == 0.0 and fit.day_tasks == 110
    # a coarser grid misses 1200 and reports the best it can, with the worse half's error
    fit = find_window(trace, day_start=1000, day_end=1600, span_s=60, step_s=7, targets=(33, 23))
    assert fit.start_s != 1200 and fit.error == max(fit.rel_err_first, fit.rel_err_second) > 0


def test_find_window_bad_arguments(tmp_path):
    trace = burst_day(tmp_path, 0)
    with pytest.raises(TraceError, match=re.escape(str(trace)) + ": span_s=61: .*positive even number"):
        find_window(trace, 0, 600, span_s=61)
    with pytest.raises(TraceError, match=r"day \[0, 600\) .*shorter.*span_s=3000"):
        find_window(trace, 0, 600)
    with pytest.raises(TraceError, match="step_s=0"):
        find_window(trace, 0, 600, span_s=60, step_s=0)


# --- the downloader, against a loopback HTTP server --------------------------------------

@dataclass
class ServerState:
    files: dict[str, bytes] = field(default_factory=dict)
    log: list[tuple[str, str | None]] = field(default_factory=list)
    cut_once: set[str] = field(default_factory=set)  # first GET of these stops mid-body
    ignore_range: bool = False


def make_handler(state: ServerState) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            name = self.path.rsplit("/", 1)[-1]
            rng = self.headers.get("Range")
            state.log.append((name, rng))
            if name not in state.files:
                self.send_error(404)
                return
            data = state.files[name]
            start, end, status = 0, len(data) - 1, 200
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng or "")
            if m and not state.ignore_range:
                start = int(m.group(1))
                end = min(int(m.group(2)), len(data) - 1) if m.group(2) else len(data) - 1
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = 206
            body = data[start:end + 1]
            self.send_response(status)
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if name in state.cut_once:  # promise the whole body, send half, hang up
                state.cut_once.discard(name)
                body = body[:len(body) // 2]
            self.wfile.write(body)

    return Handler


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server():
    state = ServerState()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/task_events/", state
    finally:
        httpd.shutdown()
        httpd.server_close()


def shard_bytes(index: int, total: int = 500, seconds: int = 100) -> bytes:
    start = 100 * index
    return gzip.compress(("\n".join(busy_lines(start, start + seconds)) + "\n").encode())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_download_verifies_and_skips_complete_files(server, tmp_path):
    url, state = server
    state.files = {shard_name(i): shard_bytes(i) for i in (3, 4)}
    sums = {n: sha(b) for n, b in state.files.items()}
    paths = download_shards([3, 4], tmp_path, url, sums, backoff_s=0)
    assert [p.read_bytes() for p in paths] == [state.files[shard_name(3)], state.files[shard_name(4)]]
    assert not list(tmp_path.glob("*.part"))
    n_requests = len(state.log)
    assert download_shards([3, 4], tmp_path, url, sums, backoff_s=0) == paths
    assert len(state.log) == n_requests  # nothing fetched again


def test_download_resumes_after_a_cut_within_one_call(server, tmp_path):
    url, state = server
    name = shard_name(3)
    state.files = {name: shard_bytes(3, seconds=2000)}
    state.cut_once = {name}
    (path,) = download_shards([3], tmp_path, url, {name: sha(state.files[name])}, backoff_s=0)
    assert path.read_bytes() == state.files[name]
    half = len(state.files[name]) // 2
    assert state.log == [(name, None), (name, f"bytes={half}-")]


def test_download_resumes_a_partial_file_on_the_next_call(server, tmp_path):
    url, state = server
    name = shard_name(5)
    state.files = {name: shard_bytes(5, seconds=2000)}
    state.cut_once = {name}
    with pytest.raises(TraceError, match=re.escape(url + name) + r": download incomplete after 1 attempt.*resume"):
        download_shards([5], tmp_path, url, {}, attempts=1)
    part = tmp_path / (name + ".part")
    half = len(state.files[name]) // 2
    assert part.stat().st_size == half and not (tmp_path / name).exists()
    (path,) = download_shards([5], tmp_path, url, {name: sha(state.files[name])}, attempts=1)
    assert path.read_bytes() == state.files[name] and not part.exists()
    assert state.log[-1] == (name, f"bytes={half}-")


def test_download_restarts_when_the_server_ignores_range(server, tmp_path):
    url, state = server
    name = shard_name(6)
    state.files = {name: shard_bytes(6, seconds=2000)}
    state.cut_once, state.ignore_range = {name}, True
    (path,) = download_shards([6], tmp_path, url, {}, backoff_s=0)
    assert path.read_bytes() == state.files[name]


def test_download_checksum_mismatch_deletes_the_file(server, tmp_path):
    url, state = server
    name = shard_name(3)
    state.files = {name: shard_bytes(3)}
    with pytest.raises(TraceError, match=re.escape(str(tmp_path / name)) + ": sha256 mismatch: expected 0{64}, "
                                         + f"got {sha(state.files[name])}; .*deleted"):
        download_shards([3], tmp_path, url, {name: "0" * 64}, backoff_s=0)
    assert list(tmp_path.iterdir()) == []


def test_download_uses_known_sha256_by_default(server, tmp_path):
    assert KNOWN_SHA256[shard_name(0)] == "eae977d521bc6ed5d8deef56f1e06009d41844d4eb9a7e308e610d68e1b10f18"
    url, state = server
    state.files = {shard_name(0): shard_bytes(0)}  # not the real part-00000
    with pytest.raises(TraceError, match=r"sha256 mismatch: expected eae977d5"):
        download_shards([0], tmp_path, url, backoff_s=0)


def test_download_replaces_a_corrupt_complete_file(server, tmp_path):
    url, state = server
    name = shard_name(3)
    state.files = {name: shard_bytes(3)}
    (tmp_path / name).write_bytes(b"corrupt")
    (path,) = download_shards([3], tmp_path, url, {name: sha(state.files[name])}, backoff_s=0)
    assert path.read_bytes() == state.files[name]


def test_download_missing_shard_is_an_error(server, tmp_path):
    url, _ = server
    with pytest.raises(TraceError, match=re.escape(url + shard_name(7)) + ": HTTP 404"):
        download_shards([7], tmp_path, url, {}, backoff_s=0)
    with pytest.raises(TraceError, match=r"index 500: .*0 <= index < 500"):
        download_shards([500], tmp_path, url, {})


def test_probe_first_timestamp(server):
    url, state = server
    state.files = {shard_name(2): shard_bytes(2, seconds=3000)}
    assert probe_first_timestamp(url + shard_name(2)) == 200 * US
    state.ignore_range = True  # a whole-file answer: only the head is read
    assert probe_first_timestamp(url + shard_name(2), probe_bytes=4096) == 200 * US
    state.files[shard_name(2)] = b"not gzip at all"
    with pytest.raises(TraceError, match=re.escape(url + shard_name(2)) + ": line 1: .*gzip file"):
        probe_first_timestamp(url + shard_name(2))


def test_download_window_shards_fetches_only_the_window(server, tmp_path):
    url, state = server
    total = 10
    state.files = {shard_name(i, total): shard_bytes(i, total) for i in range(total)}
    paths = download_window_shards(250, 450, tmp_path / "dl", url, {}, total=total, backoff_s=0)
    # shards 2-4 hold the window; shard 5 is the fence that proves it ends there
    assert [p.name for p in paths] == [shard_name(i, total) for i in (2, 3, 4, 5)]
    full = tmp_path / "full"
    full.mkdir()
    for name, data in state.files.items():
        (full / name).write_bytes(data)
    got, stats = load_task_events(tmp_path / "dl", 250, 450, CFG, seed=2)
    want, _ = load_task_events(full, 250, 450, CFG, seed=2)
    np.testing.assert_array_equal(got.arrival, want.arrival)
    np.testing.assert_array_equal(got.cpu, want.cpu)
    assert len(got) == 200 and stats.shards_read == tuple(shard_name(i, total) for i in (2, 3, 4))
    downloaded = {name for name, rng in state.log if rng is None}
    assert downloaded == {p.name for p in paths}  # other shards were at most probed


# --- refused input and damaged downloads (long-run robustness) ------------------------

def test_empty_offline_half_of_a_window_is_a_clean_error(tmp_path):
    # SUBMITs only after the window's middle (864000 + 1500 s): the offline half is empty
    write_shard(tmp_path, 0, [row(0, 0), row(863_990, 1)])
    write_shard(tmp_path, 1, busy_lines(865_600, 867_100))
    cfg = WorkloadConfig(kind="google", trace_dir=str(tmp_path))
    with pytest.raises(TraceError, match=re.escape(str(tmp_path)) + r": .*offline half \[864000.*no SUBMIT"):
        google_workload(cfg, seed=0)


def test_download_without_a_known_digest_refuses_a_corrupt_gzip(server, tmp_path):
    url, state = server
    name = shard_name(7)
    good = shard_bytes(7, seconds=500)
    state.files = {name: good[:len(good) // 2] + b"\0" * 64}  # whole HTTP body, broken gzip stream
    with pytest.raises(TraceError, match=re.escape(str(tmp_path / name)) + ": .*not a complete gzip"):
        download_shards([7], tmp_path, url, {}, backoff_s=0)
    assert list(tmp_path.iterdir()) == [], "a corrupt download was kept"
    state.files = {name: good}
    (path,) = download_shards([7], tmp_path, url, {}, backoff_s=0)
    assert path.read_bytes() == good


def test_download_into_a_file_is_refused(tmp_path):
    dest = tmp_path / "afile"
    dest.write_text("x")
    with pytest.raises(TraceError, match=re.escape(str(dest)) + ": expected a folder"):
        download_shards([3], dest, "http://127.0.0.1:9/")
