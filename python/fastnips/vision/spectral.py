r"""The spectral branch of the DDR block: the GFNet global filter over the token grid.

.. math:: S(u) = \mathrm{irfft2}(\mathrm{rfft2}(u) \odot W),

a per-channel circular convolution of the :math:`h \times w` token grid with a learned filter whose
spectrum :math:`W` is stored as an rfft half-spectrum. :func:`spectral_mix_reference` computes the same map
with explicit DFT matrices, the oracle of the tests.

Paper: "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
(NeurIPS 2026); the filter is Rao et al., *Global Filter Networks for Image Classification*, NeurIPS 2021
(arXiv:2107.00645).
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn

from ._args import _check_tokens, _pair

__all__ = ["SpectralMixer", "spectral_mix_reference"]




class SpectralMixer(nn.Module):
    r"""GFNet global filter on an ``(h, w)`` token grid.

    .. math:: S(x) = \mathrm{irfft2}\big(\mathrm{rfft2}(x, \text{ortho}) \odot W,\ s=(h, w), \text{ortho}\big),

    applied per channel; equivalently the circular convolution :math:`x \circledast k` with
    :math:`k = \mathrm{irfft2}(W)` (see :func:`spectral_mix_reference`).

    Parameters
    ----------
    dim : int
        Channels C.
    grid : int or (int, int)
        Token grid (h, w); inputs have ``h*w`` tokens in row-major order.

    Attributes
    ----------
    complex_weight : Parameter, shape (h, w//2+1, C, 2)
        The filter :math:`W` stored as (real, imag), initialised ``randn * 0.02`` -- GFNet's name, layout
        and init, so GFNet ``GlobalFilter`` weights load as they are.

    Notes
    -----
    Shapes: ``forward(x)`` takes ``x`` of shape (B, h*w, C) and returns the same shape and dtype.
    Half-precision inputs are computed in float32 (CPU FFTs need it) and cast back.

    References
    ----------
    Rao et al., *Global Filter Networks for Image Classification*, NeurIPS 2021 (arXiv:2107.00645); the
    spectral branch of the DDR block of "Relative positional bias parameterized in the frequency domain" with
    Dual-Domain Residual blocks (NeurIPS 2026).

    Examples
    --------
    >>> import torch
    >>> SpectralMixer(dim=8, grid=(4, 4))(torch.randn(2, 16, 8)).shape
    torch.Size([2, 16, 8])
    """

    def __init__(self, dim: int, grid: int | tuple[int, int]):
        super().__init__()
        if not isinstance(dim, numbers.Integral) or dim <= 0:
            raise ValueError(f"SpectralMixer: dim must be a positive int, got {dim!r}")
        self.dim = int(dim)
        self.grid = _pair(grid, "grid")
        h, w = self.grid
        self.complex_weight = nn.Parameter(torch.randn(h, w // 2 + 1, self.dim, 2) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Mix tokens ``x`` of shape (B, h*w, C) over the grid; returns the same shape and dtype."""
        _check_tokens(x, self.grid, self.dim, "SpectralMixer")
        B, N, C = x.shape
        h, w = self.grid
        dtype = x.dtype
        work = dtype if dtype in (torch.float32, torch.float64) else torch.float32
        z = torch.fft.rfft2(x.reshape(B, h, w, C).to(work), dim=(1, 2), norm="ortho")
        z = z * torch.view_as_complex(self.complex_weight.to(work).contiguous())
        z = torch.fft.irfft2(z, s=(h, w), dim=(1, 2), norm="ortho")
        return z.reshape(B, N, C).to(dtype)

    def extra_repr(self) -> str:
        """The hyperparameters, for ``repr``."""
        return f"dim={self.dim}, grid={self.grid}"


def spectral_mix_reference(x: torch.Tensor, complex_weight: torch.Tensor, grid: int | tuple[int, int]) -> torch.Tensor:
    r"""Readable oracle for :class:`SpectralMixer`: an explicit circular convolution, no ``torch.fft``.

    ``irfft2`` reads its half spectrum as Hermitian: the columns that are their own mirror (``kw = 0`` and,
    for even ``w``, ``kw = w/2``) are replaced by their Hermitian part :math:`(W[a] + \overline{W[-a]})/2`
    (their imaginary parts along ``kh`` would otherwise be dropped), the other columns are mirrored by
    :math:`W[a, w-b] = \overline{W[-a, b]}`. The spatial kernel is the inverse DFT of that full spectrum,
    written as a double sum,

    .. math:: k[m, n, c] = \frac{1}{hw}\sum_{a, b} \hat W[a, b, c]\, e^{2\pi i (am/h + bn/w)},

    and :math:`S(x)[i, j, c] = \sum_{m, n} k[m, n, c]\, x[(i-m) \bmod h, (j-n) \bmod w, c]` (the ortho
    normalisations of the forward and inverse transform cancel). O(h²w²C) per image: small sizes only.

    Parameters
    ----------
    x : Tensor, shape (B, h*w, C)
        Tokens in row-major order on the (h, w) grid.
    complex_weight : Tensor, shape (h, w//2+1, C, 2)
        The filter :math:`W` as (real, imag), as :attr:`SpectralMixer.complex_weight`.
    grid : int or (int, int)
        Token grid (h, w).

    Returns
    -------
    Tensor
        Shape (B, h*w, C), dtype of ``x``.

    References
    ----------
    Rao et al., *Global Filter Networks for Image Classification*, NeurIPS 2021 (arXiv:2107.00645).

    Examples
    --------
    >>> import torch
    >>> mixer = SpectralMixer(dim=4, grid=3)
    >>> x = torch.randn(2, 9, 4)
    >>> torch.allclose(spectral_mix_reference(x, mixer.complex_weight, 3), mixer(x), atol=1e-6)
    True
    """
    h, w = _pair(grid, "grid")
    B, N, C = x.shape
    if N != h * w or tuple(complex_weight.shape) != (h, w // 2 + 1, C, 2):
        raise ValueError("spectral_mix_reference: shapes do not match the grid")
    cdt = torch.complex128 if x.dtype == torch.float64 else torch.complex64
    half = torch.complex(complex_weight[..., 0], complex_weight[..., 1]).to(cdt)  # (h, w//2+1, C)
    neg = (-torch.arange(h)) % h
    full = torch.zeros(h, w, C, dtype=cdt)
    for b in range(w):
        if b <= w // 2:
            col = half[:, b]
            if b == 0 or 2 * b == w:  # self-mirrored column: keep its Hermitian part
                col = (col + half[neg, b].conj()) / 2
        else:
            col = half[neg, w - b].conj()
        full[:, b] = col
    m = torch.arange(h, dtype=torch.float64)
    n = torch.arange(w, dtype=torch.float64)
    eh = torch.exp(2j * math.pi * torch.outer(m, m) / h).to(cdt)  # eh[a, m] = e^{2πi a m / h}
    ew = torch.exp(2j * math.pi * torch.outer(n, n) / w).to(cdt)
    kernel = torch.einsum("abc,am,bn->mnc", full, eh, ew).real / (h * w)  # (h, w, C), real
    img = x.reshape(B, h, w, C)
    out = torch.zeros_like(img)
    for dm in range(h):
        for dn in range(w):
            out = out + kernel[dm, dn].to(x.dtype) * torch.roll(img, shifts=(dm, dn), dims=(1, 2))
    return out.reshape(B, N, C)
