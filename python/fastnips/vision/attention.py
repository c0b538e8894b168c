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

Backends (:func:`attention_with_bias`, ``backend=``)
----------------------------------------------------
``"reference"``
    Materialises the (H, N, N) bias and calls ``torch.nn.functional.scaled_dot_product_attention`` with it as
    ``attn_mask`` (which rules out SDPA's flash kernel). Autograd through torch. Takes a dense bias too.
``"triton"``
    :mod:`fastnips.kernels.freqbias`: FlashAttention-2 style forward with online softmax that gathers the bias
    tile from the compact table by the index arithmetic above (no (H, N, N) tensor). Registered as the torch
    custom op ``fastnips::attention_freqbias`` (fake implementation for ``torch.compile``; autograd formula
    registered). The backward is two Triton kernels as well (FlashAttention-2 style recomputation from the
    saved log-sum-exp): dq, dk, dv, and the table gradient scattered in-kernel at the forward's gather index,
    so neither direction materialises an (N, N) tensor. :func:`_grads_reference` is its torch oracle in the
    tests. CUDA, or CPU tensors under ``TRITON_INTERPRET=1`` (tests).
``"flex"``
    ``torch.nn.attention.flex_attention`` with a ``score_mod`` doing the same table lookup (compiled on CUDA,
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
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .. import _backend
from ._args import _pair
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


def _flat_index(window, grid, offset, device) -> torch.Tensor:
    (mh, mw), (gh, gw), (oh, ow) = window, grid, offset
    t = torch.arange(mh * mw, device=device)
    r, c = t // mw, t % mw
    dr = (r[:, None] - r[None, :] + oh) % gh  # torch %: floor modulo, non-negative
    dc = (c[:, None] - c[None, :] + ow) % gw
    return dr * gw + dc


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


# ------------------------------------------------------------------------------------------- references
def _reference(q, k, v, bias: torch.Tensor, scale: float) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype), scale=scale)


def _grads_reference(q, k, v, table, window, offset, scale, do):
    r"""dq, dk, dv, d(table) of the biased attention, recomputed with torch ops in float32 (materialising the
    (B, H, N, N) probabilities; the oracle of the Triton backward, and the table gradient is an ``index_add``
    of :math:`\sum_b dS_{bh}` over the table index)."""
    H, gh, gw = table.shape
    idx = _flat_index(window, (gh, gw), offset, q.device)
    bias = table.float().reshape(H, gh * gw)[:, idx]  # (H, N, N)
    qf, kf, vf, dof = (t.float() for t in (q, k, v, do))
    p = torch.softmax(torch.matmul(qf, kf.transpose(-1, -2)) * scale + bias, dim=-1)
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
    schema="(Tensor q, Tensor k, Tensor v, Tensor table, int[] window, int[] offset, float scale) -> (Tensor, Tensor)")
def _attention_freqbias(q, k, v, table, window, offset, scale):
    """(out, lse): the attention output and the float32 log-sum-exp of each logit row (B, H, N), which the
    backward needs; ``lse`` is not differentiable."""
    from ..kernels import freqbias as tk  # lazy: defining kernels reads TRITON_INTERPRET

    return tk.attention_freqbias_fwd(q, k, v, table, tuple(window), tuple(offset), scale)


@_attention_freqbias.register_fake
def _(q, k, v, table, window, offset, scale):
    B, H, N, _ = q.shape
    return (torch.empty(q.shape, dtype=q.dtype, device=q.device),
            torch.empty((B, H, N), dtype=torch.float32, device=q.device))


@torch.library.custom_op("fastnips::attention_freqbias_backward", mutates_args=(),
                         schema="(Tensor q, Tensor k, Tensor v, Tensor table, Tensor out, Tensor lse, Tensor dout, "
                                "int[] window, int[] offset, float scale) -> (Tensor, Tensor, Tensor, Tensor)")
def _attention_freqbias_backward(q, k, v, table, out, lse, dout, window, offset, scale):
    from ..kernels import freqbias as tk

    return tk.attention_freqbias_bwd(q, k, v, table, out, lse, dout, tuple(window), tuple(offset), scale)


@_attention_freqbias_backward.register_fake
def _(q, k, v, table, out, lse, dout, window, offset, scale):
    return (torch.empty(q.shape, dtype=q.dtype, device=q.device), torch.empty(k.shape, dtype=k.dtype, device=k.device),
            torch.empty(v.shape, dtype=v.dtype, device=v.device),
            torch.empty(table.shape, dtype=table.dtype, device=table.device))


def _setup_context(ctx, inputs, output):
    q, k, v, table, window, offset, scale = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, table, out, lse)
    ctx.window, ctx.offset, ctx.scale = list(window), list(offset), float(scale)
    ctx.mark_non_differentiable(lse)


def _backward(ctx, do, _dlse):
    q, k, v, table, out, lse = ctx.saved_tensors
    dq, dk, dv, dtab = torch.ops.fastnips.attention_freqbias_backward(
        q, k, v, table, out, lse, do.contiguous(), ctx.window, ctx.offset, ctx.scale)
    return dq, dk, dv, dtab, None, None, None


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


def _flex_score_mod(spec: BiasSpec | None, dense: torch.Tensor | None):
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


def _flex(q, k, v, spec, dense, scale):
    flex = _flex_attention
    mod = _flex_score_mod(spec, dense if dense is None else dense.to(q.dtype))
    if torch.compiler.is_compiling():  # inside the caller's torch.compile: dynamo captures flex itself
        return flex(q, k, v, score_mod=mod, scale=scale)
    if q.device.type == "cuda":
        return _flex_compiled()(q, k, v, score_mod=mod, scale=scale)
    with warnings.catch_warnings():  # eager on CPU: "called without torch.compile ... unfused"
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        return flex(q, k, v, score_mod=mod, scale=scale)


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


def _scale_of(scale, head_dim: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(head_dim)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise ValueError(f"scale must be a finite float, got {scale!r}")
    return float(scale)


def attention_with_bias(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        bias_spec: BiasSpec | FreqRelPosBias | SwinRelPosBias | torch.Tensor, *, backend: str = "auto",
                        scale: float | None = None) -> torch.Tensor:
    r"""Multi-head attention with an additive relative position bias.

    .. math:: O = \mathrm{softmax}(\mathrm{scale}\, q k^\top + B)\, v.

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

    Returns
    -------
    torch.Tensor
        Shape (B, H, N, D), q's dtype. Differentiable in q, k, v and the bias table / dense bias.

    Raises
    ------
    ValueError
        Shapes that do not fit (N != Mh*Mw, H mismatch, ...), an unknown backend or one not usable here.

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
    else:
        needs_grad = torch.is_grad_enabled() and any(
            t.requires_grad for t in (q, k, v, dense if dense is not None else spec.kernel))
        backend = _backend.resolve(backend, op=_OP, supported=ATTENTION_BACKENDS, auto=auto,
                                   check=lambda name: _restriction(name, q.device, needs_grad))

    if backend == "reference":
        return _reference(q, k, v, dense if dense is not None else spec.dense(), scale)
    if backend == "flex":
        return _flex(q, k, v, spec, dense, scale)
    if spec is None:
        raise ValueError("backend 'triton' computes the bias from a compact table: pass a BiasSpec (or a "
                         "FreqRelPosBias / SwinRelPosBias), not a dense (H, N, N) tensor")
    if q.dtype not in _TRITON_DTYPES:
        raise ValueError(f"backend 'triton' takes float16, bfloat16 or float32, got {q.dtype}")
    return torch.ops.fastnips.attention_freqbias(q, k, v, spec.kernel, list(spec.window), list(spec.offset),
                                                 scale)[0]
