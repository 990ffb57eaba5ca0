"""README's benchmark tables, generated from ``benchmarks/results/*.json``.

Every figure README quotes from a benchmark is computed here from the JSON that benchmark
wrote (``bash benchmarks/run_all.sh``), so README cannot drift from what was measured and a
rerun on another machine rewrites them all at once:

    python benchmarks/readme_tables.py                    # print the block
    python benchmarks/readme_tables.py --write book/records.md  # replace it between the markers

The targets (the numbers a sentence calls met or missed) are those the benchmarks were
written against; they are constants below, not read from the results. A benchmark whose JSON
is missing is left out with a line that says so. ``tests/test_readme_tables.py`` checks that
README's block equals what this module renders from the committed JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
MARKERS = ("<!-- benchmarks:start -->", "<!-- benchmarks:end -->")

# the targets each benchmark was written against
SIM_MAIN_OVER_TWIN = 4.0  # main simulator at least 4x the SimPy twin, per task
SIM_FULL_200_S = 15.0  # a full 590,000-task replay at 200 servers
DECISION_P50_MS = 0.1  # per-decision p50 at 200 servers
ILETS_OVERHEAD = 0.10  # ILETS's main-thread overhead over DRL at p50
ROLLOUT_STEPS_PER_S = 4000.0  # PPO learning steps/s, updates included
EXPERT_CALL_MS = 15.0  # CPU ms per expert call on the loaded paper-scale snapshots


def _load(name: str, results: Path) -> dict | None:
    path = results / name
    return json.loads(path.read_text()) if path.is_file() else None


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _n(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def host_line(results: Path) -> str:
    """Where and when the JSON files were measured, from their own host records."""
    hosts: dict[str, list[str]] = {}
    for path in sorted(results.glob("*.json")):
        host = json.loads(path.read_text()).get("host") or {}
        if not host.get("date_utc"):
            continue  # written before benchmarks recorded their date and kernels
        kernels = (host.get("numerics") or {}).get("effective", "unrecorded")
        ident = f" ({host['cpu_id']})" if host.get("cpu_id") else ""
        cpu = f"{host.get('cpu_model', '?')}{ident}"
        key = f"{cpu}, {host.get('cpus', '?')} cores, {kernels} kernels, commit {str(host.get('commit'))[:7]}"
        hosts.setdefault(key, []).append(host["date_utc"][:10])
    if not hosts:
        return "The JSON files do not record their host."
    return "Measured on " + "; ".join(f"{k} ({', '.join(sorted(set(v)))})" for k, v in hosts.items()) + "."


def simulator(d: dict) -> list[str]:
    """The full replay against the SimPy twin."""
    rows = d["rows"]
    out = [f"**Simulator** (`bench_simulator.py --scale {d['scale']} --twin-scale {d['twin_scale']}`): a full "
           f"{_n(d['tasks'])}-task replay with Earliest-Finish in the loop on `ilets.simulator.cloud`, against the "
           f"independent SimPy twin (`ilets.simulator.twin`) on the first {_n(rows[0]['twin_tasks'])} tasks, same "
           "assignments (checked task by task: "
           f"{'they agree' if all(r['assignments_agree'] for r in rows) else '**they differ**'}).", "",
           "| servers | main: tasks/s (full replay) | twin: tasks/s | main / twin (same tasks) |",
           "|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['servers']} | {_n(r['main_tasks_per_s'])} ({r['main_s']:.1f} s) | "
                   f"{_n(r['twin_tasks_per_s'])} | {r['ratio_main_over_twin']:.1f}x |")
    big = max(rows, key=lambda r: r["servers"])
    worst = min(rows, key=lambda r: r["ratio_main_over_twin"])
    out += ["", f"Targets: full replay at {big['servers']} servers in at most {SIM_FULL_200_S:.0f} s: "
            f"{_met(big['main_s'] <= SIM_FULL_200_S)} ({big['main_s']:.1f} s). Main at least "
            f"{SIM_MAIN_OVER_TWIN:.0f}x the twin at every fleet size: "
            f"{_met(worst['ratio_main_over_twin'] >= SIM_MAIN_OVER_TWIN)} (lowest {worst['ratio_main_over_twin']:.1f}x, "
            f"at {worst['servers']} servers; the twin gains most where queues are short)."]
    return out


def decision(d: dict) -> list[str]:
    """Per-decision latency of DRL and ILETS against SB3's predict and the paper's times."""
    cell = {(r["method"], r["path"], r["servers"]): r for r in d["summary"]}
    sizes = sorted({r["servers"] for r in d["summary"]})
    out = [f"**Decision latency** (`bench_decision.py --n {d['n']}`): per-task decision on the main thread "
           "(observation + numpy actor; ILETS with OAIL's per-decision work), against SB3's `model.predict` on the "
           "same states and the paper's times.", "",
           "| servers | DRL p50 / p95 (ms) | ILETS p50 / p95 (ms) | SB3 predict p50 (ms) | paper DRL / ILETS (ms) |",
           "|---:|---:|---:|---:|---:|"]
    for m in sizes:
        drl, il = cell[("DRL", "our decision", m)], cell[("ILETS", "our decision", m)]
        out.append(f"| {m} | {drl['p50_ms']:.4f} / {drl['p95_ms']:.3f} | {il['p50_ms']:.4f} / {il['p95_ms']:.3f} | "
                   f"{cell[('DRL', 'sb3 predict', m)]['p50_ms']:.3f} | {cell[('DRL', 'paper', m)]['p50_ms']:.0f} / "
                   f"{cell[('ILETS', 'paper', m)]['p50_ms']:.0f} |")
    ratios = {int(k): v for k, v in d["ratios"].items()}
    top = max(cell[(method, "our decision", sizes[-1])]["p50_ms"] for method in ("DRL", "ILETS"))
    over = [ratios[m]["ilets_overhead_over_drl"] for m in sizes]
    sb3 = [ratios[m]["sb3_over_ours_drl"] for m in sizes]
    out += ["", f"Targets: at most {DECISION_P50_MS} ms p50 at {sizes[-1]} servers: {_met(top <= DECISION_P50_MS)} "
            f"({top:.3f} ms). ILETS's main-thread overhead over DRL at most {ILETS_OVERHEAD:.0%} at p50: "
            f"{_met(max(over) <= ILETS_OVERHEAD)} ({', '.join(f'{o:+.1%}' for o in over)}); its p95 is higher (the "
            f"snapshot and submission every 30 decisions). SB3's path is {min(sb3):.0f}-{max(sb3):.0f}x slower "
            "than ours in the same run."]
    return out


def rollout(d: dict) -> list[str]:
    """SB3's stock MaskablePPO loop against FastMaskablePPO."""
    out = [f"**Rollouts** (`bench_rollout.py`): SB3's stock MaskablePPO loop against `FastMaskablePPO` (numpy "
           f"actor-critic in the rollout, SB3's own `train()`), the first {_n(d['tasks'])} paper-scale online tasks, "
           f"{d['repeats']} alternating pairs of {_n(d['steps'])} steps, updates included, with `n_epochs` "
           f"{d['ppo']['n_epochs']}:", "",
           "| servers | stock steps/s | fast steps/s | fast / stock (median; range over pairs) |",
           "|---:|---:|---:|---|"]
    fast = []
    for m, r in sorted(d["servers"].items(), key=lambda kv: int(kv[0])):
        pairs = r["fast_over_stock_pairs"]
        fast.append(r["fast"]["steps_per_s"])
        out.append(f"| {m} | {_n(r['stock']['steps_per_s'])} | {_n(r['fast']['steps_per_s'])} | "
                   f"{r['fast_over_stock']:.1f}x; {min(pairs):.1f}-{max(pairs):.1f} |")
    out += ["", f"Target {_n(ROLLOUT_STEPS_PER_S)} steps/s including updates: "
            f"{_met(min(fast) >= ROLLOUT_STEPS_PER_S)} ({_n(min(fast))}-{_n(max(fast))})."]
    return out


#: the per-server policy's targets (issue "A learner that can learn")
PER_SERVER_P50_MS = 0.05
PER_SERVER_STEPS_PER_S = 4000


def per_server(d: dict, flat_elsewhere: dict | None = None) -> list[str]:
    """The per-server policy's decision time and learning speed against the flat path.

    ``flat_elsewhere`` (``decision_time.json``) gives the flat path's time where the decision
    table was measured, so a reader sees when the two ran on hosts of different speed."""
    out = [f"**Per-server policy** (`bench_per_server.py`): decision time on {_n(d['n'])} Earliest-Finish states "
           f"and PPO steps/s with updates ({_n(d['steps'])} steps, {d['repeats']} alternating pairs, the first "
           f"{_n(d['tasks'])} paper-scale online tasks), flat and per-server timed alternately:", "",
           "| servers | flat p50 / p95 (ms) | per-server p50 / p95 (ms) | per-server / flat (p50) | flat steps/s | "
           "per-server steps/s | per-server / flat (median; range over pairs) |",
           "|---:|---:|---:|---:|---:|---:|---|"]
    for m, r in sorted(d["servers"].items(), key=lambda kv: int(kv[0])):
        p50, p95, sps, pairs = r["decision_p50_ms"], r["decision_p95_ms"], r["steps_per_s"], r["steps_ratio_pairs"]
        out.append(f"| {m} | {p50['flat']:.4f} / {p95['flat']:.3f} | {p50['per-server']:.4f} / {p95['per-server']:.3f} "
                   f"| {r['decision_ratio_p50']:.1f}x | {_n(sps['flat'])} | {_n(sps['per-server'])} | "
                   f"{r['steps_ratio']:.2f}x; {min(pairs):.2f}-{max(pairs):.2f} |")
    top = max(d["servers"], key=int)
    p50 = d["servers"][top]["decision_p50_ms"]["per-server"]
    slowest = min(r["steps_per_s"]["per-server"] for r in d["servers"].values())
    out += ["", f"Targets: a per-server decision at most {PER_SERVER_P50_MS} ms p50 at {top} servers: "
            f"{_met(p50 <= PER_SERVER_P50_MS)} ({p50:.3f} ms). A PPO pass at least {_n(PER_SERVER_STEPS_PER_S)} "
            f"steps/s with updates: {_met(slowest >= PER_SERVER_STEPS_PER_S)} (slowest {_n(slowest)})."]
    other = [r for r in (flat_elsewhere or {}).get("summary", []) if r["method"] == "DRL"
             and r["path"] == "our decision" and str(r["servers"]) == str(top)]
    if other and d.get("host", {}).get("cpu_id") != flat_elsewhere.get("host", {}).get("cpu_id"):
        here = d["servers"][top]["decision_p50_ms"]["flat"]
        out += ["", f"This benchmark ran on another host ({d['host'].get('cpu_id')}) than the decision table above "
                f"({flat_elsewhere['host'].get('cpu_id')}): the same flat decision took {here:.4f} ms p50 here and "
                f"{other[0]['p50_ms']:.4f} ms there at {top} servers ({here / other[0]['p50_ms']:.1f}x), so compare "
                "the ratios, not the absolute times, across the two tables."]
    return out


def experts(d: dict) -> list[str]:
    """GA and PSO on paper-scale snapshots, and their optimality gap on small cases."""
    rows = {(r["servers"], r["snapshot"], r["expert"]): r for r in d["paper_scale"]}
    keys = sorted({(r["servers"], r["snapshot"]) for r in d["paper_scale"]}, key=lambda k: (k[0], k[1] != "light"))
    calls = d["paper_scale"][0]["calls"]
    out = [f"**Experts** (`bench_experts.py`): GA and PSO plan one {d['config']['experts']['window']}-task window "
           "on emulator copies of a light and the most loaded paper-scale state, and one OAIL request plans it "
           f"with both; CPU ms per call (median of {calls}); then the optimality gap against exhaustive enumeration on "
           f"{d['gap'][0]['cases']} small cases (3-5 servers, 4-6 tasks).", "",
           "| servers | snapshot | tasks queued | snapshot KB | GA CPU ms | PSO CPU ms | request CPU ms (p90) |",
           "|---:|---|---:|---:|---:|---:|---:|"]
    for m, snap in keys:
        ga, pso, req = (rows[(m, snap, e)] for e in ("ga", "pso", "request"))
        out.append(f"| {m} | {snap} | {_n(ga['queued'])} | {ga['snapshot_kb']:.0f} | {ga['cpu_ms']:.1f} | "
                   f"{pso['cpu_ms']:.1f} | {req['cpu_ms']:.1f} ({req['cpu_ms_p90']:.1f}) |")
    out += ["", "| expert | mean gap | max gap | optimal |", "|---|---:|---:|---:|"]
    out += [f"| {g['expert']} | {g['mean_gap']:.2%} | {g['max_gap']:.1%} | {g['optimal_share']:.0%} |" for g in d["gap"]]
    loaded = [(m, e, rows[(m, "loaded", e)]["cpu_ms"]) for m, s in keys if s == "loaded" for e in ("ga", "pso")]
    ok = [f"{e.upper()} at {m}" for m, e, ms in loaded if ms <= EXPERT_CALL_MS]
    out += ["", f"Target at most {EXPERT_CALL_MS:.0f} CPU ms per expert call on the loaded snapshots: "
            + ("met for every expert and fleet size" if len(ok) == len(loaded) else
               f"**met by {', '.join(ok) or 'none'} only**")
            + f" (range {min(ms for *_, ms in loaded):.1f}-{max(ms for *_, ms in loaded):.1f} ms)."]
    return out


def numerics(d: dict) -> list[str]:
    """Portable (AVX2-capped) kernels against the host's own, whole cells."""
    a = d["args"]
    out = [f"**Portable numerics** (`bench_numerics.py`): whole `ilets run` cells at {a['servers']} servers on "
           f"{a['scale']:.0%} of the window, {a['pairs']} alternating pairs with the portable (AVX2-capped, the "
           "default) and the host's native kernels; CPU seconds from each cell's record:", "",
           "| method | portable CPU s | native CPU s | native / portable (median; range) | repeats identical | "
           "modes agree |", "|---|---:|---:|---|---|---|"]
    for method, s in d["summary"].items():
        r = s["native_over_portable"]
        same = "yes" if all(s["repeats_identical"].values()) else "**no**"
        # each difference reads "<file> <key>: <a> -> <b>": name the keys
        agree = "yes" if not s["modes_differ_in"] else "no: " + ", ".join(
            f"`{d.split(':', 1)[0].split(' ', 1)[-1]}`" for d in s["modes_differ_in"])
        out.append(f"| {method} | {s['cpu_s_median']['portable']:.1f} | {s['cpu_s_median']['native']:.1f} | "
                   f"{r['median']:.2f}; {r['min']:.2f}-{r['max']:.2f} | {same} | {agree} |")
    return out


def report_stats(d: dict) -> list[str]:
    """rliable's bootstrap against the package's own arithmetic."""
    b = d["bootstrap"]
    out = [f"**The book's bootstrap statistics** (`bench_report_stats.py`): rliable's probability of improvement "
           "and IQM without scipy's wrappers, against rliable's own functions. One bootstrap of each at the paper "
           f"profile's shape (10 seeds x 3 fleet sizes, "
           f"{_n(b['reps'])} resamples): {b['rliable_cpu_s']:.2f} s CPU with rliable's, {b['ours_cpu_s']:.2f} s with "
           f"ours ({b['ratio']:.1f}x)."]
    f = d.get("results_findings")
    if f:
        out[0] += (f" The results chapter's findings on `{f['results']}` ({_n(f['cells'])} cells): "
                   f"{f['rliable_cpu_s']:.1f} s with rliable's, {f['ours_cpu_s']:.1f} s with ours ({f['ratio']:.1f}x).")
    same = b["identical"] and (not f or f["identical"])
    out[0] += " Every point and interval is identical in both runs." if same else " **The two runs differ.**"
    return out


def _solve(row: dict) -> str:
    s = row.get("per_solve_cpu") or {}
    if not s.get("n"):
        return ""
    statuses = row.get("statuses", {})
    stopped = s["n"] - statuses.get("optimal", 0)  # HiGHS stopped at a node or time limit (or failed)
    tail = (f" (max {_n(s['max_ms'])}; {stopped} of {s['n']} stopped at a limit)" if stopped
            else f" ({s['n']} of {s['n']} optimal)" if row["expert"] == "oracle" else "")
    return f"; solve {s['median_ms']:.1f} ms{tail}"


def gridcommand(dec: dict | None, exp: dict | None) -> list[str]:
    """The grid-command scenario's per-decision cost and its expert ladder."""
    out = []
    if dec:
        parts = [f"at {r['servers']} servers {r['plain']['p50_us']:.1f} us plain, {r['grid']['p50_us']:.1f} us with "
                 f"the blocks ({r['ratio_grid_over_plain_p50']:.2f}x), {r['grid_cap']['p50_us']:.1f} us with the "
                 f"admission cap too ({r['ratio_grid_cap_over_plain_p50']:.2f}x)" for r in dec["rows"]]
        out += [f"**Grid-command scenario.** Per-decision latency of the env with the command's observation blocks "
                f"(`bench_gridcommand_decision.py --write`, median of {dec['args']['repeats']} repeats, p50 per step): "
                + "; ".join(parts) + "."]
    if exp:
        o = exp["oracle"]
        limits = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in o.items() if v is not None)
        experts_ = list(dict.fromkeys(r["expert"] for r in exp["rows"]))
        out += ["", f"The expert ladder (`bench_gridcommand_experts.py --write`, one episode at workload scale "
                f"{exp['scale']} with one 30 % cut; the oracle as the paper grid runs it: {limits}), CPU per decision "
                "(median) and per solve:", "",
                "| servers | " + " | ".join(experts_) + " |", "|---:|" + "---|" * len(experts_)]
        for m in exp["servers"]:
            cells = {r["expert"]: r for r in exp["rows"] if r["servers"] == m}
            out.append(f"| {m} | " + " | ".join(
                f"{cells[e]['per_decision_cpu']['median_ms']:.3f} ms{_solve(cells[e])}" if e in cells else ""
                for e in experts_) + " |")
        windows = exp.get("milp_windows") or []
        parts = []
        for headroom in sorted({w["headroom"] for w in windows}, reverse=True):
            ws = [w for w in windows if w["headroom"] == headroom]
            stopped = [w for w in ws if w["status"] != "optimal"]
            largest = max((w for w in ws if w["status"] == "optimal"), key=lambda w: w["tasks"] * w["slots"], default=None)
            text = f"at capacity headroom {headroom}, " + (
                f"the largest solved to optimality {largest['tasks']} tasks x {largest['slots']} slots" if largest
                else "none solved to optimality")
            if stopped:
                text += (f", {len(stopped)} of {len(ws)} windows stopped at the time limit (gaps up to "
                         f"{max(w['mip_gap'] for w in stopped):.1%})")
            parts.append(text)
        if parts:
            out += ["", "The tracking MILP alone on synthetic windows: " + "; ".join(parts) + "."]
    return out


def envelope_cache(d: dict) -> list[str]:
    """A grid-command cell with its episodes' envelopes computed, and read from a grid's cache."""
    same = "the same numbers in every run" if d["same_numbers"] else "**the runs' numbers differ**"
    return [f"**Envelope cache** (`bench_envelope_cache.py`): one {d['method']} cell of the drift family's scenario "
            f"cut to {d['days']:g} days ({d['servers']} servers, {d['episodes']} episodes), median of {d['repeats']} "
            f"pairs: {d['median_computed_cpu_s']:.1f} s CPU computing each "
            f"episode's envelope, {d['median_cached_cpu_s']:.1f} s reading it from the grid's cache "
            f"({d['speedup']:.2f}x), {same}."]


def bc_minibatches(d: dict) -> list[str]:
    """BC's own minibatches against imitation's loader, per fleet size."""
    rows = [f"{m} servers: {r['decisions']:,} decisions, {r['minibatches_per_s']['imitation']:,.0f} minibatches/s with "
            f"imitation's loader, {r['minibatches_per_s']['ours']:,.0f} with ours ({r['speedup_median']:.2f}x)"
            for m, r in d["servers"].items()]
    return [f"**BC minibatches** (`bench_bc_minibatches.py`): {d['batches']:,} BC minibatches of {d['batch_size']} "
            f"on a teacher's demonstrations, imitation's loader and the study's alternating, median of "
            f"{d['repeats']} pairs, the two policies the same tensor for tensor: " + "; ".join(rows) + "."]


def aggregate_reads(d: dict) -> list[str]:
    """BC's minibatches from a clone's aggregate on disk, with and without read-ahead."""
    r = d["minibatches_per_s"]
    ahead = f"{d['read_ahead_kb']:,} KB" if d.get("read_ahead_kb") is not None else "not known"
    return [f"**Aggregate reads** (`bench_aggregate_reads.py`): {d['batches']:,} BC minibatches of {d['batch_size']} "
            f"rows ({d['row_bytes']:,} bytes each, {d['servers']} servers) from a clone's aggregate kept on disk "
            f"({d['rows'] * d['row_bytes'] / 2**30:.0f} GiB), each from a cold page cache, the disk's read-ahead "
            f"{ahead}: "
            f"{r['read_ahead']:.1f} "
            f"minibatches/s with the kernel's read-ahead, {r['random_reads']:.1f} with `Aggregate.random_reads` "
            f"({d['speedup_median']:.1f}x, median of {d['repeats']} pairs, the same rows)."]


def _missing(name: str) -> list[str]:
    """The line that stands for a benchmark whose JSON is missing."""
    return [f"(`benchmarks/results/{name}` is missing: run `make bench`.)"]


def render(results: Path = RESULTS) -> str:
    """The whole generated block: the host line, then one paragraph and table per benchmark."""
    blocks = [[host_line(results) + " Ratios are against a reference in the same run; `make bench` regenerates "
               "everything (on an idle machine)."]]
    for name, fn in (("simulator.json", simulator), ("decision_time.json", decision), ("rollout.json", rollout),
                     ("per_server.json", per_server), ("experts.json", experts), ("numerics.json", numerics),
                     ("report_stats.json", report_stats)):
        d = _load(name, results)
        if d and name == "per_server.json":
            blocks.append(per_server(d, _load("decision_time.json", results)))
            continue
        blocks.append(fn(d) if d else _missing(name))
    blocks.append(gridcommand(_load("gridcommand_decision.json", results), _load("gridcommand_experts.json", results)))
    cache = _load("envelope_cache.json", results)
    blocks.append(envelope_cache(cache) if cache else _missing("envelope_cache.json"))
    minibatch = _load("bc_minibatches.json", results)
    blocks.append(bc_minibatches(minibatch) if minibatch else _missing("bc_minibatches.json"))
    reads = _load("aggregate_reads.json", results)
    blocks.append(aggregate_reads(reads) if reads else _missing("aggregate_reads.json"))
    return "\n\n".join("\n".join(b) for b in blocks if b) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="the benchmarks' JSON folder")
    ap.add_argument("--write", type=Path, default=None, help="replace the block between the markers of this file")
    args = ap.parse_args(argv)
    text = render(args.results)
    if args.write is None:
        sys.stdout.write(text)
        return 0
    if not args.write.is_file():
        raise SystemExit(f"{args.write}: no such file")
    from ilets.files import MarkerError, replace_marked

    try:
        args.write.write_text(replace_marked(args.write.read_text(), MARKERS, text, args.write))
    except MarkerError as err:
        raise SystemExit(str(err)) from None
    print(f"wrote the benchmark tables into {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
