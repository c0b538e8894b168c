"""Data that needs no network: generators and small embedded sets.

* :func:`random_csr` -- random (optionally Zipf-skewed) CSR matrices, for SpMM tests and benchmarks
  (:mod:`fastnips.data.random_graphs`, with the random graph generators);
* :mod:`fastnips.data.graphs` -- graph-classification and node-classification sets built offline:
  BA-motifs with ground-truth motif nodes, contextual SBM with a homophily knob, sklearn's digits as grid
  graphs (needs scikit-learn); samples are :class:`~fastnips.data.graph_sample.GraphSample`;
* :mod:`fastnips.data.images` -- digits and MNIST-5k images; :mod:`fastnips.data.text` -- the standard
  library's docstrings as a text corpus, a byte tokenizer.
"""

from __future__ import annotations

from .random_graphs import random_csr

__all__ = ["random_csr"]

