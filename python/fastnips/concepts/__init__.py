r"""Concepts: GRACE, a global sparse non-negative concept decomposition of embeddings that preserves the samples'
geometry, with the per-instance baseline, metrics and loaders.

Paper: "GRACE: feature-space concept decompositions of vision-language model embeddings" (NeurIPS 2026; a
descriptive title, see docs/papers.md). A reconstruction from the abstract: one map g(x) = ReLU(W x + b) from
embeddings to non-negative codes over a concept dictionary, trained with reconstruction + L1 + a blockwise
Gram-matching term, instead of one optimisation per instance (:mod:`fastnips.concepts.grace` states the choices).

* :class:`GRACE` (:mod:`fastnips.concepts.grace`): ``fit(X, C)``, ``transform``, ``reconstruct``,
  ``top_concepts``.
* :func:`gram_mismatch` (:mod:`fastnips.concepts.gram`): the Gram term, block by block (no B x B matrix).
* :func:`nonneg_lasso` (:mod:`fastnips.concepts.lasso`): the per-instance non-negative lasso baseline (FISTA,
  batched).
* :mod:`fastnips.concepts.metrics`: :func:`reconstruction_cosine`, :func:`sparsity`, :func:`gram_error`,
  :func:`knn_overlap`, :func:`concept_auroc`, :func:`probe_faithfulness`.
* :mod:`fastnips.concepts.data`: :func:`planted_concepts` (synthetic, known activations),
  :func:`load_embeddings` / :func:`load_concepts` (your ``.npy`` embeddings and concept word list).

The paper's benchmarks (VLM embeddings of image and video datasets, human studies) cannot be had here: the tool
runs on your embeddings and is exercised on planted data. Design notes and measurements: docs/notes/concepts.md.
"""

from __future__ import annotations

from .. import _optional

if (_missing := _optional.missing_torch(__name__)) is not None:  # torch-only: say what to install
    raise _missing

from .data import PlantedConcepts, load_concepts, load_embeddings, planted_concepts
from .grace import GRACE
from .gram import gram_mismatch
from .lasso import nonneg_lasso
from .metrics import concept_auroc, gram_error, knn_overlap, probe_faithfulness, reconstruction_cosine, sparsity

__all__ = [
    "GRACE",
    "PlantedConcepts",
    "concept_auroc",
    "gram_error",
    "gram_mismatch",
    "knn_overlap",
    "load_concepts",
    "load_embeddings",
    "nonneg_lasso",
    "planted_concepts",
    "probe_faithfulness",
    "reconstruction_cosine",
    "sparsity",
]
