"""Suites: which workloads run by default at which sizes.

quick: every workload, small (a 2-core CPU in about two minutes; on a GPU still compute-bound
GEMMs and arrays far above any cache); standard: GPU sizes, about ten minutes on one GPU; full:
sweeps; comm: collectives only. A workload says which suites it belongs to (`Workload.suites`)
and sizes its cases per suite and device class (CPU or GPU) with constants, never from the device
itself, so the same suite has the same keys on every GPU (gpuparity.execute.plan, `gpuparity plan`).
"""

from __future__ import annotations

SUITES = ("quick", "standard", "full", "comm")


def workloads_for(suite: str) -> list[str]:
    from gpuparity.workloads.base import registry

    return [name for name, w in registry().items() if suite in w.suites]
