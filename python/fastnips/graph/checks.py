"""Argument checks of the Tikhonov solves: L, q, X, the coefficients, tolerances, batches and methods.

Every public entry point of :mod:`fastnips.graph` validates its inputs here before any computation
(house rule: bad input gets a clear error, never a wrong answer). What is checked of L: square, finite,
symmetric (to 1e-10 relative in float64, 1e-5 in float32) and diagonal in :math:`[0, 2]`; its spectrum is
not (an eigenvalue solve), and the solvers detect an indefinite operator themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .. import _optional
from .reference import BASES

#: Solve methods of :func:`~fastnips.graph.tikhonov_solve` (``"auto"`` picks one of the others).
METHODS = ("auto", "cg", "direct", "dense")
#: The backends that implement each method; any other (backend, method) pair raises ``ValueError``.
METHOD_BACKENDS = {"cg": ("reference", "cpp", "triton", "cuda"), "direct": ("reference",),
                   "dense": ("reference", "cpp")}
#: Every backend of :func:`~fastnips.graph.tikhonov_solve`, whatever the method.
SOLVE_BACKENDS = ("reference", "cpp", "triton", "cuda")
#: Backends that run the CG solve on a torch device (:mod:`fastnips.graph._device`).
DEVICE_BACKENDS = ("triton", "cuda")
#: ``method="auto"`` picks ``"dense"`` when a ``batch`` is given and every graph has at most this many nodes.
DENSE_AUTO_MAX_NODES = 256
#: The solution accuracy the CG defaults aim at: max |Y - Y_exact| <= ACCURACY * max |Y_exact| per call.
ACCURACY = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 1e-5}
#: Default relative residual per column, by computation dtype: one decade below :data:`ACCURACY`, since the
#: error is the residual amplified by up to cond(A) (measured: a factor 2-4 with the Jacobi preconditioner).
DEFAULT_TOL = {np.dtype(np.float64): 1e-11, np.dtype(np.float32): 1e-6}


def _method_check(method: str, op: str = "tikhonov_solve"):
    """``check=`` for :func:`fastnips._backend.resolve`: why ``backend`` cannot run ``method`` ("" when it
    can; ``"auto"`` allows every backend, the method is then picked for it)."""
    def check(backend: str) -> str:
        if method == "auto" or backend in METHOD_BACKENDS.get(method, ()):
            return ""
        pairs = ", ".join(f"({b!r}, {m!r})" for m, bs in METHOD_BACKENDS.items() for b in bs)
        hint = " (the sparse factorisation runs in scipy / CHOLMOD: use backend='reference' or 'auto')" \
            if method == "direct" else ""
        return f"{op}: method={method!r} has no {backend!r} backend{hint}. The (backend, method) pairs are: {pairs}"
    return check


def _check_basis(basis) -> str:
    if basis not in BASES:
        raise ValueError(f"basis must be one of {BASES}, got {basis!r}")
    return basis


def _check_method(method) -> str:
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def _check_n_threads(n_threads) -> int:
    if not isinstance(n_threads, int | np.integer) or isinstance(n_threads, bool) or n_threads < 0:
        raise ValueError(f"n_threads must be a non-negative int, got {n_threads!r}")
    return int(n_threads)


def _coefficients(coeffs, name: str = "coeffs", symbols: str = "theta_0 ... theta_K") -> np.ndarray:
    """Polynomial coefficients as a contiguous float64 vector: real, 1-D, non-empty, finite."""
    c = _to_numpy(coeffs)
    if c.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {c.dtype}")
    c = np.ascontiguousarray(c, dtype=np.float64)
    if c.ndim != 1 or c.shape[0] < 1:
        raise ValueError(f"{name} must be a non-empty 1-D array ({symbols}), got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError(f"{name} contains NaN or inf")
    return c


def _to_numpy(a) -> np.ndarray:
    if _optional.is_torch_tensor(a):
        torch = _optional.torch()
        if a.layout != torch.strided:
            a = a.to_dense()
        return a.detach().cpu().numpy()
    return np.asarray(a)


def _checked_key(A: sp.csr_matrix) -> tuple:
    return (id(A.data), id(A.indices), id(A.indptr), A.shape)


def _mark_checked(A: sp.csr_matrix) -> sp.csr_matrix:
    """Tag a CSR built by :func:`_as_csr` (square, finite, symmetric, diagonal in [0, 2], canonical,
    contiguous int32/int64 indices) so that passing it back skips the checks: the layer validates L once and
    solves with it twice. The tag names the very arrays checked; scipy operations return untagged matrices."""
    A._fastnips_checked = _checked_key(A)
    return A


def _as_csr(L, dtype: np.dtype) -> sp.csr_matrix:
    if isinstance(L, sp.csr_matrix) and getattr(L, "_fastnips_checked", None) == _checked_key(L):
        if L.dtype == dtype:
            return L
        data = L.data.astype(dtype)  # symmetry survives the cast; finiteness is re-checked
        if not np.all(np.isfinite(data)):
            raise ValueError("L contains NaN or inf")
        return _mark_checked(sp.csr_matrix((data, L.indices, L.indptr), shape=L.shape))
    if _optional.is_scipy_sparse(L):
        A = sp.csr_matrix(L)
    elif _optional.is_torch_tensor(L):
        torch = _optional.torch()
        if L.layout == torch.strided:
            A = sp.csr_matrix(L.detach().cpu().numpy())
        else:
            Lc = L.detach().cpu().to_sparse_csr()
            if Lc.dim() != 2:
                raise ValueError(f"L must be 2-D, got shape {tuple(Lc.shape)}")
            A = sp.csr_matrix((Lc.values().numpy(), Lc.col_indices().numpy(), Lc.crow_indices().numpy()),
                              shape=tuple(Lc.shape))
    elif isinstance(L, np.ndarray):
        if L.ndim != 2:
            raise ValueError(f"L must be a square matrix, got shape {L.shape}")
        A = sp.csr_matrix(L)
    else:
        raise TypeError(f"L must be a scipy.sparse matrix, a numpy array or a torch tensor, got {type(L).__name__}")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"L must be square, got shape {A.shape}")
    if A.dtype.kind not in "biuf":
        raise TypeError(f"L must hold real numbers, got dtype {A.dtype}")
    A = A.astype(dtype, copy=A.dtype != dtype)
    if not np.all(np.isfinite(A.data)):
        raise ValueError("L contains NaN or inf")
    if not A.has_canonical_format:  # never reorder the caller's arrays in place
        A = A.copy()
        A.sum_duplicates()
    scale = float(np.abs(A.data).max(initial=0.0))
    asym = abs(A - A.T)
    gap = float(asym.max()) if asym.nnz else 0.0
    rtol = 1e-10 if dtype == np.float64 else 1e-5
    if gap > rtol * max(scale, 1.0):
        raise ValueError(
            f"L must be symmetric (max |L - L^T| = {gap:.3g}); for a directed edge list build L with "
            "normalized_laplacian(..., symmetrize=True)")
    diag = A.diagonal()
    slack = 1e-12 if dtype == np.float64 else 1e-6
    if diag.size and (diag.min() < -slack or diag.max() > 2.0 + slack):
        i = int(np.argmin(diag) if diag.min() < -slack else np.argmax(diag))
        raise ValueError(
            f"L[{i}, {i}] = {diag[i]:.6g} lies outside [0, 2], so the spectrum of L cannot lie in [0, 2] "
            "(pass a normalized Laplacian, e.g. from normalized_laplacian)")
    idx = np.int32 if max(A.nnz, A.shape[0]) < 2**31 - 1 else np.int64
    return _mark_checked(sp.csr_matrix((np.ascontiguousarray(A.data), np.ascontiguousarray(A.indices, dtype=idx),
                                        np.ascontiguousarray(A.indptr, dtype=idx)), shape=A.shape))


def _weights(q, n: int, dtype: np.dtype) -> np.ndarray:
    qn = _to_numpy(q)
    if qn.dtype.kind not in "biuf":
        raise TypeError(f"q must hold real numbers, got dtype {qn.dtype}")
    if qn.ndim == 0:
        qn = np.full(n, float(qn))
    if qn.shape != (n,):
        raise ValueError(f"q must have shape ({n},) (one weight per node) or be a scalar, got {qn.shape}")
    qn = np.ascontiguousarray(qn, dtype=dtype)
    if not np.all(np.isfinite(qn)):
        raise ValueError("q contains NaN or inf")
    if n and not np.all(qn > 0):
        i = int(np.argmin(qn))
        raise ValueError(f"q must be > 0 everywhere (q[{i}] = {float(qn[i])!r}); R = (p(L) + Q)^-1 Q needs Q positive "
                         "definite")
    return qn


def _tolerance(tol, dtype: np.dtype) -> float:
    if tol is None:
        return DEFAULT_TOL[dtype]
    if isinstance(tol, bool) or not isinstance(tol, int | float | np.integer | np.floating):
        raise TypeError(f"tol must be a float, got {type(tol).__name__}")
    if not 0.0 < float(tol) < 1.0:
        raise ValueError(f"tol must lie in (0, 1), got {tol!r}")
    return float(tol)


#: The largest ``maxiter`` accepted (the native solvers count iterations in int64).
MAXITER_LIMIT = 2**62


def condition_bound(pmin: float, pmax: float, q: np.ndarray) -> float:
    r""":math:`\kappa(p(L) + Q) \le (\max_{[0,2]} p + \max q) / (\min_{[0,2]} p + \min q)` (spec(L) in [0, 2])."""
    if q.size == 0:
        return 1.0
    return (max(pmax, 0.0) + float(q.max())) / (max(pmin, 0.0) + float(q.min()))


def _maxiter(maxiter, kappa: float, tol: float, n: int) -> int:
    """The CG iteration limit: the user's, or twice the unpreconditioned bound plus 50, capped at
    max(1000, 10 n) (CG ends in n steps in exact arithmetic; the cap keeps a hopeless kappa, e.g. from
    q = 1e-40, from asking for more iterations than any solve could run)."""
    if maxiter is None:
        if n == 0:
            return 1
        root = math.sqrt(min(kappa, 1e300))
        bound = 0.5 * root * math.log(2.0 * root / tol)
        return int(min(2 * math.ceil(min(bound, 1e18)) + 50, max(1000, 10 * n)))
    if isinstance(maxiter, bool) or not isinstance(maxiter, int | np.integer) or not 1 <= maxiter <= MAXITER_LIMIT:
        raise ValueError(f"maxiter must be a positive int (at most 2**62), got {maxiter!r}")
    return int(maxiter)


def _max_fill(max_fill) -> float:
    if isinstance(max_fill, bool) or not isinstance(max_fill, int | float | np.integer | np.floating):
        raise TypeError(f"max_fill must be a number, got {type(max_fill).__name__}")
    if not float(max_fill) > 0:
        raise ValueError(f"max_fill must be > 0 (a number of stored entries; inf switches the guard off), got "
                         f"{max_fill!r}")
    return float(max_fill)


@dataclass(frozen=True)
class _Blocks:
    """Blocks of a block-diagonal L: block b holds the nodes order[offsets[b]:offsets[b + 1]]; labels[b] is
    its graph id (or component number), for messages."""

    order: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    @staticmethod
    def from_ids(ids: np.ndarray) -> _Blocks:
        order = np.argsort(ids, kind="stable").astype(np.int64)
        labels, counts = np.unique(ids, return_counts=True)
        offsets = np.zeros(labels.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return _Blocks(order=order, offsets=offsets, labels=labels.astype(np.int64))


def _graph_ids(batch, n: int) -> np.ndarray:
    """A PyG batch vector (graph id per node) as int64 numpy: integers, shape (n,), ids >= 0."""
    b = _to_numpy(batch)
    if b.dtype.kind not in "iu":
        raise TypeError(f"batch must hold integers (a graph id per node), got dtype {b.dtype}")
    if b.ndim != 1 or b.shape[0] != n:
        raise ValueError(f"batch must have one graph id per node: shape ({n},), got {tuple(b.shape)}")
    if n and b.min() < 0:
        raise ValueError(f"batch must hold graph ids >= 0, got {int(b.min())}")
    return b.astype(np.int64, copy=False)


def _batch_blocks(ids: np.ndarray, Lc: sp.csr_matrix) -> _Blocks:
    """The blocks of a validated batch vector, after checking that no nonzero of L joins two graphs."""
    C = Lc.tocoo()
    nz = C.data != 0
    row, col = C.row[nz], C.col[nz]
    cross = np.flatnonzero(ids[row] != ids[col])
    if cross.size:
        i, j = int(row[cross[0]]), int(col[cross[0]])
        raise ValueError(
            f"batch does not match L: L[{i}, {j}] != 0 joins graph {ids[i]} to graph {ids[j]}; a block-diagonal "
            "batch has no edge between two graphs")
    return _Blocks.from_ids(ids)


def _component_blocks(Lc: sp.csr_matrix) -> _Blocks:
    """The connected components of L's nonzero pattern, numbered 0.. (scipy.sparse.csgraph)."""
    P = Lc.copy()
    P.eliminate_zeros()
    _, labels = connected_components(P, directed=False)
    return _Blocks.from_ids(labels.astype(np.int64))


def _pick_method(method, ids: np.ndarray | None) -> str:
    """The concrete method: "auto" is "dense" for a batch of graphs of <= DENSE_AUTO_MAX_NODES nodes, else "cg"."""
    if _check_method(method) != "auto":
        return method
    if ids is not None and ids.size and np.unique(ids, return_counts=True)[1].max() <= DENSE_AUTO_MAX_NODES:
        return "dense"
    return "cg"


