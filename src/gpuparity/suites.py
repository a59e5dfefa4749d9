"""Suites: which workloads run by default at which sizes.

quick: every workload at CPU-friendly sizes (a 2-core CPU in about two minutes);
standard: GPU sizes, about ten minutes on one GPU; full: sweeps; comm: collectives only.
A workload says which suites it belongs to (`Workload.suites`) and sizes its cases per suite.
"""

from __future__ import annotations

SUITES = ("quick", "standard", "full", "comm")


def workloads_for(suite: str) -> list[str]:
    from gpuparity.workloads.base import registry

    return [name for name, w in registry().items() if suite in w.suites]
