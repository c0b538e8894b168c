r"""Wrappers that turn eps- and v-prediction networks into denoisers :math:`D(x, \sigma)` for the samplers
(the role of k-diffusion's ``external`` module), and the discrete-time schedule they need.

A DDPM-style network trained on :math:`x_t = \sqrt{\bar\alpha_t}\,x_0 + \sqrt{1-\bar\alpha_t}\,\varepsilon` sees
the sampler's variance-exploding state :math:`x = x_t/\sqrt{\bar\alpha_t} = x_0 + \sigma\varepsilon` with

.. math:: \sigma_t = \sqrt{(1 - \bar\alpha_t)/\bar\alpha_t}, \qquad
          x_t = c_{\rm in}\, x, \quad c_{\rm in} = 1/\sqrt{\sigma^2 + 1},

and its output is turned into the denoiser's estimate of :math:`x_0`:

* eps-prediction (:class:`EpsDenoiser`): :math:`D = x - \sigma\,\hat\varepsilon(c_{\rm in}x, t)`;
* v-prediction (:class:`VDenoiser`; :math:`v = \sqrt{\bar\alpha}\,\varepsilon - \sqrt{1-\bar\alpha}\,x_0`):
  :math:`D = \frac{x}{\sigma^2 + 1} - \frac{\sigma}{\sqrt{\sigma^2+1}}\,\hat v(c_{\rm in}x, t)`;
* sample-prediction: :math:`D = \hat x_0(c_{\rm in}x, t)`.

The network's time :math:`t` for a continuous :math:`\sigma` comes from :class:`DiscreteSchedule`: linear
interpolation of the training index in :math:`\log\sigma` (or the nearest index with ``quantize=True``), as
k-diffusion does. The network is called as ``net(c_in * x, t, **extra_args)``; an output with a ``.sample``
attribute (diffusers' ``UNet2DOutput``) or a tuple is unwrapped to its first tensor.

References: Ho, Jain, Abbeel, "Denoising Diffusion Probabilistic Models" (NeurIPS 2020); Salimans & Ho,
"Progressive Distillation for Fast Sampling of Diffusion Models" (ICLR 2022, v-prediction); Karras et al.,
NeurIPS 2022 (sec. 4, the VE view of VP models); Crowson, k-diffusion ``external.py`` (conventions).

Examples
--------
>>> import torch
>>> betas = torch.linspace(1e-4, 0.02, 1000, dtype=torch.float64)
>>> net = lambda x, t: torch.zeros_like(x)           # predicts eps = 0
>>> den = EpsDenoiser(net, torch.cumprod(1 - betas, 0))
>>> x = torch.randn(2, 3, dtype=torch.float64)
>>> bool(torch.equal(den(x, torch.full((2,), 5.0, dtype=torch.float64)), x))
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

__all__ = ["PREDICTION_TYPES", "DiscreteSchedule", "EpsDenoiser", "VDenoiser", "model_input", "to_denoised"]

#: What a network predicts: the noise, the velocity v, or the clean sample.
PREDICTION_TYPES = ("epsilon", "v_prediction", "sample")


def _bcast(s: torch.Tensor, ndim: int) -> torch.Tensor:
    return s.reshape(*s.shape, *([1] * (ndim - s.ndim)))


def model_input(x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    r"""The network's input :math:`c_{\rm in} x = x/\sqrt{\sigma^2 + 1}` (the VP state) for the VE state ``x``.

    Examples
    --------
    >>> import torch
    >>> model_input(torch.ones(1, 2), torch.tensor([1.0]))
    tensor([[0.7071, 0.7071]])
    """
    return x * _bcast(1.0 / (sigma.to(x.dtype) ** 2 + 1.0).sqrt(), x.ndim)


def to_denoised(pred: torch.Tensor, x: torch.Tensor, sigma: torch.Tensor, prediction_type: str) -> torch.Tensor:
    r""":math:`D(x, \sigma)` from a network output ``pred`` at the VE state ``x`` (module docstring).

    Parameters
    ----------
    pred : torch.Tensor
        The network's output, shape of ``x``.
    x : torch.Tensor
        The sampler's state :math:`x_0 + \sigma\varepsilon`.
    sigma : torch.Tensor
        Noise level per batch item (shape (B,)) or a 0-d tensor.
    prediction_type : {"epsilon", "v_prediction", "sample"}

    Returns
    -------
    torch.Tensor, shape of ``x``

    Examples
    --------
    >>> import torch
    >>> x = torch.ones(1, 2); s = torch.tensor([1.0])
    >>> to_denoised(torch.zeros(1, 2), x, s, "v_prediction")  # x / (sigma^2 + 1)
    tensor([[0.5000, 0.5000]])
    """
    if prediction_type not in PREDICTION_TYPES:
        raise ValueError(f"prediction_type must be one of {PREDICTION_TYPES}, got {prediction_type!r}")
    if pred.shape != x.shape:
        raise ValueError(f"the network returned shape {tuple(pred.shape)}, expected x's shape {tuple(x.shape)}")
    s = _bcast(sigma.to(x.dtype), x.ndim)
    pred = pred.to(x.dtype)
    if prediction_type == "epsilon":
        return x - s * pred
    if prediction_type == "v_prediction":
        var1 = s * s + 1.0
        return x / var1 - (s / var1.sqrt()) * pred
    return pred


def _unwrap(out) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "sample") and isinstance(out.sample, torch.Tensor):
        return out.sample
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    raise ValueError(f"the network must return a tensor, a tuple of tensors or an object with .sample, got "
                     f"{type(out).__name__}")


class DiscreteSchedule(nn.Module):
    r"""The map between continuous noise levels and the training indices of a discrete-time model.

    ``sigmas[t] = sqrt((1 - alphas_cumprod[t]) / alphas_cumprod[t])`` (increasing in t).
    :meth:`sigma_to_t` interpolates the index linearly in :math:`\log\sigma` (clamped to the trained range),
    or returns the nearest index with ``quantize``; :meth:`t_to_sigma` is its inverse.

    Parameters
    ----------
    alphas_cumprod : torch.Tensor, shape (T,)
        :math:`\bar\alpha_t`, decreasing, in (0, 1).
    quantize : bool
        Round to the nearest trained index.

    Examples
    --------
    >>> import torch
    >>> sch = DiscreteSchedule(torch.tensor([0.9, 0.5, 0.1], dtype=torch.float64))
    >>> float(sch.sigma_to_t(sch.sigmas[1:2]))
    1.0
    """

    def __init__(self, alphas_cumprod: torch.Tensor, quantize: bool = False):
        super().__init__()
        a = torch.as_tensor(alphas_cumprod)
        if a.ndim != 1 or a.numel() < 2 or not a.is_floating_point():
            raise ValueError(f"alphas_cumprod must be a 1-D float tensor of >= 2 values, got shape {tuple(a.shape)}")
        if not bool(((a > 0) & (a < 1)).all()) or not bool((a[1:] < a[:-1]).all()):
            raise ValueError("alphas_cumprod must be strictly decreasing values in (0, 1)")
        if not isinstance(quantize, bool):
            raise ValueError(f"quantize must be a bool, got {quantize!r}")
        sigmas = ((1 - a) / a).sqrt()
        self.register_buffer("sigmas", sigmas)
        self.register_buffer("log_sigmas", sigmas.log())
        self.quantize = quantize

    @property
    def sigma_min(self) -> float:
        """The smallest trained noise level."""
        return float(self.sigmas[0])

    @property
    def sigma_max(self) -> float:
        """The largest trained noise level."""
        return float(self.sigmas[-1])

    def sigma_to_t(self, sigma: torch.Tensor) -> torch.Tensor:
        """Fractional training index of each noise level in sigma's dtype (with ``quantize``: the nearest index,
        int64)."""
        ls = self.log_sigmas.to(sigma.device)
        log_sigma = sigma.to(ls.dtype).log()
        if self.quantize:
            return (log_sigma[..., None] - ls).abs().argmin(dim=-1)             # int64 indices, as k-diffusion
        hi = torch.searchsorted(ls, log_sigma.contiguous()).clamp(1, ls.numel() - 1)
        lo = hi - 1
        w = ((log_sigma - ls[lo]) / (ls[hi] - ls[lo])).clamp(0, 1)
        return (lo + w).to(sigma.dtype)

    def t_to_sigma(self, t: torch.Tensor) -> torch.Tensor:
        """Noise level at a fractional index (log-linear between trained indices)."""
        ls = self.log_sigmas.to(t.device)
        t = t.to(ls.dtype).clamp(0, ls.numel() - 1)
        lo = t.floor().long().clamp(max=ls.numel() - 2)
        w = t - lo
        return ((1 - w) * ls[lo] + w * ls[lo + 1]).exp()


class _PredictionDenoiser(DiscreteSchedule):
    prediction_type = "epsilon"

    def __init__(self, model: Callable[..., Any], alphas_cumprod: torch.Tensor, quantize: bool = False):
        super().__init__(alphas_cumprod, quantize)
        if not callable(model):
            raise ValueError(f"model must be callable as model(x_t, t, **kwargs), got {type(model).__name__}")
        self.inner_model = model

    def forward(self, x: torch.Tensor, sigma: torch.Tensor, **extra_args) -> torch.Tensor:
        """:math:`D(x, \\sigma)`: the network at :math:`(x/\\sqrt{\\sigma^2+1},\\ t(\\sigma))`, converted."""
        pred = _unwrap(self.inner_model(model_input(x, sigma), self.sigma_to_t(sigma), **extra_args))
        return to_denoised(pred, x, sigma, self.prediction_type)


class EpsDenoiser(_PredictionDenoiser):
    r"""Denoiser from a discrete-time eps-prediction network: :math:`D = x - \sigma\hat\varepsilon(c_{\rm in}x, t)`.

    Parameters
    ----------
    model : callable
        ``model(x_t, t, **extra_args)`` -> predicted noise (or diffusers output with ``.sample``).
    alphas_cumprod : torch.Tensor, shape (T,)
        The training schedule's :math:`\bar\alpha_t`.
    quantize : bool
        Call the network at the nearest trained index only.

    Examples
    --------
    >>> import torch
    >>> a = torch.linspace(0.99, 0.01, 50, dtype=torch.float64)
    >>> den = EpsDenoiser(lambda x, t: torch.ones_like(x), a)
    >>> den(torch.zeros(1, 2, dtype=torch.float64), torch.tensor([2.0], dtype=torch.float64))
    tensor([[-2., -2.]], dtype=torch.float64)
    """


class VDenoiser(_PredictionDenoiser):
    r"""Denoiser from a discrete-time v-prediction network:
    :math:`D = x/(\sigma^2+1) - \sigma/\sqrt{\sigma^2+1}\;\hat v(c_{\rm in}x, t)`.

    Parameters
    ----------
    model : callable
        ``model(x_t, t, **extra_args)`` -> predicted :math:`v` (or diffusers output with ``.sample``).
    alphas_cumprod : torch.Tensor, shape (T,)
        The training schedule's :math:`\bar\alpha_t`.
    quantize : bool
        Call the network at the nearest trained index only.

    Examples
    --------
    >>> import torch
    >>> a = torch.linspace(0.99, 0.01, 50, dtype=torch.float64)
    >>> den = VDenoiser(lambda x, t: torch.zeros_like(x), a)
    >>> den(torch.ones(1, 2, dtype=torch.float64), torch.tensor([1.0], dtype=torch.float64))
    tensor([[0.5000, 0.5000]], dtype=torch.float64)
    """

    prediction_type = "v_prediction"
