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
  mlperf-rounds    the same system in two rounds (inference `mlperf:` or training `training:`;
                   `rounds: [earlier, later]`, or none: each system's first and last round): later
                   over earlier, subject = the later round (evidence/series: the rules' one exception
                   to one round at a time); `stacks: any` follows each system whatever its stack.
  inferencex       InferenceX serving rows: each part's envelope over its configurations at equal
                   interactivity, per (isl, osl), speculative decoding apart (evidence/inferencex_compare).
  spec             a datasheet field (tdp_w, memory_gb, ...): the ratio, plus optional absolute bounds.
  price            $/GPU-hour in the shipped price book, one check per basis.
  own-runs         stored runs of each platform compared by comparison.compare.compare_runs.
  porting          the tree-level score of a `gpuparity port` report (--port-report).
`pairs: contemporary` reads a CUDA-vs-ROCm claim on every like-for-like generation pair (evidence/
parts: H100/MI300X, H200/MI300X, H200/MI325X, B200/MI355X, B300/MI355X ...), each pair's checks named.
Verdicts, graded by size (evidence/grading): supported, partly (a stated share of the claimed effect,
or more than claimed), not supported (less: the direction alone never supports a magnitude),
contradicted (the other direction), mixed (the checks disagree: which says what is named), untested
(no evidence decides it; `command` says what would settle it), not testable (a projection: an
unreleased part or a forecast), refused (the claim names a part nothing knows; the others are
checked). Missing evidence never contradicts a claim, except in a round the store holds whole.
Each verdict carries `reasoning` (one paragraph: the claim's own reasoning, then why this
verdict) and `rows` (the reference rows and runs it rests on, with round, result ID, submitter).

Here: loading a claims file and evaluating each claim. The checks and verdicts are in
evidence/claims_checks and evidence/grading, the MLPerf evidence in evidence/claims_mlperf, InferenceX
in evidence/claims_inferencex, the spec, price, own-runs and porting evidence in evidence/claims_local.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from gpuparity import validate
from gpuparity.errors import UserError
from gpuparity.evidence.claims_checks import (
    LEADS,
    bounds_text,
    reasoning_of,
    resolve_spec,
    run_command,
    side_label,
    verdict_of,
)
from gpuparity.evidence.claims_inferencex import evidence_inferencex
from gpuparity.evidence.claims_local import evidence_own_runs, evidence_porting, evidence_price, evidence_spec
from gpuparity.evidence.claims_mlperf import References, evidence_mlperf, evidence_rounds, evidence_training
from gpuparity.evidence.claims_models import KINDS, Claim, ClaimsFile, Side
from gpuparity.evidence.parts import generation_pairs, pair_name, unreleased

__all__ = ["KINDS", "VERDICTS", "Refused", "evaluate_claim", "evaluate_claims", "load_claims"]

VERDICTS = ("supported", "partly", "not supported", "contradicted", "mixed", "untested", "not testable", "refused")
DEFAULT_FILE = "rocm-vs-cuda-2025.yaml"
MAX_CLAIMS_BYTES = 4 * validate.MiB
EVIDENCE = {"mlperf": evidence_mlperf, "mlperf-training": evidence_training, "mlperf-rounds": evidence_rounds,
            "inferencex": evidence_inferencex}


@dataclass(frozen=True)
class Refused:
    """A claim of the file that cannot be checked as written (a part nothing knows): named, not checked."""

    id: str
    text: str
    source: str | None
    reason: str


# -- loading --------------------------------------------------------------------------------------
def default_claims_text() -> str:
    return resources.files("gpuparity.evidence").joinpath(f"data/{DEFAULT_FILE}").read_text()


def _part_problem(ref: str) -> str | None:
    """Why a part name cannot be used (None: a spec row or an announced part)."""
    if unreleased(ref):
        return None
    try:
        resolve_spec(ref)
    except UserError as exc:
        return str(exc)
    return None


def load_claims(path: str | Path | None = None) -> list[Claim | Refused]:
    """The claims of a file (default: the shipped set), each validated; one-line UserError for a file
    that is not a claims file or a claim that breaks the schema. A claim naming a part nothing knows
    is kept as Refused (the others are checked)."""
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
        if claim.id in seen:
            raise UserError(f"{where}: duplicate id {claim.id!r}")
        seen.add(claim.id)
        names = [(f"{side}.gpu", getattr(claim, side).gpu) for side in ("subject", "baseline")
                 if getattr(claim, side) and getattr(claim, side).gpu]
        if isinstance(claim.pairs, list):
            names += [(f"pairs.{n}", part) for n, pair in enumerate(claim.pairs) for part in pair]
        problem = next((f"{name}: {why}" for name, ref in names if (why := _part_problem(ref))), None)
        claims.append(Refused(claim.id, claim.text.strip(), claim.source, problem) if problem else claim)
    return claims


# -- entry point ----------------------------------------------------------------------------------
def not_testable(claim: Claim) -> str | None:
    """Why no evidence can decide the claim yet: an unreleased part it names, or a forecast."""
    parts = [unreleased(getattr(claim, s).gpu) for s in ("subject", "baseline") if getattr(claim, s)]
    parts = list({p["name"]: p for p in parts if p}.values())
    if parts:
        return "unreleased hardware: " + "; ".join(f"{p['name']} ({p['announced']})" for p in parts)
    return " ".join(claim.not_testable.split()) if claim.not_testable else None


def _by_kind(claim: Claim, store, port_report: str | None, refs: References) -> tuple[list, list, list]:
    evidence, checks, commands = [], [], []
    for kind in claim.kinds:
        if kind in EVIDENCE:
            ev, ch, cmd = EVIDENCE[kind](claim, refs)
        elif kind == "spec":
            ev, ch, cmd = evidence_spec(claim)
        elif kind == "price":
            ev, ch, cmd = evidence_price(claim)
        elif kind == "own-runs":
            ev, ch, cmd = evidence_own_runs(claim, store)
        else:
            ev, ch, cmd = evidence_porting(claim, port_report)
        evidence += ev
        evidence += [{"kind": "check", **{k: c.get(k) for k in ("label", "grade", "passed", "value", "spread",
                                                                   "share", "summary")}} for c in ch]
        checks += ch
        if cmd:
            commands.append(cmd)
    return evidence, checks, commands


def pairs_of(claim: Claim) -> list[tuple[str, str]]:
    """[(CUDA spec id, ROCm spec id)] a CUDA-vs-ROCm claim is read on."""
    if claim.pairs == "contemporary":
        return [(cuda, rocm) for cuda, rocm, _ in generation_pairs()]
    return [(resolve_spec(cuda), resolve_spec(rocm)) for cuda, rocm in claim.pairs or []]


def _on_pairs(claim: Claim, store, port_report: str | None, refs: References) -> tuple[list, list, list, list]:
    """Each generation pair's evidence and checks, labelled by the pair; pairs the evidence does not
    hold are named once each."""
    evidence, checks, commands, lacking = [], [], [], []
    cuda_is_subject = (claim.subject.stack or "").lower().startswith("cuda")
    for cuda, rocm in pairs_of(claim):
        name = pair_name(cuda, rocm)
        gpus = {"subject": cuda if cuda_is_subject else rocm, "baseline": rocm if cuda_is_subject else cuda}
        sides = {s: Side(gpu=gpus[s], stack=getattr(claim, s).stack,
                         label=f"{gpus[s].split('-')[0].upper()} ({getattr(claim, s).stack})") for s in gpus}
        one = claim.model_copy(update={**sides, "pairs": None})
        ev, ch, cmd = _by_kind(one, store, port_report, refs)
        if not ch:
            why = next((e["summary"] for e in ev if e.get("missing")), "no like-for-like rows")
            lacking.append((name, why))
            commands += cmd
            continue
        for c in ch:
            c["label"] = f"{name} {c['label']}"
            c["summary"] = f"[{name}] {c['summary']}"
        for e in ev:
            e["pair"] = name
            if e.get("kind") == "check":
                e["label"], e["summary"] = f"{name} {e['label']}", f"[{name}] {e['summary']}"
        evidence += [e for e in ev if not e.get("missing")]
        checks += ch
    if lacking:
        by_reason: dict[str, list[str]] = {}
        for name, why in lacking:
            by_reason.setdefault(why, []).append(name)
        evidence.append({"kind": "pairs", "missing": True, "summary": "pairs the evidence does not hold: "
                         + "; ".join(f"{', '.join(names)}: {why}" for why, names in by_reason.items())})
    return evidence, checks, commands if not checks else [], lacking


def _result(claim, verdict: str, reasoning: str, **fields) -> dict:
    out = {"id": claim.id, "text": claim.text.strip() if isinstance(claim, Claim) else claim.text,
           "kind": claim.kinds if isinstance(claim, Claim) else [], "source": claim.source,
           "subject": None, "baseline": None, "expected": None, "bounds": None, "verdict": verdict,
           "detail": "", "lead": reasoning, "reasoning": reasoning, "rows": [], "evidence": [], "checks": [], "command": None,
           "note": None, "decide": None, "pairs": None}
    if isinstance(claim, Claim):
        lo, hi = claim.expected.bounds()
        out.update(subject=side_label(claim.subject) if claim.subject else None,
                   baseline=side_label(claim.baseline) if claim.baseline else None,
                   expected=bounds_text((lo, hi), claim.tolerance),
                   bounds={"low": lo, "high": hi, "tolerance": claim.tolerance},
                   note=" ".join(claim.note.split()) if claim.note else None,
                   decide=" ".join(claim.decide.split()) if claim.decide else None)
    out.update(fields)
    return out


def evaluate_claim(claim: Claim | Refused, store, port_report: str | None = None, refs: References | None = None) -> dict:
    if isinstance(claim, Refused):
        return _result(claim, "refused", f"Refused: {claim.reason}; the file's other claims are checked.")
    reason = not_testable(claim)
    if reason:
        text = f"Not testable: {reason}."
        text = f"{claim.reasoning.strip()} {text}" if claim.reasoning else text
        return _result(claim, "not testable", " ".join(text.split()))
    refs = refs or References(store)
    pairs = None
    if claim.pairs is not None:
        evidence, checks, commands, _ = _on_pairs(claim, store, port_report, refs)
        pairs = [pair_name(c, r) for c, r in pairs_of(claim)]
    else:
        evidence, checks, commands = _by_kind(claim, store, port_report, refs)
    verdict, detail = verdict_of(checks)
    if checks and not detail:                # the checks agree: say by how much, or what the one check found
        shares = [c["share"] for c in checks if c.get("share") is not None and c["grade"] in ("partly", "not supported")]
        if shares:
            low, high = f"{max(min(shares), 0):.0%}", f"{max(max(shares), 0):.0%}"
            detail = f"{low}{f'-{high}' if high != low else ''} of the claimed effect"
        elif len(checks) == 1 and checks[0].get("why"):
            detail = f"{checks[0]['label']}: {checks[0]['why']}"
    if verdict == "untested" and not commands and run_command(claim):
        commands.append(run_command(claim))
    command = "\n".join(dict.fromkeys(commands)) if verdict == "untested" and commands else None
    rows = [e["row"] for e in evidence if "row" in e]
    rows += [{"source": "own-runs", "side": e["side"], "run_id": i}
             for e in evidence if e.get("kind") == "own-runs" and e.get("run_ids") for i in e["run_ids"]]
    return _result(claim, verdict, reasoning_of(claim, verdict, detail, checks, evidence, command), detail=detail,
                   lead=LEADS[verdict] + (f" ({detail})" if detail else ""),
                   rows=rows, evidence=[{k: v for k, v in e.items() if k != "row"} for e in evidence],
                   checks=[{k: c.get(k) for k in ("label", "grade", "value", "spread", "share", "levels", "range",
                                                  "absolute", "summary")} for c in checks],
                   command=command, pairs=pairs)


def evaluate_claims(store, claims_file: str | Path | None = None, port_report: str | None = None) -> list[dict]:
    """Each claim of the file (default: the shipped rocm-vs-cuda-2025 set) with verdict and evidence."""
    refs = References(store)
    return [evaluate_claim(c, store, port_report, refs) for c in load_claims(claims_file)]
