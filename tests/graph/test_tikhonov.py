"""fastnips.graph: normalized_laplacian and tikhonov_solve, every backend against dense oracles.

Tolerances, stated once:

* cpp vs reference (and vs a dense ``numpy.linalg.solve``): max |Y - Y_ref| <= 1e-10 max |Y_ref| in float64
  (solver tol 1e-12: the error is at most cond(A) times the relative residual, and cond(A) <= ~100 here),
  and <= 1e-5 max |Y_ref| in float32 (solver tol 1e-6, well-conditioned problems, dots in float64).
* the native polynomial operator and Jacobi diagonal vs assembled scipy matrices: 1e-12 (float64),
  1e-5 (float32), relative to the largest entry.
* algebraic properties (minimiser, spectrum of R, fixed points, scale invariance, PPNP): 1e-9 relative.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from fastnips import _backend
from fastnips.data.graphs import undirected_edge_index as undirected
from fastnips.graph import (
    chebyshev_coefficients,
    evaluate_polynomial,
    normalized_laplacian,
    tikhonov_solve,
)
from fastnips.graph import reference as ref

from ._builders import assert_close, erdos_renyi, grid, problem, star

TOL64, TOL32 = 1e-10, 1e-5


# ---------------------------------------------------------------------------------------------------
# graphs (PyG-style edge lists: every undirected edge in both directions)


def with_isolated(seed):
    ei, n = erdos_renyi(60, 0.08, seed)
    return ei, n + 7  # nodes 60..66 have no edge


def disconnected(seed):
    a, na = erdos_renyi(50, 0.15, seed)
    b, nb = grid(6, 7)
    return np.concatenate([a, b + na], axis=1), na + nb


GRAPHS = {
    "erdos-renyi": lambda: erdos_renyi(300, 0.03, 1),
    "grid": lambda: grid(15, 20),
    "isolated-nodes": lambda: with_isolated(2),
    "disconnected": lambda: disconnected(3),
    "star": lambda: star(40),
}


def laplacian_of(name, **kw):
    ei, n = GRAPHS[name]()
    return normalized_laplacian(ei, n, **kw)


def dense_solution(L, coeffs, q, X, basis="bernstein"):
    """An oracle independent of scipy's sparse code: p(L) from an eigendecomposition, dense solve."""
    lam, U = np.linalg.eigh(L.toarray())
    P = (U * evaluate_polynomial(coeffs, np.clip(lam, 0.0, 2.0), basis)) @ U.T
    return np.linalg.solve(P + np.diag(q), q[:, None] * X.reshape(len(q), -1)).reshape(X.shape)


# ---------------------------------------------------------------------------------------------------
# normalized_laplacian


def pyg_get_laplacian_sym(edge_index, edge_weight, num_nodes):
    """torch_geometric.utils.get_laplacian(normalization="sym"), written out in numpy (PyG 2.x):
    remove self loops; deg = scatter_add(w, row); w <- deg^-1/2[row] w deg^-1/2[col] with inf -> 0;
    L = add_self_loops(edge_index, -w, fill_value=1). Returned dense (repeated entries add up)."""
    row, col = edge_index
    w = np.ones(row.size) if edge_weight is None else np.asarray(edge_weight, dtype=np.float64)
    keep = row != col
    row, col, w = row[keep], col[keep], w[keep]
    deg = np.zeros(num_nodes)
    np.add.at(deg, row, w)
    with np.errstate(divide="ignore"):
        dis = deg ** -0.5
    dis[np.isinf(dis)] = 0.0
    w = dis[row] * w * dis[col]
    L = np.zeros((num_nodes, num_nodes))
    np.add.at(L, (row, col), -w)
    L[np.arange(num_nodes), np.arange(num_nodes)] += 1.0
    return L


def pyg_gcn_norm_laplacian(edge_index, edge_weight, num_nodes):
    """I - gcn_norm(edge_index, add_self_loops=True) of PyG, written out: add_remaining_self_loops
    (existing loops keep their weight, others get 1), deg = scatter_add(w, col), w <- d^-1/2[row] w d^-1/2[col]."""
    row, col = edge_index
    w = np.ones(row.size) if edge_weight is None else np.asarray(edge_weight, dtype=np.float64)
    loop = row == col
    loop_w = np.ones(num_nodes)
    loop_w[row[loop]] = w[loop]
    row = np.concatenate([row[~loop], np.arange(num_nodes)])
    col = np.concatenate([col[~loop], np.arange(num_nodes)])
    w = np.concatenate([w[~loop], loop_w])
    deg = np.zeros(num_nodes)
    np.add.at(deg, col, w)
    dis = np.where(deg > 0, deg ** -0.5, 0.0)
    An = np.zeros((num_nodes, num_nodes))
    np.add.at(An, (row, col), dis[row] * w * dis[col])
    return np.eye(num_nodes) - An


def test_laplacian_matches_dense_formula():
    rng = np.random.default_rng(0)
    ei, n = with_isolated(5)
    w_half = rng.uniform(0.1, 2.0, ei.shape[1] // 2)
    w = np.concatenate([w_half, w_half])  # symmetric weights (both directions equal)
    L = normalized_laplacian(ei, n, w)
    A = np.zeros((n, n))
    np.add.at(A, (ei[0], ei[1]), w)
    d = A.sum(1)
    dis = np.where(d > 0, 1 / np.sqrt(np.where(d > 0, d, 1)), 0.0)
    dense = np.eye(n) - dis[:, None] * A * dis[None, :]
    np.testing.assert_allclose(L.toarray(), dense, rtol=0, atol=1e-15)
    isolated = np.flatnonzero(d == 0)
    assert set(range(60, 67)) <= set(isolated.tolist())
    np.testing.assert_array_equal(L.toarray()[isolated][:, isolated], np.eye(isolated.size))  # L_ii = 1, as PyG
    np.testing.assert_array_equal(L.toarray()[isolated].sum(1), np.ones(isolated.size))  # nothing else in the row
    assert sp.isspmatrix_csr(L)
    assert L.has_sorted_indices
    assert (L != L.T).nnz == 0  # exactly symmetric
    lam = np.linalg.eigvalsh(L.toarray())
    assert lam.min() > -1e-12
    assert lam.max() < 2 + 1e-12


def test_laplacian_matches_pyg_get_laplacian():
    """Undirected list with duplicates, self loops and isolated nodes: entry for entry PyG's result."""
    rng = np.random.default_rng(1)
    ei, n = erdos_renyi(40, 0.1, 4)
    ei = np.concatenate([ei, ei[:, :6], np.array([[3, 3], [5, 5]])], axis=1)  # repeated edges, 2 self loops
    n += 3
    w = rng.uniform(0.5, 1.5, ei.shape[1])
    sym = np.concatenate([ei, ei[::-1]], axis=1), np.concatenate([w, w])  # every edge both ways, same weight
    L = normalized_laplacian(sym[0], n, sym[1])
    np.testing.assert_allclose(L.toarray(), pyg_get_laplacian_sym(sym[0], sym[1], n), atol=1e-15)
    # a directed multigraph (some edges repeated in one direction only), taken literally
    np.testing.assert_allclose(normalized_laplacian(ei, n, symmetrize=False).toarray(),
                               pyg_get_laplacian_sym(ei, None, n), atol=1e-15)


def test_laplacian_directed_list():
    ei = np.array([[0, 1, 2], [1, 2, 0]])  # a directed 3-cycle
    # PyG convention kept literally: out-degrees, not symmetric
    L = normalized_laplacian(ei, 3, symmetrize=False)
    np.testing.assert_allclose(L.toarray(), pyg_get_laplacian_sym(ei, None, 3), atol=1e-15)
    assert (L != L.T).nnz > 0
    # default: the union of both directions, i.e. the undirected triangle
    Ls = normalized_laplacian(ei, 3)
    np.testing.assert_allclose(Ls.toarray(), normalized_laplacian(undirected([(0, 1), (1, 2), (2, 0)]), 3).toarray())


def test_laplacian_self_loops_like_gcn_norm():
    ei, n = erdos_renyi(30, 0.15, 6)
    ei = np.concatenate([ei, np.array([[4], [4]])], axis=1)  # one existing self loop, weight 2.5
    w = np.ones(ei.shape[1])
    w[-1] = 2.5
    n += 2  # two isolated nodes: with loops, L_hat_ii = 0 there
    Lh = normalized_laplacian(ei, n, w, add_self_loops=True)
    np.testing.assert_allclose(Lh.toarray(), pyg_gcn_norm_laplacian(ei, w, n), atol=1e-15)
    assert Lh[n - 1, n - 1] == 0.0
    lam = np.linalg.eigvalsh(Lh.toarray())
    assert lam.min() > -1e-12
    assert lam.max() < 2


def test_laplacian_inputs():
    ei, n = grid(3, 4)
    base = normalized_laplacian(ei, n).toarray()
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(normalized_laplacian(torch.from_numpy(ei), n).toarray(), base)
    np.testing.assert_array_equal(normalized_laplacian(ei.astype(np.int32), None).toarray(), base)
    w32 = np.ones(ei.shape[1], dtype=np.float32)
    L32 = normalized_laplacian(ei, n, w32)
    assert L32.dtype == np.float32
    np.testing.assert_allclose(L32.toarray(), base, rtol=1e-6)
    assert normalized_laplacian(np.zeros((2, 0), dtype=np.int64), 3).toarray().tolist() == np.eye(3).tolist()
    assert normalized_laplacian(np.zeros((2, 0), dtype=np.int64), None).shape == (0, 0)


@pytest.mark.parametrize(("args", "kwargs", "exc", "match"), [
    ((np.zeros((3, 2), dtype=int), 4), {}, ValueError, r"shape \(2, E\)"),
    ((np.zeros(4, dtype=int), 4), {}, ValueError, r"shape \(2, E\)"),
    ((np.zeros((2, 2)), 4), {}, TypeError, "integers"),
    ((np.array([[0, 5], [1, 0]]), 4), {}, ValueError, r"edge 1 = \(5, 0\).*\[0, 4\)"),
    ((np.array([[0, -1], [1, 0]]), 4), {}, ValueError, r"edge 1 = \(-1, 0\)"),
    ((np.array([[0, 1], [1, 0]]), -1), {}, ValueError, "num_nodes must be >= 0"),
    ((np.array([[0, 1], [1, 0]]), 2.0), {}, TypeError, "num_nodes"),
    ((np.array([[0, 1], [1, 0]]), 2, [1.0, -0.5]), {}, ValueError, r"edge_weight must be >= 0 \(edge 1"),
    ((np.array([[0, 1], [1, 0]]), 2, [1.0, np.nan]), {}, ValueError, "NaN or inf"),
    ((np.array([[0, 1], [1, 0]]), 2, [1.0, np.inf]), {}, ValueError, "NaN or inf"),
    ((np.array([[0, 1], [1, 0]]), 2, [1.0]), {}, ValueError, r"edge_weight must have shape \(E,\) = \(2,\)"),
    ((np.array([[0, 1], [1, 0]]), 2, ["a", "b"]), {}, TypeError, "edge_weight must hold real numbers"),
])
def test_laplacian_bad_input(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        normalized_laplacian(*args, **kwargs)


# ---------------------------------------------------------------------------------------------------
# polynomials


def test_polynomial_bases_agree():
    rng = np.random.default_rng(0)
    lam = np.linspace(0, 2, 101)
    for K in range(0, 9):
        theta = rng.standard_normal(K + 1)
        a = ref.bernstein_to_monomial(theta)
        np.testing.assert_allclose(evaluate_polynomial(theta, lam), np.polyval(a[::-1], lam), atol=1e-12)
        np.testing.assert_allclose(ref.monomial_to_bernstein(a), theta, atol=1e-10)
        direct = sum(theta[k] * ref.comb(K, k) * (lam / 2) ** k * (1 - lam / 2) ** (K - k) for k in range(K + 1))
        np.testing.assert_allclose(evaluate_polynomial(theta, lam), direct, atol=1e-12)
        c = chebyshev_coefficients(theta)
        np.testing.assert_allclose(np.polynomial.chebyshev.chebval(lam - 1, c), direct, atol=1e-12)
        c_mono = chebyshev_coefficients(a, basis="monomial")
        np.testing.assert_allclose(c_mono, c, atol=1e-10)


# ---------------------------------------------------------------------------------------------------
# tikhonov_solve: agreement


@pytest.mark.parametrize("graph", list(GRAPHS))
@pytest.mark.parametrize("F", [1, 3, 16, 40])
def test_agrees_with_dense_float64(backend, graph, F):
    L = laplacian_of(graph)
    n = L.shape[0]
    theta, q, X = problem(n, F, seed=F)
    Yref = dense_solution(L, theta, q, X)
    Y, info = tikhonov_solve(L, theta, q, X, backend=backend, tol=1e-12, return_info=True)
    assert Y.dtype == np.float64
    assert Y.shape == (n, F)
    assert_close(Y, Yref, TOL64)
    assert info.backend == backend
    assert info.converged.all()
    assert (info.residuals <= 1e-12).all()
    # the default tolerance reaches its stated relative residual
    _, info = tikhonov_solve(L, theta, q, X, backend=backend, return_info=True)
    assert (info.residuals <= 1e-10).all()


@pytest.mark.parametrize("graph", ["erdos-renyi", "isolated-nodes", "disconnected"])
def test_agrees_monomial_basis(backend, graph):
    L = laplacian_of(graph)
    n = L.shape[0]
    theta, q, X = problem(n, 5, seed=9)
    a = ref.bernstein_to_monomial(theta)  # the same p, written in the monomial basis
    Yref = dense_solution(L, theta, q, X)
    assert_close(tikhonov_solve(L, a, q, X, basis="monomial", backend=backend, tol=1e-12), Yref, TOL64)


@pytest.mark.usefixtures("require_cpp")
@pytest.mark.parametrize("graph", list(GRAPHS))
@pytest.mark.parametrize("F", [1, 8, 16, 24])
def test_cpp_agrees_with_reference_float32(graph, F):
    L = laplacian_of(graph)
    n = L.shape[0]
    theta, q, X = problem(n, F, seed=F, q_range=(0.5, 2.0))
    Yref = ref.tikhonov_solve_reference(L, theta, q, X)[0]
    Y, info = tikhonov_solve(L.astype(np.float32), theta, q, X.astype(np.float32), backend="cpp", tol=1e-6,
                             return_info=True)
    assert Y.dtype == np.float32
    assert_close(Y, Yref, TOL32)
    _, info = tikhonov_solve(L, theta, q, X.astype(np.float32), backend="cpp", return_info=True)
    assert (info.residuals <= 1e-5).all()


def test_reference_cg_path_agrees(monkeypatch):
    """Above DIRECT_MAX_N the reference runs scipy cg on a matrix-free operator."""
    L = laplacian_of("grid")
    theta, q, X = problem(L.shape[0], 3, seed=4)
    Yd, it_d, _, method_d = ref.tikhonov_solve_reference(L, theta, q, X)
    Yc, it_c, res_c, method_c = ref.tikhonov_solve_reference(L, theta, q, X, tol=1e-13, direct_max_n=0)
    assert (method_d, method_c) == ("spsolve", "cg")
    assert (it_d == 0).all()
    assert (it_c > 0).all()
    assert (res_c <= 1e-13).all()
    assert_close(Yc, Yd, TOL64)
    monkeypatch.setattr(ref, "DIRECT_MAX_N", 0)
    _, info = tikhonov_solve(L, theta, q, X, backend="reference", return_info=True)
    assert info.method == "cg"


@pytest.mark.usefixtures("require_cpp")
def test_cpp_mixed_columns_and_compaction():
    """Columns converging at different iterations leave the block at different times (20 columns: block
    width 32, compacted to 16 once the early ones are done); each must still match the oracle. On a cycle
    with constant q the Jacobi preconditioner is a multiple of I, so a column made of j eigenvectors of L
    converges in exactly j iterations, and a zero column in none."""
    n = 200
    L = normalized_laplacian(undirected([(i, (i + 1) % n) for i in range(n)]), n)
    U = np.linalg.eigh(L.toarray())[1]
    rng = np.random.default_rng(11)
    theta = np.array([0.0, 0.3, 1.0, 0.6, 0.2])
    q = np.full(n, 0.3)
    X = rng.standard_normal((n, 20))
    X[:, 3] *= 1e6
    special = {5: np.zeros(n), 9: U[:, 10], 13: U[:, 10] + U[:, 50], 17: U[:, 10] + U[:, 50] + U[:, 120]}
    for c, v in special.items():
        X[:, c] = v
    Yref = dense_solution(L, theta, q, X)
    Y, info = tikhonov_solve(L, theta, q, X, backend="cpp", tol=1e-12, return_info=True)
    for c in range(X.shape[1]):
        assert_close(Y[:, c], Yref[:, c], TOL64)
    assert [int(info.iterations[c]) for c in special] == [0, 1, 2, 3]
    assert info.residuals[5] == 0
    assert not Y[:, 5].any()
    assert (np.delete(info.iterations, list(special)) > 3).all()


@pytest.mark.usefixtures("require_cpp")
def test_cpp_threads_deterministic_and_consistent():
    ei, n = erdos_renyi(3000, 0.003, 12)  # big enough for the parallel path
    L = normalized_laplacian(ei, n)
    theta, q, X = problem(n, 16, seed=12)
    Y2a = tikhonov_solve(L, theta, q, X, backend="cpp", n_threads=2)
    Y2b = tikhonov_solve(L, theta, q, X, backend="cpp", n_threads=2)
    Y1 = tikhonov_solve(L, theta, q, X, backend="cpp", n_threads=1)
    np.testing.assert_array_equal(Y2a, Y2b)  # fixed split and reduction order: bitwise reproducible
    assert_close(Y1, Y2a, 1e-9)


@pytest.mark.usefixtures("require_cpp")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_native_poly_apply_matches_assembled(dtype, index_dtype):
    """p(L) V by the fused Chebyshev kernel vs the assembled Bernstein matrix, every width class
    (compile-time widths, vector and scalar paths, generic widths) and degrees 0..7."""
    C = _backend.native()
    L = laplacian_of("isolated-nodes")
    n = L.shape[0]
    rng = np.random.default_rng(0)
    rel = 1e-12 if dtype == np.float64 else 1e-5
    for K in range(8):
        theta = rng.uniform(0, 1, K + 1)
        P = ref.poly_matrix_reference(L, theta).toarray()
        cheb = chebyshev_coefficients(theta)
        for F in [1, 2, 3, 4, 5, 8, 13, 16, 32, 64, 100, 128, 130]:
            V = rng.standard_normal((n, F))
            Y = C.tikhonov_poly_apply(L.indptr.astype(index_dtype), L.indices.astype(index_dtype),
                                      L.data.astype(dtype), cheb, V.astype(dtype))
            assert Y.dtype == dtype
            assert_close(Y, P @ V, rel)


@pytest.mark.usefixtures("require_cpp")
def test_native_jacobi_diagonal():
    """diag(p(L)) used by the preconditioner: exact (mode 1) vs the assembled matrix for K = 0..9; the
    truncated diagonal (mode 2) is exact for K <= 2 and the diagonal of c0 + c1 T1 + c2 T2 beyond."""
    C = _backend.native()
    ei, n = disconnected(5)
    ei = np.concatenate([ei, np.array([[2], [2]])], axis=1)
    L = normalized_laplacian(ei, n + 2, add_self_loops=True)  # self loops and isolated nodes
    n = L.shape[0]
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, 2))
    q = np.ones(n)
    for K in range(10):
        theta = rng.uniform(0, 1, K + 1)
        cheb = chebyshev_coefficients(theta)
        exact = ref.poly_matrix_reference(L, theta).diagonal()
        Y, _it, _res, diag, is_exact = C.tikhonov_solve_cg(L.indptr, L.indices, L.data, cheb, q, X, 1e-12, 500,
                                                         diagonal=1)
        assert is_exact
        np.testing.assert_allclose(diag, exact, rtol=0, atol=1e-12 * max(1, np.abs(exact).max()))
        assert_close(Y, dense_solution(L, theta, q, X), TOL64)
        Y2, _, _, diag2, exact2 = C.tikhonov_solve_cg(L.indptr, L.indices, L.data, cheb, q, X, 1e-12, 500,
                                                      diagonal=2)
        assert exact2 == (K <= 2)
        Mt = L - sp.identity(n)
        trunc = cheb[0] * np.ones(n)
        if K >= 1:
            trunc += cheb[1] * Mt.diagonal()
        if K >= 2:
            trunc += cheb[2] * (2 * (Mt @ Mt).diagonal() - 1)
        np.testing.assert_allclose(diag2, trunc, atol=1e-12)
        assert_close(Y2, Y, 1e-9)  # the preconditioner moves iterations, never the solution


@pytest.mark.usefixtures("require_cpp")
def test_native_rejects_bad_structure():
    C = _backend.native()
    X = np.ones((2, 1))
    q = np.ones(2)
    cheb = np.array([1.0, 0.5])
    with pytest.raises(ValueError, match="out of range in row 1"):
        C.tikhonov_solve_cg(np.array([0, 1, 2], np.int32), np.array([0, 7], np.int32), np.ones(2), cheb, q, X,
                            1e-8, 10)
    with pytest.raises(ValueError, match="non-decreasing"):
        C.tikhonov_solve_cg(np.array([0, 2, 1], np.int32), np.array([0, 1], np.int32), np.ones(2), cheb, q, X,
                            1e-8, 10)
    with pytest.raises(ValueError, match="q has 3 entries"):
        C.tikhonov_solve_cg(np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32), np.ones(2), cheb,
                            np.ones(3), X, 1e-8, 10)
    with pytest.raises(TypeError, match="cheb must be float64"):
        C.tikhonov_poly_apply(np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32), np.ones(2),
                              cheb.astype(np.float32), X)


# ---------------------------------------------------------------------------------------------------
# tikhonov_solve: the mathematics


def R_matrix(L, theta, q, backend, basis="bernstein"):
    n = L.shape[0]
    return tikhonov_solve(L, theta, q, np.eye(n), basis=basis, backend=backend, tol=1e-13)


def test_minimiser_property(backend):
    L = laplacian_of("grid")
    n = L.shape[0]
    theta, q, X = problem(n, 1, seed=3)
    x = X[:, 0]
    P = ref.poly_matrix_reference(L, theta)
    y = tikhonov_solve(L, theta, q, x, backend=backend, tol=1e-13)
    assert y.shape == (n,)

    def objective(z):
        return z @ (P @ z) + (z - x) @ (q * (z - x))

    grad = 2 * (P @ y) + 2 * q * (y - x)
    assert np.linalg.norm(grad) <= 1e-9 * np.linalg.norm(2 * q * x)
    rng = np.random.default_rng(0)
    f0 = objective(y)
    for eps in [1e-3, 1e-1, 10.0]:
        for _ in range(20):
            assert objective(y + eps * rng.standard_normal(n)) > f0


def test_spectrum_of_R_in_unit_interval(backend):
    ei, n = erdos_renyi(40, 0.15, 8)
    L = normalized_laplacian(ei, n)
    rng = np.random.default_rng(8)
    for theta in [rng.uniform(0, 1, 5), np.array([1.0, 0, 0, 0, 0]), np.array([0.0, 0, 0, 0, 3.0])]:
        q = rng.uniform(0.1, 5.0, n)
        R = R_matrix(L, theta, q, backend)
        ev = np.linalg.eigvals(R)
        assert np.abs(ev.imag).max() < 1e-9
        assert ev.real.min() > 0
        assert ev.real.max() <= 1 + 1e-9


def test_fixed_points_on_kernel(backend):
    """p(0) = 0 (theta_0 = 0): the kernel of L, spanned per component by D^1/2 1, is fixed by R."""
    for graph in ["erdos-renyi", "grid", "disconnected"]:
        ei, n = GRAPHS[graph]()
        L = normalized_laplacian(ei, n)
        A = sp.coo_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(n, n)).tocsr()
        v = np.sqrt(np.asarray(A.sum(1)).ravel())
        rng = np.random.default_rng(1)
        theta = np.concatenate([[0.0], rng.uniform(0.1, 1.0, 4)])
        q = rng.uniform(0.1, 3.0, n)
        y = tikhonov_solve(L, theta, q, v, backend=backend, tol=1e-13)
        assert_close(y, v, 1e-9)
        if graph == "disconnected":  # one fixed point per component
            comp = np.zeros(n)
            comp[:50] = v[:50]
            assert_close(tikhonov_solve(L, theta, q, comp, backend=backend, tol=1e-13), comp, 1e-9)


def test_scale_invariance(backend):
    L = laplacian_of("isolated-nodes")
    theta, q, X = problem(L.shape[0], 4, seed=5)
    Y = tikhonov_solve(L, theta, q, X, backend=backend, tol=1e-13)
    for c in [1e-2, 7.0]:
        assert_close(tikhonov_solve(L, c * theta, c * q, X, backend=backend, tol=1e-13), Y, 1e-9)


@pytest.mark.parametrize("basis", ["bernstein", "monomial"])
def test_exact_ppnp(backend, basis):
    """p(L_hat) = ((1 - alpha)/alpha) L_hat with self loops and Q = I is PPNP: alpha (I - (1-alpha) A_n)^-1."""
    ei, n = erdos_renyi(80, 0.06, 9)
    alpha = 0.1
    Lh = normalized_laplacian(ei, n, add_self_loops=True)
    An = np.eye(n) - Lh.toarray()
    s = (1 - alpha) / alpha
    theta = [0.0, s] if basis == "monomial" else [0.0, 2 * s]  # Bernstein K=1: B_1 = lambda / 2
    X = np.random.default_rng(9).standard_normal((n, 6))
    Y = tikhonov_solve(Lh, theta, np.ones(n), X, basis=basis, backend=backend, tol=1e-13)
    ppnp = alpha * np.linalg.solve(np.eye(n) - (1 - alpha) * An, X)
    assert_close(Y, ppnp, 1e-10)
    # APPNP's K=10 power iteration approaches it only geometrically
    Z = X.copy()
    for _ in range(10):
        Z = (1 - alpha) * An @ Z + alpha * X
    assert np.abs(Z - ppnp).max() > 1e-3


def test_frequency_response_for_constant_q(backend):
    """Q = qI: R = U diag(q / (p(lambda) + q)) U^T."""
    L = laplacian_of("star")
    theta = np.array([0.2, 1.5, 0.1, 0.9])
    lam, U = np.linalg.eigh(L.toarray())
    h = 0.7 / (evaluate_polynomial(theta, lam) + 0.7)
    assert_close(R_matrix(L, theta, 0.7, backend), (U * h) @ U.T, 1e-10)


# ---------------------------------------------------------------------------------------------------
# tikhonov_solve: inputs and outputs


def test_input_kinds(backend):
    L = laplacian_of("grid")
    n = L.shape[0]
    theta, q, X = problem(n, 3, seed=6)
    Y = tikhonov_solve(L, theta, q, X, backend=backend)
    for L_in in (L.tocoo(), L.tocsc(), sp.csr_array(L), L.toarray()):
        assert_close(tikhonov_solve(L_in, theta, q, X, backend=backend), Y, 1e-12)
    assert_close(tikhonov_solve(L, list(theta), list(q), X.tolist(), backend=backend), Y, 1e-12)
    yq = tikhonov_solve(L, theta, 2.0, X[:, 0], backend=backend)
    assert_close(yq, tikhonov_solve(L, theta, np.full(n, 2.0), X[:, 0], backend=backend), 1e-12)
    assert tikhonov_solve(L, theta, q, np.arange(n), backend=backend).dtype == np.float64  # int X
    assert tikhonov_solve(L, theta, q, np.zeros((n, 0)), backend=backend).shape == (n, 0)
    assert tikhonov_solve(sp.csr_matrix((0, 0)), theta, np.zeros(0), np.zeros((0, 2)), backend=backend).shape == (0, 2)


def test_torch_in_torch_out(backend):
    torch = pytest.importorskip("torch")
    L = laplacian_of("grid")
    n = L.shape[0]
    theta, q, X = problem(n, 3, seed=7)
    Y = tikhonov_solve(L, theta, q, X, backend=backend)
    Lt = torch.sparse_csr_tensor(torch.from_numpy(L.indptr.astype(np.int64)),
                                 torch.from_numpy(L.indices.astype(np.int64)), torch.from_numpy(L.data),
                                 size=L.shape, check_invariants=True)
    Yt = tikhonov_solve(Lt, torch.from_numpy(theta), torch.from_numpy(q), torch.from_numpy(X), backend=backend)
    assert isinstance(Yt, torch.Tensor)
    assert Yt.dtype == torch.float64
    assert_close(Yt.numpy(), Y, 1e-12)
    Yt32 = tikhonov_solve(torch.from_numpy(L.toarray()), theta, q, torch.from_numpy(X).float(), backend=backend)
    assert Yt32.dtype == torch.float32
    assert_close(Yt32.numpy(), Y, 1e-4)


def test_info_and_nonconvergence_warning(backend):
    if backend == "reference":
        pytest.skip("the reference path is a direct solve at this size")
    L = laplacian_of("erdos-renyi")
    theta, q, X = problem(L.shape[0], 2, seed=1, q_range=(0.01, 0.02))
    with pytest.warns(RuntimeWarning, match="did not reach tol"):
        _, info = tikhonov_solve(L, theta, q, X, backend=backend, maxiter=2, return_info=True)
    assert (info.iterations == 2).all()
    assert not info.converged.any()
    assert info.method == "cg-jacobi"
    assert info.jacobi_diagonal in ("exact", "truncated")


def test_default_maxiter_is_generous_enough(backend):
    L = laplacian_of("grid")
    theta, q, X = problem(L.shape[0], 2, seed=2, q_range=(1e-3, 1e-2))  # cond(A) ~ 1e3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, info = tikhonov_solve(L, theta, q, X, backend=backend, return_info=True)
    assert info.converged.all()


@pytest.mark.usefixtures("require_cpp")
def test_cpp_detects_an_indefinite_operator():
    """A symmetric L with diagonal in [0, 2] but eigenvalue 4: p(lambda) = 2 - lambda is >= 0 on [0, 2]
    yet p(4) + q < 0, so CG meets negative curvature and must refuse rather than answer."""
    L = sp.csr_matrix(np.array([[1.0, -3.0], [-3.0, 1.0]]))
    x = np.array([1.0, -1.0])  # the eigenvector of eigenvalue 4
    with pytest.raises(ValueError, match="not positive definite"):
        tikhonov_solve(L, [2.0, -1.0], np.ones(2), x, basis="monomial", backend="cpp")


BAD = {
    "non-square L": (lambda L, t, q, X: (sp.csr_matrix((L.shape[0], L.shape[0] + 1)), t, q, X), {},
                     ValueError, "L must be square"),
    "3-D L": (lambda L, t, q, X: (np.zeros((2, 2, 2)), t, q, X), {}, ValueError, "square matrix"),
    "L of strings": (lambda L, t, q, X: ("L", t, q, X), {}, TypeError, "scipy.sparse matrix"),
    "NaN in L": (lambda L, t, q, X: (L.multiply(np.nan), t, q, X), {}, ValueError, "L contains NaN"),
    "non-symmetric L": (lambda L, t, q, X: (sp.triu(L).tocsr(), t, q, X), {}, ValueError, "symmetric"),
    "L diagonal > 2": (lambda L, t, q, X: (L * 3, t, q, X), {}, ValueError, r"outside \[0, 2\]"),
    "q = 0": (lambda L, t, q, X: (L, t, np.where(np.arange(len(q)) == 3, 0.0, q), X), {}, ValueError,
              r"q must be > 0 everywhere \(q\[3\] = 0.0\)"),
    "q < 0": (lambda L, t, q, X: (L, t, -q, X), {}, ValueError, "q must be > 0"),
    "q NaN": (lambda L, t, q, X: (L, t, np.full_like(q, np.nan), X), {}, ValueError, "q contains NaN"),
    "q wrong shape": (lambda L, t, q, X: (L, t, q[:-1], X), {}, ValueError, r"q must have shape \("),
    "X NaN": (lambda L, t, q, X: (L, t, q, np.full_like(X, np.nan)), {}, ValueError, "X contains NaN"),
    "X inf": (lambda L, t, q, X: (L, t, q, np.full_like(X, np.inf)), {}, ValueError, "X contains NaN or inf"),
    "X wrong rows": (lambda L, t, q, X: (L, t, q, X[:-1]), {}, ValueError, r"X must have shape \(n,\) or \(n, F\)"),
    "X 3-D": (lambda L, t, q, X: (L, t, q, X[..., None]), {}, ValueError, "X must have shape"),
    "X complex": (lambda L, t, q, X: (L, t, q, X + 1j), {}, TypeError, "X must hold real numbers"),
    "negative Bernstein": (lambda L, t, q, X: (L, [0.5, -0.1, 1.0], q, X), {}, ValueError,
                           r"Bernstein coefficients must be >= 0 \(got theta_1 = -0.1\)"),
    "monomial negative at 2": (lambda L, t, q, X: (L, [1.0, -1.0], q, X), {"basis": "monomial"}, ValueError,
                               r"negative on \[0, 2\] \(p\(2\) = -1\).*exact minimiser"),
    "monomial dip inside": (lambda L, t, q, X: (L, [0.99, -2.0, 1.0], q, X), {"basis": "monomial"}, ValueError,
                            r"negative on \[0, 2\] \(p\(1\) = -0.01\)"),
    "NaN coeffs": (lambda L, t, q, X: (L, [1.0, np.nan], q, X), {}, ValueError, "coeffs contains NaN"),
    "empty coeffs": (lambda L, t, q, X: (L, [], q, X), {}, ValueError, "non-empty 1-D"),
    "2-D coeffs": (lambda L, t, q, X: (L, [[1.0, 2.0]], q, X), {}, ValueError, "non-empty 1-D"),
    "unknown basis": (lambda L, t, q, X: (L, t, q, X), {"basis": "chebyshev"}, ValueError, "basis must be one of"),
    "unknown backend": (lambda L, t, q, X: (L, t, q, X), {"backend": "fortran"}, ValueError, "unknown backend"),
    "unsupported backend": (lambda L, t, q, X: (L, t, q, X), {"backend": "cupy"}, ValueError,
                            "tikhonov_solve has no 'cupy' backend"),
    "tol 0": (lambda L, t, q, X: (L, t, q, X), {"tol": 0.0}, ValueError, r"tol must lie in \(0, 1\)"),
    "tol 1": (lambda L, t, q, X: (L, t, q, X), {"tol": 1.0}, ValueError, r"tol must lie in \(0, 1\)"),
    "maxiter 0": (lambda L, t, q, X: (L, t, q, X), {"maxiter": 0}, ValueError, "maxiter must be a positive int"),
    "n_threads -1": (lambda L, t, q, X: (L, t, q, X), {"n_threads": -1}, ValueError, "n_threads"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input(case):
    make, kwargs, exc, match = BAD[case]
    L = laplacian_of("grid")
    theta, q, X = problem(L.shape[0], 2, seed=0)
    with pytest.raises(exc, match=match):
        tikhonov_solve(*make(L, theta, q, X), **kwargs)


def test_monomial_guard_accepts_nonnegative_p():
    """(lambda - 1)^2 >= 0 has a negative Bernstein coefficient on [0, 2] (the certificate fails) but is
    accepted by the exact check; so is p = lambda (2 - lambda), which is 0 at both ends."""
    L = laplacian_of("grid")
    n = L.shape[0]
    X = np.random.default_rng(0).standard_normal(n)
    assert (ref.monomial_to_bernstein([1.0, -2.0, 1.0]) < 0).any()
    for a in ([1.0, -2.0, 1.0], [0.0, 2.0, -1.0]):
        y = tikhonov_solve(L, a, np.ones(n), X, basis="monomial", backend="reference")
        assert_close(y, dense_solution(L, a, np.ones(n), X, basis="monomial"), 1e-10)


def test_cpp_unavailable_falls_back(monkeypatch, fresh_backends):
    """cpp switched off (FASTNIPS_DISABLE_CPP): auto takes reference, an explicit cpp says why."""
    monkeypatch.setenv("FASTNIPS_DISABLE_CPP", "1")
    _backend.refresh()
    L = laplacian_of("grid")
    theta, q, X = problem(L.shape[0], 2, seed=0)
    _, info = tikhonov_solve(L, theta, q, X, return_info=True)
    assert info.backend == "reference"
    with pytest.raises(ValueError, match="FASTNIPS_DISABLE_CPP"):
        tikhonov_solve(L, theta, q, X, backend="cpp")
