// The only pybind11 translation unit of fastnips._C. It converts and checks Python arguments, releases
// the GIL around every native call, and turns native status codes into Python exceptions.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "causal/htc.h"
#include "diffusion/lorenz.h"
#include "graph/tikhonov.h"
#include "graph/tikhonov_dense.h"
#include "ops/spmm.h"
#include "prune/masks.h"
#include "prune/pack.h"
#include "prune/sparsegpt.h"
#ifdef FASTNIPS_WITH_CUDA
#include "common/cuda/cuda_api.h"
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

// The ValueError message for a refused CSR structure (shared by every sparse kernel).
std::string csr_message(int kind, int64_t row, int64_t position, int64_t value) {
  using S = fastnips::CsrStatus;
  std::ostringstream os;
  switch (kind) {
    case S::kIndptrStart: os << "indptr[0] must be 0, got " << value; break;
    case S::kIndptrEnd: os << "indptr[-1] must equal len(indices), got " << value; break;
    case S::kIndptrDecreasing:
      os << "indptr must be non-decreasing: indptr[" << row + 1 << "] = " << value << " < indptr[" << row << "]";
      break;
    case S::kIndexOutOfRange:
      os << "column index out of range in row " << row << ": indices[" << position << "] = " << value;
      break;
    default: os << "unknown error";
  }
  return os.str();
}

std::string spmm_error(const fastnips::ops::SpmmStatus& st) {
  return csr_message(st.kind, st.row, st.position, st.value);
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

// ---------------------------------------------------------------------------------------------- graph

namespace fg = fastnips::graph;

std::string tikhonov_error(const fg::TikhonovStatus& st) {
  using S = fg::TikhonovStatus;
  std::ostringstream os;
  switch (st.kind) {
    case S::kIndptrStart:
    case S::kIndptrEnd:
    case S::kIndptrDecreasing:
    case S::kIndexOutOfRange: os << "L: " << csr_message(st.kind, st.row, st.position, st.value); break;
    case S::kNotPositiveDefinite:
      os << "p(L) + diag(q) is not positive definite: conjugate gradients met p^T A p = " << st.curvature
         << " <= 0 in column " << st.column << " at iteration " << st.iteration
         << "; L must be symmetric with its spectrum in [0, 2] (a normalized Laplacian) and p >= 0 on [0, 2]";
      break;
    case S::kBadArgument: os << "tikhonov_solve_cg: a size or option is out of range"; break;
    default: os << "unknown error";
  }
  return os.str();
}

template <typename T, typename I>
py::tuple tikhonov_solve_cg_typed(const py::array& indptr, const py::array& indices, const py::array& data,
                                  const py::array& cheb, const py::array& q, const py::array& X,
                                  const fg::TikhonovOptions& opt) {
  const int64_t n = int64_t(indptr.shape(0)) - 1;
  const int64_t nnz = indices.shape(0);
  const int64_t F = X.shape(1);
  const int64_t degree = int64_t(cheb.shape(0)) - 1;
  py::array_t<T> Y({n, F});
  py::array_t<int64_t> iterations(F);
  py::array_t<double> residuals(F);
  py::array_t<double> diagonal(n);
  bool exact = true;
  const I* ip = static_cast<const I*>(indptr.data());
  const I* ix = static_cast<const I*>(indices.data());
  const T* d = static_cast<const T*>(data.data());
  const double* c = static_cast<const double*>(cheb.data());
  const T* qq = static_cast<const T*>(q.data());
  const T* x = static_cast<const T*>(X.data());
  T* y = Y.mutable_data();
  int64_t* it = iterations.mutable_data();
  double* res = residuals.mutable_data();
  double* dg = diagonal.mutable_data();
  fg::TikhonovStatus st;
  {
    py::gil_scoped_release release;  // pure C++ from here on
    st = fg::tikhonov_solve_cg<T, I>(n, nnz, ip, ix, d, c, degree, qq, x, F, opt, y, it, res, dg, &exact);
  }
  if (!st.ok()) throw py::value_error(tikhonov_error(st));
  return py::make_tuple(Y, iterations, residuals, diagonal, exact);
}

template <typename T, typename I>
py::array tikhonov_poly_apply_typed(const py::array& indptr, const py::array& indices, const py::array& data,
                                    const py::array& cheb, const py::array& V, int n_threads) {
  const int64_t n = int64_t(indptr.shape(0)) - 1;
  const int64_t F = V.shape(1);
  py::array_t<T> Y({n, F});
  const I* ip = static_cast<const I*>(indptr.data());
  const I* ix = static_cast<const I*>(indices.data());
  const T* d = static_cast<const T*>(data.data());
  const double* c = static_cast<const double*>(cheb.data());
  const T* v = static_cast<const T*>(V.data());
  T* y = Y.mutable_data();
  fg::TikhonovStatus st;
  {
    py::gil_scoped_release release;
    st = fg::poly_apply<T, I>(n, int64_t(indices.shape(0)), ip, ix, d, c, int64_t(cheb.shape(0)) - 1, v, F, y,
                              n_threads);
  }
  if (!st.ok()) throw py::value_error(tikhonov_error(st));
  return Y;
}

// Shared checks: CSR arrays 1-D contiguous with one integer dtype, values/q/X one float dtype,
// cheb 1-D contiguous float64 with at least one entry, X (or V) C-contiguous 2-D with n rows.
void check_tikhonov_arrays(const py::array& indptr, const py::array& indices, const py::array& data,
                           const py::array& cheb, const py::array& X, const char* xname) {
  require_1d_contig(indptr, "indptr");
  require_1d_contig(indices, "indices");
  require_1d_contig(data, "data");
  require_1d_contig(cheb, "cheb");
  if (indptr.shape(0) < 1) throw py::value_error("indptr must have at least one entry");
  if (indices.shape(0) != data.shape(0))
    throw py::value_error("indices and data must have the same length, got " + std::to_string(indices.shape(0)) +
                          " and " + std::to_string(data.shape(0)));
  if (cheb.shape(0) < 1) throw py::value_error("cheb must hold at least one coefficient");
  if (!is_dtype<double>(cheb)) throw py::type_error("cheb must be float64");
  if (X.ndim() != 2 || !(X.flags() & py::array::c_style))
    throw py::value_error(std::string(xname) + " must be a C-contiguous 2-D array");
  const int64_t n = int64_t(indptr.shape(0)) - 1;
  if (X.shape(0) != n)
    throw py::value_error(std::string(xname) + " has " + std::to_string(X.shape(0)) + " rows, L has " +
                          std::to_string(n));
  if (!indptr.dtype().is(indices.dtype()))
    throw py::type_error("indptr and indices must share one integer dtype (int32 or int64)");
  if (!(is_dtype<int32_t>(indptr) || is_dtype<int64_t>(indptr)))
    throw py::type_error("indptr/indices must be int32 or int64");
  if (!data.dtype().is(X.dtype()))
    throw py::type_error(std::string("data and ") + xname + " must share one dtype (float32 or float64)");
  if (!(is_dtype<float>(data) || is_dtype<double>(data)))
    throw py::type_error(std::string("data/") + xname + " must be float32 or float64");
}

py::tuple tikhonov_solve_cg(const py::array& indptr, const py::array& indices, const py::array& data,
                            const py::array& cheb, const py::array& q, const py::array& X, double tol,
                            int64_t maxiter, int n_threads, int diagonal, int64_t diagonal_work_limit,
                            int max_restarts) {
  check_tikhonov_arrays(indptr, indices, data, cheb, X, "X");
  require_1d_contig(q, "q");
  if (q.shape(0) != indptr.shape(0) - 1)
    throw py::value_error("q has " + std::to_string(q.shape(0)) + " entries, L has " +
                          std::to_string(indptr.shape(0) - 1) + " rows");
  if (!q.dtype().is(X.dtype())) throw py::type_error("q and X must share one dtype (float32 or float64)");
  if (!(tol > 0.0)) throw py::value_error("tol must be > 0");
  if (maxiter < 0) throw py::value_error("maxiter must be >= 0");
  if (diagonal < 0 || diagonal > 2) throw py::value_error("diagonal must be 0 (auto), 1 (exact) or 2 (truncated)");
  if (max_restarts < 0) throw py::value_error("max_restarts must be >= 0");
  fg::TikhonovOptions opt;
  opt.tol = tol;
  opt.maxiter = maxiter;
  opt.n_threads = n_threads;
  opt.diagonal = static_cast<fg::DiagonalMode>(diagonal);
  opt.diagonal_work_limit = diagonal_work_limit;
  opt.max_restarts = max_restarts;
  const bool i32 = is_dtype<int32_t>(indptr), f32 = is_dtype<float>(data);
  if (f32 && i32) return tikhonov_solve_cg_typed<float, int32_t>(indptr, indices, data, cheb, q, X, opt);
  if (f32) return tikhonov_solve_cg_typed<float, int64_t>(indptr, indices, data, cheb, q, X, opt);
  if (i32) return tikhonov_solve_cg_typed<double, int32_t>(indptr, indices, data, cheb, q, X, opt);
  return tikhonov_solve_cg_typed<double, int64_t>(indptr, indices, data, cheb, q, X, opt);
}

py::array tikhonov_poly_apply(const py::array& indptr, const py::array& indices, const py::array& data,
                              const py::array& cheb, const py::array& V, int n_threads) {
  check_tikhonov_arrays(indptr, indices, data, cheb, V, "V");
  const bool i32 = is_dtype<int32_t>(indptr), f32 = is_dtype<float>(data);
  if (f32 && i32) return tikhonov_poly_apply_typed<float, int32_t>(indptr, indices, data, cheb, V, n_threads);
  if (f32) return tikhonov_poly_apply_typed<float, int64_t>(indptr, indices, data, cheb, V, n_threads);
  if (i32) return tikhonov_poly_apply_typed<double, int32_t>(indptr, indices, data, cheb, V, n_threads);
  return tikhonov_poly_apply_typed<double, int64_t>(indptr, indices, data, cheb, V, n_threads);
}

// ---------------------------------------------------------------------------------- graph: dense blocks

using Int64Array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// The graph id of block b for messages: labels[b] when labels were given, else b.
int64_t block_label(const py::object& labels, int64_t b) {
  if (labels.is_none() || b < 0) return b;
  const auto arr = labels.cast<Int64Array>();
  return b < arr.shape(0) ? arr.data()[b] : b;
}

std::string dense_error(const fg::DenseStatus& st, const py::object& labels, const int64_t* offsets) {
  using S = fg::DenseStatus;
  std::ostringstream os;
  switch (st.kind) {
    case S::kIndptrStart:
    case S::kIndptrEnd:
    case S::kIndptrDecreasing:
    case S::kIndexOutOfRange: os << "L: " << csr_message(st.kind, st.row, st.position, st.value); break;
    case S::kNotPositiveDefinite:
      os << "p(L) + diag(q) is not positive definite on graph " << block_label(labels, st.block) << " ("
         << (offsets ? offsets[st.block + 1] - offsets[st.block] : -1)
         << " nodes): its dense Cholesky factorisation met a pivot <= 0; L must be symmetric with its spectrum in "
            "[0, 2] (a normalized Laplacian), q > 0 and p >= 0 on [0, 2]";
      break;
    case S::kCrossBlock:
      os << "batch does not match L: L[" << st.row << ", " << st.value << "] != 0 joins graph "
         << block_label(labels, st.block) << " to graph " << block_label(labels, st.other)
         << "; a block-diagonal batch has no edge between two graphs";
      break;
    case S::kBadOrder:
      os << "order must be a permutation of [0, n): order[" << st.position << "] = " << st.value
         << " is out of range or repeated";
      break;
    case S::kBadOffsets:
      os << "offsets must rise from 0 to n: offsets[" << st.position << "] = " << st.value;
      break;
    case S::kBadArgument: os << "tikhonov_dense: a size is out of range"; break;
    default: os << "unknown error";
  }
  return os.str();
}

// order: one entry per node; offsets: 0 = offsets[0] <= ... <= offsets[-1] = n (checked here because the
// factor layout is computed from them before the kernel runs; the kernel checks order).
void check_order_offsets(const Int64Array& order, const Int64Array& offsets, int64_t n) {
  if (order.ndim() != 1 || order.shape(0) != n)
    throw py::value_error("order must have shape (" + std::to_string(n) + ",), one entry per node");
  if (offsets.ndim() != 1 || offsets.shape(0) < 1)
    throw py::value_error("offsets must be 1-D with n_blocks + 1 >= 1 entries");
  const int64_t* off = offsets.data();
  const int64_t last = int64_t(offsets.shape(0)) - 1;
  for (int64_t b = 0; b <= last; ++b)
    if ((b == 0 && off[0] != 0) || (b > 0 && off[b] < off[b - 1]) || (b == last && off[b] != n))
      throw py::value_error("offsets must rise from 0 to n = " + std::to_string(n) + ": offsets[" +
                            std::to_string(b) + "] = " + std::to_string(off[b]));
}

template <typename T, typename I>
py::array tikhonov_dense_factor_typed(const py::array& indptr, const py::array& indices, const py::array& data,
                                      const py::array& cheb, const py::array& q, const Int64Array& order,
                                      const Int64Array& offsets, const py::object& labels, int n_threads) {
  const int64_t n = int64_t(indptr.shape(0)) - 1;
  const int64_t n_blocks = int64_t(offsets.shape(0)) - 1;
  const int64_t* off = offsets.data();
  std::vector<int64_t> fo(size_t(n_blocks) + 1);
  const int64_t total = fg::dense_factor_offsets(off, n_blocks, fo.data());
  py::array_t<T> factors(total);
  const I* ip = static_cast<const I*>(indptr.data());
  const I* ix = static_cast<const I*>(indices.data());
  const T* d = static_cast<const T*>(data.data());
  const double* c = static_cast<const double*>(cheb.data());
  const T* qq = static_cast<const T*>(q.data());
  const int64_t* ord = order.data();
  T* f = factors.mutable_data();
  fg::DenseStatus st;
  {
    py::gil_scoped_release release;
    st = fg::tikhonov_dense_factor<T, I>(n, int64_t(indices.shape(0)), ip, ix, d, c, int64_t(cheb.shape(0)) - 1, qq,
                                         ord, off, n_blocks, fo.data(), f, n_threads);
  }
  if (!st.ok()) throw py::value_error(dense_error(st, labels, off));
  return factors;
}

py::array tikhonov_dense_factor(const py::array& indptr, const py::array& indices, const py::array& data,
                                const py::array& cheb, const py::array& q, const Int64Array& order,
                                const Int64Array& offsets, const py::object& labels, int n_threads) {
  const int64_t n = int64_t(indptr.shape(0)) - 1;
  // the CSR and cheb checks of the CG path, with q as an (n, 1) array (n rows, the dtype of data)
  require_1d_contig(q, "q");
  if (q.shape(0) != n)
    throw py::value_error("q has " + std::to_string(q.shape(0)) + " entries, L has " + std::to_string(n) + " rows");
  check_tikhonov_arrays(indptr, indices, data, cheb, q.attr("reshape")(n, 1).cast<py::array>(), "q");
  check_order_offsets(order, offsets, n);
  if (!labels.is_none()) {
    const auto lab = labels.cast<Int64Array>();
    if (lab.ndim() != 1 || lab.shape(0) != offsets.shape(0) - 1)
      throw py::value_error("labels must have one graph id per block");
  }
  const bool i32 = is_dtype<int32_t>(indptr), f32 = is_dtype<float>(data);
  if (f32 && i32) return tikhonov_dense_factor_typed<float, int32_t>(indptr, indices, data, cheb, q, order, offsets,
                                                                     labels, n_threads);
  if (f32) return tikhonov_dense_factor_typed<float, int64_t>(indptr, indices, data, cheb, q, order, offsets, labels,
                                                              n_threads);
  if (i32) return tikhonov_dense_factor_typed<double, int32_t>(indptr, indices, data, cheb, q, order, offsets, labels,
                                                               n_threads);
  return tikhonov_dense_factor_typed<double, int64_t>(indptr, indices, data, cheb, q, order, offsets, labels,
                                                      n_threads);
}

template <typename T>
py::array tikhonov_dense_solve_typed(const py::array& factors, const Int64Array& order, const Int64Array& offsets,
                                     const py::array& B, const py::object& scale, int n_threads) {
  const int64_t n = B.shape(0), F = B.shape(1);
  const int64_t n_blocks = int64_t(offsets.shape(0)) - 1;
  const int64_t* off = offsets.data();
  std::vector<int64_t> fo(size_t(n_blocks) + 1);
  const int64_t total = fg::dense_factor_offsets(off, n_blocks, fo.data());
  if (factors.shape(0) != total)
    throw py::value_error("factors has " + std::to_string(factors.shape(0)) + " entries, the blocks need " +
                          std::to_string(total) + " (sum of squared block sizes)");
  const T* s = nullptr;
  py::array sarr;
  if (!scale.is_none()) {
    sarr = scale.cast<py::array>();
    require_1d_contig(sarr, "scale");
    if (sarr.shape(0) != n) throw py::value_error("scale must have one entry per row of B");
    if (!is_dtype<T>(sarr)) throw py::type_error("scale, factors and B must share one dtype (float32 or float64)");
    s = static_cast<const T*>(sarr.data());
  }
  py::array_t<T> Y({n, F});
  const T* f = static_cast<const T*>(factors.data());
  const T* b = static_cast<const T*>(B.data());
  T* y = Y.mutable_data();
  const int64_t* ord = order.data();
  fg::DenseStatus st;
  {
    py::gil_scoped_release release;
    st = fg::tikhonov_dense_solve<T>(n, ord, off, n_blocks, fo.data(), f, s, b, F, y, n_threads);
  }
  if (!st.ok()) throw py::value_error(dense_error(st, py::none(), off));
  return Y;
}

py::array tikhonov_dense_solve(const py::array& factors, const Int64Array& order, const Int64Array& offsets,
                               const py::array& B, const py::object& scale, int n_threads) {
  require_1d_contig(factors, "factors");
  if (B.ndim() != 2 || !(B.flags() & py::array::c_style))
    throw py::value_error("B must be a C-contiguous 2-D array");
  check_order_offsets(order, offsets, B.shape(0));
  if (!factors.dtype().is(B.dtype())) throw py::type_error("factors and B must share one dtype (float32 or float64)");
  if (is_dtype<float>(B)) return tikhonov_dense_solve_typed<float>(factors, order, offsets, B, scale, n_threads);
  if (is_dtype<double>(B)) return tikhonov_dense_solve_typed<double>(factors, order, offsets, B, scale, n_threads);
  throw py::type_error("factors/B must be float32 or float64");
}

// ---------------------------------------------------------------------------------------------- diffusion

namespace fd = fastnips::diffusion;

// Lorenz-63 RK4 of d copies, state (3, d) float64 C-contiguous, advanced in place; returns the (n_steps /
// record_every, d) float64 x records, or None when record_every == 0.
py::object diffusion_lorenz_rk4(py::array state, int64_t n_steps, double dt, double sigma, double rho, double beta,
                                int64_t record_every, int n_threads) {
  if (state.ndim() != 2 || state.shape(0) != 3)
    throw py::value_error("state must have shape (3, d) (rows x, y, z), got ndim=" + std::to_string(state.ndim()));
  if (!is_dtype<double>(state)) throw py::type_error("state must be float64");
  if (!(state.flags() & py::array::c_style)) throw py::value_error("state must be C-contiguous");
  if (!state.writeable()) throw py::value_error("state must be writeable (it is advanced in place)");
  if (n_steps < 0) throw py::value_error("n_steps must be >= 0, got " + std::to_string(n_steps));
  if (!(dt > 0.0) || !std::isfinite(dt)) throw py::value_error("dt must be finite and > 0");
  if (!std::isfinite(sigma) || !std::isfinite(rho) || !std::isfinite(beta))
    throw py::value_error("sigma, rho and beta must be finite");
  if (record_every < 0) throw py::value_error("record_every must be >= 0 (0: no records)");
  if (record_every > 0 && n_steps % record_every)
    throw py::value_error("n_steps = " + std::to_string(n_steps) + " is not a multiple of record_every = " +
                          std::to_string(record_every));
  const int64_t d = state.shape(1);
  double* s = static_cast<double*>(state.mutable_data());
  if (record_every == 0) {
    py::gil_scoped_release release;
    fd::lorenz_rk4(d, s, n_steps, dt, sigma, rho, beta, 0, nullptr, n_threads);
    return py::none();
  }
  py::array_t<double> obs({n_steps / record_every, d});
  double* o = obs.mutable_data();
  {
    py::gil_scoped_release release;
    fd::lorenz_rk4(d, s, n_steps, dt, sigma, rho, beta, record_every, o, n_threads);
  }
  return obs;
}

// n values drawn i.i.d. from the 1-D pool: out[i] = pool[hash(counter0 + i, key)]; same dtype as the pool.
py::array diffusion_pool_draw(const py::array& pool, uint64_t key, uint64_t counter0, int64_t n, int n_threads) {
  require_1d_contig(pool, "pool");
  const int64_t p = pool.shape(0);
  if (p < 1 || p > (int64_t(1) << 32))
    throw py::value_error("pool must hold between 1 and 2^32 values, got " + std::to_string(p));
  if (n < 0) throw py::value_error("n must be >= 0, got " + std::to_string(n));
  auto draw = [&](auto zero) -> py::array {
    using T = decltype(zero);
    py::array_t<T> out(n);
    const T* src = static_cast<const T*>(pool.data());
    T* dst = out.mutable_data();
    {
      py::gil_scoped_release release;
      fd::pool_draw(src, p, key, counter0, n, dst, n_threads);
    }
    return std::move(out);
  };
  if (is_dtype<float>(pool)) return draw(0.0f);
  if (is_dtype<double>(pool)) return draw(0.0);
  throw py::type_error("pool must be float32 or float64");
}

// ---------------------------------------------------------------------------------------------- prune

namespace fp = fastnips::prune;

// A C-contiguous 2-D float32/float64 array (scores, weights); returns true for float32.
bool check_float_matrix(const py::array& a, const char* name) {
  if (a.ndim() != 2 || !(a.flags() & py::array::c_style))
    throw py::value_error(std::string(name) + " must be a C-contiguous 2-D array");
  if (is_dtype<float>(a)) return true;
  if (is_dtype<double>(a)) return false;
  throw py::type_error(std::string(name) + " must be float32 or float64 (convert half types to float32 first)");
}

void check_nm(int keep, int group, int64_t cols) {
  if (group < 1 || group > 255 || keep < 1 || keep > group)
    throw py::value_error("N:M needs 1 <= keep <= group <= 255, got keep=" + std::to_string(keep) +
                          ", group=" + std::to_string(group));
  if (cols % group)
    throw py::value_error("in_features = " + std::to_string(cols) + " is not a multiple of the N:M group " +
                          std::to_string(group));
}

py::array_t<bool> new_mask(int64_t rows, int64_t cols) { return py::array_t<bool>({rows, cols}); }

uint8_t* mask_data(py::array_t<bool>& m) { return reinterpret_cast<uint8_t*>(m.mutable_data()); }

// mode: "row" (k pruned per row), "matrix" (k pruned in all), "nm" (keep of every group).
py::array prune_select_mask(const py::array& scores, const std::string& mode, int64_t k, int keep, int group,
                            int n_threads) {
  const bool f32 = check_float_matrix(scores, "scores");
  const int64_t rows = scores.shape(0), cols = scores.shape(1);
  if (mode == "nm") check_nm(keep, group, cols);
  else if (mode == "row" || mode == "matrix") {
    const int64_t n = mode == "row" ? cols : rows * cols;
    if (k < 0 || k > n) throw py::value_error("k must lie in [0, " + std::to_string(n) + "], got " + std::to_string(k));
  } else throw py::value_error("mode must be 'row', 'matrix' or 'nm', got '" + mode + "'");
  auto mask = new_mask(rows, cols);
  uint8_t* m = mask_data(mask);
  const void* s = scores.data();
  bool finite;
  {
    py::gil_scoped_release release;
    finite = f32 ? fp::all_finite(static_cast<const float*>(s), rows * cols, n_threads)
                 : fp::all_finite(static_cast<const double*>(s), rows * cols, n_threads);
  }
  if (!finite) throw py::value_error("scores contain NaN or inf");
  {
    py::gil_scoped_release release;
    if (mode == "row") {
      if (f32) fp::select_rows(rows, cols, static_cast<const float*>(s), k, m, n_threads);
      else fp::select_rows(rows, cols, static_cast<const double*>(s), k, m, n_threads);
    } else if (mode == "matrix") {
      if (f32) fp::select_matrix(rows, cols, static_cast<const float*>(s), k, m, n_threads);
      else fp::select_matrix(rows, cols, static_cast<const double*>(s), k, m, n_threads);
    } else {
      if (f32) fp::select_nm(rows, cols, static_cast<const float*>(s), keep, group, m, n_threads);
      else fp::select_nm(rows, cols, static_cast<const double*>(s), keep, group, m, n_threads);
    }
  }
  return mask;
}

// Fused magnitude / Wanda scoring, selection and zeroing of W in place; returns the keep-mask.
py::array prune_weight(py::array W, const py::object& norms, const std::string& mode, int64_t k, int keep, int group,
                       int n_threads) {
  const bool f32 = check_float_matrix(W, "weight");
  if (!W.writeable()) throw py::value_error("weight must be writeable");
  const int64_t rows = W.shape(0), cols = W.shape(1);
  int m = 0;
  if (mode == "nm") {
    check_nm(keep, group, cols);
    m = 2;
  } else if (mode == "row" || mode == "matrix") {
    m = mode == "row" ? 0 : 1;
    const int64_t n = m == 0 ? cols : rows * cols;
    if (k < 0 || k > n) throw py::value_error("k must lie in [0, " + std::to_string(n) + "], got " + std::to_string(k));
  } else throw py::value_error("mode must be 'row', 'matrix' or 'nm', got '" + mode + "'");
  const void* nrm = nullptr;
  py::array narr;
  if (!norms.is_none()) {
    narr = norms.cast<py::array>();
    require_1d_contig(narr, "input_norms");
    if (narr.shape(0) != cols) throw py::value_error("input_norms must have one entry per column of weight");
    if (!narr.dtype().is(W.dtype())) throw py::type_error("input_norms and weight must share one dtype");
    nrm = narr.data();
  }
  auto mask = new_mask(rows, cols);
  uint8_t* mk = mask_data(mask);
  void* w = W.mutable_data();
  {
    py::gil_scoped_release release;
    if (f32)
      fp::prune_weight(rows, cols, static_cast<float*>(w), static_cast<const float*>(nrm), m, k, keep, group, mk,
                       n_threads);
    else
      fp::prune_weight(rows, cols, static_cast<double*>(w), static_cast<const double*>(nrm), m, k, keep, group, mk,
                       n_threads);
  }
  return mask;
}

// The SparseGPT sweep on W (in place) with U = upper Cholesky factor of the damped H^-1 (same dtype);
// returns (keep-mask, losses float64).
py::tuple prune_sparsegpt_sweep(py::array W, const py::array& U, const std::string& mode, int64_t blocksize,
                                const Int64Array& counts, int keep, int group, int n_threads) {
  const bool f32 = check_float_matrix(W, "weight");
  if (!W.writeable()) throw py::value_error("weight must be writeable");
  check_float_matrix(U, "hinv");
  if (!U.dtype().is(W.dtype())) throw py::type_error("weight and hinv must share one dtype (float32 or float64)");
  const int64_t rows = W.shape(0), cols = W.shape(1);
  if (U.shape(0) != cols || U.shape(1) != cols)
    throw py::value_error("hinv must have shape (in_features, in_features) = (" + std::to_string(cols) + ", " +
                          std::to_string(cols) + ")");
  if (blocksize < 1) throw py::value_error("blocksize must be >= 1");
  fp::SparseGPTOptions opt;
  opt.blocksize = blocksize;
  opt.n_threads = n_threads;
  const int64_t B = std::min(blocksize, std::max<int64_t>(cols, 1));
  const int64_t n_blocks = cols ? (cols + B - 1) / B : 0;
  if (mode == "nm") {
    check_nm(keep, group, cols);
    if (blocksize % group) throw py::value_error("blocksize must be a multiple of the N:M group");
    opt.mode = fp::SparseGPTOptions::kNM;
    opt.keep = keep;
    opt.group = group;
  } else if (mode == "row" || mode == "matrix") {
    opt.mode = mode == "row" ? fp::SparseGPTOptions::kRow : fp::SparseGPTOptions::kMatrix;
    if (counts.ndim() != 1 || counts.shape(0) != n_blocks)
      throw py::value_error("counts must hold one entry per block (" + std::to_string(n_blocks) + ")");
    const int64_t* c = counts.data();
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t nb = std::min(cols, (b + 1) * B) - b * B;
      const int64_t lim = mode == "row" ? nb : nb * rows;
      if (c[b] < 0 || c[b] > lim)
        throw py::value_error("counts[" + std::to_string(b) + "] = " + std::to_string(c[b]) + " is outside [0, " +
                              std::to_string(lim) + "]");
    }
    opt.counts = c;
  } else throw py::value_error("mode must be 'row', 'matrix' or 'nm', got '" + mode + "'");
  auto mask = new_mask(rows, cols);
  py::array_t<double> losses(rows);
  uint8_t* mk = mask_data(mask);
  double* lo = losses.mutable_data();
  void* w = W.mutable_data();
  const void* u = U.data();
  {
    py::gil_scoped_release release;
    if (f32) fp::sparsegpt_sweep(rows, cols, static_cast<float*>(w), static_cast<const float*>(u), opt, mk, lo);
    else fp::sparsegpt_sweep(rows, cols, static_cast<double*>(w), static_cast<const double*>(u), opt, mk, lo);
  }
  return py::make_tuple(mask, losses);
}

// Packing moves raw bits: any C-contiguous 2-D array of 2-, 4- or 8-byte elements (fastnips passes integer
// views of float16/bfloat16/float32/float64 tensors).
int elem_bytes(const py::array& a, const char* name) {
  const auto s = a.itemsize();
  if (s != 2 && s != 4 && s != 8)
    throw py::type_error(std::string(name) + " must have 2-, 4- or 8-byte elements, got " + std::to_string(s));
  return int(s);
}

std::string pack_error(const fp::PackStatus& st, int keep, int group) {
  using S = fp::PackStatus;
  std::ostringstream os;
  switch (st.kind) {
    case S::kTooManyNonzeros:
      os << "weight does not follow the N:M pattern (keep " << keep << " of " << group << "): row " << st.row
         << ", group " << st.group << " (columns " << st.group * group << ".." << (st.group + 1) * group - 1
         << ") holds " << st.value << " nonzeros";
      break;
    case S::kBadIndex:
      os << "indices must be strictly increasing positions in [0, " << group << ") within each group: row "
         << st.row << ", group " << st.group;
      break;
    case S::kBadOffsets:
      os << "row_offsets disagree with the bitmask or values at row " << st.row << " (value " << st.value
         << "): they must rise from 0 to len(values), row by row as the popcount of the bitmask";
      break;
    case S::kStrayBits: os << "bitmask row " << st.row << " has bits set past the last column"; break;
    default: os << "unknown error";
  }
  return os.str();
}

template <typename U>
py::tuple pack_nm_typed(const py::array& W, int keep, int group, int n_threads) {
  const int64_t rows = W.shape(0), cols = W.shape(1), pc = cols / group * keep;
  py::array values(W.dtype(), std::vector<py::ssize_t>{rows, pc});
  py::array_t<uint8_t> idx({rows, pc});
  const U* w = static_cast<const U*>(W.data());
  U* v = static_cast<U*>(values.mutable_data());
  uint8_t* ix = idx.mutable_data();
  fp::PackStatus st;
  {
    py::gil_scoped_release release;
    st = fp::pack_nm<U>(rows, cols, keep, group, w, v, ix, n_threads);
  }
  if (!st.ok()) throw py::value_error(pack_error(st, keep, group));
  return py::make_tuple(values, idx);
}

py::tuple prune_pack_nm(const py::array& W, int keep, int group, int n_threads) {
  if (W.ndim() != 2 || !(W.flags() & py::array::c_style))
    throw py::value_error("weight must be a C-contiguous 2-D array");
  check_nm(keep, group, W.shape(1));
  switch (elem_bytes(W, "weight")) {
    case 2: return pack_nm_typed<uint16_t>(W, keep, group, n_threads);
    case 4: return pack_nm_typed<uint32_t>(W, keep, group, n_threads);
    default: return pack_nm_typed<uint64_t>(W, keep, group, n_threads);
  }
}

template <typename U>
py::array unpack_nm_typed(const py::array& values, const py::array& idx, int64_t cols, int keep, int group,
                          int n_threads) {
  const int64_t rows = values.shape(0);
  py::array out(values.dtype(), std::vector<py::ssize_t>{rows, cols});
  const U* v = static_cast<const U*>(values.data());
  const uint8_t* ix = static_cast<const uint8_t*>(idx.data());
  U* o = static_cast<U*>(out.mutable_data());
  fp::PackStatus st;
  {
    py::gil_scoped_release release;
    st = fp::unpack_nm<U>(rows, cols, keep, group, v, ix, o, n_threads);
  }
  if (!st.ok()) throw py::value_error(pack_error(st, keep, group));
  return out;
}

py::array prune_unpack_nm(const py::array& values, const py::array& idx, int64_t cols, int keep, int group,
                          int n_threads) {
  if (values.ndim() != 2 || !(values.flags() & py::array::c_style))
    throw py::value_error("values must be a C-contiguous 2-D array");
  if (idx.ndim() != 2 || !(idx.flags() & py::array::c_style) || !is_dtype<uint8_t>(idx))
    throw py::value_error("indices must be a C-contiguous 2-D uint8 array");
  check_nm(keep, group, cols);
  const int64_t pc = cols / group * keep;
  if (values.shape(1) != pc || idx.shape(0) != values.shape(0) || idx.shape(1) != pc)
    throw py::value_error("values and indices must both have shape (rows, in_features * keep / group) = (rows, " +
                          std::to_string(pc) + ")");
  switch (elem_bytes(values, "values")) {
    case 2: return unpack_nm_typed<uint16_t>(values, idx, cols, keep, group, n_threads);
    case 4: return unpack_nm_typed<uint32_t>(values, idx, cols, keep, group, n_threads);
    default: return unpack_nm_typed<uint64_t>(values, idx, cols, keep, group, n_threads);
  }
}

template <typename U>
py::tuple pack_bitmask_typed(const py::array& W, int n_threads) {
  const int64_t rows = W.shape(0), cols = W.shape(1), nbytes = (cols + 7) / 8;
  py::array_t<int64_t> offsets(rows + 1);
  const U* w = static_cast<const U*>(W.data());
  int64_t* off = offsets.mutable_data();
  {
    py::gil_scoped_release release;
    fp::bitmask_count<U>(rows, cols, w, off, n_threads);
  }
  py::array values(W.dtype(), std::vector<py::ssize_t>{py::ssize_t(off[rows])});
  py::array_t<uint8_t> bitmask({rows, nbytes});
  U* v = static_cast<U*>(values.mutable_data());
  uint8_t* bm = bitmask.mutable_data();
  {
    py::gil_scoped_release release;
    fp::bitmask_fill<U>(rows, cols, w, off, v, bm, n_threads);
  }
  return py::make_tuple(values, bitmask, offsets);
}

py::tuple prune_pack_bitmask(const py::array& W, int n_threads) {
  if (W.ndim() != 2 || !(W.flags() & py::array::c_style))
    throw py::value_error("weight must be a C-contiguous 2-D array");
  switch (elem_bytes(W, "weight")) {
    case 2: return pack_bitmask_typed<uint16_t>(W, n_threads);
    case 4: return pack_bitmask_typed<uint32_t>(W, n_threads);
    default: return pack_bitmask_typed<uint64_t>(W, n_threads);
  }
}

template <typename U>
py::array unpack_bitmask_typed(const py::array& values, const py::array& bitmask, const Int64Array& offsets,
                               int64_t cols, int n_threads) {
  const int64_t rows = bitmask.shape(0);
  py::array out(values.dtype(), std::vector<py::ssize_t>{rows, cols});
  const U* v = static_cast<const U*>(values.data());
  const uint8_t* bm = static_cast<const uint8_t*>(bitmask.data());
  const int64_t* off = offsets.data();
  U* o = static_cast<U*>(out.mutable_data());
  fp::PackStatus st;
  {
    py::gil_scoped_release release;
    st = fp::bitmask_unpack<U>(rows, cols, int64_t(values.shape(0)), v, bm, off, o, n_threads);
  }
  if (!st.ok()) throw py::value_error(pack_error(st, 0, 0));
  return out;
}

py::array prune_unpack_bitmask(const py::array& values, const py::array& bitmask, const Int64Array& offsets,
                               int64_t cols, int n_threads) {
  require_1d_contig(values, "values");
  if (bitmask.ndim() != 2 || !(bitmask.flags() & py::array::c_style) || !is_dtype<uint8_t>(bitmask))
    throw py::value_error("bitmask must be a C-contiguous 2-D uint8 array");
  if (cols < 0 || bitmask.shape(1) != (cols + 7) / 8)
    throw py::value_error("bitmask must have ceil(in_features / 8) = " + std::to_string((cols + 7) / 8) +
                          " columns, got " + std::to_string(bitmask.shape(1)));
  if (offsets.ndim() != 1 || offsets.shape(0) != bitmask.shape(0) + 1)
    throw py::value_error("row_offsets must have rows + 1 = " + std::to_string(bitmask.shape(0) + 1) + " entries");
  switch (elem_bytes(values, "values")) {
    case 2: return unpack_bitmask_typed<uint16_t>(values, bitmask, offsets, cols, n_threads);
    case 4: return unpack_bitmask_typed<uint32_t>(values, bitmask, offsets, cols, n_threads);
    default: return unpack_bitmask_typed<uint64_t>(values, bitmask, offsets, cols, n_threads);
  }
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

  m.def("tikhonov_solve_cg", &tikhonov_solve_cg, py::arg("indptr"), py::arg("indices"), py::arg("data"),
        py::arg("cheb"), py::arg("q"), py::arg("X"), py::arg("tol"), py::arg("maxiter"), py::arg("n_threads") = 0,
        py::arg("diagonal") = 0, py::arg("diagonal_work_limit") = 0, py::arg("max_restarts") = 2,
        "Jacobi-PCG for (p(L) + diag q) Y = diag(q) X, p in the Chebyshev basis of L - I; returns "
        "(Y, iterations, residuals, jacobi_diagonal, diagonal_exact). See fastnips.graph.tikhonov_solve.");
  m.def("tikhonov_dense_factor", &tikhonov_dense_factor, py::arg("indptr"), py::arg("indices"), py::arg("data"),
        py::arg("cheb"), py::arg("q"), py::arg("order"), py::arg("offsets"), py::arg("labels") = py::none(),
        py::arg("n_threads") = 0,
        "Dense Cholesky factors of p(L_b) + diag(q_b) for the blocks b of a block-diagonal L (node order[offsets[b] "
        "+ i] is node i of block b; labels: graph ids for messages); returns the factors packed (sum m_b^2). See "
        "fastnips.graph.tikhonov_factorize.");
  m.def("tikhonov_dense_solve", &tikhonov_dense_solve, py::arg("factors"), py::arg("order"), py::arg("offsets"),
        py::arg("B"), py::arg("scale") = py::none(), py::arg("n_threads") = 0,
        "Y = A^{-1} (scale o B) block by block with the factors of tikhonov_dense_factor (scale None: 1).");
  m.def("tikhonov_poly_apply", &tikhonov_poly_apply, py::arg("indptr"), py::arg("indices"), py::arg("data"),
        py::arg("cheb"), py::arg("V"), py::arg("n_threads") = 0,
        "p(L) V for CSR L and p in the Chebyshev basis of L - I (K fused sparse products).");

  m.def("diffusion_lorenz_rk4", &diffusion_lorenz_rk4, py::arg("state"), py::arg("n_steps"), py::arg("dt"),
        py::arg("sigma") = 10.0, py::arg("rho") = 28.0, py::arg("beta") = 8.0 / 3.0, py::arg("record_every") = 0,
        py::arg("n_threads") = 0,
        "RK4 of d independent Lorenz-63 copies, state (3, d) float64 advanced in place; returns the x records "
        "(n_steps / record_every, d) or None. See fastnips.diffusion.drivers.lorenz_rk4.");
  m.def("diffusion_pool_draw", &diffusion_pool_draw, py::arg("pool"), py::arg("key"), py::arg("counter0"),
        py::arg("n"), py::arg("n_threads") = 0,
        "n i.i.d. values out[i] = pool[hash(counter0 + i, key)] (counter-based, chunking-invariant). See "
        "fastnips.diffusion.drivers.Lorenz (shuffle='time').");

  m.def("prune_select_mask", &prune_select_mask, py::arg("scores"), py::arg("mode"), py::arg("k") = 0,
        py::arg("keep") = 0, py::arg("group") = 0, py::arg("n_threads") = 0,
        "Keep-mask (bool) pruning the lowest scores, ties by lower index: mode 'row' (k per row), 'matrix' (k in "
        "all) or 'nm' (keep of every group). See fastnips.prune.select_mask.");
  m.def("prune_weight", &prune_weight, py::arg("weight"), py::arg("input_norms"), py::arg("mode"), py::arg("k") = 0,
        py::arg("keep") = 0, py::arg("group") = 0, py::arg("n_threads") = 0,
        "Fused magnitude (input_norms None) or Wanda scores, exact selection and zeroing of weight in place; "
        "returns the keep-mask. See fastnips.prune.masks.prune_weight_.");
  m.def("prune_sparsegpt_sweep", &prune_sparsegpt_sweep, py::arg("weight"), py::arg("hinv"), py::arg("mode"),
        py::arg("blocksize"), py::arg("counts"), py::arg("keep") = 0, py::arg("group") = 0, py::arg("n_threads") = 0,
        "SparseGPT's OBS column sweep on weight in place, hinv the upper Cholesky factor of the damped H^-1; "
        "returns (keep-mask, losses). See fastnips.prune.sparsegpt.sparsegpt_prune_.");
  m.def("prune_pack_nm", &prune_pack_nm, py::arg("weight"), py::arg("keep"), py::arg("group"),
        py::arg("n_threads") = 0, "N:M pack of raw element bits: (values, indices uint8). See fastnips.prune.pack.");
  m.def("prune_unpack_nm", &prune_unpack_nm, py::arg("values"), py::arg("indices"), py::arg("cols"),
        py::arg("keep"), py::arg("group"), py::arg("n_threads") = 0, "Inverse of prune_pack_nm.");
  m.def("prune_pack_bitmask", &prune_pack_bitmask, py::arg("weight"), py::arg("n_threads") = 0,
        "Bitmask pack of raw element bits: (values, bitmask uint8, row_offsets int64). See fastnips.prune.pack.");
  m.def("prune_unpack_bitmask", &prune_unpack_bitmask, py::arg("values"), py::arg("bitmask"),
        py::arg("row_offsets"), py::arg("cols"), py::arg("n_threads") = 0, "Inverse of prune_pack_bitmask.");

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
  m.def(
      "tikhonov_cheb_step_cuda",
      [](int64_t n, int64_t nnz, int64_t F, std::uintptr_t indptr, std::uintptr_t indices, std::uintptr_t data,
         std::uintptr_t cur, std::uintptr_t prev, std::uintptr_t next, std::uintptr_t acc, std::uintptr_t V,
         std::uintptr_t q, std::uintptr_t dots, double c0, double ck, bool first, int index_bits, int dtype_bits,
         std::uintptr_t stream) {
        std::string err;
        {
          py::gil_scoped_release release;
          err = fastnips::cuda::tikhonov_cheb_step(n, nnz, F, indptr, indices, data, cur, prev, next, acc, V, q,
                                                   dots, c0, ck, first, index_bits, dtype_bits, stream);
        }
        if (!err.empty()) throw std::runtime_error("tikhonov_cheb_step_cuda: " + err);
      },
      py::arg("n"), py::arg("nnz"), py::arg("F"), py::arg("indptr"), py::arg("indices"), py::arg("data"),
      py::arg("cur"), py::arg("prev"), py::arg("next"), py::arg("acc"), py::arg("V"), py::arg("q"), py::arg("dots"),
      py::arg("c0"), py::arg("ck"), py::arg("first"), py::arg("index_bits"), py::arg("dtype_bits"),
      py::arg("stream"),
      "One fused Chebyshev stage of p(L) V on raw device pointers (used by fastnips.graph._device).");
#else
  m.def("cuda_device_count", [] { return 0; });
  m.def("cuda_probe_error", [] { return std::string("built without CUDA (FASTNIPS_CUDA=OFF or no nvcc)"); });
#endif
}
