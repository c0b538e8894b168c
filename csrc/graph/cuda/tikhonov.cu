// The fused Chebyshev step of the device Tikhonov solver (fastnips.graph._device, backend "cuda"): one
// sparse pass of T_{k+1} = 2 (L T_k - T_k) - T_{k-1} with acc += c_{k+1} T_{k+1} in its epilogue, and on
// the last stage acc += q o V and the float64 dots V . acc (see cuda_api.h for the exact contract).
// Paper: arXiv 2605.28578 (generalised Tikhonov layer); the solver is described in fastnips.graph.solve.
//
// Layout: a sub-warp of G lanes (G = 4, 8, 16 or 32) per row. Its lanes split into `col_lanes` lanes over
// consecutive columns (so each gather of a row of T_k is coalesced, as in spmm.cu for k > 1) times
// G / col_lanes lanes over the row's nonzeros (as spmm.cu's vector SpMV for k == 1), reduced by xor
// shuffles inside the sub-warp. col_lanes = next_pow2(min(F, 32)); G = col_lanes x next_pow2(average
// degree), clamped to [4, 32], so narrow blocks (F = 1..8, the common case of few right-hand sides) keep
// every lane busy on graphs of average degree 4 and up.
//
// A block owns kChebRowsPerPartial = 32 consecutive rows (128 threads for G = 4, else 256: 32 sub-warps of
// one row, 16 of two or 8 of four). The dots are reduced deterministically: each lane sums its rows in
// order, the block sums its sub-warps in order through shared memory, and block b writes row b of the
// caller's partials (no atomics, so a run is bitwise reproducible).
#include <cuda_runtime.h>

#include <cstdint>

#include "common/cuda/cuda_api.h"
#include "common/cuda/launch.cuh"
#include "common/dispatch.h"

namespace fastnips::cuda {
namespace {

constexpr int kRows = int(kChebRowsPerPartial);
constexpr int kMaxThreads = 256;

template <typename T, typename I, int G>
__global__ void __launch_bounds__(kMaxThreads)
    cheb_step_kernel(int64_t n, int64_t F, int col_lanes, const I* __restrict__ indptr,
                     const I* __restrict__ indices, const T* __restrict__ data, const T* __restrict__ cur,
                     const T* prev, T* next, T* acc, const T* V, const T* q, double* dots, T c0, T ck,
                     bool first) {
  __shared__ double partial[kRows][32];  // [sub-warp][column lane]
  const int tid = int(threadIdx.x);
  const int groups = int(blockDim.x) / G;
  const int group = tid / G, lane = tid % G;
  const int col_lane = lane % col_lanes, nz_lane = lane / col_lanes, nz_lanes = G / col_lanes;
  // the lanes of this sub-warp, for the shuffles (a sub-warp never straddles a warp: G divides 32)
  const unsigned mask = G == 32 ? 0xffffffffu : (((1u << G) - 1u) << ((tid & 31) / G * G));
  const int64_t row0 = int64_t(blockIdx.x) * kRows;
  const int64_t row_end = row0 + kRows < n ? row0 + kRows : n;
  for (int64_t cb = 0; cb < F; cb += col_lanes) {  // uniform over the block
    const int64_t c = cb + col_lane;
    const bool col_ok = c < F;
    double dsum = 0.0;
    for (int64_t row = row0 + group; row < row_end; row += groups) {  // uniform over the sub-warp
      const int64_t p1 = int64_t(indptr[row + 1]);
      T s = T(0);
      if (col_ok)
        for (int64_t p = int64_t(indptr[row]) + nz_lane; p < p1; p += nz_lanes)
          s += data[p] * cur[int64_t(indices[p]) * F + c];
      for (int off = col_lanes; off < G; off <<= 1) s += __shfl_xor_sync(mask, s, off, G);
      if (nz_lane == 0 && col_ok) {
        const int64_t at = row * F + c;
        const T ci = cur[at];
        T t, a;
        if (first) {
          t = s - ci;
          a = c0 * ci + ck * t;
        } else {
          t = T(2) * (s - ci) - prev[at];  // read before `next` (which may alias prev) is written
          a = acc[at] + ck * t;
        }
        if (next) next[at] = t;
        if (q || dots) {
          const T v = V[at];
          if (q) a += q[row] * v;
          dsum += double(v) * double(a);
        }
        acc[at] = a;
      }
    }
    if (dots) {  // uniform over the block: every thread reaches the barriers
      if (nz_lane == 0) partial[group][col_lane] = dsum;
      __syncthreads();
      if (tid < col_lanes && cb + tid < F) {
        double total = 0.0;
        for (int g = 0; g < groups; ++g) total += partial[g][tid];
        dots[int64_t(blockIdx.x) * F + cb + tid] = total;
      }
      __syncthreads();
    }
  }
}

int64_t next_pow2(int64_t x, int64_t cap) {
  int64_t p = 1;
  while (p < x && p < cap) p <<= 1;
  return p;
}

template <typename T, typename I>
cudaError_t launch(int64_t n, int64_t nnz, int64_t F, const void* indptr, const void* indices, const void* data,
                   const void* cur, const void* prev, void* next, void* acc, const void* V, const void* q,
                   double* dots, double c0, double ck, bool first, cudaStream_t stream) {
  if (n == 0 || F == 0) return cudaSuccess;
  const int64_t col_lanes = next_pow2(F, 32);
  const int64_t avg = (nnz + n - 1) / n;
  int64_t G = col_lanes * next_pow2(avg, 32);
  G = G < 4 ? 4 : G > 32 ? 32 : G;
  const int threads = int(G) * kRows < kMaxThreads ? int(G) * kRows : kMaxThreads;
  const int64_t blocks = (n + kRows - 1) / kRows;
  const auto* ip = static_cast<const I*>(indptr);
  const auto* ix = static_cast<const I*>(indices);
  const auto* d = static_cast<const T*>(data);
  const auto* cu = static_cast<const T*>(cur);
  const auto* pv = static_cast<const T*>(prev);
  auto* nx = static_cast<T*>(next);
  auto* ac = static_cast<T*>(acc);
  const auto* v = static_cast<const T*>(V);
  const auto* qq = static_cast<const T*>(q);
  const int cl = int(col_lanes < G ? col_lanes : G);
#define FASTNIPS_CHEB_LAUNCH(GG)                                                                            \
  cheb_step_kernel<T, I, GG><<<dim3(unsigned(blocks)), threads, 0, stream>>>(n, F, cl, ip, ix, d, cu, pv, nx, \
                                                                             ac, v, qq, dots, T(c0), T(ck), first)
  switch (G) {
    case 4: FASTNIPS_CHEB_LAUNCH(4); break;
    case 8: FASTNIPS_CHEB_LAUNCH(8); break;
    case 16: FASTNIPS_CHEB_LAUNCH(16); break;
    default: FASTNIPS_CHEB_LAUNCH(32);
  }
#undef FASTNIPS_CHEB_LAUNCH
  return cudaGetLastError();
}

}  // namespace

namespace {

// The argument checks of tikhonov_cheb_step (see cuda_api.h); "" when they pass.
const char* cheb_step_argument_error(int64_t n, int64_t nnz, int64_t F, std::uintptr_t indptr,
                                     std::uintptr_t indices, std::uintptr_t data, std::uintptr_t cur,
                                     std::uintptr_t prev, std::uintptr_t next, std::uintptr_t acc, std::uintptr_t V,
                                     std::uintptr_t q, std::uintptr_t dots, bool first) {
  if (n < 0 || nnz < 0 || F < 0) return "negative size";
  if ((n / kRows + 1) > int64_t(0x7fffffff)) return "too many rows for one launch";
  if (!first && prev == 0) return "prev (T_{k-1}) is required after the first stage";
  if ((q != 0 || dots != 0) && V == 0) return "V is required with q or dots";
  if (n > 0 && F > 0 && (indptr == 0 || cur == 0 || acc == 0 || (nnz > 0 && (indices == 0 || data == 0))))
    return "null device pointer";
  if (next != 0 && next == cur) return "next must not alias cur";
  if (acc == cur) return "acc must not alias cur";
  return "";
}

}  // namespace

Status tikhonov_cheb_step(int64_t n, int64_t nnz, int64_t F, std::uintptr_t indptr, std::uintptr_t indices,
                          std::uintptr_t data, std::uintptr_t cur, std::uintptr_t prev, std::uintptr_t next,
                          std::uintptr_t acc, std::uintptr_t V, std::uintptr_t q, std::uintptr_t dots, double c0,
                          double ck, bool first, int index_bits, int dtype_bits, std::uintptr_t stream) {
  const char* bad = cheb_step_argument_error(n, nnz, F, indptr, indices, data, cur, prev, next, acc, V, q, dots, first);
  if (*bad) return Status::runtime_error(bad);
  auto ptr = [](std::uintptr_t p) { return reinterpret_cast<void*>(p); };
  cudaError_t err = cudaSuccess;
  const bool supported = dispatch_widths(dtype_bits, index_bits, [&](auto t, auto i) {
    err = launch<decltype(t), decltype(i)>(n, nnz, F, ptr(indptr), ptr(indices), ptr(data), ptr(cur), ptr(prev),
                                           ptr(next), ptr(acc), ptr(V), ptr(q), reinterpret_cast<double*>(dots), c0,
                                           ck, first, reinterpret_cast<cudaStream_t>(stream));
  });
  if (!supported) return Status::runtime_error("unsupported dtype/index width");
  return launch_status(err);
}

}  // namespace fastnips::cuda
