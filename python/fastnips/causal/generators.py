r"""Random and structured mixed graphs for tests, benchmarks and simulation studies.

All generators take a ``seed`` and return a :class:`~fastnips.causal.MixedGraph` (with the latent factors'
children for :func:`random_latent_factor_graph`).

* :func:`random_mixed_graph` -- a random DAG (random topological order) or a random digraph, plus a random
  bidirected part; the graphs SEMID's authors and the benchmarks use (``p_directed = p_bidirected = p``).
* :func:`random_latent_factor_graph` -- a random DAG among observed nodes and latent factors with random
  children, the input of :func:`~fastnips.causal.lfhtc_identify`;
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


def random_latent_factor_graph(n: int, n_latent: int, *, p_directed: float, p_child: float, acyclic: bool = True,
                               seed: int = 0) -> tuple[MixedGraph, list[list[int]]]:
    r"""A random latent-factor graph: observed directed edges as :func:`random_mixed_graph` draws them (no
    bidirected edges) and ``n_latent`` latent factors, each a source with every observed node as a child
    independently with probability ``p_child``.

    A factor with four or more children is one the latent-factor HTC may control; factors with fewer than two
    children add no confounding.

    Parameters
    ----------
    n : int, >= 0
        Observed nodes.
    n_latent : int, >= 0
        Latent factors.
    p_directed, p_child : float in [0, 1]
        Probability of each observed directed edge (see :func:`random_mixed_graph`) and of each
        (factor, observed node) edge.
    acyclic : bool, default True
    seed : int
        Seed of :func:`numpy.random.default_rng` (the observed graph and the factors from one stream).

    Returns
    -------
    (MixedGraph, list of list of int)
        The observed graph and ``latent_children`` (ascending), as :func:`~fastnips.causal.lfhtc_identify`
        takes them.

    Examples
    --------
    >>> g, children = random_latent_factor_graph(12, 2, p_directed=0.2, p_child=0.5, seed=3)
    >>> g.n, len(children)
    (12, 2)
    """
    if int(n_latent) != n_latent or n_latent < 0:
        raise ValueError(f"n_latent must be a non-negative integer, got {n_latent}")
    if not 0.0 <= float(p_child) <= 1.0:
        raise ValueError(f"p_child must be a probability in [0, 1], got {p_child}")
    g = random_mixed_graph(n, p_directed=p_directed, p_bidirected=0.0, acyclic=acyclic, seed=seed)
    rng = np.random.default_rng([seed, 1])
    keep = rng.random((int(n_latent), g.n)) < p_child
    return g, [np.flatnonzero(row).tolist() for row in keep]


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
