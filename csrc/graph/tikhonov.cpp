#include "graph/tikhonov.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/csr.h"
#include "common/simd.h"


namespace fastnips::graph {
namespace {

using Status = TikhonovStatus;

// Below this much work per pass (row entries x block width) threads cost more than they save.
constexpr int64_t kParallelWork = int64_t(1) << 16;
// Column blocks get a compile-time width (accumulators in registers); others take the generic kernel.
constexpr int64_t kWidths[] = {1, 2, 4, 8, 16, 32, 64, 128};

int64_t padded_width(int64_t count) {
  for (int64_t w : kWidths)
    if (count <= w) return w;
  return count;
}

int default_threads(int n_threads) {
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

// The CSR checks of common/csr.h, reported in TikhonovStatus (whose first kinds mirror CsrStatus).
static_assert(int(Status::kIndptrStart) == int(CsrStatus::kIndptrStart) &&
                  int(Status::kIndptrEnd) == int(CsrStatus::kIndptrEnd) &&
                  int(Status::kIndptrDecreasing) == int(CsrStatus::kIndptrDecreasing) &&
                  int(Status::kIndexOutOfRange) == int(CsrStatus::kIndexOutOfRange),
              "TikhonovStatus must mirror CsrStatus");
template <typename I>
Status check_structure(int64_t n, int64_t nnz, const I* indptr, const I* indices) {
  CsrStatus c = check_indptr(n, nnz, indptr);
  if (c.ok()) c = check_indices(n, n, indptr, indices);
  Status st;
  st.kind = static_cast<Status::Kind>(c.kind);
  st.row = c.row;
  st.position = c.position;
  st.value = c.value;
  return st;
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

// ------------------------------------------------------------------------------------------- kernels

enum : int { kFirst = 1, kLast = 2 };

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

// One stage of the Chebyshev recurrence for rows [r0, r1) of an n x W block (row-major), fused with its
// epilogue:  s = L cur;  next = T_{k+1} = (FIRST ? s - cur : 2 (s - cur) - prev);
//            acc = (FIRST ? c0 cur : acc) + ck next;  on the LAST stage also acc += q o V (when q) and
// dots += V . acc (column-wise, when dots). `next` is not written on the last stage; `prev` and `next`
// may be the same buffer (row i of T_{k-1} is read only by row i, before being overwritten).
// W > 0 is a compile-time width (vector path when W fills whole vectors); W == 0 is generic (`scratch`).
template <int W, bool FIRST, bool LAST, typename T, typename I>
FASTNIPS_CLONES void stage_rows(int64_t r0, int64_t r1, int64_t w_rt, const I* __restrict indptr,
                                const I* __restrict indices, const T* __restrict data, const T* __restrict cur,
                                const T* prev, T* next, T* __restrict acc, const T* __restrict V, T c0, T ck,
                                const T* __restrict q, double* __restrict dots, T* __restrict scratch) {
  if constexpr (use_simd<T, W>()) {
    using VT = typename Simd<T>::V;
    constexpr int L = Simd<T>::kLanes, NV = W / L;
    constexpr bool kDoubleAcc = std::is_same_v<T, double>;
    VT dacc[kDoubleAcc ? NV : 1] = {};
    for (int64_t i = r0; i < r1; ++i) {
      VT s[NV] = {};
      const int64_t p1 = indptr[i + 1];
      for (int64_t p = indptr[i]; p < p1; ++p) {
        const T a = data[p];
        const VT* x = reinterpret_cast<const VT*>(cur + int64_t(indices[p]) * W);
        for (int v = 0; v < NV; ++v) s[v] += a * x[v];
      }
      const VT* ci = reinterpret_cast<const VT*>(cur + i * W);
      VT* ai = reinterpret_cast<VT*>(acc + i * W);
      if constexpr (FIRST) {
        if constexpr (LAST) {
          for (int v = 0; v < NV; ++v) ai[v] = c0 * ci[v] + ck * (s[v] - ci[v]);
        } else {
          VT* ni = reinterpret_cast<VT*>(next + i * W);
          for (int v = 0; v < NV; ++v) {
            const VT t = s[v] - ci[v];
            ni[v] = t;
            ai[v] = c0 * ci[v] + ck * t;
          }
        }
      } else {
        const VT* pi = reinterpret_cast<const VT*>(prev + i * W);
        if constexpr (LAST) {
          for (int v = 0; v < NV; ++v) ai[v] += ck * (T(2) * (s[v] - ci[v]) - pi[v]);
        } else {
          VT* ni = reinterpret_cast<VT*>(next + i * W);
          for (int v = 0; v < NV; ++v) {
            const VT t = T(2) * (s[v] - ci[v]) - pi[v];
            ni[v] = t;
            ai[v] += ck * t;
          }
        }
      }
      if constexpr (LAST) {
        const VT* vi = reinterpret_cast<const VT*>(V + i * W);
        if (q) {
          const T qi = q[i];
          for (int v = 0; v < NV; ++v) ai[v] += qi * vi[v];
        }
        if (dots) {
          if constexpr (kDoubleAcc) {
            for (int v = 0; v < NV; ++v) dacc[v] += vi[v] * ai[v];
          } else {
            for (int v = 0; v < NV; ++v) {
              const VT pr = vi[v] * ai[v];
              for (int l = 0; l < L; ++l) dots[v * L + l] += double(pr[l]);
            }
          }
        }
      }
    }
    if constexpr (LAST && kDoubleAcc) {
      if (dots)
        for (int v = 0; v < NV; ++v)
          for (int l = 0; l < L; ++l) dots[v * L + l] += dacc[v][l];
    }
  } else {
    const int64_t w = W > 0 ? W : w_rt;
    for (int64_t i = r0; i < r1; ++i) {
      T* __restrict s = scratch;
      std::fill(s, s + w, T(0));
      const int64_t p1 = indptr[i + 1];
      for (int64_t p = indptr[i]; p < p1; ++p) {
        const T a = data[p];
        const T* __restrict x = cur + int64_t(indices[p]) * w;
        for (int64_t c = 0; c < w; ++c) s[c] += a * x[c];
      }
      const T* __restrict ci = cur + i * w;
      T* __restrict ai = acc + i * w;
      if constexpr (FIRST) {
        if constexpr (LAST) {
          for (int64_t c = 0; c < w; ++c) ai[c] = c0 * ci[c] + ck * (s[c] - ci[c]);
        } else {
          T* ni = next + i * w;
          for (int64_t c = 0; c < w; ++c) {
            const T t = s[c] - ci[c];
            ni[c] = t;
            ai[c] = c0 * ci[c] + ck * t;
          }
        }
      } else {
        const T* pi = prev + i * w;
        if constexpr (LAST) {
          for (int64_t c = 0; c < w; ++c) ai[c] += ck * (T(2) * (s[c] - ci[c]) - pi[c]);
        } else {
          T* ni = next + i * w;
          for (int64_t c = 0; c < w; ++c) {
            const T t = T(2) * (s[c] - ci[c]) - pi[c];
            ni[c] = t;
            ai[c] += ck * t;
          }
        }
      }
      if constexpr (LAST) {
        const T* __restrict vi = V + i * w;
        if (q) {
          const T qi = q[i];
          for (int64_t c = 0; c < w; ++c) ai[c] += qi * vi[c];
        }
        if (dots)
          for (int64_t c = 0; c < w; ++c) dots[c] += double(vi[c]) * double(ai[c]);
      }
    }
  }
}

// Degree 0: acc = (c0 + q) o V, dots += V . acc.
template <int W, typename T>
FASTNIPS_CLONES void scale_rows(int64_t r0, int64_t r1, int64_t w_rt, const T* __restrict V, T c0,
                                const T* __restrict q, T* __restrict acc, double* __restrict dots) {
  const int64_t w = W > 0 ? W : w_rt;
  for (int64_t i = r0; i < r1; ++i) {
    const T f = c0 + (q ? q[i] : T(0));
    const T* __restrict vi = V + i * w;
    T* __restrict ai = acc + i * w;
    for (int64_t c = 0; c < w; ++c) ai[c] = f * vi[c];
    if (dots)
      for (int64_t c = 0; c < w; ++c) dots[c] += double(vi[c]) * double(ai[c]);
  }
}

// The CG step after A P:  Y += alpha P;  R -= alpha AP;  z = minv o R;  rr += R.R, rz += R.z (column-wise).
template <int W, typename T>
FASTNIPS_CLONES void update_rows(int64_t r0, int64_t r1, int64_t w_rt, const T* __restrict minv,
                                 const T* __restrict alpha, T* __restrict Yb, T* __restrict R,
                                 const T* __restrict P, const T* __restrict AP, double* __restrict rr,
                                 double* __restrict rz) {
  if constexpr (use_simd<T, W>()) {
    using VT = typename Simd<T>::V;
    constexpr int L = Simd<T>::kLanes, NV = W / L;
    constexpr bool kDoubleAcc = std::is_same_v<T, double>;
    VT al[NV];
    for (int v = 0; v < NV; ++v) al[v] = *reinterpret_cast<const VT*>(alpha + v * L);
    VT arr[kDoubleAcc ? NV : 1] = {}, arz[kDoubleAcc ? NV : 1] = {};
    for (int64_t i = r0; i < r1; ++i) {
      const T m = minv[i];
      VT* yi = reinterpret_cast<VT*>(Yb + i * W);
      VT* ri = reinterpret_cast<VT*>(R + i * W);
      const VT* pi = reinterpret_cast<const VT*>(P + i * W);
      const VT* api = reinterpret_cast<const VT*>(AP + i * W);
      for (int v = 0; v < NV; ++v) {
        yi[v] += al[v] * pi[v];
        const VT r = ri[v] - al[v] * api[v];
        ri[v] = r;
        if constexpr (kDoubleAcc) {
          arr[v] += r * r;
          arz[v] += r * (m * r);
        } else {
          const VT a2 = r * r, b2 = r * (m * r);
          for (int l = 0; l < L; ++l) {
            rr[v * L + l] += double(a2[l]);
            rz[v * L + l] += double(b2[l]);
          }
        }
      }
    }
    if constexpr (kDoubleAcc)
      for (int v = 0; v < NV; ++v)
        for (int l = 0; l < L; ++l) {
          rr[v * L + l] += arr[v][l];
          rz[v * L + l] += arz[v][l];
        }
  } else {
    const int64_t w = W > 0 ? W : w_rt;
    for (int64_t i = r0; i < r1; ++i) {
      const T m = minv[i];
      T* __restrict yi = Yb + i * w;
      T* __restrict ri = R + i * w;
      const T* __restrict pi = P + i * w;
      const T* __restrict api = AP + i * w;
      for (int64_t c = 0; c < w; ++c) {
        yi[c] += alpha[c] * pi[c];
        const T r = ri[c] - alpha[c] * api[c];
        ri[c] = r;
        rr[c] += double(r) * double(r);
        rz[c] += double(r) * double(m * r);
      }
    }
  }
}

// P = zc o (minv o R) + beta o P   (zc = 1 for live columns, 0 for finished ones, whose P becomes 0).
template <int W, typename T>
FASTNIPS_CLONES void direction_rows(int64_t r0, int64_t r1, int64_t w_rt, const T* __restrict minv,
                                    const T* __restrict zc, const T* __restrict beta, const T* __restrict R,
                                    T* __restrict P) {
  if constexpr (use_simd<T, W>()) {
    using VT = typename Simd<T>::V;
    constexpr int L = Simd<T>::kLanes, NV = W / L;
    VT z[NV], b[NV];
    for (int v = 0; v < NV; ++v) {
      z[v] = *reinterpret_cast<const VT*>(zc + v * L);
      b[v] = *reinterpret_cast<const VT*>(beta + v * L);
    }
    for (int64_t i = r0; i < r1; ++i) {
      const T m = minv[i];
      const VT* ri = reinterpret_cast<const VT*>(R + i * W);
      VT* pi = reinterpret_cast<VT*>(P + i * W);
      for (int v = 0; v < NV; ++v) pi[v] = z[v] * (m * ri[v]) + b[v] * pi[v];
    }
  } else {
    const int64_t w = W > 0 ? W : w_rt;
    for (int64_t i = r0; i < r1; ++i) {
      const T m = minv[i];
      const T* __restrict ri = R + i * w;
      T* __restrict pi = P + i * w;
      for (int64_t c = 0; c < w; ++c) pi[c] = zc[c] * (m * ri[c]) + beta[c] * pi[c];
    }
  }
}

// ------------------------------------------------------------------------------------ the operator

// p(L) (+ diag(q)) applied to n x w row-major blocks by the fused Chebyshev recurrence.
template <typename T, typename I>
class PolyOperator {
 public:
  PolyOperator(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data, const double* cheb,
               int64_t degree, int n_threads)
      : n_(n), nnz_(nnz), indptr_(indptr), indices_(indices), data_(data), cheb_(cheb), degree_(degree) {
    threads_ = int(std::max<int64_t>(1, std::min<int64_t>(default_threads(n_threads), std::max<int64_t>(n, 1))));
    one_ = {0, n};
    all_.assign(size_t(threads_) + 1, 0);
    const int64_t total = nnz + n;
    for (int t = 1; t < threads_; ++t) all_[t] = row_at_work(indptr, n, total * t / threads_);
    all_[threads_] = n;
  }

  int64_t n() const { return n_; }
  const std::vector<int64_t>& bounds(int64_t w) const {
    return (nnz_ + n_) * std::max<int64_t>(w, 1) < kParallelWork ? one_ : all_;
  }

  // out = p(L) V (+ q o V when q != nullptr); dots[c] = sum_i V_ic out_ic when dots != nullptr.
  void apply(const T* V, int64_t w, T* out, const T* q, double* dots) {
    const auto& b = bounds(w);
    const int blocks = int(b.size()) - 1;
    if (dots) partials_.reset(blocks, w);
    const T c0 = T(cheb_[0]);
    if (degree_ == 0) {
      for_blocks(b, [&](int t, int64_t r0, int64_t r1) {
        with_width(w, [&](auto tag) {
          constexpr int W = decltype(tag)::value;
          scale_rows<W, T>(r0, r1, w, V, c0, q, out, dots ? partials_.of(t) : nullptr);
        });
      });
    } else {
      const size_t need = size_t(n_) * size_t(w);
      if (ta_.size() < need) ta_.resize(need);
      if (degree_ > 1 && tb_.size() < need) tb_.resize(need);
      if (scratch_.size() < size_t(blocks) * size_t(w)) scratch_.resize(size_t(blocks) * size_t(w));
      const T* prev = nullptr;
      const T* cur = V;
      for (int64_t k = 0; k < degree_; ++k) {
        // T_1 -> ta, T_2 -> tb, then T_{k+1} overwrites T_{k-1} in place (V itself is never written).
        T* next = k == 0 ? ta_.data() : k == 1 ? tb_.data() : const_cast<T*>(prev);
        const int flags = (k == 0 ? kFirst : 0) | (k + 1 == degree_ ? kLast : 0);
        const T ck = T(cheb_[k + 1]);
        for_blocks(b, [&](int t, int64_t r0, int64_t r1) {
          with_width(w, [&](auto tag) {
            constexpr int W = decltype(tag)::value;
            double* dp = (flags & kLast) && dots ? partials_.of(t) : nullptr;
            T* scr = scratch_.data() + size_t(t) * size_t(w);
            switch (flags) {
              case kFirst | kLast:
                stage_rows<W, true, true, T, I>(r0, r1, w, indptr_, indices_, data_, cur, prev, next, out, V,
                                                c0, ck, q, dp, scr);
                break;
              case kFirst:
                stage_rows<W, true, false, T, I>(r0, r1, w, indptr_, indices_, data_, cur, prev, next, out,
                                                 V, c0, ck, q, dp, scr);
                break;
              case kLast:
                stage_rows<W, false, true, T, I>(r0, r1, w, indptr_, indices_, data_, cur, prev, next, out,
                                                 V, c0, ck, q, dp, scr);
                break;
              default:
                stage_rows<W, false, false, T, I>(r0, r1, w, indptr_, indices_, data_, cur, prev, next, out,
                                                  V, c0, ck, q, dp, scr);
            }
          });
        });
        prev = cur;
        cur = next;
      }
    }
    if (dots) partials_.reduce(dots);
  }

 private:
  int64_t n_, nnz_;
  const I* indptr_;
  const I* indices_;
  const T* data_;
  const double* cheb_;
  int64_t degree_;
  int threads_ = 1;
  std::vector<int64_t> one_, all_;
  std::vector<T> ta_, tb_, scratch_;
  Partials partials_;
};

// ------------------------------------------------------------------------- diag(p(L)) for Jacobi

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
  const int64_t m = (K + 1) / 2;  // ceil(K / 2) levels of local vectors
  int64_t work = 0;
  if (count < 256) threads = 1;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : work)
#endif
  {
    std::vector<double> acc(size_t(n), 0.0);
    std::vector<unsigned char> mark(size_t(n), 0);
    std::vector<int64_t> touched;
    std::vector<std::vector<int64_t>> uidx(size_t(m) + 1);
    std::vector<std::vector<double>> uval(size_t(m) + 1);
    std::vector<double> d(size_t(K) + 1);
    auto add = [&](int64_t j, double v) {
      if (!mark[j]) {
        mark[j] = 1;
        touched.push_back(j);
      }
      acc[j] += v;
    };
    auto gather = [&](int64_t level) {
      auto& ix = uidx[level];
      auto& vx = uval[level];
      ix.assign(touched.begin(), touched.end());
      vx.resize(ix.size());
      for (size_t t = 0; t < ix.size(); ++t) {
        vx[t] = acc[ix[t]];
        acc[ix[t]] = 0.0;
        mark[ix[t]] = 0;
      }
      touched.clear();
    };
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 64)
#endif
    for (int64_t t = 0; t < count; ++t) {
      const int64_t i = nodes ? nodes[t] : t;
      uidx[0].assign(1, i);
      uval[0].assign(1, 1.0);
      // u_1 = M e_i = (row i of L, by symmetry column i) - e_i
      for (int64_t p = indptr[i]; p < int64_t(indptr[i + 1]); ++p) add(int64_t(indices[p]), double(data[p]));
      add(i, -1.0);
      d[0] = 1.0;
      d[1] = acc[i];
      gather(1);
      work += int64_t(indptr[i + 1]) - int64_t(indptr[i]) + 1;
      // u_{k+1} = 2 M u_k - u_{k-1}
      for (int64_t k = 1; k < m; ++k) {
        const auto& ix = uidx[k];
        const auto& vx = uval[k];
        for (size_t e = 0; e < ix.size(); ++e) {
          const int64_t j = ix[e];
          const double v2 = 2.0 * vx[e];
          for (int64_t p = indptr[j]; p < int64_t(indptr[j + 1]); ++p) add(int64_t(indices[p]), v2 * double(data[p]));
          add(j, -v2);
          work += int64_t(indptr[j + 1]) - int64_t(indptr[j]) + 1;
        }
        for (size_t e = 0; e < uidx[k - 1].size(); ++e) add(uidx[k - 1][e], -uval[k - 1][e]);
        gather(k + 1);
      }
      // (T_{2a})_ii = 2 u_a.u_a - 1,  (T_{2a-1})_ii = 2 u_a.u_{a-1} - (T_1)_ii
      for (int64_t a = 1; a <= m; ++a) {
        const auto& ix = uidx[a];
        const auto& vx = uval[a];
        if (2 * a <= K) {
          double sum = 0.0;
          for (double v : vx) sum += v * v;
          d[2 * a] = 2.0 * sum - 1.0;
        }
        if (a >= 2 && 2 * a - 1 <= K) {
          for (size_t e = 0; e < ix.size(); ++e) acc[ix[e]] = vx[e];
          double sum = 0.0;
          for (size_t e = 0; e < uidx[a - 1].size(); ++e) sum += acc[uidx[a - 1][e]] * uval[a - 1][e];
          for (size_t e = 0; e < ix.size(); ++e) acc[ix[e]] = 0.0;
          d[2 * a - 1] = 2.0 * sum - d[1];
        }
        work += 2 * int64_t(ix.size());
      }
      double v = 0.0;
      for (int64_t k = 0; k <= K; ++k) v += cheb[k] * d[k];
      out[t] = v;
    }
  }
  return work;
}

// ------------------------------------------------------------------------------------------ the CG

template <typename T, typename I>
class BlockCg {
 public:
  BlockCg(PolyOperator<T, I>& op, const T* q, const T* X, int64_t F, const TikhonovOptions& opt, T* Y,
          int64_t* iterations, const std::vector<T>& minv, const std::vector<double>& bnorm)
      : op_(op), n_(op.n()), q_(q), X_(X), F_(F), opt_(opt), Y_(Y), iters_(iterations), minv_(minv),
        bnorm_(bnorm) {}

  // Runs CG on the columns `cols` (warm: starting from the current Y, else from 0) until each converges
  // on its recursive residual or reaches maxiter; writes the columns of Y.
  Status run(const std::vector<int64_t>& cols, bool warm) {
    Status st;
    int64_t W = padded_width(int64_t(cols.size()));
    slot_.assign(size_t(W), -1);
    std::copy(cols.begin(), cols.end(), slot_.begin());
    const size_t size = size_t(n_) * size_t(W);
    Yb_.assign(size, T(0));
    R_.resize(size);
    AP_.resize(size);
    if (warm) gather_y(W);
    // R = q o X - A Yb
    if (warm) op_.apply(Yb_.data(), W, AP_.data(), q_, nullptr);
    for_blocks(op_.bounds(W), [&](int, int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t s = 0; s < W; ++s) {
          const int64_t c = slot_[s];
          const T b = c >= 0 ? q_[i] * X_[i * F_ + c] : T(0);
          R_[size_t(i * W + s)] = warm ? b - AP_[size_t(i * W + s)] : b;
        }
    });
    thr_.assign(size_t(W), 0.0);
    for (int64_t s = 0; s < W; ++s)
      if (slot_[s] >= 0) thr_[s] = opt_.tol * bnorm_[slot_[s]] * opt_.tol * bnorm_[slot_[s]];
    // rr, rz of the starting residual; the first direction is P = minv o R.
    std::vector<double> rr(W), rz(W), pap(W);
    alpha_.assign(size_t(W), T(0));
    P_.assign(size, T(0));
    AP_.assign(size, T(0));
    update(W, rr.data(), rz.data());  // alpha = 0: computes the dots only
    active_.assign(size_t(W), 0);
    zc_.assign(size_t(W), T(0));
    beta_.assign(size_t(W), T(0));
    for (int64_t s = 0; s < W; ++s) {
      const int64_t c = slot_[s];
      if (c >= 0 && rr[s] > thr_[s] && iters_[c] < opt_.maxiter) {
        active_[s] = 1;
        zc_[s] = T(1);
      }
    }
    rz_ = rz;
    direction(W);
    for (;;) {
      int64_t live = 0;
      for (int64_t s = 0; s < W; ++s) live += active_[s];
      if (live == 0) break;
      if (padded_width(live) < W) W = compact(W, live);
      op_.apply(P_.data(), W, AP_.data(), q_, pap.data());
      for (int64_t s = 0; s < W; ++s) {
        if (!active_[s]) {
          alpha_[s] = T(0);
          continue;
        }
        if (!(pap[s] > 0.0) || !std::isfinite(pap[s])) {
          st.kind = Status::kNotPositiveDefinite;
          st.column = slot_[s];
          st.iteration = iters_[slot_[s]] + 1;
          st.curvature = pap[s];
          return st;
        }
        alpha_[s] = T(rz_[s] / pap[s]);
      }
      update(W, rr.data(), rz.data());
      for (int64_t s = 0; s < W; ++s) {
        if (!active_[s]) continue;
        const int64_t c = slot_[s];
        ++iters_[c];
        if (rr[s] <= thr_[s] || iters_[c] >= opt_.maxiter) {
          active_[s] = 0;
          zc_[s] = T(0);
          beta_[s] = T(0);
        } else {
          beta_[s] = T(rz[s] / rz_[s]);
          rz_[s] = rz[s];
        }
      }
      direction(W);
    }
    scatter_y(W);
    return st;
  }

 private:
  void update(int64_t W, double* rr, double* rz) {
    const auto& b = op_.bounds(W);
    const int blocks = int(b.size()) - 1;
    Partials prr, prz;
    prr.reset(blocks, W);
    prz.reset(blocks, W);
    for_blocks(b, [&](int t, int64_t r0, int64_t r1) {
      with_width(W, [&](auto tag) {
        constexpr int Wc = decltype(tag)::value;
        update_rows<Wc, T>(r0, r1, W, minv_.data(), alpha_.data(), Yb_.data(), R_.data(), P_.data(), AP_.data(),
                           prr.of(t), prz.of(t));
      });
    });
    prr.reduce(rr);
    prz.reduce(rz);
  }

  void direction(int64_t W) {
    for_blocks(op_.bounds(W), [&](int, int64_t r0, int64_t r1) {
      with_width(W, [&](auto tag) {
        constexpr int Wc = decltype(tag)::value;
        direction_rows<Wc, T>(r0, r1, W, minv_.data(), zc_.data(), beta_.data(), R_.data(), P_.data());
      });
    });
  }

  void gather_y(int64_t W) {
    for_blocks(op_.bounds(W), [&](int, int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t s = 0; s < W; ++s)
          if (slot_[s] >= 0) Yb_[size_t(i * W + s)] = Y_[i * F_ + slot_[s]];
    });
  }

  // Writes the block's columns into Y, except those flagged in `skip` (when given).
  void scatter_y(int64_t W, const std::vector<unsigned char>* skip = nullptr) {
    for_blocks(op_.bounds(W), [&](int, int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t s = 0; s < W; ++s)
          if (slot_[s] >= 0 && !(skip && (*skip)[s])) Y_[i * F_ + slot_[s]] = Yb_[size_t(i * W + s)];
    });
  }

  // Writes out the finished columns and packs the live ones into a block of width padded_width(live).
  int64_t compact(int64_t W, int64_t live) {
    scatter_y(W, &active_);
    const int64_t W2 = padded_width(live);
    std::vector<int64_t> keep;
    for (int64_t s = 0; s < W; ++s)
      if (active_[s]) keep.push_back(s);
    const size_t size = size_t(n_) * size_t(W2);
    std::vector<T> Y2(size), R2(size), P2(size);
    for_blocks(op_.bounds(W), [&](int, int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t s2 = 0; s2 < W2; ++s2) {
          const bool real = s2 < int64_t(keep.size());
          const size_t from = real ? size_t(i * W + keep[s2]) : 0;
          Y2[size_t(i * W2 + s2)] = real ? Yb_[from] : T(0);
          R2[size_t(i * W2 + s2)] = real ? R_[from] : T(0);
          P2[size_t(i * W2 + s2)] = real ? P_[from] : T(0);
        }
    });
    Yb_.swap(Y2);
    R_.swap(R2);
    P_.swap(P2);
    AP_.resize(size);
    auto pick = [&](auto& v, auto fill) {
      std::remove_reference_t<decltype(v)> out(size_t(W2), fill);
      for (size_t s2 = 0; s2 < keep.size(); ++s2) out[s2] = v[size_t(keep[s2])];
      v.swap(out);
    };
    pick(slot_, int64_t(-1));
    pick(active_, (unsigned char)0);
    pick(zc_, T(0));
    pick(beta_, T(0));
    pick(alpha_, T(0));
    pick(thr_, 0.0);
    pick(rz_, 0.0);
    return W2;
  }

  PolyOperator<T, I>& op_;
  int64_t n_;
  const T* q_;
  const T* X_;
  int64_t F_;
  const TikhonovOptions& opt_;
  T* Y_;
  int64_t* iters_;
  const std::vector<T>& minv_;
  const std::vector<double>& bnorm_;
  std::vector<int64_t> slot_;
  std::vector<unsigned char> active_;
  std::vector<T> Yb_, R_, P_, AP_, alpha_, beta_, zc_;
  std::vector<double> thr_, rz_;
};

// True relative residuals ||q o x_c - A y_c|| / ||q o x_c|| for the columns `cols` of Y.
template <typename T, typename I>
void true_residuals(PolyOperator<T, I>& op, const T* q, const T* X, const T* Y, int64_t F,
                    const std::vector<int64_t>& cols, const std::vector<double>& bnorm, double* residuals) {
  const int64_t n = op.n();
  const int64_t chunk = 128;
  for (size_t c0 = 0; c0 < cols.size(); c0 += size_t(chunk)) {
    const int64_t cnt = std::min<int64_t>(chunk, int64_t(cols.size() - c0));
    const int64_t W = padded_width(cnt);
    std::vector<T> V(size_t(n) * size_t(W), T(0)), AV(size_t(n) * size_t(W));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t s = 0; s < cnt; ++s) V[size_t(i * W + s)] = Y[i * F + cols[c0 + s]];
    op.apply(V.data(), W, AV.data(), q, nullptr);
    const auto& b = op.bounds(W);
    Partials part;
    part.reset(int(b.size()) - 1, W);
    for_blocks(b, [&](int t, int64_t r0, int64_t r1) {
      double* acc = part.of(t);
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t s = 0; s < cnt; ++s) {
          const double r = double(q[i] * X[i * F + cols[c0 + s]]) - double(AV[size_t(i * W + s)]);
          acc[s] += r * r;
        }
    });
    std::vector<double> rr(static_cast<size_t>(W));
    part.reduce(rr.data());
    for (int64_t s = 0; s < cnt; ++s) {
      const int64_t c = cols[c0 + s];
      residuals[c] = std::sqrt(rr[s]) / bnorm[c];
    }
  }
}

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

}  // namespace

template <typename T, typename I>
TikhonovStatus tikhonov_solve_cg(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data,
                                 const double* cheb, int64_t degree, const T* q, const T* X, int64_t F,
                                 const TikhonovOptions& opt, T* Y, int64_t* iterations, double* residuals,
                                 double* jacobi_diagonal_out, bool* diagonal_exact_out) {
  Status st;
  if (n < 0 || F < 0 || degree < 0 || nnz < 0 || !(opt.tol > 0.0) || opt.maxiter < 0 ||
      int(opt.diagonal) < 0 || int(opt.diagonal) > 2) {
    st.kind = Status::kBadArgument;
    return st;
  }
  st = check_structure(n, nnz, indptr, indices);
  if (!st.ok()) return st;
  std::fill(Y, Y + n * F, T(0));
  std::fill(iterations, iterations + F, int64_t(0));
  std::fill(residuals, residuals + F, 0.0);
  if (diagonal_exact_out) *diagonal_exact_out = true;
  if (n == 0) return st;

  PolyOperator<T, I> op(n, nnz, indptr, indices, data, cheb, degree, opt.n_threads);
  std::vector<double> diag(static_cast<size_t>(n));
  const bool exact = jacobi_diagonal<T, I>(n, nnz, indptr, indices, data, cheb, degree, F, opt, diag.data());
  if (diagonal_exact_out) *diagonal_exact_out = exact;
  if (jacobi_diagonal_out) std::copy(diag.begin(), diag.end(), jacobi_diagonal_out);
  if (F == 0) return st;
  std::vector<T> minv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) minv[i] = T(1.0 / (std::max(diag[i], 0.0) + double(q[i])));

  // ||b_c|| with b = q o X, column-wise.
  std::vector<double> bnorm(static_cast<size_t>(F));
  {
    const auto& b = op.bounds(F);
    Partials part;
    part.reset(int(b.size()) - 1, F);
    for_blocks(b, [&](int t, int64_t r0, int64_t r1) {
      double* acc = part.of(t);
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t c = 0; c < F; ++c) {
          const double v = double(q[i]) * double(X[i * F + c]);
          acc[c] += v * v;
        }
    });
    part.reduce(bnorm.data());
    for (auto& v : bnorm) v = std::sqrt(v);
  }
  std::vector<int64_t> todo;
  for (int64_t c = 0; c < F; ++c)
    if (bnorm[c] > 0.0) todo.push_back(c);  // a zero right-hand side has the solution 0

  BlockCg<T, I> cg(op, q, X, F, opt, Y, iterations, minv, bnorm);
  for (int round = 0; !todo.empty(); ++round) {
    st = cg.run(todo, round > 0);
    if (!st.ok()) return st;
    true_residuals<T, I>(op, q, X, Y, F, todo, bnorm, residuals);
    if (round >= opt.max_restarts) break;
    std::vector<int64_t> again;
    for (int64_t c : todo)
      if (residuals[c] > opt.tol && iterations[c] < opt.maxiter) again.push_back(c);
    todo.swap(again);
  }
  return st;
}

template <typename T, typename I>
TikhonovStatus poly_apply(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data,
                          const double* cheb, int64_t degree, const T* V, int64_t F, T* Y, int n_threads) {
  Status st;
  if (n < 0 || F < 0 || degree < 0 || nnz < 0) {
    st.kind = Status::kBadArgument;
    return st;
  }
  st = check_structure(n, nnz, indptr, indices);
  if (!st.ok() || n == 0 || F == 0) return st;
  PolyOperator<T, I> op(n, nnz, indptr, indices, data, cheb, degree, n_threads);
  op.apply(V, F, Y, nullptr, nullptr);
  return st;
}

#define FASTNIPS_TIKHONOV_INSTANTIATE(T, I)                                                                   \
  template TikhonovStatus tikhonov_solve_cg<T, I>(int64_t, int64_t, const I*, const I*, const T*, const double*, \
                                                  int64_t, const T*, const T*, int64_t, const TikhonovOptions&, \
                                                  T*, int64_t*, double*, double*, bool*);                      \
  template TikhonovStatus poly_apply<T, I>(int64_t, int64_t, const I*, const I*, const T*, const double*,       \
                                           int64_t, const T*, int64_t, T*, int);
FASTNIPS_TIKHONOV_INSTANTIATE(float, int32_t)
FASTNIPS_TIKHONOV_INSTANTIATE(float, int64_t)
FASTNIPS_TIKHONOV_INSTANTIATE(double, int32_t)
FASTNIPS_TIKHONOV_INSTANTIATE(double, int64_t)
#undef FASTNIPS_TIKHONOV_INSTANTIATE

}  // namespace fastnips::graph
