r"""The pieces of the device Tikhonov solver (:mod:`fastnips.graph._device`): the operator, the vector updates
and the block CG loop, on torch tensors that live on one device.

.. math:: A V = p(L) V + q \circ V = \sum_{k=0}^{K} c_k T_k(L - I)\, V + q \circ V, \qquad
          T_{k+1} = 2 (L - I) T_k - T_{k-1}.

The algorithm (masking, compaction, the lagged convergence test, restarts) is described in the docstring
of :mod:`fastnips.graph._device`.
"""

from __future__ import annotations

import collections

import numpy as np

from .. import _backend, _optional

#: Rows per partial dot sum of the CUDA step (the kernel's kChebRowsPerPartial).
_CUDA_ROWS_PER_PARTIAL = 32



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
    why = _backend.why_unavailable("cuda")
    if why:
        raise ValueError(f"backend 'cuda' is not available here: {why}; use backend='triton'")
    return _backend.native().tikhonov_cheb_step_cuda


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
    def __init__(self, prob, tol: float, maxiter: int, max_restarts: int, lag: int):
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


