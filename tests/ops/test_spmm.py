"""fastnips.ops.spmm on every backend, against dense numpy products (and scipy, the reference)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastnips.data import random_csr
from fastnips.ops import spmm

# Relative tolerances per value dtype: every backend accumulates in the value dtype; float32 sums of up
# to a few hundred terms stay well inside 1e-5 relative to the row's scale.
RTOL = {np.float64: 1e-12, np.float32: 2e-5}

# Small sizes where the Triton interpreter is in play (each program is Python-level work).
SMALL = [(0, 5), (1, 1), (7, 3), (40, 60)]


def dense_product(indptr, indices, data, X, n_cols):
    """An oracle independent of scipy's CSR code: scatter into a dense matrix (repeats add up)."""
    n_rows = len(indptr) - 1
    A = np.zeros((n_rows, n_cols), dtype=np.float64)
    rows = np.repeat(np.arange(n_rows), np.diff(indptr))
    np.add.at(A, (rows, np.asarray(indices, dtype=np.int64)), np.asarray(data, dtype=np.float64))
    return A @ np.asarray(X, dtype=np.float64)


def assert_matches(Y, ref, dtype):
    Y = np.asarray(Y)
    assert Y.shape == ref.shape
    scale = max(1.0, float(np.max(np.abs(ref), initial=0.0)))
    np.testing.assert_allclose(Y, ref, rtol=RTOL[dtype], atol=RTOL[dtype] * scale)


def sizes_for(backend):
    return SMALL if backend == "triton" else [*SMALL, (500, 300), (3000, 2000)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("k", [1, 3, 16, 33, 64])
def test_random_matrices(backend, dtype, index_dtype, k):
    if backend == "triton" and k == 64:
        pytest.skip("k=64 under the Triton interpreter is covered by k=33 (two column blocks)")
    for i, (n_rows, n_cols) in enumerate(sizes_for(backend)):
        A = random_csr(n_rows, n_cols, avg_degree=4, seed=i, skew=i % 2 == 1, dtype=dtype,
                       index_dtype=index_dtype)
        X = np.random.default_rng(i).standard_normal((n_cols, k)).astype(dtype)
        Y = spmm(A.indptr, A.indices, A.data, X, backend=backend)
        assert Y.dtype == dtype
        assert_matches(Y, dense_product(A.indptr, A.indices, A.data, X, n_cols), dtype)


def test_vector_rhs_gives_vector(backend):
    A = random_csr(30, 20, avg_degree=3, seed=1)
    x = np.arange(20, dtype=np.float64)
    y = spmm(A, x, backend=backend)
    assert y.shape == (30,)
    assert_matches(y, A.toarray() @ x, np.float64)


ADVERSARIAL = {
    # name: (indptr, indices, data, n_cols)
    "all rows empty": ([0, 0, 0, 0], [], [], 4),
    "one column": ([0, 2, 2, 3], [0, 0, 0], [1.0, 2.0, -1.0], 1),
    "duplicates add up": ([0, 3, 4], [1, 1, 1, 0], [1.0, 2.0, 3.0, 4.0], 2),
    "unsorted columns": ([0, 4, 5], [3, 0, 2, 1, 3], [1.0, 2.0, 3.0, 4.0, 5.0], 4),
    "empty rows between": ([0, 0, 2, 2, 2, 3, 3], [0, 4, 2], [1.5, -2.0, 3.0], 5),
    "one long row": ([0, 50, 50, 51], [*range(50), 7], list(np.linspace(-1, 1, 51)), 50),
    "zero rows": ([0], [], [], 3),
}


@pytest.mark.parametrize("case", list(ADVERSARIAL))
@pytest.mark.parametrize("k", [1, 5])
def test_adversarial_structures(backend, case, k):
    indptr, indices, data, n_cols = ADVERSARIAL[case]
    indptr, indices = np.asarray(indptr, np.int32), np.asarray(indices, np.int32)
    data = np.asarray(data, np.float64)
    X = np.random.default_rng(3).standard_normal((n_cols, k))
    Y = spmm(indptr, indices, data, X, backend=backend)
    assert_matches(Y, dense_product(indptr, indices, data, X, n_cols), np.float64)


def test_cpp_parallel_split_is_exact():
    """The work split must neither drop nor repeat rows: compare 1 and 2 threads bit for bit, on a
    matrix big enough to take the parallel path and skewed enough to make the split uneven."""
    pytest.importorskip("fastnips._C")
    A = random_csr(20_000, 5_000, avg_degree=10, seed=7, skew=True)
    X = np.random.default_rng(7).standard_normal((5_000, 8))
    Y1 = spmm(A, X, backend="cpp", n_threads=1)
    Y2 = spmm(A, X, backend="cpp", n_threads=2)
    np.testing.assert_array_equal(Y1, Y2)
    assert_matches(Y2, A @ X, np.float64)


@pytest.mark.parametrize("fmt", ["csr_matrix", "csr_array", "coo", "csc"])
def test_scipy_inputs(backend, fmt):
    A = random_csr(40, 25, avg_degree=3, seed=2)
    A_in = {"csr_matrix": A, "csr_array": sp.csr_array(A), "coo": A.tocoo(), "csc": A.tocsc()}[fmt]
    X = np.random.default_rng(2).standard_normal((25, 4))
    assert_matches(spmm(A_in, X, backend=backend), A.toarray() @ X, np.float64)


def test_torch_inputs(backend):
    torch = pytest.importorskip("torch")
    A = random_csr(40, 25, avg_degree=3, seed=4)
    X = np.random.default_rng(4).standard_normal((25, 4))
    Xt = torch.from_numpy(X)
    ref = A.toarray() @ X
    At = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)),
                                 torch.from_numpy(A.indices.astype(np.int64)), torch.from_numpy(A.data),
                                 size=A.shape, check_invariants=True)
    for Y in (spmm(At, Xt, backend=backend), spmm(At.to_sparse_coo(), Xt, backend=backend),
              spmm(torch.from_numpy(A.indptr), torch.from_numpy(A.indices), torch.from_numpy(A.data), Xt,
                   backend=backend)):
        assert isinstance(Y, torch.Tensor)
        assert Y.dtype == torch.float64
        assert_matches(Y.numpy(), ref, np.float64)


def test_dtype_promotion():
    A = random_csr(10, 6, avg_degree=2, seed=5, dtype=np.float32)
    assert spmm(A, np.ones((6, 2), np.float32)).dtype == np.float32
    assert spmm(A, np.ones((6, 2), np.float64)).dtype == np.float64
    adj = sp.csr_matrix(A, dtype=np.int64)
    assert spmm(adj, np.ones((6, 2), np.float32)).dtype == np.float32  # integer values take X's float type
    assert spmm(adj, np.ones((6, 2), np.int64)).dtype == np.float64


BAD_STRUCTURES = {
    "indptr not starting at 0": ([1, 2, 3], [0, 1], "indptr\\[0\\] must be 0"),
    "indptr decreasing": ([0, 2, 1, 3], [0, 1, 0], "non-decreasing"),
    "indptr end mismatch": ([0, 1, 2], [0, 1, 1], "indptr\\[-1\\] must equal"),
    "index too large": ([0, 1, 2], [0, 4], "out of range in row 1"),
    "negative index": ([0, 2, 2], [-1, 0], "out of range in row 0"),
}


@pytest.mark.parametrize("case", list(BAD_STRUCTURES))
def test_bad_structure_is_refused(backend, case):
    indptr, indices, match = BAD_STRUCTURES[case]
    data = np.ones(len(indices))
    with pytest.raises(ValueError, match=match):
        spmm(np.asarray(indptr), np.asarray(indices), data, np.ones((4, 2)), backend=backend)


@pytest.mark.parametrize("k", [1, 2, 64])
def test_bad_index_in_a_long_row_is_located(backend, k):
    """The unrolled k=1 path must still report the exact position of a bad index."""
    indptr = np.array([0, 3, 13])
    indices = np.array([0, 1, 2, 0, 1, 2, 3, 4, 5, 9, 6, 7, 8])
    with pytest.raises(ValueError, match=r"out of range in row 1: indices\[9\] = 9"):
        spmm(indptr, indices, np.ones(13), np.ones((9, k)), backend=backend)


def test_bad_shapes_and_types():
    A = random_csr(5, 4, avg_degree=2, seed=0)
    with pytest.raises(ValueError, match="4 columns but X has 3 rows"):
        spmm(A, np.ones((3, 2)))
    with pytest.raises(ValueError, match="X must be 1-D or 2-D"):
        spmm(A, np.ones((4, 2, 2)))
    with pytest.raises(ValueError, match="differ in length"):
        spmm([0, 1], [0], [1.0, 2.0], np.ones((2, 1)))
    with pytest.raises(ValueError, match="n_cols=7 disagrees"):
        spmm(A, np.ones((4, 1)), n_cols=7)
    with pytest.raises(TypeError, match="X has dtype complex128"):
        spmm(A, np.ones((4, 2), dtype=complex))
    with pytest.raises(TypeError, match="data has dtype float16"):
        spmm(A.indptr, A.indices, A.data.astype(np.float16), np.ones((4, 2)))
    with pytest.raises(TypeError, match="indices has dtype float64"):
        spmm(A.indptr, A.indices.astype(float), A.data, np.ones((4, 2)))
    with pytest.raises(TypeError, match=r"takes \(A, X\) or"):
        spmm(A)
    with pytest.raises(TypeError, match=r"must be a scipy\.sparse or torch sparse"):
        spmm(A.toarray(), np.ones((4, 2)))
    with pytest.raises(ValueError, match="n_threads"):
        spmm(A, np.ones((4, 2)), n_threads=-1)


def test_check_finite(backend):
    A = random_csr(6, 4, avg_degree=2, seed=0)
    X = np.ones((4, 2))
    X[1, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN or inf"):
        spmm(A, X, backend=backend, check_finite=True)
    A.data[0] = np.inf
    with pytest.raises(ValueError, match="data contains NaN or inf"):
        spmm(A, np.ones((4, 2)), backend=backend, check_finite=True)
    # Without the check, IEEE propagation, as scipy does.
    Y = spmm(A, np.ones((4, 2)), backend=backend)
    np.testing.assert_array_equal(np.isinf(Y), np.isinf(A @ np.ones((4, 2))))


def test_unknown_and_unavailable_backends():
    A = random_csr(5, 4, avg_degree=2, seed=0)
    with pytest.raises(ValueError, match=r"unknown backend 'fortran'.*reference, cpp, triton, cuda, cupy"):
        spmm(A, np.ones((4, 1)), backend="fortran")
    from fastnips import _backend

    missing = [b for b in _backend.BACKENDS if not _backend.backend_available(b)]
    if not missing:
        pytest.skip("every backend is available on this machine")
    with pytest.raises(ValueError, match=f"backend '{missing[0]}' is not available here"):
        spmm(A, np.ones((4, 1)), backend=missing[0])
