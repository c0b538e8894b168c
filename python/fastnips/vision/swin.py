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

__all__ = ["SwinRelPosBias", "relative_position_index"]


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

    def resize(self, window: int | tuple[int, int]) -> SwinRelPosBias:
        """timm-style transfer: bicubic interpolation of the table to another window.

        Bicubic ``F.interpolate(align_corners=False)`` of the table on the (2Mh-1)x(2Mw-1) offset grid to
        (2M'h-1)x(2M'w-1). Does not keep the original samples (contrast with
        :meth:`FreqRelPosBias.transfer` ``mode="refine"``).

        Parameters
        ----------
        window : int or (M'h, M'w)
            The new window.

        Returns
        -------
        SwinRelPosBias
            A new bias for ``window`` on the same device and dtype (no autograd link).

        Examples
        --------
        >>> SwinRelPosBias(num_heads=2, window=7).resize(14).relative_position_bias_table.shape
        torch.Size([729, 2])
        """
        window = _pair(window, "window")
        (mh, mw), H = self.window, self.num_heads
        t = self.relative_position_bias_table.detach()
        img = t.t().reshape(1, H, 2 * mh - 1, 2 * mw - 1)
        out = F.interpolate(img, size=(2 * window[0] - 1, 2 * window[1] - 1), mode="bicubic", align_corners=False)
        new = SwinRelPosBias(H, window, init_std=0.0).to(device=t.device, dtype=t.dtype)
        with torch.no_grad():
            new.relative_position_bias_table.copy_(out.reshape(H, -1).t())
        return new
