// The polynomial operator of the sparse Tikhonov solver: one fused sparse pass per Chebyshev stage
// (tikhonov_poly.h). Each stage computes s = L T_k row by row and writes T_{k+1} and the running p(L) V in
// the same pass, so the K sparse products stream L once each and never store an intermediate product.
#include "graph/tikhonov_poly.h"

#include <type_traits>

#include "common/simd.h"

namespace fastnips::graph::detail {
namespace {

enum : int { kFirst = 1, kLast = 2 };

// The vector path of stage_rows (W fills whole 32-byte vectors).
template <int W, bool FIRST, bool LAST, typename T, typename I>
FASTNIPS_CLONES void stage_rows_simd(int64_t r0, int64_t r1, const I* __restrict indptr,
                                     const I* __restrict indices, const T* __restrict data, const T* __restrict cur,
                                     const T* prev, T* next, T* __restrict acc, const T* __restrict V, T c0, T ck,
                                     const T* __restrict q, double* __restrict dots) {
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
}

// The scalar path of stage_rows: any width (W == 0: the run-time w_rt), the row sums in `scratch`.
template <int W, bool FIRST, bool LAST, typename T, typename I>
FASTNIPS_CLONES void stage_rows_scalar(int64_t r0, int64_t r1, int64_t w_rt, const I* __restrict indptr,
                                       const I* __restrict indices, const T* __restrict data,
                                       const T* __restrict cur, const T* prev, T* next, T* __restrict acc,
                                       const T* __restrict V, T c0, T ck, const T* __restrict q,
                                       double* __restrict dots, T* __restrict scratch) {
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

// One stage of the Chebyshev recurrence for rows [r0, r1) of an n x W block (row-major), fused with its
// epilogue:  s = L cur;  next = T_{k+1} = (FIRST ? s - cur : 2 (s - cur) - prev);
//            acc = (FIRST ? c0 cur : acc) + ck next;  on the LAST stage also acc += q o V (when q) and
// dots += V . acc (column-wise, when dots). `next` is not written on the last stage; `prev` and `next`
// may be the same buffer (row i of T_{k-1} is read only by row i, before being overwritten).
// W > 0 is a compile-time width (vector path when W fills whole vectors); W == 0 is generic (`scratch`).
template <int W, bool FIRST, bool LAST, typename T, typename I>
void stage_rows(int64_t r0, int64_t r1, int64_t w_rt, const I* indptr, const I* indices, const T* data,
                const T* cur, const T* prev, T* next, T* acc, const T* V, T c0, T ck, const T* q, double* dots,
                T* scratch) {
  if constexpr (use_simd<T, W>())
    stage_rows_simd<W, FIRST, LAST, T, I>(r0, r1, indptr, indices, data, cur, prev, next, acc, V, c0, ck, q, dots);
  else
    stage_rows_scalar<W, FIRST, LAST, T, I>(r0, r1, w_rt, indptr, indices, data, cur, prev, next, acc, V, c0, ck,
                                            q, dots, scratch);
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

}  // namespace

template <typename T, typename I>
void PolyOperator<T, I>::apply(const T* V, int64_t w, T* out, const T* q, double* dots) {
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

template class PolyOperator<float, int32_t>;
template class PolyOperator<float, int64_t>;
template class PolyOperator<double, int32_t>;
template class PolyOperator<double, int64_t>;

}  // namespace fastnips::graph::detail
