// Internal to the sparse Tikhonov solver: p(L) applied to n x w row-major blocks by the fused Chebyshev
// recurrence (graph/tikhonov_poly.cpp), used by the CG solve and by poly_apply. Plain C++.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/csr.h"
#include "graph/tikhonov_blocks.h"

namespace fastnips::graph::detail {

// p(L) (+ diag(q)) applied to n x w row-major blocks by the fused Chebyshev recurrence.
template <typename T, typename I>
class PolyOperator {
 public:
  PolyOperator(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data, const double* cheb,
               int64_t degree, int n_threads)
      : n_(n), nnz_(nnz), indptr_(indptr), indices_(indices), data_(data), cheb_(cheb), degree_(degree) {
    threads_ = int(std::max<int64_t>(1, std::min<int64_t>(default_threads(n_threads), std::max<int64_t>(n, 1))));
    one_ = {0, n};
    all_.assign(size_t(threads_) + 1, 0);
    const int64_t total = nnz + n;
    for (int t = 1; t < threads_; ++t) all_[t] = row_at_work(indptr, n, total * t / threads_);
    all_[threads_] = n;
  }

  int64_t n() const { return n_; }
  const std::vector<int64_t>& bounds(int64_t w) const {
    return (nnz_ + n_) * std::max<int64_t>(w, 1) < kParallelWork ? one_ : all_;
  }


  // out = p(L) V (+ q o V when q != nullptr); dots[c] = sum_i V_ic out_ic when dots != nullptr.
  void apply(const T* V, int64_t w, T* out, const T* q, double* dots);

 private:
  int64_t n_, nnz_;
  const I* indptr_;
  const I* indices_;
  const T* data_;
  const double* cheb_;
  int64_t degree_;
  int threads_ = 1;
  std::vector<int64_t> one_, all_;
  std::vector<T> ta_, tb_, scratch_;
  Partials partials_;
};

extern template class PolyOperator<float, int32_t>;
extern template class PolyOperator<float, int64_t>;
extern template class PolyOperator<double, int32_t>;
extern template class PolyOperator<double, int64_t>;

}  // namespace fastnips::graph::detail
