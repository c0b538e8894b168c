r"""Vision: frequency-domain relative position bias and the dual-domain residual (DDR) blocks (issue 5; paper 10
of papers/INDEX.md; shared/notes/tikhonov_freqbias_fds.md part B).

* :class:`FreqRelPosBias`: ``B_h[i, j] = k_h((p_i - p_j) mod grid)``, ``k_h = irfft2(W_h, s=grid)``; exact Swin table
  export (:meth:`~FreqRelPosBias.to_swin_table`), exact transfer (``extend`` / spectral ``refine``), parameter
  families ``hermitian`` / ``band`` / ``separable`` (52 per head at M = 7, rank 2).
* :class:`SwinRelPosBias`: the Swin v1 / timm table bias, with timm's bicubic :meth:`~SwinRelPosBias.resize`.
* :func:`count_bias_params`, :func:`relative_position_index`, :func:`periodic_offset_index`.
* :func:`attention_with_bias` (:mod:`fastnips.vision.attention`): attention with the bias computed inside a Triton
  kernel from the compact table (never the (H, N, N) bias), or SDPA with a materialised bias, or FlexAttention;
  also the torch custom op ``fastnips::attention_freqbias``.
* :mod:`fastnips.vision.models`: ``SpectralMixer`` (GFNet global filter), ``GatedAttention``, ``DDRBlock``,
  ``DDRViT`` and :func:`gate_report`.
"""

from __future__ import annotations

from .attention import ATTENTION_BACKENDS, BiasSpec, attention_backends, attention_with_bias, bias_spec
from .freqbias import (
    PARAMS,
    FreqRelPosBias,
    SwinRelPosBias,
    count_bias_params,
    periodic_offset_index,
    relative_position_index,
)
from .models import (
    DDRBlock,
    DDRViT,
    DDRViTConfig,
    GatedAttention,
    GateReport,
    SpectralMixer,
    gate_report,
    spectral_mix_reference,
)

__all__ = [
    "ATTENTION_BACKENDS",
    "PARAMS",
    "BiasSpec",
    "DDRBlock",
    "DDRViT",
    "DDRViTConfig",
    "FreqRelPosBias",
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
]
