r"""LLM pruning with exact masks (issue 7; paper: Wagner, Roux, Zimmer, Pokutta, "A Free Lunch in LLM
Compression: Revisiting Retraining after Pruning", arXiv 2510.14444; shared/notes/prune.md).

So far: the pruning criteria's scores and exact mask selection (:mod:`fastnips.prune.masks`), in torch.
Reconstruction windows, SparseGPT, native kernels and checkpoints are the rest of issue 7.
"""

from __future__ import annotations

from .masks import NM, magnitude_scores, select_mask, wanda_scores

__all__ = ["NM", "magnitude_scores", "select_mask", "wanda_scores"]
