r"""Attention with a relative position bias that is never materialised.

Math
----
For q, k, v of shape (B, H, N, D) and an additive logit bias :math:`B_h` (N x N),

.. math:: O_{bh} = \mathrm{softmax}\big(\mathrm{scale}\cdot q_{bh} k_{bh}^\top + B_h\big)\, v_{bh},
          \qquad \mathrm{scale} = D^{-1/2} \text{ by default}.

The bias of :class:`~fastnips.vision.FreqRelPosBias` and :class:`~fastnips.vision.SwinRelPosBias` is a
function of the token offset only. With :math:`N = M_h M_w` tokens in row-major order,
:math:`(r_i, c_i) = (i // M_w, i \% M_w)`, a :class:`BiasSpec` holds a table ``kernel`` (H, Gh, Gw) and

.. math:: B_h[i, j] = \mathrm{kernel}\big[h,\ (r_i - r_j + o_h) \bmod G_h,\ (c_i - c_j + o_w) \bmod G_w\big],

with :math:`(o_h, o_w) = (0, 0)` for the periodic frequency kernel (``periodic=True``: the kernel is
``FreqRelPosBias.kernel()``, grid = its period) and :math:`(M_h-1, M_w-1)` for the Swin table
(``periodic=False``: the table ((2Mh-1)(2Mw-1), H) reshaped to (H, 2Mh-1, 2Mw-1); the modulo is then a no-op
and the index is timm's ``relative_position_index``). :func:`bias_spec` builds it from either module; the
compact spec reproduces ``module()`` exactly (:meth:`BiasSpec.dense`).

Shifted windows (``mask=``): Swin's attention mask, an additive (nW, N, N) tensor (0 within a region, a large
negative number or -inf across regions), added to the logits of window :math:`w = b \bmod nW` of the batch,
broadcast over the heads, as timm's ``WindowAttention`` does (its batch of windows is (B * nW, ...) with the
window index fastest):

.. math:: O_{bh} = \mathrm{softmax}\big(\mathrm{scale}\cdot q_{bh} k_{bh}^\top + B_h
          + \mathrm{mask}_{b \bmod nW}\big)\, v_{bh}.

The mask is a constant: no gradient flows to it (one that requires grad is refused). Every row must keep a
finite entry (Swin's does: a token always sees its own region), else the softmax is undefined (refused).

Backends (:func:`attention_with_bias`, ``backend=``)
----------------------------------------------------
``"reference"``
    Materialises the (H, N, N) bias and calls ``torch.nn.functional.scaled_dot_product_attention`` with it as
    ``attn_mask`` (which rules out SDPA's flash kernel); with a window mask, the batch is viewed as
    (B/nW, nW, H, N, D) and bias + mask broadcast. Autograd through torch. Takes a dense bias too.
``"triton"``
    :mod:`fastnips.kernels.freqbias`: FlashAttention-2 style forward with online softmax that gathers the bias
    tile from the compact table by the index arithmetic above (no (H, N, N) tensor), plus the window mask's
    tile read from the (nW, N, N) mask (no (B, H, N, N) tensor either). Registered as the torch
    custom op ``fastnips::attention_freqbias`` (fake implementation for ``torch.compile``; autograd formula
    registered). The backward is two Triton kernels as well (FlashAttention-2 style recomputation from the
    saved log-sum-exp): dq, dk, dv, and the table gradient scattered in-kernel at the forward's gather index,
    so neither direction materialises an (N, N) tensor. :func:`_grads_reference` is its torch oracle in the
    tests. CUDA, or CPU tensors under ``TRITON_INTERPRET=1`` (tests).
``"flex"``
    ``torch.nn.attention.flex_attention`` with a ``score_mod`` doing the same table lookup (and
    ``mask[b % nW, i, j]``; compiled on CUDA,
    eager and unfused on CPU). In torch 2.13 FlexAttention has **no backward on CPU**: requesting gradients of
    CPU tensors raises ``ValueError``. Takes a dense bias too.
``"auto"``
    ``"triton"`` for CUDA tensors with a compact spec when Triton is available, else ``"reference"``
    (FlexAttention is opt-in: ``fastnips._backend.resolve`` never picks it).

The choice goes through :func:`fastnips._backend.resolve` (``supported=ATTENTION_BACKENDS``), with this op's
restrictions as its ``check``: Triton needs CUDA tensors (CPU tensors only under ``TRITON_INTERPRET=1``),
FlexAttention has no CPU backward, and only CPU and CUDA tensors are served.

Paper: "Relative positional bias parameterized in the frequency domain" (NeurIPS 2026; see
:mod:`fastnips.vision.freqbias`). Kernel design: Dao, *FlashAttention-2: Faster Attention with Better
Parallelism and Work Partitioning* (arXiv:2307.08691). Peers a user would pick instead: SDPA with a
materialised bias, FlexAttention with a ``score_mod`` table lookup (Dong et al., arXiv:2412.05496).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch

from .. import _backend
from ._args import _pair
from ._attention_impl import _flat_index, _flex, _grads_reference, _reference  # noqa: F401 (oracle for tests)
from .freqbias import FreqRelPosBias
from .swin import SwinRelPosBias

__all__ = ["ATTENTION_BACKENDS", "BiasSpec", "attention_backends", "attention_with_bias", "bias_spec"]

ATTENTION_BACKENDS = ("reference", "triton", "flex")
_OP = "attention_with_bias"
_TRITON_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


# ------------------------------------------------------------------------------------------------- spec
@dataclass(frozen=True, eq=False)
class BiasSpec:
    r"""Compact relative position bias: a per-head table indexed by token offset.

    .. math:: B_h[i, j] = \mathrm{kernel}\big[h,\ (r_i - r_j + o_h) \bmod G_h,\ (c_i - c_j + o_w) \bmod G_w\big],
              \qquad (r_i, c_i) = (i // M_w,\ i \% M_w).

    Parameters
    ----------
    kernel : torch.Tensor, shape (H, Gh, Gw), floating
        Table of the bias per head and offset (keeps its autograd link: gradients reach it).
    window : (Mh, Mw)
        Token window; ``N = Mh * Mw`` tokens in row-major order.
    grid : (Gh, Gw)
        Must equal ``kernel.shape[1:]``.
    periodic : bool
        True (frequency bias): offset (0, 0), index modulo the grid. False (Swin table): grid must be
        ``(2Mh-1, 2Mw-1)``, offset ``(Mh-1, Mw-1)``.

    Notes
    -----
    Shapes: ``index()`` -> LongTensor (N, N); ``dense()`` -> (H, N, N).

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" (NeurIPS 2026; see
    :mod:`fastnips.vision.freqbias`); Liu et al., *Swin Transformer*, ICCV 2021 (the non-periodic table).

    Examples
    --------
    >>> import torch
    >>> spec = BiasSpec(torch.zeros(2, 13, 13), window=7, grid=13)
    >>> spec.dense().shape, spec.offset
    (torch.Size([2, 49, 49]), (0, 0))
    """

    kernel: torch.Tensor
    window: tuple[int, int]
    grid: tuple[int, int]
    periodic: bool = True

    def __post_init__(self):
        k = self.kernel
        if not isinstance(k, torch.Tensor) or k.ndim != 3 or not k.is_floating_point():
            raise ValueError(f"BiasSpec.kernel must be a floating (H, Gh, Gw) tensor, got "
                             f"{type(k).__name__ if not isinstance(k, torch.Tensor) else (k.dtype, tuple(k.shape))}")
        window = _pair(self.window, "window")
        grid = _pair(self.grid, "grid")
        object.__setattr__(self, "window", window)
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "periodic", bool(self.periodic))
        if tuple(k.shape[1:]) != grid:
            raise ValueError(f"BiasSpec.kernel has shape {tuple(k.shape)}; expected (H, {grid[0]}, {grid[1]}) "
                             f"for grid {grid}")
        if not self.periodic and grid != (2 * window[0] - 1, 2 * window[1] - 1):
            raise ValueError(f"a non-periodic (Swin) table for window {window} needs grid "
                             f"{(2 * window[0] - 1, 2 * window[1] - 1)}, got {grid}")

    @property
    def num_heads(self) -> int:
        """Heads H."""
        return int(self.kernel.shape[0])

    @property
    def num_tokens(self) -> int:
        """Tokens per window, N = Mh*Mw."""
        return self.window[0] * self.window[1]

    @property
    def offset(self) -> tuple[int, int]:
        """(oh, ow): (0, 0) when periodic, (Mh-1, Mw-1) for a Swin table."""
        return (0, 0) if self.periodic else (self.window[0] - 1, self.window[1] - 1)

    def index(self) -> torch.Tensor:
        """Flat index into ``kernel.flatten(1)`` of every token pair.

        Returns
        -------
        torch.Tensor
            LongTensor of shape (N, N).
        """
        return _flat_index(self.window, self.grid, self.offset, self.kernel.device)

    def dense(self) -> torch.Tensor:
        """The materialised bias (differentiable in ``kernel``).

        Returns
        -------
        torch.Tensor
            Shape (H, N, N).
        """
        return self.kernel.flatten(1)[:, self.index()]


def bias_spec(module: FreqRelPosBias | SwinRelPosBias | BiasSpec) -> BiasSpec:
    r"""The compact :class:`BiasSpec` of a relative position bias module.

    A :class:`FreqRelPosBias` gives ``periodic=True`` with kernel ``module.kernel()``; a
    :class:`SwinRelPosBias` gives ``periodic=False`` with the table as (H, 2Mh-1, 2Mw-1):

    .. math:: (o_h, o_w) = (0, 0) \text{ (frequency kernel)}, \qquad (o_h, o_w) = (M_h-1, M_w-1) \text{ (Swin table)}.

    ``spec.dense()`` equals ``module()`` exactly, and gradients through the spec reach the module's parameters.

    Parameters
    ----------
    module : FreqRelPosBias, SwinRelPosBias or BiasSpec
        The bias; a :class:`BiasSpec` is returned as it is.

    Returns
    -------
    BiasSpec
        The compact spec.

    Raises
    ------
    ValueError
        Any other type.

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" (NeurIPS 2026; see
    :mod:`fastnips.vision.freqbias`).

    Examples
    --------
    >>> import torch
    >>> bias = SwinRelPosBias(num_heads=2, window=7)
    >>> torch.equal(bias_spec(bias).dense(), bias())
    True
    """
    if isinstance(module, BiasSpec):
        return module
    if isinstance(module, FreqRelPosBias):
        return BiasSpec(module.kernel(), module.window, module.grid, periodic=True)
    if isinstance(module, SwinRelPosBias):
        (mh, mw), H = module.window, module.num_heads
        table = module.relative_position_bias_table.t().reshape(H, 2 * mh - 1, 2 * mw - 1)
        return BiasSpec(table, (mh, mw), (2 * mh - 1, 2 * mw - 1), periodic=False)
    raise ValueError(f"bias_spec takes a FreqRelPosBias, a SwinRelPosBias or a BiasSpec, got {type(module).__name__}")


_to_spec = bias_spec  # attention_with_bias's argument shadows the name


# ------------------------------------------------------------------------------------------------ public
def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") not in ("", "0")


def _restriction(name: str, device: torch.device, needs_grad: bool) -> str:
    """Why :func:`attention_with_bias` cannot run backend ``name`` on tensors on ``device`` ("" when it can);
    the ``check`` of :func:`fastnips._backend.resolve` (which probes whether the backend exists at all)."""
    if name == "triton" and not (device.type == "cuda" or (device.type == "cpu" and _interpreted())):
        return f"Triton runs on CUDA tensors (or on CPU tensors under TRITON_INTERPRET=1), got tensors on {device}"
    if name == "flex":
        if device.type == "cpu" and needs_grad:
            return "FlexAttention has no backward on CPU in this torch; call it under torch.no_grad()"
        if device.type not in ("cpu", "cuda"):
            return f"FlexAttention supports CPU and CUDA tensors, got {device}"
    return ""


def attention_backends(device: str | torch.device = "cpu", *, needs_grad: bool = False) -> list[str]:
    r"""The backends of :func:`attention_with_bias` usable for tensors on ``device`` now.

    Every backend computes the same :math:`O = \mathrm{softmax}(\mathrm{scale}\, q k^\top + B)\, v`.

    Parameters
    ----------
    device : str or torch.device
        Device of the tensors.
    needs_grad : bool
        Whether a backward is needed (FlexAttention has none on CPU).

    Returns
    -------
    list of str
        Names from ``ATTENTION_BACKENDS``, in that order.

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" (NeurIPS 2026; see
    :mod:`fastnips.vision.freqbias`); Dao, *FlashAttention-2* (arXiv:2307.08691).

    Examples
    --------
    >>> "reference" in attention_backends("cpu")
    True
    """
    device = torch.device(device)
    return [b for b in ATTENTION_BACKENDS
            if _backend.backend_available(b) and not _restriction(b, device, needs_grad)]


def _check_qkv(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch tensor, got {type(t).__name__}")
        if t.ndim != 4:
            raise ValueError(f"{name} must have shape (B, H, N, D), got {tuple(t.shape)}")
        if not t.is_floating_point():
            raise ValueError(f"{name} must be floating, got {t.dtype}")
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k, v must have one shape (B, H, N, D); got {tuple(q.shape)}, {tuple(k.shape)}, "
                         f"{tuple(v.shape)}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"q, k, v must have one dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    if k.device != q.device or v.device != q.device:
        raise ValueError(f"q, k, v must be on one device; got {q.device}, {k.device}, {v.device}")


def _bias_of(bias_spec, q: torch.Tensor) -> tuple[BiasSpec | None, torch.Tensor | None]:
    """(spec, None) for a compact bias, (None, dense) for an (H, N, N) tensor, checked against q (B, H, N, D)."""
    _, H, N, _ = q.shape
    if isinstance(bias_spec, torch.Tensor):
        dense = bias_spec
        if dense.shape != (H, N, N):
            raise ValueError(f"a dense bias must have shape (H, N, N) = {(H, N, N)}, got {tuple(dense.shape)}")
        if not dense.is_floating_point():
            raise ValueError(f"a dense bias must be floating, got {dense.dtype}")
        if dense.device != q.device:
            raise ValueError(f"the bias is on {dense.device}, q on {q.device}")
        return None, dense
    spec = _to_spec(bias_spec)
    if spec.num_heads != H:
        raise ValueError(f"the bias has {spec.num_heads} heads, q has H = {H}")
    if spec.num_tokens != N:
        raise ValueError(f"the bias is for window {spec.window} = {spec.num_tokens} tokens, q has N = {N} "
                         "(N must equal Mh*Mw)")
    if spec.kernel.device != q.device:
        raise ValueError(f"the bias table is on {spec.kernel.device}, q on {q.device}")
    return spec, None


def _mask_of(mask, q: torch.Tensor, needs_grad: bool) -> torch.Tensor | None:
    """The window mask checked against q (B, H, N, D): floating (nW, N, N), nW dividing B, same device, no NaN or
    +inf, a finite entry in every row, no gradient wanted. Value checks are skipped inside a torch.compile trace."""
    if mask is None:
        return None
    B, _, N, _ = q.shape
    if not isinstance(mask, torch.Tensor) or not mask.is_floating_point():
        raise ValueError(f"mask must be a floating torch tensor (nW, N, N), got "
                         f"{type(mask).__name__ if not isinstance(mask, torch.Tensor) else mask.dtype}")
    if mask.ndim != 3 or tuple(mask.shape[1:]) != (N, N) or mask.shape[0] < 1 or B % mask.shape[0]:
        raise ValueError(f"mask must have shape (nW, N, N) = (nW, {N}, {N}) with nW dividing the batch B = {B} "
                         f"(window b % nW for batch entry b, as timm lays out the windows), got {tuple(mask.shape)}")
    if mask.device != q.device:
        raise ValueError(f"the mask is on {mask.device}, q on {q.device}")
    if needs_grad and mask.requires_grad:
        raise ValueError("mask requires grad, but the window mask is a constant of the attention (no gradient is "
                         "computed for it); pass mask.detach()")
    if not torch.compiler.is_compiling():
        if bool(torch.isnan(mask).any()) or bool((mask == float("inf")).any()):
            raise ValueError("mask has NaN or +inf entries; use 0 (attend) and a large negative number or -inf")
        if bool(torch.isinf(mask).all(-1).any()):
            raise ValueError("mask has a row that is -inf everywhere: every query must attend to some key")
    return mask


def _scale_of(scale, head_dim: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(head_dim)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise ValueError(f"scale must be a finite float, got {scale!r}")
    return float(scale)


def attention_with_bias(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        bias_spec: BiasSpec | FreqRelPosBias | SwinRelPosBias | torch.Tensor, *, backend: str = "auto",
                        scale: float | None = None, mask: torch.Tensor | None = None) -> torch.Tensor:
    r"""Multi-head attention with an additive relative position bias (and Swin's shifted-window mask).

    .. math:: O_b = \mathrm{softmax}(\mathrm{scale}\, q_b k_b^\top + B + \mathrm{mask}_{b \bmod nW})\, v_b.

    Parameters
    ----------
    q, k, v : torch.Tensor, shape (B, H, N, D)
        One dtype and device. The Triton kernel takes float16, bfloat16 and float32.
    bias_spec : BiasSpec, FreqRelPosBias, SwinRelPosBias or torch.Tensor (H, N, N)
        The bias: a compact spec (modules are turned into one by :func:`bias_spec`; needs ``N = Mh*Mw`` and H
        heads) or a dense (H, N, N) tensor (reference and flex only).
    backend : {"auto", "reference", "triton", "flex"}
        See the module docstring.
    scale : float, optional
        Logit scale, default ``1/sqrt(D)``.
    mask : torch.Tensor (nW, N, N), optional
        Swin's additive shifted-window mask, window ``b % nW`` for batch entry ``b`` (nW divides B), broadcast
        over the heads (timm's layout, see the module docstring). Every backend takes it. A constant: no
        gradient.

    Returns
    -------
    torch.Tensor
        Shape (B, H, N, D), q's dtype. Differentiable in q, k, v and the bias table / dense bias.

    Raises
    ------
    ValueError
        Shapes that do not fit (N != Mh*Mw, H mismatch, a mask that is not (nW, N, N) with nW | B, ...), a mask
        with NaN / +inf or an all -inf row, a mask that requires grad, an unknown backend or one not usable here.

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" (NeurIPS 2026; see
    :mod:`fastnips.vision.freqbias`). Kernel design: Dao, *FlashAttention-2* (arXiv:2307.08691);
    FlexAttention: Dong et al. (arXiv:2412.05496).

    Examples
    --------
    >>> import torch
    >>> from fastnips.vision import FreqRelPosBias, attention_with_bias
    >>> q = k = v = torch.randn(2, 3, 49, 16)
    >>> attention_with_bias(q, k, v, FreqRelPosBias(num_heads=3, window=7)).shape
    torch.Size([2, 3, 49, 16])
    """
    _check_qkv(q, k, v)
    spec, dense = _bias_of(bias_spec, q)
    scale = _scale_of(scale, q.shape[-1])
    if not isinstance(backend, str):
        raise ValueError(f"backend must be a string, got {type(backend).__name__}")
    auto = (("triton", "reference") if spec is not None and q.device.type == "cuda" and q.dtype in _TRITON_DTYPES
            else ("reference",))
    if torch.compiler.is_compiling() and backend in ("auto", *ATTENTION_BACKENDS):
        # probes (cached, env reads) stay out of traced code; the eager calls before tracing ran them
        backend = auto[0] if backend == "auto" else backend
    needs_grad = torch.is_grad_enabled() and any(
        t.requires_grad for t in (q, k, v, dense if dense is not None else spec.kernel))
    mask = _mask_of(mask, q, torch.is_grad_enabled())
    if not (torch.compiler.is_compiling() and backend in ATTENTION_BACKENDS):
        backend = _backend.resolve(backend, op=_OP, supported=ATTENTION_BACKENDS, auto=auto,
                                   check=lambda name: _restriction(name, q.device, needs_grad))

    if backend == "reference":
        return _reference(q, k, v, dense if dense is not None else spec.dense(), scale, mask)
    if backend == "flex":
        return _flex(q, k, v, spec, dense, scale, mask)
    if spec is None:
        raise ValueError("backend 'triton' computes the bias from a compact table: pass a BiasSpec (or a "
                         "FreqRelPosBias / SwinRelPosBias), not a dense (H, N, N) tensor")
    if q.dtype not in _TRITON_DTYPES:
        raise ValueError(f"backend 'triton' takes float16, bfloat16 or float32, got {q.dtype}")
    return torch.ops.fastnips.attention_freqbias(q, k, v, spec.kernel, list(spec.window), list(spec.offset),
                                                 scale, mask)[0]
