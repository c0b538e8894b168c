r"""The step loop shared by every sampler of :mod:`fastnips.diffusion.samplers` and :mod:`~fastnips.diffusion.fds`.

Conventions (k-diffusion): ``sample_<name>(model, x, sigmas, extra_args=None, callback=None, disable=None, ...)``;
``model(x, sigma * s_in, **extra_args)`` returns :math:`D(x, \sigma)` with ``s_in = x.new_ones([x.shape[0]])``;
``callback`` gets ``{"x", "i", "sigma", "sigma_hat", "denoised"}`` once per step (``x`` is the churned
:math:`\hat x_i`, ``sigma`` and ``sigma_hat`` are 0-d tensors); ``disable`` is passed to a tqdm bar (``None``:
shown on a terminal only; ``True``: off). ``noise_sampler(sigma, sigma_next)`` returns a standard-normal tensor
like ``x``; it receives the step's noise levels as 0-d tensors in ``x``'s dtype and device (as k-diffusion passes
``sigmas[i]``; a Brownian-tree sampler reads its time from them, so float64 stays float64), and for churn it is
called as ``noise_sampler(sigma_i, sigma_hat_i)``. Without one, ``seed`` seeds a ``torch.Generator`` on
``x.device`` (``seed=None``: torch's global generator, like ``torch.randn_like``); the SDE samplers that
k-diffusion runs on a Brownian tree (:mod:`~fastnips.diffusion.brownian`) do so here too.

Every loop runs under ``torch.no_grad()``, as k-diffusion's samplers do: the result does not require grad and
no graph is kept, even for a model with trainable parameters or an ``x`` that requires grad (differentiating
through a sampler is not offered, as in k-diffusion).

All arithmetic stays in ``x``'s dtype and device (the schedule is read once into Python floats, so the loop has
no host-device syncs on CUDA except where noted). The model's output is checked every evaluation: a shape
other than ``x.shape`` raises at once; NaN or inf raises ``ValueError`` naming the step and sigma (at once on
CPU; on other devices the per-step flags stay on the device and are read once at the end, so no sync per step).

Two loops serve all samplers: :func:`_churn_ode` (EDM's churn, then an Euler or Heun step: Euler, Heun, EDM,
FDS) and :func:`_sample_loop` (one model evaluation per step and a sampler-specific update: Euler ancestral,
DDIM, DPM-Solver++(2M) and its SDE variant).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping

import torch

__all__ = ["NoiseSampler", "default_noise_sampler", "get_ancestral_step", "to_d"]

_GAMMA_MAX = math.sqrt(2.0) - 1.0

#: ``noise_sampler(sigma, sigma_next) -> eps`` (the two levels as 0-d tensors in x's dtype; floats also accepted
#: by the samplers of this package).
NoiseSampler = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
#: ``step(x, denoised, old_denoised, sig, i) -> x_{i+1}`` of :func:`_sample_loop` (``old_denoised`` is None on
#: the first step; ``sig`` the schedule as Python floats).
Step = Callable[[torch.Tensor, torch.Tensor, "torch.Tensor | None", list, int], torch.Tensor]


def to_d(x: torch.Tensor, sigma, denoised: torch.Tensor) -> torch.Tensor:
    r"""The probability-flow ODE derivative :math:`d = (x - D)/\sigma` (``sigma`` a float or broadcastable)."""
    return (x - denoised) / sigma


def default_noise_sampler(x: torch.Tensor, seed: int | None = None) -> NoiseSampler:
    """Standard-normal noise like ``x``: from a ``torch.Generator`` on ``x.device`` seeded with ``seed``, or
    from torch's global generator when ``seed`` is None. The returned callable ignores its two sigmas.

    Pitfall: if ``x`` itself was drawn as ``torch.randn(x.shape, generator=torch.Generator().manual_seed(seed))``
    with the *same* seed, the first noise equals ``x / sigma_max`` exactly (so does the first draw of
    ``drivers.Gaussian(x.shape, seed=seed)``): the first churn then rescales x instead of adding independent
    noise. Seed the initial noise and the sampler from different seeds.

    Examples
    --------
    >>> import torch
    >>> noise = default_noise_sampler(torch.zeros(4, 2), seed=0)
    >>> noise(1.0, 0.5).shape
    torch.Size([4, 2])
    """
    if seed is None:
        return lambda sigma, sigma_next: torch.randn_like(x)
    gen = torch.Generator(device=x.device)
    gen.manual_seed(_check_seed(seed))
    shape, dtype, device = x.shape, x.dtype, x.device
    return lambda sigma, sigma_next: torch.randn(shape, generator=gen, dtype=dtype, device=device)


def get_ancestral_step(sigma_from: float, sigma_to: float, eta: float = 1.0) -> tuple[float, float]:
    r"""Split a step :math:`\sigma_{\rm from} \to \sigma_{\rm to}` into a deterministic and a noise part.

    .. math:: \sigma_{\rm up} = \min\Big(\sigma_{\rm to},\ \eta\,\sqrt{\sigma_{\rm to}^2
              (\sigma_{\rm from}^2 - \sigma_{\rm to}^2)/\sigma_{\rm from}^2}\Big), \qquad
              \sigma_{\rm down} = \sqrt{\sigma_{\rm to}^2 - \sigma_{\rm up}^2},

    so an ODE step to :math:`\sigma_{\rm down}` followed by fresh noise of std :math:`\sigma_{\rm up}` lands on
    total noise :math:`\sigma_{\rm to}`. With :math:`\eta = 1` this is the DDPM posterior (ancestral) step and,
    for any :math:`\eta`, DDIM's :math:`\sigma^{\rm DDIM}_t/\sqrt{\bar\alpha_{t-1}}` in :math:`\sigma`-space.

    Parameters
    ----------
    sigma_from : float
        Current noise level, > 0.
    sigma_to : float
        Next noise level, ``0 <= sigma_to <= sigma_from``.
    eta : float
        Noise fraction, >= 0 (0: deterministic, returns ``(sigma_to, 0.0)``).

    Returns
    -------
    (sigma_down, sigma_up) : tuple of float

    References
    ----------
    Song, Meng, Ermon, "Denoising Diffusion Implicit Models", ICLR 2021, eq. (16); Ho et al. 2020.

    Examples
    --------
    >>> get_ancestral_step(2.0, 1.0, eta=0.0)
    (1.0, 0.0)
    """
    s_from, s_to, eta = float(sigma_from), float(sigma_to), float(eta)
    if not (math.isfinite(s_from) and s_from > 0.0):
        raise ValueError(f"sigma_from must be positive and finite, got {sigma_from!r}")
    if not (0.0 <= s_to <= s_from):
        raise ValueError(f"sigma_to must be in [0, sigma_from={s_from}], got {sigma_to!r}")
    if not (math.isfinite(eta) and eta >= 0.0):
        raise ValueError(f"eta must be a finite number >= 0, got {eta!r}")
    if eta == 0.0:
        return s_to, 0.0
    sigma_up = min(s_to, eta * math.sqrt(s_to * s_to * (s_from * s_from - s_to * s_to) / (s_from * s_from)))
    sigma_down = math.sqrt(max(s_to * s_to - sigma_up * sigma_up, 0.0))
    return sigma_down, sigma_up


# ----------------------------------------------------------------------------------------------- checks


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(f"seed must be an int or None, got {seed!r}")
    return int(seed)


def _resolve_noise(x, noise_sampler, seed) -> NoiseSampler:
    if noise_sampler is None:
        return default_noise_sampler(x, seed)
    if seed is not None:
        raise ValueError("pass either noise_sampler or seed, not both (seed only seeds the default sampler)")
    if not callable(noise_sampler):
        raise ValueError(f"noise_sampler must be a callable (sigma, sigma_next) -> tensor, got {noise_sampler!r}")
    return noise_sampler


def _draw(noise: NoiseSampler, sigma: float, sigma_next: float, x: torch.Tensor) -> torch.Tensor:
    """``noise(sigma, sigma_next)`` with the two levels as 0-d tensors in x's dtype and device (``new_full``: a
    fill on the device, no host-to-device copy), its shape checked."""
    eps = noise(x.new_full((), sigma), x.new_full((), sigma_next))
    if eps.shape != x.shape:
        raise ValueError(f"noise_sampler returned shape {tuple(eps.shape)}, expected x.shape {tuple(x.shape)}")
    return eps


def _check_number(name: str, value, *, lo: float | None = 0.0, allow_inf: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(v) or (math.isinf(v) and not allow_inf) or (lo is not None and v < lo):
        bound = f" >= {lo}" if lo is not None else ""
        raise ValueError(f"{name} must be a {'' if allow_inf else 'finite '}number{bound}, got {value!r}")
    return v


def _check_sigmas(sigmas) -> tuple[torch.Tensor, list[float]]:
    if not isinstance(sigmas, torch.Tensor):
        try:
            sigmas = torch.as_tensor(sigmas, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            raise ValueError(f"sigmas must be a 1-D tensor of noise levels, got {type(sigmas).__name__}") from None
    if sigmas.ndim != 1:
        raise ValueError(f"sigmas must be 1-D, got shape {tuple(sigmas.shape)}")
    if sigmas.numel() < 2:
        raise ValueError(f"sigmas must have at least 2 entries (one step), got {sigmas.numel()}")
    if not (sigmas.is_floating_point() or sigmas.dtype in (torch.int32, torch.int64)):
        raise ValueError(f"sigmas must be a real tensor, got dtype {sigmas.dtype}")
    sig = [float(s) for s in sigmas.tolist()]          # one host read; the loop then does float arithmetic
    if not all(math.isfinite(s) for s in sig):
        raise ValueError("sigmas must be finite")
    if sig[-1] < 0.0:
        raise ValueError(f"sigmas must be non-negative, got {sig[-1]} at the end")
    for i in range(len(sig) - 1):
        if not sig[i] > sig[i + 1]:
            raise ValueError(f"sigmas must be strictly decreasing (only the last may be 0), got sigmas[{i}]="
                             f"{sig[i]} and sigmas[{i + 1}]={sig[i + 1]}")
    return sigmas, sig


def _setup(model, x, sigmas, extra_args):
    if not callable(model):
        raise ValueError(f"model must be callable as model(x, sigma, **extra_args), got {type(model).__name__}")
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    if x.ndim < 1 or x.shape[0] == 0:
        raise ValueError(f"x must have a non-empty leading batch dimension, got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x contains NaN or inf")
    if extra_args is None:
        extra_args = {}
    elif not isinstance(extra_args, Mapping):
        raise ValueError(f"extra_args must be a mapping of keyword arguments, got {type(extra_args).__name__}")
    sigmas, sig = _check_sigmas(sigmas)
    s_in = x.new_ones([x.shape[0]])
    return sigmas, sig, s_in, extra_args


# ----------------------------------------------------------------------------------------------- model calls


def _nonfinite(i: int, sigma: float) -> ValueError:
    return ValueError(f"model returned non-finite values (NaN or inf) at step {i} (sigma={sigma:.6g}); "
                      "stopping instead of returning NaNs")


class _FiniteGuard:
    """Checks each model output for NaN/inf: at once (``deferred=False``, CPU default), or by keeping one flag
    per evaluation on the device and reading them once in :meth:`finish` (no host sync per step)."""

    __slots__ = ("_flags", "_where", "deferred")

    def __init__(self, x: torch.Tensor, n_evals: int, deferred: bool | None = None):
        self.deferred = x.device.type != "cpu" if deferred is None else deferred
        self._where: list[tuple[int, float]] = []
        self._flags = torch.ones(max(n_evals, 1), dtype=torch.bool, device=x.device) if self.deferred else None

    def check(self, denoised: torch.Tensor, i: int, sigma: float) -> None:
        if self.deferred:
            self._flags[len(self._where)] = torch.isfinite(denoised).all()
            self._where.append((i, sigma))
        elif not bool(torch.isfinite(denoised).all()):
            raise _nonfinite(i, sigma)

    def finish(self) -> None:
        if self.deferred and self._where:
            flags = self._flags[: len(self._where)]
            if not bool(flags.all()):
                k = int((~flags).nonzero()[0, 0])
                raise _nonfinite(*self._where[k])


def _denoise(model, x, sigma: float, s_in, extra_args, guard: _FiniteGuard, i: int) -> torch.Tensor:
    denoised = model(x, s_in * sigma, **extra_args)
    if not isinstance(denoised, torch.Tensor) or denoised.shape != x.shape:
        got = tuple(denoised.shape) if isinstance(denoised, torch.Tensor) else type(denoised).__name__
        raise ValueError(f"model output must have x's shape {tuple(x.shape)}, got {got} at step {i}")
    if denoised.dtype != x.dtype:
        denoised = denoised.to(x.dtype)
    guard.check(denoised, i, sigma)
    return denoised


def _steps(n: int, disable):
    if disable is True:
        return range(n)
    try:
        from tqdm.auto import trange
    except ImportError:  # tqdm is optional: no bar
        return range(n)
    return trange(n, disable=disable)


def _report(callback, x, i, sigmas, sigma_hat: float, gamma: float, denoised) -> None:
    s = sigmas[i]
    callback({"x": x, "i": i, "sigma": s, "sigma_hat": s if gamma == 0.0 else s.new_tensor(sigma_hat),
              "denoised": denoised})


# ----------------------------------------------------------------------------------------------- the loops


@torch.no_grad()
def _sample_loop(model, x, sigmas, extra_args, callback, disable, step: Step, *, evals_per_step: int = 1
                 ) -> torch.Tensor:
    """One model evaluation per step, then ``x = step(x, denoised, old_denoised, sig, i)`` (the samplers
    without churn: Euler ancestral / DDIM, DPM-Solver++(2M) and its SDE variant, LMS, DPM-Solver++(3M) SDE).
    With ``evals_per_step=2`` the step also gets ``evaluate=``, a function ``(x', sigma') -> D(x', sigma')``
    for its second evaluation (the single-step second-order samplers)."""
    sigmas, sig, s_in, extra_args = _setup(model, x, sigmas, extra_args)
    n = len(sig) - 1
    guard = _FiniteGuard(x, evals_per_step * n)
    old_denoised = None
    for i in _steps(n, disable):
        denoised = _denoise(model, x, sig[i], s_in, extra_args, guard, i)
        if callback is not None:
            _report(callback, x, i, sigmas, sig[i], 0.0, denoised)
        if evals_per_step == 1:
            x = step(x, denoised, old_denoised, sig, i)
        else:
            x = step(x, denoised, old_denoised, sig, i,
                     evaluate=lambda x2, s2, i=i: _denoise(model, x2, s2, s_in, extra_args, guard, i))
        old_denoised = denoised
    guard.finish()
    return x


def _churn_gammas(sig: list[float], s_churn, gamma, s_tmin, s_tmax) -> list[float]:
    """EDM's gamma_i per step: min(s_churn/N, sqrt(2)-1) (or a fixed ``gamma``) inside [s_tmin, s_tmax], else 0."""
    n = len(sig) - 1
    if s_churn is not None and gamma is not None:
        raise ValueError("pass either s_churn or gamma, not both")
    s_tmin = _check_number("s_tmin", s_tmin, lo=None, allow_inf=True)
    s_tmax = _check_number("s_tmax", s_tmax, lo=None, allow_inf=True)
    if s_tmin > s_tmax:
        raise ValueError(f"s_tmin must be <= s_tmax, got s_tmin={s_tmin}, s_tmax={s_tmax}")
    if gamma is not None:
        g = _check_number("gamma", gamma)
        if g > _GAMMA_MAX + 1e-12:
            raise ValueError(f"gamma must be in [0, sqrt(2)-1 = {_GAMMA_MAX:.6f}] (EDM's cap: at most doubling the "
                             f"variance), got {gamma!r}")
        g = min(g, _GAMMA_MAX)
    else:
        g = min(_check_number("s_churn", 0.0 if s_churn is None else s_churn) / n, _GAMMA_MAX)
    return [g if s_tmin <= s <= s_tmax else 0.0 for s in sig[:-1]]


@torch.no_grad()
def _churn_ode(model, x, sigmas, extra_args, callback, disable, *, gammas_of, s_noise, noise, noise_scale: float,
               heun: bool, midpoint: bool = False) -> torch.Tensor:
    """The loop shared by Euler, Heun, EDM, DPM-Solver-2 and FDS: churn (EDM Algorithm 2, lines 4-6), then an
    Euler step, a Heun step or (``midpoint``) a DPM-Solver-2 step (Euler on the last step to sigma = 0).
    ``noise(sigma, sigma_hat)`` returns the unit-variance churn noise, scaled by ``noise_scale``."""
    sigmas, sig, s_in, extra_args = _setup(model, x, sigmas, extra_args)
    gammas = gammas_of(sig)
    s_noise = _check_number("s_noise", s_noise)
    n = len(sig) - 1
    guard = _FiniteGuard(x, 2 * n)
    for i in _steps(n, disable):
        sigma, sigma_next, gamma = sig[i], sig[i + 1], gammas[i]
        if gamma > 0.0:
            sigma_hat = sigma * (1.0 + gamma)
            eps = noise(sigma, sigma_hat)
            x = torch.add(x, eps, alpha=math.sqrt(sigma_hat * sigma_hat - sigma * sigma) * s_noise * noise_scale)
        else:
            sigma_hat = sigma
        denoised = _denoise(model, x, sigma_hat, s_in, extra_args, guard, i)
        if callback is not None:
            _report(callback, x, i, sigmas, sigma_hat, gamma, denoised)
        if midpoint and sigma_next > 0.0:
            x = _dpm2_step(model, x, denoised, sigma_hat, sigma_next, s_in, extra_args, guard, i)
        elif heun and sigma_next > 0.0:
            dt = sigma_next - sigma_hat
            d = (x - denoised).div_(sigma_hat)
            x_2 = torch.add(x, d, alpha=dt)
            denoised_2 = _denoise(model, x_2, sigma_next, s_in, extra_args, guard, i)
            d_2 = (x_2 - denoised_2).div_(sigma_next)
            x = torch.add(x, d.add_(d_2), alpha=0.5 * dt)
        else:
            x = torch.lerp(denoised, x, sigma_next / sigma_hat)      # = x + (sigma_next - sigma_hat) d
    guard.finish()
    return x


def _dpm2_step(model, x, denoised, sigma: float, sigma_next: float, s_in, extra_args, guard, i) -> torch.Tensor:
    r"""DPM-Solver-2 in the :math:`\sigma` form (Lu et al. 2022, Algorithm 1 with :math:`r = 1/2`; Karras et al.
    2022, sec. 3): an Euler half step to the geometric midpoint :math:`\sigma_m = \sqrt{\sigma\sigma_{\rm next}}`,
    then the full step with the slope there, :math:`x + (\sigma_{\rm next} - \sigma)\, d(x_m, \sigma_m)`."""
    sigma_mid = math.sqrt(sigma * sigma_next)
    d = (x - denoised).div_(sigma)
    x_2 = torch.add(x, d, alpha=sigma_mid - sigma)
    denoised_2 = _denoise(model, x_2, sigma_mid, s_in, extra_args, guard, i)
    return torch.add(x, (x_2 - denoised_2).div_(sigma_mid), alpha=sigma_next - sigma)


def _gaussian_churn(model, x, sigmas, extra_args, callback, disable, s_churn, s_tmin, s_tmax, s_noise,
                    noise_sampler, seed, *, heun: bool, midpoint: bool = False) -> torch.Tensor:
    """Euler / Heun / DPM-Solver-2 with EDM's Gaussian churn: the churn loop with noise from ``noise_sampler``
    (or ``seed``)."""
    noise = _resolve_noise(x, noise_sampler, seed)
    return _churn_ode(model, x, sigmas, extra_args, callback, disable,
                      gammas_of=lambda sig: _churn_gammas(sig, s_churn, None, s_tmin, s_tmax), s_noise=s_noise,
                      noise=lambda s, sh: _draw(noise, s, sh, x), noise_scale=1.0, heun=heun, midpoint=midpoint)


def _ancestral(model, x, sigmas, extra_args, callback, disable, eta, s_noise, noise_sampler, seed, move, *,
               evals_per_step: int = 1) -> torch.Tensor:
    """The ancestral samplers (Euler, DPM-Solver-2, DPM-Solver++(2S)): a deterministic ``move(x, denoised, sigma,
    sigma_down, evaluate)`` to sigma_down (:func:`get_ancestral_step`), then fresh noise of level sigma_up when
    sigma_{i+1} > 0."""
    noise = _resolve_noise(x, noise_sampler, seed)
    eta, s_noise = _check_number("eta", eta), _check_number("s_noise", s_noise)

    def step(x, denoised, old_denoised, sig, i, evaluate=None):
        sigma, sigma_next = sig[i], sig[i + 1]
        sigma_down, sigma_up = get_ancestral_step(sigma, sigma_next, eta)
        x = move(x, denoised, sigma, sigma_down, evaluate)
        if sigma_next > 0.0 and sigma_up > 0.0:
            x = x.add_(_draw(noise, sigma, sigma_next, x), alpha=s_noise * sigma_up)
        return x

    return _sample_loop(model, x, sigmas, extra_args, callback, disable, step, evals_per_step=evals_per_step)
