"""fastnips.graph against torch_geometric itself, where it is installed (skipped otherwise).

The rest of tests/graph checks the PyG conventions against written-out formulas; here the oracle is PyG:
``get_laplacian(normalization="sym")``, ``GCNConv``/``GINConv``/``APPNP`` propagation, and real
``Data``/``Batch`` objects fed to TikhonovGNN.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg = pytest.importorskip("torch_geometric")
from torch_geometric.data import Batch, Data  # noqa: E402
from torch_geometric.nn import APPNP as PygAPPNP  # noqa: E402
from torch_geometric.nn import GCNConv  # noqa: E402
from torch_geometric.utils import get_laplacian  # noqa: E402

from fastnips.data.graphs import ba_motifs, erdos_renyi_edges  # noqa: E402
from fastnips.graph import TikhonovGNN, normalized_laplacian  # noqa: E402
from fastnips.graph.baselines import APPNP, GCN, gcn_norm_edges, propagate  # noqa: E402

F64 = torch.float64


def _graph(n=40, p=0.12, seed=0, isolated=3):
    ei = erdos_renyi_edges(n, p, seed=seed)
    return torch.as_tensor(ei), n + isolated  # the last nodes are isolated


def test_normalized_laplacian_equals_pyg_get_laplacian():
    ei, n = _graph()
    w_half = torch.as_tensor(np.random.default_rng(1).uniform(0.2, 2.0, ei.shape[1] // 2))
    w = torch.cat([w_half, w_half])  # undirected_edge_index lists the pairs, then their reverses
    for weight in (None, w):
        pyg_w = torch.ones(ei.shape[1], dtype=F64) if weight is None else weight  # PyG's default is float32
        idx, val = get_laplacian(ei, pyg_w, normalization="sym", num_nodes=n)
        want = np.zeros((n, n))
        np.add.at(want, (idx[0].numpy(), idx[1].numpy()), val.numpy())
        got = normalized_laplacian(ei, n, None if weight is None else weight.numpy()).toarray()
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
        np.testing.assert_array_equal(got[n - 3:, n - 3:], np.eye(3))  # isolated nodes: L_ii = 1, as PyG


def test_gcn_and_appnp_propagation_equal_pyg():
    ei, n = _graph(seed=2)
    x = torch.randn(n, 5, dtype=F64, generator=torch.Generator().manual_seed(0))
    src, dst, w = gcn_norm_edges(ei, n, F64)
    conv = GCNConv(5, 5, bias=False).double()
    with torch.no_grad():
        conv.lin.weight.copy_(torch.eye(5, dtype=F64))
    np.testing.assert_allclose(propagate(x, src, dst, w).numpy(), conv(x, ei).detach().numpy(), rtol=0, atol=1e-13)

    ours = APPNP(5, 5, 3, num_layers=1, K=10, alpha=0.1, task="node").double()
    with torch.no_grad():
        ours.lins[0].weight.copy_(torch.eye(3, 5, dtype=F64))
        ours.lins[0].bias.zero_()
    want = PygAPPNP(K=10, alpha=0.1)(x[:, :3], ei)
    np.testing.assert_allclose(ours(x, ei).detach().numpy(), want.numpy(), rtol=0, atol=1e-12)
    gcn = GCN(5, 8, 3, num_layers=2, task="node").double()
    assert gcn(x, ei).shape == (n, 3)


def test_tikhonov_gnn_reads_real_pyg_batches():
    samples = ba_motifs(6, seed=3)
    datas = [Data(x=torch.as_tensor(s.x), edge_index=torch.as_tensor(s.edge_index), y=torch.tensor([s.y]))
             for s in samples]
    batch = Batch.from_data_list(datas)
    torch.manual_seed(0)
    model = TikhonovGNN(batch.x.shape[1], 8, 2, task="graph", tol=1e-12).double()
    batch.x = batch.x.double()
    out = model(batch)
    assert out.shape == (6, 2)
    want = model(batch.x, batch.edge_index, batch.batch)
    assert torch.equal(out, want)
    for g, d in enumerate(datas):  # a graph alone (a Data without batch) gives its row of the batch
        single = Data(x=d.x.double(), edge_index=d.edge_index)
        assert float((model(single)[0] - out[g]).detach().abs().max()) < 1e-9
    node = TikhonovGNN(batch.x.shape[1], 8, 3, task="node").double()
    assert node(batch).shape == (batch.num_nodes, 3)
    ex = model.explain(batch, graph=2)
    assert ex.q.shape == (datas[2].num_nodes,)


def test_repeated_self_loops_as_add_remaining_self_loops():
    """A node listed with several self loops keeps one, as PyG's gcn_norm (add_remaining_self_loops) does."""
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

    from fastnips.graph import TikhonovConv, TikhonovProp

    # the path 0-1-2-3 with two unit loops on node 3 (summed, A_33 would be 2/3; PyG: 1/2), and two
    # loops of different weights on node 1
    ei = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 3, 1, 1], [1, 0, 2, 1, 3, 2, 3, 3, 1, 1]])
    for w in (torch.ones(10, dtype=F64), torch.tensor([1, 1, 2, 2, 0.5, 0.5, 1, 1, 0.3, 1.7], dtype=F64)):
        idx, val = gcn_norm(ei, w, num_nodes=4, add_self_loops=True)
        A_hat = np.zeros((4, 4))
        np.add.at(A_hat, (idx[1].numpy(), idx[0].numpy()), val.numpy())
        ours = normalized_laplacian(ei, 4, w.numpy(), add_self_loops=True).toarray()
        np.testing.assert_allclose(np.eye(4) - ours, A_hat, rtol=0, atol=1e-15)
        if w[0] == 1 and bool((w == 1).all()):
            assert abs(A_hat[3, 3] - 0.5) < 1e-15
        # the layer's Laplacian (the differentiable builder) agrees
        x = torch.randn(4, 2, dtype=F64, generator=torch.Generator().manual_seed(0))
        q = torch.full((4,), 0.8, dtype=F64)
        conv = TikhonovConv(2, K=2, add_self_loops=True, tol=1e-13).double()
        want = TikhonovProp(K=2, tol=1e-13).double()(x, q, L=np.eye(4) - A_hat)
        np.testing.assert_allclose(conv(x, ei, w, q=q).detach().numpy(), want.detach().numpy(), rtol=0, atol=1e-12)


def test_explanation_converts_to_a_pyg_explanation():
    from torch_geometric.explain import Explanation as PygExplanation
    from torch_geometric.explain.config import ThresholdConfig

    samples = ba_motifs(3, seed=4)
    datas = [Data(x=torch.as_tensor(s.x), edge_index=torch.as_tensor(s.edge_index)) for s in samples]
    batch = Batch.from_data_list(datas)
    torch.manual_seed(1)
    model = TikhonovGNN(batch.x.shape[1], 8, 2, task="graph").double()
    batch.x = batch.x.double()
    ours = model.explain(batch, graph=1)
    pe = ours.to_pyg(datas[1].x)
    assert isinstance(pe, PygExplanation)
    assert pe.validate(raise_on_error=True)
    np.testing.assert_array_equal(pe.node_mask.squeeze(1).numpy(), ours.q)
    np.testing.assert_array_equal(pe.edge_index.numpy(), ours.edge_index)
    assert pe.num_nodes == datas[1].num_nodes
    assert pe.filter_reading == ours.reading
    # PyG's own top-k thresholding keeps our top nodes (their q values: symmetric nodes tie)
    top = pe.threshold(ThresholdConfig(threshold_type="topk", value=3)).node_mask.squeeze(1)
    kept = torch.nonzero(top).squeeze(1).numpy()
    np.testing.assert_array_equal(np.sort(ours.q[kept]), np.sort(ours.q[ours.top_nodes(3)]))
    with pytest.raises(ValueError, match="x must have shape"):
        ours.to_pyg(torch.ones(2, 1))
