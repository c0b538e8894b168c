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
    The Fast-Driver Sampler (below).

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

The Fast-Driver Sampler
-----------------------
The FDS paper (NeurIPS 2026 paper 7 of papers/INDEX.md) replaces Gaussian noise by a bounded, deterministic
"fast driver" (a shuffled Lorenz observable) whose partial sums are close to Brownian increments
(Melbourne-Stuart homogenization: the driver's sums converge to a Brownian motion with covariance
:math:`Q`, the Green-Kubo long-run variance, and differ from a martingale by at most :math:`2C_\chi`). Its
exact update is not public; the choices made here (shared/notes/tikhonov_freqbias_fds.md, C.2):

1. **The driver enters through EDM's churn slot.** Step :math:`i` raises the noise level to
   :math:`\hat\sigma_i = \sigma_i(1+\gamma_i)` with :math:`\gamma_i` exactly as EDM's, and sets
   :math:`\hat x_i = x_i + \sqrt{\hat\sigma_i^2 - \sigma_i^2}\, S_{\rm noise}\, \eta_i`, then takes an Euler or
   Heun step. Why: it is the one slot where the injected variance is fixed by the noise level alone
   (:math:`\hat\sigma^2 - \sigma^2`), so any zero-mean, unit-variance driver keeps the marginal right, the ODE
   solver is untouched, and Gaussian :math:`\eta` recovers EDM's stochastic sampler exactly, which makes
   every gain attributable to the driver.
2. **:math:`\eta_i` is a normalised sum of** ``n_fast`` **consecutive driver values**,
   :math:`\eta_i = (n_{\rm fast} Q)^{-1/2}\sum_{j=1}^{n_{\rm fast}} \xi_{(i,j)}`. Why: the driver is "fast"
   relative to the sampler, so one sampler step sees ``n_fast`` of its steps; by the homogenization CLT,
   :math:`\eta_i \to N(0, 1)` as ``n_fast`` grows (Gaussian churn), and ``n_fast = 1`` is the most
   non-Gaussian, bounded end (:math:`|\eta_i| \le {\rm bound}/\sqrt{Q}`). ``n_fast`` places the sampler
   between the two.
3. **:math:`Q` normalisation** (``normalize_q=True``, default): dividing by :math:`\sqrt{Q}` makes the long-run
   variance of the injected noise exactly EDM's, so FDS and EDM are compared at equal injected variance.
   With ``normalize_q=False`` the per-step variance is :math:`(\hat\sigma^2 - \sigma^2) S_{\rm noise}^2\,
   {\rm Var}(\sum_j \xi_j)/n_{\rm fast}` (:math:`\approx Q` for large ``n_fast``), the "driver strength" knob.
4. **Streams.** The driver advances only on steps that inject noise (:math:`\gamma_i > 0`), by ``n_fast``
   values; so does EDM's noise sampler here. A driver *name* is constructed fresh from ``seed`` on each call
   (reproducible); a driver *instance* is never reset: it continues its stream, so consecutive calls draw
   fresh noise (call ``driver.reset()`` yourself to repeat a run).
5. **Default** :math:`\gamma = 0.2` on every step: the lower of the two churn levels of the notes' pilot (0.2 and
   :math:`\sqrt2 - 1 \approx 0.414`, EDM's cap), which helped Euler at 4 NFE without the loss the larger
   churn caused for Heun at higher NFE.

Conventions (k-diffusion)
-------------------------
``sample_<name>(model, x, sigmas, extra_args=None, callback=None, disable=None, ...)``;
``model(x, sigma * s_in, **extra_args)`` returns :math:`D(x, \sigma)` with ``s_in = x.new_ones([x.shape[0]])``;
``callback`` gets ``{"x", "i", "sigma", "sigma_hat", "denoised"}`` once per step (``x`` is the churned
:math:`\hat x_i`, ``sigma`` and ``sigma_hat`` are 0-d tensors); ``disable`` is passed to a tqdm bar (``None``:
shown on a terminal only; ``True``: off). ``noise_sampler(sigma, sigma_next)`` returns a standard-normal tensor
like ``x``; for churn it is called as ``noise_sampler(sigma_i, sigma_hat_i)``. Without one, ``seed`` seeds a
``torch.Generator`` on ``x.device`` (``seed=None``: torch's global generator, like ``torch.randn_like``).
k-diffusion's Brownian-tree noise sampler is not provided; pass one as ``noise_sampler`` if wanted.

All arithmetic stays in ``x``'s dtype and device (the schedule is read once into Python floats, so the loop has
no host-device syncs on CUDA except where noted). The model's output is checked every evaluation: a shape
other than ``x.shape`` raises at once; NaN or inf raises ``ValueError`` naming the step and sigma (at once on
CPU; on other devices the per-step flags stay on the device and are read once at the end, so no sync per
step).

Papers: Karras, Aittala, Aila, Laine, "Elucidating the Design Space of Diffusion-Based Generative Models"
(NeurIPS 2022), Algorithms 1-2; Song, Meng, Ermon, "Denoising Diffusion Implicit Models" (ICLR 2021);
Lu, Zhou, Bao, Chen, Li, Zhu, "DPM-Solver++: Fast Solver for Guided Sampling of Diffusion Probabilistic
Models" (2022); Ho, Jain, Abbeel, "Denoising Diffusion Probabilistic Models" (NeurIPS 2020); conventions of
k-diffusion (Crowson, ``k_diffusion/sampling.py``); Melbourne & Stuart, "A note on diffusion limits of chaotic
skew-product flows" (Nonlinearity 2011) for FDS.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping

import torch

__all__ = [
    "FDS_DEFAULT_GAMMA",
    "FDS_SOLVERS",
    "SAMPLERS",
    "default_noise_sampler",
    "get_ancestral_step",
    "sample_ddim",
    "sample_dpmpp_2m",
    "sample_dpmpp_2m_sde",
    "sample_edm",
    "sample_euler",
    "sample_euler_ancestral",
    "sample_fds",
    "sample_heun",
    "to_d",
]

_GAMMA_MAX = math.sqrt(2.0) - 1.0
#: Churn of :func:`sample_fds` when neither ``gamma`` nor ``s_churn`` is given.
FDS_DEFAULT_GAMMA = 0.2
#: Base ODE solvers of :func:`sample_fds`.
FDS_SOLVERS = ("heun", "euler")
_DPMPP_SDE_SOLVERS = ("midpoint", "heun")

NoiseSampler = Callable[[float, float], torch.Tensor]


# ----------------------------------------------------------------------------------------------- helpers


def to_d(x: torch.Tensor, sigma, denoised: torch.Tensor) -> torch.Tensor:
    r"""The probability-flow ODE derivative :math:`d = (x - D)/\sigma` (``sigma`` a float or broadcastable)."""
    return (x - denoised) / sigma


def get_ancestral_step(sigma_from, sigma_to, eta: float = 1.0) -> tuple[float, float]:
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


def default_noise_sampler(x: torch.Tensor, seed: int | None = None) -> NoiseSampler:
    """Standard-normal noise like ``x``: from a ``torch.Generator`` on ``x.device`` seeded with ``seed``, or
    from torch's global generator when ``seed`` is None. The returned callable ignores its two sigmas.

    Pitfall: if ``x`` itself was drawn as ``torch.randn(x.shape, generator=torch.Generator().manual_seed(seed))``
    with the *same* seed, the first noise equals ``x / sigma_max`` exactly (so does the first draw of
    ``drivers.Gaussian(x.shape, seed=seed)``): the first churn then rescales x instead of adding independent
    noise. Seed the initial noise and the sampler from different seeds."""
    if seed is None:
        return lambda sigma, sigma_next: torch.randn_like(x)
    gen = torch.Generator(device=x.device)
    gen.manual_seed(_check_seed(seed))
    shape, dtype, device = x.shape, x.dtype, x.device
    return lambda sigma, sigma_next: torch.randn(shape, generator=gen, dtype=dtype, device=device)


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
    eps = noise(sigma, sigma_next)
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


def _churn_ode(model, x, sigmas, extra_args, callback, disable, *, gammas_of, s_noise, noise, noise_scale: float,
               heun: bool) -> torch.Tensor:
    """The loop shared by Euler, Heun, EDM and FDS: churn (EDM Algorithm 2, lines 4-6), then an Euler step or
    a Heun step (Euler on the last step to sigma = 0). ``noise(sigma, sigma_hat)`` returns the unit-variance
    churn noise, scaled by ``noise_scale``."""
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
        if heun and sigma_next > 0.0:
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


# ----------------------------------------------------------------------------------------------- ODE / churn


def sample_euler(model, x, sigmas, extra_args=None, callback=None, disable=None, s_churn=0.0, s_tmin=0.0,
                 s_tmax=float("inf"), s_noise=1.0, noise_sampler=None, seed=None) -> torch.Tensor:
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
    """
    noise = _resolve_noise(x, noise_sampler, seed)
    return _churn_ode(model, x, sigmas, extra_args, callback, disable,
                      gammas_of=lambda sig: _churn_gammas(sig, s_churn, None, s_tmin, s_tmax), s_noise=s_noise,
                      noise=lambda s, sh: _draw(noise, s, sh, x), noise_scale=1.0, heun=False)


def sample_heun(model, x, sigmas, extra_args=None, callback=None, disable=None, s_churn=0.0, s_tmin=0.0,
                s_tmax=float("inf"), s_noise=1.0, noise_sampler=None, seed=None) -> torch.Tensor:
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
    """
    noise = _resolve_noise(x, noise_sampler, seed)
    return _churn_ode(model, x, sigmas, extra_args, callback, disable,
                      gammas_of=lambda sig: _churn_gammas(sig, s_churn, None, s_tmin, s_tmax), s_noise=s_noise,
                      noise=lambda s, sh: _draw(noise, s, sh, x), noise_scale=1.0, heun=True)


def sample_edm(model, x, sigmas, extra_args=None, callback=None, disable=None, s_churn=40.0, s_tmin=0.05,
               s_tmax=50.0, s_noise=1.003, noise_sampler=None, seed=None) -> torch.Tensor:
    r"""EDM's stochastic sampler (Algorithm 2): Gaussian churn, then a Heun step.

    Exactly :func:`sample_heun` with churn on by default; the defaults are EDM's ImageNet-64 setting
    (S_churn 40, S_tmin 0.05, S_tmax 50, S_noise 1.003, used there with 256 steps; with few steps
    :math:`S_{\rm churn}/N` saturates at :math:`\gamma = \sqrt2-1`). Tune them per model as the paper does.

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable, s_churn, s_tmin, s_tmax, s_noise, noise_sampler, seed
        As in :func:`sample_euler`.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    Karras et al., NeurIPS 2022, Algorithm 2 and Table 5.
    """
    return sample_heun(model, x, sigmas, extra_args, callback, disable, s_churn=s_churn, s_tmin=s_tmin,
                       s_tmax=s_tmax, s_noise=s_noise, noise_sampler=noise_sampler, seed=seed)


# ----------------------------------------------------------------------------------------------- ancestral / DDIM


def sample_euler_ancestral(model, x, sigmas, extra_args=None, callback=None, disable=None, eta=1.0, s_noise=1.0,
                           noise_sampler=None, seed=None) -> torch.Tensor:
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
    """
    noise = _resolve_noise(x, noise_sampler, seed)
    sigmas, sig, s_in, extra_args = _setup(model, x, sigmas, extra_args)
    eta = _check_number("eta", eta)
    s_noise = _check_number("s_noise", s_noise)
    n = len(sig) - 1
    guard = _FiniteGuard(x, n)
    for i in _steps(n, disable):
        sigma, sigma_next = sig[i], sig[i + 1]
        denoised = _denoise(model, x, sigma, s_in, extra_args, guard, i)
        sigma_down, sigma_up = get_ancestral_step(sigma, sigma_next, eta)
        if callback is not None:
            _report(callback, x, i, sigmas, sigma, 0.0, denoised)
        x = torch.lerp(denoised, x, sigma_down / sigma)
        if sigma_next > 0.0 and sigma_up > 0.0:
            x = torch.add(x, _draw(noise, sigma, sigma_next, x), alpha=s_noise * sigma_up)
    guard.finish()
    return x


def sample_ddim(model, x, sigmas, extra_args=None, callback=None, disable=None, eta=0.0, s_noise=1.0,
                noise_sampler=None, seed=None) -> torch.Tensor:
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
    """
    return sample_euler_ancestral(model, x, sigmas, extra_args, callback, disable, eta=eta, s_noise=s_noise,
                                  noise_sampler=noise_sampler, seed=seed)


# ----------------------------------------------------------------------------------------------- DPM-Solver++


def sample_dpmpp_2m(model, x, sigmas, extra_args=None, callback=None, disable=None) -> torch.Tensor:
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
    """
    sigmas, sig, s_in, extra_args = _setup(model, x, sigmas, extra_args)
    n = len(sig) - 1
    guard = _FiniteGuard(x, n)
    old_denoised, h_last = None, None
    for i in _steps(n, disable):
        sigma, sigma_next = sig[i], sig[i + 1]
        denoised = _denoise(model, x, sigma, s_in, extra_args, guard, i)
        if callback is not None:
            _report(callback, x, i, sigmas, sigma, 0.0, denoised)
        if sigma_next == 0.0:
            x = denoised
            h = math.inf
        else:
            h = math.log(sigma / sigma_next)
            if old_denoised is None:
                target = denoised
            else:
                c = 0.5 * h / h_last                               # 1 / (2 r)
                target = torch.lerp(denoised, old_denoised, -c)    # (1 + c) D_i - c D_{i-1}
            x = torch.lerp(target, x, sigma_next / sigma)          # e^{-h} x + (1 - e^{-h}) target
        old_denoised, h_last = denoised, h
    guard.finish()
    return x


def sample_dpmpp_2m_sde(model, x, sigmas, extra_args=None, callback=None, disable=None, eta=1.0, s_noise=1.0,
                        noise_sampler=None, solver_type="midpoint", seed=None) -> torch.Tensor:
    r"""DPM-Solver++(2M) SDE: the multistep data-prediction solver of the reverse SDE with noise fraction
    :math:`\eta`.

    With :math:`h = \log(\sigma_i/\sigma_{i+1})`, :math:`H = (1+\eta)h`, :math:`r = h_{i-1}/h_i`,

    .. math:: x_{i+1} = e^{-H} x_i + (1 - e^{-H}) D_i + \frac{c}{r}(D_i - D_{i-1})
              + \sigma_{i+1}\sqrt{1 - e^{-2\eta h}}\, S_{\rm noise}\, z_i,

    :math:`c = 1 - (1-e^{-H})/H` (``"heun"``: exact integral of :math:`D` linear in :math:`\lambda`) or
    :math:`c = \tfrac12(1-e^{-H})` (``"midpoint"``); no correction on the first step; :math:`x_N = D_{N-1}` when
    :math:`\sigma_N = 0`. Each step keeps the marginal of a point mass: the :math:`x_0` coefficients sum to 1 and
    the noise variances to :math:`\sigma_{i+1}^2`. ``eta = 1``: reverse SDE; ``eta = 0, "midpoint"``: exactly
    :func:`sample_dpmpp_2m`.

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
    """
    if solver_type not in _DPMPP_SDE_SOLVERS:
        raise ValueError(f"solver_type must be one of {_DPMPP_SDE_SOLVERS}, got {solver_type!r}")
    noise = _resolve_noise(x, noise_sampler, seed)
    sigmas, sig, s_in, extra_args = _setup(model, x, sigmas, extra_args)
    eta = _check_number("eta", eta)
    s_noise = _check_number("s_noise", s_noise)
    n = len(sig) - 1
    guard = _FiniteGuard(x, n)
    old_denoised, h_last = None, None
    for i in _steps(n, disable):
        sigma, sigma_next = sig[i], sig[i + 1]
        denoised = _denoise(model, x, sigma, s_in, extra_args, guard, i)
        if callback is not None:
            _report(callback, x, i, sigmas, sigma, 0.0, denoised)
        if sigma_next == 0.0:
            x = denoised
            h = math.inf
        else:
            h = math.log(sigma / sigma_next)
            big_h = (1.0 + eta) * h
            phi = -math.expm1(-big_h)                              # 1 - e^{-H}
            x = torch.lerp(denoised, x, math.exp(-big_h))          # e^{-H} x + (1 - e^{-H}) D_i
            if old_denoised is not None:
                c = 0.5 * phi if solver_type == "midpoint" else 1.0 - phi / big_h
                x = x.add_(denoised - old_denoised, alpha=c * h / h_last)
            if eta > 0.0:
                x = x.add_(_draw(noise, sigma, sigma_next, x),
                           alpha=sigma_next * math.sqrt(-math.expm1(-2.0 * eta * h)) * s_noise)
        old_denoised, h_last = denoised, h
    guard.finish()
    return x


# ----------------------------------------------------------------------------------------------- FDS


def _resolve_driver(driver, shape: tuple[int, ...], seed):
    if isinstance(driver, str):
        from .drivers import make_driver

        return make_driver(driver, shape, seed=_check_seed(seed))
    missing = [a for a in ("shape", "draw", "Q") if not hasattr(driver, a)]
    if missing:
        raise ValueError(f"driver must be a driver name or a Driver with .shape, .draw and .Q; "
                         f"{type(driver).__name__} lacks {missing}")
    return driver


def sample_fds(model, x, sigmas, extra_args=None, callback=None, disable=None, *, driver="lorenz", seed=0,
               gamma=None, s_churn=None, s_tmin=0.0, s_tmax=float("inf"), s_noise=1.0, n_fast=1, normalize_q=True,
               solver="heun") -> torch.Tensor:
    r"""The Fast-Driver Sampler: EDM churn driven by a bounded fast driver instead of Gaussian noise.

    .. math:: \hat\sigma_i = \sigma_i(1+\gamma_i), \qquad
              \eta_i = (n_{\rm fast}\, Q)^{-1/2} \sum_{j=1}^{n_{\rm fast}} \xi_{(i,j)}, \qquad
              \hat x_i = x_i + \sqrt{\hat\sigma_i^2 - \sigma_i^2}\, S_{\rm noise}\, \eta_i,

    then an Euler or Heun step from :math:`(\hat x_i, \hat\sigma_i)` to :math:`\sigma_{i+1}` (as in
    :func:`sample_euler` / :func:`sample_heun`). :math:`\xi_{(i,1)}, \xi_{(i,2)}, \dots` are consecutive values of
    the driver's stream, :math:`Q` its long-run variance (``driver.Q``; the :math:`Q^{-1/2}` is dropped when
    ``normalize_q=False``). :math:`\gamma_i` is EDM's: a fixed ``gamma``, or :math:`\min(S_{\rm churn}/N, \sqrt2-1)`,
    in both cases only for :math:`S_{\rm tmin} \le \sigma_i \le S_{\rm tmax}` (else 0: a plain ODE step). The
    choices behind this form are in the module docstring.

    Exact reductions (tested): ``gamma=0`` is the base solver bit for bit; a Gaussian driver with
    ``n_fast=1`` (Q = 1) is EDM's stochastic sampler (:func:`sample_heun` with churn) on the same noise stream.

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable
        As in :func:`sample_euler`; ``x`` has shape (B, ...).
    driver : str or Driver
        A name for ``fastnips.diffusion.drivers.make_driver`` (``"lorenz"``, ``"gaussian"``, ``"rademacher"``,
        ``"uniform"``), built fresh with ``shape=x.shape`` and ``seed``; or a driver instance with
        ``.shape == x.shape``, ``.draw(n, device=...)`` -> (n, \*x.shape) and ``.Q``. An instance is **not**
        reset: it continues its stream.
    seed : int
        Seed of a driver built from a name (ignored for an instance).
    gamma : float, optional
        Fixed churn per step, in :math:`[0, \sqrt2-1]`. Default :data:`FDS_DEFAULT_GAMMA` (0.2) when neither
        ``gamma`` nor ``s_churn`` is given. A fixed gamma is a few-step setting: every step then integrates the
        ODE from :math:`1.2\sigma_i` to :math:`\sigma_{i+1}`, an :math:`O(\gamma\sigma)` step that does not
        shrink as the step count grows, so the sampler does **not** converge to the target as NFE -> inf
        (tests/diffusion/test_convergence.py measures it). For many steps use ``s_churn`` (EDM's
        :math:`\gamma = S_{\rm churn}/N`), which converges.
    s_churn : float, optional
        EDM's total churn instead of ``gamma`` (:math:`\gamma = \min(S_{\rm churn}/N, \sqrt2-1)`); not both.
    s_tmin, s_tmax : float
        Churn only where ``s_tmin <= sigma_i <= s_tmax``.
    s_noise : float
        Noise scale, >= 0.
    n_fast : int
        Driver values summed per churned step, >= 1.
    normalize_q : bool
        Divide by :math:`\sqrt Q` so the injected variance is EDM's.
    solver : {"heun", "euler"}
        Base ODE solver.

    Returns
    -------
    torch.Tensor, shape of ``x``

    References
    ----------
    NeurIPS 2026 paper 7 (Fast-Driver Sampler; update form unpublished, see module docstring); Karras et al.,
    NeurIPS 2022, Algorithm 2; Melbourne & Stuart, Nonlinearity 24 (2011).
    """
    if solver not in FDS_SOLVERS:
        raise ValueError(f"solver must be one of {FDS_SOLVERS}, got {solver!r}")
    if isinstance(n_fast, bool) or not isinstance(n_fast, numbers.Integral) or n_fast < 1:
        raise ValueError(f"n_fast must be an integer >= 1, got {n_fast!r}")
    n_fast = int(n_fast)
    s_noise = _check_number("s_noise", s_noise)
    if gamma is None and s_churn is None:
        gamma = FDS_DEFAULT_GAMMA
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"x must be a torch.Tensor, got {type(x).__name__}")
    shape = tuple(x.shape)
    drv = _resolve_driver(driver, shape, seed)
    if tuple(drv.shape) != shape:
        raise ValueError(f"driver.shape {tuple(drv.shape)} must equal x.shape {shape}")
    if normalize_q:                        # read Q only when used (a temporal Lorenz driver estimates it)
        q = float(drv.Q)
        if not (math.isfinite(q) and q > 0.0):
            raise ValueError(f"driver.Q must be positive and finite to normalise by it, got {drv.Q!r}")
        scale = 1.0 / math.sqrt(n_fast * q)
    else:
        scale = 1.0 / math.sqrt(n_fast)
    want = (n_fast, *shape)

    def noise(sigma: float, sigma_hat: float) -> torch.Tensor:
        xi = drv.draw(n_fast, device=x.device)
        if tuple(xi.shape) != want:
            raise ValueError(f"driver.draw({n_fast}) returned shape {tuple(xi.shape)}, expected {want}")
        xi = xi.to(device=x.device, dtype=x.dtype)
        return xi[0] if n_fast == 1 else xi.sum(0)

    return _churn_ode(model, x, sigmas, extra_args, callback, disable,
                      gammas_of=lambda sig: _churn_gammas(sig, s_churn, gamma, s_tmin, s_tmax), s_noise=s_noise,
                      noise=noise, noise_scale=scale, heun=solver == "heun")


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
}
