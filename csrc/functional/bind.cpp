// Bindings of the functional field: per-curve basis coefficients (functional/coefficients.h).
#include <cmath>

#include "common/bind.h"
#include "functional/coefficients.h"

namespace fastnips {
namespace {

using namespace bind;
namespace ff = functional;

using F64 = py::array_t<double, py::array::c_style>;

void require_f64(const py::array& a, const char* name, int ndim) {
  if (a.ndim() != ndim || !(a.flags() & py::array::c_style))
    throw py::value_error(std::string(name) + " must be a C-contiguous " + std::to_string(ndim) + "-D array");
  if (!is_dtype<double>(a)) throw py::type_error(dtype_error(a, std::string(name) + " must be float64"));
}

// The basis of the call from (kind, params, order, K, a, b); params = the full knot vector (B-spline) or
// [period] (Fourier).
ff::BasisSpec basis_spec(int kind, const py::array& params, int64_t order, int64_t K, double a, double b) {
  require_f64(params, "params", 1);
  if (K < 1 || K > 4096) throw py::value_error("n_basis must lie in [1, 4096], got " + std::to_string(K));
  if (!(std::isfinite(a) && std::isfinite(b) && a < b)) throw py::value_error("the domain must satisfy a < b");
  ff::BasisSpec bs;
  bs.n_basis = int(K);
  bs.a = a;
  bs.b = b;
  if (kind == ff::kBSpline) {
    if (order < 1 || order > 20 || order > K)
      throw py::value_error("order must lie in [1, min(20, n_basis)], got " + std::to_string(order));
    if (params.shape(0) != K + order)
      throw py::value_error("params must hold the n_basis + order = " + std::to_string(K + order) + " knots, got " +
                            std::to_string(params.shape(0)));
    const double* kn = ptr<double>(params);
    for (py::ssize_t i = 1; i < params.shape(0); ++i)
      if (!(kn[i] >= kn[i - 1])) throw py::value_error("the knots must be finite and non-decreasing");
    if (kn[order - 1] != a || kn[K] != b) throw py::value_error("the knots must span the domain [a, b]");
    for (int64_t i = order - 1; i < K; ++i)
      if (!(kn[i + 1] > kn[i])) throw py::value_error("the knots between a and b must be strictly increasing");
    bs.kind = ff::kBSpline;
    bs.order = int(order);
    bs.knots = kn;
  } else if (kind == ff::kFourier) {
    if (K % 2 == 0) throw py::value_error("a Fourier basis needs an odd n_basis, got " + std::to_string(K));
    if (params.shape(0) != 1 || !(ptr<double>(params)[0] > 0.0) || !std::isfinite(ptr<double>(params)[0]))
      throw py::value_error("params must be [period] with a finite period > 0 for a Fourier basis");
    bs.kind = ff::kFourier;
    bs.period = ptr<double>(params)[0];
  } else {
    throw py::value_error("kind must be 0 (B-spline) or 1 (Fourier), got " + std::to_string(kind));
  }
  return bs;
}

// The coefficients (n, L) and the per-curve codes (n,) int8 (0: solved; see functional/coefficients.h).
py::tuple functional_coefficients(const py::array& offsets, const py::array& t, const py::array& x, int kind,
                                  const py::array& params, int64_t order, int64_t K, double a, double b,
                                  const py::array& penalty, const py::array& projection, const py::array& mean,
                                  int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  require_1d_contig(offsets, "offsets");
  if (!is_dtype<int64_t>(offsets)) throw py::type_error(dtype_error(offsets, "offsets must be int64"));
  require_f64(t, "t", 1);
  require_f64(x, "x", 1);
  const ff::BasisSpec bs = basis_spec(kind, params, order, K, a, b);
  const int64_t n = int64_t(offsets.shape(0)) - 1;
  if (n < 0) throw py::value_error("offsets must have at least one entry");
  const int64_t* off = ptr<int64_t>(offsets);
  if (off[0] != 0 || off[n] != int64_t(t.shape(0)) || t.shape(0) != x.shape(0))
    throw py::value_error("offsets must start at 0 and end at len(t) == len(x)");
  for (int64_t i = 0; i < n; ++i)
    if (off[i + 1] < off[i]) throw py::value_error("offsets must be non-decreasing; they decrease at curve " +
                                                   std::to_string(i));
  ff::Projection pr;
  if (projection.size() > 0) {
    require_f64(projection, "projection", 2);
    if (projection.shape(0) != K || projection.shape(1) < 1)
      throw py::value_error("projection must have shape (n_basis, L) with L >= 1");
    require_finite(projection, "projection");
    pr.V = ptr<double>(projection);
    pr.L = int(projection.shape(1));
  } else {
    pr.L = int(K);
  }
  require_f64(penalty, "penalty", 2);
  if (penalty.shape(0) != pr.L || penalty.shape(1) != pr.L)
    throw py::value_error("penalty must have shape (L, L) = (" + std::to_string(pr.L) + ", " + std::to_string(pr.L) +
                          ")");
  require_finite(penalty, "penalty");
  pr.penalty = ptr<double>(penalty);
  if (mean.size() > 0) {
    require_f64(mean, "mean", 1);
    if (mean.shape(0) != K) throw py::value_error("mean must have n_basis entries");
    require_finite(mean, "mean");
    pr.mean = ptr<double>(mean);
  }
  F64 coef({n, int64_t(pr.L)});
  py::array_t<int8_t> codes(n);
  double* c = coef.mutable_data();
  int8_t* cd = codes.mutable_data();
  run_released([&] { return ff::curve_coefficients(n, off, ptr<double>(t), ptr<double>(x), bs, pr, c, cd, n_threads); },
               "functional_coefficients: ");
  return py::make_tuple(coef, codes);
}

}  // namespace

void bind_functional(py::module_& m) {
  m.def("functional_coefficients", &functional_coefficients, py::arg("offsets"), py::arg("t"), py::arg("x"),
        py::arg("kind"), py::arg("params"), py::arg("order"), py::arg("n_basis"), py::arg("a"), py::arg("b"),
        py::arg("penalty"), py::arg("projection"), py::arg("mean"), py::arg("n_threads") = 0,
        "Per-curve penalised least-squares basis coefficients of packed curves; returns (coef (n, L), codes (n,) "
        "int8). See fastnips.functional.curve_coefficients.");
}

}  // namespace fastnips
