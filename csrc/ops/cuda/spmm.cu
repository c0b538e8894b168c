// CSR SpMM on the GPU: one warp per row. For k == 1 the lanes stride over the row's nonzeros and reduce
// with shuffles (vector SpMV, Bell & Garland 2009); for k > 1 the lanes cover 32 consecutive columns of
// X, so every gather of an X row is coalesced, and the row's (index, value) pairs are broadcast.
#include <cuda_runtime.h>

#include "common/cuda/cuda_api.h"

namespace fastnips::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

template <typename T, typename I>
__global__ void spmv_warp_kernel(int64_t n_rows, const I* __restrict__ indptr,
                                 const I* __restrict__ indices, const T* __restrict__ data,
                                 const T* __restrict__ x, T* __restrict__ y) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (row >= n_rows) return;
  const int64_t p0 = indptr[row], p1 = indptr[row + 1];
  T acc = 0;
  for (int64_t p = p0 + lane; p < p1; p += 32) acc += data[p] * x[indices[p]];
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) y[row] = acc;
}

template <typename T, typename I>
__global__ void spmm_warp_kernel(int64_t n_rows, int64_t k, const I* __restrict__ indptr,
                                 const I* __restrict__ indices, const T* __restrict__ data,
                                 const T* __restrict__ X, T* __restrict__ Y) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (row >= n_rows) return;
  const int64_t p0 = indptr[row], p1 = indptr[row + 1];
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

std::string spmm_csr(int64_t n_rows, int64_t k, std::uintptr_t indptr, std::uintptr_t indices,
                     std::uintptr_t data, std::uintptr_t X, std::uintptr_t Y, int index_bits,
                     int dtype_bits, std::uintptr_t stream) {
  auto* s = reinterpret_cast<cudaStream_t>(stream);
  auto* ip = reinterpret_cast<const void*>(indptr);
  auto* ix = reinterpret_cast<const void*>(indices);
  auto* d = reinterpret_cast<const void*>(data);
  auto* x = reinterpret_cast<const void*>(X);
  auto* y = reinterpret_cast<void*>(Y);
  cudaError_t err;
  if (dtype_bits == 32 && index_bits == 32) err = launch<float, int32_t>(n_rows, k, ip, ix, d, x, y, s);
  else if (dtype_bits == 32 && index_bits == 64) err = launch<float, int64_t>(n_rows, k, ip, ix, d, x, y, s);
  else if (dtype_bits == 64 && index_bits == 32) err = launch<double, int32_t>(n_rows, k, ip, ix, d, x, y, s);
  else if (dtype_bits == 64 && index_bits == 64) err = launch<double, int64_t>(n_rows, k, ip, ix, d, x, y, s);
  else return "unsupported dtype/index width";
  return err == cudaSuccess ? std::string() : std::string(cudaGetErrorString(err));
}

}  // namespace fastnips::cuda
