#include "prune/pack.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>

#include "common/threads.h"

namespace fastnips::prune {
namespace {

int thread_count(int n_threads, int64_t work) { return fastnips::thread_count(n_threads, work, (int64_t(1) << 16)); }

// Nonzero in value: any bit but the sign bit set (+0 and -0 are zero).
template <typename U>
inline bool nonzero(U bits) {
  constexpr U magnitude = U(~(U(1) << (sizeof(U) * 8 - 1)));
  return (bits & magnitude) != 0;
}

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

// Keep the lowest failing (row, group) across threads: a flat key, atomically minimised.
inline void record(std::atomic<int64_t>& first, int64_t key) {
  int64_t cur = first.load(std::memory_order_relaxed);
  while (key < cur && !first.compare_exchange_weak(cur, key, std::memory_order_relaxed)) {
  }
}

// fn(r, first) for every row r, the rows split between threads when the matrix is large; fn records the
// key of a refused row or group into `first`. Returns the lowest key recorded, kNone when none was.
template <class Fn>
int64_t for_rows(int64_t rows, int64_t cols, int n_threads, Fn&& fn) {
  std::atomic<int64_t> first{kNone};
  const int threads = thread_count(n_threads, rows * cols);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) fn(r, first);
  return first.load();
}

Status bad_offsets(int64_t row, int64_t value) {
  return Status::value_error("row_offsets disagree with the bitmask or values at row " + std::to_string(row) +
                             " (value " + std::to_string(value) +
                             "): they must rise from 0 to len(values), row by row as the popcount of the bitmask");
}

}  // namespace

template <typename U>
Status pack_nm(int64_t rows, int64_t cols, int keep, int group, const U* W, U* values, uint8_t* idx, int n_threads) {
  const int64_t n_groups = cols / group;
  const int64_t packed_cols = n_groups * keep;
  const int64_t f = for_rows(rows, cols, n_threads, [&](int64_t r, std::atomic<int64_t>& first) {
    const U* w = W + r * cols;
    U* v = values + r * packed_cols;
    uint8_t* ix = idx + r * packed_cols;
    for (int64_t g = 0; g < n_groups; ++g) {
      const U* wg = w + g * group;
      int nnz = 0;
      for (int j = 0; j < group; ++j) nnz += nonzero(wg[j]);
      if (nnz > keep) {
        record(first, r * n_groups + g);
        return;
      }
      // slots: every nonzero, plus the lowest zero positions up to `keep`, in ascending position order
      int zeros_to_take = keep - nnz, s = 0;
      for (int j = 0; j < group && s < keep; ++j) {
        const bool nz = nonzero(wg[j]);
        if (nz || zeros_to_take > 0) {
          if (!nz) --zeros_to_take;
          ix[g * keep + s] = uint8_t(j);
          v[g * keep + s] = nz ? wg[j] : U(0);
          ++s;
        }
      }
    }
  });
  if (f == kNone) return {};
  const int64_t r = f / n_groups, g = f % n_groups;
  int nnz = 0;
  for (int j = 0; j < group; ++j) nnz += nonzero(W[r * cols + g * group + j]);
  return Status::value_error("weight does not follow the N:M pattern (keep " + std::to_string(keep) + " of " +
                             std::to_string(group) + "): row " + std::to_string(r) + ", group " +
                             std::to_string(g) + " (columns " + std::to_string(g * group) + ".." +
                             std::to_string((g + 1) * group - 1) + ") holds " + std::to_string(nnz) + " nonzeros");
}

template <typename U>
Status unpack_nm(int64_t rows, int64_t cols, int keep, int group, const U* values, const uint8_t* idx, U* out,
                 int n_threads) {
  const int64_t n_groups = cols / group;
  const int64_t packed_cols = n_groups * keep;
  const int64_t f = for_rows(rows, cols, n_threads, [&](int64_t r, std::atomic<int64_t>& first) {
    U* o = out + r * cols;
    std::fill(o, o + cols, U(0));
    const U* v = values + r * packed_cols;
    const uint8_t* ix = idx + r * packed_cols;
    for (int64_t g = 0; g < n_groups; ++g) {
      int prev = -1;
      for (int s = 0; s < keep; ++s) {
        const int j = ix[g * keep + s];
        if (j <= prev || j >= group) {
          record(first, r * n_groups + g);
          break;
        }
        prev = j;
        o[g * group + j] = v[g * keep + s];
      }
    }
  });
  if (f == kNone) return {};
  return Status::value_error("indices must be strictly increasing positions in [0, " + std::to_string(group) +
                             ") within each group: row " + std::to_string(f / n_groups) + ", group " +
                             std::to_string(f % n_groups));
}

template <typename U>
void bitmask_count(int64_t rows, int64_t cols, const U* W, int64_t* row_offsets, int n_threads) {
  const int threads = thread_count(n_threads, rows * cols);
  row_offsets[0] = 0;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const U* w = W + r * cols;
    int64_t c = 0;
    for (int64_t j = 0; j < cols; ++j) c += nonzero(w[j]);
    row_offsets[r + 1] = c;
  }
  for (int64_t r = 0; r < rows; ++r) row_offsets[r + 1] += row_offsets[r];
}

template <typename U>
void bitmask_fill(int64_t rows, int64_t cols, const U* W, const int64_t* row_offsets, U* values, uint8_t* bitmask,
                  int n_threads) {
  const int64_t nbytes = (cols + 7) / 8;
  const int threads = thread_count(n_threads, rows * cols);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const U* w = W + r * cols;
    U* v = values + row_offsets[r];
    uint8_t* bm = bitmask + r * nbytes;
    for (int64_t b = 0; b < nbytes; ++b) {
      uint8_t byte = 0;
      const int64_t j0 = b * 8, j1 = std::min(cols, j0 + 8);
      for (int64_t j = j0; j < j1; ++j)
        if (nonzero(w[j])) {
          byte = uint8_t(byte | (1u << (j - j0)));
          *v++ = w[j];
        }
      bm[b] = byte;
    }
  }
}

template <typename U>
Status bitmask_unpack(int64_t rows, int64_t cols, int64_t nnz, const U* values, const uint8_t* bitmask,
                      const int64_t* row_offsets, U* out, int n_threads) {
  const int64_t nbytes = (cols + 7) / 8;
  // the offsets first (serial, O(rows)): every later read is then in bounds
  if (row_offsets[0] != 0) return bad_offsets(0, row_offsets[0]);
  for (int64_t r = 0; r < rows; ++r)
    if (row_offsets[r + 1] < row_offsets[r]) return bad_offsets(r, row_offsets[r + 1]);
  if (row_offsets[rows] != nnz) return bad_offsets(rows, row_offsets[rows]);
  const uint8_t tail = (cols % 8) ? uint8_t(0xFFu << (cols % 8)) : uint8_t(0);
  auto popcount = [&](const uint8_t* bm) {
    int64_t pop = 0;
    for (int64_t b = 0; b < nbytes; ++b) pop += __builtin_popcount(unsigned(bm[b]));
    return pop;
  };
  const int64_t f = for_rows(rows, cols, n_threads, [&](int64_t r, std::atomic<int64_t>& first) {
    const uint8_t* bm = bitmask + r * nbytes;
    const int64_t pop = popcount(bm);
    U* o = out + r * cols;
    std::fill(o, o + cols, U(0));
    if (pop != row_offsets[r + 1] - row_offsets[r] || (nbytes && (bm[nbytes - 1] & tail))) {
      record(first, r);
      return;
    }
    const U* v = values + row_offsets[r];
    for (int64_t b = 0; b < nbytes; ++b) {
      unsigned byte = bm[b];
      while (byte) {
        const int t = __builtin_ctz(byte);
        o[b * 8 + t] = *v++;
        byte &= byte - 1;
      }
    }
  });
  if (f == kNone) return {};
  const uint8_t* bm = bitmask + f * nbytes;
  if (nbytes && (bm[nbytes - 1] & tail))
    return Status::value_error("bitmask row " + std::to_string(f) + " has bits set past the last column");
  return bad_offsets(f, popcount(bm));
}

#define FASTNIPS_INSTANTIATE(U)                                                                                \
  template Status pack_nm<U>(int64_t, int64_t, int, int, const U*, U*, uint8_t*, int);                         \
  template Status unpack_nm<U>(int64_t, int64_t, int, int, const U*, const uint8_t*, U*, int);                 \
  template void bitmask_count<U>(int64_t, int64_t, const U*, int64_t*, int);                                   \
  template void bitmask_fill<U>(int64_t, int64_t, const U*, const int64_t*, U*, uint8_t*, int);                \
  template Status bitmask_unpack<U>(int64_t, int64_t, int64_t, const U*, const uint8_t*, const int64_t*, U*, int);
FASTNIPS_INSTANTIATE(uint16_t)
FASTNIPS_INSTANTIATE(uint32_t)
FASTNIPS_INSTANTIATE(uint64_t)
#undef FASTNIPS_INSTANTIATE

}  // namespace fastnips::prune
