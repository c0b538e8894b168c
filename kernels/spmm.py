"""Triton CSR SpMM: ``Y = A @ X``.

One program per (row, block of X columns). The program walks its row's nonzeros in chunks of
``BLOCK_NNZ``, gathers the matching rows of X as a ``BLOCK_NNZ x BLOCK_K`` tile (coalesced along the
columns), and reduces the weighted tile over the chunk. Accumulation is in the value dtype (float32 or
float64). The host wrapper expects the structure to be validated already (fastnips.ops.spmm does).
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl


@triton.jit
def _spmm_csr_kernel(indptr_ptr, indices_ptr, data_ptr, x_ptr, y_ptr, k, stride_x, stride_y,
                     BLOCK_NNZ: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    col_ok = cols < k
    start = tl.load(indptr_ptr + row).to(tl.int64)
    end = tl.load(indptr_ptr + row + 1).to(tl.int64)
    acc = tl.zeros((BLOCK_K,), dtype=y_ptr.dtype.element_ty)
    for p in range(start, end, BLOCK_NNZ):
        offs = p + tl.arange(0, BLOCK_NNZ)
        nz_ok = offs < end
        j = tl.load(indices_ptr + offs, mask=nz_ok, other=0).to(tl.int64)
        a = tl.load(data_ptr + offs, mask=nz_ok, other=0.0)
        x = tl.load(x_ptr + j[:, None] * stride_x + cols[None, :], mask=nz_ok[:, None] & col_ok[None, :],
                    other=0.0)
        acc += tl.sum(a[:, None] * x, axis=0)
    tl.store(y_ptr + row.to(tl.int64) * stride_y + cols, acc, mask=col_ok)


def spmm_csr(indptr: torch.Tensor, indices: torch.Tensor, data: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """``Y = A @ X`` for a validated CSR matrix and a C-contiguous 2-D ``X`` on one device."""
    if X.dim() != 2 or not X.is_contiguous():
        raise ValueError("spmm_csr: X must be a contiguous 2-D tensor")
    if data.dtype != X.dtype or indptr.dtype != indices.dtype:
        raise TypeError("spmm_csr: data/X and indptr/indices must share their dtypes")
    n_rows, k = indptr.shape[0] - 1, X.shape[1]
    Y = torch.empty((n_rows, k), dtype=X.dtype, device=X.device)
    if n_rows == 0 or k == 0:
        return Y
    interpreted = os.environ.get("TRITON_INTERPRET", "") not in ("", "0")
    # Under the CPU interpreter every program costs Python time: use wide chunks there.
    block_nnz = 128 if interpreted else 32
    block_k = min(triton.next_power_of_2(k), 64)
    grid = (n_rows, triton.cdiv(k, block_k))
    _spmm_csr_kernel[grid](indptr, indices, data, X, Y, k, X.stride(0), Y.stride(0),
                           BLOCK_NNZ=block_nnz, BLOCK_K=block_k)
    return Y
