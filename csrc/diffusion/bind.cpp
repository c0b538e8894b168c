// Bindings of the diffusion field: the Lorenz-63 driver kernels of diffusion/lorenz.h.
#include <cmath>

#include "common/bind.h"
#include "diffusion/lorenz.h"

namespace fastnips {
namespace {

using namespace bind;
namespace fd = diffusion;

void check_lorenz(const py::array& state, int64_t n_steps, double dt, double sigma, double rho, double beta,
                  int64_t record_every) {
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
}

// Lorenz-63 RK4 of d copies, state (3, d) float64 C-contiguous, advanced in place; returns the (n_steps /
// record_every, d) float64 x records, or None when record_every == 0.
py::object diffusion_lorenz_rk4(py::array state, int64_t n_steps, double dt, double sigma, double rho, double beta,
                                int64_t record_every, int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  check_lorenz(state, n_steps, dt, sigma, rho, beta, record_every);
  const int64_t d = state.shape(1);
  double* s = mutable_ptr<double>(state);
  py::object out = py::none();  // Python objects only here, with the GIL held (not in run_released)
  double* o = nullptr;
  if (record_every > 0) {
    py::array_t<double> obs({n_steps / record_every, d});
    o = obs.mutable_data();
    out = std::move(obs);
  }
  run_released([&] {
    fd::lorenz_rk4(d, s, n_steps, dt, sigma, rho, beta, record_every, o, n_threads);
    return Status{};
  });
  return out;
}

// n values drawn i.i.d. from the 1-D pool: out[i] = pool[hash(counter0 + i, key)]; same dtype as the pool.
py::array diffusion_pool_draw(const py::array& pool, uint64_t key, uint64_t counter0, int64_t n,
                              int64_t n_threads_arg) {
  const int n_threads = checked_threads(n_threads_arg);
  require_1d_contig(pool, "pool");
  const int64_t p = pool.shape(0);
  if (p < 1 || p > (int64_t(1) << 32))
    throw py::value_error("pool must hold between 1 and 2^32 values, got " + std::to_string(p));
  if (n < 0) throw py::value_error("n must be >= 0, got " + std::to_string(n));
  return typed(FloatTypes{}, pool, "pool must be float32 or float64", [&](auto t) -> py::array {
    using T = decltype(t);
    py::array_t<T> out(n);
    T* dst = out.mutable_data();
    run_released([&] {
      fd::pool_draw(ptr<T>(pool), p, key, counter0, n, dst, n_threads);
      return Status{};
    });
    return std::move(out);
  });
}

}  // namespace

void bind_diffusion(py::module_& m) {
  m.def("diffusion_lorenz_rk4", &diffusion_lorenz_rk4, py::arg("state"), py::arg("n_steps"), py::arg("dt"),
        py::arg("sigma") = 10.0, py::arg("rho") = 28.0, py::arg("beta") = 8.0 / 3.0, py::arg("record_every") = 0,
        py::arg("n_threads") = 0,
        "RK4 of d independent Lorenz-63 copies, state (3, d) float64 advanced in place; returns the x records "
        "(n_steps / record_every, d) or None. See fastnips.diffusion.drivers.lorenz_rk4.");
  m.def("diffusion_pool_draw", &diffusion_pool_draw, py::arg("pool"), py::arg("key"), py::arg("counter0"),
        py::arg("n"), py::arg("n_threads") = 0,
        "n i.i.d. values out[i] = pool[hash(counter0 + i, key)] (counter-based, chunking-invariant). See "
        "fastnips.diffusion.drivers.Lorenz (shuffle='time').");
}

}  // namespace fastnips
