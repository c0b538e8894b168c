r"""Few-step diffusion sampling: the Fast-Driver Sampler (FDS) and the samplers it competes with.

* :mod:`~fastnips.diffusion.samplers`: k-diffusion-signature samplers ``sample_<name>(model, x, sigmas,
  extra_args=None, callback=None, disable=None, ...)`` -- Euler (= DDIM eta 0), Heun (EDM Algorithm 1), EDM
  stochastic (Algorithm 2), Euler ancestral (= DDIM eta > 0), DPM-Solver++(2M), DPM-Solver++(2M) SDE -- over
  the shared step loops of :mod:`~fastnips.diffusion.loop`; DPM-Solver-2 (plain and ancestral), DPM-Solver++(2S)
  ancestral and DPM-Solver++ SDE (:mod:`~fastnips.diffusion.singlestep`), LMS and DPM-Solver++(3M) SDE
  (:mod:`~fastnips.diffusion.multistep`); DPM-Solver-fast and DPM-Solver-12/23 adaptive with k-diffusion's
  ``(model, x, sigma_min, sigma_max, ...)`` signature (:mod:`~fastnips.diffusion.dpm_solver`); all run under
  ``torch.no_grad()``.
* :mod:`~fastnips.diffusion.brownian`: ``BrownianTreeNoiseSampler`` (torchsde when installed, else plain torch).
* :mod:`~fastnips.diffusion.wrappers`: ``EpsDenoiser`` / ``VDenoiser`` turn eps- / v-prediction networks of a
  discrete DDPM schedule into denoisers (k-diffusion's ``external``); :mod:`~fastnips.diffusion.diffusers_adapter`:
  ``FastnipsScheduler``, a diffusers-style scheduler (``set_timesteps``, ``scale_model_input``, ``step``,
  ``init_noise_sigma``) that runs any of these samplers, FDS included, inside a diffusers pipeline loop.
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

from . import (
    brownian,
    diffusers_adapter,
    dpm_solver,
    driver_base,
    drivers,
    fds,
    loop,
    lorenz,
    metrics,
    models,
    multistep,
    samplers,
    schedules,
    singlestep,
    targets,
    wrappers,
)
from .brownian import BrownianTreeNoiseSampler
from .diffusers_adapter import FastnipsScheduler
from .dpm_solver import sample_dpm_adaptive, sample_dpm_fast
from .drivers import Driver, Gaussian, Lorenz, Rademacher, Uniform, make_driver
from .samplers import (
    FDS_DEFAULT_GAMMA,
    SAMPLERS,
    get_ancestral_step,
    sample_ddim,
    sample_dpm_2,
    sample_dpm_2_ancestral,
    sample_dpmpp_2m,
    sample_dpmpp_2m_sde,
    sample_dpmpp_2s_ancestral,
    sample_dpmpp_3m_sde,
    sample_dpmpp_sde,
    sample_edm,
    sample_euler,
    sample_euler_ancestral,
    sample_fds,
    sample_heun,
    sample_lms,
)
from .schedules import edm_sigmas, get_sigmas_exponential, get_sigmas_karras, get_sigmas_polyexponential, get_sigmas_vp
from .targets import GMM, KDE
from .wrappers import DiscreteSchedule, EpsDenoiser, VDenoiser

__all__ = [
    "FDS_DEFAULT_GAMMA",
    "GMM",
    "KDE",
    "SAMPLERS",
    "BrownianTreeNoiseSampler",
    "DiscreteSchedule",
    "Driver",
    "EpsDenoiser",
    "FastnipsScheduler",
    "Gaussian",
    "Lorenz",
    "Rademacher",
    "Uniform",
    "VDenoiser",
    "brownian",
    "diffusers_adapter",
    "dpm_solver",
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
    "multistep",
    "sample_ddim",
    "sample_dpm_2",
    "sample_dpm_2_ancestral",
    "sample_dpm_adaptive",
    "sample_dpm_fast",
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
    "samplers",
    "schedules",
    "singlestep",
    "targets",
    "wrappers",
]
