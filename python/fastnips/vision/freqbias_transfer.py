r"""The frequency bias and the outside world: Swin table export / import and exact resolution transfer.

These are methods of :class:`~fastnips.vision.FreqRelPosBias` (mixed in from :class:`SwinTableAndTransfer`);
they only use its public views (``kernel()``, ``factors()``, ``load_kernel_``, ``load_factors_``).

Swin table (:meth:`~SwinTableAndTransfer.to_swin_table`, :meth:`~SwinTableAndTransfer.from_swin_table`)
--------------------------------------------------------------------------------------------------------
.. math:: \mathrm{table}\big[(d_h+M_h-1)(2M_w-1) + (d_w+M_w-1),\ h\big] = k_h(d_h \bmod N_h,\ d_w \bmod N_w),
          \qquad |d_h| \le M_h-1,\ |d_w| \le M_w-1.

Gathered with :func:`~fastnips.vision.relative_position_index` it gives the bias ``B`` exactly on every
grid; on the alias-free grid ``(2Mh-1, 2Mw-1)`` the map kernel -> table is a bijection, so the import is
lossless as well.

Transfer (:meth:`~SwinTableAndTransfer.transfer`)
-------------------------------------------------
``mode="extend"``
    Same token spacing, another window :math:`M'`: same kernel, same grid, evaluated at the new offsets.
    Exact (no offset aliases onto another) iff :math:`N \ge 2M'-1`; otherwise it is the periodic extension
    of the kernel and a ``UserWarning`` is issued.
``mode="refine"``, ``factor=r``
    Same field of view, an r-times finer token grid: grid ``rN``, window ``rM`` (default). The centred
    spectrum is zero-padded from :math:`N` to :math:`rN` (DC at index :math:`rN//2`, i.e. offset
    :math:`rN//2 - N//2`, **not** :math:`(rN-N)//2`, which breaks even r), inverse-transformed and
    multiplied by :math:`r_h r_w`; the real part is kept, which splits an even grid's Nyquist bin evenly
    between :math:`\pm N/2`. The result is the unique band-limited interpolant: the original samples are kept
    exactly, ``k'[r d] = k[d]``. Offsets beyond the learned range (at most :math:`(r-1)/r` of a coarse step on
    the alias-free grid) are periodic band-limited extrapolation. The parameter family is preserved exactly
    (band: same band; separable: factor-wise refinement, same rank).

Contrast: timm's table resizes (:meth:`~fastnips.vision.SwinRelPosBias.resize`: BEiT's geometric grid with
linear interpolation, timm's default, or plain bicubic with ``align_corners=False``) do not keep the original
samples.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import torch

from ._args import _grid_for, _is_int, _pair

__all__ = ["MODES", "SwinTableAndTransfer"]

MODES = ("extend", "refine")


def _refine_kernel(k: torch.Tensor, factor: tuple[int, ...]) -> torch.Tensor:
    """Band-limited refinement of a real periodic kernel over its last ``len(factor)`` dims.

    Zero-pads the centred spectrum from N to rN with DC at index rN//2 (offset rN//2 - N//2), inverse FFT,
    times prod(r), real part. Keeps ``k'[..., r*d] == k[..., d]``.
    """
    d = len(factor)
    dims = tuple(range(k.ndim - d, k.ndim))
    shape = k.shape[-d:]
    spec = torch.fft.fftshift(torch.fft.fftn(k, dim=dims), dim=dims)
    new = tuple(r * n for r, n in zip(factor, shape))
    big = spec.new_zeros(k.shape[:-d] + new)
    sl = [slice(None)] * (k.ndim - d)
    for n, nn_ in zip(shape, new):
        o = nn_ // 2 - n // 2
        sl.append(slice(o, o + n))
    big[tuple(sl)] = spec
    out = torch.fft.ifftn(torch.fft.ifftshift(big, dim=dims), dim=dims).real
    return out * float(np.prod(factor))


def _factor_pair(factor) -> tuple[int, int]:
    """(rh, rw) from an int >= 1 or a pair of them; ValueError otherwise."""
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer, Sequence)):
        raise ValueError(f"factor must be an int >= 1 or a pair of them, got {factor!r}")
    r = (factor, factor) if isinstance(factor, (int, np.integer)) else tuple(factor)
    if len(r) != 2 or not all(_is_int(v) for v in r):
        raise ValueError(f"factor must be an int >= 1 or a pair of them, got {factor!r}")
    if r[0] < 1 or r[1] < 1:
        raise ValueError(f"factor must be >= 1, got {factor!r}")
    return int(r[0]), int(r[1])


class SwinTableAndTransfer:
    """Swin table export / import and resolution transfer of :class:`~fastnips.vision.FreqRelPosBias`.

    A mixin: the host class provides ``num_heads``, ``window``, ``grid``, ``param``, ``band``, ``rank``,
    ``offset_index``, ``kernel()``, ``factors()``, ``load_kernel_`` and ``load_factors_``.
    """

    def to_swin_table(self) -> torch.Tensor:
        """((2Mh-1)(2Mw-1), H) table in timm ``RelPosBias.relative_position_bias_table`` layout:
        ``table[(dh+Mh-1)(2Mw-1)+(dw+Mw-1), h] = k_h(dh mod Nh, dw mod Nw)``. Gathering it with
        :func:`relative_position_index` gives ``forward()`` exactly (on every grid).

        Examples
        --------
        >>> from fastnips.vision import FreqRelPosBias
        >>> FreqRelPosBias(num_heads=3, window=7).to_swin_table().shape
        torch.Size([169, 3])
        """
        (mh, mw), (nh, nw) = self.window, self.grid
        dh = torch.arange(-(mh - 1), mh, device=self.offset_index.device) % nh
        dw = torch.arange(-(mw - 1), mw, device=self.offset_index.device) % nw
        idx = (dh[:, None] * nw + dw[None, :]).reshape(-1)
        return self.kernel().flatten(1)[:, idx].t().contiguous()

    @classmethod
    def from_swin_table(cls, table: torch.Tensor, window):
        """Lossless import of a Swin/timm table ((2Mh-1)(2Mw-1), H) into ``param="hermitian"`` on the alias-free
        grid: ``to_swin_table()`` of the result returns ``table``.

        Examples
        --------
        >>> import torch
        >>> from fastnips.vision import FreqRelPosBias
        >>> table = torch.randn(169, 3, dtype=torch.float64)
        >>> torch.allclose(FreqRelPosBias.from_swin_table(table, 7).to_swin_table(), table)
        True
        """
        mh, mw = _pair(window, "window")
        table = torch.as_tensor(table)
        if table.ndim != 2 or table.shape[0] != (2 * mh - 1) * (2 * mw - 1):
            raise ValueError(f"table must be ((2Mh-1)(2Mw-1), H) = ({(2 * mh - 1) * (2 * mw - 1)}, H), "
                             f"got {tuple(table.shape)}")
        if not table.is_floating_point():
            raise ValueError(f"table must be a floating tensor, got {table.dtype}")
        new = cls(table.shape[1], (mh, mw), init_std=0.0).to(device=table.device, dtype=table.dtype)
        grid = table.t().reshape(table.shape[1], 2 * mh - 1, 2 * mw - 1)
        # table row (dh+Mh-1) holds offset dh; kernel index dh mod Nh: roll by -(Mh-1)
        kernel = torch.roll(grid, shifts=(-(mh - 1), -(mw - 1)), dims=(1, 2))
        return new.load_kernel_(kernel)

    def _like(self, window, grid):
        """A zero bias of the same family (param, band, rank), device and dtype for another window / grid."""
        p = next(self.parameters())
        opts = {"param": self.param}
        if self.param == "band":
            opts["band"] = self.band
        if self.param == "separable":
            opts["rank"] = self.rank
        new = type(self)(self.num_heads, window, grid=grid, init_std=0.0, **opts)
        return new.to(device=p.device, dtype=p.dtype)

    def transfer(self, window=None, *, mode: str = "extend", factor=2, grid=None):
        """A new bias for another resolution; parameters are copies (no autograd link).

        ``mode="extend"``: same spacing, ``window`` (required), same grid and kernel. Exact iff
        ``grid >= 2*window-1``; otherwise warns (periodic extension). ``grid`` must be None.

        ``mode="refine"``: same field of view, ``factor`` (int or (rh, rw), >= 1) times finer: grid ``r*N``, window
        ``r*M`` unless given. Spectral zero-padding; keeps ``k'[r*d] == k[d]`` exactly. Same family.

        Examples
        --------
        >>> from fastnips.vision import FreqRelPosBias
        >>> FreqRelPosBias(num_heads=2, window=7).transfer(mode="refine", factor=2).window
        (14, 14)
        """
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; available: {', '.join(MODES)}")
        if grid is not None:
            raise ValueError("transfer keeps the grid (extend) or multiplies it by factor (refine); grid must be None")
        if mode == "extend":
            return self._extend(window)
        r = _factor_pair(factor)
        new_grid = (r[0] * self.grid[0], r[1] * self.grid[1])
        new_window = (r[0] * self.window[0], r[1] * self.window[1]) if window is None else _pair(window, "window")
        _grid_for(new_window, new_grid)
        new = self._like(new_window, new_grid)
        with torch.no_grad():
            if self.param == "separable":
                u, v = self.factors()
                new.load_factors_(_refine_kernel(u, (r[0],)), _refine_kernel(v, (r[1],)))
            else:
                new.load_kernel_(_refine_kernel(self.kernel(), r))
        return new

    def _extend(self, window):
        if window is None:
            raise ValueError("mode='extend' needs window=")
        window = _pair(window, "window")
        _grid_for(window, self.grid)  # window <= grid, else ValueError
        if self.grid[0] < 2 * window[0] - 1 or self.grid[1] < 2 * window[1] - 1:
            warnings.warn(
                f"extend to window {window} on grid {self.grid} < 2*window-1: offsets beyond the grid wrap "
                "around (periodic extension of the kernel), not an exact continuation", UserWarning, stacklevel=3)
        new = self._like(window, self.grid)
        new.load_state_dict(self.state_dict())
        return new
