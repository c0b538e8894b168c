// CSR helpers shared by the sparse kernels. Plain C++: no Python, no pybind11.
#pragma once
#include <cstdint>
#include <string>

#include "common/status.h"

namespace fastnips {

// Why a CSR structure was refused: a record cheap enough to fill inside a kernel's hot loop; csr_error turns
// it into the op's Status.
struct CsrStatus {
  enum Kind : int { kOk = 0, kIndptrStart, kIndptrEnd, kIndptrDecreasing, kIndexOutOfRange };
  Kind kind = kOk;
  int64_t row = -1;       // the offending row (indptr position for indptr errors)
  int64_t position = -1;  // the offending position in indices/data, where one applies
  int64_t value = 0;      // the offending indptr entry or column index
  bool ok() const { return kind == kOk; }
};

// The ValueError for a refused CSR structure (every sparse op; prefix names the matrix, e.g. "L: ").
inline Status csr_error(const CsrStatus& c, const std::string& prefix = "") {
  const std::string row = std::to_string(c.row), value = std::to_string(c.value);
  switch (c.kind) {
    case CsrStatus::kOk: return {};
    case CsrStatus::kIndptrStart: return Status::value_error(prefix + "indptr[0] must be 0, got " + value);
    case CsrStatus::kIndptrEnd:
      return Status::value_error(prefix + "indptr[-1] must equal len(indices), got " + value);
    case CsrStatus::kIndptrDecreasing:
      return Status::value_error(prefix + "indptr must be non-decreasing: indptr[" + std::to_string(c.row + 1) +
                                 "] = " + value + " < indptr[" + row + "]");
    case CsrStatus::kIndexOutOfRange:
      return Status::value_error(prefix + "column index out of range in row " + row + ": indices[" +
                                 std::to_string(c.position) + "] = " + value);
  }
  return Status::value_error(prefix + "unknown error");
}

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

// check_indptr, then check_indices: the whole structure of an n_rows x n_cols CSR matrix, O(nnz).
template <typename I>
CsrStatus check_csr(int64_t n_rows, int64_t n_cols, int64_t nnz, const I* indptr, const I* indices) {
  const CsrStatus c = check_indptr(n_rows, nnz, indptr);
  return c.ok() ? check_indices(n_rows, n_cols, indptr, indices) : c;
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
