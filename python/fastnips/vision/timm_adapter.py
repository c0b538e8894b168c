r"""Train the frequency-domain bias inside timm's Swin: a drop-in for timm's ``WindowAttention``.

Math
----
timm's Swin v1 ``WindowAttention`` computes, for the windows :math:`b` of a batch laid out as (B * nW, N, C)
(window index fastest) with Swin's shifted-window mask :math:`\mathrm{mask}_{b \bmod nW}` (nW, N, N),

.. math:: O_b = \mathrm{softmax}\big(\mathrm{scale}\cdot q_b k_b^\top + B + \mathrm{mask}_{b \bmod nW}\big)\, v_b,
          \qquad B_h[i, j] = T[\mathrm{index}[i, j], h],

with a learned table :math:`T` ((2Mh-1)(2Mw-1), H). :class:`FreqWindowAttention` keeps the same projections and
the same call ``attn(x, mask=mask)``, and takes :math:`B` from a :class:`~fastnips.vision.FreqRelPosBias`
(:math:`B_h[i, j] = k_h((p_i - p_j) \bmod \mathrm{grid})`, :math:`k_h = \mathrm{irfft2}(W_h)`), so the spectrum
is what the optimiser trains (autograd through ``irfft2`` and the gather). The attention itself is
:func:`~fastnips.vision.attention_with_bias` with the window mask (``backend="auto"``: the Triton kernel on CUDA,
which never materialises the (H, N, N) bias nor the (B, H, N, N) masked logits; SDPA otherwise).

:func:`use_freq_bias` swaps every Swin v1 ``WindowAttention`` of a timm model for one in place. With the default
``param="hermitian"`` on the alias-free grid the spectrum is imported losslessly from the module's table
(:meth:`~fastnips.vision.FreqRelPosBias.from_swin_table`), so the converted model computes the same function as
before (tested against timm's own forward, shifted windows included); other families start from their own
initialisation.

Choices. ``set_window_size`` (called by timm's ``set_input_size``) defaults to ``mode="timm"``: the bias is
exported as a Swin table, resized as timm resizes its table (:meth:`~fastnips.vision.SwinRelPosBias.resize`) and
imported back (``hermitian``), so a converted model changes resolution as the timm model would;
``mode="extend"`` keeps the kernel (:meth:`~fastnips.vision.FreqRelPosBias.transfer`). Attention dropout, which
the fused paths do not implement, runs the same math with dropout on the probabilities when training with
``attn_drop > 0``. timm's ``no_weight_decay()`` names the tables (``relative_position_bias_table``), not the
spectra: to keep Swin's recipe (no weight decay on the position bias), leave the ``freq_bias`` parameters out of
the decayed group yourself.

References
----------
"Relative positional bias parameterized in the frequency domain" (NeurIPS 2026; see
:mod:`fastnips.vision.freqbias`); Liu et al., *Swin Transformer: Hierarchical Vision Transformer using Shifted
Windows*, ICCV 2021 (arXiv:2103.14030); timm's ``WindowAttention`` (the layout and call this module follows).
timm is not imported here: the conversion reads the modules' attributes.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ._args import _pair
from .attention import ATTENTION_BACKENDS, attention_with_bias
from .freqbias import FreqRelPosBias
from .swin import RESIZE_MODES, SwinRelPosBias

__all__ = ["FreqWindowAttention", "use_freq_bias"]

_WINDOW_MODES = (*RESIZE_MODES, "extend")


def _check_backend(backend) -> str:
    if backend != "auto" and backend not in ATTENTION_BACKENDS:
        raise ValueError(f"backend must be 'auto' or one of {ATTENTION_BACKENDS}, got {backend!r}")
    return backend


class FreqWindowAttention(nn.Module):
    r"""timm's Swin ``WindowAttention`` with the relative position bias from a frequency spectrum.

    .. math:: O_b = \mathrm{softmax}\big(\mathrm{scale}\cdot q_b k_b^\top + B(W) + \mathrm{mask}_{b \bmod nW}\big)\,
              v_b, \qquad B(W)_h[i, j] = \mathrm{irfft2}(W_h)\big((p_i - p_j) \bmod \mathrm{grid}\big).

    Parameters
    ----------
    dim : int
        Channels C of the tokens.
    num_heads : int
        H.
    window_size : int or (Mh, Mw)
        The window; ``N = Mh * Mw`` tokens per window.
    head_dim : int, optional
        Channels per head (default ``dim // num_heads``), as timm.
    qkv_bias : bool
        Bias of the qkv projection, as timm.
    attn_drop, proj_drop : float
        Dropout on the attention probabilities (runs the unfused math when > 0 in training) and on the output.
    backend : {"auto", "reference", "triton", "flex"}
        Passed to :func:`~fastnips.vision.attention_with_bias`.
    **bias_kwargs
        Passed to :class:`~fastnips.vision.FreqRelPosBias` (``param``, ``grid``, ``band``, ``rank``, ``init_std``).

    Notes
    -----
    Shapes: ``forward(x (B*nW, N, C), mask (nW, N, N) or None)`` -> (B*nW, N, C); ``_get_rel_pos_bias()`` ->
    (1, H, N, N), as timm's. The bias module is ``freq_bias``.

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" (NeurIPS 2026); Liu et al., *Swin
    Transformer*, ICCV 2021 (arXiv:2103.14030); timm's ``WindowAttention``.

    Examples
    --------
    >>> import torch
    >>> attn = FreqWindowAttention(dim=32, num_heads=2, window_size=4)
    >>> attn(torch.randn(8, 16, 32), mask=torch.zeros(4, 16, 16)).shape
    torch.Size([8, 16, 32])
    """

    def __init__(self, dim: int, num_heads: int, window_size: int | tuple[int, int] = 7, *,
                 head_dim: int | None = None, qkv_bias: bool = True, attn_drop: float = 0.0, proj_drop: float = 0.0,
                 backend: str = "auto", **bias_kwargs: Any):
        super().__init__()
        self.freq_bias = FreqRelPosBias(num_heads, window_size, **bias_kwargs)
        self.dim, self.num_heads = int(dim), self.freq_bias.num_heads
        head_dim = head_dim or self.dim // self.num_heads
        if head_dim < 1:
            raise ValueError(f"head_dim must be >= 1 (dim {dim} // num_heads {num_heads} is 0); pass head_dim")
        self.scale = head_dim ** -0.5
        self.backend = _check_backend(backend)
        self.qkv = nn.Linear(self.dim, head_dim * self.num_heads * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(head_dim * self.num_heads, self.dim)
        self.proj_drop = nn.Dropout(proj_drop)

    @property
    def window_size(self) -> tuple[int, int]:
        """(Mh, Mw), as timm's attribute."""
        return self.freq_bias.window

    @property
    def window_area(self) -> int:
        """N = Mh * Mw."""
        return self.window_size[0] * self.window_size[1]

    @classmethod
    def from_timm(cls, attn: nn.Module, *, backend: str = "auto", **bias_kwargs: Any) -> FreqWindowAttention:
        """The same attention with the bias from a spectrum; shares ``attn``'s projection and dropout modules.

        ``param="hermitian"`` on the default grid (the default) imports ``attn.relative_position_bias_table``
        losslessly (same function); other ``bias_kwargs`` start from :class:`FreqRelPosBias`'s initialisation.

        Parameters
        ----------
        attn : timm ``WindowAttention``
            A Swin v1 window attention (``qkv``, ``proj``, ``relative_position_bias_table``, ``window_size``).
        backend : str
            As in the constructor.
        **bias_kwargs
            As in the constructor.

        Returns
        -------
        FreqWindowAttention
            On ``attn``'s device and dtype.
        """
        for name in ("qkv", "proj", "relative_position_bias_table", "window_size", "num_heads", "scale"):
            if not hasattr(attn, name):
                raise ValueError(f"from_timm needs a timm Swin v1 WindowAttention; {type(attn).__name__} has no "
                                 f"attribute {name!r}")
        (mh, mw), heads = tuple(attn.window_size), int(attn.num_heads)
        table = attn.relative_position_bias_table.detach()
        if tuple(table.shape) != ((2 * mh - 1) * (2 * mw - 1), heads):
            raise ValueError(f"relative_position_bias_table has shape {tuple(table.shape)}, expected "
                             f"{((2 * mh - 1) * (2 * mw - 1), heads)} for window {(mh, mw)} (extra tokens?)")
        new = cls(attn.qkv.in_features, heads, (mh, mw), head_dim=attn.qkv.out_features // (3 * heads),
                  backend=backend, **bias_kwargs)
        new.qkv, new.proj, new.scale = attn.qkv, attn.proj, float(attn.scale)
        new.attn_drop = getattr(attn, "attn_drop", new.attn_drop)
        new.proj_drop = getattr(attn, "proj_drop", new.proj_drop)
        if set(bias_kwargs) <= {"param"} and bias_kwargs.get("param", "hermitian") == "hermitian":
            new.freq_bias = FreqRelPosBias.from_swin_table(table, (mh, mw))
        return new.to(device=table.device, dtype=table.dtype)

    def _get_rel_pos_bias(self) -> torch.Tensor:
        """The (1, H, N, N) logit bias from the spectrum (differentiable), as timm's method."""
        return self.freq_bias().unsqueeze(0)

    def set_window_size(self, window_size: int | tuple[int, int], *, mode: str = "timm") -> None:
        """Move the bias to another window (timm's ``set_input_size`` calls this).

        Parameters
        ----------
        window_size : int or (M'h, M'w)
            The new window.
        mode : {"timm", "bicubic", "extend"}
            ``"timm"`` / ``"bicubic"``: the Swin table resized by :meth:`SwinRelPosBias.resize` in that mode and
            imported back as ``hermitian``; ``"extend"``: :meth:`FreqRelPosBias.transfer` (same kernel and grid;
            warns when the grid is smaller than 2M'-1).
        """
        if mode not in _WINDOW_MODES:
            raise ValueError(f"mode must be one of {_WINDOW_MODES}, got {mode!r}")
        old, window_size = self.freq_bias, _pair(window_size, "window_size")
        if window_size == old.window:
            return
        if mode == "extend":
            new = old.transfer(window_size, mode="extend")
        else:
            table = old.to_swin_table().detach()
            swin = SwinRelPosBias(old.num_heads, old.window, init_std=0.0).to(table)
            with torch.no_grad():
                swin.relative_position_bias_table.copy_(table)
            resized = swin.resize(window_size, mode=mode).relative_position_bias_table.detach()
            new = FreqRelPosBias.from_swin_table(resized, window_size)
        p = next(old.parameters())
        self.freq_bias = new.to(device=p.device, dtype=p.dtype).requires_grad_(p.requires_grad)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Window attention of ``x`` (B*nW, N, C) with the optional shifted-window ``mask`` (nW, N, N)."""
        if x.ndim != 3 or x.shape[1] != self.window_area or x.shape[2] != self.dim:
            raise ValueError(f"x must have shape (B*nW, N, C) = (B*nW, {self.window_area}, {self.dim}), "
                             f"got {tuple(x.shape)}")
        B_, N, _ = x.shape
        q, k, v = self.qkv(x).reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        if self.training and self.attn_drop.p > 0:  # dropout on the probabilities: the unfused math
            logits = (q @ k.transpose(-2, -1)) * self.scale + self._get_rel_pos_bias()
            if mask is not None:
                nw = mask.shape[0]
                logits = (logits.view(-1, nw, self.num_heads, N, N) + mask[None, :, None]).view_as(logits)
            out = self.attn_drop(F.softmax(logits, dim=-1)) @ v
        else:
            out = attention_with_bias(q, k, v, self.freq_bias, backend=self.backend, scale=self.scale,
                                      mask=None if mask is None else mask.to(q.dtype))
        return self.proj_drop(self.proj(out.transpose(1, 2).reshape(B_, N, -1)))


def use_freq_bias(model: nn.Module, *, backend: str = "auto", **bias_kwargs: Any) -> int:
    r"""Replace every timm Swin v1 ``WindowAttention`` in ``model`` by a :class:`FreqWindowAttention`, in place.

    With the default ``param="hermitian"`` the spectrum is imported losslessly from each table, so the model
    computes the same function; the tables' parameters leave the model and the spectra join it (build the
    optimiser afterwards).

    Parameters
    ----------
    model : torch.nn.Module
        A timm model (e.g. ``timm.models.swin_transformer.SwinTransformer``); matched by class name
        ``WindowAttention`` and a ((2Mh-1)(2Mw-1), H) ``relative_position_bias_table`` (BEiT-style tables with
        extra tokens and Swin v2's continuous bias are left alone).
    backend : str
        Attention backend of the new modules, see :func:`~fastnips.vision.attention_with_bias`.
    **bias_kwargs
        :class:`~fastnips.vision.FreqRelPosBias` options (``param``, ...).

    Returns
    -------
    int
        The number of modules replaced.

    Raises
    ------
    ValueError
        ``model`` is not a module, or it holds no Swin v1 window attention.

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" (NeurIPS 2026); Liu et al., *Swin
    Transformer*, ICCV 2021 (arXiv:2103.14030).

    Examples
    --------
    >>> import timm  # doctest: +SKIP
    >>> model = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False)  # doctest: +SKIP
    >>> use_freq_bias(model)  # doctest: +SKIP
    12
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    _check_backend(backend)
    targets = []
    for name, mod in model.named_modules():
        if type(mod).__name__ != "WindowAttention" or not hasattr(mod, "relative_position_bias_table"):
            continue
        (mh, mw), heads = tuple(mod.window_size), int(mod.num_heads)
        if tuple(mod.relative_position_bias_table.shape) == ((2 * mh - 1) * (2 * mw - 1), heads):
            targets.append(name)
    if not targets:
        raise ValueError(f"no timm Swin v1 WindowAttention found in {type(model).__name__}")
    for name in targets:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, FreqWindowAttention.from_timm(getattr(parent, attr), backend=backend, **bias_kwargs))
    return len(targets)
