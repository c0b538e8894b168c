"""fit_power_law: exact recovery, exponent recovery on synthetic recipe spaces (c = 2/d), the bias of the naive
free fit, bootstrap coverage on data simulated from known (a, b, c), held-out extrapolation, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import curve_fit

from fastnips.datacuration import extrapolate, fit_power_law, random_search_curves

GRID = np.unique(np.geomspace(1, 4096, 25).astype(int))


@pytest.fixture(scope="module")
def searches():
    """d -> (N, mean best over searches, replicate-level N and best): 400 random searches of 4096 runs."""
    out = {}
    for d in (1, 2, 4):
        Y = random_search_curves(d, 4096, 400, seed=10 + d)[:, GRID - 1]
        out[d] = (GRID, Y.mean(axis=0), np.tile(GRID, Y.shape[0]), Y.ravel())
    return out


def test_noise_free_power_law_recovered():
    N = np.geomspace(1, 1024, 11)
    fit = fit_power_law(N, 0.8 - 0.3 * N**-0.6, n_boot=0)
    assert (fit.a, fit.b, fit.c) == pytest.approx((0.8, 0.3, 0.6), rel=1e-6)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.asymptote_profiled
    known = fit_power_law(N, 0.8 - 0.3 * N**-0.6, asymptote=0.8, n_boot=0)
    assert (known.b, known.c) == pytest.approx((0.3, 0.6), rel=1e-12)
    assert fit.predict(2048.0) == pytest.approx(0.8 - 0.3 * 2048.0**-0.6, rel=1e-6)


@pytest.mark.parametrize("d", [1, 2, 4])
def test_exponent_recovery_on_recipe_spaces(searches, d):
    *_, N, y = searches[d]
    prof = fit_power_law(N, y, n_min=32, n_boot=0)
    known = fit_power_law(N, y, n_min=32, n_boot=0, asymptote=0.0)
    assert prof.c == pytest.approx(2.0 / d, rel=0.05)
    assert known.c == pytest.approx(2.0 / d, rel=0.05)


@pytest.mark.parametrize("d", [1, 2, 4])
def test_naive_free_fit_is_biased(searches, d):
    """The free three-parameter least-squares fit on the same searches misses c = 2/d by more than 5%; the
    profiled fit on the very same mean curve (all N >= 1 given) is closer."""
    N, ybar, Nr, y = searches[d]
    (_, _, c_free), _ = curve_fit(lambda n, a, b, c: a - b * n**-c, N.astype(float), ybar, p0=(0.0, 1.0, 1.0),
                                  maxfev=20000)
    assert abs(c_free * d / 2 - 1) > 0.05
    ours = fit_power_law(Nr, y, n_boot=0)  # no n_min: the same pre-asymptotic points the free fit sees
    assert abs(ours.c * d / 2 - 1) < abs(c_free * d / 2 - 1)


def _coverage(trials: int, reps: int, n_boot: int) -> tuple[float, float]:
    rng = np.random.default_rng(7)
    N = np.repeat([4, 8, 16, 32, 64, 128, 256], reps)
    hit_c = hit_a = 0
    for t in range(trials):
        c0 = (0.4, 1.0, 1.6)[t % 3]
        y = 0.9 - 0.5 * N**-c0 * np.exp(0.2 * rng.standard_normal(N.size))
        fit = fit_power_law(N, y, n_boot=n_boot, seed=t)
        hit_c += fit.c_ci[0] <= c0 <= fit.c_ci[1]
        hit_a += fit.a_ci[0] <= 0.9 <= fit.a_ci[1]
    return hit_c / trials, hit_a / trials


def test_interval_coverage_small():
    cov_c, cov_a = _coverage(trials=90, reps=6, n_boot=200)
    assert cov_c >= 0.90, cov_c
    assert cov_a >= 0.85, cov_a


@pytest.mark.slow
def test_interval_coverage_large():
    cov_c, cov_a = _coverage(trials=600, reps=6, n_boot=1000)
    assert 0.90 <= cov_c <= 0.99, cov_c
    assert cov_a >= 0.88, cov_a


def test_held_out_extrapolation():
    rng = np.random.default_rng(3)
    N = np.repeat([2, 4, 8, 16, 32, 64, 256, 1024], 10)
    y = 0.7 - 0.4 * N**-0.5 * np.exp(0.1 * rng.standard_normal(N.size))
    ex = extrapolate(N, y, fit_max=64, n_boot=500)
    assert list(ex.N) == [256, 1024]
    assert ex.inside.all()
    assert (ex.gap_error < 0.25).all()  # relative to the small remaining gap (0.012 at N = 1024)
    assert np.abs(ex.predicted - ex.observed).max() < 0.005
    assert ex.fit.n_points == 60


def test_input_order_does_not_matter():
    rng = np.random.default_rng(5)
    N = np.repeat([2, 4, 8, 16, 32, 64], 6)
    y = 0.8 - 0.5 * N**-0.6 * np.exp(0.15 * rng.standard_normal(N.size))
    perm = rng.permutation(N.size)
    f1, f2 = fit_power_law(N, y, n_boot=300), fit_power_law(N[perm], y[perm], n_boot=300)
    assert f1.c == pytest.approx(f2.c, rel=1e-9)
    assert f1.c_ci[0] == pytest.approx(f2.c_ci[0], rel=0.1)  # different resamples, same distribution
    assert f1.c_ci[1] == pytest.approx(f2.c_ci[1], rel=0.1)
    assert f1.c_ci[0] <= f1.c <= f1.c_ci[1]


def test_search_curves_resample_whole_searches():
    Y = random_search_curves(2, 256, 40, seed=2)
    N = np.array([4, 8, 16, 32, 64, 128, 256])
    fit = fit_power_law(N, Y[:, N - 1], n_boot=400)
    flat = fit_power_law(np.tile(N, 40), Y[:, N - 1].ravel(), n_boot=0)
    assert fit.c == pytest.approx(flat.c, rel=1e-9)  # same point estimate, only the bootstrap unit differs
    assert fit.c_ci[0] <= fit.c <= fit.c_ci[1]
    assert fit.a_ci[0] <= fit.a <= fit.a_ci[1]
    ex = extrapolate(N, Y[:, N - 1], fit_max=64, n_boot=400)
    assert list(ex.N) == [128, 256]
    with pytest.raises(ValueError, match="N must be 1-D of length 7"):
        fit_power_law(N[:3], Y[:, N - 1])
    with pytest.raises(ValueError, match="distinct"):
        fit_power_law(np.array([4, 4, 8, 16, 32, 64, 128]), Y[:, N - 1])


def test_upper_caps_the_asymptote():
    N = np.repeat([1, 2, 4, 8], 5)
    y = np.tile([0.50, 0.60, 0.66, 0.70, 0.73], 4) * 0 + np.repeat([0.5, 0.6, 0.66, 0.7], 5)
    y = y + np.tile(np.linspace(-0.01, 0.01, 5), 4)
    fit = fit_power_law(N, y, upper=0.75, n_boot=50)
    assert fit.a <= 0.75
    assert (fit.boot[:, 0] <= 0.75 + 1e-12).all()
    with pytest.raises(ValueError, match="upper must be finite and above"):
        fit_power_law(N, y, upper=0.7)
    with pytest.raises(ValueError, match="either asymptote"):
        fit_power_law(N, y, upper=0.9, asymptote=0.8)


def test_interval_brackets_prediction():
    rng = np.random.default_rng(4)
    N = np.repeat([4, 16, 64, 256], 8)
    fit = fit_power_law(N, 1.0 - N**-0.5 * np.exp(0.1 * rng.standard_normal(N.size)), n_boot=300)
    lo, hi = fit.interval([16, 4096])
    assert (lo <= fit.predict([16, 4096])).all()
    assert (fit.predict([16, 4096]) <= hi).all()
    assert fit.boot.shape == (300, 3)


@pytest.mark.parametrize(("N", "y", "kw", "match"), [
    ([1, 2, 1, 2], [0.1, 0.2, 0.1, 0.3], {}, "at least 3 distinct N"),
    ([4, 4, 4], [0.1, 0.2, 0.3], {"asymptote": 1.0}, "at least 2 distinct N"),
    ([1, 2, 4, 8], [0.1, 0.2, np.nan, 0.3], {}, "best contains NaN"),
    ([1, 2, np.inf, 8], [0.1, 0.2, 0.25, 0.3], {}, "N contains NaN"),
    ([0, 2, 4, 8], [0.1, 0.2, 0.25, 0.3], {}, "N must be positive"),
    ([1, 2, 4, 8], [0.1, 0.2, 0.25, 0.3], {"asymptote": 0.2}, "asymptote must be finite and above"),
    ([1, 2, 4, 8], [0.1, 0.2, 0.25, 0.3], {"n_min": 0}, "n_min"),
    ([1, 2, 4, 8], [0.1, 0.2, 0.25, 0.3], {"n_min": 4}, "at least 3 distinct N >= n_min"),
    ([1, 2, 4, 8], [0.1, 0.2, 0.25, 0.3], {"level": 0.0}, "level"),
    ([1, 2, 4, 8], [0.9, 0.5, 0.3, 0.2], {}, "best must grow with N"),
])
def test_bad_input(N, y, kw, match):
    with pytest.raises(ValueError, match=match):
        fit_power_law(N, y, **kw)


def test_flat_curve_is_flagged_not_crashed():
    fit = fit_power_law([1, 2, 4, 8, 16], [0.5] * 5, n_boot=50)
    assert abs(fit.c) < 1e-9  # no improvement with N: exponent 0, asymptote at the best observation
    assert fit.at_bound == "observed"


def test_extrapolate_needs_held_out_points():
    with pytest.raises(ValueError, match="no N above fit_max"):
        extrapolate([1, 2, 4, 8], [0.1, 0.2, 0.25, 0.3], fit_max=8)


def test_mixed_replicate_counts_bootstrap():
    """Some N with replicates, some with one value: the residual bootstrap of the per-N means (it crashed with a
    numpy broadcasting error before)."""
    rng = np.random.default_rng(8)
    N = np.array([2, 4, 4, 8, 16, 16, 32, 64, 128])
    y = 0.9 - 0.5 * N**-0.7 * np.exp(0.05 * rng.standard_normal(N.size))
    fit = fit_power_law(N, y, n_boot=200)
    assert fit.boot.shape == (200, 3)
    assert np.isfinite(fit.boot).all()
    assert fit.c_ci[0] <= fit.c <= fit.c_ci[1]
    assert fit.c_ci[0] < 0.7 < fit.c_ci[1]


def test_a_single_search_row_does_not_give_a_zero_width_interval():
    """Resampling whole searches from one search repeats it: the interval collapsed to one value (that did not
    even hold the point estimate). One row is now fitted like its flat pairs."""
    Y = random_search_curves(2, 256, 1, seed=2)
    N = np.array([4, 8, 16, 32, 64, 128, 256])
    fit = fit_power_law(N, Y[:, N - 1], n_boot=200)
    flat = fit_power_law(N, Y[0, N - 1], n_boot=200)
    assert fit.c_ci[1] - fit.c_ci[0] > 0.1
    assert fit.c_ci[0] <= fit.c <= fit.c_ci[1]
    assert (fit.c, fit.c_ci) == (flat.c, flat.c_ci)
