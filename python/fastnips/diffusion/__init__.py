r"""Few-step diffusion sampling: the Fast-Driver Sampler (FDS) and the samplers it competes with.

* :mod:`~fastnips.diffusion.samplers`: k-diffusion-signature samplers ``sample_<name>(model, x, sigmas,
  extra_args=None, callback=None, disable=None, ...)`` -- Euler (= DDIM eta 0), Heun (EDM Algorithm 1), EDM
  stochastic (Algorithm 2), Euler ancestral (= DDIM eta > 0), DPM-Solver++(2M), DPM-Solver++(2M) SDE -- over
  the shared step loops of :mod:`~fastnips.diffusion.loop`.
* :mod:`~fastnips.diffusion.fds`: :func:`sample_fds`, EDM's churn slot driven by a bounded fast driver (the
  choices the paper leaves open are in its module docstring).
* :mod:`~fastnips.diffusion.schedules`: Karras (EDM), exponential (uniform in log sigma), polyexponential, VP.
* :mod:`~fastnips.diffusion.drivers`: ``Lorenz`` (shuffle "time" | "space" | "none";
  :mod:`~fastnips.diffusion.lorenz`), ``Gaussian``, ``Rademacher``, ``Uniform``, ``make_driver``; ``.stats()``
  estimates Q (batch means, Green-Kubo) and C_chi (:mod:`~fastnips.diffusion.driver_base`); the RK4 integrator
  of many Lorenz copies is native (C++; Triton for CUDA tensors) with a numpy reference.
* :mod:`~fastnips.diffusion.targets`: exact-score targets ``GMM`` and ``KDE`` (the exact optimal denoiser of a
  kernel density on digits / MNIST-5k), usable as k-diffusion models.
* :mod:`~fastnips.diffusion.metrics`: sliced Wasserstein, MMD, mode TV, in-mode fraction, NLL, nearest-training
  distance, and ``noise_floor`` (each metric on two exact sample sets).
* :mod:`~fastnips.diffusion.models`: a small U-Net with EDM preconditioning and training; the shipped digits
  denoiser ``load_digits_denoiser()``.

Design notes and measurements: docs/notes/diffusion.md. Paper: "Fast-Driver Sampler" (FDS), NeurIPS 2026.

Examples
--------
>>> import torch, fastnips.diffusion as fd
>>> gmm = fd.GMM.grid2d()
>>> x = 80.0 * torch.randn(512, 2, dtype=torch.float64)
>>> fd.sample_fds(gmm, x, fd.get_sigmas_karras(6, 0.002, 80.0), solver="euler", seed=0).shape
torch.Size([512, 2])
"""

from __future__ import annotations

from .. import _optional

if (_missing := _optional.missing_torch(__name__)) is not None:  # torch-only: say what to install
    raise _missing

from . import driver_base, drivers, fds, loop, lorenz, metrics, models, samplers, schedules, targets
from .drivers import Driver, Gaussian, Lorenz, Rademacher, Uniform, make_driver
from .samplers import (
    FDS_DEFAULT_GAMMA,
    SAMPLERS,
    get_ancestral_step,
    sample_ddim,
    sample_dpmpp_2m,
    sample_dpmpp_2m_sde,
    sample_edm,
    sample_euler,
    sample_euler_ancestral,
    sample_fds,
    sample_heun,
)
from .schedules import edm_sigmas, get_sigmas_exponential, get_sigmas_karras, get_sigmas_polyexponential, get_sigmas_vp
from .targets import GMM, KDE

__all__ = [
    "FDS_DEFAULT_GAMMA",
    "GMM",
    "KDE",
    "SAMPLERS",
    "Driver",
    "Gaussian",
    "Lorenz",
    "Rademacher",
    "Uniform",
    "driver_base",
    "drivers",
    "edm_sigmas",
    "fds",
    "get_ancestral_step",
    "get_sigmas_exponential",
    "get_sigmas_karras",
    "get_sigmas_polyexponential",
    "get_sigmas_vp",
    "loop",
    "lorenz",
    "make_driver",
    "metrics",
    "models",
    "sample_ddim",
    "sample_dpmpp_2m",
    "sample_dpmpp_2m_sde",
    "sample_edm",
    "sample_euler",
    "sample_euler_ancestral",
    "sample_fds",
    "sample_heun",
    "samplers",
    "schedules",
    "targets",
]
