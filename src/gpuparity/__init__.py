"""gpuparity: measure whether ROCm is at parity with CUDA for a workload.

Kept import-light: the CLI verbs that never touch a device must start fast. This is the public
API's top, above every layer: nothing inside the package imports it (the version numbers live in
version.py).
"""

from gpuparity.version import BENCHMARK_VERSION, SCHEMA_VERSION, __version__

__all__ = ["BENCHMARK_VERSION", "SCHEMA_VERSION", "__version__", "compare", "load"]


def load(db=None, *, wide=False, samples=False, **filters):
    """Stored results as a tidy pandas DataFrame, one row per result: platform columns, workload,
    params (a dict; wide=True: one typed column each), value with ci_low/ci_high, unit, n, trials,
    flags, pct_peak. Filters: gpu, stack, since, host, run_ids, label, workload, category, status."""
    from gpuparity.comparison.frame import load as _load

    return _load(db, wide=wide, samples=samples, **filters)


def compare(a, b, db=None, *, tolerance=0.05, wide=False, **filters):
    """Platform B against platform A as a pandas DataFrame, one row per result on both sides
    (ratio B/A with its 95% CI and verdict); df.attrs["headline"] says it in a sentence.
    a, b: a run id, an exported run file, a store file, 'gpu=mi300x,stack=rocm', a dict of
    those filters, or run documents."""
    from gpuparity.comparison.frame import compare as _compare

    return _compare(a, b, db, tolerance=tolerance, wide=wide, **filters)
