"""Offline graph datasets: generators and local loaders that never touch the network.

Everything here returns :class:`GraphSample` objects holding plain numpy arrays in PyG conventions
(``edge_index`` of shape ``(2, 2E)`` with every undirected edge stored in both directions, sorted by
source then target, no self loops, no duplicates). :func:`collate` batches a list of samples the way
``torch_geometric.data.Batch`` does (block-diagonal, node offsets added to ``edge_index``, a ``batch``
vector mapping nodes to graphs).

Datasets
--------
:func:`ba_motifs`
    BA-2motifs-style graph classification: a Barabási–Albert base graph plus a house or 5-cycle motif
    attached by one edge; the label is the motif type and ``motif_mask`` marks the ground-truth
    important nodes (for explanation AUROC).
:func:`contextual_sbm`
    A two-block contextual stochastic block model for node classification with an exact
    edge-homophily knob and Gaussian class-dependent features.
:func:`digits_grid_graphs`
    scikit-learn's 8×8 digits as 64-node grid graphs (needs the optional package scikit-learn, which
    ships the images; nothing is downloaded).

The sample type and :func:`collate` live in :mod:`fastnips.data.graph_sample`; the random graph
generators and edge-index helpers (:func:`barabasi_albert_edges`, :func:`erdos_renyi_edges`,
:func:`edge_homophily`, :func:`undirected_edge_index`) in :mod:`fastnips.data.random_graphs`; both are
re-exported here.

Only numpy is imported at module level; scikit-learn is imported on first use of
:func:`digits_grid_graphs`.
"""

from __future__ import annotations

import numpy as np

from .graph_sample import GraphSample, collate
from .random_graphs import (
    _check_int,
    _check_real,
    _to_edge_index,
    barabasi_albert_edges,
    edge_homophily,
    erdos_renyi_edges,
    undirected_edge_index,
)

__all__ = [
    "MOTIF_LABELS",
    "GraphSample",
    "ba_motifs",
    "barabasi_albert_edges",
    "collate",
    "contextual_sbm",
    "digits_grid_graphs",
    "edge_homophily",
    "erdos_renyi_edges",
    "undirected_edge_index",
]

#: Class label of each motif in :func:`ba_motifs` (the BA-2motifs convention: house 0, cycle 1).
MOTIF_LABELS = {"house": 0, "cycle5": 1}

# Undirected edges of the motifs on local node ids 0..4.
_HOUSE_EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 4], [1, 4]], dtype=np.int64)  # square + roof
_CYCLE5_EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 0]], dtype=np.int64)
_MOTIF_EDGES = {"house": _HOUSE_EDGES, "cycle5": _CYCLE5_EDGES}
_MOTIF_SIZE = 5


# ---------------------------------------------------------------------------------------------------
# BA-motifs


def _node_features(kind: str, degree: np.ndarray, feature_dim: int) -> np.ndarray:
    n = degree.shape[0]
    if kind == "ones":
        return np.ones((n, feature_dim), dtype=np.float32)
    x = np.zeros((n, feature_dim), dtype=np.float32)  # "degree": one-hot, last bucket = ">= feature_dim - 1"
    x[np.arange(n), np.minimum(degree, feature_dim - 1)] = 1.0
    return x


def ba_motifs(num_graphs: int = 1000, *, base_nodes: int = 20, motif: str = "both", m: int = 1,
              features: str = "ones", feature_dim: int = 10, permute_nodes: bool = False,
              seed=0) -> list[GraphSample]:
    """BA-2motifs-style graph classification with ground-truth explanations.

    Each graph is a Barabási–Albert base graph (:func:`barabasi_albert_edges`) on ``base_nodes``
    nodes plus a 5-node motif, a *house* (a 4-cycle with a roof node joined to two adjacent square
    nodes; 6 edges) or a *5-cycle* (5 edges), joined to the base by one edge between a uniformly chosen
    base node and a uniformly chosen motif node. The label is the motif type (house 0, cycle5 1, see
    :data:`MOTIF_LABELS`) and ``motif_mask`` marks the 5 motif nodes, the ground truth an explainer
    should recover. This mirrors BA-2motifs (Luo et al., PGExplainer, 2020; PyG ``BA2MotifDataset``),
    generated locally.

    Parameters
    ----------
    num_graphs : int, default 1000
        Number of graphs, at least 1.
    base_nodes : int, default 20
        Nodes of the BA base graph, at least ``m + 1``; each graph has ``base_nodes + 5`` nodes.
    motif : {"both", "house", "cycle5"}, default "both"
        ``"both"`` gives the two-class dataset with labels balanced to within one graph
        (``num_graphs // 2`` of one class, the odd graph drawn at random), in random order.
        ``"house"`` or ``"cycle5"`` put that motif in every graph (a single class; for explanation-only
        studies).
    m : int, default 1
        Edges per new node in the BA process (BA-2motifs uses 1; 2 gives denser bases).
    features : {"ones", "degree"}, default "ones"
        ``"ones"``: constant features, as in BA-2motifs (whose features are constant too), so only the
        structure carries the label. ``"degree"``: one-hot node degree, degrees ``>= feature_dim - 1``
        sharing the last column.
    feature_dim : int, default 10
        Feature dimension ``d`` (BA-2motifs uses 10).
    permute_nodes : bool, default False
        Randomly relabel the nodes of each graph. By default base nodes come first
        (``0..base_nodes-1``) and motif nodes last, which a non-equivariant model could exploit.
    seed : int, numpy.random.Generator or None, default 0
        Seed or generator; the same integer seed gives identical datasets.

    Returns
    -------
    list of GraphSample
        With ``x`` ``float32 (base_nodes + 5, feature_dim)``, ``y`` an ``int`` and ``motif_mask``
        ``bool (base_nodes + 5,)`` with exactly 5 True entries.

    Raises
    ------
    ValueError
        For ``num_graphs < 1``, ``base_nodes < m + 1``, ``m < 1``, ``feature_dim < 1`` or an unknown
        ``motif`` or ``features``.
    TypeError
        For non-integer counts.

    Examples
    --------
    >>> data = ba_motifs(100, seed=0)
    >>> x, edge_index, batch, y = collate(data)
    >>> x.shape, int(y.sum())
    ((2500, 10), 50)
    """
    num_graphs = _check_int("num_graphs", num_graphs, 1)
    m = _check_int("m", m, 1)
    base_nodes = _check_int("base_nodes", base_nodes, m + 1)
    feature_dim = _check_int("feature_dim", feature_dim, 1)
    if motif not in ("both", *MOTIF_LABELS):
        raise ValueError(f"motif must be 'both', 'house' or 'cycle5', got {motif!r}")
    if features not in ("ones", "degree"):
        raise ValueError(f"features must be 'ones' or 'degree', got {features!r}")
    rng = np.random.default_rng(seed)

    if motif == "both":
        labels = np.zeros(num_graphs, dtype=np.int64)
        labels[num_graphs // 2:] = 1
        if num_graphs % 2:
            labels[-1] = rng.integers(0, 2)
        rng.shuffle(labels)
    else:
        labels = np.full(num_graphs, MOTIF_LABELS[motif], dtype=np.int64)
    names = {v: k for k, v in MOTIF_LABELS.items()}

    n = base_nodes + _MOTIF_SIZE
    samples = []
    for label in labels:
        base = barabasi_albert_edges(base_nodes, m, seed=rng)
        motif_edges = _MOTIF_EDGES[names[int(label)]] + base_nodes
        bridge = np.array([[rng.integers(0, base_nodes), base_nodes + rng.integers(0, _MOTIF_SIZE)]])
        pairs = np.concatenate([base, motif_edges, bridge])
        mask = np.zeros(n, dtype=bool)
        mask[base_nodes:] = True
        if permute_nodes:
            perm = rng.permutation(n)  # old node i becomes perm[i]
            pairs = perm[pairs]
            new_mask = np.empty_like(mask)
            new_mask[perm] = mask
            mask = new_mask
        edge_index = _to_edge_index(pairs)
        degree = np.bincount(edge_index[0], minlength=n)
        samples.append(GraphSample(edge_index=edge_index, x=_node_features(features, degree, feature_dim),
                                   y=int(label), motif_mask=mask))
    return samples


# ---------------------------------------------------------------------------------------------------
# contextual SBM


def _sample_distinct_pairs(rng, count: int, draw, n: int, taken: np.ndarray | None = None) -> np.ndarray:
    """``count`` distinct undirected pairs from ``draw(k) -> (u, v)`` (u != v guaranteed by draw)."""
    keys = np.empty(0, dtype=np.int64)
    exclude = np.empty(0, dtype=np.int64) if taken is None else taken
    while keys.size < count:
        need = count - keys.size
        u, v = draw(int(need * 1.1) + 16)
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        new = lo * n + hi
        _, first = np.unique(new, return_index=True)
        new = new[np.sort(first)]  # keep draw order: deterministic and unbiased truncation
        new = new[~np.isin(new, keys) & ~np.isin(new, exclude)]
        keys = np.concatenate([keys, new[:need]])
    return np.stack([keys // n, keys % n], axis=1)


def contextual_sbm(n: int = 1000, *, homophily: float = 0.8, avg_degree: float = 10, feature_dim: int = 16,
                   feature_snr: float = 1.0, split=(0.6, 0.2, 0.2), seed=0) -> GraphSample:
    """Two-block contextual stochastic block model for node classification.

    Nodes are split into two classes of sizes ``n // 2`` and ``n - n // 2`` (random assignment). The
    graph has exactly ``E = round(n * avg_degree / 2)`` undirected edges, of which
    ``round(homophily * E)`` join two nodes of the same class and the rest join the two classes; each
    kind is drawn uniformly without replacement among the possible pairs (a G(n, M) version of the
    SBM, so the edge homophily :func:`edge_homophily` equals the knob up to rounding). Features are
    Gaussian, ``x_i = mu_{y_i} + eps_i`` with ``eps_i ~ N(0, I_d)`` and ``mu_0 = -mu_1 = -(snr / 2) u``
    for a random unit vector ``u``: the class means are ``feature_snr`` noise standard deviations apart,
    so features alone give a Bayes accuracy of ``Phi(feature_snr / 2)``.

    With ``homophily`` near 1 a low-pass filter helps, near 0 a high-pass one does, and at 0.5 the
    graph carries no label information.

    Parameters
    ----------
    n : int, default 1000
        Number of nodes, at least 4.
    homophily : float, default 0.8
        Fraction of intra-class edges, in ``[0, 1]``.
    avg_degree : float, default 10
        Average degree ``2E / n``, ``> 0``; must leave enough possible pairs of each kind. Nodes may end
        up isolated when it is small.
    feature_dim : int, default 16
        Feature dimension ``d``, at least 1.
    feature_snr : float, default 1.0
        Distance between the class means in units of the noise standard deviation, ``>= 0``.
    split : tuple of three floats, default (0.6, 0.2, 0.2)
        Train/validation/test fractions (non-negative, summing to 1); the split is stratified by class.
    seed : int, numpy.random.Generator or None, default 0
        Seed or generator; the same integer seed gives an identical graph.

    Returns
    -------
    GraphSample
        ``x`` ``float32 (n, feature_dim)``, ``y`` ``int64 (n,)``, ``motif_mask`` None and disjoint
        ``train_mask``/``val_mask``/``test_mask`` covering all nodes.

    Raises
    ------
    ValueError
        For ``homophily`` outside ``[0, 1]``, ``avg_degree <= 0``, more intra- or inter-class edges than
        there are such pairs, ``n < 4``, ``feature_snr < 0`` or a bad ``split``.

    Examples
    --------
    >>> g = contextual_sbm(2000, homophily=0.2, seed=3)
    >>> round(edge_homophily(g.edge_index, g.y), 2)
    0.2
    """
    n = _check_int("n", n, 4)
    homophily = _check_real("homophily", homophily, 0.0, 1.0)
    avg_degree = _check_real("avg_degree", avg_degree, 0.0)
    if avg_degree <= 0:
        raise ValueError(f"avg_degree must be > 0, got {avg_degree}")
    feature_dim = _check_int("feature_dim", feature_dim, 1)
    feature_snr = _check_real("feature_snr", feature_snr, 0.0)
    split = tuple(float(s) for s in split)
    if len(split) != 3 or min(split) < 0 or abs(sum(split) - 1.0) > 1e-9:
        raise ValueError(f"split must be three non-negative fractions summing to 1, got {split}")

    rng = np.random.default_rng(seed)
    y = np.zeros(n, dtype=np.int64)
    y[n // 2:] = 1
    rng.shuffle(y)
    members = [np.flatnonzero(y == 0), np.flatnonzero(y == 1)]
    sizes = np.array([members[0].size, members[1].size])

    num_edges = round(n * avg_degree / 2)
    n_intra = round(homophily * num_edges)
    n_inter = num_edges - n_intra
    intra_pairs = sizes * (sizes - 1) // 2
    if n_intra > intra_pairs.sum() or n_inter > sizes[0] * sizes[1]:
        raise ValueError(f"contextual_sbm: {num_edges} edges with homophily {homophily} need {n_intra} "
                         f"intra-class and {n_inter} inter-class edges, but only {int(intra_pairs.sum())} "
                         f"and {int(sizes[0] * sizes[1])} pairs exist; lower avg_degree or raise n")
    # Dense graphs would make rejection sampling slow: enumerate instead when more than half is needed.
    intra = _draw_intra(rng, members, intra_pairs, n_intra, n)
    inter = _draw_inter(rng, members, n_inter, n)
    edge_index = _to_edge_index(np.concatenate([intra, inter]))

    u = rng.standard_normal(feature_dim)
    u /= np.linalg.norm(u)
    x = rng.standard_normal((n, feature_dim)) + (feature_snr / 2) * np.where(y == 1, 1.0, -1.0)[:, None] * u

    which = np.empty(n, dtype=np.int64)  # 0 train, 1 val, 2 test
    for idx in members:
        idx = rng.permutation(idx)
        n_train = round(split[0] * idx.size)
        n_val = min(round(split[1] * idx.size), idx.size - n_train)
        which[idx[:n_train]] = 0
        which[idx[n_train:n_train + n_val]] = 1
        which[idx[n_train + n_val:]] = 2
    return GraphSample(edge_index=edge_index, x=x.astype(np.float32), y=y, motif_mask=None,
                       train_mask=which == 0, val_mask=which == 1, test_mask=which == 2)


def _draw_intra(rng, members, intra_pairs, count: int, n: int) -> np.ndarray:
    if count == 0:
        return np.empty((0, 2), dtype=np.int64)
    if count > intra_pairs.sum() // 2:
        alls = []
        for idx in members:
            iu = np.triu_indices(idx.size, 1)
            alls.append(np.stack([idx[iu[0]], idx[iu[1]]], axis=1))
        alls = np.concatenate(alls)
        return alls[rng.choice(alls.shape[0], size=count, replace=False)]
    prob = intra_pairs / intra_pairs.sum()

    nodes = np.concatenate(members)  # class 0 nodes, then class 1 nodes
    start = np.array([0, members[0].size])
    size = np.array([members[0].size, members[1].size])

    def draw(k):
        c = rng.choice(2, size=k, p=prob)  # class, weighted by its number of pairs
        a = rng.integers(0, size[c])
        b = rng.integers(0, size[c] - 1)
        b = b + (b >= a)  # uniform over the other members: a != b
        return nodes[start[c] + a], nodes[start[c] + b]

    return _sample_distinct_pairs(rng, count, draw, n)


def _draw_inter(rng, members, count: int, n: int) -> np.ndarray:
    if count == 0:
        return np.empty((0, 2), dtype=np.int64)
    a, b = members
    if count > a.size * b.size // 2:
        aa, bb = np.meshgrid(a, b, indexing="ij")
        alls = np.stack([aa.ravel(), bb.ravel()], axis=1)
        return alls[rng.choice(alls.shape[0], size=count, replace=False)]

    def draw(k):
        return a[rng.integers(0, a.size, size=k)], b[rng.integers(0, b.size, size=k)]

    return _sample_distinct_pairs(rng, count, draw, n)


# ---------------------------------------------------------------------------------------------------
# digits grid graphs


def _grid_pairs(rows: int, cols: int, connectivity: int) -> np.ndarray:
    ids = np.arange(rows * cols).reshape(rows, cols)
    pairs = [np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()], axis=1),   # right
             np.stack([ids[:-1, :].ravel(), ids[1:, :].ravel()], axis=1)]   # down
    if connectivity == 8:
        pairs.append(np.stack([ids[:-1, :-1].ravel(), ids[1:, 1:].ravel()], axis=1))  # down-right
        pairs.append(np.stack([ids[:-1, 1:].ravel(), ids[1:, :-1].ravel()], axis=1))  # down-left
    return np.concatenate(pairs)


def digits_grid_graphs(*, connectivity: int = 4, coordinates: bool = False, n_class: int = 10,
                       num_graphs: int | None = None, shuffle: bool = False, seed=0) -> list[GraphSample]:
    """scikit-learn's 8×8 handwritten digits as 64-node grid graphs.

    Every image of ``sklearn.datasets.load_digits`` (1,797 images, shipped inside the scikit-learn
    package, so nothing is downloaded) becomes a graph with one node per pixel (row-major, node
    ``8 * row + col``), edges between 4- or 8-neighbouring pixels (the same topology for every graph:
    112 or 210 undirected edges), the pixel intensity scaled to ``[0, 1]`` as node feature, and the
    digit as label.

    Parameters
    ----------
    connectivity : {4, 8}, default 4
        4-neighbour (horizontal and vertical) or 8-neighbour (also diagonal) grid.
    coordinates : bool, default False
        Append the pixel position ``(row / 7, col / 7)`` to the features (``d = 3`` instead of 1), so
        that position-unaware models can tell pixels apart.
    n_class : int, default 10
        Keep digits ``0..n_class-1`` only (passed to ``load_digits``), between 1 and 10.
    num_graphs : int or None, default None
        Keep the first ``num_graphs`` images (after shuffling, if requested); None keeps all.
    shuffle : bool, default False
        Shuffle the images with ``seed`` before truncating.
    seed : int, numpy.random.Generator or None, default 0
        Seed or generator for ``shuffle``.

    Returns
    -------
    list of GraphSample
        ``x`` ``float32 (64, 1)`` (or ``(64, 3)``), ``y`` an ``int`` in ``0..n_class-1``,
        ``motif_mask`` None.

    Raises
    ------
    ImportError
        If scikit-learn is not installed (it is an optional dependency).
    ValueError
        For ``connectivity`` not 4 or 8, ``n_class`` outside ``1..10`` or ``num_graphs < 1``.
    """
    if connectivity not in (4, 8) or isinstance(connectivity, bool):
        raise ValueError(f"connectivity must be 4 or 8, got {connectivity!r}")
    n_class = _check_int("n_class", n_class, 1)
    if n_class > 10:
        raise ValueError(f"n_class must be between 1 and 10, got {n_class}")
    if num_graphs is not None:
        num_graphs = _check_int("num_graphs", num_graphs, 1)

    from fastnips import _optional

    _optional.require("sklearn")
    from sklearn.datasets import load_digits

    digits = load_digits(n_class=n_class)
    images = np.asarray(digits.images, dtype=np.float32) / 16.0  # intensities are 0..16
    labels = np.asarray(digits.target, dtype=np.int64)
    order = np.random.default_rng(seed).permutation(len(labels)) if shuffle else np.arange(len(labels))
    if num_graphs is not None:
        order = order[:num_graphs]

    rows, cols = images.shape[1:]
    edge_index = _to_edge_index(_grid_pairs(rows, cols, connectivity))
    if coordinates:
        rr, cc = np.meshgrid(np.arange(rows) / (rows - 1), np.arange(cols) / (cols - 1), indexing="ij")
        pos = np.stack([rr.ravel(), cc.ravel()], axis=1).astype(np.float32)
    samples = []
    for i in order:
        x = images[i].reshape(-1, 1)
        if coordinates:
            x = np.concatenate([x, pos], axis=1)
        samples.append(GraphSample(edge_index=edge_index.copy(), x=np.ascontiguousarray(x), y=int(labels[i])))
    return samples
