r"""Frequency-domain relative position bias: the parameter families and the module.

Math
----
Per head :math:`h` a real spectrum :math:`W_h` on an :math:`N_h\times N_w` frequency grid (rfft layout,
``(N_h, N_w//2+1)``, Hermitian) defines the real periodic spatial kernel

.. math:: k_h = \mathrm{irfft2}(W_h, s=(N_h, N_w)),

and the additive attention-logit bias of a window of :math:`M_h\times M_w` tokens at positions
:math:`p_i = (i // M_w, i \% M_w)` (row-major, as Swin) is

.. math:: B_h[i, j] = k_h\big((p_i - p_j) \bmod (N_h, N_w)\big).

It is translation-equivariant (Toeplitz-block-Toeplitz) by construction.

* **Alias-free grid** (default) ``grid = (2M_h-1, 2M_w-1)``: odd, so no Nyquist bin, and every offset
  :math:`|d| \le M-1` has its own kernel sample. The map kernel -> Swin table
  ``table[(dh+Mh-1)(2Mw-1) + (dw+Mw-1)] = k(dh mod Nh, dw mod Nw)`` is then a bijection, and
  :meth:`FreqRelPosBias.to_swin_table` gathered with :func:`relative_position_index` reproduces ``B`` exactly
  (it does so on any grid; on the alias-free grid nothing is lost either way, see
  :meth:`FreqRelPosBias.from_swin_table`).
* **Circular grid** ``grid = window``: ``B`` is block-circulant (BCCB), ``B @ v = irfft2(rfft2(v) * rfft2(k))``
  -- the diagonalisation it shares with a GFNet global filter.

Parameter families (``param=``; counts per head, :func:`count_bias_params`)
------------------------------------------------------------------------------
``"hermitian"`` (default)
    The exact real degrees of freedom of a real kernel on the grid: :math:`N_h N_w` reals, no redundant
    storage (DC and Nyquist bins store only a real part; of each conjugate pair in the self-conjugate rfft
    columns only one is stored). The reals are scaled so the map parameters -> kernel is **orthogonal**
    (Parseval), so ``trunc_normal(std=.02)`` on them gives a kernel distributed like timm's table init.
    169 at M = 7 on the alias-free grid (= Swin, lossless), 49 on the circular 7x7 grid.
``"band"``, ``band=(kh, kw)``
    Band-limited (low-pass) spectrum: only frequencies with centred :math:`|f_h| \le k_h`,
    :math:`|f_w| \le k_w`, stored as above: :math:`\min(2k_h+1, N_h)\cdot\min(2k_w+1, N_w)` reals. Default
    ``band = (Mh//2, Mw//2)``: 49 at M = 7 (3.45x fewer than Swin). A symmetric band on an odd grid always
    has an odd count, so **no band gives 52** at M = 7.
``"separable"``, ``rank=R`` (default 2)
    Separable (low-rank) spectrum :math:`W = \sum_{r<R} a_r \otimes b_r` with 1-D Hermitian spectra
    :math:`a_r` (length :math:`N_h`) and :math:`b_r` (length :math:`N_w`), i.e. the kernel
    :math:`k = \sum_r u_r v_r^\top` with :math:`u_r = \mathrm{irfft}(a_r)`, :math:`v_r = \mathrm{irfft}(b_r)`:
    :math:`R (N_h + N_w)` reals. **At M = 7 on the 13x13 grid, rank 2 gives 2·(13+13) = 52, i.e.
    169/52 = 3.25x**, the paper's count (its exact parameterisation is unknown; this is our choice of a
    52-parameter frequency-domain family that matches it, not a claim that it is the paper's). The stored
    count overstates the manifold dimension by one scale per rank (:math:`R(N_h+N_w-R)` DOF). Factors are
    initialised with std :math:`(\sigma/\sqrt R)^{1/2}` so the kernel has std :math:`\sigma` = ``init_std``
    but the bilinear form does not start at its saddle 0.

None of the low-parameter families can represent every Swin table (a 52-dimensional family cannot cover
the 169-dimensional space of tables, so no 52-parameter family is a lossless reparameterisation);
``"hermitian"`` on the alias-free grid is the lossless one.
A constant (DC) offset is softmax-invariant, so one of the stored reals of every family is inert for
attention; we keep it for an exact, simple correspondence with the Swin table.

Swin table export / import and the exact transfer to another resolution (``extend``, spectral ``refine``)
are documented in :mod:`fastnips.vision.freqbias_transfer`; the Swin table bias itself is
:class:`~fastnips.vision.SwinRelPosBias` (:mod:`fastnips.vision.swin`).

Paper: "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
(NeurIPS 2026; full text not available, the abstract fixes the 3.25x parameter ratio against Swin and exact grid
transfer). Prior work: Swin v1 / timm ``RelPosBias``; GFNet ``GlobalFilter`` (Rao et al., NeurIPS 2021).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._compat import moved
from ._args import _grid_for, _is_int, _pair, _positive_int
from .freqbias_transfer import SwinTableAndTransfer

__all__ = [
    "PARAMS",
    "FreqRelPosBias",
    "count_bias_params",
    "periodic_offset_index",
]

PARAMS = ("hermitian", "band", "separable")


# ----------------------------------------------------------------------------------------------- helpers
def _check_param(param: str) -> None:
    if param not in PARAMS:
        raise ValueError(f"unknown param {param!r}; available: {', '.join(PARAMS)}")


def _band_for(window, grid, band) -> tuple[int, int]:
    if band is None:
        band = (window[0] // 2, window[1] // 2)
    if _is_int(band):
        band = (int(band), int(band))
    if (not isinstance(band, Sequence) or len(band) != 2
            or not all(_is_int(v) for v in band)):
        raise ValueError(f"band must be an int or a pair of ints, got {band!r}")
    band = (int(band[0]), int(band[1]))
    for k, n, ax in zip(band, grid, "hw"):
        if k < 0 or k > n // 2:
            raise ValueError(f"band k{ax}={k} must lie in [0, {n // 2}] (Nyquist of grid {n})")
    return band


def periodic_offset_index(window: int | tuple[int, int], grid: int | tuple[int, int]) -> torch.Tensor:
    r"""Flat kernel index of every token pair of a window, for a kernel of period ``grid``.

    .. math:: \mathrm{index}[i, j] = \big((d_h \bmod N_h)\, N_w + (d_w \bmod N_w)\big),
              \qquad (d_h, d_w) = p_i - p_j,\ p_i = (i // M_w,\ i \% M_w).

    ``kernel.flatten(1)[:, periodic_offset_index(window, grid)]`` is the bias ``B`` of :class:`FreqRelPosBias`.

    Parameters
    ----------
    window : int or (Mh, Mw)
        Token window; ``N = Mh*Mw`` tokens in row-major order.
    grid : int or (Nh, Nw)
        Period of the kernel.

    Returns
    -------
    torch.Tensor
        LongTensor of shape (N, N), values in ``[0, Nh*Nw)``.

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
    (NeurIPS 2026).

    Examples
    --------
    >>> periodic_offset_index(2, 3)
    tensor([[0, 2, 6, 8],
            [1, 0, 7, 6],
            [3, 5, 0, 2],
            [4, 3, 1, 0]])
    """
    mh, mw = _pair(window, "window")
    nh, nw = _pair(grid, "grid")
    ph, pw = torch.meshgrid(torch.arange(mh), torch.arange(mw), indexing="ij")
    ph, pw = ph.reshape(-1), pw.reshape(-1)
    dh = (ph[:, None] - ph[None, :]) % nh
    dw = (pw[:, None] - pw[None, :]) % nw
    return (dh * nw + dw).contiguous()


def _hermitian_layout(shape: tuple[int, ...], keep: np.ndarray | None = None):
    """Index maps that build a Hermitian rfft-layout spectrum from unconstrained reals.

    ``shape`` is the full real grid (N1, ..., Nd); the rfft layout is (N1, ..., Nd//2+1). For each layout bin,
    ``re_idx``/``im_idx`` index a parameter vector padded with one trailing zero, and ``re_scale``/``im_scale``
    carry the conjugation sign and the Parseval weight that makes params -> irfftn(spectrum) orthogonal
    (backward norm: self-conjugate bins ``sqrt(prod N)``, paired bins ``sqrt(prod N / 2)``).
    ``keep`` (full-grid boolean, closed under negation) restricts to a band. Returns
    (re_idx, im_idx, re_scale, im_scale, count).
    """
    shape = tuple(shape)
    layout = (*shape[:-1], shape[-1] // 2 + 1)
    total = float(np.prod(shape))
    re_idx = np.full(layout, -1, dtype=np.int64)
    im_idx = np.full(layout, -1, dtype=np.int64)
    re_scale = np.zeros(layout)
    im_scale = np.zeros(layout)
    count = 0
    n = np.array(shape)
    for f in np.ndindex(*layout):
        if keep is not None and not keep[f]:
            continue
        g = tuple(int(v) for v in (-np.array(f)) % n)
        if g == f:  # self-conjugate: real only
            re_idx[f], re_scale[f] = count, math.sqrt(total)
            count += 1
        elif g[-1] <= shape[-1] // 2 and g < f:  # partner in the layout, stored there
            continue
        else:
            re_idx[f], im_idx[f] = count, count + 1
            re_scale[f] = im_scale[f] = math.sqrt(total / 2)
            count += 2
            if g[-1] <= shape[-1] // 2:  # partner in the layout: conjugate
                re_idx[g], im_idx[g] = count - 2, count - 1
                re_scale[g], im_scale[g] = math.sqrt(total / 2), -math.sqrt(total / 2)
    re_idx[re_idx < 0] = count
    im_idx[im_idx < 0] = count
    return re_idx, im_idx, re_scale, im_scale, count


def _band_mask(grid: tuple[int, int], band: tuple[int, int]) -> np.ndarray:
    fh = np.fft.fftfreq(grid[0], 1.0 / grid[0])
    fw = np.fft.fftfreq(grid[1], 1.0 / grid[1])
    # fftfreq puts an even grid's Nyquist at -N/2; |.| is what matters
    return (np.abs(fh)[:, None] <= band[0]) & (np.abs(fw)[None, :] <= band[1])


def count_bias_params(kind: str, window: int | tuple[int, int], heads: int, **kw: Any) -> int:
    r"""Number of learnable reals of a relative position bias.

    Per head, for a window :math:`M_h\times M_w` and a kernel grid :math:`N_h\times N_w`:

    .. math::

        \text{swin}: (2M_h-1)(2M_w-1), \qquad
        \text{hermitian}: N_h N_w, \qquad
        \text{band}: \min(2k_h+1, N_h)\,\min(2k_w+1, N_w), \qquad
        \text{separable}: R\,(N_h + N_w).

    At M = 7: 169 per head for Swin, 52 for the rank-2 separable family. Equals the ``numel`` of the
    module's parameters.

    Parameters
    ----------
    kind : {"swin", "freq"}
        ``"swin"``: the Swin table (:class:`~fastnips.vision.SwinRelPosBias`), takes no options.
        ``"freq"``: :class:`FreqRelPosBias`.
    window : int or (Mh, Mw)
        Token window.
    heads : int
        Number of attention heads (the count is per head times ``heads``).
    **kw
        ``"freq"`` only: ``grid=None, param="hermitian", band=None, rank=2``, as in :class:`FreqRelPosBias`.

    Returns
    -------
    int
        Total number of learnable reals over all heads.

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
    (NeurIPS 2026; the 3.25x ratio 169/52 against Swin). Liu et al., *Swin Transformer*, ICCV 2021.

    Examples
    --------
    >>> count_bias_params("swin", 7, heads=1), count_bias_params("freq", 7, heads=1, param="separable")
    (169, 52)
    """
    window = _pair(window, "window")
    heads = _positive_int(heads, "heads")
    if kind == "swin":
        if kw:
            raise ValueError(f"count_bias_params('swin') takes no options, got {sorted(kw)}")
        return (2 * window[0] - 1) * (2 * window[1] - 1) * heads
    if kind != "freq":
        raise ValueError(f"unknown kind {kind!r}; available: freq, swin")
    unknown = set(kw) - {"grid", "param", "band", "rank"}
    if unknown:
        raise ValueError(f"unknown options {sorted(unknown)} for count_bias_params('freq')")
    param = kw.get("param", "hermitian")
    _check_param(param)
    grid = _grid_for(window, kw.get("grid"))
    if param == "hermitian":
        per = grid[0] * grid[1]
    elif param == "band":
        band = _band_for(window, grid, kw.get("band"))
        per = min(2 * band[0] + 1, grid[0]) * min(2 * band[1] + 1, grid[1])
    else:
        per = _positive_int(kw.get("rank", 2), "rank") * (grid[0] + grid[1])
    return per * heads



# ---------------------------------------------------------------------------------------------- modules
class FreqRelPosBias(SwinTableAndTransfer, nn.Module):
    r"""Frequency-domain relative position bias: a per-head real spectrum defines a periodic kernel.

    .. math:: k_h = \mathrm{irfft2}(W_h, s=\mathrm{grid}), \qquad
              B_h[i, j] = k_h\big((p_i - p_j) \bmod \mathrm{grid}\big).

    Swin table export / import and resolution transfer (:meth:`to_swin_table`, :meth:`from_swin_table`,
    :meth:`transfer`) come from :class:`~fastnips.vision.freqbias_transfer.SwinTableAndTransfer`.

    Parameters
    ----------
    num_heads : int
        H, number of attention heads (one kernel per head).
    window : int or (Mh, Mw)
        Window (token grid) the bias is for; ``N = Mh*Mw`` tokens in row-major order.
    grid : int or (Nh, Nw), optional
        Period of the kernel. Default ``(2Mh-1, 2Mw-1)`` (odd, alias-free, bijective with the Swin table);
        ``grid=window`` gives the circular (BCCB) variant. Must be >= window.
    param : {"hermitian", "band", "separable"}
        Parameter family, see the module docstring (counts: ``Nh*Nw``; ``(2kh+1)(2kw+1)``; ``rank*(Nh+Nw)``).
    band : int or (kh, kw), optional
        Band for ``param="band"`` (default ``(Mh//2, Mw//2)``); each ``k <= N//2``.
    rank : int
        Rank for ``param="separable"`` (default 2: 52 per head at M = 7).
    init_std : float
        Std of the initial kernel entries (0.02, as timm's ``trunc_normal_`` on the Swin table), so an untrained
        bias is ~0. ``0`` gives an exactly zero bias (for ``separable``, a zero ``v`` factor).

    Notes
    -----
    Shapes: ``forward()`` -> (H, N, N); ``kernel()`` -> (H, Nh, Nw); ``spectrum()`` -> complex
    (H, Nh, Nw//2+1); ``to_swin_table()`` -> ((2Mh-1)(2Mw-1), H).

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
    (NeurIPS 2026). Prior work: Swin v1 / timm ``RelPosBias``; GFNet ``GlobalFilter`` (Rao et al.,
    NeurIPS 2021).

    Examples
    --------
    >>> bias = FreqRelPosBias(num_heads=3, window=7, param="separable", rank=2)
    >>> bias().shape, sum(p.numel() for p in bias.parameters()) // 3
    (torch.Size([3, 49, 49]), 52)
    """

    def __init__(self, num_heads: int, window: int | tuple[int, int], *, grid: int | tuple[int, int] | None = None,
                 param: str = "hermitian", band: int | tuple[int, int] | None = None, rank: int = 2,
                 init_std: float = 0.02):
        super().__init__()
        self.num_heads = _positive_int(num_heads, "num_heads")
        self.window = _pair(window, "window")
        self.grid = _grid_for(self.window, grid)
        _check_param(param)
        self.param = param
        if band is not None and param != "band":
            raise ValueError(f"band is only used with param='band', got param={param!r}")
        if param != "separable" and rank != 2:
            raise ValueError(f"rank is only used with param='separable', got param={param!r}")
        if not (isinstance(init_std, (int, float)) and math.isfinite(init_std) and init_std >= 0):
            raise ValueError(f"init_std must be a finite number >= 0, got {init_std!r}")
        self.band = _band_for(self.window, self.grid, band) if param == "band" else None
        self.rank = _positive_int(rank, "rank") if param == "separable" else None
        H, (nh, nw) = self.num_heads, self.grid
        if param == "separable":
            for ax, n in (("h", nh), ("w", nw)):
                ri, ii, rs, is_, cnt = _hermitian_layout((n,))
                self._register_layout(ax, ri, ii, rs, is_)
                assert cnt == n
            self.weight_h = nn.Parameter(torch.empty(H, self.rank, nh))
            self.weight_w = nn.Parameter(torch.empty(H, self.rank, nw))
        else:
            keep = _band_mask(self.grid, self.band) if param == "band" else None
            ri, ii, rs, is_, cnt = _hermitian_layout(self.grid, keep)
            self._register_layout("", ri, ii, rs, is_)
            self.weight = nn.Parameter(torch.empty(H, cnt))
        self.register_buffer("offset_index", periodic_offset_index(self.window, self.grid), persistent=False)
        self.reset_parameters(init_std)

    def _register_layout(self, ax, ri, ii, rs, is_):
        # scales are kept as int8 codes (0 unused, +-1 self-conjugate, +-2 paired) and rebuilt in the parameter
        # dtype, so .float()/.double() never round them
        total = float(np.prod(self.grid)) if ax == "" else float(self.grid[0 if ax == "h" else 1])

        def code(x):
            mag = np.where(np.isclose(np.abs(x), math.sqrt(total)), 1, 2)
            return torch.as_tensor(np.sign(x).astype(np.int8) * mag.astype(np.int8))

        self.register_buffer(f"_re_idx{ax}", torch.as_tensor(ri), persistent=False)
        self.register_buffer(f"_im_idx{ax}", torch.as_tensor(ii), persistent=False)
        self.register_buffer(f"_re_code{ax}", code(rs), persistent=False)
        self.register_buffer(f"_im_code{ax}", code(is_), persistent=False)
        self._total = getattr(self, "_total", {})
        self._total[ax] = total

    def _scales(self, ax: str, dtype) -> tuple[torch.Tensor, torch.Tensor]:
        t = self._total[ax]
        out = []
        for c in (getattr(self, f"_re_code{ax}"), getattr(self, f"_im_code{ax}")):
            a = c.abs().to(dtype)
            out.append(c.sign().to(dtype) * (math.sqrt(t) * (2 - a) + math.sqrt(t / 2) * (a - 1)))
        return out[0], out[1]

    @torch.no_grad()
    def reset_parameters(self, init_std: float = 0.02) -> None:
        """Kernel entries with std ``init_std`` (hermitian/band: stored reals ~ truncated normal at +-2 std, mapped
        orthogonally; timm's ``trunc_normal_(std=.02)`` on its table truncates at +-2 absolute, i.e. not at all)."""
        nh, nw = self.grid
        if self.param == "separable":
            if init_std == 0:
                self.weight_h.normal_(std=1.0)  # v = 0 exactly, u random: gradients flow to v
                self.weight_w.zero_()
                return
            s = math.sqrt(init_std / math.sqrt(self.rank))
            nn.init.trunc_normal_(self.weight_h, std=s, a=-2 * s, b=2 * s)
            nn.init.trunc_normal_(self.weight_w, std=s, a=-2 * s, b=2 * s)
            return
        # orthogonal map: kernel variance per entry = std^2 * count / (Nh Nw)
        s = init_std * math.sqrt(nh * nw / self.weight.shape[1])
        if s == 0:
            self.weight.zero_()
        else:
            nn.init.trunc_normal_(self.weight, std=s, a=-2 * s, b=2 * s)

    # -- the three views of one kernel
    def _spec(self, w: torch.Tensor, ax: str = "") -> torch.Tensor:
        """Hermitian rfft-layout spectrum from the stored reals ``w`` (last dim) of layout ``ax``."""
        rs, is_ = self._scales(ax, w.dtype)
        wp = F.pad(w, (0, 1))
        ri, ii = getattr(self, f"_re_idx{ax}"), getattr(self, f"_im_idx{ax}")
        return torch.complex(wp[..., ri] * rs, wp[..., ii] * is_)

    def spectrum(self) -> torch.Tensor:
        r"""The rfft2 spectrum :math:`W_h` (backward norm): ``kernel() == irfft2(spectrum(), s=grid)``.

        Returns
        -------
        torch.Tensor
            Complex, shape (H, Nh, Nw//2+1).
        """
        if self.param == "separable":
            return torch.fft.rfft2(self.kernel())
        return self._spec(self.weight)

    def factors(self) -> tuple[torch.Tensor, torch.Tensor]:
        r"""Separable only: the spatial factors of the kernel.

        .. math:: k_h = \sum_{r<R} u_{h,r} v_{h,r}^\top.

        Returns
        -------
        u : torch.Tensor
            Shape (H, R, Nh).
        v : torch.Tensor
            Shape (H, R, Nw).
        """
        if self.param != "separable":
            raise ValueError(f"factors() needs param='separable', this bias has param={self.param!r}")
        nh, nw = self.grid
        a = self._spec(self.weight_h, "h")
        b = self._spec(self.weight_w, "w")
        return torch.fft.irfft(a, n=nh), torch.fft.irfft(b, n=nw)

    def kernel(self) -> torch.Tensor:
        r"""Real periodic spatial kernel.

        .. math:: k_h = \mathrm{irfft2}(W_h, s=\mathrm{grid}).

        Returns
        -------
        torch.Tensor
            Shape (H, Nh, Nw).
        """
        if self.param == "separable":
            u, v = self.factors()
            return torch.einsum("hri,hrj->hij", u, v)
        return torch.fft.irfft2(self.spectrum(), s=self.grid)

    def forward(self) -> torch.Tensor:
        r"""Additive attention-logit bias :math:`B_h[i, j] = k_h((p_i - p_j) \bmod \mathrm{grid})`.

        Returns
        -------
        torch.Tensor
            Shape (H, Mh*Mw, Mh*Mw).
        """
        k = self.kernel().flatten(1)
        return k[:, self.offset_index]

    def extra_repr(self) -> str:
        """The hyperparameters, for ``repr``."""
        s = f"num_heads={self.num_heads}, window={self.window}, grid={self.grid}, param={self.param!r}"
        if self.band is not None:
            s += f", band={self.band}"
        if self.rank is not None:
            s += f", rank={self.rank}"
        return s + f", params={sum(p.numel() for p in self.parameters())}"

    # -- loading a kernel into the family
    def _params_from_spectrum(self, spec: torch.Tensor, ax: str, w: torch.Tensor) -> torch.Tensor:
        """Stored reals of layout ``ax`` whose spectrum is the projection of ``spec`` (its last dim flattened
        like the layout) onto the family: ``params = P^T k`` with P orthogonal, i.e. ``Re(W) / scale`` and
        ``Im(W) / scale`` at the canonical bins (each index once, any copy)."""
        ri, ii = (getattr(self, f"_{part}_idx{ax}").reshape(-1) for part in ("re", "im"))
        rs, is_ = (s.reshape(-1) for s in self._scales(ax, w.dtype))
        out = torch.zeros_like(w)
        n = w.shape[-1]
        m = ri < n
        out[..., ri[m]] = spec.real[..., m] / rs[m]
        m = ii < n
        out[..., ii[m]] = spec.imag[..., m] / is_[m]
        return out

    @torch.no_grad()
    def load_kernel_(self, kernel: torch.Tensor) -> FreqRelPosBias:
        """Set the parameters so that ``kernel()`` is the orthogonal projection of ``kernel`` onto the family.

        Exact when ``kernel`` lies in it. hermitian/band only; for separable use :meth:`load_factors_`.

        Parameters
        ----------
        kernel : torch.Tensor, shape (H, Nh, Nw)
            Real periodic kernel, finite.

        Returns
        -------
        FreqRelPosBias
            self.
        """
        if self.param == "separable":
            raise ValueError("load_kernel_ is for param='hermitian' or 'band'; use load_factors_ for 'separable'")
        kernel = torch.as_tensor(kernel)
        want = (self.num_heads, *self.grid)
        if tuple(kernel.shape) != want:
            raise ValueError(f"kernel must have shape {want} (H, Nh, Nw), got {tuple(kernel.shape)}")
        if not torch.isfinite(kernel).all():
            raise ValueError("kernel has NaN or inf")
        w = self.weight
        spec = torch.fft.rfft2(kernel.to(w.device, w.dtype)).flatten(1)
        w.copy_(self._params_from_spectrum(spec, "", w))
        return self

    @torch.no_grad()
    def load_factors_(self, u: torch.Tensor, v: torch.Tensor) -> FreqRelPosBias:
        """Separable only: set the spatial factors exactly.

        Parameters
        ----------
        u : torch.Tensor, shape (H, R, Nh)
            Row factors.
        v : torch.Tensor, shape (H, R, Nw)
            Column factors.

        Returns
        -------
        FreqRelPosBias
            self.
        """
        if self.param != "separable":
            raise ValueError(f"load_factors_ needs param='separable', this bias has param={self.param!r}")
        pairs = ((u, "u", "h", self.grid[0], self.weight_h), (v, "v", "w", self.grid[1], self.weight_w))
        for t, name, ax, n, w in pairs:
            want = (self.num_heads, self.rank, n)
            if tuple(t.shape) != want:
                raise ValueError(f"{name} must have shape {want}, got {tuple(t.shape)}")
            w.copy_(self._params_from_spectrum(torch.fft.rfft(t.to(w.device, w.dtype)), ax, w))
        return self


# Names that moved to fastnips.vision.swin / fastnips.vision.freqbias_transfer; the old path warns.
__getattr__ = moved(__name__, {"SwinRelPosBias": "fastnips.vision.swin",
                               "relative_position_index": "fastnips.vision.swin",
                               "MODES": "fastnips.vision.freqbias_transfer",
                               "_refine_kernel": "fastnips.vision.freqbias_transfer"})
