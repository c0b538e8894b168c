"""Data sets with known simplex structure for collapse experiments (generated, no download).

* :func:`linear_mixture` -- ``x = A z + noise`` with ``z ~ Dir(concentration 1_K)`` and Gaussian endmembers
  ``A`` (D, K): the setting of the linear theory (spectral unmixing without the spectra).
* :func:`archetypal_toy` -- points near the convex hull of K archetypes: sparse weights
  ``z ~ Dir(0.3 1_K)`` put most mass near the corners, as in archetypal analysis.
* :func:`standardized` -- a bundled real set (scikit-learn's ``wine`` or ``digits``), standardised per feature.
"""

from __future__ import annotations

import numpy as np

__all__ = ["archetypal_toy", "linear_mixture", "standardized"]


def _check(n: int, D: int, K: int, noise: float) -> None:
    for name, v, lo in (("n", n, 2), ("D", D, 1), ("K", K, 2)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if not (float(noise) >= 0):
        raise ValueError(f"noise must be >= 0, got {noise!r}")


def linear_mixture(n: int = 2000, D: int = 6, K: int = 3, *, noise: float = 0.3, concentration: float = 1.0,
                   scale: float = 2.0, seed: int = 0) -> np.ndarray:
    """``n`` rows ``x = A z + noise * eps`` with ``z ~ Dir(concentration)``, ``A ~ scale * N(0, 1)`` (D, K).

    Returns
    -------
    ndarray (n, D), float64
    """
    _check(n, D, K, noise)
    if not (float(concentration) > 0):
        raise ValueError(f"concentration must be positive, got {concentration!r}")
    rng = np.random.default_rng(seed)
    A = scale * rng.standard_normal((D, K))
    Z = rng.dirichlet(np.full(K, float(concentration)), n)
    return Z @ A.T + noise * rng.standard_normal((n, D))


def archetypal_toy(n: int = 2000, D: int = 2, K: int = 3, *, noise: float = 0.05, seed: int = 0) -> np.ndarray:
    """``n`` points near the hull of K archetypes on a circle of radius 2 (extra dims: small random mixing).

    Returns
    -------
    ndarray (n, D), float64
    """
    _check(n, D, K, noise)
    rng = np.random.default_rng(seed)
    ang = 2 * np.pi * np.arange(K) / K
    arch = np.zeros((K, D))
    arch[:, 0] = 2 * np.cos(ang)
    if D > 1:
        arch[:, 1] = 2 * np.sin(ang)
    if D > 2:
        arch[:, 2:] = 0.5 * rng.standard_normal((K, D - 2))
    Z = rng.dirichlet(np.full(K, 0.3), n)
    return Z @ arch + noise * rng.standard_normal((n, D))


def standardized(name: str = "wine") -> np.ndarray:
    """scikit-learn's bundled ``wine`` (178 x 13) or ``digits`` (1797 x 64) features, each standardised to mean 0
    and variance 1 (constant features left at 0)."""
    from .. import _optional

    _optional.require("sklearn")
    from sklearn import datasets

    loaders = {"wine": datasets.load_wine, "digits": datasets.load_digits}
    if name not in loaders:
        raise ValueError(f"name must be one of {sorted(loaders)}, got {name!r}")
    X = np.asarray(loaders[name]().data, dtype=np.float64)
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
