r"""A diffusers-style scheduler that runs any fastnips sampler (FDS included) inside a diffusers denoising loop.

A diffusers pipeline owns the loop and calls the network itself::

    latents = randn(shape) * scheduler.init_noise_sigma
    for t in scheduler.timesteps:
        inp = scheduler.scale_model_input(latents, t)
        out = unet(inp, t).sample
        latents = scheduler.step(out, t, latents).prev_sample

while a fastnips sampler owns its loop and calls ``model(x, sigma)`` -- once or twice per step, with churn or
a midpoint evaluation the pipeline cannot foresee. :class:`FastnipsScheduler` reconciles the two without
changing either:

1. ``set_timesteps(n)`` builds the sampler's schedule (Karras, exponential or the trained grid) and runs the
   sampler once on a 1-element dummy to record the noise level of every model evaluation; ``timesteps`` is that
   list mapped to the network's time (:class:`~fastnips.diffusion.wrappers.DiscreteSchedule`), one entry per
   evaluation (e.g. 2N - 1 for Heun), so the pipeline's loop makes exactly the sampler's calls.
2. The sampler then runs in a worker thread on the pipeline's initial ``latents``; its ``model(x, sigma)``
   hands ``(x, sigma)`` to the pipeline and waits. ``scale_model_input`` returns the *sampler's* requested input
   :math:`x/\sqrt{\sigma^2+1}` (for churned samplers that is :math:`\hat x`, not ``latents``), and ``step``
   turns the network output into :math:`D(x, \sigma)` (:func:`~fastnips.diffusion.wrappers.to_denoised`),
   passes it to the sampler and returns the sampler's next input (or its final result) as ``prev_sample``.

So a pipeline step is one model evaluation, and the result equals the sampler called directly on
:class:`~fastnips.diffusion.wrappers.EpsDenoiser` / ``VDenoiser`` of the same network, up to the rounding of
the network time (``timesteps`` are computed once in float64 and handed over as float32; tests/diffusion/
test_diffusers_adapter.py). The samplers' own arguments (``seed``, ``driver``, ``s_churn``,
...) are passed at construction; ``generator`` in ``step`` is accepted and ignored. Pipelines that skip
``scale_model_input`` (diffusers' ``DDPMPipeline``) are refused with a clear error. diffusers is not imported.

Examples
--------
>>> import torch
>>> sch = FastnipsScheduler("heun", num_train_timesteps=100)
>>> sch.set_timesteps(4)
>>> len(sch.timesteps)            # 4 Heun steps ending at sigma = 0: 2 * 4 - 1 evaluations
7
"""

from __future__ import annotations

import inspect
import math
import queue
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, NamedTuple

import torch

from .schedules import get_sigmas_exponential, get_sigmas_karras
from .wrappers import PREDICTION_TYPES, DiscreteSchedule, model_input, to_denoised

__all__ = ["FastnipsScheduler", "SchedulerOutput", "make_betas"]

_SIGMA_SCHEDULES = ("karras", "exponential", "discrete")
_BETA_SCHEDULES = ("linear", "scaled_linear", "squaredcos_cap_v2")


class SchedulerOutput(NamedTuple):
    """What ``step`` returns: the next latents and the denoiser's estimate of the clean sample."""

    prev_sample: torch.Tensor
    pred_original_sample: torch.Tensor


def make_betas(num_train_timesteps: int, beta_start: float, beta_end: float, beta_schedule: str) -> torch.Tensor:
    r"""The training betas of a DDPM schedule as diffusers names them (float64).

    ``"linear"``: evenly spaced; ``"scaled_linear"``: evenly spaced in :math:`\sqrt\beta` (Stable Diffusion);
    ``"squaredcos_cap_v2"``: the cosine schedule of Nichol & Dhariwal (2021), capped at 0.999.

    Examples
    --------
    >>> make_betas(3, 0.1, 0.3, "linear")
    tensor([0.1000, 0.2000, 0.3000], dtype=torch.float64)
    """
    if beta_schedule not in _BETA_SCHEDULES:
        raise ValueError(f"beta_schedule must be one of {_BETA_SCHEDULES}, got {beta_schedule!r}")
    n = int(num_train_timesteps)
    if beta_schedule == "linear":
        return torch.linspace(beta_start, beta_end, n, dtype=torch.float64)
    if beta_schedule == "scaled_linear":
        return torch.linspace(beta_start**0.5, beta_end**0.5, n, dtype=torch.float64) ** 2

    def abar(t):
        return math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
    return torch.tensor([min(1 - abar((i + 1) / n) / abar(i / n), 0.999) for i in range(n)], dtype=torch.float64)


class _Abort(Exception):
    """Raised inside the worker thread to stop an abandoned run."""


class _Run:
    """One sampler call in a worker thread; ``model`` requests go out through ``requests``."""

    def __init__(self, sampler: Callable[..., torch.Tensor], x: torch.Tensor, sigmas: torch.Tensor, kwargs: dict):
        self.requests: queue.Queue = queue.Queue()
        self.replies: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._work, args=(sampler, x, sigmas, kwargs), daemon=True)
        self.thread.start()

    def _model(self, x, sigma, **extra):
        self.requests.put(("eval", x, sigma[0]))
        reply = self.replies.get()
        if reply is _Abort:
            raise _Abort()
        return reply

    def _work(self, sampler, x, sigmas, kwargs):
        try:
            out = sampler(self._model, x, sigmas, disable=True, **kwargs)
        except _Abort:
            return
        except BaseException as exc:  # handed to the pipeline's thread, raised there
            self.requests.put(("error", exc))
            return
        self.requests.put(("done", out))

    def next(self):
        kind, *rest = self.requests.get()
        if kind == "error":
            raise rest[0]
        return kind, rest

    def abort(self):
        if self.thread.is_alive():
            self.replies.put(_Abort)


class FastnipsScheduler:
    r"""A diffusers-compatible scheduler (``set_timesteps``, ``scale_model_input``, ``step``,
    ``init_noise_sigma``, ``timesteps``) driving a fastnips sampler. The mechanism is in the module docstring.

    Parameters
    ----------
    sampler : str or callable
        A name of :data:`fastnips.diffusion.samplers.SAMPLERS` (``"dpmpp_2m"``, ``"heun"``, ``"fds"``, ...) or a
        sampler with the k-diffusion signature.
    num_train_timesteps, beta_start, beta_end, beta_schedule, trained_betas
        The network's training schedule, as in a diffusers scheduler config (``trained_betas`` overrides the
        others).
    prediction_type : {"epsilon", "v_prediction", "sample"}
        What the network predicts.
    sigma_schedule : {"karras", "exponential", "discrete"}
        Inference noise levels between the trained :math:`\sigma_{\min}` and :math:`\sigma_{\max}` (Karras
        :math:`\rho = 7`, uniform in :math:`\log\sigma`, or evenly spaced trained indices), then 0.
    quantize : bool
        Call the network at trained indices only.
    sampler_kwargs : dict, optional
        Passed to the sampler on every run (``seed``, ``driver``, ``s_churn``, ``eta``, ...).

    Examples
    --------
    >>> import torch
    >>> sch = FastnipsScheduler("dpmpp_2m", num_train_timesteps=100, sampler_kwargs={})
    >>> sch.set_timesteps(5)
    >>> x = torch.randn(1, 2) * sch.init_noise_sigma
    >>> for t in sch.timesteps:
    ...     eps = torch.zeros_like(x)                      # a network that predicts no noise
    ...     x = sch.step(eps, t, sch.scale_model_input(x, t)).prev_sample
    >>> x.shape
    torch.Size([1, 2])
    """

    order = 1

    def __init__(self, sampler: str | Callable[..., torch.Tensor] = "dpmpp_2m", *, num_train_timesteps: int = 1000,
                 beta_start: float = 0.0001, beta_end: float = 0.02, beta_schedule: str = "linear",
                 trained_betas: torch.Tensor | None = None, prediction_type: str = "epsilon",
                 sigma_schedule: str = "karras", quantize: bool = False,
                 sampler_kwargs: dict[str, Any] | None = None):
        from .samplers import SAMPLERS

        if isinstance(sampler, str):
            if sampler not in SAMPLERS:
                raise ValueError(f"unknown sampler {sampler!r}; choose one of {sorted(SAMPLERS)} or pass a callable")
            self._sampler = SAMPLERS[sampler]
        elif callable(sampler):
            self._sampler = sampler
        else:
            raise ValueError(f"sampler must be a name or a callable, got {type(sampler).__name__}")
        if prediction_type not in PREDICTION_TYPES:
            raise ValueError(f"prediction_type must be one of {PREDICTION_TYPES}, got {prediction_type!r}")
        if sigma_schedule not in _SIGMA_SCHEDULES:
            raise ValueError(f"sigma_schedule must be one of {_SIGMA_SCHEDULES}, got {sigma_schedule!r}")
        if sampler_kwargs is not None and not isinstance(sampler_kwargs, dict):
            raise ValueError(f"sampler_kwargs must be a dict, got {type(sampler_kwargs).__name__}")
        params = inspect.signature(self._sampler).parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            reserved = {"model", "x", "sigmas", "disable"}
            bad = sorted(k for k in (sampler_kwargs or {}) if k not in params or k in reserved)
            if bad:
                name = getattr(self._sampler, "__name__", "the sampler")
                raise ValueError(f"sampler_kwargs {bad} are not arguments of {name} (or are set by the scheduler)")
        if not isinstance(num_train_timesteps, int) or num_train_timesteps < 2:
            raise ValueError(f"num_train_timesteps must be an int >= 2, got {num_train_timesteps!r}")
        betas = (torch.as_tensor(trained_betas, dtype=torch.float64) if trained_betas is not None
                 else make_betas(num_train_timesteps, beta_start, beta_end, beta_schedule))
        if not bool(((betas > 0) & (betas < 1)).all()):
            raise ValueError("betas must lie in (0, 1)")
        self.alphas_cumprod = torch.cumprod(1.0 - betas, 0)
        self.schedule = DiscreteSchedule(self.alphas_cumprod, quantize)
        self.prediction_type, self.sigma_schedule = prediction_type, sigma_schedule
        self.sampler_kwargs = dict(sampler_kwargs or {})
        self.config = SimpleNamespace(
            sampler=getattr(sampler, "__name__", sampler), num_train_timesteps=len(betas), beta_start=beta_start,
            beta_end=beta_end, beta_schedule=beta_schedule, prediction_type=prediction_type,
            sigma_schedule=sigma_schedule, quantize=quantize)
        self.sigmas: torch.Tensor | None = None
        self.timesteps: torch.Tensor | None = None
        self.num_inference_steps: int | None = None
        self._eval_sigmas: list[float] = []
        self._run: _Run | None = None
        self._pending: tuple[torch.Tensor, torch.Tensor] | None = None
        self._k = 0

    @classmethod
    def from_config(cls, config: Any, sampler: str | Callable[..., torch.Tensor] = "dpmpp_2m",
                    **kwargs: Any) -> FastnipsScheduler:
        """From a diffusers scheduler ``config`` (a mapping or an object with attributes): reads
        ``num_train_timesteps``, ``beta_start``, ``beta_end``, ``beta_schedule``, ``trained_betas`` and
        ``prediction_type`` where present; ``kwargs`` override."""
        keys = ("num_train_timesteps", "beta_start", "beta_end", "beta_schedule", "trained_betas", "prediction_type")
        get = config.get if hasattr(config, "get") else (lambda k, d=None: getattr(config, k, d))
        args = {k: get(k) for k in keys if get(k) is not None}
        return cls(sampler, **(args | kwargs))

    @property
    def init_noise_sigma(self) -> float:
        """Scale of the initial latents: the largest inference noise level (latents = randn * this)."""
        if self.sigmas is None:
            raise RuntimeError("call set_timesteps(num_inference_steps) first")
        return float(self.sigmas[0])

    def _make_sigmas(self, n: int) -> torch.Tensor:
        lo, hi = self.schedule.sigma_min, self.schedule.sigma_max
        if self.sigma_schedule == "karras":
            return get_sigmas_karras(n, lo, hi)
        if self.sigma_schedule == "exponential":
            return get_sigmas_exponential(n, lo, hi)
        t = torch.linspace(len(self.alphas_cumprod) - 1, 0, n, dtype=torch.float64)
        return torch.cat([self.schedule.t_to_sigma(t), t.new_zeros(1)])

    def _dry_run(self, sigmas: torch.Tensor) -> list[float]:
        """The noise level of every model evaluation, from one run on a 1-element dummy (noise does not change
        where a sampler evaluates, so any driver / noise sampler is replaced by a light one)."""
        seen: list[float] = []

        def model(x, sigma, **extra):
            seen.append(float(sigma[0]))
            return torch.zeros_like(x)

        kw = {k: v for k, v in self.sampler_kwargs.items() if k not in ("noise_sampler", "seed", "driver")}
        params = inspect.signature(self._sampler).parameters
        if "driver" in params:
            kw["driver"] = "rademacher"
        if "noise_sampler" in params:
            kw["noise_sampler"] = lambda a, b: torch.zeros(1, 1, dtype=torch.float64)
        self._sampler(model, torch.zeros(1, 1, dtype=torch.float64), sigmas, disable=True, **kw)
        return seen

    def set_timesteps(self, num_inference_steps: int, device: str | torch.device | None = None) -> None:
        """Build the noise levels for ``num_inference_steps`` sampler steps and the list of evaluation times."""
        if isinstance(num_inference_steps, bool) or not isinstance(num_inference_steps, int) or num_inference_steps < 1:
            raise ValueError(f"num_inference_steps must be an int >= 1, got {num_inference_steps!r}")
        self._stop()
        self.num_inference_steps = num_inference_steps
        self.sigmas = self._make_sigmas(num_inference_steps)
        self._eval_sigmas = self._dry_run(self.sigmas)
        t = self.schedule.sigma_to_t(torch.tensor(self._eval_sigmas, dtype=torch.float64))
        self.timesteps = t.to(device=device, dtype=torch.float32)

    def _stop(self) -> None:
        if self._run is not None:
            self._run.abort()
        self._run, self._pending, self._k = None, None, 0

    def _expect(self, kind: str, rest: list) -> torch.Tensor:
        if kind == "eval":
            x, sigma = rest
            self._pending = (x, sigma)
            return x
        self._pending = None
        self._run = None
        return rest[0]

    def scale_model_input(self, sample: torch.Tensor, timestep: float | torch.Tensor | None = None) -> torch.Tensor:
        r"""The network input for the next evaluation: the sampler's requested :math:`x/\sqrt{\sigma^2+1}` (on the
        first call the sampler starts from ``sample``)."""
        if self.timesteps is None:
            raise RuntimeError("call set_timesteps(num_inference_steps) first")
        if self._run is None:
            if self._k >= len(self.timesteps):
                raise RuntimeError("the run is complete; call set_timesteps again to sample anew")
            if not isinstance(sample, torch.Tensor) or not sample.is_floating_point():
                raise ValueError(f"sample must be a floating-point tensor, got {type(sample).__name__}")
            sigmas = self.sigmas.to(device=sample.device, dtype=sample.dtype)
            self._run = _Run(self._sampler, sample, sigmas, self.sampler_kwargs)
            self._expect(*self._run.next())
        if self._pending is None:
            raise RuntimeError("the sampler finished before the pipeline's last timestep")
        x, sigma = self._pending
        return model_input(x, sigma)

    def step(self, model_output: torch.Tensor, timestep: float | torch.Tensor, sample: torch.Tensor,
             generator: torch.Generator | None = None, return_dict: bool = True) -> SchedulerOutput | tuple:
        """Hand the network output of the pending evaluation to the sampler; returns the next latents
        (``prev_sample``: the sampler's next input, or its result after the last evaluation) and
        ``pred_original_sample`` (:math:`D`). ``sample`` and ``generator`` are not used (see the class)."""
        if self._pending is None:
            raise RuntimeError("step() without a pending evaluation: call scale_model_input(latents, t) before the "
                               "network on every step (pipelines that skip it, like DDPMPipeline, are not supported)")
        x, sigma = self._pending
        if not isinstance(model_output, torch.Tensor) or model_output.shape != x.shape:
            got = tuple(model_output.shape) if isinstance(model_output, torch.Tensor) else type(model_output).__name__
            raise ValueError(f"model_output must be a tensor of the latents' shape {tuple(x.shape)}, got {got}")
        denoised = to_denoised(model_output, x, sigma.reshape(1).expand(x.shape[0]), self.prediction_type)
        self._k += 1
        self._run.replies.put(denoised)
        prev = self._expect(*self._run.next())
        out = SchedulerOutput(prev, denoised)
        return out if return_dict else tuple(out)

    def __len__(self) -> int:
        return int(self.config.num_train_timesteps)
