r"""DPM-Solver with its own step selection: DPM-Solver-fast (fixed orders on a uniform :math:`\lambda` grid) and
DPM-Solver-12 / 23 (adaptive steps), with k-diffusion's signatures ``sample_dpm_fast(model, x, sigma_min,
sigma_max, n, ...)`` and ``sample_dpm_adaptive(model, x, sigma_min, sigma_max, ...)``.

In :math:`t = \lambda = -\log\sigma` with the noise prediction :math:`\hat\varepsilon = (x - D(x, \sigma))/\sigma`
and :math:`h = t' - t` (Lu et al. 2022, Algorithms 4-5, in the variance-exploding form :math:`\alpha = 1`):

* order 1: :math:`x' = x - \sigma(t')(e^h - 1)\hat\varepsilon(x, t)`;
* order 2 (:math:`s_1 = t + r_1 h`): :math:`u_1 = x - \sigma(s_1)(e^{r_1 h} - 1)\hat\varepsilon`,
  :math:`x' = x - \sigma(t')(e^h - 1)\hat\varepsilon - \frac{\sigma(t')}{2r_1}(e^h - 1)(\hat\varepsilon(u_1, s_1)
  - \hat\varepsilon)`;
* order 3 (:math:`r_1 = 1/3`, :math:`r_2 = 2/3`): :math:`u_2 = x - \sigma(s_2)(e^{r_2h} - 1)\hat\varepsilon -
  \sigma(s_2)\frac{r_2}{r_1}\big(\frac{e^{r_2h} - 1}{r_2h} - 1\big)(\hat\varepsilon_1 - \hat\varepsilon)`,
  :math:`x' = x - \sigma(t')(e^h - 1)\hat\varepsilon - \frac{\sigma(t')}{r_2}\big(\frac{e^h - 1}{h} - 1\big)
  (\hat\varepsilon(u_2, s_2) - \hat\varepsilon)`.

``sample_dpm_fast`` spends ``n`` evaluations on :math:`m = \lfloor n/3\rfloor + 1` equal steps in :math:`t`, of
order 3 except the last one or two (orders ``[3]*(m-2) + [2, 1]`` when 3 divides n, else ``[3]*(m-1) +
[n % 3]``). ``sample_dpm_adaptive`` takes embedded pairs (orders 1-2, or 2 with :math:`r_1 = 1/3` and 3, sharing
evaluations), the error :math:`\|(x_{\rm low} - x_{\rm high})/\delta\|_2/\sqrt{N}` with
:math:`\delta = \max(a_{\rm tol}, r_{\rm tol}\max(|x_{\rm low}|, |x_{\rm prev}|))`, and a PID step controller
(Söderlind 2003) with the limiter :math:`1 + \arctan(f - 1)`. With ``eta > 0`` each step goes to the ancestral
:math:`\sigma_{\rm down}` and adds noise of level :math:`\sqrt{\sigma(t')^2 - \sigma(t'_{\rm down})^2}`.

Results equal k-diffusion 0.1.1's to float32 rounding of its times (it builds :math:`t` from
``torch.tensor(sigma)``, float32; here times are Python floats, float64): tests/diffusion/test_dpm_solver.py.

Papers: Lu, Zhou, Bao, Chen, Li, Zhu, "DPM-Solver: A Fast ODE Solver for Diffusion Probabilistic Model
Sampling in Around 10 Steps" (NeurIPS 2022), Algorithms 1-5 and sec. 4; Söderlind, "Digital filters in adaptive
time-stepping" (ACM TOMS 2003).

Examples
--------
>>> import torch
>>> from fastnips.diffusion import GMM
>>> x = 80.0 * torch.randn(64, 2, dtype=torch.float64)
>>> sample_dpm_fast(GMM.grid2d(), x, 0.002, 80.0, 12).shape
torch.Size([64, 2])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .loop import (
    NoiseSampler,
    _check_number,
    _denoise,
    _draw,
    _FiniteGuard,
    _resolve_noise,
    _setup,
    get_ancestral_step,
)

__all__ = ["sample_dpm_adaptive", "sample_dpm_fast"]


class _Solver:
    """The eps-form DPM-Solver steps on Python-float times; ``eps`` caches evaluations within one step."""

    def __init__(self, model, x, extra_args, n_evals):
        _, _, self.s_in, self.extra_args = _setup(model, x, torch.tensor([2.0, 1.0]), extra_args)
        self.model, self.guard, self.nfe = model, _FiniteGuard(x, n_evals), 0

    def eps(self, cache, key, x, t):
        if key not in cache:
            sigma = math.exp(-t)
            self.nfe += 1
            cache[key] = (x - _denoise(self.model, x, sigma, self.s_in, self.extra_args, self.guard, self.nfe)) / sigma
        return cache[key]

    def step1(self, x, t, t_next, cache):
        return x - math.exp(-t_next) * math.expm1(t_next - t) * self.eps(cache, "eps", x, t)

    def step2(self, x, t, t_next, cache, r1=0.5):
        h = t_next - t
        eps = self.eps(cache, "eps", x, t)
        s1 = t + r1 * h
        u1 = x - math.exp(-s1) * math.expm1(r1 * h) * eps
        e1 = self.eps(cache, "eps_r1", u1, s1)
        sn = math.exp(-t_next)
        return x - sn * math.expm1(h) * eps - sn / (2 * r1) * math.expm1(h) * (e1 - eps)

    def step3(self, x, t, t_next, cache, r1=1 / 3, r2=2 / 3):
        h = t_next - t
        eps = self.eps(cache, "eps", x, t)
        s1, s2 = t + r1 * h, t + r2 * h
        u1 = x - math.exp(-s1) * math.expm1(r1 * h) * eps
        e1 = self.eps(cache, "eps_r1", u1, s1)
        u2 = (x - math.exp(-s2) * math.expm1(r2 * h) * eps
              - math.exp(-s2) * (r2 / r1) * (math.expm1(r2 * h) / (r2 * h) - 1) * (e1 - eps))
        e2 = self.eps(cache, "eps_r2", u2, s2)
        sn = math.exp(-t_next)
        return x - sn * math.expm1(h) * eps - sn / r2 * (math.expm1(h) / h - 1) * (e2 - eps)


def _ancestral_target(t: float, t_next: float, t_end: float, eta: float) -> tuple[float, float]:
    """(t'_down, noise level) of an ancestral step t -> t_next, the deterministic part stopped at t_end."""
    if eta == 0.0:
        return t_next, 0.0
    sd, _ = get_ancestral_step(math.exp(-t), math.exp(-t_next), eta)
    t_down = t_end if sd == 0.0 else min(t_end, -math.log(sd))
    return t_down, math.sqrt(max(math.exp(-2 * t_next) - math.exp(-2 * t_down), 0.0))


def _levels(sigma_min, sigma_max) -> tuple[float, float]:
    lo, hi = _check_number("sigma_min", sigma_min), _check_number("sigma_max", sigma_max)
    if not 0.0 < lo < hi:
        raise ValueError(f"need 0 < sigma_min < sigma_max, got sigma_min={sigma_min!r}, sigma_max={sigma_max!r}")
    return lo, hi


@torch.no_grad()
def sample_dpm_fast(model: Callable[..., torch.Tensor], x: torch.Tensor, sigma_min: float, sigma_max: float, n: int,
                    extra_args: dict[str, Any] | None = None,
                    callback: Callable[[dict[str, Any]], object] | None = None, disable: bool | None = None,
                    eta: float = 0.0, s_noise: float = 1.0, noise_sampler: NoiseSampler | None = None,
                    seed: int | None = None) -> torch.Tensor:
    r"""DPM-Solver-fast: ``n`` model evaluations on equal steps in :math:`\lambda` from ``sigma_max`` to
    ``sigma_min``, third order except at the end (module docstring).

    Parameters
    ----------
    model, x, extra_args, callback
        As in :func:`~fastnips.diffusion.samplers.sample_euler` (the callback gets ``x, i, sigma, sigma_hat,
        denoised`` once per step).
    disable : bool, optional
        Accepted for k-diffusion's signature; these two samplers show no progress bar.
    sigma_min, sigma_max : float
        The interval, ``0 < sigma_min < sigma_max``; the result is at ``sigma_min`` (no final denoising).
    n : int
        Number of model evaluations, >= 1.
    eta, s_noise : float
        Ancestral noise fraction and scale, >= 0.
    noise_sampler : callable, optional
        ``noise_sampler(sigma, sigma_next)``; default i.i.d. from ``seed``.
    seed : int, optional
        Seeds the default noise sampler.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Lu et al., "DPM-Solver", NeurIPS 2022, sec. 4 (DPM-Solver-fast).

    Examples
    --------
    >>> from fastnips.diffusion import GMM
    >>> x = 80.0 * torch.randn(16, 2, dtype=torch.float64)
    >>> sample_dpm_fast(GMM.grid2d(), x, 0.01, 80.0, 9).shape
    torch.Size([16, 2])
    """
    lo, hi = _levels(sigma_min, sigma_max)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1 (model evaluations), got {n!r}")
    eta, s_noise = _check_number("eta", eta), _check_number("s_noise", s_noise)
    solver = _Solver(model, x, extra_args, n)
    noise = _resolve_noise(x, noise_sampler, seed)
    m = n // 3 + 1
    t_start, t_end = -math.log(hi), -math.log(lo)
    ts = [t_start + (t_end - t_start) * k / m for k in range(m + 1)]
    orders = [3] * (m - 2) + [2, 1] if n % 3 == 0 else [3] * (m - 1) + [n % 3]
    for i, order in enumerate(orders):
        cache: dict[str, torch.Tensor] = {}
        t, t_next = ts[i], ts[i + 1]
        t_down, su = _ancestral_target(t, t_next, t_end, eta)
        if callback is not None:
            eps = solver.eps(cache, "eps", x, t)
            s = x.new_tensor(math.exp(-t))
            callback({"x": x, "i": i, "sigma": s, "sigma_hat": s, "denoised": x - math.exp(-t) * eps})
        x = (solver.step1, solver.step2, solver.step3)[order - 1](x, t, t_down, cache)
        if su > 0.0:
            x = x + su * s_noise * _draw(noise, math.exp(-t), math.exp(-t_next), x)
    solver.guard.finish()
    return x


class _PID:
    """PID step-size control on 1/error (Söderlind 2003), k-diffusion's coefficients and limiter."""

    def __init__(self, h, pcoeff, icoeff, dcoeff, order, accept_safety, eps=1e-8):
        self.h, self.accept_safety, self.eps = h, accept_safety, eps
        self.b = ((pcoeff + icoeff + dcoeff) / order, -(pcoeff + 2 * dcoeff) / order, dcoeff / order)
        self.errs: list[float] = []

    def propose(self, error: float) -> bool:
        inv = 1.0 / (error + self.eps)
        if not self.errs:
            self.errs = [inv, inv, inv]
        self.errs[0] = inv
        factor = 1.0 + math.atan(math.prod(e**b for e, b in zip(self.errs, self.b)) - 1.0)
        accept = factor >= self.accept_safety
        if accept:
            self.errs[2], self.errs[1] = self.errs[1], self.errs[0]
        self.h *= factor
        return accept


@torch.no_grad()
def sample_dpm_adaptive(model: Callable[..., torch.Tensor], x: torch.Tensor, sigma_min: float, sigma_max: float,
                        extra_args: dict[str, Any] | None = None,
                        callback: Callable[[dict[str, Any]], object] | None = None, disable: bool | None = None,
                        order: int = 3, rtol: float = 0.05, atol: float = 0.0078, h_init: float = 0.05,
                        pcoeff: float = 0.0, icoeff: float = 1.0, dcoeff: float = 0.0, accept_safety: float = 0.81,
                        eta: float = 0.0, s_noise: float = 1.0, noise_sampler: NoiseSampler | None = None,
                        return_info: bool = False, seed: int | None = None,
                        max_evals: int = 100_000) -> torch.Tensor | tuple[torch.Tensor, dict[str, int]]:
    r"""DPM-Solver-12 (``order=2``) or DPM-Solver-23 (``order=3``) with adaptive steps in :math:`\lambda` from
    ``sigma_max`` to ``sigma_min`` (module docstring).

    Parameters
    ----------
    model, x, extra_args, callback
        As in :func:`~fastnips.diffusion.samplers.sample_euler` (the callback gets ``x, i, sigma, sigma_hat,
        denoised, error, h`` once per attempted step).
    disable : bool, optional
        Accepted for k-diffusion's signature; no progress bar.
    sigma_min, sigma_max : float
        The interval, ``0 < sigma_min < sigma_max``.
    order : {2, 3}
    rtol, atol : float
        Relative and absolute tolerance of the error norm.
    h_init : float
        First step in :math:`\lambda`.
    pcoeff, icoeff, dcoeff, accept_safety : float
        PID controller gains and the acceptance threshold of the proposed factor.
    eta, s_noise : float
        Ancestral noise fraction and scale.
    noise_sampler : callable, optional
    return_info : bool
        Also return ``{"steps", "nfe", "n_accept", "n_reject"}``.
    seed : int, optional
        Seeds the default noise sampler.
    max_evals : int
        Stop with ``ValueError`` past this many model evaluations (a guard against a controller that stalls).

    Returns
    -------
    torch.Tensor, or (torch.Tensor, dict) with ``return_info``

    References
    ----------
    Lu et al., "DPM-Solver", NeurIPS 2022, Algorithms 4-5; Söderlind, ACM TOMS 2003.

    Examples
    --------
    >>> from fastnips.diffusion import GMM
    >>> x = 80.0 * torch.randn(16, 2, dtype=torch.float64)
    >>> out, info = sample_dpm_adaptive(GMM.grid2d(), x, 0.01, 80.0, return_info=True)
    >>> info["nfe"] == 3 * info["steps"]
    True
    """
    lo, hi = _levels(sigma_min, sigma_max)
    if order not in (2, 3):
        raise ValueError(f"order must be 2 or 3, got {order!r}")
    eta, s_noise = _check_number("eta", eta), _check_number("s_noise", s_noise)
    rtol, atol, h_init = _check_number("rtol", rtol), _check_number("atol", atol), _check_number("h_init", h_init)
    if h_init == 0.0:
        raise ValueError("h_init must be > 0")
    solver = _Solver(model, x, extra_args, max_evals)
    noise = _resolve_noise(x, noise_sampler, seed)
    s, t_end = -math.log(hi), -math.log(lo)
    pid = _PID(h_init, pcoeff, icoeff, dcoeff, 1.5 if eta else order, accept_safety)
    info = {"steps": 0, "nfe": 0, "n_accept": 0, "n_reject": 0}
    x_prev = x
    while s < t_end - 1e-5:
        if info["nfe"] + order > max_evals:
            raise ValueError(f"sample_dpm_adaptive used {info['nfe']} evaluations without reaching sigma_min; "
                             "loosen rtol / atol or raise max_evals")
        cache: dict[str, torch.Tensor] = {}
        t = min(t_end, s + pid.h)
        t_down, su = _ancestral_target(s, t, t_end, eta)
        if order == 2:
            x_low, x_high = solver.step1(x, s, t_down, cache), solver.step2(x, s, t_down, cache)
        else:
            x_low, x_high = solver.step2(x, s, t_down, cache, r1=1 / 3), solver.step3(x, s, t_down, cache)
        delta = torch.maximum(torch.maximum(x_low.abs(), x_prev.abs()) * rtol, x_low.new_tensor(atol))
        error = float(torch.linalg.vector_norm((x_low - x_high) / delta)) / math.sqrt(x.numel())
        if callback is not None:
            sig = x.new_tensor(math.exp(-s))
            callback({"x": x, "i": info["steps"], "sigma": sig, "sigma_hat": sig, "error": error, "h": pid.h,
                      "denoised": x - math.exp(-s) * cache["eps"]})
        if pid.propose(error):
            x_prev = x_low
            x = x_high if su == 0.0 else x_high + su * s_noise * _draw(noise, math.exp(-s), math.exp(-t), x)
            s = t
            info["n_accept"] += 1
        else:
            info["n_reject"] += 1
        info["nfe"] += order
        info["steps"] += 1
    solver.guard.finish()
    return (x, info) if return_info else x
