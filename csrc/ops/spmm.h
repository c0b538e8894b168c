// CSR sparse x dense multiply, Y = A X, for the cpp backend. Plain C++: no Python, no pybind11.
#pragma once
#include <cstdint>

#include "common/csr.h"

namespace fastnips::ops {

// Y (n_rows x k, row-major, overwritten) = A (CSR: indptr[n_rows+1], indices[nnz], data[nnz]) times
// X (n_cols x k, row-major). Column indices may be unsorted and repeated within a row (repeats add up,
// as in scipy). The structure is validated on the fly: indptr must start at 0, end at nnz and never
// decrease, and every column index must lie in [0, n_cols); nothing is read out of bounds on bad input.
// Rows are split between OpenMP threads by equal work (nnz + rows), so skewed degree distributions
// balance; small problems run on one thread. n_threads <= 0 means the OpenMP default. A refused structure
// is a ValueError Status (csr_error), reported for the first bad row.
template <typename T, typename I>
Status spmm_csr(int64_t n_rows, int64_t n_cols, int64_t nnz, const I* indptr, const I* indices,
                    const T* data, const T* X, int64_t k, T* Y, int n_threads);

}  // namespace fastnips::ops
