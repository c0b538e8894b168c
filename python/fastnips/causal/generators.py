r"""Random and structured mixed graphs for tests, benchmarks and simulation studies.

All generators take a ``seed`` and return a :class:`~fastnips.causal.MixedGraph`.

* :func:`random_mixed_graph` -- a random DAG (random topological order) or a random digraph, plus a random
  bidirected part; the graphs SEMID's authors and the benchmarks use (``p_directed = p_bidirected = p``).
* :func:`instrument_chain` -- a graph whose HTC fixpoint needs :math:`n - 1` rounds when nodes are
  visited in label order (``reverse=True``), the worst case for fixpoint sweeps.
"""

from __future__ import annotations

import numpy as np

from .graph import MixedGraph


def random_mixed_graph(n: int, *, p_directed: float, p_bidirected: float | None = None, acyclic: bool = True,
                       seed: int = 0) -> MixedGraph:
    r"""A random mixed graph.

    Directed edges: with ``acyclic=True``, each pair :math:`i \prec j` of a random node order gets
    :math:`i \to j` with probability ``p_directed``; with ``acyclic=False`` each ordered pair
    :math:`(i, j)`, :math:`i \ne j`, gets :math:`i \to j` with that probability (2-cycles possible).
    Bidirected edges: each unordered pair independently with ``p_bidirected`` (default ``p_directed``).
    Expected total degree is :math:`(n-1)(p_D + p_B)` for DAGs: ``p = 3 / (2 (n - 1))`` gives the sparse
    "average degree 3" family, ``p = 1/8`` the dense "degree n/4" one.

    Parameters
    ----------
    n : int, >= 0
        Number of nodes.
    p_directed, p_bidirected : float in [0, 1]
        Edge probabilities.
    acyclic : bool, default True
        A DAG in a random topological order, or a general digraph.
    seed : int
        Seed of :func:`numpy.random.default_rng`.

    Returns
    -------
    MixedGraph
        The same graph for the same arguments and ``seed``.

    Examples
    --------
    >>> g = random_mixed_graph(30, p_directed=3 / 58, seed=1)
    >>> g == random_mixed_graph(30, p_directed=3 / 58, seed=1), g.n
    (True, 30)
    """
    if p_bidirected is None:
        p_bidirected = p_directed
    for name, p in (("p_directed", p_directed), ("p_bidirected", p_bidirected)):
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"{name} must be a probability in [0, 1], got {p}")
    if int(n) != n or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n}")
    n = int(n)
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, k=1)
    if acyclic:
        order = rng.permutation(n)
        keep = rng.random(iu.size) < p_directed
        directed = np.stack([order[iu[keep]], order[ju[keep]]], axis=1)
    else:
        ii, jj = np.nonzero(~np.eye(n, dtype=bool))
        keep = rng.random(ii.size) < p_directed
        directed = np.stack([ii[keep], jj[keep]], axis=1)
    keep_b = rng.random(iu.size) < p_bidirected
    bidirected = np.stack([iu[keep_b], ju[keep_b]], axis=1)
    return MixedGraph(n, directed=directed.reshape(-1, 2), bidirected=bidirected.reshape(-1, 2))


def instrument_chain(n: int, *, reverse: bool = True) -> MixedGraph:
    r"""A chain :math:`v_0 \to v_1 \to \dots \to v_{n-1}` with :math:`v_i \leftrightarrow v_j` for every
    :math:`|i - j| \ge 2`: HTC-identifiable, but only one node at a time.

    :math:`v_k` has the single parent :math:`v_{k-1}`; every node that reaches :math:`v_{k-1}` by a half-trek
    is a sibling of :math:`v_k` or a half-trek descendant of it, except :math:`v_{k-1}` itself (a
    descendant of the sibling :math:`v_{k-3}`), which becomes a usable source only once it is solved. So the
    fixpoint solves :math:`v_1, v_2, \dots` in that order, :math:`n - 1` rounds. With ``reverse=True``
    node :math:`v_k` gets label :math:`n - 1 - k`, so a sweep in label order (SEMID's Gauss-Seidel pass)
    also solves a single node per pass: :math:`\Theta(n)` passes of :math:`\Theta(n)` flow tests each.
    The graph has :math:`n + (n-1) + (n-1)(n-2)/2 = n(n+1)/2` parameters, exactly the number of
    covariance entries.

    Parameters
    ----------
    n : int, >= 1
        Number of nodes.
    reverse : bool, default True
        Label :math:`v_k` as :math:`n - 1 - k` (the worst case for sweeps in label order).

    Returns
    -------
    MixedGraph
        :math:`n - 1` directed and :math:`(n-1)(n-2)/2` bidirected edges.

    Examples
    --------
    >>> from fastnips.causal import htc_identify
    >>> r = htc_identify(instrument_chain(6), method="maxflow")
    >>> r.identifiable, r.rounds
    (True, 5)
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    n = int(n)
    label = (lambda k: n - 1 - k) if reverse else (lambda k: k)
    directed = [(label(k - 1), label(k)) for k in range(1, n)]
    bidirected = [(label(i), label(j)) for i in range(n) for j in range(i + 2, n)]
    return MixedGraph(n, directed=directed, bidirected=bidirected)
