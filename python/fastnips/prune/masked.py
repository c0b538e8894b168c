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
every step by :func:`~fastnips.prune.keep_masks`) is a second guard against optimisers that move
zero-gradient weights. The mask is stored bit-packed (:mod:`fastnips.prune.bits`, 1/32 of a float32
weight); memory compared with ``torch.nn.utils.prune``: docs/notes/prune.md.

**Masked LoRA** (:class:`MaskedLoRALinear`, the "MaskLoRA" of Zimmer et al., PERP, arXiv 2312.15230,
used by the reconstruction of Wagner et al.): frozen base W, trainable :math:`A \in \mathbb{R}^{r
\times d_{in}}` (Kaiming-uniform, as in LoRA) and :math:`B \in \mathbb{R}^{d_{out} \times r}` (zeros),
scale :math:`s = \alpha / r`,

.. math:: y = x W^\top + s\, x \big((BA) \odot M\big)^\top + b,

with BA never formed (the products and their backends: :mod:`fastnips.prune.masked_ops`). Merging keeps
the sparsity exactly: :math:`W \mathrel{+}= s (BA) \odot M`. With ``LoRA(masked=False)`` the update is
plain LoRA, :math:`s\, x A^\top B^\top` (low rank, cheap), and merging it fills the pruned entries (a
warning says so).

**Backends** (``backend=``): ``"auto"`` runs the Triton kernels for CUDA tensors in float16, bfloat16 or
float32 (not the LoRA gradient under ``torch.use_deterministic_algorithms(True)``: that kernel sums with
atomics) and the chunked torch code (``"reference"``, deterministic) otherwise; ``"triton"`` on CPU tensors
needs ``TRITON_INTERPRET=1`` (for tests).

**Autocast.** Under ``torch.autocast`` the layers cast their floating inputs and parameters to the
autocast dtype (as ``nn.Linear`` does; the cast of W is a copy, also as for ``nn.Linear``) and run the
masked products in that dtype; gradients flow back to the float32 parameters.

Model-level helpers (:func:`~fastnips.prune.apply_masks`, :func:`~fastnips.prune.add_lora`, ...):
:mod:`fastnips.prune.surgery`.

Paper: Wagner, Roux, Zimmer, Pokutta, "A Free Lunch in LLM Compression: Revisiting Retraining after
Pruning", arXiv 2510.14444 (reference code: ``customLayers.py``, ``prune.custom_from_mask``).

Examples
--------
>>> import torch
>>> from fastnips.prune import LoRA, MaskedLinear, MaskedLoRALinear
>>> mask = torch.rand(4, 8, generator=torch.Generator().manual_seed(0)) > 0.5
>>> layer = MaskedLinear.from_linear(torch.nn.Linear(8, 4), mask)
>>> layer(torch.randn(3, 8)).sum().backward()
>>> bool((layer.weight.grad[~mask] == 0).all())
True
>>> merged = MaskedLoRALinear(layer, LoRA(r=2, alpha=4)).merge()   # W += s (BA) ⊙ M
>>> bool((merged.weight[~mask] == 0).all())
True
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .._compat import moved
from .bits import check_mask_kind, count_kept, mask_rows_, pack_mask, row_blocks, unpack_mask
from .masked_ops import MASKED_BACKENDS, MaskedLinearFn, MaskedLoRAFn, lora_delta_rows

__all__ = ["LoRA", "MaskedLinear", "MaskedLoRALinear"]

BACKEND_CHOICES = ("auto", *MASKED_BACKENDS)


# ---------------------------------------------------------------------------------------------------
# checks and autocast


def check_mask(mask, weight: torch.Tensor, where: str = "") -> None:
    """Raise unless ``mask`` is a 2-D bool tensor of the weight's shape."""
    check_mask_kind(mask)
    if tuple(mask.shape) != tuple(weight.shape):
        raise ValueError(f"{where}mask has shape {tuple(mask.shape)} but the weight is (out_features, "
                         f"in_features) = {tuple(weight.shape)}")


def check_backend_name(backend) -> str:
    """``backend`` if it is one of :data:`BACKEND_CHOICES` (checked when a layer is built)."""
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    if backend not in BACKEND_CHOICES:
        raise ValueError(f"unknown backend {backend!r} for masked layers; choose one of {', '.join(BACKEND_CHOICES)}")
    return backend


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
                 backend: str = "auto", device: torch.device | str | None = None, dtype: torch.dtype | None = None):
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
        check_mask(mask, linear.weight)
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self._build(linear.weight, linear.bias, mask, backend)
        return self

    def _build(self, weight: nn.Parameter, bias, mask: torch.Tensor, backend: str) -> None:
        check_mask(mask, weight)
        self._hold(weight, bias, pack_mask(mask.to(weight.device)), check_backend_name(backend))
        self.enforce_()

    def _hold(self, weight: nn.Parameter, bias, bits: torch.Tensor, backend: str) -> None:
        """Take over weight, bias and the mask bits (the same objects)."""
        self.backend = backend
        self.out_features, self.in_features = (int(v) for v in weight.shape)
        self.weight = weight
        self.bias = bias
        self.register_buffer("mask_bits", bits)
        self.register_load_state_dict_post_hook(_enforce_after_load)

    @property
    def mask(self) -> torch.Tensor:
        """The unpacked keep-mask, bool, shape (out_features, in_features) (a new tensor)."""
        return unpack_mask(self.mask_bits, self.in_features)

    @property
    def sparsity(self) -> float:
        """Fraction of pruned entries."""
        n = self.out_features * self.in_features
        return 1.0 - count_kept(self.mask_bits) / n if n else 0.0

    @torch.no_grad()
    def enforce_(self) -> MaskedLinear:
        """Set the pruned entries of the weight to 0.0 again, in place (a block of rows at a time)."""
        mask_rows_(self.weight.data, self.mask_bits)
        return self

    @torch.no_grad()
    def set_mask_(self, mask: torch.Tensor) -> MaskedLinear:
        """Replace the mask (e.g. to prune further) and zero the newly pruned entries. Entries the old mask
        pruned stay 0.0 unless trained again."""
        check_mask(mask, self.weight)
        self.mask_bits = pack_mask(mask.to(self.weight.device))
        return self.enforce_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`y = x (W \odot M)^\top + b`.

        Parameters
        ----------
        x : torch.Tensor, shape (..., in_features)

        Returns
        -------
        torch.Tensor, shape (..., out_features)
        """
        dt = _autocast_dtype(x)
        if dt is None:
            return MaskedLinearFn.apply(x, self.weight, self.bias, self.mask_bits, self.backend)
        x, w, b = _cast(dt, x, self.weight, self.bias)
        with torch.autocast(x.device.type, enabled=False):
            return MaskedLinearFn.apply(x, w, b, self.mask_bits, self.backend)

    def to_linear(self) -> nn.Linear:
        """A plain ``nn.Linear`` holding this layer's weight and bias Parameters (no copy): the pruned
        entries stay 0.0 but nothing keeps them there any more."""
        return _linear_with(self.weight, self.bias)

    def extra_repr(self) -> str:
        """The shape, bias and sparsity, for ``repr``."""
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
        """The LoRA scale ``alpha / r``."""
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
        self._frozen_flags = (base.weight.requires_grad, None if base.bias is None else base.bias.requires_grad)
        self._hold(base.weight, base.bias, base.mask_bits, base.backend)
        self.weight.requires_grad_(False)
        if self.bias is not None:
            self.bias.requires_grad_(False)
        w = self.weight
        self.lora_A = nn.Parameter(torch.empty((lora.r, self.in_features), device=w.device, dtype=w.dtype))
        self.lora_B = nn.Parameter(torch.zeros((self.out_features, lora.r), device=w.device, dtype=w.dtype))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5), generator=generator)

    _hold = MaskedLinear._hold
    mask = MaskedLinear.mask
    sparsity = MaskedLinear.sparsity
    enforce_ = MaskedLinear.enforce_

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`y = x W^\top + s\, x ((BA) \odot M)^\top + b` (unmasked: :math:`BA`).

        Parameters
        ----------
        x : torch.Tensor, shape (..., in_features)

        Returns
        -------
        torch.Tensor, shape (..., out_features)
        """
        dt = _autocast_dtype(x)
        x, w, b, A, B = _cast(dt, x, self.weight, self.bias, self.lora_A, self.lora_B)
        if self.lora.masked:
            with torch.autocast(x.device.type, enabled=False):
                return MaskedLoRAFn.apply(x, w, b, A, B, self.mask_bits, self.scale, self.backend)
        with torch.autocast(x.device.type, enabled=False):
            y = MaskedLinearFn.apply(x, w, b, self.mask_bits, self.backend)
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
        for r0, r1 in row_blocks(d_out, d_in * max(4, W.element_size())):
            W[r0:r1].add_(lora_delta_rows(A.to(W.dtype), B.to(W.dtype), self.mask_bits, r0, r1, d_in), alpha=s)
        B.zero_()
        out = MaskedLinear.__new__(MaskedLinear)
        nn.Module.__init__(out)
        out._hold(W, self.bias, self.mask_bits, self.backend)
        W.requires_grad_(wf)
        if self.bias is not None:
            self.bias.requires_grad_(bool(bf))
        return out

    def extra_repr(self) -> str:
        """The shape, LoRA configuration and sparsity, for ``repr``."""
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"r={self.lora.r}, alpha={self.lora.alpha}, masked={self.lora.masked}, sparsity={self.sparsity:.3f}")


# ---------------------------------------------------------------------------------------------------
# names that moved: the bit packing to fastnips.prune.bits, the model-level helpers to fastnips.prune.surgery

# (pack_mask and unpack_mask, imported above, stay importable from here without a warning)
__getattr__ = moved(__name__, {"CHUNK_BYTES": "fastnips.prune.bits",
                               **dict.fromkeys(("SparsityRow", "add_lora", "apply_masks", "keep_masks", "masks_of",
                                                "merge_lora", "sparsity_report", "strip_masks"),
                                               "fastnips.prune.surgery")})
