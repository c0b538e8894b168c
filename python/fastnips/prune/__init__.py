r"""LLM pruning with exact masks and local reconstruction (paper: Wagner, Roux, Zimmer, Pokutta,
"A Free Lunch in LLM Compression: Revisiting Retraining after Pruning", arXiv 2510.14444).

Pipeline::

    import fastnips.prune as fp
    model, tok = fp.load_causal_lm("smollm2")            # or "tiny", or a local HF folder; never downloads
    calib = fp.Calibration.from_token_ids(ids, seqlen=128, n=128, seed=0)
    rep = fp.prune_and_reconstruct(model, calib, criterion="wanda", pattern=fp.NM(2, 4), window="attn_mlp")
    fp.save_sparse(model, "model.sparse.safetensors", fmt="nm", pattern=fp.NM(2, 4))

* Masks (:mod:`~fastnips.prune.masks`): :class:`NM` ``(keep, group)``, scores, exact-count selection.
* Criteria over a model (:mod:`~fastnips.prune.criteria`): :func:`magnitude`, :func:`wanda`, :func:`sparsegpt`
  (the OBS sweep of one layer: :func:`sparsegpt_prune_` in :mod:`~fastnips.prune.sparsegpt_layer`); statistics once per
  distinct input.
* Reconstruction (:mod:`~fastnips.prune.reconstruction`): :func:`reconstruct`, :func:`prune_and_reconstruct`,
  :func:`retrain`; windows ``"matrix" | "attn_mlp" | "block" | Blocks(k)`` (:mod:`~fastnips.prune.arch`).
* Masked layers (:mod:`~fastnips.prune.masked`, products in :mod:`~fastnips.prune.masked_ops`):
  :class:`MaskedLinear`, :class:`MaskedLoRALinear`, :class:`LoRA`; model surgery
  (:mod:`~fastnips.prune.surgery`): :func:`apply_masks`, :func:`keep_masks`, :func:`add_lora`, ...
* Bit-packed masks (:mod:`~fastnips.prune.bits`), the one layout of the masked layers and the bitmask format.
* Packed weights (:mod:`~fastnips.prune.pack`): N:M and bitmask packing; checkpoints
  (:mod:`~fastnips.prune.checkpoint`): :func:`save_sparse`, :func:`load_sparse`.
* Models and data: :func:`load_causal_lm`, :func:`perplexity`, :class:`TinyDecoder`, :func:`load_tiny`.
"""

from __future__ import annotations

from .. import _optional

if (_missing := _optional.missing_torch(__name__)) is not None:  # torch-only: say what to install
    raise _missing

from .arch import Blocks, decoder_blocks, windows
from .calib import Calibration
from .checkpoint import FORMAT_VERSION, load_sparse, save_sparse
from .criteria import CRITERIA, InputStats, StatsCollector, block_linears, magnitude, sparsegpt, wanda
from .hf import load_causal_lm, perplexity, smollm2_gguf_path, token_ids
from .hf_export import load_pretrained_sparse, save_pretrained_sparse
from .masked import LoRA, MaskedLinear, MaskedLoRALinear
from .masks import NM, magnitude_scores, prune_weight_, select_mask, wanda_scores
from .pack import PackedBitmask, PackedNM, pack_bitmask, pack_nm, unpack_bitmask, unpack_nm
from .profiles import layer_profile, owl_profile
from .reconstruction import Report, WindowReport, prune_and_reconstruct, reconstruct, retrain
from .semi_structured import to_semi_structured_
from .sparsegpt_layer import SparseGPTResult, sparsegpt_prune_
from .surgery import add_lora, apply_masks, keep_masks, masks_of, merge_lora, sparsity_report, strip_masks
from .tiny import TinyConfig, TinyDecoder, load_tiny, save_tiny, train_tiny

__all__ = [
    "CRITERIA",
    "FORMAT_VERSION",
    "NM",
    "Blocks",
    "Calibration",
    "InputStats",
    "LoRA",
    "MaskedLinear",
    "MaskedLoRALinear",
    "PackedBitmask",
    "PackedNM",
    "Report",
    "SparseGPTResult",
    "StatsCollector",
    "TinyConfig",
    "TinyDecoder",
    "WindowReport",
    "add_lora",
    "apply_masks",
    "block_linears",
    "decoder_blocks",
    "keep_masks",
    "layer_profile",
    "load_causal_lm",
    "load_pretrained_sparse",
    "load_sparse",
    "load_tiny",
    "magnitude",
    "magnitude_scores",
    "masks_of",
    "merge_lora",
    "owl_profile",
    "pack_bitmask",
    "pack_nm",
    "perplexity",
    "prune_and_reconstruct",
    "prune_weight_",
    "reconstruct",
    "retrain",
    "save_pretrained_sparse",
    "save_sparse",
    "save_tiny",
    "select_mask",
    "smollm2_gguf_path",
    "sparsegpt",
    "sparsegpt_prune_",
    "sparsity_report",
    "strip_masks",
    "to_semi_structured_",
    "token_ids",
    "train_tiny",
    "unpack_bitmask",
    "unpack_nm",
    "wanda",
    "wanda_scores",
    "windows",
]
