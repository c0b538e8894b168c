#include "diffusion/lorenz.h"

#include "common/threads.h"

namespace fastnips::diffusion {
namespace {

// Copies per block: 16 float64 lanes = two AVX-512 (four AVX2) registers per variable, enough independent
// chains to hide the latency of one RK4 stage.
constexpr int kLanes = 16;

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define FASTNIPS_LORENZ_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define FASTNIPS_LORENZ_CLONES
#endif

// One block of up to kLanes copies [i0, i0 + m): load, n_steps steps in registers, record, store. Lanes past m
// run the zero state (a fixed point) and are never stored.
FASTNIPS_LORENZ_CLONES void block_rk4(int64_t d, int64_t i0, int m, double* __restrict state, int64_t n_steps,
                                      double dt, double sigma, double rho, double beta, int64_t record_every,
                                      double* __restrict obs) {
  double x[kLanes], y[kLanes], z[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const bool ok = l < m;
    x[l] = ok ? state[i0 + l] : 0.0;
    y[l] = ok ? state[d + i0 + l] : 0.0;
    z[l] = ok ? state[2 * d + i0 + l] : 0.0;
  }
  const double h2 = 0.5 * dt, h6 = dt / 6.0;
  const int64_t chunk = record_every > 0 ? record_every : n_steps;
  int64_t row = 0;
  for (int64_t done = 0; done < n_steps; done += chunk, ++row) {
    for (int64_t s = 0; s < chunk; ++s) {
#pragma omp simd
      for (int l = 0; l < kLanes; ++l) {
        // the same expressions, in the same order, as reference.lorenz_rk4_reference
        const double x0 = x[l], y0 = y[l], z0 = z[l];
        const double ax = sigma * (y0 - x0), ay = x0 * (rho - z0) - y0, az = x0 * y0 - beta * z0;
        const double x1 = x0 + h2 * ax, y1 = y0 + h2 * ay, z1 = z0 + h2 * az;
        const double bx = sigma * (y1 - x1), by = x1 * (rho - z1) - y1, bz = x1 * y1 - beta * z1;
        const double x2 = x0 + h2 * bx, y2 = y0 + h2 * by, z2 = z0 + h2 * bz;
        const double cx = sigma * (y2 - x2), cy = x2 * (rho - z2) - y2, cz = x2 * y2 - beta * z2;
        const double x3 = x0 + dt * cx, y3 = y0 + dt * cy, z3 = z0 + dt * cz;
        const double ex = sigma * (y3 - x3), ey = x3 * (rho - z3) - y3, ez = x3 * y3 - beta * z3;
        x[l] = x0 + h6 * (ax + 2.0 * bx + 2.0 * cx + ex);
        y[l] = y0 + h6 * (ay + 2.0 * by + 2.0 * cy + ey);
        z[l] = z0 + h6 * (az + 2.0 * bz + 2.0 * cz + ez);
      }
    }
    if (record_every > 0)
      for (int l = 0; l < m; ++l) obs[row * d + i0 + l] = x[l];
  }
  for (int l = 0; l < m; ++l) {
    state[i0 + l] = x[l];
    state[d + i0 + l] = y[l];
    state[2 * d + i0 + l] = z[l];
  }
}

template <typename T>
FASTNIPS_LORENZ_CLONES void draw_range(const T* __restrict pool, uint64_t pool_size, uint64_t key,
                                       uint64_t counter0, int64_t i0, int64_t i1, T* __restrict out) {
  for (int64_t i = i0; i < i1; ++i) out[i] = pool[pool_index(counter0 + uint64_t(i), key, pool_size)];
}

}  // namespace

void lorenz_rk4(int64_t d, double* state, int64_t n_steps, double dt, double sigma, double rho, double beta,
                int64_t record_every, double* obs, int n_threads) {
  if (d <= 0 || n_steps <= 0) return;
  const int64_t n_blocks = (d + kLanes - 1) / kLanes;
  // ~100 flops per copy-step: below ~2^16 copy-steps one thread does it all
  const int threads = fastnips::thread_count(n_threads, d * n_steps, int64_t(1) << 16);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t i0 = b * kLanes;
    const int m = int(d - i0 < kLanes ? d - i0 : kLanes);
    block_rk4(d, i0, m, state, n_steps, dt, sigma, rho, beta, record_every, obs);
  }
}

template <typename T>
void pool_draw(const T* pool, int64_t pool_size, uint64_t key, uint64_t counter0, int64_t n, T* out, int n_threads) {
  if (n <= 0) return;
  const int threads = fastnips::thread_count(n_threads, n, int64_t(1) << 15);
  const int64_t chunk = 4096;
  const int64_t n_chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
  for (int64_t c = 0; c < n_chunks; ++c) {
    const int64_t i0 = c * chunk, i1 = i0 + chunk < n ? i0 + chunk : n;
    draw_range(pool, uint64_t(pool_size), key, counter0, i0, i1, out);
  }
}

template void pool_draw<float>(const float*, int64_t, uint64_t, uint64_t, int64_t, float*, int);
template void pool_draw<double>(const double*, int64_t, uint64_t, uint64_t, int64_t, double*, int);

}  // namespace fastnips::diffusion
