r"""The normalized Laplacian of a PyG edge list as a fixed sparsity pattern with differentiable values.

The torch layers build :math:`L = I - D^{-1/2} A D^{-1/2}` here rather than with
:func:`fastnips.graph.normalized_laplacian` (its scipy oracle, same conventions), for two reasons:

* **Gradients in the edge weights.** The pattern (which entries of L exist, and which edges feed each
  one) depends on ``edge_index`` only; the values are torch operations on ``edge_weight``, so
  :math:`\partial \ell / \partial w_e` follows from :math:`\partial \ell / \partial L_{ij}` (computed by
  the adjoint solve in :mod:`fastnips.graph._implicit`) by ordinary autograd.
* **Caching.** The pattern is built once per graph (:class:`LaplacianCache`) and the values, O(E) vector
  operations, again on every call: a changed ``edge_weight`` can never meet stale values, and a changed
  ``edge_index`` (another tensor, or the same one modified in place) rebuilds the pattern.

Conventions (those of :func:`fastnips.graph.normalized_laplacian`): :math:`A \leftarrow \max(A, A^\top)`
after summing repeated edges; input self loops dropped, or with ``add_self_loops=True`` one loop per node
as PyG's ``add_remaining_self_loops`` (a node's own loop keeps its weight, the last one listed if it has
several; every other node gets weight 1); isolated nodes :math:`L_{ii} = 1`. The maximum is written
:math:`\max(a, b) = (a + b + |a - b|)/2`, whose gradient at a tie (an undirected list: both directions
with one weight) is 1/2 for each direction, the mean of the one-sided derivatives.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from .checks import _mark_checked


class LaplacianPattern:
    """The entries of L for one edge list on ``n`` nodes: CSR structure and the edges behind each entry."""

    def __init__(self, ei: np.ndarray, n: int, add_self_loops: bool = False):
        self.n, self.num_edges, self.add_self_loops = int(n), int(ei.shape[1]), bool(add_self_loops)
        row, col = ei
        off = row != col
        self.off_edges = np.flatnonzero(off)
        keys = row[off] * n + col[off]
        uniq, self.edge_to_pair = np.unique(keys, return_inverse=True)  # repeated edges add up
        self.num_pairs = uniq.size
        rev = (uniq % n) * n + uniq // n
        sym = np.union1d(uniq, rev)  # the off-diagonal entries of max(A, A^T), row-major
        diag = np.arange(n, dtype=np.int64) * (n + 1)
        allk = np.union1d(sym, diag)
        self.off_pos = np.searchsorted(allk, sym)
        self.diag_pos = np.searchsorted(allk, diag)
        self.off_rows, self.off_cols = sym // n, sym % n
        self.fwd = _find(uniq, sym, self.num_pairs)  # pair index of (i, j), or num_pairs (a zero) if absent
        self.bwd = _find(uniq, (sym % n) * n + sym // n, self.num_pairs)
        rows = allk // n
        idx = np.int32 if max(allk.size, n) < 2**31 - 1 else np.int64
        self.indices = (allk % n).astype(idx)
        self.indptr = np.zeros(n + 1, dtype=idx)
        np.cumsum(np.bincount(rows, minlength=n), out=self.indptr[1:])
        self.nnz = int(allk.size)
        # the last-listed self loop of every node (-1: none), as PyG's add_remaining_self_loops keeps it
        self.loop_edge = np.full(n, -1, dtype=np.int64)
        loops = np.flatnonzero(~off)
        np.maximum.at(self.loop_edge, row[loops], loops)
        self._t: dict = {}

    def _tensors(self, device) -> dict:
        key = str(device)
        if key not in self._t:
            t = lambda a: torch.as_tensor(a, dtype=torch.int64, device=device)
            self._t[key] = {k: t(getattr(self, k)) for k in ("off_edges", "edge_to_pair", "off_pos", "diag_pos",
                                                                  "off_rows", "off_cols", "fwd", "bwd", "loop_edge")}
        return self._t[key]

    def values(self, w: torch.Tensor | None, dtype=torch.float64, device="cpu") -> torch.Tensor:
        """The stored entries of L (CSR order, shape (nnz,)), differentiable in ``w`` (shape (E,); None: ones)."""
        t = self._tensors(device if w is None else w.device)
        n = self.n
        w = torch.ones(self.num_edges, dtype=dtype, device=t["fwd"].device) if w is None else w.to(dtype)
        pair = torch.zeros(self.num_pairs + 1, dtype=dtype, device=w.device)
        pair = pair.index_add(0, t["edge_to_pair"], w[t["off_edges"]])
        a, b = pair[t["fwd"]], pair[t["bwd"]]
        a = 0.5 * (a + b + (a - b).abs())  # max(A, A^T); ties split the gradient evenly
        loops = torch.zeros(n, dtype=dtype, device=w.device)
        if self.add_self_loops:
            has = t["loop_edge"] >= 0
            loops = torch.where(has, w[t["loop_edge"].clamp_min(0)] if self.num_edges else loops, 1.0 + loops)
        deg = loops.index_add(0, t["off_rows"], a)
        pos = deg > 0
        dinv = torch.where(pos, torch.where(pos, deg, 1.0).rsqrt(), 0.0)
        vals = torch.zeros(self.nnz, dtype=dtype, device=w.device)
        vals = vals.index_put((t["off_pos"],), -a * (dinv[t["off_rows"]] * dinv[t["off_cols"]]))
        return vals.index_put((t["diag_pos"],), 1.0 - loops * (dinv * dinv))

    def csr(self, vals: torch.Tensor) -> sp.csr_matrix:
        """The scipy CSR matrix with these values (float64), tagged as checked: symmetric by construction
        (every off-diagonal value is a commutative function of its pair), diagonal in [0, 1]."""
        data = np.ascontiguousarray(vals.detach().to(device="cpu", dtype=torch.float64).numpy())
        return _mark_checked(sp.csr_matrix((data, self.indices, self.indptr), shape=(self.n, self.n)))


def _find(sorted_keys: np.ndarray, keys: np.ndarray, missing: int) -> np.ndarray:
    """Index of each key in sorted_keys, or ``missing`` where absent."""
    i = np.searchsorted(sorted_keys, keys)
    i = np.minimum(i, max(sorted_keys.size - 1, 0))
    found = (sorted_keys.size > 0) & (sorted_keys[i] == keys) if sorted_keys.size else np.zeros(keys.shape, bool)
    return np.where(found, i, missing).astype(np.int64)


def check_edge_weight(edge_weight, E: int) -> torch.Tensor | None:
    """``edge_weight`` as a floating tensor of shape (E,), finite and >= 0 (None stays None)."""
    if edge_weight is None:
        return None
    w = edge_weight if isinstance(edge_weight, torch.Tensor) else torch.as_tensor(np.asarray(edge_weight))
    if w.is_complex():
        raise TypeError(f"edge_weight must hold real numbers, got dtype {w.dtype}")
    if w.shape != (E,):
        raise ValueError(f"edge_weight must have shape (E,) = ({E},), got {tuple(w.shape)}")
    if not w.is_floating_point():
        w = w.to(torch.float64)
    wd = w.detach()
    if not bool(torch.isfinite(wd).all()):
        e = int(torch.nonzero(~torch.isfinite(wd))[0])
        raise ValueError(f"edge_weight contains NaN or inf (edge {e}: {float(wd[e])})")
    if E and not bool((wd >= 0).all()):
        e = int(torch.nonzero(wd < 0)[0])
        raise ValueError(f"edge_weight must be >= 0 (edge {e} has weight {float(wd[e])})")
    return w


class LaplacianCache:
    """One graph's :class:`LaplacianPattern` (and, without edge weights, its L), kept across forward calls.

    A call hits the cache when ``edge_index`` is the very tensor of the last call, not modified in place
    since (torch's version counter), or holds equal contents (compared element by element, O(E)), for the
    same ``num_nodes`` and self-loop option; anything else rebuilds it. The values of L are recomputed
    from ``edge_weight`` on every call that passes weights, so no weight change is ever missed.
    """

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        """Forget the cached graph."""
        self._ei_obj, self._ei_version, self._ei_copy, self._key = None, None, None, None
        self.pattern: LaplacianPattern | None = None
        self._unweighted = None
        self.builds = 0

    def pattern_edges(self) -> np.ndarray | None:
        """The cached (validated, int64) edge list, or None."""
        return self._ei_copy

    def _hit(self, edge_index, ei_np_fn, key) -> np.ndarray | None:
        if self.pattern is None or key != self._key:
            return None
        if isinstance(edge_index, torch.Tensor) and edge_index is self._ei_obj \
                and edge_index._version == self._ei_version:
            return self._ei_copy
        ei = ei_np_fn()
        return ei if ei.shape == self._ei_copy.shape and np.array_equal(ei, self._ei_copy) else None

    def laplacian(self, edge_index, ei_np_fn, n: int, edge_weight, add_self_loops: bool = False):
        """(L as a checked scipy CSR, its values as a torch tensor or None): the values tensor is returned
        only when ``edge_weight`` requires grad. ``ei_np_fn()`` gives the validated int64 numpy edge list."""
        key = (int(n), bool(add_self_loops))
        ei = self._hit(edge_index, ei_np_fn, key)
        if ei is None:
            ei = ei_np_fn()
            self.pattern = LaplacianPattern(ei, n, add_self_loops)
            self._ei_copy, self._key, self._unweighted = ei.copy(), key, None
            self.builds += 1
        if isinstance(edge_index, torch.Tensor):
            self._ei_obj, self._ei_version = edge_index, edge_index._version
        w = check_edge_weight(edge_weight, self.pattern.num_edges)
        if w is None:
            if self._unweighted is None:
                self._unweighted = self.pattern.csr(self.pattern.values(None))
            return self._unweighted, None
        if w.requires_grad and torch.is_grad_enabled():
            vals = self.pattern.values(w)
            return self.pattern.csr(vals), vals
        with torch.no_grad():
            return self.pattern.csr(self.pattern.values(w)), None
