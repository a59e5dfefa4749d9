"""The regression gate of `compare --fail-if-slower X`: which results and category means of a
comparison document are slower than (1 - X) x A with confidence (Holm, comparison/multiplicity.py)."""

from __future__ import annotations

import math

import numpy as np

from gpuparity.comparison.flags import NO_CLAIM
from gpuparity.comparison.multiplicity import gate_failures


def regression_gate(doc: dict, threshold: float) -> dict:
    """Results and category means below (1 - threshold) x A with confidence, Holm-adjusted over
    all of them (one-sided, family-wise 2.5%: multiplicity.gate_failures): what `compare
    --fail-if-slower` fails on, named by workload, params and dtype.

    Only what can carry a verdict is tested: a row or mean whose verdict is held (its "held":
    flagged unstable, host_bound, contended or throttled by heat; a mean mostly of those) cannot
    show "slower", so it is not judged, and "not_judged" counts them by reason. With a contended
    side nothing is judged. "judged" False (nothing could be judged) is no pass: passed is False."""
    from collections import Counter

    contended = [c["side"] for c in doc.get("contended") or []]
    # a mean over one result is that result: tested once
    means = {cat: g for cat, g in doc["geomean"].items() if (g.get("n") or 0) >= 2}
    candidates = [({"workload": r["workload"], "params": r["params"], "dtype": r["dtype"], "key": r["key"],
                    "ratio": r["ratio"], "ci_high": r["ci_high"]}, r) for r in doc["rows"]]
    candidates += [({"workload": f"geomean {cat}", "params": {}, "dtype": None, "key": None, "ratio": g["ratio"],
                     "ci_high": g["ci_high"]}, g) for cat, g in means.items()]

    def why_not(x: dict) -> str | None:
        if x.get("held"):
            return x["held"]
        # a document from before "held": its flags say it
        named = sorted(set(x.get("flags") or []) & (NO_CLAIM | {"contended"})) if "held" not in x else []
        if named:
            return named[0]
        return None if isinstance(x.get("log_se"), (int, float)) and isinstance(x.get("ratio"), (int, float)) \
            else "no interval"

    reasons = [why_not(x) for _, x in candidates]
    n_rows = len(doc["rows"])
    not_judged = {"results": sum(w is not None for w in reasons[:n_rows]),
                  "means": sum(w is not None for w in reasons[n_rows:]),
                  "why": dict(Counter(w for w in reasons if w is not None))}
    judge = [i for i, w in enumerate(reasons) if w is None and not contended]
    tests = [candidates[i] for i in judge]
    lr = np.array([math.log(x["ratio"]) if x["ratio"] > 0 else np.nan for _, x in tests])
    se = np.array([float(x["log_se"]) for _, x in tests])
    df = np.array([float(x["df"]) if isinstance(x.get("df"), (int, float)) else np.inf for _, x in tests])
    fails = gate_failures(lr, se * se, df, threshold) if tests else np.zeros(0, dtype=bool)
    failed = [t for (t, _), f in zip(tests, fails.tolist(), strict=True) if f]
    judged_rows = sum(i < n_rows for i in judge)
    judged = bool(tests)
    return {"threshold": threshold, "passed": judged and not failed, "judged": judged, "failed": failed,
            "method": f"Holm over {judged_rows} result(s) and {len(tests) - judged_rows} category mean(s), "
                      "one-sided, family-wise 2.5%",
            "not_judged": not_judged, "contended": contended}
