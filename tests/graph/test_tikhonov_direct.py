"""fastnips.graph.tikhonov_solve methods "direct" and "dense", tikhonov_factorize, and the layer's factor reuse.

Tolerances, stated once (relative to the largest entry of the oracle):

* direct / dense vs the reference (``tikhonov_solve_reference`` with scipy's spsolve of p(L) + Q assembled
  from the Bernstein definition): 1e-10 in float64, 1e-5 in float32 (a factorisation is backward stable:
  the error is about cond(A) * eps, and cond(A) <= ~50 here).
* the cpp dense factors vs the numpy dense oracle (eigh + cholesky per graph): the same.
* layer gradients with "direct"/"dense" vs "cg" at tol 1e-12: 1e-9; gradcheck in float64 at its defaults.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastnips import _backend
from fastnips.data.graphs import undirected_edge_index as undirected
from fastnips.graph import (
    TikhonovFactor,
    chebyshev_coefficients,
    normalized_laplacian,
    tikhonov_factorize,
    tikhonov_solve,
)
from fastnips.graph import reference as ref
from fastnips.graph.checks import _pick_method
from fastnips.graph.factor import _poly_nnz_bound

from ._builders import erdos_renyi, grid

TOL = {np.float64: 1e-10, np.float32: 1e-5}
THETA = np.array([0.1, 0.7, 0.3, 0.9, 0.4])  # Bernstein, K = 4


# ---------------------------------------------------------------------------------------------------
# graphs (PyG conventions: every undirected edge in both directions)


def random_edges(n, m, seed):
    """m random undirected edges on n nodes (self loops dropped): a sparse random graph built in O(m)."""
    e = np.random.default_rng(seed).integers(0, n, (m, 2))
    return undirected(e[e[:, 0] != e[:, 1]])


GRAPHS = {  # name -> (edge_index, n)
    "random": lambda: erdos_renyi(150, 0.04, 1),
    "grid": lambda: grid(12, 15),
    "isolated-nodes": lambda: (erdos_renyi(60, 0.08, 2)[0], 67),  # nodes 60..66 have no edge
}


def small_batch(num, seed, max_size=20):
    """A PyG-style batch of `num` small graphs (sizes 1..max_size, some 1-node graphs), with the nodes
    shuffled over the union and graph ids neither contiguous nor consecutive: (L, batch ids, sizes)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, num)
    sizes[:: 7] = 1
    eis, ids, off = [], [], 0
    for g, m in enumerate(sizes):
        ei, _ = erdos_renyi(int(m), min(1.0, 3.0 / max(int(m), 1)), seed * 1000 + g)
        eis.append(ei + off)
        ids.append(np.full(m, 3 * g + 5))
        off += m
    n = off
    perm = rng.permutation(n)  # node i of the union becomes node perm[i]
    ei = perm[np.concatenate(eis, axis=1)] if eis else np.zeros((2, 0), np.int64)
    batch = np.empty(n, dtype=np.int64)
    batch[perm] = np.concatenate(ids)
    return normalized_laplacian(ei, n), batch, sizes


def problem(n, F=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.3, 2.0, n), rng.standard_normal((n, F))


def oracle(L, theta, q, X, basis="bernstein"):
    return ref.tikhonov_solve_reference(L, theta, q, X, basis=basis, direct_max_n=10**9)[0]


def rel_err(Y, Yref):
    Y = Y.detach().double().numpy() if hasattr(Y, "detach") else np.asarray(Y, dtype=np.float64)
    return float(np.abs(Y - Yref).max() / max(np.abs(Yref).max(), 1e-300))


# ---------------------------------------------------------------------------------------------------
# agreement with the reference


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_direct_matches_reference(name, dtype):
    ei, n = GRAPHS[name]()
    L = normalized_laplacian(ei, n)
    q, X = problem(n)
    Y, info = tikhonov_solve(L, THETA, q, X.astype(dtype), method="direct", return_info=True)
    assert Y.dtype == dtype
    assert rel_err(Y, oracle(L, THETA, q, X)) < TOL[dtype]
    assert info.method in ("direct-cholmod", "direct-superlu")
    assert info.backend == "reference"
    assert info.maxiter == 0
    assert np.all(info.iterations == 0)
    assert info.converged.all()
    assert info.nnz_factor is None or info.nnz_factor >= n


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_dense_matches_reference(name, dtype, dense_backend):
    """Without a batch, "dense" factorises each connected component (here also the isolated nodes)."""
    ei, n = GRAPHS[name]()
    L = normalized_laplacian(ei, n)
    q, X = problem(n, seed=1)
    Y, info = tikhonov_solve(L, THETA, q, X.astype(dtype), method="dense", backend=dense_backend, return_info=True)
    assert Y.dtype == dtype
    assert rel_err(Y, oracle(L, THETA, q, X)) < TOL[dtype]
    assert info.method == "dense-cholesky"
    assert info.backend == dense_backend
    assert info.residuals.max() < TOL[dtype]


def test_monomial_basis_and_vector_input(dense_backend):
    ei, n = GRAPHS["grid"]()
    L = normalized_laplacian(ei, n)
    q, X = problem(n, F=1, seed=2)
    a = np.array([0.2, 0.5, 0.1])  # p(lambda) = 0.2 + 0.5 lambda + 0.1 lambda^2 >= 0
    want = oracle(L, a, q, X, basis="monomial")[:, 0]
    for method, be in (("direct", "reference"), ("dense", dense_backend)):
        y = tikhonov_solve(L, a, q, X[:, 0], basis="monomial", method=method, backend=be)
        assert y.shape == (n,)
        assert rel_err(y, want) < 1e-10


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("num", [1, 7, 200])
def test_dense_batches_of_small_graphs(num, dtype, dense_backend):
    """Mixed sizes 1..20 (1-node graphs included), nodes shuffled, graph ids 5, 8, 11, ..."""
    L, batch, sizes = small_batch(num, seed=num)
    n = L.shape[0]
    q, X = problem(n, F=3, seed=num)
    Y, info = tikhonov_solve(L, THETA, q, X.astype(dtype), batch=batch, backend=dense_backend, return_info=True)
    assert info.method == "dense-cholesky"  # chosen by "auto": every graph has <= 256 nodes
    assert info.nnz_factor == int(np.sum(sizes * (sizes + 1) // 2))
    assert rel_err(Y, oracle(L, THETA, q, X)) < TOL[dtype]


def test_cpp_dense_factors_match_numpy_oracle(require_cpp):
    L, batch, _ = small_batch(30, seed=3)
    q, _ = problem(L.shape[0])
    fc = tikhonov_factorize(L, THETA, q, method="dense", batch=batch, backend="cpp")
    fr = tikhonov_factorize(L, THETA, q, method="dense", batch=batch, backend="reference")
    G = np.random.default_rng(4).standard_normal((L.shape[0], 5))
    assert rel_err(fc.solve_adjoint(G), fr.solve_adjoint(G)) < 1e-12
    assert (fc.n_blocks, fc.max_block, fc.nnz_factor) == (fr.n_blocks, fr.max_block, fr.nnz_factor)


def test_native_dense_checks_its_blocks(require_cpp):
    """The C++ kernel re-checks what the Python layer validated (a safety net for direct callers of _C)."""
    C = _backend.native()
    L = normalized_laplacian(undirected([(0, 1), (1, 2), (3, 4)]), 5).tocsr()
    args = (L.indptr, L.indices, L.data, chebyshev_coefficients(THETA), np.ones(5))
    f = C.tikhonov_dense_factor(*args, np.arange(5), np.array([0, 3, 5]))
    assert f.shape == (9 + 4,)
    with pytest.raises(ValueError, match=r"joins graph 7 to graph 8"):
        C.tikhonov_dense_factor(*args, np.arange(5), np.array([0, 2, 5]), labels=np.array([7, 8]))
    with pytest.raises(ValueError, match="permutation"):
        C.tikhonov_dense_factor(*args, np.array([0, 1, 1, 3, 4]), np.array([0, 3, 5]))
    with pytest.raises(ValueError, match="offsets must rise"):
        C.tikhonov_dense_factor(*args, np.arange(5), np.array([0, 4, 3, 5]))
    with pytest.raises(ValueError, match="factors has"):
        C.tikhonov_dense_solve(f[:-1], np.arange(5), np.array([0, 3, 5]), np.ones((5, 2)))


def test_superlu_fallback_when_cholmod_is_switched_off(monkeypatch):
    monkeypatch.setenv("FASTNIPS_DISABLE_CHOLMOD", "1")
    ei, n = GRAPHS["random"]()
    L = normalized_laplacian(ei, n)
    q, X = problem(n)
    f = tikhonov_factorize(L, THETA, q, method="direct")
    assert f.solver == "direct-superlu"
    assert f.nnz_factor >= n
    assert rel_err(f.solve(X), oracle(L, THETA, q, X)) < 1e-10


def _fake_cholmod(new_api: bool):
    """A stand-in for sksparse.cholmod (not installed here) with the >= 0.5 or the < 0.5 API, over scipy's
    dense Cholesky: exercises the CHOLMOD adapter's dispatch, nnz and error mapping."""
    import types

    import scipy.linalg as sla

    mod = types.SimpleNamespace()

    class CholmodNotPositiveDefiniteError(Exception):
        pass

    class Factor:
        def __init__(self, A):
            if not isinstance(A, sp.csc_array if new_api else sp.csc_matrix):
                raise TypeError("wrong sparse type for this API")
            try:
                self.c = sla.cho_factor(A.toarray(), lower=True)
            except np.linalg.LinAlgError:
                raise CholmodNotPositiveDefiniteError("not positive definite") from None
            if new_api:
                self.nnz = int(np.count_nonzero(np.tril(self.c[0])))

        def _solve(self, b):
            return sla.cho_solve(self.c, b)

        solve = solve_A = _solve

        def L(self):
            return sp.csc_matrix(np.tril(self.c[0]))

    mod.CholmodNotPositiveDefiniteError = CholmodNotPositiveDefiniteError
    if new_api:
        mod.cho_factor = Factor
    else:
        mod.cholesky = Factor
    return mod


@pytest.mark.parametrize("new_api", [True, False])
def test_cholmod_adapter(new_api, monkeypatch):
    from fastnips import _optional

    fake = _fake_cholmod(new_api)
    monkeypatch.setattr(_optional, "_try_import", lambda name: fake if name == "sksparse.cholmod" else None)
    monkeypatch.delenv("FASTNIPS_DISABLE_CHOLMOD", raising=False)
    ei, n = GRAPHS["grid"]()
    L = normalized_laplacian(ei, n)
    q, X = problem(n)
    Y, info = tikhonov_solve(L, THETA, q, X, method="direct", return_info=True)
    assert info.method == "direct-cholmod"
    assert info.nnz_factor >= n
    assert rel_err(Y, oracle(L, THETA, q, X)) < 1e-10
    bad = sp.csr_matrix(np.array([[1.0, 1.5], [1.5, 1.0]]))  # spectrum {-0.5, 2.5}: A = L + 0.1 I indefinite
    with pytest.raises(ValueError, match="not positive definite"):
        tikhonov_solve(bad, [0.0, 1.0], np.full(2, 0.1), np.ones(2), basis="monomial", method="direct")


# ---------------------------------------------------------------------------------------------------
# auto policy and factor reuse


def test_auto_policy():
    L, batch, _ = small_batch(5, seed=5)
    q, X = problem(L.shape[0])
    assert tikhonov_solve(L, THETA, q, X, batch=batch, return_info=True)[1].method == "dense-cholesky"
    assert tikhonov_solve(L, THETA, q, X, return_info=True)[1].method in ("cg-jacobi", "spsolve")  # no batch
    big, _ = grid(16, 17)  # one graph of 272 > 256 nodes, plus a small one
    ei = np.concatenate([big, erdos_renyi(10, 0.3, 0)[0] + 272], axis=1)
    L2 = normalized_laplacian(ei, 282)
    q2, X2 = problem(282)
    ids = np.repeat([0, 1], [272, 10])
    assert tikhonov_solve(L2, THETA, q2, X2, batch=ids, return_info=True)[1].method in ("cg-jacobi", "spsolve")
    assert _pick_method("auto", None) == "cg"
    assert _pick_method("direct", None) == "direct"


def test_factor_solves_twice_and_matches_tikhonov_solve(dense_backend):
    L, batch, _ = small_batch(12, seed=6)
    n = L.shape[0]
    q, X = problem(n, F=3)
    for method, be in (("direct", "reference"), ("dense", dense_backend)):
        f = tikhonov_factorize(L, THETA, q, method=method, batch=batch, backend=be)
        assert isinstance(f, TikhonovFactor)
        assert (f.n, f.method) == (n, method)
        Y1, Y2 = f.solve(X), f.solve(X)
        assert np.array_equal(Y1, Y2)
        assert rel_err(Y1, tikhonov_solve(L, THETA, q, X, method=method, batch=batch, backend=be)) < 1e-13
        # adjoint: A^{-1} G, with A = p(L) + Q assembled from the definition
        A = (ref.poly_matrix_reference(L, THETA) + sp.diags(q)).toarray()
        G = np.random.default_rng(1).standard_normal((n, 2))
        assert rel_err(f.solve_adjoint(G), np.linalg.solve(A, G)) < 1e-10
        assert f.solve(X[:, 0]).shape == (n,)
        assert f.solve(X.astype(np.float32)).dtype == np.float32
        assert f.solve(np.zeros((n, 0))).shape == (n, 0)
        assert "TikhonovFactor(" in repr(f)


def test_float32_dense_factor(dense_backend):
    L, batch, _ = small_batch(20, seed=7)
    q, X = problem(L.shape[0])
    f = tikhonov_factorize(L, THETA, q, method="dense", batch=batch, backend=dense_backend, dtype=np.float32)
    assert f.dtype == (np.float32 if dense_backend == "cpp" else np.float64)
    assert rel_err(f.solve(X.astype(np.float32)), oracle(L, THETA, q, X)) < 1e-5


def test_empty_graph_and_empty_block_solve():
    L = sp.csr_matrix((0, 0))
    Y = tikhonov_solve(L, THETA, np.ones(0), np.zeros((0, 3)), method="dense")
    assert Y.shape == (0, 3)
    Y = tikhonov_solve(L, THETA, np.ones(0), np.zeros((0, 3)), method="direct")
    assert Y.shape == (0, 3)


# ---------------------------------------------------------------------------------------------------
# the torch layer: factor once in forward, reuse in backward


def _layer_setup(seed=0):
    torch = pytest.importorskip("torch")
    L, batch, _ = small_batch(6, seed=seed, max_size=9)
    n = L.shape[0]
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=g, dtype=torch.float64)
    q = 0.3 + 2.0 * torch.rand(n, generator=g, dtype=torch.float64)
    theta = torch.tensor(THETA, dtype=torch.float64)
    return torch, L, torch.as_tensor(batch), x, q, theta


@pytest.mark.parametrize("method", ["direct", "dense"])
def test_layer_backward_reuses_the_factor_and_matches_cg(method, dense_backend, monkeypatch):
    torch, L, batch, x, q, theta = _layer_setup()
    from fastnips.graph import _implicit, layers

    calls = {"factorize": 0, "solve": 0}
    real_factorize, real_solve = _implicit.tikhonov_factorize, _implicit.tikhonov_solve

    def counting_factorize(*a, **k):
        calls["factorize"] += 1
        return real_factorize(*a, **k)

    def counting_solve(*a, **k):
        calls["solve"] += 1
        return real_solve(*a, **k)

    monkeypatch.setattr(_implicit, "tikhonov_factorize", counting_factorize)
    monkeypatch.setattr(_implicit, "tikhonov_solve", counting_solve)
    be = "reference" if method == "direct" else dense_backend
    w = torch.randn(x.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    grads = {}
    for m in (method, "cg"):
        xa, qa, ta = (t.clone().requires_grad_() for t in (x, q, theta))
        y = layers.tikhonov_prop(xa, qa, ta, L, method=m, batch=batch, backend=be if m != "cg" else "auto",
                                 tol=1e-12)
        (y * w).sum().backward()
        grads[m] = (y.detach(), xa.grad, qa.grad, ta.grad)
        if m == method:
            assert calls == {"factorize": 1, "solve": 0}  # one factorisation, reused by backward
    assert calls == {"factorize": 1, "solve": 2}  # the cg path: two solves, as before
    for got, want in zip(grads[method], grads["cg"]):
        assert rel_err(got, want.numpy()) < 1e-9


@pytest.mark.parametrize("method", ["direct", "dense"])
def test_layer_gradcheck(method, dense_backend):
    torch, L, batch, x, q, theta = _layer_setup(seed=1)
    from fastnips.graph import tikhonov_prop

    be = "reference" if method == "direct" else dense_backend

    def f(x, q, theta):
        return tikhonov_prop(x, q, theta, L, method=method, batch=batch, backend=be)

    inputs = tuple(t.clone().requires_grad_() for t in (x, q, theta))
    assert torch.autograd.gradcheck(f, inputs)


def test_module_method_and_batch(dense_backend):
    torch, L, batch, x, q, _ = _layer_setup(seed=2)
    from fastnips.graph import TikhonovProp

    C = L.tocoo()
    edge_index = torch.as_tensor(np.stack([C.row, C.col]).astype(np.int64))
    outs = {}
    for method in ("auto", "dense", "cg"):
        prop = TikhonovProp(K=3, method=method, backend=dense_backend if method != "cg" else "auto",
                            tol=1e-12).double()
        assert f"method={method!r}" in repr(prop)
        outs[method] = prop(x, q, edge_index, batch=batch)
    assert rel_err(outs["auto"], outs["cg"].detach().numpy()) < 1e-10
    assert rel_err(outs["dense"], outs["cg"].detach().numpy()) < 1e-10
    with pytest.raises(ValueError, match="method must be one of"):
        TikhonovProp(method="cholesky")


# ---------------------------------------------------------------------------------------------------
# guards and bad input


def test_max_fill_guard():
    ei, n = GRAPHS["grid"]()
    L = normalized_laplacian(ei, n)
    q, X = problem(n)
    with pytest.raises(ValueError, match=r"method='direct': p\(L\) can have .* nonzeros .* above max_fill=1e\+03.*"
                                         r"method='cg'"):
        tikhonov_solve(L, THETA, q, X, method="direct", max_fill=1000)
    with pytest.raises(ValueError, match=r"method='dense': the dense blocks would hold .* max_fill"):
        tikhonov_solve(L, THETA, q, X, method="dense", max_fill=1000)
    # the bound: the walk bound where it is below the limit, else the exact count, which for generic
    # coefficients is the assembled p(L)'s
    nnz = ref.poly_matrix_reference(L, THETA).nnz
    walk, how = _poly_nnz_bound(L, 4, float("inf"))
    assert how == "walk bound"
    assert walk >= nnz
    exact, how = _poly_nnz_bound(L, 4, walk - 1)
    assert how == "counted exactly"
    assert exact == nnz
    # a larger graph: the guard fires before anything is formed
    Lb = normalized_laplacian(random_edges(5000, 20000, 9), 5000)  # average degree 8
    with pytest.raises(ValueError, match=r"counted exactly over the first .* rows, already above"):
        tikhonov_factorize(Lb, THETA, 1.0, method="direct", max_fill=1e6)
    with pytest.raises(ValueError, match="max_fill must be > 0"):
        tikhonov_solve(L, THETA, q, X, method="direct", max_fill=0)
    with pytest.raises(TypeError, match="max_fill must be a number"):
        tikhonov_solve(L, THETA, q, X, method="direct", max_fill="big")


def test_bad_batch():
    L, batch, _ = small_batch(4, seed=8)
    n = L.shape[0]
    q, X = problem(n)
    with pytest.raises(ValueError, match="batch must have one graph id per node"):
        tikhonov_solve(L, THETA, q, X, batch=batch[:-1])
    with pytest.raises(ValueError, match="graph ids >= 0"):
        tikhonov_solve(L, THETA, q, X, batch=batch - 100, method="dense")
    with pytest.raises(TypeError, match="batch must hold integers"):
        tikhonov_solve(L, THETA, q, X, batch=batch.astype(float))
    # an edge between two graphs
    C = L.tocoo()
    e = int(np.flatnonzero(C.row != C.col)[0])
    wrong = batch.copy()
    wrong[C.row[e]] = batch.max() + 1
    with pytest.raises(ValueError, match=r"batch does not match L: .* joins graph"):
        tikhonov_solve(L, THETA, q, X, batch=wrong, method="dense")
    with pytest.raises(ValueError, match="batch does not match L"):
        tikhonov_factorize(L, THETA, q, batch=wrong, method="dense")


def test_bad_method_and_backend_pairs(require_cpp):
    ei, n = GRAPHS["random"]()
    L = normalized_laplacian(ei, n)
    q, X = problem(n)
    with pytest.raises(ValueError, match=r"method='direct' has no 'cpp' backend.*pairs"):
        tikhonov_solve(L, THETA, q, X, method="direct", backend="cpp")
    with pytest.raises(ValueError, match="method must be one of"):
        tikhonov_solve(L, THETA, q, X, method="cholesky")
    with pytest.raises(ValueError, match="method must be 'direct' or 'dense'"):
        tikhonov_factorize(L, THETA, q, method="cg")
    with pytest.raises(ValueError, match=r"has no 'cuda' backend|not available"):
        tikhonov_solve(L, THETA, q, X, method="dense", backend="cuda")
    with pytest.raises(TypeError, match="dtype must be"):
        tikhonov_factorize(L, THETA, q, method="dense", dtype=np.int64)
    f = tikhonov_factorize(L, THETA, q, method="direct")
    with pytest.raises(ValueError, match=r"X must have shape \(n,\) or \(n, F\)"):
        f.solve(X[:-1])
    with pytest.raises(ValueError, match="NaN"):
        f.solve_adjoint(np.full(n, np.nan))


def test_not_positive_definite_is_refused(dense_backend):
    """A symmetric L with diagonal in [0, 2] but spectrum {-0.5, 2.5} and p(lambda) = lambda: A = L + 0.1 I is
    indefinite. Every factorisation refuses it (naming the graph for "dense")."""
    L = sp.csr_matrix(np.array([[1.0, 1.5], [1.5, 1.0]]))
    q, X = np.full(2, 0.1), np.ones((2, 1))
    with pytest.raises(ValueError, match="not positive definite on graph 4"):
        tikhonov_solve(L, [0.0, 1.0], q, X, basis="monomial", method="dense", batch=np.array([4, 4]),
                       backend=dense_backend)
    with pytest.raises(ValueError, match="not positive definite"):
        tikhonov_solve(L, [0.0, 1.0], q, X, basis="monomial", method="direct")
