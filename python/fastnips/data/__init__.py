"""Data that needs no network: generators and small embedded sets.

* :func:`random_csr` -- random (optionally Zipf-skewed) CSR matrices, for SpMM tests and benchmarks;
* :mod:`fastnips.data.graphs` -- graph-classification and node-classification sets built offline:
  BA-motifs with ground-truth motif nodes, contextual SBM with a homophily knob, sklearn's digits as grid
  graphs (needs scikit-learn).
"""

from __future__ import annotations

import numpy as np


def random_csr(n_rows: int, n_cols: int, *, avg_degree: float, seed: int = 0, skew: bool = False,
               dtype=np.float64, index_dtype=np.int32):
    """A random CSR matrix with about ``avg_degree`` nonzeros per row (scipy.sparse.csr_matrix).

    With ``skew=True`` row lengths follow a Zipf-like law (a few very long rows, as in real graphs),
    which is what unbalances naive row-parallel kernels. Column indices are sorted and distinct.
    """
    import scipy.sparse as sp

    if n_rows < 0 or n_cols <= 0 or avg_degree < 0:
        raise ValueError("random_csr: need n_rows >= 0, n_cols > 0, avg_degree >= 0")
    rng = np.random.default_rng(seed)
    if skew:
        w = 1.0 / np.arange(1, n_rows + 1) ** 0.8
        rng.shuffle(w)
        lengths = rng.poisson(avg_degree * n_rows * w / w.sum())
    else:
        lengths = rng.poisson(avg_degree, size=n_rows)
    lengths = np.minimum(lengths, n_cols)
    nnz = int(lengths.sum())
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    rows = np.repeat(np.arange(n_rows), lengths)
    cols = rng.integers(0, n_cols, size=nnz)
    A = sp.csr_matrix((rng.standard_normal(nnz).astype(dtype), (rows, cols)), shape=(n_rows, n_cols))
    A.sum_duplicates()
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    return A
