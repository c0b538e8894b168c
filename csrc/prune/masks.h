// Exact keep-mask selection for pruning (fastnips.prune.masks.select_mask, backend "cpp"). Plain C++17 with
// OpenMP: no Python, no pybind11.
//
// Every selection prunes the entries with the LOWEST scores, with an exact count and a deterministic
// tie-break: among equal scores the lower index is pruned first, i.e. entries are ordered by the pair
// (score, index). This is the order of a stable ascending sort, so the masks equal the torch reference
// bit for bit. Masks are written as uint8, 1 = kept, 0 = pruned; scores must be finite (the caller checks).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace fastnips::prune {

// Sort keys that order entries by (score, index) with plain integer comparisons: the score's bits mapped to a
// monotone unsigned integer (+0 and -0 map alike, so they tie and the index decides) in the high part, the
// index in the low part. float scores with n < 2^32 entries use 64-bit keys; otherwise 128-bit keys.
inline uint32_t ordered_bits(float x) {
  uint32_t b;
  if (x == 0.0f) return 0x80000000u;
  std::memcpy(&b, &x, sizeof b);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
inline uint64_t ordered_bits(double x) {
  uint64_t b;
  if (x == 0.0) return uint64_t(1) << 63;
  std::memcpy(&b, &x, sizeof b);
  return (b >> 63) ? ~b : (b | (uint64_t(1) << 63));
}
using Key128 = unsigned __int128;
template <typename T>
using Key = std::conditional_t<sizeof(T) == 4, uint64_t, Key128>;

// keep[0..n) (uint8, 1 = kept) for the n scores s[0..n): prune exactly min(k, n) entries, the smallest in
// (score, index) order. keys is scratch space for n keys (K = Key<T>, or Key128 when n >= 2^32). Average O(n)
// (nth_element on integer keys).
template <typename T, typename K>
inline void keep_k_largest(const T* s, int64_t n, int64_t k, uint8_t* keep, K* keys) {
  if (k <= 0) {
    std::fill(keep, keep + n, uint8_t(1));
    return;
  }
  if (k >= n) {
    std::fill(keep, keep + n, uint8_t(0));
    return;
  }
  constexpr int shift = sizeof(K) * 4;  // the index sits in the low half of the key
  for (int64_t j = 0; j < n; ++j) keys[j] = (K(ordered_bits(s[j])) << shift) | K(uint64_t(j));
  std::nth_element(keys, keys + k, keys + n);
  const K low = (K(1) << shift) - 1;
  std::fill(keep, keep + n, uint8_t(1));
  for (int64_t p = 0; p < k; ++p) keep[int64_t(keys[p] & low)] = 0;
}

// One N:M group of g scores (stride `stride` between them): prune the n_prune smallest in (score, position)
// order, writing keep[j * keep_stride]. A rank count, O(g^2): g is small (4, 8, 16).
template <typename T>
inline void keep_group(const T* s, int64_t stride, int g, int n_prune, uint8_t* keep, int64_t keep_stride) {
  for (int j = 0; j < g; ++j) {
    const T sj = s[j * stride];
    int rank = 0;
    for (int l = 0; l < g; ++l) {
      const T sl = s[l * stride];
      rank += (sl < sj) || (sl == sj && l < j);
    }
    keep[j * keep_stride] = rank >= n_prune;
  }
}

// True when every one of the n values is finite (no NaN, no inf); one parallel pass.
template <typename T>
bool all_finite(const T* s, int64_t n, int n_threads);

// Row scope: prune exactly k entries of every row of the rows x cols row-major scores.
template <typename T>
void select_rows(int64_t rows, int64_t cols, const T* scores, int64_t k, uint8_t* keep, int n_threads);

// Matrix scope: prune exactly k entries of the whole matrix, ties broken by the flat row-major index.
template <typename T>
void select_matrix(int64_t rows, int64_t cols, const T* scores, int64_t k, uint8_t* keep, int n_threads);

// N:M: in every row keep exactly `keep_n` of each `group` consecutive columns (cols % group == 0).
template <typename T>
void select_nm(int64_t rows, int64_t cols, const T* scores, int keep_n, int group, uint8_t* keep, int n_threads);

// Fused score + select + apply for magnitude (norms == nullptr) and Wanda (score |W_ij| * norms[j]) on the
// rows x cols row-major weight W (float or double): writes the keep-mask and sets pruned entries of W to
// exactly +0. mode 0: row scope with k per row; 1: matrix scope with k in all; 2: N:M (keep_n, group).
// Scores are formed in T, exactly as the torch reference does (|w| or |w| * n), so masks are identical.
template <typename T>
void prune_weight(int64_t rows, int64_t cols, T* W, const T* norms, int mode, int64_t k, int keep_n, int group,
                  uint8_t* keep, int n_threads);

}  // namespace fastnips::prune
