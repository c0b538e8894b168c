r"""Masked linear layers for reconstruction and retraining under a fixed mask, and masked LoRA.

**Masked linear** (:class:`MaskedLinear`). With a keep-mask :math:`M \in \{0,1\}^{d_{out} \times d_{in}}`
the layer computes and differentiates

.. math:: y = x (W \odot M)^\top + b, \qquad dx = dy\, (W \odot M), \qquad
          dW = (dy^\top x) \odot M, \qquad db = \textstyle\sum dy,

holding the invariant :math:`W = W \odot M` (pruned entries are exactly 0.0) instead of recomputing
:math:`W \odot M`: the forward is a plain ``F.linear(x, W, b)``. The invariant holds through training
with any optimiser whose update of an entry with zero gradient and zero weight is zero: AdamW (also with
weight decay: both moments stay 0), SGD with momentum and weight decay, Adam, RMSprop. Since ``dW`` is
masked, pruned entries never get gradient, moments or decay; :meth:`MaskedLinear.enforce_` (run after
every step by :func:`keep_masks`) is a second guard against optimisers that move zero-gradient weights.

Memory: the mask is stored **bit-packed** (:func:`pack_mask`: uint8 ``(d_out, ceil(d_in/8))``, 1/32 of
the float32 weight) so a layer holds 1.03x the dense weight bytes, where ``torch.nn.utils.prune``
(the reference implementation's ``custom_from_mask``) holds ``weight_orig``, a float ``weight_mask`` and
the computed ``weight``: 3x, plus one more weight-sized temporary in every backward (``grad * mask``).
Here the backward masks ``dW`` in place, from the bits, a block of rows at a time (temporaries bounded
by :data:`CHUNK_BYTES`), or in the epilogue of a Triton kernel on CUDA
(:func:`fastnips.kernels.prune.masked_weight_grad`).

**Masked LoRA** (:class:`MaskedLoRALinear`, the "MaskLoRA" of Zimmer et al., PERP, arXiv 2312.15230,
used by the reconstruction of Wagner et al.): frozen base W, trainable :math:`A \in \mathbb{R}^{r
\times d_{in}}` (Kaiming-uniform, as in LoRA) and :math:`B \in \mathbb{R}^{d_{out} \times r}` (zeros),
scale :math:`s = \alpha / r`,

.. math:: y = x W^\top + s\, x \big((BA) \odot M\big)^\top + b, \qquad
          G = (dy^\top x) \odot M, \quad dB = s\, G A^\top, \quad dA = s\, B^\top G, \quad
          dx = dy\, W + s\, dy\, \big((BA) \odot M\big).

The d_out x d_in product BA is never formed: on CPU a block of output rows c at a time
(:math:`D_c = (B_c A) \odot M_c`, :math:`G_c = (dy_{:,c}^\top x) \odot M_c`, each temporary at most
:data:`CHUNK_BYTES`), on CUDA by Triton kernels that form tiles of :math:`(BA) \odot M` in registers
(:mod:`fastnips.kernels.prune`). Merging keeps the sparsity exactly: :math:`W \mathrel{+}= s (BA) \odot M`.
With ``LoRA(masked=False)`` the update is plain LoRA, :math:`s\, x A^\top B^\top` (low rank, cheap), and
merging it fills the pruned entries (a warning says so).

**Backends.** ``backend="auto"`` runs the Triton kernels for CUDA tensors in float16, bfloat16 or float32
(except the LoRA gradient under ``torch.use_deterministic_algorithms(True)``: its kernel sums with atomics)
and the chunked torch code (``"reference"``, deterministic) otherwise; ``"triton"`` on CPU tensors needs
``TRITON_INTERPRET=1`` (for tests). The dense GEMMs (``F.linear``, ``dy @ W``) are torch's on every backend.
Gradients are first order only (the backward is ``once_differentiable``: double backward raises).

**Autocast.** Under ``torch.autocast`` the layers cast their floating inputs and parameters to the
autocast dtype (as ``nn.Linear`` does; the cast of W is a copy, also as for ``nn.Linear``) and run the
masked products in that dtype; gradients flow back to the float32 parameters.

Paper: Wagner, Roux, Zimmer, Pokutta, "A Free Lunch in LLM Compression: Revisiting Retraining after
Pruning", arXiv 2510.14444 (reference code: ``customLayers.py``, ``prune.custom_from_mask``); notes:
shared/notes/prune.md §1, §5.1-5.3 (kernels K4, K5; test 3).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable

from .. import _backend

__all__ = ["CHUNK_BYTES", "LoRA", "MaskedLinear", "MaskedLoRALinear", "SparsityRow", "add_lora", "apply_masks",
           "keep_masks", "masks_of", "merge_lora", "pack_mask", "sparsity_report", "strip_masks", "unpack_mask"]

#: Upper bound, in bytes, of each weight-shaped temporary of the chunked (reference) code: a block of
#: rows of (BA) ⊙ M, of :math:`(dy^\top x) \odot M`, of an unpacked mask. Read at call time (tests
#: change it to check that results do not depend on it).
CHUNK_BYTES = 4 << 20

BACKEND_CHOICES = ("auto", "reference", "triton")
_SUPPORTED = ("reference", "triton")
_TRITON_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


# ---------------------------------------------------------------------------------------------------
# bit-packed masks


def pack_mask(mask: torch.Tensor) -> torch.Tensor:
    """Pack a bool keep-mask (out, in) into uint8 ``(out, ceil(in / 8))``.

    Bit ``j % 8`` of byte ``[o, j // 8]`` is ``mask[o, j]`` (little-endian bit order, as numpy's
    ``packbits(mask, axis=1, bitorder="little")``); padding bits are 0. Packed a block of rows at a time
    (temporaries bounded by :data:`CHUNK_BYTES`).

    Raises
    ------
    TypeError, ValueError
        Not a bool tensor; not 2-D.
    """
    _check_mask_kind(mask)
    rows, cols = (int(v) for v in mask.shape)
    nb = -(-cols // 8)
    out = torch.empty((rows, nb), dtype=torch.uint8, device=mask.device)
    shifts = torch.arange(8, dtype=torch.uint8, device=mask.device)
    for r0, r1 in _row_blocks(rows, max(nb * 8, 1) * 2):
        m = mask[r0:r1]
        if cols % 8:
            m = F.pad(m.to(torch.uint8), (0, nb * 8 - cols))
        else:
            m = m.contiguous().view(torch.uint8)
        torch.sum(m.reshape(r1 - r0, nb, 8) << shifts, dim=-1, dtype=torch.uint8, out=out[r0:r1])
    return out


def unpack_mask(bits: torch.Tensor, in_features: int) -> torch.Tensor:
    """The bool keep-mask (out, in_features) of :func:`pack_mask`'s ``bits`` (a full-size tensor)."""
    if not isinstance(bits, torch.Tensor) or bits.dtype != torch.uint8 or bits.dim() != 2:
        raise TypeError("bits must be a 2-D uint8 tensor (out_features, ceil(in_features / 8))")
    if isinstance(in_features, bool) or not isinstance(in_features, numbers.Integral) or in_features < 0 \
            or -(-int(in_features) // 8) != bits.shape[1]:
        raise ValueError(f"in_features={in_features!r} does not fit bits of shape {tuple(bits.shape)}")
    return ~_pruned_rows(bits, 0, int(bits.shape[0]), int(in_features))


def _pruned_rows(bits: torch.Tensor, r0: int, r1: int, in_features: int) -> torch.Tensor:
    """bool (r1 - r0, in_features), True where pruned, from rows r0:r1 of the bits (one uint8 temporary,
    viewed as bool: no second copy)."""
    shifts = torch.arange(8, dtype=torch.uint8, device=bits.device)
    t = bits[r0:r1].unsqueeze(-1) >> shifts
    t.bitwise_and_(1).bitwise_xor_(1)
    return t.view(r1 - r0, int(bits.shape[1]) * 8)[:, :in_features].view(torch.bool)


def _row_blocks(rows: int, bytes_per_row: int):
    """(r0, r1) blocks of rows whose temporaries of ``bytes_per_row`` each stay within CHUNK_BYTES."""
    step = max(1, int(CHUNK_BYTES) // max(int(bytes_per_row), 1))
    for r0 in range(0, rows, step):
        yield r0, min(rows, r0 + step)


def _mask_rows_(t: torch.Tensor, bits: torch.Tensor) -> torch.Tensor:
    """Zero, in place, the entries of the (out, in) tensor t that the bits prune; returns t."""
    rows, cols = (int(v) for v in t.shape)
    for r0, r1 in _row_blocks(rows, cols * 8):  # bound the mask temporary to CHUNK_BYTES / 8
        t[r0:r1].masked_fill_(_pruned_rows(bits, r0, r1, cols), 0)
    return t


_POPCOUNT = None


def _count_kept(bits: torch.Tensor) -> int:
    global _POPCOUNT
    if _POPCOUNT is None:
        _POPCOUNT = torch.tensor([bin(i).count("1") for i in range(256)], dtype=torch.int64)
    table = _POPCOUNT.to(bits.device)
    total = 0
    for r0, r1 in _row_blocks(int(bits.shape[0]), int(bits.shape[1]) * 8):
        total += int(table[bits[r0:r1].long()].sum())
    return total


def _check_mask_kind(mask) -> None:
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a torch tensor of bool, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = kept), got {mask.dtype}; use mask.bool() or "
                        "fastnips.prune.select_mask")
    if mask.dim() != 2:
        raise ValueError(f"mask must be 2-D (out_features, in_features), got shape {tuple(mask.shape)}")


def _check_mask(mask, weight: torch.Tensor, where: str = "") -> None:
    _check_mask_kind(mask)
    if tuple(mask.shape) != tuple(weight.shape):
        raise ValueError(f"{where}mask has shape {tuple(mask.shape)} but the weight is (out_features, "
                         f"in_features) = {tuple(weight.shape)}")


# ---------------------------------------------------------------------------------------------------
# backends and autocast


def _check_backend_name(backend) -> str:
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    if backend not in BACKEND_CHOICES:
        raise ValueError(f"unknown backend {backend!r} for masked layers; choose one of {', '.join(BACKEND_CHOICES)}")
    return backend


def _resolve(backend: str, t: torch.Tensor, op: str, *, atomics: bool = False) -> str:
    """The backend for an op on tensors like t ("auto": triton for CUDA tensors in a Triton dtype, unless the
    op's kernel sums with atomics and deterministic algorithms are requested)."""
    if backend == "auto":
        fast = t.is_cuda and t.dtype in _TRITON_DTYPES
        if atomics and torch.are_deterministic_algorithms_enabled():
            fast = False
        auto = ("triton", "reference") if fast else ("reference",)
    else:
        auto = ()
    b = _backend.resolve(backend, op=op, supported=_SUPPORTED, auto=auto)
    if b == "triton" and t.dtype not in _TRITON_DTYPES:
        raise ValueError(f"{op}: the triton backend takes float16, bfloat16 or float32, got {t.dtype}; "
                         "use backend='reference'")
    return b


def _kernels():
    from ..kernels import prune as kp  # lazy: defining kernels reads TRITON_INTERPRET

    return kp


def _autocast_dtype(x: torch.Tensor):
    dev = x.device.type
    if x.is_floating_point() and torch.is_autocast_enabled(dev):
        return torch.get_autocast_dtype(dev)
    return None


def _cast(dt, *ts):
    if dt is None:
        return ts
    return tuple(t.to(dt) if (t is not None and t.is_floating_point() and t.dtype != torch.float64) else t for t in ts)


# ---------------------------------------------------------------------------------------------------
# autograd


def _flat(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1])


class _MaskedLinearFn(torch.autograd.Function):
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
            if _resolve(ctx.backend, dy, "MaskedLinear backward") == "triton":
                dw = _kernels().masked_weight_grad(dy2, x2, bits)
            else:
                dw = _mask_rows_(dy2.t().mm(x2), bits)
            dw = dw.to(weight.dtype)
        if need_b and ctx.has_bias:
            db = dy2.sum(0)
        return dx, dw, db, None, None


def _lora_delta_rows(A, B, bits, r0, r1, in_features):
    """(B[r0:r1] A) ⊙ M[r0:r1], a block of rows of the masked LoRA update (unscaled)."""
    return B[r0:r1].mm(A).masked_fill_(_pruned_rows(bits, r0, r1, in_features), 0)


class _MaskedLoRAFn(torch.autograd.Function):
    """y = x Wᵀ + s x ((BA) ⊙ M)ᵀ + b, without the full BA; dA, dB (and dW) from G = (dyᵀx) ⊙ M."""

    @staticmethod
    def forward(ctx, x, weight, bias, A, B, bits, s, backend):
        ctx.save_for_backward(x, weight, A, B, bits)
        ctx.s, ctx.backend, ctx.has_bias = s, backend, bias is not None
        d_out, d_in = (int(v) for v in weight.shape)
        x2 = _flat(x)
        if _resolve(backend, x, "MaskedLoRALinear") == "triton":
            y2 = _kernels().masked_lora_forward(x2, weight, A, B, bits, s, bias)
        else:
            y2 = F.linear(x2, weight, bias)
            for r0, r1 in _row_blocks(d_out, d_in * max(4, x.element_size())):
                y2[:, r0:r1].addmm_(x2, _lora_delta_rows(A, B, bits, r0, r1, d_in).t(), alpha=s)
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
        if _resolve(ctx.backend, dy, "MaskedLoRALinear backward", atomics=True) == "triton":
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
            for r0, r1 in _row_blocks(d_out, d_in * max(4, x.element_size())):
                if need_x:
                    dx.addmm_(dy2[:, r0:r1], _lora_delta_rows(A, B, bits, r0, r1, d_in), alpha=s)
                if need_w or need_a or need_bb:
                    g = torch.mm(dy2[:, r0:r1].t(), x2, out=dw[r0:r1]) if need_w else dy2[:, r0:r1].t().mm(x2)
                    g.masked_fill_(_pruned_rows(bits, r0, r1, d_in), 0)
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


# ---------------------------------------------------------------------------------------------------
# layers


class MaskedLinear(nn.Module):
    r"""A linear layer with a fixed keep-mask: :math:`y = x (W \odot M)^\top + b` with a masked weight
    gradient, the mask bit-packed (see the module docstring for the math and the memory).

    Build one from an existing layer with :meth:`from_linear` (takes over its weight Parameter, no copy).
    The constructor makes a fresh layer like ``nn.Linear`` (e.g. to load a state dict into).

    Parameters
    ----------
    in_features, out_features : int
    bias : bool, default True
    mask : torch.Tensor of bool, shape (out_features, in_features), optional
        True = kept; default all kept.
    backend : {"auto", "reference", "triton"}
        For the masked weight gradient (module docstring).
    device, dtype
        As for ``nn.Linear``.

    Attributes
    ----------
    weight : nn.Parameter, shape (out_features, in_features)
        Pruned entries are exactly 0.0 (the invariant the forward relies on; writing non-zeros there by
        hand breaks it until :meth:`enforce_`; ``load_state_dict`` re-applies the mask).
    bias : nn.Parameter or None, shape (out_features,)
    mask_bits : torch.Tensor of uint8 (buffer), shape (out_features, ceil(in_features / 8))
        The mask, bit-packed (:func:`pack_mask`); in the state dict; unchanged by ``.to(dtype)``.
    mask : torch.Tensor of bool (property)
        The unpacked mask (a new full-size tensor each time; for tests and inspection).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, mask: torch.Tensor | None = None,
                 backend: str = "auto", device=None, dtype=None):
        super().__init__()
        lin = nn.Linear(in_features, out_features, bias=bias, device=device, dtype=dtype)
        if mask is None:
            mask = torch.ones(lin.weight.shape, dtype=torch.bool, device=lin.weight.device)
        self._build(lin.weight, lin.bias, mask, backend)

    @classmethod
    def from_linear(cls, linear: nn.Linear, mask: torch.Tensor, *, backend: str = "auto") -> MaskedLinear:
        """Wrap ``linear``'s weight and bias Parameters (the same objects: no copy) with ``mask``.

        The pruned entries of the weight are set to 0.0 in place. ``linear`` shares its Parameters with the
        result afterwards; drop it.

        Raises
        ------
        TypeError
            ``linear`` is not an ``nn.Linear``; ``mask`` is not a bool tensor.
        ValueError
            ``mask`` does not have the weight's shape (out_features, in_features).
        """
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"from_linear takes an nn.Linear, got {type(linear).__name__}")
        _check_mask(mask, linear.weight)
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self._build(linear.weight, linear.bias, mask, backend)
        return self

    def _build(self, weight: nn.Parameter, bias, mask: torch.Tensor, backend: str) -> None:
        _check_mask(mask, weight)
        self.backend = _check_backend_name(backend)
        self.out_features, self.in_features = (int(v) for v in weight.shape)
        self.weight = weight
        self.bias = bias
        self.register_buffer("mask_bits", pack_mask(mask.to(weight.device)))
        self.enforce_()
        self.register_load_state_dict_post_hook(_enforce_after_load)

    @property
    def mask(self) -> torch.Tensor:
        return unpack_mask(self.mask_bits, self.in_features)

    @property
    def sparsity(self) -> float:
        """Fraction of pruned entries."""
        n = self.out_features * self.in_features
        return 1.0 - _count_kept(self.mask_bits) / n if n else 0.0

    @torch.no_grad()
    def enforce_(self) -> MaskedLinear:
        """Set the pruned entries of the weight to 0.0 again, in place (a block of rows at a time)."""
        _mask_rows_(self.weight.data, self.mask_bits)
        return self

    @torch.no_grad()
    def set_mask_(self, mask: torch.Tensor) -> MaskedLinear:
        """Replace the mask (e.g. to prune further) and zero the newly pruned entries. Entries the old mask
        pruned stay 0.0 unless trained again."""
        _check_mask(mask, self.weight)
        self.mask_bits = pack_mask(mask.to(self.weight.device))
        return self.enforce_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dt = _autocast_dtype(x)
        if dt is None:
            return _MaskedLinearFn.apply(x, self.weight, self.bias, self.mask_bits, self.backend)
        x, w, b = _cast(dt, x, self.weight, self.bias)
        with torch.autocast(x.device.type, enabled=False):
            return _MaskedLinearFn.apply(x, w, b, self.mask_bits, self.backend)

    def to_linear(self) -> nn.Linear:
        """A plain ``nn.Linear`` holding this layer's weight and bias Parameters (no copy): the pruned
        entries stay 0.0 but nothing keeps them there any more."""
        return _linear_with(self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"sparsity={self.sparsity:.3f}")


def _enforce_after_load(module, incompatible_keys) -> None:
    module.enforce_()


def _linear_with(weight: nn.Parameter, bias) -> nn.Linear:
    lin = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, device="meta", dtype=weight.dtype)
    lin.weight = weight
    lin.bias = bias
    return lin


@dataclass(frozen=True)
class LoRA:
    r"""A LoRA configuration: rank ``r``, scale :math:`s = \alpha / r`, and whether the update is masked.

    ``LoRA(16, 32)`` is the reference code's default (``lora_r=16``, ``lora_alpha=32``,
    ``lora_type='masked_efficient'``). ``masked=True`` multiplies the update by the layer's mask
    (:math:`W + s (BA) \odot M`), so training and merging keep the sparsity; ``masked=False`` is plain
    LoRA (:math:`W + s BA`), whose merge makes the layer dense.

    Raises
    ------
    ValueError
        ``r`` not an int >= 1; ``alpha`` not a finite number > 0; ``masked`` not a bool.
    """

    r: int = 16
    alpha: float = 32.0
    masked: bool = True

    def __post_init__(self):
        if isinstance(self.r, bool) or not isinstance(self.r, numbers.Integral) or self.r < 1:
            raise ValueError(f"LoRA rank r must be an int >= 1, got {self.r!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, numbers.Real) or not math.isfinite(self.alpha) \
                or self.alpha <= 0:
            raise ValueError(f"LoRA alpha must be a finite number > 0, got {self.alpha!r}")
        if not isinstance(self.masked, bool):
            raise ValueError(f"LoRA masked must be a bool, got {self.masked!r}")

    @property
    def scale(self) -> float:
        return float(self.alpha) / int(self.r)


class MaskedLoRALinear(nn.Module):
    r"""A masked linear layer with a frozen base and a trainable (masked) LoRA update:
    :math:`y = x W^\top + s\, x ((BA) \odot M)^\top + b` (module docstring), BA never formed.

    Parameters
    ----------
    base : MaskedLinear
        Its weight, bias and mask are taken over (same objects). The weight and bias are frozen
        (``requires_grad=False``; :meth:`merge` restores their previous flags). Making them trainable
        again is allowed: the weight's gradient is then masked as in :class:`MaskedLinear`.
    lora : LoRA, default LoRA()
    generator : torch.Generator, optional
        For the Kaiming-uniform init of A (``kaiming_uniform_(A, a=sqrt(5))``, LoRA's choice); B starts at
        zero, so the layer starts equal to ``base``.

    Attributes
    ----------
    weight, bias, mask_bits, mask, in_features, out_features
        As in :class:`MaskedLinear`.
    lora_A : nn.Parameter, shape (r, in_features)
    lora_B : nn.Parameter, shape (out_features, r)
    scale : float
        alpha / r.
    """

    def __init__(self, base: MaskedLinear, lora: LoRA | None = None, *, generator: torch.Generator | None = None):
        super().__init__()
        if not isinstance(base, MaskedLinear):
            raise TypeError(f"MaskedLoRALinear wraps a MaskedLinear, got {type(base).__name__} (use apply_masks or "
                            "MaskedLinear.from_linear first)")
        lora = LoRA() if lora is None else lora
        if not isinstance(lora, LoRA):
            raise TypeError(f"lora must be a LoRA config, got {type(lora).__name__}")
        self.lora = lora
        self.scale = lora.scale
        self.backend = base.backend
        self.in_features, self.out_features = base.in_features, base.out_features
        self._frozen_flags = (base.weight.requires_grad, None if base.bias is None else base.bias.requires_grad)
        self.weight = base.weight
        self.bias = base.bias
        self.weight.requires_grad_(False)
        if self.bias is not None:
            self.bias.requires_grad_(False)
        self.register_buffer("mask_bits", base.mask_bits)
        w = self.weight
        self.lora_A = nn.Parameter(torch.empty((lora.r, self.in_features), device=w.device, dtype=w.dtype))
        self.lora_B = nn.Parameter(torch.zeros((self.out_features, lora.r), device=w.device, dtype=w.dtype))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5), generator=generator)
        self.register_load_state_dict_post_hook(_enforce_after_load)

    mask = MaskedLinear.mask
    sparsity = MaskedLinear.sparsity
    enforce_ = MaskedLinear.enforce_

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dt = _autocast_dtype(x)
        x, w, b, A, B = _cast(dt, x, self.weight, self.bias, self.lora_A, self.lora_B)
        if self.lora.masked:
            with torch.autocast(x.device.type, enabled=False):
                return _MaskedLoRAFn.apply(x, w, b, A, B, self.mask_bits, self.scale, self.backend)
        with torch.autocast(x.device.type, enabled=False):
            y = _MaskedLinearFn.apply(x, w, b, self.mask_bits, self.backend)
            return y + self.scale * F.linear(F.linear(x, A), B)

    @torch.no_grad()
    def merge(self) -> MaskedLinear | nn.Linear:
        r"""Fold the update into the weight and return the plain layer.

        ``masked=True``: :math:`W \mathrel{+}= s (BA) \odot M` in place (a block of rows at a time; pruned
        entries stay exactly 0.0), returned as a :class:`MaskedLinear` sharing the weight, bias and mask,
        with their ``requires_grad`` flags as before the LoRA. ``B`` is then zeroed, so this layer still
        computes the same function.

        ``masked=False``: returns an ``nn.Linear`` with a new dense weight :math:`W + s BA` (this layer is
        left as it was), and warns: the pruned entries are filled, the sparsity is lost.
        """
        W, A, B, s = self.weight, self.lora_A, self.lora_B, self.scale
        wf, bf = self._frozen_flags
        if not self.lora.masked:
            dense = nn.Parameter(torch.addmm(W, B.to(W.dtype), A.to(W.dtype), alpha=s), requires_grad=wf)
            after = float((dense == 0).sum()) / max(dense.numel(), 1)
            warnings.warn("merging an unmasked LoRA (LoRA(masked=False)) fills the pruned entries: the merged layer "
                          f"is dense (sparsity {self.sparsity:.3f} -> {after:.3f}); use LoRA(masked=True) to keep the "
                          "mask", UserWarning, stacklevel=2)
            bias = None
            if self.bias is not None:
                bias = nn.Parameter(self.bias.detach().clone(), requires_grad=bool(bf))
            return _linear_with(dense, bias)
        d_out, d_in = (int(v) for v in W.shape)
        for r0, r1 in _row_blocks(d_out, d_in * max(4, W.element_size())):
            W[r0:r1].add_(_lora_delta_rows(A.to(W.dtype), B.to(W.dtype), self.mask_bits, r0, r1, d_in), alpha=s)
        B.zero_()
        out = MaskedLinear.__new__(MaskedLinear)
        nn.Module.__init__(out)
        out.backend = self.backend
        out.in_features, out.out_features = self.in_features, self.out_features
        out.weight = W
        out.bias = self.bias
        out.register_buffer("mask_bits", self.mask_bits)
        out.register_load_state_dict_post_hook(_enforce_after_load)
        W.requires_grad_(wf)
        if self.bias is not None:
            self.bias.requires_grad_(bool(bf))
        return out

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"r={self.lora.r}, alpha={self.lora.alpha}, masked={self.lora.masked}, sparsity={self.sparsity:.3f}")


# ---------------------------------------------------------------------------------------------------
# model-level helpers


_MASKED = (MaskedLinear, MaskedLoRALinear)


def _parents(model: nn.Module) -> dict[int, list[tuple[nn.Module, str, str]]]:
    """id(module) -> every (parent, attribute, qualified name) that holds it (shared modules appear twice)."""
    out: dict[int, list] = {}
    for pname, parent in model.named_modules(remove_duplicate=False):
        for cname, child in parent._modules.items():
            if child is not None:
                out.setdefault(id(child), []).append((parent, cname, f"{pname}.{cname}" if pname else cname))
    return out


def _replace(model: nn.Module, parents, old: nn.Module, new: nn.Module, name: str) -> None:
    holders = parents.get(id(old), [])
    if not holders:
        raise ValueError(f"cannot replace {name!r}: it is the model itself (wrap it in a container, or use "
                         "MaskedLinear.from_linear)")
    for parent, cname, _ in holders:
        setattr(parent, cname, new)


def _lookup(model: nn.Module, name) -> nn.Module:
    if not isinstance(name, str):
        raise TypeError(f"module names must be strings (as in model.named_modules()), got {name!r}")
    try:
        return model.get_submodule(name)
    except AttributeError:
        raise ValueError(f"no module named {name!r} in the model (names as in model.named_modules(), e.g. "
                         f"{[n for n, _ in model.named_modules()][1:4]})") from None


def apply_masks(model: nn.Module, masks: dict[str, torch.Tensor], *, check: bool = True,
                backend: str = "auto") -> nn.Module:
    """Replace, in place, each named ``nn.Linear`` by a :class:`MaskedLinear` with its mask.

    Parameters
    ----------
    model : nn.Module
    masks : dict[str, torch.Tensor of bool]
        Module name (as in ``model.named_modules()``) -> keep-mask (out_features, in_features). A name that
        is already a :class:`MaskedLinear` gets the new mask (:meth:`MaskedLinear.set_mask_`).
    check : bool, default True
        Validate every entry before replacing any module, so a bad entry leaves the model untouched. With
        False, entries are validated one by one as they are applied.
    backend : {"auto", "reference", "triton"}

    Returns
    -------
    nn.Module
        ``model`` itself.

    Raises
    ------
    ValueError
        An unknown name; a mask of the wrong shape; the model itself named (it cannot be replaced in
        place); a weight tied to another parameter (masking it would prune the other one too); the
        ``out_proj`` of an ``nn.MultiheadAttention`` (its forward bypasses the submodule).
    TypeError
        A named module that is not an ``nn.Linear``/:class:`MaskedLinear`; a non-bool mask.
    """
    if not isinstance(masks, dict):
        raise TypeError(f"masks must be a dict of module name -> bool mask, got {type(masks).__name__}")
    _check_backend_name(backend)
    parents = _parents(model)

    def validate(name, mask):
        mod = _lookup(model, name)
        if isinstance(mod, MaskedLoRALinear):
            raise TypeError(f"module {name!r} is a MaskedLoRALinear: merge_lora first")
        if not isinstance(mod, nn.Linear | MaskedLinear):
            raise TypeError(f"module {name!r} is a {type(mod).__name__}, not an nn.Linear")
        if mod is model:
            raise ValueError(f"cannot replace {name!r}: it is the model itself (wrap it in a container, or use "
                             "MaskedLinear.from_linear)")
        for parent, _, _ in parents.get(id(mod), []):
            if isinstance(parent, nn.MultiheadAttention):
                raise ValueError(f"module {name!r} is the out_proj of an nn.MultiheadAttention, whose forward reads "
                                 "its weight directly: a mask there would not be applied")
        try:
            _check_mask(mask, mod.weight, where=f"module {name!r}: ")
        except TypeError as e:
            raise TypeError(f"module {name!r}: {e}") from None
        if not isinstance(mod, MaskedLinear):
            own = {f"{q}.weight" for _, _, q in parents.get(id(mod), [])}
            tied = [n for n, p in model.named_parameters(remove_duplicate=False) if p is mod.weight and n not in own]
            if tied:
                raise ValueError(f"the weight of module {name!r} is tied to {tied}: masking it would prune those "
                                 "too (untie the weights, or leave this module out)")
        return mod

    def validate_once(name, mask, seen):
        mod = validate(name, mask)
        if id(mod) in seen:
            raise ValueError(f"module {name!r} is the same module as {seen[id(mod)]!r}: give one mask for it")
        seen[id(mod)] = name
        return mod

    seen: dict[int, str] = {}
    if check:
        mods = {name: validate_once(name, mask, seen) for name, mask in masks.items()}
        seen = {}
    for name, mask in masks.items():
        mod = mods[name] if check else validate_once(name, mask, seen)
        if isinstance(mod, MaskedLinear):
            mod.set_mask_(mask)
        else:
            _replace(model, parents, mod, MaskedLinear.from_linear(mod, mask, backend=backend), name)
    return model


def strip_masks(model: nn.Module) -> nn.Module:
    """Replace, in place, every :class:`MaskedLinear` by an ``nn.Linear`` with the same Parameters, and
    every :class:`MaskedLoRALinear` by its merged layer (:meth:`MaskedLoRALinear.merge`) made plain.
    Returns ``model``. The pruned weights stay 0.0; the masks are gone."""
    parents = _parents(model)
    for name, mod in list(model.named_modules()):
        if isinstance(mod, MaskedLoRALinear):
            merged = mod.merge()
            new = merged.to_linear() if isinstance(merged, MaskedLinear) else merged
        elif isinstance(mod, MaskedLinear):
            new = mod.to_linear()
        else:
            continue
        _replace(model, parents, mod, new, name)
    return model


def add_lora(model: nn.Module, lora: LoRA | None = None, names: Iterable[str] | None = None, *,
             generator: torch.Generator | None = None) -> nn.Module:
    """Replace, in place, :class:`MaskedLinear` layers by :class:`MaskedLoRALinear` (base frozen, A and B
    trainable). Only converts: the ``requires_grad`` of every other parameter of the model is left as it is,
    so the caller decides what trains (e.g. ``model.requires_grad_(False)`` first, then ``add_lora``, to
    train the LoRA factors alone, as the reference code's ``SelectivePEFT``).

    Parameters
    ----------
    model : nn.Module
    lora : LoRA, default LoRA() (r=16, alpha=32, masked)
    names : iterable of str, optional
        The layers to convert (default: every MaskedLinear).
    generator : torch.Generator, optional
        For the init of the A factors (in ``named_modules`` order).

    Returns
    -------
    nn.Module
        ``model`` itself.

    Raises
    ------
    ValueError, TypeError
        An unknown name, or a named module that is not a MaskedLinear.
    """
    lora = LoRA() if lora is None else lora
    if not isinstance(lora, LoRA):
        raise TypeError(f"lora must be a LoRA config, got {type(lora).__name__}")
    if names is None:
        todo = [(n, m) for n, m in model.named_modules() if type(m) is MaskedLinear]
    else:
        if isinstance(names, str):
            raise TypeError("names must be an iterable of module names, not one string")
        todo = []
        for n in names:
            m = _lookup(model, n)
            if not isinstance(m, MaskedLinear):
                raise TypeError(f"module {n!r} is a {type(m).__name__}, not a MaskedLinear (apply_masks first)")
            todo.append((n, m))
    parents = _parents(model)
    for n, m in todo:
        _replace(model, parents, m, MaskedLoRALinear(m, lora, generator=generator), n)
    return model


def merge_lora(model: nn.Module) -> nn.Module:
    """Replace, in place, every :class:`MaskedLoRALinear` by its merged layer (:meth:`MaskedLoRALinear.merge`:
    a :class:`MaskedLinear`, or a dense ``nn.Linear`` with a warning for unmasked LoRA). Returns ``model``."""
    parents = _parents(model)
    for name, mod in list(model.named_modules()):
        if isinstance(mod, MaskedLoRALinear):
            _replace(model, parents, mod, mod.merge(), name)
    return model


def masks_of(model: nn.Module) -> dict[str, torch.Tensor]:
    """Module name -> bool keep-mask (unpacked) of every :class:`MaskedLinear` and :class:`MaskedLoRALinear`."""
    return {n: m.mask for n, m in model.named_modules() if isinstance(m, _MASKED)}


def keep_masks(optimizer: torch.optim.Optimizer, model_or_modules: nn.Module | Iterable[nn.Module]):
    """After every ``optimizer.step()``, re-zero the pruned entries (:meth:`MaskedLinear.enforce_`) of the
    masked layers whose weight this optimizer updates.

    The layers are looked up at every step (so layers added later by :func:`apply_masks` or
    :func:`add_lora` count); a masked layer whose weight is not among the optimizer's parameters cannot
    change through it and is skipped (one pass over each trained weight per step, not over the model).

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
    model_or_modules : nn.Module or iterable of nn.Module
        Searched recursively for masked layers.

    Returns
    -------
    torch.utils.hooks.RemovableHandle
        ``handle.remove()`` stops it.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    roots = [model_or_modules] if isinstance(model_or_modules, nn.Module) else list(model_or_modules)
    for r in roots:
        if not isinstance(r, nn.Module):
            raise TypeError(f"keep_masks takes a model or modules, got {type(r).__name__}")

    def hook(opt, args, kwargs):
        params = {id(p) for g in opt.param_groups for p in g["params"]}
        seen = set()
        for root in roots:
            for m in root.modules():
                if isinstance(m, _MASKED) and id(m) not in seen and id(m.weight) in params:
                    seen.add(id(m))
                    m.enforce_()

    return optimizer.register_step_post_hook(hook)


class SparsityRow(NamedTuple):
    """One row of :func:`sparsity_report`."""

    name: str
    shape: tuple[int, int]
    sparsity: float


def sparsity_report(model: nn.Module) -> list[SparsityRow]:
    """(name, (out, in), sparsity) for every linear layer: masked layers report their mask's fraction of
    pruned entries, plain ``nn.Linear`` layers their fraction of exact zeros. In ``named_modules`` order."""
    rows = []
    for name, m in model.named_modules():
        if isinstance(m, _MASKED):
            rows.append(SparsityRow(name, (m.out_features, m.in_features), m.sparsity))
        elif isinstance(m, nn.Linear):
            w = m.weight.detach()
            rows.append(SparsityRow(name, tuple(w.shape), float((w == 0).sum()) / max(w.numel(), 1)))
    return rows
