r"""Multistep samplers of k-diffusion beyond DPM-Solver++(2M): linear multistep (LMS) in :math:`\sigma` and
DPM-Solver++(3M) SDE. One model evaluation per step; earlier evaluations are reused.

``sample_lms``
    Adams-Bashforth in :math:`\sigma` on the probability-flow ODE :math:`dx/d\sigma = d(x, \sigma)` with the
    non-uniform grid of the schedule: the last :math:`k` slopes :math:`d_{i-j}` are interpolated by a polynomial
    in :math:`\sigma` and integrated over :math:`[\sigma_i, \sigma_{i+1}]`,

    .. math:: x_{i+1} = x_i + \sum_{j=0}^{k-1} c_{ij}\, d_{i-j}, \qquad
              c_{ij} = \int_{\sigma_i}^{\sigma_{i+1}} \prod_{m \ne j} \frac{\tau - \sigma_{i-m}}
              {\sigma_{i-j} - \sigma_{i-m}}\, d\tau,

    :math:`k = \min(i + 1, \text{order})`. The coefficients are integrated exactly (the expanded Lagrange
    polynomial in :math:`\tau - \sigma_i`, Python floats; k-diffusion uses ``scipy.integrate.quad``, exact to
    rounding on these polynomials too).
``sample_dpmpp_3m_sde``
    The exponential integrator of DPM-Solver++ in :math:`\lambda = -\log\sigma` with the data prediction
    :math:`D(\lambda)` extrapolated quadratically from the last three evaluations, and noise fraction
    :math:`\eta`: with :math:`h = \lambda_{i+1} - \lambda_i`, :math:`H = (1+\eta)h`,
    :math:`\varphi_2 = 1 - (1 - e^{-H})/H`, :math:`\varphi_3 = \varphi_2/H - \tfrac12`,

    .. math:: x_{i+1} = e^{-H} x_i + (1 - e^{-H}) D_i + \varphi_2 \delta_1 - \varphi_3 \delta_2
              + \sigma_{i+1}\sqrt{1 - e^{-2\eta h}}\, S_{\rm noise}\, \varepsilon_i,

    where, with :math:`r_0 = h_{i-1}/h`, :math:`r_1 = h_{i-2}/h` and the scaled differences
    :math:`a = (D_i - D_{i-1})/r_0`, :math:`b = (D_{i-1} - D_{i-2})/r_1`: :math:`\delta_1 = a + (a - b)
    r_0/(r_0 + r_1)` and :math:`\delta_2 = (a - b)/(r_0 + r_1)` (first-order step, then :math:`\delta_1 = a`,
    :math:`\delta_2 = 0` on the second). :math:`x_N = D_{N-1}` when :math:`\sigma_N = 0`. The default noise is a
    Brownian tree (:mod:`~fastnips.diffusion.brownian`), as in k-diffusion.

    Weight of the quadratic term. :math:`\delta_2 \approx h^2 D''/2`, and the exact integral of the quadratic
    interpolant of :math:`D` is :math:`-2\varphi_3\delta_2`; k-diffusion (like the DPM-Solver reference code it
    follows) uses :math:`-\varphi_3\delta_2`, half of it, which makes the solver globally second order, not
    third. The default keeps k-diffusion's weight (equal results); ``exact_quadratic=True`` takes the exact
    integral (third order; measurements in docs/notes/diffusion.md).

Papers: Lu et al., "DPM-Solver++" (arXiv 2211.01095, 2022), multistep solvers; Karras et al., NeurIPS 2022
(LMS as a baseline); conventions and results of k-diffusion 0.1.1 (``sample_lms``, ``sample_dpmpp_3m_sde``;
equal to rounding in float64, tests/diffusion/test_kdiffusion_samplers.py).

Examples
--------
>>> import torch
>>> from fastnips.diffusion import GMM, edm_sigmas
>>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
>>> sample_lms(gmm, x, edm_sigmas(10)).shape
torch.Size([64, 2])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import torch

from .loop import NoiseSampler, _check_number, _draw, _sample_loop
from .singlestep import _brownian_default

__all__ = ["lms_coefficients", "sample_dpmpp_3m_sde", "sample_lms"]


def lms_coefficients(sigmas: list[float], i: int, order: int) -> list[float]:
    r"""The linear-multistep weights :math:`c_{ij}`, :math:`j = 0..order-1`, of step ``i`` (module docstring):
    the exact integral over :math:`[\sigma_i, \sigma_{i+1}]` of the Lagrange basis polynomials through
    :math:`\sigma_i, \sigma_{i-1}, \dots, \sigma_{i-order+1}`.

    Parameters
    ----------
    sigmas : list of float
        The schedule.
    i : int
        Step index, ``order - 1 <= i < len(sigmas) - 1``.
    order : int
        Number of slopes, >= 1.

    Returns
    -------
    list of float
        ``c[j]`` multiplies the slope at :math:`\sigma_{i-j}`; they sum to :math:`\sigma_{i+1} - \sigma_i`.

    Examples
    --------
    >>> lms_coefficients([3.0, 2.0, 1.0], 1, 2)  # Adams-Bashforth 2 on a uniform grid: -h (3/2, -1/2)
    [-1.5, 0.5]
    """
    if not (isinstance(order, numbers.Integral) and 1 <= order <= i + 1 and i + 1 < len(sigmas)):
        raise ValueError(f"need 1 <= order <= i + 1 and i + 1 < len(sigmas), got order={order!r}, i={i!r}")
    a = float(sigmas[i])
    nodes = [float(sigmas[i - m]) - a for m in range(order)]       # in u = tau - sigma_i: integrate over [0, h]
    h = float(sigmas[i + 1]) - a
    out = []
    for j in range(order):
        coef, scale = [1.0], 1.0                        # prod_{m != j} (tau - nodes[m]), lowest power first
        for m, t in enumerate(nodes):
            if m != j:
                coef = [(coef[k - 1] if k else 0.0) - t * (coef[k] if k < len(coef) else 0.0)
                        for k in range(len(coef) + 1)]
                scale *= nodes[j] - t
        out.append(sum(c * h ** (k + 1) / (k + 1) for k, c in enumerate(coef)) / scale)   # int_0^h u^k du
    return out


def sample_lms(model: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor,
               extra_args: dict[str, Any] | None = None, callback: Callable[[dict[str, Any]], object] | None = None,
               disable: bool | None = None, order: int = 4) -> torch.Tensor:
    r"""Linear multistep (Adams-Bashforth of order up to ``order``) in :math:`\sigma` on the probability-flow ODE.

    :math:`x_{i+1} = x_i + \sum_{j<k} c_{ij} d_{i-j}` with :math:`d = (x - D)/\sigma`, :math:`k = \min(i+1,
    \text{order})` and the weights of :func:`lms_coefficients`. One evaluation per step. A step to
    :math:`\sigma = 0` uses the same polynomial (k-diffusion's rule).

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable
        As in :func:`~fastnips.diffusion.samplers.sample_euler`.
    order : int
        Highest number of slopes combined, >= 1 (1: Euler).

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Karras et al., NeurIPS 2022 (sec. 3, multistep baselines); k-diffusion ``sample_lms``.

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_lms(gmm, x, edm_sigmas(10), order=3).shape
    torch.Size([64, 2])
    """
    if isinstance(order, bool) or not isinstance(order, numbers.Integral) or order < 1:
        raise ValueError(f"order must be an integer >= 1, got {order!r}")
    ds: list[torch.Tensor] = []

    def step(x, denoised, old_denoised, sig, i):
        if i == 0:
            ds.clear()                                # a fresh history per call
        ds.append((x - denoised) / sig[i])
        if len(ds) > order:
            ds.pop(0)
        coeffs = lms_coefficients(sig, i, min(i + 1, order))
        x = x.clone()
        for c, d in zip(coeffs, reversed(ds)):
            x.add_(d, alpha=c)
        return x

    return _sample_loop(model, x, sigmas, extra_args, callback, disable, step)


def sample_dpmpp_3m_sde(model: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor,
                        extra_args: dict[str, Any] | None = None,
                        callback: Callable[[dict[str, Any]], object] | None = None, disable: bool | None = None,
                        eta: float = 1.0, s_noise: float = 1.0, noise_sampler: NoiseSampler | None = None,
                        seed: int | None = None, exact_quadratic: bool = False) -> torch.Tensor:
    r"""DPM-Solver++(3M) SDE: multistep data-prediction solver (quadratic in :math:`\lambda`), noise fraction
    :math:`\eta`.

    The update is in the module docstring. ``eta = 0`` gives the deterministic DPM-Solver++(3M); ``eta = 1`` the
    reverse SDE. The default noise is a Brownian tree over the schedule seeded by ``seed`` (k-diffusion's
    default).

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable
        As in :func:`~fastnips.diffusion.samplers.sample_euler`.
    eta : float
        >= 0.
    s_noise : float
        >= 0.
    noise_sampler : callable, optional
        ``noise_sampler(sigma_i, sigma_{i+1})`` -> standard normal like ``x``.
    seed : int, optional
        Seeds the default Brownian tree (None: a random seed).
    exact_quadratic : bool
        False (default): k-diffusion's weight of the quadratic term (globally second order); True: the exact
        integral of the quadratic interpolant (third order). See the module docstring.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Lu et al., "DPM-Solver++" (2022); k-diffusion ``sample_dpmpp_3m_sde``.

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_dpmpp_3m_sde(gmm, x, edm_sigmas(10), seed=0).shape
    torch.Size([64, 2])
    """
    eta, s_noise = _check_number("eta", eta), _check_number("s_noise", s_noise)
    if not isinstance(exact_quadratic, bool):
        raise ValueError(f"exact_quadratic must be a bool, got {exact_quadratic!r}")
    quad = 2.0 if exact_quadratic else 1.0
    noise = _brownian_default(x, sigmas, noise_sampler, seed) if eta > 0.0 else None
    hist: dict[str, Any] = {}

    def step(x, denoised, old_denoised, sig, i):
        if i == 0:
            hist.update(d1=None, d2=None, h1=None, h2=None)
        sigma, sigma_next = sig[i], sig[i + 1]
        if sigma_next == 0.0:
            return denoised.clone()
        h = math.log(sigma / sigma_next)
        big_h = (1.0 + eta) * h
        x = torch.lerp(denoised, x, math.exp(-big_h))             # e^{-H} x + (1 - e^{-H}) D_i
        phi_2 = 1.0 + math.expm1(-big_h) / big_h
        if hist["h2"] is not None:
            r0, r1 = hist["h1"] / h, hist["h2"] / h
            a = (denoised - hist["d1"]) / r0
            b = (hist["d1"] - hist["d2"]) / r1
            phi_3 = phi_2 / big_h - 0.5
            x = x.add_(a + (a - b) * (r0 / (r0 + r1)), alpha=phi_2).add_(a - b, alpha=-quad * phi_3 / (r0 + r1))
        elif hist["h1"] is not None:
            x = x.add_(denoised - hist["d1"], alpha=phi_2 * h / hist["h1"])
        if eta > 0.0:
            x = x.add_(_draw(noise, sigma, sigma_next, x),
                       alpha=sigma_next * math.sqrt(-math.expm1(-2.0 * eta * h)) * s_noise)
        hist.update(d2=hist["d1"], d1=denoised, h2=hist["h1"], h1=h)
        return x

    return _sample_loop(model, x, sigmas, extra_args, callback, disable, step)
