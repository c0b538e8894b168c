"""fastnips.graph explanations: the reading of p, explain_tikhonov / TikhonovGNN.explain against dense oracles,
batch slicing, explanation_auroc against a brute-force pairwise count, plot_explanation, and bad input.

Tolerances: R against a dense numpy solve of (p(L) + Q) R = Q, 1e-9 relative to max |R| (the solver's
relative residual is 1e-10 per column and cond(p(L) + Q) <= (1 + max q) / min q <= 50 here). Eigenvalues of R
are checked in (0, 1 + 1e-9].
"""

from __future__ import annotations

import subprocess
import sys
from itertools import product
from math import comb

import numpy as np
import pytest

from fastnips import _optional
from fastnips.data.graphs import ba_motifs, collate
from fastnips.graph import (
    Explanation,
    evaluate_polynomial,
    explain_tikhonov,
    explanation_auroc,
    filter_reading,
    normalized_laplacian,
    plot_explanation,
    spring_layout,
)


@pytest.fixture(scope="module")
def motif_graphs():
    """Three BA-motif graphs (25 nodes each) and their collated batch."""
    samples = ba_motifs(3, base_nodes=20, seed=7)
    x, edge_index, batch, _, mask = collate(samples, return_motif_mask=True)
    return samples, x, edge_index, batch, mask


def dense_bernstein(L: np.ndarray, theta) -> np.ndarray:
    """p(L) = sum_k theta_k C(K, k) (L/2)^k (I - L/2)^(K-k), by matrix powers (independent of the library)."""
    K = len(theta) - 1
    n = L.shape[0]
    half, rest = L / 2.0, np.eye(n) - L / 2.0
    return sum(theta[k] * comb(K, k) * np.linalg.matrix_power(half, k) @ np.linalg.matrix_power(rest, K - k)
               for k in range(K + 1))


# ---------------------------------------------------------------------------------------------------
# the reading of p


@pytest.mark.parametrize(("theta", "reading"), [
    ([0.0, 0.25, 0.5, 0.75, 1.0], "low-pass"),       # p = lambda / 2
    ([0.1, 0.2, 0.4, 0.8, 1.6], "low-pass"),         # convex increasing
    ([1.0, 0.7, 0.4, 0.2, 0.0], "high-pass"),
    ([2.0, 0.0, 0.0, 0.0, 2.0], "band-pass"),        # U-shaped: interior minimum at lambda = 1
    ([0.0, 0.0, 3.0, 0.0, 0.0], "band-stop"),        # interior maximum at lambda = 1
    ([0.3, 0.3, 0.3, 0.3, 0.3], "flat"),             # constant
    ([1.0, 1.02, 0.99, 1.01, 1.0], "flat"),          # relative variation < 5 %
    ([0.0, 0.0, 0.0, 0.0, 0.0], "flat"),             # p = 0: R = I
    ([0.02, 0.0, 0.5, 0.75, 1.0], "low-pass"),       # a shallow dip near 0 (< 20 % of the range) is ignored
    ([0.7], "flat"),                                 # K = 0
])
def test_filter_reading_rules(theta, reading):
    assert filter_reading(theta) == reading


def test_filter_reading_mirror_and_tolerances():
    rng = np.random.default_rng(0)
    swap = {"low-pass": "high-pass", "high-pass": "low-pass", "band-pass": "band-pass", "band-stop": "band-stop",
            "flat": "flat"}
    for _ in range(50):  # p(2 - lambda) has the mirrored Bernstein coefficients and the mirrored reading
        theta = rng.random(rng.integers(1, 7))
        assert filter_reading(theta[::-1]) == swap[filter_reading(theta)]
    gentle = [1.0, 1.01, 1.02, 1.03, 1.04]  # relative variation 0.04/1.04 < 0.05
    assert filter_reading(gentle) == "flat"
    assert filter_reading(gentle, flat_tol=0.01) == "low-pass"
    tilted_u = [1.0, 0.0, 0.0, 0.0, 0.4]  # interior minimum, p(2) - min p is 40 % of the range
    assert filter_reading(tilted_u) == "band-pass"
    assert filter_reading(tilted_u, band_tol=0.5) == "high-pass"
    # monomial basis: p = lambda (low-pass), p = (lambda - 1)^2 + 0.1 (band-pass), p = 2 - lambda (high-pass)
    assert filter_reading([0.0, 1.0], basis="monomial") == "low-pass"
    assert filter_reading([1.1, -2.0, 1.0], basis="monomial") == "band-pass"
    assert filter_reading([2.0, -1.0], basis="monomial") == "high-pass"


# ---------------------------------------------------------------------------------------------------
# explain_tikhonov against dense oracles


def test_explanation_curve_response_and_rows_match_dense_oracles(motif_graphs, solver):
    samples = motif_graphs[0]
    s = samples[0]
    n = s.num_nodes
    L = normalized_laplacian(s.edge_index, n)
    rng = np.random.default_rng(1)
    q = rng.uniform(0.1, 3.0, n)
    theta = np.array([0.0, 0.3, 0.1, 0.5, 0.9])  # p(0) = theta_0 = 0: D^{1/2} 1 is a fixed point
    e = explain_tikhonov(theta, q, L, num_points=57, backend=solver)
    assert isinstance(e, Explanation)
    assert e.graph is None
    np.testing.assert_array_equal(e.lam, np.linspace(0.0, 2.0, 57))
    np.testing.assert_allclose(e.p, evaluate_polynomial(theta, e.lam), rtol=0, atol=1e-15)
    assert e.q_median == pytest.approx(np.median(q))
    np.testing.assert_allclose(e.h, e.q_median / (e.p + e.q_median), rtol=1e-15)
    assert np.all((e.h > 0) & (e.h <= 1))
    assert e.h[0] == 1.0  # p(0) = 0
    np.testing.assert_array_equal(e.q, q)
    np.testing.assert_array_equal(e.nodes, np.arange(n))
    np.testing.assert_array_equal(e.edge_index, s.edge_index)  # recovered from L, sorted like PyG
    assert e.reading == filter_reading(theta) == "low-pass"

    Ld = L.toarray()
    R_dense = np.linalg.solve(dense_bernstein(Ld, theta) + np.diag(q), np.diag(q))
    assert np.abs(e.R - R_dense).max() <= 1e-9 * np.abs(R_dense).max()
    ev = np.linalg.eigvals(e.R)
    assert np.abs(ev.imag).max() < 1e-8
    assert ev.real.min() > 0
    assert ev.real.max() <= 1 + 1e-9
    assert ev.real.max() == pytest.approx(1.0, abs=1e-9)  # the kernel of p(L) is the kernel of L
    deg = np.bincount(s.edge_index[0], minlength=n).astype(float)
    np.testing.assert_allclose(e.R @ np.sqrt(deg), np.sqrt(deg), rtol=1e-9)  # R D^{1/2} 1 = D^{1/2} 1
    np.testing.assert_allclose(e.laplacian_eigenvalues, np.linalg.eigvalsh(Ld), atol=1e-12)


def test_rows_of_a_strictly_positive_p_contract_and_row_size_limit(motif_graphs):
    s = motif_graphs[0][1]
    L = normalized_laplacian(s.edge_index, s.num_nodes)
    q = np.full(s.num_nodes, 0.5)
    theta = [0.2, 0.2, 0.2, 0.2, 0.2]  # p = 0.2 everywhere: R = q / (0.2 + q) I exactly
    e = explain_tikhonov(theta, q, L)
    assert e.reading == "flat"
    np.testing.assert_allclose(e.R, np.eye(s.num_nodes) * 0.5 / 0.7, atol=1e-12)
    assert explain_tikhonov(theta, q, L, max_nodes_for_rows=s.num_nodes - 1).R is None
    assert explain_tikhonov(theta, q, L, rows=False).R is None
    assert explain_tikhonov(theta, q, L, rows=False).laplacian_eigenvalues is None
    assert explain_tikhonov(theta, q, L, max_nodes_for_rows=s.num_nodes).R is not None


def test_graph_of_a_batch_equals_that_graph_alone(motif_graphs):
    samples, _, edge_index, batch, _ = motif_graphs
    L = normalized_laplacian(edge_index, batch.size)
    q = np.random.default_rng(2).uniform(0.05, 2.0, batch.size)
    theta = [1.0, 0.2, 0.0, 0.3, 0.8]
    full = explain_tikhonov(theta, q, L, batch=batch, max_nodes_for_rows=batch.size)
    for g, s in enumerate(samples):
        sel = batch == g
        alone = explain_tikhonov(theta, q[sel], normalized_laplacian(s.edge_index, s.num_nodes))
        part = explain_tikhonov(theta, q, L, batch=batch, graph=g)
        assert part.graph == g
        np.testing.assert_array_equal(part.nodes, np.flatnonzero(sel))
        np.testing.assert_array_equal(part.q, alone.q)
        np.testing.assert_array_equal(part.edge_index, s.edge_index)
        assert part.q_median == alone.q_median
        assert part.reading == alone.reading
        np.testing.assert_allclose(part.h, alone.h, rtol=1e-15)
        assert np.abs(part.R - alone.R).max() < 1e-12
        assert np.abs(full.R[np.ix_(sel, sel)] - alone.R).max() < 1e-9  # the batch's R is block diagonal
        assert np.abs(full.R[np.ix_(sel, ~sel)]).max() == 0.0
    assert explain_tikhonov(theta, q[:25], normalized_laplacian(samples[0].edge_index, 25), graph=0).graph == 0


def test_explanation_accepts_torch_and_monomial_and_summarises():
    torch = pytest.importorskip("torch")
    ei = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    L = normalized_laplacian(ei, 4)
    e = explain_tikhonov(torch.tensor([0.0, 1.0]), torch.ones(4), L, basis="monomial")  # p = lambda
    assert e.reading == "low-pass"
    assert e.basis == "monomial"
    np.testing.assert_allclose(e.p, e.lam, atol=1e-15)
    R = np.linalg.solve(L.toarray() + np.eye(4), np.eye(4))
    np.testing.assert_allclose(e.R, R, atol=1e-12)
    assert e.top_nodes(2).shape == (2,)
    text = repr(e)
    for part in ("low-pass", "num_nodes=4", "R=<4x4>"):
        assert part in text


# ---------------------------------------------------------------------------------------------------
# TikhonovGNN.explain


def test_model_explain_matches_its_parts_and_slices_batches(motif_graphs):
    torch = pytest.importorskip("torch")
    samples, x, edge_index, batch, _ = motif_graphs
    from fastnips.graph import TikhonovGNN

    torch.manual_seed(0)
    model = TikhonovGNN(x.shape[1], 8, 2, K=3, init="lowpass").double()
    X, E, B = torch.tensor(x, dtype=torch.float64), torch.tensor(edge_index), torch.tensor(batch)
    model(X, E, B)
    before = model.last_q.clone()
    e = model.explain(X, E, B)
    assert torch.equal(model.last_q, before)  # explain leaves the forward's state alone
    src, dst = E
    with torch.no_grad():
        q = model.node_weights(X, src, dst, batch=B).numpy()
    np.testing.assert_allclose(e.q, q, rtol=1e-15)
    theta = model.prop.coefficients().detach().numpy()
    np.testing.assert_allclose(e.coeffs, theta, rtol=1e-15)
    np.testing.assert_allclose(e.p, evaluate_polynomial(theta, e.lam), atol=1e-15)
    assert e.reading == "low-pass"  # init="lowpass": theta_k proportional to k + 1
    assert e.R.shape == (75, 75)  # the whole batch: 75 <= max_nodes_for_rows
    assert model.explain(X, E, B, max_nodes_for_rows=74).R is None

    for g in (0, 2):
        s = samples[g]
        part = model.explain(X, E, B, graph=g)
        alone = model.explain(s)  # a GraphSample: numpy x and edge_index, converted
        np.testing.assert_allclose(part.q, alone.q, rtol=1e-12)
        assert np.abs(part.R - alone.R).max() < 1e-10
        np.testing.assert_array_equal(part.edge_index, alone.edge_index)
        np.testing.assert_array_equal(part.nodes, np.flatnonzero(batch == g))

    flat = TikhonovGNN(x.shape[1], 4, 2)  # the default init="uniform": p constant
    assert flat.explain(x, edge_index, batch).reading == "flat"  # numpy x, float32 model


# ---------------------------------------------------------------------------------------------------
# explanation_auroc


def brute_auroc(q, y):
    pos, neg = q[y], q[~y]
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in product(pos, neg))
    return wins / (pos.size * neg.size)


def test_auroc_equals_pairwise_count_with_ties():
    rng = np.random.default_rng(3)
    for trial in range(30):
        n = int(rng.integers(2, 40))
        q = rng.integers(0, 4, n).astype(float) if trial % 2 else rng.standard_normal(n)  # many ties / none
        y = rng.random(n) < 0.3
        y[0], y[-1] = True, False
        assert explanation_auroc(q, y) == pytest.approx(brute_auroc(q, y), abs=1e-12)
    assert explanation_auroc([3.0, 2.0, 1.0, 0.0], [1, 1, 0, 0]) == 1.0
    assert explanation_auroc([0.0, 1.0, 2.0, 3.0], [1, 1, 0, 0]) == 0.0
    assert explanation_auroc([1.0, 1.0, 1.0], [True, False, False]) == 0.5
    assert explanation_auroc([0.9, 0.1, 0.5, 0.5], [True, False, True, False]) == 0.875


def test_auroc_per_graph_is_the_mean_over_graphs_with_both_classes():
    rng = np.random.default_rng(4)
    q = rng.standard_normal(30)
    y = rng.random(30) < 0.4
    batch = np.repeat([0, 1, 2], 10)
    y[20:] = False  # graph 2 has no positive node: skipped
    y[0], y[1], y[10], y[11] = True, False, True, False
    want = np.mean([brute_auroc(q[batch == g], y[batch == g]) for g in (0, 1)])
    assert explanation_auroc(q, y, batch=batch) == pytest.approx(want, abs=1e-12)
    # pooled and per-graph differ when graphs have different q scales
    q2 = q + 10.0 * batch
    assert explanation_auroc(q2, y, batch=batch) == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------------------------------------------
# plotting


@pytest.fixture
def mpl():
    mpl = pytest.importorskip("matplotlib")
    yield mpl
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="module")
def small_explanation(motif_graphs):
    _, _, edge_index, batch, _ = motif_graphs
    L = normalized_laplacian(edge_index, batch.size)
    q = np.where(motif_graphs[4], 2.0, 0.3)
    return explain_tikhonov([1.0, 0.1, 0.0, 0.1, 1.0], q, L, batch=batch, graph=1)


def test_plot_explanation_writes_files_and_returns_a_figure(mpl, tmp_path, small_explanation, motif_graphs):
    from matplotlib.figure import Figure

    mask = motif_graphs[4]  # over the whole batch: restricted to graph 1's nodes
    png = tmp_path / "expl.png"
    fig = plot_explanation(small_explanation, path=png, motif_mask=mask)
    assert isinstance(fig, Figure)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000
    graph_ax, curve_ax = fig.axes[:2]  # then the colorbar and the twin axis of h
    assert "band-pass" in curve_ax.get_title()
    assert any(c.get_array() is not None and c.get_array().size == 25 for c in graph_ax.collections)
    np.testing.assert_allclose(curve_ax.lines[0].get_ydata(), small_explanation.p)
    for ext, magic in ((".svg", b"<?xml"), (".pdf", b"%PDF-")):
        out = tmp_path / f"expl{ext}"
        plot_explanation(small_explanation, small_explanation.edge_index, path=str(out), layout="kamada_kawai")
        assert out.read_bytes()[:5] == magic
    import matplotlib.pyplot as plt

    pair = plt.subplots(1, 2)[1]
    pos = np.random.default_rng(0).random((25, 2))
    assert plot_explanation(small_explanation, ax=pair, layout=pos) is pair[0].figure


def test_plot_kamada_kawai_falls_back_without_networkx(mpl, monkeypatch, small_explanation):
    monkeypatch.setattr(_optional, "_try_import",
                        lambda name: None if name == "networkx" else __import__(name))
    with pytest.warns(UserWarning, match="networkx"):
        plot_explanation(small_explanation, layout="kamada_kawai")


def test_spring_layout_is_seeded_and_bounded():
    ei = np.array([[0, 1, 1, 2, 2, 3, 3, 0], [1, 0, 2, 1, 3, 2, 0, 3]])
    a = spring_layout(ei, 5, seed=1)
    assert a.shape == (5, 2)
    assert np.all(np.isfinite(a))
    assert np.abs(a).max() == pytest.approx(1.0)
    np.testing.assert_array_equal(a, spring_layout(ei, 5, seed=1))
    d = np.linalg.norm(a[:, None] - a[None], axis=-1)
    assert d[0, 1] < d[0, 4] or d[2, 3] < d[2, 4]  # the isolated node 4 is pushed away from the cycle
    assert spring_layout(np.zeros((2, 0), dtype=int), 1).shape == (1, 2)


def test_import_does_not_load_torch_or_matplotlib():
    code = "import fastnips.graph, sys; print('torch' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


# ---------------------------------------------------------------------------------------------------
# bad input


def test_bad_input_raises_clear_errors(motif_graphs, small_explanation, tmp_path):
    _, _, edge_index, batch, _ = motif_graphs
    L = normalized_laplacian(edge_index, batch.size)
    q = np.ones(batch.size)
    th = [0.0, 0.5, 1.0]
    cases = [
        (dict(coeffs=[0.5, -0.1, 1.0]), ValueError, "Bernstein coefficients must be >= 0"),
        (dict(coeffs=[1.0, -3.0, 1.0], basis="monomial"), ValueError, "negative on"),
        (dict(coeffs=[np.nan, 1.0]), ValueError, "NaN"),
        (dict(basis="chebyshev"), ValueError, "basis must be one of"),
        (dict(q=np.zeros(batch.size)), ValueError, "q must be > 0"),
        (dict(q=np.ones(3)), ValueError, "q must have shape"),
        (dict(q=np.full(batch.size, np.nan)), ValueError, "NaN"),
        (dict(L=np.ones((3, 4))), ValueError, "square"),
        (dict(batch=batch[:-1]), ValueError, "one graph id per node"),
        (dict(batch=np.zeros(batch.size, dtype=float)), TypeError, "integer"),
        (dict(batch=np.where(np.arange(batch.size) < 30, 0, 1)), ValueError, "joins graph"),
        (dict(batch=batch, graph=3), ValueError, r"graph must lie in \[0, 3\)"),
        (dict(graph=1), ValueError, "no batch vector"),
        (dict(batch=batch, graph=1.0), TypeError, "graph must be an int"),
        (dict(rows=1), TypeError, "rows must be a bool"),
        (dict(max_nodes_for_rows=-1), ValueError, "max_nodes_for_rows"),
        (dict(num_points=1), ValueError, "num_points"),
        (dict(flat_tol=1.5), ValueError, "flat_tol"),
    ]
    for kw, exc, msg in cases:
        args = dict(coeffs=th, q=q, L=L) | kw
        with pytest.raises(exc, match=msg):
            explain_tikhonov(args.pop("coeffs"), args.pop("q"), args.pop("L"), **args)
    gap = np.where(batch == 1, 2, batch)  # graph id 1 holds no node
    with pytest.raises(ValueError, match="graph 1 has no nodes"):
        explain_tikhonov(th, q, L, batch=gap, graph=1)

    with pytest.raises(ValueError, match="shape of q"):
        explanation_auroc(np.ones(4), np.ones(5, dtype=bool))
    with pytest.raises(ValueError, match="both"):
        explanation_auroc(np.arange(4.0), np.ones(4, dtype=bool))
    with pytest.raises(ValueError, match="NaN"):
        explanation_auroc([np.nan, 1.0], [True, False])
    with pytest.raises(ValueError, match="0/1"):
        explanation_auroc([0.0, 1.0], [2, 0])
    with pytest.raises(ValueError, match="1-D"):
        explanation_auroc(np.ones((2, 2)), np.ones((2, 2), dtype=bool))
    with pytest.raises(TypeError, match="motif_mask"):
        explanation_auroc([0.0, 1.0], ["a", "b"])
    with pytest.raises(ValueError, match="none has both"):
        explanation_auroc([0.0, 1.0, 2.0], [True, True, False], batch=[0, 0, 1])
    with pytest.raises(ValueError, match="flat_tol"):
        filter_reading([1.0, 2.0], flat_tol=-0.1)

    # plot errors that need no matplotlib (checked before it is imported)
    with pytest.raises(TypeError, match="must be an Explanation"):
        plot_explanation({"q": q})
    with pytest.raises(ValueError, match="extension"):
        plot_explanation(small_explanation, path=tmp_path / "x.jpg")
    with pytest.raises(ValueError, match="node id outside"):
        plot_explanation(small_explanation, edge_index)  # batch ids, not the explanation's local ids
    with pytest.raises(ValueError, match="layout must be one of"):
        plot_explanation(small_explanation, layout="circular")
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        plot_explanation(small_explanation, layout=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="motif_mask must have shape"):
        plot_explanation(small_explanation, motif_mask=np.ones(4, dtype=bool))
    with pytest.raises(ValueError, match="k must be"):
        small_explanation.top_nodes(-1)


def test_model_explain_bad_input(motif_graphs):
    torch = pytest.importorskip("torch")
    from fastnips.graph import TikhonovGNN

    _, x, edge_index, batch, _ = motif_graphs
    model = TikhonovGNN(x.shape[1], 4, 2)
    X, E, B = torch.tensor(x), torch.tensor(edge_index), torch.tensor(batch)
    with pytest.raises(ValueError, match="graph must lie in"):
        model.explain(X, E, B, graph=5)
    with pytest.raises(ValueError, match="edge_index is required"):
        model.explain(X)
    with pytest.raises(ValueError, match="in_channels"):
        model.explain(X[:, :3], E, B)
    with pytest.raises(ValueError, match="one graph id per node"):
        model.explain(X, E, B[:-1])
    with pytest.raises(TypeError, match="floating-point"):
        model.explain(X.long(), E, B)
