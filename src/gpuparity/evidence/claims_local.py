"""Claim evidence this install holds itself: the spec data, the price book, the store's own runs
and a `gpuparity port` report.
"""

from __future__ import annotations

import math

from gpuparity import validate
from gpuparity.errors import UserError
from gpuparity.evidence.citations import first_url
from gpuparity.evidence.claims_checks import missing, ratio_check, resolve_spec, run_command, side_label
from gpuparity.evidence.claims_models import Claim, Side

MAX_PORT_REPORT_BYTES = 64 * validate.MiB
# Where the price book's bases are published (the book's source column names them in words).
PRICE_SOURCES = {"InferenceX-app": "https://github.com/SemiAnalysisAI/InferenceX-app"}


def price_url(source: str | None) -> str | None:
    """The page a price book row comes from: a URL in its source, or the known publisher's."""
    return first_url(source) or next((url for key, url in PRICE_SOURCES.items() if key in (source or "")), None)


def evidence_spec(claim: Claim) -> tuple[list, list, str | None]:
    from gpuparity.platform.specs import all_specs

    field = claim.spec.field
    specs = {s: all_specs()[resolve_spec(getattr(claim, s).gpu)] for s in ("subject", "baseline")}
    evidence, checks = [], []
    for side, spec in specs.items():
        value = spec.get(field)
        if value is None:
            return [missing("spec", f"{spec['id']} has no '{field}' in the spec data", side)], [], None
        url = first_url(spec.get("source"))
        evidence.append({"kind": "spec", "spec_id": spec["id"], "side": side, "value": value, "url": url,
                         "source": spec.get("source"), "summary": f"{side}: {spec['product']} {field} = {value:g}"
                         f" (spec data: {spec['id']}; {url or spec.get('source') or 'no source'})"})
        bound = getattr(claim.spec, f"{side}_bounds")
        if bound:
            checks.append(ratio_check(value, bound.bounds(), claim.tolerance, f"{spec['id']} {field}",
                                      f"{spec['id']} {field}", directional=False))
    ratio = specs["subject"][field] / specs["baseline"][field]
    checks.append(ratio_check(ratio, claim.expected.bounds(), claim.tolerance, f"{field} ratio",
                              f"{field} ratio {specs['subject']['id']} {specs['subject'][field]:g} / "
                              f"{specs['baseline']['id']} {specs['baseline'][field]:g}"))
    return evidence, checks, None


def evidence_price(claim: Claim) -> tuple[list, list, str | None]:
    from gpuparity.platform.prices import BASES, price_book

    book = price_book()
    ids = {s: resolve_spec(getattr(claim, s).gpu) for s in ("subject", "baseline")}
    evidence, checks = [], []
    for basis in (claim.price.bases if claim.price and claim.price.bases else BASES):
        rows = {s: book.get((ids[s], basis)) for s in ids}
        if not all(rows.values()):
            evidence.append(missing("price", f"{basis}: no price for " + ", ".join(ids[s] for s in ids if not rows[s])))
            continue
        for side, row in rows.items():
            url = price_url(row["source"])
            evidence.append({"kind": "price", "side": side, "basis": basis, "value": row["usd_per_gpu_hour"],
                             "source": row["source"], "url": url, "summary": f"{side}: {ids[side]} {basis} "
                             f"${row['usd_per_gpu_hour']:.2f}/GPU-h (price book, {row['date'] or 'undated'}; "
                             f"{url or row['source']})"})
        ratio = rows["subject"]["usd_per_gpu_hour"] / rows["baseline"]["usd_per_gpu_hour"]
        checks.append(ratio_check(ratio, claim.expected.bounds(), claim.tolerance, basis,
                                  f"{basis} price {ids['subject']} ${rows['subject']['usd_per_gpu_hour']:.2f} / "
                                  f"{ids['baseline']} ${rows['baseline']['usd_per_gpu_hour']:.2f}"))
    return evidence, checks, None


def _runs_for(store, side: Side) -> list[str]:
    """Ids of every stored run of the side's GPU (its spec id or product) and stack: an indexed
    query over the runs table, no document read and no cap."""
    return store.run_ids(gpu=resolve_spec(side.gpu), stack=side.stack)[::-1]     # newest first


def evidence_own_runs(claim: Claim, store) -> tuple[list, list, str | None]:
    command = run_command(claim)
    subject = _runs_for(store, claim.subject)
    taken = set(subject)
    baseline = [i for i in _runs_for(store, claim.baseline) if i not in taken]
    lacking = [s for s, runs in (("subject", subject), ("baseline", baseline)) if not runs]
    if lacking:
        return [missing("own-runs", f"no stored runs on {side_label(getattr(claim, s))}", s) for s in lacking], [], command
    from gpuparity.comparison.compare import compare_sides
    from gpuparity.comparison.sides import side_from_store

    # The results table's columns, as `compare` reads them: the cost of these runs' rows only.
    result = compare_sides(side_from_store(store, baseline, "A"), side_from_store(store, subject, "B"),
                           claim.tolerance)  # ratio = subject / baseline
    w = claim.workload
    names = w.names if w else None
    rows = [r for r in result.get("rows", [])
            if (not names or r.get("workload") in names) and (not w or not w.dtype or r.get("dtype") == w.dtype)
            and (not w or not w.category or r.get("category") == w.category)
            and _params_match(r.get("params"), w.params if w else None) and _positive(r.get("ratio"))]
    if not rows:
        return [missing("own-runs", f"{len(subject)} and {len(baseline)} stored runs share no results for "
                        f"{', '.join(names or [(w.category if w else None) or 'any workload'])}")], [], command
    evidence = [{"kind": "own-runs", "side": side, "run_ids": ids,
                 "summary": f"{side}: {len(ids)} stored run(s) on {side_label(getattr(claim, side))}: "
                            + ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")}
                for side, ids in (("subject", subject), ("baseline", baseline))]
    evidence += [{"kind": "own-runs", "workload": r.get("workload"), "value": r["ratio"],
                  "summary": f"{r.get('workload')} {r.get('dtype') or ''} {_params(r)}: subject/baseline "
                             f"{r['ratio']:.3g} (95% CI {_num(r.get('ci_low'))}-{_num(r.get('ci_high'))}), "
                             f"{r.get('verdict', '')}".replace("  ", " ")} for r in rows]
    stat = w.statistic if w else "geomean"
    ratios = [r["ratio"] for r in rows]
    value = max(ratios) if stat == "best" else math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    checks = [ratio_check(value, claim.expected.bounds(), claim.tolerance, "own runs",
                          f"{stat} of {len(rows)} matched results, {len(subject)} vs {len(baseline)} runs")]
    return evidence, checks, None


def _params_match(params, wanted: dict | None) -> bool:
    """Each wanted parameter appears (case-insensitive substring: 'deepseek-r1' in a model path)."""
    if not wanted:
        return True
    params = params if isinstance(params, dict) else {}
    return all(str(v).lower() in str(params.get(k, "")).lower() for k, v in wanted.items())


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and x > 0 and math.isfinite(x)


def _num(x) -> str:
    return f"{x:.3g}" if isinstance(x, (int, float)) else "?"


def _params(row: dict) -> str:
    params = row.get("params") or {}
    return ", ".join(f"{k}={v}" for k, v in params.items()) if isinstance(params, dict) else str(params)


def port_score(report: dict) -> float | None:
    """The tree-level score of a `gpuparity port --json` report (schema gpuparity.port/1: summary.score,
    a share in [0, 1]; None when the tree uses no CUDA API). A bare top-level `score` is accepted too."""
    summary = report.get("summary") if isinstance(report.get("summary"), dict) else {}
    value = summary.get("score", report.get("score"))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        return None
    return value / 100.0 if value > 1 else float(value)


def evidence_porting(claim: Claim, port_report: str | None) -> tuple[list, list, str | None]:
    command = "gpuparity port SRC --json score.json  # SRC: a CUDA tree; then: gpuparity claims check --port-report score.json"
    if not port_report:
        return [missing("porting", "no port report given (--port-report FILE)")], [], command
    report = validate.load_json(port_report, MAX_PORT_REPORT_BYTES, "port report")
    score = port_score(report) if isinstance(report, dict) else None
    if score is None:
        raise UserError(f"{port_report}: no tree-level score (summary.score) in this port report")
    summary = report.get("summary") or {}
    counts = ""
    if all(isinstance(summary.get(k), int) and not isinstance(summary.get(k), bool) for k in ("supported", "uses")):
        counts = f" ({summary['supported']}/{summary['uses']} CUDA API uses)"
    src = report.get("src") if isinstance(report.get("src"), str) else port_report
    evidence = [{"kind": "porting", "value": score, "summary": f"gpuparity port score for "
                 f"{validate.terminal_safe(src)[:300]}: {score:.1%}{counts} map to HIP automatically"}]
    return evidence, [ratio_check(score, claim.expected.bounds(), claim.tolerance, "portability score",
                                  "portability score", directional=False)], None
