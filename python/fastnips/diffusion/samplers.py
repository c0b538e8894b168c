r"""Few-step samplers for denoisers in the EDM / k-diffusion form, and the Fast-Driver Sampler (FDS).

Math
----
Data :math:`x_0 \sim p_0` are noised as :math:`x = x_0 + \sigma\varepsilon`. A denoiser
:math:`D(x, \sigma) \approx E[x_0 \mid x]` gives the score :math:`\nabla\log p_\sigma = (D - x)/\sigma^2`, and the
probability-flow ODE in :math:`\sigma` is

.. math:: \frac{dx}{d\sigma} = d(x, \sigma) = \frac{x - D(x, \sigma)}{\sigma}.

Every sampler walks a decreasing schedule ``sigmas`` :math:`\sigma_0 > \dots > \sigma_N` (``sigmas[-1] = 0``
ends on the data; see :mod:`fastnips.diffusion.schedules`) in :math:`N` steps:

``sample_euler``
    :math:`x_{i+1} = x_i + (\sigma_{i+1} - \sigma_i)\, d(x_i, \sigma_i)
    = D_i + \tfrac{\sigma_{i+1}}{\sigma_i}(x_i - D_i)`, with EDM's optional churn (below).
``sample_heun``
    EDM Algorithm 1 (``s_churn = 0``) / 2 (``s_churn > 0``): the Euler predictor, then the trapezoidal corrector
    :math:`x_{i+1} = x_i + (\sigma_{i+1} - \hat\sigma_i)\tfrac12(d(\hat x_i, \hat\sigma_i) + d(x', \sigma_{i+1}))`;
    the last step is plain Euler when :math:`\sigma_{i+1} = 0` (where :math:`d` is undefined).
``sample_edm``
    ``sample_heun`` with Gaussian churn on by default (EDM's ImageNet-64 setting).
``sample_euler_ancestral``
    Euler to :math:`\sigma_{\rm down}`, then fresh noise of level :math:`\sigma_{\rm up}`
    (:func:`get_ancestral_step`).
``sample_ddim``
    Alias of ``sample_euler_ancestral`` with DDIM's default ``eta = 0`` (see "what maps to what").
``sample_dpmpp_2m``
    DPM-Solver++(2M) (Lu et al. 2022b, Algorithm 2) in :math:`\lambda = -\log\sigma`:
    with :math:`h_i = \lambda_{i+1} - \lambda_i`, :math:`r_i = h_{i-1}/h_i`,
    :math:`x_{i+1} = \tfrac{\sigma_{i+1}}{\sigma_i} x_i + (1 - e^{-h_i})\big((1 + \tfrac{1}{2r_i})D_i
    - \tfrac{1}{2r_i} D_{i-1}\big)` (first order on the first step; :math:`x_N = D_{N-1}` when :math:`\sigma_N = 0`).
``sample_dpmpp_2m_sde``
    The SDE variant of DPM-Solver++(2M) with a noise fraction :math:`\eta` (below).
``sample_fds``
    The Fast-Driver Sampler (:mod:`fastnips.diffusion.fds`, re-exported here).
``sample_dpm_2``, ``sample_dpm_2_ancestral``, ``sample_dpmpp_2s_ancestral``, ``sample_dpmpp_sde``
    The single-step second-order samplers of k-diffusion (:mod:`fastnips.diffusion.singlestep`, re-exported).
``sample_lms``, ``sample_dpmpp_3m_sde``
    Linear multistep and DPM-Solver++(3M) SDE (:mod:`fastnips.diffusion.multistep`, re-exported).

EDM churn (Karras et al. 2022, Algorithm 2). With :math:`N` steps,
:math:`\gamma_i = \min(S_{\rm churn}/N, \sqrt2 - 1)` if :math:`S_{\rm tmin} \le \sigma_i \le S_{\rm tmax}`, else 0;
:math:`\hat\sigma_i = \sigma_i(1 + \gamma_i)`,
:math:`\hat x_i = x_i + \sqrt{\hat\sigma_i^2 - \sigma_i^2}\, S_{\rm noise}\, \varepsilon_i`, then the ODE step from
:math:`(\hat x_i, \hat\sigma_i)` to :math:`\sigma_{i+1}`.

DPM-Solver++(2M) SDE. Solving :math:`dx = -(1+\eta)\,\sigma\nabla\log p_\sigma\, d\sigma
+ \sqrt{2\eta\sigma}\, dW_\sigma` exactly in its linear part, with :math:`H = (1+\eta)h`,

.. math:: x_{i+1} = e^{-H} x_i + (1 - e^{-H}) D_i + c_i (D_i - D_{i-1})/r_i
          + \sigma_{i+1}\sqrt{1 - e^{-2\eta h}}\, S_{\rm noise}\, z_i,

where the linear-in-:math:`\lambda` model of :math:`D` gives :math:`c_i = 1 - (1 - e^{-H})/H` (``"heun"``) and
its midpoint rule :math:`c_i = \tfrac12(1 - e^{-H})` (``"midpoint"``; with :math:`\eta = 0` this is exactly
DPM-Solver++(2M)). :math:`\eta = 1` is the reverse SDE; :math:`\eta = 0` the ODE.

What maps to what
-----------------
* DDIM with :math:`\eta = 0` **is** Euler in :math:`\sigma` (Song et al. 2021a; Karras et al. 2022, sec. 3),
  and DPM-Solver++(1): all three are :math:`x_{i+1} = D_i + \tfrac{\sigma_{i+1}}{\sigma_i}(x_i - D_i)`.
  ``sample_ddim(eta=0)``, ``sample_euler`` and ``sample_euler_ancestral(eta=0)`` agree bit for bit.
* DDIM with :math:`\eta > 0` in :math:`\sigma`-space (:math:`\sigma^2 = (1-\bar\alpha)/\bar\alpha`,
  :math:`x_{VE} = x_{VP}/\sqrt{\bar\alpha}`) **is** Euler ancestral with the same :math:`\eta`: DDIM's
  :math:`\sigma^{\rm DDIM}_t/\sqrt{\bar\alpha_{t-1}}` equals :math:`\sigma_{\rm up}` of :func:`get_ancestral_step`
  and its direction term equals the Euler step to :math:`\sigma_{\rm down}`. DDIM :math:`\eta = 1` is DDPM's
  ancestral sampler on the same grid. So ``sample_ddim`` is an alias, not a separate algorithm.
* EDM Algorithm 1 = ``sample_heun(s_churn=0)``; Algorithm 2 = ``sample_edm`` = ``sample_heun(s_churn > 0)``.
* ``sample_dpmpp_2m_sde(eta=0, solver_type="midpoint")`` = ``sample_dpmpp_2m``.
* ``sample_fds(gamma=0)`` = its base solver (``sample_heun`` / ``sample_euler``) bit for bit;
  ``sample_fds`` with a Gaussian driver, ``n_fast=1`` and ``normalize_q=True`` = ``sample_heun`` with churn and
  a noise sampler reading the same Gaussian stream, bit for bit.

Conventions (k-diffusion): ``sample_<name>(model, x, sigmas, extra_args=None, callback=None, disable=None,
...)`` with ``model(x, sigma * s_in, **extra_args)`` returning :math:`D(x, \sigma)`; the shared step loops,
callbacks, noise samplers and finiteness checks are in :mod:`fastnips.diffusion.loop`.

Examples
--------
>>> import torch
>>> from fastnips.diffusion import GMM, get_sigmas_karras
>>> gmm = GMM.grid2d()
>>> x = 80.0 * torch.randn(256, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
>>> sample_dpmpp_2m(gmm, x, get_sigmas_karras(10, 0.002, 80.0)).shape
torch.Size([256, 2])

Papers: Karras, Aittala, Aila, Laine, "Elucidating the Design Space of Diffusion-Based Generative Models"
(NeurIPS 2022), Algorithms 1-2; Song, Meng, Ermon, "Denoising Diffusion Implicit Models" (ICLR 2021);
Lu, Zhou, Bao, Chen, Li, Zhu, "DPM-Solver++: Fast Solver for Guided Sampling of Diffusion Probabilistic
Models" (2022); Ho, Jain, Abbeel, "Denoising Diffusion Probabilistic Models" (NeurIPS 2020); conventions of
k-diffusion (Crowson, ``k_diffusion/sampling.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .fds import FDS_DEFAULT_GAMMA, FDS_SOLVERS, sample_fds
from .loop import (
    NoiseSampler,
    _ancestral,
    _check_number,
    _draw,
    _gaussian_churn,
    _resolve_noise,
    _sample_loop,
    default_noise_sampler,
    get_ancestral_step,
    to_d,
)
from .multistep import sample_dpmpp_3m_sde, sample_lms
from .singlestep import sample_dpm_2, sample_dpm_2_ancestral, sample_dpmpp_2s_ancestral, sample_dpmpp_sde

__all__ = [
    "FDS_DEFAULT_GAMMA",
    "FDS_SOLVERS",
    "SAMPLERS",
    "default_noise_sampler",
    "get_ancestral_step",
    "sample_ddim",
    "sample_dpm_2",
    "sample_dpm_2_ancestral",
    "sample_dpmpp_2m",
    "sample_dpmpp_2m_sde",
    "sample_dpmpp_2s_ancestral",
    "sample_dpmpp_3m_sde",
    "sample_dpmpp_sde",
    "sample_edm",
    "sample_euler",
    "sample_euler_ancestral",
    "sample_fds",
    "sample_heun",
    "sample_lms",
    "to_d",
]

_DPMPP_SDE_SOLVERS = ("midpoint", "heun")


# ----------------------------------------------------------------------------------------------- ODE / churn


def sample_euler(model: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor,
                 extra_args: dict[str, Any] | None = None, callback: Callable[[dict[str, Any]], object] | None = None,
                 disable: bool | None = None, s_churn: float = 0.0, s_tmin: float = 0.0, s_tmax: float = float("inf"),
                 s_noise: float = 1.0, noise_sampler: NoiseSampler | None = None,
                 seed: int | None = None) -> torch.Tensor:
    r"""Euler's method on the probability-flow ODE (= DDIM with :math:`\eta = 0`), with optional EDM churn.

    .. math:: \hat\sigma_i = \sigma_i(1+\gamma_i), \quad
              \hat x_i = x_i + \sqrt{\hat\sigma_i^2 - \sigma_i^2}\, S_{\rm noise}\, \varepsilon_i, \quad
              x_{i+1} = \hat x_i + (\sigma_{i+1} - \hat\sigma_i)\,
              \frac{\hat x_i - D(\hat x_i, \hat\sigma_i)}{\hat\sigma_i},

    :math:`\gamma_i = \min(S_{\rm churn}/N, \sqrt2-1)` for :math:`S_{\rm tmin} \le \sigma_i \le S_{\rm tmax}`,
    else 0 (so ``s_churn = 0`` is deterministic).

    Parameters
    ----------
    model : callable
        ``model(x, sigma * s_in, **extra_args)`` -> :math:`D(x, \sigma)`, shape of ``x``.
    x : torch.Tensor, shape (B, ...)
        Start sample at ``sigmas[0]`` (e.g. ``sigmas[0] * randn``).
    sigmas : torch.Tensor, shape (N + 1,)
        Strictly decreasing noise levels, the last may be 0.
    extra_args : dict, optional
        Keyword arguments for ``model``.
    callback : callable, optional
        Called once per step with ``{"x", "i", "sigma", "sigma_hat", "denoised"}``.
    disable : bool, optional
        Disable the tqdm bar (None: tqdm decides, shown on a terminal).
    s_churn, s_tmin, s_tmax, s_noise : float
        EDM's churn parameters (Karras et al. 2022, Algorithm 2).
    noise_sampler : callable, optional
        ``noise_sampler(sigma_i, sigma_hat_i)`` -> standard-normal tensor like ``x``.
    seed : int, optional
        Seeds the default noise sampler (exclusive with ``noise_sampler``).

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Karras et al., NeurIPS 2022; Song, Meng, Ermon, "Denoising Diffusion Implicit Models", ICLR 2021.

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_euler(gmm, x, edm_sigmas(10)).shape
    torch.Size([64, 2])
    """
    return _gaussian_churn(model, x, sigmas, extra_args, callback, disable, s_churn, s_tmin, s_tmax, s_noise,
                           noise_sampler, seed, heun=False)


def sample_heun(model: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor,
                extra_args: dict[str, Any] | None = None, callback: Callable[[dict[str, Any]], object] | None = None,
                disable: bool | None = None, s_churn: float = 0.0, s_tmin: float = 0.0, s_tmax: float = float("inf"),
                s_noise: float = 1.0, noise_sampler: NoiseSampler | None = None,
                seed: int | None = None) -> torch.Tensor:
    r"""Heun's second-order method, EDM Algorithm 1 (``s_churn = 0``) or 2 (``s_churn > 0``).

    .. math:: x' = \hat x_i + (\sigma_{i+1} - \hat\sigma_i)\, d_i, \qquad
              x_{i+1} = \hat x_i + (\sigma_{i+1} - \hat\sigma_i)\, \tfrac12\big(d_i + d(x', \sigma_{i+1})\big),

    with :math:`d_i = d(\hat x_i, \hat\sigma_i)` and churn :math:`(\hat x_i, \hat\sigma_i)` as in
    :func:`sample_euler`; when :math:`\sigma_{i+1} = 0` the step is :math:`x_{i+1} = x'` (Euler). Costs
    :math:`2N - 1` model evaluations when ``sigmas`` ends in 0, else :math:`2N`.

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable, s_churn, s_tmin, s_tmax, s_noise, noise_sampler, seed
        As in :func:`sample_euler`.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Karras, Aittala, Aila, Laine, "Elucidating the Design Space of Diffusion-Based Generative Models",
    NeurIPS 2022, Algorithms 1 and 2.

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_heun(gmm, x, edm_sigmas(5)).shape  # 9 model evaluations
    torch.Size([64, 2])
    """
    return _gaussian_churn(model, x, sigmas, extra_args, callback, disable, s_churn, s_tmin, s_tmax, s_noise,
                           noise_sampler, seed, heun=True)


def sample_edm(model: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor,
               extra_args: dict[str, Any] | None = None, callback: Callable[[dict[str, Any]], object] | None = None,
               disable: bool | None = None, s_churn: float = 40.0, s_tmin: float = 0.05, s_tmax: float = 50.0,
               s_noise: float = 1.003, noise_sampler: NoiseSampler | None = None,
               seed: int | None = None) -> torch.Tensor:
    r"""EDM's stochastic sampler (Algorithm 2): Gaussian churn, then a Heun step.

    Exactly :func:`sample_heun` with churn on by default; the defaults are EDM's ImageNet-64 setting
    (S_churn 40, S_tmin 0.05, S_tmax 50, S_noise 1.003, used there with 256 steps; with few steps
    :math:`S_{\rm churn}/N` saturates at :math:`\gamma = \sqrt2-1`). Tune them per model as the paper does.

    Parameters
    ----------
    s_churn, s_tmin, s_tmax, s_noise : float
        EDM's churn parameters, with the ImageNet-64 values as defaults.
    model, x, sigmas, extra_args, callback, disable, noise_sampler, seed
        As in :func:`sample_euler`.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Karras et al., NeurIPS 2022, Algorithm 2 and Table 5.

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_edm(gmm, x, edm_sigmas(5), seed=0).shape
    torch.Size([64, 2])
    """
    return sample_heun(model, x, sigmas, extra_args, callback, disable, s_churn=s_churn, s_tmin=s_tmin,
                       s_tmax=s_tmax, s_noise=s_noise, noise_sampler=noise_sampler, seed=seed)


# ----------------------------------------------------------------------------------------------- ancestral / DDIM


def sample_euler_ancestral(model: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor,
                           extra_args: dict[str, Any] | None = None,
                           callback: Callable[[dict[str, Any]], object] | None = None, disable: bool | None = None,
                           eta: float = 1.0, s_noise: float = 1.0, noise_sampler: NoiseSampler | None = None,
                           seed: int | None = None) -> torch.Tensor:
    r"""Ancestral sampling with Euler steps (= DDIM with the same :math:`\eta`).

    .. math:: x_{i+1} = D_i + \frac{\sigma_{\rm down}}{\sigma_i}(x_i - D_i)
              + S_{\rm noise}\,\sigma_{\rm up}\, z_i \quad (z_i \text{ only when } \sigma_{i+1} > 0),

    with :math:`(\sigma_{\rm down}, \sigma_{\rm up})` from :func:`get_ancestral_step`. No noise is drawn when
    :math:`\sigma_{\rm up} = 0` (``eta = 0``: exactly :func:`sample_euler`).

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable
        As in :func:`sample_euler`.
    eta : float
        Fraction of the step's variance re-drawn, >= 0 (1: DDPM ancestral).
    s_noise : float
        Scale of the fresh noise, >= 0.
    noise_sampler : callable, optional
        ``noise_sampler(sigma_i, sigma_{i+1})`` -> standard normal like ``x``.
    seed : int, optional
        Seeds the default noise sampler.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Ho, Jain, Abbeel, NeurIPS 2020; Song, Meng, Ermon, ICLR 2021, eq. (16).

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_euler_ancestral(gmm, x, edm_sigmas(10), eta=1.0, seed=0).shape
    torch.Size([64, 2])
    """
    return _ancestral(model, x, sigmas, extra_args, callback, disable, eta, s_noise, noise_sampler, seed,
                      lambda x, denoised, sigma, sigma_down, _: torch.lerp(denoised, x, sigma_down / sigma))


def sample_ddim(model: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor,
                extra_args: dict[str, Any] | None = None, callback: Callable[[dict[str, Any]], object] | None = None,
                disable: bool | None = None, eta: float = 0.0, s_noise: float = 1.0,
                noise_sampler: NoiseSampler | None = None, seed: int | None = None) -> torch.Tensor:
    r"""DDIM in :math:`\sigma`-space: :func:`sample_euler_ancestral` with DDIM's default :math:`\eta = 0`.

    With :math:`\sigma^2 = (1-\bar\alpha)/\bar\alpha`, DDIM's update
    :math:`x_{t-1} = \sqrt{\bar\alpha_{t-1}}\hat x_0 + \sqrt{1-\bar\alpha_{t-1}-\sigma_t^2}\,\hat\varepsilon
    + \sigma_t z` divided by :math:`\sqrt{\bar\alpha_{t-1}}` is
    :math:`D + \sigma_{\rm down}\hat\varepsilon + \sigma_{\rm up} z` with
    :math:`\sigma_{\rm up} = \sigma_t/\sqrt{\bar\alpha_{t-1}} = \eta\,\sigma_{i+1}\sqrt{1 - \sigma_{i+1}^2/\sigma_i^2}`,
    which is the Euler-ancestral step. ``eta = 0`` is deterministic DDIM (= :func:`sample_euler`), ``eta = 1``
    DDPM's ancestral sampler. To run DDIM on a trained discrete grid, pass that grid's sigmas.

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable, eta, s_noise, noise_sampler, seed
        As in :func:`sample_euler_ancestral`.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Song, Meng, Ermon, "Denoising Diffusion Implicit Models", ICLR 2021.

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_ddim(gmm, x, edm_sigmas(10)).shape  # eta = 0: deterministic
    torch.Size([64, 2])
    """
    return sample_euler_ancestral(model, x, sigmas, extra_args, callback, disable, eta=eta, s_noise=s_noise,
                                  noise_sampler=noise_sampler, seed=seed)


# ----------------------------------------------------------------------------------------------- DPM-Solver++


def _dpmpp_2m_step(x, denoised, old_denoised, sig, i):
    """One DPM-Solver++(2M) step in its ODE form (the update of :func:`sample_dpmpp_2m`)."""
    sigma, sigma_next = sig[i], sig[i + 1]
    if sigma_next == 0.0:
        return denoised
    if old_denoised is None:
        target = denoised
    else:
        c = 0.5 * math.log(sigma / sigma_next) / math.log(sig[i - 1] / sigma)   # 1 / (2 r)
        target = torch.lerp(denoised, old_denoised, -c)                          # (1 + c) D_i - c D_{i-1}
    return torch.lerp(target, x, sigma_next / sigma)                             # e^{-h} x + (1 - e^{-h}) target


def sample_dpmpp_2m(model: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor,
                    extra_args: dict[str, Any] | None = None,
                    callback: Callable[[dict[str, Any]], object] | None = None,
                    disable: bool | None = None) -> torch.Tensor:
    r"""DPM-Solver++(2M): the second-order multistep solver in data-prediction form.

    With :math:`\lambda = -\log\sigma`, :math:`h_i = \lambda_{i+1} - \lambda_i = \log(\sigma_i/\sigma_{i+1})` and
    :math:`r_i = h_{i-1}/h_i`,

    .. math:: x_{i+1} = \frac{\sigma_{i+1}}{\sigma_i} x_i + \big(1 - e^{-h_i}\big)
              \Big(\big(1 + \tfrac{1}{2r_i}\big) D_i - \tfrac{1}{2r_i} D_{i-1}\Big),

    first order (:math:`D_i` alone) on the first step, and :math:`x_N = D_{N-1}` when :math:`\sigma_N = 0`
    (the :math:`h \to \infty` limit). One model evaluation per step.

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable
        As in :func:`sample_euler`.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Lu, Zhou, Bao, Chen, Li, Zhu, "DPM-Solver++: Fast Solver for Guided Sampling of Diffusion Probabilistic
    Models", arXiv 2211.01095 (2022), Algorithm 2.

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_dpmpp_2m(gmm, x, edm_sigmas(10)).shape
    torch.Size([64, 2])
    """
    return _sample_loop(model, x, sigmas, extra_args, callback, disable, _dpmpp_2m_step)


def sample_dpmpp_2m_sde(model: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor,
                        extra_args: dict[str, Any] | None = None,
                        callback: Callable[[dict[str, Any]], object] | None = None, disable: bool | None = None,
                        eta: float = 1.0, s_noise: float = 1.0, noise_sampler: NoiseSampler | None = None,
                        solver_type: str = "midpoint", seed: int | None = None) -> torch.Tensor:
    r"""DPM-Solver++(2M) SDE: the multistep data-prediction solver of the reverse SDE with noise fraction
    :math:`\eta`.

    With :math:`h = \log(\sigma_i/\sigma_{i+1})`, :math:`H = (1+\eta)h`, :math:`r = h_{i-1}/h_i`,

    .. math:: x_{i+1} = e^{-H} x_i + (1 - e^{-H}) D_i + \frac{c}{r}(D_i - D_{i-1})
              + \sigma_{i+1}\sqrt{1 - e^{-2\eta h}}\, S_{\rm noise}\, z_i,

    :math:`c = 1 - (1-e^{-H})/H` (``"heun"``: exact integral of :math:`D` linear in :math:`\lambda`) or
    :math:`c = \tfrac12(1-e^{-H})` (``"midpoint"``); no correction on the first step; :math:`x_N = D_{N-1}` when
    :math:`\sigma_N = 0`. Each step keeps the marginal of a point mass: the :math:`x_0` coefficients sum to 1 and
    the noise variances to :math:`\sigma_{i+1}^2`. ``eta = 1``: reverse SDE; ``eta = 0, "midpoint"``:
    :func:`sample_dpmpp_2m` (to rounding: that one uses the equivalent ``lerp`` form).

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable
        As in :func:`sample_euler`.
    eta : float
        >= 0.
    s_noise : float
        >= 0.
    noise_sampler : callable, optional
        ``noise_sampler(sigma_i, sigma_{i+1})`` -> standard normal like ``x``. k-diffusion's default here is a
        Brownian-tree sampler (correlated across step sizes); this default is i.i.d. Gaussian per step from
        ``seed``, which has the same law for a fixed schedule.
    solver_type : {"midpoint", "heun"}
    seed : int, optional
        Seeds the default noise sampler.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Lu et al., "DPM-Solver++" (2022), sec. 5 (SDE-DPM-Solver++2M).

    Examples
    --------
    >>> from fastnips.diffusion import GMM, edm_sigmas
    >>> gmm, x = GMM.grid2d(), 80.0 * torch.randn(64, 2, dtype=torch.float64)
    >>> sample_dpmpp_2m_sde(gmm, x, edm_sigmas(10), eta=1.0, seed=0).shape
    torch.Size([64, 2])
    """
    if solver_type not in _DPMPP_SDE_SOLVERS:
        raise ValueError(f"solver_type must be one of {_DPMPP_SDE_SOLVERS}, got {solver_type!r}")
    noise = _resolve_noise(x, noise_sampler, seed)
    eta = _check_number("eta", eta)
    s_noise = _check_number("s_noise", s_noise)

    def step(x, denoised, old_denoised, sig, i):
        sigma, sigma_next = sig[i], sig[i + 1]
        if sigma_next == 0.0:
            return denoised
        h = math.log(sigma / sigma_next)
        big_h = (1.0 + eta) * h
        phi = -math.expm1(-big_h)                                  # 1 - e^{-H}
        x = torch.lerp(denoised, x, math.exp(-big_h))              # e^{-H} x + (1 - e^{-H}) D_i
        if old_denoised is not None:
            c = 0.5 * phi if solver_type == "midpoint" else 1.0 - phi / big_h
            x = x.add_(denoised - old_denoised, alpha=c * h / math.log(sig[i - 1] / sigma))
        if eta > 0.0:
            x = x.add_(_draw(noise, sigma, sigma_next, x),
                       alpha=sigma_next * math.sqrt(-math.expm1(-2.0 * eta * h)) * s_noise)
        return x

    return _sample_loop(model, x, sigmas, extra_args, callback, disable, step)


#: Every sampler by short name (for benchmarks and the CLI).
SAMPLERS: dict[str, Callable[..., torch.Tensor]] = {
    "euler": sample_euler,
    "heun": sample_heun,
    "edm": sample_edm,
    "euler_ancestral": sample_euler_ancestral,
    "ddim": sample_ddim,
    "dpmpp_2m": sample_dpmpp_2m,
    "dpmpp_2m_sde": sample_dpmpp_2m_sde,
    "fds": sample_fds,
    "dpm_2": sample_dpm_2,
    "dpm_2_ancestral": sample_dpm_2_ancestral,
    "lms": sample_lms,
    "dpmpp_2s_ancestral": sample_dpmpp_2s_ancestral,
    "dpmpp_sde": sample_dpmpp_sde,
    "dpmpp_3m_sde": sample_dpmpp_3m_sde,
}
