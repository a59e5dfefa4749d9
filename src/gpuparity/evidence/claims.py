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

Here: loading a claims file and evaluating each claim. The checks and verdicts are in
evidence/claims_checks, the MLPerf evidence in evidence/claims_mlperf, the spec, price, own-runs
and porting evidence in evidence/claims_local.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from gpuparity import validate
from gpuparity.errors import UserError
from gpuparity.evidence.claims_checks import (
    bounds_text,
    reasoning_of,
    resolve_spec,
    run_command,
    side_label,
    verdict_of,
)
from gpuparity.evidence.claims_local import evidence_own_runs, evidence_porting, evidence_price, evidence_spec
from gpuparity.evidence.claims_mlperf import References, evidence_mlperf, evidence_rounds, evidence_training
from gpuparity.evidence.claims_models import KINDS, Claim, ClaimsFile

__all__ = ["KINDS", "VERDICTS", "evaluate_claim", "evaluate_claims", "load_claims"]

VERDICTS = ("supported", "partly", "contradicted", "untested")
DEFAULT_FILE = "rocm-vs-cuda-2025.yaml"
MAX_CLAIMS_BYTES = 4 * validate.MiB


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
