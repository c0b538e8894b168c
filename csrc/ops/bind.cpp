// Bindings of the ops field: spmm_csr (cpp backend) and, in CUDA builds, spmm_csr_cuda.
#include "common/bind.h"
#include "ops/spmm.h"

namespace fastnips {
namespace {

using namespace bind;

py::array spmm_csr(const py::array& indptr, const py::array& indices, const py::array& data, const py::array& X,
                   int64_t n_cols, int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  const CsrArgs A{indptr, indices, data};
  check_csr(A, X, "X", n_cols,
            "X has " + std::to_string(X.shape(0)) + " rows, the matrix has " + std::to_string(n_cols) + " columns",
            "");
  return typed_csr(A, [&](auto t, auto i) -> py::array {
    using T = decltype(t);
    using I = decltype(i);
    const int64_t k = X.shape(1);
    py::array_t<T> Y({A.n_rows(), k});
    T* y = Y.mutable_data();
    run_released([&] {
      return ops::spmm_csr<T, I>(A.n_rows(), n_cols, A.nnz(), ptr<I>(indptr), ptr<I>(indices), ptr<T>(data),
                                 ptr<T>(X), k, y, n_threads);
    });
    return std::move(Y);
  });
}

}  // namespace

void bind_ops(py::module_& m) {
  m.def("spmm_csr", &spmm_csr, py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("X"),
        py::arg("n_cols"), py::arg("n_threads") = 0,
        "Y = A @ X for CSR A (int32/int64 indices, float32/float64 values) and C-contiguous 2-D X.");
#ifdef FASTNIPS_WITH_CUDA
  m.def(
      "spmm_csr_cuda",
      [](int64_t n_rows, int64_t k, std::uintptr_t indptr, std::uintptr_t indices, std::uintptr_t data,
         std::uintptr_t X, std::uintptr_t Y, int index_bits, int dtype_bits, std::uintptr_t stream) {
        run_released(
            [&] { return cuda::spmm_csr(n_rows, k, indptr, indices, data, X, Y, index_bits, dtype_bits, stream); },
            "spmm_csr_cuda: ");
      },
      py::arg("n_rows"), py::arg("k"), py::arg("indptr"), py::arg("indices"), py::arg("data"), py::arg("X"),
      py::arg("Y"), py::arg("index_bits"), py::arg("dtype_bits"), py::arg("stream"),
      "Device SpMM on raw device pointers (used by fastnips.ops.spmm for CUDA torch tensors).");
#endif
}

}  // namespace fastnips
