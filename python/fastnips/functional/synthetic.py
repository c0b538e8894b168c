r"""Synthetic functional data with a known truth: Gaussian-process curves sampled irregularly, and scalar
responses from a functional linear model or a functional multiple-index model.

Curves are the truncated Karhunen-Loeve expansion of a Gaussian process on :math:`[0, 1]`,

.. math:: X_i(t) = \sum_{k=0}^{J-1} z_{ik}\, e_k(t), \quad e_0 = 1,\ e_k(t) = \sqrt{2}\cos(k\pi t), \quad
          z_{ik} \sim N(0, \lambda_k),\ \lambda_k = (1 + (k\pi\ell)^2)^{-2}

(a Matern-3/2-like spectrum with length scale :math:`\ell`), observed at :math:`m_i` times with noise:
:math:`x_{ij} = X_i(t_{ij}) + \varepsilon_{ij}`. Because :math:`\{e_k\}` is orthonormal,
:math:`\langle \beta, X_i\rangle = \sum_k b_k z_{ik}` exactly for :math:`\beta = \sum_k b_k e_k`.
"""

from __future__ import annotations

import numpy as np

from .curves import PackedCurves

__all__ = ["functional_linear_response", "gaussian_process_curves", "kl_basis", "kl_eigenvalues",
           "multiple_index_response"]


def kl_eigenvalues(n_terms: int, length_scale: float) -> np.ndarray:
    r""":math:`\lambda_k = (1 + (k\pi\ell)^2)^{-2}`, :math:`k = 0, \dots, J-1`."""
    k = np.arange(n_terms)
    return (1.0 + (k * np.pi * length_scale) ** 2) ** -2


def kl_basis(t: np.ndarray, n_terms: int) -> np.ndarray:
    r"""The orthonormal functions :math:`e_k(t)` (``e_0 = 1``, ``e_k = sqrt(2) cos(k pi t)``), ``(len(t), J)``."""
    t = np.asarray(t, dtype=np.float64)
    k = np.arange(n_terms)
    E = np.sqrt(2.0) * np.cos(np.pi * t[:, None] * k[None, :])
    E[:, 0] = 1.0
    return E


def _times(rng: np.random.Generator, m: int, irregularity: float) -> np.ndarray:
    grid = (np.arange(m) + 0.5) / m
    if irregularity == 0:
        return grid
    u = np.sort(rng.uniform(0.0, 1.0, m))
    return (1.0 - irregularity) * grid + irregularity * u


def gaussian_process_curves(n: int, *, samples: tuple[int, int] = (20, 60), irregularity: float = 1.0,
                            noise: float = 0.1, n_terms: int = 25, length_scale: float = 0.1,
                            seed: int = 0) -> tuple[PackedCurves, np.ndarray]:
    r"""``n`` Gaussian-process curves on :math:`[0, 1]`, each observed at its own times.

    Parameters
    ----------
    n : int
        Number of curves.
    samples : (int, int)
        :math:`m_i` is drawn uniformly from ``[samples[0], samples[1]]``.
    irregularity : float in [0, 1]
        0: the midpoints of a regular grid of :math:`m_i` cells; 1: sorted uniform times (independent per curve);
        between: the convex combination of the two (still sorted).
    noise : float
        Standard deviation of :math:`\varepsilon_{ij}`.
    n_terms, length_scale : int, float
        :math:`J` and :math:`\ell` of the expansion.
    seed : int
        Seed of everything drawn.

    Returns
    -------
    curves : PackedCurves
    Z : ndarray, shape (n, n_terms)
        The expansion coefficients :math:`z_{ik}` (the truth).

    Examples
    --------
    >>> curves, Z = gaussian_process_curves(3, samples=(5, 5), irregularity=0.0)
    >>> curves.counts.tolist(), Z.shape
    ([5, 5, 5], (3, 25))
    """
    if not (isinstance(n, int | np.integer) and n >= 1):
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    lo, hi = samples
    if not (1 <= lo <= hi):
        raise ValueError(f"samples must be (lo, hi) with 1 <= lo <= hi, got {samples!r}")
    if not 0 <= irregularity <= 1:
        raise ValueError(f"irregularity must lie in [0, 1], got {irregularity!r}")
    if not (noise >= 0 and length_scale > 0 and n_terms >= 1):
        raise ValueError("noise must be >= 0, length_scale > 0 and n_terms >= 1")
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, n_terms)) * np.sqrt(kl_eigenvalues(n_terms, length_scale))
    m = rng.integers(lo, hi + 1, size=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(m, out=offsets[1:])
    t = np.concatenate([_times(rng, int(mi), irregularity) for mi in m])
    x = _kl_values(t, Z, m) + noise * rng.standard_normal(len(t))
    return PackedCurves(offsets, t, x), Z


def _kl_values(t: np.ndarray, Z: np.ndarray, m: np.ndarray) -> np.ndarray:
    """sum_k z_{i(j) k} e_k(t_j) for every sample j of curve i(j), one term at a time (the cosines by the
    Chebyshev recurrence cos(k u) = 2 cos(u) cos((k-1) u) - cos((k-2) u), u = pi t): no (samples, terms) array."""
    c1 = np.cos(np.pi * t)
    prev, cur = np.ones_like(t), c1
    x = np.repeat(Z[:, 0], m)
    for k in range(1, Z.shape[1]):
        x += np.sqrt(2.0) * cur * np.repeat(Z[:, k], m)
        prev, cur = cur, 2.0 * c1 * cur - prev
    return x


def default_beta(n_terms: int, which: int = 0) -> np.ndarray:
    r"""Coefficients :math:`b_k` of the fixed index functions: :math:`b_k = (-1)^k/(1+k)^{1.5}` (``which=0``) and
    :math:`b_k = \cos(k)/(1+k)` (``which=1``), :math:`k < J`."""
    k = np.arange(n_terms)
    return (-1.0) ** k / (1.0 + k) ** 1.5 if which == 0 else np.cos(k) / (1.0 + k)


def functional_linear_response(Z: np.ndarray, *, noise: float = 0.1, beta: np.ndarray | None = None,
                               seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""Responses of the functional linear model :math:`y_i = \langle \beta, X_i\rangle + \epsilon_i`.

    Returns ``(y, signal)`` with ``signal = Z @ b`` (the noiseless part); ``beta`` defaults to
    :func:`default_beta` ``(J, 0)``.
    """
    b = default_beta(Z.shape[1]) if beta is None else np.asarray(beta, dtype=np.float64)
    signal = Z @ b
    return signal + noise * np.random.default_rng(seed).standard_normal(len(signal)), signal


def multiple_index_response(Z: np.ndarray, *, noise: float = 0.1, length_scale: float = 0.1,
                            seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""Responses of a functional two-index model :math:`y_i = g(u_{i1}, u_{i2}) + \epsilon_i`,
    :math:`u_{il} = \langle\beta_l, X_i\rangle / \mathrm{sd}`, :math:`g(u, v) = \sin(2u) + v^2/2 - 1/2`.

    The two index functions are :func:`default_beta` ``(J, 0)`` and ``(J, 1)``; each index is divided by its
    standard deviation under the curves' distribution (``length_scale`` as in :func:`gaussian_process_curves`),
    so :math:`u_{il} \sim N(0, 1)`. Returns ``(y, signal)``.
    """
    lam = kl_eigenvalues(Z.shape[1], length_scale)
    u = [Z @ (b := default_beta(Z.shape[1], w)) / np.sqrt(np.sum(b**2 * lam)) for w in (0, 1)]
    signal = np.sin(2.0 * u[0]) + 0.5 * u[1] ** 2 - 0.5
    return signal + noise * np.random.default_rng(seed).standard_normal(len(signal)), signal
