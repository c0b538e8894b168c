// Bindings of the submodular field: the greedy maximisers (greedy.h) and the exhaustive certificate
// (certify.h). Values (signs, finiteness) are checked by fastnips.submodular before the call; here shapes,
// dtypes and the budget.
#include "common/bind.h"
#include "submodular/certify.h"
#include "submodular/greedy.h"

namespace fastnips {
namespace {

using namespace bind;
namespace fs = submodular;
using F64 = py::array_t<double, py::array::c_style>;

const double* f64(const py::array& a, const std::string& name, std::initializer_list<int64_t> shape) {
  if (!is_dtype<double>(a) || !(a.flags() & py::array::c_style))
    throw py::type_error(name + " must be a C-contiguous float64 array, got " + dtype_str(a));
  if (a.ndim() != py::ssize_t(shape.size())) throw py::value_error(name + " has the wrong number of dimensions");
  int i = 0;
  for (int64_t s : shape) {
    if (s >= 0 && a.shape(i) != s)
      throw py::value_error(name + " has length " + std::to_string(a.shape(i)) + " along axis " + std::to_string(i) +
                            ", expected " + std::to_string(s));
    ++i;
  }
  return ptr<double>(a);
}

fs::Budget budget(int64_t n, int64_t k, const std::optional<py::array>& costs, double total) {
  fs::Budget b;
  b.k = k;
  if (k < -1) throw py::value_error("k must be >= 0 (or -1: no cardinality limit), got " + std::to_string(k));
  if (costs) {
    b.costs = f64(*costs, "costs", {n});
    if (!(total >= 0.0)) throw py::value_error("budget must be >= 0 with costs");
    b.budget = total;
  } else if (k < 0) {
    throw py::value_error("give k, or costs and a budget");
  }
  return b;
}

py::tuple result(const fs::GreedyResult& r) {
  return py::make_tuple(to_numpy(r.selected), to_numpy(r.gains), r.evaluations, r.singleton);
}

py::tuple greedy_pairwise(const py::array& m, const py::array& U, const py::array& scale, const py::array& a,
                          const py::array& beta, const std::vector<py::array>& Ws, const std::vector<py::array>& bs,
                          const py::array& v, int64_t k, std::optional<py::array> costs, double total, bool lazy,
                          int64_t n_threads) {
  const int nt = checked_threads(n_threads);
  fs::PairwiseSpec p;
  if (m.ndim() != 2 || U.ndim() != 3 || a.ndim() != 2)
    throw py::value_error("m must be (n, C), U (C, n, r), a and beta (C, R)");
  p.n = m.shape(0), p.C = m.shape(1), p.r = U.shape(2), p.R = a.shape(1);
  p.m = f64(m, "m", {p.n, p.C});
  p.U = f64(U, "U", {p.C, p.n, p.r});
  p.scale = f64(scale, "scale", {p.C});
  p.a = f64(a, "a", {p.C, p.R});
  p.beta = f64(beta, "beta", {p.C, p.R});
  if (Ws.size() != bs.size()) throw py::value_error("Ws and bs must have the same length");
  p.dims.push_back(p.C);
  for (size_t l = 0; l < Ws.size(); ++l) {
    if (Ws[l].ndim() != 2) throw py::value_error("each W must be 2-D");
    const int64_t out = Ws[l].shape(0);
    p.W.push_back(f64(Ws[l], "W[" + std::to_string(l) + "]", {out, p.dims.back()}));
    p.b.push_back(f64(bs[l], "b[" + std::to_string(l) + "]", {out}));
    p.dims.push_back(out);
  }
  p.v = f64(v, "v", {p.dims.back()});
  const fs::Budget b = budget(p.n, k, costs, total);
  fs::GreedyResult r;
  run_released([&] { return fs::greedy_pairwise(p, b, lazy, nt, r); }, "greedy: ");
  return result(r);
}

py::tuple greedy_feature(const py::array& X, const py::array& w, int phi, int64_t k, std::optional<py::array> costs,
                         double total, bool lazy, int64_t n_threads) {
  const int nt = checked_threads(n_threads);
  if (X.ndim() != 2) throw py::value_error("X must be (n, D)");
  if (phi < 0 || phi > 2) throw py::value_error("phi must be 0 (sqrt), 1 (log) or 2 (sigmoid)");
  fs::FeatureSpec p;
  p.n = X.shape(0), p.D = X.shape(1);
  p.X = f64(X, "X", {p.n, p.D});
  p.w = f64(w, "w", {p.D});
  p.phi = fs::Concave(phi);
  const fs::Budget b = budget(p.n, k, costs, total);
  fs::GreedyResult r;
  run_released([&] { return fs::greedy_feature(p, b, lazy, nt, r); }, "greedy: ");
  return result(r);
}

py::tuple greedy_facility(const py::array& K, int64_t k, std::optional<py::array> costs, double total, bool lazy,
                          int64_t n_threads) {
  const int nt = checked_threads(n_threads);
  if (K.ndim() != 2) throw py::value_error("K must be (n, n_ground)");
  fs::FacilitySpec p;
  p.n = K.shape(0), p.G = K.shape(1);
  p.K = f64(K, "K", {p.n, p.G});
  const fs::Budget b = budget(p.n, k, costs, total);
  fs::GreedyResult r;
  run_released([&] { return fs::greedy_facility(p, b, lazy, nt, r); }, "greedy: ");
  return result(r);
}

py::dict violation(const fs::Violation& v) {
  py::dict d;
  d["a"] = v.a, d["S"] = v.S, d["T"] = v.T, d["dS"] = v.dS, d["dT"] = v.dT;
  return d;
}

py::dict certify(const py::array& table, double alpha, double tol, int64_t n_threads) {
  const int nt = checked_threads(n_threads);
  if (table.ndim() != 1) throw py::value_error("table must be 1-D");
  const int64_t size = table.shape(0);
  int n = 0;
  while (n <= fs::kMaxCertifyN && (int64_t(1) << n) < size) ++n;
  if (n < 1 || n > fs::kMaxCertifyN || (int64_t(1) << n) != size)
    throw py::value_error("table must hold 2^n values with 1 <= n <= " + std::to_string(fs::kMaxCertifyN) +
                          ", got " + std::to_string(size));
  const double* t = f64(table, "table", {size});
  fs::Certificate c;
  run_released([&] { return fs::certify_table(t, n, alpha, tol, nt, c); }, "certify: ");
  py::dict out;
  out["n"] = n;
  out["monotone_violations"] = c.monotone_violations;
  out["dr_violations"] = c.dr_violations;
  out["first_monotone"] = violation(c.first_monotone);
  out["first_dr"] = violation(c.first_dr);
  out["alpha_observed"] = c.alpha_observed;
  return out;
}

}  // namespace

void bind_submodular(py::module_& m) {
  m.def("submodular_greedy_pairwise", &greedy_pairwise, py::arg("m"), py::arg("U"), py::arg("scale"), py::arg("a"),
        py::arg("beta"), py::arg("Ws"), py::arg("bs"), py::arg("v"), py::arg("k"), py::arg("costs") = py::none(),
        py::arg("budget") = 0.0, py::arg("lazy") = true, py::arg("n_threads") = 0,
        "Greedy on the pairwise network; returns (selected, gains, evaluations, singleton). See "
        "fastnips.submodular.greedy.");
  m.def("submodular_greedy_feature", &greedy_feature, py::arg("X"), py::arg("w"), py::arg("phi"), py::arg("k"),
        py::arg("costs") = py::none(), py::arg("budget") = 0.0, py::arg("lazy") = true, py::arg("n_threads") = 0,
        "Greedy on a feature-based function. See fastnips.submodular.greedy.");
  m.def("submodular_greedy_facility", &greedy_facility, py::arg("K"), py::arg("k"), py::arg("costs") = py::none(),
        py::arg("budget") = 0.0, py::arg("lazy") = true, py::arg("n_threads") = 0,
        "Greedy on facility location. See fastnips.submodular.greedy.");
  m.def("submodular_certify", &certify, py::arg("table"), py::arg("alpha") = 1.0, py::arg("tol") = 0.0,
        py::arg("n_threads") = 0,
        "Exhaustive monotonicity and (alpha-)diminishing-returns check of a 2^n table. See "
        "fastnips.submodular.certify.");
}

}  // namespace fastnips
