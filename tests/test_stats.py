"""The estimator's building blocks on samples with known answers (the loop's tests: test_loop.py)."""

import numpy as np

from gpuparity.measure.stats import bootstrap_ci, relative_noise, summarize


def test_bootstrap_ci_covers_known_median():
    rng = np.random.default_rng(1)
    hits = 0
    for trial in range(100):
        x = rng.normal(10.0, 1.0, size=40)
        lo, hi = bootstrap_ci(x, seed=trial)
        hits += lo <= 10.0 <= hi
    assert 88 <= hits <= 100  # nominal 95% coverage


def test_summary_fields_on_constructed_samples():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s["median"] == 3.0
    assert s["mean"] == 22.0
    assert s["n"] == 5
    assert s["ci_low"] <= 3.0 <= s["ci_high"]
    assert summarize([])["n"] == 0


def test_relative_noise_shrinks_with_steadier_samples():
    rng = np.random.default_rng(2)
    noisy = 1 + rng.normal(0, 0.2, 50)
    steady = 1 + rng.normal(0, 0.002, 50)
    assert relative_noise(steady) < 0.01 < relative_noise(noisy)
    assert relative_noise([1.0]) == float("inf")


def test_t_quantiles_are_the_tables():
    """Student-t quantiles (scipy.special) against the printed tables, fractional and infinite df."""
    import math

    from gpuparity.measure.stats import t_quantile

    assert math.isclose(t_quantile(0.975, 1), 12.7062, rel_tol=1e-4)
    assert math.isclose(t_quantile(0.975, 10), 2.2281, rel_tol=1e-4)
    assert math.isclose(t_quantile(0.95, 30), 1.6973, rel_tol=1e-4)
    assert math.isclose(t_quantile(0.975, float("inf")), 1.95996, rel_tol=1e-5)
    assert t_quantile(0.975, 3) < t_quantile(0.975, 2.5) < t_quantile(0.975, 2)
    assert abs(t_quantile(0.5, 4)) < 1e-12
