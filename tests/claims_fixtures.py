"""Claims-table fixtures shared by the tests of the table (test_claims_table) and of the figure
built from it (test_claim_figures): component effects as the verdict rule gives them, verdicts
and a small metrics store."""

from __future__ import annotations

import pandas as pd

from ilets.report.verdicts.claims import Verdict


def effects(a, b, measure, per, pooled=None):
    """Component effects as ilets.report.verdicts.rule.component_effects gives them."""
    rows = [{"component": f"{a} vs {b}: {measure}", "a": a, "b": b, "measure": measure, "servers": s,
             "effect_pct": e, "ci_low_pct": lo, "ci_high_pct": hi, "n_a": 10, "n_b": 10, "mean_a": 1.0,
             "mean_b": 1.0, "verdict": ""} for s, e, lo, hi in per]
    e, lo, hi = pooled or (sum(p[1] for p in per) / len(per), min(p[2] for p in per), max(p[3] for p in per))
    rows.append({**rows[0], "servers": "all", "effect_pct": e, "ci_low_pct": lo, "ci_high_pct": hi})
    return pd.DataFrame(rows)


HOLD = [(50, 5.0, 4.0, 6.0), (100, 3.0, 2.0, 4.0)]
REVERSE = [(50, 5.0, 4.0, 6.0), (100, -3.0, -4.0, -2.0)]


def verdict(claim, parts, word):
    """Claim ``claim``'s verdict ``word`` made of the component effects ``parts``."""
    return Verdict(claim, "", word, "", pd.concat(parts, ignore_index=True))


def metrics():
    """A two-seed store of four methods at 50 and 100 servers (energy, response, decision time)."""
    rows = []
    for method, energy, resp in (("drl", 10.0, 4.0), ("min-energy", 9.0, 2.0), ("drl+", 9.9, 3.0),
                                 ("ilets", 9.9, 3.0)):
        for servers in (50, 100):
            for seed in (0, 1):
                rows.append({"method": method, "servers": servers, "seed": seed, "energy_kwh": energy * servers / 50,
                             "avg_response_s": resp, "decision_p50_ms": 0.03})
    return pd.DataFrame(rows)
