r"""The Tikhonov solve on a torch device: block Jacobi-preconditioned CG with Triton or CUDA sparse passes.

.. math:: (p(L) + Q)\, Y = Q X, \qquad Q = \mathrm{diag}(q), \qquad
          p(L) = \sum_{k=0}^{K} c_k T_k(L - I),

the system of the generalised Tikhonov layer (Tremblay, Ricaud, Bianchi, arXiv 2605.28578; notes:
shared/notes/tikhonov_freqbias_fds.md A.2 for the operator, A.4 for the solver, A.6 for its cost). This
module mirrors the C++ solver (csrc/graph/tikhonov.cpp) on torch tensors that live on one device (a CUDA
GPU in production; CPU tensors under ``TRITON_INTERPRET=1`` for tests):

* **Operator.** :math:`A V = p(L) V + q \circ V` costs K fused Chebyshev passes over the rows of L
  (:func:`fastnips.kernels.tikhonov.cheb_step` or the CUDA kernel of csrc/cuda/tikhonov.cu): each pass
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
  (one pass over L; exact for K <= 2; the C++ solver's ``DiagonalMode::kTruncated``, which preconditions
  as well as the exact diagonal in its measurements). Entries are clamped at 0 before q is added. Any
  positive diagonal keeps PCG exact: the choice moves the iteration count, never the solution. Pass
  ``diag`` to use another one (e.g. the exact diagonal from the cpp backend).
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

import collections

import numpy as np

from .. import _backend, _optional
from .tikhonov import _coefficients

#: Rows per partial dot sum of the CUDA step (cuda_api.h: kChebRowsPerPartial).
_CUDA_ROWS_PER_PARTIAL = 32
_BACKENDS = ("triton", "cuda")
_UPDATES = ("auto", "triton", "torch")
_CUDA_FN = "tikhonov_cheb_step_cuda"


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
    Paper: arXiv 2605.28578 (the layer :math:`R = (p(L) + Q)^{-1} Q`); notes A.4 (solver: Jacobi PCG,
    block multi-right-hand-side, tol 1e-10 fp64 / 1e-6 fp32) and A.6 (an iteration is K sparse passes plus
    the vector updates, memory-bound).
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
        for name, a in (("indptr", indptr), ("indices", indices), ("data", data), ("X", X)):
            _tensor(name, a)
        dev = X.device
        for name, a in (("indptr", indptr), ("indices", indices), ("data", data)):
            if a.device != dev:
                raise ValueError(f"{name} is on {a.device} but X is on {dev}: move them to one device")
        if X.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"X must be float32 or float64, got {X.dtype}")
        dt = X.dtype
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
        self.vector = X.dim() == 1
        X2 = (X.reshape(n, 1) if self.vector else X).detach().to(dt).contiguous()
        idt = torch.int32 if (indptr.dtype == torch.int32 and indices.dtype == torch.int32) else torch.int64
        indptr = indptr.detach().to(idt).contiguous()
        indices = indices.detach().to(idt).contiguous()
        data = data.detach().to(dt).contiguous()
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
        qv = qv.to(dt).contiguous()
        c = _cheb_host(cheb)
        if diag is not None:
            _tensor("diag", diag)
            if diag.device != dev:
                raise ValueError(f"diag is on {diag.device} but X is on {dev}")
            if diag.shape != (n,):
                raise ValueError(f"diag must have shape ({n},), got {tuple(diag.shape)}")
        # structure and values (one-off host round trips, before any kernel)
        from ..ops.spmm import _check_structure

        try:
            _check_structure(n, indptr, indices)
        except ValueError as exc:
            raise ValueError(f"L: {exc}") from None
        flags = [torch.isfinite(data).all(), torch.isfinite(X2).all(), torch.isfinite(qv).all()]
        flags.append((qv > 0).all() if n else torch.ones((), dtype=torch.bool, device=dev))
        if diag is not None:
            flags.append(torch.isfinite(diag).all())
        ok = torch.stack(flags).tolist()
        if not ok[0]:
            raise ValueError("L (data) contains NaN or inf")
        if not ok[1]:
            raise ValueError("X contains NaN or inf")
        if not ok[2]:
            raise ValueError("q contains NaN or inf")
        if need_q_positive and not ok[3]:
            i = int(torch.argmin(qv))
            raise ValueError(f"q must be > 0 everywhere (q[{i}] = {float(qv[i])!r}); A = p(L) + diag(q) must be "
                             "positive definite")
        if diag is not None and not ok[4]:
            raise ValueError("diag contains NaN or inf")
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


# ---------------------------------------------------------------------------------------------------
# the operator


def _triton_module(torch, dev):
    why = _backend.why_unavailable("triton")
    if why:
        raise ValueError(f"backend 'triton' is not available here: {why}")
    if dev.type != "cuda":
        import os

        if not (dev.type == "cpu" and os.environ.get("TRITON_INTERPRET", "") not in ("", "0")):
            raise ValueError(f"backend 'triton' runs on CUDA tensors (or CPU tensors under TRITON_INTERPRET=1); "
                             f"got tensors on {dev}")
    from ..kernels import tikhonov as tk  # lazy: defining kernels reads TRITON_INTERPRET

    return tk


def _cuda_function(dev):
    if dev.type != "cuda":
        raise ValueError(f"backend 'cuda' runs on CUDA tensors; got tensors on {dev} (use backend='triton' with "
                         "TRITON_INTERPRET=1 for CPU tensors, or the cpp backend of tikhonov_solve)")
    C = _backend.native()
    if C is None:
        raise ValueError(f"backend 'cuda' is not available here: {_backend.why_unavailable('cpp')}")
    fn = getattr(C, _CUDA_FN, None)
    if fn is None:
        raise ValueError(
            f"backend 'cuda' is not available here: this build of fastnips._C has no {_CUDA_FN} (built without "
            "CUDA, or before csrc/cuda/tikhonov.cu and its binding were added); use backend='triton'")
    return fn


class _Operator:
    r"""A V (= p(L) V, + q o V on request) by K fused Chebyshev steps; scratch blocks cached per width."""

    def __init__(self, torch, backend, indptr, indices, data, cheb: np.ndarray, dev, dt):
        self.torch, self.backend = torch, backend
        self.indptr, self.indices, self.data = indptr, indices, data
        self.n, self.nnz = int(indptr.shape[0]) - 1, int(indices.shape[0])
        self.cheb = cheb
        self.K = int(cheb.shape[0]) - 1
        self.dev, self.dt = dev, dt
        self._scratch: dict[int, tuple] = {}
        self.c0 = torch.tensor(float(cheb[0]), dtype=dt).to(dev)  # for K = 0 (no sparse pass)
        if backend == "triton":
            self._tk = _triton_module(torch, dev)
            self.cheb_dev = torch.as_tensor(cheb, dtype=dt).to(dev)
        else:
            self._fn = _cuda_function(dev)
            self._bits = (32 if indptr.dtype == torch.int32 else 64, 32 if dt == torch.float32 else 64)

    def scratch(self, w: int):
        if w not in self._scratch:
            self._scratch.clear()  # widths only shrink within a solve
            e = lambda: self.torch.empty((self.n, w), dtype=self.dt, device=self.dev)
            self._scratch[w] = (e() if self.K >= 2 else None, e() if self.K >= 3 else None)
        return self._scratch[w]

    def apply(self, V, out, q=None, dots: bool = False):
        """out = p(L) V (+ q o V); returns the float64 column dots V . out when ``dots``."""
        torch = self.torch
        if self.K == 0:  # acc = (c0 + q) o V, as the C++ scale_rows
            torch.mul(V, (q + self.c0)[:, None] if q is not None else self.c0, out=out)
            return (V.double() * out.double()).sum(0) if dots else None
        ta, tb = self.scratch(int(V.shape[1]))
        prev, cur, result = None, V, None
        for k in range(self.K):
            nxt = ta if k == 0 else tb if k == 1 else prev
            last = k == self.K - 1
            result = self.step(k, cur, prev, None if last else nxt, out, V=V if last and (q is not None or dots)
                               else None, q=q if last else None, dots=dots and last)
            prev, cur = cur, nxt
        return result

    def step(self, k, cur, prev, nxt, acc, *, V=None, q=None, dots=False):
        if self.backend == "triton":
            return self._tk.launch_cheb_step(self.indptr, self.indices, self.data, self.cheb_dev, k, cur, prev, nxt,
                                             acc, V=V, q=q, dots=dots)
        torch = self.torch
        n, w = (int(s) for s in cur.shape)
        part = torch.empty((-(-n // _CUDA_ROWS_PER_PARTIAL), w), dtype=torch.float64, device=self.dev) if dots \
            else None
        ptr = lambda a: 0 if a is None else a.data_ptr()
        self._fn(n, self.nnz, w, self.indptr.data_ptr(), self.indices.data_ptr(), self.data.data_ptr(),
                 cur.data_ptr(), ptr(prev), ptr(nxt), acc.data_ptr(), ptr(V), ptr(q), ptr(part),
                 float(self.cheb[0]), float(self.cheb[k + 1]), k == 0, self._bits[0], self._bits[1],
                 torch.cuda.current_stream(self.dev).cuda_stream)
        return part.sum(0) if dots else None


def _truncated_diagonal(torch, indptr, indices, data, c: np.ndarray):
    """c0 + c1 (L_ii - 1) + c2 (2 sum_j M_ij^2 - 1) in float64, repeated (i, j) entries summed first.

    Sorts and segment sums only (no scatter-add, whose float atomics on CUDA would make the
    preconditioner, hence the iterates, differ between runs in the last bits).
    """
    dev = data.device
    n = int(indptr.shape[0]) - 1
    d = torch.full((n,), float(c[0]), dtype=torch.float64, device=dev)
    K = int(c.shape[0]) - 1
    if K == 0 or n == 0:
        return d
    counts = (indptr[1:] - indptr[:-1]).long()
    rows = torch.repeat_interleave(torch.arange(n, device=dev), counts)
    key = rows * n + indices.long()
    order = torch.argsort(key, stable=True)
    key, vals = key[order], data.double()[order]
    uniq, reps = torch.unique_consecutive(key, return_counts=True)
    zero = torch.zeros(1, dtype=torch.int64, device=dev)
    coal = torch.segment_reduce(vals, "sum", offsets=torch.cat([zero, reps.cumsum(0)]), initial=0.0)
    r = uniq // n
    on = r == uniq % n
    row_offsets = torch.cat([zero, torch.bincount(r, minlength=n).cumsum(0)])  # uniq is sorted by row
    rowsum = lambda v: torch.segment_reduce(v, "sum", offsets=row_offsets, initial=0.0)
    m1 = rowsum(torch.where(on, coal, 0.0)) - 1.0  # diag(T_1) = diag(M) = L_ii - 1
    d += float(c[1]) * m1
    if K >= 2:
        off = rowsum(torch.where(on, 0.0, coal * coal))  # sum_{j != i} L_ij^2
        d += float(c[2]) * (2.0 * (off + m1 * m1) - 1.0)  # diag(T_2) = 2 diag(M^2) - 1
    return d


# ---------------------------------------------------------------------------------------------------
# vector updates


class _TritonUpdates:
    def __init__(self):
        self._tk = None

    def _mod(self):
        if self._tk is None:
            from ..kernels import tikhonov as tk

            self._tk = tk
        return self._tk

    def update(self, Y, R, P, AP, minv, alpha):
        return self._mod().launch_cg_update(Y, R, P, AP, minv, alpha)

    def direction(self, P, R, minv, zc, beta):
        self._mod().launch_cg_direction(P, R, minv, zc, beta)


class _TorchUpdates:
    """The same arithmetic as the Triton kernels (and csrc update_rows/direction_rows) as torch ops."""

    def __init__(self, torch):
        self.torch = torch

    def update(self, Y, R, P, AP, minv, alpha):
        Y.add_(P * alpha)
        R.sub_(AP * alpha)
        r64 = R.double()
        return (r64 * r64).sum(0), (r64 * (minv[:, None] * R).double()).sum(0)

    def direction(self, P, R, minv, zc, beta):
        P.mul_(beta).add_(zc * (minv[:, None] * R))


# ---------------------------------------------------------------------------------------------------
# the CG


class _Monitor:
    """(live, broken) flags of the block, read by the host without draining the device queue (module
    docstring, 'Host synchronisation')."""

    def __init__(self, torch, dev, lag: int):
        self.torch, self.dev, self.lag = torch, dev, lag
        self.asynchronous = dev.type == "cuda"
        self.pending = collections.deque()

    def push(self, active, broken):
        flags = self.torch.cat([active, broken])
        self.pending.append(self._copy(flags) if self.asynchronous else (None, flags))

    def _copy(self, flags):
        """(event, pinned host copy) of the flags, queued behind the work that produced them."""
        host = self.torch.empty(flags.shape, dtype=flags.dtype, pin_memory=True)
        host.copy_(flags, non_blocking=True)
        ev = self.torch.cuda.Event()
        ev.record(self.torch.cuda.current_stream(self.dev))
        return ev, host

    def poll(self):
        """The newest flags the device has produced (waiting only beyond ``lag`` pending sets), as
        (active: ndarray of bool, broken: ndarray of bool), or None when none is ready."""
        got = None
        while self.pending:
            ev, host = self.pending[0]
            if ev is not None and len(self.pending) <= self.lag and not ev.query():
                break
            self.pending.popleft()
            if ev is not None:
                ev.synchronize()
            got = host
        if got is None:
            return None
        a = got.cpu().numpy()
        w = a.shape[0] // 2
        return a[:w], a[w:]

    def clear(self):
        self.pending.clear()


class _BlockCg:
    def __init__(self, prob: _Problem, tol: float, maxiter: int, max_restarts: int, lag: int):
        self.p, self.tol, self.maxiter, self.max_restarts, self.lag = prob, tol, maxiter, max_restarts, lag
        self.torch = _optional.torch()

    def solve(self):
        torch, p = self.torch, self.p
        n, F, dt, dev = p.n, p.F, p.dtype, p.device
        Y = torch.zeros((n, F), dtype=dt, device=dev)
        iterations = np.zeros(F, dtype=np.int64)
        residuals = np.zeros(F, dtype=np.float64)
        if n == 0 or F == 0:
            return Y, iterations, residuals
        d = _truncated_diagonal(torch, p.indptr, p.indices, p.data, p.cheb) if p.diag is None else p.diag.double()
        self.minv = (1.0 / (d.clamp(min=0.0) + p.q.double())).to(dt)
        self.B = p.q[:, None] * p.X  # b = q o x in the working dtype, as the C++ solver
        self.bnorm = (p.q.double()[:, None] * p.X.double()).pow(2).sum(0).sqrt()
        self.Y = Y
        self.iters = torch.zeros(F, dtype=torch.int64, device=dev)
        self.res = torch.zeros(F, dtype=torch.float64, device=dev)
        todo = [int(c) for c in np.flatnonzero(self.bnorm.cpu().numpy() > 0.0)]  # zero rhs: y = 0
        for round_ in range(self.max_restarts + 1):
            if not todo:
                break
            self._run(todo, warm=round_ > 0)
            self._true_residuals(todo)
            if round_ >= self.max_restarts:
                break
            res, its = self.res.cpu().numpy(), self.iters.cpu().numpy()
            todo = [c for c in todo if res[c] > self.tol and its[c] < self.maxiter]
        return Y, self.iters.cpu().numpy(), self.res.cpu().numpy()

    def _true_residuals(self, cols):
        torch, p = self.torch, self.p
        ct = torch.tensor(cols, dtype=torch.int64, device=p.device)
        V = self.Y.index_select(1, ct)
        AV = torch.empty_like(V)
        p.op.apply(V, AV, q=p.q)
        r = self.B.index_select(1, ct).double() - AV.double()
        self.res.index_copy_(0, ct, r.pow(2).sum(0).sqrt() / self.bnorm[ct])

    def _run(self, cols, warm: bool):
        torch, p, upd = self.torch, self.p, self.p.updates
        dt, dev, q, minv = p.dtype, p.device, p.q, self.minv
        ct = torch.tensor(cols, dtype=torch.int64, device=dev)
        W = len(cols)
        # R = b - A y (warm) or b; the first direction is P = minv o R
        R = self.B.index_select(1, ct)
        if warm:
            Yb = self.Y.index_select(1, ct)
            AY = torch.empty_like(Yb)
            p.op.apply(Yb, AY, q=q)
            R.sub_(AY)
        else:
            Yb = torch.zeros((p.n, W), dtype=dt, device=dev)
        P = torch.zeros_like(Yb)
        AP = torch.zeros_like(Yb)
        thr = (self.tol * self.bnorm[ct]) ** 2
        it = self.iters[ct]
        rr, rz = upd.update(Yb, R, P, AP, minv, torch.zeros(W, dtype=dt, device=dev))  # alpha = 0: dots only
        active = (rr > thr) & (it < self.maxiter)
        rz_old = rz
        upd.direction(P, R, minv, active.to(dt), torch.zeros(W, dtype=dt, device=dev))
        bad_iter = torch.full((W,), -1, dtype=torch.int64, device=dev)
        bad_curv = torch.zeros(W, dtype=torch.float64, device=dev)
        mon = _Monitor(torch, dev, self.lag)
        mon.push(active, bad_iter >= 0)
        while True:
            got = mon.poll()
            if got is not None:
                act, broken = got
                if broken.any():
                    self._raise_indefinite(ct, bad_iter, bad_curv)
                live = int(act.sum())
                if live == 0:
                    break
                if 2 * live <= W:  # compact: write the block out, keep the (possibly) live columns
                    self.Y.index_copy_(1, ct, Yb)
                    self.iters.index_copy_(0, ct, it)
                    keep = torch.tensor(np.flatnonzero(act), dtype=torch.int64, device=dev)
                    ct = ct[keep]
                    Yb, R, P = (a.index_select(1, keep) for a in (Yb, R, P))
                    AP = torch.empty_like(Yb)
                    thr, it, rz_old, active, bad_iter, bad_curv = (
                        a[keep] for a in (thr, it, rz_old, active, bad_iter, bad_curv))
                    W = live
                    mon.clear()
            pap = p.op.apply(P, AP, q=q, dots=True)
            ok = (pap > 0) & torch.isfinite(pap)
            newbad = active & ~ok & (bad_iter < 0)
            bad_iter = torch.where(newbad, it + 1, bad_iter)
            bad_curv = torch.where(newbad, pap, bad_curv)
            active = active & ok
            alpha = torch.where(active, rz_old / pap, torch.zeros_like(pap)).to(dt)
            rr, rz = upd.update(Yb, R, P, AP, minv, alpha)
            it = it + active.long()
            cont = active & (rr > thr) & (it < self.maxiter)
            beta = torch.where(cont, rz / rz_old, torch.zeros_like(rz)).to(dt)
            rz_old = torch.where(cont, rz, rz_old)
            active = cont
            upd.direction(P, R, minv, active.to(dt), beta)
            mon.push(active, bad_iter >= 0)
        self.Y.index_copy_(1, ct, Yb)
        self.iters.index_copy_(0, ct, it)

    def _raise_indefinite(self, ct, bad_iter, bad_curv):
        its, curv, cols = bad_iter.cpu().numpy(), bad_curv.cpu().numpy(), ct.cpu().numpy()
        cand = np.flatnonzero(its >= 0)
        s = cand[np.lexsort((cols[cand], its[cand]))[0]]
        raise ValueError(
            f"p(L) + diag(q) is not positive definite: conjugate gradients met p^T A p = {curv[s]:.6g} <= 0 in "
            f"column {int(cols[s])} at iteration {int(its[s])}; L must be symmetric with its spectrum in [0, 2] "
            "(a normalized Laplacian) and p >= 0 on [0, 2]")


__all__ = ["device_jacobi_diagonal", "device_poly_apply", "device_tikhonov_solve"]
