// Lorenz-63 driver kernels for fastnips.diffusion.drivers (backend "cpp"). Plain C++17 with OpenMP: no Python,
// no pybind11.
//
// lorenz_rk4 advances d independent copies of
//     x' = sigma (y - x),   y' = x (rho - z) - y,   z' = x y - beta z
// by classical fourth-order Runge-Kutta steps of size dt, in float64. The state is structure-of-arrays,
// state[0..d) = x, state[d..2d) = y, state[2d..3d) = z, advanced in place; a block of copies is held in registers
// over all substeps. Every record_every steps the x coordinates are written as one row of obs. The arithmetic is
// written in exactly the order of the numpy reference (python/fastnips/diffusion/reference.py); builds without
// floating-point contraction (the default for -std=c++17) agree with it bit for bit.
//
// pool_draw fills out[i] = pool[index(counter0 + i)] for i in [0, n), the index a counter-based hash of the
// element's global position in the stream: i.i.d. uniform over the pool, reproducible for any chunking of the
// stream and any thread count.
#pragma once
#include <cstdint>

namespace fastnips::diffusion {

// splitmix64's output function (Steele, Lea, Flood 2014): a bijection of uint64 with full avalanche.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The pool index of stream position c under key: the top 32 bits of mix64(c * golden + key) scaled to
// [0, pool_size) by a multiply-shift (pool_size <= 2^32; bias below pool_size / 2^32).
inline uint64_t pool_index(uint64_t c, uint64_t key, uint64_t pool_size) {
  return ((mix64(c * 0x9E3779B97F4A7C15ull + key) >> 32) * pool_size) >> 32;
}

// d copies, n_steps RK4 steps of dt; record_every > 0 writes n_steps / record_every rows of d x-values to obs
// (row r: x after (r + 1) * record_every steps); record_every == 0 writes nothing. Needs n_steps >= 0, d >= 0 and
// n_steps % record_every == 0 when recording (the caller checks).
void lorenz_rk4(int64_t d, double* state, int64_t n_steps, double dt, double sigma, double rho, double beta,
                int64_t record_every, double* obs, int n_threads);

// out[i] = pool[pool_index(counter0 + i, key, pool_size)], i in [0, n). T = float or double.
template <typename T>
void pool_draw(const T* pool, int64_t pool_size, uint64_t key, uint64_t counter0, int64_t n, T* out, int n_threads);

}  // namespace fastnips::diffusion
