"""FPCA from a pooled covariance: it recovers a known two-component process from sparse irregular curves, its
scores agree across backends and track the true scores, and it refuses what it cannot fit."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.functional import FPCA, BSplineBasis

NU = np.array([4.0, 1.0])


def _psi(t):
    return np.stack([np.sqrt(2) * np.sin(2 * np.pi * t), np.sqrt(2) * np.cos(2 * np.pi * t)], axis=1)


@pytest.fixture(scope="module")
def sparse_process():
    """1500 curves with 4 to 9 uniform times: mean 1 + t, eigenfunctions sqrt(2) sin / cos(2 pi t) with variances
    4 and 1, noise sd 0.3."""
    rng = np.random.default_rng(0)
    curves, xi = [], rng.standard_normal((1500, 2)) * np.sqrt(NU)
    for i in range(1500):
        m = int(rng.integers(4, 10))
        t = np.sort(rng.uniform(0, 1, m))
        curves.append((t, 1 + t + _psi(t) @ xi[i] + 0.3 * rng.standard_normal(m)))
    return curves, xi


def test_recovers_a_known_process(sparse_process):
    curves, xi = sparse_process
    fp = FPCA(2, BSplineBasis(10, (0.0, 1.0)), smoothing=1e-5, backend="reference").fit(curves)
    grid = np.linspace(0, 1, 401)
    inner = fp.components(grid).T @ _psi(grid) / len(grid)  # ~ identity up to sign (eigenfunctions orthonormal)
    assert np.all(np.abs(np.abs(np.diag(inner)) - 1) < 0.03), inner
    assert np.all(np.abs(inner[[0, 1], [1, 0]]) < 0.03), inner
    np.testing.assert_allclose(fp.explained_variance_, NU, rtol=0.15)
    assert np.max(np.abs(fp.mean(grid) - (1 + grid))) < 0.2
    assert 0.0 < fp.noise_variance_ < 0.5
    scores = fp.transform(curves)
    for l in range(2):  # BLUP scores from 4-9 noisy samples: strongly correlated with the truth
        assert abs(np.corrcoef(scores[:, l], xi[:, l])[0, 1]) > 0.8


def test_scores_agree_across_backends(backend, sparse_process):
    curves, _ = sparse_process
    fp = FPCA(2, BSplineBasis(10, (0.0, 1.0)), smoothing=1e-5, backend="reference").fit(curves[:400])
    ref = fp.transform(curves)
    fp.backend = backend
    np.testing.assert_allclose(fp.transform(curves), ref, rtol=0, atol=1e-10)


def test_subsampled_fit_is_seeded(sparse_process):
    curves, _ = sparse_process
    a = FPCA(2, BSplineBasis(8, (0.0, 1.0)), max_fit_curves=300, seed=5).fit(curves)
    b = FPCA(2, BSplineBasis(8, (0.0, 1.0)), max_fit_curves=300, seed=5).fit(curves)
    np.testing.assert_array_equal(a.components_coef_, b.components_coef_)


def test_refusals(sparse_process):
    curves, _ = sparse_process
    with pytest.raises(ValueError, match=r"n_components must be an integer in \[1, basis.n_basis = 8\]"):
        FPCA(9, BSplineBasis(8, (0.0, 1.0)))
    with pytest.raises(ValueError, match="at least 2 curves"):
        FPCA(1, BSplineBasis(8, (0.0, 1.0))).fit(curves[:1])
    with pytest.raises(RuntimeError, match="not fitted"):
        FPCA(1, BSplineBasis(8, (0.0, 1.0))).transform(curves)
    t, x = curves[3]
    bad = [*curves[:10], (t[::-1], x)]
    with pytest.raises(ValueError, match="curve 10: times must be strictly increasing"):
        FPCA(1, BSplineBasis(8, (0.0, 1.0))).fit(bad)
