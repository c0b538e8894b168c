// diag(p(L)) for the Jacobi preconditioner of the sparse Tikhonov solver (tikhonov_diagonal.h): exactly,
// from the local Chebyshev vectors of every node, or truncated to the degree-2 part; kAuto prices the exact
// one on a sample of nodes first.
#include "graph/tikhonov_diagonal.h"

#include <algorithm>
#include <vector>

#include "graph/tikhonov_blocks.h"

namespace fastnips::graph::detail {
namespace {

// Per-thread workspace of diagonal_exact: the sparse local vectors u_k = T_k(M) e_i (M = L - I) of one node
// i for k <= m = ceil(K / 2), built by a sparse accumulator (acc, mark, touched), and the diagonal terms
// d[k] = (T_k(M))_ii they give.
template <typename T, typename I>
class LocalChebyshev {
 public:
  LocalChebyshev(int64_t n, const I* indptr, const I* indices, const T* data, int64_t K)
      : indptr_(indptr), indices_(indices), data_(data), K_(K), m_((K + 1) / 2), acc_(size_t(n), 0.0),
        mark_(size_t(n), 0), uidx_(size_t(m_) + 1), uval_(size_t(m_) + 1), d_(size_t(K) + 1) {}

  // sum_k cheb[k] (T_k(M))_ii; adds the sparse multiply-adds spent to *work.
  double diagonal(int64_t i, const double* cheb, int64_t* work) {
    *work += expand(i);
    *work += terms();
    double v = 0.0;
    for (int64_t k = 0; k <= K_; ++k) v += cheb[k] * d_[k];
    return v;
  }

 private:
  void add(int64_t j, double v) {
    if (!mark_[j]) {
      mark_[j] = 1;
      touched_.push_back(j);
    }
    acc_[j] += v;
  }

  // Moves the accumulated vector into level `level` and clears the accumulator.
  void gather(int64_t level) {
    auto& ix = uidx_[level];
    auto& vx = uval_[level];
    ix.assign(touched_.begin(), touched_.end());
    vx.resize(ix.size());
    for (size_t t = 0; t < ix.size(); ++t) {
      vx[t] = acc_[ix[t]];
      acc_[ix[t]] = 0.0;
      mark_[ix[t]] = 0;
    }
    touched_.clear();
  }

  // u_0 = e_i, u_1 = M e_i, u_{k+1} = 2 M u_k - u_{k-1} up to u_m; sets d[0] and d[1]. Returns the work.
  int64_t expand(int64_t i) {
    int64_t work = 0;
    uidx_[0].assign(1, i);
    uval_[0].assign(1, 1.0);
    // u_1 = M e_i = (row i of L, by symmetry column i) - e_i
    for (int64_t p = indptr_[i]; p < int64_t(indptr_[i + 1]); ++p) add(int64_t(indices_[p]), double(data_[p]));
    add(i, -1.0);
    d_[0] = 1.0;
    d_[1] = acc_[i];
    gather(1);
    work += int64_t(indptr_[i + 1]) - int64_t(indptr_[i]) + 1;
    for (int64_t k = 1; k < m_; ++k) {
      const auto& ix = uidx_[k];
      const auto& vx = uval_[k];
      for (size_t e = 0; e < ix.size(); ++e) {
        const int64_t j = ix[e];
        const double v2 = 2.0 * vx[e];
        for (int64_t p = indptr_[j]; p < int64_t(indptr_[j + 1]); ++p)
          add(int64_t(indices_[p]), v2 * double(data_[p]));
        add(j, -v2);
        work += int64_t(indptr_[j + 1]) - int64_t(indptr_[j]) + 1;
      }
      for (size_t e = 0; e < uidx_[k - 1].size(); ++e) add(uidx_[k - 1][e], -uval_[k - 1][e]);
      gather(k + 1);
    }
    return work;
  }

  // (T_{2a})_ii = 2 u_a.u_a - 1,  (T_{2a-1})_ii = 2 u_a.u_{a-1} - (T_1)_ii. Returns the work.
  int64_t terms() {
    int64_t work = 0;
    for (int64_t a = 1; a <= m_; ++a) {
      const auto& ix = uidx_[a];
      const auto& vx = uval_[a];
      if (2 * a <= K_) {
        double sum = 0.0;
        for (double v : vx) sum += v * v;
        d_[2 * a] = 2.0 * sum - 1.0;
      }
      if (a >= 2 && 2 * a - 1 <= K_) {
        for (size_t e = 0; e < ix.size(); ++e) acc_[ix[e]] = vx[e];
        double sum = 0.0;
        for (size_t e = 0; e < uidx_[a - 1].size(); ++e) sum += acc_[uidx_[a - 1][e]] * uval_[a - 1][e];
        for (size_t e = 0; e < ix.size(); ++e) acc_[ix[e]] = 0.0;
        d_[2 * a - 1] = 2.0 * sum - d_[1];
      }
      work += 2 * int64_t(ix.size());
    }
    return work;
  }

  const I* indptr_;
  const I* indices_;
  const T* data_;
  int64_t K_, m_;
  std::vector<double> acc_;
  std::vector<unsigned char> mark_;
  std::vector<int64_t> touched_;
  std::vector<std::vector<int64_t>> uidx_;
  std::vector<std::vector<double>> uval_;
  std::vector<double> d_;
};

// diag(p(L)) restricted to the Chebyshev terms k <= K, node by node (see DiagonalMode::kExact), for the
// nodes `nodes[0..count)` (all nodes when nodes == nullptr; then out[i] is node i, else out[t] is
// nodes[t]). Returns the work done, in sparse multiply-adds.
template <typename T, typename I>
int64_t diagonal_exact(int64_t n, const I* indptr, const I* indices, const T* data, const double* cheb, int64_t K,
                       int threads, const int64_t* nodes, int64_t count, double* out) {
  if (K <= 1) {
    for (int64_t t = 0; t < count; ++t) {
      const int64_t i = nodes ? nodes[t] : t;
      double self = 0.0;
      for (int64_t p = indptr[i]; p < int64_t(indptr[i + 1]); ++p)
        if (int64_t(indices[p]) == i) self += double(data[p]);
      out[t] = cheb[0] + (K == 1 ? cheb[1] * (self - 1.0) : 0.0);
    }
    return int64_t(indptr[n]) + n;
  }
  int64_t work = 0;
  if (count < 256) threads = 1;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : work)
#endif
  {
    LocalChebyshev<T, I> local(n, indptr, indices, data, K);
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 64)
#endif
    for (int64_t t = 0; t < count; ++t) out[t] = local.diagonal(nodes ? nodes[t] : t, cheb, &work);
  }
  return work;
}

}  // namespace

// diag(p(L)) for the Jacobi preconditioner, per opt.diagonal; returns whether it is exact.
template <typename T, typename I>
bool jacobi_diagonal(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data, const double* cheb,
                     int64_t degree, int64_t F, const TikhonovOptions& opt, double* out) {
  const int threads = default_threads(opt.n_threads);
  bool exact = opt.diagonal == DiagonalMode::kExact || degree <= 2;
  if (!exact && opt.diagonal == DiagonalMode::kAuto) {
    // Price the exact diagonal on an even sample of nodes; take it when it costs less than about half a
    // CG iteration. Its work units are random accesses, measured about 8x dearer than the streamed
    // multiply-adds of the block SpMM, hence K (nnz + n) F / 16.
    const int64_t limit = opt.diagonal_work_limit > 0 ? opt.diagonal_work_limit
                                                      : std::max<int64_t>(degree * (nnz + n) * F / 16, 1 << 16);
    const int64_t samples = std::min<int64_t>(n, 128);
    std::vector<int64_t> nodes(static_cast<size_t>(samples));
    std::vector<double> scratch(static_cast<size_t>(samples));
    for (int64_t t = 0; t < samples; ++t) nodes[t] = t * n / samples;
    const int64_t work = diagonal_exact<T, I>(n, indptr, indices, data, cheb, degree, 1, nodes.data(), samples,
                                              scratch.data());
    exact = double(work) / double(samples) * double(n) <= double(limit);
  }
  diagonal_exact<T, I>(n, indptr, indices, data, cheb, exact ? degree : 2, threads, nullptr, n, out);
  return exact;
}

#define FASTNIPS_DIAGONAL_INSTANTIATE(T, I)                                                                       \
  template bool jacobi_diagonal<T, I>(int64_t, int64_t, const I*, const I*, const T*, const double*, int64_t, \
                                      int64_t, const TikhonovOptions&, double*);
FASTNIPS_DIAGONAL_INSTANTIATE(float, int32_t)
FASTNIPS_DIAGONAL_INSTANTIATE(float, int64_t)
FASTNIPS_DIAGONAL_INSTANTIATE(double, int32_t)
FASTNIPS_DIAGONAL_INSTANTIATE(double, int64_t)
#undef FASTNIPS_DIAGONAL_INSTANTIATE

}  // namespace fastnips::graph::detail
