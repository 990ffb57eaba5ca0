"""Decision-time benchmark: per-task latency (p50, p95) for DRL and ILETS at 50/100/200 servers.

Measures, in one run, our decision path (observation + numpy actor; for ILETS plus the OAIL
callback's main-thread work while its emulators run) against SB3's plain ``model.predict``
on the same states, and prints them beside the paper's figures. Ratios, not absolute times,
are the portable result: ``sb3/ours`` and ILETS's overhead over DRL.

    python benchmarks/bench_decision.py --n 3000 --out benchmarks/results/decision_time.json
"""

from __future__ import annotations

import ilets  # noqa: F401  (first: portable floating-point kernels, ilets.numerics, before numpy loads)
import argparse
import json
from pathlib import Path

import pandas as pd

from ilets.host import write_benchmark
from ilets.study.latency import measure, summarise
from ilets.study.profiles import method_defaults
from ilets.study.run import system_info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=3000, help="decisions per (method, scale)")
    ap.add_argument("--servers", default="50,100,200")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    cfg = method_defaults()
    frames = []
    counters = {}
    for m in [int(s) for s in args.servers.split(",")]:
        for oail in (False, True):
            t = measure(m, args.n, cfg, with_oail=oail)
            frames.append(t)
            if oail:
                counters[m] = t.attrs.get("oail", {})
    summary = summarise(pd.concat(frames, ignore_index=True))
    wide = summary.pivot_table(index="servers", columns=["method", "path"], values="p50_ms")
    print("p50 decision latency, ms")
    print(wide.round(4).to_string())
    ratios = {}
    for m in wide.index:
        drl, both = wide.loc[m, ("DRL", "our decision")], wide.loc[m, ("ILETS", "our decision")]
        ratios[int(m)] = {"sb3_over_ours_drl": wide.loc[m, ("DRL", "sb3 predict")] / drl,
                          "ilets_overhead_over_drl": both / drl - 1.0,
                          "paper_over_ours_ilets": wide.loc[m, ("ILETS", "paper")] / both}
    print(json.dumps(ratios, indent=2))
    write_benchmark(args.out, {"n": args.n, "summary": summary.to_dict(orient="records"), "ratios": ratios,
                               "oail_counters": counters, "system": system_info()})


if __name__ == "__main__":
    main()
