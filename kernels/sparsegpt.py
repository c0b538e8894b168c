r"""Triton kernel of SparseGPT's column sweep inside one block of columns (the "OBS column sweep").

For a block of columns :math:`[i_1, i_2)` with ``count = i2 - i1`` and :math:`U` the upper Cholesky factor
of the damped :math:`H^{-1}`, every row runs, for :math:`i = 0 .. count-1`,

.. math:: d = U_{ii},\quad q = w_i\,[\text{kept}],\quad e_i = (w_i - q)/d,\quad
          W_{1,[i:]} \mathrel{-}= e_i\, U_{i,[i:]},\quad \ell \mathrel{+}= (w_i - q)^2/d^2,\quad w_i \leftarrow q

and, for N:M, when :math:`i \bmod \mathrm{group} = 0`, selects the pruned entries of the group's columns
from the *current* scores :math:`W_1^2/\mathrm{diag}(U)^2`: the ``group - keep`` lowest in (score, position)
order, by a rank count (``group`` x ``group`` comparisons per row).

**Tiling.** One program owns ``BLOCK_R`` rows and holds their ``BLOCK_R x BLOCK_B`` slice of the block
(``BLOCK_B`` = next power of two >= count) in registers for the whole sweep: column i is read out with a
masked row reduction and the rank-1 update is one fused tile operation with row i of :math:`U` (masked to
the columns right of i). The block's error columns :math:`E` go to a buffer; the lazy update of the columns
right of the block, :math:`W_{[:, i_2:]} \mathrel{-}= E\, U_{[i_1:i_2, i_2:]}`, is a torch matmul done by the
caller (:mod:`fastnips.prune.sparsegpt_layer`), as is the unstructured selection at block start (a torch sort
on the block's scores, passed in as ``keep``). Loss terms are formed in the weight's dtype and summed in float64.

The caller guarantees ``count % group == 0`` for N:M (blocksize is a multiple of the group and so is
in_features). Import lazily: ``@triton.jit`` reads ``TRITON_INTERPRET`` at import.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") not in ("", "0")


@triton.jit
def _sweep_block_kernel(w_ptr, u_ptr, keep_ptr, err_ptr, loss_ptr, rows, count, stride_w, stride_u,
                        BLOCK_R: tl.constexpr, BLOCK_B: tl.constexpr, GROUP: tl.constexpr, N_PRUNE: tl.constexpr,
                        NM: tl.constexpr):
    pid = tl.program_id(0)
    r = (pid * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    c = tl.arange(0, BLOCK_B)
    r_ok = r < rows
    c_ok = c < count
    ok = r_ok[:, None] & c_ok[None, :]
    w_tile = w_ptr + r[:, None] * stride_w + c[None, :]
    aux = r[:, None] * count + c[None, :]  # (rows, count) row-major: keep and err
    W1 = tl.load(w_tile, mask=ok, other=0.0)
    dg = tl.load(u_ptr + c * stride_u + c, mask=c_ok, other=1.0)
    if NM:
        K = tl.full((BLOCK_R, BLOCK_B), 1, tl.int32)
    else:
        K = tl.load(keep_ptr + aux, mask=ok, other=1).to(tl.int32)
    E = tl.zeros((BLOCK_R, BLOCK_B), dtype=W1.dtype)
    loss = tl.zeros((BLOCK_R,), dtype=tl.float64)
    for g0 in range(0, count, GROUP):
        if NM:
            S = (W1 * W1) / (dg * dg)[None, :]
            rank = tl.zeros((BLOCK_R, BLOCK_B), dtype=tl.int32)
            for l in tl.static_range(GROUP):
                j = g0 + l
                sj = tl.sum(tl.where(c[None, :] == j, S, 0.0), axis=1)
                before = (sj[:, None] < S) | ((sj[:, None] == S) & (j < c[None, :]))
                rank += before.to(tl.int32)
            in_group = (c >= g0) & (c < g0 + GROUP)
            K = tl.where(in_group[None, :], (rank >= N_PRUNE).to(tl.int32), K)
        for l in tl.static_range(GROUP):
            i = g0 + l
            sel = c[None, :] == i
            w = tl.sum(tl.where(sel, W1, 0.0), axis=1)
            kept = tl.sum(tl.where(sel, K, 0), axis=1) != 0
            d = tl.load(u_ptr + i * stride_u + i)
            q = tl.where(kept, w, 0.0)
            e = (w - q) / d
            loss += (((w - q) * (w - q)) / (d * d)).to(tl.float64)
            u = tl.load(u_ptr + i * stride_u + c, mask=(c > i) & c_ok, other=0.0)
            W1 = W1 - e[:, None] * u[None, :]
            W1 = tl.where(sel, q[:, None], W1)
            E = tl.where(sel, e[:, None], E)
    tl.store(w_tile, W1, mask=ok)
    tl.store(err_ptr + aux, E, mask=ok)
    if NM:
        tl.store(keep_ptr + aux, K.to(tl.int8), mask=ok)
    prev = tl.load(loss_ptr + r, mask=r_ok, other=0.0)
    tl.store(loss_ptr + r, prev + loss * 0.5, mask=r_ok)


def sweep_block(W: torch.Tensor, U: torch.Tensor, i1: int, i2: int, keep: torch.Tensor, err: torch.Tensor,
                losses: torch.Tensor, *, nm: tuple[int, int] | None = None) -> None:
    """Sweep columns ``[i1, i2)`` of ``W`` in place.

    Parameters
    ----------
    W : torch.Tensor, (rows, cols), float32 or float64, contiguous
    U : torch.Tensor, (cols, cols), W's dtype, contiguous: upper Cholesky factor of the damped H^-1
    keep : torch.Tensor, (rows, i2 - i1), int8, contiguous
        Unstructured: the block's keep-mask (1 = kept), read. N:M: written with the selected mask.
    err : torch.Tensor, (rows, i2 - i1), W's dtype, contiguous: receives the error columns E
    losses : torch.Tensor, (rows,), float64: the block's losses are added
    nm : (keep, group), optional
        Select N:M in the kernel (``i2 - i1`` must be a multiple of group).
    """
    rows = W.shape[0]
    count = i2 - i1
    if W.dtype not in (torch.float32, torch.float64) or U.dtype != W.dtype or err.dtype != W.dtype:
        raise TypeError("sweep_block: W, U and err must share one dtype, float32 or float64")
    if not (W.is_contiguous() and U.is_contiguous() and keep.is_contiguous() and err.is_contiguous()):
        raise ValueError("sweep_block: W, U, keep and err must be contiguous")
    if keep.shape != (rows, count) or err.shape != (rows, count) or keep.dtype != torch.int8:
        raise ValueError("sweep_block: keep (int8) and err must have shape (rows, i2 - i1)")
    if rows == 0 or count == 0:
        return
    group, n_prune = (1, 0) if nm is None else (nm[1], nm[1] - nm[0])
    if count % group:
        raise ValueError("sweep_block: the block width must be a multiple of the N:M group")
    block_b = triton.next_power_of_2(count)
    block_r = min(triton.next_power_of_2(rows), 128) if _interpreted() else 16
    grid = (triton.cdiv(rows, block_r),)
    w_view = W[:, i1:]  # same storage; the kernel addresses columns [0, count) of it with W's row stride
    u_view = U[i1:, i1:]
    _sweep_block_kernel[grid](w_view, u_view, keep, err, losses, rows, count, W.stride(0), U.stride(0),
                              BLOCK_R=block_r, BLOCK_B=block_b, GROUP=group, N_PRUNE=n_prune, NM=nm is not None,
                              num_warps=4)
