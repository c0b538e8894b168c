r"""Factorised Tikhonov solves: :math:`A = p(L) + \mathrm{diag}(q)` factorised once, solved many times.

.. math:: A = p(L) + Q = \mathcal L \mathcal L^\top, \qquad Y = A^{-1} Q X, \qquad \Lambda = A^{-1} G.

* ``"direct"``: A assembled as a sparse matrix by the Chebyshev recurrence, then a sparse Cholesky
  (CHOLMOD via scikit-sparse when installed, else scipy's SuperLU with symmetric pivoting).
* ``"dense"``: for block-diagonal L (a PyG batch of small graphs), one dense Cholesky factor per block
  (C++/Eigen with OpenMP over blocks for the cpp backend, numpy for the reference).

Paper: Tremblay, Ricaud, Bianchi, "A Generalized Tikhonov Layer for Interpretable-by-design Graph Neural
Networks" (arXiv 2605.28578).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import ArrayLike, DTypeLike

from .. import _backend, _optional
from .checks import (
    _as_csr,
    _batch_blocks,
    _check_basis,
    _check_n_threads,
    _coefficients,
    _component_blocks,
    _graph_ids,
    _max_fill,
    _method_check,
    _to_numpy,
    _weights,
)
from .polynomial import _chebyshev_sum, _check_polynomial, _degree, chebyshev_coefficients
from .reference import dense_block_factors_reference, dense_block_solve_reference

__all__ = ["DEFAULT_MAX_FILL", "TikhonovFactor", "tikhonov_factorize"]

#: Default ``max_fill``: the most stored entries of p(L) (``"direct"``) or of the dense blocks (``"dense"``).
DEFAULT_MAX_FILL = 50_000_000
#: Backends of the factorised methods (``"direct"``: reference only; see ``checks.METHOD_BACKENDS``).
FACTOR_BACKENDS = ("reference", "cpp")
# The fill bound of "direct" counts the K-hop neighbourhoods of at most this many (walk-bounded) entries at once.
_FILL_CHUNK = 4_000_000


class TikhonovFactor:
    r"""The operator :math:`A = p(L) + \mathrm{diag}(q)` factorised once, for many solves.

    Made by :func:`tikhonov_factorize`. :meth:`solve` gives :math:`R X = A^{-1} Q X` (what
    :func:`tikhonov_solve` returns) and :meth:`solve_adjoint` gives :math:`A^{-1} G`, the adjoint solve of
    implicit differentiation (A is symmetric, so :math:`R^\top G = Q A^{-1} G`); each costs two triangular
    solves per column and no new factorisation.

    Attributes
    ----------
    n : int
        Number of nodes.
    method : {"direct", "dense"}
    backend : {"reference", "cpp"}
    solver : str
        ``"direct-cholmod"``, ``"direct-superlu"`` or ``"dense-cholesky"`` (as in :class:`TikhonovInfo`).
    dtype : numpy.dtype
        The precision of the factor (``"direct"`` and the reference ``"dense"``: float64).
    q : ndarray, shape (n,)
        The node weights of A (a read-only copy).
    n_blocks : int
        ``"dense"``: the number of blocks (graphs or connected components); ``"direct"``: 1.
    max_block : int
        ``"dense"``: the largest block's size; ``"direct"``: n.
    nnz_operator : int
        Stored entries of A: the nonzeros of the assembled sparse A, or :math:`\sum_g n_g^2`.
    nnz_factor : int or None
        Stored nonzeros of the factor: CHOLMOD's L, SuperLU's L + U, or :math:`\sum_g n_g (n_g + 1) / 2`;
        None where the installed factoriser does not report it.
    """

    def __init__(self, *, n: int, q: ArrayLike, method: str, backend: str, solver: str, dtype: DTypeLike,
                 n_blocks: int, max_block: int, nnz_operator: int, nnz_factor: int | None,
                 solve_fn: Callable[[np.ndarray, np.ndarray | None], np.ndarray]):
        self.n, self.method, self.backend, self.solver = int(n), method, backend, solver
        self.dtype = np.dtype(dtype)
        self.q = np.array(q, dtype=self.dtype)
        self.q.flags.writeable = False
        self.n_blocks, self.max_block = int(n_blocks), int(max_block)
        self.nnz_operator = int(nnz_operator)
        self.nnz_factor = None if nnz_factor is None else int(nnz_factor)
        self._solve_fn = solve_fn  # (B (n, F) in self.dtype, scale (n,) or None) -> A^{-1} (scale o B)

    def solve(self, X: ArrayLike):
        r""":math:`Y = (p(L) + Q)^{-1} Q X`.

        Parameters
        ----------
        X : array-like or torch tensor, shape (n,) or (n, F), finite

        Returns
        -------
        ndarray or torch tensor, the shape of X, in X's float dtype (float64 for integer X); computed in
        :attr:`dtype`.
        """
        return self._public(X, "X", scaled=True)

    def solve_adjoint(self, G: ArrayLike):
        r""":math:`\Lambda = (p(L) + Q)^{-1} G`: the adjoint solve of implicit differentiation.

        With :math:`Y = A^{-1} Q X` and upstream gradient G: :math:`\partial \ell / \partial X = Q \Lambda`,
        :math:`\partial \ell / \partial q_i = \sum_f \Lambda_{if} (X_{if} - Y_{if})`. Shapes and dtypes as
        :meth:`solve`.
        """
        return self._public(G, "G", scaled=False)

    def _public(self, X, name, *, scaled):
        torch_out = _optional.is_torch_tensor(X)
        Xn = _to_numpy(X)
        if Xn.dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers, got dtype {Xn.dtype}")
        if Xn.ndim not in (1, 2) or Xn.shape[0] != self.n:
            raise ValueError(f"{name} must have shape (n,) or (n, F) with n = {self.n}, got {Xn.shape}")
        out_dtype = np.dtype(np.float32) if Xn.dtype == np.float32 else np.dtype(np.float64)
        X2 = Xn.reshape(self.n, -1)
        if not np.all(np.isfinite(X2)):
            raise ValueError(f"{name} contains NaN or inf")
        Y = self._apply_inverse(X2, scaled=scaled).astype(out_dtype, copy=False).reshape(Xn.shape)
        return _optional.torch().from_numpy(np.ascontiguousarray(Y)) if torch_out else Y

    def _apply_inverse(self, X2, *, scaled: bool) -> np.ndarray:
        """A^{-1} (q o X2) (scaled) or A^{-1} X2, for a finite (n, F) array; returns (n, F) in self.dtype."""
        B = np.ascontiguousarray(X2, dtype=self.dtype)
        if self.n == 0 or B.shape[1] == 0:
            return np.zeros(B.shape, dtype=self.dtype)
        return np.asarray(self._solve_fn(B, self.q if scaled else None), dtype=self.dtype).reshape(B.shape)

    def __repr__(self) -> str:
        return (f"TikhonovFactor(n={self.n}, method={self.method!r}, backend={self.backend!r}, "
                f"solver={self.solver!r}, dtype={self.dtype}, n_blocks={self.n_blocks}, max_block={self.max_block}, "
                f"nnz_operator={self.nnz_operator}, nnz_factor={self.nnz_factor})")


def tikhonov_factorize(L: sp.spmatrix | sp.sparray | ArrayLike, coeffs: ArrayLike, q: ArrayLike, *,
                       basis: str = "bernstein", method: str = "direct", batch: ArrayLike | None = None,
                       backend: str = "auto", max_fill: float = DEFAULT_MAX_FILL, dtype: DTypeLike = np.float64,
                       n_threads: int = 0) -> TikhonovFactor:
    r"""Factorise :math:`A = p(L) + \mathrm{diag}(q)` once, to solve many right-hand sides.

    .. math:: \texttt{factor.solve}(X) = (p(L) + Q)^{-1} Q X, \qquad
              \texttt{factor.solve\_adjoint}(G) = (p(L) + Q)^{-1} G.

    ``factor.solve(X)`` equals ``tikhonov_solve(L, coeffs, q, X, method=method, ...)`` without the
    factorisation cost; the torch layer (:func:`fastnips.graph.tikhonov_prop`) factorises in forward and
    reuses the factor for the adjoint solve of its backward.

    Parameters
    ----------
    L : scipy.sparse matrix, numpy array or torch tensor, shape (n, n)
        A normalized Laplacian, checked as in :func:`tikhonov_solve`.
    coeffs : array-like, shape (K + 1,)
        :math:`\theta` in ``basis`` (Bernstein: >= 0; monomial: p >= 0 on [0, 2]; checked).
    q : array-like, shape (n,), or a scalar
        Node weights, finite and > 0.
    basis : {"bernstein", "monomial"}, default "bernstein"
    method : {"direct", "dense"}, default "direct"
        ``"direct"``: sparse Cholesky (CHOLMOD when scikit-sparse is installed, else SuperLU) of the
        assembled A, float64, backend reference only. ``"dense"``: one dense Cholesky factor per graph of
        ``batch`` (or per connected component without it); backends cpp and reference. See
        :func:`tikhonov_solve` (Notes) for the costs and the fill-in warning.
    batch : array-like of int, shape (n,), optional
        Graph id per node (any order; L block-diagonal for it, checked). ``"dense"`` only (checked and
        ignored by ``"direct"``).
    backend : {"auto", "cpp", "reference"}, default "auto"
        ``"auto"``: cpp for ``"dense"`` where built, else reference. (``"cpp"``, ``"direct"``) raises.
    max_fill : float, default :data:`DEFAULT_MAX_FILL` (5e7)
        Memory guard in stored entries (an upper bound on the nonzeros of p(L), or :math:`\sum_g n_g^2`),
        see :func:`tikhonov_solve`.
    dtype : {numpy.float64, numpy.float32}, default float64
        Precision of the cpp ``"dense"`` factor (L and q are converted to it). ``"direct"`` and the
        reference always factorise in float64.
    n_threads : int, default 0
        OpenMP threads for cpp (0: the OpenMP default).

    Returns
    -------
    TikhonovFactor

    Raises
    ------
    ValueError
        The input errors of :func:`tikhonov_solve`; a method other than "direct" or "dense"; an operator
        above ``max_fill``; a factorisation that finds A not positive definite (naming the graph for
        ``"dense"``).

    Examples
    --------
    >>> import numpy as np
    >>> from fastnips.graph import normalized_laplacian, tikhonov_factorize, tikhonov_solve
    >>> L = normalized_laplacian(np.array([[0, 1, 1, 2], [1, 0, 2, 1]]), 3)
    >>> f = tikhonov_factorize(L, [0.2, 0.5, 1.0], np.ones(3), method="direct")
    >>> X = np.eye(3)
    >>> bool(np.allclose(f.solve(X), tikhonov_solve(L, [0.2, 0.5, 1.0], np.ones(3), X)))
    True
    """
    _check_basis(basis)
    if method not in ("direct", "dense"):
        raise ValueError(f"tikhonov_factorize: method must be 'direct' or 'dense', got {method!r}")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be numpy.float32 or numpy.float64, got {dtype!r}") from None
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"dtype must be numpy.float32 or numpy.float64, got {dt}")
    n_threads = _check_n_threads(n_threads)
    b = _backend.resolve(backend, op="tikhonov_factorize", supported=FACTOR_BACKENDS,
                         check=_method_check(method, "tikhonov_factorize"))
    work = dt if (method == "dense" and b == "cpp") else np.dtype(np.float64)
    Lc = _as_csr(L, work)
    n = Lc.shape[0]
    qv = _weights(q, n, work)
    c = _coefficients(coeffs)
    _check_polynomial(c, basis)
    blocks = None if batch is None else _batch_blocks(_graph_ids(batch, n), Lc)
    return _factorize(Lc, c, basis, qv, method, b, blocks, _max_fill(max_fill), n_threads)



def _poly_nnz_bound(Lc: sp.csr_matrix, degree: int, limit: float) -> tuple[float, str]:
    r"""(a count of the K-hop neighbourhoods of all rows, how it was obtained): an upper bound on the
    nonzeros of p(L) (row i of p(L) lies in the K-hop neighbourhood of i; reached unless coefficients
    cancel). A result <= ``limit`` is that bound; a result > ``limit`` proves the neighbourhoods hold more
    than ``limit`` entries. Never a sample.

    With P the pattern of L + I and :math:`N_K(i)` the K-hop neighbourhood of i, in O(K nnz(L)):

    * upper: :math:`|N_K(i)| \le \min(n, (P^K \mathbf 1)_i)` (walks of length K);
    * lower: :math:`|N_K(i)| \ge 1 + \max_{j \in N_{K-1}(i)} \deg j` (a neighbour's neighbourhood).

    When the upper sum is <= ``limit`` the operator fits; when the lower sum is > ``limit`` it does not
    (a dense star is caught here at once). Only in between are the neighbourhoods counted exactly, a
    chunk of rows at a time (each chunk's upper bounds sum to at most ``_FILL_CHUNK``, so memory stays
    bounded), stopping as soon as the running count passes ``limit``."""
    n = Lc.shape[0]
    if n == 0 or degree == 0:
        return float(n), "exact"
    P = Lc.copy()
    P.eliminate_zeros()
    P = (abs(P) + sp.identity(n, format="csr")).tocsr()
    P.data[:] = 1.0
    walks = np.ones(n)
    for _ in range(degree):
        walks = P @ walks
    per_row = np.minimum(walks, float(n))
    total = float(per_row.sum())
    if total <= limit:
        return total, "walk bound"
    reach = np.diff(P.indptr).astype(np.float64)  # |N_1(j)|, then the max over (K - 1)-hop neighbourhoods
    rows = np.repeat(np.arange(n), np.diff(P.indptr))
    for _ in range(degree - 1):
        nxt = reach.copy()
        np.maximum.at(nxt, rows, reach[P.indices])
        reach = nxt
    lower = float(reach.sum())
    if lower > limit:
        return lower, "a lower bound, from the largest neighbourhood within reach of each row"
    count, start = 0.0, 0
    csum = np.concatenate([[0.0], np.cumsum(per_row)])
    while start < n:
        stop = min(max(int(np.searchsorted(csum, csum[start] + _FILL_CHUNK, side="right")) - 1, start + 1), n)
        S = sp.csr_matrix((np.ones(stop - start), (np.arange(stop - start), np.arange(start, stop))),
                          shape=(stop - start, n))
        for _ in range(degree):
            S = (S @ P).tocsr()
            S.data[:] = 1.0
        count += S.nnz
        if count > limit:
            return count, f"counted exactly over the first {stop} rows, already above"
        start = stop
    return count, "counted exactly"


def _sparse_cholesky(A: sp.csc_matrix):
    """(solve(B), nnz of the factor or None, solver name) for an SPD sparse A: CHOLMOD, else SuperLU."""
    chol = _optional.cholmod_or_none()
    if chol is not None:
        not_pd = getattr(chol, "CholmodNotPositiveDefiniteError", ())
        try:
            if hasattr(chol, "cho_factor"):  # scikit-sparse >= 0.5
                f = chol.cho_factor(sp.csc_array(A))
                solve = f.solve
            else:  # scikit-sparse < 0.5: cholesky() returns the Factor
                f = chol.cholesky(sp.csc_matrix(A))
                solve = f.solve_A
        except not_pd as exc:
            raise ValueError(f"p(L) + diag(q) is not positive definite (CHOLMOD: {exc}); L must be symmetric "
                             "with its spectrum in [0, 2] and p >= 0 on [0, 2]") from None
        nnz = getattr(f, "nnz", None)  # >= 0.5: a property (the column counts of L)
        if nnz is None or callable(nnz):  # < 0.5: count the factor L()
            Lf = getattr(f, "L", None)
            nnz = getattr(Lf() if callable(Lf) else Lf, "nnz", None)
        return solve, None if nnz is None else int(nnz), "direct-cholmod"
    try:
        lu = spla.splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    except RuntimeError as exc:  # "Factor is exactly singular"
        raise ValueError(f"p(L) + diag(q) is singular (SuperLU: {exc}); L must be symmetric with its spectrum "
                         "in [0, 2], q > 0 and p >= 0 on [0, 2]") from None
    # symmetric pivoting (perm_r == perm_c) makes U's diagonal the pivots of an LDL^T: all > 0 iff A is SPD
    pivots = lu.U.diagonal()
    if not np.array_equal(lu.perm_r, lu.perm_c) or not np.all(pivots > 0):
        raise ValueError("p(L) + diag(q) is not positive definite (SuperLU met a pivot <= 0 or had to pivot off "
                         "the diagonal); L must be symmetric with its spectrum in [0, 2] and p >= 0 on [0, 2]")
    return lu.solve, int(lu.L.nnz + lu.U.nnz), "direct-superlu"


def _factorize(Lc, c, basis, qv, method, backend, blocks, max_fill, n_threads) -> TikhonovFactor:
    """tikhonov_factorize after the checks (Lc, qv: validated, in the factor's precision)."""
    n = Lc.shape[0]
    cheb = chebyshev_coefficients(c, basis)
    if method == "direct":
        K = _degree(cheb)
        bound, how = _poly_nnz_bound(Lc, K, max_fill)
        if bound > max_fill:
            raise ValueError(
                f"method='direct': p(L) can have {bound:.3g} nonzeros (its rows' {K}-hop neighbourhoods: {how}), "
                f"above max_fill={max_fill:.3g}. The fill-in of p(L) grows like n d^K for average degree d; use "
                "method='cg' (matrix-free, no fill-in), or raise max_fill if the memory is there")
        L64 = Lc.astype(np.float64)
        A = (_chebyshev_sum(L64, cheb, sp.identity(n, format="csr")) + sp.diags(qv.astype(np.float64))).tocsc()
        A.eliminate_zeros()
        solve, nnz, solver = _sparse_cholesky(A)
        return TikhonovFactor(n=n, q=qv, method=method, backend=backend, solver=solver, dtype=np.float64,
                              n_blocks=1, max_block=n, nnz_operator=A.nnz, nnz_factor=nnz,
                              solve_fn=lambda B, s: solve(B if s is None else s[:, None] * B))
    if blocks is None:
        blocks = _component_blocks(Lc)
    sizes = blocks.sizes
    stored = int(np.sum(sizes.astype(np.int64) ** 2))
    if stored > max_fill:
        raise ValueError(
            f"method='dense': the dense blocks would hold {stored:.3g} entries (sum of n_g^2 over {sizes.size} "
            f"blocks, the largest with {int(sizes.max())} nodes), above max_fill={max_fill:.3g}; use method='cg', "
            "pass a batch of smaller graphs, or raise max_fill")
    nnz_factor = int(np.sum(sizes * (sizes + 1) // 2))
    common = dict(n=n, q=qv, method=method, backend=backend, solver="dense-cholesky", n_blocks=sizes.size,
                  max_block=int(sizes.max(initial=0)), nnz_operator=stored, nnz_factor=nnz_factor)
    order, offsets = blocks.order, blocks.offsets
    if backend == "cpp":
        C = _backend.native()
        factors = C.tikhonov_dense_factor(Lc.indptr, Lc.indices, Lc.data, cheb, qv, order, offsets,
                                          labels=blocks.labels, n_threads=n_threads)
        return TikhonovFactor(dtype=Lc.dtype, **common, solve_fn=lambda B, s: C.tikhonov_dense_solve(
            factors, order, offsets, B, s, n_threads=n_threads))
    factors = dense_block_factors_reference(Lc, c, basis, qv, order, offsets, blocks.labels)
    return TikhonovFactor(dtype=np.float64, **common, solve_fn=lambda B, s: dense_block_solve_reference(
        factors, order, offsets, B if s is None else s[:, None] * B))


