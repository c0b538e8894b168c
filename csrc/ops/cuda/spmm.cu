// CSR SpMM on the GPU (the cuda backend of fastnips.ops.spmm; host entry in common/cuda/cuda_api.h): one
// warp per row. For k == 1 the lanes stride over the row's nonzeros and reduce
// with shuffles (vector SpMV, Bell & Garland 2009); for k > 1 the lanes cover 32 consecutive columns of
// X, so every gather of an X row is coalesced, and the row's (index, value) pairs are broadcast.
#include <cuda_runtime.h>

#include "common/cuda/cuda_api.h"
#include "common/cuda/launch.cuh"
#include "common/dispatch.h"

namespace fastnips::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

// The row of the calling warp (one warp per row), the thread's lane and the row's nonzeros [p0, p1);
// false for the warps past the last row.
template <typename I>
__device__ bool warp_row(int64_t n_rows, const I* __restrict__ indptr, int64_t& row, int& lane, int64_t& p0,
                         int64_t& p1) {
  row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  lane = threadIdx.x & 31;
  if (row >= n_rows) return false;
  p0 = indptr[row];
  p1 = indptr[row + 1];
  return true;
}

template <typename T, typename I>
__global__ void spmv_warp_kernel(int64_t n_rows, const I* __restrict__ indptr,
                                 const I* __restrict__ indices, const T* __restrict__ data,
                                 const T* __restrict__ x, T* __restrict__ y) {
  int64_t row, p0, p1;
  int lane;
  if (!warp_row(n_rows, indptr, row, lane, p0, p1)) return;
  T acc = 0;
  for (int64_t p = p0 + lane; p < p1; p += 32) acc += data[p] * x[indices[p]];
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) y[row] = acc;
}

template <typename T, typename I>
__global__ void spmm_warp_kernel(int64_t n_rows, int64_t k, const I* __restrict__ indptr,
                                 const I* __restrict__ indices, const T* __restrict__ data,
                                 const T* __restrict__ X, T* __restrict__ Y) {
  int64_t row, p0, p1;
  int lane;
  if (!warp_row(n_rows, indptr, row, lane, p0, p1)) return;
  for (int64_t c0 = 0; c0 < k; c0 += 32) {
    const int64_t c = c0 + lane;
    T acc = 0;
    for (int64_t pb = p0; pb < p1; pb += 32) {
      // Each lane loads one (index, value) pair of this chunk; the warp then shares them.
      const int64_t mine = pb + lane;
      const int64_t j_l = mine < p1 ? int64_t(indices[mine]) : 0;
      const T a_l = mine < p1 ? data[mine] : T(0);
      const int cnt = int(min(int64_t(32), p1 - pb));
      for (int q = 0; q < cnt; ++q) {
        const int64_t j = __shfl_sync(0xffffffffu, j_l, q);
        const T a = __shfl_sync(0xffffffffu, a_l, q);
        if (c < k) acc += a * X[j * k + c];
      }
    }
    if (c < k) Y[row * k + c] = acc;
  }
}

template <typename T, typename I>
cudaError_t launch(int64_t n_rows, int64_t k, const void* indptr, const void* indices, const void* data,
                   const void* X, void* Y, cudaStream_t stream) {
  if (n_rows == 0 || k == 0) return cudaSuccess;
  const int threads = 32 * kWarpsPerBlock;
  const int64_t blocks = (n_rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const auto* ip = static_cast<const I*>(indptr);
  const auto* ix = static_cast<const I*>(indices);
  const auto* d = static_cast<const T*>(data);
  if (k == 1)
    spmv_warp_kernel<T, I><<<blocks, threads, 0, stream>>>(n_rows, ip, ix, d, static_cast<const T*>(X),
                                                          static_cast<T*>(Y));
  else
    spmm_warp_kernel<T, I><<<blocks, threads, 0, stream>>>(n_rows, k, ip, ix, d, static_cast<const T*>(X),
                                                          static_cast<T*>(Y));
  return cudaGetLastError();
}

}  // namespace

Status spmm_csr(int64_t n_rows, int64_t k, std::uintptr_t indptr, std::uintptr_t indices, std::uintptr_t data,
                std::uintptr_t X, std::uintptr_t Y, int index_bits, int dtype_bits, std::uintptr_t stream) {
  auto ptr = [](std::uintptr_t p) { return reinterpret_cast<void*>(p); };
  cudaError_t err = cudaSuccess;
  const bool supported = dispatch_widths(dtype_bits, index_bits, [&](auto t, auto i) {
    err = launch<decltype(t), decltype(i)>(n_rows, k, ptr(indptr), ptr(indices), ptr(data), ptr(X), ptr(Y),
                                           reinterpret_cast<cudaStream_t>(stream));
  });
  if (!supported) return Status::runtime_error("unsupported dtype/index width");
  return launch_status(err);
}

}  // namespace fastnips::cuda
