r"""The public Tikhonov solve :math:`Y = (p(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q) X`: checks, dispatch
to CG (cpp, reference, or a torch device), to the factorised methods, and the common report.

Paper: Tremblay, Ricaud, Bianchi, "A Generalized Tikhonov Layer for Interpretable-by-design Graph Neural
Networks" (arXiv 2605.28578).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .. import _backend, _optional
from .checks import (
    ACCURACY,  # noqa: F401  (documented next to tikhonov_solve)
    DEFAULT_TOL,  # noqa: F401  (documented next to tikhonov_solve)
    DEVICE_BACKENDS,
    METHOD_BACKENDS,  # noqa: F401
    METHODS,  # noqa: F401
    SOLVE_BACKENDS,
    _as_csr,
    _batch_blocks,
    _check_basis,
    _check_method,
    _check_n_threads,
    _coefficients,
    _graph_ids,
    _max_fill,
    _maxiter,
    _method_check,
    _pick_method,
    _to_numpy,
    _tolerance,
    _weights,
    condition_bound,
)
from .factor import DEFAULT_MAX_FILL, _factorize
from .polynomial import _chebyshev_sum, _check_polynomial, _extrema_on_interval, chebyshev_coefficients
from .reference import scaled_norms, tikhonov_solve_reference

__all__ = ["TikhonovInfo", "tikhonov_solve"]

# diag(p(L)) for the Jacobi preconditioner of the cpp backend: 0 = exact while cheap (about half a CG
# iteration), else the exact diagonal of p's degree-2 Chebyshev part.
_DIAGONAL_AUTO = 0


@dataclass(frozen=True)
class TikhonovInfo:
    """What :func:`tikhonov_solve` did (returned with ``return_info=True``).

    Attributes
    ----------
    backend : str
        ``"cpp"`` or ``"reference"``.
    method : str
        What ran. ``method="cg"``: ``"cg-jacobi"`` (cpp: block Jacobi-preconditioned CG), ``"spsolve"`` or
        ``"cg"`` (reference). ``method="direct"``: ``"direct-cholmod"`` or ``"direct-superlu"``.
        ``method="dense"``: ``"dense-cholesky"``. ``"none"`` when there was nothing to solve.
    iterations : ndarray of int64, shape (F,)
        CG iterations per column (0 for a direct solve or a zero right-hand side).
    residuals : ndarray of float64, shape (F,)
        Final true relative residuals :math:`\\|q \\circ x - (p(L) + Q) y\\|_2 / \\|q \\circ x\\|_2`,
        recomputed from the returned solution (0 for a zero right-hand side).
    converged : ndarray of bool, shape (F,)
        ``residuals <= tol``, whatever the method (a warning comes with every False).
    tol : float
        The tolerance used.
    maxiter : int
        The iteration limit used, per column (0 where no iteration ran: ``"direct"``, ``"dense"`` and the
        reference's ``"spsolve"``).
    jacobi_diagonal : str or None
        cpp only: ``"exact"`` when the preconditioner used diag(p(L)) exactly, ``"truncated"`` when it
        used the exact diagonal of p's degree-2 Chebyshev part instead, because the exact one would
        have cost more than about half a CG iteration (the solution is unaffected, only speed).
    nnz_factor : int or None
        ``"direct"`` and ``"dense"``: the stored nonzeros of the factor (:attr:`TikhonovFactor.nnz_factor`).
    """

    backend: str
    method: str
    iterations: np.ndarray
    residuals: np.ndarray
    converged: np.ndarray
    tol: float
    maxiter: int
    jacobi_diagonal: str | None = None
    nnz_factor: int | None = None



def tikhonov_solve(L: sp.spmatrix | sp.sparray | ArrayLike, coeffs: ArrayLike, q: ArrayLike, X: ArrayLike, *,
                   basis: str = "bernstein", tol: float | None = None, maxiter: int | None = None,
                   backend: str = "auto", return_info: bool = False, n_threads: int = 0, method: str = "auto",
                   batch: ArrayLike | None = None, max_fill: float = DEFAULT_MAX_FILL):
    r"""Solve the generalised graph Tikhonov problem :math:`(p(L) + \mathrm{diag}(q))\, Y = \mathrm{diag}(q)\, X`.

    .. math:: Y = (p(L) + Q)^{-1} Q X, \qquad
              y_{:,f} = \arg\min_z\; z^\top p(L) z + (z - x_{:,f})^\top Q (z - x_{:,f}),

    with :math:`Q = \mathrm{diag}(q)`, :math:`q > 0`, and p non-negative on :math:`[0, 2] \supseteq
    \mathrm{spec}(L)`, so that :math:`A = p(L) + Q` is symmetric positive definite with
    :math:`\min q \le \lambda(A) \le \max_{[0,2]} p + \max q`. The operator
    :math:`R = (p(L) + Q)^{-1} Q` has real eigenvalues in :math:`(0, 1]`; :math:`R v = v` exactly on the
    kernel of :math:`p(L)`; and :math:`R` is unchanged when q and p are scaled by one common factor.

    Parameters
    ----------
    L : scipy.sparse matrix or array, numpy array, or torch tensor (sparse or dense), shape (n, n)
        A symmetric matrix with spectrum in :math:`[0, 2]`, normally a normalized Laplacian from
        :func:`fastnips.graph.normalized_laplacian`. Checked: square, finite, symmetric (to 1e-10
        relative in float64, 1e-5 in float32) and diagonal in :math:`[0, 2]` (necessary for the
        spectrum to lie there). Not checked: the spectrum itself (an eigenvalue solve). If it leaves
        :math:`[0, 2]` and p + q < 0 there, the system is indefinite: the cpp CG detects the negative
        curvature and raises, and so do the factorisations of ``"direct"`` and ``"dense"``; the reference
        ``"cg"`` path does not (its direct solve would return the saddle point).
    coeffs : array-like, shape (K + 1,)
        The polynomial's coefficients :math:`\theta_0 \dots \theta_K` in ``basis``; K >= 0.
    q : array-like, shape (n,), or a scalar
        Per-node fidelity weights; every entry finite and > 0. A scalar means the same q for all nodes.
    X : array-like or torch tensor, shape (n,) or (n, F)
        Right-hand side signals (finite). The result has X's shape, and X's kind, without gradient
        tracking: a torch tensor in, a torch tensor out (on X's device for ``"triton"``/``"cuda"``, on
        the CPU for the host backends).
    basis : {"bernstein", "monomial"}, default "bernstein"
        ``"bernstein"``: :math:`p(\lambda) = \sum_k \theta_k \binom{K}{k} (\lambda/2)^k (1 - \lambda/2)^{K-k}`;
        coefficients must be >= 0, which makes p >= 0 on [0, 2] (BernNet's device).
        ``"monomial"``: :math:`p(\lambda) = \sum_k \theta_k \lambda^k`; p must be >= 0 on [0, 2]. This is
        checked exactly (end points, critical points and a 4097-point grid, after a Bernstein-coefficient
        certificate) and a p that dips below 0 raises ``ValueError``: the solution would not be a
        minimiser.
    tol : float, optional
        Relative residual per column, :math:`\|q \circ x - A y\|_2 \le \mathrm{tol}\, \|q \circ x\|_2` (the
        true residual, recomputed from the returned Y, with norms scaled so that they neither underflow
        nor overflow). It bounds the solution's error by :math:`\|y - y^*\|_2 / \|y^*\|_2 \le
        \kappa(A)\, \mathrm{tol}`. Default 1e-11 for float64 and 1e-6 for float32 computations: one decade
        below the accuracy the defaults are meant to deliver, :math:`\max|Y - Y^*| \le 10^{-10}` (float64)
        and :math:`10^{-5}` (float32) relative to :math:`\max|Y^*|` against a dense solve (the Jacobi
        preconditioned error is a few times the residual in practice, not :math:`\kappa` times; numbers in
        docs/notes/graph.md). Must lie in (0, 1). Only ``"cg"`` iterates to it; ``"direct"`` and ``"dense"``
        solve to rounding error and report (and warn) against the same tol when ``return_info=True``.
    maxiter : int, optional
        CG iterations per column (``"cg"`` only), at most 2**62. Default: twice the unpreconditioned CG
        bound :math:`\lceil \tfrac12 \sqrt{\kappa} \ln(2\sqrt{\kappa}/\mathrm{tol}) \rceil` with
        :math:`\kappa = (\max_{[0,2]} p + \max q) / (\min_{[0,2]} p + \min q)`, plus 50, capped at
        :math:`\max(1000, 10 n)` (CG ends in n steps in exact arithmetic; the cap keeps a hopeless
        :math:`\kappa`, such as q = 1e-40 gives, finite). ``info.maxiter`` and the warning name the limit
        that ran (0 for a direct solve).
    backend : {"auto", "cpp", "reference", "triton", "cuda"}, default "auto"
        The implementation; what each one does depends on ``method`` (see the Notes, with the table of
        (backend, method) pairs). For ``method="cg"``:
        ``"triton"`` / ``"cuda"``: the same block Jacobi-PCG on a torch device
        (:mod:`fastnips.graph._device`): each Chebyshev stage of p(L) is one fused sparse pass (Triton
        kernel, or the CUDA kernel of ``fastnips._C``) with its epilogue, the CG vector updates are fused
        Triton kernels (torch ops for ``"cuda"``), dots in float64, the preconditioner is the exact
        diagonal of p's degree-2 Chebyshev part. X stays on its device (a CUDA tensor in, a CUDA tensor
        out; L is validated on the host and copied to the device per call). ``"triton"`` also runs on CPU
        tensors under ``TRITON_INTERPRET=1`` (slowly: for tests). With ``backend="auto"`` a CUDA tensor X
        picks ``"cuda"`` (or ``"triton"``) where available.
        ``"cpp"``: matrix-free block Jacobi-preconditioned conjugate gradients in C++ (OpenMP). p is
        converted once to the Chebyshev basis of :math:`L - I`
        (:func:`chebyshev_coefficients`), so each application of p(L) costs K sparse products, each
        fused with its vector epilogue; all F columns run together (one CG per column, the sparse
        products and vector updates fused over the block, converged columns dropped from it). The
        preconditioner is Jacobi, :math:`\mathrm{diag}(p(L)) + q`. diag(p(L)) is computed exactly
        from the :math:`\lceil K/2 \rceil`-hop neighbourhoods (about :math:`n d^{\lceil K/2 \rceil + 1}`
        random accesses for average degree d) when K <= 2 or when that costs less than about half a CG
        iteration; otherwise the exact diagonal of the degree-2 Chebyshev part of p is used (a
        preconditioner about as good at a fraction of the cost; see docs/notes/graph.md). Either way the
        solution is the same; only the iteration count can move (``info.jacobi_diagonal`` says which).
        Computes in X's precision (float32 or float64; dot products in float64), and re-checks the true
        residual at the end, restarting a column whose recursive residual drifted.
        ``"reference"``: scipy, in float64. Up to :data:`fastnips.graph.reference.DIRECT_MAX_N` (2000)
        nodes, the operator :math:`p(L) + Q` is assembled and solved by ``scipy.sparse.linalg.spsolve``;
        above, each column runs ``scipy.sparse.linalg.cg`` (no preconditioner) on a matrix-free
        ``LinearOperator`` applying p(L) by Horner's rule (K sparse products).
        ``"auto"``: for ``"cg"`` the first available of cuda, triton (CUDA tensor X), cpp, reference
        (host X); for the factorised methods, cpp where the method has it, else reference.
    return_info : bool, default False
        Also return a :class:`TikhonovInfo` (iterations, true final residuals, convergence flags). For
        ``"direct"`` and ``"dense"`` the residuals cost K more sparse products (computed either way, for
        the warning).
    n_threads : int, default 0
        OpenMP threads for cpp (0: the OpenMP default, ``OMP_NUM_THREADS``).
    method : {"auto", "cg", "direct", "dense"}, default "auto"
        How to solve (see the Notes). ``"auto"``: ``"dense"`` when ``batch`` is given and every graph in it
        has at most :data:`DENSE_AUTO_MAX_NODES` (256) nodes, else ``"cg"``. ``"direct"`` is never picked
        automatically: its fill-in is unpredictable without looking (see ``max_fill``), and a caller who
        solves once gains nothing from a factorisation; ask for it, or use :func:`tikhonov_factorize`.
    batch : array-like or torch tensor of int, shape (n,), optional
        PyG graph id per node (ids >= 0, any order: the nodes of one graph need not be contiguous). L must be
        block-diagonal for it: a nonzero entry of L between two graphs raises ``ValueError``. Used by
        ``"dense"`` (one block per graph) and by ``"auto"``; checked and otherwise ignored by ``"cg"`` and
        ``"direct"``. Without it, ``"dense"`` takes the connected components of L as its blocks.
    max_fill : float, default :data:`DEFAULT_MAX_FILL` (5e7)
        Memory guard, in stored entries. ``"direct"``: an upper bound on the nonzeros of p(L), the sizes of
        the K-hop neighbourhoods of all rows, computed before p(L) is formed (a walk-count bound, K sparse
        matrix-vector products; where that exceeds ``max_fill``, an exact count, a chunk of rows at a time
        in bounded memory, stopping as soon as it passes ``max_fill``); ``"dense"``: :math:`\sum_g n_g^2`,
        the dense blocks. Above it, ``ValueError`` (suggesting ``method="cg"``) instead of an
        out-of-memory crash. 5e7 entries are about 0.6 GB for a sparse float64 matrix with int32 indices;
        pass ``float("inf")`` to switch the guard off. It bounds p(L), not the Cholesky factor, whose
        fill-in depends on the ordering (``info.nnz_factor`` reports it).

    Returns
    -------
    Y : ndarray or torch tensor, shape of X
        :math:`(p(L) + Q)^{-1} Q X`, in X's float dtype (float64 for integer X).
    info : TikhonovInfo
        Only with ``return_info=True``.

    Raises
    ------
    ValueError
        Non-square, non-finite, non-symmetric L or a diagonal outside [0, 2]; q not > 0 or not finite or
        of the wrong length; X of the wrong shape or non-finite; negative Bernstein coefficients; a
        monomial p < 0 somewhere on [0, 2]; an unknown basis, backend or method, or a (backend, method)
        pair that does not exist; tol, maxiter or max_fill out of range; a batch of the wrong length, with
        negative ids or with an edge between two graphs; ``"direct"``/``"dense"`` above ``max_fill``;
        an operator found indefinite during the solve (cpp CG, or any factorisation).
    TypeError
        Complex or non-numeric inputs, or an L that is not a matrix.

    Warns
    -----
    RuntimeWarning
        Whenever some column's true relative residual is above ``tol``, for every method: ``"cg"`` when it
        has not reached ``tol`` within ``maxiter`` iterations (the best iterate is returned), ``"direct"`` /
        ``"dense"`` when rounding in an ill-conditioned operator leaves it above (``info.converged`` is
        then False for those columns, and only then).

    Notes
    -----
    **Methods.** ``"cg"`` (the main path): matrix-free, never forms p(L); memory O(nF); cost per iteration
    K sparse products. Best for large graphs and for one solve per operator.

    ``"direct"``: assembles :math:`A = p(L) + Q` as a sparse matrix by the Chebyshev recurrence
    :math:`T_{k+1} = 2 (L - I) T_k - T_{k-1}` (sparse-sparse products in scipy, float64), factorises it
    once -- CHOLMOD via scikit-sparse (``sksparse.cholmod``) when it is installed (switch it off with
    ``FASTNIPS_DISABLE_CHOLMOD=1``), else scipy's SuperLU (``splu`` with the symmetric ordering
    ``MMD_AT_PLUS_A``, ``diag_pivot_thresh=0`` and ``SymmetricMode``, i.e. an :math:`LDL^\top`-like
    factorisation of the SPD matrix; the signs of its pivots certify positive definiteness) -- and solves
    all columns. **Fill-in:** p(L) has a nonzero wherever two nodes are within K hops, about
    :math:`n d^K` entries for average degree d, which for K = 4 and a random graph of 1e5 nodes is out of
    reach of memory while CG solves it in seconds (measurements: docs/notes/graph.md). ``max_fill``
    refuses such cases up front. Direct pays off
    for small graphs, low fill (grids, geometric graphs, K <= 2) and many solves with one operator (see
    :func:`tikhonov_factorize`; the torch layer reuses the factor for its backward).

    ``"dense"``: for block-diagonal L (a PyG mini-batch of many small graphs), per graph g the dense
    :math:`n_g \times n_g` operator :math:`p(L_g) + \mathrm{diag}(q_g)` (Chebyshev recurrence), its
    Cholesky factor (:math:`n_g^3/3` flops per graph, :math:`n_g^2` stored) and two triangular solves
    per column (:math:`2 n_g^2 F`). cpp: C++/Eigen, OpenMP over graphs, in X's precision; reference:
    numpy, per graph, float64. Best for TU-sized graphs (tens to a few hundred nodes), where CG's many
    short sparse products are latency-bound.

    ============  =============================================  ==========================================
    method        backend "cpp"                                  backend "reference"
    ============  =============================================  ==========================================
    ``"cg"``      block Jacobi-PCG (C++, OpenMP)                 scipy: spsolve up to 2000 nodes, else cg
    ``"direct"``  -- (``ValueError``)                            scipy assembly + CHOLMOD or SuperLU
    ``"dense"``   batched dense Cholesky (C++/Eigen, OpenMP)     numpy: eigh + cholesky per graph
    ============  =============================================  ==========================================

    ``"cg"`` also runs on a torch device with ``backend="triton"`` or ``"cuda"`` (the same block Jacobi-PCG,
    fused Triton / CUDA Chebyshev passes; :mod:`fastnips.graph._device`). The factorised methods are
    host-only.

    Conditioning: :math:`\kappa(A) \le (\max_{[0,2]} p + \max q) / \min q`, so CG needs about
    :math:`\tfrac12 \sqrt{\kappa} \ln(2/\varepsilon)` iterations; small q makes the problem hard. With
    p(0) = 0 on a connected graph without self loops, :math:`R\, D^{1/2} \mathbf 1 = D^{1/2} \mathbf 1`
    (the kernel of L is a fixed space). With :math:`p(\lambda) = \frac{1-\alpha}{\alpha} \lambda` on the
    self-loop Laplacian :math:`\hat L` and q = 1, :math:`R = \alpha (I - (1-\alpha) \hat A_n)^{-1}`
    exactly: PPNP, the limit of APPNP.

    Examples
    --------
    >>> import numpy as np
    >>> from fastnips.graph import normalized_laplacian, tikhonov_solve
    >>> edge_index = np.array([[0, 1, 1, 2], [1, 0, 2, 1]])          # a path 0 - 1 - 2
    >>> L = normalized_laplacian(edge_index, 3)
    >>> v = np.sqrt([1.0, 2.0, 1.0])               # D^{1/2} 1 spans the kernel of L
    >>> y = tikhonov_solve(L, [0.0, 0.5, 1.0], np.ones(3), v)   # Bernstein, K = 2, p(0) = theta_0 = 0
    >>> bool(np.allclose(y, v))                    # a fixed point of R
    True
    """
    _check_basis(basis)
    _check_method(method)
    if not isinstance(return_info, bool | np.bool_):
        raise TypeError(f"return_info must be a bool, got {type(return_info).__name__}")
    n_threads = _check_n_threads(n_threads)
    # CG runs where X lives (a CUDA tensor picks cuda/triton); the factorised methods run on the host
    b = _backend.resolve(backend, op="tikhonov_solve", supported=SOLVE_BACKENDS, check=_method_check(method),
                         like=X if method in ("auto", "cg") else None)
    if b in DEVICE_BACKENDS:
        return _solve_on_device(L, coeffs, q, X, basis=basis, tol=tol, maxiter=maxiter, backend=b,
                                return_info=return_info, batch=batch)
    torch_out = _optional.is_torch_tensor(X)
    Xn = _to_numpy(X)
    if Xn.dtype.kind not in "biuf":
        raise TypeError(f"X must hold real numbers, got dtype {Xn.dtype}")
    dtype = np.dtype(np.float32) if Xn.dtype == np.float32 else np.dtype(np.float64)
    Lc = _as_csr(L, dtype)
    n = Lc.shape[0]
    if Xn.ndim not in (1, 2) or Xn.shape[0] != n:
        raise ValueError(f"X must have shape (n,) or (n, F) with n = {n} (the size of L), got {Xn.shape}")
    vector = Xn.ndim == 1
    X2 = np.ascontiguousarray(Xn.reshape(n, 1) if vector else Xn, dtype=dtype)
    if not np.all(np.isfinite(X2)):
        raise ValueError("X contains NaN or inf")
    qv = _weights(q, n, dtype)
    c = _coefficients(coeffs)
    pmax = _check_polynomial(c, basis)
    tol = _tolerance(tol, dtype)
    ids = None if batch is None else _graph_ids(batch, n)
    blocks = None if ids is None else _batch_blocks(ids, Lc)
    how = _pick_method(method, ids)
    kappa = condition_bound(_extrema_on_interval(c, basis)[0], pmax, qv)
    maxiter = _maxiter(maxiter, kappa, tol, n)
    max_fill = _max_fill(max_fill)

    F = X2.shape[1]
    X2, scales = _scale_columns(X2, qv)  # exact powers of two: no norm under- or overflows, Y scales back
    diag = nnz_factor = None
    if n == 0 or F == 0:  # nothing to solve
        Y = np.zeros((n, F), dtype=dtype)
        iterations, residuals, what = np.zeros(F, np.int64), np.zeros(F), "none"
    elif how != "cg":
        factor = _factorize(Lc, c, basis, qv, how, b, blocks, max_fill, n_threads)
        Y = factor._apply_inverse(X2, scaled=True).astype(dtype, copy=False)
        iterations, what, nnz_factor = np.zeros(F, np.int64), factor.solver, factor.nnz_factor
        residuals = _relative_residuals(Lc, chebyshev_coefficients(c, basis), qv, X2, Y)
    elif b == "cpp":
        cheb = chebyshev_coefficients(c, basis)
        try:
            Y, iterations, residuals, _, exact = _backend.native().tikhonov_solve_cg(
                Lc.indptr, Lc.indices, Lc.data, cheb, qv, X2, float(tol), int(maxiter), n_threads=n_threads,
                diagonal=_DIAGONAL_AUTO)
        except ValueError as exc:
            raise _rounding_hint(exc, kappa, dtype) from None
        what, diag = "cg-jacobi", ("exact" if exact else "truncated")
    else:
        Y, iterations, residuals, what = tikhonov_solve_reference(Lc, c, qv, X2, basis=basis, tol=tol,
                                                                  maxiter=maxiter)
        Y = Y.astype(dtype, copy=False)
    Y = Y / scales.astype(Y.dtype)
    Y = Y.reshape(n) if vector else Y
    if torch_out:
        torch = _optional.torch()
        Y = torch.from_numpy(np.ascontiguousarray(Y))
    return _finish(Y, return_info, b, what, iterations, residuals, tol, maxiter, diag=diag, nnz_factor=nnz_factor)


#: What ``TikhonovInfo.method`` says for the iterative solvers (the others solve directly).
_ITERATIVE = ("cg-jacobi", "cg")


def _finish(Y, return_info: bool, backend: str, what: str, iterations, residuals, tol: float, maxiter: int, *,
            diag=None, nnz_factor=None):
    """The common tail of every solve path: ``converged = residuals <= tol`` for every method, a warning
    whenever some column is not converged, and the info (``maxiter`` 0 where no iteration ran)."""
    iterations = np.asarray(iterations, dtype=np.int64)
    residuals = np.asarray(residuals, dtype=np.float64)
    converged = residuals <= tol
    F = residuals.shape[0]
    maxiter = maxiter if what in _ITERATIVE else 0
    if F and not converged.all():
        worst = f"worst relative residual {residuals.max():.3g}, column {int(np.argmax(residuals))}"
        if maxiter:
            msg = (f"{int((~converged).sum())} of {F} columns did not reach tol={tol:g} in maxiter={maxiter} "
                   f"iterations ({worst}, after {int(iterations.max())} iterations); raise maxiter or check the "
                   "conditioning (small q makes the system hard)")
        else:
            msg = (f"{int((~converged).sum())} of {F} columns of the direct solve ({what}) have a residual above "
                   f"tol={tol:g} ({worst}): rounding amplified by the conditioning of p(L) + diag(q) (small q "
                   "makes it worse); compute in float64 or raise tol")
        warnings.warn(f"tikhonov_solve: {msg}", RuntimeWarning, stacklevel=3)
    if not return_info:
        return Y
    return Y, TikhonovInfo(backend=backend, method=what, iterations=iterations, residuals=residuals,
                           converged=converged, tol=float(tol), maxiter=int(maxiter), jacobi_diagonal=diag,
                           nnz_factor=nnz_factor)



def _solve_on_device(L, coeffs, q, X, *, basis, tol, maxiter, backend, return_info, batch):
    """tikhonov_solve with method "cg" on a torch device; validation as on the host, without copying X back."""
    from ._device import device_tikhonov_solve

    torch = _optional.torch()
    numpy_in = not _optional.is_torch_tensor(X)
    if numpy_in:
        Xn = np.asarray(X)
        if Xn.dtype.kind not in "biuf":
            raise TypeError(f"X must hold real numbers, got dtype {Xn.dtype}")
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        X = torch.as_tensor(Xn, device=dev)
    if X.is_complex() or X.dtype == torch.bool:
        raise TypeError(f"X must hold real numbers, got dtype {X.dtype}")
    tdtype = torch.float32 if X.dtype == torch.float32 else torch.float64
    dtype = np.dtype(np.float32) if tdtype == torch.float32 else np.dtype(np.float64)
    Lc = _as_csr(L, dtype)
    n = Lc.shape[0]
    if X.dim() not in (1, 2) or X.shape[0] != n:
        raise ValueError(f"X must have shape (n,) or (n, F) with n = {n} (the size of L), got {tuple(X.shape)}")
    X = X.to(tdtype)
    if not bool(torch.isfinite(X).all()):
        raise ValueError("X contains NaN or inf")
    if _optional.is_torch_tensor(q):
        qt = q.detach().to(device=X.device, dtype=tdtype)
        if qt.dim() == 0:
            qt = qt.expand(n)
        if qt.shape != (n,):
            raise ValueError(f"q must have shape ({n},) (one weight per node) or be a scalar, got {tuple(qt.shape)}")
        if n and not bool(torch.isfinite(qt).all()):
            raise ValueError("q contains NaN or inf")
        if n and not bool((qt > 0).all()):
            i = int(torch.argmin(qt))
            raise ValueError(f"q must be > 0 everywhere (q[{i}] = {float(qt[i])!r}); R = (p(L) + Q)^-1 Q needs Q "
                             "positive definite")
        qmin, qmax = (float(qt.min()), float(qt.max())) if n else (1.0, 1.0)
    else:
        qv = _weights(q, n, dtype)
        qt = torch.as_tensor(qv, device=X.device)
        qmin, qmax = (float(qv.min()), float(qv.max())) if n else (1.0, 1.0)
    if batch is not None:
        _graph_ids(batch, n)  # checked, as on the host: "cg" does not need it
    c = _coefficients(coeffs)
    pmax = _check_polynomial(c, basis)
    tol = _tolerance(tol, dtype)
    kappa = condition_bound(_extrema_on_interval(c, basis)[0], pmax, np.array([qmin, qmax]))
    maxiter = _maxiter(maxiter, kappa, tol, n)
    F = 1 if X.dim() == 1 else X.shape[1]
    if n == 0 or F == 0:
        Y, iterations, residuals = torch.zeros_like(X), np.zeros(F, np.int64), np.zeros(F)
    else:
        t = lambda a: torch.as_tensor(a, device=X.device)
        X2 = X.reshape(n, -1)
        A = X2.abs().double()
        k = column_scale_exponents((A * qt.double()[:, None]).amax(dim=0).cpu().numpy(),
                                   A.amax(dim=0).cpu().numpy(), dtype)  # as _scale_columns
        scales = torch.as_tensor(np.ldexp(1.0, k), device=X.device).to(X.dtype)
        try:
            Y, iterations, residuals = device_tikhonov_solve(
                t(Lc.indptr), t(Lc.indices), t(Lc.data), chebyshev_coefficients(c, basis), qt,
                (X2 * scales).reshape(X.shape).contiguous(), tol=tol, maxiter=maxiter, backend=backend)
        except ValueError as exc:
            raise _rounding_hint(exc, kappa, dtype) from None
        Y = (Y.reshape(n, -1) / scales).reshape(X.shape)
    if numpy_in:
        Y = Y.cpu().numpy()
    return _finish(Y, return_info, backend, "cg-jacobi", iterations, residuals, tol, maxiter, diag="truncated")



def _relative_residuals(Lc, cheb, qv, X2, Y) -> np.ndarray:
    r""":math:`\|q \circ x - A y\|_2 / \|q \circ x\|_2` per column, in float64 (0 for a zero column), with
    norms that neither underflow nor overflow (:func:`scaled_norms`)."""
    L64 = Lc.astype(np.float64)
    q64, Y64 = qv.astype(np.float64)[:, None], Y.astype(np.float64)
    B = q64 * X2.astype(np.float64)
    R = B - (_chebyshev_sum(L64, cheb, Y64) + q64 * Y64)
    bnorm = scaled_norms(B)
    return np.divide(scaled_norms(R), bnorm, out=np.zeros(B.shape[1]), where=bnorm > 0)


def column_scale_exponents(bmax: np.ndarray, xmax: np.ndarray, dtype) -> np.ndarray:
    """Exponents k_c such that 2^k_c max |q o x_c| lies in [0.5, 1) (the right-hand side; 0 for a zero
    column), lowered where 2^k_c max |x_c| would come within a factor 16 of the dtype's overflow."""
    _, eb = np.frexp(np.asarray(bmax, dtype=np.float64))
    _, ex = np.frexp(np.asarray(xmax, dtype=np.float64))
    k = np.minimum(-eb.astype(np.int64), np.finfo(dtype).maxexp - 5 - ex.astype(np.int64))
    return np.where(np.asarray(bmax) > 0, k, 0)


def _scale_columns(X2: np.ndarray, qv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(X2 with column c multiplied by scales[c], scales): powers of two (exact) bringing the right-hand
    side q o x_c to a maximum in [0.5, 1), so that no solver's norm of a tiny or huge right-hand side under-
    or overflows (||1e-170 e_0||^2 is 0 in float64); the solution scales back exactly."""
    if X2.size == 0:
        return X2, np.ones(X2.shape[1])
    A = np.abs(X2).astype(np.float64)
    k = column_scale_exponents((A * qv.astype(np.float64)[:, None]).max(axis=0), A.max(axis=0), X2.dtype)
    scales = np.ldexp(1.0, k)
    return (X2 * scales.astype(X2.dtype)).astype(X2.dtype, copy=False), scales


def _rounding_hint(exc: ValueError, kappa: float, dtype: np.dtype) -> ValueError:
    """The CG's "not positive definite" error, with the likelier cause when kappa * eps is not small: in
    this precision the operator is numerically singular, whatever L's symmetry."""
    msg = str(exc)
    eps = float(np.finfo(dtype).eps)
    if "not positive definite" not in msg or kappa * eps < 1e-3:
        return exc
    return ValueError(
        f"{msg}. Here, more likely, rounding: p(L) + diag(q) can have condition number up to "
        f"(max p + max q) / (min p + min q) = {kappa:.3g}, and {kappa:.3g} * eps({np.dtype(dtype).name}) = "
        f"{kappa * eps:.3g}, so in {np.dtype(dtype).name} the operator is numerically singular. "
        + ("Compute in float64 (pass X as float64) or raise q (e.g. q_min)" if dtype == np.float32 else
           "Raise q (e.g. q_min) or min p (a p with p(0) = 0 and tiny q leaves the constant signal undetermined)"))


