// Shared by the .cu files of every field: the Status of a kernel launch. Needs the CUDA runtime headers,
// so only .cu files include it (the bind files see common/cuda/cuda_api.h alone).
#pragma once
#include <cuda_runtime.h>

#include "common/status.h"

namespace fastnips::cuda {

// cudaSuccess: ok; anything else: a RuntimeError with the runtime's message.
inline Status launch_status(cudaError_t err) {
  return err == cudaSuccess ? Status{} : Status::runtime_error(cudaGetErrorString(err));
}

}  // namespace fastnips::cuda
