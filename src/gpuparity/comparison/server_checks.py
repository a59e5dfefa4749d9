"""What a serving comparison checks before any speed verdict: that both sides served the same
configuration, and that both answered the accuracy eval alike.

- Identity (results/server_identity.py): where the servers differ in model, precision,
  quantisation, KV-cache dtype or parallelism (a field known on both sides), every serving verdict
  is held at inconclusive, unless the user asks for a cross-configuration comparison
  (`compare --cross-config`): then the verdicts stand and every view labels the comparison as one.
  Engines and versions may differ (comparing engines is a question people ask). A field unknown on
  a side is named, not guessed. Different servers are never an A/A comparison.
- Accuracy (workloads/serving/accuracy.py): each side's eval counts (correct of answered, summed
  over its runs of the same eval, version and seed) in a 2x2 table; Fisher's exact test
  (scipy.stats.fisher_exact, two-sided) below ALPHA says the sides answer differently beyond the
  eval's noise, and every serving verdict is held, with or without --cross-config: a server that
  answers wrongly is not faster. The score is not a bar (a small model scores low on some tasks):
  only the difference between the sides counts.
"""

from __future__ import annotations

import numpy as np

from gpuparity.comparison.sides import Side, serving_infos
from gpuparity.results.server_identity import FIELD_WORDS, differences, identity_text, same_server, server_key

ALPHA = 0.01


def side_servers(side: Side) -> dict:
    """A side's distinct server configurations (results/server_identity.server_key, as the
    envelope tells them apart) and its accuracy evals (one per run and configuration)."""
    idents: dict[tuple, dict] = {}
    evals: dict[tuple, dict] = {}
    for _, info, run in serving_infos(side):
        ident = info.get("server_identity")
        key = server_key(ident)
        idents.setdefault(key, ident)
        acc = info.get("accuracy")
        if isinstance(acc, dict) and acc.get("answered"):
            evals.setdefault((run.get("run_id"), key), acc)
    return {"identities": list(idents.values()), "evals": list(evals.values())}


def pooled(evals: list[dict]) -> dict | None:
    """A side's evals summed: {"eval", "version", "seed", "correct", "answered", "runs"}; None
    without one; the first eval's kind where runs used several (others left out, counted)."""
    if not evals:
        return None
    kind = (evals[0].get("eval"), evals[0].get("version"), evals[0].get("seed"))
    same = [e for e in evals if (e.get("eval"), e.get("version"), e.get("seed")) == kind]
    return {"eval": kind[0], "version": kind[1], "seed": kind[2], "runs": len(same), "other_evals": len(evals) - len(same),
            "correct": sum(int(e.get("correct") or 0) for e in same),
            "answered": sum(int(e.get("answered") or 0) for e in same)}


def accuracy_check(a: dict | None, b: dict | None) -> dict | None:
    """Fisher's exact test on the two sides' correct / wrong counts; None unless both have one of
    the same eval, version and seed."""
    if not a or not b:
        return {"compared": False, "why": f"no accuracy eval on side {'A' if not a else 'B'}", "a": a, "b": b} \
            if (a or b) else None
    if (a["eval"], a["version"], a["seed"]) != (b["eval"], b["version"], b["seed"]):
        return {"compared": False, "why": "the sides ran different evals (problems differ)", "a": a, "b": b}
    from scipy.stats import fisher_exact

    table = [[a["correct"], a["answered"] - a["correct"]], [b["correct"], b["answered"] - b["correct"]]]
    p = float(fisher_exact(table, alternative="two-sided").pvalue)
    return {"compared": True, "a": a, "b": b, "p_value": p, "alpha": ALPHA, "differs": p < ALPHA,
            "test": "Fisher's exact test, two-sided"}


def _score(s: dict) -> str:
    return f"{s['correct']}/{s['answered']} ({100 * s['correct'] / s['answered']:.0f}%)" if s.get("answered") else "-"


def server_checks(a: Side, b: Side, cross_config: bool = False) -> dict | None:
    """The identity and accuracy checks of two sides' serving results (None without any):
    {"a", "b" (identities, identity texts, accuracy), "differ", "unknown", "values", "cross_config",
    "accuracy", "same_server", "held" (why every serving verdict is held, None where not), "lines"}."""
    sa, sb = side_servers(a), side_servers(b)
    if not sa["identities"] and not sb["identities"]:
        return None
    differ, unknown, values = [], [], {}
    for ia in sa["identities"] or [None]:
        for ib in sb["identities"] or [None]:
            d = differences(ia, ib)
            differ += [f for f in d["differ"] if f not in differ]
            unknown += [f for f in d["unknown"] if f not in unknown]
            for f, v in d["values"].items():
                values.setdefault(f, v)
    same = bool(sa["identities"]) and len(sa["identities"]) == len(sb["identities"]) == 1 and \
        same_server(sa["identities"][0], sb["identities"][0])
    acc = accuracy_check(pooled(sa["evals"]), pooled(sb["evals"]))
    same = same and not (acc or {}).get("differs")        # one configuration answering otherwise: not one server
    held = lines = None
    lines = []
    if differ:
        what = ", ".join(f"{FIELD_WORDS[f]} (A {values[f][0]}, B {values[f][1]})" for f in differ)
        if cross_config:
            lines.append(f"cross-configuration comparison (--cross-config): the servers differ in {what}; the "
                         "serving verdicts compare these configurations, not the platforms alone")
        else:
            held = f"servers differ in {', '.join(FIELD_WORDS[f] for f in differ)}"
            lines.append(f"the servers differ in {what}: no serving verdict (compare --cross-config compares them "
                         "as a cross-configuration comparison)")
    if acc and acc.get("compared"):
        words = (f"accuracy: A {_score(acc['a'])}, B {_score(acc['b'])} correct on {acc['a']['eval']} "
                 f"(Fisher's exact test p = {acc['p_value']:.2g})")
        if acc["differs"]:
            held = "answers differ (accuracy eval)"
            lines.insert(0, f"{words}: the sides answer differently beyond the eval's noise (p < {ALPHA:g}); "
                            "no serving verdict: a server that answers wrongly is not faster")
        else:
            lines.append(f"{words}: the same within the eval's noise")
    elif acc:
        lines.append(f"accuracy not compared: {acc['why']}")
    if unknown:
        lines.append("server identity unknown on a side for " + ", ".join(FIELD_WORDS[f] for f in unknown)
                     + ": declare it with --set server_flags='...' (or launch it with --serve-cmd)")
    return {"a": {"identities": sa["identities"], "text": [identity_text(i) for i in sa["identities"]] or
                  [identity_text(None)], "accuracy": acc.get("a") if acc else None},
            "b": {"identities": sb["identities"], "text": [identity_text(i) for i in sb["identities"]] or
                  [identity_text(None)], "accuracy": acc.get("b") if acc else None},
            "differ": differ, "unknown": unknown, "values": values, "cross_config": bool(cross_config and differ),
            "accuracy": acc, "same_server": same, "held": held, "lines": lines}


def serving_keys(a: Side, ia: np.ndarray) -> np.ndarray:
    """Per matched key of a comparison's core: whether it is a serving result."""
    return np.array([a.meta[int(i)][1] == "serving" for i in ia], dtype=bool)


def server_check_lines(result: dict) -> list[str]:
    """The checks' conclusions (empty without serving): the document's first notes."""
    return list(((result.get("servers") or {}).get("lines")) or [])


def servers_block(result: dict) -> list[str]:
    """What every view prints before any speed verdict: each side's server identity and accuracy,
    then the checks' conclusions (empty without serving results)."""
    from gpuparity.workloads.serving.accuracy import accuracy_text

    servers = result.get("servers")
    if not servers:
        return []
    out = []
    for letter in ("a", "b"):
        side = servers.get(letter) or {}
        acc = side.get("accuracy")
        score = (f"; accuracy {acc['correct']}/{acc['answered']} correct on {acc['eval']}" if acc and acc.get("answered")
                 else "; " + accuracy_text(None).split(" (")[0])
        out += [f"server {letter.upper()}: {text}{score}" for text in side.get("text") or []]
    return out + server_check_lines(result)
