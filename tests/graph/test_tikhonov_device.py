"""The device Tikhonov solver (fastnips.graph._device) and its kernels (kernels/tikhonov.py, the CUDA step of _C).

Triton tests run on CPU tensors under the Triton interpreter: tests/conftest.py sets TRITON_INTERPRET=1
before anything imports a kernel (as for kernels/spmm.py); they skip when triton is missing or cannot run.
CUDA tests skip where the cuda backend is not available (no CUDA device, or a build without CUDA).

Tolerances, stated once (relative to the largest entry of the oracle):

* one Chebyshev step, p(L) V and the fused dots vs dense numpy: 1e-12 (float64), 1e-5 (float32);
* solves vs fastnips.graph.reference.tikhonov_solve_reference: 1e-10 (float64, tol 1e-12) and 1e-5
  (float32, tol 1e-6); cond(A) <= ~30 here, and the error is at most cond(A) x the relative residual.

Paper: Tremblay, Ricaud, Bianchi, "A Generalized Tikhonov Layer for Interpretable-by-design Graph Neural
Networks" (arXiv 2605.28578).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastnips import _backend
from fastnips.data.graphs import undirected_edge_index as undirected
from fastnips.graph import chebyshev_coefficients, normalized_laplacian
from fastnips.graph import reference as ref

from ._builders import assert_close, erdos_renyi
from ._device_builders import (
    _NATIVE,
    DEV,
    GRAPHS,
    REL,
    SOLVE_REL,
    SOLVE_TOL,
    TDT,
    _device,
    _kernels,
    chebyshev_blocks,
    csr_tensors,
    needs_triton,
    problem,
    t,
)

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------------------------------------------
# the fused Chebyshev step (Triton)

STEP_GRAPHS = {
    **{k: GRAPHS[k] for k in ("erdos-renyi", "isolated+empty-rows", "star")},
    # not symmetric, unsorted columns, repeated entries, empty rows: the step is plain CSR arithmetic
    "unsorted-duplicates": lambda: sp.csr_matrix(
        (np.array([0.5, -0.25, 0.25, 0.3, 0.1, -0.4, 0.2]), np.array([3, 0, 0, 1, 4, 2, 2]),
         np.array([0, 3, 3, 5, 5, 7, 7])), shape=(6, 6)),
}


@needs_triton
@pytest.mark.parametrize("graph", list(STEP_GRAPHS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("F", [1, 3, 8])
def test_cheb_step_matches_dense(graph, dtype, F):
    """Every step k of K = 4: T_{k+1} into `next` (in place over T_{k-1} from k = 2 on, as the solver
    does), acc = sum_{m <= k+1} c_m T_m V, and on the last step + q o V and the float64 dots V . acc."""
    tk = _kernels()
    L = STEP_GRAPHS[graph]()
    n, K = L.shape[0], 4
    rng = np.random.default_rng(F)
    V = rng.standard_normal((n, F))
    c = rng.uniform(-1.0, 1.0, K + 1)
    q = rng.uniform(0.5, 2.0, n)
    T = chebyshev_blocks(L, V, K)
    ip, ix, d = csr_tensors(L, dtype, np.int64 if F == 3 else np.int32)
    Vt, qt, ct = t(V, dtype), t(q, dtype), t(c, dtype)
    ta, tb, acc = (torch.full_like(Vt, np.nan) for _ in range(3))
    prev, cur = None, Vt
    for k in range(K):
        nxt = ta if k == 0 else tb if k == 1 else prev
        last = k == K - 1
        dots = tk.cheb_step(ip, ix, d, ct, k, cur, prev, None if last else nxt, acc, V=Vt,
                            q=qt if last else None, dots=True)
        want = sum(c[m] * T[m] for m in range(k + 2)) + (q[:, None] * V if last else 0.0)
        assert_close(acc, want, REL[dtype], f"acc after step {k}")
        assert_close(dots, (V * want).sum(0), REL[dtype] * max(1, n), f"dots after step {k}")
        if not last:
            assert_close(nxt, T[k + 1], REL[dtype], f"T_{k + 1}")
        prev, cur = cur, nxt
    assert acc.dtype == TDT[dtype]


@needs_triton
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("K", [0, 1, 2, 4])
def test_poly_apply_matches_assembled(dtype, K):
    """p(L) V (and p(L) V + q o V) by K fused passes vs the assembled Bernstein matrix."""
    dev = _device()
    rng = np.random.default_rng(K)
    for graph in ("isolated+empty-rows", "disconnected"):
        L = GRAPHS[graph]()
        n = L.shape[0]
        theta = rng.uniform(0, 1, K + 1)
        P = ref.poly_matrix_reference(L, theta).toarray()
        cheb = chebyshev_coefficients(theta)
        q = rng.uniform(0.5, 2.0, n)
        for F in (1, 3, 8):
            V = rng.standard_normal((n, F))
            Y = dev.device_poly_apply(*csr_tensors(L, dtype), cheb, t(V, dtype))
            assert Y.dtype == TDT[dtype]
            assert Y.shape == (n, F)
            assert_close(Y, P @ V, REL[dtype], f"{graph} F={F}")
            Yq = dev.device_poly_apply(*csr_tensors(L, dtype), cheb, t(V, dtype), q=t(q, dtype))
            assert_close(Yq, P @ V + q[:, None] * V, REL[dtype], f"{graph} F={F} +q")
        y = dev.device_poly_apply(*csr_tensors(L, dtype), cheb, t(V[:, 0], dtype))  # 1-D in, 1-D out
        assert y.shape == (n,)
        assert_close(y, P @ V[:, 0], REL[dtype])


@needs_triton
def test_cg_vector_kernels_match_torch():
    tk = _kernels()
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        n, F = 70, 5
        Y, R, P, AP = (rng.standard_normal((n, F)) for _ in range(4))
        m, alpha = rng.uniform(0.2, 2.0, n), rng.standard_normal(F)
        Yt, Rt = t(Y, dtype), t(R, dtype)
        rr, rz = tk.cg_update(Yt, Rt, t(P, dtype), t(AP, dtype), t(m, dtype), t(alpha, dtype))
        r = R - alpha * AP
        assert_close(Yt, Y + alpha * P, REL[dtype])
        assert_close(Rt, r, REL[dtype])
        assert rr.dtype == torch.float64
        assert_close(rr, (r * r).sum(0), REL[dtype])
        assert_close(rz, (r * m[:, None] * r).sum(0), REL[dtype])
        zc, beta = (rng.random(F) < 0.5).astype(float), rng.standard_normal(F)
        Pt = t(P, dtype)
        tk.cg_direction(Pt, t(R, dtype), t(m, dtype), t(zc, dtype), t(beta, dtype))
        assert_close(Pt, zc * (m[:, None] * R) + beta * P, REL[dtype])


@needs_triton
def test_kernel_wrappers_check_arguments():
    tk = _kernels()
    L = GRAPHS["star"]()
    ip, ix, d = csr_tensors(L, np.float64)
    n = L.shape[0]
    V = torch.zeros((n, 2), dtype=torch.float64, device=DEV)
    acc = torch.zeros_like(V)
    c = t(np.array([1.0, 0.5]), np.float64)
    with pytest.raises(ValueError, match=r"acc must have shape \(40, 2\)"):
        tk.cheb_step(ip, ix, d, c, 0, V, None, None, acc[:-1])
    with pytest.raises(TypeError, match=r"expected torch\.float64"):
        tk.cheb_step(ip, ix, d, c, 0, V, None, None, acc.float())
    with pytest.raises(ValueError, match=r"k must be an int in \[0, K\)"):
        tk.cheb_step(ip, ix, d, c, 1, V, V, None, acc)
    with pytest.raises(ValueError, match="next must not alias cur"):
        tk.cheb_step(ip, ix, d, c, 0, V, None, V, acc)
    with pytest.raises(ValueError, match="V is required"):
        tk.cheb_step(ip, ix, d, c, 0, V, None, None, acc, dots=True)
    with pytest.raises(TypeError, match="share one dtype"):
        tk.cheb_step(ip.long(), ix, d, c, 0, V, None, None, acc)
    with pytest.raises(ValueError, match="C-contiguous"):
        tk.cheb_step(ip, ix, d, c, 0, torch.zeros((2, n), dtype=torch.float64, device=DEV).T, None, None, acc)


# ---------------------------------------------------------------------------------------------------
# the preconditioner


def test_truncated_jacobi_diagonal():
    """c0 + c1 diag(T1) + c2 diag(T2) vs dense matrices; equal to the cpp backend's truncated diagonal;
    repeated entries summed before squaring."""
    dev = _device()
    L = normalized_laplacian(*erdos_renyi(50, 0.1, 5), add_self_loops=True)
    n = L.shape[0]
    M = L.toarray() - np.eye(n)
    rng = np.random.default_rng(2)
    for K in range(5):
        cheb = rng.uniform(-1, 1, K + 1)
        want = cheb[0] + (cheb[1] * np.diag(M) if K >= 1 else 0) + (cheb[2] * (2 * np.diag(M @ M) - 1) if K >= 2
                                                                      else 0)
        got = dev.device_jacobi_diagonal(*csr_tensors(L, np.float64, device="cpu"), cheb)
        assert got.dtype == torch.float64
        np.testing.assert_allclose(got.numpy(), want, atol=1e-13)
    # split every entry in two (repeats add up): same diagonal
    coo = L.tocoo()
    r, c, v = (np.concatenate([a, a]) for a in (coo.row, coo.col, coo.data))
    order = np.argsort(r, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=n))])
    got = dev.device_jacobi_diagonal(t(indptr, device="cpu"), t(c[order], device="cpu"),
                                     t(v[order] / 2, device="cpu"), cheb)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-13)
    if _backend.backend_available("cpp"):
        cheb = chebyshev_coefficients(rng.uniform(0, 1, 5))
        out = _NATIVE.tikhonov_solve_cg(L.indptr, L.indices, L.data, cheb, np.ones(n), np.ones((n, 1)), 1e-8, 50,
                                        diagonal=2)
        got = dev.device_jacobi_diagonal(*csr_tensors(L, np.float64, device="cpu"), cheb)
        np.testing.assert_allclose(got.numpy(), out[3], atol=1e-13)


# ---------------------------------------------------------------------------------------------------
# the solve (Triton)


@needs_triton
@pytest.mark.parametrize("graph", list(GRAPHS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_solve_matches_reference(graph, dtype):
    dev = _device()
    L = GRAPHS[graph]()
    n = L.shape[0]
    for F in (1, 3, 8):
        theta, q, X = problem(n, F, seed=F)
        cheb = chebyshev_coefficients(theta)
        Yref = ref.tikhonov_solve_reference(L, theta, q, X)[0]
        Y, its, res = dev.device_tikhonov_solve(*csr_tensors(L, dtype, np.int64 if F == 3 else np.int32), cheb,
                                                t(q, dtype), t(X, dtype), tol=SOLVE_TOL[dtype], maxiter=500)
        assert Y.dtype == TDT[dtype]
        assert Y.shape == (n, F)
        assert Y.device.type == DEV
        assert_close(Y, Yref, SOLVE_REL[dtype], f"F={F}")
        assert its.dtype == np.int64
        assert res.dtype == np.float64
        assert its.shape == res.shape == (F,)
        assert (res <= SOLVE_TOL[dtype]).all()
        assert (its > 0).all()
        if dtype == np.float64 and F == 8 and _NATIVE is not None and hasattr(_NATIVE, "tikhonov_solve_cg"):
            # the same algorithm as the cpp backend with its truncated diagonal: the same iteration counts
            # (up to one where a column sits on the tolerance and the summation orders differ)
            its_cpp = _NATIVE.tikhonov_solve_cg(L.indptr, L.indices, L.data, cheb, q, X, 1e-12, 500, n_threads=1,
                                                diagonal=2)[1]
            assert np.abs(its - its_cpp).max() <= 1, (its, its_cpp)


@needs_triton
def test_solve_vector_rhs_and_torch_updates():
    """A 1-D X gives a 1-D Y; updates='torch' (the cuda backend's default) gives the same solution and
    iteration counts as the fused Triton vector kernels."""
    dev = _device()
    L = GRAPHS["disconnected"]()
    n = L.shape[0]
    theta, q, X = problem(n, 4, seed=3)
    cheb = chebyshev_coefficients(theta)
    args = (*csr_tensors(L, np.float64), cheb, t(q, np.float64))
    Y1, it1, _ = dev.device_tikhonov_solve(*args, t(X, np.float64), tol=1e-12, maxiter=300)
    Y2, it2, _ = dev.device_tikhonov_solve(*args, t(X, np.float64), tol=1e-12, maxiter=300, updates="torch")
    assert_close(Y2, Y1.numpy(), 1e-12)
    np.testing.assert_array_equal(it1, it2)
    y, it, res = dev.device_tikhonov_solve(*args, t(X[:, 2], np.float64), tol=1e-12, maxiter=300)
    assert y.shape == (n,)
    assert it.shape == res.shape == (1,)
    assert_close(y, Y1[:, 2].numpy(), 1e-12)
    # q as a scalar, X of another float dtype than data (data and q follow X)
    Ys, _, _ = dev.device_tikhonov_solve(*csr_tensors(L, np.float32), cheb, 0.7, t(X, np.float64), tol=1e-12,
                                         maxiter=300)
    assert Ys.dtype == torch.float64
    assert_close(Ys, ref.tikhonov_solve_reference(L.astype(np.float32).astype(np.float64), theta, np.full(n, 0.7),
                                                  X)[0], 1e-10)


@needs_triton
def test_mixed_columns_masking_and_compaction():
    """Columns converging at different iterations are masked, then compacted out of the block; on a cycle
    with constant q the Jacobi preconditioner is a multiple of I, so a column made of j eigenvectors of L
    converges in exactly j iterations, and a zero column in none (y = 0, residual 0)."""
    dev = _device()
    n = 60
    L = normalized_laplacian(undirected([(i, (i + 1) % n) for i in range(n)]), n)
    U = np.linalg.eigh(L.toarray())[1]
    theta = np.array([0.0, 0.3, 1.0, 0.6, 0.2])
    q = np.full(n, 0.3)
    X = np.random.default_rng(11).standard_normal((n, 8))
    X[:, 3] *= 1e6
    special = {1: np.zeros(n), 4: U[:, 10], 5: U[:, 10] + U[:, 30], 6: U[:, 10] + U[:, 30] + U[:, 45]}
    for c, v in special.items():
        X[:, c] = v
    Yref = ref.tikhonov_solve_reference(L, theta, q, X)[0]
    Y, its, res = dev.device_tikhonov_solve(*csr_tensors(L, np.float64), chebyshev_coefficients(theta),
                                            t(q, np.float64), t(X, np.float64), tol=1e-12, maxiter=500)
    for c in range(X.shape[1]):
        assert_close(Y[:, c], Yref[:, c], SOLVE_REL[np.float64], f"column {c}")
    assert [int(its[c]) for c in special] == [0, 1, 2, 3]
    assert res[1] == 0
    assert not Y[:, 1].any()
    assert (np.delete(its, list(special)) > 3).all()


@needs_triton
def test_degree_zero_and_one():
    """K = 0: A = (c0 + q) I, and the Jacobi preconditioner is exact: one iteration. K = 1 on a regular
    graph without self loops: diag(L) = 1, so the preconditioner is exact on the diagonal only."""
    dev = _device()
    L = GRAPHS["erdos-renyi"]()
    n = L.shape[0]
    rng = np.random.default_rng(3)
    q, X = rng.uniform(0.3, 3.0, n), rng.standard_normal((n, 3))
    for theta in ([0.7], [0.2, 0.9]):
        Y, its, _ = dev.device_tikhonov_solve(*csr_tensors(L, np.float64), chebyshev_coefficients(theta),
                                              t(q, np.float64), t(X, np.float64), tol=1e-12, maxiter=300)
        assert_close(Y, ref.tikhonov_solve_reference(L, theta, q, X)[0], SOLVE_REL[np.float64], f"theta={theta}")
        if len(theta) == 1:
            assert (its == 1).all()


@needs_triton
def test_lagged_convergence_test_changes_nothing(monkeypatch):
    """The CUDA convergence test reads flags that are up to `check_lag` iterations old. Emulated on CPU
    with events that never report completion early (the worst case: the host always runs `lag` iterations
    ahead), the solution, its iteration counts and the masking/compaction are bitwise those of the
    synchronous test."""
    dev = _device()

    class LateEvent:
        def query(self):
            return False

        def synchronize(self):
            pass

    real_init = dev._Monitor.__init__

    def lagged_init(self, torch_, device, lag):
        real_init(self, torch_, device, lag)
        self.asynchronous = True

    n = 60
    L = normalized_laplacian(undirected([(i, (i + 1) % n) for i in range(n)]), n)
    U = np.linalg.eigh(L.toarray())[1]
    X = np.random.default_rng(1).standard_normal((n, 6))
    # converge in 1, never start, 2 and 1 iterations: 2 of 5 live after iteration 2, so the block is
    # compacted, from stale flags when lagged
    X[:, 1], X[:, 2], X[:, 3], X[:, 4] = U[:, 7], 0.0, U[:, 7] + U[:, 20], U[:, 30]
    theta = np.array([0.1, 0.5, 0.8, 0.3])
    args = (*csr_tensors(L, np.float64), chebyshev_coefficients(theta), t(np.full(n, 0.4), np.float64))
    Y0, it0, res0 = dev.device_tikhonov_solve(*args, t(X, np.float64), tol=1e-12, maxiter=300)
    monkeypatch.setattr(dev._Monitor, "__init__", lagged_init)
    monkeypatch.setattr(dev._Monitor, "_copy", lambda self, flags: (LateEvent(), flags.clone()))
    for lag in (1, 3):
        Y, its, res = dev.device_tikhonov_solve(*args, t(X, np.float64), tol=1e-12, maxiter=300, check_lag=lag)
        assert torch.equal(Y, Y0)
        np.testing.assert_array_equal(its, it0)
        np.testing.assert_array_equal(res, res0)
    assert list(it0[1:5]) == [1, 0, 2, 1]
    assert (it0[[0, 5]] > 3).all()


@needs_triton
def test_maxiter_and_restarts():
    """A too-small maxiter returns the iterate with its true residual (> tol) and counts <= maxiter."""
    dev = _device()
    L = GRAPHS["erdos-renyi"]()
    n = L.shape[0]
    theta, q, X = problem(n, 2, seed=5, q_range=(0.01, 0.02))  # ill-conditioned: many iterations needed
    cheb = chebyshev_coefficients(theta)
    args = (*csr_tensors(L, np.float64), cheb, t(q, np.float64), t(X, np.float64))
    Y, its, res = dev.device_tikhonov_solve(*args, tol=1e-12, maxiter=3)
    assert (its == 3).all()
    assert (res > 1e-12).all()
    B = q[:, None] * X
    A = ref.poly_matrix_reference(L, theta) + sp.diags(q)
    np.testing.assert_allclose(res, np.linalg.norm(B - A @ Y.numpy(), axis=0) / np.linalg.norm(B, axis=0),
                               rtol=1e-10)
    Y, its, res = dev.device_tikhonov_solve(*args, tol=1e-12, maxiter=2000, max_restarts=0)
    assert (res <= 1e-11).all()
    assert (its > 3).all()


@needs_triton
def test_indefinite_operator_raises():
    """A symmetric L with diagonal in [0, 2] but eigenvalue 4: p(lambda) = 2 - lambda (Chebyshev: 1 - t)
    is >= 0 on [0, 2] yet p(4) + q < 0, so CG meets negative curvature and must refuse."""
    dev = _device()
    L = sp.csr_matrix(np.array([[1.0, -3.0], [-3.0, 1.0]]))
    with pytest.raises(ValueError, match=r"not positive definite: .* in column 1 at iteration 1"):
        dev.device_tikhonov_solve(*csr_tensors(L, np.float64), np.array([1.0, -1.0]), t(np.ones(2), np.float64),
                                  t(np.array([[1.0, 1.0], [1.0, -1.0]]), np.float64), tol=1e-10, maxiter=50)


def _bad_cases():
    L = GRAPHS["star"]()
    n = L.shape[0]
    ip, ix, d = csr_tensors(L, np.float64, device="cpu")
    X = torch.ones((n, 2), dtype=torch.float64)
    q = torch.ones(n, dtype=torch.float64)
    c = np.array([0.5, 0.5])
    bad_ptr = ip.clone()
    bad_ptr[0] = 1
    bad_ix = ix.clone()
    bad_ix[3] = n + 5
    return {
        "X wrong rows": ((ip, ix, d, c, q, X[:-1]), {}, ValueError, r"X must have shape \(n,\) or \(n, F\)"),
        "X 3-D": ((ip, ix, d, c, q, X[..., None]), {}, ValueError, "X must have shape"),
        "q wrong shape": ((ip, ix, d, c, q[:-1], X), {}, ValueError, r"q must have shape \(40,\)"),
        "indices/data lengths": ((ip, ix, d[:-1], c, q, X), {}, ValueError, "indices and data differ"),
        "indptr[0]": ((bad_ptr, ix, d, c, q, X), {}, ValueError, r"L: indptr\[0\] must be 0"),
        "index out of range": ((ip, bad_ix, d, c, q, X), {}, ValueError, "L: column index out of range"),
        "X NaN": ((ip, ix, d, c, q, X * np.nan), {}, ValueError, "X contains NaN"),
        "data inf": ((ip, ix, d * np.inf, c, q, X), {}, ValueError, "data.*NaN or inf"),
        "q = 0": ((ip, ix, d, c, q * (torch.arange(n) != 3), X), {}, ValueError,
                  r"q must be > 0 everywhere \(q\[3\] = 0.0\)"),
        "q NaN": ((ip, ix, d, c, q * np.nan, X), {}, ValueError, "q contains NaN"),
        "X float16": ((ip, ix, d, c, q, X.half()), {}, TypeError, "X must be float32 or float64"),
        "X numpy": ((ip, ix, d, c, q, X.numpy()), {}, TypeError, "X must be a torch tensor"),
        "float indices": ((ip, ix.double(), d, c, q, X), {}, TypeError, "indices must hold integers"),
        "empty cheb": ((ip, ix, d, [], q, X), {}, ValueError, "cheb must be a non-empty 1-D"),
        "NaN cheb": ((ip, ix, d, [1.0, np.nan], q, X), {}, ValueError, "cheb contains NaN"),
        "diag shape": ((ip, ix, d, c, q, X), {"diag": torch.ones(3, dtype=torch.float64)}, ValueError,
                       r"diag must have shape \(40,\)"),
        "tol 0": ((ip, ix, d, c, q, X), {"tol": 0.0}, ValueError, r"tol must lie in \(0, 1\)"),
        "maxiter 0": ((ip, ix, d, c, q, X), {"maxiter": 0}, ValueError, "maxiter must be an int >= 1"),
        "unknown backend": ((ip, ix, d, c, q, X), {"backend": "cpp"}, ValueError, "unknown backend 'cpp'"),
        "unknown updates": ((ip, ix, d, c, q, X), {"updates": "numpy"}, ValueError, "updates must be one of"),
        "cuda on cpu": ((ip, ix, d, c, q, X), {"backend": "cuda"}, ValueError, "'cuda' runs on CUDA tensors"),
    }


@pytest.mark.parametrize("case", list(_bad_cases()))
def test_bad_input(case):
    args, kwargs, exc, match = _bad_cases()[case]
    with pytest.raises(exc, match=match):  # all refused before any kernel is needed
        _device().device_tikhonov_solve(*args, **{"tol": 1e-8, "maxiter": 50, **kwargs})


def test_cuda_backend_unavailable_says_why(monkeypatch, fresh_backends):
    """backend='cuda' where the cuda backend is not available (here: switched off) says why, before any launch."""
    dev = _device()
    monkeypatch.setenv("FASTNIPS_DISABLE_CUDA", "1")
    _backend.refresh()
    with pytest.raises(ValueError, match="backend 'cuda' is not available here: switched off"):
        dev._cuda_function(torch.device("cuda"))


@needs_triton
def test_empty_problems():
    dev = _device()
    z = torch.zeros(0, dtype=torch.int32, device=DEV)
    Y, its, res = dev.device_tikhonov_solve(torch.zeros(1, dtype=torch.int32, device=DEV), z,
                                            torch.zeros(0, dtype=torch.float64, device=DEV), [1.0, 0.5],
                                            torch.ones(0, dtype=torch.float64, device=DEV),
                                            torch.zeros((0, 3), dtype=torch.float64, device=DEV), tol=1e-8,
                                            maxiter=10)
    assert Y.shape == (0, 3)
    assert its.shape == (3,)
    assert (its == 0).all()
    L = GRAPHS["star"]()
    Y, its, res = dev.device_tikhonov_solve(*csr_tensors(L, np.float64), [1.0, 0.5],
                                            t(np.ones(40), np.float64), torch.zeros((40, 0), dtype=torch.float64,
                                                                                   device=DEV), tol=1e-8, maxiter=10)
    assert Y.shape == (40, 0)
    assert its.shape == (0,)
    assert res.shape == (0,)
