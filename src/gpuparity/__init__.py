"""gpuparity: measure whether ROCm is at parity with CUDA for a workload.

Kept import-light: the CLI verbs that never touch a device must start fast.
"""

__version__ = "0.1.0"
# Bumped whenever a change makes new figures incomparable with stored ones (mamf-style).
BENCHMARK_VERSION = 1
SCHEMA_VERSION = 1


def load(db=None, **filters):
    """Results of the store as a pandas DataFrame with platform columns (for notebooks)."""
    from gpuparity.analysis.frame import load as _load

    return _load(db=db, **filters)
