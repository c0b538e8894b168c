// The only pybind11 translation unit of fastnips._C. It converts and checks Python arguments, releases
// the GIL around every native call, and turns native status codes into Python exceptions.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>

#include "causal/htc.h"
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

// ---------------------------------------------------------------------------------------------- causal

namespace fc = fastnips::causal;

using IntPairs = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

void check_pairs(const IntPairs& a, const char* name) {
  if (!(a.ndim() == 2 && a.shape(1) == 2) && !(a.ndim() == 1 && a.shape(0) == 0))
    throw py::value_error(std::string(name) + " must have shape (k, 2)");
}

constexpr uint64_t kMersenne61 = (uint64_t(1) << 61) - 1;

fc::HtcOptions htc_options(const std::string& method, bool tian, uint64_t seed, uint64_t prime) {
  fc::HtcOptions opt;
  if (method == "randomized") opt.method = fc::Method::kRandomized;
  else if (method == "maxflow") opt.method = fc::Method::kMaxFlow;
  else throw py::value_error("method must be 'randomized' or 'maxflow', got '" + method + "'");
  opt.tian = tian;
  opt.seed = seed;
  opt.prime = prime == kMersenne61 ? 0 : prime;  // 0 selects the fast Mersenne-61 arithmetic
  return opt;
}

template <typename T>
py::array_t<T> to_numpy(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

py::list nested(const std::vector<std::vector<int32_t>>& vv) {
  py::list out(vv.size());
  for (size_t i = 0; i < vv.size(); ++i) out[i] = py::cast(vv[i]);
  return out;
}

py::dict htc_dict(const fc::HtcResult& r, bool tian) {
  py::dict d;
  d["solved"] = to_numpy(r.solved).attr("astype")("bool");
  d["order"] = to_numpy(r.order);
  d["sources"] = nested(r.sources);
  d["rounds"] = r.rounds;
  d["tests"] = r.tests;
  d["level"] = to_numpy(r.level);
  if (tian) {
    d["component"] = to_numpy(r.component);
    py::list comps;
    for (const auto& c : r.components) {
      py::dict cd;
      cd["internal"] = c.internal;
      cd["incoming"] = c.incoming;
      cd["top_order"] = c.top_order;
      comps.append(cd);
    }
    d["components"] = comps;
  }
  return d;
}

py::dict htc_identify(int32_t n, const IntPairs& dir, const IntPairs& bi, const std::string& method, bool tian,
                      uint64_t seed, uint64_t prime) {
  check_pairs(dir, "directed");
  check_pairs(bi, "bidirected");
  if (n < 0) throw py::value_error("n must be >= 0");
  const auto opt = htc_options(method, tian, seed, prime);
  fc::HtcResult r;
  {
    py::gil_scoped_release release;
    r = fc::htc_identify(n, dir.data(), dir.ndim() == 2 ? dir.shape(0) : 0, bi.data(),
                         bi.ndim() == 2 ? bi.shape(0) : 0, opt);
  }
  return htc_dict(r, tian);
}

py::dict edgewise_identify(int32_t n, const IntPairs& dir, const IntPairs& bi, uint64_t seed, uint64_t prime) {
  check_pairs(dir, "directed");
  check_pairs(bi, "bidirected");
  if (n < 0) throw py::value_error("n must be >= 0");
  const auto opt = htc_options("randomized", false, seed, prime);
  fc::EdgewiseResult r;
  {
    py::gil_scoped_release release;
    r = fc::edgewise_identify(n, dir.data(), dir.ndim() == 2 ? dir.shape(0) : 0, bi.data(),
                              bi.ndim() == 2 ? bi.shape(0) : 0, opt);
  }
  py::dict d;
  d["edge_solved"] = to_numpy(r.edge_solved).attr("astype")("bool");
  d["node_solved"] = to_numpy(r.node_solved).attr("astype")("bool");
  py::list steps(r.steps.size());
  for (size_t i = 0; i < r.steps.size(); ++i)
    steps[i] = py::make_tuple(r.steps[i].node, py::cast(r.steps[i].S), py::cast(r.steps[i].Y));
  d["steps"] = steps;
  d["rounds"] = r.rounds;
  d["tests"] = r.tests;
  d["edge_step"] = to_numpy(r.edge_step);
  return d;
}

py::list htc_identify_many(const py::sequence& graphs, const std::string& method, bool tian, uint64_t seed,
                           uint64_t prime) {
  const auto opt = htc_options(method, tian, seed, prime);
  std::vector<int32_t> ns, dir, bi;
  std::vector<int64_t> dir_off{0}, bi_off{0};
  for (const auto& item : graphs) {
    auto t = item.cast<py::tuple>();
    if (t.size() != 3) throw py::value_error("each graph must be a tuple (n, directed, bidirected)");
    const auto n = t[0].cast<int32_t>();
    if (n < 0) throw py::value_error("n must be >= 0");
    const auto d = t[1].cast<IntPairs>();
    const auto b = t[2].cast<IntPairs>();
    check_pairs(d, "directed");
    check_pairs(b, "bidirected");
    ns.push_back(n);
    dir.insert(dir.end(), d.data(), d.data() + d.size());
    bi.insert(bi.end(), b.data(), b.data() + b.size());
    dir_off.push_back(int64_t(dir.size() / 2));
    bi_off.push_back(int64_t(bi.size() / 2));
  }
  std::vector<fc::HtcResult> rs;
  {
    py::gil_scoped_release release;  // the graphs run in parallel over OpenMP threads
    rs = fc::htc_identify_many(ns, dir.data(), dir_off.data(), bi.data(), bi_off.data(), opt);
  }
  py::list out(rs.size());
  for (size_t i = 0; i < rs.size(); ++i) out[i] = htc_dict(rs[i], tian);
  return out;
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

  m.def("htc_identify", &htc_identify, py::arg("n"), py::arg("directed"), py::arg("bidirected"),
        py::arg("method") = "randomized", py::arg("tian") = false, py::arg("seed") = 0,
        py::arg("prime") = kMersenne61,
        "Half-trek criterion fixpoint (plain or per Tian component); see fastnips.causal.htc_identify.");
  m.def("edgewise_identify", &edgewise_identify, py::arg("n"), py::arg("directed"), py::arg("bidirected"),
        py::arg("seed") = 0, py::arg("prime") = kMersenne61,
        "Edgewise identification via maximal good edge sets; see fastnips.causal.edgewise_identify.");
  m.def("htc_identify_many", &htc_identify_many, py::arg("graphs"), py::arg("method") = "randomized",
        py::arg("tian") = false, py::arg("seed") = 0, py::arg("prime") = kMersenne61,
        "htc_identify over a list of (n, directed, bidirected), OpenMP-parallel, GIL released.");

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
