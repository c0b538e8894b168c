#include "prune/masks.h"

#include "common/threads.h"
#include <cmath>
#include <vector>

namespace fastnips::prune {
namespace {

// below ~32k scores a thread costs more than it saves
int thread_count(int n_threads, int64_t work) { return fastnips::thread_count(n_threads, work, (int64_t(1) << 15)); }

template <typename T>
void rows_impl(int64_t rows, int64_t cols, const T* scores, int64_t k, uint8_t* keep, int n_threads) {
  const int threads = thread_count(n_threads, rows * cols);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<Key<T>> keys(size_t(std::max<int64_t>(cols, 1)));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) keep_k_largest(scores + r * cols, cols, k, keep + r * cols, keys.data());
  }
}

template <typename T>
void nm_impl(int64_t rows, int64_t cols, const T* scores, int keep_n, int group, uint8_t* keep, int n_threads) {
  const int threads = thread_count(n_threads, rows * cols);
  const int n_prune = group - keep_n;
  const int64_t n_groups = cols / group;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<Key<T>> keys(static_cast<size_t>(group));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t g = 0; g < n_groups; ++g) {
        const int64_t off = r * cols + g * group;
        if (group <= 16) keep_group(scores + off, 1, group, n_prune, keep + off, 1);
        else keep_k_largest(scores + off, group, n_prune, keep + off, keys.data());
      }
    }
  }
}

}  // namespace

template <typename T>
bool all_finite(const T* s, int64_t n, int n_threads) {
  const int threads = thread_count(n_threads, n);
  int64_t bad = 0;
#pragma omp parallel for num_threads(threads) if (threads > 1) reduction(+ : bad) schedule(static)
  for (int64_t i = 0; i < n; ++i) bad += !(s[i] - s[i] == T(0));  // inf - inf and NaN - NaN are NaN
  return bad == 0;
}

template <typename T>
void select_rows(int64_t rows, int64_t cols, const T* scores, int64_t k, uint8_t* keep, int n_threads) {
  rows_impl(rows, cols, scores, k, keep, n_threads);
}

template <typename T>
void select_matrix(int64_t rows, int64_t cols, const T* scores, int64_t k, uint8_t* keep, int /*n_threads*/) {
  const int64_t n = rows * cols;
  if (sizeof(Key<T>) == 8 && n >= (int64_t(1) << 32)) {  // the index no longer fits the low half of a 64-bit key
    std::vector<Key128> keys(static_cast<size_t>(n));
    keep_k_largest(scores, n, k, keep, keys.data());
  } else {
    std::vector<Key<T>> keys(static_cast<size_t>(std::max<int64_t>(n, 1)));
    keep_k_largest(scores, n, k, keep, keys.data());
  }
}

template <typename T>
void select_nm(int64_t rows, int64_t cols, const T* scores, int keep_n, int group, uint8_t* keep, int n_threads) {
  nm_impl(rows, cols, scores, keep_n, group, keep, n_threads);
}

template <typename T>
void prune_weight(int64_t rows, int64_t cols, T* W, const T* norms, int mode, int64_t k, int keep_n, int group,
                  uint8_t* keep, int n_threads) {
  const int threads = thread_count(n_threads, rows * cols);
  if (mode == 1) {  // matrix scope: the selection needs every score at once
    std::vector<T> s(size_t(rows * cols));
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j) {
        const T a = std::abs(W[r * cols + j]);
        s[size_t(r * cols + j)] = norms ? a * norms[j] : a;
      }
    select_matrix(rows, cols, s.data(), k, keep, n_threads);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j)
        if (!keep[r * cols + j]) W[r * cols + j] = T(0);
    return;
  }
  const int n_prune = group - keep_n;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<T> s(size_t(std::max<int64_t>(cols, 1)));
    std::vector<Key<T>> keys(size_t(std::max<int64_t>(cols, 1)));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      T* w = W + r * cols;
      uint8_t* kp = keep + r * cols;
      for (int64_t j = 0; j < cols; ++j) s[size_t(j)] = norms ? std::abs(w[j]) * norms[j] : std::abs(w[j]);
      if (mode == 0) {
        keep_k_largest(s.data(), cols, k, kp, keys.data());
      } else {
        for (int64_t g = 0; g < cols; g += group) {
          if (group <= 16) keep_group(s.data() + g, 1, group, n_prune, kp + g, 1);
          else keep_k_largest(s.data() + g, group, n_prune, kp + g, keys.data());
        }
      }
      for (int64_t j = 0; j < cols; ++j)
        if (!kp[j]) w[j] = T(0);
    }
  }
}

#define FASTNIPS_INSTANTIATE(T)                                                                               \
  template bool all_finite<T>(const T*, int64_t, int);                                                        \
  template void select_rows<T>(int64_t, int64_t, const T*, int64_t, uint8_t*, int);                           \
  template void select_matrix<T>(int64_t, int64_t, const T*, int64_t, uint8_t*, int);                         \
  template void select_nm<T>(int64_t, int64_t, const T*, int, int, uint8_t*, int);                            \
  template void prune_weight<T>(int64_t, int64_t, T*, const T*, int, int64_t, int, int, uint8_t*, int);
FASTNIPS_INSTANTIATE(float)
FASTNIPS_INSTANTIATE(double)
#undef FASTNIPS_INSTANTIATE

}  // namespace fastnips::prune
