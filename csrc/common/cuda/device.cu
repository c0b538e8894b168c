// CUDA device probing for module.cpp (cuda_device_count, cuda_probe_error): asks the runtime, never fails.
#include <cuda_runtime.h>

#include "common/cuda/cuda_api.h"

namespace fastnips::cuda {
namespace {
std::string g_last_probe_error;
}

int device_count() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    g_last_probe_error = cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky-free error so later probes start clean
    return 0;
  }
  g_last_probe_error.clear();
  return n;
}

std::string last_probe_error() { return g_last_probe_error; }

}  // namespace fastnips::cuda
