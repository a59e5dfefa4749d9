"""Vendor claims checked against evidence: MLPerf reference rows, spec data, the price book, own runs.

A claims file (YAML) holds `claims:`, each with an id, the text as stated, its source, a subject
and a baseline platform, and `expected`: the claimed subject/baseline ratio as `ratio`, `min`
and/or `max`, or `direction` (higher | lower | parity), widened by `tolerance` (relative).
`kind` (one or a list) says which evidence answers it:
  mlperf   per-accelerator throughput of single-node, one-accelerator-type rows of one division,
           same model and scenario; `statistic: best` (default: the highest submission per side,
           i.e. what each platform can reach) or `median` (the typical submission).
  spec     a datasheet field (tdp_w, memory_gb, ...): the ratio, plus optional absolute bounds.
  price    $/GPU-hour in the shipped price book, one check per basis.
  own-runs stored runs of each platform compared by analysis.compare.compare_runs.
  porting  the tree-level score of a `gpuparity port` report (--port-report).
Verdicts: supported (every check holds), partly (some hold, or only the direction holds),
contradicted (none holds), untested (no evidence; `command` says what would settle it).
"""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

from gpuparity.errors import UserError

KINDS = ("mlperf", "spec", "price", "own-runs", "porting")
VERDICTS = ("supported", "partly", "contradicted", "untested")
DEFAULT_FILE = "rocm-vs-cuda-2025.yaml"


# -- loading --------------------------------------------------------------------------------------
def default_claims_text() -> str:
    return resources.files("gpuparity.analysis").joinpath(f"data/{DEFAULT_FILE}").read_text()


def load_claims(path: str | Path | None = None) -> list[dict]:
    import yaml

    if path is None:
        origin, text = f"(built-in) {DEFAULT_FILE}", default_claims_text()
    else:
        origin = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UserError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: cannot read ({exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"{origin}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise UserError(f"{origin}: not a claims file (no top-level 'claims' list)")
    claims, seen = [], set()
    for i, raw in enumerate(data["claims"], start=1):
        claim = validate_claim(raw, f"{origin}: claim {i}")
        if claim["id"] in seen:
            raise UserError(f"{origin}: claim {i}: duplicate id '{claim['id']}'")
        seen.add(claim["id"])
        claims.append(claim)
    return claims


def validate_claim(raw, where: str) -> dict:
    if not isinstance(raw, dict):
        raise UserError(f"{where}: not a mapping")
    if raw.get("id") is None or not str(raw["id"]).strip():
        raise UserError(f"{where}: field 'id' is missing")
    claim = dict(raw)
    claim["id"] = str(raw["id"])
    where = f"{where} ({claim['id']})"
    if not isinstance(raw.get("text"), str) or not raw["text"].strip():
        raise UserError(f"{where}: field 'text' is missing")
    kinds = raw.get("kind")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not kinds or not isinstance(kinds, list) or any(k not in KINDS for k in kinds):
        raise UserError(f"{where}: field 'kind' must be one or a list of {', '.join(KINDS)}")
    claim["kinds"] = kinds
    for side in ("subject", "baseline"):
        if side in raw and not isinstance(raw[side], dict):
            raise UserError(f"{where}: field '{side}' must be a mapping (gpu, stack, label)")
        claim[side] = dict(raw.get(side) or {})
    if "porting" not in kinds and not (claim["subject"] and claim["baseline"]):
        raise UserError(f"{where}: fields 'subject' and 'baseline' are required")
    if set(kinds) & {"mlperf", "spec", "price"} and not (claim["subject"].get("gpu") and claim["baseline"].get("gpu")):
        raise UserError(f"{where}: kind {'/'.join(kinds)} needs 'gpu' in subject and baseline")
    claim["bounds"] = expected_bounds(raw.get("expected"), where)
    tol = raw.get("tolerance", 0.05)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < 1:
        raise UserError(f"{where}: field 'tolerance' must be a fraction in [0, 1), e.g. 0.05")
    claim["tolerance"] = float(tol)
    if "mlperf" in kinds:
        m = raw.get("mlperf")
        if not isinstance(m, dict) or not m.get("model") or not m.get("scenario"):
            raise UserError(f"{where}: kind mlperf needs 'mlperf: {{model, scenario}}'")
        if m.get("statistic", "best") not in ("best", "median"):
            raise UserError(f"{where}: mlperf.statistic must be best or median")
    if "spec" in kinds:
        from gpuparity.platform.specs import NUMERIC

        if not (isinstance(raw.get("spec"), dict) and raw["spec"].get("field") in NUMERIC):
            raise UserError(f"{where}: kind spec needs 'spec: {{field}}', one of {', '.join(NUMERIC)}")
        for side in ("subject", "baseline"):
            if raw["spec"].get(f"{side}_bounds") is not None:
                expected_bounds(raw["spec"][f"{side}_bounds"], f"{where}: spec.{side}_bounds")
    for key in ("workload", "run"):
        if key in raw and not isinstance(raw[key], dict):
            raise UserError(f"{where}: field '{key}' must be a mapping")
    w = raw.get("workload") or {}
    if w.get("statistic", "geomean") not in ("geomean", "best"):
        raise UserError(f"{where}: workload.statistic must be geomean or best")
    if not isinstance(w.get("params") or {}, dict):
        raise UserError(f"{where}: workload.params must be a mapping")
    return claim


def expected_bounds(exp, where: str) -> tuple[float | None, float | None]:
    """(lo, hi) of the claimed ratio; None on a side means unbounded."""
    if not isinstance(exp, dict):
        raise UserError(f"{where}: field 'expected' must be a mapping (ratio | min/max | direction)")
    for key in ("ratio", "min", "max"):
        v = exp.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
            raise UserError(f"{where}: expected.{key} is not a non-negative number")
    if exp.get("ratio") is not None:
        return float(exp["ratio"]), float(exp["ratio"])
    direction = exp.get("direction")
    if direction is not None:
        table = {"higher": (1.0, None), "lower": (None, 1.0), "parity": (1.0, 1.0)}
        if direction not in table:
            raise UserError(f"{where}: expected.direction must be higher, lower or parity")
        return table[direction]
    if exp.get("min") is None and exp.get("max") is None:
        raise UserError(f"{where}: expected needs ratio, min/max or direction")
    return (None if exp.get("min") is None else float(exp["min"]),
            None if exp.get("max") is None else float(exp["max"]))


# -- checks and verdicts --------------------------------------------------------------------------
def within(value: float, bounds: tuple, tol: float) -> bool:
    lo, hi = bounds
    return (lo is None or value >= lo * (1 - tol)) and (hi is None or value <= hi * (1 + tol))


def bounds_text(bounds: tuple, tol: float) -> str:
    lo, hi = bounds
    if lo is not None and hi is not None:
        core = f"{lo:.3g}" if lo == hi else f"{lo:.3g}-{hi:.3g}"
    elif lo is not None:
        core = f">= {lo:.3g}"
    else:
        core = f"<= {hi:.3g}"
    return f"{core} (tolerance {tol:.0%})"


def ratio_check(value: float, bounds: tuple, tol: float, label: str, directional: bool = True) -> dict:
    """A pass/fail on a subject/baseline ratio, plus whether at least the claimed direction holds.

    directional=False for absolute figures (a board power, a score): no half credit.
    """
    lo, hi = bounds
    passed = within(value, bounds, tol)
    if not directional:
        direction_ok = False
    elif lo is not None and lo > 1:
        direction_ok = value > 1
    elif hi is not None and hi < 1:
        direction_ok = value < 1
    else:
        direction_ok = False  # a parity claim has no direction to half-keep
    verdict = "holds" if passed else ("direction only" if direction_ok else "fails")
    return {"passed": passed, "direction_ok": direction_ok, "value": value,
            "summary": f"{label}: {value:.3g} vs claimed {bounds_text(bounds, tol)}: {verdict}"}


def verdict_of(checks: list[dict]) -> str:
    if not checks:
        return "untested"
    passed = [c["passed"] for c in checks]
    if all(passed):
        return "supported"
    if any(passed) or all(c.get("direction_ok") for c in checks):
        return "partly"
    return "contradicted"


def side_label(side: dict) -> str:
    if side.get("label"):
        return side["label"]
    parts = [side.get("gpu") or "any GPU"]
    if side.get("stack"):
        parts.append(f"with {side['stack']}")
    return " ".join(parts)


def run_command(claim: dict) -> str | None:
    """The `gpuparity run` line that would measure this claim, with where to run it as a comment."""
    run = claim.get("run")
    if not run:
        return None
    parts = ["gpuparity run", *run.get("workloads", [])]
    if run.get("suite"):
        parts += ["--suite", str(run["suite"])]
    if run.get("dtype"):
        parts += ["--dtype", str(run["dtype"])]
    for k, v in (run.get("set") or {}).items():
        parts += ["--set", f"{k}={v}"]
    where = " and on ".join(side_label(claim[s]) for s in ("subject", "baseline") if claim.get(s))
    return " ".join(parts) + (f"  # on {where}, then: gpuparity claims check" if where else "")


# -- evidence per kind ----------------------------------------------------------------------------
def _stack_ok(row_stack: str | None, versions: dict, wanted: str | None) -> bool:
    """'rocm 7' matches an MLPerf row on ROCm 7.x; 'cuda' any CUDA row."""
    if not wanted:
        return True
    name, _, version = wanted.lower().partition(" ")
    if row_stack != name:
        return False
    return not version or str(versions.get(name) or "").startswith(version)


def evidence_mlperf(claim: dict, store) -> tuple[list, list, str | None]:
    from gpuparity.analysis.mlperf import SOURCE, USAGE_NOTE
    from gpuparity.analysis.reference import aggregate, describe, per_gpu_rows, resolve_spec

    m = claim["mlperf"]
    category = str(m.get("category", "closed")).lower()
    rnd = str(m["round"]).lstrip("v") if m.get("round") else None
    refs = [r for r in store.references(SOURCE) if rnd is None or r.get("round") == rnd]
    if not refs:
        what = f"MLPerf Inference {rnd} results" if rnd else "MLPerf Inference results"
        hint = (f"gpuparity reference import mlperf summary_results.json  # from "
                f"github.com/mlcommons/inference_results_v{rnd or '5.1'}")
        return [{"kind": "mlperf", "summary": f"no {what} imported"}], [], hint
    picks = {}
    for side in ("subject", "baseline"):
        spec_id = resolve_spec(claim[side]["gpu"])
        rows = per_gpu_rows(refs, spec_id, m["model"], m["scenario"], category, m.get("precision"))
        picks[side] = [r for r in rows if _stack_ok(r.get("stack"), r.get("versions") or {},
                                                     claim[side].get("stack"))]
    evidence = [{"kind": "mlperf", "ref_id": r["ref_id"], "result_id": r["result_id"], "side": side,
                 "value": r["per_accelerator"], "summary": f"{side}: {describe(r)}", "note": USAGE_NOTE}
                for side, rows in picks.items() for r in sorted(rows, key=lambda r: -r["per_accelerator"])]
    filters = (f"{m['model']} {m['scenario']}, {category} division"
               + (f", {m['precision']}" if m.get("precision") else "") + (f", round {rnd}" if rnd else ""))
    missing = [s for s in ("subject", "baseline") if not picks[s]]
    if missing:
        for side in missing:
            evidence.append({"kind": "mlperf", "side": side, "summary": (
                f"{side}: no single-node {side_label(claim[side])} rows for {filters} among {len(refs)} "
                f"imported MLPerf rows{_elsewhere(refs, claim[side], m)}")})
        # A claim that the subject *has* such results ("leads MLPerf v5.1 in FP4") fails on their absence.
        if "subject" in missing and m.get("require_subject_rows"):
            return evidence, [{"passed": False, "direction_ok": False,
                               "summary": f"the claim needs {side_label(claim['subject'])} results for "
                                          f"{filters}; the imported data has none"}], None
        return evidence, [], None
    stat = m.get("statistic", "best")
    s, b = aggregate(picks["subject"], stat), aggregate(picks["baseline"], stat)
    cite = ""
    if stat == "best":
        best = [max(picks[x], key=lambda r: r["per_accelerator"])["result_id"] for x in ("subject", "baseline")]
        cite = f", {best[0]} vs {best[1]}"
    check = ratio_check(s / b, claim["bounds"], claim["tolerance"],
                        f"{stat} per-accelerator throughput (derived, not verified by MLCommons) "
                        f"{side_label(claim['subject'])} / {side_label(claim['baseline'])} = {s:,.1f} / {b:,.1f} "
                        f"({len(picks['subject'])} vs {len(picks['baseline'])} rows{cite}; {filters})")
    return evidence, [check], None


def _elsewhere(refs: list[dict], side: dict, m: dict) -> str:
    """Where the side's part does appear for that model (other division or precision), for context."""
    from gpuparity.analysis.reference import resolve_spec

    spec_id = resolve_spec(side["gpu"])
    other = sorted({f"{r['category']}/{r.get('precision') or '-'}/{r['nodes']} node(s)" for r in refs
                    if r.get("spec_id") == spec_id and r["model"] == m["model"]
                    and r["scenario"].lower() == str(m["scenario"]).lower()})
    return f"; it appears as: {', '.join(other)}" if other else ""


def evidence_spec(claim: dict) -> tuple[list, list, str | None]:
    from gpuparity.analysis.reference import resolve_spec
    from gpuparity.platform.specs import all_specs

    field = claim["spec"]["field"]
    specs = {s: all_specs()[resolve_spec(claim[s]["gpu"])] for s in ("subject", "baseline")}
    evidence, checks = [], []
    for side, spec in specs.items():
        value = spec.get(field)
        if value is None:
            return ([{"kind": "spec", "summary": f"{spec['id']} has no '{field}' in the spec data"}], [], None)
        evidence.append({"kind": "spec", "spec_id": spec["id"], "side": side, "value": value,
                         "source": spec.get("source"), "summary": f"{side}: {spec['product']} {field} = {value:g}"
                         f" (spec data: {spec['id']})"})
        bound = claim["spec"].get(f"{side}_bounds")
        if bound:
            b = expected_bounds(bound, f"claim {claim['id']}: spec.{side}_bounds")
            checks.append(ratio_check(value, b, claim["tolerance"], f"{spec['id']} {field}", False))
    ratio = specs["subject"][field] / specs["baseline"][field]
    checks.append(ratio_check(ratio, claim["bounds"], claim["tolerance"],
                              f"{field} ratio {specs['subject']['id']} / {specs['baseline']['id']}"))
    return evidence, checks, None


def evidence_price(claim: dict) -> tuple[list, list, str | None]:
    from gpuparity.analysis.prices import BASES, price_book
    from gpuparity.analysis.reference import resolve_spec

    book = price_book()
    ids = {s: resolve_spec(claim[s]["gpu"]) for s in ("subject", "baseline")}
    evidence, checks = [], []
    for basis in (claim.get("price") or {}).get("bases") or BASES:
        rows = {s: book.get((ids[s], basis)) for s in ids}
        if not all(rows.values()):
            evidence.append({"kind": "price", "summary": f"{basis}: no price for "
                             + ", ".join(ids[s] for s in ids if not rows[s])})
            continue
        for side, row in rows.items():
            evidence.append({"kind": "price", "side": side, "basis": basis, "value": row["usd_per_gpu_hour"],
                             "source": row["source"], "summary": f"{side}: {ids[side]} {basis} "
                             f"${row['usd_per_gpu_hour']:.2f}/GPU-h (price book, {row['date'] or 'undated'})"})
        ratio = rows["subject"]["usd_per_gpu_hour"] / rows["baseline"]["usd_per_gpu_hour"]
        checks.append(ratio_check(ratio, claim["bounds"], claim["tolerance"],
                                  f"{basis} price ratio {ids['subject']} / {ids['baseline']}"))
    return evidence, checks, None


def _runs_for(store, side: dict) -> list[dict]:
    ids = [r["run_id"] for r in store.list_runs(limit=10000, gpu=side.get("gpu"), stack=side.get("stack"))]
    return [store.get_run(i) for i in ids]


def evidence_own_runs(claim: dict, store) -> tuple[list, list, str | None]:
    command = run_command(claim)
    subject = _runs_for(store, claim["subject"])
    taken = {r["run_id"] for r in subject}
    baseline = [r for r in _runs_for(store, claim["baseline"]) if r["run_id"] not in taken]
    missing = [s for s, runs in (("subject", subject), ("baseline", baseline)) if not runs]
    if missing:
        return ([{"kind": "own-runs", "summary": f"no stored runs on {side_label(claim[s])}"} for s in missing],
                [], command)
    try:
        from gpuparity.analysis.compare import compare_runs
    except ImportError:
        return [{"kind": "own-runs", "summary": "run comparison (gpuparity.analysis.compare) not installed"}], [], command
    result = compare_runs(baseline, subject, tolerance=claim["tolerance"])  # ratio = subject / baseline
    w = claim.get("workload") or {}
    names, dtype, cat = w.get("names"), w.get("dtype"), w.get("category")
    rows = [r for r in result.get("rows", [])
            if (not names or r.get("workload") in names) and (not dtype or r.get("dtype") == dtype)
            and (not cat or r.get("category") == cat) and _params_match(r.get("params"), w.get("params"))
            and _positive(r.get("ratio"))]
    if not rows:
        return ([{"kind": "own-runs", "summary": f"{len(subject)} and {len(baseline)} stored runs share no "
                  f"results for {', '.join(names or [cat or 'any workload'])}"}], [], command)
    evidence = [{"kind": "own-runs", "side": side, "run_ids": [d["run_id"] for d in docs],
                 "summary": f"{side}: {len(docs)} stored run(s) on {side_label(claim[side])}: "
                            + ", ".join(d["run_id"] for d in docs[:5]) + (" ..." if len(docs) > 5 else "")}
                for side, docs in (("subject", subject), ("baseline", baseline))]
    evidence += [{"kind": "own-runs", "workload": r.get("workload"), "value": r["ratio"],
                 "summary": f"{r.get('workload')} {r.get('dtype') or ''} {_params(r)}: subject/baseline "
                            f"{r['ratio']:.3g} (95% CI {_num(r.get('ci_low'))}-{_num(r.get('ci_high'))}), "
                            f"{r.get('verdict', '')}".replace("  ", " ")} for r in rows]
    stat = w.get("statistic", "geomean")
    ratios = [r["ratio"] for r in rows]
    value = max(ratios) if stat == "best" else math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    checks = [ratio_check(value, claim["bounds"], claim["tolerance"],
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


def evidence_porting(claim: dict, port_report: str | None) -> tuple[list, list, str | None]:
    command = "gpuparity port SRC --json score.json  # SRC: a CUDA tree; then: gpuparity claims check --port-report score.json"
    if not port_report:
        return [{"kind": "porting", "summary": "no port report given (--port-report FILE)"}], [], command
    try:
        report = json.loads(Path(port_report).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{port_report}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{port_report}: not a readable port report ({exc})") from None
    score = port_score(report) if isinstance(report, dict) else None
    if score is None:
        raise UserError(f"{port_report}: no tree-level score (summary.score) in this port report")
    summary = report.get("summary") or {}
    counts = f" ({summary['supported']}/{summary['uses']} CUDA API uses)" if "uses" in summary else ""
    evidence = [{"kind": "porting", "value": score, "summary": f"gpuparity port score for "
                 f"{report.get('src') or port_report}: {score:.1%}{counts} map to HIP automatically"}]
    return evidence, [ratio_check(score, claim["bounds"], claim["tolerance"], "portability score", False)], None


# -- entry point ----------------------------------------------------------------------------------
def evaluate_claim(claim: dict, store, port_report: str | None = None) -> dict:
    evidence, checks, commands = [], [], []
    for kind in claim["kinds"]:
        if kind == "mlperf":
            ev, ch, cmd = evidence_mlperf(claim, store)
        elif kind == "spec":
            ev, ch, cmd = evidence_spec(claim)
        elif kind == "price":
            ev, ch, cmd = evidence_price(claim)
        elif kind == "own-runs":
            ev, ch, cmd = evidence_own_runs(claim, store)
        else:
            ev, ch, cmd = evidence_porting(claim, port_report)
        evidence += ev
        evidence += [{"kind": "check", "passed": c["passed"], "summary": c["summary"]} for c in ch]
        checks += ch
        if cmd:
            commands.append(cmd)
    verdict = verdict_of(checks)
    if verdict == "untested" and not commands:
        commands.append(run_command(claim))
    source = claim.get("source")
    return {
        "id": claim["id"],
        "text": claim["text"].strip(),
        "kind": claim["kinds"],
        "source": source if isinstance(source, (str, type(None))) else json.dumps(source),
        "subject": side_label(claim["subject"]) if claim["subject"] else None,
        "baseline": side_label(claim["baseline"]) if claim["baseline"] else None,
        "expected": bounds_text(claim["bounds"], claim["tolerance"]),
        "verdict": verdict,
        "evidence": evidence,
        "command": "\n".join(c for c in commands if c) if verdict == "untested" else None,
        "note": claim.get("note"),
    }


def evaluate_claims(store, claims_file: str | Path | None = None, port_report: str | None = None) -> list[dict]:
    """Each claim of the file (default: the shipped rocm-vs-cuda-2025 set) with verdict and evidence."""
    return [evaluate_claim(c, store, port_report) for c in load_claims(claims_file)]
