// Bindings of the evo field: one whole evolutionary run (evo/moead.h) per call.
#include "common/bind.h"
#include "evo/moead.h"

namespace fastnips {
namespace {

using namespace bind;
namespace fe = evo;

// A distortion table as C-contiguous float64: integers and floats are converted, anything else (bool, complex,
// objects, strings, dates) is a TypeError naming the argument.
py::array_t<double> table(const py::object& obj, int64_t n, const char* name) {
  const auto raw = py::array::ensure(obj);
  const char k = raw ? raw.dtype().kind() : '?';
  if (!raw || (k != 'f' && k != 'i' && k != 'u'))
    throw py::type_error(std::string(name) + " must be an array of n + 1 real numbers (the distortion at 0..n)");
  auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(raw);
  if (!a || a.ndim() != 1 || a.shape(0) != n + 1)
    throw py::value_error(std::string(name) + " must be a 1-D float64 array of n + 1 = " + std::to_string(n + 1) +
                          " values (the distortion at 0..n)");
  return a;
}

template <typename T>
py::array_t<T> to_array(const std::vector<T>& v) {
  return to_numpy(v);
}

py::dict evo_run(const std::string& problem, int64_t n, const py::object& h1_obj, const py::object& h2_obj,
                 const std::string& algorithm, const std::string& decomposition, int64_t n_weights,
                 int64_t n_neighbors, bool archive, int64_t budget, uint64_t seed, bool stop_on_full) {
  fe::RunSpec s;
  if (problem == "lotz") s.kind = fe::Kind::kLotz;
  else if (problem == "oneminmax") s.kind = fe::Kind::kOneMinMax;
  else throw py::value_error("problem must be 'lotz' or 'oneminmax', got '" + problem + "'");
  if (algorithm == "moead") s.algorithm = fe::Algorithm::kMoead;
  else if (algorithm == "self_adjusting") s.algorithm = fe::Algorithm::kSelfAdjusting;
  else throw py::value_error("algorithm must be 'moead' or 'self_adjusting', got '" + algorithm + "'");
  if (decomposition == "tchebycheff") s.decomposition = fe::Decomposition::kTchebycheff;
  else if (decomposition == "weighted_sum") s.decomposition = fe::Decomposition::kWeightedSum;
  else throw py::value_error("decomposition must be 'tchebycheff' or 'weighted_sum', got '" + decomposition + "'");
  if (n < 1) throw py::value_error("n must be >= 1, got " + std::to_string(n));
  const auto h1 = table(h1_obj, n, "h1"), h2 = table(h2_obj, n, "h2");
  s.n = n;
  s.h1 = h1.data();
  s.h2 = h2.data();
  s.n_weights = n_weights;
  s.n_neighbors = n_neighbors;
  s.archive = archive;
  s.budget = budget;
  s.seed = seed;
  s.stop_on_full = stop_on_full;
  fe::RunOutput out;
  run_released([&] { return fe::run(s, &out); }, "evo_run: ");
  py::dict d;
  d["evaluations"] = out.evaluations;
  d["first_population"] = to_array(out.first_population);
  d["final_population"] = to_array(out.final_population);
  d["full_population"] = out.full_population;
  d["first_archive"] = to_array(out.first_archive);
  d["final_archive"] = to_array(out.final_archive);
  d["full_archive"] = out.full_archive;
  d["digest"] = out.digest;
  return d;
}

}  // namespace

void bind_evo(py::module_& m) {
  m.def("evo_run", &evo_run, py::arg("problem"), py::arg("n"), py::arg("h1"), py::arg("h2"), py::arg("algorithm"),
        py::arg("decomposition"), py::arg("n_weights"), py::arg("n_neighbors"), py::arg("archive"),
        py::arg("budget"), py::arg("seed"), py::arg("stop_on_full"),
        "One MOEA/D run on (distorted) LOTZ/OneMinMax, the whole loop in C++; returns the coverage dict. See "
        "fastnips.evo.run.");
}

}  // namespace fastnips
