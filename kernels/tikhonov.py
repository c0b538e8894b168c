r"""Triton kernels of the device Tikhonov solver: the fused Chebyshev step and the CG vector updates.

The solver (``fastnips.graph._device``) solves :math:`(p(L) + \mathrm{diag}(q)) Y = \mathrm{diag}(q) X` by
block Jacobi-preconditioned CG, with p in the Chebyshev basis of :math:`M = L - I` (spectrum of a
normalized Laplacian :math:`[0, 2] \to [-1, 1]`):

.. math:: p(L) = \sum_{k=0}^{K} c_k T_k(M), \qquad T_0 = I,\ T_1 = M,\ T_{k+1} = 2 M T_k - T_{k-1}.

**Fused Chebyshev step** (:func:`cheb_step`, one row-parallel sparse pass per k): for rows i,

.. math:: s_i = (L\, T_k)_{i,:}, \qquad
          T_{k+1,i} = \begin{cases} s_i - T_{k,i} & k = 0 \\ 2 (s_i - T_{k,i}) - T_{k-1,i} & k \ge 1
          \end{cases}, \qquad
          \mathrm{acc}_i \leftarrow \begin{cases} c_0 V_i + c_1 T_{1,i} & k = 0 \\
          \mathrm{acc}_i + c_{k+1} T_{k+1,i} & k \ge 1 \end{cases}

so :math:`p(L) V` costs K sparse passes and no separate vector pass. On the last step the kernel can
also add :math:`q \circ V` (giving :math:`A V`, A = p(L) + diag(q)) and the column-wise dots
:math:`V^\top A V` in float64 (per-program partial sums, reduced by one ``torch.sum``: deterministic,
no atomics). :math:`T_{k+1}` may overwrite :math:`T_{k-1}` in place (row i of :math:`T_{k-1}` is read
only by the program that writes row i of :math:`T_{k+1}`, before it writes it).

**Tiling.** A program owns ``BLOCK_R`` consecutive rows and ``BLOCK_F`` columns and walks the rows'
nonzeros together in chunks of ``BLOCK_NNZ`` (a ``BLOCK_R x BLOCK_NNZ x BLOCK_F`` gather of rows of
:math:`T_k`, coalesced along the columns), up to the longest row of its block. ``BLOCK_NNZ`` follows the
average degree, so short rows of many rows share one program instead of each filling a mostly masked
tile (:mod:`fastnips.kernels.spmm` is this tiling with ``BLOCK_R = 1``). A block holding a hub runs its
``deg / BLOCK_NNZ`` chunks with the other rows masked: the same chunk count as spmm's per-row programs,
on a tile ``BLOCK_R`` times wider. Accumulation is in the value dtype (float32 or float64), as in
:mod:`fastnips.kernels.spmm` and the C++ solver.

**CG vector updates** (:func:`cg_update`, :func:`cg_direction`): the choice was to fuse them too. A CG
iteration needs :math:`y \mathrel{+}= \alpha p`, :math:`r \mathrel{-}= \alpha Ap`, :math:`z = r / d`,
:math:`r^\top r`, :math:`r^\top z` (float64) and then :math:`p = z + \beta p`; as torch ops that is about
12 vector passes plus float64 temporaries, fused it is 6 + 3 (the same split as the C++ ``update_rows`` /
``direction_rows``), which matters since a CG iteration is K SpMMs plus 8-10 vector passes, all
memory-bound, so the vector passes are a large share of its bytes. The per-column scalars
(:math:`\alpha, \beta`, masks) stay torch ops on length-F vectors.

Coefficients are read from a device tensor (``cheb``, in the value dtype) rather than passed as Python
floats, which Triton would narrow to float32.

Paper: Tremblay, Ricaud, Bianchi, "A Generalized Tikhonov Layer for Interpretable-by-design Graph Neural
Networks" (arXiv 2605.28578). Import lazily: ``@triton.jit`` reads ``TRITON_INTERPRET`` at import.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

_FLOATS = (torch.float32, torch.float64)
_INTS = (torch.int32, torch.int64)


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") not in ("", "0")


# ---------------------------------------------------------------------------------------------------
# kernels


@triton.jit
def _cheb_step_kernel(indptr_ptr, indices_ptr, data_ptr, cheb_ptr, k, cur_ptr, prev_ptr, next_ptr, acc_ptr,
                      v_ptr, q_ptr, part_ptr, n, F,
                      FIRST: tl.constexpr, WRITE_NEXT: tl.constexpr, ADD_Q: tl.constexpr, DOTS: tl.constexpr,
                      BLOCK_R: tl.constexpr, BLOCK_NNZ: tl.constexpr, BLOCK_F: tl.constexpr):
    pid_r = tl.program_id(0)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < n
    cols = tl.program_id(1) * BLOCK_F + tl.arange(0, BLOCK_F)
    col_ok = cols < F
    start = tl.load(indptr_ptr + rows, mask=row_ok, other=0).to(tl.int64)
    end = tl.load(indptr_ptr + rows + 1, mask=row_ok, other=0).to(tl.int64)
    length = end - start
    longest = tl.max(length, axis=0)
    # s = L T_k for the block's rows
    s = tl.zeros((BLOCK_R, BLOCK_F), dtype=acc_ptr.dtype.element_ty)
    for d in range(0, longest, BLOCK_NNZ):
        offs = d + tl.arange(0, BLOCK_NNZ)
        nz_ok = offs[None, :] < length[:, None]
        pos = start[:, None] + offs[None, :]
        j = tl.load(indices_ptr + pos, mask=nz_ok, other=0).to(tl.int64)
        a = tl.load(data_ptr + pos, mask=nz_ok, other=0.0)
        x = tl.load(cur_ptr + j[:, :, None] * F + cols[None, None, :],
                    mask=nz_ok[:, :, None] & col_ok[None, None, :], other=0.0)
        s += tl.sum(a[:, :, None] * x, axis=1)
    # epilogue: T_{k+1}, acc, (+ q o V), (dots)
    at = rows.to(tl.int64)[:, None] * F + cols[None, :]
    ok = row_ok[:, None] & col_ok[None, :]
    ck = tl.load(cheb_ptr + k + 1)
    c = tl.load(cur_ptr + at, mask=ok, other=0.0)
    if FIRST:
        c0 = tl.load(cheb_ptr)
        t = s - c
        acc = c0 * c + ck * t
    else:
        p = tl.load(prev_ptr + at, mask=ok, other=0.0)
        t = 2.0 * (s - c) - p
        acc = tl.load(acc_ptr + at, mask=ok, other=0.0) + ck * t
    if WRITE_NEXT:
        tl.store(next_ptr + at, t, mask=ok)
    if ADD_Q or DOTS:
        v = tl.load(v_ptr + at, mask=ok, other=0.0)
        if ADD_Q:
            qi = tl.load(q_ptr + rows, mask=row_ok, other=0.0)
            acc += qi[:, None] * v
        if DOTS:
            part = tl.sum(v.to(tl.float64) * acc.to(tl.float64), axis=0)
            tl.store(part_ptr + pid_r.to(tl.int64) * F + cols, part, mask=col_ok)
    tl.store(acc_ptr + at, acc, mask=ok)


@triton.jit
def _cg_update_kernel(y_ptr, r_ptr, p_ptr, ap_ptr, minv_ptr, alpha_ptr, rr_ptr, rz_ptr, n, F,
                      BLOCK_R: tl.constexpr, BLOCK_F: tl.constexpr):
    pid_r = tl.program_id(0)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < n
    cols = tl.program_id(1) * BLOCK_F + tl.arange(0, BLOCK_F)
    col_ok = cols < F
    at = rows.to(tl.int64)[:, None] * F + cols[None, :]
    ok = row_ok[:, None] & col_ok[None, :]
    al = tl.load(alpha_ptr + cols, mask=col_ok, other=0.0)[None, :]
    m = tl.load(minv_ptr + rows, mask=row_ok, other=0.0)[:, None]
    y = tl.load(y_ptr + at, mask=ok, other=0.0)
    r = tl.load(r_ptr + at, mask=ok, other=0.0)
    p = tl.load(p_ptr + at, mask=ok, other=0.0)
    ap = tl.load(ap_ptr + at, mask=ok, other=0.0)
    y += al * p
    r = r - al * ap
    tl.store(y_ptr + at, y, mask=ok)
    tl.store(r_ptr + at, r, mask=ok)
    r64 = r.to(tl.float64)
    out = pid_r.to(tl.int64) * F + cols
    tl.store(rr_ptr + out, tl.sum(r64 * r64, axis=0), mask=col_ok)
    tl.store(rz_ptr + out, tl.sum(r64 * (m * r).to(tl.float64), axis=0), mask=col_ok)


@triton.jit
def _cg_direction_kernel(p_ptr, r_ptr, minv_ptr, zc_ptr, beta_ptr, n, F, BLOCK_R: tl.constexpr,
                         BLOCK_F: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < n
    cols = tl.program_id(1) * BLOCK_F + tl.arange(0, BLOCK_F)
    col_ok = cols < F
    at = rows.to(tl.int64)[:, None] * F + cols[None, :]
    ok = row_ok[:, None] & col_ok[None, :]
    z = tl.load(zc_ptr + cols, mask=col_ok, other=0.0)[None, :]
    b = tl.load(beta_ptr + cols, mask=col_ok, other=0.0)[None, :]
    m = tl.load(minv_ptr + rows, mask=row_ok, other=0.0)[:, None]
    r = tl.load(r_ptr + at, mask=ok, other=0.0)
    p = tl.load(p_ptr + at, mask=ok, other=0.0)
    tl.store(p_ptr + at, z * (m * r) + b * p, mask=ok)


# ---------------------------------------------------------------------------------------------------
# block sizes


def _pow2_floor(x: int) -> int:
    return 1 << (max(int(x), 1).bit_length() - 1)


def step_blocks(n: int, nnz: int, F: int) -> tuple[int, int, int]:
    """(BLOCK_R, BLOCK_NNZ, BLOCK_F) of the Chebyshev step for an n-row matrix with nnz entries, F columns.

    BLOCK_F covers up to 64 columns; BLOCK_NNZ is the average degree rounded up to a power of two (1..32);
    BLOCK_R fills a tile of about 2048 gathered elements on the GPU (at least 2 rows, so the float64
    partial dots stay at most half a vector pass), and of up to 2^16 under the CPU interpreter, where
    every program is Python-level work and large tiles are cheap.
    """
    block_f = min(triton.next_power_of_2(max(F, 1)), 64)
    avg = -(-nnz // max(n, 1))
    block_nnz = min(triton.next_power_of_2(max(avg, 1)), 32)
    tile = (1 << 16) if _interpreted() else 2048
    cap = 256 if _interpreted() else 64
    block_r = max(2, min(cap, _pow2_floor(tile // (block_nnz * block_f)), triton.next_power_of_2(max(n, 1))))
    return block_r, block_nnz, block_f


def vector_blocks(n: int, F: int) -> tuple[int, int]:
    """(BLOCK_R, BLOCK_F) of the CG vector kernels: tiles of about 4096 elements (2^16 interpreted)."""
    block_f = min(triton.next_power_of_2(max(F, 1)), 64)
    tile = (1 << 16) if _interpreted() else 4096
    block_r = max(1, min(_pow2_floor(tile // block_f), triton.next_power_of_2(max(n, 1))))
    return block_r, block_f


def _warps(elements: int) -> int:
    return 8 if elements >= 4096 else 4


# ---------------------------------------------------------------------------------------------------
# wrappers


def _check_block(name: str, a: torch.Tensor, n: int, F: int, dtype, device) -> None:
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor, got {type(a).__name__}")
    if a.shape != (n, F):
        raise ValueError(f"{name} must have shape ({n}, {F}), got {tuple(a.shape)}")
    if a.dtype != dtype:
        raise TypeError(f"{name} has dtype {a.dtype}; expected {dtype} (the dtype of data)")
    if a.device != device:
        raise ValueError(f"{name} is on {a.device}; expected {device} (the device of data)")
    if not a.is_contiguous():
        raise ValueError(f"{name} must be C-contiguous (row-major)")


def _check_vector(name: str, a: torch.Tensor, size: int, dtype, device) -> None:
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor, got {type(a).__name__}")
    if a.dim() != 1 or a.shape[0] != size:
        raise ValueError(f"{name} must have shape ({size},), got {tuple(a.shape)}")
    if a.dtype != dtype:
        raise TypeError(f"{name} has dtype {a.dtype}; expected {dtype}")
    if a.device != device:
        raise ValueError(f"{name} is on {a.device}; expected {device}")
    if not a.is_contiguous():
        raise ValueError(f"{name} must be contiguous")


def _check_device(device: torch.device) -> None:
    if device.type != "cuda" and not (device.type == "cpu" and _interpreted()):
        raise ValueError(f"Triton kernels run on CUDA tensors (or on CPU tensors under TRITON_INTERPRET=1); "
                         f"got tensors on {device}")


def check_csr(indptr: torch.Tensor, indices: torch.Tensor, data: torch.Tensor) -> tuple[int, int]:
    """Check the CSR arrays' kinds (not their values: see fastnips.ops.spmm); return (n, nnz)."""
    for name, a in (("indptr", indptr), ("indices", indices), ("data", data)):
        if not isinstance(a, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor, got {type(a).__name__}")
        if a.dim() != 1 or not a.is_contiguous():
            raise ValueError(f"{name} must be a contiguous 1-D tensor, got shape {tuple(a.shape)}")
        if a.device != data.device:
            raise ValueError(f"{name} is on {a.device} but data is on {data.device}")
    if indptr.dtype not in _INTS or indices.dtype != indptr.dtype:
        raise TypeError(f"indptr/indices must share one dtype, int32 or int64 (got {indptr.dtype}, {indices.dtype})")
    if data.dtype not in _FLOATS:
        raise TypeError(f"data must be float32 or float64, got {data.dtype}")
    if indptr.shape[0] < 1:
        raise ValueError("indptr must have at least one entry (n + 1)")
    if indices.shape[0] != data.shape[0]:
        raise ValueError(f"indices and data differ in length ({indices.shape[0]} vs {data.shape[0]})")
    return int(indptr.shape[0]) - 1, int(indices.shape[0])


def cheb_step(indptr: torch.Tensor, indices: torch.Tensor, data: torch.Tensor, cheb: torch.Tensor, k: int,
              cur: torch.Tensor, prev: torch.Tensor | None, next: torch.Tensor | None, acc: torch.Tensor, *,
              V: torch.Tensor | None = None, q: torch.Tensor | None = None,
              dots: bool = False) -> torch.Tensor | None:
    r"""Step k of the fused Chebyshev recurrence of :math:`p(L) V` (see the module docstring).

    Computes :math:`T_{k+1} = 2 (L T_k - T_k) - T_{k-1}` (:math:`T_1 = L V - V` for k = 0) into ``next``
    and accumulates :math:`\mathrm{acc} \mathrel{+}= c_{k+1} T_{k+1}` (for k = 0:
    :math:`\mathrm{acc} = c_0 V + c_1 T_1`), in one pass over the rows of L.

    Parameters
    ----------
    indptr, indices : torch.Tensor, int32 or int64 (one dtype), shapes (n + 1,), (nnz,)
        L in CSR (a validated structure; symmetric, spectrum in [0, 2], for the solver's purposes).
    data : torch.Tensor, float32 or float64, shape (nnz,)
        Values of L; the dtype of every block below.
    cheb : torch.Tensor, shape (K + 1,), data's dtype and device
        Chebyshev coefficients :math:`c_0 \dots c_K` of p in :math:`t = \lambda - 1`; this step reads
        :math:`c_{k+1}` (and :math:`c_0` when k = 0).
    k : int
        0 <= k < K.
    cur : torch.Tensor, shape (n, F), C-contiguous
        :math:`T_k` (V itself when k = 0). Must not alias ``next`` or ``acc``.
    prev : torch.Tensor or None, shape (n, F)
        :math:`T_{k-1}` (ignored when k = 0; may be ``next`` itself: the update is in place).
    next : torch.Tensor or None, shape (n, F)
        Receives :math:`T_{k+1}`; None on the last step (not needed).
    acc : torch.Tensor, shape (n, F)
        The running sum :math:`\sum_{m \le k+1} c_m T_m V`: written (k = 0) or updated.
    V : torch.Tensor, shape (n, F), optional
        The operand of p (needed with ``q`` or ``dots``).
    q : torch.Tensor, shape (n,), optional
        Also add :math:`q \circ V` to ``acc`` (on the last step: ``acc`` becomes :math:`(p(L) + Q) V`).
    dots : bool, default False
        Return the column-wise float64 dots :math:`\sum_i V_{ic}\, \mathrm{acc}_{ic}` (after this step).

    Returns
    -------
    torch.Tensor of float64, shape (F,), or None
        The dots when ``dots=True``.

    Raises
    ------
    ValueError, TypeError
        Mismatched shapes, dtypes or devices, non-contiguous blocks, k out of range, or tensors on a
        device Triton cannot run on here.
    """
    n, _ = check_csr(indptr, indices, data)
    dt, dev = data.dtype, data.device
    _check_device(dev)
    if not isinstance(cur, torch.Tensor) or cur.dim() != 2:
        raise ValueError("cur must be a 2-D tensor (n, F)")
    F = int(cur.shape[1])
    _check_block("cur", cur, n, F, dt, dev)
    _check_block("acc", acc, n, F, dt, dev)
    K = int(cheb.shape[0]) - 1 if isinstance(cheb, torch.Tensor) and cheb.dim() == 1 else -1
    if K < 0:
        raise ValueError("cheb must be a non-empty 1-D tensor")
    _check_vector("cheb", cheb, K + 1, dt, dev)
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < K:
        raise ValueError(f"k must be an int in [0, K) = [0, {K}), got {k!r}")
    first = k == 0
    if not first:
        if prev is None:
            raise ValueError("prev (T_{k-1}) is required for k >= 1")
        _check_block("prev", prev, n, F, dt, dev)
    if next is not None:
        _check_block("next", next, n, F, dt, dev)
        if next.data_ptr() == cur.data_ptr() and n * F:
            raise ValueError("next must not alias cur (other rows still read T_k)")
    if acc.data_ptr() == cur.data_ptr() and n * F:
        raise ValueError("acc must not alias cur")
    if (q is not None or dots) and V is None:
        raise ValueError("V is required with q or dots")
    if V is not None:
        _check_block("V", V, n, F, dt, dev)
    if q is not None:
        _check_vector("q", q, n, dt, dev)
    return launch_cheb_step(indptr, indices, data, cheb, k, cur, prev, next, acc, V=V, q=q, dots=dots)


def launch_cheb_step(indptr, indices, data, cheb, k, cur, prev, next, acc, *, V=None, q=None, dots=False):
    """:func:`cheb_step` without the argument checks (for callers that validated once, as the solver)."""
    n, nnz, F = int(indptr.shape[0]) - 1, int(indices.shape[0]), int(cur.shape[1])
    dev = data.device
    block_r, block_nnz, block_f = step_blocks(n, nnz, F)
    grid_r = triton.cdiv(n, block_r)
    part = torch.empty((grid_r, F), dtype=torch.float64, device=dev) if dots else None
    if n and F:
        grid = (grid_r, triton.cdiv(F, block_f))
        dummy = acc
        _cheb_step_kernel[grid](indptr, indices, data, cheb, k, cur, prev if prev is not None else dummy,
                                next if next is not None else dummy, acc, V if V is not None else dummy,
                                q if q is not None else dummy, part if part is not None else dummy, n, F,
                                FIRST=k == 0, WRITE_NEXT=next is not None, ADD_Q=q is not None, DOTS=dots,
                                BLOCK_R=block_r, BLOCK_NNZ=block_nnz, BLOCK_F=block_f,
                                num_warps=_warps(block_r * block_nnz * block_f))
    return part.sum(0) if dots else None


def cg_update(Y: torch.Tensor, R: torch.Tensor, P: torch.Tensor, AP: torch.Tensor, minv: torch.Tensor,
              alpha: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The CG step after :math:`A P`, fused: :math:`Y \mathrel{+}= \alpha P`, :math:`R \mathrel{-}= \alpha\, AP`,
    and the float64 column dots :math:`r^\top r`, :math:`r^\top (m \circ r)` of the new residual.

    Parameters
    ----------
    Y, R : torch.Tensor, shape (n, F), float32 or float64, C-contiguous
        Updated in place.
    P, AP : torch.Tensor, shape (n, F)
        The search directions and their images.
    minv : torch.Tensor, shape (n,)
        The inverse Jacobi diagonal :math:`1 / (\mathrm{diag}\, p(L) + q)`.
    alpha : torch.Tensor, shape (F,)
        Step per column (0 freezes a column).

    Returns
    -------
    rr, rz : torch.Tensor of float64, shape (F,)
    """
    n, F = (int(s) for s in Y.shape) if isinstance(Y, torch.Tensor) and Y.dim() == 2 else (-1, -1)
    if n < 0:
        raise ValueError("Y must be a 2-D tensor (n, F)")
    dt, dev = Y.dtype, Y.device
    if dt not in _FLOATS:
        raise TypeError(f"Y must be float32 or float64, got {dt}")
    _check_device(dev)
    for name, a in (("Y", Y), ("R", R), ("P", P), ("AP", AP)):
        _check_block(name, a, n, F, dt, dev)
    _check_vector("minv", minv, n, dt, dev)
    _check_vector("alpha", alpha, F, dt, dev)
    return launch_cg_update(Y, R, P, AP, minv, alpha)


def launch_cg_update(Y, R, P, AP, minv, alpha):
    """:func:`cg_update` without the argument checks."""
    n, F = (int(s) for s in Y.shape)
    dev = Y.device
    block_r, block_f = vector_blocks(n, F)
    grid_r = triton.cdiv(n, block_r) if n else 0
    rr = torch.empty((grid_r, F), dtype=torch.float64, device=dev)
    rz = torch.empty((grid_r, F), dtype=torch.float64, device=dev)
    if n and F:
        _cg_update_kernel[(grid_r, triton.cdiv(F, block_f))](Y, R, P, AP, minv, alpha, rr, rz, n, F,
                                                             BLOCK_R=block_r, BLOCK_F=block_f,
                                                             num_warps=_warps(block_r * block_f))
    return rr.sum(0), rz.sum(0)


def cg_direction(P: torch.Tensor, R: torch.Tensor, minv: torch.Tensor, zc: torch.Tensor,
                 beta: torch.Tensor) -> None:
    r"""The new search directions, in place: :math:`P = zc \circ (m \circ R) + \beta \circ P` column-wise
    (zc = 1 for live columns, 0 for finished ones, whose P becomes 0)."""
    n, F = (int(s) for s in P.shape) if isinstance(P, torch.Tensor) and P.dim() == 2 else (-1, -1)
    if n < 0:
        raise ValueError("P must be a 2-D tensor (n, F)")
    dt, dev = P.dtype, P.device
    if dt not in _FLOATS:
        raise TypeError(f"P must be float32 or float64, got {dt}")
    _check_device(dev)
    _check_block("P", P, n, F, dt, dev)
    _check_block("R", R, n, F, dt, dev)
    _check_vector("minv", minv, n, dt, dev)
    _check_vector("zc", zc, F, dt, dev)
    _check_vector("beta", beta, F, dt, dev)
    launch_cg_direction(P, R, minv, zc, beta)


def launch_cg_direction(P, R, minv, zc, beta):
    """:func:`cg_direction` without the argument checks."""
    n, F = (int(s) for s in P.shape)
    if n and F:
        block_r, block_f = vector_blocks(n, F)
        _cg_direction_kernel[(triton.cdiv(n, block_r), triton.cdiv(F, block_f))](
            P, R, minv, zc, beta, n, F, BLOCK_R=block_r, BLOCK_F=block_f, num_warps=_warps(block_r * block_f))
