r"""The extreme-value argument behind the power law: the expected best of N random recipes.

If the gap of a random recipe to the optimum :math:`q^*` has a power-law lower tail,

.. math::
    P(q^* - q \le \varepsilon) = \kappa\,\varepsilon^{k}\quad (0 \le \varepsilon \le \kappa^{-1/k}),

then :math:`U = \kappa (q^* - q)^k` is uniform on [0, 1], the best of N i.i.d. recipes has gap
:math:`(U_{(1)}/\kappa)^{1/k}` with :math:`U_{(1)} \sim \mathrm{Beta}(1, N)`, and

.. math::
    E[\mathrm{best}(N)] = q^* - \kappa^{-1/k}\,\Gamma(1 + 1/k)\,\frac{\Gamma(N+1)}{\Gamma(N+1+1/k)}
    \;\sim\; q^* - \Gamma(1 + 1/k)\,(\kappa N)^{-1/k},

a power law with exponent :math:`c = 1/k` (zero-order / random-search regret; paper 19, datascale: "the
power-law form arises naturally from regret bounds in zero-order optimization theory"). For a smooth
(quadratic) optimum in d recipe dimensions the gap is a squared distance, so :math:`k = d/2` and
:math:`c = 2/d`. The exact form bends at small N (the ratio of Gammas is not yet :math:`N^{-c}`): this is the
pre-asymptotic region that biases curve fits which weight small N heavily.

:func:`quadratic_tail` gives :math:`(k, \kappa)` of the synthetic recipe space of
:mod:`fastnips.datacuration.synthetic` (uniform recipes in :math:`[-1, 1]^d`, quality :math:`q^* - \|x\|^2`):
:math:`\kappa = V_d / 2^d` with :math:`V_d = \pi^{d/2}/\Gamma(d/2 + 1)` the unit-ball volume, exact for
:math:`\varepsilon \le 1` (the ball of radius :math:`\sqrt\varepsilon` fits in the cube).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import gammaln

__all__ = ["expected_best", "quadratic_tail"]


def expected_best(N: ArrayLike, *, optimum: float, k: float, kappa: float, exact: bool = True) -> np.ndarray:
    r"""The expected best quality after N random recipes when :math:`P(q^* - q \le \varepsilon) = \kappa\varepsilon^k`.

    .. math::
        E[\mathrm{best}(N)] = q^* - \kappa^{-1/k}\,\Gamma(1 + 1/k)\,\Gamma(N+1)/\Gamma(N+1+1/k)

    (``exact=True``), or its power-law asymptote :math:`q^* - \Gamma(1+1/k)(\kappa N)^{-1/k}`.

    Parameters
    ----------
    N : array_like of float
        Numbers of runs, >= 1.
    optimum : float
        :math:`q^*`, the best quality the recipe space holds.
    k : float
        Tail exponent (> 0); the power law's exponent is :math:`c = 1/k` (:math:`k = d/2` for a smooth optimum
        in d dimensions).
    kappa : float
        Tail constant (> 0).
    exact : bool, default True
        The exact finite-N value (exact when the tail law holds on the whole support) or the asymptote.

    Returns
    -------
    numpy.ndarray
        Expected best, shaped like ``N``.

    Raises
    ------
    ValueError
        ``N < 1`` or non-finite, non-positive ``k`` or ``kappa``, non-finite ``optimum``.

    Examples
    --------
    >>> from fastnips.datacuration import expected_best
    >>> float(expected_best(1, optimum=0.0, k=1.0, kappa=1.0))  # one uniform draw on [0, 1]: mean gap 1/2
    -0.5
    """
    Na = np.asarray(N, dtype=np.float64)
    if not np.isfinite(Na).all() or (Na < 1).any():
        raise ValueError("N must be finite and >= 1")
    for name, v in (("k", k), ("kappa", kappa)):
        if not (math.isfinite(float(v)) and float(v) > 0):
            raise ValueError(f"{name} must be finite and positive, got {v!r}")
    if not math.isfinite(float(optimum)):
        raise ValueError(f"optimum must be finite, got {optimum!r}")
    c = 1.0 / float(k)
    if exact:
        gap = np.exp(-c * math.log(kappa) + gammaln(1 + c) + gammaln(Na + 1) - gammaln(Na + 1 + c))
    else:
        gap = math.gamma(1 + c) * (float(kappa) * Na) ** -c
    return float(optimum) - gap


def quadratic_tail(d: int) -> tuple[float, float]:
    r"""(k, kappa) of uniform recipes in :math:`[-1,1]^d` with quality :math:`q^* - \|x\|^2`: :math:`(d/2, V_d/2^d)`.

    Parameters
    ----------
    d : int
        Number of recipe dimensions (>= 1).

    Returns
    -------
    tuple of float
        :math:`k = d/2` and :math:`\kappa = \pi^{d/2} / (\Gamma(d/2+1)\,2^d)`; the law is exact for gaps <= 1.
    """
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    return d / 2.0, math.exp(d / 2.0 * math.log(math.pi) - gammaln(d / 2.0 + 1) - d * math.log(2.0))
