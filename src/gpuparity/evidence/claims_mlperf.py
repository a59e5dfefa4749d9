"""Claim evidence from MLPerf: Inference rows (per-accelerator throughput or whole-system latency),
Training time to train, and the same system across rounds (evidence/series), each under the comparison
rules of evidence/rules; a round the store holds whole answers "no" where the claim's row is absent.
"""

from __future__ import annotations

import math
import statistics

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
    """The stored reference rows of each source and the store's import records, read once for all
    the claims of one check."""

    def __init__(self, store):
        self.store, self._rows, self._records = store, {}, None

    def rows(self, source: str) -> list[dict]:
        from gpuparity.evidence.reference import stored_rows

        if source not in self._rows:
            self._rows[source] = stored_rows(self.store, source)[0]
        return self._rows[source]

    @property
    def records(self) -> dict:
        from gpuparity.evidence.completeness import records

        if self._records is None:
            self._records = records(self.store)
        return self._records

    def whole(self, source: str, rnd: str | None, benchmark: str | None = None) -> dict | None:
        from gpuparity.evidence.completeness import whole

        return whole(self.records, source, rnd, benchmark)

    def hint(self, source: str, rnd: str | None) -> str | None:
        """The import that would help, computed from what the store holds (None: nothing to import)."""
        from gpuparity.evidence.completeness import import_hint

        held = {r.get("round") for r in self.rows(source)}
        return import_hint(self.records, held, source, rnd)


def row_evidence(kind: str, side: str, row: dict, value: float) -> dict:
    """A cited row: its one-line description (with its URL, stack and accelerator count) and citation."""
    from gpuparity.evidence.citations import url_of
    from gpuparity.evidence.reference import citation, describe

    return {"kind": kind, "side": side, "ref_id": row["ref_id"], "result_id": row["result_id"],
            "round": row.get("round"), "submitter": row.get("submitter"), "value": value, "url": url_of(row),
            "summary": f"{side}: {describe(row)}", "note": row.get("note"), "row": citation(row, side)}


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
                out.append(row_evidence(kind, side, r, r[field]))
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


def _absent(claim: Claim, refs: References, rnd: str) -> dict | None:
    """A round held whole with no row the claim's subject could stand on (any division or
    availability; the claim's benchmark, scenario, precision class and count): the check that says no."""
    from gpuparity.evidence.mlperf import SOURCE
    from gpuparity.evidence.rules import Rules, on_side, precision_class

    m = claim.mlperf
    held = refs.whole(SOURCE, rnd)
    if not held:
        return None
    spec_id = resolve_spec(claim.subject.gpu)
    wanted = precision_class(m.precision) if m.precision else None
    rows = [r for r in refs.rows(SOURCE) if r.get("round") == rnd and on_side(r, spec_id, Rules())
            and (m.model is None or m.model in (r["model"], r.get("benchmark_label")))
            and (m.scenario is None or r["scenario"].lower() == m.scenario.lower())
            and (wanted is None or r.get("precision_class") == wanted)
            and (m.accelerators is None or r["accelerators"] == m.accelerators)]
    if rows:
        return None
    part = claim.subject.label or claim.subject.gpu.upper()
    what = " ".join(x for x in (part, (wanted or "").upper(), m.model or "", m.scenario or "") if x)
    check = ratio_check(0.0, (1.0, None), 0.0, f"v{rnd} has no {what} result",
                        f"v{rnd} has no {what} result: the store holds round {rnd} whole ({held['basis']}; "
                        f"{held.get('url') or 'MLCommons'}), in any division", directional=False)
    check["summary"] = (f"v{rnd} has no {what} result (the store holds round {rnd} whole: {held['basis']}; "
                        f"{held.get('url') or 'MLCommons'}; any division and availability): contradicted "
                        "(no such result exists to support it)")
    check["url"], check["value"], check["why"] = held.get("url"), None, "no such result in a round held whole"
    return check


def evidence_mlperf(claim: Claim, refs: References) -> tuple[list, list, str | None]:
    from gpuparity.evidence.mlperf import SOURCE
    from gpuparity.evidence.rules import Rules

    m = claim.mlperf
    rnd = m.round.lstrip("v") if m.round else None
    pool = [r for r in refs.rows(SOURCE) if rnd is None or r.get("round") == rnd]
    if not pool:
        what = f"MLPerf Inference {rnd} results" if rnd else "MLPerf Inference results"
        return [missing("mlperf", f"no {what} imported")], [], refs.hint(SOURCE, rnd)
    absent = _absent(claim, refs, rnd) if rnd else None
    if absent:
        return [{"kind": "mlperf", "summary": absent["summary"], "url": absent.pop("url")}], [absent], None
    rules = Rules.make(division=m.category, status=m.status, precision=m.precision)
    rows = [r for r in pool if (m.model is None or m.model in (r["model"], r.get("benchmark_label")))
            and (m.scenario is None or r["scenario"].lower() == m.scenario.lower())
            and (m.accelerators is None or r["accelerators"] == m.accelerators)]
    result = _pairs(claim, rows, rules, m.statistic)
    evidence = _cited("mlperf", result)
    filters = (f"{m.model or 'any benchmark'} {m.scenario or ''}, {m.category} division".replace(" ,", ",")
               + (f", {m.precision}" if m.precision else "") + (f", round {rnd}" if rnd else ""))
    if not result["groups"]:
        sides = {s: any(u["side"] == k for u in result["unpaired"]) for s, k in (("subject", "b"), ("baseline", "a"))}
        if all(sides.values()):
            return evidence + _unpaired("mlperf", result), [], refs.hint(SOURCE, rnd)
        evidence += [missing("mlperf", f"{side}: no single-node {side_label(getattr(claim, side))} rows for {filters} "
                                       f"among {len(pool)} imported MLPerf rows{_elsewhere(pool, getattr(claim, side), m)}",
                             side) for side, present in sides.items() if not present]
        return evidence, [], refs.hint(SOURCE, rnd)
    checks = []
    for g in result["groups"]:
        a, b = g["a"], g["b"]
        sub, base = side_label(claim.subject), side_label(claim.baseline)
        best = f"; best {b['best']} vs {a['best']}" if m.statistic == "best" else ""
        if g["lower_is_better"]:
            what = (f"{m.statistic} whole-system latency ({g['units']}, lower is better): {sub} {b['value']:,.4g} vs "
                    f"{base} {a['value']:,.4g} ({b['rows']} vs {a['rows']} rows{best}; {g['benchmark']} "
                    f"{g['scenario']}, {_where(g)}): {base} / {sub}")
        else:
            what = (f"{m.statistic} per-accelerator throughput (derived, not verified by MLCommons): {sub} "
                    f"{b['value']:,.1f} vs {base} {a['value']:,.1f} {g['units']} ({b['rows']} vs {a['rows']} rows"
                    f"{best}; {g['benchmark']} {g['scenario']}, {_where(g)}): {sub} / {base}")
        label = f"{g['benchmark']} {g['scenario']} v{g['round']}" + (f" {g['precision']}" if g.get("precision") else "")
        checks.append(ratio_check(g["ratio"], claim.expected.bounds(), claim.tolerance, label, what))
    return evidence, checks, None


def _elsewhere(refs: list[dict], side: Side, m) -> str:
    """Where the side's part does appear for that model (other division or precision), for context."""
    spec_id = resolve_spec(side.gpu)
    other = sorted({f"{r['category']}/{r.get('precision') or '-'}/{r['nodes']} node(s)/{_stack_of(r)}" for r in refs
                    if r.get("spec_id") == spec_id and (m.model is None or r["model"] == m.model)
                    and (m.scenario is None or r["scenario"].lower() == m.scenario.lower())})
    return f"; it appears as: {', '.join(other)}" if other else ""


def training_spread(a: dict, b: dict) -> tuple[float, float] | None:
    """95% interval of a time ratio (a's time / b's time) from the spread of each side's runs: the
    log times' means compared by Welch's t (the score is an olympic mean; its runs' spread is what a
    rerun of the submission would see)."""
    from scipy import stats

    logs = []
    for row in (a, b):
        minutes = [r["minutes"] for r in row.get("runs") or [] if isinstance(r, dict) and r.get("valid")
                   and isinstance(r.get("minutes"), (int, float)) and r["minutes"] > 0]
        if len(minutes) < 3:
            return None
        logs.append([math.log(x) for x in minutes])
    va, vb = (statistics.variance(x) / len(x) for x in logs)
    se = math.sqrt(va + vb)
    if se == 0:
        return None
    df = se ** 4 / (va ** 2 / (len(logs[0]) - 1) + vb ** 2 / (len(logs[1]) - 1))
    t = float(stats.t.ppf(0.975, df))
    ratio = a["time_to_train_min"] / b["time_to_train_min"]
    return ratio * math.exp(-t * se), ratio * math.exp(t * se)


def evidence_training(claim: Claim, refs: References) -> tuple[list, list, str | None]:
    """Time to train per side at equal accelerator counts, one round at a time;
    ratio = baseline time / subject time."""
    from gpuparity.evidence.mlperf_training import SOURCE
    from gpuparity.evidence.rules import Rules

    t = claim.training
    rnd = t.round.lstrip("v") if t.round else None
    pool = [r for r in refs.rows(SOURCE) if (rnd is None or r.get("round") == rnd)
            and (t.benchmark is None or r["model"] == t.benchmark) and r["category"] == t.division
            and r.get("time_to_train_min")]
    filters = f"{t.benchmark or 'any benchmark'}, {t.division} division" + (f", round {rnd}" if rnd else "")
    if not pool:
        return [missing("mlperf-training", f"no MLPerf Training results for {filters} imported")], [], \
            refs.hint(SOURCE, rnd)
    rows = [r for r in pool if t.accelerators is None or r["accelerators"] == t.accelerators]
    result = _pairs(claim, rows, Rules.make(division=t.division, status=t.status), t.statistic)
    evidence = _cited("mlperf-training", result)
    if not result["groups"]:
        sides = {s: [u for u in result["unpaired"] if u["side"] == k] for s, k in (("subject", "b"), ("baseline", "a"))}
        if all(sides.values()):
            return evidence + _unpaired("mlperf-training", result), [], refs.hint(SOURCE, rnd)
        for side, present in sides.items():
            if present:
                continue
            seen = sorted({f"{r['accelerators']}x {_stack_of(r)} (round {r.get('round')})" for r in pool
                           if r.get("spec_id") == resolve_spec(getattr(claim, side).gpu)})
            held = refs.whole(SOURCE, rnd, t.benchmark) if rnd else None
            evidence.append(missing("mlperf-training", f"{side}: no {side_label(getattr(claim, side))} results for "
                                    f"{filters}" + (f" at {t.accelerators} accelerators" if t.accelerators else "")
                                    + f" among {len(pool)} imported" + (f"; it appears as {', '.join(seen)}" if seen else "")
                                    + (f" (round {rnd} is held whole: {held['basis']})" if held else ""), side))
        return evidence, [], refs.hint(SOURCE, rnd)
    checks = []
    for g in result["groups"]:
        a, b = g["a"], g["b"]
        best = {s: next(r for r in g["_rows"][k] if r["result_id"] == g[k]["best"]) for s, k in (("a", "a"), ("b", "b"))}
        spread = training_spread(best["a"], best["b"]) if t.statistic == "best" else None
        sub, base = side_label(claim.subject), side_label(claim.baseline)
        what = (f"{t.statistic} time to train on {g['accelerators']} accelerators ({g['benchmark']}, {_where(g)}): "
                f"{base} {a['value']:.2f} min ({a['best']}) vs {sub} {b['value']:.2f} min ({b['best']}); "
                f"{b['rows']} vs {a['rows']} results: {base} time / {sub} time")
        label = f"{g['benchmark']} v{g['round']}"
        checks.append(ratio_check(g["ratio"], claim.expected.bounds(), claim.tolerance, label, what, spread=spread))
    return evidence, checks, None


def evidence_rounds(claim: Claim, refs: References) -> tuple[list, list, str | None]:
    """The same system across rounds (evidence/series): later over earlier (subject = the later
    round; training: earlier time / later time), under the comparison rules' one exception to one
    round at a time. Named rounds: those two; none: each system's first and last round."""
    from gpuparity.evidence import mlperf, mlperf_training
    from gpuparity.evidence.rules import Rules, aggregate
    from gpuparity.evidence.series import series, uplift

    training = claim.training is not None and claim.mlperf is None
    spec = claim.training if training else claim.mlperf
    source = mlperf_training.SOURCE if training else mlperf.SOURCE
    model = spec.benchmark if training else spec.model
    scenario = None if training else spec.scenario
    wanted = [r.lstrip("v") for r in spec.rounds] if spec.rounds else None
    rules = Rules.make(division=spec.division if training else spec.category, status=spec.status,
                       precision=None if training else spec.precision)
    pool = [r for r in refs.rows(source) if (model is None or model in (r["model"], r.get("benchmark_label")))
            and (scenario is None or str(r.get("scenario")).lower() == scenario.lower())]
    filters = f"{model or 'any benchmark'}{f' {scenario}' if scenario else ''}, {rules.division} division"
    held = sorted({r.get("round") for r in pool})
    absent = [rnd for rnd in (wanted or []) if rnd not in held]
    if absent or len(held) < 2:
        need = absent or ["a second round"]
        return ([missing("mlperf-rounds", f"no {'MLPerf Training' if training else 'MLPerf Inference'} "
                         f"{', '.join(need)} results for {filters} imported (rounds held: {', '.join(held) or 'none'})")],
                [], refs.hint(source, absent[0] if absent else None) or refs.hint(source, "5.0" if training else "4.1"))
    part = resolve_spec(claim.subject.gpu)
    any_stack = spec.stacks == "any"
    matched, others = [], []
    for s in series(pool, rules, part=part):
        rounds = [p["round"] for p in s["points"]]
        early, late = (wanted if wanted else (rounds[0], rounds[-1]))
        if early not in rounds or late not in rounds or early == late:
            continue
        pick = {}
        for rnd, side in ((early, claim.baseline), (late, claim.subject)):
            p = s["points"][rounds.index(rnd)]
            rows = [p["row"]] + [r for r in _also_rows(pool, p)]
            ok = rows if any_stack else [r for r in rows if _stack_ok(r, side.stack)]
            pick[rnd] = max(ok, key=(lambda r: -r["time_to_train_min"]) if training else (lambda r: r["result"]),
                            default=None)
        first, last = (s["points"][rounds.index(r)]["row"] for r in (early, late))
        (matched if all(pick.values()) else others).append((s, early, late, pick[early] or first, pick[late] or last))
    spanned = sorted({r for _, e, lt, _, _ in matched + others for r in (e, lt)}, key=lambda r: tuple(map(int, r.split("."))))
    evidence = [{"kind": "mlperf-rounds", "summary": "rules: " + rules.header(tuple(wanted or spanned or held))}]
    if not matched:
        seen = "; ".join(_system_line(s, e, lt, b, a, training) for s, e, lt, b, a in others[:5])
        return evidence + [missing("mlperf-rounds",
                                   f"no system appears in two rounds as {side_label(claim.baseline)} then "
                                   f"{side_label(claim.subject)} for {filters}"
                                   + (f"; the same systems in two rounds (other stacks): {seen}" if seen else
                                      "; no system appears in two rounds"))], [], None
    groups: dict[tuple, list] = {}
    for s, early, late, before, after in matched:
        evidence += [row_evidence("mlperf-rounds", "subject", after, _per_gpu(after, training)),
                     row_evidence("mlperf-rounds", "baseline", before, _per_gpu(before, training))]
        groups.setdefault((s["division"], s["benchmark"], s["scenario"], s["precision"], s["units"], early, late),
                          []).append((uplift(before, after), _system_line(s, early, late, before, after, training)))
    checks = []
    for (division, bench, scen, precision, units, early, late), items in sorted(
            groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        value = aggregate([u for u, _ in items], spec.statistic, False)
        note = (f" (the claim is about {side_label(claim.baseline)} -> {side_label(claim.subject)}; the evidence is "
                "the software each system ran in those rounds)") if any_stack else ""
        what = (f"{spec.statistic} same-system uplift {late} / {early} over {len(items)} system(s) ({bench}"
                f"{f' {scen}' if scen else ''}, {division} division{f', {precision} precision' if precision else ''}, "
                f"{units}): " + "; ".join(line for _, line in items) + note)
        label = f"{bench}{f' {scen}' if scen else ''} {early}->{late}" + (f" {precision}" if precision else "")
        checks.append(ratio_check(value, claim.expected.bounds(), claim.tolerance, label, what))
    return evidence, checks, None


def _also_rows(pool: list[dict], point: dict) -> list[dict]:
    ids = {a.get("result_id") for a in point.get("also") or []}
    return [r for r in pool if r.get("result_id") in ids and r.get("round") == point["round"]
            and r.get("model") == point["row"].get("model") and r.get("scenario") == point["row"].get("scenario")]


def _per_gpu(row: dict, training: bool) -> float:
    return row["time_to_train_min"] if training else row["result"] / max(row.get("accelerators") or 1, 1)


def _system_line(s: dict, early: str, late: str, before: dict, after: dict, training: bool) -> str:
    from gpuparity.evidence.series import uplift

    unit = "min" if training else "per GPU"
    fmt = "{:,.2f}" if training else "{:,.0f}"
    return (f"{s['submitter']} {s['system']} ({s['accelerators']}x {s['part']}): "
            f"{fmt.format(_per_gpu(before, training))} -> {fmt.format(_per_gpu(after, training))} {unit} "
            f"({_stack_of(before)} in {early} -> {_stack_of(after)} in {late}, x{uplift(before, after):.3g})")
