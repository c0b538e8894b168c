r"""The symmetric normalized graph Laplacian from a PyG-style edge list."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .. import _optional


def normalized_laplacian(edge_index: ArrayLike, num_nodes: int | None, edge_weight: ArrayLike | None = None, *,
                         add_self_loops: bool = False,
                         symmetrize: bool = True) -> sp.csr_matrix:
    r"""The symmetric normalized Laplacian of a graph given as a PyG edge list.

    .. math:: L = I - D^{-1/2} A D^{-1/2}, \qquad D = \mathrm{diag}(A \mathbf 1),

    with the convention :math:`0^{-1/2} = 0`, so an **isolated node gets** :math:`L_{ii} = 1` (and no
    other entry in its row), exactly as PyG's ``get_laplacian(normalization="sym")``, which adds the
    identity for every node after normalising. With ``add_self_loops=True`` the graph is first given
    a self loop per node, :math:`\hat A = A + I`, as PyG's ``gcn_norm``/APPNP do; then
    :math:`\hat L = I - \hat D^{-1/2} \hat A \hat D^{-1/2}` (no node is isolated any more). For
    undirected graphs the spectrum of L lies in :math:`[0, 2]`; that of :math:`\hat L` in :math:`[0, 2)`.

    Conventions, following PyG where it has one:

    * ``edge_index[0]`` is the source and ``edge_index[1]`` the target of each edge; an undirected
      graph lists every edge in both directions (PyG's ``is_undirected``).
    * **Symmetrisation** (``symmetrize=True``, the default): :math:`A \leftarrow \max(A, A^\top)`
      element-wise, i.e. an edge listed in one direction only counts in both. On an edge list that is
      already undirected (both directions, equal weights) this changes nothing, and L then equals
      PyG's ``get_laplacian(edge_index, edge_weight, normalization="sym")`` entry for entry. It makes
      L symmetric, which :func:`fastnips.graph.tikhonov_solve` requires. With ``symmetrize=False``
      the list is used as given: :math:`A_{ij}` is the weight of edge :math:`i \to j`, degrees are row
      sums (PyG's out-degree of ``edge_index[0]``), and L is not symmetric for a directed list.
    * **Self loops** in the input are dropped (as ``get_laplacian`` does), unless
      ``add_self_loops=True``: then, as PyG's ``add_remaining_self_loops``, a node keeps its own
      self-loop weight and every other node gets a loop of weight 1. A node listed with several loops
      keeps one, the last listed (PyG assigns them in order, so the last write wins; they are not
      summed).
    * **Repeated edges** add up (PyG's ``coalesce`` and scipy's COO convention).

    Parameters
    ----------
    edge_index : array-like or torch tensor of int, shape (2, E)
        Directed edge list: edge e goes from ``edge_index[0, e]`` to ``edge_index[1, e]``.
    num_nodes : int or None
        Number of nodes n; ``None`` means ``edge_index.max() + 1`` (0 without edges). Isolated nodes
        (ids < n with no edge) are allowed.
    edge_weight : array-like or torch tensor, shape (E,), optional
        Non-negative finite weights (default 1). The result is float32 for float32 weights, else
        float64.
    add_self_loops : bool, default False
        Build :math:`\hat L` from :math:`\hat A = A + I` (see above).
    symmetrize : bool, default True
        Symmetrise the adjacency by an element-wise maximum (see above).

    Returns
    -------
    L : scipy.sparse.csr_matrix, shape (n, n)
        Sorted indices, no duplicates, the diagonal stored for every node; exactly symmetric when
        ``symmetrize=True`` (each off-diagonal entry is computed as
        :math:`a_{ij} (d_i^{-1/2} d_j^{-1/2})`, a commutative product).

    Raises
    ------
    ValueError
        ``edge_index`` not of shape (2, E); a node id outside ``[0, num_nodes)`` (the message names the
        edge); ``num_nodes`` negative; ``edge_weight`` of the wrong length, negative, NaN or inf.
    TypeError
        Non-integer ``edge_index``, non-real ``edge_weight``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastnips.graph import normalized_laplacian
    >>> L = normalized_laplacian(np.array([[0, 1], [1, 0]]), 3)     # one edge and an isolated node 2
    >>> L.toarray()
    array([[ 1., -1.,  0.],
           [-1.,  1.,  0.],
           [ 0.,  0.,  1.]])
    """
    ei = _to_numpy(edge_index)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}")
    if ei.dtype.kind not in "iu":
        raise TypeError(f"edge_index must hold integers, got dtype {ei.dtype}")
    ei = ei.astype(np.int64, copy=False)
    E = ei.shape[1]
    if num_nodes is None:
        n = int(ei.max()) + 1 if E else 0
    else:
        if isinstance(num_nodes, bool) or not isinstance(num_nodes, int | np.integer):
            raise TypeError(f"num_nodes must be an int or None, got {type(num_nodes).__name__}")
        n = int(num_nodes)
        if n < 0:
            raise ValueError(f"num_nodes must be >= 0, got {n}")
    if E:
        bad = (ei < 0) | (ei >= n)
        if bad.any():
            e = int(np.flatnonzero(bad.any(axis=0))[0])
            raise ValueError(f"edge_index: edge {e} = ({ei[0, e]}, {ei[1, e]}) has a node id outside "
                             f"[0, num_nodes) = [0, {n})")
    if edge_weight is None:
        w = np.ones(E, dtype=np.float64)
        dtype = np.dtype(np.float64)
    else:
        w = _to_numpy(edge_weight)
        if w.dtype.kind not in "biuf":
            raise TypeError(f"edge_weight must hold real numbers, got dtype {w.dtype}")
        if w.shape != (E,):
            raise ValueError(f"edge_weight must have shape (E,) = ({E},), got {tuple(w.shape)}")
        dtype = np.dtype(np.float32) if w.dtype == np.float32 else np.dtype(np.float64)
        w = w.astype(np.float64)
        if not np.all(np.isfinite(w)):
            e = int(np.flatnonzero(~np.isfinite(w))[0])
            raise ValueError(f"edge_weight contains NaN or inf (edge {e}: {w[e]})")
        if np.any(w < 0):
            e = int(np.flatnonzero(w < 0)[0])
            raise ValueError(f"edge_weight must be >= 0 (edge {e} has weight {w[e]})")

    row, col = ei
    loop = row == col
    keep = ~loop
    A = sp.coo_matrix((w[keep], (row[keep], col[keep])), shape=(n, n)).tocsr()
    A.sum_duplicates()
    if symmetrize:
        A = A.maximum(A.T).tocsr()
    if add_self_loops:
        loops = np.ones(n)
        if loop.any():  # one loop per node: the last one listed (PyG's add_remaining_self_loops)
            last = np.full(n, -1, dtype=np.int64)
            np.maximum.at(last, row[loop], np.flatnonzero(loop))
            has = last >= 0
            loops[has] = w[last[has]]
        A = (A + sp.diags(loops, format="csr")).tocsr()
    A.sum_duplicates()
    deg = np.asarray(A.sum(axis=1)).ravel()
    dinv = np.zeros(n)
    pos = deg > 0
    dinv[pos] = 1.0 / np.sqrt(deg[pos])
    C = A.tocoo()
    vals = -C.data * (dinv[C.row] * dinv[C.col])
    diag = np.arange(n)
    L = sp.coo_matrix((np.concatenate([vals, np.ones(n)]), (np.concatenate([C.row, diag]),
                                                            np.concatenate([C.col, diag]))), shape=(n, n)).tocsr()
    L.sum_duplicates()
    L.sort_indices()
    return L.astype(dtype, copy=False) if dtype != L.dtype else L


def _to_numpy(a) -> np.ndarray:
    if _optional.is_torch_tensor(a):
        return a.detach().cpu().numpy()
    return np.asarray(a)
