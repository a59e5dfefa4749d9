"""Serving sweep points as the report shows them: one summary per point (requests, throughput,
interactivity, goodput) and the latency statistics (TTFT, TPOT, ITL, E2EL in ms), in the shape
`vllm bench serve` prints.

Reads result["info"]["serving"] written by workloads/serving/workload.py (its docstring is the data
contract). Tolerant of both layouts: the current one (ttft_ms = {mean, median, std, p50, p90,
p99, ...}, goodput = {slos, request_goodput, fraction, ...}, trials = per-trial summaries) and
the earlier flat one (ttft_p50_s, ...); a missing figure is None, never an error.
"""

from __future__ import annotations

import math
import re

from gpuparity.results.figure import unverified as is_unverified

LATENCIES = (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2EL"))
OLD_NAMES = {"e2el": "e2e"}


def _number(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x == x else None


def latency(summary: dict, name: str) -> dict[str, float]:
    """{stat: milliseconds} for one latency (mean, median, std, p90, p99, ...), in that order."""
    raw = summary.get(f"{name}_ms")
    out: dict[str, float] = {}
    if isinstance(raw, dict):
        out = {str(k): v for k, v in ((k, _number(v)) for k, v in raw.items()) if v is not None}
    else:
        old = OLD_NAMES.get(name, name)
        pattern = re.compile(rf"^{old}_(mean|median|std|p\d+(?:\.\d+)?)_s$")
        for key, value in summary.items():
            m = pattern.match(str(key))
            if m and _number(value) is not None:
                out[m.group(1)] = 1000.0 * value
    if "p50" in out:                       # the median under its other name: shown once
        out.setdefault("median", out.pop("p50"))
    return dict(sorted(out.items(), key=lambda kv: _stat_order(kv[0])))


def _stat_order(stat: str) -> tuple:
    fixed = {"mean": 0, "median": 1, "std": 2}
    if stat in fixed:
        return (fixed[stat], 0.0)
    try:
        return (3, float(stat[1:]))
    except ValueError:
        return (4, 0.0)


def load_label(params: dict) -> str:
    """c=4, rate=2/s, rate=inf (c<=16): what set the load of a sweep point."""
    p = params or {}
    if "concurrency" in p:
        return f"c={p['concurrency']}"
    if "request_rate" in p:
        text = f"rate={p['request_rate']}/s" if str(p["request_rate"]) != "inf" else "rate=inf"
        return text + (f" (c<={p['max_concurrency']})" if p.get("max_concurrency") else "")
    return ", ".join(f"{k}={v}" for k, v in p.items()) or "-"


def _goodput(s: dict) -> str | None:
    g = s.get("goodput")
    slos = s.get("slos") or (g.get("slos") if isinstance(g, dict) else None)
    slos = slos if isinstance(slos, dict) else {}
    if isinstance(g, dict):
        slos = {**{k: v for k, v in g.items() if str(k).startswith("slo_")}, **slos}
        rate = _first(g, "request_goodput", "requests_per_s")
        frac = _number(g.get("fraction"))
    else:
        rate, frac = _number(g), None
    if rate is None:
        return None
    limits = ", ".join(f"{str(k).removeprefix('slo_').removesuffix('_ms').upper()} <= {_number(v):g} ms"
                       for k, v in slos.items() if _number(v) is not None)
    text = f"{rate:.3g} req/s"
    if frac is not None:
        text += f" ({100 * frac:.0f}%)"
    return text + (f" within {limits}" if limits else "")


def _first(s: dict, *names):
    for n in names:
        if _number(s.get(n)) is not None:
            return _number(s.get(n))
    return None


def point(result: dict) -> dict | None:
    """One sweep point's summary, or None for a result that is not a serving point."""
    info = result.get("info") or {}
    s = info.get("serving")
    if result.get("category") != "serving" or not isinstance(s, dict):
        return None
    errors, timeouts = _first(s, "errors") or 0, _first(s, "timeouts") or 0
    failed = _first(s, "failed")
    # the server's token counts, no tokenizer checked them: every table and chart label says so
    unverified = is_unverified(result)
    return {
        "curve": str(info.get("curve_key") or result.get("workload")),
        "load": load_label(result.get("params")) + (" (unverified)" if unverified else ""), "unverified": unverified,
        "status": result.get("status"), "completed": _first(s, "completed"),
        "failed": failed if failed is not None else errors + timeouts,
        "duration_s": _first(s, "duration_s"), "request_throughput": _first(s, "request_throughput"),
        "output_per_gpu": _first(s, "output_throughput_per_gpu", "throughput_per_gpu"),
        "total_per_gpu": _first(s, "total_throughput_per_gpu"),
        "interactivity": _first(s, "interactivity"), "goodput": _goodput(s),
        # per GPU only where the server's GPUs were given (gpus=); a point of an earlier version says 1
        "per": "GPU" if _first(s, "gpus") else "server", "invalid": _first(s, "invalid") or 0,
        "trials": len(s["trials"]) if isinstance(s.get("trials"), list) else _first(s, "trials"),
        "latency": {label: latency(s, name) for name, label in LATENCIES},
        "order": _load_order(result.get("params") or {}),
    }


def per_text(points: list[dict]) -> str:
    """'per GPU', 'per server', or both where the points differ: the throughput columns' unit."""
    kinds = sorted({p.get("per", "GPU") for p in points})
    return "per " + " or ".join(kinds) if kinds else "per GPU"


def _load_order(params: dict) -> float:
    """Sweep points from light to heavy load (a rate of "inf" last)."""
    try:
        return float(params.get("concurrency", params.get("request_rate", "inf")))
    except (TypeError, ValueError):
        return float("inf")


def curves(results: list[dict]) -> dict[str, list[dict]]:
    """{curve key: [points, by load]} of one side's serving results."""
    out: dict[str, list[dict]] = {}
    for r in results:
        p = point(r)
        if p is not None:
            out.setdefault(p["curve"], []).append(p)
    for pts in out.values():
        pts.sort(key=lambda p: p["order"])
    return out


def latency_stats(points: list[dict]) -> list[str]:
    """The statistics present in any point (columns of the latency table), in display order."""
    seen = {stat for p in points for lat in p["latency"].values() for stat in lat}
    return sorted(seen, key=_stat_order)


# -- every run (configuration) of a side, for the InferenceX-style charts -------------------------------
Z95 = 1.959963984540054


def config_label(run: dict | None, info: dict) -> str:
    """What tells a side's runs apart on a chart, as the comparison tells its configurations apart
    (results/server_identity.run_config): the server's configuration where the result has an
    identity (info.server_identity: engine, precision, parallelism, GPUs), else the run's label,
    else its id."""
    from gpuparity.results.server_identity import run_config

    run = run or {}
    name = run_config(info.get("server_identity"), run.get("label"))[1]
    return str(name or run.get("run_id") or "?")[:120]


def _interval(value: float | None, log_se) -> list[float] | None:
    se = _number(log_se)
    if value is None or se is None or se <= 0:
        return None
    return [value * math.exp(-Z95 * se), value * math.exp(Z95 * se)]


def config_curves(side) -> dict[str, list[dict]]:
    """{curve key: points} over every run of a side (comparison/sides.Side, whose extras hold each
    run's serving info): each `point` with its configuration (config_label), its 95% intervals
    (throughput from its log_se, interactivity from its interactivity_log_se; None for a point of
    one request) and whether the envelope may use it (no failed request, counts checked), as the
    comparison uses points."""
    import json

    from gpuparity.comparison.sides import serving_infos

    out: dict[str, list[dict]] = {}
    for i, info, run in serving_infos(side):
        meta = side.meta[i]
        params = json.loads(meta[2]) if isinstance(meta[2], str) else meta[2]
        p = point({"category": "serving", "params": params, "info": info, "flags": side.flags[i]})
        if p is None or not p["interactivity"] or not p["output_per_gpu"]:
            continue
        s = info.get("serving") or {}
        p["config"] = config_label(run, info)
        p["ci_output"] = _interval(p["output_per_gpu"], s.get("log_se"))
        p["ci_total"] = (_interval(p["total_per_gpu"], s.get("log_se")) if p["total_per_gpu"] else None)
        p["ci_interactivity"] = _interval(p["interactivity"], s.get("interactivity_log_se"))
        p["usable"] = not p["failed"] and not p["unverified"]
        out.setdefault(p["curve"], []).append(p)
    for pts in out.values():
        pts.sort(key=lambda p: (p["config"], p["order"]))
    return out


def server_rows(sides: list, configs: list[tuple]) -> list[dict]:
    """Per side of a report with serving results: its server (identity text per configuration),
    its accuracy eval (correct of answered, summed over its runs as compare sums them:
    comparison/server_checks) and, beside them, its throughput: the best output tokens/s of its
    usable points (with the point's configuration, load and interactivity) and its highest
    interactivity. sides: comparison/sides.Side per side; configs: (label, short, config_curves)."""
    from gpuparity.comparison.server_checks import pooled, side_servers
    from gpuparity.results.server_identity import identity_text

    out = []
    for side, (_, short, curves) in zip(sides, configs, strict=True):
        pts = [p for per in curves.values() for p in per if p["usable"]]
        if not pts:
            continue
        found = side_servers(side)
        acc = pooled(found["evals"])
        best = max(pts, key=lambda p: p["output_per_gpu"])
        out.append({"side": short, "server": " | ".join(identity_text(i) for i in found["identities"]) or identity_text(None),
                    "accuracy": (f"{acc['correct']}/{acc['answered']} correct ({100 * acc['correct'] / acc['answered']:.0f}%) "
                                 f"on {acc['eval']} v{acc['version']}" + (f" over {acc['runs']} runs" if acc["runs"] > 1 else ""))
                    if acc and acc.get("answered") else "no accuracy eval",
                    "best": best["output_per_gpu"], "per": best["per"], "best_at": best["interactivity"],
                    "best_point": f"{best['config']} {best['load']}",
                    "top_interactivity": max(p["interactivity"] for p in pts)})
    return out
