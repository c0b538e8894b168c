r"""The implementations behind :func:`fastnips.vision.attention_with_bias`: the torch reference (SDPA with the
materialised bias and mask) and its gradient oracle, the torch custom ops ``fastnips::attention_freqbias`` /
``fastnips::attention_freqbias_backward`` around :mod:`fastnips.kernels.freqbias`, and the FlexAttention path.

The math and the choices are documented in :mod:`fastnips.vision.attention`; the argument checks happen there,
before anything here runs.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F


def _flat_index(window, grid, offset, device) -> torch.Tensor:
    (mh, mw), (gh, gw), (oh, ow) = window, grid, offset
    t = torch.arange(mh * mw, device=device)
    r, c = t // mw, t % mw
    dr = (r[:, None] - r[None, :] + oh) % gh  # torch %: floor modulo, non-negative
    dc = (c[:, None] - c[None, :] + ow) % gw
    return dr * gw + dc


# ------------------------------------------------------------------------------------------- references
def _windows(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """(B, ...) -> (B // nW, nW, ...): the batch of windows split as timm lays it out (window index fastest)."""
    return x if mask is None else x.reshape(x.shape[0] // mask.shape[0], mask.shape[0], *x.shape[1:])


def _reference(q, k, v, bias: torch.Tensor, scale: float, mask: torch.Tensor | None = None) -> torch.Tensor:
    """SDPA with ``attn_mask`` = bias (H, N, N) [+ mask (nW, N, N) of window b % nW, broadcast over heads]."""
    attn = bias.to(q.dtype)
    if mask is not None:  # batch (B//nW, nW, H, N, D); mask (1, nW, 1, N, N) + bias (H, N, N) broadcast
        attn = attn + mask.to(q.dtype)[None, :, None]
    out = F.scaled_dot_product_attention(_windows(q, mask), _windows(k, mask), _windows(v, mask), attn_mask=attn,
                                         scale=scale)
    return out.reshape(q.shape)


def _grads_reference(q, k, v, table, window, offset, scale, do, mask=None):
    r"""dq, dk, dv, d(table) of the biased (and masked) attention, recomputed with torch ops in float32
    (materialising the (B, H, N, N) probabilities; the oracle of the Triton backward, and the table gradient is an
    ``index_add`` of :math:`\sum_b dS_{bh}` over the table index)."""
    H, gh, gw = table.shape
    idx = _flat_index(window, (gh, gw), offset, q.device)
    bias = table.float().reshape(H, gh * gw)[:, idx]  # (H, N, N)
    qf, kf, vf, dof = (t.float() for t in (q, k, v, do))
    logits = torch.matmul(qf, kf.transpose(-1, -2)) * scale + bias
    if mask is not None:
        logits = (_windows(logits, mask) + mask.float()[None, :, None]).reshape(logits.shape)
    p = torch.softmax(logits, dim=-1)
    dv = torch.matmul(p.transpose(-1, -2), dof)
    dp = torch.matmul(dof, vf.transpose(-1, -2))
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    dq = torch.matmul(ds, kf) * scale
    dk = torch.matmul(ds.transpose(-1, -2), qf) * scale
    dbias = ds.sum(0).reshape(H, -1)  # (H, N*N)
    dtab = torch.zeros(H, gh * gw, dtype=torch.float32, device=q.device).index_add(1, idx.reshape(-1), dbias)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), dtab.reshape(H, gh, gw).to(table.dtype)


# ---------------------------------------------------------------------------------------------- custom op
@torch.library.custom_op(
    "fastnips::attention_freqbias", mutates_args=(),
    schema="(Tensor q, Tensor k, Tensor v, Tensor table, int[] window, int[] offset, float scale, "
           "Tensor? mask=None) -> (Tensor, Tensor)")
def _attention_freqbias(q, k, v, table, window, offset, scale, mask=None):
    """(out, lse): the attention output and the float32 log-sum-exp of each logit row (B, H, N), which the
    backward needs; ``lse`` is not differentiable. ``mask`` (nW, N, N) is a constant (no gradient)."""
    from ..kernels import freqbias as tk  # lazy: defining kernels reads TRITON_INTERPRET

    return tk.attention_freqbias_fwd(q, k, v, table, tuple(window), tuple(offset), scale, mask)


@_attention_freqbias.register_fake
def _(q, k, v, table, window, offset, scale, mask=None):
    B, H, N, _ = q.shape
    return (torch.empty(q.shape, dtype=q.dtype, device=q.device),
            torch.empty((B, H, N), dtype=torch.float32, device=q.device))


@torch.library.custom_op("fastnips::attention_freqbias_backward", mutates_args=(),
                         schema="(Tensor q, Tensor k, Tensor v, Tensor table, Tensor out, Tensor lse, Tensor dout, "
                                "int[] window, int[] offset, float scale, Tensor? mask=None) "
                                "-> (Tensor, Tensor, Tensor, Tensor)")
def _attention_freqbias_backward(q, k, v, table, out, lse, dout, window, offset, scale, mask=None):
    from ..kernels import freqbias as tk

    return tk.attention_freqbias_bwd(q, k, v, table, out, lse, dout, tuple(window), tuple(offset), scale, mask)


@_attention_freqbias_backward.register_fake
def _(q, k, v, table, out, lse, dout, window, offset, scale, mask=None):
    return (torch.empty(q.shape, dtype=q.dtype, device=q.device), torch.empty(k.shape, dtype=k.dtype, device=k.device),
            torch.empty(v.shape, dtype=v.dtype, device=v.device),
            torch.empty(table.shape, dtype=table.dtype, device=table.device))


def _setup_context(ctx, inputs, output):
    q, k, v, table, window, offset, scale, mask = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, table, out, lse, mask)
    ctx.window, ctx.offset, ctx.scale = list(window), list(offset), float(scale)
    ctx.mark_non_differentiable(lse)


def _backward(ctx, do, _dlse):
    q, k, v, table, out, lse, mask = ctx.saved_tensors
    dq, dk, dv, dtab = torch.ops.fastnips.attention_freqbias_backward(
        q, k, v, table, out, lse, do.contiguous(), ctx.window, ctx.offset, ctx.scale, mask)
    return dq, dk, dv, dtab, None, None, None, None


_attention_freqbias.register_autograd(_backward, setup_context=_setup_context)


# ------------------------------------------------------------------------------------------------- flex
try:  # imported once, outside any traced code; fastnips._backend probes the same import for "flex"
    from torch.nn.attention.flex_attention import flex_attention as _flex_attention
except ImportError:  # pragma: no cover - present in torch 2.13
    _flex_attention = None
_FLEX_COMPILED = []


def _flex_compiled():
    if not _FLEX_COMPILED:
        _FLEX_COMPILED.append(torch.compile(_flex_attention, dynamic=False))
    return _FLEX_COMPILED[0]


def _flex_bias_mod(spec, dense: torch.Tensor | None):
    """score_mod adding the bias: ``dense[h, i, j]`` or the spec's table lookup."""
    if dense is not None:
        def score_mod(score, b, h, q_idx, kv_idx):
            return score + dense[h, q_idx, kv_idx]
        return score_mod
    (mh, mw), (gh, gw), (oh, ow) = spec.window, spec.grid, spec.offset
    sh, sw = oh + gh * -(-mh // gh), ow + gw * -(-mw // gw)  # non-negative arguments of the modulo
    tab = spec.kernel.flatten(1)

    def score_mod(score, b, h, q_idx, kv_idx):
        dr = (q_idx // mw - kv_idx // mw + sh) % gh
        dc = (q_idx % mw - kv_idx % mw + sw) % gw
        return score + tab[h, dr * gw + dc]
    return score_mod


def _flex_score_mod(spec, dense: torch.Tensor | None, mask: torch.Tensor | None = None):
    """The bias score_mod, plus ``mask[b % nW, i, j]`` when a window mask is given."""
    bias_mod = _flex_bias_mod(spec, dense)
    if mask is None:
        return bias_mod
    nw = mask.shape[0]

    def score_mod(score, b, h, q_idx, kv_idx):
        return bias_mod(score, b, h, q_idx, kv_idx) + mask[b % nw, q_idx, kv_idx]
    return score_mod


def _flex(q, k, v, spec, dense, scale, mask=None):
    flex = _flex_attention
    mod = _flex_score_mod(spec, dense if dense is None else dense.to(q.dtype),
                          mask if mask is None else mask.to(q.dtype))
    if torch.compiler.is_compiling():  # inside the caller's torch.compile: dynamo captures flex itself
        return flex(q, k, v, score_mod=mod, scale=scale)
    if q.device.type == "cuda":
        return _flex_compiled()(q, k, v, score_mod=mod, scale=scale)
    with warnings.catch_warnings():  # eager on CPU: "called without torch.compile ... unfused"
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        return flex(q, k, v, score_mod=mod, scale=scale)
