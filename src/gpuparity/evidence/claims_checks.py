"""Claim checks and verdicts: a claimed ratio graded against a figure (evidence/grading), the verdict
of a claim's checks, the paragraph that says why, and the shared pieces every kind of evidence uses
(side labels, the `gpuparity run` line that would measure a claim, missing evidence).
"""

from __future__ import annotations

from gpuparity.evidence.claims_models import Claim, Side
from gpuparity.evidence.grading import bounds_text, check, combine

__all__ = ["bounds_text", "missing", "ratio_check", "reasoning_of", "resolve_spec", "run_command", "side_label",
           "verdict_of"]


def resolve_spec(ref: str) -> str:
    from gpuparity.evidence.reference import resolve_spec as resolve

    return resolve(ref)


def ratio_check(value: float, bounds: tuple, tol: float, label: str, what: str | None = None,
                directional: bool = True, spread: tuple | None = None) -> dict:
    """A graded check of a subject/baseline ratio (evidence/grading); directional=False for absolute
    figures (a board power, a score): they hold or they do not."""
    return check(value, bounds, tol, label, what or label, spread, absolute=not directional)


def verdict_of(checks: list[dict]) -> tuple[str, str]:
    """(verdict, which check says what): only checks made on evidence decide; with none, untested."""
    return combine([(c["label"], c["grade"]) for c in checks])


LEADS = {
    "supported": "Supported: the evidence meets the claimed size",
    "partly": "Partly supported: the claimed direction, with part of the claimed size (or more than claimed)",
    "not supported": "Not supported: the evidence falls short of the claimed size",
    "contradicted": "Contradicted: the evidence says otherwise",
    "mixed": "Mixed: the evidence disagrees",
    "untested": "Untested: no evidence decides it",
    "not testable": "Not testable",
    "refused": "Refused",
}


def reasoning_of(claim: Claim, verdict: str, detail: str, checks: list[dict], evidence: list[dict],
                 command: str | None) -> str:
    """One paragraph: the claim's own reasoning (domain facts), then why this verdict."""
    if checks:
        text = "; ".join(c["summary"] for c in checks)
    else:
        text = "; ".join(e["summary"] for e in evidence if e.get("missing")) or "no check could be made"
    lead = LEADS[verdict] + (f" ({detail})" if detail else "")
    text = f"{lead}. {text}."
    if verdict == "untested" and command:
        text += " What would settle it: " + "; or ".join(line.split("  #")[0] for line in command.splitlines()) + "."
    return " ".join(f"{claim.reasoning.strip()} {text}".split()) if claim.reasoning else " ".join(text.split())


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
