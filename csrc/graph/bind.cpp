// Bindings of the graph field: the generalised Tikhonov solves (graph/tikhonov.h: CG and the polynomial
// operator; graph/tikhonov_dense.h: batched dense Cholesky) and, in CUDA builds, the device Chebyshev step.
#include "common/bind.h"
#include "graph/tikhonov.h"
#include "graph/tikhonov_dense.h"

namespace fastnips {
namespace {

using namespace bind;
namespace fg = graph;

// The CSR checks of every Tikhonov op (L: n x n; `operand` named `name`, n rows), plus cheb: 1-D
// C-contiguous float64 with at least one coefficient.
void check_tikhonov(const CsrArgs& L, const py::array& cheb, const py::array& operand, const char* name) {
  require_1d_contig(cheb, "cheb");
  if (cheb.shape(0) < 1) throw py::value_error("cheb must hold at least one coefficient");
  if (!is_dtype<double>(cheb)) throw py::type_error("cheb must be float64");
  const int64_t n = L.n_rows();
  check_csr(L, operand, name, n,
            std::string(name) + " has " + std::to_string(operand.shape(0)) + " rows, L has " + std::to_string(n),
            "L: ");
}

// q: one entry per node, in the dtype of X.
void check_q(const py::array& q, const py::array& X, int64_t n) {
  require_1d_contig(q, "q");
  if (q.shape(0) != n)
    throw py::value_error("q has " + std::to_string(q.shape(0)) + " entries, L has " + std::to_string(n) + " rows");
  if (!q.dtype().is(X.dtype())) throw py::type_error("q and X must share one dtype (float32 or float64)");
}

// NaN or inf in any input of a solve is a ValueError naming it (require_finite), before any work.
void require_finite_inputs(const std::vector<std::pair<py::array, const char*>>& arrays) {
  for (const auto& a : arrays) require_finite(a.first, a.second);
}

fg::TikhonovOptions cg_options(double tol, int64_t maxiter, int n_threads, int diagonal, int64_t diagonal_work_limit,
                               int max_restarts) {
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
  return opt;
}

py::tuple tikhonov_solve_cg(const py::array& indptr, const py::array& indices, const py::array& data,
                            const py::array& cheb, const py::array& q, const py::array& X, double tol,
                            int64_t maxiter, int64_t n_threads_arg, int diagonal, int64_t diagonal_work_limit,
                            int max_restarts) {
  const int n_threads = checked_threads(n_threads_arg);
  const CsrArgs L{indptr, indices, data};
  check_tikhonov(L, cheb, X, "X");
  check_q(q, X, L.n_rows());
  require_finite_inputs({{data, "data"}, {cheb, "cheb"}, {q, "q"}, {X, "X"}});
  const auto opt = cg_options(tol, maxiter, n_threads, diagonal, diagonal_work_limit, max_restarts);
  return typed_csr(L, [&](auto t, auto i) -> py::tuple {
    using T = decltype(t);
    using I = decltype(i);
    const int64_t n = L.n_rows(), F = X.shape(1);
    py::array_t<T> Y({n, F});
    py::array_t<int64_t> iterations(F);
    py::array_t<double> residuals(F);
    py::array_t<double> diag(n);
    bool exact = true;
    T* y = Y.mutable_data();
    int64_t* it = iterations.mutable_data();
    double* res = residuals.mutable_data();
    double* dg = diag.mutable_data();
    run_released([&] {
      return fg::tikhonov_solve_cg<T, I>(n, L.nnz(), ptr<I>(indptr), ptr<I>(indices), ptr<T>(data),
                                         ptr<double>(cheb), int64_t(cheb.shape(0)) - 1, ptr<T>(q), ptr<T>(X), F, opt,
                                         y, it, res, dg, &exact);
    });
    return py::make_tuple(Y, iterations, residuals, diag, exact);
  });
}

py::array tikhonov_poly_apply(const py::array& indptr, const py::array& indices, const py::array& data,
                              const py::array& cheb, const py::array& V, int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  const CsrArgs L{indptr, indices, data};
  check_tikhonov(L, cheb, V, "V");
  return typed_csr(L, [&](auto t, auto i) -> py::array {
    using T = decltype(t);
    using I = decltype(i);
    const int64_t n = L.n_rows(), F = V.shape(1);
    py::array_t<T> Y({n, F});
    T* y = Y.mutable_data();
    run_released([&] {
      return fg::poly_apply<T, I>(n, L.nnz(), ptr<I>(indptr), ptr<I>(indices), ptr<T>(data), ptr<double>(cheb),
                                  int64_t(cheb.shape(0)) - 1, ptr<T>(V), F, y, n_threads);
    });
    return std::move(Y);
  });
}

// ------------------------------------------------------------------------------------- dense blocks

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

// Where block b's factor starts in the packed factors (sum of the squared sizes before it), for every b.
std::vector<int64_t> factor_layout(const Int64Array& offsets, int64_t* total) {
  const int64_t n_blocks = int64_t(offsets.shape(0)) - 1;
  std::vector<int64_t> fo(size_t(n_blocks) + 1);
  *total = fg::dense_factor_offsets(offsets.data(), n_blocks, fo.data());
  return fo;
}

py::array tikhonov_dense_factor(const py::array& indptr, const py::array& indices, const py::array& data,
                                const py::array& cheb, const py::array& q, const Int64Array& order,
                                const Int64Array& offsets, const py::object& labels, int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  const CsrArgs L{indptr, indices, data};
  const int64_t n = L.n_rows();
  // the CSR and cheb checks of the CG path, with q as an (n, 1) array (n rows, the dtype of data)
  require_1d_contig(q, "q");
  if (q.shape(0) != n)
    throw py::value_error("q has " + std::to_string(q.shape(0)) + " entries, L has " + std::to_string(n) + " rows");
  check_tikhonov(L, cheb, q.attr("reshape")(n, 1).cast<py::array>(), "q");
  require_finite_inputs({{data, "data"}, {cheb, "cheb"}, {q, "q"}});
  check_order_offsets(order, offsets, n);
  const int64_t n_blocks = int64_t(offsets.shape(0)) - 1;
  Int64Array lab;
  if (!labels.is_none()) {
    lab = labels.cast<Int64Array>();
    if (lab.ndim() != 1 || lab.shape(0) != n_blocks) throw py::value_error("labels must have one graph id per block");
  }
  return typed_csr(L, [&](auto t, auto i) -> py::array {
    using T = decltype(t);
    using I = decltype(i);
    int64_t total = 0;
    const std::vector<int64_t> fo = factor_layout(offsets, &total);
    py::array_t<T> factors(total);
    T* f = factors.mutable_data();
    run_released([&] {
      return fg::tikhonov_dense_factor<T, I>(n, L.nnz(), ptr<I>(indptr), ptr<I>(indices), ptr<T>(data),
                                             ptr<double>(cheb), int64_t(cheb.shape(0)) - 1, ptr<T>(q), order.data(),
                                             offsets.data(), n_blocks, labels.is_none() ? nullptr : lab.data(),
                                             fo.data(), f, n_threads);
    });
    return std::move(factors);
  });
}

py::array tikhonov_dense_solve(const py::array& factors, const Int64Array& order, const Int64Array& offsets,
                               const py::array& B, const py::object& scale, int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  require_1d_contig(factors, "factors");
  require_2d_contig(B, "B");
  check_order_offsets(order, offsets, B.shape(0));
  if (!factors.dtype().is(B.dtype())) throw py::type_error("factors and B must share one dtype (float32 or float64)");
  return typed(FloatTypes{}, B, "factors/B must be float32 or float64", [&](auto t) -> py::array {
    using T = decltype(t);
    const int64_t n = B.shape(0), F = B.shape(1), n_blocks = int64_t(offsets.shape(0)) - 1;
    int64_t total = 0;
    const std::vector<int64_t> fo = factor_layout(offsets, &total);
    if (factors.shape(0) != total)
      throw py::value_error("factors has " + std::to_string(factors.shape(0)) + " entries, the blocks need " +
                            std::to_string(total) + " (sum of squared block sizes)");
    py::array sarr;
    if (!scale.is_none()) {
      sarr = scale.cast<py::array>();
      require_1d_contig(sarr, "scale");
      if (sarr.shape(0) != n) throw py::value_error("scale must have one entry per row of B");
      if (!is_dtype<T>(sarr)) throw py::type_error("scale, factors and B must share one dtype (float32 or float64)");
    }
    require_finite(B, "B");
    if (!scale.is_none()) require_finite(sarr, "scale");
    const T* s = scale.is_none() ? nullptr : ptr<T>(sarr);
    py::array_t<T> Y({n, F});
    T* y = Y.mutable_data();
    run_released([&] {
      return fg::tikhonov_dense_solve<T>(n, order.data(), offsets.data(), n_blocks, fo.data(), ptr<T>(factors), s,
                                         ptr<T>(B), F, y, n_threads);
    });
    return std::move(Y);
  });
}

#ifdef FASTNIPS_WITH_CUDA
void bind_cuda(py::module_& m) {
  m.def(
      "tikhonov_cheb_step_cuda",
      [](int64_t n, int64_t nnz, int64_t F, std::uintptr_t indptr, std::uintptr_t indices, std::uintptr_t data,
         std::uintptr_t cur, std::uintptr_t prev, std::uintptr_t next, std::uintptr_t acc, std::uintptr_t V,
         std::uintptr_t q, std::uintptr_t dots, double c0, double ck, bool first, int index_bits, int dtype_bits,
         std::uintptr_t stream) {
        run_released(
            [&] {
              return cuda::tikhonov_cheb_step(n, nnz, F, indptr, indices, data, cur, prev, next, acc, V, q, dots, c0,
                                              ck, first, index_bits, dtype_bits, stream);
            },
            "tikhonov_cheb_step_cuda: ");
      },
      py::arg("n"), py::arg("nnz"), py::arg("F"), py::arg("indptr"), py::arg("indices"), py::arg("data"),
      py::arg("cur"), py::arg("prev"), py::arg("next"), py::arg("acc"), py::arg("V"), py::arg("q"), py::arg("dots"),
      py::arg("c0"), py::arg("ck"), py::arg("first"), py::arg("index_bits"), py::arg("dtype_bits"),
      py::arg("stream"),
      "One fused Chebyshev stage of p(L) V on raw device pointers (used by fastnips.graph._device).");
}
#endif

}  // namespace

void bind_graph(py::module_& m) {
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
#ifdef FASTNIPS_WITH_CUDA
  bind_cuda(m);
#endif
}

}  // namespace fastnips
