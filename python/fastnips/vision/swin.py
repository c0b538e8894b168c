r"""The Swin v1 / timm relative position bias: a learned table gathered by token offset.

Math
----
For a window of :math:`M_h\times M_w` tokens at :math:`p_i = (i // M_w, i \% M_w)` (row-major) and a table
:math:`T` of shape :math:`((2M_h-1)(2M_w-1), H)`,

.. math:: B_h[i, j] = T\big[(d_h + M_h - 1)(2M_w - 1) + (d_w + M_w - 1),\ h\big], \qquad (d_h, d_w) = p_i - p_j.

This is the baseline the frequency-domain bias (:class:`~fastnips.vision.FreqRelPosBias`) is compared with
and converted to / from (:meth:`~fastnips.vision.FreqRelPosBias.to_swin_table`,
:meth:`~fastnips.vision.FreqRelPosBias.from_swin_table`).

Reference: Liu et al., *Swin Transformer: Hierarchical Vision Transformer using Shifted Windows*, ICCV 2021
(arXiv:2103.14030); timm's ``RelPosBias`` and ``resize_rel_pos_bias_table``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._args import _pair, _positive_int

__all__ = ["RESIZE_MODES", "SwinRelPosBias", "relative_position_index"]

RESIZE_MODES = ("timm", "bicubic")


def _geometric_offsets(src: int, dst: int) -> list[float]:
    """BEiT / timm source positions of ``src`` table offsets resized to ``dst``: 0, +-1, +-(1+q), ... with the
    ratio q found by bisection on [1.01, 1.5] (to 1e-6, the last midpoint) so that the outermost position
    sum_{k < src//2} q^k is about dst//2. The arithmetic follows timm's so that q agrees to the last bit."""
    n, lo, hi, q = src // 2, 1.01, 1.5, 1.01
    while hi - lo > 1e-6:
        q = (lo + hi) / 2.0
        if (1.0 - q**n) / (1.0 - q) > dst // 2:
            hi = q
        else:
            lo = q
    pos, cur = [], 1.0
    for i in range(n):
        pos.append(cur)
        cur += q ** (i + 1)
    return [-p for p in reversed(pos)] + [0.0] + pos


def _linear_weights(src_pos: list[float], dst: int) -> torch.Tensor:
    """(dst, len(src_pos)) float64 weights of piecewise-linear interpolation from the increasing positions
    ``src_pos`` to the integer offsets -(dst//2) .. dst//2, constant (edge value) outside [src_pos[0], src_pos[-1]]."""
    p = torch.tensor(src_pos, dtype=torch.float64)
    x = torch.arange(dst, dtype=torch.float64) - dst // 2
    w = torch.zeros(dst, len(src_pos), dtype=torch.float64)
    xc = x.clamp(p[0], p[-1])
    right = torch.searchsorted(p, xc).clamp(1, max(len(src_pos) - 1, 1))
    if len(src_pos) == 1:
        return w.add_(1.0)
    left = right - 1
    frac = (xc - p[left]) / (p[right] - p[left])
    rows = torch.arange(dst)
    w[rows, left] = 1.0 - frac
    w[rows, right] += frac
    return w


def relative_position_index(window: int | tuple[int, int]) -> torch.Tensor:
    r"""Swin's relative position index, from its formula.

    .. math:: \mathrm{index}[i, j] = (d_h + M_h - 1)(2M_w - 1) + (d_w + M_w - 1), \qquad
              (d_h, d_w) = p_i - p_j,\ p_i = (i // M_w,\ i \% M_w).

    Parameters
    ----------
    window : int or (Mh, Mw)
        Token window; ``N = Mh*Mw`` tokens in row-major order.

    Returns
    -------
    torch.Tensor
        LongTensor of shape (Mh*Mw, Mh*Mw), values in ``[0, (2Mh-1)(2Mw-1))``.

    References
    ----------
    Liu et al., *Swin Transformer: Hierarchical Vision Transformer using Shifted Windows*, ICCV 2021
    (arXiv:2103.14030).

    Examples
    --------
    >>> relative_position_index(2)
    tensor([[4, 3, 1, 0],
            [5, 4, 2, 1],
            [7, 6, 4, 3],
            [8, 7, 5, 4]])
    """
    mh, mw = _pair(window, "window")
    ph, pw = torch.meshgrid(torch.arange(mh), torch.arange(mw), indexing="ij")
    ph, pw = ph.reshape(-1), pw.reshape(-1)
    dh = ph[:, None] - ph[None, :]
    dw = pw[:, None] - pw[None, :]
    return ((dh + mh - 1) * (2 * mw - 1) + (dw + mw - 1)).contiguous()


class SwinRelPosBias(nn.Module):
    r"""Swin v1 / timm ``RelPosBias``: a learned table gathered by token offset into the logit bias.

    The table :math:`T` of shape ((2Mh-1)(2Mw-1), H) is gathered by :func:`relative_position_index` into the
    (H, N, N) additive logit bias; ``trunc_normal_(std=.02)`` init.

    .. math:: B_h[i, j] = T\big[\mathrm{index}[i, j],\ h\big].

    Parameters
    ----------
    num_heads : int
        H, one table column per head.
    window : int or (Mh, Mw)
        Window the bias is for; ``N = Mh*Mw`` tokens in row-major order.
    init_std : float
        Std of the truncated-normal table init (timm's 0.02); ``0`` gives a zero table.

    Notes
    -----
    Shapes: ``relative_position_bias_table`` ((2Mh-1)(2Mw-1), H); ``forward()`` -> (H, N, N).

    References
    ----------
    Liu et al., *Swin Transformer: Hierarchical Vision Transformer using Shifted Windows*, ICCV 2021
    (arXiv:2103.14030); timm's ``RelPosBias``. Compared with the frequency-domain bias of "Relative positional
    bias parameterized in the frequency domain" (NeurIPS 2026), :class:`~fastnips.vision.FreqRelPosBias`.

    Examples
    --------
    >>> SwinRelPosBias(num_heads=3, window=7)().shape
    torch.Size([3, 49, 49])
    """

    def __init__(self, num_heads: int, window: int | tuple[int, int], *, init_std: float = 0.02):
        super().__init__()
        self.num_heads = _positive_int(num_heads, "num_heads")
        self.window = _pair(window, "window")
        mh, mw = self.window
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * mh - 1) * (2 * mw - 1), self.num_heads))
        self.register_buffer("relative_position_index", relative_position_index(self.window), persistent=False)
        if init_std > 0:
            nn.init.trunc_normal_(self.relative_position_bias_table, std=init_std)

    def forward(self) -> torch.Tensor:
        """The additive attention-logit bias.

        Returns
        -------
        torch.Tensor
            Shape (H, Mh*Mw, Mh*Mw).
        """
        n = self.window[0] * self.window[1]
        b = self.relative_position_bias_table[self.relative_position_index.reshape(-1)]
        return b.reshape(n, n, self.num_heads).permute(2, 0, 1).contiguous()

    def extra_repr(self) -> str:
        """The hyperparameters, for ``repr``."""
        return f"num_heads={self.num_heads}, window={self.window}"

    def resize(self, window: int | tuple[int, int], *, mode: str = "timm") -> SwinRelPosBias:
        r"""Transfer the table to another window the way timm does (``mode="timm"``) or by plain bicubic.

        ``"timm"`` (default): timm's ``resize_rel_pos_bias_table`` (used by ``WindowAttention.set_window_size``
        and by the Swin checkpoint filter; from BEiT's fine-tuning code). Per axis, the :math:`S = 2M-1` source
        offsets are placed on a geometric grid :math:`0, \pm 1, \pm(1+q), \dots, \pm\sum_{k<S//2} q^k`, with
        :math:`q \in [1.01, 1.5]` the bisection root of :math:`\sum_{k<S//2} q^k = (2M'-1)//2`, so the centre keeps
        the token spacing and the far offsets stretch to the new range; the new integer offsets
        :math:`-(M'-1), \dots, M'-1` are read off by separable linear interpolation on that grid, clamped to the
        edge values outside it. ``"bicubic"``: ``F.interpolate(mode="bicubic", align_corners=False)`` of the table
        on the (2Mh-1)x(2Mw-1) offset grid to (2M'h-1)x(2M'w-1) (timm's ``resize_rel_pos_bias_table_simple``).
        Neither keeps the original samples (contrast :meth:`FreqRelPosBias.transfer` ``mode="refine"``).

        Parameters
        ----------
        window : int or (M'h, M'w)
            The new window.
        mode : {"timm", "bicubic"}
            The interpolation, see above. An equal window returns a copy in both modes (as timm does).

        Returns
        -------
        SwinRelPosBias
            A new bias for ``window`` on the same device and dtype (no autograd link).

        Raises
        ------
        ValueError
            An unknown ``mode`` or a bad ``window``.

        References
        ----------
        Bao et al., *BEiT: BERT Pre-Training of Image Transformers*, ICLR 2022 (arXiv:2106.08254), the
        geometric-grid resize of its fine-tuning code; timm's ``resize_rel_pos_bias_table``.

        Examples
        --------
        >>> SwinRelPosBias(num_heads=2, window=7).resize(14).relative_position_bias_table.shape
        torch.Size([729, 2])
        """
        window = _pair(window, "window")
        if mode not in RESIZE_MODES:
            raise ValueError(f"mode must be one of {RESIZE_MODES}, got {mode!r}")
        (mh, mw), H = self.window, self.num_heads
        t = self.relative_position_bias_table.detach()
        img = t.t().reshape(H, 2 * mh - 1, 2 * mw - 1)
        size = (2 * window[0] - 1, 2 * window[1] - 1)
        if tuple(img.shape[1:]) == size:
            out = img.clone()
        elif mode == "bicubic":
            out = F.interpolate(img[None], size=size, mode="bicubic", align_corners=False)[0]
        else:
            wy = _linear_weights(_geometric_offsets(img.shape[1], size[0]), size[0])
            wx = _linear_weights(_geometric_offsets(img.shape[2], size[1]), size[1])
            out = torch.einsum("ya,hab,xb->hyx", wy, img.double().cpu(), wx).to(device=t.device, dtype=t.dtype)
        new = SwinRelPosBias(H, window, init_std=0.0).to(device=t.device, dtype=t.dtype)
        with torch.no_grad():
            new.relative_position_bias_table.copy_(out.reshape(H, -1).t())
        return new
