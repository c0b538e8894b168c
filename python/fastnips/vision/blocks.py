r"""Dual-Domain Residual (DDR) blocks: the spectral mixer, the gated attention and the block.

A DDR block mixes tokens in two domains at once and learns, per layer, how much of each it uses:

.. math::

    u &= \mathrm{LN}(x), \qquad
    y = x + \sigma(a_s)\, S(u) + \sigma(a_a)\, A(u), \\
    \mathrm{out} &= y + \mathrm{MLP}(\mathrm{LN}(y)),

* :math:`S` is the GFNet global filter (:class:`SpectralMixer`): on the :math:`h\times w` token grid,
  :math:`S(u) = \mathrm{irfft2}(\mathrm{rfft2}(u)\odot W)`, a per-channel circular convolution;
* :math:`A` is multi-head attention with an additive relative-position bias :math:`B` (the frequency-domain
  bias :class:`~fastnips.vision.FreqRelPosBias`, the Swin table, any module returning
  ``(H, N, N)``, or none) and an elementwise output gate (:class:`GatedAttention`):
  :math:`A(u) = W_o[\mathrm{SDPA}(q, k, v, B) \odot \sigma(W_g u)]`;
* :math:`a_s, a_a` are two learned scalar gate logits per block, initialised at 0
  (:math:`\sigma = 0.5`); :func:`~fastnips.vision.gate_report` reads them after training (SpectFormer
  schedules spectral blocks early and attention late by hand; the DDR gates are meant to learn such a schedule).

No paper text was available: the abstract says only that "a spectral mixer and a gated attention head act
as parallel residuals within each block" and that "learned per-layer gates" emerge; the block above is our
specification of that sentence. Choices made where it leaves room:

* LayerNorm ``eps=1e-6`` and GELU MLP (the timm / GFNet conventions); linear layers of
  :class:`~fastnips.vision.DDRViT` are initialised xavier-uniform with zero biases by default (the original
  ViT / timm ``weight_init="jax"`` choice; ``weight_init="trunc_normal"`` gives timm's std-0.02 default, which
  trains far slower at dim 32; measurements in docs/notes/vision.md), the filter ``randn * 0.02`` (GFNet).
* The gate logits are 0-dim parameters, so timm's optimizer factory (which skips ``ndim <= 1``) and
  :meth:`~fastnips.vision.DDRViT.no_weight_decay` keep them out of weight decay.
* ``branch="spectral"`` / ``"attention"`` builds one branch only, with its gate fixed at 1: that is exactly
  a GFNet-style block (:math:`y = x + S(\mathrm{LN}\,x)`, then the MLP residual) or a plain
  (windowed) attention+bias block; the ablation baselines. In ``branch="both"``, :meth:`DDRBlock.set_gates`
  can force a gate to exactly 0 or 1 (logit :math:`\mp\infty`).
* **Grid larger than the bias window.** The spectral mixer is always global over the whole token grid. The
  attention is Swin-style *windowed* attention over non-overlapping ``window`` tiles (no shift); the grid must
  be a multiple of the window, else a ``ValueError``. With ``window=None`` (the default) the window is the
  whole grid, which is the case in the shipped configs (MNIST 28/4 -> 7x7 tokens = one window; digits 8/1 or
  8/2).

The original GFNet ``Block`` has a single residual (``x + MLP(LN(filter(LN x)))``); the DDR specification and
``branch="spectral"`` here use the two-residual metaformer form instead.

Paper: "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
(NeurIPS 2026). Prior work: Rao et al., *Global Filter Networks for Image Classification*, NeurIPS 2021
(arXiv:2107.00645); Patro et al., *SpectFormer* (arXiv:2304.06446).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ._args import _check_tokens, _pair
from .spectral import SpectralMixer, spectral_mix_reference

__all__ = [
    "DDRBlock",
    "GatedAttention",
    "SpectralMixer",
    "spectral_mix_reference",
]

_BRANCHES = ("both", "spectral", "attention")


# ---------------------------------------------------------------------------------------------------
# attention branch (the spectral branch is fastnips.vision.spectral)


def _make_bias(bias, num_heads: int, window: tuple[int, int], bias_kwargs=None):
    """Resolve ``bias`` ("freq" | "swin" | None | "none" | module) into a module or None; ``bias_kwargs`` go to
    the constructor of a named kind (``FreqRelPosBias(num_heads, window, **bias_kwargs)``)."""
    kw = dict(bias_kwargs or {})
    if kw and not isinstance(bias, str):
        raise ValueError(f"bias_kwargs {kw} need a named bias kind ('freq' or 'swin'), got bias={bias!r}")
    if bias is None or (isinstance(bias, str) and bias == "none"):
        if kw:
            raise ValueError(f"bias_kwargs {kw} given with bias=None")
        return None
    if isinstance(bias, str):
        if bias == "freq":
            from .freqbias import FreqRelPosBias

            return FreqRelPosBias(num_heads, window, **kw)
        if bias == "swin":
            from .swin import SwinRelPosBias

            return SwinRelPosBias(num_heads, window, **kw)
        raise ValueError(f"unknown bias kind {bias!r}; choose one of 'freq', 'swin', None, or pass a module")
    if not isinstance(bias, nn.Module):
        raise ValueError(
            f"bias must be 'freq', 'swin', None or an nn.Module whose forward() returns (H, N, N); "
            f"got {type(bias).__name__}"
        )
    return bias


def _check_dim_heads(owner: str, dim, num_heads) -> None:
    if not isinstance(dim, numbers.Integral) or dim <= 0:
        raise ValueError(f"{owner}: dim must be a positive int, got {dim!r}")
    if not isinstance(num_heads, numbers.Integral) or num_heads <= 0:
        raise ValueError(f"{owner}: num_heads must be a positive int, got {num_heads!r}")
    if dim % num_heads:
        raise ValueError(f"{owner}: dim={dim} is not divisible by num_heads={num_heads}")


class GatedAttention(nn.Module):
    r"""Multi-head (windowed) attention with an additive bias and an elementwise output gate.

    .. math:: A(u) = W_o\big[\mathrm{SDPA}(q, k, v, \text{attn\_mask}=B) \odot \sigma(W_g u)\big],
              \qquad q, k, v = W_{qkv} u,

    with ``torch.nn.functional.scaled_dot_product_attention`` (scale :math:`1/\sqrt{d_h}`) and
    :math:`B` of shape ``(H, N, N)`` broadcast over the batch (and windows).

    Parameters
    ----------
    dim : int
        Channels C; must be divisible by ``num_heads``.
    num_heads : int
        Heads H (the abstract's "gated attention head" may mean one head: the tiny configs use 1).
    window : int or (int, int)
        Attention window (Mh, Mw), N = Mh*Mw tokens.
    bias : nn.Module or None
        Anything whose ``forward()`` (no arguments) returns the ``(H, N, N)`` additive logits bias, e.g.
        :class:`~fastnips.vision.FreqRelPosBias` or :class:`~fastnips.vision.SwinRelPosBias`.
        Its shape is checked once here and at every call.
    bias_kwargs : dict, optional
        Keyword arguments for the named bias kind, e.g. ``{"param": "separable", "rank": 2}`` for
        ``FreqRelPosBias`` or ``{"init_std": 0.0}``; an error with ``bias=None`` or a module.

    Notes
    -----
    ``forward(x, grid=None)`` takes ``x`` of shape (B, L, C) and returns the same shape. With ``grid=None``,
    L must equal N (one window). With ``grid=(h, w)`` (L = h*w, row-major) the grid is cut into
    non-overlapping windows (h and w must be multiples of Mh and Mw), attention runs inside each window with
    the same bias, and the windows are put back (Swin's window partition, without the shift).

    References
    ----------
    The attention branch of the DDR block of "Relative positional bias parameterized in the frequency domain"
    with Dual-Domain Residual blocks (NeurIPS 2026). Window partition: Liu et al., *Swin Transformer*,
    ICCV 2021 (arXiv:2103.14030).

    Examples
    --------
    >>> import torch
    >>> attn = GatedAttention(dim=16, num_heads=2, window=4, bias="freq")
    >>> attn(torch.randn(3, 64, 16), grid=(8, 8)).shape  # four 4x4 windows
    torch.Size([3, 64, 16])
    """

    def __init__(self, dim: int, num_heads: int, window: int | tuple[int, int], bias: str | nn.Module | None = None,
                 bias_kwargs: dict[str, Any] | None = None):
        super().__init__()
        _check_dim_heads("GatedAttention", dim, num_heads)
        self.dim, self.num_heads = int(dim), int(num_heads)
        self.head_dim = self.dim // self.num_heads
        self.window = _pair(window, "window")
        self.bias = _make_bias(bias, self.num_heads, self.window, bias_kwargs)
        if self.bias is not None:
            with torch.no_grad():
                self._checked_bias()
        self.qkv = nn.Linear(self.dim, 3 * self.dim)
        self.gate = nn.Linear(self.dim, self.dim)
        self.proj = nn.Linear(self.dim, self.dim)

    def _checked_bias(self) -> torch.Tensor:
        b = self.bias()
        n = self.window[0] * self.window[1]
        want = (self.num_heads, n, n)
        if not isinstance(b, torch.Tensor) or tuple(b.shape) != want:
            got = tuple(b.shape) if isinstance(b, torch.Tensor) else type(b).__name__
            raise ValueError(
                f"GatedAttention: the bias module returned {got}, expected (num_heads, N, N) = {want} "
                f"for window {self.window}"
            )
        return b

    def _partition(self, x: torch.Tensor, grid):
        B, L, C = x.shape
        Mh, Mw = self.window
        if grid is None:
            if L != Mh * Mw:
                raise ValueError(
                    f"GatedAttention: {L} tokens but the window {Mh}x{Mw} has {Mh * Mw}; pass grid=(h, w) "
                    "for windowed attention over a larger grid"
                )
            return x, None
        h, w = _pair(grid, "grid")
        if L != h * w:
            raise ValueError(f"GatedAttention: {L} tokens do not match the grid {h}x{w} = {h * w} tokens")
        if (h, w) == (Mh, Mw):
            return x, None
        if h % Mh or w % Mw:
            raise ValueError(
                f"GatedAttention: grid {h}x{w} is not a multiple of the window {Mh}x{Mw} "
                "(windowed attention needs whole, non-overlapping windows)"
            )
        xw = x.reshape(B, h // Mh, Mh, w // Mw, Mw, C).permute(0, 1, 3, 2, 4, 5)
        return xw.reshape(-1, Mh * Mw, C), (B, h, w)

    def _unpartition(self, xw: torch.Tensor, info):
        if info is None:
            return xw
        B, h, w = info
        Mh, Mw = self.window
        C = xw.shape[-1]
        x = xw.reshape(B, h // Mh, w // Mw, Mh, Mw, C).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(B, h * w, C)

    def forward(self, x: torch.Tensor, grid: int | tuple[int, int] | None = None) -> torch.Tensor:
        """Gated (windowed) attention of a token sequence.

        Parameters
        ----------
        x : Tensor, shape (B, L, C)
            Tokens; with ``grid=None``, L must equal N = Mh*Mw (one window).
        grid : int or (h, w), optional
            Token grid of ``x`` (L = h*w, row-major), cut into non-overlapping Mh x Mw windows.

        Returns
        -------
        Tensor
            Shape (B, L, C).
        """
        if x.dim() != 3 or x.shape[-1] != self.dim:
            raise ValueError(f"GatedAttention: expected (B, L, {self.dim}) tokens, got {tuple(x.shape)}")
        xw, info = self._partition(x, grid)
        Bw, N, C = xw.shape
        q, k, v = self.qkv(xw).reshape(Bw, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        mask = None if self.bias is None else self._checked_bias().to(dtype=q.dtype, device=q.device)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (Bw, H, N, dh)
        o = o.transpose(1, 2).reshape(Bw, N, C)
        o = self.proj(o * torch.sigmoid(self.gate(xw)))
        return self._unpartition(o, info)

    def extra_repr(self) -> str:
        """The hyperparameters, for ``repr``."""
        return f"dim={self.dim}, num_heads={self.num_heads}, window={self.window}"


# ---------------------------------------------------------------------------------------------------
# the block


class _Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class DDRBlock(nn.Module):
    r"""Dual-Domain Residual block: a spectral and an attention branch on one residual, with learned gates.

    .. math::

        u = \mathrm{LN}(x),\quad y = x + \sigma(a_s)\,S(u) + \sigma(a_a)\,A(u),\quad
        \mathrm{out} = y + \mathrm{MLP}(\mathrm{LN}(y)).

    Parameters
    ----------
    dim : int
        Channels C.
    grid : int or (int, int)
        Token grid (h, w) of the inputs, shape (B, h*w, C).
    num_heads : int
        Attention heads; ``dim`` must be divisible by it.
    bias : {"freq", "swin", None} or nn.Module
        The attention's additive relative-position bias: ``"freq"`` builds
        ``FreqRelPosBias(num_heads, window)``, ``"swin"`` ``SwinRelPosBias(num_heads, window)``, a module is
        used as it is (its ``forward()`` must return ``(num_heads, N, N)``).
    bias_kwargs : dict, optional
        Keyword arguments for the named bias kind (see :class:`GatedAttention`).
    mlp_ratio : float
        MLP hidden width = ``int(dim * mlp_ratio)``.
    window : int or (int, int), optional
        Attention window; default the whole grid. A smaller window means Swin-style windowed attention
        (no shift) and the grid must be a multiple of it; the spectral mixer stays global.
    branch : {"both", "spectral", "attention"}
        ``"both"``: the DDR block with the two learned gates :math:`a_s, a_a` (0-dim parameters
        ``gate_spectral``, ``gate_attention``, initialised at 0). ``"spectral"`` / ``"attention"``: only that
        branch is built and its gate is fixed at 1, i.e. exactly a GFNet-style block or an attention+bias
        block (the ablation baselines).

    Attributes
    ----------
    spectral : SpectralMixer or None
        The spectral branch :math:`S` (None for ``branch="attention"``).
    attn : GatedAttention or None
        The attention branch :math:`A` (None for ``branch="spectral"``).

    Notes
    -----
    Shapes: ``forward(x)`` takes ``x`` of shape (B, h*w, C) and returns the same shape.

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
    (NeurIPS 2026); see :mod:`fastnips.vision.blocks` for our specification of
    the block. Prior work: Rao et al., *GFNet*, NeurIPS 2021; Patro et al., *SpectFormer* (arXiv:2304.06446).

    Examples
    --------
    >>> import torch
    >>> blk = DDRBlock(dim=16, grid=4, num_heads=2, bias="freq")
    >>> blk(torch.randn(3, 16, 16)).shape
    torch.Size([3, 16, 16])
    """

    def __init__(self, dim: int, grid: int | tuple[int, int], num_heads: int = 1, bias: str | nn.Module | None = "freq",
                 mlp_ratio: float = 4.0, *, window: int | tuple[int, int] | None = None, branch: str = "both",
                 bias_kwargs: dict[str, Any] | None = None):
        super().__init__()
        if branch not in _BRANCHES:
            raise ValueError(f"DDRBlock: unknown branch {branch!r}; choose one of {_BRANCHES}")
        _check_dim_heads("DDRBlock", dim, num_heads)
        if not (mlp_ratio > 0):
            raise ValueError(f"DDRBlock: mlp_ratio must be positive, got {mlp_ratio!r}")
        if isinstance(bias, str) and bias not in ("freq", "swin", "none"):
            raise ValueError(f"DDRBlock: unknown bias kind {bias!r}; choose one of 'freq', 'swin', None, or a module")
        self.dim = int(dim)
        self.grid = _pair(grid, "grid")
        self.window = self.grid if window is None else _pair(window, "window")
        h, w = self.grid
        if h % self.window[0] or w % self.window[1]:
            raise ValueError(
                f"DDRBlock: grid {h}x{w} is not a multiple of the attention window "
                f"{self.window[0]}x{self.window[1]}"
            )
        self.branch = branch
        self.norm1 = nn.LayerNorm(self.dim, eps=1e-6)
        self.spectral = SpectralMixer(self.dim, self.grid) if branch in ("both", "spectral") else None
        self.attn = (GatedAttention(self.dim, num_heads, self.window, bias=bias, bias_kwargs=bias_kwargs)
                     if branch in ("both", "attention") else None)
        if branch == "both":
            self.gate_spectral = nn.Parameter(torch.zeros(()))
            self.gate_attention = nn.Parameter(torch.zeros(()))
        self.norm2 = nn.LayerNorm(self.dim, eps=1e-6)
        self.mlp = _Mlp(self.dim, int(self.dim * mlp_ratio))

    def gates(self) -> tuple[torch.Tensor, torch.Tensor]:
        r"""The two gates :math:`(\sigma(a_s), \sigma(a_a))`.

        Returns
        -------
        tuple of Tensor
            Two 0-dim tensors (differentiable); (1, 0) or (0, 1) for a single-branch block.
        """
        if self.branch == "both":
            return torch.sigmoid(self.gate_spectral), torch.sigmoid(self.gate_attention)
        dev = self.norm1.weight.device
        one, zero = torch.ones((), device=dev), torch.zeros((), device=dev)
        return (one, zero) if self.branch == "spectral" else (zero, one)

    @torch.no_grad()
    def set_gates(self, spectral: float | None = None, attention: float | None = None) -> DDRBlock:
        r"""Set :math:`\sigma(a_s)` and/or :math:`\sigma(a_a)` to values in [0, 1]; only for ``branch="both"``.

        0 and 1 are exact (logits :math:`-\infty` / :math:`+\infty`), which gates a branch off or fully on.
        Meant for evaluation and the reduction tests: an infinite logit has zero gradient and decoupled weight
        decay turns it into NaN, so train single-branch ablations with ``branch="spectral"``/``"attention"``.

        Parameters
        ----------
        spectral : float, optional
            New value of :math:`\sigma(a_s)`; None leaves it.
        attention : float, optional
            New value of :math:`\sigma(a_a)`; None leaves it.

        Returns
        -------
        DDRBlock
            self.

        Examples
        --------
        >>> blk = DDRBlock(dim=8, grid=2).set_gates(spectral=1.0, attention=0.0)
        >>> [float(g.detach()) for g in blk.gates()]
        [1.0, 0.0]
        """
        if self.branch != "both":
            raise ValueError(f"DDRBlock.set_gates: the block has branch={self.branch!r}, no learned gates")
        for p, val in ((self.gate_spectral, spectral), (self.gate_attention, attention)):
            if val is None:
                continue
            val = float(val)
            if not 0.0 <= val <= 1.0:
                raise ValueError(f"DDRBlock.set_gates: a gate value must lie in [0, 1], got {val}")
            p.fill_(-math.inf if val == 0.0 else math.inf if val == 1.0 else math.log(val / (1.0 - val)))
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block on tokens ``x`` of shape (B, h*w, C); returns the same shape."""
        _check_tokens(x, self.grid, self.dim, "DDRBlock")
        u = self.norm1(x)
        if self.branch == "spectral":
            y = x + self.spectral(u)
        elif self.branch == "attention":
            y = x + self.attn(u, grid=self.grid)
        else:
            g_s, g_a = self.gates()
            y = x + g_s * self.spectral(u) + g_a * self.attn(u, grid=self.grid)
        return y + self.mlp(self.norm2(y))

    def extra_repr(self) -> str:
        """The hyperparameters, for ``repr``."""
        return f"dim={self.dim}, grid={self.grid}, window={self.window}, branch={self.branch!r}"
