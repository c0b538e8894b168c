"""Gradients of the Tikhonov layer with respect to the edge weights (through the Laplacian's values).

Tolerances: gradcheck in float64 with exact solves (``"direct"``, ``"dense"``) or CG at tol 1e-13; the
finite differences then carry about cond(A) * 1e-13 / 1e-6, far inside gradcheck's atol 1e-8 used here.
The oracle of the value gradient is autograd through a dense ``torch.linalg.solve`` of p(L) + Q, with L
built from the weights by dense torch formulas (not the code under test).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastnips import _backend  # noqa: E402
from fastnips.data.graphs import erdos_renyi_edges  # noqa: E402
from fastnips.graph import TikhonovGNN, TikhonovProp, normalized_laplacian  # noqa: E402
from fastnips.graph._pattern import LaplacianPattern  # noqa: E402
from fastnips.graph.reference import bernstein_to_monomial  # noqa: E402

F64 = torch.float64
CASES = [("reference", "direct"), ("reference", "cg"), ("cpp", "cg"), ("reference", "dense"), ("cpp", "dense")]


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def _problem(n=12, p=0.3, seed=0, F=2):
    ei = torch.as_tensor(erdos_renyi_edges(n, p, seed=seed))
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, F, dtype=F64, generator=g)
    q = torch.rand(n, dtype=F64, generator=g) + 0.5
    w = torch.rand(ei.shape[1], dtype=F64, generator=g) + 0.5
    return ei, n, x, q, w


def _skip_missing(backend):
    why = _backend.why_unavailable(backend)
    if why:
        pytest.skip(f"backend {backend!r} not available: {why}")


@pytest.mark.parametrize(("backend", "method"), CASES)
def test_gradcheck_edge_weight(backend, method):
    _skip_missing(backend)
    ei, n, x, q, w = _problem()
    prop = TikhonovProp(K=3, method=method, backend=backend, tol=1e-13)
    batch = torch.zeros(n, dtype=torch.long) if method == "dense" else None
    w = w.requires_grad_()
    assert torch.autograd.gradcheck(lambda w: prop(x, q, ei, edge_weight=w, batch=batch), (w,), eps=1e-6, atol=1e-8)


def test_gradcheck_all_inputs_together_with_self_loops_and_a_one_way_edge():
    ei, _n, x, q, w = _problem(seed=3)
    extra = torch.tensor([[2, 2, 5, 0], [2, 2, 5, 7]])  # two loops on node 2, one on 5, a one-way edge 0 -> 7
    ei = torch.cat([ei, extra], dim=1)
    w = torch.cat([w, torch.tensor([0.7, 1.3, 0.4, 0.9], dtype=F64)])
    prop = TikhonovProp(K=2, method="direct").double()
    phi = prop.phi.detach().clone().requires_grad_()
    x, q, w = x.requires_grad_(), q.requires_grad_(), w.requires_grad_()

    def f(x, q, w, phi):
        return torch.func.functional_call(prop, {"phi": phi}, (x, q, ei), {"edge_weight": w})

    assert torch.autograd.gradcheck(f, (x, q, w, phi), eps=1e-6, atol=1e-8)


def _dense_oracle(ei, n, w, x, q, theta):
    """Y = (p(L) + Q)^{-1} Q X with L from dense torch formulas: A = max(A, A^T) of the summed off-diagonal
    entries, loops dropped, L = I - D^{-1/2} A D^{-1/2}; p from its monomial coefficients."""
    A = torch.zeros(n, n, dtype=F64).index_put((ei[0], ei[1]), w, accumulate=True)
    A = A * (1 - torch.eye(n, dtype=F64))
    A = torch.maximum(A, A.T)
    d = A.sum(1)
    dinv = torch.where(d > 0, d.clamp_min(1e-300).rsqrt(), torch.zeros_like(d))
    L = torch.eye(n, dtype=F64) - dinv[:, None] * A * dinv[None, :]
    a = torch.as_tensor(bernstein_to_monomial(theta.numpy()))
    P = sum(a[k] * torch.linalg.matrix_power(L, k) for k in range(a.shape[0]))
    return torch.linalg.solve(P + torch.diag(q), q[:, None] * x)


@pytest.mark.parametrize(("backend", "method"), [("reference", "cg"), ("cpp", "cg"), ("reference", "direct")])
def test_edge_weight_gradient_equals_dense_autograd(backend, method):
    _skip_missing(backend)
    ei, n, x, q, w = _problem(n=20, p=0.25, seed=4, F=3)
    w_ours, w_ref = w.clone().requires_grad_(), w.clone().requires_grad_()
    prop = TikhonovProp(K=4, method=method, backend=backend, tol=1e-13, init=[0.1, 0.5, 0.2, 0.9, 0.3]).double()
    g = torch.randn(n, 3, dtype=F64, generator=torch.Generator().manual_seed(1))
    (prop(x, q, ei, edge_weight=w_ours) * g).sum().backward()
    theta = prop.coefficients().detach()
    (_dense_oracle(ei, n, w_ref, x, q, theta) * g).sum().backward()
    scale = float(w_ref.grad.abs().max())
    assert scale > 1e-3  # a real signal
    assert float((w_ours.grad - w_ref.grad).abs().max()) <= 1e-9 * scale


def test_pattern_values_equal_the_scipy_laplacian():
    rng = np.random.default_rng(2)
    n = 25
    ei = np.concatenate([rng.integers(0, n, (2, 120)), [[3, 3, 9], [3, 3, 9]]], axis=1)  # repeats and loops
    w = rng.uniform(0.1, 2.0, ei.shape[1])
    for loops in (False, True):
        pat = LaplacianPattern(ei, n, loops)
        for weight in (None, w):
            got = pat.csr(pat.values(None if weight is None else torch.as_tensor(weight))).toarray()
            want = normalized_laplacian(ei, n, weight, add_self_loops=loops).toarray()
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
            np.testing.assert_array_equal(got, got.T)


def test_tikhonov_gnn_edge_weight_gets_a_gradient():
    ei, _n, x, _, w = _problem(n=15, seed=5)
    torch.manual_seed(0)
    model = TikhonovGNN(2, 4, 2, task="node", q_layers=0, tol=1e-12).double()
    w = w.requires_grad_()
    model(x, ei, edge_weight=w).sum().backward()
    assert w.grad is not None
    assert float(w.grad.abs().max()) > 0
    # q_layers=0: the Q-network ignores the edges, so the whole gradient comes through L
    w2 = w.detach().clone().requires_grad_()
    h = model.lin_in(x)
    q = model.node_weights(x, ei[0], ei[1])
    model.classifier(model.prop(h, q, ei, edge_weight=w2)).sum().backward()
    torch.testing.assert_close(w.grad, w2.grad, rtol=1e-10, atol=1e-12)


def test_no_graph_is_built_for_weights_without_grad():
    """Weights that do not require grad take the solver's usual path (no value tensor, no extra work)."""
    ei, n, x, q, w = _problem()
    prop = TikhonovProp(K=2).double()
    y1 = prop(x, q, ei, edge_weight=w)
    L = normalized_laplacian(ei, n, w.numpy())
    y2 = prop(x, q, L=L)
    torch.testing.assert_close(y1, y2, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("backend", ["triton", "cuda"])
def test_device_backends_give_the_host_edge_weight_gradient(backend):
    """The device CG (Triton under TRITON_INTERPRET=1 on CPU tensors; CUDA on a GPU) against the host."""
    _skip_missing(backend)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if backend == "cuda" and dev != "cuda":
        pytest.skip("needs a CUDA device")
    ei, n, x, q, w = _problem(n=10, seed=6, F=1)
    g = torch.randn(n, 1, dtype=F64, generator=torch.Generator().manual_seed(2))

    def grad(b, device):
        wt = w.clone().to(device).requires_grad_()
        prop = TikhonovProp(K=2, backend=b, tol=1e-13).double().to(device)
        (prop(x.to(device), q.to(device), ei.to(device), edge_weight=wt) * g.to(device)).sum().backward()
        return wt.grad.cpu()

    host = grad("reference", "cpu")
    torch.testing.assert_close(grad(backend, dev), host, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("K", [0, 1, 2, 5])
def test_value_gradient_formula_against_dense_autograd(K):
    """The reverse-mode Chebyshev formula against autograd through a dense T_j recurrence, every stored
    entry of L a separate variable (so the one-sided structure of the formula is checked, not only its
    symmetric part)."""
    from fastnips.graph._implicit import _host_apply, _moments_and_value_grad

    ei, n, _, _, _ = _problem(n=15, seed=8)
    L = normalized_laplacian(ei, n)
    rng = np.random.default_rng(K)
    Lam, Y = (torch.as_tensor(rng.standard_normal((n, 3))) for _ in range(2))
    cheb = rng.standard_normal(K + 1)
    s, g = _moments_and_value_grad(L, Lam, Y, cheb, _host_apply(L, np.dtype(np.float64)))
    v = torch.as_tensor(L.data).requires_grad_()
    rows = torch.as_tensor(np.repeat(np.arange(n), np.diff(L.indptr)))
    B = torch.zeros(n, n, dtype=F64).index_put((rows, torch.as_tensor(L.indices, dtype=torch.int64)), v)
    B = B - torch.eye(n, dtype=F64)
    T = [torch.eye(n, dtype=F64), B]
    for _ in range(K - 1):
        T.append(2 * B @ T[-1] - T[-2])
    moments = torch.stack([torch.sum(Lam * (T[j] @ Y)) for j in range(K + 1)])
    phi = (torch.as_tensor(cheb) * moments).sum()
    want = torch.autograd.grad(phi, v)[0] if phi.requires_grad else torch.zeros_like(v)  # K = 0: p(L) = c_0 I
    torch.testing.assert_close(s, moments.detach(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g, -want, rtol=1e-11, atol=1e-12)
    assert g.shape == (L.nnz,)
