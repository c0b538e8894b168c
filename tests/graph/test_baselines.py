"""GCN, GIN and APPNP (fastnips.graph.baselines) against dense reference computations."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastnips.graph.baselines import APPNP, GCN, GIN, count_parameters, global_pool  # noqa: E402

TOL = 1e-6


def _random_graph(n, p, rng):
    a = np.triu(rng.random((n, n)) < p, 1)
    a = a | a.T
    return np.array(np.nonzero(a), dtype=np.int64), a.astype(np.float64)


def _graph(seed=0, n=9, p=0.35):
    rng = np.random.default_rng(seed)
    ei, a = _random_graph(n, p, rng)
    x = rng.standard_normal((n, 3))
    return torch.as_tensor(x), torch.as_tensor(ei), torch.as_tensor(a)


def _a_hat(a):
    at = a + torch.eye(a.shape[0], dtype=a.dtype)
    dinv = at.sum(0).rsqrt()
    return dinv[:, None] * at * dinv[None, :]


def _pool(h, mode):
    return {"mean": h.mean(0), "sum": h.sum(0), "max": h.max(0).values}[mode][None]


def _mlp_ref(seq, h):
    return seq[2](torch.relu(seq[0](h)))


def _gcn_ref(m, x, a):
    ah = _a_hat(a)
    h = x
    for i, lin in enumerate(m.lins):
        h = ah @ h @ lin.weight.T + lin.bias
        if m.task == "graph" or i + 1 < len(m.lins):
            h = torch.relu(h)
    return h if m.task == "node" else m.classifier(_pool(h, m.pooling))


def _gin_ref(m, x, a):
    eps = m.eps if m.eps is not None else m.eps_fixed
    hs, h = [x], x
    for i, mlp in enumerate(m.mlps):
        h = torch.relu(_mlp_ref(mlp, (1 + eps[i]) * h + a @ h))
        hs.append(h)
    if m.task == "node":
        return m.heads[0](h)
    return sum(head(_pool(hl, m.pooling)) for hl, head in zip(hs, m.heads))


def _appnp_ref(m, x, a):
    h = x
    for i, lin in enumerate(m.lins):
        h = lin(h)
        if i + 1 < len(m.lins):
            h = torch.relu(h)
    ah = _a_hat(a)
    z = h
    for _ in range(m.K):
        z = (1 - m.alpha) * ah @ z + m.alpha * h
    return z if m.task == "node" else m.classifier(_pool(z, m.pooling))


MODELS = {
    "gcn": (lambda **kw: GCN(3, 8, 4, num_layers=3, **kw), _gcn_ref),
    "gin": (lambda **kw: GIN(3, 8, 4, num_layers=3, train_eps=True, **kw), _gin_ref),
    "appnp": (lambda **kw: APPNP(3, 8, 4, **kw), _appnp_ref),
}


def _make(name, task, pooling, seed=0):
    torch.manual_seed(seed)
    m = MODELS[name][0](task=task, pooling=pooling).double()
    if name == "gin":
        with torch.no_grad():
            m.eps.copy_(torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64))
    return m


CASES = [("node", "mean")] + [("graph", p) for p in ("mean", "sum", "max")]


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize(("task", "pooling"), CASES)
def test_matches_dense_reference(name, task, pooling):
    x, ei, a = _graph()
    m = _make(name, task, pooling)
    with torch.no_grad():
        got = m(x, ei)
        want = MODELS[name][1](m, x, a)
    assert got.shape == ((9, 4) if task == "node" else (1, 4))
    torch.testing.assert_close(got, want, atol=TOL, rtol=TOL)


def test_gcn_self_loops_in_input_are_replaced():
    x, ei, a = _graph(seed=1)
    loops = torch.arange(3).repeat(2, 1)
    m = _make("gcn", "node", "mean")
    with torch.no_grad():
        torch.testing.assert_close(m(x, torch.cat([ei, loops], 1)), _gcn_ref(m, x, a), atol=TOL, rtol=TOL)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize(("task", "pooling"), CASES)
def test_permutation_equivariance(name, task, pooling):
    x, ei, _ = _graph(seed=2)
    m = _make(name, task, pooling)
    perm = torch.as_tensor(np.random.default_rng(5).permutation(x.shape[0]))  # old i -> new perm[i]
    xp = torch.empty_like(x)
    xp[perm] = x
    with torch.no_grad():
        out, outp = m(x, ei), m(xp, perm[ei])
    if task == "node":
        torch.testing.assert_close(outp[perm], out, atol=TOL, rtol=TOL)
    else:
        torch.testing.assert_close(outp, out, atol=TOL, rtol=TOL)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize(("task", "pooling"), CASES)
def test_batch_equals_per_graph(name, task, pooling):
    graphs = [_graph(seed=s, n=n) for s, n in ((3, 7), (4, 10), (5, 5))]
    m = _make(name, task, pooling)
    xs, eis, bs, off = [], [], [], 0
    for g, (x, ei, _) in enumerate(graphs):
        xs.append(x)
        eis.append(ei + off)
        bs.append(torch.full((x.shape[0],), g))
        off += x.shape[0]
    with torch.no_grad():
        out = m(torch.cat(xs), torch.cat(eis, 1), torch.cat(bs))
        want = torch.cat([m(x, ei) for x, ei, _ in graphs])
    assert out.shape == ((off, 4) if task == "node" else (3, 4))
    torch.testing.assert_close(out, want, atol=TOL, rtol=TOL)


@pytest.mark.parametrize("name", list(MODELS))
def test_float32_gradients_and_num_graphs(name):
    x, ei, _ = _graph(seed=6)
    m = MODELS[name][0](task="graph", pooling="mean")
    out = m(x.float(), ei, torch.zeros(9, dtype=torch.long), num_graphs=3)
    assert out.shape == (3, 4)
    assert out.dtype == torch.float32
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())


def test_global_pool_empty_graph_and_modes():
    h = torch.tensor([[1.0, -2.0], [3.0, 4.0], [5.0, 6.0]])
    b = torch.tensor([0, 0, 2])
    torch.testing.assert_close(global_pool(h, b, "sum"), torch.tensor([[4.0, 2.0], [0, 0], [5, 6]]))
    torch.testing.assert_close(global_pool(h, b, "mean"), torch.tensor([[2.0, 1.0], [0, 0], [5, 6]]))
    torch.testing.assert_close(global_pool(h, b, "max"), torch.tensor([[3.0, 4.0], [0, 0], [5, 6]]))


def test_count_parameters():
    m = GCN(3, 8, 4, num_layers=2, task="node")
    assert count_parameters(m) == (3 * 8 + 8) + (8 * 4 + 4)
    g = GIN(3, 8, 4, num_layers=1)
    assert count_parameters(g) == (3 * 8 + 8 + 8 * 8 + 8) + (3 * 4 + 4) + (8 * 4 + 4)
    with pytest.raises(TypeError):
        count_parameters("not a module")


@pytest.mark.parametrize("name", list(MODELS))
def test_bad_input(name):
    x, ei, _ = _graph()
    m = MODELS[name][0]()
    x = x.float()
    with pytest.raises(ValueError, match="shape"):
        m(x[:, :2], ei)
    with pytest.raises(ValueError, match="outside"):
        m(x, ei + 100)
    with pytest.raises(ValueError, match="NaN"):
        m(torch.full_like(x, float("nan")), ei)
    with pytest.raises(ValueError, match="batch"):
        m(x, ei, torch.zeros(3, dtype=torch.long))
    b = torch.zeros(9, dtype=torch.long)
    b[int(ei[0, 0])] = 1
    with pytest.raises(ValueError, match="different graphs"):
        m(x, ei, b)
    with pytest.raises(ValueError, match="task"):
        MODELS[name][0](task="edge")
    with pytest.raises(ValueError, match="pooling"):
        MODELS[name][0](pooling="median")
