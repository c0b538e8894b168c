#include "graph/tikhonov_dense.h"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/csr.h"
#include "common/interrupt.h"

namespace fastnips::graph {
namespace {

// Below this many flops in all, one thread does the whole batch (an OpenMP team costs more).
constexpr double kParallelWork = double(1 << 16);

int thread_count(int n_threads, int64_t n_blocks, double work) {
#ifdef _OPENMP
  if (n_blocks <= 1 || work < kParallelWork) return 1;
  const int t = n_threads > 0 ? n_threads : omp_get_max_threads();
  return int(std::max<int64_t>(1, std::min<int64_t>(t, n_blocks)));
#else
  (void)n_threads;
  (void)n_blocks;
  (void)work;
  return 1;
#endif
}

Status bad_offsets(int64_t position, int64_t value) {
  return Status::value_error("offsets must rise from 0 to n: offsets[" + std::to_string(position) +
                             "] = " + std::to_string(value));
}

// offsets: 0 = offsets[0] <= ... <= offsets[n_blocks] = n; order: a permutation of [0, n). Fills pos (the
// inverse permutation: pos[order[k]] = k).
Status check_blocks(int64_t n, const int64_t* order, const int64_t* offsets, int64_t n_blocks,
                    std::vector<int64_t>& pos) {
  if (offsets[0] != 0) return bad_offsets(0, offsets[0]);
  for (int64_t b = 0; b < n_blocks; ++b)
    if (offsets[b + 1] < offsets[b] || offsets[b + 1] > n) return bad_offsets(b + 1, offsets[b + 1]);
  if (offsets[n_blocks] != n) return bad_offsets(n_blocks, offsets[n_blocks]);
  pos.assign(size_t(n), -1);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t u = order[k];
    if (u < 0 || u >= n || pos[size_t(u)] != -1)
      return Status::value_error("order must be a permutation of [0, n): order[" + std::to_string(k) + "] = " +
                                 std::to_string(u) + " is out of range or repeated");
    pos[size_t(u)] = k;
  }
  return {};
}

// The graph id of block b in messages.
int64_t label_of(const int64_t* labels, int64_t b) { return labels ? labels[b] : b; }

Status not_positive_definite(const int64_t* labels, const int64_t* offsets, int64_t b) {
  return Status::value_error(
      "p(L) + diag(q) is not positive definite on graph " + std::to_string(label_of(labels, b)) + " (" +
      std::to_string(offsets[b + 1] - offsets[b]) +
      " nodes): its dense Cholesky factorisation met a pivot <= 0; L must be symmetric with its spectrum in "
      "[0, 2] (a normalized Laplacian), q > 0 and p >= 0 on [0, 2]");
}

Status cross_block(const int64_t* labels, int64_t row, int64_t col, int64_t b, int64_t other) {
  return Status::value_error("batch does not match L: L[" + std::to_string(row) + ", " + std::to_string(col) +
                             "] != 0 joins graph " + std::to_string(label_of(labels, b)) + " to graph " +
                             std::to_string(label_of(labels, other)) +
                             "; a block-diagonal batch has no edge between two graphs");
}

const char kBadSize[] = "tikhonov_dense: a size is out of range";

int64_t block_of(const int64_t* offsets, int64_t n_blocks, int64_t k) {
  // the block b with offsets[b] <= k < offsets[b + 1] (skipping empty blocks)
  const int64_t* it = std::upper_bound(offsets, offsets + n_blocks + 1, k);
  return int64_t(it - offsets) - 1;
}

// Blocks sorted by size, largest first (dynamic scheduling then balances mixed sizes).
std::vector<int64_t> largest_first(const int64_t* offsets, int64_t n_blocks) {
  std::vector<int64_t> idx(static_cast<size_t>(n_blocks));
  std::iota(idx.begin(), idx.end(), int64_t(0));
  std::stable_sort(idx.begin(), idx.end(), [offsets](int64_t a, int64_t b) {
    return offsets[a + 1] - offsets[a] > offsets[b + 1] - offsets[b];
  });
  return idx;
}

template <typename T>
using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Per-thread workspace of the factorisation: the block's rows of L in local indices and three dense m x m
// Chebyshev terms plus the accumulated polynomial, all in double.
struct Workspace {
  std::vector<int64_t> ptr, idx;
  std::vector<double> val, t0, t1, t2, p;
};

// A_b = p(L_b) + diag(q_b) into `a` (column-major m x m), then its lower Cholesky factor in place.
// Returns false when the factorisation fails (a pivot <= 0 or not finite).
template <typename T, typename I>
bool factor_block(int64_t off, int64_t m, const I* indptr, const I* indices, const T* data, const double* cheb,
                  int64_t degree, const T* q, const int64_t* order, const std::vector<int64_t>& pos, T* a,
                  Workspace& ws) {
  const size_t mm = size_t(m) * size_t(m);
  // local CSR of the block's rows (zeros dropped; columns already checked to lie in the block)
  ws.ptr.assign(size_t(m) + 1, 0);
  ws.idx.clear();
  ws.val.clear();
  for (int64_t i = 0; i < m; ++i) {
    const int64_t u = order[off + i];
    for (int64_t e = indptr[u]; e < int64_t(indptr[u + 1]); ++e) {
      if (data[e] == T(0)) continue;
      ws.idx.push_back(pos[size_t(indices[e])] - off);
      ws.val.push_back(double(data[e]));
    }
    ws.ptr[size_t(i) + 1] = int64_t(ws.idx.size());
  }
  // p(M), M = L_b - I, by T_0 = I, T_1 = M, T_{k+1} = 2 M T_k - T_{k-1} (row-major m x m; all symmetric)
  ws.p.assign(mm, 0.0);
  for (int64_t i = 0; i < m; ++i) ws.p[size_t(i * m + i)] = cheb[0];
  if (degree >= 1) {
    ws.t0.assign(mm, 0.0);
    ws.t1.assign(mm, 0.0);
    ws.t2.resize(mm);
    for (int64_t i = 0; i < m; ++i) {
      ws.t0[size_t(i * m + i)] = 1.0;
      ws.t1[size_t(i * m + i)] = -1.0;
      for (int64_t e = ws.ptr[size_t(i)]; e < ws.ptr[size_t(i) + 1]; ++e)
        ws.t1[size_t(i * m + ws.idx[size_t(e)])] += ws.val[size_t(e)];
    }
    for (size_t k = 0; k < mm; ++k) ws.p[k] += cheb[1] * ws.t1[k];
    double *prev = ws.t0.data(), *cur = ws.t1.data(), *next = ws.t2.data();
    for (int64_t k = 2; k <= degree; ++k) {
      const double ck = cheb[k];
      for (int64_t i = 0; i < m; ++i) {
        double* ni = next + i * m;
        const double* ci = cur + i * m;
        const double* pi = prev + i * m;
        for (int64_t j = 0; j < m; ++j) ni[j] = -2.0 * ci[j] - pi[j];  // 2 (L - I) T_k - T_{k-1}, the -I part
        for (int64_t e = ws.ptr[size_t(i)]; e < ws.ptr[size_t(i) + 1]; ++e) {
          const double w = 2.0 * ws.val[size_t(e)];
          const double* cj = cur + ws.idx[size_t(e)] * m;
          for (int64_t j = 0; j < m; ++j) ni[j] += w * cj[j];
        }
        double* acc = ws.p.data() + i * m;
        for (int64_t j = 0; j < m; ++j) acc[j] += ck * ni[j];
      }
      std::swap(prev, cur);
      std::swap(cur, next);
    }
  }
  Eigen::Map<ColMat<T>> A(a, m, m);
  for (int64_t j = 0; j < m; ++j)
    for (int64_t i = 0; i < m; ++i) A(i, j) = T(ws.p[size_t(i * m + j)]);
  for (int64_t i = 0; i < m; ++i) A(i, i) += q[order[off + i]];
  Eigen::LLT<Eigen::Ref<ColMat<T>>, Eigen::Lower> llt(A);  // in place: the lower triangle becomes C_b
  if (llt.info() != Eigen::Success) return false;
  for (int64_t i = 0; i < m; ++i) {
    const T d = A(i, i);
    if (!(d > T(0)) || !std::isfinite(double(d))) return false;
  }
  for (int64_t j = 1; j < m; ++j)
    for (int64_t i = 0; i < j; ++i) A(i, j) = T(0);
  return true;
}

// Every nonzero L[u, v] must join two nodes of one block. Adds the flops of the factorisation to *work
// (about m^3 / 3 for the Cholesky plus K (nnz_b + m) m for the polynomial, per block).
template <typename T, typename I>
Status check_block_diagonal(const I* indptr, const I* indices, const T* data, int64_t degree, const int64_t* order,
                            const int64_t* offsets, int64_t n_blocks, const int64_t* labels,
                            const std::vector<int64_t>& pos, double* work) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t lo = offsets[b], hi = offsets[b + 1];
    int64_t block_nnz = 0;
    for (int64_t k = lo; k < hi; ++k) {
      const int64_t u = order[k];
      for (int64_t e = indptr[u]; e < int64_t(indptr[u + 1]); ++e) {
        if (data[e] == T(0)) continue;
        const int64_t pv = pos[size_t(indices[e])];
        if (pv < lo || pv >= hi)
          return cross_block(labels, u, int64_t(indices[e]), b, block_of(offsets, n_blocks, pv));
        ++block_nnz;
      }
    }
    const double m = double(hi - lo);
    *work += m * m * m / 3.0 + double(degree) * double(block_nnz + hi - lo) * m;
  }
  return {};
}

}  // namespace

int64_t dense_factor_offsets(const int64_t* offsets, int64_t n_blocks, int64_t* factor_offsets) {
  factor_offsets[0] = 0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t m = std::max<int64_t>(0, offsets[b + 1] - offsets[b]);
    factor_offsets[b + 1] = factor_offsets[b] + m * m;
  }
  return factor_offsets[n_blocks];
}

template <typename T, typename I>
Status tikhonov_dense_factor(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data,
                             const double* cheb, int64_t degree, const T* q, const int64_t* order,
                             const int64_t* offsets, int64_t n_blocks, const int64_t* labels,
                             const int64_t* factor_offsets, T* factors, int n_threads) {
  if (n < 0 || nnz < 0 || degree < 0 || n_blocks < 0) return Status::value_error(kBadSize);
  Status st = csr_error(check_csr(n, n, nnz, indptr, indices), "L: ");
  if (!st.ok()) return st;
  std::vector<int64_t> pos;
  st = check_blocks(n, order, offsets, n_blocks, pos);
  if (!st.ok()) return st;
  double work = 0.0;
  st = check_block_diagonal(indptr, indices, data, degree, order, offsets, n_blocks, labels, pos, &work);
  if (!st.ok()) return st;

  const std::vector<int64_t> sched = largest_first(offsets, n_blocks);
  std::vector<unsigned char> failed(size_t(n_blocks), 0);
  const int threads = thread_count(n_threads, n_blocks, work);
  const InterruptShare share;  // polled between blocks (one block's factorisation is not interruptible)
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) if (threads > 1)
#endif
  {
    const InterruptJoin join(share);
    Workspace ws;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (int64_t s = 0; s < n_blocks; ++s) {
      if (interrupt_requested()) continue;
      const int64_t b = sched[size_t(s)];
      const int64_t m = offsets[b + 1] - offsets[b];
      if (m == 0) continue;
      if (!factor_block(offsets[b], m, indptr, indices, data, cheb, degree, q, order, pos,
                        factors + factor_offsets[b], ws))
        failed[size_t(b)] = 1;
    }
  }
  if (interrupt_requested()) return Status::interrupted();
  for (int64_t b = 0; b < n_blocks; ++b)
    if (failed[size_t(b)]) return not_positive_definite(labels, offsets, b);
  return {};
}

template <typename T>
Status tikhonov_dense_solve(int64_t n, const int64_t* order, const int64_t* offsets, int64_t n_blocks,
                            const int64_t* factor_offsets, const T* factors, const T* scale, const T* B, int64_t F,
                            T* Y, int n_threads) {
  if (n < 0 || n_blocks < 0 || F < 0) return Status::value_error(kBadSize);
  std::vector<int64_t> pos;
  const Status st = check_blocks(n, order, offsets, n_blocks, pos);
  if (!st.ok() || n == 0 || F == 0) return st;
  double work = 0.0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const double m = double(offsets[b + 1] - offsets[b]);
    work += 2.0 * m * m * double(F);
  }
  const std::vector<int64_t> sched = largest_first(offsets, n_blocks);
  const int threads = thread_count(n_threads, n_blocks, work);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) if (threads > 1)
#endif
  {
    // one right-hand-side buffer per thread, sized for the largest block (blocks are visited largest first)
    std::vector<T> buf;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (int64_t s = 0; s < n_blocks; ++s) {
      const int64_t b = sched[size_t(s)];
      const int64_t off = offsets[b], m = offsets[b + 1] - off;
      if (m == 0) continue;
      if (buf.size() < size_t(m) * size_t(F)) buf.resize(size_t(m) * size_t(F));
      Eigen::Map<RowMat<T>> rhs(buf.data(), m, F);
      for (int64_t i = 0; i < m; ++i) {
        const int64_t u = order[off + i];
        const T f = scale ? scale[u] : T(1);
        const T* bu = B + u * F;
        for (int64_t c = 0; c < F; ++c) rhs(i, c) = f * bu[c];
      }
      Eigen::Map<const ColMat<T>> C(factors + factor_offsets[b], m, m);
      C.template triangularView<Eigen::Lower>().solveInPlace(rhs);
      C.transpose().template triangularView<Eigen::Upper>().solveInPlace(rhs);
      for (int64_t i = 0; i < m; ++i) {
        T* yu = Y + order[off + i] * F;
        for (int64_t c = 0; c < F; ++c) yu[c] = rhs(i, c);
      }
    }
  }
  return st;
}

#define FASTNIPS_DENSE_INSTANTIATE(T, I)                                                                     \
  template Status tikhonov_dense_factor<T, I>(int64_t, int64_t, const I*, const I*, const T*, const double*,  \
                                              int64_t, const T*, const int64_t*, const int64_t*, int64_t,      \
                                              const int64_t*, const int64_t*, T*, int);
FASTNIPS_DENSE_INSTANTIATE(float, int32_t)
FASTNIPS_DENSE_INSTANTIATE(float, int64_t)
FASTNIPS_DENSE_INSTANTIATE(double, int32_t)
FASTNIPS_DENSE_INSTANTIATE(double, int64_t)
#undef FASTNIPS_DENSE_INSTANTIATE
template Status tikhonov_dense_solve<float>(int64_t, const int64_t*, const int64_t*, int64_t, const int64_t*,
                                            const float*, const float*, const float*, int64_t, float*, int);
template Status tikhonov_dense_solve<double>(int64_t, const int64_t*, const int64_t*, int64_t, const int64_t*,
                                             const double*, const double*, const double*, int64_t, double*, int);

}  // namespace fastnips::graph
