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

Only numpy and scipy are imported here; the drawing (:mod:`fastnips.graph.plotting`) imports matplotlib
(and networkx, for one layout) inside :func:`plot_explanation`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .checks import _as_csr, _check_basis, _coefficients, _to_numpy, _weights
from .polynomial import _check_polynomial, evaluate_polynomial
from .solve import tikhonov_solve

__all__ = ["LAYOUTS", "READINGS", "Explanation", "explain_tikhonov", "explanation_auroc", "filter_reading",
           "plot_explanation", "spring_layout"]

#: The possible readings of a filter polynomial p (see :func:`filter_reading`).
READINGS = ("low-pass", "high-pass", "band-pass", "band-stop", "flat")

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

    def to_pyg(self, x: ArrayLike | None = None):
        r"""This explanation as a PyG ``torch_geometric.explain.Explanation`` (needs torch_geometric).

        ``node_mask`` is q, shape (n, 1) (one importance per node, PyG's ``node_mask_type="object"``),
        ``edge_index`` the explained graph's edges in local ids and ``num_nodes`` n; PyG's tools then
        apply (``validate()``, ``get_explanation_subgraph()``, ``visualize_feature_importance`` with
        ``x``). The filter is attached as ``filter_lam`` / ``filter_p`` (the curve), ``filter_reading``,
        and ``R`` when it was computed; ``nodes`` maps local ids to the input's node ids.

        Parameters
        ----------
        x : array-like or torch tensor, shape (n, F), optional
            The explained nodes' features, stored as ``x``.

        Returns
        -------
        torch_geometric.explain.Explanation
        """
        import warnings

        from .. import _optional

        torch = _optional.torch()
        with warnings.catch_warnings():  # PyG's own import-time deprecation warnings are not ours to show
            warnings.simplefilter("ignore", DeprecationWarning)
            explain_mod = _optional.require("torch_geometric.explain")
        fields = dict(node_mask=torch.as_tensor(self.q, dtype=torch.float64).reshape(-1, 1),
                      edge_index=torch.as_tensor(self.edge_index, dtype=torch.int64), num_nodes=self.num_nodes,
                      nodes=torch.as_tensor(self.nodes), filter_lam=torch.as_tensor(self.lam),
                      filter_p=torch.as_tensor(self.p), filter_reading=self.reading)
        if x is not None:
            xt = torch.as_tensor(np.asarray(x) if not _optional.is_torch_tensor(x) else x)
            if xt.dim() != 2 or xt.shape[0] != self.num_nodes:
                raise ValueError(f"x must have shape ({self.num_nodes}, F) (the explained nodes), got "
                                 f"{tuple(xt.shape)}")
            fields["x"] = xt
        if self.R is not None:
            fields["R"] = torch.as_tensor(self.R)
        return explain_mod.Explanation(**fields)

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


def filter_reading(coeffs: ArrayLike, *, basis: str = "bernstein", flat_tol: float = FLAT_TOL,
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


def explain_tikhonov(coeffs: ArrayLike, q: ArrayLike, L: sp.spmatrix | sp.sparray | ArrayLike, *,
                     basis: str = "bernstein", batch: ArrayLike | None = None, graph: int | None = None,
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
      solve at the default tolerance), and the spectrum of L (dense ``eigvalsh``).

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


def explanation_auroc(q: ArrayLike, motif_mask: ArrayLike, *, batch: ArrayLike | None = None) -> float:
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


# drawing (plotting imports Explanation from here, so it comes last)
from .plotting import LAYOUTS, plot_explanation, spring_layout  # noqa: E402
