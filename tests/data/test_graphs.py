"""fastnips.data.graphs: offline graph datasets (BA-motifs, contextual SBM, digits grid graphs) and collate."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fastnips.data.graphs import (
    MOTIF_LABELS,
    GraphSample,
    ba_motifs,
    barabasi_albert_edges,
    collate,
    contextual_sbm,
    digits_grid_graphs,
    edge_homophily,
)

# ---------------------------------------------------------------------------------------------------
# helpers


def assert_valid_edge_index(edge_index: np.ndarray, n: int) -> None:
    """int64 (2, 2E), in range, symmetric, no self loops, no duplicates, sorted by (src, dst)."""
    assert edge_index.dtype == np.int64
    assert edge_index.ndim == 2
    assert edge_index.shape[0] == 2
    assert edge_index.shape[1] % 2 == 0
    src, dst = edge_index
    assert src.min(initial=0) >= 0
    assert max(src.max(initial=0), dst.max(initial=0)) < n
    assert not np.any(src == dst), "self loop"
    keys = src * n + dst
    assert np.unique(keys).size == keys.size, "duplicate edge"
    assert np.all(np.diff(keys) > 0), "not sorted by (src, dst)"
    assert np.array_equal(np.sort(keys), np.sort(dst * n + src)), "not symmetric"


def undirected_set(edge_index: np.ndarray) -> set[tuple[int, int]]:
    return {(int(u), int(v)) for u, v in edge_index.T if u < v}


def is_connected(edge_index: np.ndarray, n: int) -> bool:
    adj = [[] for _ in range(n)]
    for u, v in edge_index.T:
        adj[u].append(int(v))
    seen, stack = {0}, [0]
    while stack:
        for w in adj[stack.pop()]:
            if w not in seen:
                seen.add(w)
                stack.append(w)
    return len(seen) == n


def induced_motif(sample: GraphSample) -> str | None:
    """Name of the motif induced on the masked nodes ('house', 'cycle5') or None."""
    nodes = np.flatnonzero(sample.motif_mask)
    if nodes.size != 5:
        return None
    inside = np.isin(sample.edge_index[0], nodes) & np.isin(sample.edge_index[1], nodes)
    sub = sample.edge_index[:, inside]
    deg = np.sort(np.bincount(sub[0], minlength=sample.num_nodes)[nodes])
    ne = sub.shape[1] // 2
    # 5-cycle: 5 edges, all degree 2 (2-regular on 5 nodes = C5, since the only 2-regular graphs on 5
    # nodes are C5). House: 6 edges, degrees (2, 2, 2, 3, 3), the two degree-3 nodes adjacent and the
    # roof (the degree-2 node adjacent to both) present; with 6 edges on 5 nodes and these degrees the
    # only other graph is K_{2,3}, whose degree-3 nodes are not adjacent.
    if ne == 5 and np.all(deg == 2) and is_connected_sub(sub, nodes):
        return "cycle5"
    if ne == 6 and list(deg) == [2, 2, 2, 3, 3]:
        d = np.bincount(sub[0], minlength=sample.num_nodes)
        a, b = [int(v) for v in nodes if d[v] == 3]
        edges = undirected_set(sub)
        if (min(a, b), max(a, b)) in edges:
            return "house"
    return None


def is_connected_sub(sub: np.ndarray, nodes: np.ndarray) -> bool:
    remap = {int(v): i for i, v in enumerate(nodes)}
    local = np.vectorize(remap.__getitem__)(sub) if sub.size else sub
    return is_connected(local, nodes.size)


# ---------------------------------------------------------------------------------------------------
# Barabási–Albert


@pytest.mark.parametrize("m", [1, 2, 3])
def test_barabasi_albert_basic(m):
    n = 200
    edges = barabasi_albert_edges(n, m, seed=1)
    assert edges.dtype == np.int64
    assert edges.shape == (m * (n - m), 2)
    assert np.all(edges[:, 0] < edges[:, 1])
    keys = edges[:, 0] * n + edges[:, 1]
    assert np.unique(keys).size == keys.size
    ei = np.concatenate([edges.T, edges.T[::-1]], axis=1)
    assert is_connected(ei, n)
    deg = np.bincount(ei[0], minlength=n)
    assert deg.min() >= m  # every node gets at least m edges


def test_barabasi_albert_degree_distribution():
    """Preferential attachment: hubs grow like sqrt(n) (m=1), far above the mean degree ~2."""
    max_deg = []
    for n in (100, 1000, 10000):
        runs = [np.bincount(barabasi_albert_edges(n, 1, seed=s).ravel(), minlength=n).max() for s in range(3)]
        max_deg.append(np.median(runs))
    assert max_deg[0] < max_deg[1] < max_deg[2]
    assert max_deg[2] > 40  # ~ sqrt(10^4) = 100 in expectation; a uniform random tree would give ~10
    deg = np.bincount(barabasi_albert_edges(10000, 2, seed=0).ravel())
    assert abs(deg.mean() - 4) < 0.01
    assert np.mean(deg <= 3) > 0.5  # heavy tail: most nodes keep a small degree


def test_barabasi_albert_errors():
    with pytest.raises(ValueError, match="num_nodes"):
        barabasi_albert_edges(2, 2)
    with pytest.raises(ValueError, match="m must be >= 1"):
        barabasi_albert_edges(10, 0)
    with pytest.raises(TypeError, match="integer"):
        barabasi_albert_edges(10.0, 1)


# ---------------------------------------------------------------------------------------------------
# ba_motifs


@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("permute", [False, True])
def test_ba_motifs_structure(m, permute):
    data = ba_motifs(60, base_nodes=20, m=m, permute_nodes=permute, seed=3)
    assert len(data) == 60
    for s in data:
        n = 25
        assert isinstance(s, GraphSample)
        assert s.num_nodes == n
        assert s.x.dtype == np.float32
        assert s.x.shape == (n, 10)
        assert np.all(s.x == 1.0)
        assert isinstance(s.y, int)
        assert s.y in (0, 1)
        assert s.motif_mask.dtype == np.bool_
        assert s.motif_mask.shape == (n,)
        assert s.motif_mask.sum() == 5
        assert_valid_edge_index(s.edge_index, n)
        base_edges = m * (20 - m)
        assert s.num_edges == 2 * (base_edges + (6 if s.y == 0 else 5) + 1)
        assert is_connected(s.edge_index, n)
        # the motif is an induced house / 5-cycle matching the label
        assert induced_motif(s) == ("house" if s.y == MOTIF_LABELS["house"] else "cycle5")
        # the motif is joined to the base by exactly one edge; the base alone is connected
        mask = s.motif_mask
        crossing = mask[s.edge_index[0]] & ~mask[s.edge_index[1]]
        assert crossing.sum() == 1
        base = np.flatnonzero(~mask)
        keep = ~mask[s.edge_index[0]] & ~mask[s.edge_index[1]]
        remap = np.full(n, -1)
        remap[base] = np.arange(base.size)
        assert is_connected(remap[s.edge_index[:, keep]], base.size)
    if not permute:
        assert all(np.array_equal(s.motif_mask, np.arange(25) >= 20) for s in data)
    else:
        assert any(not np.array_equal(s.motif_mask, np.arange(25) >= 20) for s in data)


@pytest.mark.parametrize("num_graphs", [1, 2, 101, 1000])
def test_ba_motifs_labels_balanced(num_graphs):
    y = np.array([s.y for s in ba_motifs(num_graphs, base_nodes=8, seed=num_graphs)])
    assert abs(y.sum() - num_graphs / 2) <= max(0.05 * num_graphs, 0.5)
    if num_graphs >= 101:
        assert not np.array_equal(y, np.sort(y))  # shuffled, not sorted by class


@pytest.mark.parametrize("motif", ["house", "cycle5"])
def test_ba_motifs_single_motif(motif):
    data = ba_motifs(10, base_nodes=10, motif=motif, seed=0)
    assert {s.y for s in data} == {MOTIF_LABELS[motif]}
    assert all(induced_motif(s) == motif for s in data)


def test_ba_motifs_degree_features():
    data = ba_motifs(20, features="degree", feature_dim=4, seed=2)
    for s in data:
        assert s.x.shape == (25, 4)
        assert s.x.dtype == np.float32
        assert np.all(s.x.sum(axis=1) == 1.0)
        deg = np.bincount(s.edge_index[0], minlength=25)
        assert np.array_equal(np.argmax(s.x, axis=1), np.minimum(deg, 3))


def test_ba_motifs_determinism():
    a, b, c = ba_motifs(30, seed=7), ba_motifs(30, seed=7), ba_motifs(30, seed=8)
    for s, t in zip(a, b):
        assert np.array_equal(s.edge_index, t.edge_index)
        assert s.y == t.y
        assert np.array_equal(s.x, t.x)
        assert np.array_equal(s.motif_mask, t.motif_mask)
    assert any(s.edge_index.shape != t.edge_index.shape or not np.array_equal(s.edge_index, t.edge_index)
               or s.y != t.y for s, t in zip(a, c))


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"num_graphs": 0}, ValueError, "num_graphs must be >= 1"),
    ({"num_graphs": -3}, ValueError, "num_graphs"),
    ({"num_graphs": 2.5}, TypeError, "num_graphs must be an integer"),
    ({"num_graphs": True}, TypeError, "num_graphs must be an integer"),
    ({"motif": "triangle"}, ValueError, "motif must be"),
    ({"features": "random"}, ValueError, "features must be"),
    ({"base_nodes": 1}, ValueError, "base_nodes"),
    ({"m": 2, "base_nodes": 2}, ValueError, "base_nodes"),
    ({"m": 0}, ValueError, "m must be >= 1"),
    ({"feature_dim": 0}, ValueError, "feature_dim"),
])
def test_ba_motifs_errors(kwargs, exc, match):
    kwargs = {"num_graphs": 4, **kwargs}
    with pytest.raises(exc, match=match):
        ba_motifs(**kwargs)


# ---------------------------------------------------------------------------------------------------
# collate


def test_collate_offsets():
    data = ba_motifs(5, base_nodes=6, seed=0) + ba_motifs(3, base_nodes=11, seed=1)
    x, edge_index, batch, y, mask = collate(data, return_motif_mask=True)
    sizes = [s.num_nodes for s in data]
    N = sum(sizes)
    assert x.shape == (N, 10)
    assert x.dtype == np.float32
    assert batch.dtype == np.int64
    assert y.dtype == np.int64
    assert edge_index.dtype == np.int64
    assert np.array_equal(batch, np.repeat(np.arange(8), sizes))
    assert np.array_equal(y, [s.y for s in data])
    assert mask.dtype == np.bool_
    assert mask.sum() == 5 * 8
    start = 0
    col = 0
    for i, s in enumerate(data):
        block = edge_index[:, col:col + s.num_edges]
        assert np.array_equal(block, s.edge_index + start)
        assert np.all(batch[block] == i)  # no edge crosses graphs
        assert np.array_equal(mask[start:start + s.num_nodes], s.motif_mask)
        start += s.num_nodes
        col += s.num_edges
    assert col == edge_index.shape[1]


def test_collate_node_level_and_errors():
    g = contextual_sbm(50, avg_degree=4, feature_dim=10, seed=0)
    _x, _, batch, y = collate([g, g])
    assert y.shape == (100,)
    assert np.array_equal(y[:50], g.y)
    assert np.array_equal(batch, np.repeat([0, 1], 50))
    with pytest.raises(ValueError, match="empty"):
        collate([])
    with pytest.raises(ValueError, match="mix"):
        collate([g, ba_motifs(1)[0]])
    with pytest.raises(ValueError, match="feature dimension"):
        collate([ba_motifs(1, feature_dim=3)[0], ba_motifs(1, feature_dim=4)[0]])
    with pytest.raises(TypeError, match="not a GraphSample"):
        collate([(1, 2)])
    with pytest.raises(ValueError, match="no motif_mask"):
        collate([g], return_motif_mask=True)


# ---------------------------------------------------------------------------------------------------
# contextual SBM


@pytest.mark.parametrize("h", [0.0, 0.1, 0.5, 0.8, 1.0])
def test_contextual_sbm_homophily(h):
    g = contextual_sbm(2000, homophily=h, avg_degree=10, seed=int(10 * h))
    assert abs(edge_homophily(g.edge_index, g.y) - h) <= 0.03
    assert g.num_edges == 2 * 10000
    assert_valid_edge_index(g.edge_index, 2000)


def test_contextual_sbm_shapes_and_masks():
    g = contextual_sbm(1001, homophily=0.7, avg_degree=6, feature_dim=8, seed=5)
    assert g.x.shape == (1001, 8)
    assert g.x.dtype == np.float32
    assert g.y.dtype == np.int64
    assert g.y.shape == (1001,)
    assert np.bincount(g.y).tolist() == [500, 501]
    assert g.motif_mask is None
    masks = np.stack([g.train_mask, g.val_mask, g.test_mask])
    assert masks.dtype == np.bool_
    assert np.all(masks.sum(axis=0) == 1)
    assert abs(g.train_mask.mean() - 0.6) < 0.01
    assert abs(g.val_mask.mean() - 0.2) < 0.01
    for m in masks:  # stratified
        assert abs(g.y[m].mean() - 0.5) < 0.02
    assert abs(2 * g.num_edges / 2 / 1001 - 6) < 0.01


def test_contextual_sbm_features_carry_snr():
    g = contextual_sbm(4000, feature_dim=16, feature_snr=3.0, seed=1)
    diff = g.x[g.y == 1].mean(axis=0) - g.x[g.y == 0].mean(axis=0)
    assert abs(np.linalg.norm(diff) - 3.0) < 0.3
    noise = g.x - np.where(g.y[:, None] == 1, g.x[g.y == 1].mean(0), g.x[g.y == 0].mean(0))
    assert abs(noise.std() - 1.0) < 0.05
    g0 = contextual_sbm(4000, feature_dim=16, feature_snr=0.0, seed=1)
    assert np.linalg.norm(g0.x[g0.y == 1].mean(0) - g0.x[g0.y == 0].mean(0)) < 0.3


def test_contextual_sbm_determinism():
    a, b = contextual_sbm(300, seed=4), contextual_sbm(300, seed=4)
    c = contextual_sbm(300, seed=5)
    for f in ("edge_index", "x", "y", "train_mask", "val_mask", "test_mask"):
        assert np.array_equal(getattr(a, f), getattr(b, f))
    assert not np.array_equal(a.y, c.y)


def test_contextual_sbm_dense_path():
    """Near-complete graphs take the enumerate-and-choose path; still exact and valid."""
    g = contextual_sbm(40, homophily=1.0, avg_degree=18, seed=0)  # 360 of 380 intra pairs
    assert edge_homophily(g.edge_index, g.y) == 1.0
    assert g.num_edges == 720
    assert_valid_edge_index(g.edge_index, 40)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"homophily": 1.2}, "homophily must lie in"),
    ({"homophily": -0.1}, "homophily must lie in"),
    ({"homophily": float("nan")}, "homophily must be a finite"),
    ({"avg_degree": 0}, "avg_degree must be > 0"),
    ({"avg_degree": 150, "homophily": 1.0}, "pairs exist"),
    ({"n": 3}, "n must be >= 4"),
    ({"feature_snr": -1.0}, "feature_snr"),
    ({"split": (0.5, 0.5, 0.5)}, "split"),
    ({"split": (0.5, 0.5)}, "split"),
])
def test_contextual_sbm_errors(kwargs, match):
    kwargs = {"n": 200, **kwargs}
    with pytest.raises(ValueError, match=match):
        contextual_sbm(**kwargs)


def test_edge_homophily():
    ei = np.array([[0, 1, 1, 2], [1, 0, 2, 1]])
    assert edge_homophily(ei, [0, 0, 1]) == 0.5
    assert np.isnan(edge_homophily(np.zeros((2, 0), dtype=np.int64), [0]))
    with pytest.raises(ValueError, match="shape"):
        edge_homophily(np.zeros((3, 2), dtype=np.int64), [0, 1])


# ---------------------------------------------------------------------------------------------------
# digits grid graphs (optional scikit-learn)


@pytest.mark.parametrize(("connectivity", "n_edges"), [(4, 112), (8, 210)])
def test_digits_grid_graphs(connectivity, n_edges):
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    data = digits_grid_graphs(connectivity=connectivity)
    digits = sklearn_datasets.load_digits()
    assert len(data) == 1797
    s = data[11]
    assert s.x.shape == (64, 1)
    assert s.x.dtype == np.float32
    assert s.num_edges == 2 * n_edges
    assert np.allclose(s.x[:, 0], digits.images[11].ravel() / 16.0)
    assert s.y == int(digits.target[11])
    assert s.motif_mask is None
    assert_valid_edge_index(s.edge_index, 64)
    deg = np.bincount(s.edge_index[0], minlength=64).reshape(8, 8)
    assert deg[0, 0] == (2 if connectivity == 4 else 3)
    assert deg[3, 3] == connectivity
    if connectivity == 4:  # neighbours differ by one step in row or column
        r, c = np.divmod(s.edge_index, 8)
        assert np.all(np.abs(r[0] - r[1]) + np.abs(c[0] - c[1]) == 1)
    assert sorted({t.y for t in data}) == list(range(10))


def test_digits_grid_graphs_options():
    pytest.importorskip("sklearn")
    data = digits_grid_graphs(coordinates=True, n_class=3, num_graphs=50, shuffle=True, seed=1)
    assert len(data) == 50
    assert {s.y for s in data} <= {0, 1, 2}
    x = data[0].x
    assert x.shape == (64, 3)
    assert x[9, 1] == pytest.approx(1 / 7)
    assert x[9, 2] == pytest.approx(1 / 7)
    again = digits_grid_graphs(coordinates=True, n_class=3, num_graphs=50, shuffle=True, seed=1)
    assert [s.y for s in data] == [s.y for s in again]
    x, _, _batch, y = collate(data)
    assert x.shape == (50 * 64, 3)
    assert y.shape == (50,)


def test_digits_grid_graphs_errors():
    with pytest.raises(ValueError, match="connectivity"):
        digits_grid_graphs(connectivity=6)
    with pytest.raises(ValueError, match="n_class"):
        digits_grid_graphs(n_class=11)
    with pytest.raises(ValueError, match="num_graphs"):
        digits_grid_graphs(num_graphs=0)


def test_digits_without_sklearn_raises_import_error():
    """With scikit-learn hidden, the loader raises the optional-dependency ImportError."""
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "from fastnips.data.graphs import digits_grid_graphs\n"
            "try:\n    digits_grid_graphs()\nexcept ImportError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("ERR")
    assert "sklearn" in out


def test_induced_motif_checker_rejects_non_motifs():
    """The helper above must tell house, cycle and look-alikes apart, or the motif tests prove nothing."""
    def sample(pairs, n=5):
        pairs = np.asarray(pairs)
        ei = np.concatenate([pairs.T, pairs.T[::-1]], axis=1)
        return GraphSample(edge_index=ei, x=np.ones((n, 1), np.float32), y=0, motif_mask=np.ones(n, bool))

    assert induced_motif(sample([[0, 1], [1, 2], [2, 3], [3, 0], [0, 4], [1, 4]])) == "house"
    assert induced_motif(sample([[0, 1], [1, 2], [2, 3], [3, 4], [4, 0]])) == "cycle5"
    assert induced_motif(sample([[0, 2], [0, 3], [0, 4], [1, 2], [1, 3], [1, 4]])) is None  # K_{2,3}
    assert induced_motif(sample([[0, 1], [1, 2], [2, 0], [3, 4]])) is None  # triangle + edge
    assert induced_motif(sample([[0, 1], [1, 2], [2, 3], [3, 4]])) is None  # path


def test_erdos_renyi_and_undirected_edge_index():
    from fastnips.data.graphs import erdos_renyi_edges, undirected_edge_index

    ei = undirected_edge_index([(0, 1), (1, 2)])
    assert ei.tolist() == [[0, 1, 1, 2], [1, 2, 0, 1]]
    assert ei.dtype == np.int64
    full = erdos_renyi_edges(6, 1.0, seed=3)
    assert full.shape == (2, 30)  # every pair, both directions
    assert undirected_set(full) == {(i, j) for i in range(6) for j in range(i + 1, 6)}
    assert erdos_renyi_edges(6, 0.0).shape == (2, 0)
    a, b = erdos_renyi_edges(40, 0.2, seed=1), erdos_renyi_edges(40, 0.2, seed=1)
    np.testing.assert_array_equal(a, b)
    m = a.shape[1] // 2
    assert 0.1 < m / (40 * 39 / 2) < 0.3
    np.testing.assert_array_equal(a[:, m:], a[::-1, :m])  # the pairs, then their reverses
    with pytest.raises(ValueError, match=r"p must lie in \[0.0, 1.0\]"):
        erdos_renyi_edges(5, 1.5)
    with pytest.raises(ValueError, match="num_nodes"):
        erdos_renyi_edges(-1, 0.5)
