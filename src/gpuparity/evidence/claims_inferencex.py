"""Claim evidence from InferenceX: serving throughput per GPU of each part's envelope over its
configurations, read at equal interactivity (evidence/inferencex_compare); one check per sequence
lengths and speculative-decoding group, graded level by level, with the interactivity range stated."""

from __future__ import annotations

import statistics

from gpuparity.evidence.claims_checks import missing, resolve_spec, side_label
from gpuparity.evidence.claims_models import Claim
from gpuparity.evidence.grading import bounds_text, combine, grade


def evidence_inferencex(claim: Claim, refs) -> tuple[list, list, str | None]:
    from gpuparity.evidence.claims_mlperf import _stack_ok, row_evidence
    from gpuparity.evidence.inferencex import MODELS, SOURCE
    from gpuparity.evidence.inferencex_compare import compare
    from gpuparity.evidence.rules import precision_class

    x = claim.inferencex
    model = MODELS.get(x.model.lower(), x.model.lower())
    wanted = precision_class(x.precision) if x.precision else None
    pool = [r for r in refs.rows(SOURCE) if r["model"] == model
            and (wanted is None or precision_class(r.get("precision")) == wanted)
            and (x.isl is None or r.get("isl") == x.isl) and (x.osl is None or r.get("osl") == x.osl)]
    what = f"{model}{f' {wanted}' if wanted else ''}"
    if not pool:
        return [missing("inferencex", f"no InferenceX rows for {what} imported")], [], refs.hint(SOURCE, None) \
            or "gpuparity reference import inferencex benchmarks.json  # rows as the InferenceX API returns them"

    def stack_ok(side: str, row: dict) -> bool:
        return _stack_ok(row, (claim.baseline if side == "a" else claim.subject).stack)

    result = compare(pool, resolve_spec(claim.baseline.gpu), resolve_spec(claim.subject.gpu),
                     spec_method=x.spec_method, levels=x.levels, side_filter=stack_ok)
    sub, base = side_label(claim.subject), side_label(claim.baseline)
    evidence, seen = [], set()
    for g in result["groups"]:
        for side, key in (("subject", "b"), ("baseline", "a")):
            for r in g["envelope_rows"][key]:
                if r["ref_id"] not in seen:
                    seen.add(r["ref_id"])
                    evidence.append(row_evidence("inferencex", side, r, r["per_accelerator"]))
    if not result["groups"]:
        present = {s for u in result["unpaired"] for s in ("a", "b") if u["_rows"][s]}
        lines = [f"{label}: no InferenceX rows for {what} on {side_label(getattr(claim, label))}"
                 for label, k in (("subject", "b"), ("baseline", "a")) if k not in present]
        lines += [f"{u['isl']}/{u['osl']} {u['spec_text']}: {u.get('note') or 'one side only'}"
                  for u in result["unpaired"] if present == {"a", "b"}][:6]
        return evidence + [missing("inferencex", line) for line in lines], [], None
    checks = []
    bounds = claim.expected.bounds()
    for g in result["groups"]:
        levels = [{**lv, **grade(lv["ratio"], bounds, claim.tolerance)} for lv in g["levels"]]
        verdict, detail = combine([(f"{lv['interactivity']:.0f} tok/s/user", lv["grade"]) for lv in levels])
        ratios = [lv["ratio"] for lv in levels]
        label = f"{g['isl']}/{g['osl']} {'MTP' if g['spec'] == 'mtp' else 'no spec. decoding'}"
        at = ", ".join(f"{lv['interactivity']:.0f}: {lv['ratio']:.2f}" for lv in levels)
        summary = (f"isl/osl {g['isl']}/{g['osl']}, {g['spec_text']} ({'MTP rows only' if g['spec'] == 'mtp' else 'MTP rows apart'}): "
                   f"{sub} / {base} throughput per GPU at equal interactivity along each envelope (over "
                   f"{g['configs']['b']} and {g['configs']['a']} configurations, {g['points']['b']} and "
                   f"{g['points']['a']} points), {g['range'][0]:.1f}-{g['range'][1]:.1f} tok/s per user; ratio at each "
                   f"level (tok/s per user: ratio): {at}; vs claimed {bounds_text(bounds, claim.tolerance)}: {verdict}"
                   + (f" ({detail})" if detail else ""))
        checks.append({"label": label, "grade": verdict, "passed": verdict == "supported",
                       "value": statistics.median(ratios), "spread": [min(ratios), max(ratios)], "share": None,
                       "levels": [{k: lv[k] for k in ("interactivity", "a", "b", "ratio", "grade")} for lv in levels],
                       "range": g["range"], "summary": summary})
    return evidence, checks, None
