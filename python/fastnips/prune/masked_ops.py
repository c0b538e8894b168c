r"""The autograd functions of the masked layers: masked linear and masked LoRA products, on the chunked
torch reference or the Triton kernels.

With a keep-mask :math:`M` stored as bits (:mod:`fastnips.prune.bits`), weight :math:`W = W \odot M`,
LoRA factors :math:`A \in \mathbb{R}^{r \times d_{in}}`, :math:`B \in \mathbb{R}^{d_{out} \times r}` and
scale :math:`s`:

.. math:: \text{masked linear:}\quad y = x W^\top + b, \qquad dx = dy\, W, \qquad
          dW = (dy^\top x) \odot M, \qquad db = \textstyle\sum dy,

.. math:: \text{masked LoRA:}\quad y = x W^\top + s\, x \big((BA) \odot M\big)^\top + b, \qquad
          G = (dy^\top x) \odot M, \quad dB = s\, G A^\top, \quad dA = s\, B^\top G, \quad
          dx = dy\, W + s\, dy\, \big((BA) \odot M\big).

The d_out x d_in product BA is never formed: the reference works a block of output rows c at a time
(:math:`D_c = (B_c A) \odot M_c`, :math:`G_c = (dy_{:,c}^\top x) \odot M_c`, each temporary at most
:data:`fastnips.prune.bits.CHUNK_BYTES`); the Triton kernels (:mod:`fastnips.kernels.masked`) form tiles of
:math:`(BA) \odot M` in registers.

Backends: :data:`MASKED_BACKENDS`. ``"auto"`` takes ``"triton"`` for CUDA tensors in float16, bfloat16 or
float32, except for the LoRA gradient under ``torch.use_deterministic_algorithms(True)`` (its kernel sums
with atomics, so ``"triton"`` is refused there), and the reference (deterministic) otherwise. Gradients
are first order only (``once_differentiable``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from .. import _backend
from .bits import mask_rows_, pruned_rows, row_blocks

__all__ = ["MASKED_BACKENDS", "MaskedLinearFn", "MaskedLoRAFn", "lora_delta_rows"]

#: The backends of the masked layers.
MASKED_BACKENDS = ("reference", "triton")
_TRITON_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _triton_ok(t: torch.Tensor, *, atomics: bool = False):
    """``check=`` for :func:`fastnips._backend.resolve`: the Triton kernels take float16, bfloat16 and float32,
    and those that sum with atomics are refused when deterministic algorithms are requested."""

    def check(name: str) -> str:
        if name != "triton":
            return ""
        if t.dtype not in _TRITON_DTYPES:
            return f"the triton kernels take float16, bfloat16 or float32, got {t.dtype}; use backend='reference'"
        if atomics and torch.are_deterministic_algorithms_enabled():
            return ("the masked LoRA gradient kernel sums with atomics (not deterministic) and "
                    "torch.use_deterministic_algorithms(True) is set; use backend='reference'")
        return ""

    return check


def _kernels():
    from ..kernels import masked as km  # lazy: defining kernels reads TRITON_INTERPRET

    return km


# ---------------------------------------------------------------------------------------------------
# autograd


def _flat(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1])


class MaskedLinearFn(torch.autograd.Function):
    """y = F.linear(x, W, b) with W = W ⊙ M; dW = (dyᵀx) ⊙ M from the bits."""

    @staticmethod
    def forward(ctx, x, weight, bias, bits, backend):
        ctx.save_for_backward(x, weight, bits)
        ctx.backend = backend
        ctx.has_bias = bias is not None
        return F.linear(x, weight, bias)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, weight, bits = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        dx = dw = db = None
        if need_x:
            dx = dy.matmul(weight.to(dy.dtype))
        dy2 = _flat(dy)
        if need_w:
            x2 = _flat(x).to(dy.dtype)
            if _backend.resolve(ctx.backend, op="MaskedLinear backward", supported=MASKED_BACKENDS, like=dy,
                                check=_triton_ok(dy)) == "triton":
                dw = _kernels().masked_weight_grad(dy2, x2, bits)
            else:
                dw = mask_rows_(dy2.t().mm(x2), bits)
            dw = dw.to(weight.dtype)
        if need_b and ctx.has_bias:
            db = dy2.sum(0)
        return dx, dw, db, None, None


def lora_delta_rows(A, B, bits, r0, r1, in_features):
    """(B[r0:r1] A) ⊙ M[r0:r1], a block of rows of the masked LoRA update (unscaled)."""
    return B[r0:r1].mm(A).masked_fill_(pruned_rows(bits, r0, r1, in_features), 0)


class MaskedLoRAFn(torch.autograd.Function):
    """y = x Wᵀ + s x ((BA) ⊙ M)ᵀ + b, without the full BA; dA, dB (and dW) from G = (dyᵀx) ⊙ M."""

    @staticmethod
    def forward(ctx, x, weight, bias, A, B, bits, s, backend):
        ctx.save_for_backward(x, weight, A, B, bits)
        ctx.s, ctx.backend, ctx.has_bias = s, backend, bias is not None
        d_out, d_in = (int(v) for v in weight.shape)
        x2 = _flat(x)
        if _backend.resolve(backend, op="MaskedLoRALinear", supported=MASKED_BACKENDS, like=x,
                            check=_triton_ok(x)) == "triton":
            y2 = _kernels().masked_lora_forward(x2, weight, A, B, bits, s, bias)
        else:
            y2 = F.linear(x2, weight, bias)
            for r0, r1 in row_blocks(d_out, d_in * max(4, x.element_size())):
                y2[:, r0:r1].addmm_(x2, lora_delta_rows(A, B, bits, r0, r1, d_in).t(), alpha=s)
        return y2.reshape(*x.shape[:-1], d_out)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, weight, A, B, bits = ctx.saved_tensors
        s = ctx.s
        need_x, need_w, need_b, need_a, need_bb = ctx.needs_input_grad[:5]
        d_out, d_in = (int(v) for v in weight.shape)
        dy2 = _flat(dy)
        x2 = _flat(x)
        dx = dw = db = da = dB = None
        if _backend.resolve(ctx.backend, op="MaskedLoRALinear backward", supported=MASKED_BACKENDS, like=dy,
                            check=_triton_ok(dy, atomics=True)) == "triton":
            kp = _kernels()
            if need_x:
                dx = kp.masked_lora_input_grad(dy2, weight, A, B, bits, s)
            if need_a or need_bb:
                da, dB, dw = kp.masked_lora_backward(dy2, x2, A, B, bits, s, weight_grad=need_w)
            elif need_w:
                dw = kp.masked_weight_grad(dy2, x2, bits)
        else:
            dx = dy2.mm(weight) if need_x else None
            dw = torch.empty_like(weight) if need_w else None
            acc = torch.float32 if A.dtype in (torch.float16, torch.bfloat16) else A.dtype
            da = torch.zeros(A.shape, dtype=acc, device=A.device) if need_a else None
            dB = torch.empty_like(B) if need_bb else None
            for r0, r1 in row_blocks(d_out, d_in * max(4, x.element_size())):
                if need_x:
                    dx.addmm_(dy2[:, r0:r1], lora_delta_rows(A, B, bits, r0, r1, d_in), alpha=s)
                if need_w or need_a or need_bb:
                    g = torch.mm(dy2[:, r0:r1].t(), x2, out=dw[r0:r1]) if need_w else dy2[:, r0:r1].t().mm(x2)
                    g.masked_fill_(pruned_rows(bits, r0, r1, d_in), 0)
                    if need_bb:
                        torch.mm(g, A.t(), out=dB[r0:r1]).mul_(s)
                    if need_a:
                        da.addmm_(B[r0:r1].t().to(acc), g.to(acc), alpha=s)
            if da is not None:
                da = da.to(A.dtype)
        if need_b and ctx.has_bias:
            db = dy2.sum(0)
        if dx is not None:
            dx = dx.reshape(x.shape)
        return dx, dw, db, da, dB, None, None, None
