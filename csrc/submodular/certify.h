// The exhaustive certificate of fastnips.submodular.certify (backend "cpp"): monotonicity and (alpha-)
// diminishing returns of a set function given as its table over all 2^n subsets. Plain C++17 with OpenMP.
//
// table[mask] = f(S) for the subset S with bit i of mask set iff i in S. For every element a write
// d_a(S) = f(S + a) - f(S) for the 2^(n-1) subsets S not containing a. The certificate checks
//
//   monotone:            d_a(S) >= -tol                          for all a, S not containing a,
//   alpha-DR:            d_a(S) >= alpha d_a(T) - tol            for all a, S subset of T not containing a.
//
// The second ranges over 3^(n-1) pairs per element; it equals min_{S subset T} d_a(S) >= alpha d_a(T) - tol
// for every T, and that subset minimum is a sum-over-subsets (zeta) transform with min in place of +: n - 1
// passes over 2^(n-1) values per element, O(2^n n^2) in all, elements in parallel. Ties of the minimum go to
// the smaller mask, so the reported S is the smallest-mask argmin (the reference enumerates the same way).
// A violation is one (a, T) (the pair fails for some S); the first is the one of the smallest a, then the
// smallest T. alpha_observed = min over (a, T) with d_a(T) > tol of min_S d_a(S) / d_a(T) (1 when none).
#pragma once
#include <cstdint>

#include "common/status.h"

namespace fastnips::submodular {

struct Violation {
  int64_t a = -1;       // -1: none
  uint64_t S = 0, T = 0;
  double dS = 0.0, dT = 0.0;
};

struct Certificate {
  int64_t monotone_violations = 0, dr_violations = 0;
  Violation first_monotone, first_dr;  // first_monotone uses S and dS only
  double alpha_observed = 1.0;
};

constexpr int kMaxCertifyN = 24;

// table: 2^n finite doubles (the caller checks); 1 <= n <= kMaxCertifyN.
Status certify_table(const double* table, int n, double alpha, double tol, int n_threads, Certificate& out);

}  // namespace fastnips::submodular
