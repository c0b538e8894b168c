"""hellinger_triplet_loss against the metric on softmax probabilities, its batching and reductions, gradients
(gradcheck, including near-zero probabilities), PyG-style inputs and refusals."""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from fastnips.scenegraph import (  # noqa: E402
    HellingerTripletLoss,
    hellinger,
    hellinger_triplet_loss,
    synthetic_scenes,
    triplet_hellinger,
)

from .conftest import graph  # noqa: E402

F64 = torch.float64


def _problem(seed=0, N=7, E=10, C=5, R=4, contextual=False, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    zn = scale * torch.randn(N, C, generator=g, dtype=F64)
    ze = scale * torch.randn(*((E, C, C, R) if contextual else (E, R)), generator=g, dtype=F64)
    return g, zn, ze, graph(g, N, E), torch.randint(0, C, (N,), generator=g), torch.randint(0, R, (E,), generator=g)


@pytest.mark.parametrize("contextual", [False, True])
@pytest.mark.parametrize("multilabel", [False, True])
def test_loss_equals_the_metric_on_softmax_probabilities(contextual, multilabel):
    g, zn, ze, ei, yn, ye = _problem(1, contextual=contextual)
    C, R = zn.shape[1], ze.shape[-1]
    if multilabel:
        te = (torch.rand(ei.shape[1], R, generator=g) < 0.4).to(F64)
        pe = torch.sigmoid(ze)
    else:
        te = torch.nn.functional.one_hot(ye, R).to(F64)
        pe = torch.softmax(ze, -1)
    tn = torch.nn.functional.one_hot(yn, C).to(F64)
    batch = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    got = hellinger_triplet_loss(zn, ze, ei, (yn, te if multilabel else ye), contextual=contextual,
                                 multilabel=multilabel, batch=batch, node_weight=0.3, reduction="none")
    node = hellinger(torch.softmax(zn, -1), tn, squared=True)
    trip = triplet_hellinger(torch.softmax(zn, -1), pe, tn, te, ei, contextual=contextual, multilabel=multilabel,
                             squared=True)
    want = []
    for k in range(2):
        nm, em = batch == k, batch[ei[0]] == k
        want.append(0.3 * node[nm].mean() + 0.7 * trip[em].mean() if em.any() else node[nm].mean())
    torch.testing.assert_close(got, torch.stack(want), rtol=0, atol=1e-12)
    m = hellinger_triplet_loss(zn, ze, ei, (yn, te if multilabel else ye), contextual=contextual,
                               multilabel=multilabel, batch=batch, node_weight=0.3)
    torch.testing.assert_close(m, got.mean(), rtol=0, atol=1e-14)


def test_graph_without_edges_has_the_node_term_and_empty_graph_ids_are_left_out():
    zn = torch.randn(4, 3, dtype=F64)
    ze = torch.randn(1, 2, dtype=F64)
    ei = torch.tensor([[0], [1]])
    batch = torch.tensor([0, 0, 2, 2])  # graph 1 has no node, graph 2 no edge
    y = torch.tensor([0, 1, 2, 0])
    per = hellinger_triplet_loss(zn, ze, ei, (y, torch.tensor([1])), batch=batch, reduction="none")
    node = hellinger(torch.softmax(zn, -1), torch.nn.functional.one_hot(y, 3).to(F64), squared=True)
    assert per.shape == (3,)
    assert float(per[1]) == 0.0
    torch.testing.assert_close(per[2], node[2:].mean(), rtol=0, atol=1e-14)
    mean = hellinger_triplet_loss(zn, ze, ei, (y, torch.tensor([1])), batch=batch)
    torch.testing.assert_close(mean, (per[0] + per[2]) / 2, rtol=0, atol=1e-14)
    total = hellinger_triplet_loss(zn, ze, ei, (y, torch.tensor([1])), batch=batch, reduction="sum")
    torch.testing.assert_close(total, per.sum(), rtol=0, atol=1e-14)


def test_zero_iff_prediction_equals_target_and_bounded():
    g, zn, ze, ei, yn, ye = _problem(2)
    soft_n, soft_e = torch.softmax(zn, -1), torch.softmax(ze, -1)
    assert abs(float(hellinger_triplet_loss(zn, ze, ei, (soft_n, soft_e)))) < 1e-12
    assert float(hellinger_triplet_loss(zn + 0.1 * torch.randn(zn.shape, generator=g, dtype=F64), ze, ei,
                                        (soft_n, soft_e))) > 1e-6
    for scale in (0.0, 1.0, 50.0):
        _, zn, ze, ei, yn, ye = _problem(3, scale=scale)
        v = hellinger_triplet_loss(zn, ze, ei, (yn, ye), reduction="none")
        assert torch.all((v >= 0) & (v <= 1))


@pytest.mark.parametrize(("contextual", "multilabel", "mode"),
                         [(False, False, "mean"), (False, True, "mean"), (False, True, "joint"), (True, False, "mean"),
                          (True, True, "mean")])
@pytest.mark.parametrize("scale", [1.0, 20.0])  # 20: probabilities down to ~1e-17
def test_gradcheck(contextual, multilabel, mode, scale):
    g, zn, ze, ei, yn, ye = _problem(4, N=4, E=5, C=3, R=3, contextual=contextual, scale=scale)
    te = (torch.rand(5, 3, generator=g) < 0.5).to(F64) if multilabel else ye
    zn.requires_grad_(True)
    ze.requires_grad_(True)
    f = lambda a, b: hellinger_triplet_loss(a, b, ei, (yn, te), contextual=contextual, multilabel=multilabel,
                                            mode=mode, backend="reference")
    assert torch.autograd.gradcheck(f, (zn, ze))
    f(zn, ze).backward()
    assert torch.isfinite(zn.grad).all()
    assert torch.isfinite(ze.grad).all()


def test_pyg_style_targets_and_module():
    b = synthetic_scenes(3, seed=1)
    C, R = 8, 8
    g = torch.Generator().manual_seed(5)
    zn = torch.randn(b.x.shape[0], C, generator=g)
    ze = torch.randn(b.edge_index.shape[1], R, generator=g)
    direct = hellinger_triplet_loss(zn, ze, b.edge_index, (b.y, b.edge_y), batch=b.batch, reduction="none")
    assert direct.shape == (3,)
    torch.testing.assert_close(hellinger_triplet_loss(zn, ze, b.edge_index, b, reduction="none"), direct)
    ns = types.SimpleNamespace(y=b.y, edge_label=b.edge_y, batch=b.batch)
    torch.testing.assert_close(hellinger_triplet_loss(zn, ze, b.edge_index, ns, reduction="none"), direct)
    crit = HellingerTripletLoss(reduction="none")
    torch.testing.assert_close(crit(zn, ze, b.edge_index, b), direct)
    assert "contextual=False" in repr(crit)
    tg = pytest.importorskip("torch_geometric.data", reason="PyG not installed: the Data object is read by attribute")
    d = tg.Data(x=b.x, edge_index=b.edge_index, y=b.y, edge_y=b.edge_y)
    d.batch = b.batch
    torch.testing.assert_close(hellinger_triplet_loss(zn, ze, d.edge_index, d, reduction="none"), direct)


def test_training_with_the_loss_fits_a_tiny_problem():
    torch.manual_seed(0)
    _, zn, ze, ei, yn, ye = _problem(6)
    zn = zn.float().requires_grad_(True)
    ze = ze.float().requires_grad_(True)
    opt = torch.optim.Adam([zn, ze], lr=0.1)
    first = None
    for _ in range(100):
        opt.zero_grad()
        loss = hellinger_triplet_loss(zn, ze, ei, (yn, ye))
        first = float(loss.detach()) if first is None else first
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 0.05 * first
    assert torch.equal(zn.argmax(-1), yn)


@pytest.mark.parametrize(("kw", "match"), [
    ({"edge_logits": torch.zeros(3, 4)}, "edge_logits must have shape"),
    ({"edge_logits": torch.zeros(2, 4), "contextual": True}, "4 dimensions"),
    ({"node_weight": 1.5}, "node_weight"),
    ({"reduction": "max"}, "reduction"),
    ({"mode": "geo"}, "mode"),
    ({"targets": (torch.tensor([0, 7]), torch.tensor([0, 1]))}, "outside"),
    ({"targets": (torch.tensor([0, 1]),)}, "node_targets, edge_targets"),
    ({"targets": object()}, "attributes y and edge_y"),
    ({"targets": (torch.tensor([[0.5, 0.6, 0.0]] * 2), torch.tensor([0, 1]))}, "summing to 1"),
    ({"edge_index": torch.tensor([[0, 1], [1, 5]])}, "outside"),
    ({"batch": torch.tensor([0.0, 1.0])}, "batch"),
])
def test_bad_input(kw, match):
    args = {"node_logits": torch.zeros(2, 3), "edge_logits": torch.zeros(2, 4), "edge_index": torch.tensor([[0, 1],
            [1, 0]]), "targets": (torch.tensor([0, 1]), torch.tensor([0, 3]))}
    args.update(kw)
    opts = {k: args.pop(k) for k in ("contextual", "node_weight", "reduction", "mode", "batch") if k in args}
    with pytest.raises((ValueError, TypeError), match=match):
        hellinger_triplet_loss(args["node_logits"], args["edge_logits"], args["edge_index"], args["targets"], **opts)
