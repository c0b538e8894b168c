// The only pybind11 translation unit of fastnips._C. It converts and checks Python arguments, releases
// the GIL around every native call, and turns native status codes into Python exceptions.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>

#include "ops/spmm.h"
#ifdef FASTNIPS_WITH_CUDA
#include "cuda/cuda_api.h"
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace py = pybind11;

namespace {

template <typename T>
bool is_dtype(const py::array& a) {
  return py::dtype::of<T>().is(a.dtype());
}

void require_1d_contig(const py::array& a, const char* name) {
  if (a.ndim() != 1) throw py::value_error(std::string(name) + " must be 1-D, got ndim=" + std::to_string(a.ndim()));
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(std::string(name) + " must be C-contiguous");
}

std::string spmm_error(const fastnips::ops::SpmmStatus& st) {
  using S = fastnips::ops::SpmmStatus;
  std::ostringstream os;
  switch (st.kind) {
    case S::kIndptrStart: os << "indptr[0] must be 0, got " << st.value; break;
    case S::kIndptrEnd: os << "indptr[-1] must equal len(indices), got " << st.value; break;
    case S::kIndptrDecreasing:
      os << "indptr must be non-decreasing: indptr[" << st.row + 1 << "] = " << st.value << " < indptr[" << st.row
         << "]";
      break;
    case S::kIndexOutOfRange:
      os << "column index out of range in row " << st.row << ": indices[" << st.position << "] = " << st.value;
      break;
    default: os << "unknown error";
  }
  return os.str();
}

template <typename T, typename I>
py::array_t<T> spmm_typed(const py::array& indptr, const py::array& indices, const py::array& data,
                          const py::array& X, int64_t n_cols, int n_threads) {
  const int64_t n_rows = int64_t(indptr.shape(0)) - 1;
  const int64_t nnz = indices.shape(0);
  const int64_t k = X.shape(1);
  py::array_t<T> Y({n_rows, k});
  const I* ip = static_cast<const I*>(indptr.data());
  const I* ix = static_cast<const I*>(indices.data());
  const T* d = static_cast<const T*>(data.data());
  const T* x = static_cast<const T*>(X.data());
  T* y = Y.mutable_data();
  fastnips::ops::SpmmStatus st;
  {
    py::gil_scoped_release release;  // pure C++ from here on
    st = fastnips::ops::spmm_csr<T, I>(n_rows, n_cols, nnz, ip, ix, d, x, k, y, n_threads);
  }
  if (!st.ok()) throw py::value_error(spmm_error(st));
  return Y;
}

py::array spmm_csr(const py::array& indptr, const py::array& indices, const py::array& data, const py::array& X,
                   int64_t n_cols, int n_threads) {
  require_1d_contig(indptr, "indptr");
  require_1d_contig(indices, "indices");
  require_1d_contig(data, "data");
  if (X.ndim() != 2 || !(X.flags() & py::array::c_style))
    throw py::value_error("X must be a C-contiguous 2-D array");
  if (indptr.shape(0) < 1) throw py::value_error("indptr must have at least one entry");
  if (indices.shape(0) != data.shape(0))
    throw py::value_error("indices and data must have the same length, got " + std::to_string(indices.shape(0)) +
                          " and " + std::to_string(data.shape(0)));
  if (X.shape(0) != n_cols)
    throw py::value_error("X has " + std::to_string(X.shape(0)) + " rows, the matrix has " + std::to_string(n_cols) +
                          " columns");
  if (!indptr.dtype().is(indices.dtype()))
    throw py::type_error("indptr and indices must share one integer dtype (int32 or int64)");
  if (!data.dtype().is(X.dtype())) throw py::type_error("data and X must share one dtype (float32 or float64)");
  const bool i32 = is_dtype<int32_t>(indptr), i64 = is_dtype<int64_t>(indptr);
  const bool f32 = is_dtype<float>(data), f64 = is_dtype<double>(data);
  if (!(i32 || i64)) throw py::type_error("indptr/indices must be int32 or int64");
  if (!(f32 || f64)) throw py::type_error("data/X must be float32 or float64");
  if (f32 && i32) return spmm_typed<float, int32_t>(indptr, indices, data, X, n_cols, n_threads);
  if (f32 && i64) return spmm_typed<float, int64_t>(indptr, indices, data, X, n_cols, n_threads);
  if (f64 && i32) return spmm_typed<double, int32_t>(indptr, indices, data, X, n_cols, n_threads);
  return spmm_typed<double, int64_t>(indptr, indices, data, X, n_cols, n_threads);
}

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

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "fastnips native core (C++, OpenMP, optional CUDA). Use the Python API in fastnips.*";
  m.attr("__version__") = FASTNIPS_VERSION;
  m.def("build_info", &build_info, "Compile-time facts about this build.");

  m.def("spmm_csr", &spmm_csr, py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("X"),
        py::arg("n_cols"), py::arg("n_threads") = 0,
        "Y = A @ X for CSR A (int32/int64 indices, float32/float64 values) and C-contiguous 2-D X.");

#ifdef FASTNIPS_WITH_CUDA
  m.def("cuda_device_count", [] {
    py::gil_scoped_release release;
    return fastnips::cuda::device_count();
  });
  m.def("cuda_probe_error", &fastnips::cuda::last_probe_error);
  m.def(
      "spmm_csr_cuda",
      [](int64_t n_rows, int64_t k, std::uintptr_t indptr, std::uintptr_t indices, std::uintptr_t data,
         std::uintptr_t X, std::uintptr_t Y, int index_bits, int dtype_bits, std::uintptr_t stream) {
        std::string err;
        {
          py::gil_scoped_release release;
          err = fastnips::cuda::spmm_csr(n_rows, k, indptr, indices, data, X, Y, index_bits, dtype_bits, stream);
        }
        if (!err.empty()) throw std::runtime_error("spmm_csr_cuda: " + err);
      },
      py::arg("n_rows"), py::arg("k"), py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("X"),
      py::arg("Y"), py::arg("index_bits"), py::arg("dtype_bits"), py::arg("stream"),
      "Device SpMM on raw device pointers (used by fastnips.ops.spmm for CUDA torch tensors).");
#else
  m.def("cuda_device_count", [] { return 0; });
  m.def("cuda_probe_error", [] { return std::string("built without CUDA (FASTNIPS_CUDA=OFF or no nvcc)"); });
#endif
}
