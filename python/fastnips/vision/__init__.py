r"""Vision: frequency-domain relative position bias and the dual-domain residual (DDR) blocks.

Paper: "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
(NeurIPS 2026): a relative position bias whose per-head spectrum :math:`W_h` defines the periodic kernel
:math:`k_h = \mathrm{irfft2}(W_h)` and the logit bias :math:`B_h[i, j] = k_h((p_i - p_j) \bmod \mathrm{grid})`.

* :class:`FreqRelPosBias` (:mod:`fastnips.vision.freqbias`): parameter families ``hermitian`` / ``band`` /
  ``separable`` (52 per head at M = 7, rank 2); exact Swin table export / import and exact transfer
  (``extend`` / spectral ``refine``) from :mod:`fastnips.vision.freqbias_transfer`.
* :class:`SwinRelPosBias` (:mod:`fastnips.vision.swin`): the Swin v1 / timm table bias, with timm's
  :meth:`~SwinRelPosBias.resize` (geometric grid, as ``WindowAttention.set_window_size``; or plain bicubic).
* :func:`count_bias_params`, :func:`relative_position_index`, :func:`periodic_offset_index`.
* :func:`attention_with_bias` (:mod:`fastnips.vision.attention`): attention with the bias computed inside a Triton
  kernel from the compact table (never the (H, N, N) bias), or SDPA with a materialised bias, or FlexAttention;
  also the torch custom op ``fastnips::attention_freqbias``; Swin's shifted-window ``mask`` in every backend.
* :class:`FreqWindowAttention`, :func:`use_freq_bias` (:mod:`fastnips.vision.timm_adapter`): train the frequency
  bias inside timm's Swin (a drop-in for its ``WindowAttention``).
* :mod:`fastnips.vision.spectral`: ``SpectralMixer`` (GFNet global filter); :mod:`fastnips.vision.blocks`:
  ``GatedAttention``, ``DDRBlock``;
  :mod:`fastnips.vision.models`: ``DDRViT`` and :func:`gate_report`.

Design notes and measurements: docs/notes/vision.md.
"""

from __future__ import annotations

from .. import _optional

if (_missing := _optional.missing_torch(__name__)) is not None:  # torch-only: say what to install
    raise _missing

from .attention import ATTENTION_BACKENDS, BiasSpec, attention_backends, attention_with_bias, bias_spec
from .blocks import DDRBlock, GatedAttention
from .freqbias import PARAMS, FreqRelPosBias, count_bias_params, periodic_offset_index
from .models import DDRViT, DDRViTConfig, GateReport, gate_report
from .spectral import SpectralMixer, spectral_mix_reference
from .swin import SwinRelPosBias, relative_position_index
from .timm_adapter import FreqWindowAttention, use_freq_bias

__all__ = [
    "ATTENTION_BACKENDS",
    "PARAMS",
    "BiasSpec",
    "DDRBlock",
    "DDRViT",
    "DDRViTConfig",
    "FreqRelPosBias",
    "FreqWindowAttention",
    "GateReport",
    "GatedAttention",
    "SpectralMixer",
    "SwinRelPosBias",
    "attention_backends",
    "attention_with_bias",
    "bias_spec",
    "count_bias_params",
    "gate_report",
    "periodic_offset_index",
    "relative_position_index",
    "spectral_mix_reference",
    "use_freq_bias",
]
