#!/usr/bin/env bash
# Every benchmark README quotes, one after the other, each writing its JSON (with the host,
# the date, the commit and the floating-point kernels in effect) into benchmarks/results/.
# Run it on an idle machine (about a quarter of an hour on 2 idle cores, 2026-12-02). Then
# regenerate README's tables:
#   python benchmarks/readme_tables.py --write README.md
# Usage: bash benchmarks/run_all.sh [python]   (default: .venv/bin/python, else python3)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
R=benchmarks/results
mkdir -p "$R"
step() { echo "== $(date -u +%H:%M:%S) $*"; "$PY" "$@"; }
step benchmarks/bench_simulator.py --scale 1.0 --twin-scale 0.25 --out "$R/simulator.json"
step benchmarks/bench_decision.py --n 3000 --out "$R/decision_time.json"
step benchmarks/bench_rollout.py --out "$R/rollout.json"
step benchmarks/bench_per_server.py --out "$R/per_server.json"
step benchmarks/bench_experts.py --out "$R/experts.json"
step benchmarks/bench_numerics.py --out "$R/numerics.json"
step benchmarks/bench_report_stats.py --results shipped/paper --out "$R/report_stats.json"
step benchmarks/bench_gridcommand_decision.py --write
step benchmarks/bench_gridcommand_experts.py --write
step benchmarks/bench_envelope_cache.py --out "$R/envelope_cache.json"
step benchmarks/bench_bc_minibatches.py --out "$R/bc_minibatches.json"
step benchmarks/bench_aggregate_reads.py --out "$R/aggregate_reads.json"
echo "== $(date -u +%H:%M:%S) done"
