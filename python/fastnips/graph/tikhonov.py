r"""Generalised graph Tikhonov solves: the propagation operator of the Tikhonov layer.

.. math:: Y = R X, \qquad R = (p(L) + Q)^{-1} Q, \qquad Q = \mathrm{diag}(q),\ q > 0,

where :math:`L` is a normalized graph Laplacian (spectrum in :math:`[0, 2]`) and :math:`p` a polynomial
that is non-negative on :math:`[0, 2]`. Each column :math:`y = R x` is the exact minimiser of the convex
problem

.. math:: \min_z\; z^\top p(L) z + (z - x)^\top Q (z - x),

whose gradient :math:`2 p(L) z + 2 Q (z - x)` vanishes exactly when :math:`(p(L) + Q) z = Q x`.
Paper: Tremblay, Ricaud, Bianchi, "A Generalized Tikhonov Layer for Interpretable-by-design Graph
Neural Networks" (arXiv 2605.28578); see shared/notes/tikhonov_freqbias_fds.md, part A.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.polynomial import chebyshev as _cheb

from .. import _backend, _optional
from .reference import (
    BASES,
    evaluate_polynomial_reference,
    monomial_coefficients,
    monomial_to_bernstein,
    tikhonov_solve_reference,
)

_SUPPORTED = ("reference", "cpp")
_NATIVE_FN = "tikhonov_solve_cg"

#: Default relative residual per column, by computation dtype.
DEFAULT_TOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 1e-5}

# diag(p(L)) for the Jacobi preconditioner of the cpp backend: 0 = exact while cheap, else truncated (see
# DiagonalMode in csrc/graph/tikhonov.h).
_DIAGONAL_AUTO = 0


@dataclass(frozen=True)
class TikhonovInfo:
    """What :func:`tikhonov_solve` did (returned with ``return_info=True``).

    Attributes
    ----------
    backend : str
        ``"cpp"`` or ``"reference"``.
    method : str
        ``"cg-jacobi"`` (cpp: block Jacobi-preconditioned CG), ``"spsolve"`` or ``"cg"`` (reference).
    iterations : ndarray of int64, shape (F,)
        CG iterations per column (0 for a direct solve or a zero right-hand side).
    residuals : ndarray of float64, shape (F,)
        Final true relative residuals :math:`\\|q \\circ x - (p(L) + Q) y\\|_2 / \\|q \\circ x\\|_2`,
        recomputed from the returned solution (0 for a zero right-hand side).
    converged : ndarray of bool, shape (F,)
        ``residuals <= tol``.
    tol : float
        The tolerance used.
    maxiter : int
        The iteration limit used, per column.
    jacobi_diagonal : str or None
        cpp only: ``"exact"`` when the preconditioner used diag(p(L)) exactly, ``"truncated"`` when it
        used the exact diagonal of p's degree-2 Chebyshev part instead, because the exact one would
        have cost more than about half a CG iteration (the solution is unaffected, only speed).
    """

    backend: str
    method: str
    iterations: np.ndarray
    residuals: np.ndarray
    converged: np.ndarray
    tol: float
    maxiter: int
    jacobi_diagonal: str | None = None


# ---------------------------------------------------------------------------------------------------
# polynomials


def evaluate_polynomial(coeffs, lam, basis: str = "bernstein") -> np.ndarray:
    r"""Evaluate the filter polynomial :math:`p(\lambda)`.

    .. math:: p(\lambda) = \sum_{k=0}^{K} \theta_k \binom{K}{k} \Big(\frac{\lambda}{2}\Big)^k
              \Big(1 - \frac{\lambda}{2}\Big)^{K-k} \quad\text{(Bernstein)}, \qquad
              p(\lambda) = \sum_{k=0}^{K} \theta_k \lambda^k \quad\text{(monomial)}.

    Parameters
    ----------
    coeffs : array-like, shape (K + 1,)
        :math:`\theta_0, \dots, \theta_K`.
    lam : array-like
        Points, usually in :math:`[0, 2]`.
    basis : {"bernstein", "monomial"}

    Returns
    -------
    ndarray of float64, the shape of ``lam``
        Evaluated by de Casteljau's algorithm (Bernstein) or Horner's rule (monomial).
    """
    c = _coefficients(coeffs)
    _check_basis(basis)
    return evaluate_polynomial_reference(c, lam, basis)


def _check_basis(basis) -> None:
    if basis not in BASES:
        raise ValueError(f"basis must be one of {BASES}, got {basis!r}")


def _coefficients(coeffs) -> np.ndarray:
    c = _to_numpy(coeffs)
    if c.dtype.kind not in "biuf":
        raise TypeError(f"coeffs must be real numbers, got dtype {c.dtype}")
    c = np.asarray(c, dtype=np.float64)
    if c.ndim != 1 or c.shape[0] < 1:
        raise ValueError(f"coeffs must be a non-empty 1-D array (theta_0 ... theta_K), got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("coeffs contains NaN or inf")
    return c


def _extrema_on_interval(c: np.ndarray, basis: str) -> tuple[float, float, float]:
    """(min p, argmin, max p) over [0, 2]: at the end points, the real critical points inside, and a
    fine grid (a safety net for the root finder at high degree)."""
    a = monomial_coefficients(c, basis)
    pts = [np.array([0.0, 2.0]), np.linspace(0.0, 2.0, 4097)]
    if a.shape[0] > 2 and np.any(a[1:]):
        roots = np.polynomial.Polynomial(a).deriv().roots()
        real = roots[np.abs(roots.imag) <= 1e-9 * np.maximum(1.0, np.abs(roots))].real
        pts.append(real[(real > 0.0) & (real < 2.0)])
    lam = np.concatenate(pts)
    vals = evaluate_polynomial_reference(c, lam, basis)
    i = int(np.argmin(vals))
    return float(vals[i]), float(lam[i]), float(vals.max())


def _check_polynomial(c: np.ndarray, basis: str) -> float:
    """Refuse a polynomial that is negative somewhere on [0, 2]; return max p on [0, 2]."""
    K = c.shape[0] - 1
    if basis == "bernstein":
        neg = np.flatnonzero(c < 0)
        if neg.size:
            raise ValueError(
                f"coeffs: Bernstein coefficients must be >= 0 (got theta_{neg[0]} = {float(c[neg[0]])!r}). With "
                "theta >= 0, p >= 0 on [0, 2] and (p(L) + Q)^-1 Q x is the exact minimiser of "
                "z^T p(L) z + (z - x)^T Q (z - x); for a non-negative p with negative Bernstein "
                "coefficients pass basis='monomial' (p is then checked on [0, 2])")
        return float(_extrema_on_interval(c, basis)[2])
    lo, where, hi = _extrema_on_interval(c, basis)
    scale = float(np.sum(np.abs(c) * 2.0 ** np.arange(K + 1)))
    if np.all(monomial_to_bernstein(c) >= 0) or lo >= -64 * np.finfo(np.float64).eps * scale:
        return hi
    raise ValueError(
        f"coeffs: the monomial polynomial p(lambda) = sum_k theta_k lambda^k is negative on [0, 2] "
        f"(p({where:.6g}) = {lo:.6g}). The Tikhonov solution (p(L) + Q)^-1 Q x is the exact minimiser of "
        "z^T p(L) z + (z - x)^T Q (z - x) only if p >= 0 on the spectrum of L, which for a normalized "
        "Laplacian can be all of [0, 2]; otherwise it is a saddle point or the system is singular. "
        "Use basis='bernstein' with coefficients >= 0 (always valid), or shift p up")


def chebyshev_coefficients(coeffs, basis: str = "bernstein") -> np.ndarray:
    r"""Coefficients :math:`c_k` with :math:`p(\lambda) = \sum_k c_k T_k(\lambda - 1)` on :math:`[0, 2]`.

    Obtained once by interpolating p (evaluated stably in its own basis) at the K + 1 Chebyshev points
    of :math:`[0, 2]`, which is exact for a degree-K polynomial and well conditioned at any K. The cpp
    backend applies :math:`p(L) = \sum_k c_k T_k(L - I)` by the three-term recurrence: K sparse products.
    """
    c = _coefficients(coeffs)
    _check_basis(basis)
    K = c.shape[0] - 1
    if K == 0:
        return c.copy()
    return np.ascontiguousarray(
        _cheb.chebinterpolate(lambda t: evaluate_polynomial_reference(c, t + 1.0, basis), K), dtype=np.float64)


# ---------------------------------------------------------------------------------------------------
# the solve


def tikhonov_solve(L, coeffs, q, X, *, basis: str = "bernstein", tol: float | None = None,
                   maxiter: int | None = None, backend: str = "auto", return_info: bool = False,
                   n_threads: int = 0):
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
        :math:`[0, 2]` and p + q < 0 there, the system is indefinite: the cpp backend detects the negative
        curvature in CG and raises; the reference backend does not (its direct solve would return the
        saddle point).
    coeffs : array-like, shape (K + 1,)
        The polynomial's coefficients :math:`\theta_0 \dots \theta_K` in ``basis``; K >= 0.
    q : array-like, shape (n,), or a scalar
        Per-node fidelity weights; every entry finite and > 0. A scalar means the same q for all nodes.
    X : array-like or torch tensor, shape (n,) or (n, F)
        Right-hand side signals (finite). The result has X's shape, and X's kind: a torch tensor in,
        a (CPU) torch tensor out, without gradient tracking.
    basis : {"bernstein", "monomial"}, default "bernstein"
        ``"bernstein"``: :math:`p(\lambda) = \sum_k \theta_k \binom{K}{k} (\lambda/2)^k (1 - \lambda/2)^{K-k}`;
        coefficients must be >= 0, which makes p >= 0 on [0, 2] (BernNet's device).
        ``"monomial"``: :math:`p(\lambda) = \sum_k \theta_k \lambda^k`; p must be >= 0 on [0, 2]. This is
        checked exactly (end points, critical points and a 4097-point grid, after a Bernstein-coefficient
        certificate) and a p that dips below 0 raises ``ValueError``: the solution would not be a
        minimiser.
    tol : float, optional
        Relative residual per column, :math:`\|q \circ x - A y\|_2 \le \mathrm{tol}\, \|q \circ x\|_2`.
        Default 1e-10 for float64 and 1e-5 for float32 computations. Must lie in (0, 1).
    maxiter : int, optional
        CG iterations per column. Default: twice the unpreconditioned CG bound
        :math:`\lceil \tfrac12 \sqrt{\kappa} \ln(2\sqrt{\kappa}/\mathrm{tol}) \rceil` with
        :math:`\kappa = (\max_{[0,2]} p + \max q) / \min q`, plus 50.
    backend : {"auto", "cpp", "reference"}, default "auto"
        ``"cpp"``: matrix-free block Jacobi-preconditioned conjugate gradients in C++ (OpenMP). p is
        converted once to the Chebyshev basis of :math:`L - I`
        (:func:`chebyshev_coefficients`), so each application of p(L) costs K sparse products, each
        fused with its vector epilogue; all F columns run together (one CG per column, the sparse
        products and vector updates fused over the block, converged columns dropped from it). The
        preconditioner is Jacobi, :math:`\mathrm{diag}(p(L)) + q`. diag(p(L)) is computed exactly
        from the :math:`\lceil K/2 \rceil`-hop neighbourhoods (about :math:`n d^{\lceil K/2 \rceil + 1}`
        random accesses for average degree d) when K <= 2 or when that costs less than about half a CG
        iteration; otherwise the exact diagonal of the degree-2 Chebyshev part of p is used, which
        in our measurements (random, grid and skewed graphs) needs the same number of iterations
        within +-2, at a fraction of the cost. Either way the solution is the same; only the iteration
        count can move (``info.jacobi_diagonal`` says which was used).
        Computes in X's precision (float32 or float64; dot products in float64), and re-checks the true
        residual at the end, restarting a column whose recursive residual drifted.
        ``"reference"``: scipy, in float64. Up to :data:`fastnips.graph.reference.DIRECT_MAX_N` (2000)
        nodes, the operator :math:`p(L) + Q` is assembled and solved by ``scipy.sparse.linalg.spsolve``;
        above, each column runs ``scipy.sparse.linalg.cg`` (no preconditioner) on a matrix-free
        ``LinearOperator`` applying p(L) by Horner's rule (K sparse products).
        ``"auto"``: cpp where the compiled module has it, else reference.
    return_info : bool, default False
        Also return a :class:`TikhonovInfo` (iterations, true final residuals, convergence flags).
    n_threads : int, default 0
        OpenMP threads for cpp (0: the OpenMP default, ``OMP_NUM_THREADS``).

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
        monomial p < 0 somewhere on [0, 2]; an unknown basis or backend; tol or maxiter out of range;
        (cpp) an operator found indefinite during the solve.
    TypeError
        Complex or non-numeric inputs, or an L that is not a matrix.

    Warns
    -----
    RuntimeWarning
        When some column has not reached ``tol`` within ``maxiter`` iterations (the best iterate is
        returned; see ``return_info``).

    Notes
    -----
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
    if not isinstance(return_info, bool | np.bool_):
        raise TypeError(f"return_info must be a bool, got {type(return_info).__name__}")
    if not isinstance(n_threads, int | np.integer) or isinstance(n_threads, bool) or n_threads < 0:
        raise ValueError(f"n_threads must be a non-negative int, got {n_threads!r}")
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
    maxiter = _maxiter(maxiter, pmax, qv, tol)
    b = _resolve(backend)

    F = X2.shape[1]
    if n == 0 or F == 0:  # nothing to solve
        Y = np.zeros((n, F), dtype=dtype)
        iterations, residuals, method, diag = np.zeros(F, np.int64), np.zeros(F), "none", None
    elif b == "cpp":
        cheb = chebyshev_coefficients(c, basis)
        Y, iterations, residuals, _, exact = _backend.native().tikhonov_solve_cg(
            Lc.indptr, Lc.indices, Lc.data, cheb, qv, X2, float(tol), int(maxiter), n_threads=int(n_threads),
            diagonal=_DIAGONAL_AUTO)
        method, diag = "cg-jacobi", ("exact" if exact else "truncated")
    else:
        Y, iterations, residuals, method = tikhonov_solve_reference(Lc, c, qv, X2, basis=basis, tol=tol,
                                                                    maxiter=maxiter)
        Y = Y.astype(dtype, copy=False)
        diag = None
    iterations = np.asarray(iterations, dtype=np.int64)
    residuals = np.asarray(residuals, dtype=np.float64)
    converged = residuals <= tol
    if F and not converged.all():
        bad = np.flatnonzero(~converged)
        warnings.warn(
            f"tikhonov_solve: {bad.size} of {F} columns did not reach tol={tol:g} in maxiter={maxiter} "
            f"iterations (worst relative residual {residuals.max():.3g}, column {int(np.argmax(residuals))}); "
            "raise maxiter or check the conditioning (small q makes the system hard)",
            RuntimeWarning, stacklevel=2)
    Y = Y.reshape(n) if vector else Y
    if torch_out:
        torch = _optional.torch()
        Y = torch.from_numpy(np.ascontiguousarray(Y))
    if not return_info:
        return Y
    return Y, TikhonovInfo(backend=b, method=method, iterations=iterations, residuals=residuals,
                           converged=converged, tol=float(tol), maxiter=int(maxiter), jacobi_diagonal=diag)


# ---------------------------------------------------------------------------------------------------
# input normalisation


def _to_numpy(a) -> np.ndarray:
    if _optional.is_torch_tensor(a):
        torch = _optional.torch()
        if a.layout != torch.strided:
            a = a.to_dense()
        return a.detach().cpu().numpy()
    return np.asarray(a)


def _as_csr(L, dtype: np.dtype) -> sp.csr_matrix:
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
    return sp.csr_matrix((np.ascontiguousarray(A.data), np.ascontiguousarray(A.indices, dtype=idx),
                          np.ascontiguousarray(A.indptr, dtype=idx)), shape=A.shape)


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


def _maxiter(maxiter, pmax: float, q: np.ndarray, tol: float) -> int:
    if maxiter is None:
        if q.size == 0:
            return 1
        kappa = (max(pmax, 0.0) + float(q.max())) / float(q.min())
        bound = 0.5 * math.sqrt(kappa) * math.log(2.0 * math.sqrt(kappa) / tol)
        return int(2 * math.ceil(bound) + 50)
    if isinstance(maxiter, bool) or not isinstance(maxiter, int | np.integer) or maxiter < 1:
        raise ValueError(f"maxiter must be a positive int, got {maxiter!r}")
    return int(maxiter)


def _resolve(backend: str) -> str:
    C = _backend.native()
    has_cpp = C is not None and hasattr(C, _NATIVE_FN)
    if backend == "cpp" and C is not None and not has_cpp and _backend.backend_available("cpp"):
        raise ValueError(
            f"backend 'cpp' is not available here: the compiled module fastnips._C has no {_NATIVE_FN} "
            "(an older build; rebuild with `pip install -e . --no-build-isolation`). Available for "
            "tikhonov_solve: ['reference']")
    supported = _SUPPORTED if (has_cpp or C is None) else ("reference",)
    if backend not in supported and backend in _SUPPORTED:  # cpp requested, native lacks it, cpp switched off
        supported = _SUPPORTED
    return _backend.resolve(backend, op="tikhonov_solve", supported=supported, auto=("cpp", "reference"))
