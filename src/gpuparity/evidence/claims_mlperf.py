"""Claim evidence from MLPerf: Inference rows (per-accelerator throughput or whole-system
latency), Training time to train, and the same system across two inference rounds, each under
the comparison rules of evidence/rules.
"""

from __future__ import annotations

from gpuparity.evidence.claims_checks import missing, ratio_check, resolve_spec, side_label
from gpuparity.evidence.claims_models import Claim, Side


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
