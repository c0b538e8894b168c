// Bindings of the prune field: keep-mask selection and fused magnitude / Wanda pruning (prune/masks.h), the
// SparseGPT sweep (prune/sparsegpt.h) and N:M / bitmask packing (prune/pack.h).
#include <algorithm>
#include <cmath>

#include "common/bind.h"
#include "prune/masks.h"
#include "prune/pack.h"
#include "prune/sparsegpt.h"

namespace fastnips {
namespace {

using namespace bind;
namespace fp = prune;

// The TypeError of a scores / weight / hinv array that is not float32 or float64.
std::string float_error(const char* name) {
  return std::string(name) + " must be float32 or float64 (convert half types to float32 first)";
}

void check_nm(int keep, int group, int64_t cols) {
  if (group < 1 || group > 255 || keep < 1 || keep > group)
    throw py::value_error("N:M needs 1 <= keep <= group <= 255, got keep=" + std::to_string(keep) +
                          ", group=" + std::to_string(group));
  if (cols % group)
    throw py::value_error("in_features = " + std::to_string(cols) + " is not a multiple of the N:M group " +
                          std::to_string(group));
}

// mode "row" (k pruned per row: 0), "matrix" (k pruned in all: 1) or "nm" (keep of every group: 2), checked
// against a rows x cols matrix.
int select_mode(const std::string& mode, int64_t k, int keep, int group, int64_t rows, int64_t cols) {
  if (mode == "nm") {
    check_nm(keep, group, cols);
    return 2;
  }
  if (mode != "row" && mode != "matrix")
    throw py::value_error("mode must be 'row', 'matrix' or 'nm', got '" + mode + "'");
  const int64_t n = mode == "row" ? cols : rows * cols;
  if (k < 0 || k > n) throw py::value_error("k must lie in [0, " + std::to_string(n) + "], got " + std::to_string(k));
  return mode == "row" ? 0 : 1;
}

py::array_t<bool> new_mask(int64_t rows, int64_t cols) { return py::array_t<bool>({rows, cols}); }

uint8_t* mask_data(py::array_t<bool>& m) { return reinterpret_cast<uint8_t*>(m.mutable_data()); }

py::array prune_select_mask(const py::array& scores, const std::string& mode, int64_t k, int keep, int group,
                            int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  require_2d_contig(scores, "scores");
  return typed(FloatTypes{}, scores, float_error("scores"), [&](auto t) -> py::array {
    using T = decltype(t);
    const int64_t rows = scores.shape(0), cols = scores.shape(1);
    const int m = select_mode(mode, k, keep, group, rows, cols);
    auto mask = new_mask(rows, cols);
    uint8_t* mk = mask_data(mask);
    const T* s = ptr<T>(scores);
    bool finite = true;
    run_released([&] {
      finite = fp::all_finite(s, rows * cols, n_threads);
      return Status{};
    });
    if (!finite) throw py::value_error("scores contain NaN or inf");
    run_released([&] {
      if (m == 0) fp::select_rows(rows, cols, s, k, mk, n_threads);
      else if (m == 1) fp::select_matrix(rows, cols, s, k, mk, n_threads);
      else fp::select_nm(rows, cols, s, keep, group, mk, n_threads);
      return Status{};
    });
    return std::move(mask);
  });
}

// Fused magnitude / Wanda scoring, selection and zeroing of W in place; returns the keep-mask.
py::array prune_weight(py::array W, const py::object& norms, const std::string& mode, int64_t k, int keep, int group,
                       int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  require_2d_contig(W, "weight");
  return typed(FloatTypes{}, W, float_error("weight"), [&](auto t) -> py::array {
    using T = decltype(t);
    if (!W.writeable()) throw py::value_error("weight must be writeable");
    const int64_t rows = W.shape(0), cols = W.shape(1);
    const int m = select_mode(mode, k, keep, group, rows, cols);
    const T* nrm = nullptr;
    py::array narr;
    if (!norms.is_none()) {
      narr = norms.cast<py::array>();
      require_1d_contig(narr, "input_norms");
      if (narr.shape(0) != cols) throw py::value_error("input_norms must have one entry per column of weight");
      if (!narr.dtype().is(W.dtype())) throw py::type_error("input_norms and weight must share one dtype");
      nrm = ptr<T>(narr);
    }
    auto mask = new_mask(rows, cols);
    uint8_t* mk = mask_data(mask);
    T* w = mutable_ptr<T>(W);
    run_released([&] {
      fp::prune_weight(rows, cols, w, nrm, m, k, keep, group, mk, n_threads);
      return Status{};
    });
    return std::move(mask);
  });
}

// The SparseGPT options for a rows x cols weight; for the unstructured modes counts holds the pruned count
// of every block (per row for "row", of the rows x block for "matrix").
fp::SparseGPTOptions sparsegpt_options(const std::string& mode, int64_t blocksize, const Int64Array& counts,
                                       int keep, int group, int n_threads, int64_t rows, int64_t cols) {
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
    return opt;
  }
  if (mode != "row" && mode != "matrix")
    throw py::value_error("mode must be 'row', 'matrix' or 'nm', got '" + mode + "'");
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
  return opt;
}

// The sweep divides by U's diagonal: NaN, inf or a value <= 0 there (no upper Cholesky factor of an SPD
// inverse has one) gave NaN weights or wrong N:M counts. O(cols), before any work.
template <typename T>
void check_factor_diagonal(const T* U, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j) {
    const double d = static_cast<double>(U[j * cols + j]);
    if (!(std::isfinite(d) && d > 0.0))
      throw py::value_error("hinv must have a finite, positive diagonal (an upper Cholesky factor of H^-1), got "
                            "hinv[" + std::to_string(j) + ", " + std::to_string(j) + "] = " + std::to_string(d));
  }
}

// The SparseGPT sweep on W (in place) with U = upper Cholesky factor of the damped H^-1 (same dtype);
// returns (keep-mask, losses float64).
py::tuple prune_sparsegpt_sweep(py::array W, const py::array& U, const std::string& mode, int64_t blocksize,
                                const Int64Array& counts, int keep, int group, int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  require_2d_contig(W, "weight");
  return typed(FloatTypes{}, W, float_error("weight"), [&](auto t) -> py::tuple {
    using T = decltype(t);
    if (!W.writeable()) throw py::value_error("weight must be writeable");
    require_2d_contig(U, "hinv");
    if (!holds<float>(U) && !holds<double>(U)) throw py::type_error(float_error("hinv"));
    if (!U.dtype().is(W.dtype())) throw py::type_error("weight and hinv must share one dtype (float32 or float64)");
    const int64_t rows = W.shape(0), cols = W.shape(1);
    if (U.shape(0) != cols || U.shape(1) != cols)
      throw py::value_error("hinv must have shape (in_features, in_features) = (" + std::to_string(cols) + ", " +
                            std::to_string(cols) + ")");
    check_factor_diagonal(ptr<T>(U), cols);
    const auto opt = sparsegpt_options(mode, blocksize, counts, keep, group, n_threads, rows, cols);
    auto mask = new_mask(rows, cols);
    py::array_t<double> losses(rows);
    uint8_t* mk = mask_data(mask);
    double* lo = losses.mutable_data();
    T* w = mutable_ptr<T>(W);
    run_released([&] {
      fp::sparsegpt_sweep(rows, cols, w, ptr<T>(U), opt, mk, lo);
      return Status{};
    });
    return py::make_tuple(mask, losses);
  });
}

// ------------------------------------------------------------------------------------------ packing

// Packing moves raw bits: any C-contiguous 2-D array of numbers with 2-, 4- or 8-byte elements (fastnips
// passes integer views of float16/bfloat16/float32/float64 tensors); never objects (holds refuses them:
// copied pointers without references would be freed twice).
std::string bits_error(const py::array& a, const char* name) {
  const std::string error = std::string(name) + " must be a numeric array with 2-, 4- or 8-byte elements";
  return is_numeric(a) ? error + ", got dtype " + dtype_str(a) : error;  // typed names a non-numeric dtype
}

// A rows x cols array of the dtype of `values`, written by unpack(U* out) (a pack.h kernel returning its
// Status) with the GIL released.
template <typename U, class Unpack>
py::array unpacked(const py::array& values, int64_t rows, int64_t cols, Unpack&& unpack) {
  py::array out(values.dtype(), std::vector<py::ssize_t>{rows, cols});
  U* o = mutable_ptr<U>(out);
  run_released([&] { return unpack(o); });
  return out;
}

py::tuple prune_pack_nm(const py::array& W, int keep, int group, int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  require_2d_contig(W, "weight");
  check_nm(keep, group, W.shape(1));
  return typed(BitsTypes{}, W, bits_error(W, "weight"), [&](auto u) -> py::tuple {
    using U = decltype(u);
    const int64_t rows = W.shape(0), cols = W.shape(1), pc = cols / group * keep;
    py::array values(W.dtype(), std::vector<py::ssize_t>{rows, pc});
    py::array_t<uint8_t> idx({rows, pc});
    U* v = mutable_ptr<U>(values);
    uint8_t* ix = idx.mutable_data();
    run_released([&] { return fp::pack_nm<U>(rows, cols, keep, group, ptr<U>(W), v, ix, n_threads); });
    return py::make_tuple(values, idx);
  });
}

py::array prune_unpack_nm(const py::array& values, const py::array& idx, int64_t cols, int keep, int group,
                          int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  require_2d_contig(values, "values");
  if (idx.ndim() != 2 || !(idx.flags() & py::array::c_style) || !is_dtype<uint8_t>(idx))
    throw py::value_error("indices must be a C-contiguous 2-D uint8 array");
  check_nm(keep, group, cols);
  const int64_t pc = cols / group * keep;
  if (values.shape(1) != pc || idx.shape(0) != values.shape(0) || idx.shape(1) != pc)
    throw py::value_error("values and indices must both have shape (rows, in_features * keep / group) = (rows, " +
                          std::to_string(pc) + ")");
  return typed(BitsTypes{}, values, bits_error(values, "values"), [&](auto u) {
    using U = decltype(u);
    const int64_t rows = values.shape(0);
    return unpacked<U>(values, rows, cols, [&](U* o) {
      return fp::unpack_nm<U>(rows, cols, keep, group, ptr<U>(values), ptr<uint8_t>(idx), o, n_threads);
    });
  });
}

py::tuple prune_pack_bitmask(const py::array& W, int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  require_2d_contig(W, "weight");
  return typed(BitsTypes{}, W, bits_error(W, "weight"), [&](auto u) -> py::tuple {
    using U = decltype(u);
    const int64_t rows = W.shape(0), cols = W.shape(1), nbytes = (cols + 7) / 8;
    const U* w = ptr<U>(W);
    py::array_t<int64_t> offsets(rows + 1);
    int64_t* off = offsets.mutable_data();
    run_released([&] {
      fp::bitmask_count<U>(rows, cols, w, off, n_threads);
      return Status{};
    });
    py::array values(W.dtype(), std::vector<py::ssize_t>{py::ssize_t(off[rows])});
    py::array_t<uint8_t> bitmask({rows, nbytes});
    U* v = mutable_ptr<U>(values);
    uint8_t* bm = bitmask.mutable_data();
    run_released([&] {
      fp::bitmask_fill<U>(rows, cols, w, off, v, bm, n_threads);
      return Status{};
    });
    return py::make_tuple(values, bitmask, offsets);
  });
}

py::array prune_unpack_bitmask(const py::array& values, const py::array& bitmask, const Int64Array& offsets,
                               int64_t cols, int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  require_1d_contig(values, "values");
  if (bitmask.ndim() != 2 || !(bitmask.flags() & py::array::c_style) || !is_dtype<uint8_t>(bitmask))
    throw py::value_error("bitmask must be a C-contiguous 2-D uint8 array");
  // cols / 8 + (cols % 8 != 0): ceil(cols / 8) without the signed overflow of (cols + 7) at 2^63 - 1 (UBSan)
  const int64_t want_bytes = cols < 0 ? -1 : cols / 8 + (cols % 8 != 0);
  if (cols < 0 || bitmask.shape(1) != want_bytes)
    throw py::value_error("bitmask must have ceil(in_features / 8) = " + std::to_string(want_bytes) +
                          " columns for in_features = " + std::to_string(cols) + ", got " +
                          std::to_string(bitmask.shape(1)));
  if (offsets.ndim() != 1 || offsets.shape(0) != bitmask.shape(0) + 1)
    throw py::value_error("row_offsets must have rows + 1 = " + std::to_string(bitmask.shape(0) + 1) + " entries");
  return typed(BitsTypes{}, values, bits_error(values, "values"), [&](auto u) {
    using U = decltype(u);
    const int64_t rows = bitmask.shape(0);
    return unpacked<U>(values, rows, cols, [&](U* o) {
      return fp::bitmask_unpack<U>(rows, cols, int64_t(values.shape(0)), ptr<U>(values), ptr<uint8_t>(bitmask),
                                   offsets.data(), o, n_threads);
    });
  });
}

}  // namespace

void bind_prune(py::module_& m) {
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
}

}  // namespace fastnips
