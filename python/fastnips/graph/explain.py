r"""Explanations of the Tikhonov layer: node importances q, the filter p and the propagation operator R.

A Tikhonov layer computes :math:`Y = R X` with

.. math:: R = (p(L) + Q)^{-1} Q, \qquad Q = \mathrm{diag}(q), \qquad
          RX = \arg\min_Z\; \mathrm{tr}(Z^\top p(L) Z) + \mathrm{tr}((Z - X)^\top Q (Z - X)),

so it is explained by three objects, all read off the trained model without any post-hoc optimisation
(the paper's "interpretable by design"; Tremblay, Ricaud, Bianchi, arXiv 2605.28578):

* **q** (per node): the weight of a node's own signal against the smoothness penalty. Under the default
  simplex normalisation of :class:`~fastnips.graph.TikhonovProp` (:math:`0 \le p \le 1` on [0, 2]) q
  is an absolute importance: :math:`q_i \gg 1` keeps node i's input, :math:`q_i \ll 1` replaces it
  by its neighbourhood's.
* **p** (on the spectrum [0, 2] of the normalized Laplacian): which graph frequencies are penalised.
  With :math:`Q = \bar q I` the layer is the spectral filter :math:`h(\lambda) = \bar q / (p(\lambda) +
  \bar q)`, so an increasing p is a low-pass filter (homophily), a decreasing p a high-pass filter.
* **R** (dense, for small graphs): row i holds the weights with which every input node contributes to
  output node i; R is generically dense (a global receptive field from one layer).

Public functions: :func:`explain_tikhonov` (from coefficients, q and L), :func:`filter_reading` (the
low-pass / high-pass / band-pass / band-stop / flat rule), :func:`explanation_auroc` (q against ground
truth), :func:`plot_explanation` (matplotlib, optional). :meth:`fastnips.graph.TikhonovGNN.explain`
runs the Q-network and calls :func:`explain_tikhonov`.

Only numpy and scipy are imported here; matplotlib (and networkx, for one layout) are imported inside
:func:`plot_explanation`.
"""

from __future__ import annotations

import numbers
import os
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .. import _optional
from .tikhonov import (
    _as_csr,
    _check_basis,
    _check_polynomial,
    _coefficients,
    _to_numpy,
    _weights,
    evaluate_polynomial,
    tikhonov_solve,
)

__all__ = ["LAYOUTS", "READINGS", "Explanation", "explain_tikhonov", "explanation_auroc", "filter_reading",
           "plot_explanation", "spring_layout"]

#: The possible readings of a filter polynomial p (see :func:`filter_reading`).
READINGS = ("low-pass", "high-pass", "band-pass", "band-stop", "flat")
#: Named graph layouts of :func:`plot_explanation` (a positions array is accepted as well).
LAYOUTS = ("spring", "kamada_kawai")

#: Default relative variation below which p is read as "flat".
FLAT_TOL = 0.05
#: Default depth, as a fraction of max p - min p, an interior extremum needs to count.
BAND_TOL = 0.2
#: Points of [0, 2] on which :func:`filter_reading` inspects p (independent of the curve's grid).
_READING_POINTS = 2049


# ---------------------------------------------------------------------------------------------------
# the result


@dataclass(frozen=True, eq=False)
class Explanation:
    r"""What a Tikhonov layer does on one graph (or one batch of graphs).

    Produced by :func:`explain_tikhonov` and :meth:`fastnips.graph.TikhonovGNN.explain`; drawn by
    :func:`plot_explanation`. All arrays are float64 / int64 numpy arrays.

    Attributes
    ----------
    q : ndarray, shape (n,)
        Node importance :math:`q_i > 0` of each explained node.
    lam : ndarray, shape (m,)
        Grid of graph frequencies, ``numpy.linspace(0, 2, m)``.
    p : ndarray, shape (m,)
        The filter polynomial :math:`p(\lambda)` on ``lam`` (penalty per frequency; >= 0).
    h : ndarray, shape (m,)
        Frequency response :math:`h(\lambda) = \bar q / (p(\lambda) + \bar q) \in (0, 1]` at the median
        :math:`\bar q` of ``q``; exact when every node has weight :math:`\bar q`, a summary otherwise.
    q_median : float
        :math:`\bar q`.
    reading : str
        One of :data:`READINGS`, from :func:`filter_reading` (see there for the rule).
    coeffs : ndarray, shape (K + 1,)
        The coefficients :math:`\theta` of p in ``basis``.
    basis : str
        ``"bernstein"`` or ``"monomial"``.
    edge_index : ndarray of int64, shape (2, E)
        The explained graph's edges in local node ids ``0..n-1`` (both directions of every edge, from
        the off-diagonal non-zeros of L, sorted by source then target): pass it to
        :func:`plot_explanation`.
    nodes : ndarray of int64, shape (n,)
        Node ids of the explained nodes in the input (``arange(n)`` unless ``graph`` picked one graph
        of a batch): ``q[j]`` belongs to input node ``nodes[j]``.
    graph : int or None
        The graph id of the batch that was explained, or None for the whole input.
    R : ndarray, shape (n, n), or None
        The dense propagation operator :math:`R = (p(L) + Q)^{-1} Q` (row i: the contribution of each
        input node to output node i), computed for at most ``max_nodes_for_rows`` nodes; None otherwise
        or when ``rows=False``.
    laplacian_eigenvalues : ndarray, shape (n,), or None
        The spectrum of L (ascending), computed with R. Only the values of p there matter: p is
        identifiable only on spec(L).
    """

    q: np.ndarray
    lam: np.ndarray
    p: np.ndarray
    h: np.ndarray
    q_median: float
    reading: str
    coeffs: np.ndarray
    basis: str
    edge_index: np.ndarray
    nodes: np.ndarray
    graph: int | None = None
    R: np.ndarray | None = field(default=None, repr=False)
    laplacian_eigenvalues: np.ndarray | None = field(default=None, repr=False)

    @property
    def num_nodes(self) -> int:
        """Number of explained nodes, n."""
        return int(self.q.shape[0])

    def top_nodes(self, k: int = 5) -> np.ndarray:
        """Local ids of the ``k`` nodes with the largest q, most important first (ties: lower id first)."""
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
            raise ValueError(f"k must be an int >= 0, got {k!r}")
        return np.argsort(-self.q, kind="stable")[: int(k)]

    def __repr__(self) -> str:
        where = "" if self.graph is None else f", graph={self.graph}"
        rows = "None" if self.R is None else f"<{self.R.shape[0]}x{self.R.shape[1]}>"
        lo, hi = (float(self.q.min()), float(self.q.max())) if self.q.size else (np.nan, np.nan)
        return (f"Explanation(num_nodes={self.num_nodes}{where}, reading={self.reading!r}, "
                f"q_median={self.q_median:.4g}, q_range=[{lo:.4g}, {hi:.4g}], K={self.coeffs.shape[0] - 1}, "
                f"basis={self.basis!r}, R={rows})")


# ---------------------------------------------------------------------------------------------------
# the reading of p


def _tolerance(name: str, v, hi: float = 1.0) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (0.0 <= float(v) < hi):
        raise ValueError(f"{name} must be a float in [0, {hi:g}), got {v!r}")
    return float(v)


def _read_curve(p: np.ndarray, flat_tol: float, band_tol: float) -> str:
    """The rule of :func:`filter_reading` on samples p of [0, 2] (first and last sample: the end points)."""
    lo, hi = float(p.min()), float(p.max())
    span = hi - lo
    if span <= flat_tol * max(abs(hi), abs(lo)) or span == 0.0:
        return "flat"
    left, right = float(p[0]), float(p[-1])
    tau = band_tol * span
    # depth of the deepest interior minimum / highest interior maximum: how far p climbs (falls) from
    # it towards *both* ends
    dip = min(left - lo, right - lo)
    bump = min(hi - left, hi - right)
    if max(dip, bump) > tau:
        return "band-pass" if dip >= bump else "band-stop"
    return "low-pass" if right > left else "high-pass"


def filter_reading(coeffs, *, basis: str = "bernstein", flat_tol: float = FLAT_TOL,
                   band_tol: float = BAND_TOL) -> str:
    r"""Read a filter polynomial p on [0, 2] as low-pass, high-pass, band-pass, band-stop or flat.

    p is the *penalty* of the Tikhonov layer; the layer passes the frequencies where p is small
    (:math:`h = q/(p + q)`). The rule, on p sampled at 2049 equispaced points of [0, 2] (end points
    included), with :math:`\Delta = \max p - \min p`:

    1. **"flat"** if :math:`\Delta \le` ``flat_tol`` :math:`\cdot \max |p|` (relative variation below
       ``flat_tol``, default 5 %): p barely depends on the frequency, the layer hardly propagates
       (R is close to diagonal when p is constant).
    2. Otherwise let :math:`d_{\min} = \min(p(0), p(2)) - \min p` (how far p climbs from its lowest
       point to *both* ends: the depth of an interior valley) and :math:`d_{\max} = \max p - \max(p(0),
       p(2))` (the height of an interior hump). If :math:`\max(d_{\min}, d_{\max}) >` ``band_tol``
       :math:`\cdot \Delta` (default 20 %), the larger one decides: an interior minimum is
       **"band-pass"** (a middle band of frequencies passes), an interior maximum **"band-stop"**.
    3. Otherwise p is monotone up to small wiggles: **"low-pass"** if :math:`p(2) > p(0)` (p increasing:
       high frequencies are penalised, smooth signals pass; the homophilous prior) and **"high-pass"**
       if :math:`p(2) < p(0)` (p decreasing: smooth components are penalised; heterophily).

    Parameters
    ----------
    coeffs : array-like, shape (K + 1,)
        :math:`\theta` in ``basis``; p must be >= 0 on [0, 2] (non-negative Bernstein coefficients, or
        a monomial p checked there), as for :func:`fastnips.graph.tikhonov_solve`.
    basis : {"bernstein", "monomial"}, default "bernstein"
    flat_tol : float in [0, 1), default 0.05
    band_tol : float in [0, 1), default 0.2

    Returns
    -------
    str
        One of :data:`READINGS`.

    Raises
    ------
    ValueError
        Malformed or non-finite coefficients, a p < 0 somewhere on [0, 2], an unknown basis, a
        tolerance outside [0, 1).

    Examples
    --------
    >>> from fastnips.graph import filter_reading
    >>> filter_reading([0.0, 0.25, 0.5, 0.75, 1.0])      # Bernstein, p(lambda) = lambda / 2
    'low-pass'
    >>> filter_reading([1.0, 0.0, 0.0, 0.0, 1.0])        # U-shaped
    'band-pass'
    """
    c = _coefficients(coeffs)
    _check_basis(basis)
    _check_polynomial(c, basis)
    flat_tol, band_tol = _tolerance("flat_tol", flat_tol), _tolerance("band_tol", band_tol)
    p = evaluate_polynomial(c, np.linspace(0.0, 2.0, _READING_POINTS), basis)
    return _read_curve(p, flat_tol, band_tol)


# ---------------------------------------------------------------------------------------------------
# the explanation


def _nonneg_int(name: str, v, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {v!r}")
    return int(v)


def _batch_vector(batch, n: int) -> np.ndarray:
    b = _to_numpy(batch)
    if b.dtype.kind not in "iu":
        raise TypeError(f"batch must hold integer graph ids, got dtype {b.dtype}")
    if b.shape != (n,):
        raise ValueError(f"batch must have one graph id per node: shape ({n},), got {tuple(b.shape)}")
    b = b.astype(np.int64, copy=False)
    if n and b.min() < 0:
        raise ValueError(f"batch must hold graph ids >= 0, got {int(b.min())}")
    return b


def _edges_of(L: sp.csr_matrix) -> np.ndarray:
    C = L.tocoo()
    keep = (C.row != C.col) & (C.data != 0)
    ei = np.stack([C.row[keep], C.col[keep]]).astype(np.int64)
    order = np.lexsort((ei[1], ei[0]))
    return np.ascontiguousarray(ei[:, order])


def explain_tikhonov(coeffs, q, L, *, basis: str = "bernstein", batch=None, graph: int | None = None,
                     rows: bool = True, max_nodes_for_rows: int = 500, num_points: int = 201,
                     flat_tol: float = FLAT_TOL, band_tol: float = BAND_TOL, backend: str = "auto") -> Explanation:
    r"""Explain a Tikhonov propagation :math:`R = (p(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q)`.

    For users of :class:`~fastnips.graph.TikhonovProp` or :func:`~fastnips.graph.tikhonov_solve`
    without :class:`~fastnips.graph.TikhonovGNN` (whose :meth:`~fastnips.graph.TikhonovGNN.explain`
    calls this). Computes

    * the curve :math:`p(\lambda)` on ``num_points`` equispaced points of [0, 2]
      (:func:`fastnips.graph.evaluate_polynomial`) and its reading (:func:`filter_reading`);
    * the frequency response :math:`h(\lambda) = \bar q / (p(\lambda) + \bar q)` at the median
      :math:`\bar q` of q (the explained nodes' q);
    * for at most ``max_nodes_for_rows`` explained nodes, the dense R, column by column from
      :func:`fastnips.graph.tikhonov_solve` on the identity (:math:`R = A^{-1} Q I`, one multi-column
      solve, relative residual 1e-10 per column), and the spectrum of L (dense ``eigvalsh``).

    R has real eigenvalues in (0, 1] (it is similar to :math:`(Q^{-1/2} p(L) Q^{-1/2} + I)^{-1}`), and
    :math:`R v = v` exactly on the kernel of p(L); with :math:`p(0) = 0` this gives
    :math:`R\, D^{1/2} \mathbf 1 = D^{1/2} \mathbf 1` on each connected component.

    Parameters
    ----------
    coeffs : array-like or torch tensor, shape (K + 1,)
        :math:`\theta` in ``basis`` (e.g. ``prop.coefficients().detach()``); p must be >= 0 on [0, 2].
    q : array-like or torch tensor, shape (n,)
        Node weights, finite and > 0 (e.g. ``model.last_q``).
    L : scipy.sparse matrix, numpy array or torch tensor, shape (n, n)
        The normalized Laplacian the layer used (:func:`fastnips.graph.normalized_laplacian`); for a
        batch, the block-diagonal Laplacian of the batch. Checked as in
        :func:`~fastnips.graph.tikhonov_solve` (square, finite, symmetric, diagonal in [0, 2]).
    basis : {"bernstein", "monomial"}, default "bernstein"
    batch : array-like of int, shape (n,), optional
        Graph id per node (PyG convention), needed for ``graph``. Checked against L: no entry of L may
        join two graphs.
    graph : int, optional
        Explain only graph ``graph`` of the batch: q, R and the median are restricted to its nodes
        (R of a block-diagonal operator is block diagonal, so this equals explaining that graph
        alone). Without ``batch``, only ``graph=0`` is valid (the input is one graph).
    rows : bool, default True
        Compute R (and the spectrum of L) when the explained graph is small enough.
    max_nodes_for_rows : int, default 500
        Largest number of explained nodes for which R is formed (memory :math:`8 n^2` bytes, one solve
        with n right-hand sides); above it, ``R`` is None.
    num_points : int, default 201
        Points of the curve p on [0, 2], >= 2.
    flat_tol, band_tol : float
        Tolerances of :func:`filter_reading` (defaults 0.05 and 0.2).
    backend : str, default "auto"
        Solver backend for R (:func:`fastnips.graph.tikhonov_solve`).

    Returns
    -------
    Explanation

    Raises
    ------
    ValueError
        Bad coefficients (non-finite, negative Bernstein, monomial p < 0 on [0, 2]); q not > 0, not
        finite or of the wrong length; a malformed L; a batch of the wrong length, negative ids or
        joining two graphs through L; ``graph`` without nodes or out of range; bad tolerances or counts.
    TypeError
        Non-numeric inputs; a non-bool ``rows``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastnips.graph import explain_tikhonov, normalized_laplacian
    >>> L = normalized_laplacian(np.array([[0, 1, 1, 2], [1, 0, 2, 1]]), 3)   # a path 0 - 1 - 2
    >>> e = explain_tikhonov([0.0, 0.5, 1.0], np.ones(3), L)                   # p(lambda) = lambda / 2
    >>> e.reading, e.R.shape
    ('low-pass', (3, 3))
    >>> bool(np.allclose(e.R @ np.sqrt([1.0, 2.0, 1.0]), np.sqrt([1.0, 2.0, 1.0])))   # p(0) = 0
    True
    """
    c = _coefficients(coeffs)
    _check_basis(basis)
    _check_polynomial(c, basis)
    if not isinstance(rows, bool | np.bool_):
        raise TypeError(f"rows must be a bool, got {type(rows).__name__}")
    max_nodes_for_rows = _nonneg_int("max_nodes_for_rows", max_nodes_for_rows)
    num_points = _nonneg_int("num_points", num_points, minimum=2)
    flat_tol, band_tol = _tolerance("flat_tol", flat_tol), _tolerance("band_tol", band_tol)
    Lc = _as_csr(L, np.dtype(np.float64))
    n = Lc.shape[0]
    qv = _weights(q, n, np.dtype(np.float64))

    nodes = np.arange(n, dtype=np.int64)
    if batch is not None:
        b = _batch_vector(batch, n)
        C = Lc.tocoo()
        cross = b[C.row] != b[C.col]
        if cross.any():
            i = int(np.flatnonzero(cross)[0])
            r, s = int(C.row[i]), int(C.col[i])
            raise ValueError(f"batch does not match L: L[{r}, {s}] != 0 joins graph {b[r]} to graph {b[s]}; a "
                             "block-diagonal batch has no edge between two graphs")
    else:
        b = None
    if graph is not None:
        if isinstance(graph, bool) or not isinstance(graph, numbers.Integral):
            raise TypeError(f"graph must be an int (a graph id of the batch) or None, got {type(graph).__name__}")
        graph = int(graph)
        if b is None:
            if graph != 0:
                raise ValueError(f"graph={graph} but no batch vector was given: the input is one graph (graph=0)")
        else:
            G = int(b.max()) + 1 if n else 0
            if not 0 <= graph < G:
                raise ValueError(f"graph must lie in [0, {G}) (the graph ids of the batch), got {graph}")
            nodes = np.flatnonzero(b == graph).astype(np.int64)
            if nodes.size == 0:
                raise ValueError(f"graph {graph} has no nodes in the batch")
            Lc = Lc[nodes][:, nodes].tocsr()
            qv = qv[nodes]
    if nodes.size == 0:
        raise ValueError("nothing to explain: the graph has no nodes")

    lam = np.linspace(0.0, 2.0, num_points)
    p = evaluate_polynomial(c, lam, basis)
    p_read = evaluate_polynomial(c, np.linspace(0.0, 2.0, _READING_POINTS), basis)
    q_med = float(np.median(qv))
    h = q_med / (np.maximum(p, 0.0) + q_med)
    R = eig = None
    m = nodes.size
    if rows and m <= max_nodes_for_rows:
        R = np.asarray(tikhonov_solve(Lc, c, qv, np.eye(m), basis=basis, backend=backend), dtype=np.float64)
        eig = np.linalg.eigvalsh(Lc.toarray())
    return Explanation(q=qv.copy(), lam=lam, p=p, h=h, q_median=q_med, reading=_read_curve(p_read, flat_tol, band_tol),
                       coeffs=c.copy(), basis=basis, edge_index=_edges_of(Lc), nodes=nodes, graph=graph, R=R,
                       laplacian_eigenvalues=eig)


# ---------------------------------------------------------------------------------------------------
# explanation quality


def _average_ranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..n of v, ties sharing the mean of the ranks they span."""
    _, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)  # rank of the last member of each tie group
    return (last - (counts - 1) / 2.0)[inverse]


def _auroc(q: np.ndarray, y: np.ndarray) -> float:
    pos = int(y.sum())
    neg = y.size - pos
    r = _average_ranks(q)
    return float((r[y].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def explanation_auroc(q, motif_mask, *, batch=None) -> float:
    r"""AUROC of node importances against ground-truth important nodes.

    .. math:: \mathrm{AUROC} = \frac{1}{|P|\,|N|} \sum_{i \in P} \sum_{j \in N}
              \big( [q_i > q_j] + \tfrac12 [q_i = q_j] \big),

    the probability that a random ground-truth node gets a larger q than a random other node (ties
    count one half), computed from average ranks (Mann–Whitney U) in :math:`O(n \log n)`; 0.5 is
    chance, 1 a perfect ranking. No scikit-learn needed (it agrees with
    ``sklearn.metrics.roc_auc_score(motif_mask, q)``).

    Parameters
    ----------
    q : array-like or torch tensor, shape (n,)
        Scores (e.g. :attr:`Explanation.q`); finite.
    motif_mask : array-like of bool (or 0/1), shape (n,)
        True on the ground-truth important nodes (e.g. ``GraphSample.motif_mask`` of
        :func:`fastnips.data.graphs.ba_motifs`).
    batch : array-like of int, shape (n,), optional
        Graph id per node. Given, the AUROC is computed within each graph and averaged over the graphs
        that hold both kinds of node (scores are then compared only inside a graph); without it, all
        nodes are pooled.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        Shapes that differ or are not 1-D, non-finite q, a mask with values other than 0/1, or no
        positive or no negative node (per graph with ``batch``: no graph with both).
    TypeError
        Non-numeric q or mask.

    Examples
    --------
    >>> from fastnips.graph import explanation_auroc
    >>> explanation_auroc([0.9, 0.1, 0.5, 0.5], [True, False, True, False])
    0.875
    """
    qv = _to_numpy(q)
    if qv.dtype.kind not in "biuf":
        raise TypeError(f"q must hold real numbers, got dtype {qv.dtype}")
    qv = np.asarray(qv, dtype=np.float64)
    if qv.ndim != 1:
        raise ValueError(f"q must be 1-D (one score per node), got shape {qv.shape}")
    if not np.all(np.isfinite(qv)):
        raise ValueError("q contains NaN or inf")
    mv = _to_numpy(motif_mask)
    if mv.dtype.kind not in "biuf":
        raise TypeError(f"motif_mask must hold booleans (or 0/1), got dtype {mv.dtype}")
    if mv.shape != qv.shape:
        raise ValueError(f"motif_mask must have the shape of q, {qv.shape}, got {mv.shape}")
    if mv.dtype.kind != "b":
        if not np.all((mv == 0) | (mv == 1)):
            raise ValueError("motif_mask must hold booleans or 0/1 only")
        mv = mv != 0
    mv = mv.astype(bool, copy=False)
    if batch is None:
        pos = int(mv.sum())
        if pos == 0 or pos == mv.size:
            raise ValueError(f"AUROC needs both ground-truth and other nodes; motif_mask has {pos} of {mv.size} "
                             "nodes True")
        return _auroc(qv, mv)
    b = _batch_vector(batch, qv.shape[0])
    scores = []
    for g in np.unique(b):
        sel = b == g
        pos = int(mv[sel].sum())
        if 0 < pos < int(sel.sum()):
            scores.append(_auroc(qv[sel], mv[sel]))
    if not scores:
        raise ValueError("AUROC needs a graph with both ground-truth and other nodes; none has both")
    return float(np.mean(scores))


# ---------------------------------------------------------------------------------------------------
# layouts


def spring_layout(edge_index, num_nodes: int, *, seed=0, iterations: int = 200) -> np.ndarray:
    r"""Fruchterman–Reingold force-directed layout in numpy, scaled to :math:`[-1, 1]^2`.

    Attraction :math:`d^2 / k` along edges, repulsion :math:`k^2 / d` between all pairs, with
    :math:`k = 1/\sqrt n` on the unit square, and a step bounded by a temperature that cools linearly
    from 0.1 to 0 (as networkx's ``spring_layout``). :math:`O(n^2)` per iteration: meant for graphs
    one draws, up to a few thousand nodes.

    Parameters
    ----------
    edge_index : array-like of int, shape (2, E)
    num_nodes : int
    seed : int, default 0
        Seed of the random initial positions; the same seed gives the same layout.
    iterations : int, default 200

    Returns
    -------
    ndarray, shape (num_nodes, 2)
    """
    n = _nonneg_int("num_nodes", num_nodes)
    iterations = _nonneg_int("iterations", iterations)
    ei = _check_edges(edge_index, n)
    rng = np.random.default_rng(seed)
    pos = rng.random((n, 2))
    if n <= 1:
        return np.zeros((n, 2))
    und = ei[:, ei[0] < ei[1]] if ei.size else ei
    src, dst = und
    k = 1.0 / np.sqrt(n)
    t0 = 0.1
    for it in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.sqrt((delta**2).sum(-1))
        np.fill_diagonal(dist, 1.0)
        dist = np.maximum(dist, 1e-3)
        disp = (delta * (k * k / dist**2)[..., None]).sum(axis=1)  # repulsion k^2/d along the unit vector
        if src.size:
            d = pos[src] - pos[dst]
            dl = np.maximum(np.sqrt((d**2).sum(-1)), 1e-3)
            f = d * (dl / k)[:, None]  # attraction d^2/k along the unit vector
            np.add.at(disp, src, -f)
            np.add.at(disp, dst, f)
        length = np.maximum(np.sqrt((disp**2).sum(-1)), 1e-9)
        t = t0 * (1.0 - it / max(iterations, 1))
        pos += disp * (np.minimum(length, t) / length)[:, None]
    pos -= pos.mean(axis=0)
    scale = np.abs(pos).max()
    return pos / scale if scale > 0 else pos


def _check_edges(edge_index, n: int) -> np.ndarray:
    ei = _to_numpy(edge_index)
    if ei.dtype.kind not in "iu":
        raise TypeError(f"edge_index must hold integers, got dtype {ei.dtype}")
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}")
    ei = ei.astype(np.int64, copy=False)
    if ei.size and (ei.min() < 0 or ei.max() >= n):
        e = int(np.flatnonzero(((ei < 0) | (ei >= n)).any(axis=0))[0])
        raise ValueError(f"edge_index: edge {e} = ({ei[0, e]}, {ei[1, e]}) has a node id outside [0, n) = [0, {n}) "
                         "(the explained nodes, in local ids: use Explanation.edge_index for one graph of a batch)")
    return ei


def _layout(layout, ei: np.ndarray, n: int, seed) -> np.ndarray:
    if isinstance(layout, str):
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS} or an array of positions of shape ({n}, 2), "
                             f"got {layout!r}")
        if layout == "kamada_kawai":
            nx = _optional._try_import("networkx")
            if nx is None:
                warnings.warn("plot_explanation: layout='kamada_kawai' needs networkx, which is not installed; "
                              "using the built-in spring layout instead", UserWarning, stacklevel=3)
            elif n > 1:
                G = nx.Graph()
                G.add_nodes_from(range(n))
                G.add_edges_from(map(tuple, ei.T.tolist()))
                init = spring_layout(ei, n, seed=seed)  # KK needs a start; a seeded one keeps it reproducible
                pos = nx.kamada_kawai_layout(G, pos={i: init[i] for i in range(n)})
                return np.array([pos[i] for i in range(n)], dtype=np.float64)
        return spring_layout(ei, n, seed=seed)
    pos = np.asarray(layout)
    if pos.dtype.kind not in "biuf":
        raise TypeError(f"layout positions must be real numbers, got dtype {pos.dtype}")
    if pos.shape != (n, 2):
        raise ValueError(f"layout positions must have shape (n, 2) = ({n}, 2), got {pos.shape}")
    if not np.all(np.isfinite(pos)):
        raise ValueError("layout positions contain NaN or inf")
    return pos.astype(np.float64)


# ---------------------------------------------------------------------------------------------------
# drawing

_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}


def _no_display() -> bool:
    if sys.platform.startswith("linux") or "bsd" in sys.platform:
        return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return False


def plot_explanation(explanation: Explanation, edge_index=None, *, path=None, ax=None, layout="spring", seed=0,
                     motif_mask=None, cmap: str = "viridis", title: str | None = None):
    r"""Draw an explanation: the graph coloured by q, and the filter p on [0, 2] with its reading.

    Left panel: the graph (edges grey, nodes coloured by :math:`q_i` with a colorbar; a log colour scale
    when :math:`\max q / \min q > 100`), with a red ring around the ground-truth nodes of
    ``motif_mask``. Right panel: :math:`p(\lambda)` on [0, 2] (left axis), titled with its reading
    (:func:`filter_reading`); the response :math:`h(\lambda) = \bar q / (p(\lambda) + \bar q)` at the
    median q, dashed, on a twin axis in [0, 1]; and, when the explanation holds it, the spectrum of
    L as ticks along the bottom (p only matters there).

    matplotlib is an optional dependency (``pip install matplotlib`` or ``fastnips[plot]``), imported
    here on first use. When ``matplotlib.pyplot`` is not imported yet and there is no display (Linux
    without ``DISPLAY``/``WAYLAND_DISPLAY``), the non-interactive Agg backend is selected first.

    Parameters
    ----------
    explanation : Explanation
        From :meth:`fastnips.graph.TikhonovGNN.explain` or :func:`explain_tikhonov`.
    edge_index : array-like of int, shape (2, E), optional
        Edges in the explanation's local node ids ``0..n-1``; default ``explanation.edge_index`` (the
        graph the explanation was computed on; for ``graph=i``, that graph relabelled).
    path : str or os.PathLike, optional
        Save the figure there; the format follows the extension, ``.png`` (150 dpi), ``.pdf`` or
        ``.svg``.
    ax : sequence of two matplotlib Axes, optional
        (graph axes, curve axes) to draw into; default: a new figure of two panels.
    layout : {"spring", "kamada_kawai"} or array of shape (n, 2), default "spring"
        ``"spring"``: :func:`spring_layout` (numpy, Fruchterman–Reingold). ``"kamada_kawai"``:
        networkx's ``kamada_kawai_layout`` if networkx is installed, else the spring layout with a
        ``UserWarning``. An array gives the node positions.
    seed : int, default 0
        Seed of the layout.
    motif_mask : array-like of bool, shape (n,), optional
        Ground-truth important nodes to ring. For an explanation of one graph of a batch
        (``explanation.graph`` set), a mask over the whole batch is accepted too and restricted to
        ``explanation.nodes``.
    cmap : str, default "viridis"
        Colormap of q.
    title : str, optional
        Figure title, set only when the figure is created here (``ax`` not given); default: the reading
        and the median q.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ImportError
        matplotlib is not installed (the message says what to install).
    ValueError
        Edges outside the explanation's nodes, a layout or mask of the wrong shape, an unknown layout,
        a path with an extension other than .png/.pdf/.svg, ``ax`` not a pair of Axes.
    TypeError
        ``explanation`` not an :class:`Explanation`.
    """
    if not isinstance(explanation, Explanation):
        raise TypeError(f"explanation must be an Explanation (from explain_tikhonov or TikhonovGNN.explain), got "
                        f"{type(explanation).__name__}")
    fmt = None
    if path is not None:
        ext = os.path.splitext(os.fspath(path))[1].lower()
        if ext not in _FORMATS:
            raise ValueError(f"path must end in one of {sorted(_FORMATS)} (the format follows the extension), got "
                             f"{os.fspath(path)!r}")
        fmt = _FORMATS[ext]
    n = explanation.num_nodes
    ei = _check_edges(explanation.edge_index if edge_index is None else edge_index, n)
    mask = None
    if motif_mask is not None:
        mask = _to_numpy(motif_mask)
        if mask.dtype.kind not in "biu":
            raise TypeError(f"motif_mask must hold booleans (or 0/1), got dtype {mask.dtype}")
        mask = mask.astype(bool)
        if explanation.graph is not None and mask.ndim == 1 and mask.shape[0] != n and \
                mask.shape[0] > int(explanation.nodes.max()):
            mask = mask[explanation.nodes]  # a mask over the whole batch
        if mask.shape != (n,):
            raise ValueError(f"motif_mask must have shape ({n},) (one entry per explained node), got "
                             f"{_to_numpy(motif_mask).shape}")
    pos = _layout(layout, ei, n, seed)

    mpl = _optional.require("matplotlib")
    if "matplotlib.pyplot" not in sys.modules and _no_display():
        mpl.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.colors import LogNorm, Normalize

    if ax is None:
        fig, (ax_g, ax_p) = plt.subplots(1, 2, figsize=(11.0, 4.6), gridspec_kw={"width_ratios": [1.15, 1.0]})
    else:
        try:
            ax_g, ax_p = ax
        except (TypeError, ValueError):
            raise ValueError("ax must be a pair of matplotlib Axes (graph panel, curve panel)") from None
        fig = ax_g.figure

    # --- the graph, coloured by q
    q = explanation.q
    qmin, qmax = float(q.min()), float(q.max())
    log = qmin > 0 and qmax / qmin > 100.0
    norm = LogNorm(qmin, qmax) if log else Normalize(qmin, qmax if qmax > qmin else qmin + 1e-12)
    und = ei[:, ei[0] < ei[1]]
    if und.shape[1]:
        ax_g.add_collection(LineCollection(np.stack([pos[und[0]], pos[und[1]]], axis=1), colors="0.6",
                                           linewidths=0.9, zorder=1))
    size = float(np.clip(4000.0 / max(n, 1), 12.0, 220.0))
    sc = ax_g.scatter(pos[:, 0], pos[:, 1], c=q, cmap=cmap, norm=norm, s=size, edgecolors="0.2", linewidths=0.4,
                      zorder=2)
    if mask is not None and mask.any():
        ax_g.scatter(pos[mask, 0], pos[mask, 1], s=size * 2.6, facecolors="none", edgecolors="tab:red",
                     linewidths=1.6, zorder=3, label="ground-truth nodes")
        ax_g.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=8, frameon=False, markerscale=0.6)
    cb = fig.colorbar(sc, ax=ax_g, fraction=0.046, pad=0.02)
    cb.set_label("q (node importance)" + (", log scale" if log else ""))
    ax_g.set_aspect("equal")
    ax_g.margins(0.06)
    ax_g.set_xticks([])
    ax_g.set_yticks([])
    for s in ax_g.spines.values():
        s.set_visible(False)
    where = "" if explanation.graph is None else f" (graph {explanation.graph})"
    ax_g.set_title(f"node importance q{where}, n = {n}", fontsize=10)

    # --- the filter
    lam, p, h = explanation.lam, explanation.p, explanation.h
    (lp,) = ax_p.plot(lam, p, color="tab:blue", lw=2.0, label=r"penalty $p(\lambda)$")
    ax_p.set_xlim(0.0, 2.0)
    top = float(p.max())
    ax_p.set_ylim(min(0.0, float(p.min())), top * 1.08 if top > 0 else 1.0)
    ax_p.set_xlabel(r"graph frequency $\lambda$ (eigenvalue of $L$)")
    ax_p.set_ylabel(r"$p(\lambda)$", color="tab:blue")
    ax_p.tick_params(axis="y", labelcolor="tab:blue")
    handles = [lp]
    eig = explanation.laplacian_eigenvalues
    if eig is not None and eig.size:
        handles += ax_p.plot(eig, np.zeros_like(eig), "|", color="0.3", ms=9, mew=0.8, clip_on=False,
                             label="spectrum of L")
    tw = ax_p.twinx()
    (lh,) = tw.plot(lam, h, color="tab:orange", lw=1.6, ls="--",
                    label=rf"response $h(\lambda)$, $\bar q$ = {explanation.q_median:.3g}")
    tw.set_ylim(0.0, 1.05)
    tw.set_ylabel(r"$h(\lambda) = \bar q\,/\,(p(\lambda) + \bar q)$", color="tab:orange")
    tw.tick_params(axis="y", labelcolor="tab:orange")
    handles.insert(1, lh)
    ax_p.legend(handles=handles, loc="best", fontsize=8, frameon=False)
    ax_p.set_title(f"filter: {explanation.reading} (K = {explanation.coeffs.shape[0] - 1}, {explanation.basis})",
                   fontsize=10)

    if title is None:
        title = f"Tikhonov layer explanation: {explanation.reading} filter, median q = {explanation.q_median:.3g}"
    if ax is None:
        fig.suptitle(title, fontsize=11)
        fig.tight_layout()
    if path is not None:
        fig.savefig(path, format=fmt, dpi=150, bbox_inches="tight")
    return fig
