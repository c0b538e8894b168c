// Host entry points of the CUDA kernels. This header needs no CUDA headers, so bindings.cpp (a plain
// C++ TU) can include it; the definitions are in csrc/cuda/*.cu and exist only when FASTNIPS_WITH_CUDA.
#pragma once
#include <cstdint>
#include <string>

namespace fastnips::cuda {

// Number of usable CUDA devices; 0 (never an error) where the driver or a device is missing.
int device_count();
// The CUDA runtime's message for the last failed probe ("" when none failed).
std::string last_probe_error();

// Y = A X on the device, for device pointers. dtype_bits 32|64 (float|double), index_bits 32|64.
// Launches on `stream` (a cudaStream_t as an integer; 0 = legacy default stream) and returns the
// CUDA error string of the launch, "" on success. Structure is validated by the caller.
std::string spmm_csr(int64_t n_rows, int64_t k, std::uintptr_t indptr, std::uintptr_t indices,
                     std::uintptr_t data, std::uintptr_t X, std::uintptr_t Y, int index_bits,
                     int dtype_bits, std::uintptr_t stream);

}  // namespace fastnips::cuda
