r"""Noise-level schedules for the samplers of :mod:`fastnips.diffusion.samplers` (k-diffusion convention).

Math
----
Every schedule is a decreasing sequence :math:`\sigma_0 > \sigma_1 > \dots > \sigma_{n-1} > 0` with a final
:math:`\sigma_n = 0` appended, so a sampler on ``sigmas`` takes :math:`n` steps and ends on the data. With the
ramp :math:`u_i = i/(n-1)` (:math:`u_0 = 0` when :math:`n = 1`):

``karras`` (EDM, Karras et al. 2022, eq. 5)
    :math:`\sigma_i = \big(\sigma_{\max}^{1/\rho} + u_i(\sigma_{\min}^{1/\rho} - \sigma_{\max}^{1/\rho})\big)^\rho`;
    :func:`edm_sigmas` is this schedule with EDM's defaults :math:`(0.002, 80, \rho=7)`.
``exponential``
    uniform in :math:`\log\sigma`: :math:`\log\sigma_i = (1-u_i)\log\sigma_{\max} + u_i\log\sigma_{\min}`.
``polyexponential``
    :math:`\log\sigma_i = \log\sigma_{\min} + (1-u_i)^\rho(\log\sigma_{\max} - \log\sigma_{\min})`
    (:math:`\rho = 1` is ``exponential``; larger :math:`\rho` spends more steps at small noise).
``vp`` (Song et al. 2021, VP-SDE with a linear :math:`\beta(t)`)
    :math:`\sigma(t) = \sqrt{\exp(\tfrac12\beta_d t^2 + \beta_{\min} t) - 1}` at :math:`t_i` evenly spaced from
    1 down to :math:`\epsilon_s`.

The first and last nonzero entries are exactly ``sigma_max`` and ``sigma_min`` (except ``vp``). Everything
is computed in float64 and returned in ``dtype`` (float64 by default: the samplers read the sigmas once as
Python floats, so the schedule's precision is what the step sizes get; EDM also builds its time steps in
float64).

Papers: Karras, Aittala, Aila, Laine, "Elucidating the Design Space of Diffusion-Based Generative Models"
(NeurIPS 2022); Song et al., "Score-Based Generative Modeling through Stochastic Differential Equations"
(ICLR 2021); names and conventions of k-diffusion (Crowson, ``k_diffusion/sampling.py``).
"""

from __future__ import annotations

import math
import numbers

import torch

__all__ = [
    "append_zero",
    "edm_sigmas",
    "get_sigmas_exponential",
    "get_sigmas_karras",
    "get_sigmas_polyexponential",
    "get_sigmas_vp",
]

#: EDM's defaults (Karras et al. 2022, Table 1): sigma_min, sigma_max, rho.
EDM_SIGMA_MIN = 0.002
EDM_SIGMA_MAX = 80.0
EDM_RHO = 7.0


def append_zero(sigmas: torch.Tensor) -> torch.Tensor:
    """``sigmas`` (1-D) with a final 0 appended."""
    return torch.cat([sigmas, sigmas.new_zeros(1)])


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n (the number of sampling steps) must be an integer >= 1, got {n!r}")
    return int(n)


def _check_positive(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v


def _check_range(n: int, sigma_min, sigma_max) -> tuple[float, float]:
    lo = _check_positive("sigma_min", sigma_min)
    hi = _check_positive("sigma_max", sigma_max)
    if n > 1 and not lo < hi:
        raise ValueError(f"sigma_min must be < sigma_max for n > 1 steps, got sigma_min={lo}, sigma_max={hi}")
    if n == 1 and lo > hi:
        raise ValueError(f"sigma_min must be <= sigma_max, got sigma_min={lo}, sigma_max={hi}")
    return lo, hi


def _ramp(n: int) -> torch.Tensor:
    """u_i = i/(n-1) in float64 (just [0] for n = 1)."""
    if n == 1:
        return torch.zeros(1, dtype=torch.float64)
    return torch.arange(n, dtype=torch.float64) / (n - 1)


def _finish(sigmas: torch.Tensor, device, dtype, ends: tuple[float, float] | None = None) -> torch.Tensor:
    if ends is not None:                 # exact endpoints (the formulas round them by an ulp or so)
        sigmas[0] = ends[1]
        sigmas[-1] = ends[0] if len(sigmas) > 1 else ends[1]
    return append_zero(sigmas).to(device=device, dtype=dtype)


def get_sigmas_karras(n: int, sigma_min: float, sigma_max: float, rho: float = 7.0, *,
                      device: str | torch.device = "cpu", dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""The EDM / Karras schedule, :math:`n` noise levels plus a final 0.

    .. math:: \sigma_i = \Big(\sigma_{\max}^{1/\rho} + \tfrac{i}{n-1}\big(\sigma_{\min}^{1/\rho}
              - \sigma_{\max}^{1/\rho}\big)\Big)^{\rho}, \quad i = 0, \dots, n-1, \qquad \sigma_n = 0.

    Parameters
    ----------
    n : int
        Number of sampling steps (>= 1); the result has ``n + 1`` entries.
    sigma_min, sigma_max : float
        The smallest and largest nonzero noise levels, ``0 < sigma_min < sigma_max``.
    rho : float
        Positive warping exponent (EDM: 7; 1 is linear in sigma).
    device, dtype
        Of the returned tensor.

    Returns
    -------
    torch.Tensor, shape (n + 1,)

    References
    ----------
    Karras et al., "Elucidating the Design Space of Diffusion-Based Generative Models", NeurIPS 2022, eq. (5).
    """
    n = _check_n(n)
    lo, hi = _check_range(n, sigma_min, sigma_max)
    rho = _check_positive("rho", rho)
    a, b = hi ** (1.0 / rho), lo ** (1.0 / rho)
    sigmas = (a + _ramp(n) * (b - a)) ** rho
    return _finish(sigmas, device, dtype, (lo, hi))


def edm_sigmas(n: int, *, sigma_min: float = EDM_SIGMA_MIN, sigma_max: float = EDM_SIGMA_MAX, rho: float = EDM_RHO,
               device: str | torch.device = "cpu", dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """:func:`get_sigmas_karras` with EDM's defaults (sigma_min 0.002, sigma_max 80, rho 7); shape (n + 1,)."""
    return get_sigmas_karras(n, sigma_min, sigma_max, rho, device=device, dtype=dtype)


def get_sigmas_exponential(n: int, sigma_min: float, sigma_max: float, *, device: str | torch.device = "cpu",
                           dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""Noise levels uniform in :math:`\log\sigma`, plus a final 0.

    .. math:: \sigma_i = \exp\big((1-u_i)\log\sigma_{\max} + u_i\log\sigma_{\min}\big), \quad u_i = \tfrac{i}{n-1}.

    Parameters
    ----------
    n, sigma_min, sigma_max, device, dtype
        As in :func:`get_sigmas_karras`.

    Returns
    -------
    torch.Tensor, shape (n + 1,)
    """
    n = _check_n(n)
    lo, hi = _check_range(n, sigma_min, sigma_max)
    u = _ramp(n)
    sigmas = torch.exp((1.0 - u) * math.log(hi) + u * math.log(lo))
    return _finish(sigmas, device, dtype, (lo, hi))


def get_sigmas_polyexponential(n: int, sigma_min: float, sigma_max: float, rho: float = 1.0, *,
                               device: str | torch.device = "cpu", dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""Polynomial in :math:`\log\sigma`, plus a final 0.

    .. math:: \log\sigma_i = \log\sigma_{\min} + (1-u_i)^{\rho}\,(\log\sigma_{\max} - \log\sigma_{\min}),
              \quad u_i = \tfrac{i}{n-1}.

    ``rho = 1`` is :func:`get_sigmas_exponential`.

    Parameters
    ----------
    rho : float
        Positive exponent.
    n, sigma_min, sigma_max, device, dtype
        As in :func:`get_sigmas_karras`.

    Returns
    -------
    torch.Tensor, shape (n + 1,)
    """
    n = _check_n(n)
    lo, hi = _check_range(n, sigma_min, sigma_max)
    rho = _check_positive("rho", rho)
    w = (1.0 - _ramp(n)) ** rho
    sigmas = torch.exp(math.log(lo) + w * (math.log(hi) - math.log(lo)))
    return _finish(sigmas, device, dtype, (lo, hi))


def get_sigmas_vp(n: int, beta_d: float = 19.9, beta_min: float = 0.1, eps_s: float = 1e-3, *,
                  device: str | torch.device = "cpu", dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""The VP-SDE noise levels (linear :math:`\beta(t)`) expressed as sigmas, plus a final 0.

    .. math:: \sigma(t) = \sqrt{e^{\frac12\beta_d t^2 + \beta_{\min} t} - 1}, \qquad
              t_i = 1 + u_i(\epsilon_s - 1), \quad u_i = \tfrac{i}{n-1}.

    Parameters
    ----------
    n : int
        Number of sampling steps (>= 1).
    beta_d, beta_min : float
        :math:`\beta(t) = \beta_{\min} + \beta_d t` (Song et al.: 19.9 and 0.1); both positive.
    eps_s : float
        Last time, ``0 < eps_s < 1``.
    device, dtype
        As in :func:`get_sigmas_karras`.

    Returns
    -------
    torch.Tensor, shape (n + 1,)

    References
    ----------
    Song et al., "Score-Based Generative Modeling through Stochastic Differential Equations", ICLR 2021;
    the sigma form as in Karras et al. 2022, Table 1.
    """
    n = _check_n(n)
    beta_d = _check_positive("beta_d", beta_d)
    beta_min = _check_positive("beta_min", beta_min)
    eps_s = _check_positive("eps_s", eps_s)
    if not eps_s < 1.0:
        raise ValueError(f"eps_s must be in (0, 1), got {eps_s}")
    t = 1.0 + _ramp(n) * (eps_s - 1.0)
    sigmas = torch.sqrt(torch.expm1(0.5 * beta_d * t * t + beta_min * t))
    return _finish(sigmas, device, dtype)
