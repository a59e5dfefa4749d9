"""Vendor claims checked against evidence: MLPerf Inference and Training rows, spec data, the
price book, own runs and port reports.

A claims file (YAML, schema in claims_models) holds `claims:`, each with an id, the text as
stated, its source, a subject and a baseline platform, and `expected`: the claimed
subject/baseline ratio as `ratio`, `min` and/or `max`, or `direction` (higher | lower | parity),
widened by `tolerance` (relative). A ratio always reads "subject is x times baseline" (for times
to train and latencies: baseline time / subject time). `kind` (one or a list) says which evidence
answers it:
  mlperf           per-accelerator throughput of single-node, one-accelerator-type inference rows
                   of one model (the checker's name or the round's display label) and scenario, or,
                   where the benchmark is scored in latency, whole-system latency at equal
                   accelerator counts; compared as `reference compare` compares them
                   (evidence/rules: division, availability, precision class, accelerator
                   count, variants, distinct runs; one check per round); `statistic: best` (the
                   best submission per side: what each platform can reach) or `median`.
  mlperf-training  MLPerf Training time to train of one benchmark, under the same rules, at equal
                   accelerator counts; best = the fastest submission per side.
  mlperf-rounds    the same system (submitter, system, accelerator count and nodes) in two
                   inference rounds: later / earlier result, subject = the later round; the rules'
                   one exception to one round at a time (evidence/rules.compare_rounds: division,
                   availability, precision class and distinct runs hold; one check per precision
                   class), stated in the evidence's rules line.
  spec             a datasheet field (tdp_w, memory_gb, ...): the ratio, plus optional absolute bounds.
  price            $/GPU-hour in the shipped price book, one check per basis.
  own-runs         stored runs of each platform compared by comparison.compare.compare_runs.
  porting          the tree-level score of a `gpuparity port` report (--port-report).
Verdicts: supported (every check holds), partly (some hold, or only the direction holds),
contradicted (the evidence there is contradicts it: every check fails), untested (no evidence
decides it; `command` says what would settle it). Missing evidence never contradicts a claim.
Each verdict carries `reasoning` (one paragraph: the claim's own reasoning, then why this
verdict) and `rows` (the reference rows and runs it rests on, with round, result ID, submitter).
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

from gpuparity import validate
from gpuparity.errors import UserError
from gpuparity.evidence.claims_models import KINDS, Claim, ClaimsFile, Side

__all__ = ["KINDS", "VERDICTS", "evaluate_claim", "evaluate_claims", "load_claims"]

VERDICTS = ("supported", "partly", "contradicted", "untested")
DEFAULT_FILE = "rocm-vs-cuda-2025.yaml"
MAX_CLAIMS_BYTES = 4 * validate.MiB
MAX_PORT_REPORT_BYTES = 64 * validate.MiB


# -- loading --------------------------------------------------------------------------------------
def default_claims_text() -> str:
    return resources.files("gpuparity.evidence").joinpath(f"data/{DEFAULT_FILE}").read_text()


def load_claims(path: str | Path | None = None) -> list[Claim]:
    """The claims of a file (default: the shipped set), each validated; one-line UserError otherwise."""
    if path is None:
        origin, text = f"(built-in) {DEFAULT_FILE}", default_claims_text()
    else:
        origin = str(path)
        text = validate.decode_text(validate.read_bounded(origin, MAX_CLAIMS_BYTES, "claims file"), origin)
    data = validate.load_yaml(text, origin)
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise UserError(f"{origin}: not a claims file (no top-level 'claims' list)")
    doc = validate.parse(ClaimsFile, data, origin)
    claims, seen = [], set()
    for i, raw in enumerate(doc.claims, start=1):
        rid = raw.get("id") if isinstance(raw, dict) else None
        where = f"{origin}: claim {i}" + (f" ({rid})" if isinstance(rid, (str, int)) and not isinstance(rid, bool)
                                           and len(str(rid)) <= 40 and str(rid).isprintable() else "")
        if not isinstance(raw, dict):
            raise UserError(f"{where}: not a mapping")
        claim = validate.parse(Claim, raw, where)
        for side in ("subject", "baseline"):
            gpu = getattr(claim, side).gpu if getattr(claim, side) else None
            if gpu:
                try:
                    resolve_spec(gpu)
                except UserError as exc:
                    raise UserError(f"{where}: {side}.gpu: {exc}") from None
        if claim.id in seen:
            raise UserError(f"{where}: duplicate id {claim.id!r}")
        seen.add(claim.id)
        claims.append(claim)
    return claims


def resolve_spec(ref: str) -> str:
    from gpuparity.evidence.reference import resolve_spec as resolve

    return resolve(ref)


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
    """Only checks made on evidence decide; with none, the claim is untested (never contradicted)."""
    if not checks:
        return "untested"
    passed = [c["passed"] for c in checks]
    if all(passed):
        return "supported"
    if any(passed) or all(c.get("direction_ok") for c in checks):
        return "partly"
    return "contradicted"


LEADS = {
    "supported": "Supported: every check on the evidence holds",
    "partly": "Partly supported: some checks hold, or only the claimed direction",
    "contradicted": "Contradicted: every check on the evidence fails",
    "untested": "Untested: no evidence decides it",
}


def reasoning_of(claim: Claim, verdict: str, checks: list[dict], evidence: list[dict], command: str | None) -> str:
    """One paragraph: the claim's own reasoning (domain facts), then why this verdict."""
    if checks:
        detail = "; ".join(c["summary"] for c in checks)
    else:
        detail = "; ".join(e["summary"] for e in evidence if e.get("missing")) or "no check could be made"
    text = f"{LEADS[verdict]} ({detail})."
    if verdict == "untested" and command:
        text += " What would settle it: " + "; or ".join(line.split("  #")[0] for line in command.splitlines()) + "."
    return " ".join(f"{claim.reasoning.strip()} {text}".split()) if claim.reasoning else text


def side_label(side: Side | None) -> str:
    if side is None:
        return "-"
    if side.label:
        return side.label
    return " ".join([side.gpu or "any GPU"] + ([f"with {side.stack}"] if side.stack else []))


def run_command(claim: Claim) -> str | None:
    """The `gpuparity run` line that would measure this claim, with where to run it as a comment."""
    run = claim.run
    if not run:
        return None
    parts = ["gpuparity run", *run.workloads]
    if run.suite:
        parts += ["--suite", run.suite]
    if run.dtype:
        parts += ["--dtype", run.dtype]
    for k, v in (run.set or {}).items():
        parts += ["--set", f"{k}={v}"]
    where = " and on ".join(side_label(s) for s in (claim.subject, claim.baseline) if s)
    return " ".join(parts) + (f"  # on {where}, then: gpuparity claims check" if where else "")


def missing(kind: str, summary: str, side: str | None = None) -> dict:
    """Evidence that is not there: shown, and it makes the claim untested (never contradicted)."""
    return {"kind": kind, "summary": summary, "missing": True, **({"side": side} if side else {})}


# -- MLPerf evidence ----------------------------------------------------------------------------------
def _stack_ok(row: dict, wanted: str | None) -> bool:
    """'rocm 7' matches a row on ROCm 7.x; 'cuda' any CUDA row."""
    if not wanted:
        return True
    name, _, version = wanted.lower().partition(" ")
    if row.get("stack") != name:
        return False
    return not version or str((row.get("versions") or {}).get(name) or "").startswith(version)


def _stack_of(row: dict) -> str:
    version = (row.get("versions") or {}).get(row.get("stack") or "")
    return f"{row.get('stack') or 'unknown stack'}{f' {version}' if version else ''}"


class References:
    """The stored reference rows of each source, read once for all the claims of one check."""

    def __init__(self, store):
        self.store, self._rows = store, {}

    def rows(self, source: str) -> list[dict]:
        from gpuparity.evidence.reference import stored_rows

        if source not in self._rows:
            self._rows[source] = stored_rows(self.store, source)[0]
        return self._rows[source]


def _row_evidence(kind: str, side: str, row: dict, value: float) -> dict:
    from gpuparity.evidence.reference import citation, describe

    return {"kind": kind, "side": side, "ref_id": row["ref_id"], "result_id": row["result_id"],
            "round": row.get("round"), "submitter": row.get("submitter"), "value": value,
            "summary": f"{side}: {describe(row)}", "note": row.get("note"), "row": citation(row, side)}


def _import_hint(source: str, rnd: str | None) -> str:
    if source == "mlperf-training":
        return (f"gpuparity reference import mlperf-training training_results_v{rnd or '5.0'}/  "
                f"# a clone of github.com/mlcommons/training_results_v{rnd or '5.0'}")
    return (f"gpuparity reference import mlperf summary_results.json  # from "
            f"github.com/mlcommons/inference_results_v{rnd or '5.1'}")


def _pairs(claim: Claim, rows: list[dict], rules, statistic: str) -> dict:
    """The comparison rules' groups for a claim: A = baseline, B = subject, so each group's ratio
    (B / A, as `reference compare` reports it) is the claim's subject / baseline."""
    from gpuparity.evidence.rules import compare_groups

    def stack_ok(side: str, row: dict) -> bool:
        return _stack_ok(row, (claim.baseline if side == "a" else claim.subject).stack)

    return compare_groups(rows, resolve_spec(claim.baseline.gpu), resolve_spec(claim.subject.gpu), rules,
                          statistic, stack_ok)


def _cited(kind: str, result: dict) -> list[dict]:
    """The rows each decided group rests on (with none decided: the rows there are), subject
    first, best first (by the figure its group compares), each row once."""
    seen, out = set(), []
    for side, key in (("subject", "b"), ("baseline", "a")):
        rows = [(r, g["field"], g["lower_is_better"]) for g in result["groups"] or result["unpaired"]
                for r in g["_rows"][key]]
        for r, field, _ in sorted(rows, key=lambda t: t[0][t[1]] if t[2] else -t[0][t[1]]):
            if (side, r["ref_id"]) not in seen:
                seen.add((side, r["ref_id"]))
                out.append(_row_evidence(kind, side, r, r[field]))
    return out


def _where(g: dict) -> str:
    return ", ".join(x for x in (f"round {g['round']}", f"{g['division']} division",
                                 f"{g['precision']} precision" if g.get("precision") not in (None, "any") else "",
                                 f"{g['accelerators']} accelerators" if g.get("accelerators") else "") if x)


def _unpaired(kind: str, result: dict) -> list[dict]:
    """Both parts have rows, but never in one like-for-like group: say where each side stands."""
    where = {s: sorted({_where(u) for u in result["unpaired"] if u["side"] == k})
             for s, k in (("subject", "b"), ("baseline", "a"))}
    return [missing(kind, "no like-for-like pair (same round, division, precision class and accelerator "
                    f"count): subject rows in {'; '.join(where['subject'])}; baseline rows in "
                    f"{'; '.join(where['baseline'])}")]


def evidence_mlperf(claim: Claim, refs: References) -> tuple[list, list, str | None]:
    from gpuparity.evidence.mlperf import SOURCE
    from gpuparity.evidence.rules import Rules

    m = claim.mlperf
    rnd = m.round.lstrip("v") if m.round else None
    refs = [r for r in refs.rows(SOURCE) if rnd is None or r.get("round") == rnd]
    if not refs:
        what = f"MLPerf Inference {rnd} results" if rnd else "MLPerf Inference results"
        return [missing("mlperf", f"no {what} imported")], [], _import_hint(SOURCE, rnd)
    rules = Rules.make(division=m.category, status=m.status, precision=m.precision)
    rows = [r for r in refs if m.model in (r["model"], r.get("benchmark_label"))
            and r["scenario"].lower() == m.scenario.lower()
            and (m.accelerators is None or r["accelerators"] == m.accelerators)]
    result = _pairs(claim, rows, rules, m.statistic)
    evidence = _cited("mlperf", result)
    filters = (f"{m.model} {m.scenario}, {m.category} division" + (f", {m.precision}" if m.precision else "")
               + (f", round {rnd}" if rnd else ""))
    if not result["groups"]:
        sides = {s: any(u["side"] == k for u in result["unpaired"]) for s, k in (("subject", "b"), ("baseline", "a"))}
        if all(sides.values()):
            return evidence + _unpaired("mlperf", result), [], _import_hint(SOURCE, rnd)
        evidence += [missing("mlperf", f"{side}: no single-node {side_label(getattr(claim, side))} rows for {filters} "
                                       f"among {len(refs)} imported MLPerf rows{_elsewhere(refs, getattr(claim, side), m)}",
                             side) for side, present in sides.items() if not present]
        return evidence, [], _import_hint(SOURCE, rnd)
    checks = []
    for g in result["groups"]:
        a, b = g["a"], g["b"]
        cite = f", {b['best']} vs {a['best']}" if m.statistic == "best" else ""
        what = (f"{m.statistic} whole-system latency, {g['units']}, lower is better (ratio baseline / subject): "
                f"{side_label(claim.baseline)} / {side_label(claim.subject)} = {a['value']:,.4g} / {b['value']:,.4g}"
                if g["lower_is_better"] else
                f"{m.statistic} per-accelerator throughput (derived, not verified by MLCommons) "
                f"{side_label(claim.subject)} / {side_label(claim.baseline)} = {b['value']:,.1f} / {a['value']:,.1f}")
        checks.append(ratio_check(g["ratio"], claim.expected.bounds(), claim.tolerance,
                                  f"{what} ({b['rows']} vs {a['rows']} rows{cite}; {m.model} {m.scenario}, "
                                  f"{_where(g)})"))
    return evidence, checks, None


def _elsewhere(refs: list[dict], side: Side, m) -> str:
    """Where the side's part does appear for that model (other division or precision), for context."""
    spec_id = resolve_spec(side.gpu)
    other = sorted({f"{r['category']}/{r.get('precision') or '-'}/{r['nodes']} node(s)/{_stack_of(r)}" for r in refs
                    if r.get("spec_id") == spec_id and r["model"] == m.model
                    and r["scenario"].lower() == m.scenario.lower()})
    return f"; it appears as: {', '.join(other)}" if other else ""


def evidence_training(claim: Claim, refs: References) -> tuple[list, list, str | None]:
    """Time to train per side at equal accelerator counts, one round at a time;
    ratio = baseline time / subject time."""
    from gpuparity.evidence.mlperf_training import SOURCE
    from gpuparity.evidence.rules import Rules

    t = claim.training
    rnd = t.round.lstrip("v") if t.round else None
    refs = [r for r in refs.rows(SOURCE) if (rnd is None or r.get("round") == rnd)
            and r["model"] == t.benchmark and r["category"] == t.division and r.get("time_to_train_min")]
    filters = f"{t.benchmark}, {t.division} division" + (f", round {rnd}" if rnd else "")
    if not refs:
        return [missing("mlperf-training", f"no MLPerf Training results for {filters} imported")], [], \
            _import_hint(SOURCE, rnd)
    rows = [r for r in refs if t.accelerators is None or r["accelerators"] == t.accelerators]
    result = _pairs(claim, rows, Rules.make(division=t.division, status=t.status), t.statistic)
    evidence = _cited("mlperf-training", result)
    if not result["groups"]:
        sides = {s: [u for u in result["unpaired"] if u["side"] == k] for s, k in (("subject", "b"), ("baseline", "a"))}
        if all(sides.values()):
            return evidence + _unpaired("mlperf-training", result), [], _import_hint(SOURCE, rnd)
        for side, present in sides.items():
            if present:
                continue
            seen = sorted({f"{r['accelerators']}x {_stack_of(r)} (round {r.get('round')})" for r in refs
                           if r.get("spec_id") == resolve_spec(getattr(claim, side).gpu)})
            evidence.append(missing("mlperf-training", f"{side}: no {side_label(getattr(claim, side))} results for "
                                    f"{filters}" + (f" at {t.accelerators} accelerators" if t.accelerators else "")
                                    + f" among {len(refs)} imported" + (f"; it appears as {', '.join(seen)}" if seen else ""),
                                    side))
        return evidence, [], _import_hint(SOURCE, rnd)
    checks = []
    for g in result["groups"]:
        a, b = g["a"], g["b"]
        checks.append(ratio_check(g["ratio"], claim.expected.bounds(), claim.tolerance,
                                  f"{t.statistic} time to train on {g['accelerators']} accelerators, "
                                  f"{side_label(claim.baseline)} / {side_label(claim.subject)} = {a['value']:.2f} / "
                                  f"{b['value']:.2f} min ({b['rows']} vs {a['rows']} results; {b['best']} vs "
                                  f"{a['best']}; {t.benchmark}, {_where(g)})"))
    return evidence, checks, None


def evidence_rounds(claim: Claim, refs: References) -> tuple[list, list, str | None]:
    """The same system in two inference rounds: later / earlier result (subject = later round),
    under the comparison rules' one exception to one round at a time (rules.compare_rounds)."""
    from gpuparity.evidence.mlperf import SOURCE
    from gpuparity.evidence.rules import Rules, aggregate, compare_rounds

    m = claim.mlperf
    early, late = (r.lstrip("v") for r in m.rounds)
    rules = Rules.make(division=m.category, status=m.status, precision=m.precision)
    rows = [r for r in refs.rows(SOURCE) if r["model"] == m.model and r["scenario"].lower() == m.scenario.lower()]
    result = compare_rounds(rows, resolve_spec(claim.baseline.gpu), resolve_spec(claim.subject.gpu), (early, late),
                            rules)
    filters = f"{m.model} {m.scenario}, {m.category} division" + (f", {m.precision}" if m.precision else "")
    evidence = [{"kind": "mlperf-rounds", "summary": f"rules: {result['rules']}"}]
    absent = [rnd for rnd, n in result["rows_per_round"].items() if not n]
    if absent:
        return (evidence + [missing("mlperf-rounds", f"no MLPerf Inference {rnd} results for {filters} imported "
                                    "(under these rules)") for rnd in absent], [], _import_hint(SOURCE, absent[0]))
    matched, others = [], []
    for p in result["pairs"]:
        sides = {"a": [r for r in p["a"] if _stack_ok(r, claim.baseline.stack)],
                 "b": [r for r in p["b"] if _stack_ok(r, claim.subject.stack)]}
        if sides["a"] and sides["b"]:   # each round's best result of the system on the claimed stack
            matched.append((p, *(max(sides[s], key=lambda r: r["result"]) for s in "ba")))
        else:
            others.append((p, *(max(p[s], key=lambda r: r["result"]) for s in "ba")))
    if not matched:
        seen = "; ".join(f"{a['submitter']} {a['system']} ({a['accelerators']}x, {p['precision']}): {_stack_of(b)} in "
                         f"{early} -> {_stack_of(a)} in {late}, x{a['result'] / b['result']:.3g}" for p, a, b in others[:5])
        return evidence + [missing("mlperf-rounds",
                                   f"no system appears in both rounds as {side_label(claim.baseline)} in {early} and "
                                   f"{side_label(claim.subject)} in {late} for {filters}"
                                   + (f"; the same systems in both rounds (other stacks): {seen}" if seen else
                                      "; no system appears in both rounds"))], [], _import_hint(SOURCE, late)
    groups: dict[tuple, list] = {}
    for p, a, b in matched:
        evidence += [_row_evidence("mlperf-rounds", "subject", a, a["result"]),
                     _row_evidence("mlperf-rounds", "baseline", b, b["result"])]
        if b["result"] > 0:
            groups.setdefault((p["division"], p["precision"], p["units"]), []).append(a["result"] / b["result"])
    checks = []
    for (division, precision, units), ratios in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        value = aggregate(ratios, m.statistic, False)
        checks.append(ratio_check(value, claim.expected.bounds(), claim.tolerance,
                                  f"{m.statistic} same-system uplift {late} / {early} over {len(ratios)} system(s) "
                                  f"({m.model} {m.scenario}, {division} division, {precision} precision, {units})"))
    return evidence, checks, None


# -- spec, price, own runs, porting ---------------------------------------------------------------------
def evidence_spec(claim: Claim) -> tuple[list, list, str | None]:
    from gpuparity.platform.specs import all_specs

    field = claim.spec.field
    specs = {s: all_specs()[resolve_spec(getattr(claim, s).gpu)] for s in ("subject", "baseline")}
    evidence, checks = [], []
    for side, spec in specs.items():
        value = spec.get(field)
        if value is None:
            return [missing("spec", f"{spec['id']} has no '{field}' in the spec data", side)], [], None
        evidence.append({"kind": "spec", "spec_id": spec["id"], "side": side, "value": value,
                         "source": spec.get("source"), "summary": f"{side}: {spec['product']} {field} = {value:g}"
                         f" (spec data: {spec['id']})"})
        bound = getattr(claim.spec, f"{side}_bounds")
        if bound:
            checks.append(ratio_check(value, bound.bounds(), claim.tolerance, f"{spec['id']} {field}", False))
    ratio = specs["subject"][field] / specs["baseline"][field]
    checks.append(ratio_check(ratio, claim.expected.bounds(), claim.tolerance,
                              f"{field} ratio {specs['subject']['id']} / {specs['baseline']['id']}"))
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
            evidence.append({"kind": "price", "side": side, "basis": basis, "value": row["usd_per_gpu_hour"],
                             "source": row["source"], "summary": f"{side}: {ids[side]} {basis} "
                             f"${row['usd_per_gpu_hour']:.2f}/GPU-h (price book, {row['date'] or 'undated'})"})
        ratio = rows["subject"]["usd_per_gpu_hour"] / rows["baseline"]["usd_per_gpu_hour"]
        checks.append(ratio_check(ratio, claim.expected.bounds(), claim.tolerance,
                                  f"{basis} price ratio {ids['subject']} / {ids['baseline']}"))
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
    checks = [ratio_check(value, claim.expected.bounds(), claim.tolerance,
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
    return evidence, [ratio_check(score, claim.expected.bounds(), claim.tolerance, "portability score", False)], None


# -- entry point ----------------------------------------------------------------------------------
def evaluate_claim(claim: Claim, store, port_report: str | None = None, refs: References | None = None) -> dict:
    refs = refs or References(store)
    evidence, checks, commands = [], [], []
    for kind in claim.kinds:
        if kind == "mlperf":
            ev, ch, cmd = evidence_mlperf(claim, refs)
        elif kind == "mlperf-training":
            ev, ch, cmd = evidence_training(claim, refs)
        elif kind == "mlperf-rounds":
            ev, ch, cmd = evidence_rounds(claim, refs)
        elif kind == "spec":
            ev, ch, cmd = evidence_spec(claim)
        elif kind == "price":
            ev, ch, cmd = evidence_price(claim)
        elif kind == "own-runs":
            ev, ch, cmd = evidence_own_runs(claim, store)
        else:
            ev, ch, cmd = evidence_porting(claim, port_report)
        evidence += ev
        evidence += [{"kind": "check", "passed": c["passed"], "value": c["value"], "summary": c["summary"]} for c in ch]
        checks += ch
        if cmd:
            commands.append(cmd)
    verdict = verdict_of(checks)
    if verdict == "untested" and not commands and run_command(claim):
        commands.append(run_command(claim))
    command = "\n".join(dict.fromkeys(commands)) if verdict == "untested" else None
    rows = [e["row"] for e in evidence if "row" in e]
    rows += [{"source": "own-runs", "side": e["side"], "run_id": i}
             for e in evidence if e.get("kind") == "own-runs" and e.get("run_ids") for i in e["run_ids"]]
    return {
        "id": claim.id,
        "text": claim.text.strip(),
        "kind": claim.kinds,
        "source": claim.source,
        "subject": side_label(claim.subject) if claim.subject else None,
        "baseline": side_label(claim.baseline) if claim.baseline else None,
        "expected": bounds_text(claim.expected.bounds(), claim.tolerance),
        "verdict": verdict,
        "reasoning": reasoning_of(claim, verdict, checks, evidence, command),
        "rows": rows,
        "evidence": [{k: v for k, v in e.items() if k != "row"} for e in evidence],
        "command": command,
        "note": " ".join(claim.note.split()) if claim.note else None,
    }


def evaluate_claims(store, claims_file: str | Path | None = None, port_report: str | None = None) -> list[dict]:
    """Each claim of the file (default: the shipped rocm-vs-cuda-2025 set) with verdict and evidence."""
    refs = References(store)
    return [evaluate_claim(c, store, port_report, refs) for c in load_claims(claims_file)]

