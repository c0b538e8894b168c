"""Tikhonov solves Y = (p(L) + diag q)^-1 diag(q) X: fastnips cpp vs scipy CG vs the APPNP-10 cost floor.

Random graphs (edges drawn uniformly, average degree 8), n = 1e3, 1e4, 1e5; F = 16 right-hand sides;
p of degree K = 4 in the Bernstein basis (theta ~ U[0, 1]); q ~ U[0.1, 1]; float64; relative residual
1e-10 per column for both solvers. One benchmark.group per size:

* ``fastnips-cpp``: :func:`fastnips.graph.tikhonov_solve`, backend ``cpp`` (block Jacobi-PCG, fused
  Chebyshev SpMMs).
* ``scipy-cg``: what a user would write: ``scipy.sparse.linalg.cg`` per column on a matrix-free
  ``LinearOperator`` applying p(L) by Horner's rule (K sparse products), rtol 1e-10, no preconditioner.
* ``appnp-10``: ten APPNP propagation steps X <- (1 - a) A_n X + a X0 (a = 0.1) with
  :func:`fastnips.ops.spmm`: the cost floor of a fixed-depth propagation, not the same operator.
* ``memcpy``: a copy of as many bytes as one SpMM of the block must move, for achieved-bandwidth reading.

Every run checks its result: both solvers against a tight oracle (the reference solver, rtol 1e-13) to
relative 1e-6, APPNP against the same propagation in scipy.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from fastnips import _backend
from fastnips.graph import normalized_laplacian, tikhonov_solve
from fastnips.graph.reference import poly_apply_reference, tikhonov_solve_reference
from fastnips.ops import spmm

SIZES = {"n=1e3": 1_000, "n=1e4": 10_000, "n=1e5": 100_000}
AVG_DEGREE = 8
F = 16
K = 4
TOL = 1e-10
ALPHA = 0.1
IMPLS = ["fastnips-cpp", "scipy-cg", "appnp-10", "memcpy"]
AGREE = 1e-6


@functools.lru_cache(maxsize=3)
def problem(size: str):
    n = SIZES[size]
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, n, size=(2, n * AVG_DEGREE // 2))
    edge_index = np.concatenate([pairs, pairs[::-1]], axis=1)
    L = normalized_laplacian(edge_index, n)
    Lhat = normalized_laplacian(edge_index, n, add_self_loops=True)
    theta = rng.uniform(0.0, 1.0, K + 1)
    q = rng.uniform(0.1, 1.0, n)
    X = rng.standard_normal((n, F))
    return L, Lhat, theta, q, X


@functools.lru_cache(maxsize=3)
def oracle(size: str) -> np.ndarray:
    L, _, theta, q, X = problem(size)
    return tikhonov_solve_reference(L, theta, q, X, tol=1e-13, maxiter=10_000, direct_max_n=0)[0]


@functools.lru_cache(maxsize=3)
def appnp_oracle(size: str) -> np.ndarray:
    _, Lhat, _, _, X = problem(size)
    An = (-Lhat).tocsr()
    An.setdiag(1.0 + An.diagonal())  # A_n = I - L_hat
    Z = X.copy()
    for _ in range(10):
        Z = (1 - ALPHA) * (An @ Z) + ALPHA * X
    return Z


def scipy_cg(L, theta, q, X) -> np.ndarray:
    n = L.shape[0]
    op = spla.LinearOperator((n, n), dtype=np.float64,
                             matvec=lambda v: poly_apply_reference(L, theta, "bernstein", v) + q * v)
    Y = np.empty_like(X)
    for c in range(X.shape[1]):
        Y[:, c], info = spla.cg(op, q * X[:, c], rtol=TOL, atol=0.0, maxiter=10_000)
        assert info == 0
    return Y


def appnp(An, X) -> np.ndarray:
    Z = X
    for _ in range(10):
        Z = (1 - ALPHA) * spmm(An, Z) + ALPHA * X
    return Z


def spmm_bytes(L, X) -> int:
    """Minimal bytes one SpMM of the block moves: the CSR arrays, the block once in, once out."""
    return L.indptr.nbytes + L.indices.nbytes + L.data.nbytes + 2 * X.nbytes


def assert_agrees(Y, ref):
    err = float(np.abs(Y - ref).max())
    assert err <= AGREE * float(np.abs(ref).max()), f"max error {err:.3e} vs scale {np.abs(ref).max():.3e}"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size", list(SIZES))
def test_tikhonov_solve(machine_facts, memcpy_row, size, impl):
    benchmark = machine_facts
    benchmark.group = f"tikhonov_solve float64 {size} deg={AVG_DEGREE} F={F} K={K}"
    L, Lhat, theta, q, X = problem(size)
    nbytes = spmm_bytes(L, X)
    benchmark.extra_info.update(n=L.shape[0], nnz=int(L.nnz), F=F, K=K, tol=TOL, spmm_bytes=nbytes)
    if impl == "memcpy":
        memcpy_row(benchmark, nbytes)
        return
    if impl == "fastnips-cpp":
        C = _backend.native()
        if not (_backend.backend_available("cpp") and hasattr(C, "tikhonov_solve_cg")):
            pytest.skip("the cpp backend of tikhonov_solve is not in this build of fastnips._C")
        Y, info = benchmark(tikhonov_solve, L, theta, q, X, backend="cpp", tol=TOL, return_info=True)
        benchmark.extra_info.update(iterations_max=int(info.iterations.max()), jacobi_diagonal=info.jacobi_diagonal,
                                    spmms=int(K * (info.iterations.sum() / F + 1)))
        assert info.converged.all()
        assert_agrees(Y, oracle(size))
    elif impl == "scipy-cg":
        Y = benchmark(scipy_cg, L, theta, q, X)
        assert_agrees(Y, oracle(size))
    else:  # appnp-10
        An = (-Lhat).tocsr()
        An.setdiag(1.0 + An.diagonal())
        Y = benchmark(appnp, An, X)
        benchmark.extra_info.update(traffic_bytes=10 * nbytes)
        assert_agrees(Y, appnp_oracle(size))
