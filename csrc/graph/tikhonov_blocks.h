// Internal to the sparse Tikhonov solver (graph/tikhonov*.cpp): row blocks for the OpenMP passes, compile-time
// block widths, deterministic per-thread partial sums and the explicit SIMD vector types. Plain C++.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fastnips::graph::detail {

// Below this much work per pass (row entries x block width) threads cost more than they save.
constexpr int64_t kParallelWork = int64_t(1) << 16;
// Column blocks get a compile-time width (accumulators in registers); others take the generic kernel.
constexpr int64_t kWidths[] = {1, 2, 4, 8, 16, 32, 64, 128};

inline int64_t padded_width(int64_t count) {
  for (int64_t w : kWidths)
    if (count <= w) return w;
  return count;
}
inline int default_threads(int n_threads) {
#ifdef _OPENMP
  return n_threads > 0 ? n_threads : omp_get_max_threads();
#else
  (void)n_threads;
  return 1;
#endif
}

// fn(std::integral_constant<int, W>) with W the compile-time width, or 0 for the generic kernel.
template <class Fn>
void with_width(int64_t w, Fn&& fn) {
  switch (w) {
    case 1: fn(std::integral_constant<int, 1>{}); break;
    case 2: fn(std::integral_constant<int, 2>{}); break;
    case 4: fn(std::integral_constant<int, 4>{}); break;
    case 8: fn(std::integral_constant<int, 8>{}); break;
    case 16: fn(std::integral_constant<int, 16>{}); break;
    case 32: fn(std::integral_constant<int, 32>{}); break;
    case 64: fn(std::integral_constant<int, 64>{}); break;
    case 128: fn(std::integral_constant<int, 128>{}); break;
    default: fn(std::integral_constant<int, 0>{});
  }
}

// Runs fn(thread, r0, r1) over the row blocks [bounds[t], bounds[t+1]); one block runs inline.
template <class Fn>
void for_blocks(const std::vector<int64_t>& bounds, Fn&& fn) {
  const int blocks = int(bounds.size()) - 1;
  if (blocks <= 1) {
    if (blocks == 1) fn(0, bounds[0], bounds[1]);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(blocks)
  {
    for (int t = omp_get_thread_num(); t < blocks; t += omp_get_num_threads()) fn(t, bounds[t], bounds[t + 1]);
  }
#else
  for (int t = 0; t < blocks; ++t) fn(t, bounds[t], bounds[t + 1]);
#endif
}

// Per-thread partial sums of `width` doubles, padded to a cache line, reduced in thread order (so a run
// with a fixed thread count is deterministic).
class Partials {
 public:
  void reset(int threads, int64_t width) {
    stride_ = (width + 7) / 8 * 8;
    width_ = width;
    buf_.assign(size_t(threads) * size_t(stride_), 0.0);
  }
  double* of(int t) { return buf_.data() + size_t(t) * size_t(stride_); }
  void reduce(double* out) const {
    std::fill(out, out + width_, 0.0);
    const int64_t threads = stride_ ? int64_t(buf_.size()) / stride_ : 0;
    for (int64_t t = 0; t < threads; ++t)
      for (int64_t c = 0; c < width_; ++c) out[c] += buf_[size_t(t * stride_ + c)];
  }

 private:
  std::vector<double> buf_;
  int64_t stride_ = 0, width_ = 0;
};

// Explicit 32-byte vectors (GCC/Clang vector extensions) for the hot kernels: left to itself, GCC's SLP
// vectoriser splits the row accumulators of these fused kernels into scalars and spills them (measured
// 3x slower than the plain SpMM). Unaligned, may-alias views of T rows; the AVX2 clone maps them to ymm.
#if defined(__GNUC__) || defined(__clang__)
typedef double vec_d __attribute__((vector_size(32), aligned(8), may_alias));
typedef float vec_f __attribute__((vector_size(32), aligned(4), may_alias));
template <typename T>
struct Simd;
template <>
struct Simd<double> {
  using V = vec_d;
  static constexpr int kLanes = 4;
};
template <>
struct Simd<float> {
  using V = vec_f;
  static constexpr int kLanes = 8;
};
template <typename T, int W>
constexpr bool use_simd() {
  return W > 0 && W % Simd<T>::kLanes == 0;
}
#else
template <typename T>
struct Simd {
  using V = T;
  static constexpr int kLanes = 1;
};
template <typename T, int W>
constexpr bool use_simd() {
  return false;
}
#endif

}  // namespace fastnips::graph::detail
