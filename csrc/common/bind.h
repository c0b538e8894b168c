// Shared by the bind files (csrc/<field>/bind.cpp, csrc/module.cpp), and only by them: the one place where
// pybind11 meets the plain C++ of csrc/. Converting and checking arrays, picking the C++ type of a numpy
// dtype (typed), running a native call with the GIL released and turning its Status into the Python
// exception (check).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/csr.h"
#include "common/dispatch.h"
#include "common/interrupt.h"
#include "common/status.h"
#include "common/threads.h"
#ifdef FASTNIPS_WITH_CUDA
#include "common/cuda/cuda_api.h"  // the CUDA entry points the fields bind
#endif

namespace fastnips {
namespace py = pybind11;
}

namespace fastnips::bind {

using Int64Array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using Int32Array = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

// ----------------------------------------------------------------------------------------- errors

// The Python exception of a Status (ValueError, TypeError or RuntimeError); nothing when it is ok.
// `context` goes before the message (e.g. the name of the op).
inline void check(const Status& st, const std::string& context = "") {
  switch (st.kind) {
    case Status::kOk: return;
    case Status::kValue: throw py::value_error(context + st.message);
    case Status::kType: throw py::type_error(context + st.message);
    case Status::kRuntime: break;
    case Status::kInterrupted:  // the exception a signal handler raised (KeyboardInterrupt) is pending
      if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw py::error_already_set();
  }
  throw std::runtime_error(context + st.message);  // pybind11 raises it as RuntimeError
}

// The interrupt hook of common/interrupt.h for a call made from Python's main thread (the only one that
// runs signal handlers): takes the GIL back for a moment and runs the handlers; true when one raised (its
// exception, KeyboardInterrupt for Ctrl-C, stays pending for check()).
inline bool python_signals() {
  const PyGILState_STATE gil = PyGILState_Ensure();
  const bool raised = PyErr_CheckSignals() != 0;
  PyGILState_Release(gil);
  return raised;
}

// Whether the calling thread (holding the GIL) is Python's main thread: threading.main_thread(), looked up
// once (its ident never changes).
inline bool on_main_thread() {
  static std::atomic<unsigned long> main_ident{0};
  unsigned long id = main_ident.load();
  if (id == 0) {
    id = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
    main_ident.store(id);
  }
  return PyThread_get_thread_ident() == id;
}

// Runs fn() with the GIL released (pure C++ from there on) and raises its Status: fn returns one, or
// throws a StatusError. The call can be interrupted (common/interrupt.h): on the main thread its kernels
// poll Python's signal handlers every few milliseconds and a Ctrl-C ends it with KeyboardInterrupt.
template <class Fn>
void run_released(Fn&& fn, const std::string& context = "") {
  Status st;
  std::atomic<bool> stop{false};
  const InterruptHook hook = on_main_thread() ? &python_signals : nullptr;
  {
    py::gil_scoped_release release;
    const InterruptScope scope(hook, &stop);
    try {
      st = fn();
    } catch (const StatusError& e) {
      st = e.status();
    }
  }
  if (stop.load() && st.kind != Status::kInterrupted) {
    // the kernel finished anyway: a signal handler's exception may be pending; raise it rather than lose it
    if (PyErr_Occurred()) throw py::error_already_set();
  }
  check(st, context);
}

// ---------------------------------------------------------------------------------------- threads

// The most threads an `n_threads` argument may ask for: more is taken for a mistake (libgomp cannot create
// 100,000 threads; it fails or exhausts the stack and address space, ending the process).
constexpr int64_t kMaxThreads = 1024;

// The thread count a kernel gets for the `n_threads` argument of every binding: 0 stays 0 (OpenMP's
// default), 1..kMaxThreads is capped at the hardware threads (more only oversubscribes), anything else is a
// ValueError naming n_threads. Every binding taking n_threads calls this before any work.
inline int checked_threads(int64_t n_threads) {
  if (n_threads < 0 || n_threads > kMaxThreads)
    throw py::value_error("n_threads must lie in [0, " + std::to_string(kMaxThreads) +
                          "] (0: OpenMP's default; more than the hardware threads are capped), got " +
                          std::to_string(n_threads));
  return int(std::min<int64_t>(n_threads, std::max(hardware_threads(), 1)));
}

// ------------------------------------------------------------------------------------------ types

// The dtype of `a` as numpy writes it ('float64', '>i4', 'object'), for messages.
inline std::string dtype_str(const py::array& a) { return py::str(a.dtype()).cast<std::string>(); }

// Whether `a` holds numbers (numpy kinds b, i, u, f, c): never objects (pointers with references), strings,
// datetimes or structured records, which no kernel may copy as raw bits.
inline bool is_numeric(const py::array& a) {
  const char k = a.dtype().kind();
  return k == 'b' || k == 'i' || k == 'u' || k == 'f' || k == 'c';
}

// Whether `a`'s elements are in the machine's byte order ('>i4' on a little-endian machine is not).
inline bool native_order(const py::array& a) { return a.dtype().attr("isnative").cast<bool>(); }

// `error` with the reason an array of the right type was refused: a non-native byte order or a non-numeric
// dtype (named), so that the message does not blame the element type alone.
inline std::string dtype_error(const py::array& a, const std::string& error) {
  if (!is_numeric(a)) return error + "; got the non-numeric dtype " + dtype_str(a);
  if (!native_order(a))
    return error + "; got " + dtype_str(a) + ", not in the native byte order: convert with " +
           "a.astype(a.dtype.newbyteorder('='))";
  return error;
}

// Whether `a` holds elements of type T: the exact dtype (native byte order) for float and int types; the
// element size for the unsigned types of BitsTypes (raw bits of any numeric format of that width, never
// objects: copying their pointers without references frees them twice).
template <typename T>
bool holds(const py::array& a) {
  if constexpr (std::is_unsigned_v<T>) {
    return a.itemsize() == py::ssize_t(sizeof(T)) && is_numeric(a);
  } else {
    return py::dtype::of<T>().is(a.dtype());
  }
}

template <typename T>
bool is_dtype(const py::array& a) {
  return py::dtype::of<T>().is(a.dtype());
}

// fn(T{}) for the type T of the list (FloatTypes, IndexTypes, BitsTypes) that `a` holds; a TypeError with
// `error` when it holds none. Every T must give fn the same return type.
template <class List, class Fn>
auto typed(List list, const py::array& a, const std::string& error, Fn&& fn) {
  using R = decltype(fn(std::declval<first_type<List>>()));
  std::optional<R> out;
  if (!dispatch(list, [&](auto t) { return holds<decltype(t)>(a); }, [&](auto t) { out.emplace(fn(t)); }))
    throw py::type_error(dtype_error(a, error));
  return std::move(*out);
}

// ----------------------------------------------------------------------------------------- arrays

inline void require_1d_contig(const py::array& a, const char* name) {
  if (a.ndim() != 1) throw py::value_error(std::string(name) + " must be 1-D, got ndim=" + std::to_string(a.ndim()));
  if (!(a.flags() & py::array::c_style)) throw py::value_error(std::string(name) + " must be C-contiguous");
}

// A TypeError naming `name` unless `a` holds numbers in the machine's byte order (the element type is checked
// by the caller).
inline void require_native(const py::array& a, const std::string& name) {
  if (!is_numeric(a) || !native_order(a))
    throw py::type_error(dtype_error(a, name + " must be a numeric array in the machine's byte order"));
}

inline void require_2d_contig(const py::array& a, const char* name) {
  if (a.ndim() != 2 || !(a.flags() & py::array::c_style))
    throw py::value_error(std::string(name) + " must be a C-contiguous 2-D array");
}

// An array (or array-like) of integers narrowed to C-contiguous int32, refused when a value does not fit: a
// ValueError naming `name` and the value (a silent wrap would turn id 2^32 + 1 into id 1), a TypeError when
// it holds no integers (an empty array of any dtype is empty).
inline Int32Array checked_int32(const py::object& obj, const std::string& name) {
  const auto a = py::array::ensure(obj);  // lists of pairs as well
  if (!a) throw py::type_error(name + " must be an array of integers");
  const char k = a.dtype().kind();
  if (k == 'i' && a.itemsize() == 4) return Int32Array::ensure(a);  // int32 already: no check, no copy if C-order
  if (a.size() > 0 && k != 'i' && k != 'u' && k != 'b')
    throw py::type_error(
        dtype_error(a, name + " must hold integers" + (is_numeric(a) ? ", got " + dtype_str(a) : std::string())));
  if (k == 'u' && a.itemsize() == 8 && a.size() > 0) {  // above 2^63: negative in int64
    const auto big = a.attr("max")().cast<uint64_t>();
    if (big > uint64_t(INT32_MAX))
      throw py::value_error(name + " holds " + std::to_string(big) + ", outside int32 (ids must be < 2^31)");
  }
  const auto wide = Int64Array::ensure(a);
  if (!wide) throw py::error_already_set();
  const int64_t* w = wide.data();
  for (py::ssize_t i = 0; i < wide.size(); ++i)
    if (w[i] < INT32_MIN || w[i] > INT32_MAX)
      throw py::value_error(name + " holds " + std::to_string(w[i]) + ", outside int32 (ids must be < 2^31)");
  return Int32Array::ensure(wide);
}

// A ValueError naming `name`, the first flat index and the value when the float array `a` (C-contiguous,
// float32 or float64; other dtypes are left to the dtype checks) holds NaN or inf: refused at the binding,
// since NaN compares false and would turn into a silently wrong answer (a zero right-hand side, residual 0).
inline void require_finite(const py::array& a, const std::string& name) {
  auto scan = [&](auto t) {
    using T = decltype(t);
    const T* p = static_cast<const T*>(a.data());
    for (py::ssize_t i = 0; i < a.size(); ++i)
      if (!std::isfinite(p[i]))
        throw py::value_error(name + " must be finite, got " + std::to_string(double(p[i])) + " at flat index " +
                              std::to_string(i));
  };
  if (!(a.flags() & py::array::c_style)) return;
  if (holds<double>(a)) scan(double{});
  else if (holds<float>(a)) scan(float{});
}

template <typename T>
const T* ptr(const py::array& a) {
  return static_cast<const T*>(a.data());
}

template <typename T>
T* mutable_ptr(py::array& a) {
  return static_cast<T*>(a.mutable_data());
}

template <typename T>
py::array_t<T> to_numpy(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

// --------------------------------------------------------------------------------------------- CSR

// The arrays of a CSR matrix handed to a sparse op, and the dense operand that shares its value dtype.
struct CsrArgs {
  const py::array& indptr;
  const py::array& indices;
  const py::array& data;
  int64_t n_rows() const { return int64_t(indptr.shape(0)) - 1; }
  int64_t nnz() const { return int64_t(indices.shape(0)); }
};

// The checks every sparse op (spmm, the Tikhonov solves) makes before its kernel: indptr, indices and data
// 1-D and C-contiguous, len(indptr) >= 1, len(indices) == len(data); `operand` (named `name`) a
// C-contiguous 2-D array with `rows` rows (`rows_error`: the message when not); indptr and indices one
// integer dtype (int32/int64); data and the operand one float dtype (float32/float64); all four numeric in the
// machine's byte order (a big-endian array is refused by name, not as the wrong type). The structure of
// indptr (check_indptr) is checked here, a ValueError prefixed with `prefix`; the column indices are
// checked by the kernels, which read them anyway (spmm on the fly).
inline void check_csr(const CsrArgs& A, const py::array& operand, const char* name, int64_t rows,
                      const std::string& rows_error, const std::string& prefix) {
  require_1d_contig(A.indptr, "indptr");
  require_1d_contig(A.indices, "indices");
  require_1d_contig(A.data, "data");
  require_2d_contig(operand, name);
  if (A.indptr.shape(0) < 1) throw py::value_error("indptr must have at least one entry");
  if (A.indices.shape(0) != A.data.shape(0))
    throw py::value_error("indices and data must have the same length, got " + std::to_string(A.indices.shape(0)) +
                          " and " + std::to_string(A.data.shape(0)));
  if (operand.shape(0) != rows) throw py::value_error(rows_error);
  require_native(A.indptr, "indptr");
  require_native(A.indices, "indices");
  require_native(A.data, "data");
  require_native(operand, name);
  if (!A.indptr.dtype().is(A.indices.dtype()))
    throw py::type_error("indptr and indices must share one integer dtype (int32 or int64)");
  if (!A.data.dtype().is(operand.dtype()))
    throw py::type_error(std::string("data and ") + name + " must share one dtype (float32 or float64)");
  if (!(holds<int32_t>(A.indptr) || holds<int64_t>(A.indptr)))
    throw py::type_error("indptr/indices must be int32 or int64");
  if (!(holds<float>(A.data) || holds<double>(A.data)))
    throw py::type_error(std::string("data/") + name + " must be float32 or float64");
  typed(IndexTypes{}, A.indptr, "", [&](auto i) {
    using I = decltype(i);
    check(csr_error(check_indptr(A.n_rows(), A.nnz(), ptr<I>(A.indptr)), prefix));
    return 0;
  });
}

// fn(T{}, I{}) for the value type T of data and the index type I of indptr (after check_csr).
template <class Fn>
auto typed_csr(const CsrArgs& A, Fn&& fn) {
  return typed(IndexTypes{}, A.indptr, "indptr/indices must be int32 or int64", [&](auto i) {
    return typed(FloatTypes{}, A.data, "data must be float32 or float64", [&](auto t) { return fn(t, i); });
  });
}

}  // namespace fastnips::bind
