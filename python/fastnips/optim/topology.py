r"""Communication topologies of decentralised optimisation and their gossip (mixing) matrices.

A topology of M nodes is an undirected connected graph; its **Metropolis-Hastings** mixing matrix is

.. math:: W_{ij} = \frac{1}{1 + \max(d_i, d_j)} \;\; (i \sim j), \qquad W_{ii} = 1 - \sum_{j \ne i} W_{ij},

symmetric and doubly stochastic with non-negative entries. Its **spectral gap** :math:`1 - \lambda_2`, with
:math:`\lambda_2 = \max(|\lambda_2(W)|, |\lambda_M(W)|)` the second largest eigenvalue modulus, sets how fast
gossip averages: consensus error contracts by :math:`\lambda_2` per round.

Topologies: :func:`ring`, :func:`torus` (2-D, wrap-around), :func:`erdos_renyi` (resampled until connected, from
``seed``), :func:`complete`; or any user matrix through :func:`check_mixing`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Topology:
    """A connected communication graph and its mixing matrix.

    Attributes
    ----------
    name : str
    W : numpy.ndarray, (M, M) float64
        Symmetric, doubly stochastic, non-negative.
    neighbours : tuple of tuple of int
        Per node, the nodes j with :math:`W_{ij} > 0` (itself included), sorted: the order in which every mode
        sums the mixed values, so the in-process and the distributed runs add the same numbers in the same order.
    """

    name: str
    W: np.ndarray
    neighbours: tuple

    @property
    def size(self) -> int:
        """Number of nodes M."""
        return self.W.shape[0]

    @property
    def spectral_gap(self) -> float:
        """:math:`1 - \\max(|\\lambda_2|, |\\lambda_M|)` of W."""
        ev = np.sort(np.abs(np.linalg.eigvalsh(self.W)))[::-1]
        return float(1 - ev[1]) if len(ev) > 1 else 1.0

    @property
    def edges(self) -> int:
        """Number of undirected edges (messages per gossip round: twice this)."""
        return int(np.count_nonzero(self.W - np.diag(np.diag(self.W))) // 2)  # W[i, i] may be 0


def metropolis_weights(adjacency: np.ndarray) -> np.ndarray:
    """Metropolis-Hastings mixing matrix of a symmetric 0/1 adjacency matrix (module docstring).

    Parameters
    ----------
    adjacency : numpy.ndarray, (M, M)

    Returns
    -------
    numpy.ndarray, (M, M)

    Examples
    --------
    >>> metropolis_weights(np.array([[0, 1], [1, 0]]))
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    A = np.asarray(adjacency) != 0
    np.fill_diagonal(A, False)
    if A.shape[0] != A.shape[1] or not np.array_equal(A, A.T):
        raise ValueError("adjacency must be a square symmetric matrix (an undirected graph)")
    deg = A.sum(1)
    W = np.where(A, 1.0 / (1 + np.maximum(deg[:, None], deg[None, :])), 0.0)
    np.fill_diagonal(W, 1 - W.sum(1))
    return W


def check_mixing(W: np.ndarray, name: str = "custom", *, atol: float = 1e-12) -> Topology:
    """A :class:`Topology` from a user's mixing matrix, refused unless symmetric, non-negative, doubly stochastic
    and with a spectral gap > 0: connected (else "disconnected") and aperiodic (an eigenvalue -1, a bipartite graph
    without self-weights, is refused as "periodic").

    Parameters
    ----------
    W : array, (M, M)
    name : str, default "custom"
    atol : float, default 1e-12

    Returns
    -------
    Topology

    Examples
    --------
    >>> round(check_mixing(np.full((3, 3), 1 / 3)).spectral_gap, 12)
    1.0
    """
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 1:
        raise ValueError(f"the mixing matrix must be square (M, M), got shape {W.shape}")
    if not np.isfinite(W).all() or (W < -atol).any():
        raise ValueError("the mixing matrix must have finite, non-negative entries")
    if not np.allclose(W, W.T, atol=atol):
        raise ValueError("the mixing matrix must be symmetric")
    dev = max(np.abs(W.sum(0) - 1).max(), np.abs(W.sum(1) - 1).max())
    if dev > 1e-9:
        raise ValueError(f"the mixing matrix must be doubly stochastic (rows and columns summing to 1); the largest "
                         f"deviation is {dev:.3g}")
    neighbours = tuple(tuple(int(j) for j in np.flatnonzero(W[i] > 0)) for i in range(W.shape[0]))
    topo = Topology(name, W, neighbours)
    if W.shape[0] > 1 and topo.spectral_gap <= 1e-12:
        ev = np.linalg.eigvalsh(W)  # ascending: a second eigenvalue 1 means more than one component
        if ev[-2] >= 1 - 1e-12:
            raise ValueError(f"the topology '{name}' is disconnected (spectral gap {topo.spectral_gap:.3g}): gossip "
                             "cannot reach consensus")
        raise ValueError(f"the mixing matrix of '{name}' is periodic (eigenvalue -1: a bipartite graph without "
                         "self-weights), so gossip oscillates instead of averaging; give every node a positive "
                         "self-weight W[i, i]")
    return topo


def _from_adjacency(A: np.ndarray, name: str) -> Topology:
    return check_mixing(metropolis_weights(A), name)


def _check_m(M: int, lo: int = 1) -> None:
    if not isinstance(M, (int, np.integer)) or M < lo:
        raise ValueError(f"the number of nodes must be an integer >= {lo}, got {M!r}")


def ring(M: int) -> Topology:
    """Cycle of M nodes (M = 1: a single node; M = 2: one edge).

    Parameters
    ----------
    M : int

    Returns
    -------
    Topology

    Examples
    --------
    >>> round(ring(8).spectral_gap, 4)  # 1 - (1 + 2 cos(2 pi / 8)) / 3
    0.1953
    """
    _check_m(M)
    A = np.zeros((M, M), dtype=bool)
    for i in range(M):
        if M > 1:
            A[i, (i + 1) % M] = A[(i + 1) % M, i] = True
    return _from_adjacency(A, f"ring({M})")


def torus(rows: int, cols: int) -> Topology:
    """2-D torus of rows x cols nodes (each linked to its 4 wrap-around grid neighbours).

    Parameters
    ----------
    rows, cols : int

    Returns
    -------
    Topology

    Examples
    --------
    >>> torus(3, 3).size
    9
    """
    _check_m(rows)
    _check_m(cols)
    M = rows * cols
    A = np.zeros((M, M), dtype=bool)
    for r in range(rows):
        for c in range(cols):
            i = r * cols + c
            for j in (((r + 1) % rows) * cols + c, r * cols + (c + 1) % cols):
                if j != i:
                    A[i, j] = A[j, i] = True
    return _from_adjacency(A, f"torus({rows}x{cols})")


def erdos_renyi(M: int, p: float, *, seed: int = 0, max_tries: int = 1000) -> Topology:
    """Erdos-Renyi G(M, p) graph, redrawn (same generator) until connected.

    Parameters
    ----------
    M : int
    p : float in (0, 1]
    seed : int, default 0
    max_tries : int, default 1000
        A ``ValueError`` after that many disconnected draws (p too small for M).

    Returns
    -------
    Topology

    Examples
    --------
    >>> erdos_renyi(6, 0.6, seed=1).size
    6
    """
    _check_m(M)
    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1], got {p!r}")
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        U = np.triu(rng.random((M, M)) < p, 1)
        A = U | U.T
        try:
            return _from_adjacency(A, f"erdos_renyi({M}, {p})")
        except ValueError:
            continue
    raise ValueError(f"no connected G({M}, {p}) in {max_tries} draws: raise p")


def complete(M: int) -> Topology:
    """Complete graph: W = 11^T / M (exact averaging in one round).

    Parameters
    ----------
    M : int

    Returns
    -------
    Topology

    Examples
    --------
    >>> round(complete(4).spectral_gap, 12)
    1.0
    """
    _check_m(M)
    return check_mixing(np.full((M, M), 1.0 / M), f"complete({M})")
