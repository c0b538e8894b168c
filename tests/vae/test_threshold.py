"""beta_c against the exact Hessian at the collapsed point, its Gaussian limit and its scaling conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import polygamma

from fastnips.vae import beta_c, hessian_at_collapse, linear_mixture, top_eigenvalue


def _lambda_max(X):
    Xc = X - X.mean(0)
    return float(np.linalg.eigvalsh(np.cov(Xc.T, bias=True))[-1])


@pytest.mark.parametrize("encoder", ["log", "softplus"])
def test_hessian_sign_change_within_2_percent(mixture, encoder):
    X, K, a0, s2 = mixture
    bc = beta_c(X, K, a0, s2)
    low = np.linalg.eigvalsh(hessian_at_collapse(X, K, a0, s2, 0.98 * bc, encoder=encoder))[0]
    high = np.linalg.eigvalsh(hessian_at_collapse(X, K, a0, s2, 1.02 * bc, encoder=encoder))[0]
    assert low < -1e-6  # an unstable direction below beta_c (about -4e-4 here) ...
    assert high > -1e-10  # ... and none above (the zero eigenvalues are the gauge W 1)


def test_hessian_sign_change_other_k_alpha0_sigma2():
    X = linear_mixture(300, D=4, K=4, noise=0.2, seed=3)
    K, a0, s2 = 4, 0.5, 0.5
    bc = beta_c(X, K, a0, s2)
    assert np.linalg.eigvalsh(hessian_at_collapse(X, K, a0, s2, 0.98 * bc))[0] < -1e-6
    assert np.linalg.eigvalsh(hessian_at_collapse(X, K, a0, s2, 1.02 * bc))[0] > -1e-10


def test_mean_likelihood_rescales_and_hessian_agrees(mixture):
    X, K, a0, s2 = mixture
    bm = beta_c(X, K, a0, s2, likelihood="mean")
    assert bm == pytest.approx(beta_c(X, K, a0, s2) / X.shape[1], rel=1e-12)
    assert np.linalg.eigvalsh(hessian_at_collapse(X, K, a0, s2, 0.98 * bm, likelihood="mean"))[0] < -1e-7
    assert np.linalg.eigvalsh(hessian_at_collapse(X, K, a0, s2, 1.02 * bm, likelihood="mean"))[0] > -1e-10


def test_closed_form_by_hand(mixture):
    X, K, a0, s2 = mixture
    lam = _lambda_max(X)
    assert top_eigenvalue(X) == pytest.approx(lam, rel=1e-12)
    expected = lam * (K * a0 + 1) / (s2 * K * a0**2 * float(polygamma(1, a0)))
    assert beta_c(X, K, a0, s2) == pytest.approx(expected, rel=1e-12)


def test_gaussian_limit(mixture):
    X, K, _, s2 = mixture
    gauss = _lambda_max(X) / s2
    errs = [abs(beta_c(X, K, a0, s2) / gauss - 1) for a0 in (1e1, 1e2, 1e4, 1e6)]
    for a0, e in zip((1e1, 1e2, 1e4, 1e6), errs):
        assert e <= 1.0 / a0  # (1/K - 1/2)/alpha0 to first order
    assert errs == sorted(errs, reverse=True)
    assert beta_c(X, K, math.inf, s2) == pytest.approx(gauss, rel=1e-12)


@pytest.mark.parametrize(("kw", "match"), [
    ({"K": 1}, "K"), ({"K": 2.5}, "K"), ({"alpha0": 0.0}, "alpha0"), ({"alpha0": -1.0}, "alpha0"),
    ({"sigma2": 0.0}, "sigma2"), ({"sigma2": float("nan")}, "sigma2"), ({"likelihood": "avg"}, "likelihood"),
])
def test_bad_parameters(mixture, kw, match):
    X, K, a0, s2 = mixture
    args = {"K": K, "alpha0": a0, "sigma2": s2} | kw
    with pytest.raises(ValueError, match=match):
        beta_c(X, args.pop("K"), args.pop("alpha0"), args.pop("sigma2"), **args)


@pytest.mark.parametrize("X", [np.zeros(5), np.zeros((1, 3)), np.array([[1.0, np.nan], [0.0, 1.0]])])
def test_bad_data(X):
    with pytest.raises(ValueError, match="X"):
        beta_c(X, 3, 1.0, 1.0)
