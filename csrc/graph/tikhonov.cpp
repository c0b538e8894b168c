// The sparse Tikhonov solve (tikhonov.h): block Jacobi-preconditioned CG over the still-active columns, on
// the polynomial operator of tikhonov_poly.h and the preconditioner of tikhonov_diagonal.h, with restarts
// from the true residual; and poly_apply, the operator alone.
#include "graph/tikhonov.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "common/csr.h"
#include "common/interrupt.h"
#include "common/simd.h"
#include "graph/tikhonov_blocks.h"
#include "graph/tikhonov_diagonal.h"
#include "graph/tikhonov_poly.h"

namespace fastnips::graph {
namespace {

using namespace detail;

// CG met p^T A p <= 0 (or not finite): A = p(L) + diag(q) is not SPD, so the input broke the solver's premise.
Status not_positive_definite(double curvature, int64_t column, int64_t iteration) {
  std::ostringstream os;
  os << "p(L) + diag(q) is not positive definite: conjugate gradients met p^T A p = " << curvature
     << " <= 0 in column " << column << " at iteration " << iteration
     << "; L must be symmetric with its spectrum in [0, 2] (a normalized Laplacian) and p >= 0 on [0, 2]";
  return Status::value_error(os.str());
}

// The checks both entry points share: their sizes and options (sizes_ok), then the structure of L, before
// any work.
template <typename I>
Status check_operator(bool sizes_ok, int64_t n, int64_t nnz, const I* indptr, const I* indices) {
  if (!sizes_ok) return Status::value_error("tikhonov_solve_cg: a size or option is out of range");
  return csr_error(check_csr(n, n, nnz, indptr, indices), "L: ");
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

// ------------------------------------------------------------------------------------------ the CG

template <typename T, typename I>
class BlockCg {
 public:
  // Column c of the system is solved in the units of its scale: b_c / scale[c] (scale: a power of two near
  // max |b_c|, so every square and dot product stays far from under- and overflow; exact in binary).
  BlockCg(PolyOperator<T, I>& op, const T* q, const T* X, int64_t F, const TikhonovOptions& opt, T* Y,
          int64_t* iterations, const std::vector<T>& minv, const std::vector<double>& bnorm,
          const std::vector<double>& scale)
      : op_(op), n_(op.n()), q_(q), X_(X), F_(F), opt_(opt), Y_(Y), iters_(iterations), minv_(minv),
        bnorm_(bnorm), scale_(scale) {}

  // Runs CG on the columns `cols` (warm: starting from the current Y, else from 0) until each converges
  // on its recursive residual or reaches maxiter; writes the columns of Y. Polls for interrupts once per
  // iteration (Status::interrupted(), Y partly written: the caller discards it).
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
          const T b = c >= 0 ? T(double(q_[i]) * double(X_[i * F_ + c]) / scale_[c]) : T(0);
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
      if (interrupt_requested()) return Status::interrupted();
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
        if (!(pap[s] > 0.0) || !std::isfinite(pap[s]))
          return not_positive_definite(pap[s], slot_[s], iters_[slot_[s]] + 1);
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
          if (slot_[s] >= 0) Yb_[size_t(i * W + s)] = T(double(Y_[i * F_ + slot_[s]]) / scale_[slot_[s]]);
    });
  }

  // Writes the block's columns into Y, except those flagged in `skip` (when given).
  void scatter_y(int64_t W, const std::vector<unsigned char>* skip = nullptr) {
    for_blocks(op_.bounds(W), [&](int, int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t s = 0; s < W; ++s)
          if (slot_[s] >= 0 && !(skip && (*skip)[s]))
            Y_[i * F_ + slot_[s]] = T(double(Yb_[size_t(i * W + s)]) * scale_[slot_[s]]);
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
  const std::vector<double>& scale_;
  std::vector<int64_t> slot_;
  std::vector<unsigned char> active_;
  std::vector<T> Yb_, R_, P_, AP_, alpha_, beta_, zc_;
  std::vector<double> thr_, rz_;
};

// out[c] = sum_i term(i, c)^2 for c < count, over the row blocks `bounds` (out holds `width` >= count
// entries; those past count are 0). Summed per block and then in block order: deterministic for a fixed
// thread count.
template <class Term>
void column_sumsq(const std::vector<int64_t>& bounds, int64_t width, int64_t count, double* out, Term&& term) {
  Partials part;
  part.reset(int(bounds.size()) - 1, width);
  for_blocks(bounds, [&](int t, int64_t r0, int64_t r1) {
    double* acc = part.of(t);
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t c = 0; c < count; ++c) {
        const double v = term(i, c);
        acc[c] += v * v;
      }
  });
  part.reduce(out);
}

// True relative residuals ||q o x_c - A y_c|| / ||q o x_c|| for the columns `cols` of Y, in the units of
// scale[c] (bnorm: ||q o x_c|| / scale[c]).
template <typename T, typename I>
void true_residuals(PolyOperator<T, I>& op, const T* q, const T* X, const T* Y, int64_t F,
                    const std::vector<int64_t>& cols, const std::vector<double>& bnorm,
                    const std::vector<double>& scale, double* residuals) {
  const int64_t n = op.n();
  const int64_t chunk = 128;
  for (size_t c0 = 0; c0 < cols.size(); c0 += size_t(chunk)) {
    const int64_t cnt = std::min<int64_t>(chunk, int64_t(cols.size() - c0));
    const int64_t W = padded_width(cnt);
    std::vector<T> V(size_t(n) * size_t(W), T(0)), AV(size_t(n) * size_t(W));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t s = 0; s < cnt; ++s) V[size_t(i * W + s)] = T(double(Y[i * F + cols[c0 + s]]) / scale[cols[c0 + s]]);
    op.apply(V.data(), W, AV.data(), q, nullptr);
    std::vector<double> rr(static_cast<size_t>(W));
    column_sumsq(op.bounds(W), W, cnt, rr.data(), [&](int64_t i, int64_t s) {
      const int64_t c = cols[c0 + s];
      return double(q[i]) * double(X[i * F + c]) / scale[c] - double(AV[size_t(i * W + s)]);
    });
    for (int64_t s = 0; s < cnt; ++s) {
      const int64_t c = cols[c0 + s];
      residuals[c] = std::sqrt(rr[s]) / bnorm[c];
    }
  }
}

// scale[c] = the power of two 2^e with 2^e <= max_i |q_i X_ic| < 2^(e+1) (1 for a zero column): dividing
// column c of b = q o X by it is exact and brings its largest entry into [1, 2), so that the squares of CG
// (norms, dot products) neither underflow for a tiny b (1e-170 e_0 squared is 0 in double) nor overflow for
// a huge one. A ValueError when q o X is not finite (NaN or inf in q or X, or an overflowing product).
template <typename T>
Status column_scales(int64_t n, int64_t F, const T* q, const T* X, double* scale) {
  std::vector<double> big(static_cast<size_t>(F), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < F; ++c) {
      const double b = std::abs(double(q[i]) * double(X[i * F + c]));
      if (!(b <= std::numeric_limits<double>::max())) {
        std::ostringstream os;
        os << "tikhonov_solve_cg: q * X is not finite at row " << i << ", column " << c << " (q = " << q[i]
           << ", X = " << X[i * F + c] << ")";
        return Status::value_error(os.str());
      }
      big[c] = std::max(big[c], b);
    }
  for (int64_t c = 0; c < F; ++c) scale[c] = big[c] > 0.0 ? std::ldexp(1.0, std::ilogb(big[c])) : 1.0;
  return {};
}

}  // namespace

template <typename T, typename I>
Status tikhonov_solve_cg(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data,
                         const double* cheb, int64_t degree, const T* q, const T* X, int64_t F,
                         const TikhonovOptions& opt, T* Y, int64_t* iterations, double* residuals,
                         double* jacobi_diagonal_out, bool* diagonal_exact_out) {
  const bool sizes_ok = n >= 0 && F >= 0 && degree >= 0 && nnz >= 0 && opt.tol > 0.0 && opt.maxiter >= 0 &&
                        int(opt.diagonal) >= 0 && int(opt.diagonal) <= 2;
  Status st = check_operator(sizes_ok, n, nnz, indptr, indices);
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

  // Column c is solved for b_c / scale[c] (scale: column_scales); bnorm = ||b_c|| / scale[c], b = q o X.
  std::vector<double> scale(static_cast<size_t>(F));
  st = column_scales(n, F, q, X, scale.data());
  if (!st.ok()) return st;
  std::vector<double> bnorm(static_cast<size_t>(F));
  column_sumsq(op.bounds(F), F, F, bnorm.data(),
               [&](int64_t i, int64_t c) { return double(q[i]) * double(X[i * F + c]) / scale[c]; });
  for (auto& v : bnorm) v = std::sqrt(v);
  std::vector<int64_t> todo;
  for (int64_t c = 0; c < F; ++c)
    if (bnorm[c] > 0.0) todo.push_back(c);  // a zero right-hand side has the solution 0

  BlockCg<T, I> cg(op, q, X, F, opt, Y, iterations, minv, bnorm, scale);
  for (int round = 0; !todo.empty(); ++round) {
    st = cg.run(todo, round > 0);
    if (!st.ok()) return st;
    if (interrupt_requested()) return Status::interrupted();
    true_residuals<T, I>(op, q, X, Y, F, todo, bnorm, scale, residuals);
    if (round >= opt.max_restarts) break;
    std::vector<int64_t> again;
    for (int64_t c : todo)
      if (residuals[c] > opt.tol && iterations[c] < opt.maxiter) again.push_back(c);
    todo.swap(again);
  }
  return st;
}

template <typename T, typename I>
Status poly_apply(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data, const double* cheb,
                  int64_t degree, const T* V, int64_t F, T* Y, int n_threads) {
  Status st = check_operator(n >= 0 && F >= 0 && degree >= 0 && nnz >= 0, n, nnz, indptr, indices);
  if (!st.ok() || n == 0 || F == 0) return st;
  PolyOperator<T, I> op(n, nnz, indptr, indices, data, cheb, degree, n_threads);
  op.apply(V, F, Y, nullptr, nullptr);
  return st;
}

#define FASTNIPS_TIKHONOV_INSTANTIATE(T, I)                                                                     \
  template Status tikhonov_solve_cg<T, I>(int64_t, int64_t, const I*, const I*, const T*, const double*, int64_t, \
                                          const T*, const T*, int64_t, const TikhonovOptions&, T*, int64_t*,      \
                                          double*, double*, bool*);                                               \
  template Status poly_apply<T, I>(int64_t, int64_t, const I*, const I*, const T*, const double*, int64_t,        \
                                   const T*, int64_t, T*, int);
FASTNIPS_TIKHONOV_INSTANTIATE(float, int32_t)
FASTNIPS_TIKHONOV_INSTANTIATE(float, int64_t)
FASTNIPS_TIKHONOV_INSTANTIATE(double, int32_t)
FASTNIPS_TIKHONOV_INSTANTIATE(double, int64_t)
#undef FASTNIPS_TIKHONOV_INSTANTIATE

}  // namespace fastnips::graph