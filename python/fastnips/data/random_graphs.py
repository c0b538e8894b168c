"""Random sparse matrices and random graphs, and the edge-index helpers they share.

* :func:`random_csr` -- random (optionally Zipf-skewed) CSR matrices, for SpMM tests and benchmarks;
* :func:`erdos_renyi_edges`, :func:`barabasi_albert_edges` -- G(n, p) and preferential-attachment graphs;
* :func:`undirected_edge_index`, :func:`edge_homophily` -- PyG ``edge_index`` helpers.

Only numpy is imported at module level (scipy by :func:`random_csr` on use).
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["barabasi_albert_edges", "edge_homophily", "erdos_renyi_edges", "random_csr", "undirected_edge_index"]


def random_csr(n_rows: int, n_cols: int, *, avg_degree: float, seed: int = 0, skew: bool = False,
               dtype: DTypeLike = np.float64, index_dtype: DTypeLike = np.int32):
    r"""A random CSR matrix with about ``avg_degree`` nonzeros per row.

    Row lengths are Poisson(``avg_degree``), or with ``skew=True`` Poisson with Zipf-like means
    :math:`\propto k^{-0.8}` over a random row order (a few very long rows, as in real graphs, which is what
    unbalances naive row-parallel kernels); columns are uniform, values standard normal, duplicates summed.

    Parameters
    ----------
    n_rows, n_cols : int
        Shape; ``n_rows >= 0``, ``n_cols > 0``.
    avg_degree : float
        Mean nonzeros per row (before duplicates are merged), ``>= 0``.
    seed : int, default 0
    skew : bool, default False
    dtype, index_dtype : numpy dtypes
        Of the values and of ``indices`` / ``indptr``.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n_rows, n_cols)
        Column indices sorted and distinct within each row.

    Examples
    --------
    >>> A = random_csr(100, 50, avg_degree=4, seed=1)
    >>> A.shape, A.indices.dtype.name, A.has_sorted_indices
    ((100, 50), 'int32', True)
    """
    import scipy.sparse as sp

    if n_rows < 0 or n_cols <= 0 or avg_degree < 0:
        raise ValueError("random_csr: need n_rows >= 0, n_cols > 0, avg_degree >= 0")
    rng = np.random.default_rng(seed)
    if skew:
        w = 1.0 / np.arange(1, n_rows + 1) ** 0.8
        rng.shuffle(w)
        lengths = rng.poisson(avg_degree * n_rows * w / w.sum())
    else:
        lengths = rng.poisson(avg_degree, size=n_rows)
    lengths = np.minimum(lengths, n_cols)
    nnz = int(lengths.sum())
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    rows = np.repeat(np.arange(n_rows), lengths)
    cols = rng.integers(0, n_cols, size=nnz)
    A = sp.csr_matrix((rng.standard_normal(nnz).astype(dtype), (rows, cols)), shape=(n_rows, n_cols))
    A.sum_duplicates()
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    return A


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_real(name: str, value, lo: float | None = None, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {value}")
    return float(value)


def undirected_edge_index(pairs) -> np.ndarray:
    """A PyG ``edge_index`` listing every undirected pair in both directions.

    Parameters
    ----------
    pairs : array-like of int, shape (E, 2) (or anything that reshapes to it)
        Undirected edges ``(u, v)``, each once (distinct, no self loops: not checked).

    Returns
    -------
    ndarray of int64, shape (2, 2E)
        The E pairs as given, then their E reverses: so per-edge weights ``w`` of the pairs become
        ``np.concatenate([w, w])``.

    Examples
    --------
    >>> undirected_edge_index([(0, 1), (1, 2)]).tolist()
    [[0, 1, 1, 2], [1, 2, 0, 1]]
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return np.concatenate([pairs.T, pairs.T[::-1]], axis=1)


def erdos_renyi_edges(num_nodes: int, p: float, *, seed=0) -> np.ndarray:
    """The ``edge_index`` of a G(n, p) random graph: each of the n(n-1)/2 pairs is an edge with probability p.

    Dense sampling (one draw per pair), meant for small graphs (n up to a few thousand).

    Parameters
    ----------
    num_nodes : int
        n >= 0.
    p : float
        Edge probability in [0, 1].
    seed : int, numpy.random.Generator or None, default 0

    Returns
    -------
    ndarray of int64, shape (2, 2E)
        Both directions of every edge (see :func:`undirected_edge_index`).
    """
    n = _check_int("num_nodes", num_nodes, 0)
    p = _check_real("p", p, 0.0, 1.0)
    rng = np.random.default_rng(seed)
    iu = np.triu_indices(n, 1)
    keep = rng.random(iu[0].size) < p
    return undirected_edge_index(np.stack([iu[0][keep], iu[1][keep]], 1))


def _to_edge_index(pairs: np.ndarray) -> np.ndarray:
    """Undirected pairs ``(E, 2)`` (distinct, no loops) -> sorted both-direction ``(2, 2E)`` int64."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    src = np.concatenate([pairs[:, 0], pairs[:, 1]])
    dst = np.concatenate([pairs[:, 1], pairs[:, 0]])
    order = np.lexsort((dst, src))
    return np.stack([src[order], dst[order]])


def edge_homophily(edge_index, y) -> float:
    """Fraction of edges whose two endpoints share a label.

    Parameters
    ----------
    edge_index : array_like
        Integer array of shape ``(2, E)``.
    y : array_like
        Node labels of shape ``(n,)``.

    Returns
    -------
    float
        ``mean(y[src] == y[dst])``; ``nan`` for a graph without edges.
    """
    edge_index = np.asarray(edge_index)
    y = np.asarray(y)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_homophily: edge_index must have shape (2, E), got {edge_index.shape}")
    if edge_index.shape[1] == 0:
        return float("nan")
    return float(np.mean(y[edge_index[0]] == y[edge_index[1]]))


def barabasi_albert_edges(num_nodes: int, m: int = 1, *, seed=0) -> np.ndarray:
    """Undirected edges of a Barabási–Albert preferential-attachment graph.

    The process follows ``networkx.barabasi_albert_graph``: start from a star on ``m + 1`` nodes, then
    attach each new node to ``m`` distinct existing nodes chosen with probability proportional to
    their degree. The result is connected, has ``m * (num_nodes - m)`` edges (``m`` per added node plus
    the ``m`` star edges), no self loops and no multi-edges. (Same law as networkx, not the same
    random stream.)

    Parameters
    ----------
    num_nodes : int
        Number of nodes, at least ``m + 1``.
    m : int, default 1
        Edges added per new node, at least 1.
    seed : int, numpy.random.Generator or None, default 0
        Seed or generator for :func:`numpy.random.default_rng`.

    Returns
    -------
    numpy.ndarray
        ``int64`` array of shape ``(E, 2)`` with ``u < v`` in every row.

    Raises
    ------
    ValueError
        If ``m < 1`` or ``num_nodes < m + 1``.
    """
    m = _check_int("m", m, 1)
    num_nodes = _check_int("num_nodes", num_nodes, m + 1)
    rng = np.random.default_rng(seed)
    num_edges = m * (num_nodes - m)
    edges = np.empty((num_edges, 2), dtype=np.int64)
    # Every edge endpoint, once per incidence: uniform sampling from it is degree-proportional sampling.
    ends = np.empty(2 * num_edges, dtype=np.int64)
    edges[:m, 0] = 0
    edges[:m, 1] = np.arange(1, m + 1)
    ends[: 2 * m] = edges[:m].ravel()
    e, k = m, 2 * m
    for v in range(m + 1, num_nodes):
        if m == 1:
            targets = ends[rng.integers(0, k, size=1)]
        else:
            chosen: set[int] = set()
            while len(chosen) < m:
                for t in ends[rng.integers(0, k, size=m - len(chosen))]:
                    chosen.add(int(t))
                    if len(chosen) == m:
                        break
            targets = np.array(sorted(chosen), dtype=np.int64)
        edges[e:e + m, 0] = targets
        edges[e:e + m, 1] = v
        ends[k:k + m] = targets
        ends[k + m:k + 2 * m] = v
        e += m
        k += 2 * m
    return edges
