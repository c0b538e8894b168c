r"""Triton kernels of masked linear layers and masked LoRA (:mod:`fastnips.prune.masked_ops`), with the keep-mask
read from its bit-packed form (:mod:`fastnips.prune.bits`).

The mask of a weight :math:`W \in \mathbb{R}^{d_{out} \times d_{in}}` is a bool matrix M (True = kept)
stored as ``bits``, uint8 of shape ``(d_out, ceil(d_in / 8))``: bit ``j % 8`` of byte ``bits[o, j // 8]``
is :math:`M_{oj}` (little-endian bit order, numpy's ``packbits(..., bitorder="little")``), padding bits 0.
Every kernel expands the bits of its own tile in registers; no full-size mask, and no full-size
:math:`BA`, ever exists in memory.

**Masked weight gradient** (:func:`masked_weight_grad`): for tokens t,

.. math:: dW = (dY^\top X) \odot M, \qquad dW_{oi} = M_{oi} \sum_t dY_{to} X_{ti},

one program per ``BLOCK_O x BLOCK_I`` tile of dW: the tile's mask is loaded first (a tile with no kept
weight skips the product and stores zeros), the product accumulates in float32 over ``BLOCK_T`` tokens
at a time, and the mask is applied in the epilogue with ``where`` (pruned entries are exactly 0.0, even
when the product is inf or NaN).

**Masked LoRA product** (:func:`masked_lora_forward`, :func:`masked_lora_input_grad`): with scale s,

.. math:: Y = X W^\top + s\, X \big((BA) \odot M\big)^\top + b,

one program per ``BLOCK_M x BLOCK_N`` tile of Y. For every ``BLOCK_K`` slice of the reduction it forms
the tile :math:`D = B_{n,:} A_{:,k}` of BA (one small dot of inner size r), masks it from the bits and
multiplies, so the cost over a dense GEMM is a factor :math:`1 + r / \mathrm{BLOCK\_M}` of the FLOPs for
the recomputed tiles of BA (once per row tile of X). The base and LoRA products go into two float32
accumulators (``acc + s * lora`` at the end) so a low-precision W is never rounded together with the
update. The input gradient :math:`dX = dY \big(W + s (BA) \odot M\big)` is the same kernel with the roles
transposed by strides (``W^T``, ``A^T``, ``B^T``, mask read transposed): no copies.

**Masked LoRA weight gradients** (:func:`masked_lora_backward`): with :math:`G = (dY^\top X) \odot M`
(= the gradient of W),

.. math:: dB = s\, G A^\top, \qquad dA = s\, B^\top G,

one program per ``BLOCK_O x BLOCK_I`` tile of G (formed as in the weight gradient, optionally stored as
dW), which then adds its contributions :math:`s\, G_{tile} A_{:, i}^\top` to ``dB[o-tile]`` and
:math:`s\, B_{o,:}^\top G_{tile}` to ``dA[:, i-tile]`` with float32 atomics. The choice was atomics
over per-tile partial sums: partials would cost ``r / BLOCK`` of W's size in float32 (a quarter of W at
r = 16), atomics cost nothing, but the order of the float32 sums varies from run to run on a GPU
(differences at rounding level). ``backend="reference"`` in :mod:`fastnips.prune.masked_ops` is
deterministic, and ``"auto"`` picks it under ``torch.use_deterministic_algorithms(True)``.

**Precision.** Products accumulate in float32. float32 inputs use ``input_precision="ieee"`` (no TF32),
so a float32 result agrees with torch to rounding. Under the CPU interpreter (``TRITON_INTERPRET=1``)
bfloat16 dots are wrong in triton 3.7.1 (it multiplies the raw bits), so there the operands are
upcast to float32 first; on a GPU the dots run on the native bf16/fp16 tensor-core path with float32
accumulation (bf16 x bf16 products are exact in float32, so the two agree to accumulation order).

Import lazily: ``@triton.jit`` reads ``TRITON_INTERPRET`` at import.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") not in ("", "0")


# ---------------------------------------------------------------------------------------------------
# kernels


@triton.jit
def _keep_tile(bits_ptr, rows, cols, ok, NBYTES):
    """The keep-mask of a tile: bit ``cols % 8`` of ``bits[rows, cols // 8]`` (False outside ``ok``)."""
    byte = tl.load(bits_ptr + rows.to(tl.int64) * NBYTES + (cols >> 3), mask=ok, other=0)
    return (((byte.to(tl.int32) >> (cols & 7)) & 1) != 0) & ok


@triton.jit
def _masked_grad_kernel(dy_ptr, x_ptr, bits_ptr, dw_ptr, a_ptr, b_ptr, da_ptr, db_ptr, s,
                        T, N_OUT, N_IN, R, NBYTES,
                        s_dyt, s_dyo, s_xt, s_xi, s_ar, s_ai, s_bo, s_br,
                        STORE_DW: tl.constexpr, LORA: tl.constexpr, UPCAST: tl.constexpr, PREC: tl.constexpr,
                        BLOCK_O: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_T: tl.constexpr,
                        BLOCK_R: tl.constexpr):
    offs_o = tl.program_id(0) * BLOCK_O + tl.arange(0, BLOCK_O)
    offs_i = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    o_ok = offs_o < N_OUT
    i_ok = offs_i < N_IN
    ok = o_ok[:, None] & i_ok[None, :]
    keep = _keep_tile(bits_ptr, offs_o[:, None], offs_i[None, :], ok, NBYTES)
    any_kept = tl.max(keep.to(tl.int32))
    t_end = tl.where(any_kept > 0, T, 0)  # a fully pruned tile skips the product
    g = tl.zeros((BLOCK_O, BLOCK_I), dtype=tl.float32)
    for t0 in range(0, t_end, BLOCK_T):
        offs_t = t0 + tl.arange(0, BLOCK_T)
        t_ok = offs_t < T
        dyt = tl.load(dy_ptr + offs_t[None, :].to(tl.int64) * s_dyt + offs_o[:, None] * s_dyo,
                      mask=o_ok[:, None] & t_ok[None, :], other=0.0)  # (BLOCK_O, BLOCK_T) of dY^T
        xt = tl.load(x_ptr + offs_t[:, None].to(tl.int64) * s_xt + offs_i[None, :] * s_xi,
                     mask=t_ok[:, None] & i_ok[None, :], other=0.0)  # (BLOCK_T, BLOCK_I)
        if UPCAST:
            dyt = dyt.to(tl.float32)
            xt = xt.to(tl.float32)
        g += tl.dot(dyt, xt, input_precision=PREC)
    g = tl.where(keep, g, 0.0)
    if STORE_DW:
        tl.store(dw_ptr + offs_o[:, None].to(tl.int64) * N_IN + offs_i[None, :], g.to(dw_ptr.dtype.element_ty),
                 mask=ok)
    if LORA:
        if any_kept > 0:
            offs_r = tl.arange(0, BLOCK_R)
            r_ok = offs_r < R
            a = tl.load(a_ptr + offs_r[:, None] * s_ar + offs_i[None, :] * s_ai,
                        mask=r_ok[:, None] & i_ok[None, :], other=0.0).to(tl.float32)  # (BLOCK_R, BLOCK_I)
            bt = tl.load(b_ptr + offs_o[:, None] * s_bo + offs_r[None, :] * s_br,
                         mask=o_ok[:, None] & r_ok[None, :], other=0.0).to(tl.float32)  # (BLOCK_O, BLOCK_R)
            db = tl.dot(g, tl.trans(a), input_precision="ieee") * s  # (BLOCK_O, BLOCK_R)
            da = tl.dot(tl.trans(bt), g, input_precision="ieee") * s  # (BLOCK_R, BLOCK_I)
            tl.atomic_add(db_ptr + offs_o[:, None].to(tl.int64) * R + offs_r[None, :], db,
                          mask=o_ok[:, None] & r_ok[None, :])
            tl.atomic_add(da_ptr + offs_r[:, None].to(tl.int64) * N_IN + offs_i[None, :], da,
                          mask=r_ok[:, None] & i_ok[None, :])


@triton.jit
def _lora_mm_kernel(x_ptr, w_ptr, a_ptr, b_ptr, bits_ptr, bias_ptr, out_ptr, s,
                    M, N, K, R, NBYTES,
                    s_xm, s_xk, s_wn, s_wk, s_ar, s_ak, s_bn, s_br,
                    HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr, MASK_T: tl.constexpr, UPCAST: tl.constexpr,
                    PREC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    BLOCK_R: tl.constexpr):
    # out (M, N) = x (M, K) @ (W + s (B A) o Mask)^T (+ bias); W: (N, K), B: (N, R), A: (R, K) by strides.
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_r = tl.arange(0, BLOCK_R)
    m_ok = offs_m < M
    n_ok = offs_n < N
    r_ok = offs_r < R
    bt = tl.load(b_ptr + offs_n[:, None] * s_bn + offs_r[None, :] * s_br,
                 mask=n_ok[:, None] & r_ok[None, :], other=0.0)  # (BLOCK_N, BLOCK_R), held for all k
    if UPCAST:
        bt = bt.to(tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    lora = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        k_ok = offs_k < K
        xt = tl.load(x_ptr + offs_m[:, None].to(tl.int64) * s_xm + offs_k[None, :] * s_xk,
                     mask=m_ok[:, None] & k_ok[None, :], other=0.0)  # (BLOCK_M, BLOCK_K)
        a = tl.load(a_ptr + offs_r[:, None] * s_ar + offs_k[None, :].to(tl.int64) * s_ak,
                    mask=r_ok[:, None] & k_ok[None, :], other=0.0)  # (BLOCK_R, BLOCK_K)
        if UPCAST:
            xt = xt.to(tl.float32)
            a = a.to(tl.float32)
        d = tl.dot(bt, a, input_precision=PREC)  # (BLOCK_N, BLOCK_K): a tile of B A, float32
        ok_nk = n_ok[:, None] & k_ok[None, :]
        if MASK_T:  # the weight is the transpose of the masked one: element (n, k) is mask[k, n]
            keep = _keep_tile(bits_ptr, offs_k[None, :], offs_n[:, None], ok_nk, NBYTES)
        else:
            keep = _keep_tile(bits_ptr, offs_n[:, None], offs_k[None, :], ok_nk, NBYTES)
        d = tl.where(keep, d, 0.0).to(xt.dtype)
        lora += tl.dot(xt, tl.trans(d), input_precision=PREC)
        if HAS_W:
            w = tl.load(w_ptr + offs_k[:, None].to(tl.int64) * s_wk + offs_n[None, :].to(tl.int64) * s_wn,
                        mask=k_ok[:, None] & n_ok[None, :], other=0.0)  # (BLOCK_K, BLOCK_N) of W^T
            if UPCAST:
                w = w.to(tl.float32)
            acc += tl.dot(xt, w, input_precision=PREC)
    acc += s * lora
    if HAS_BIAS:
        acc += tl.load(bias_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=m_ok[:, None] & n_ok[None, :])


# ---------------------------------------------------------------------------------------------------
# block sizes


def _blk(n: int, cap: int) -> int:
    """A tile side: a power of two in [16, cap] (tl.dot needs >= 16), not far beyond n."""
    return max(16, min(cap, triton.next_power_of_2(max(int(n), 1))))


def grad_blocks(T: int, d_out: int, d_in: int) -> tuple[int, int, int]:
    """(BLOCK_O, BLOCK_I, BLOCK_T) of the weight-gradient kernel: 64 x 64 tiles, 32 tokens a step on a GPU;
    up to 128 x 128 x 128 under the interpreter, where each program is Python-level work."""
    cap = 128 if _interpreted() else 64
    return _blk(d_out, cap), _blk(d_in, cap), _blk(T, 128 if _interpreted() else 32)


def mm_blocks(M: int, N: int, K: int) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K) of the LoRA product: 64 x 64 tiles, 32-wide k steps (128 interpreted)."""
    cap = 128 if _interpreted() else 64
    return _blk(M, cap), _blk(N, cap), _blk(K, 128 if _interpreted() else 32)


def _rank_block(r: int) -> int:
    return max(16, triton.next_power_of_2(max(int(r), 1)))


# ---------------------------------------------------------------------------------------------------
# argument checks


def _check_device(device: torch.device) -> None:
    if device.type != "cuda" and not (device.type == "cpu" and _interpreted()):
        raise ValueError(f"Triton kernels run on CUDA tensors (or on CPU tensors under TRITON_INTERPRET=1); "
                         f"got tensors on {device}")


def _check(name: str, t, shape: tuple, dtype, device) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor, got {type(t).__name__}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(t.shape)}")
    if dtype is not None and t.dtype != dtype:
        raise TypeError(f"{name} has dtype {t.dtype}; expected {dtype}")
    if t.device != device:
        raise ValueError(f"{name} is on {t.device}; expected {device}")


def _check_float(name: str, t) -> None:
    if not isinstance(t, torch.Tensor) or t.dim() != 2:
        raise ValueError(f"{name} must be a 2-D torch tensor")
    if t.dtype not in DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32 for the Triton kernels, got {t.dtype}")


def _check_bits(bits, d_out: int, d_in: int, device) -> None:
    _check("bits", bits, (d_out, -(-d_in // 8)), torch.uint8, device)
    if not bits.is_contiguous():
        raise ValueError("bits must be C-contiguous")


def _check_scale(s) -> float:
    if isinstance(s, bool) or not isinstance(s, int | float):
        raise TypeError(f"s must be a Python float, got {type(s).__name__}")
    return float(s)


def _prec(dtype) -> str:
    return "ieee" if dtype == torch.float32 else "tf32"  # "tf32" is the default; it only affects float32


# ---------------------------------------------------------------------------------------------------
# wrappers


def masked_weight_grad(dy: torch.Tensor, x: torch.Tensor, bits: torch.Tensor) -> torch.Tensor:
    r""":math:`dW = (dY^\top X) \odot M`, the mask applied from its bits in the kernel's epilogue.

    Parameters
    ----------
    dy : torch.Tensor, shape (T, d_out)
        Gradient of the layer's output (tokens flattened), float16, bfloat16 or float32, any strides.
    x : torch.Tensor, shape (T, d_in), dy's dtype and device
        The layer's input.
    bits : torch.Tensor of uint8, shape (d_out, ceil(d_in / 8)), C-contiguous
        The keep-mask, bit-packed as in the module docstring.

    Returns
    -------
    torch.Tensor, shape (d_out, d_in), dy's dtype
        Pruned entries are exactly 0.0 (also where the product overflows).
    """
    _check_float("dy", dy)
    _check_float("x", x)
    dev, dt = dy.device, dy.dtype
    _check_device(dev)
    T, d_out = (int(v) for v in dy.shape)
    d_in = int(x.shape[1])
    _check("x", x, (T, d_in), dt, dev)
    _check_bits(bits, d_out, d_in, dev)
    dw = torch.empty((d_out, d_in), dtype=dt, device=dev)
    _launch_grad(dy, x, bits, dw=dw)
    return dw


def masked_lora_backward(dy: torch.Tensor, x: torch.Tensor, A: torch.Tensor, B: torch.Tensor, bits: torch.Tensor,
                         s: float, *, weight_grad: bool = False
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    r"""The masked LoRA weight gradients :math:`dA = s B^\top G`, :math:`dB = s\, G A^\top` with
    :math:`G = (dY^\top X) \odot M`, never storing G (unless ``weight_grad``, where G is dW).

    Parameters
    ----------
    dy : torch.Tensor, shape (T, d_out); x : torch.Tensor, shape (T, d_in)
        As in :func:`masked_weight_grad` (one dtype: float16, bfloat16 or float32).
    A : torch.Tensor, shape (r, d_in); B : torch.Tensor, shape (d_out, r)
        The LoRA factors, dy's dtype.
    bits : torch.Tensor of uint8, shape (d_out, ceil(d_in / 8))
    s : float
        The LoRA scale alpha / r.
    weight_grad : bool, default False
        Also return :math:`dW = G` (for a trainable base weight).

    Returns
    -------
    dA, dB : torch.Tensor, shapes (r, d_in), (d_out, r), in A's dtype (summed in float32 with atomics:
        run-to-run differences at rounding level on a GPU)
    dW : torch.Tensor or None, shape (d_out, d_in)
    """
    for name, t in (("dy", dy), ("x", x), ("A", A), ("B", B)):
        _check_float(name, t)
    dev, dt = dy.device, dy.dtype
    _check_device(dev)
    T, d_out = (int(v) for v in dy.shape)
    r, d_in = (int(v) for v in A.shape)
    _check("x", x, (T, d_in), dt, dev)
    _check("A", A, (r, d_in), dt, dev)
    _check("B", B, (d_out, r), dt, dev)
    _check_bits(bits, d_out, d_in, dev)
    s = _check_scale(s)
    da = torch.zeros((r, d_in), dtype=torch.float32, device=dev)
    db = torch.zeros((d_out, r), dtype=torch.float32, device=dev)
    dw = torch.empty((d_out, d_in), dtype=dt, device=dev) if weight_grad else None
    _launch_grad(dy, x, bits, dw=dw, lora=(A, B, da, db, s))
    return da.to(A.dtype), db.to(B.dtype), dw


def _launch_grad(dy, x, bits, *, dw=None, lora=None):
    T, d_out = (int(v) for v in dy.shape)
    d_in = int(x.shape[1])
    if d_out == 0 or d_in == 0:
        return
    bo, bi, bt = grad_blocks(T, d_out, d_in)
    if lora is not None:
        A, B, da, db, s = lora
        r = int(A.shape[0])
        a_args = (A, B, da, db, s)
        a_strides = (A.stride(0), A.stride(1), B.stride(0), B.stride(1))
    else:
        r, s = 1, 0.0
        a_args = (dy, dy, dy, dy, s)  # unused pointers
        a_strides = (0, 0, 0, 0)
    grid = (triton.cdiv(d_out, bo), triton.cdiv(d_in, bi))
    _masked_grad_kernel[grid](dy, x, bits, dw if dw is not None else dy, *a_args, T, d_out, d_in, r,
                              int(bits.shape[1]), dy.stride(0), dy.stride(1), x.stride(0), x.stride(1), *a_strides,
                              STORE_DW=dw is not None, LORA=lora is not None,
                              UPCAST=_interpreted() and dy.dtype != torch.float32, PREC=_prec(dy.dtype),
                              BLOCK_O=bo, BLOCK_I=bi, BLOCK_T=bt, BLOCK_R=_rank_block(r), num_warps=4)


def masked_lora_forward(x: torch.Tensor, W: torch.Tensor, A: torch.Tensor, B: torch.Tensor, bits: torch.Tensor,
                        s: float, bias: torch.Tensor | None = None) -> torch.Tensor:
    r""":math:`Y = X W^\top + s\, X ((BA) \odot M)^\top + b`, forming (BA) ⊙ M tile by tile in registers.

    Parameters
    ----------
    x : torch.Tensor, shape (T, d_in), float16, bfloat16 or float32, any strides
    W : torch.Tensor, shape (d_out, d_in), x's dtype (the base weight; any strides)
    A : torch.Tensor, shape (r, d_in); B : torch.Tensor, shape (d_out, r)
    bits : torch.Tensor of uint8, shape (d_out, ceil(d_in / 8))
    s : float
        The LoRA scale alpha / r.
    bias : torch.Tensor, shape (d_out,), optional

    Returns
    -------
    torch.Tensor, shape (T, d_out), x's dtype
    """
    for name, t in (("x", x), ("W", W), ("A", A), ("B", B)):
        _check_float(name, t)
    dev, dt = x.device, x.dtype
    _check_device(dev)
    T, d_in = (int(v) for v in x.shape)
    d_out = int(W.shape[0])
    r = int(A.shape[0])
    _check("W", W, (d_out, d_in), dt, dev)
    _check("A", A, (r, d_in), dt, dev)
    _check("B", B, (d_out, r), dt, dev)
    _check_bits(bits, d_out, d_in, dev)
    if bias is not None:
        _check("bias", bias, (d_out,), dt, dev)
        bias = bias.contiguous()
    s = _check_scale(s)
    out = torch.empty((T, d_out), dtype=dt, device=dev)
    _launch_mm(x, W.stride(0), W.stride(1), W, B, (B.stride(0), B.stride(1)), A, (A.stride(0), A.stride(1)),
               bits, bias, out, s, d_in, mask_t=False)
    return out


def masked_lora_input_grad(dy: torch.Tensor, W: torch.Tensor | None, A: torch.Tensor, B: torch.Tensor,
                           bits: torch.Tensor, s: float) -> torch.Tensor:
    r""":math:`dX = dY \big(W + s\, (BA) \odot M\big)` (W may be None: the LoRA term alone), by the kernel of
    :func:`masked_lora_forward` on the transposed operands (strides only, no copies).

    Parameters
    ----------
    dy : torch.Tensor, shape (T, d_out)
    W : torch.Tensor, shape (d_out, d_in), or None
    A : torch.Tensor, shape (r, d_in); B : torch.Tensor, shape (d_out, r)
    bits : torch.Tensor of uint8, shape (d_out, ceil(d_in / 8))
    s : float

    Returns
    -------
    torch.Tensor, shape (T, d_in), dy's dtype
    """
    for name, t in (("dy", dy), ("A", A), ("B", B)) + ((("W", W),) if W is not None else ()):
        _check_float(name, t)
    dev, dt = dy.device, dy.dtype
    _check_device(dev)
    T, d_out = (int(v) for v in dy.shape)
    r, d_in = (int(v) for v in A.shape)
    if W is not None:
        _check("W", W, (d_out, d_in), dt, dev)
    _check("A", A, (r, d_in), dt, dev)
    _check("B", B, (d_out, r), dt, dev)
    _check_bits(bits, d_out, d_in, dev)
    s = _check_scale(s)
    out = torch.empty((T, d_in), dtype=dt, device=dev)
    # the product's weight is W^T (d_in x d_out) + s (A^T B^T) o M^T: "B" is A^T, "A" is B^T
    w_sn, w_sk = (W.stride(1), W.stride(0)) if W is not None else (0, 0)
    _launch_mm(dy, w_sn, w_sk, W, A, (A.stride(1), A.stride(0)), B, (B.stride(1), B.stride(0)), bits, None, out,
               s, d_in, mask_t=True)
    return out


def _launch_mm(x, w_sn, w_sk, W, b_fac, b_strides, a_fac, a_strides, bits, bias, out, s, d_in, *, mask_t):
    """out (M, N) = x (M, K) @ (W + s (b_fac a_fac) o Mask)^T (+ bias), W given as (N, K) by strides."""
    M, K = (int(v) for v in x.shape)
    N = int(out.shape[1])
    r = int(b_fac.shape[1] if not mask_t else b_fac.shape[0])
    if M == 0 or N == 0:
        return
    bm, bn, bk = mm_blocks(M, N, K)
    grid = (triton.cdiv(M, bm), triton.cdiv(N, bn))
    _lora_mm_kernel[grid](x, W if W is not None else x, a_fac, b_fac, bits, bias if bias is not None else x, out, s,
                          M, N, K, r, int(bits.shape[1]), x.stride(0), x.stride(1), w_sn, w_sk,
                          a_strides[0], a_strides[1], b_strides[0], b_strides[1],
                          HAS_W=W is not None, HAS_BIAS=bias is not None, MASK_T=mask_t,
                          UPCAST=_interpreted() and x.dtype != torch.float32, PREC=_prec(x.dtype),
                          BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, BLOCK_R=_rank_block(r), num_warps=4)
