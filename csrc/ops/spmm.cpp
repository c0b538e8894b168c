// CSR sparse x dense multiply for the cpp backend (spmm.h): rows split by equal work between OpenMP
// threads, compile-time widths for the common k, the column indices checked as they are read.
#include "ops/spmm.h"

#include <algorithm>
#include <atomic>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/simd.h"

namespace fastnips::ops {
namespace {

// Below this much work (multiply-adds) threads cost more than they save.
constexpr int64_t kParallelWork = int64_t(1) << 16;

// One block of rows. K > 0 is a compile-time width (accumulators stay in registers); K == 0 is generic.
// Returns false at the first bad entry and fills *st. The two loops are alike on purpose: the K > 0 one sums
// into a local array the compiler keeps in registers, the generic one into the row of Y; one loop through
// a pointer to either would alias Y and lose the registers.
template <int K, typename T, typename I>
FASTNIPS_CLONES bool rows_kernel(int64_t r0, int64_t r1, int64_t n_cols, const I* __restrict indptr,
                                 const I* __restrict indices, const T* __restrict data,
                                 const T* __restrict X, int64_t k_rt, T* __restrict Y, CsrStatus* st) {
  const int64_t k = K > 0 ? K : k_rt;
  const uint64_t n_cols_u = uint64_t(n_cols);
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t p0 = indptr[i], p1 = indptr[i + 1];
    T* __restrict y = Y + i * k;
    if constexpr (K > 0) {
      T acc[K] = {};
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t j = indices[p];
        if (uint64_t(j) >= n_cols_u) { *st = {CsrStatus::kIndexOutOfRange, i, p, j}; return false; }
        const T a = data[p];
        const T* __restrict x = X + j * K;
        for (int c = 0; c < K; ++c) acc[c] += a * x[c];
      }
      for (int c = 0; c < K; ++c) y[c] = acc[c];
    } else {
      std::fill(y, y + k, T(0));
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t j = indices[p];
        if (uint64_t(j) >= n_cols_u) { *st = {CsrStatus::kIndexOutOfRange, i, p, j}; return false; }
        const T a = data[p];
        const T* __restrict x = X + j * k;
        for (int64_t c = 0; c < k; ++c) y[c] += a * x[c];
      }
    }
  }
  return true;
}

// k == 1 is a dot product of gathers. Measured here, a plain scalar loop beats both the auto-vectorised
// one (emulated gathers) and unrolled multi-accumulator variants, so that instance is built without
// vectorisation and without the AVX2 clone.
template <typename T, typename I>
__attribute__((optimize("no-tree-vectorize"))) bool rows_k1(int64_t r0, int64_t r1, int64_t n_cols,
                                                          const I* indptr, const I* indices, const T* data,
                                                          const T* X, T* Y, CsrStatus* st) {
  const uint64_t n_cols_u = uint64_t(n_cols);
  for (int64_t i = r0; i < r1; ++i) {
    T acc = 0;
    for (int64_t p = indptr[i]; p < indptr[i + 1]; ++p) {
      const int64_t j = indices[p];
      if (uint64_t(j) >= n_cols_u) { *st = {CsrStatus::kIndexOutOfRange, i, p, j}; return false; }
      acc += data[p] * X[j];
    }
    Y[i] = acc;
  }
  return true;
}

template <typename T, typename I>
bool run_rows(int64_t r0, int64_t r1, int64_t n_cols, const I* indptr, const I* indices, const T* data,
              const T* X, int64_t k, T* Y, CsrStatus* st) {
  switch (k) {
    case 1: return rows_k1(r0, r1, n_cols, indptr, indices, data, X, Y, st);
    case 2: return rows_kernel<2>(r0, r1, n_cols, indptr, indices, data, X, k, Y, st);
    case 4: return rows_kernel<4>(r0, r1, n_cols, indptr, indices, data, X, k, Y, st);
    case 8: return rows_kernel<8>(r0, r1, n_cols, indptr, indices, data, X, k, Y, st);
    case 16: return rows_kernel<16>(r0, r1, n_cols, indptr, indices, data, X, k, Y, st);
    case 32: return rows_kernel<32>(r0, r1, n_cols, indptr, indices, data, X, k, Y, st);
    case 64: return rows_kernel<64>(r0, r1, n_cols, indptr, indices, data, X, k, Y, st);
    default: return rows_kernel<0>(r0, r1, n_cols, indptr, indices, data, X, k, Y, st);
  }
}

}  // namespace

template <typename T, typename I>
Status spmm_csr(int64_t n_rows, int64_t n_cols, int64_t nnz, const I* indptr, const I* indices, const T* data,
                const T* X, int64_t k, T* Y, int n_threads) {
  // The structure is checked before any row is touched: the work split below binary-searches indptr.
  if (const CsrStatus st = check_indptr(n_rows, nnz, indptr); !st.ok()) return csr_error(st);
  if (n_rows == 0 || k == 0) return {};

  int threads = 1;
#ifdef _OPENMP
  threads = n_threads > 0 ? n_threads : omp_get_max_threads();
  if ((nnz + n_rows) * k < kParallelWork) threads = 1;
  threads = int(std::min<int64_t>(threads, n_rows));
#endif
  if (threads <= 1) {
    CsrStatus st;
    run_rows(0, n_rows, n_cols, indptr, indices, data, X, k, Y, &st);
    return csr_error(st);
  }
  std::vector<CsrStatus> status(threads);
  std::atomic<bool> failed{false};
  const int64_t total = nnz + n_rows;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    int t = 0;
#ifdef _OPENMP
    t = omp_get_thread_num();
#endif
    const int64_t r0 = row_at_work(indptr, n_rows, total * t / threads);
    const int64_t r1 = t + 1 == threads ? n_rows : row_at_work(indptr, n_rows, total * (t + 1) / threads);
    if (!run_rows(r0, r1, n_cols, indptr, indices, data, X, k, Y, &status[t]))
      failed.store(true, std::memory_order_relaxed);
  }
  if (failed.load())
    for (const auto& s : status)
      if (!s.ok()) return csr_error(s);  // the first failing block in row order
  return {};
}

#define FASTNIPS_SPMM_INSTANTIATE(T, I) \
  template Status spmm_csr<T, I>(int64_t, int64_t, int64_t, const I*, const I*, const T*, const T*, int64_t, T*, int);
FASTNIPS_SPMM_INSTANTIATE(float, int32_t)
FASTNIPS_SPMM_INSTANTIATE(float, int64_t)
FASTNIPS_SPMM_INSTANTIATE(double, int32_t)
FASTNIPS_SPMM_INSTANTIATE(double, int64_t)
#undef FASTNIPS_SPMM_INSTANTIATE

}  // namespace fastnips::ops
