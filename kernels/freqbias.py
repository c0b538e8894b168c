r"""Triton kernel of attention with a relative position bias computed in the kernel from a compact table.

For a window of :math:`M_h \times M_w` tokens in row-major order (token i at :math:`(r_i, c_i) =
(i // M_w, i \% M_w)`), a per-head table :math:`T_h` of shape :math:`(G_h, G_w)` and an offset
:math:`(o_h, o_w)`, the additive logit bias is

.. math:: B_h[i, j] = T_h\big[(r_i - r_j + o_h) \bmod G_h,\ (c_i - c_j + o_w) \bmod G_w\big],

plus, optionally, Swin's shifted-window attention mask: an additive (nW, N, N) float32 tensor (0 or a large
negative number / -inf) added to the logits of the windows ``b`` with ``b % nW = w`` (timm's layout: the batch of
windows is (B * nW, ...) with the window index fastest), read tile by tile like q and k (``HAS_MASK``). The
bias covers both families of :mod:`fastnips.vision.freqbias`:

* the frequency bias (periodic kernel ``k_h = irfft2(W_h)``): table = kernel (H, Nh, Nw), offset (0, 0);
* the Swin / timm table: table ((2Mh-1)(2Mw-1), H) viewed as (H, 2Mh-1, 2Mw-1), offset (Mh-1, Mw-1) (the
  modulo is then a no-op, the index is timm's ``relative_position_index``).

**Forward** (:func:`attention_freqbias_fwd`): FlashAttention-2 style, one program per ``BLOCK_M`` query rows
of one (batch, head). It walks the keys ``BLOCK_N`` at a time, forms the logits
:math:`s = (q k^\top) \cdot \mathrm{scale} + B` in float32, where the ``BLOCK_M x BLOCK_N`` tile of B is a
gather from the head's table by the index arithmetic above (the table is a few hundred floats per head and
stays in L1/L2; the (H, N, N) bias never exists in memory), and keeps the online softmax (running max m,
running sum l, rescaled accumulator, base-2 exponentials; a row whose keys so far are all masked to -inf keeps
m = -inf and is rescaled from 0, not from NaN) so that :math:`O = \mathrm{softmax}(s) V` is
written once. The log-sum-exp of every row is stored as well (float32, natural log) for a backward pass.

**Precision.** Logits, bias, softmax and the accumulator are float32. float32 inputs use
``input_precision="ieee"`` (no TF32). Under the CPU interpreter (``TRITON_INTERPRET=1``) bfloat16/float16
dots are wrong in triton 3.7.1 (the raw bits are multiplied), so there the
operands are upcast to float32 first; on a GPU q k^T and P V run on the native bf16/fp16 tensor-core path
(P rounded to the value dtype, as FlashAttention does).

**Backward** (:func:`attention_freqbias_bwd`): FlashAttention-2 style as well, two kernels that recompute
the probabilities tile by tile from q, k, the bias table and the stored log-sum-exp, so no (N, N) tensor
exists in the backward either. With :math:`P = \exp(s - \mathrm{lse})`, :math:`\Delta_i = \sum_d dO_{id} O_{id}`
(computed once by torch) and :math:`dS = P \odot (dO\, V^\top - \Delta)`:

* ``_attn_bwd_kernel`` with ``KEYS=True``, one program per ``BLOCK_N`` keys of one (batch, head), walks the queries and
  accumulates :math:`dV = P^\top dO` and :math:`dK = \mathrm{scale}\, dS^\top Q` in float32 registers, and
  scatters every tile of :math:`dS` into the table gradient with ``tl.atomic_add`` at the same gather index
  the forward read (the table gradient is :math:`\sum_b \sum_{(i, j) \mapsto t} dS_{bh}[i, j]`; float32,
  summed in an order that is not fixed on a GPU, so it is not bitwise reproducible there);
* the same kernel with ``KEYS=False``, one program per ``BLOCK_M`` queries, walks the keys and accumulates
  :math:`dQ = \mathrm{scale}\, dS\, K`.

Recomputing P twice (once per kernel) instead of atomically adding dQ is FlashAttention-2's choice as well.

Import lazily: ``@triton.jit`` reads ``TRITON_INTERPRET`` at import.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_LOG2E = 1.4426950408889634


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") not in ("", "0")


# ---------------------------------------------------------------------------------------------------
# kernel


@triton.jit
def _wrap(x, G, FAST: tl.constexpr):
    """``x mod G`` for ``x >= 0``; with ``FAST`` the host guarantees ``x < 2G`` (one compare, no division)."""
    if FAST:
        return tl.where(x >= G, x - G, x)
    return x % G


@triton.jit
def _bias_tile(tab_ptr, rows, cols, ok, MW, GH, GW, SHIFT_H, SHIFT_W, FAST: tl.constexpr):
    """Bias tile ``T[(r_i - r_j + o_h) mod GH, (c_i - c_j + o_w) mod GW]`` (0 outside ``ok``); ``SHIFT_*`` is the
    offset plus a multiple of the period that makes every argument of the modulo non-negative. The divisions
    by MW are on the 1-D row / column vectors; the 2-D work is subtractions, two wraps and the gather."""
    idx = _bias_index(rows, cols, MW, GH, GW, SHIFT_H, SHIFT_W, FAST)
    return tl.load(tab_ptr + idx, mask=ok, other=0.0).to(tl.float32)


@triton.jit
def _bias_index(rows, cols, MW, GH, GW, SHIFT_H, SHIFT_W, FAST: tl.constexpr):
    """Flat table index ``((r_i - r_j + o_h) mod GH) * GW + (c_i - c_j + o_w) mod GW`` of a (rows, cols) tile."""
    ri = rows // MW + SHIFT_H
    ci = rows % MW + SHIFT_W
    rj = cols // MW
    cj = cols % MW
    dr = _wrap(ri[:, None] - rj[None, :], GH, FAST)
    dc = _wrap(ci[:, None] - cj[None, :], GW, FAST)
    return dr * GW + dc


@triton.jit
def _mask_tile(mask_ptr, b, NW, N, rows, cols, ok):
    """The (rows, cols) tile of the additive mask of window ``b % NW`` ((NW, N, N) float32, contiguous)."""
    base = mask_ptr + (b % NW) * N * N
    return tl.load(base + rows[:, None] * N + cols[None, :], mask=ok, other=0.0)


@triton.jit
def _tile(base, idx, offs_d, s_n, s_d, ok, d_ok, UPCAST: tl.constexpr):
    """The (len(idx), BLOCK_D) tile ``base[idx * s_n + d * s_d]`` (0 outside), float32 when ``UPCAST``."""
    t = tl.load(base + idx[:, None] * s_n + offs_d[None, :] * s_d, mask=ok[:, None] & d_ok[None, :], other=0.0)
    if UPCAST:
        t = t.to(tl.float32)
    return t


@triton.jit
def _program(H, q_ptr, k_ptr, v_ptr, tab_ptr, s_qb, s_qh, s_kb, s_kh, s_vb, s_vh, s_th):
    """This program's (batch, head) (grid axis 1 = B * H): ``b, h, bh`` and the bases of q, k, v and the
    head's table."""
    bh = tl.program_id(1)
    b = bh.to(tl.int64) // H
    h = bh.to(tl.int64) % H
    return (b, h, bh.to(tl.int64), q_ptr + b * s_qb + h * s_qh, k_ptr + b * s_kb + h * s_kh,
            v_ptr + b * s_vb + h * s_vh, tab_ptr + h * s_th)


@triton.jit
def _attn_fwd_kernel(q_ptr, k_ptr, v_ptr, tab_ptr, mask_ptr, o_ptr, lse_ptr, qk_scale,
                     H, N, D, MW, GH, GW, SHIFT_H, SHIFT_W, NW,
                     s_qb, s_qh, s_qn, s_qd, s_kb, s_kh, s_kn, s_kd, s_vb, s_vh, s_vn, s_vd, s_th,
                     UPCAST: tl.constexpr, PREC: tl.constexpr, FAST: tl.constexpr, HAS_MASK: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    pid_m = tl.program_id(0)
    b, _, bh, q_base, k_base, v_base, tab = _program(H, q_ptr, k_ptr, v_ptr, tab_ptr, s_qb, s_qh, s_kb, s_kh,
                                                     s_vb, s_vh, s_th)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    r_ok = rows < N
    d_ok = offs_d < D
    q = _tile(q_base, rows, offs_d, s_qn, s_qd, r_ok, d_ok, UPCAST)

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        c_ok = cols < N
        kt = tl.load(k_base + cols[None, :] * s_kn + offs_d[:, None] * s_kd, mask=c_ok[None, :] & d_ok[:, None],
                     other=0.0)  # (BLOCK_D, BLOCK_N) of K^T
        v = _tile(v_base, cols, offs_d, s_vn, s_vd, c_ok, d_ok, UPCAST)  # (BLOCK_N, BLOCK_D)
        if UPCAST:
            kt = kt.to(tl.float32)
        ok = r_ok[:, None] & c_ok[None, :]
        bias = _bias_tile(tab, rows, cols, ok, MW, GH, GW, SHIFT_H, SHIFT_W, FAST)
        if HAS_MASK:
            bias += _mask_tile(mask_ptr, b, NW, N, rows, cols, ok)
        # logits in base 2: (q k^T * scale + bias) * log2(e)
        s = tl.dot(q, kt, input_precision=PREC) * qk_scale + bias * 1.4426950408889634
        s = tl.where(c_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)  # all keys so far masked: exp2(-inf - 0) = 0
        alpha = tl.exp2(m_i - m_use)
        p = tl.exp2(s - m_use[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PREC)
        m_i = m_new
    l_safe = tl.where(r_ok, l_i, 1.0)
    out = acc / l_safe[:, None]
    o_base = o_ptr + bh * N * D
    tl.store(o_base + rows[:, None] * D + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=r_ok[:, None] & d_ok[None, :])
    lse = (m_i + tl.log2(l_safe)) * 0.6931471805599453
    tl.store(lse_ptr + bh * N + rows, lse, mask=r_ok)


@triton.jit
def _probs_ds(q, k, v, do, lse2, delta, tab, mask_ptr, b, NW, N, rows, cols, ok, qk_scale, MW, GH, GW, SHIFT_H,
              SHIFT_W, FAST: tl.constexpr, PREC: tl.constexpr, HAS_MASK: tl.constexpr):
    """Recomputed probabilities P (rows x cols), dS = P (dO V^T - delta) and the bias table index of the tile."""
    idx = _bias_index(rows, cols, MW, GH, GW, SHIFT_H, SHIFT_W, FAST)
    bias = tl.load(tab + idx, mask=ok, other=0.0).to(tl.float32)
    if HAS_MASK:
        bias += _mask_tile(mask_ptr, b, NW, N, rows, cols, ok)
    s = tl.dot(q, tl.trans(k), input_precision=PREC) * qk_scale + bias * 1.4426950408889634
    p = tl.where(ok, tl.exp2(s - lse2[:, None]), 0.0)
    dp = tl.dot(do, tl.trans(v), input_precision=PREC)
    return p, p * (dp - delta[:, None]), idx


@triton.jit
def _query_rows(q_base, do_base, lse_base, delta_base, rows, r_ok, offs_d, d_ok, s_qn, s_qd, s_on, s_od,
                UPCAST: tl.constexpr):
    """What the backward needs of a block of query rows: q, dO, the base-2 log-sum-exp and delta."""
    q = _tile(q_base, rows, offs_d, s_qn, s_qd, r_ok, d_ok, UPCAST)
    do = _tile(do_base, rows, offs_d, s_on, s_od, r_ok, d_ok, UPCAST)
    lse2 = tl.load(lse_base + rows, mask=r_ok, other=0.0) * 1.4426950408889634
    delta = tl.load(delta_base + rows, mask=r_ok, other=0.0)
    return q, do, lse2, delta


@triton.jit
def _attn_bwd_kernel(q_ptr, k_ptr, v_ptr, tab_ptr, mask_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, dk_ptr, dv_ptr,
                     dtab_ptr, qk_scale, scale, H, N, D, MW, GH, GW, SHIFT_H, SHIFT_W, NW,
                     s_qb, s_qh, s_qn, s_qd, s_kb, s_kh, s_kn, s_kd, s_vb, s_vh, s_vn, s_vd,
                     s_ob, s_oh, s_on, s_od, s_th,
                     KEYS: tl.constexpr, UPCAST: tl.constexpr, PREC: tl.constexpr, FAST: tl.constexpr,
                     HAS_MASK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    """``KEYS``: one program per BLOCK_N keys -> dK, dV and the table gradient; else per BLOCK_M queries -> dQ."""
    pid = tl.program_id(0)
    b, h, bh, q_base, k_base, v_base, tab = _program(H, q_ptr, k_ptr, v_ptr, tab_ptr, s_qb, s_qh, s_kb, s_kh,
                                                     s_vb, s_vh, s_th)
    do_base = do_ptr + b * s_ob + h * s_oh
    row_base = bh * N
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    if KEYS:
        dtab = dtab_ptr + h * s_th
        cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ok = cols < N
        k = _tile(k_base, cols, offs_d, s_kn, s_kd, c_ok, d_ok, UPCAST)
        v = _tile(v_base, cols, offs_d, s_vn, s_vd, c_ok, d_ok, UPCAST)
        dk = tl.zeros((BLOCK_N, BLOCK_D), dtype=tl.float32)
        dv = tl.zeros((BLOCK_N, BLOCK_D), dtype=tl.float32)
        for m0 in range(0, N, BLOCK_M):
            rows = m0 + tl.arange(0, BLOCK_M)
            r_ok = rows < N
            q, do, lse2, delta = _query_rows(q_base, do_base, lse_ptr + row_base, delta_ptr + row_base, rows, r_ok,
                                             offs_d, d_ok, s_qn, s_qd, s_on, s_od, UPCAST)
            ok = r_ok[:, None] & c_ok[None, :]
            p, ds, idx = _probs_ds(q, k, v, do, lse2, delta, tab, mask_ptr, b, NW, N, rows, cols, ok, qk_scale, MW,
                                   GH, GW, SHIFT_H, SHIFT_W, FAST, PREC, HAS_MASK)
            dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=PREC)
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PREC)
            tl.atomic_add(dtab + idx, ds, mask=ok)
        out_off = row_base * D + cols[:, None] * D + offs_d[None, :]
        kv_mask = c_ok[:, None] & d_ok[None, :]
        tl.store(dk_ptr + out_off, (dk * scale).to(dk_ptr.dtype.element_ty), mask=kv_mask)
        tl.store(dv_ptr + out_off, dv.to(dv_ptr.dtype.element_ty), mask=kv_mask)
    else:
        rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        r_ok = rows < N
        q, do, lse2, delta = _query_rows(q_base, do_base, lse_ptr + row_base, delta_ptr + row_base, rows, r_ok,
                                         offs_d, d_ok, s_qn, s_qd, s_on, s_od, UPCAST)
        dq = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
        for n0 in range(0, N, BLOCK_N):
            cols = n0 + tl.arange(0, BLOCK_N)
            c_ok = cols < N
            k = _tile(k_base, cols, offs_d, s_kn, s_kd, c_ok, d_ok, UPCAST)
            v = _tile(v_base, cols, offs_d, s_vn, s_vd, c_ok, d_ok, UPCAST)
            ok = r_ok[:, None] & c_ok[None, :]
            p, ds, idx = _probs_ds(q, k, v, do, lse2, delta, tab, mask_ptr, b, NW, N, rows, cols, ok, qk_scale, MW,
                                   GH, GW, SHIFT_H, SHIFT_W, FAST, PREC, HAS_MASK)
            dq += tl.dot(ds.to(k.dtype), k, input_precision=PREC)
        tl.store(dq_ptr + row_base * D + rows[:, None] * D + offs_d[None, :],
                 (dq * scale).to(dq_ptr.dtype.element_ty), mask=r_ok[:, None] & d_ok[None, :])


# ---------------------------------------------------------------------------------------------------
# wrapper


def _blk(n: int, cap: int) -> int:
    """A tile side: a power of two in [16, cap] (tl.dot needs >= 16), not far beyond n."""
    return max(16, min(cap, triton.next_power_of_2(max(int(n), 1))))


def fwd_blocks(N: int, D: int) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_D, num_warps). GPU: 64 x 64 tiles (128 query rows from N = 1024 on), 4 warps;
    interpreter: up to 128 x 128 (each program is Python-level work)."""
    bd = _blk(D, 256)
    if _interpreted():
        return _blk(N, 128), _blk(N, 128), bd, 4
    bm = 128 if N >= 1024 and bd <= 64 else 64
    return _blk(N, bm), _blk(N, 64), bd, 4 if bm == 64 else 8


def _shift(o: int, g: int, m: int) -> int:
    s = o % g
    while s - (m - 1) < 0:
        s += g
    return s


def _geometry(table: torch.Tensor, window, offset) -> tuple[torch.Tensor, tuple[int, ...], bool]:
    """The table as float32 (H, Gh*Gw), the kernels' index arguments ``(MW, GH, GW, SHIFT_H, SHIFT_W)`` and
    ``FAST``.

    shift = offset mod G plus the least multiple of G that keeps (d + shift) >= 0 for |d| <= M - 1; when also
    d + shift < 2G for every offset (always for the alias-free, circular and Swin grids) one compare wraps.
    """
    H, gh, gw = (int(n) for n in table.shape)
    mh, mw = (int(window[0]), int(window[1]))
    sh, sw = (_shift(int(o), g, m) for o, g, m in ((offset[0], gh, mh), (offset[1], gw, mw)))
    fast = sh + mh - 1 < 2 * gh and sw + mw - 1 < 2 * gw
    tab = table.detach().to(torch.float32).reshape(H, gh * gw).contiguous()
    return tab, (mw, gh, gw, sh, sw), fast


def _precision(dtype: torch.dtype) -> tuple[bool, str]:
    """(UPCAST, PREC): upcast half inputs to float32 under the interpreter; IEEE dots for float32 inputs."""
    upcast = _interpreted() and dtype != torch.float32
    return upcast, "ieee" if dtype == torch.float32 or upcast else "tf32"


def _mask_arg(mask: torch.Tensor | None, q: torch.Tensor, tab: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(the mask as float32 contiguous (nW, N, N), nW), or (a placeholder pointer, 1) without a mask."""
    if mask is None:
        return tab, 1
    B, _, N, _ = q.shape
    if mask.ndim != 3 or tuple(mask.shape[1:]) != (N, N) or B % mask.shape[0] != 0:
        raise ValueError(f"mask must have shape (nW, N, N) = (nW, {N}, {N}) with nW dividing the batch {B}, "
                         f"got {tuple(mask.shape)}")
    return mask.detach().to(device=q.device, dtype=torch.float32).contiguous(), int(mask.shape[0])


def _check_device(device: torch.device) -> None:
    if device.type != "cuda" and not (device.type == "cpu" and _interpreted()):
        raise ValueError(f"Triton kernels run on CUDA tensors (or on CPU tensors under TRITON_INTERPRET=1); "
                         f"got tensors on {device}")


def attention_freqbias_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, table: torch.Tensor,
                           window: tuple[int, int], offset: tuple[int, int], scale: float,
                           mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Forward of :math:`O = \mathrm{softmax}(q k^\top \mathrm{scale} + B) V` with B gathered in the kernel.

    Parameters
    ----------
    q, k, v : torch.Tensor, shape (B, H, N, D), one dtype (float16, bfloat16, float32), any strides
    table : torch.Tensor, shape (H, Gh, Gw), floating
        Bias table; read in float32 (a copy is made when it is not float32-contiguous; it is tiny).
    window : (Mh, Mw) with Mh * Mw == N
    offset : (oh, ow)
        ``B[h, i, j] = table[h, (r_i - r_j + oh) mod Gh, (c_i - c_j + ow) mod Gw]``.
    scale : float
    mask : torch.Tensor (nW, N, N), optional
        Additive logit mask of window ``b % nW`` for batch entry ``b`` (nW divides B); read in float32. Every
        row needs a finite entry (checked by the caller, :func:`fastnips.vision.attention_with_bias`).

    Returns
    -------
    out : torch.Tensor (B, H, N, D), q's dtype, contiguous
    lse : torch.Tensor (B, H, N), float32: natural log-sum-exp of each row of the logits
    """
    _check_device(q.device)
    if q.dtype not in DTYPES:
        raise ValueError(f"the Triton kernel takes float16, bfloat16 or float32, got {q.dtype}")
    B, H, N, D = q.shape
    tab, geom, fast = _geometry(table, window, offset)
    mask, nw = _mask_arg(mask, q, tab)
    out = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, H, N), dtype=torch.float32, device=q.device)
    bm, bn, bd, warps = fwd_blocks(N, D)
    upcast, prec = _precision(q.dtype)
    grid = (triton.cdiv(N, bm), B * H)
    _attn_fwd_kernel[grid](
        q, k, v, tab, mask, out, lse, float(scale) * _LOG2E, H, N, D, *geom, nw,
        *q.stride(), *k.stride(), *v.stride(), tab.stride(0),
        UPCAST=upcast, PREC=prec, FAST=fast, HAS_MASK=mask is not tab, BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=bd,
        num_warps=warps)
    return out, lse


def bwd_blocks(N: int, D: int) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_D, num_warps) of both backward kernels: 64 x 64 tiles on a GPU (32 x 32 for
    head dims over 64, where five (tile x D) float32 operands share the registers), 4 warps."""
    bd = _blk(D, 256)
    if _interpreted():
        return _blk(N, 128), _blk(N, 128), bd, 4
    t = 64 if bd <= 64 else 32
    return _blk(N, t), _blk(N, t), bd, 4


def attention_freqbias_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, table: torch.Tensor,
                           out: torch.Tensor, lse: torch.Tensor, dout: torch.Tensor,
                           window: tuple[int, int], offset: tuple[int, int], scale: float,
                           mask: torch.Tensor | None = None
                           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Gradients of :func:`attention_freqbias_fwd` in q, k, v and the table, from its ``out`` and ``lse``.

    Parameters
    ----------
    q, k, v, table, window, offset, scale, mask : as in :func:`attention_freqbias_fwd` (no gradient for the mask)
    out : torch.Tensor (B, H, N, D), its output
    lse : torch.Tensor (B, H, N), float32, its log-sum-exp
    dout : torch.Tensor (B, H, N, D), the gradient of the loss in ``out``

    Returns
    -------
    dq, dk, dv : torch.Tensor (B, H, N, D), dtypes of q, k, v, contiguous
    dtable : torch.Tensor (H, Gh, Gw), the table's dtype
    """
    _check_device(q.device)
    B, H, N, D = q.shape
    tab, geom, fast = _geometry(table, window, offset)
    mask, nw = _mask_arg(mask, q, tab)
    dout = dout.to(q.dtype)
    delta = (dout.float() * out.float()).sum(-1).contiguous()  # (B, H, N): rowsum(dO * O)
    lse = lse.contiguous()
    dq = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    dk = torch.empty_like(dq)
    dv = torch.empty_like(dq)
    dtab = torch.zeros_like(tab)
    bm, bn, bd, warps = bwd_blocks(N, D)
    upcast, prec = _precision(q.dtype)
    common = (float(scale) * _LOG2E, float(scale), H, N, D, *geom, nw,
              *q.stride(), *k.stride(), *v.stride(), *dout.stride(), tab.stride(0))
    meta = dict(UPCAST=upcast, PREC=prec, FAST=fast, HAS_MASK=mask is not tab, BLOCK_M=bm, BLOCK_N=bn,
                BLOCK_D=bd, num_warps=warps)
    args = (q, k, v, tab, mask, dout, lse, delta, dq, dk, dv, dtab, *common)
    _attn_bwd_kernel[(triton.cdiv(N, bn), B * H)](*args, KEYS=True, **meta)
    _attn_bwd_kernel[(triton.cdiv(N, bm), B * H)](*args, KEYS=False, **meta)
    return dq, dk, dv, dtab.reshape(table.shape).to(table.dtype)
