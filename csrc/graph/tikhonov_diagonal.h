// Internal to the sparse Tikhonov solver: diag(p(L)) for the Jacobi preconditioner (see DiagonalMode in
// graph/tikhonov.h; graph/tikhonov_diagonal.cpp). Plain C++.
#pragma once
#include <cstdint>

#include "graph/tikhonov.h"

namespace fastnips::graph::detail {

// diag(p(L)) into out[0..n) per opt.diagonal (exact or the truncated degree-2 part); returns whether it is
// exact. Instantiated for float/double x int32/int64.
template <typename T, typename I>
bool jacobi_diagonal(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data, const double* cheb,
                     int64_t degree, int64_t F, const TikhonovOptions& opt, double* out);

}  // namespace fastnips::graph::detail
