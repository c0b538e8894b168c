"""Triton kernels of predictive-coding inference (fastnips.pc): one step is, per layer l = 1..L,

* ``pc_errors``: ``E_l = X_l - (f(X_{l-1}) @ W_l^T + b_l)`` -- a matmul with the activation applied to the
  A tile on load and the bias and subtraction in the epilogue (no f(X) or mu buffer in memory);
* ``pc_update``: ``X_l += lr * (-E_l + f'(X_l) * (E_{l+1} @ W_{l+1}))`` -- a matmul whose epilogue reads the
  layer's own tile of X and E and writes X in place (each program owns one output tile, so in place is safe).

Activation codes: 0 identity, 1 tanh, 2 relu. float32 only, with IEEE products (no TF32: the results must match
the float32 reference to 1e-4); shapes are validated by the caller.
Tiles are 16 x 16 x 16 under the CPU interpreter, 32 x 32 x 32 on a GPU.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl


@triton.jit
def _act(x, ACT: tl.constexpr):
    if ACT == 1:
        return 2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0
    elif ACT == 2:
        return tl.maximum(x, 0.0)
    else:
        return x


@triton.jit
def _dact(x, ACT: tl.constexpr):
    if ACT == 1:
        t = 2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0
        return 1.0 - t * t
    elif ACT == 2:
        return tl.where(x > 0, 1.0, 0.0)
    else:
        return tl.full(x.shape, 1.0, x.dtype)


@triton.jit
def _errors_kernel(p_ptr, w_ptr, b_ptr, x_ptr, e_ptr, B, N, K, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(p_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < B) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(_act(a, ACT), w, input_precision="ieee")
    if HAS_BIAS:
        acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    ok = (rm[:, None] < B) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=ok, other=0.0)
    tl.store(e_ptr + rm[:, None] * N + rn[None, :], x - acc, mask=ok)


@triton.jit
def _update_kernel(x_ptr, e_ptr, en_ptr, wn_ptr, lr, B, N, M, ACT: tl.constexpr, BM: tl.constexpr,
                   BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, M, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(en_ptr + rm[:, None] * M + rk[None, :], mask=(rm[:, None] < B) & (rk[None, :] < M), other=0.0)
        w = tl.load(wn_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < M) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    ok = (rm[:, None] < B) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs, mask=ok, other=0.0)
    e = tl.load(e_ptr + offs, mask=ok, other=0.0)
    tl.store(x_ptr + offs, x + lr * (_dact(x, ACT) * acc - e), mask=ok)


def _tiles() -> tuple[int, int, int]:
    interpreted = os.environ.get("TRITON_INTERPRET", "") not in ("", "0")
    return (16, 16, 16) if interpreted else (32, 32, 32)


def pc_errors(prev: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None, x: torch.Tensor, out: torch.Tensor,
              act: int) -> torch.Tensor:
    """``out = x - (f(prev) @ W.T + b)``; prev (B, K), W (N, K), b (N,) or None, x and out (B, N), contiguous
    float32 on one device."""
    B, K = prev.shape
    N = W.shape[0]
    BM, BN, BK = _tiles()
    grid = (triton.cdiv(B, BM), triton.cdiv(N, BN))
    _errors_kernel[grid](prev, W, b if b is not None else W, x, out, B, N, K, HAS_BIAS=b is not None, ACT=act,
                         BM=BM, BN=BN, BK=BK)
    return out


def pc_update(x: torch.Tensor, e: torch.Tensor, e_next: torch.Tensor, W_next: torch.Tensor, lr: float,
              act: int) -> torch.Tensor:
    """In place: ``x += lr * (f'(x) * (e_next @ W_next) - e)``; x, e (B, N), e_next (B, M), W_next (M, N)."""
    B, N = x.shape
    M = e_next.shape[1]
    BM, BN, BK = _tiles()
    grid = (triton.cdiv(B, BM), triton.cdiv(N, BN))
    _update_kernel[grid](x, e, e_next, W_next, float(lr), B, N, M, ACT=act, BM=BM, BN=BN, BK=BK)
    return x
