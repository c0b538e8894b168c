#include "functional/coefficients.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "common/interrupt.h"
#include "common/threads.h"

namespace fastnips::functional {
namespace {

constexpr double kPi = 3.14159265358979323846;

// The nonzero basis values at one time: b_k(t) for k in [first, first + count).
struct Row {
  int first = 0;
  int count = 0;
};

// One thread's buffers, sized once per call.
struct Workspace {
  std::vector<double> A, rhs, vals, phi, left, right;
  Workspace(int K, int L, int order)
      : A(size_t(L) * L), rhs(L), vals(std::max(K, order)), phi(L), left(order + 1), right(order + 1) {}
};

// Cox-de Boor (The NURBS Book, A2.2): the `order` nonzero B-splines at t, in vals[0..order); `mu` is the knot
// interval (knots[mu] <= t < knots[mu + 1], clamped to [order - 1, K - 1]), advanced from its previous value
// since the times of a curve increase. The knot spans of the denominators do not depend on t: their inverses
// come from `inv` (inverse_spans), so a sample costs no division.
Row bspline_row(const BasisSpec& bs, const double* inv, double t, int& mu, Workspace& w) {
  const int p = bs.order - 1, K = bs.n_basis, k = bs.order;
  const double* kn = bs.knots;
  if (mu < p) mu = p;
  while (mu < K - 1 && t >= kn[mu + 1]) ++mu;
  const double* iv = inv + size_t(mu) * k * k;
  double* N = w.vals.data();
  N[0] = 1.0;
  for (int j = 1; j <= p; ++j) {
    w.left[j] = t - kn[mu + 1 - j];
    w.right[j] = kn[mu + j] - t;
    double saved = 0.0;
    for (int r = 0; r < j; ++r) {
      const double tmp = N[r] * iv[j * k + r];
      N[r] = saved + w.right[r + 1] * tmp;
      saved = w.left[j - r] * tmp;
    }
    N[j] = saved;
  }
  return {mu - p, p + 1};
}

// inv[(mu k + j) k + r] = 1 / (knots[mu + r + 1] - knots[mu + r + 1 - j]) for the intervals mu in [p, K - 1],
// j in [1, p], r < j: the denominators right[r + 1] + left[j - r] of bspline_row (positive for clamped knots).
std::vector<double> inverse_spans(const BasisSpec& bs) {
  const int k = bs.order, p = k - 1, K = bs.n_basis;
  std::vector<double> inv(size_t(K) * k * k, 0.0);
  for (int mu = p; mu < K; ++mu)
    for (int j = 1; j <= p; ++j)
      for (int r = 0; r < j; ++r)
        inv[(size_t(mu) * k + j) * k + r] = 1.0 / (bs.knots[mu + r + 1] - bs.knots[mu + r + 1 - j]);
  return inv;
}

// 1/sqrt(T), then sin(n w t), cos(n w t) / sqrt(T/2) for n = 1..(K-1)/2 (angle-addition recurrence).
Row fourier_row(const BasisSpec& bs, double t, Workspace& w) {
  const double T = bs.period, omega = 2.0 * kPi / T, s = 1.0 / std::sqrt(T / 2.0);
  double* v = w.vals.data();
  v[0] = 1.0 / std::sqrt(T);
  const double s1 = std::sin(omega * t), c1 = std::cos(omega * t);
  double sn = s1, cn = c1;
  for (int k = 1; k < bs.n_basis; k += 2) {
    v[k] = sn * s;
    v[k + 1] = cn * s;
    const double sn1 = sn * c1 + cn * s1, cn1 = cn * c1 - sn * s1;
    sn = sn1;
    cn = cn1;
  }
  return {0, bs.n_basis};
}

// Cholesky of the (L, L) matrix A (lower triangle used) in place, then the solve of A c = rhs into c.
// False when a pivot is at most kPivotTol times the largest diagonal entry.
bool cholesky_solve(int L, double* A, const double* rhs, double* c) {
  double scale = 0.0;
  for (int k = 0; k < L; ++k) scale = std::max(scale, A[size_t(k) * L + k]);
  if (!(scale > 0.0)) return false;
  for (int j = 0; j < L; ++j) {
    double* Aj = A + size_t(j) * L;
    double d = Aj[j];
    for (int k = 0; k < j; ++k) d -= Aj[k] * Aj[k];
    if (!(d > kPivotTol * scale)) return false;
    d = std::sqrt(d);
    Aj[j] = d;
    for (int i = j + 1; i < L; ++i) {
      double* Ai = A + size_t(i) * L;
      double s = Ai[j];
      for (int k = 0; k < j; ++k) s -= Ai[k] * Aj[k];
      Ai[j] = s / d;
    }
  }
  for (int i = 0; i < L; ++i) {  // L y = rhs
    const double* Ai = A + size_t(i) * L;
    double s = rhs[i];
    for (int k = 0; k < i; ++k) s -= Ai[k] * c[k];
    c[i] = s / Ai[i];
  }
  for (int i = L - 1; i >= 0; --i) {  // L^T c = y
    double s = c[i];
    for (int k = i + 1; k < L; ++k) s -= A[size_t(k) * L + i] * c[k];
    c[i] = s / A[size_t(i) * L + i];
  }
  return true;
}

// The samples of one curve checked in one pass: the first CurveCode that applies (0 when none).
int8_t check_samples(int64_t m, const double* t, const double* x, double a, double b) {
  if (m == 0) return kCurveEmpty;
  for (int64_t j = 0; j < m; ++j)
    if (!std::isfinite(t[j]) || !std::isfinite(x[j])) return kCurveNotFinite;
  for (int64_t j = 1; j < m; ++j)
    if (!(t[j] > t[j - 1])) return kCurveNotIncreasing;
  for (int64_t j = 0; j < m; ++j)
    if (t[j] < a || t[j] > b) return kCurveOutside;
  return kCurveOk;
}

// Accumulates the normal equations of one curve into w.A (lower triangle) and w.rhs.
void accumulate(int64_t m, const double* t, const double* x, const BasisSpec& bs, const double* inv,
                const Projection& pr, Workspace& w) {
  const int L = pr.L;
  int mu = 0;
  for (int64_t j = 0; j < m; ++j) {
    const Row row = bs.kind == kBSpline ? bspline_row(bs, inv, t[j], mu, w) : fourier_row(bs, t[j], w);
    const double* v = w.vals.data();
    double r = x[j];
    if (pr.mean)
      for (int s = 0; s < row.count; ++s) r -= v[s] * pr.mean[row.first + s];
    if (pr.V == nullptr) {  // the rows are the (sparse) basis values themselves
      for (int s = 0; s < row.count; ++s) {
        const int k = row.first + s;
        double* Ak = w.A.data() + size_t(k) * L + row.first;
        for (int u = 0; u <= s; ++u) Ak[u] += v[s] * v[u];
        w.rhs[k] += v[s] * r;
      }
      continue;
    }
    std::fill(w.phi.begin(), w.phi.end(), 0.0);
    for (int s = 0; s < row.count; ++s) {
      const double* Vk = pr.V + size_t(row.first + s) * L;
      for (int l = 0; l < L; ++l) w.phi[l] += v[s] * Vk[l];
    }
    for (int k = 0; k < L; ++k) {
      double* Ak = w.A.data() + size_t(k) * L;
      for (int u = 0; u <= k; ++u) Ak[u] += w.phi[k] * w.phi[u];
      w.rhs[k] += w.phi[k] * r;
    }
  }
}

int8_t solve_curve(int64_t m, const double* t, const double* x, const BasisSpec& bs, const double* inv,
                   const Projection& pr, bool penalised, Workspace& w, double* c) {
  const int8_t code = check_samples(m, t, x, bs.a, bs.b);
  if (code != kCurveOk) return code;
  const int L = pr.L;
  if (!penalised && m < L) return kCurveTooFew;
  std::copy(pr.penalty, pr.penalty + size_t(L) * L, w.A.begin());
  std::fill(w.rhs.begin(), w.rhs.end(), 0.0);
  accumulate(m, t, x, bs, inv, pr, w);
  return cholesky_solve(L, w.A.data(), w.rhs.data(), c) ? kCurveOk : kCurveSingular;
}

}  // namespace

Status curve_coefficients(int64_t n, const int64_t* offsets, const double* t, const double* x, const BasisSpec& basis,
                          const Projection& proj, double* coef, int8_t* codes, int n_threads) {
  const int L = proj.L;
  bool penalised = false;
  for (int64_t k = 0; k < int64_t(L) * L; ++k) penalised = penalised || proj.penalty[k] != 0.0;
  // about (m order^2 + L^3 / 3) flops per curve: below ~2^12 curves one thread does it all
  const int threads = thread_count(n_threads, n, int64_t(1) << 12);
  const std::vector<double> inv = basis.kind == kBSpline ? inverse_spans(basis) : std::vector<double>();
  const InterruptShare share;
  std::atomic<bool> stop{false};
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const InterruptJoin join(share);
    Workspace w(basis.n_basis, L, std::max(basis.order, 1));
#pragma omp for schedule(dynamic, 1024)
    for (int64_t i = 0; i < n; ++i) {
      if (stop.load(std::memory_order_relaxed)) continue;
      if ((i & 1023) == 0 && interrupt_requested()) {
        stop.store(true, std::memory_order_relaxed);
        continue;
      }
      const int64_t lo = offsets[i], m = offsets[i + 1] - lo;
      double* c = coef + size_t(i) * L;
      codes[i] = solve_curve(m, t + lo, x + lo, basis, inv.data(), proj, penalised, w, c);
      if (codes[i] != kCurveOk) std::fill(c, c + L, 0.0);
    }
  }
  return stop.load() ? Status::interrupted() : Status{};
}

}  // namespace fastnips::functional
