// Per-curve basis coefficients of irregularly sampled curves (fastnips.functional.curve_coefficients).
// Plain C++17: no Python.
//
// Curve i is t[offsets[i]:offsets[i+1]], x[...] (packed, CSR-like). For each curve the design rows
// phi_j = V^T b(t_j) (b: the B-spline or Fourier basis at t_j; V the identity when no projection is given) and the
// centred values r_j = x_j - b(t_j)^T mu (mu = 0 when no mean is given) are accumulated into the normal equations
// (Phi^T Phi + P) c = Phi^T r, solved by Cholesky. Curves are independent: OpenMP over curves.
#pragma once
#include <cstdint>

#include "common/status.h"

namespace fastnips::functional {

// Why a curve was refused (written per curve; 0 = solved). The Python layer turns the first into the message.
enum CurveCode : int8_t {
  kCurveOk = 0,
  kCurveEmpty = 1,
  kCurveNotFinite = 2,       // a time or a value is NaN or inf
  kCurveNotIncreasing = 3,   // times unsorted or duplicated
  kCurveOutside = 4,         // a time outside [a, b]
  kCurveTooFew = 5,          // fewer samples than coefficients and no penalty
  kCurveSingular = 6,        // a Cholesky pivot below kPivotTol times the largest diagonal entry
};

// Relative pivot threshold of the singular test (fastnips.functional.reference.PIVOT_TOL).
constexpr double kPivotTol = 1e-12;

enum BasisKind : int { kBSpline = 0, kFourier = 1 };

struct BasisSpec {
  BasisKind kind = kBSpline;
  int n_basis = 0;         // K
  int order = 0;           // B-spline order (degree + 1)
  const double* knots = nullptr;  // B-spline: the full knot vector, K + order entries, end knots repeated
  double period = 1.0;     // Fourier: T
  double a = 0.0, b = 1.0; // the domain
};

struct Projection {
  int L = 0;                     // coefficients per curve
  const double* penalty = nullptr;  // (L, L) row-major, symmetric positive semi-definite
  const double* V = nullptr;     // (K, L) row-major, or null (then L == K)
  const double* mean = nullptr;  // (K,), or null
};

// coef: (n, L) row-major output; codes: (n,) output. Returns ok, or interrupted (common/interrupt.h).
Status curve_coefficients(int64_t n, const int64_t* offsets, const double* t, const double* x, const BasisSpec& basis,
                          const Projection& proj, double* coef, int8_t* codes, int n_threads);

}  // namespace fastnips::functional
