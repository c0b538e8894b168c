r"""The filter polynomial of the Tikhonov layer: p on :math:`[0, 2]`, its Chebyshev form and p(L) applied.

.. math:: p(\lambda) = \sum_{k=0}^{K} \theta_k \binom{K}{k} \Big(\frac{\lambda}{2}\Big)^k
          \Big(1 - \frac{\lambda}{2}\Big)^{K-k} \;\text{(Bernstein)}, \qquad
          p(\lambda) = \sum_{k=0}^{K} \theta_k \lambda^k \;\text{(monomial)}, \qquad
          p(L) = \sum_{k=0}^{K} c_k T_k(L - I).

The solvers apply p(L) in the Chebyshev basis of :math:`L - I` (spectrum in :math:`[-1, 1]`), by the
three-term recurrence :math:`T_{k+1} = 2 (L - I) T_k - T_{k-1}`: K sparse products, well conditioned at
any degree. Paper: Tremblay, Ricaud, Bianchi, "A Generalized Tikhonov Layer for Interpretable-by-design
Graph Neural Networks" (arXiv 2605.28578).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.polynomial import chebyshev as _cheb
from numpy.typing import ArrayLike

from .checks import _check_basis, _coefficients
from .reference import evaluate_polynomial_reference, monomial_coefficients, monomial_to_bernstein

__all__ = ["chebyshev_coefficients", "evaluate_polynomial"]


def evaluate_polynomial(coeffs: ArrayLike, lam: ArrayLike, basis: str = "bernstein") -> np.ndarray:
    r"""Evaluate the filter polynomial :math:`p(\lambda)`.

    .. math:: p(\lambda) = \sum_{k=0}^{K} \theta_k \binom{K}{k} \Big(\frac{\lambda}{2}\Big)^k
              \Big(1 - \frac{\lambda}{2}\Big)^{K-k} \quad\text{(Bernstein)}, \qquad
              p(\lambda) = \sum_{k=0}^{K} \theta_k \lambda^k \quad\text{(monomial)}.

    Parameters
    ----------
    coeffs : array-like, shape (K + 1,)
        :math:`\theta_0, \dots, \theta_K`.
    lam : array-like
        Points, usually in :math:`[0, 2]`.
    basis : {"bernstein", "monomial"}

    Returns
    -------
    ndarray of float64, the shape of ``lam``
        Evaluated by de Casteljau's algorithm (Bernstein) or Horner's rule (monomial).

    Examples
    --------
    >>> from fastnips.graph import evaluate_polynomial
    >>> evaluate_polynomial([0.0, 1.0], [0.0, 1.0, 2.0]).tolist()   # Bernstein, K = 1: p = lambda / 2
    [0.0, 0.5, 1.0]
    """
    c = _coefficients(coeffs)
    _check_basis(basis)
    return evaluate_polynomial_reference(c, lam, basis)


def _extrema_on_interval(c: np.ndarray, basis: str) -> tuple[float, float, float]:
    """(min p, argmin, max p) over [0, 2]: at the end points, the real critical points inside, and a
    fine grid (a safety net for the root finder at high degree)."""
    a = monomial_coefficients(c, basis)
    pts = [np.array([0.0, 2.0]), np.linspace(0.0, 2.0, 4097)]
    if a.shape[0] > 2 and np.any(a[1:]):
        roots = np.polynomial.Polynomial(a).deriv().roots()
        real = roots[np.abs(roots.imag) <= 1e-9 * np.maximum(1.0, np.abs(roots))].real
        pts.append(real[(real > 0.0) & (real < 2.0)])
    lam = np.concatenate(pts)
    vals = evaluate_polynomial_reference(c, lam, basis)
    i = int(np.argmin(vals))
    return float(vals[i]), float(lam[i]), float(vals.max())


def _check_polynomial(c: np.ndarray, basis: str) -> float:
    """Refuse a polynomial that is negative somewhere on [0, 2]; return max p on [0, 2]."""
    K = c.shape[0] - 1
    if basis == "bernstein":
        neg = np.flatnonzero(c < 0)
        if neg.size:
            raise ValueError(
                f"coeffs: Bernstein coefficients must be >= 0 (got theta_{neg[0]} = {float(c[neg[0]])!r}). With "
                "theta >= 0, p >= 0 on [0, 2] and (p(L) + Q)^-1 Q x is the exact minimiser of "
                "z^T p(L) z + (z - x)^T Q (z - x); for a non-negative p with negative Bernstein "
                "coefficients pass basis='monomial' (p is then checked on [0, 2])")
        return float(_extrema_on_interval(c, basis)[2])
    lo, where, hi = _extrema_on_interval(c, basis)
    scale = float(np.sum(np.abs(c) * 2.0 ** np.arange(K + 1)))
    if np.all(monomial_to_bernstein(c) >= 0) or lo >= -64 * np.finfo(np.float64).eps * scale:
        return hi
    raise ValueError(
        f"coeffs: the monomial polynomial p(lambda) = sum_k theta_k lambda^k is negative on [0, 2] "
        f"(p({where:.6g}) = {lo:.6g}). The Tikhonov solution (p(L) + Q)^-1 Q x is the exact minimiser of "
        "z^T p(L) z + (z - x)^T Q (z - x) only if p >= 0 on the spectrum of L, which for a normalized "
        "Laplacian can be all of [0, 2]; otherwise it is a saddle point or the system is singular. "
        "Use basis='bernstein' with coefficients >= 0 (always valid), or shift p up")


def chebyshev_coefficients(coeffs: ArrayLike, basis: str = "bernstein") -> np.ndarray:
    r"""Coefficients :math:`c_k` with :math:`p(\lambda) = \sum_k c_k T_k(\lambda - 1)` on :math:`[0, 2]`.

    Obtained once by interpolating p (evaluated stably in its own basis) at the K + 1 Chebyshev points
    of :math:`[0, 2]`, which is exact for a degree-K polynomial and well conditioned at any K. The cpp
    backend applies :math:`p(L) = \sum_k c_k T_k(L - I)` by the three-term recurrence: K sparse products.

    Parameters
    ----------
    coeffs : array-like, shape (K + 1,)
        :math:`\theta_0, \dots, \theta_K` in ``basis``.
    basis : {"bernstein", "monomial"}

    Returns
    -------
    ndarray of float64, shape (K + 1,)
        :math:`c_0, \dots, c_K`.

    Examples
    --------
    >>> from fastnips.graph import chebyshev_coefficients
    >>> chebyshev_coefficients([0.0, 1.0], basis="monomial").round(12).tolist()   # lambda = 1 + T_1
    [1.0, 1.0]
    """
    c = _coefficients(coeffs)
    _check_basis(basis)
    K = c.shape[0] - 1
    if K == 0:
        return c.copy()
    return np.ascontiguousarray(
        _cheb.chebinterpolate(lambda t: evaluate_polynomial_reference(c, t + 1.0, basis), K), dtype=np.float64)



def _degree(cheb: np.ndarray) -> int:
    """The degree of p: the last nonzero Chebyshev coefficient (0 for a constant or zero p)."""
    nz = np.flatnonzero(cheb)
    return int(nz[-1]) if nz.size else 0


def _chebyshev_sum(Lc: sp.csr_matrix, cheb: np.ndarray, V):
    r""":math:`\sum_k c_k T_k(L - I)\, V` by the three-term recurrence: K products with L. V is a dense block
    (the operator applied) or a sparse matrix (V = I assembles p(L) by sparse-sparse products)."""
    prev, cur = None, V
    out = cheb[0] * V
    for k in range(1, _degree(cheb) + 1):
        nxt = Lc @ cur - cur if k == 1 else 2.0 * (Lc @ cur - cur) - prev
        out = out + cheb[k] * nxt
        prev, cur = cur, nxt
    return out


