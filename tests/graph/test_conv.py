"""TikhonovConv (the PyG-style layer), the q-missing error of TikhonovProp, and the Laplacian cache.

Oracles: TikhonovProp with an explicit q and L from :func:`normalized_laplacian` (equal to 1e-12 relative,
float64: the same solves, only the Laplacian's construction differs); PyG itself where installed.
"""

from __future__ import annotations

import importlib
import importlib.util

import pytest

torch = pytest.importorskip("torch")

from fastnips.data.graphs import erdos_renyi_edges  # noqa: E402
from fastnips.graph import TikhonovConv, TikhonovProp, normalized_laplacian  # noqa: E402

F64 = torch.float64


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def _graph(n=20, p=0.2, seed=0, F=3):
    ei = torch.as_tensor(erdos_renyi_edges(n, p, seed=seed))
    x = torch.randn(n, F, dtype=F64, generator=torch.Generator().manual_seed(seed))
    return ei, n, x


def test_prop_without_q_names_q():
    ei, _n, x = _graph()
    with pytest.raises(TypeError, match=r"node weights q .*missing.*looks like edge_index.*TikhonovConv"):
        TikhonovProp(K=4)(x, ei)
    with pytest.raises(TypeError, match="node weights q"):
        TikhonovProp(K=4)(x, ei.numpy())


def test_conv_equals_prop_with_the_q_of_its_network():
    ei, n, x = _graph()
    torch.manual_seed(0)
    conv = TikhonovConv(3, K=3, tol=1e-12).double()
    y = conv(x, ei)
    q = torch.nn.functional.softplus(conv.q_net(x).squeeze(1)) + 1e-3
    prop = TikhonovProp(K=3, tol=1e-12).double()
    want = prop(x, q, L=normalized_laplacian(ei, n))
    torch.testing.assert_close(y, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(conv.last_q, q.detach())
    # q given explicitly bypasses the network
    torch.testing.assert_close(conv(x, ei, q=q.detach()), want, rtol=1e-12, atol=1e-12)
    # gradients reach the Q-network, the filter and x
    xr = x.clone().requires_grad_()
    conv(xr, ei).square().sum().backward()
    assert all(p.grad is not None for p in conv.parameters())
    assert xr.grad is not None


def test_add_self_loops_uses_the_self_loop_laplacian():
    ei, n, x = _graph(seed=1)
    q = torch.full((n,), 0.7, dtype=F64)
    conv = TikhonovConv(3, K=2, add_self_loops=True, tol=1e-12).double()
    want = TikhonovProp(K=2, tol=1e-12).double()(x, q, L=normalized_laplacian(ei, n, add_self_loops=True))
    torch.testing.assert_close(conv(x, ei, q=q), want, rtol=1e-12, atol=1e-12)


def test_bad_arguments():
    ei, _n, x = _graph()
    with pytest.raises(ValueError, match="exactly one of in_channels"):
        TikhonovConv()
    with pytest.raises(ValueError, match="exactly one of in_channels"):
        TikhonovConv(3, q_net=torch.nn.Linear(3, 1))
    with pytest.raises(ValueError, match="in_channels must be an int"):
        TikhonovConv(0)
    with pytest.raises(ValueError, match="q_min"):
        TikhonovConv(3, q_min=0.0)
    with pytest.raises(TypeError, match="q_net must be callable"):
        TikhonovConv(q_net=3)
    conv = TikhonovConv(q_net=lambda x, ei: torch.ones(x.shape[0], 2, dtype=x.dtype))
    with pytest.raises(ValueError, match=r"q_net must return shape \(20,\)"):
        conv(x, ei)
    with pytest.raises(TypeError, match="edge_index must hold integers"):
        TikhonovConv(3)(x, ei.double())
    with pytest.raises(ValueError, match="edge_weight must be >= 0"):
        TikhonovConv(3).double()(x, ei, -torch.ones(ei.shape[1], dtype=F64))


# ---------------------------------------------------------------------------------------------------
# the cache of the Laplacian


def test_cache_reuses_the_pattern_and_follows_changes():
    ei, n, x = _graph(seed=2)
    q = torch.full((n,), 0.5, dtype=F64)
    prop = TikhonovProp(K=2, tol=1e-12).double()

    def fresh(edge_index, w=None):
        return TikhonovProp(K=2, tol=1e-12).double()(x, q, edge_index, edge_weight=w)

    y0 = prop(x, q, ei)
    cache = prop._laplacian_cache
    assert cache.builds == 1
    torch.testing.assert_close(prop(x, q, ei), y0, rtol=0, atol=0)
    torch.testing.assert_close(prop(x, q, ei.clone()), y0, rtol=0, atol=0)  # equal contents: a hit
    assert cache.builds == 1
    w = torch.rand(ei.shape[1], dtype=F64, generator=torch.Generator().manual_seed(0)) + 0.1
    torch.testing.assert_close(prop(x, q, ei, edge_weight=w), fresh(ei, w), rtol=1e-13, atol=1e-14)
    w.mul_(3.0).add_(torch.arange(w.shape[0], dtype=F64) % 5)  # weights changed in place: new values
    torch.testing.assert_close(prop(x, q, ei, edge_weight=w), fresh(ei, w), rtol=1e-13, atol=1e-14)
    assert cache.builds == 1  # weights never rebuild the pattern
    ei[1, :4] = torch.tensor([0, 1, 2, 3])  # edge_index modified in place: rebuilt
    ei2 = torch.cat([ei, ei.flip(0)], dim=1)  # (keep it undirected)
    ei.copy_(ei2[:, : ei.shape[1]])
    y1 = prop(x, q, ei)
    assert cache.builds == 2
    torch.testing.assert_close(y1, fresh(ei), rtol=1e-13, atol=1e-14)
    other, _, _ = _graph(seed=3)
    torch.testing.assert_close(prop(x, q, other), fresh(other), rtol=1e-13, atol=1e-14)
    assert cache.builds == 3
    # another number of nodes on the same edge list rebuilds too
    x2 = torch.randn(n + 2, 3, dtype=F64)
    q2 = torch.full((n + 2,), 0.5, dtype=F64)
    want = TikhonovProp(K=2, tol=1e-12).double()(x2, q2, other)
    torch.testing.assert_close(prop(x2, q2, other), want, rtol=1e-13, atol=1e-14)
    assert cache.builds == 4


def test_cache_hit_on_a_numpy_edge_list_compares_contents():
    ei, n, x = _graph(seed=4)
    q = torch.full((n,), 0.5, dtype=F64)
    prop = TikhonovProp(K=2, tol=1e-12).double()
    arr = ei.numpy().copy()
    y0 = prop(x, q, arr)
    arr[0, 0], arr[1, 0] = arr[1, 0], arr[0, 0]  # reverse one edge in place (a numpy array has no version)
    arr[0, 1] = (arr[0, 1] + 1) % n
    y1 = prop(x, q, arr)
    assert prop._laplacian_cache.builds == 2
    want = TikhonovProp(K=2, tol=1e-12).double()(x, q, L=normalized_laplacian(arr, n))
    torch.testing.assert_close(y1, want, rtol=1e-13, atol=1e-14)
    assert not torch.equal(y0, y1)


# ---------------------------------------------------------------------------------------------------
# PyG


def test_drops_in_where_appnp_goes():
    pyg = pytest.importorskip("torch_geometric", reason="torch_geometric is not installed")
    from torch_geometric.nn import APPNP, GCNConv

    ei, n, x = _graph(seed=5, F=4)
    x = x.float()
    y = torch.randint(0, 2, (n,), generator=torch.Generator().manual_seed(0))

    def model(prop):
        return pyg.nn.Sequential("x, edge_index, edge_weight", [
            (torch.nn.Linear(4, 8), "x -> h"), (prop, "h, edge_index, edge_weight -> h"),
            (torch.nn.Linear(8, 2), "h -> h")])

    w = torch.rand(ei.shape[1], generator=torch.Generator().manual_seed(1)) + 0.5
    assert model(APPNP(K=5, alpha=0.1))(x, ei, w).shape == (n, 2)  # the slot, with PyG's own layer
    torch.manual_seed(0)
    net = model(TikhonovConv(q_net=GCNConv(8, 1), K=3))
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    first = None
    for _ in range(15):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x, ei, w), y)
        loss.backward()
        opt.step()
        first = float(loss.detach()) if first is None else first
    assert float(loss.detach()) < first


def test_pyg_explain_mode_mask_is_an_edge_weight():
    pytest.importorskip("torch_geometric", reason="torch_geometric is not installed")
    from torch_geometric.explain.algorithm.utils import clear_masks, set_masks

    ei, n, x = _graph(seed=6)
    conv = TikhonovConv(3, K=2, tol=1e-12).double()
    mask = torch.rand(ei.shape[1], dtype=F64, generator=torch.Generator().manual_seed(0)) + 0.2
    set_masks(conv, mask, ei, apply_sigmoid=False)
    y = conv(x, ei)
    clear_masks(conv)
    # the pair (i, j) / (j, i) shares the mean of its two mask values
    pair = torch.minimum(ei[0], ei[1]) * n + torch.maximum(ei[0], ei[1])
    sym = torch.stack([mask[pair == pair[e]].mean() for e in range(ei.shape[1])])
    torch.testing.assert_close(y, conv(x, ei, sym), rtol=1e-12, atol=1e-12)
    assert not torch.allclose(y, conv(x, ei), rtol=1e-6, atol=0)


def test_gnn_explainer_finds_every_edge_of_the_component():
    pytest.importorskip("torch_geometric", reason="torch_geometric is not installed")
    from torch_geometric.explain import Explainer, GNNExplainer

    ei, _n, x = _graph(n=16, p=0.3, seed=7)
    x = x.float()
    torch.manual_seed(0)
    net = torch.nn.ModuleDict({"lin": torch.nn.Linear(3, 8), "conv": TikhonovConv(8, K=3),
                               "out": torch.nn.Linear(8, 2)})

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x, edge_index):
            return self.net["out"](self.net["conv"](self.net["lin"](x), edge_index))

    explainer = Explainer(Model(), algorithm=GNNExplainer(epochs=10), explanation_type="model", node_mask_type=None,
                          edge_mask_type="object", model_config=dict(mode="multiclass_classification",
                                                                     task_level="node", return_type="raw"))
    e = explainer(x, ei, index=0)
    # one layer, global receptive field on a connected graph: every edge matters (GNNExplainer zeroes edges
    # whose first gradient is 0, which before edge-weight gradients was every edge, then an error)
    assert e.edge_mask.shape == (ei.shape[1],)
    assert bool((e.edge_mask > 0).all())


def test_without_torch_geometric_the_layer_is_a_plain_module(monkeypatch):
    """FASTNIPS_DISABLE_TORCH_GEOMETRIC=1 (as if PyG were missing): an nn.Module, same results (the module
    re-imported with the switch set, then restored)."""
    import fastnips.graph.conv as conv_mod

    ei, _n, x = _graph(seed=8)
    torch.manual_seed(0)
    want = TikhonovConv(3, K=2, tol=1e-12).double()(x, ei)
    monkeypatch.setenv("FASTNIPS_DISABLE_TORCH_GEOMETRIC", "1")
    try:
        plain = importlib.reload(conv_mod).TikhonovConv
        assert plain.__mro__[1] is torch.nn.Module
        torch.manual_seed(0)
        torch.testing.assert_close(plain(3, K=2, tol=1e-12).double()(x, ei), want, rtol=1e-13, atol=1e-13)
    finally:
        monkeypatch.delenv("FASTNIPS_DISABLE_TORCH_GEOMETRIC")
        importlib.reload(conv_mod)
    if importlib.util.find_spec("torch_geometric") is not None:
        assert TikhonovConv.__mro__[1].__name__ == "MessagePassing"
