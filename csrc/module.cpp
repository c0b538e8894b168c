// fastnips._C, the native core: the only PYBIND11_MODULE. Each field binds its own ops
// (csrc/<field>/bind.cpp, bind_<field>); this file adds the facts about the build and the CUDA probes.
//
// Layout of csrc/: one folder per field (ops, causal, graph, diffusion, prune) with its plain C++ kernels,
// its bind.cpp and, in cuda/, its CUDA kernels; common/ holds what the fields share (Status, the CSR checks,
// the typed dispatch, thread counts; bind.h for the bind files only; cuda/ for device probing and the host
// API of the CUDA kernels). pybind11 appears only in the bind files and common/bind.h.
#include "common/bind.h"
#ifdef _OPENMP
#include <omp.h>
#endif

// The version of the _C API (names, arguments, results). Python refuses a build whose __api__ differs
// from the one it was written for (a stale extension left by an older build); raise it on every change.
#define FASTNIPS_NATIVE_API 11

namespace fastnips {


void bind_ops(py::module_& m);
void bind_causal(py::module_& m);
void bind_graph(py::module_& m);
void bind_diffusion(py::module_& m);
void bind_prune(py::module_& m);
void bind_evo(py::module_& m);
void bind_submodular(py::module_& m);
void bind_functional(py::module_& m);

namespace {

py::dict build_info() {
  py::dict info;
  info["version"] = FASTNIPS_VERSION;
  info["compiler"] = FASTNIPS_CXX_COMPILER;
  info["eigen"] = FASTNIPS_EIGEN_VERSION;
#ifdef _OPENMP
  info["openmp"] = true;
  info["openmp_version"] = _OPENMP;
  info["openmp_max_threads"] = omp_get_max_threads();
#else
  info["openmp"] = false;
  info["openmp_version"] = py::none();
  info["openmp_max_threads"] = 1;
#endif
#ifdef FASTNIPS_WITH_CUDA
  info["cuda_compiled"] = true;
  info["cuda_version"] = FASTNIPS_CUDA_VERSION;
#else
  info["cuda_compiled"] = false;
  info["cuda_version"] = py::none();
#endif
  return info;
}

void bind_cuda_probes(py::module_& m) {
#ifdef FASTNIPS_WITH_CUDA
  m.def("cuda_device_count", [] {
    py::gil_scoped_release release;
    return cuda::device_count();
  });
  m.def("cuda_probe_error", &cuda::last_probe_error);
#else
  m.def("cuda_device_count", [] { return 0; });
  m.def("cuda_probe_error", [] { return std::string("built without CUDA (FASTNIPS_CUDA=OFF or no nvcc)"); });
#endif
}

}  // namespace
}  // namespace fastnips

PYBIND11_MODULE(_C, m) {
  m.doc() = "fastnips native core (C++, OpenMP, optional CUDA). Use the Python API in fastnips.*";
  m.attr("__version__") = FASTNIPS_VERSION;
  m.attr("__api__") = FASTNIPS_NATIVE_API;
  m.def("build_info", &fastnips::build_info, "Compile-time facts about this build.");
  fastnips::bind_ops(m);
  fastnips::bind_causal(m);
  fastnips::bind_graph(m);
  fastnips::bind_diffusion(m);
  fastnips::bind_prune(m);
  fastnips::bind_evo(m);
  fastnips::bind_submodular(m);
  fastnips::bind_functional(m);
  fastnips::bind_cuda_probes(m);
}
