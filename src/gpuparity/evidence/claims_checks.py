"""Claim checks and verdicts: a claimed ratio's bounds checked against a figure, the verdict of a
claim's checks, the paragraph that says why, and the shared pieces every kind of evidence uses
(side labels, the `gpuparity run` line that would measure a claim, missing evidence).
"""

from __future__ import annotations

from gpuparity.evidence.claims_models import Claim, Side


def resolve_spec(ref: str) -> str:
    from gpuparity.evidence.reference import resolve_spec as resolve

    return resolve(ref)


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
