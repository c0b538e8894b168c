"""Reference implementations of :mod:`fastnips.ops`: plain numpy/scipy, the oracle for every backend."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def spmm_reference(indptr, indices, data, X, n_cols: int) -> np.ndarray:
    """``Y = A @ X`` with scipy, for a CSR matrix given by its three arrays (numpy) and a 2-D X.

    Repeated column indices in a row add up and unsorted rows are fine, as in scipy.
    """
    n_rows = len(indptr) - 1
    A = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols))
    return np.asarray(A @ X)
