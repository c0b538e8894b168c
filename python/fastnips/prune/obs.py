"""Deprecated alias of :mod:`fastnips.prune.sparsegpt_layer` (SparseGPT's OBS sweep of one layer), kept so
that ``from fastnips.prune.obs import sparsegpt_prune_`` still works; import from ``fastnips.prune`` or
``fastnips.prune.sparsegpt_layer`` instead."""

from __future__ import annotations

import warnings

from .sparsegpt_layer import SPARSEGPT_BACKENDS, SparseGPTResult, sparsegpt_prune_  # noqa: F401

warnings.warn("fastnips.prune.obs is deprecated: import sparsegpt_prune_ / SparseGPTResult from fastnips.prune "
              "(or fastnips.prune.sparsegpt_layer)", DeprecationWarning, stacklevel=2)
