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
import scipy.sparse.linalg as spla
from numpy.polynomial import chebyshev as _cheb
from scipy.sparse.csgraph import connected_components

from .. import _backend, _optional
from .reference import (
    BASES,
    dense_block_factors_reference,
    dense_block_solve_reference,
    evaluate_polynomial_reference,
    monomial_coefficients,
    monomial_to_bernstein,
    tikhonov_solve_reference,
)

_SUPPORTED = ("reference", "cpp")
#: Backends that run the CG solve on a torch device (fastnips.graph._device): Triton kernels, or the CUDA
#: kernel of fastnips._C.
_DEVICE = ("triton", "cuda")
_NATIVE_FN = "tikhonov_solve_cg"
_NATIVE_CUDA_FN = "tikhonov_cheb_step_cuda"
_NATIVE_DENSE_FN = "tikhonov_dense_factor"

#: Solve methods of :func:`tikhonov_solve` (``"auto"`` picks one of the others).
METHODS = ("auto", "cg", "direct", "dense")
#: The backends that implement each method; any other (backend, method) pair raises ``ValueError``.
METHOD_BACKENDS = {"cg": ("reference", "cpp", "triton", "cuda"), "direct": ("reference",),
                   "dense": ("reference", "cpp")}
#: ``method="auto"`` picks ``"dense"`` when a ``batch`` is given and every graph has at most this many nodes.
DENSE_AUTO_MAX_NODES = 256
#: Default ``max_fill``: the most stored entries of p(L) (``"direct"``) or of the dense blocks (``"dense"``).
DEFAULT_MAX_FILL = 50_000_000
# The fill estimate of "direct" counts the K-hop neighbourhoods of every row up to this many nodes, and of
# this many sampled rows (fixed seed) above.
_FILL_EXACT_N = 4096
_FILL_SAMPLE = 512

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
        What ran. ``method="cg"``: ``"cg-jacobi"`` (cpp: block Jacobi-preconditioned CG), ``"spsolve"`` or
        ``"cg"`` (reference). ``method="direct"``: ``"direct-cholmod"`` or ``"direct-superlu"``.
        ``method="dense"``: ``"dense-cholesky"``. ``"none"`` when there was nothing to solve.
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
        The iteration limit used, per column (0 for ``"direct"`` and ``"dense"``).
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
                   n_threads: int = 0, method: str = "auto", batch=None, max_fill: float = DEFAULT_MAX_FILL):
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
        Relative residual per column, :math:`\|q \circ x - A y\|_2 \le \mathrm{tol}\, \|q \circ x\|_2`.
        Default 1e-10 for float64 and 1e-5 for float32 computations. Must lie in (0, 1). Only ``"cg"``
        iterates to it; ``"direct"`` and ``"dense"`` solve to rounding error (checked, not used).
    maxiter : int, optional
        CG iterations per column (``"cg"`` only). Default: twice the unpreconditioned CG bound
        :math:`\lceil \tfrac12 \sqrt{\kappa} \ln(2\sqrt{\kappa}/\mathrm{tol}) \rceil` with
        :math:`\kappa = (\max_{[0,2]} p + \max q) / \min q`, plus 50.
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
        ``"auto"``: cpp where the compiled module has it, else reference (``"direct"``: reference).
    return_info : bool, default False
        Also return a :class:`TikhonovInfo` (iterations, true final residuals, convergence flags). For
        ``"direct"`` and ``"dense"`` the residuals are computed only then (K more sparse products).
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
        Memory guard, in stored entries. ``"direct"``: the nonzeros of p(L), estimated before it is formed
        (the :math:`K`-hop neighbourhood sizes of every row up to 4096 nodes, of 512 sampled rows above);
        ``"dense"``: :math:`\sum_g n_g^2`, the dense blocks. Above it, ``ValueError`` (suggesting
        ``method="cg"``) instead of an out-of-memory crash. 5e7 entries are about 0.6 GB for a sparse
        float64 matrix with int32 indices; pass ``float("inf")`` to switch the guard off.

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
        When some column has not reached ``tol`` within ``maxiter`` iterations (the best iterate is
        returned; see ``return_info``).

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
    :math:`n d^K` entries for average degree d: measured for K = 4 on a random graph with n = 1e5 and
    average degree 8, p(L) has 4.4e8 nonzeros (scipy took 178 s to form it and spsolve ran out of
    memory), while CG solved 16 columns in 5 s. ``max_fill`` refuses such cases up front. Direct pays off
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
    if not isinstance(return_info, bool | np.bool_):
        raise TypeError(f"return_info must be a bool, got {type(return_info).__name__}")
    if not isinstance(n_threads, int | np.integer) or isinstance(n_threads, bool) or n_threads < 0:
        raise ValueError(f"n_threads must be a non-negative int, got {n_threads!r}")
    device_backend = _device_backend(X, backend, method)
    if device_backend is not None:
        return _solve_on_device(L, coeffs, q, X, basis=basis, tol=tol, maxiter=maxiter, backend=device_backend,
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
    maxiter = _maxiter(maxiter, pmax, qv, tol)
    b = _resolve(backend) if how == "cg" else _resolve_method_backend(how, backend)
    max_fill = _max_fill(max_fill)

    F = X2.shape[1]
    diag = nnz_factor = None
    if n == 0 or F == 0:  # nothing to solve
        Y = np.zeros((n, F), dtype=dtype)
        iterations, residuals, what = np.zeros(F, np.int64), np.zeros(F), "none"
    elif how != "cg":
        factor = _factorize(Lc, c, basis, qv, how, b, blocks, max_fill, int(n_threads))
        Y = factor._apply_inverse(X2, scaled=True).astype(dtype, copy=False)
        iterations, what, nnz_factor = np.zeros(F, np.int64), factor.solver, factor.nnz_factor
        residuals = _relative_residuals(Lc, chebyshev_coefficients(c, basis), qv, X2, Y) if return_info else np.zeros(F)
    elif b == "cpp":
        cheb = chebyshev_coefficients(c, basis)
        Y, iterations, residuals, _, exact = _backend.native().tikhonov_solve_cg(
            Lc.indptr, Lc.indices, Lc.data, cheb, qv, X2, float(tol), int(maxiter), n_threads=int(n_threads),
            diagonal=_DIAGONAL_AUTO)
        what, diag = "cg-jacobi", ("exact" if exact else "truncated")
    else:
        Y, iterations, residuals, what = tikhonov_solve_reference(Lc, c, qv, X2, basis=basis, tol=tol,
                                                                  maxiter=maxiter)
        Y = Y.astype(dtype, copy=False)
    Y = Y.reshape(n) if vector else Y
    if torch_out:
        torch = _optional.torch()
        Y = torch.from_numpy(np.ascontiguousarray(Y))
    return _finish(Y, return_info, b, what, iterations, residuals, tol, maxiter if how == "cg" else 0,
                   diag=diag, nnz_factor=nnz_factor)


def _finish(Y, return_info: bool, backend: str, what: str, iterations, residuals, tol: float, maxiter: int, *,
            diag=None, nnz_factor=None):
    """The common tail of every solve path: the non-convergence warning (iterative methods) and the info."""
    iterations = np.asarray(iterations, dtype=np.int64)
    residuals = np.asarray(residuals, dtype=np.float64)
    converged = residuals <= tol
    F = residuals.shape[0]
    if maxiter and F and not converged.all():
        bad = np.flatnonzero(~converged)
        warnings.warn(
            f"tikhonov_solve: {bad.size} of {F} columns did not reach tol={tol:g} in maxiter={maxiter} "
            f"iterations (worst relative residual {residuals.max():.3g}, column {int(np.argmax(residuals))}); "
            "raise maxiter or check the conditioning (small q makes the system hard)",
            RuntimeWarning, stacklevel=3)
    if not return_info:
        return Y
    return Y, TikhonovInfo(backend=backend, method=what, iterations=iterations, residuals=residuals,
                           converged=converged, tol=float(tol), maxiter=int(maxiter), jacobi_diagonal=diag,
                           nnz_factor=nnz_factor)


# ---------------------------------------------------------------------------------------------------
# the device path: CG on a torch device (Triton or CUDA sparse passes; fastnips.graph._device)


def _device_backend(X, backend, method) -> str | None:
    """"triton" / "cuda" when the solve runs on a torch device, else None (the host paths).

    Explicit ``backend="triton"|"cuda"``; or ``"auto"`` with X a CUDA tensor: ``"cuda"`` where the compiled
    module has the CUDA Chebyshev step and a device is usable, else ``"triton"``, else None (the host
    solve, with a copy, as before).
    """
    if not isinstance(backend, str):
        return None  # _resolve raises the TypeError
    if backend in _DEVICE:
        if method not in ("auto", "cg"):
            pairs = ", ".join(f"({b!r}, {m!r})" for m, bs in METHOD_BACKENDS.items() for b in bs)
            raise ValueError(f"tikhonov_solve: method={method!r} has no {backend!r} backend. The (backend, method) "
                             f"pairs are: {pairs}")
        if backend == "cuda":
            C = _backend.native()
            if C is not None and not hasattr(C, _NATIVE_CUDA_FN) and _backend.backend_available("cuda"):
                raise ValueError(f"backend 'cuda' is not available here: fastnips._C has no {_NATIVE_CUDA_FN} "
                                 "(an older build; rebuild). Use backend='triton'")
        return _backend.resolve(backend, op="tikhonov_solve", supported=_DEVICE, auto=_DEVICE)
    if backend != "auto" or method not in ("auto", "cg") or not _optional.is_torch_tensor(X) \
            or X.device.type != "cuda":
        return None
    C = _backend.native()
    order = (("cuda",) if C is not None and hasattr(C, _NATIVE_CUDA_FN) else ()) + ("triton",)
    for b in order:
        if _backend.backend_available(b):
            return b
    return None


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
    maxiter = _maxiter(maxiter, pmax, np.array([qmin, qmax]), tol)
    F = 1 if X.dim() == 1 else X.shape[1]
    if n == 0 or F == 0:
        Y, iterations, residuals = torch.zeros_like(X), np.zeros(F, np.int64), np.zeros(F)
    else:
        t = lambda a: torch.as_tensor(a, device=X.device)
        Y, iterations, residuals = device_tikhonov_solve(
            t(Lc.indptr), t(Lc.indices), t(Lc.data), chebyshev_coefficients(c, basis), qt, X.contiguous(), tol=tol,
            maxiter=maxiter, backend=backend)
    if numpy_in:
        Y = Y.cpu().numpy()
    return _finish(Y, return_info, backend, "cg-jacobi", iterations, residuals, tol, maxiter, diag="truncated")


# ---------------------------------------------------------------------------------------------------
# factorised solves: "direct" (sparse) and "dense" (batched dense Cholesky)


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

    def __init__(self, *, n, q, method, backend, solver, dtype, n_blocks, max_block, nnz_operator, nnz_factor,
                 solve_fn):
        self.n, self.method, self.backend, self.solver = int(n), method, backend, solver
        self.dtype = np.dtype(dtype)
        self.q = np.array(q, dtype=self.dtype)
        self.q.flags.writeable = False
        self.n_blocks, self.max_block = int(n_blocks), int(max_block)
        self.nnz_operator = int(nnz_operator)
        self.nnz_factor = None if nnz_factor is None else int(nnz_factor)
        self._solve_fn = solve_fn  # (B (n, F) in self.dtype, scale (n,) or None) -> A^{-1} (scale o B)

    def solve(self, X):
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

    def solve_adjoint(self, G):
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


def tikhonov_factorize(L, coeffs, q, *, basis: str = "bernstein", method: str = "direct", batch=None,
                       backend: str = "auto", max_fill: float = DEFAULT_MAX_FILL, dtype=np.float64,
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
        Memory guard in stored entries (estimated nonzeros of p(L), or :math:`\sum_g n_g^2`), see
        :func:`tikhonov_solve`.
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
    if not isinstance(n_threads, int | np.integer) or isinstance(n_threads, bool) or n_threads < 0:
        raise ValueError(f"n_threads must be a non-negative int, got {n_threads!r}")
    b = _resolve_method_backend(method, backend)
    work = dt if (method == "dense" and b == "cpp") else np.dtype(np.float64)
    Lc = _as_csr(L, work)
    n = Lc.shape[0]
    qv = _weights(q, n, work)
    c = _coefficients(coeffs)
    _check_polynomial(c, basis)
    blocks = None if batch is None else _batch_blocks(_graph_ids(batch, n), Lc)
    return _factorize(Lc, c, basis, qv, method, b, blocks, _max_fill(max_fill), int(n_threads))


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
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method != "auto":
        return method
    if ids is not None and ids.size and np.unique(ids, return_counts=True)[1].max() <= DENSE_AUTO_MAX_NODES:
        return "dense"
    return "cg"


def _resolve_method_backend(method: str, backend: str) -> str:
    """The backend for method "direct" or "dense" (see METHOD_BACKENDS); clear errors for the pairs that do not
    exist."""
    if isinstance(backend, str) and backend in _SUPPORTED and backend not in METHOD_BACKENDS[method]:
        pairs = ", ".join(f"({b!r}, {m!r})" for m, bs in METHOD_BACKENDS.items() for b in bs)
        raise ValueError(
            f"tikhonov_solve: method={method!r} has no {backend!r} backend (the sparse factorisation runs in "
            f"scipy / CHOLMOD: use backend='reference' or 'auto'). The (backend, method) pairs are: {pairs}")
    if method == "direct":
        return _backend.resolve(backend, op="tikhonov_solve(method='direct')", supported=("reference",),
                                auto=("reference",))
    return _resolve(backend, native_fn=_NATIVE_DENSE_FN, op="tikhonov_solve(method='dense')")


def _max_fill(max_fill) -> float:
    if isinstance(max_fill, bool) or not isinstance(max_fill, int | float | np.integer | np.floating):
        raise TypeError(f"max_fill must be a number, got {type(max_fill).__name__}")
    if not float(max_fill) > 0:
        raise ValueError(f"max_fill must be > 0 (a number of stored entries; inf switches the guard off), got "
                         f"{max_fill!r}")
    return float(max_fill)


def _degree(cheb: np.ndarray) -> int:
    """The degree of p: the last nonzero Chebyshev coefficient (0 for a constant or zero p)."""
    nz = np.flatnonzero(cheb)
    return int(nz[-1]) if nz.size else 0


def _chebyshev_sum(Lc: sp.csr_matrix, cheb: np.ndarray, V):
    r""":math:`\sum_k c_k T_k(L - I)\, V` by the three-term recurrence: K products with L. V is a dense block
    (the operator applied) or a sparse matrix (V = I assembles p(L) by sparse-sparse products)."""
    prev, cur = None, V
    out = cheb[0] * V
    for k in range(1, _degree(cheb) + 1):
        nxt = Lc @ cur - cur if k == 1 else 2.0 * (Lc @ cur - cur) - prev
        out = out + cheb[k] * nxt
        prev, cur = cur, nxt
    return out


def _relative_residuals(Lc, cheb, qv, X2, Y) -> np.ndarray:
    r""":math:`\|q \circ x - A y\|_2 / \|q \circ x\|_2` per column, in float64 (0 for a zero column)."""
    L64 = Lc.astype(np.float64)
    q64, Y64 = qv.astype(np.float64)[:, None], Y.astype(np.float64)
    B = q64 * X2.astype(np.float64)
    R = B - (_chebyshev_sum(L64, cheb, Y64) + q64 * Y64)
    bnorm = np.linalg.norm(B, axis=0)
    return np.divide(np.linalg.norm(R, axis=0), bnorm, out=np.zeros(B.shape[1]), where=bnorm > 0)


def _estimate_poly_nnz(Lc: sp.csr_matrix, degree: int, stop_above: float) -> tuple[float, int]:
    """(estimated nonzeros of p(L), rows looked at): the K-hop neighbourhood sizes (an upper bound on each
    row of p(L), reached unless coefficients cancel) of every row when n <= _FILL_EXACT_N, else of
    _FILL_SAMPLE rows drawn with a fixed seed, scaled to n. Stops early once the estimate passes stop_above."""
    n = Lc.shape[0]
    if n == 0 or degree == 0:
        return float(n), n
    P = Lc.copy()
    P.eliminate_zeros()
    P = (abs(P) + sp.identity(n, format="csr")).tocsr()
    P.data[:] = 1.0
    rows = np.arange(n) if n <= _FILL_EXACT_N else np.sort(
        np.random.default_rng(0).choice(n, _FILL_SAMPLE, replace=False))
    S = sp.csr_matrix((np.ones(rows.size), (np.arange(rows.size), rows)), shape=(rows.size, n))
    est = float(rows.size)
    for _ in range(degree):
        S = (S @ P).tocsr()
        S.data[:] = 1.0
        est = min(float(S.nnz) * n / rows.size, float(n) * n)
        if est > stop_above:
            break
    return est, int(rows.size)


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
        est, looked = _estimate_poly_nnz(Lc, K, max_fill)
        if est > max_fill:
            how = "exactly, from every row" if looked == n else f"from the {K}-hop neighbourhoods of {looked} rows"
            raise ValueError(
                f"method='direct': p(L) would have about {est:.3g} nonzeros (degree K = {K}, counted {how}), "
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


# ---------------------------------------------------------------------------------------------------
# input normalisation


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


def _resolve(backend: str, native_fn: str = _NATIVE_FN, op: str = "tikhonov_solve") -> str:
    C = _backend.native()
    has_cpp = C is not None and hasattr(C, native_fn)
    if backend == "cpp" and C is not None and not has_cpp and _backend.backend_available("cpp"):
        raise ValueError(
            f"backend 'cpp' is not available here: the compiled module fastnips._C has no {native_fn} "
            "(an older build; rebuild with `pip install -e . --no-build-isolation`). Available for "
            f"{op}: ['reference']")
    supported = _SUPPORTED if (has_cpp or C is None) else ("reference",)
    if backend not in supported and backend in _SUPPORTED:  # cpp requested, native lacks it, cpp switched off
        supported = _SUPPORTED
    return _backend.resolve(backend, op=op, supported=supported, auto=("cpp", "reference"))
