r"""The Fast-Driver Sampler (FDS): EDM's churn driven by a bounded fast driver instead of Gaussian noise.

FDS replaces Gaussian noise by a bounded, deterministic "fast driver" (a shuffled Lorenz observable,
:mod:`fastnips.diffusion.drivers`) whose partial sums are close to Brownian increments (Melbourne-Stuart
homogenization: the driver's sums converge to a Brownian motion with covariance :math:`Q`, the Green-Kubo
long-run variance, and differ from a martingale by at most :math:`2C_\chi`). The paper's abstract names the two
driver quantities (:math:`Q` sets the effective diffusion level, :math:`C_\chi` the finite-step remainder) but
not the update rule. The choices made here, and why:

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
5. **Default** :math:`\gamma = 0.2` on every step: the lower of two churn levels tried (0.2 and
   :math:`\sqrt2 - 1 \approx 0.414`, EDM's cap); the larger one hurt Heun at higher NFE. A fixed
   :math:`\gamma` converges as NFE grows with the default Heun base but not with the Euler base (see
   ``gamma`` in :func:`sample_fds`). Measurements: docs/notes/diffusion.md.
6. **dtype.** The driver draws in ``x``'s dtype (float64 values for a float64 ``x``), so a Gaussian driver
   reproduces ``sample_edm(seed=s)`` / ``sample_euler(seed=s)`` bit for bit in float32 and float64 alike.

Exact reductions (tested): ``sample_fds(gamma=0)`` is its base solver (:func:`~fastnips.diffusion.samplers.
sample_heun` / ``sample_euler``) bit for bit; ``sample_fds`` with a Gaussian driver, ``n_fast=1`` and
``normalize_q=True`` is ``sample_heun`` with churn and a noise sampler reading the same Gaussian stream, bit for
bit; by name, ``sample_fds(driver="gaussian", seed=s, s_churn=..., ...)`` equals ``sample_edm(seed=s)`` with the
same churn arguments (on the CPU, where both generators are torch's CPU generator).

References: "Fast-Driver Sampler" (FDS), NeurIPS 2026 (abstract; the update rule is not published); Karras,
Aittala, Aila, Laine, "Elucidating the Design Space of Diffusion-Based Generative Models" (NeurIPS 2022),
Algorithm 2; Melbourne & Stuart, "A note on diffusion limits of chaotic skew-product flows" (Nonlinearity 24,
2011).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from .loop import _check_number, _check_seed, _churn_gammas, _churn_ode

if TYPE_CHECKING:
    from .driver_base import Driver

__all__ = ["FDS_DEFAULT_GAMMA", "FDS_SOLVERS", "sample_fds"]

#: Churn of :func:`sample_fds` when neither ``gamma`` nor ``s_churn`` is given.
FDS_DEFAULT_GAMMA = 0.2
#: Base ODE solvers of :func:`sample_fds`.
FDS_SOLVERS = ("heun", "euler")


def _resolve_driver(driver, shape: tuple[int, ...], seed):
    if isinstance(driver, str):
        from .drivers import make_driver

        return make_driver(driver, shape, seed=_check_seed(seed))
    missing = [a for a in ("shape", "draw", "Q") if not hasattr(driver, a)]
    if missing:
        raise ValueError(f"driver must be a driver name or a Driver with .shape, .draw and .Q; "
                         f"{type(driver).__name__} lacks {missing}")
    return driver


def _driver_noise(drv, x: torch.Tensor, n_fast: int, normalize_q: bool):
    """(noise(sigma, sigma_hat), scale): the sum of the next ``n_fast`` driver values like ``x``, and the factor
    :math:`(n_{\\rm fast} Q)^{-1/2}` (or :math:`n_{\\rm fast}^{-1/2}` without Q normalisation)."""
    shape = tuple(x.shape)
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
        xi = drv.draw(n_fast, device=x.device, dtype=x.dtype)     # in x's dtype: float64 draws stay float64
        if tuple(xi.shape) != want:
            raise ValueError(f"driver.draw({n_fast}) returned shape {tuple(xi.shape)}, expected {want}")
        xi = xi.to(device=x.device, dtype=x.dtype)
        return xi[0] if n_fast == 1 else xi.sum(0)

    return noise, scale


def sample_fds(model: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor,
               extra_args: dict[str, Any] | None = None, callback: Callable[[dict[str, Any]], object] | None = None,
               disable: bool | None = None, *, driver: str | Driver = "lorenz", seed: int = 0,
               gamma: float | None = None, s_churn: float | None = None, s_tmin: float = 0.0,
               s_tmax: float = float("inf"), s_noise: float = 1.0, n_fast: int = 1, normalize_q: bool = True,
               solver: str = "heun") -> torch.Tensor:
    r"""The Fast-Driver Sampler: EDM churn driven by a bounded fast driver instead of Gaussian noise.

    .. math:: \hat\sigma_i = \sigma_i(1+\gamma_i), \qquad
              \eta_i = (n_{\rm fast}\, Q)^{-1/2} \sum_{j=1}^{n_{\rm fast}} \xi_{(i,j)}, \qquad
              \hat x_i = x_i + \sqrt{\hat\sigma_i^2 - \sigma_i^2}\, S_{\rm noise}\, \eta_i,

    then an Euler or Heun step from :math:`(\hat x_i, \hat\sigma_i)` to :math:`\sigma_{i+1}` (as in
    :func:`~fastnips.diffusion.samplers.sample_euler` / ``sample_heun``). :math:`\xi_{(i,1)}, \xi_{(i,2)}, \dots`
    are consecutive values of the driver's stream, :math:`Q` its long-run variance (``driver.Q``; the
    :math:`Q^{-1/2}` is dropped when ``normalize_q=False``). :math:`\gamma_i` is EDM's: a fixed ``gamma``, or
    :math:`\min(S_{\rm churn}/N, \sqrt2-1)`, in both cases only for :math:`S_{\rm tmin} \le \sigma_i \le
    S_{\rm tmax}` (else 0: a plain ODE step). The choices behind this form are in the module docstring.

    Parameters
    ----------
    model, x, sigmas, extra_args, callback, disable
        As in :func:`~fastnips.diffusion.samplers.sample_euler`; ``x`` has shape (B, ...).
    driver : str or Driver
        A name for ``fastnips.diffusion.drivers.make_driver`` (``"lorenz"``, ``"gaussian"``, ``"rademacher"``,
        ``"uniform"``), built fresh with ``shape=x.shape`` and ``seed``; or a driver instance with
        ``.shape == x.shape``, ``.draw(n, device=...)`` -> (n, \*x.shape) and ``.Q``. An instance is **not**
        reset: it continues its stream.
    seed : int
        Seed of a driver built from a name (ignored for an instance).
    gamma : float, optional
        Fixed churn per step, in :math:`[0, \sqrt2-1]`. Default :data:`FDS_DEFAULT_GAMMA` (0.2) when neither
        ``gamma`` nor ``s_churn`` is given. With a fixed gamma every step integrates the ODE from
        :math:`(1+\gamma)\sigma_i` to :math:`\sigma_{i+1}`, an :math:`O(\gamma\sigma)` step that does not
        shrink as the step count grows. With ``solver="euler"`` the sampler then does **not** converge as
        NFE -> inf (its first-order error per step is not forgotten faster than it is made); with the default
        ``solver="heun"`` it does (on a Gaussian target, by an exact variance recursion, and with bounded drivers
        too; numbers in docs/notes/diffusion.md). ``s_churn`` (EDM's :math:`\gamma = S_{\rm churn}/N`)
        converges with either base.
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
    "Fast-Driver Sampler", NeurIPS 2026 (update form unpublished, see the module docstring); Karras et al.,
    NeurIPS 2022, Algorithm 2; Melbourne & Stuart, Nonlinearity 24 (2011).

    Examples
    --------
    >>> import torch, fastnips.diffusion as fd
    >>> x = 80.0 * torch.randn(256, 2, dtype=torch.float64)
    >>> fd.sample_fds(fd.GMM.grid2d(), x, fd.edm_sigmas(6), driver="lorenz", solver="euler", seed=0).shape
    torch.Size([256, 2])
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
    drv = _resolve_driver(driver, tuple(x.shape), seed)
    noise, scale = _driver_noise(drv, x, n_fast, normalize_q)
    return _churn_ode(model, x, sigmas, extra_args, callback, disable,
                      gammas_of=lambda sig: _churn_gammas(sig, s_churn, gamma, s_tmin, s_tmax), s_noise=s_noise,
                      noise=noise, noise_scale=scale, heun=solver == "heun")
