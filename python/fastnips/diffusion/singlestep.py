r"""Single-step second-order samplers of k-diffusion: DPM-Solver-2 (with churn or ancestral noise),
DPM-Solver++(2S) ancestral and DPM-Solver++ SDE.

Each step evaluates the denoiser twice: at :math:`\sigma_i` and at an intermediate level
:math:`\sigma_s = \sigma_i^{1-r}\sigma_{\rm next}^{r}` (:math:`r = 1/2`: the geometric midpoint, i.e. the
midpoint in :math:`\lambda = -\log\sigma`). With :math:`D` the denoiser and :math:`d(x, \sigma) = (x - D)/\sigma`:

``sample_dpm_2``
    DPM-Solver-2 in the :math:`\sigma` form (Lu et al. 2022, Algorithm 1, :math:`r = 1/2`):
    :math:`x_m = x + (\sigma_m - \sigma)\,d(x, \sigma)`, :math:`x_{i+1} = x + (\sigma_{i+1} - \sigma)\,d(x_m,
    \sigma_m)`, with EDM's optional churn first (as ``sample_heun``).
``sample_dpm_2_ancestral``
    The same step to :math:`\sigma_{\rm down}`, then fresh noise :math:`\sigma_{\rm up}`
    (:func:`~fastnips.diffusion.loop.get_ancestral_step`).
``sample_dpmpp_2s_ancestral``
    DPM-Solver++(2S) (Lu et al. 2022b, Algorithm 1, data prediction): with :math:`\rho = \sigma_s / \sigma`,
    :math:`x_s = \rho x + (1 - \rho) D(x, \sigma)`,
    :math:`x_{i+1} = \tfrac{\sigma_{\rm down}}{\sigma} x + (1 - \tfrac{\sigma_{\rm down}}{\sigma}) D(x_s, \sigma_s)`,
    then noise :math:`\sigma_{\rm up}`.
``sample_dpmpp_sde``
    The stochastic DPM-Solver++ of k-diffusion: both sub-steps are ancestral steps from :math:`\sigma` (to
    :math:`\sigma_s`, then to :math:`\sigma_{i+1}` with :math:`D = (1 - \tfrac{1}{2r}) D_i + \tfrac{1}{2r} D_s`),
    their noise read from one Brownian path (:mod:`~fastnips.diffusion.brownian`), so the two increments over
    :math:`[\sigma_s, \sigma]` and :math:`[\sigma_{i+1}, \sigma]` are correlated as Brownian increments are.

Every step to :math:`\sigma_{i+1} = 0` is an Euler step (one evaluation). Signatures and results follow
k-diffusion 0.1.1 (equal to rounding in float64, tests/diffusion/test_kdiffusion_samplers.py), with two
differences: ``seed`` seeds the default noise (k-diffusion uses torch's global generator), and
``sample_dpm_2_ancestral`` adds its noise whenever :math:`\sigma_{i+1} > 0` (k-diffusion skips it on a step whose
:math:`\sigma_{\rm down}` is 0, which happens only for :math:`\eta > \sigma_i / \sqrt{\sigma_i^2 - \sigma_{i+1}^2}`).

Papers: Lu, Zhou, Bao, Chen, Li, Zhu, "DPM-Solver: A Fast ODE Solver for Diffusion Probabilistic Model Sampling
in Around 10 Steps" (NeurIPS 2022) and "DPM-Solver++" (arXiv 2211.01095); Karras et al., NeurIPS 2022.

Examples
--------
>>> import torch
>>> from fastnips.diffusion import GMM, edm_sigmas
>>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
>>> sample_dpmpp_2s_ancestral(gmm, x, edm_sigmas(6), seed=0).shape
torch.Size([64, 2])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .brownian import BrownianTreeNoiseSampler
from .loop import (
    NoiseSampler,
    _ancestral,
    _check_number,
    _check_seed,
    _check_sigmas,
    _draw,
    _gaussian_churn,
    _resolve_noise,
    _sample_loop,
    default_noise_sampler,
    get_ancestral_step,
)

__all__ = ["sample_dpm_2", "sample_dpm_2_ancestral", "sample_dpmpp_2s_ancestral", "sample_dpmpp_sde"]

Model = Callable[..., torch.Tensor]
Callback = Callable[[dict[str, Any]], object]


def _brownian_default(x, sigmas, noise_sampler, seed) -> NoiseSampler:
    """``noise_sampler``, or a Brownian tree over the schedule's ``[min sigma > 0, max sigma]`` seeded by ``seed``
    (None: a seed drawn from torch's global generator, as k-diffusion does)."""
    if noise_sampler is not None:
        return _resolve_noise(x, noise_sampler, seed)
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise ValueError(f"x must be a floating-point torch.Tensor, got {type(x).__name__}")
    pos = [s for s in _check_sigmas(sigmas)[1] if s > 0.0]
    seed = None if seed is None else _check_seed(seed)
    if len(pos) < 2:                                   # one step, to 0: an Euler step, no noise is drawn
        return default_noise_sampler(x, seed)
    return BrownianTreeNoiseSampler(x, min(pos), max(pos), seed=seed)


def sample_dpm_2(model: Model, x: torch.Tensor, sigmas: torch.Tensor, extra_args: dict[str, Any] | None = None,
                 callback: Callback | None = None, disable: bool | None = None, s_churn: float = 0.0,
                 s_tmin: float = 0.0, s_tmax: float = float("inf"), s_noise: float = 1.0,
                 noise_sampler: NoiseSampler | None = None, seed: int | None = None) -> torch.Tensor:
    r"""DPM-Solver-2 steps in :math:`\sigma` (midpoint at :math:`\sqrt{\hat\sigma_i\sigma_{i+1}}`), with EDM churn.

    .. math:: x_m = \hat x_i + (\sigma_m - \hat\sigma_i)\, d(\hat x_i, \hat\sigma_i), \qquad
              x_{i+1} = \hat x_i + (\sigma_{i+1} - \hat\sigma_i)\, d(x_m, \sigma_m), \qquad
              \sigma_m = \sqrt{\hat\sigma_i \sigma_{i+1}},

    churn :math:`(\hat x_i, \hat\sigma_i)` as in :func:`~fastnips.diffusion.samplers.sample_euler`; an Euler step
    when :math:`\sigma_{i+1} = 0`. Second order; two evaluations per step.

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable, s_churn, s_tmin, s_tmax, s_noise, noise_sampler, seed
        As in :func:`~fastnips.diffusion.samplers.sample_euler`.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Lu et al., "DPM-Solver", NeurIPS 2022, Algorithm 1 (r = 1/2); Karras et al., NeurIPS 2022, Algorithm 2.

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_dpm_2(gmm, x, edm_sigmas(5)).shape
    torch.Size([64, 2])
    """
    return _gaussian_churn(model, x, sigmas, extra_args, callback, disable, s_churn, s_tmin, s_tmax, s_noise,
                           noise_sampler, seed, heun=False, midpoint=True)


def _dpm2_to(evaluate, x, denoised, sigma: float, target: float) -> torch.Tensor:
    """A DPM-Solver-2 step from (x, sigma) with D(x, sigma) = denoised to ``target`` (Euler if target is 0)."""
    d = (x - denoised) / sigma
    if target == 0.0:
        return torch.add(x, d, alpha=-sigma)
    sigma_mid = math.sqrt(sigma * target)
    x_2 = torch.add(x, d, alpha=sigma_mid - sigma)
    d_2 = (x_2 - evaluate(x_2, sigma_mid)).div_(sigma_mid)
    return torch.add(x, d_2, alpha=target - sigma)


def sample_dpm_2_ancestral(model: Model, x: torch.Tensor, sigmas: torch.Tensor,
                           extra_args: dict[str, Any] | None = None, callback: Callback | None = None,
                           disable: bool | None = None, eta: float = 1.0, s_noise: float = 1.0,
                           noise_sampler: NoiseSampler | None = None, seed: int | None = None) -> torch.Tensor:
    r"""Ancestral sampling with DPM-Solver-2 steps: a DPM-Solver-2 step to :math:`\sigma_{\rm down}`, then
    :math:`+\, S_{\rm noise}\sigma_{\rm up} z_i` (when :math:`\sigma_{i+1} > 0`).

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable, eta, s_noise, noise_sampler, seed
        As in :func:`~fastnips.diffusion.samplers.sample_euler_ancestral`.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Lu et al., "DPM-Solver", NeurIPS 2022; Ho, Jain, Abbeel, NeurIPS 2020 (ancestral step).

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_dpm_2_ancestral(gmm, x, edm_sigmas(5), seed=0).shape
    torch.Size([64, 2])
    """
    return _ancestral(model, x, sigmas, extra_args, callback, disable, eta, s_noise, noise_sampler, seed,
                      lambda x, den, sigma, sigma_down, ev: _dpm2_to(ev, x, den, sigma, sigma_down), evals_per_step=2)


def _dpmpp_2s_to(x, denoised, sigma: float, sigma_down: float, evaluate) -> torch.Tensor:
    """A DPM-Solver++(2S) step from (x, sigma) to ``sigma_down`` (Euler, i.e. D, when sigma_down is 0)."""
    if sigma_down == 0.0:
        return denoised.clone()                                         # x + (0 - sigma) d = D
    sigma_s = math.sqrt(sigma * sigma_down)
    x_2 = torch.lerp(denoised, x, sigma_s / sigma)
    return torch.lerp(evaluate(x_2, sigma_s), x, sigma_down / sigma)


def sample_dpmpp_2s_ancestral(model: Model, x: torch.Tensor, sigmas: torch.Tensor,
                              extra_args: dict[str, Any] | None = None, callback: Callback | None = None,
                              disable: bool | None = None, eta: float = 1.0, s_noise: float = 1.0,
                              noise_sampler: NoiseSampler | None = None, seed: int | None = None) -> torch.Tensor:
    r"""Ancestral sampling with DPM-Solver++(2S) steps (data prediction, midpoint in :math:`\lambda`).

    .. math:: x_s = \rho x_i + (1 - \rho) D(x_i, \sigma_i), \quad \rho = \frac{\sigma_s}{\sigma_i}
              = \sqrt{\frac{\sigma_{\rm down}}{\sigma_i}}, \qquad
              x_{i+1} = \frac{\sigma_{\rm down}}{\sigma_i} x_i + \Big(1 - \frac{\sigma_{\rm down}}{\sigma_i}\Big)
              D(x_s, \sigma_s) + S_{\rm noise}\sigma_{\rm up} z_i,

    an Euler step when :math:`\sigma_{\rm down} = 0`, noise only when :math:`\sigma_{i+1} > 0`. ``eta = 0``: the
    deterministic DPM-Solver++(2S).

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable, eta, s_noise, noise_sampler, seed
        As in :func:`~fastnips.diffusion.samplers.sample_euler_ancestral`.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Lu et al., "DPM-Solver++", arXiv 2211.01095 (2022), Algorithm 1.

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_dpmpp_2s_ancestral(gmm, x, edm_sigmas(5), eta=0.0).shape
    torch.Size([64, 2])
    """
    return _ancestral(model, x, sigmas, extra_args, callback, disable, eta, s_noise, noise_sampler, seed,
                      _dpmpp_2s_to, evals_per_step=2)


def sample_dpmpp_sde(model: Model, x: torch.Tensor, sigmas: torch.Tensor, extra_args: dict[str, Any] | None = None,
                     callback: Callback | None = None, disable: bool | None = None, eta: float = 1.0,
                     s_noise: float = 1.0, noise_sampler: NoiseSampler | None = None, r: float = 0.5,
                     seed: int | None = None) -> torch.Tensor:
    r"""DPM-Solver++ SDE (k-diffusion's ``sample_dpmpp_sde``): two ancestral data-prediction sub-steps on one
    Brownian path.

    With :math:`\sigma_s = \sigma_i^{1-r}\sigma_{i+1}^r` and :math:`(\sigma_{\rm d}, \sigma_{\rm u})` from
    :func:`~fastnips.diffusion.loop.get_ancestral_step`:

    .. math:: x_s = \tfrac{\sigma_{\rm d}}{\sigma_i} x_i + (1 - \tfrac{\sigma_{\rm d}}{\sigma_i}) D_i
              + S_{\rm noise}\sigma_{\rm u}\,\varepsilon(\sigma_i, \sigma_s)
              \quad [(\sigma_{\rm d}, \sigma_{\rm u}) \text{ of } \sigma_i \to \sigma_s],

    .. math:: x_{i+1} = \tfrac{\sigma_{\rm d}'}{\sigma_i} x_i + (1 - \tfrac{\sigma_{\rm d}'}{\sigma_i})
              \big((1 - \tfrac{1}{2r}) D_i + \tfrac{1}{2r} D(x_s, \sigma_s)\big)
              + S_{\rm noise}\sigma_{\rm u}'\,\varepsilon(\sigma_i, \sigma_{i+1})
              \quad [(\sigma_{\rm d}', \sigma_{\rm u}') \text{ of } \sigma_i \to \sigma_{i+1}],

    an Euler step when :math:`\sigma_{i+1} = 0`. The default noise is a
    :class:`~fastnips.diffusion.brownian.BrownianTreeNoiseSampler` over the schedule (as k-diffusion), seeded by
    ``seed``; with i.i.d. noise the two increments of a step would be independent, which is not a Brownian path.

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable
        As in :func:`~fastnips.diffusion.samplers.sample_euler`.
    eta : float
        Noise fraction, >= 0 (0: the deterministic DPM-Solver++ single-step of order 2).
    s_noise : float
        >= 0.
    noise_sampler : callable, optional
        ``noise_sampler(sigma_a, sigma_b)``; default a Brownian tree seeded by ``seed``.
    r : float
        Position of the intermediate level in :math:`\lambda`, in (0, 1].
    seed : int, optional
        Seeds the Brownian tree (None: a random seed).

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Lu et al., "DPM-Solver++" (2022); Crowson, k-diffusion ``sample_dpmpp_sde``.

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_dpmpp_sde(gmm, x, edm_sigmas(5), seed=0).shape
    torch.Size([64, 2])
    """
    eta, s_noise = _check_number("eta", eta), _check_number("s_noise", s_noise)
    r = _check_number("r", r)
    if not 0.0 < r <= 1.0:
        raise ValueError(f"r must be in (0, 1], got {r!r}")
    noise = _brownian_default(x, sigmas, noise_sampler, seed)
    fac = 1.0 / (2.0 * r)

    def step(x, denoised, old_denoised, sig, i, evaluate):
        sigma, sigma_next = sig[i], sig[i + 1]
        if sigma_next == 0.0:
            return denoised.clone()                                     # Euler to 0
        sigma_s = math.exp((1.0 - r) * math.log(sigma) + r * math.log(sigma_next))
        sd, su = get_ancestral_step(sigma, sigma_s, eta)
        x_2 = torch.lerp(denoised, x, sd / sigma)
        if su > 0.0:
            x_2 = x_2.add_(_draw(noise, sigma, sigma_s, x), alpha=s_noise * su)
        denoised_d = torch.lerp(denoised, evaluate(x_2, sigma_s), fac)
        sd, su = get_ancestral_step(sigma, sigma_next, eta)
        x = torch.lerp(denoised_d, x, sd / sigma)
        if su > 0.0:
            x = x.add_(_draw(noise, sigma, sigma_next, x), alpha=s_noise * su)
        return x

    return _sample_loop(model, x, sigmas, extra_args, callback, disable, step, evals_per_step=2)
