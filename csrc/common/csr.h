// CSR helpers shared by the sparse kernels. Plain C++: no Python, no pybind11.
#pragma once
#include <cstdint>

namespace fastnips {

// Why a CSR structure was refused; bindings.cpp turns it into a ValueError message (csr_message).
struct CsrStatus {
  enum Kind : int { kOk = 0, kIndptrStart, kIndptrEnd, kIndptrDecreasing, kIndexOutOfRange };
  Kind kind = kOk;
  int64_t row = -1;       // the offending row (indptr position for indptr errors)
  int64_t position = -1;  // the offending position in indices/data, where one applies
  int64_t value = 0;      // the offending indptr entry or column index
  bool ok() const { return kind == kOk; }
};

// indptr[0] == 0, non-decreasing, indptr[n_rows] == nnz. O(n_rows); column indices are checked by the kernels
// on the fly (or by check_indices) so they are read once.
template <typename I>
CsrStatus check_indptr(int64_t n_rows, int64_t nnz, const I* indptr) {
  if (int64_t(indptr[0]) != 0) return {CsrStatus::kIndptrStart, 0, -1, int64_t(indptr[0])};
  for (int64_t i = 0; i < n_rows; ++i)
    if (indptr[i + 1] < indptr[i]) return {CsrStatus::kIndptrDecreasing, i, -1, int64_t(indptr[i + 1])};
  if (int64_t(indptr[n_rows]) != nnz) return {CsrStatus::kIndptrEnd, n_rows, -1, int64_t(indptr[n_rows])};
  return {};
}

// Every column index in [0, n_cols); assumes check_indptr passed.
template <typename I>
CsrStatus check_indices(int64_t n_rows, int64_t n_cols, const I* indptr, const I* indices) {
  for (int64_t i = 0; i < n_rows; ++i)
    for (int64_t p = indptr[i]; p < int64_t(indptr[i + 1]); ++p)
      if (uint64_t(int64_t(indices[p])) >= uint64_t(n_cols))
        return {CsrStatus::kIndexOutOfRange, i, p, int64_t(indices[p])};
  return {};
}

// First row whose cumulative work (nonzeros before it + rows before it) reaches `target`: splitting rows at
// equal work balances threads on skewed (power-law) row lengths.
template <typename I>
int64_t row_at_work(const I* indptr, int64_t n_rows, int64_t target) {
  int64_t lo = 0, hi = n_rows;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (int64_t(indptr[mid]) + mid < target) lo = mid + 1; else hi = mid;
  }
  return lo;
}

}  // namespace fastnips
