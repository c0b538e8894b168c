"""fastnips.graph.TikhonovProp / tikhonov_prop / TikhonovGNN: implicit gradients against gradcheck and a dense
oracle, batching, permutation equivariance, the simplex normalisation, training, and bad input.

Tolerances, stated once:

* gradcheck: float64, solver tol 1e-12 forward and backward (finite differences with eps 1e-6 then carry
  an error of about cond(A) * 1e-12 / 1e-6 <= 1e-4 * 1e-2, inside gradcheck's atol 1e-5 / rtol 1e-3).
* implicit backward vs autograd through a dense ``torch.linalg.solve`` of p(L) + Q: 1e-8 relative to
  the largest gradient entry (float64, tol 1e-12).
* batch vs per-graph and permuted vs original: 1e-9 relative (float64, tol 1e-12; the only differences
  are CG iterates and summation order).
"""

from __future__ import annotations

import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastnips.graph import TikhonovGNN, TikhonovProp, normalized_laplacian, tikhonov_prop  # noqa: E402

TIGHT = 1e-12
F64 = torch.float64




# ---------------------------------------------------------------------------------------------------
# graphs (PyG conventions: undirected edges listed in both directions, batches as disjoint unions)


def undirected(pairs, offset=0) -> torch.Tensor:
    p = torch.as_tensor(np.asarray(pairs, dtype=np.int64).reshape(-1, 2)) + offset
    return torch.cat([p.T, p.T.flip(0)], dim=1)


def random_graph(n, p, seed):
    """An Erdős–Rényi graph plus a spanning path (connected), as an undirected edge list."""
    rng = np.random.default_rng(seed)
    iu = np.triu_indices(n, 1)
    keep = rng.random(iu[0].size) < p
    pairs = {(int(a), int(b)) for a, b in zip(iu[0][keep], iu[1][keep])} | {(i, i + 1) for i in range(n - 1)}
    return undirected(sorted(pairs))


def batch_of(graphs):
    """(edge_index, batch, sizes) of the disjoint union of [(edge_index, n), ...]."""
    eis, batch, off = [], [], 0
    for g, (ei, n) in enumerate(graphs):
        eis.append(ei + off)
        batch.append(torch.full((n,), g, dtype=torch.long))
        off += n
    return torch.cat(eis, dim=1), torch.cat(batch), [n for _, n in graphs]


@pytest.fixture
def two_graphs():
    return batch_of([(random_graph(9, 0.3, 1), 9), (random_graph(11, 0.25, 2), 11)])


def signals(n, F=3, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, F, generator=g, dtype=dtype)
    q = 0.3 + 2.0 * torch.rand(n, generator=g, dtype=dtype)
    return x, q


# ---------------------------------------------------------------------------------------------------
# the dense oracle


def dense_poly(L: torch.Tensor, theta: torch.Tensor, basis: str = "bernstein") -> torch.Tensor:
    """p(L) from the definition of the basis, differentiable in theta."""
    n, K = L.shape[0], theta.shape[0] - 1
    eye = torch.eye(n, dtype=L.dtype)
    P = torch.zeros_like(L)
    for k in range(K + 1):
        if basis == "bernstein":
            B = math.comb(K, k) * torch.linalg.matrix_power(L / 2, k) @ torch.linalg.matrix_power(eye - L / 2, K - k)
        else:
            B = torch.linalg.matrix_power(L, k)
        P = P + theta[k] * B
    return P


def dense_prop(x, q, theta, L, basis="bernstein"):
    A = dense_poly(L, theta, basis) + torch.diag(q)
    rhs = q[:, None] * x if x.dim() == 2 else q * x
    return torch.linalg.solve(A, rhs)


def dense_L(edge_index, n):
    return torch.as_tensor(normalized_laplacian(edge_index, n).toarray())


def max_rel(a, b):
    a, b = a.detach(), b.detach()
    return float((a - b).abs().max() / b.abs().max().clamp(min=1e-300))


# ---------------------------------------------------------------------------------------------------
# gradients


@pytest.mark.parametrize("basis", ["bernstein", "monomial"])
def test_gradcheck_x_q_theta(two_graphs, backend, basis):
    edge_index, _, sizes = two_graphs
    n = sum(sizes)
    L = normalized_laplacian(edge_index, n)
    x, q = signals(n, F=2)
    theta = torch.tensor([0.1, 0.7, 0.3, 0.9, 0.4], dtype=F64)
    inputs = (x.requires_grad_(), q.requires_grad_(), theta.requires_grad_())

    def f(x, q, theta):
        return tikhonov_prop(x, q, theta, L, basis=basis, backend=backend, tol=TIGHT)

    assert torch.autograd.gradcheck(f, inputs)


def test_gradcheck_module_parameters(two_graphs, backend):
    """gradcheck through the module: phi (softmax or softplus) and q, with x fixed."""
    edge_index, batch, sizes = two_graphs
    n = sum(sizes)
    x, q = signals(n, F=2, seed=3)
    for scale in ("simplex", "softplus"):
        prop = TikhonovProp(K=3, scale=scale, backend=backend, tol=TIGHT).double()
        phi = torch.tensor([0.3, -0.2, 0.5, 0.1], dtype=F64, requires_grad=True)

        def f(phi, q, prop=prop):
            return torch.func.functional_call(prop, {"phi": phi}, (x, q, edge_index), {"batch": batch})

        assert torch.autograd.gradcheck(f, (phi, q.clone().requires_grad_()))


@pytest.mark.parametrize("scale", ["simplex", "softplus"])
def test_backward_matches_dense_autograd(two_graphs, backend, scale):
    """One adjoint solve == autograd through torch.linalg.solve on the assembled p(L) + Q."""
    edge_index, _, sizes = two_graphs
    n = sum(sizes)
    L = dense_L(edge_index, n)
    x, q = signals(n, F=4, seed=5)
    w = torch.randn(n, 4, dtype=F64, generator=torch.Generator().manual_seed(9))
    prop = TikhonovProp(K=4, scale=scale, backend=backend, tol=TIGHT).double()
    with torch.no_grad():
        prop.phi.copy_(torch.tensor([0.4, -0.3, 0.2, 0.8, -0.1]))

    xa, qa = x.clone().requires_grad_(), q.clone().requires_grad_()
    ya = prop(xa, qa, edge_index)
    (ya * w).sum().backward()
    grads = (xa.grad, qa.grad, prop.phi.grad.clone())

    prop.phi.grad = None
    xb, qb = x.clone().requires_grad_(), q.clone().requires_grad_()
    yb = dense_prop(xb, qb, prop.coefficients(), L)
    (yb * w).sum().backward()
    assert max_rel(ya.detach(), yb.detach()) < 1e-10
    for got, want in zip(grads, (xb.grad, qb.grad, prop.phi.grad)):
        assert max_rel(got, want) < 1e-8


def test_backward_vector_input_and_monomial(two_graphs, backend):
    edge_index, _, sizes = two_graphs
    n = sum(sizes)
    L = dense_L(edge_index, n)
    x, q = signals(n, F=1, seed=6)
    x = x[:, 0]
    theta = torch.tensor([0.2, 0.5, 0.1], dtype=F64)
    res = []
    for fn in (lambda *a: tikhonov_prop(*a, L, basis="monomial", backend=backend, tol=TIGHT),
               lambda *a: dense_prop(*a, L, basis="monomial")):
        xa, qa, ta = (t.clone().requires_grad_() for t in (x, q, theta))
        y = fn(xa, qa, ta)
        assert y.shape == (n,)
        (y * torch.arange(n, dtype=F64)).sum().backward()
        res.append((y.detach(), xa.grad, qa.grad, ta.grad))
    for got, want in zip(*res):
        assert max_rel(got, want) < 1e-8


def test_float32_agrees_with_float64(two_graphs):
    edge_index, _, sizes = two_graphs
    n = sum(sizes)
    x, q = signals(n, F=3, seed=7)
    prop = TikhonovProp(K=4)
    outs = []
    for dt in (torch.float32, F64):
        p = prop.to(dt)
        xa, qa = x.to(dt).requires_grad_(), q.to(dt).requires_grad_()
        p.zero_grad()
        y = p(xa, qa, edge_index)
        y.square().sum().backward()
        assert y.dtype == dt
        assert xa.grad.dtype == dt
        assert qa.grad.dtype == dt
        assert p.phi.grad.dtype == dt
        outs.append([t.detach().double() for t in (y, xa.grad, qa.grad, p.phi.grad)])
    for a, b in zip(*outs):
        assert max_rel(a, b) < 1e-4


def test_backward_is_not_unrolled(two_graphs):
    """The graph holds one node for the whole solve, whatever the CG iteration count."""
    edge_index, _, sizes = two_graphs
    x, q = signals(sum(sizes))
    y = TikhonovProp(K=2).double()(x.requires_grad_(), q, edge_index)
    fn = y.grad_fn
    assert type(fn).__name__.startswith("_TikhonovSolveFn")
    assert {type(f).__name__ for f, _ in fn.next_functions if f is not None} <= {"AccumulateGrad", "SoftmaxBackward0"}


# ---------------------------------------------------------------------------------------------------
# structure: batches, permutations, scale


def test_batch_equals_per_graph_prop(two_graphs, backend):
    edge_index, batch, sizes = two_graphs
    n = sum(sizes)
    x, q = signals(n, F=3, seed=11)
    prop = TikhonovProp(K=4, backend=backend, tol=TIGHT).double()
    xa, qa = x.clone().requires_grad_(), q.clone().requires_grad_()
    y = prop(xa, qa, edge_index, batch=batch)
    y.sum().backward()
    off = 0
    for g, m in enumerate(sizes):
        sel = slice(off, off + m)
        mask = (batch[edge_index[0]] == g)
        xg, qg = x[sel].clone().requires_grad_(), q[sel].clone().requires_grad_()
        yg = prop(xg, qg, edge_index[:, mask] - off)
        yg.sum().backward()
        assert max_rel(y[sel].detach(), yg.detach()) < 1e-9
        assert max_rel(xa.grad[sel], xg.grad) < 1e-9
        assert max_rel(qa.grad[sel], qg.grad) < 1e-9
        off += m


def test_permutation_equivariance_prop(two_graphs):
    edge_index, _, sizes = two_graphs
    n = sum(sizes)
    x, q = signals(n, F=2, seed=12)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(0))  # new node i = old node perm[i]
    inv = torch.argsort(perm)
    prop = TikhonovProp(K=3, tol=TIGHT).double()
    y = prop(x, q, edge_index)
    yp = prop(x[perm], q[perm], inv[edge_index])
    assert max_rel(yp, y[perm]) < 1e-9


def test_scale_fixed_by_simplex(two_graphs):
    edge_index, _, sizes = two_graphs
    n = sum(sizes)
    L = normalized_laplacian(edge_index, n)
    x, q = signals(n, F=2, seed=13)
    prop = TikhonovProp(K=4, tol=TIGHT).double()
    with torch.no_grad():
        prop.phi.copy_(torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0]))
    theta = prop.coefficients().detach()
    assert abs(float(theta.sum()) - 1.0) < 1e-14
    assert bool((theta > 0).all())
    # the ambiguity: (c q, c theta) gives the same R ...
    y = tikhonov_prop(x, q, theta, L, tol=TIGHT)
    assert max_rel(tikhonov_prop(x, 3.5 * q, 3.5 * theta, L, tol=TIGHT), y) < 1e-9
    # ... the simplex removes it: phi + c is the same theta, and rescaling q alone changes R
    y0 = prop(x, q, L=L)
    with torch.no_grad():
        prop.phi.add_(7.0)
    assert max_rel(prop.coefficients(), theta) < 1e-14
    assert max_rel(prop(x, q, L=L), y0) < 1e-12
    assert max_rel(prop(x, 3.5 * q, L=L), y0) > 1e-3
    # softplus: free scale, theta does not sum to 1
    sp = TikhonovProp(K=4, scale="softplus").double()
    with torch.no_grad():
        sp.phi.copy_(torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0]))
    assert abs(float(sp.coefficients().detach().sum()) - 1.0) > 0.1


def test_init_shapes(two_graphs):
    edge_index, _, sizes = two_graphs
    n = sum(sizes)
    x, q = signals(n, seed=14)
    K = 4
    prop = TikhonovProp(K=K)
    want = torch.arange(1.0, K + 2, dtype=F64) / 15.0  # theta_k = (k + 1) / sum
    assert torch.allclose(prop.coefficients().detach().double(), want, atol=1e-7, rtol=0)
    prop.double().reset_parameters()  # phi is re-set in the parameter's dtype
    assert torch.allclose(prop.coefficients().detach(), want, atol=1e-15, rtol=0)
    # uniform theta: p == 1/(K+1) (partition of unity), so R = Q (I/(K+1) + Q)^-1 is diagonal
    uni = TikhonovProp(K=K, init="uniform", tol=TIGHT).double()
    y = uni(x, q, edge_index)
    assert max_rel(y, x * (q / (q + 1.0 / (K + 1)))[:, None]) < 1e-10
    sp = TikhonovProp(K=2, scale="softplus", init=[0.5, 2.0, 1.0]).double()
    assert torch.allclose(sp.coefficients().detach(), torch.tensor([0.5, 2.0, 1.0], dtype=F64), atol=1e-12)
    sp.phi.data.zero_()
    sp.reset_parameters()
    assert torch.allclose(sp.coefficients().detach(), torch.tensor([0.5, 2.0, 1.0], dtype=F64), atol=1e-12)


def test_accepts_precomputed_L_in_every_form(two_graphs):
    edge_index, batch, sizes = two_graphs
    n = sum(sizes)
    x, q = signals(n, seed=15)
    prop = TikhonovProp(K=3, tol=TIGHT).double()
    L = normalized_laplacian(edge_index, n)
    want = prop(x, q, edge_index, num_nodes=n)
    for form in (L, L.toarray(), torch.as_tensor(L.toarray()), torch.as_tensor(L.toarray()).to_sparse()):
        assert max_rel(prop(x, q, L=form, batch=batch), want) < 1e-10
    assert max_rel(prop(x, 0.7, edge_index), prop(x, torch.full((n,), 0.7, dtype=F64), edge_index)) < 1e-14


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_round_trip(two_graphs):
    edge_index, _, sizes = two_graphs
    x, q = signals(sum(sizes), seed=16)
    prop = TikhonovProp(K=3, tol=TIGHT).double()
    y = prop(x, q, edge_index)
    prop_c = prop.cuda()
    xc, qc = x.cuda().requires_grad_(), q.cuda().requires_grad_()
    yc = prop_c(xc, qc, edge_index.cuda())
    yc.sum().backward()
    assert yc.device.type == "cuda"
    assert xc.grad.device.type == "cuda"
    assert prop_c.phi.grad.device.type == "cuda"
    assert max_rel(yc.cpu().detach(), y) < 1e-10


# ---------------------------------------------------------------------------------------------------
# TikhonovGNN


def make_gnn(task="graph", pooling="mean", seed=0, **kw):
    torch.manual_seed(seed)
    return TikhonovGNN(3, 8, 2, task=task, pooling=pooling, tol=TIGHT, **kw).double()


@pytest.mark.parametrize("pooling", ["mean", "sum", "max"])
def test_gnn_batch_equals_per_graph(two_graphs, pooling):
    edge_index, batch, sizes = two_graphs
    n = sum(sizes)
    x = torch.randn(n, 3, dtype=F64, generator=torch.Generator().manual_seed(1))
    model = make_gnn(pooling=pooling)
    out = model(x, edge_index, batch)
    q_all = model.last_q
    assert out.shape == (2, 2)
    node_model = make_gnn(task="node")
    node_out = node_model(x, edge_index, batch)
    off = 0
    for g, m in enumerate(sizes):
        sel = slice(off, off + m)
        eg = edge_index[:, batch[edge_index[0]] == g] - off
        assert max_rel(model(x[sel], eg), out[g : g + 1]) < 1e-9
        assert max_rel(model.last_q, q_all[sel]) < 1e-12
        assert max_rel(node_model(x[sel], eg), node_out[sel]) < 1e-9
        off += m


def test_gnn_pooling_readouts(two_graphs):
    edge_index, batch, sizes = two_graphs
    n = sum(sizes)
    x = torch.randn(n, 3, dtype=F64, generator=torch.Generator().manual_seed(2))
    outs = {}
    for pooling in ("mean", "sum", "max"):
        m = make_gnn(pooling=pooling)
        h = m.prop(m.lin_in(x), m.node_weights(x, edge_index[0], edge_index[1], batch=batch), edge_index)
        pooled = torch.stack([getattr(h[batch == g], {"mean": "mean", "sum": "sum", "max": "amax"}[pooling])(0)
                              for g in range(2)])
        outs[pooling] = m(x, edge_index, batch)
        assert max_rel(outs[pooling], m.classifier(pooled)) < 1e-9
    # a graph id with no nodes pools to 0 (num_graphs from the caller)
    m = make_gnn(pooling="max")
    out3 = m(x, edge_index, batch, num_graphs=3)
    assert out3.shape == (3, 2)
    assert max_rel(out3[:2], outs["max"]) < 1e-12
    assert torch.allclose(out3[2], m.classifier(torch.zeros(1, 8, dtype=F64))[0])


def test_gnn_permutation_equivariance(two_graphs):
    edge_index, batch, sizes = two_graphs
    n = sum(sizes)
    x = torch.randn(n, 3, dtype=F64, generator=torch.Generator().manual_seed(3))
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(1))
    inv = torch.argsort(perm)
    node = make_gnn(task="node")
    y = node(x, edge_index)
    q = node.last_q
    yp = node(x[perm], inv[edge_index])
    assert max_rel(yp, y[perm]) < 1e-9
    assert max_rel(node.last_q, q[perm]) < 1e-12
    graph = make_gnn(task="graph", pooling="max")
    out = graph(x, edge_index, batch)
    assert max_rel(graph(x[perm], inv[edge_index], batch[perm]), out) < 1e-9


def test_gnn_accepts_pyg_like_objects_and_exposes_explanations(two_graphs):
    edge_index, batch, sizes = two_graphs
    n = sum(sizes)
    x = torch.randn(n, 3, dtype=F64, generator=torch.Generator().manual_seed(4))
    for q_layers in (0, 1, 3):
        model = make_gnn(q_layers=q_layers, q_min=0.05)
        want = model(x, edge_index, batch)
        data = SimpleNamespace(x=x, edge_index=edge_index, batch=batch, num_graphs=2)
        assert max_rel(model(data), want) < 1e-14
        single = SimpleNamespace(x=x[:9], edge_index=edge_index[:, batch[edge_index[0]] == 0])  # a Data, no batch
        assert model(single).shape == (1, 2)
        q = model.last_q
        assert q.shape == (9,)
        assert not q.requires_grad
        assert bool((q >= 0.05).all())
        assert len(model.q_net) == q_layers
    theta = model.prop.coefficients().detach()
    assert theta.shape == (5,)
    assert abs(float(theta.sum()) - 1.0) < 1e-12


def test_gnn_q_network_is_gin_and_last_q_is_its_output(two_graphs):
    """q = softplus(gain * zscore_per_graph(head(GIN^2(x))) + shift) + q_min with h' = MLP((1 + eps) h + A^T h),
    A[src, dst] = 1; q_norm=False drops the standardisation."""
    edge_index, batch, sizes = two_graphs
    edge_index = edge_index[:, edge_index[0] < edge_index[1]]  # directed: messages go src -> dst only
    n = sum(sizes)
    x = torch.randn(n, 3, dtype=F64, generator=torch.Generator().manual_seed(5))
    model = make_gnn(q_min=0.01)
    with torch.no_grad():
        model.q_net[0].eps.fill_(0.3)
        model.q_net[1].eps.fill_(-0.2)
    A = torch.zeros(n, n, dtype=F64)
    A[edge_index[0], edge_index[1]] = 1.0
    h = x
    for i, layer in enumerate(model.q_net):
        h = layer.mlp((1.0 + layer.eps) * h + A.T @ h)
        h = torch.relu(h) if i + 1 < len(model.q_net) else h
    with torch.no_grad():
        model.q_norm.copy_(torch.tensor([1.7, -0.4]))
    s = model.q_head(h).squeeze(-1)
    z = torch.empty_like(s)
    for g in range(2):  # scores standardised within each graph, then gain and shift
        sg = s[batch == g]
        z[batch == g] = (sg - sg.mean()) / torch.sqrt(sg.var(unbiased=False) + 1e-5)
    want = torch.nn.functional.softplus(1.7 * z - 0.4) + 0.01
    model(x, edge_index, batch)
    # the z-score divides by the (small, at init) spread of the scores: rounding of the dense A^T h is amplified
    assert max_rel(model.last_q, want) < 1e-6
    plain = make_gnn(q_min=0.01, q_norm=False)
    plain(x, edge_index, batch)
    assert plain.q_norm is None
    h = x
    for i, layer in enumerate(plain.q_net):
        h = layer.mlp((1.0 + layer.eps) * h + A.T @ h)
        h = torch.relu(h) if i + 1 < len(plain.q_net) else h
    assert max_rel(plain.last_q, torch.nn.functional.softplus(plain.q_head(h).squeeze(-1)) + 0.01) < 1e-13
    # and that q is the one the propagation used: logits == classifier(pool(R (x W + b)))
    L = normalized_laplacian(edge_index, n).toarray()  # symmetrised
    H = dense_prop(model.lin_in(x), want, model.prop.coefficients(), torch.as_tensor(L))
    pooled = torch.stack([H[batch == g].mean(0) for g in range(2)])
    assert max_rel(model(x, edge_index, batch), model.classifier(pooled)) < 1e-9


def triangle_dataset(num=24, seed=0):
    """Class 0: random trees (triangle-free); class 1: the same kind of tree plus one triangle, made by
    joining two nodes at distance 2. Features: constant 1, degree, and a constant 0 (3 channels)."""
    rng = np.random.default_rng(seed)
    graphs, labels = [], []
    for i in range(num):
        n = int(rng.integers(7, 12))
        parent = [int(rng.integers(0, v)) for v in range(1, n)]
        pairs = [(p, v) for v, p in zip(range(1, n), parent)]
        label = i % 2
        if label:
            v = next(v for v in range(2, n) if parent[v - 1] != 0) if any(p != 0 for p in parent[1:]) else None
            if v is None:  # a star: join two leaves
                pairs.append((1, 2))
            else:
                pairs.append((v, parent[parent[v - 1] - 1]))
        graphs.append((undirected(pairs), n))
        labels.append(label)
    edge_index, batch, sizes = batch_of(graphs)
    deg = torch.zeros(sum(sizes), dtype=F64).index_add_(0, edge_index[1], torch.ones(edge_index.shape[1], dtype=F64))
    x = torch.stack([torch.ones_like(deg), deg / 4.0, torch.zeros_like(deg)], dim=1)
    return x, edge_index, batch, torch.tensor(labels)


def train(steps=60, seed=0):
    x, edge_index, batch, y = triangle_dataset()
    torch.manual_seed(seed)
    model = TikhonovGNN(3, 16, 2, q_layers=2, K=4, pooling="max").double()
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        logits = model(x, edge_index, batch)
        loss = torch.nn.functional.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    accuracy = float((logits.argmax(1) == y).double().mean())
    return losses, accuracy, model


def test_gnn_trains_on_triangles():
    """60 Adam steps on 24 graphs (trees vs trees + one triangle): the loss falls from chance (ln 2)."""
    losses, accuracy, model = train()
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.75 * losses[0], losses
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.1, losses
    assert accuracy >= 0.75
    assert train()[0] == losses  # deterministic under torch.manual_seed
    assert model.prop.phi.grad is not None
    assert model.q_head.weight.grad is not None


# ---------------------------------------------------------------------------------------------------
# bad input


def test_prop_bad_input(two_graphs):
    edge_index, batch, sizes = two_graphs
    n = sum(sizes)
    x, q = signals(n)
    prop = TikhonovProp(K=2).double()
    with pytest.raises(ValueError, match="q must be > 0"):
        prop(x, q - 10.0, edge_index)
    with pytest.raises(ValueError, match="q must be > 0"):
        prop(x, 0.0, edge_index)
    with pytest.raises(ValueError, match="NaN"):
        prop(x, torch.full((n,), float("nan"), dtype=F64), edge_index)
    with pytest.raises(ValueError, match="NaN"):
        prop(x * float("inf"), q, edge_index)
    with pytest.raises(ValueError, match=r"q must have shape \(20,\)"):
        prop(x, q[:-1], edge_index)
    with pytest.raises(ValueError, match=r"x must have shape \(n,\) or \(n, F\)"):
        prop(x[None], q, edge_index)
    with pytest.raises(TypeError, match="floating-point"):
        prop(x.long(), q, edge_index)
    with pytest.raises(ValueError, match="batch must have one graph id per node"):
        prop(x, q, edge_index, batch=batch[:-1])
    wrong = batch.clone()
    wrong[0] = 1
    with pytest.raises(ValueError, match="batch does not match edge_index"):
        prop(x, q, edge_index, batch=wrong)
    with pytest.raises(ValueError, match="batch does not match edge_index"):
        prop(x, q, L=normalized_laplacian(edge_index, n), batch=wrong)
    with pytest.raises(ValueError, match="exactly one of edge_index"):
        prop(x, q)
    with pytest.raises(ValueError, match="exactly one of edge_index"):
        prop(x, q, edge_index, L=normalized_laplacian(edge_index, n))
    with pytest.raises(ValueError, match="num_nodes"):
        prop(x, q, edge_index, num_nodes=n + 1)
    with pytest.raises(ValueError, match="outside"):
        prop(x[:5], q[:5], edge_index)
    with pytest.raises(ValueError, match="L has shape"):
        prop(x[:5], q[:5], L=normalized_laplacian(edge_index, n))
    with pytest.raises(ValueError, match="symmetric"):
        prop(x, q, L=torch.triu(torch.ones(n, n, dtype=F64)) * 0.1)
    with pytest.raises(TypeError, match="integers"):
        prop(x, q, edge_index.double())
    for kw, msg in [({"K": -1}, "K must be"), ({"scale": "exp"}, "scale must be one of"),
                    ({"basis": "chebyshev"}, "basis must be one of"), ({"tol": 0.0}, "tol must be"),
                    ({"init": "highpass"}, "init must be one of"), ({"K": 2, "init": [1.0, 2.0]}, r"shape \(3,\)"),
                    ({"K": 1, "init": [1.0, -2.0]}, "> 0")]:
        with pytest.raises(ValueError, match=msg):
            TikhonovProp(**kw)


def test_functional_bad_input(two_graphs):
    edge_index, _, sizes = two_graphs
    n = sum(sizes)
    L = normalized_laplacian(edge_index, n)
    x, q = signals(n)
    with pytest.raises(ValueError, match="coeffs must have shape"):
        tikhonov_prop(x, q, torch.ones(2, 2, dtype=F64), L)
    with pytest.raises(ValueError, match="Bernstein coefficients must be >= 0"):
        tikhonov_prop(x, q, torch.tensor([1.0, -0.5, 1.0], dtype=F64), L)
    with pytest.raises(ValueError, match="negative on"):
        tikhonov_prop(x, q, torch.tensor([0.0, -1.0, 0.1], dtype=F64), L, basis="monomial")
    with pytest.raises(TypeError, match="coeffs must be a torch tensor"):
        tikhonov_prop(x, q, [0.5, 0.5], L)
    with pytest.raises(ValueError, match="backend"):
        tikhonov_prop(x, q, torch.ones(3, dtype=F64), L, backend="fortran")


def test_gnn_bad_input(two_graphs):
    edge_index, batch, sizes = two_graphs
    n = sum(sizes)
    x = torch.randn(n, 3, dtype=F64)
    model = make_gnn()
    with pytest.raises(ValueError, match=r"x must have shape \(n, in_channels\) = \(n, 3\)"):
        model(x[:, :2], edge_index, batch)
    with pytest.raises(ValueError, match="batch must have one graph id per node"):
        model(x, edge_index, batch[:-1])
    wrong = batch.clone()
    wrong[-1] = 0
    with pytest.raises(ValueError, match="batch does not match edge_index"):
        model(x, edge_index, wrong)
    with pytest.raises(ValueError, match="graph ids >= 0"):
        model(x, edge_index, batch - 1)
    with pytest.raises(ValueError, match="outside"):
        model(x[:5], edge_index)
    with pytest.raises(ValueError, match="edge_index is required"):
        model(x)
    with pytest.raises(ValueError, match="not both"):
        model(SimpleNamespace(x=x, edge_index=edge_index), edge_index)
    with pytest.raises(ValueError, match="num_graphs"):
        model(x, edge_index, batch, num_graphs=1)
    with pytest.raises(ValueError, match="edge_weight must be >= 0"):
        model(x, edge_index, batch, edge_weight=-torch.ones(edge_index.shape[1], dtype=F64))
    with pytest.raises(TypeError, match="floating-point"):
        model(x.long(), edge_index)
    for kw, msg in [({"task": "link"}, "task must be one of"), ({"pooling": "attention"}, "pooling must be one of"),
                    ({"q_min": 0.0}, "q_min must be"), ({"q_layers": -1}, "q_layers must be"),
                    ({"scale": "free"}, "scale must be one of")]:
        with pytest.raises(ValueError, match=msg):
            TikhonovGNN(3, 8, 2, **kw)
    with pytest.raises(ValueError, match="hidden_channels must be"):
        TikhonovGNN(3, 0, 2)


def test_import_fastnips_graph_stays_light():
    code = ("import sys, fastnips.graph as g; light = 'torch' not in sys.modules; "
            "g.TikhonovProp; print(light, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]
