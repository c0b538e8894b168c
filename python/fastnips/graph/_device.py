r"""The Tikhonov solve on a torch device: block Jacobi-preconditioned CG with Triton or CUDA sparse passes.

.. math:: (p(L) + Q)\, Y = Q X, \qquad Q = \mathrm{diag}(q), \qquad
          p(L) = \sum_{k=0}^{K} c_k T_k(L - I),

the system of the generalised Tikhonov layer (Tremblay, Ricaud, Bianchi, "A Generalized Tikhonov Layer
for Interpretable-by-design Graph Neural Networks", arXiv 2605.28578). This module mirrors the C++ solver
of ``fastnips._C`` (the cpp backend) on torch tensors that live on one device (a CUDA GPU in production;
CPU tensors under ``TRITON_INTERPRET=1`` for tests); the operator, the updates and the CG loop are in
:mod:`fastnips.graph._device_cg`:

* **Operator.** :math:`A V = p(L) V + q \circ V` costs K fused Chebyshev passes over the rows of L
  (:func:`fastnips.kernels.tikhonov.cheb_step` or the CUDA kernel ``tikhonov_cheb_step_cuda`` of
  ``fastnips._C``): each pass
  computes :math:`T_{k+1} = 2 (L T_k - T_k) - T_{k-1}` and adds :math:`c_{k+1} T_{k+1}` to the result in
  its epilogue; the last pass also adds :math:`q \circ V` and the float64 dots :math:`V^\top A V`.
  :math:`T_{k+1}` overwrites :math:`T_{k-1}`, so two scratch blocks suffice.
* **CG.** One CG per column, all columns of a block together, with per-column :math:`\alpha, \beta`;
  every dot product is accumulated in float64, also for float32 vectors. A column stops when its
  recursive residual reaches ``tol`` (or after ``maxiter`` iterations, restarts included); it is then
  *masked* (:math:`\alpha = \beta = 0`, its direction zeroed) on the device, so no host round trip is
  needed to retire it, and the block is *compacted* (live columns packed, finished ones written out)
  once half of it is done. At the end the true residual :math:`\|q \circ x - A y\| / \|q \circ x\|` is
  recomputed, and columns whose recursive residual drifted restart from their current iterate (at most
  ``max_restarts`` times), as in the C++ solver.
* **Preconditioner.** Jacobi, :math:`\mathrm{diag}(p(L)) + q`, with diag(p(L)) replaced by the exact
  diagonal of the degree-2 part :math:`c_0 + c_1 T_1 + c_2 T_2`: :math:`(T_1)_{ii} = L_{ii} - 1`,
  :math:`(T_2)_{ii} = 2 (M^2)_{ii} - 1 = 2 \sum_j M_{ij}^2 - 1` for the symmetric :math:`M = L - I`
  (one pass over L; exact for K <= 2; the C++ solver's truncated diagonal mode, chosen because it
  preconditions about as well as the exact diagonal at a fraction of the cost). Entries are clamped at
  0 before q is added. Any positive diagonal keeps PCG exact: the choice moves the iteration count,
  never the solution. Pass ``diag`` to use another one (e.g. the exact diagonal from the cpp backend).
* **Indefinite operators.** :math:`p^\top A p \le 0` (or non-finite) in a live column means A is not
  SPD (L's spectrum leaves [0, 2], or p < 0 there); the column is frozen at once and a ``ValueError``
  names it, its iteration and the curvature, like the C++ solver.
* **Host synchronisation.** Inside the iteration loop the host never waits for the device except to
  learn whether columns are still live. On CUDA that test is asynchronous: each iteration copies its
  (live, broken) flags to pinned memory behind a CUDA event; the host reads them when the event has
  completed and blocks only when it would run more than ``check_lag`` iterations (default 2) ahead of
  the last result it read. Iterations queued after every column finished are no-ops (every column is
  masked), so the result and the per-column iteration counts do not depend on the lag; the lag costs at
  most ``check_lag`` idle iterations at the end, and buys a launch queue that never drains, which is
  what keeps small and mid-size graphs (where an iteration is a few dozen short kernels) from being
  bound by launch latency. On CPU tensors the test is synchronous (there is no queue to keep full).
* **Vector updates.** ``updates="triton"``: two fused Triton kernels per iteration,
  :math:`y \mathrel{+}= \alpha p,\ r \mathrel{-}= \alpha Ap` with the dots :math:`r^\top r, r^\top z`
  (6 vector passes), then :math:`p = z + \beta p` (3 passes), as the C++ ``update_rows`` /
  ``direction_rows``. ``updates="torch"``: the same arithmetic as torch ops (about 12 passes and float64
  temporaries), which needs no Triton. ``"auto"``: Triton for ``backend="triton"``, torch for
  ``backend="cuda"`` (so the cuda backend works without Triton). The length-F scalars (alpha, beta, masks)
  are torch ops in both cases.
* **Reproducibility.** No float atomics anywhere (partial sums per row block reduced by ``torch.sum``,
  the preconditioner by sorts and segment sums), so a solve is bitwise reproducible on a given device
  and configuration, like the C++ solver with a fixed thread count.

Not checked here (the public :func:`fastnips.graph.tikhonov_solve` checks them before dispatching): the
symmetry of L, its diagonal in [0, 2], and p >= 0 on [0, 2]. Checked: shapes, dtypes, devices, the CSR
structure, finiteness, q > 0, tol, maxiter.
"""

from __future__ import annotations

import numpy as np

from .. import _optional
from ._device_cg import (
    _BlockCg,
    _cuda_function,  # noqa: F401  (tests reach the pieces through this module)
    _Monitor,  # noqa: F401
    _Operator,
    _TorchUpdates,
    _triton_module,
    _TritonUpdates,
    _truncated_diagonal,
)
from .checks import _coefficients

__all__ = ["device_jacobi_diagonal", "device_poly_apply", "device_tikhonov_solve"]

_BACKENDS = ("triton", "cuda")
_UPDATES = ("auto", "triton", "torch")


# ---------------------------------------------------------------------------------------------------
# public API


def device_tikhonov_solve(indptr, indices, data, cheb, q, X, *, tol: float, maxiter: int, backend: str = "triton",
                          diag=None, max_restarts: int = 2, check_lag: int | None = None, updates: str = "auto"):
    r"""Solve :math:`(p(L) + \mathrm{diag}(q)) Y = \mathrm{diag}(q) X` on the tensors' device by block
    Jacobi-preconditioned CG (see the module docstring for the algorithm).

    Parameters
    ----------
    indptr, indices : torch.Tensor of int, shapes (n + 1,), (nnz,)
        L in CSR: symmetric with spectrum in [0, 2] (a normalized Laplacian; not checked here). Column
        indices may be unsorted and repeated (repeats add up). int32 is kept when both are int32, other
        integer types become int64.
    data : torch.Tensor, shape (nnz,)
        Values of L; cast to X's dtype.
    cheb : array-like or torch.Tensor, shape (K + 1,)
        Chebyshev coefficients of p in :math:`t = \lambda - 1`
        (:func:`fastnips.graph.chebyshev_coefficients`), K >= 0.
    q : torch.Tensor, shape (n,), or a number
        Fidelity weights, finite and > 0; cast to X's dtype.
    X : torch.Tensor, shape (n,) or (n, F), float32 or float64
        Right-hand sides, finite. The computation runs in X's dtype (dots in float64).
    tol : float
        Per column, stop when :math:`\|q \circ x - A y\|_2 \le \mathrm{tol}\, \|q \circ x\|_2`; in (0, 1).
    maxiter : int
        CG iterations per column, all restarts together; >= 1.
    backend : {"triton", "cuda"}, default "triton"
        Who runs the sparse passes: the Triton kernel (CUDA tensors, or CPU tensors under
        ``TRITON_INTERPRET=1``) or the CUDA kernel in ``fastnips._C`` (CUDA tensors; needs a build with
        ``tikhonov_cheb_step_cuda``).
    diag : torch.Tensor, shape (n,), optional
        diag(p(L)) for the Jacobi preconditioner (clamped at 0, then q is added). Default: the exact
        diagonal of p's degree-2 Chebyshev part (see :func:`device_jacobi_diagonal`).
    max_restarts : int, default 2
        Re-runs from the true residual when the recursive one drifted.
    check_lag : int, optional
        How many iterations the host may queue beyond the last convergence result it has read (CUDA
        only; default 2; 0 = a synchronous test each iteration). Does not change the results.
    updates : {"auto", "triton", "torch"}, default "auto"
        Who runs the CG vector updates (see the module docstring).

    Returns
    -------
    Y : torch.Tensor, shape of X, X's dtype and device
    iterations : ndarray of int64, shape (F,)
        CG iterations per column (0 for a zero right-hand side).
    residuals : ndarray of float64, shape (F,)
        True relative residuals recomputed from Y (0 for a zero right-hand side). Columns that did not
        reach ``tol`` in ``maxiter`` iterations are returned as they are (no warning here; the caller
        decides).

    Raises
    ------
    ValueError
        Mismatched shapes or devices, a malformed CSR structure, non-finite values, q <= 0, tol or
        maxiter out of range, an unknown or unavailable backend, or an operator found indefinite
        (:math:`p^\top A p \le 0`) during the solve.
    TypeError
        Non-tensor inputs or unsupported dtypes.

    Notes
    -----
    Paper: arXiv 2605.28578 (the layer :math:`R = (p(L) + Q)^{-1} Q`). The solver is Jacobi-preconditioned
    CG on a block of right-hand sides (the public default tolerances are 1e-11 in float64, 1e-6 in
    float32); an iteration is K sparse passes plus the vector updates, memory-bound.
    """
    torch = _optional.torch()
    tol = _check_tol(tol)
    maxiter = _check_int("maxiter", maxiter, 1)
    max_restarts = _check_int("max_restarts", max_restarts, 0)
    if check_lag is not None:
        check_lag = _check_int("check_lag", check_lag, 0)
    prob = _Problem.build(torch, indptr, indices, data, cheb, q, X, backend=backend, diag=diag, updates=updates)
    if check_lag is None:
        check_lag = 2 if prob.device.type == "cuda" else 0
    with torch.no_grad(), _device_scope(torch, prob.device):
        Y, iterations, residuals = _BlockCg(prob, tol, maxiter, max_restarts, check_lag).solve()
    return (Y.reshape(-1) if prob.vector else Y), iterations, residuals


def device_poly_apply(indptr, indices, data, cheb, V, *, q=None, backend: str = "triton"):
    r""":math:`p(L) V` (plus :math:`q \circ V` when q is given) by K fused Chebyshev passes on V's device.

    Parameters are as in :func:`device_tikhonov_solve` (V plays X's part; q may be None). Returns a
    tensor of V's shape, dtype and device.
    """
    torch = _optional.torch()
    prob = _Problem.build(torch, indptr, indices, data, cheb, 1.0 if q is None else q, V, backend=backend,
                          diag=None, updates="torch", need_q_positive=q is not None)
    with torch.no_grad(), _device_scope(torch, prob.device):
        out = torch.empty_like(prob.X)
        prob.op.apply(prob.X, out, q=prob.q if q is not None else None)
    return out.reshape(-1) if prob.vector else out


def device_jacobi_diagonal(indptr, indices, data, cheb):
    r"""The exact diagonal of the degree-2 part of p, :math:`c_0 + c_1 (L_{ii} - 1) + c_2 (2 \sum_j M_{ij}^2 - 1)`
    with :math:`M = L - I` (the terms that exist for K < 2 only), in float64 on data's device.

    Equal to diag(p(L)) for K <= 2 and L symmetric; the Jacobi preconditioner of the device solver.
    Repeated column indices within a row are summed first (they add up, as in the products).
    """
    torch = _optional.torch()
    _tensor("indptr", indptr)
    _tensor("indices", indices)
    _tensor("data", data)
    c = _cheb_host(cheb)
    with torch.no_grad():
        return _truncated_diagonal(torch, indptr, indices, data, c)


# ---------------------------------------------------------------------------------------------------
# inputs


def _tensor(name, a):
    if not _optional.is_torch_tensor(a):
        raise TypeError(f"{name} must be a torch tensor, got {type(a).__name__}")
    return a


def _check_tol(tol) -> float:
    if isinstance(tol, bool) or not isinstance(tol, int | float | np.integer | np.floating):
        raise TypeError(f"tol must be a float, got {type(tol).__name__}")
    if not 0.0 < float(tol) < 1.0:
        raise ValueError(f"tol must lie in (0, 1), got {tol!r}")
    return float(tol)


def _check_int(name, v, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    return int(v)


def _cheb_host(cheb) -> np.ndarray:
    return _coefficients(cheb, "cheb", "c_0 ... c_K")


class _device_scope:
    """``torch.cuda.device(dev)`` for CUDA tensors, nothing otherwise."""

    def __init__(self, torch, dev):
        self._ctx = torch.cuda.device(dev) if dev.type == "cuda" else None

    def __enter__(self):
        if self._ctx is not None:
            self._ctx.__enter__()

    def __exit__(self, *exc):
        if self._ctx is not None:
            return self._ctx.__exit__(*exc)
        return False


def _check_csr_args(torch, indptr, indices, data, X):
    """Types, devices and shapes of the CSR arrays and X (before any conversion)."""
    for name, a in (("indptr", indptr), ("indices", indices), ("data", data), ("X", X)):
        _tensor(name, a)
    for name, a in (("indptr", indptr), ("indices", indices), ("data", data)):
        if a.device != X.device:
            raise ValueError(f"{name} is on {a.device} but X is on {X.device}: move them to one device")
    if X.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"X must be float32 or float64, got {X.dtype}")
    if indptr.dim() != 1 or indices.dim() != 1 or data.dim() != 1:
        raise ValueError(f"indptr, indices and data must be 1-D, got shapes {tuple(indptr.shape)}, "
                         f"{tuple(indices.shape)}, {tuple(data.shape)}")
    if indptr.shape[0] < 1:
        raise ValueError("indptr must have at least one entry (n + 1)")
    if indices.shape[0] != data.shape[0]:
        raise ValueError(f"indices and data differ in length ({indices.shape[0]} vs {data.shape[0]})")
    for name, a in (("indptr", indptr), ("indices", indices)):
        if a.dtype.is_floating_point or a.dtype.is_complex or a.dtype == torch.bool:
            raise TypeError(f"{name} must hold integers, got {a.dtype}")
    if data.dtype.is_complex or data.dtype == torch.bool:
        raise TypeError(f"data must hold real numbers, got {data.dtype}")
    n = int(indptr.shape[0]) - 1
    if X.dim() not in (1, 2) or X.shape[0] != n:
        raise ValueError(f"X must have shape (n,) or (n, F) with n = {n} (the rows of L), got {tuple(X.shape)}")
    return n


def _node_weights(torch, q, n: int, dt, dev):
    """q as a length-n tensor of dtype dt on dev (a number is broadcast); values are checked later."""
    if _optional.is_torch_tensor(q):
        if q.device != dev:
            raise ValueError(f"q is on {q.device} but X is on {dev}: move them to one device")
        if q.dtype.is_complex or q.dtype == torch.bool:
            raise TypeError(f"q must hold real numbers, got {q.dtype}")
        qv = q.detach()
        if qv.dim() == 0:
            qv = qv.expand(n)
    elif isinstance(q, int | float | np.integer | np.floating) and not isinstance(q, bool):
        qv = torch.full((n,), float(q), dtype=dt, device=dev)
    else:
        raise TypeError(f"q must be a torch tensor or a number, got {type(q).__name__}")
    if qv.shape != (n,):
        raise ValueError(f"q must have shape ({n},) (one weight per node) or be a scalar, got {tuple(qv.shape)}")
    return qv.to(dt).contiguous()


def _check_values(torch, n, indptr, indices, data, X2, qv, diag, need_q_positive: bool) -> None:
    """The CSR structure and the finiteness / positivity of the values (one-off host round trips)."""
    from ..ops._spmm import _check_structure

    try:
        _check_structure(n, indptr, indices)
    except ValueError as exc:
        raise ValueError(f"L: {exc}") from None
    flags = [torch.isfinite(data).all(), torch.isfinite(X2).all(), torch.isfinite(qv).all()]
    flags.append((qv > 0).all() if n else torch.ones((), dtype=torch.bool, device=X2.device))
    if diag is not None:
        flags.append(torch.isfinite(diag).all())
    ok = torch.stack(flags).tolist()
    for good, what in zip(ok[:3], ("L (data)", "X", "q")):
        if not good:
            raise ValueError(f"{what} contains NaN or inf")
    if need_q_positive and not ok[3]:
        i = int(torch.argmin(qv))
        raise ValueError(f"q must be > 0 everywhere (q[{i}] = {float(qv[i])!r}); A = p(L) + diag(q) must be "
                         "positive definite")
    if diag is not None and not ok[4]:
        raise ValueError("diag contains NaN or inf")


class _Problem:
    """Validated, normalised inputs and the operator."""

    @classmethod
    def build(cls, torch, indptr, indices, data, cheb, q, X, *, backend, diag, updates, need_q_positive=True):
        self = cls()
        if not isinstance(backend, str) or backend not in _BACKENDS:
            raise ValueError(f"unknown backend {backend!r} for the device Tikhonov solver; choose one of "
                             f"{', '.join(_BACKENDS)}")
        if not isinstance(updates, str) or updates not in _UPDATES:
            raise ValueError(f"updates must be one of {_UPDATES}, got {updates!r}")
        n = _check_csr_args(torch, indptr, indices, data, X)
        dev, dt = X.device, X.dtype
        self.vector = X.dim() == 1
        X2 = (X.reshape(n, 1) if self.vector else X).detach().to(dt).contiguous()
        idt = torch.int32 if (indptr.dtype == torch.int32 and indices.dtype == torch.int32) else torch.int64
        indptr = indptr.detach().to(idt).contiguous()
        indices = indices.detach().to(idt).contiguous()
        data = data.detach().to(dt).contiguous()
        qv = _node_weights(torch, q, n, dt, dev)
        c = _cheb_host(cheb)
        if diag is not None:
            _tensor("diag", diag)
            if diag.device != dev:
                raise ValueError(f"diag is on {diag.device} but X is on {dev}")
            if diag.shape != (n,):
                raise ValueError(f"diag must have shape ({n},), got {tuple(diag.shape)}")
        _check_values(torch, n, indptr, indices, data, X2, qv, diag, need_q_positive)
        self.device, self.dtype, self.n, self.F = dev, dt, n, int(X2.shape[1])
        self.indptr, self.indices, self.data, self.X, self.q, self.cheb = indptr, indices, data, X2, qv, c
        self.diag = diag
        self.backend = backend
        self.op = _Operator(torch, backend, indptr, indices, data, c, dev, dt)
        if updates == "auto":
            updates = "triton" if backend == "triton" else "torch"
        self.updates = _TritonUpdates() if updates == "triton" else _TorchUpdates(torch)
        if updates == "triton" and backend != "triton":
            _triton_module(torch, dev)
        return self
