r"""Frequency-domain relative position bias (paper 10; shared/notes/tikhonov_freqbias_fds.md part B).

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

None of the low-parameter families can represent every Swin table (the notes show no lossless 52-DOF
reparameterisation of the 169-dim table exists); ``"hermitian"`` on the alias-free grid is the lossless one.
A constant (DC) offset is softmax-invariant, so one of the stored reals of every family is inert for
attention; we keep it for an exact, simple correspondence with the Swin table.

Transfer (:meth:`FreqRelPosBias.transfer`)
------------------------------------------
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

Contrast: timm's table resize (:meth:`SwinRelPosBias.resize`, bicubic, ``align_corners=False``) does not
keep the original samples.

Paper: NeurIPS 2026 paper 10 of papers/INDEX.md (frequency-domain relative positional bias; full text not
available, see the notes). Prior work: Swin v1 / timm ``RelPosBias``; GFNet ``GlobalFilter``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "PARAMS",
    "FreqRelPosBias",
    "SwinRelPosBias",
    "count_bias_params",
    "periodic_offset_index",
    "relative_position_index",
]

PARAMS = ("hermitian", "band", "separable")
MODES = ("extend", "refine")


# ----------------------------------------------------------------------------------------------- helpers
def _pair(x, name: str) -> tuple[int, int]:
    """(a, b) from an int or a length-2 sequence of positive ints; ValueError otherwise."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        t = (int(x), int(x))
    elif isinstance(x, Sequence) and not isinstance(x, str) and len(x) == 2:
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in x):
            raise ValueError(f"{name} must be an int or a pair of ints, got {x!r}")
        t = (int(x[0]), int(x[1]))
    else:
        raise ValueError(f"{name} must be an int or a pair of ints, got {x!r}")
    if t[0] < 1 or t[1] < 1:
        raise ValueError(f"{name} must be positive, got {t}")
    return t


def _positive_int(x, name: str) -> int:
    if not isinstance(x, (int, np.integer)) or isinstance(x, bool) or x < 1:
        raise ValueError(f"{name} must be a positive int, got {x!r}")
    return int(x)


def _check_param(param: str) -> None:
    if param not in PARAMS:
        raise ValueError(f"unknown param {param!r}; available: {', '.join(PARAMS)}")


def _grid_for(window: tuple[int, int], grid) -> tuple[int, int]:
    g = (2 * window[0] - 1, 2 * window[1] - 1) if grid is None else _pair(grid, "grid")
    if g[0] < window[0] or g[1] < window[1]:
        raise ValueError(f"window {window} larger than grid {g}: every in-window offset needs a distinct position "
                         "(grid >= window; grid >= 2*window-1 for the alias-free bias)")
    return g


def _band_for(window, grid, band) -> tuple[int, int]:
    if band is None:
        band = (window[0] // 2, window[1] // 2)
    if isinstance(band, (int, np.integer)) and not isinstance(band, bool):
        band = (int(band), int(band))
    if (not isinstance(band, Sequence) or len(band) != 2
            or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in band)):
        raise ValueError(f"band must be an int or a pair of ints, got {band!r}")
    band = (int(band[0]), int(band[1]))
    for k, n, ax in zip(band, grid, "hw"):
        if k < 0 or k > n // 2:
            raise ValueError(f"band k{ax}={k} must lie in [0, {n // 2}] (Nyquist of grid {n})")
    return band


def relative_position_index(window) -> torch.Tensor:
    """Swin's relative position index, from its formula.

    ``index[i, j] = (dh + Mh - 1) * (2 Mw - 1) + (dw + Mw - 1)`` with ``(dh, dw) = p_i - p_j`` and
    ``p_i = (i // Mw, i % Mw)``.

    Parameters
    ----------
    window : int or (Mh, Mw)

    Returns
    -------
    LongTensor (Mh*Mw, Mh*Mw), values in ``[0, (2Mh-1)(2Mw-1))``.
    """
    mh, mw = _pair(window, "window")
    ph, pw = torch.meshgrid(torch.arange(mh), torch.arange(mw), indexing="ij")
    ph, pw = ph.reshape(-1), pw.reshape(-1)
    dh = ph[:, None] - ph[None, :]
    dw = pw[:, None] - pw[None, :]
    return ((dh + mh - 1) * (2 * mw - 1) + (dw + mw - 1)).contiguous()


def periodic_offset_index(window, grid) -> torch.Tensor:
    """Flat kernel index of every token pair: ``((dh mod Nh) * Nw + (dw mod Nw))``, LongTensor (N, N).

    ``kernel.flatten(1)[:, periodic_offset_index(window, grid)]`` is the bias ``B`` of :class:`FreqRelPosBias`.
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


def count_bias_params(kind: str, window, heads: int, **kw) -> int:
    """Number of learnable reals of a relative position bias.

    ``"swin"``: ``(2Mh-1)(2Mw-1) * heads`` (169 per head at M = 7).
    ``"freq"`` (keywords ``grid=None, param="hermitian", band=None, rank=2``): per head ``Nh*Nw`` (hermitian),
    ``min(2kh+1, Nh) * min(2kw+1, Nw)`` (band), ``rank * (Nh + Nw)`` (separable; 52 at M = 7, rank 2).
    Equals the ``numel`` of the module's parameters.
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


# ---------------------------------------------------------------------------------------------- modules
class FreqRelPosBias(nn.Module):
    r"""Frequency-domain relative position bias: ``B_h[i, j] = k_h((p_i - p_j) mod grid)``,
    ``k_h = irfft2(W_h, s=grid)``.

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

    Shapes: ``forward()`` -> (H, N, N); ``kernel()`` -> (H, Nh, Nw); ``spectrum()`` -> complex (H, Nh, Nw//2+1);
    ``to_swin_table()`` -> ((2Mh-1)(2Mw-1), H).
    """

    def __init__(self, num_heads: int, window, *, grid=None, param: str = "hermitian", band=None, rank: int = 2,
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
        """Complex (H, Nh, Nw//2+1) rfft2 spectrum (backward norm): ``kernel() == irfft2(spectrum(), s=grid)``."""
        if self.param == "separable":
            return torch.fft.rfft2(self.kernel())
        return self._spec(self.weight)

    def factors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Separable only: spatial factors u (H, R, Nh), v (H, R, Nw) with ``kernel = sum_r u_r v_r^T``."""
        if self.param != "separable":
            raise ValueError(f"factors() needs param='separable', this bias has param={self.param!r}")
        nh, nw = self.grid
        a = self._spec(self.weight_h, "h")
        b = self._spec(self.weight_w, "w")
        return torch.fft.irfft(a, n=nh), torch.fft.irfft(b, n=nw)

    def kernel(self) -> torch.Tensor:
        """Real periodic spatial kernel (H, Nh, Nw): ``k_h = irfft2(W_h, s=grid)``."""
        if self.param == "separable":
            u, v = self.factors()
            return torch.einsum("hri,hrj->hij", u, v)
        return torch.fft.irfft2(self.spectrum(), s=self.grid)

    def forward(self) -> torch.Tensor:
        """Additive attention-logit bias (H, Mh*Mw, Mh*Mw)."""
        k = self.kernel().flatten(1)
        return k[:, self.offset_index]

    def to_swin_table(self) -> torch.Tensor:
        """((2Mh-1)(2Mw-1), H) table in timm ``RelPosBias.relative_position_bias_table`` layout:
        ``table[(dh+Mh-1)(2Mw-1)+(dw+Mw-1), h] = k_h(dh mod Nh, dw mod Nw)``. Gathering it with
        :func:`relative_position_index` gives ``forward()`` exactly (on every grid)."""
        (mh, mw), (nh, nw) = self.window, self.grid
        dh = torch.arange(-(mh - 1), mh, device=self.offset_index.device) % nh
        dw = torch.arange(-(mw - 1), mw, device=self.offset_index.device) % nw
        idx = (dh[:, None] * nw + dw[None, :]).reshape(-1)
        return self.kernel().flatten(1)[:, idx].t().contiguous()

    def extra_repr(self) -> str:
        s = f"num_heads={self.num_heads}, window={self.window}, grid={self.grid}, param={self.param!r}"
        if self.band is not None:
            s += f", band={self.band}"
        if self.rank is not None:
            s += f", rank={self.rank}"
        return s + f", params={sum(p.numel() for p in self.parameters())}"

    # -- loading a kernel into the family
    def _like(self, window, grid, **kw) -> FreqRelPosBias:
        p = next(self.parameters())
        opts = {"param": self.param}
        if self.param == "band":
            opts["band"] = kw.get("band", self.band)
        if self.param == "separable":
            opts["rank"] = self.rank
        new = FreqRelPosBias(self.num_heads, window, grid=grid, init_std=0.0, **opts)
        return new.to(device=p.device, dtype=p.dtype)

    @torch.no_grad()
    def load_kernel_(self, kernel: torch.Tensor) -> FreqRelPosBias:
        """Set the parameters so that ``kernel()`` is the orthogonal projection of ``kernel`` (H, Nh, Nw) onto
        the family (exact when ``kernel`` lies in it). hermitian/band only; for separable use
        :meth:`load_factors_`. Returns self."""
        if self.param == "separable":
            raise ValueError("load_kernel_ is for param='hermitian' or 'band'; use load_factors_ for 'separable'")
        kernel = torch.as_tensor(kernel)
        want = (self.num_heads, *self.grid)
        if tuple(kernel.shape) != want:
            raise ValueError(f"kernel must have shape {want} (H, Nh, Nw), got {tuple(kernel.shape)}")
        if not torch.isfinite(kernel).all():
            raise ValueError("kernel has NaN or inf")
        w = self.weight
        spec = torch.fft.rfft2(kernel.to(w.device, w.dtype))
        out = torch.zeros_like(w)
        re_i, im_i = self._re_idx.reshape(-1), self._im_idx.reshape(-1)
        re_s, im_s = (x.reshape(-1) for x in self._scales("", w.dtype))
        flat = spec.flatten(1)
        m = re_i < w.shape[1]
        # params = P^T k with P orthogonal: p = Re(W) / scale at the canonical bins (each index once, any copy)
        out[:, re_i[m]] = flat.real[:, m] / re_s[m]
        m = im_i < w.shape[1]
        out[:, im_i[m]] = flat.imag[:, m] / im_s[m]
        w.copy_(out)
        return self

    @torch.no_grad()
    def load_factors_(self, u: torch.Tensor, v: torch.Tensor) -> FreqRelPosBias:
        """Separable only: set spatial factors u (H, R, Nh), v (H, R, Nw) exactly. Returns self."""
        if self.param != "separable":
            raise ValueError(f"load_factors_ needs param='separable', this bias has param={self.param!r}")
        pairs = ((u, "u", "h", self.grid[0], self.weight_h), (v, "v", "w", self.grid[1], self.weight_w))
        for t, name, ax, n, w in pairs:
            ri, ii = getattr(self, f"_re_idx{ax}"), getattr(self, f"_im_idx{ax}")
            rs, is_ = self._scales(ax, w.dtype)
            want = (self.num_heads, self.rank, n)
            if tuple(t.shape) != want:
                raise ValueError(f"{name} must have shape {want}, got {tuple(t.shape)}")
            spec = torch.fft.rfft(t.to(w.device, w.dtype))
            out = torch.zeros_like(w)
            m = ri < n
            out[..., ri[m]] = spec.real[..., m] / rs[m]
            m = ii < n
            out[..., ii[m]] = spec.imag[..., m] / is_[m]
            w.copy_(out)
        return self

    @classmethod
    def from_swin_table(cls, table: torch.Tensor, window) -> FreqRelPosBias:
        """Lossless import of a Swin/timm table ((2Mh-1)(2Mw-1), H) into ``param="hermitian"`` on the alias-free
        grid: ``to_swin_table()`` of the result returns ``table``."""
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

    # -- transfer
    def transfer(self, window=None, *, mode: str = "extend", factor=2, grid=None) -> FreqRelPosBias:
        """A new bias for another resolution; parameters are copies (no autograd link).

        ``mode="extend"``: same spacing, ``window`` (required), same grid and kernel. Exact iff
        ``grid >= 2*window-1``; otherwise warns (periodic extension). ``grid`` must be None.

        ``mode="refine"``: same field of view, ``factor`` (int or (rh, rw), >= 1) times finer: grid ``r*N``, window
        ``r*M`` unless given. Spectral zero-padding; keeps ``k'[r*d] == k[d]`` exactly. Same family.
        """
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; available: {', '.join(MODES)}")
        if grid is not None:
            raise ValueError("transfer keeps the grid (extend) or multiplies it by factor (refine); grid must be None")
        if mode == "extend":
            if window is None:
                raise ValueError("mode='extend' needs window=")
            window = _pair(window, "window")
            _grid_for(window, self.grid)  # window <= grid, else ValueError
            if self.grid[0] < 2 * window[0] - 1 or self.grid[1] < 2 * window[1] - 1:
                warnings.warn(
                    f"extend to window {window} on grid {self.grid} < 2*window-1: offsets beyond the grid wrap "
                    "around (periodic extension of the kernel), not an exact continuation", UserWarning, stacklevel=2)
            new = self._like(window, self.grid)
            new.load_state_dict(self.state_dict())
            return new
        if isinstance(factor, bool) or not isinstance(factor, (int, np.integer, Sequence)):
            raise ValueError(f"factor must be an int >= 1 or a pair of them, got {factor!r}")
        r = (factor, factor) if isinstance(factor, (int, np.integer)) else tuple(factor)
        if len(r) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in r):
            raise ValueError(f"factor must be an int >= 1 or a pair of them, got {factor!r}")
        if r[0] < 1 or r[1] < 1:
            raise ValueError(f"factor must be >= 1, got {factor!r}")
        r = (int(r[0]), int(r[1]))
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


class SwinRelPosBias(nn.Module):
    """Swin v1 / timm ``RelPosBias``: a learned table ((2Mh-1)(2Mw-1), H) gathered by
    :func:`relative_position_index` into the (H, N, N) additive logit bias; ``trunc_normal_(std=.02)`` init.

    Parameters
    ----------
    num_heads : int
    window : int or (Mh, Mw)
    """

    def __init__(self, num_heads: int, window, *, init_std: float = 0.02):
        super().__init__()
        self.num_heads = _positive_int(num_heads, "num_heads")
        self.window = _pair(window, "window")
        mh, mw = self.window
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * mh - 1) * (2 * mw - 1), self.num_heads))
        self.register_buffer("relative_position_index", relative_position_index(self.window), persistent=False)
        if init_std > 0:
            nn.init.trunc_normal_(self.relative_position_bias_table, std=init_std)

    def forward(self) -> torch.Tensor:
        """(H, Mh*Mw, Mh*Mw)."""
        n = self.window[0] * self.window[1]
        b = self.relative_position_bias_table[self.relative_position_index.reshape(-1)]
        return b.reshape(n, n, self.num_heads).permute(2, 0, 1).contiguous()

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, window={self.window}"

    def resize(self, window) -> SwinRelPosBias:
        """timm-style transfer: bicubic ``F.interpolate(align_corners=False)`` of the table on the
        (2Mh-1)x(2Mw-1) offset grid to (2M'h-1)x(2M'w-1). Does not keep the original samples (contrast with
        :meth:`FreqRelPosBias.transfer` ``mode="refine"``)."""
        window = _pair(window, "window")
        (mh, mw), H = self.window, self.num_heads
        t = self.relative_position_bias_table.detach()
        img = t.t().reshape(1, H, 2 * mh - 1, 2 * mw - 1)
        out = F.interpolate(img, size=(2 * window[0] - 1, 2 * window[1] - 1), mode="bicubic", align_corners=False)
        new = SwinRelPosBias(H, window, init_std=0.0).to(device=t.device, dtype=t.dtype)
        with torch.no_grad():
            new.relative_position_bias_table.copy_(out.reshape(H, -1).t())
        return new
