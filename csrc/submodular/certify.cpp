// The exhaustive certificate over a table of 2^n values; see certify.h.
#include "submodular/certify.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "common/interrupt.h"
#include "common/threads.h"

namespace fastnips::submodular {
namespace {

// the full mask of compressed index t (n - 1 bits) with a zero inserted at bit a
inline uint64_t expand(uint64_t t, int a) {
  const uint64_t low = (uint64_t(1) << a) - 1;
  return ((t & ~low) << 1) | (t & low);
}

struct PerElement {
  int64_t mono = 0, dr = 0;
  Violation first_mono, first_dr;
  double ratio = 1.0;
};

// element a's checks; d and arg are 2^(n-1) scratch entries
void check_element(const double* table, int n, int a, double alpha, double tol, std::vector<double>& d,
                   std::vector<uint32_t>& arg, PerElement& out) {
  const uint64_t half = uint64_t(1) << (n - 1), bit_a = uint64_t(1) << a;
  for (uint64_t t = 0; t < half; ++t) {
    const uint64_t s = expand(t, a);
    d[t] = table[s | bit_a] - table[s];
    arg[t] = uint32_t(t);
    if (d[t] < -tol) {
      if (out.mono++ == 0) out.first_mono = {a, s, 0, d[t], 0.0};
    }
  }
  std::vector<double> m(d);  // m[t] = min over submasks (value, then mask)
  for (int j = 0; j < n - 1; ++j) {
    const uint64_t bj = uint64_t(1) << j;
    for (uint64_t t = 0; t < half; ++t) {
      if (!(t & bj)) continue;
      const uint64_t u = t ^ bj;
      if (m[u] < m[t] || (m[u] == m[t] && arg[u] < arg[t])) {
        m[t] = m[u];
        arg[t] = arg[u];
      }
    }
    if (interrupt_requested()) return;
  }
  for (uint64_t t = 0; t < half; ++t) {
    if (m[t] < alpha * d[t] - tol) {
      if (out.dr++ == 0) out.first_dr = {a, expand(arg[t], a), expand(t, a), m[t], d[t]};
    }
    if (d[t] > tol) out.ratio = std::min(out.ratio, m[t] / d[t]);
  }
}

}  // namespace

Status certify_table(const double* table, int n, double alpha, double tol, int n_threads, Certificate& out) {
  if (n < 1 || n > kMaxCertifyN)
    return Status::value_error("n must lie in [1, " + std::to_string(kMaxCertifyN) + "], got " + std::to_string(n));
  std::vector<PerElement> per(n);
  const InterruptShare share;
  const int nt = thread_count(n_threads, int64_t(n) << n, 1 << 16);
#pragma omp parallel num_threads(nt)
  {
    const InterruptJoin join(share);
    std::vector<double> d(size_t(1) << (n - 1));
    std::vector<uint32_t> arg(d.size());
#pragma omp for schedule(dynamic, 1)
    for (int a = 0; a < n; ++a)
      if (!interrupt_requested()) check_element(table, n, a, alpha, tol, d, arg, per[a]);
  }
  if (interrupt_requested()) return Status::interrupted();
  out = Certificate{};
  for (int a = 0; a < n; ++a) {
    const PerElement& p = per[a];
    if (p.mono && out.monotone_violations == 0) out.first_monotone = p.first_mono;
    if (p.dr && out.dr_violations == 0) out.first_dr = p.first_dr;
    out.monotone_violations += p.mono;
    out.dr_violations += p.dr;
    out.alpha_observed = std::min(out.alpha_observed, p.ratio);
  }
  return Status{};
}

}  // namespace fastnips::submodular
