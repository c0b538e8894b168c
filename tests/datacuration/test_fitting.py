"""fit_loglog: exact recovery, bootstrap coverage on simulated power laws (both bootstrap schemes), bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastnips.datacuration import ExponentFit, fit_loglog


def test_exact_power_law_recovered():
    x = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    fit = fit_loglog(x, 0.7 * x**-1.3, n_boot=0)
    assert isinstance(fit, ExponentFit)
    assert fit.exponent == pytest.approx(-1.3, abs=1e-12)
    assert fit.prefactor == pytest.approx(0.7, rel=1e-12)
    assert fit.n_points == 5
    assert math.isnan(fit.ci_low)
    assert math.isnan(fit.ci_high)


def test_replicates_fit_the_geometric_means():
    x = np.repeat([1.0, 10.0], 2)
    y = np.array([1.0, 4.0, 100.0, 400.0])  # geometric means 2 and 200: slope 2, prefactor 2
    fit = fit_loglog(x, y, n_boot=200)
    assert fit.exponent == pytest.approx(2.0)
    assert fit.prefactor == pytest.approx(2.0)
    assert fit.ci_low < 2.0 < fit.ci_high


def _coverage(reps: int, trials: int, sigma: float, n_boot: int) -> float:
    rng = np.random.default_rng(123)
    x = np.repeat([8.0, 16.0, 32.0, 64.0, 128.0, 256.0], reps)
    hits = 0
    for t in range(trials):
        y = 5.0 * x**2.5 * np.exp(sigma * rng.standard_normal(x.size))
        fit = fit_loglog(x, y, n_boot=n_boot, seed=t)
        hits += fit.ci_low <= 2.5 <= fit.ci_high
    return hits / trials


@pytest.mark.parametrize("reps", [1, 2, 5])  # 1, 2: residual bootstrap; 5: within-x (stratified) bootstrap
def test_interval_coverage(reps):
    cov = _coverage(reps, trials=200, sigma=0.3, n_boot=400)
    assert 0.90 <= cov <= 0.99, cov  # nominal 0.95; 200 trials: binomial s.d. about 0.015


def test_interval_coverage_noise_growing_with_x():
    """8 replicates per x (within-x bootstrap), log-noise s.d. from 0.05 at the smallest x to 0.8 at the largest."""
    rng = np.random.default_rng(9)
    x = np.repeat([8.0, 16.0, 32.0, 64.0, 128.0, 256.0], 8)
    sig = np.repeat(np.linspace(0.05, 0.8, 6), 8)
    hits = 0
    for t in range(150):
        fit = fit_loglog(x, 5.0 * x**2.5 * np.exp(sig * rng.standard_normal(x.size)), n_boot=400, seed=t)
        hits += fit.ci_low <= 2.5 <= fit.ci_high
    assert hits / 150 >= 0.90


def test_seeded_and_level_widens():
    x = np.repeat([1.0, 2.0, 4.0], 3)
    y = x * np.exp(np.random.default_rng(1).normal(0, 0.2, x.size))
    a, b = fit_loglog(x, y, seed=3), fit_loglog(x, y, seed=3)
    assert a == b
    wide = fit_loglog(x, y, seed=3, level=0.99)
    assert wide.ci_low < a.ci_low
    assert wide.ci_high > a.ci_high


def test_two_points_no_interval():
    fit = fit_loglog([1.0, 2.0], [3.0, 12.0])
    assert fit.exponent == pytest.approx(2.0)
    assert math.isnan(fit.ci_low)


@pytest.mark.parametrize(("x", "y", "match"), [
    ([1.0, 2.0, 3.0], [1.0, -2.0, 3.0], "y must be positive"),
    ([0.0, 2.0, 3.0], [1.0, 2.0, 3.0], "x must be positive"),
    ([1.0, 2.0, np.nan], [1.0, 2.0, 3.0], "x contains NaN or inf"),
    ([1.0, 2.0, 3.0], [1.0, np.inf, 3.0], "y contains NaN or inf"),
    ([2.0, 2.0, 2.0], [1.0, 2.0, 3.0], "at least 2 distinct"),
    ([1.0, 2.0], [1.0, 2.0, 3.0], "same length"),
    ([[1.0, 2.0]], [[1.0, 2.0]], "1-D"),
])
def test_bad_input(x, y, match):
    with pytest.raises(ValueError, match=match):
        fit_loglog(x, y)


@pytest.mark.parametrize(("kw", "match"), [({"level": 1.0}, "level"), ({"n_boot": -1}, "n_boot"),
                                           ({"n_boot": 1.5}, "n_boot")])
def test_bad_options(kw, match):
    with pytest.raises(ValueError, match=match):
        fit_loglog([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], **kw)
