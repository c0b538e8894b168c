r"""The two fixed bases of :mod:`fastnips.functional`: clamped B-splines on equally spaced knots and Fourier.

Both follow scikit-fda's conventions exactly (``skfda.representation.basis.BSplineBasis`` and ``FourierBasis``),
so that coefficients computed here and by ``FDataGrid.to_basis`` agree on a regular grid:

* B-splines of order :math:`k` (degree :math:`k-1`, cubic for the default ``order=4``) on the knots
  ``linspace(a, b, n_basis - order + 2)``, the end knots repeated :math:`k-1` times;
* Fourier with period :math:`T` (default the domain length :math:`b-a`):
  :math:`\phi_0 = 1/\sqrt{T}`, :math:`\phi_{2n-1}(t) = \sin(2\pi n t/T)/\sqrt{T/2}`,
  :math:`\phi_{2n}(t) = \cos(2\pi n t/T)/\sqrt{T/2}` (``t`` is not shifted by ``a``, as in scikit-fda). The number
  of functions must be odd (scikit-fda silently adds one to an even number; here it is refused).

Each basis evaluates its design matrix :math:`\Phi_{jk} = \phi_k(t_j)` and its roughness penalty
:math:`R_{kl} = \int_a^b \phi_k^{(q)}(t)\,\phi_l^{(q)}(t)\,dt` (Gauss-Legendre quadrature, exact for the
piecewise polynomials of the B-spline basis; ``q = 0`` gives the Gram matrix).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BSplineBasis", "FourierBasis"]


def _domain(domain_range) -> tuple[float, float]:
    a, b = (float(v) for v in domain_range)
    if not (np.isfinite(a) and np.isfinite(b) and a < b):
        raise ValueError(f"domain_range must be two finite numbers a < b, got {domain_range!r}")
    return a, b


@dataclass(frozen=True)
class BSplineBasis:
    r"""Clamped B-splines of order ``order`` with ``n_basis`` functions on equally spaced knots over
    ``domain_range`` (scikit-fda's ``BSplineBasis(domain_range, n_basis, order)``).

    .. math:: \phi_k(t) = B_{k,\,\mathrm{order}}(t), \qquad k = 0, \dots, K-1,

    on the knot vector :math:`(a^{\times (k-1)}, \mathrm{linspace}(a, b, K - k + 2), b^{\times (k-1)})`.

    Parameters
    ----------
    n_basis : int
        :math:`K \geq` ``order``.
    domain_range : (float, float)
        The interval :math:`[a, b]`; every sample time must lie in it.
    order : int
        Spline order (degree + 1); 4 = cubic, scikit-fda's default.

    Examples
    --------
    >>> basis = BSplineBasis(8, (0.0, 1.0))
    >>> basis.evaluate(np.array([0.0, 0.5, 1.0])).shape
    (3, 8)
    """

    n_basis: int
    domain_range: tuple[float, float] = (0.0, 1.0)
    order: int = 4

    def __post_init__(self) -> None:
        object.__setattr__(self, "domain_range", _domain(self.domain_range))
        if not (isinstance(self.order, int | np.integer) and 1 <= self.order <= 20):
            raise ValueError(f"order must be an integer in [1, 20], got {self.order!r}")
        if not (isinstance(self.n_basis, int | np.integer) and self.order <= self.n_basis <= 4096):
            raise ValueError(f"n_basis must be an integer in [order={self.order}, 4096], got {self.n_basis!r}")

    kind = "bspline"

    @property
    def breaks(self) -> np.ndarray:
        """The distinct knots ``linspace(a, b, n_basis - order + 2)``."""
        return np.linspace(*self.domain_range, self.n_basis - self.order + 2)

    @property
    def knots(self) -> np.ndarray:
        """The full knot vector (length ``n_basis + order``), end knots repeated ``order - 1`` times."""
        br = self.breaks
        return np.concatenate([np.repeat(br[0], self.order - 1), br, np.repeat(br[-1], self.order - 1)])

    def evaluate(self, t: np.ndarray, derivative: int = 0) -> np.ndarray:
        """The design matrix ``(len(t), n_basis)`` of the ``derivative``-th derivatives at the times ``t``."""
        from scipy.interpolate import BSpline

        spl = BSpline(self.knots, np.eye(self.n_basis), self.order - 1, extrapolate=True)
        if derivative:
            spl = spl.derivative(derivative) if derivative < self.order else None
        t = np.asarray(t, dtype=np.float64)
        return np.zeros((t.size, self.n_basis)) if spl is None else spl(t)

    def penalty_matrix(self, derivative: int = 2) -> np.ndarray:
        r""":math:`R_{kl} = \int_a^b \phi_k^{(q)}\phi_l^{(q)}\,dt` for ``q = derivative`` (exact: Gauss-Legendre
        with ``order`` nodes per knot interval)."""
        nodes, weights = np.polynomial.legendre.leggauss(self.order)
        br = self.breaks
        lo, hi = br[:-1, None], br[1:, None]
        t = (0.5 * (hi - lo) * nodes + 0.5 * (hi + lo)).ravel()
        w = (0.5 * (hi - lo) * weights).ravel()
        D = self.evaluate(t, derivative)
        return D.T @ (w[:, None] * D)


@dataclass(frozen=True)
class FourierBasis:
    r"""Fourier basis with ``n_basis`` (odd) functions and period ``period`` (scikit-fda's ``FourierBasis``).

    .. math:: \phi_0 = \tfrac{1}{\sqrt{T}}, \quad \phi_{2n-1}(t) = \frac{\sin(2\pi n t / T)}{\sqrt{T/2}}, \quad
              \phi_{2n}(t) = \frac{\cos(2\pi n t / T)}{\sqrt{T/2}}, \qquad n = 1, \dots, (K-1)/2.

    Orthonormal on :math:`[a, b]` when :math:`T = b - a` (the default).

    Parameters
    ----------
    n_basis : int
        :math:`K`, odd.
    domain_range : (float, float)
        The interval :math:`[a, b]`.
    period : float, optional
        :math:`T`; default ``b - a``.

    Examples
    --------
    >>> basis = FourierBasis(5, (0.0, 1.0))
    >>> bool(np.allclose(basis.penalty_matrix(0), np.eye(5)))
    True
    """

    n_basis: int
    domain_range: tuple[float, float] = (0.0, 1.0)
    period: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "domain_range", _domain(self.domain_range))
        if not (isinstance(self.n_basis, int | np.integer) and 1 <= self.n_basis <= 4095 and self.n_basis % 2):
            raise ValueError(f"n_basis must be an odd integer in [1, 4095] (constant, then sine/cosine pairs), "
                             f"got {self.n_basis!r}")
        T = self.domain_range[1] - self.domain_range[0] if self.period is None else float(self.period)
        if not (np.isfinite(T) and T > 0):
            raise ValueError(f"period must be finite and > 0, got {self.period!r}")
        object.__setattr__(self, "period", T)

    kind = "fourier"

    def evaluate(self, t: np.ndarray, derivative: int = 0) -> np.ndarray:
        """The design matrix ``(len(t), n_basis)`` of the ``derivative``-th derivatives at the times ``t``."""
        t = np.asarray(t, dtype=np.float64)
        T = self.period
        n = np.arange(1, (self.n_basis - 1) // 2 + 1)
        w = 2 * np.pi * n / T
        ph = t[:, None] * w[None, :]
        scale = w**derivative / np.sqrt(T / 2)
        # the q-th derivative of sin is sin(x + q pi/2), of cos is cos(x + q pi/2)
        shift = derivative * np.pi / 2
        out = np.empty((t.size, self.n_basis))
        out[:, 0] = 1 / np.sqrt(T) if derivative == 0 else 0.0
        out[:, 1::2] = np.sin(ph + shift) * scale
        out[:, 2::2] = np.cos(ph + shift) * scale
        return out

    def penalty_matrix(self, derivative: int = 2) -> np.ndarray:
        r""":math:`R_{kl} = \int_a^b \phi_k^{(q)}\phi_l^{(q)}\,dt` for ``q = derivative``: diagonal
        :math:`(2\pi n/T)^{2q}` when ``T = b - a``, else Gauss-Legendre on 16 panels per period."""
        a, b = self.domain_range
        if np.isclose(self.period, b - a, rtol=1e-14, atol=0):
            n = np.repeat(np.arange(1, (self.n_basis - 1) // 2 + 1), 2)
            d = np.concatenate([[1.0 if derivative == 0 else 0.0], (2 * np.pi * n / self.period) ** (2 * derivative)])
            return np.diag(d)
        panels = int(16 * np.ceil((b - a) / self.period * max(1, (self.n_basis - 1) // 2)))
        nodes, weights = np.polynomial.legendre.leggauss(16)
        br = np.linspace(a, b, panels + 1)
        lo, hi = br[:-1, None], br[1:, None]
        t = (0.5 * (hi - lo) * nodes + 0.5 * (hi + lo)).ravel()
        w = (0.5 * (hi - lo) * weights).ravel()
        D = self.evaluate(t, derivative)
        return D.T @ (w[:, None] * D)
