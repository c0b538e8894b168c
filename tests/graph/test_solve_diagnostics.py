"""What tikhonov_solve reports: accuracy of the default tolerance, scaled residuals (no underflow),
truthful ``converged`` and warnings for every method, the default maxiter, the error of an operator
singular in its precision, and the max_fill bound of ``method="direct"``.

Oracles: ``numpy.linalg.solve`` of the dense p(L) + Q (assembled by the reference), and for tiny or huge
right-hand sides the same solve of the unit right-hand side times the scale (exact by linearity).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from fastnips import _backend
from fastnips.graph import normalized_laplacian, tikhonov_factorize, tikhonov_solve
from fastnips.graph.reference import poly_matrix_reference, scaled_norms

from ._builders import erdos_renyi, grid, problem

HOST = [("cpp", "cg"), ("reference", "cg"), ("cpp", "dense"), ("reference", "dense"), ("reference", "direct")]


def _skip_missing(backend):
    why = _backend.why_unavailable(backend)
    if why:
        pytest.skip(f"backend {backend!r} not available: {why}")


def _dense_solution(L, theta, q, X):
    A = (poly_matrix_reference(L, theta) + sp.diags(q)).toarray()
    return np.linalg.solve(A, q[:, None] * X.reshape(L.shape[0], -1)).reshape(X.shape)


@pytest.mark.parametrize(("dtype", "accuracy"), [(np.float64, 1e-10), (np.float32, 1e-5)])
def test_default_tolerance_meets_the_advertised_accuracy(backend, dtype, accuracy):
    """max |Y - Y*| <= accuracy * max |Y*| against a dense solve, at the default tol, over graphs and q ranges
    down to 1e-3 (measured worst with the cpp CG: 2.7e-11 / 3.1e-6; at the old defaults 2.6e-10 / 3.7e-5)."""
    worst = 0.0
    for seed in range(3):
        for ei, n in (erdos_renyi(300, 0.03, seed), grid(15, 20)):
            L = normalized_laplacian(ei, n)
            for q_range in ((0.2, 3.0), (1e-3, 1.0)):
                theta, q, X = problem(n, 4, seed, q_range=q_range)
                Y, info = tikhonov_solve(L, theta, q, X.astype(dtype), backend=backend, method="cg",
                                         return_info=True)
                assert info.converged.all()
                Ys = _dense_solution(L, theta, q, X)
                worst = max(worst, float(np.abs(Y - Ys).max() / np.abs(Ys).max()))
    assert worst <= accuracy, worst


def test_scaled_norms_do_not_underflow_or_overflow():
    for s in (1e-170, 1e-300, 1e300, 1.0):
        B = np.array([[3.0 * s, 0.0], [4.0 * s, 0.0]])
        np.testing.assert_allclose(scaled_norms(B), [5.0 * s, 0.0], rtol=1e-15)
    assert np.linalg.norm(np.array([1e-170])) == 0.0  # what the scaling is for


@pytest.mark.parametrize(("backend", "method"), HOST)
@pytest.mark.parametrize("scale", [1e-170, 1e-300, 1e300])
def test_tiny_and_huge_right_hand_sides(backend, method, scale):
    _skip_missing(backend)
    ei, n = erdos_renyi(50, 0.1, 0)
    L = normalized_laplacian(ei, n)
    theta, q, _ = problem(n, 1, 0)
    x = np.zeros(n)
    x[0] = 1.0
    want = _dense_solution(L, theta, q, x) * scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Y, info = tikhonov_solve(L, theta, q, x * scale, backend=backend, method=method, return_info=True)
    assert float(np.abs(Y - want).max()) <= 1e-10 * float(np.abs(want).max())
    assert info.converged.all()
    assert 0.0 < info.residuals[0] <= info.tol


def test_tiny_right_hand_side_on_the_device_backend():
    _skip_missing("triton")
    torch = pytest.importorskip("torch")
    ei, n = erdos_renyi(20, 0.2, 1)
    L = normalized_laplacian(ei, n)
    theta, q, _ = problem(n, 1, 1)
    x = np.zeros(n)
    x[3] = 1e-170
    want = _dense_solution(L, theta, q, x / 1e-170) * 1e-170
    Y, info = tikhonov_solve(L, theta, q, torch.as_tensor(x), backend="triton", return_info=True)
    assert float(np.abs(Y.cpu().numpy() - want).max()) <= 1e-10 * float(np.abs(want).max())
    assert 0.0 < info.residuals[0] <= info.tol


def test_tiny_q_caps_maxiter_instead_of_overflowing(backend):
    ei, n = erdos_renyi(40, 0.1, 2)
    L = normalized_laplacian(ei, n)
    theta, _, X = problem(n, 2, 2)
    theta[0] = 0.5  # p >= min theta > 0: well conditioned whatever q
    Y, info = tikhonov_solve(L, theta, 1e-40, X, backend=backend, method="cg", return_info=True)
    assert 1 <= info.maxiter <= max(1000, 10 * n) or info.method == "spsolve"
    np.testing.assert_allclose(Y, _dense_solution(L, theta, np.full(n, 1e-40), X), rtol=0,
                               atol=1e-9 * np.abs(Y).max())
    with pytest.raises(ValueError, match=r"maxiter must be a positive int \(at most 2\*\*62\)"):
        tikhonov_solve(L, theta, 1.0, X, maxiter=2**64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_singular_in_its_precision_names_rounding_not_symmetry(require_cpp, dtype):
    ei, n = erdos_renyi(200, 0.05, 0)
    L = normalized_laplacian(ei, n)
    theta, _, X = problem(n, 2, 0)
    theta[0] = 0.0  # p(0) = 0: with a tiny q the constant direction is almost free
    q = 1e-8 if dtype == np.float32 else 1e-40
    with pytest.raises(ValueError, match=r"more likely, rounding.*numerically singular") as err:
        tikhonov_solve(L, theta, q, X.astype(dtype), backend="cpp", maxiter=5000)
    if dtype == np.float32:
        assert "Compute in float64" in str(err.value)


def test_direct_methods_report_converged_truthfully(dense_backend):
    ei, n = erdos_renyi(60, 0.08, 3)
    L = normalized_laplacian(ei, n)
    theta, q, X = problem(n, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, info = tikhonov_solve(L, theta, q, X, method="dense", backend=dense_backend, return_info=True)
    assert info.converged.all()
    assert info.maxiter == 0
    assert (info.residuals <= info.tol).all()
    # an operator whose float32 factorisation cannot reach the float32 tol: residual above it, flagged
    theta[0] = 0.0
    qs = np.full(n, 1e-5)
    if dense_backend == "cpp":
        with pytest.warns(RuntimeWarning, match=r"direct solve \(dense-cholesky\) have a residual above tol"):
            _, info = tikhonov_solve(L, theta, qs, X.astype(np.float32), method="dense", backend="cpp",
                                     return_info=True, tol=1e-7)
        assert not info.converged.all()
        assert np.array_equal(info.converged, info.residuals <= info.tol)


def test_reference_small_graph_reports_no_maxiter_and_warnings_name_the_limit_run(backend):
    ei, n = erdos_renyi(60, 0.08, 4)
    L = normalized_laplacian(ei, n)
    theta, _, X = problem(n, 2, 4)
    _, info = tikhonov_solve(L, theta, 1.0, X, backend="reference", return_info=True)
    assert info.method == "spsolve"
    assert info.maxiter == 0
    if backend == "cpp":
        with pytest.warns(RuntimeWarning, match=r"in maxiter=3 iterations .*after 3 iterations"):
            _, info = tikhonov_solve(L, theta, 1e-4, X, backend="cpp", maxiter=3, return_info=True)
        assert info.maxiter == 3
        assert info.iterations.max() == 3


def test_max_fill_is_a_bound_a_star_off_any_sample_is_refused():
    """A hub joined to every node, placed where the old 512-row sample never looked, on a sparse random
    graph: p(L) (K = 4) is dense; the guard refuses it before forming anything (lower bound, O(K nnz))."""
    n = 20000
    rng = np.random.default_rng(0)
    old_sample = set(np.random.default_rng(0).choice(n, 512, replace=False).tolist())
    hub = next(i for i in range(n) if i not in old_sample)
    leaves = np.delete(np.arange(n), hub)
    pairs = np.concatenate([rng.integers(0, n, (2, 2 * n)), np.stack([np.full(n - 1, hub), leaves])], axis=1)
    L = normalized_laplacian(np.concatenate([pairs, pairs[::-1]], axis=1), n)
    with pytest.raises(ValueError, match=r"can have 4e\+08 nonzeros .*lower bound.* above max_fill"):
        tikhonov_factorize(L, [0.1, 0.2, 0.3, 0.4, 0.5], 1.0, method="direct")
