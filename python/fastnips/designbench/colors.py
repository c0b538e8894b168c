r"""Colour parsing and colour difference for the template-generation metrics (numpy only).

* :func:`parse_color`: CSS ``rgb(r, g, b)`` / ``rgba(r, g, b, a)`` (alpha ignored) and ``#rrggbb`` to sRGB in
  [0, 1]; anything else is None (lica-gdb's parser: the same formats).
* :func:`srgb_to_lab`: sRGB (IEC 61966-2-1 transfer curve) to CIE XYZ (the sRGB matrix) to CIELAB with the D65
  white point and the 2-degree observer, the conversion scikit-image's ``rgb2lab`` makes.
* :func:`delta_e`: CIEDE2000 (Sharma, Wu and Dalal 2005, with :math:`k_L = k_C = k_H = 1`), vectorised; or, with
  ``method="rgb"``, the Euclidean distance of 0-255 RGB triples, lica-gdb's fallback when scikit-image is
  missing.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["delta_e", "parse_color", "srgb_to_lab"]

_RGB = re.compile(r"rgba?\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)")
_M = np.array([[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169], [0.019334, 0.119193, 0.950227]])
_WHITE = np.array([0.95047, 1.0, 1.08883])


def parse_color(s: object) -> tuple[float, float, float] | None:
    """sRGB in [0, 1] of a CSS colour string, or None.

    Parameters
    ----------
    s : str
        ``"rgb(252, 105, 45)"``, ``"rgba(1, 1, 1, 0)"`` or ``"#fc692d"``.

    Returns
    -------
    tuple of 3 float, or None

    Examples
    --------
    >>> parse_color("#ff0000"), parse_color("none")
    ((1.0, 0.0, 0.0), None)
    """
    if not s or not isinstance(s, str):
        return None
    m = _RGB.search(s)
    if m:
        try:
            return tuple(float(m.group(i)) / 255.0 for i in (1, 2, 3))
        except ValueError:
            return None
    h = s.strip()
    if h.startswith("#") and len(h.lstrip("#")) == 6:
        try:
            v = h.lstrip("#")
            return tuple(int(v[i:i + 2], 16) / 255.0 for i in (0, 2, 4))
        except ValueError:
            return None
    return None


def srgb_to_lab(rgb: object) -> np.ndarray:
    """CIELAB (D65, 2 degrees) of sRGB colours in [0, 1].

    Parameters
    ----------
    rgb : array_like, shape (..., 3)

    Returns
    -------
    numpy.ndarray, shape (..., 3)
        L in [0, 100], a, b.

    Examples
    --------
    >>> srgb_to_lab([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]).round(1).tolist()  # white: a, b of order 1e-3
    [[0.0, 0.0, 0.0], [100.0, -0.0, 0.0]]
    """
    c = np.asarray(rgb, dtype=np.float64)
    if c.shape[-1:] != (3,) or not np.all(np.isfinite(c)):
        raise ValueError(f"rgb: expected finite values of shape (..., 3), got shape {c.shape}")
    lin = np.where(c > 0.04045, ((c + 0.055) / 1.055) ** 2.4, c / 12.92)
    xyz = lin @ _M.T / _WHITE
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16.0 / 116.0)
    fx, fy, fz = f[..., 0], f[..., 1], f[..., 2]
    return np.stack([116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)], axis=-1)


def _ciede2000(lab1: np.ndarray, lab2: np.ndarray) -> np.ndarray:
    L1, a1, b1 = np.moveaxis(lab1, -1, 0)
    L2, a2, b2 = np.moveaxis(lab2, -1, 0)
    cbar7 = ((np.hypot(a1, b1) + np.hypot(a2, b2)) / 2) ** 7
    G = 0.5 * (1 - np.sqrt(cbar7 / (cbar7 + 25.0 ** 7)))
    a1p, a2p = (1 + G) * a1, (1 + G) * a2
    C1, C2 = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1 = np.where((a1p == 0) & (b1 == 0), 0.0, np.degrees(np.arctan2(b1, a1p)) % 360)
    h2 = np.where((a2p == 0) & (b2 == 0), 0.0, np.degrees(np.arctan2(b2, a2p)) % 360)
    zero = C1 * C2 == 0
    dh = h2 - h1
    dh = np.where(zero, 0.0, np.where(dh > 180, dh - 360, np.where(dh < -180, dh + 360, dh)))
    dL, dC = L2 - L1, C2 - C1
    dH = 2 * np.sqrt(C1 * C2) * np.sin(np.radians(dh) / 2)
    Lb, Cb = (L1 + L2) / 2, (C1 + C2) / 2
    hs = h1 + h2
    hb = np.where(zero, hs, np.where(np.abs(h1 - h2) <= 180, hs / 2, np.where(hs < 360, (hs + 360) / 2,
                                                                                (hs - 360) / 2)))
    T = (1 - 0.17 * np.cos(np.radians(hb - 30)) + 0.24 * np.cos(np.radians(2 * hb))
         + 0.32 * np.cos(np.radians(3 * hb + 6)) - 0.20 * np.cos(np.radians(4 * hb - 63)))
    dtheta = 30 * np.exp(-(((hb - 275) / 25) ** 2))
    RC = 2 * np.sqrt(Cb ** 7 / (Cb ** 7 + 25.0 ** 7))
    SL = 1 + 0.015 * (Lb - 50) ** 2 / np.sqrt(20 + (Lb - 50) ** 2)
    SC, SH = 1 + 0.045 * Cb, 1 + 0.015 * Cb * T
    RT = -np.sin(np.radians(2 * dtheta)) * RC
    tl, tc, th = dL / SL, dC / SC, dH / SH
    return np.sqrt(tl * tl + tc * tc + th * th + RT * tc * th)


def delta_e(rgb1: object, rgb2: object, *, method: str = "ciede2000", lab: bool = False) -> np.ndarray:
    """Colour difference of sRGB colours (or of CIELAB colours with ``lab=True``), broadcast.

    Parameters
    ----------
    rgb1, rgb2 : array_like, shape (..., 3)
        sRGB in [0, 1] (or L, a, b with ``lab=True``).
    method : {"ciede2000", "rgb"}
        CIEDE2000, or the Euclidean distance of 0-255 RGB triples (lica-gdb's fallback).
    lab : bool, default False
        The inputs are already CIELAB (``method="ciede2000"`` only).

    Returns
    -------
    numpy.ndarray
        One difference per broadcast pair (a 0-d array for two colours).

    Examples
    --------
    >>> round(float(delta_e([50, 2.6772, -79.7751], [50, 0, -82.7485], lab=True)), 4)  # Sharma et al., pair 1
    2.0425
    """
    if method not in ("ciede2000", "rgb"):
        raise ValueError(f"method must be 'ciede2000' or 'rgb', got {method!r}")
    a, b = np.asarray(rgb1, dtype=np.float64), np.asarray(rgb2, dtype=np.float64)
    if a.shape[-1:] != (3,) or b.shape[-1:] != (3,):
        raise ValueError(f"colours must have a last axis of 3, got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("colours must be finite (rgb1 or rgb2 holds NaN or inf)")
    if method == "rgb":
        if lab:
            raise ValueError("lab=True needs method='ciede2000'")
        return np.sqrt(np.sum(((a - b) * 255.0) ** 2, axis=-1))
    return _ciede2000(a if lab else srgb_to_lab(a), b if lab else srgb_to_lab(b))
