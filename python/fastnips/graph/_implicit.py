r"""Implicit differentiation of the Tikhonov solve: the autograd functions behind :func:`tikhonov_prop`.

With :math:`A = p(L) + Q` symmetric, :math:`A Y = Q X` and upstream gradient :math:`G`, one adjoint solve
:math:`A \Lambda = G` with the same operator gives every gradient:

.. math:: \frac{\partial \ell}{\partial X} = Q \Lambda, \qquad
          \frac{\partial \ell}{\partial q_i} = \sum_f \Lambda_{if} (X_{if} - Y_{if}), \qquad
          \frac{\partial \ell}{\partial \theta} = -C^\top s, \quad s_j = \sum_f \lambda_f^\top T_j(L - I)\, y_f,

where C maps the coefficients in the chosen basis to Chebyshev coefficients on [0, 2]; and, when L's values
require grad (edge weights that do), :math:`\partial \ell / \partial L_{rc} = -\partial / \partial L_{rc}
\sum_j c_j s_j` on the stored entries (:func:`_moments_and_value_grad`). The solver is never unrolled.
Paper: Tremblay, Ricaud, Bianchi, "A Generalized Tikhonov Layer for Interpretable-by-design Graph Neural
Networks" (arXiv 2605.28578).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from .factor import tikhonov_factorize
from .polynomial import chebyshev_coefficients
from .solve import tikhonov_solve


def _basis_to_chebyshev(K: int, basis: str) -> np.ndarray:
    r"""The matrix C with :math:`c = C \theta`: Chebyshev coefficients on [0, 2] of a basis-``basis`` p."""
    eye = np.eye(K + 1)
    return np.stack([chebyshev_coefficients(eye[k], basis) for k in range(K + 1)], axis=1)


def _chebyshev_moments(apply_L, Lam, Y, K: int, dot) -> list:
    r""":math:`s_j = \sum_f \lambda_f^\top T_j(L - I)\, y_f`, j = 0..K, by the three-term recurrence
    (K products ``apply_L(V) = L V``; ``dot(A, B)`` sums :math:`A \circ B` in float64). Works on numpy
    arrays and torch tensors alike (in-place updates of fresh products only)."""
    s = []
    prev, cur = None, Y
    for j in range(K + 1):
        if j == 1:
            prev, cur = cur, apply_L(cur) - cur
        elif j > 1:
            nxt = apply_L(cur)
            nxt -= cur
            nxt *= 2.0
            nxt -= prev
            prev, cur = cur, nxt
        s.append(dot(Lam, cur))
    return s


def _host_moments(L: sp.csr_matrix, Lam: np.ndarray, Y: np.ndarray, K: int) -> np.ndarray:
    """The moments with the products by :func:`fastnips.ops.spmm` (the OpenMP C++ kernel where built),
    in Y's precision."""
    from ..ops import spmm

    if L.dtype != Y.dtype:
        L = L.astype(Y.dtype)
    Y2 = Y.reshape(Y.shape[0], -1)
    s = _chebyshev_moments(lambda V: spmm(L, V), Lam.reshape(Y2.shape), Y2, K,
                           lambda A, B: np.einsum("ij,ij->", A, B, dtype=np.float64))
    return np.asarray(s, dtype=np.float64)


def _moments_and_value_grad(L: sp.csr_matrix, Lam: torch.Tensor, Y: torch.Tensor, cheb: np.ndarray,
                            apply_L) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The moments :math:`s_j = \sum_f \lambda_f^\top T_j(B) y_f` (B = L - I) and
    :math:`\partial \ell / \partial L_{rc}` on the stored entries of L, for
    :math:`\partial \ell / \partial P = -\sum_f \lambda_f y_f^\top` and :math:`p(L) = \sum_j c_j T_j(B)`.

    Reverse mode through the recurrence :math:`V_0 = Y`, :math:`V_1 = B V_0`,
    :math:`V_{j+1} = 2 B V_j - V_{j-1}` of :math:`\phi = \sum_j c_j \langle \Lambda, V_j \rangle`: the adjoints
    :math:`U_K = c_K \Lambda`, :math:`U_j = c_j \Lambda + 2 B U_{j+1} - U_{j+2}` (B symmetric) give
    :math:`\partial \phi / \partial B_{rc} = \sum_{j=0}^{K-1} w_j \langle U_{j+1}[r], V_j[c] \rangle` with
    :math:`w_0 = 1`, :math:`w_j = 2`, and :math:`\partial \ell / \partial L_{rc} = -\partial \phi / \partial B_{rc}`:
    2K - 1 products ``apply_L(V) = L V`` and one sampled product over the stored entries (in chunks).
    Each stored entry is one variable; the caller's graph maps them to the edge weights.
    Returns (s as a float64 tensor of shape (K + 1,), the gradient of L's values in Y's dtype)."""
    K = cheb.shape[0] - 1
    Y2 = Y.reshape(Y.shape[0], -1)
    Lam2 = Lam.reshape(Y2.shape).to(Y2.dtype)
    B = lambda V: apply_L(V) - V
    V = [Y2]
    for j in range(1, K + 1):
        V.append(B(V[0]) if j == 1 else 2.0 * B(V[-1]) - V[-2])
    s = torch.stack([torch.sum(Lam2 * v, dtype=torch.float64) for v in V])
    g = torch.zeros(L.nnz, dtype=Y2.dtype, device=Y2.device)
    if K == 0:
        return s, g
    U = {K + 1: torch.zeros_like(Y2), K: float(cheb[K]) * Lam2}
    for j in range(K - 1, 0, -1):
        U[j] = float(cheb[j]) * Lam2 + 2.0 * B(U[j + 1]) - U[j + 2]
    Ucat = torch.cat([U[j] for j in range(1, K + 1)], dim=1)
    Vcat = torch.cat([V[0]] + [2.0 * V[j] for j in range(1, K)], dim=1)
    rows = torch.repeat_interleave(torch.arange(L.shape[0], device=Y2.device),
                                   torch.as_tensor(np.diff(L.indptr), device=Y2.device))
    cols = torch.as_tensor(L.indices, dtype=torch.int64, device=Y2.device)
    step = max(1, (1 << 22) // max(Ucat.shape[1], 1))  # about 4M gathered values per chunk
    for a in range(0, L.nnz, step):
        g[a:a + step] = (Ucat[rows[a:a + step]] * Vcat[cols[a:a + step]]).sum(dim=1)
    return s, -g


def _host_apply(L: sp.csr_matrix, dtype: np.dtype):
    """``V -> L V`` on CPU torch tensors by :func:`fastnips.ops.spmm` (the OpenMP C++ kernel where built)."""
    from ..ops import spmm

    Lw = L.astype(dtype) if L.dtype != dtype else L
    return lambda V: torch.from_numpy(np.asarray(spmm(Lw, np.ascontiguousarray(V.numpy()))))


def _work_dtype(t: torch.Tensor) -> torch.dtype:
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def _np(t: torch.Tensor, dtype: torch.dtype) -> np.ndarray:
    return np.ascontiguousarray(t.detach().to(device="cpu", dtype=dtype).numpy())


def _save(ctx, x, q, theta, y, lvals, L, basis, backend, tol, backward_tol) -> None:
    """What both backward passes need: the tensors, the operator and the adjoint tolerance."""
    ctx.save_for_backward(x, q, theta, y)
    if lvals is not None:  # L's values (they equal L.data): only their device and dtype are needed
        ctx.lvals_device, ctx.lvals_dtype = lvals.device, lvals.dtype
    ctx.L, ctx.basis, ctx.backend = L, basis, backend
    ctx.backward_tol = tol if backward_tol is None else backward_tol


class _TikhonovSolveFn(torch.autograd.Function):
    """Y = (p(L) + diag(q))^{-1} diag(q) X, backward by one adjoint solve. See :func:`tikhonov_prop`.

    ``method`` is concrete ("cg", "direct" or "dense"). For "direct" and "dense" forward factorises
    A = p(L) + Q once (:func:`fastnips.graph.tikhonov_factorize`) and keeps the factor in ctx; backward's
    adjoint solve reuses it (two triangular solves, no second factorisation). "cg" runs two CG solves.
    """

    @staticmethod
    def forward(ctx, x, q, theta, lvals, L, basis, backend, tol, backward_tol, method="cg", batch=None):
        wd = _work_dtype(x)
        X, qn, th = _np(x, wd), _np(q, torch.float64), _np(theta, torch.float64)
        ctx.factor = None
        if method == "cg":
            Y = tikhonov_solve(L, th, qn, X, basis=basis, tol=tol, backend=backend, method="cg")
        else:
            ctx.factor = tikhonov_factorize(L, th, qn, basis=basis, method=method, batch=batch, backend=backend,
                                            dtype=X.dtype)
            Y = ctx.factor.solve(X)
        y = torch.from_numpy(np.ascontiguousarray(Y)).to(device=x.device, dtype=x.dtype)
        _save(ctx, x, q, theta, y, lvals, L, basis, backend, tol, backward_tol)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y):
        x, q, theta, y = ctx.saved_tensors
        if not any(ctx.needs_input_grad[:4]):
            return (None,) * 11
        need_x, need_q, need_theta, need_l = ctx.needs_input_grad[:4]
        wd = _work_dtype(x)
        G = _np(grad_y, wd)
        qn, th = _np(q, torch.float64), _np(theta, torch.float64)
        qw = qn.astype(G.dtype).reshape((-1,) + (1,) * (G.ndim - 1))
        if ctx.factor is not None:  # A lambda = g with the factor of forward (A is symmetric)
            Lam = ctx.factor.solve_adjoint(G)
        else:
            # A lambda = g with A = p(L) + Q symmetric: tikhonov_solve solves A Y = Q X, so pass X = g / q.
            Lam = tikhonov_solve(ctx.L, th, qn, G / qw, basis=ctx.basis, tol=ctx.backward_tol, backend=ctx.backend,
                                 method="cg")
        Lam = np.asarray(Lam, dtype=G.dtype)
        gx = gq = gth = gl = None
        if need_x:
            gx = torch.from_numpy(np.ascontiguousarray(qw * Lam)).to(device=x.device, dtype=x.dtype)
        if need_q or need_theta or need_l:
            Y = _np(y, wd)
        if need_q:
            X = _np(x, wd)
            d = Lam * (X - Y)
            gq_np = d if d.ndim == 1 else d.sum(axis=1, dtype=np.float64)
            gq = torch.from_numpy(np.ascontiguousarray(gq_np)).to(device=q.device, dtype=q.dtype)
        K = th.shape[0] - 1
        if need_l:  # the moments come with the value gradient
            s, gv = _moments_and_value_grad(ctx.L, torch.from_numpy(Lam), torch.from_numpy(Y),
                                            chebyshev_coefficients(th, ctx.basis), _host_apply(ctx.L, Y.dtype))
            s = s.numpy()
            gl = gv.to(device=ctx.lvals_device, dtype=ctx.lvals_dtype)
        elif need_theta:
            s = _host_moments(ctx.L, Lam, Y, K)
        if need_theta:
            gth_np = -(_basis_to_chebyshev(K, ctx.basis).T @ s)
            gth = torch.from_numpy(gth_np).to(device=theta.device, dtype=theta.dtype)
        return gx, gq, gth, gl, None, None, None, None, None, None, None


class _TikhonovDeviceFn(torch.autograd.Function):
    """The same function as :class:`_TikhonovSolveFn` with every tensor kept on x's device: forward and
    adjoint CG solves with ``backend="triton"|"cuda"`` (:mod:`fastnips.graph._device`), the gradients in
    torch ops, the theta gradient's Chebyshev moments by torch sparse CSR products on the device."""

    @staticmethod
    def forward(ctx, x, q, theta, lvals, L, basis, backend, tol, backward_tol):
        wd = _work_dtype(x)
        th = _np(theta, torch.float64)
        y = tikhonov_solve(L, th, q.detach().to(wd), x.detach().to(wd), basis=basis, tol=tol, backend=backend,
                           method="cg")
        _save(ctx, x, q, theta, y, lvals, L, basis, backend, tol, backward_tol)
        return y.to(x.dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y):
        x, q, theta, y = ctx.saved_tensors
        if not any(ctx.needs_input_grad[:4]):
            return (None,) * 9
        need_x, need_q, need_theta, need_l = ctx.needs_input_grad[:4]
        wd = _work_dtype(x)
        G = grad_y.detach().to(wd)
        qw = q.detach().to(wd).reshape((-1,) + (1,) * (G.dim() - 1))
        th = _np(theta, torch.float64)
        Lam = tikhonov_solve(ctx.L, th, qw.reshape(-1), G / qw, basis=ctx.basis, tol=ctx.backward_tol,
                             backend=ctx.backend, method="cg")
        gx = gq = gth = gl = None
        if need_x:
            gx = (qw * Lam).to(x.dtype)
        if need_q:
            d = Lam * (x.detach().to(wd) - y)
            gq = (d if d.dim() == 1 else d.sum(dim=1, dtype=torch.float64)).to(q.dtype)
        if need_theta or need_l:
            K = th.shape[0] - 1
            Lc = ctx.L
            Lt = torch.sparse_csr_tensor(torch.as_tensor(Lc.indptr, dtype=torch.int64, device=y.device),
                                         torch.as_tensor(Lc.indices, dtype=torch.int64, device=y.device),
                                         torch.as_tensor(Lc.data, device=y.device, dtype=wd), size=Lc.shape,
                                         check_invariants=False)  # a validated canonical CSR (_as_csr)
        if need_l:
            s, gv = _moments_and_value_grad(Lc, Lam, y, chebyshev_coefficients(th, ctx.basis), lambda V: Lt @ V)
            gl = gv.to(device=ctx.lvals_device, dtype=ctx.lvals_dtype)
            if need_theta:
                C = torch.as_tensor(_basis_to_chebyshev(K, ctx.basis), device=y.device)
                gth = (-(C.T @ s)).to(device=theta.device, dtype=theta.dtype)
        elif need_theta:
            y2 = y if y.dim() == 2 else y.unsqueeze(1)
            s = torch.stack(_chebyshev_moments(lambda V: Lt @ V, Lam.reshape(y2.shape), y2, K,
                                               lambda A, B: torch.sum(A * B, dtype=torch.float64)))
            C = torch.as_tensor(_basis_to_chebyshev(K, ctx.basis), device=y.device)
            gth = (-(C.T @ s)).to(device=theta.device, dtype=theta.dtype)
        return gx, gq, gth, gl, None, None, None, None, None


