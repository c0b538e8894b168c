// Packing sparse weights for checkpoints (fastnips.prune.pack, backend "cpp"): N:M (values + in-group
// positions) and bitmask (values + one bit per entry + row offsets). Plain C++17 with OpenMP: no Python.
//
// The kernels move raw element bits (U = uint16_t for float16/bfloat16, uint32_t for float32, uint64_t for
// float64), so one instance serves every float format with the same width, and kept values round-trip
// bit for bit. An entry counts as zero when its value is +0 or -0 (every bit but the sign bit clear, the
// IEEE rule for all these formats); zeros are never stored, and unpacking writes +0.
#pragma once
#include <cstdint>

#include "common/status.h"

namespace fastnips::prune {

// N:M pack of the rows x cols row-major W (cols % group == 0, keep <= group): for every row and group, the
// positions of its nonzeros, completed by its lowest zero positions to `keep` slots and sorted ascending,
// go to idx[row, g * keep + s] (uint8, 0..group-1); values[row, g * keep + s] is the entry there (+0 for the
// completing zeros). A group with more than `keep` nonzeros is refused (a ValueError naming the lowest such
// (row, group) and its count).
template <typename U>
Status pack_nm(int64_t rows, int64_t cols, int keep, int group, const U* W, U* values, uint8_t* idx, int n_threads);

// Inverse of pack_nm: out (rows x cols, overwritten entirely) is +0 except out[row, g * group + idx] = value.
// Positions must be strictly increasing within each group and < group (else a ValueError naming the lowest
// bad (row, group)).
template <typename U>
Status unpack_nm(int64_t rows, int64_t cols, int keep, int group, const U* values, const uint8_t* idx, U* out,
                     int n_threads);

// Bitmask pack, pass 1: row_offsets[0..rows] (int64) = exclusive prefix sum of the nonzeros per row.
template <typename U>
void bitmask_count(int64_t rows, int64_t cols, const U* W, int64_t* row_offsets, int n_threads);

// Bitmask pack, pass 2: values[row_offsets[r] ..] = the nonzeros of row r in column order; bitmask
// (rows x ceil(cols / 8), uint8): bit (j % 8) of byte j / 8 is set where W[r, j] != 0 (little bit order).
template <typename U>
void bitmask_fill(int64_t rows, int64_t cols, const U* W, const int64_t* row_offsets, U* values, uint8_t* bitmask,
                  int n_threads);

// Bitmask unpack into out (rows x cols, overwritten entirely), after checking that row_offsets rises from
// 0 to nnz and agrees with the popcount of every row, and that no bit past the last column is set (else a
// ValueError naming the row).
template <typename U>
Status bitmask_unpack(int64_t rows, int64_t cols, int64_t nnz, const U* values, const uint8_t* bitmask,
                      const int64_t* row_offsets, U* out, int n_threads);

}  // namespace fastnips::prune
