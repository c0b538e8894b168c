// Host entry points of the CUDA kernels, shared by the fields that bind them (ops: spmm, graph: the Chebyshev
// step) and module.cpp (device probing). This header needs no CUDA headers, so the bind files (plain C++ TUs)
// can include it; the definitions are in common/cuda/device.cu, ops/cuda/spmm.cu and graph/cuda/tikhonov.cu
// and exist only when FASTNIPS_WITH_CUDA.
#pragma once
#include <cstdint>
#include <string>

#include "common/status.h"

namespace fastnips::cuda {

// Number of usable CUDA devices; 0 (never an error) where the driver or a device is missing.
int device_count();
// The CUDA runtime's message for the last failed probe ("" when none failed).
std::string last_probe_error();

// Y = A X on the device, for device pointers. dtype_bits 32|64 (float|double), index_bits 32|64.
// Launches on `stream` (a cudaStream_t as an integer; 0 = legacy default stream); a failed launch is a
// RuntimeError Status with the CUDA error string. Structure is validated by the caller.
Status spmm_csr(int64_t n_rows, int64_t k, std::uintptr_t indptr, std::uintptr_t indices, std::uintptr_t data,
                std::uintptr_t X, std::uintptr_t Y, int index_bits, int dtype_bits, std::uintptr_t stream);

// One fused stage of the Chebyshev recurrence of p(L) V (the device Tikhonov solver,
// fastnips.graph._device; arXiv 2605.28578), for device pointers to row-major n x F blocks. With
// s = L cur (row i):
//     t      = first ? s - cur_i : 2 (s - cur_i) - prev_i              (T_{k+1}; T_1 = L V - V)
//     next_i = t                                          (when next != 0; next may alias prev)
//     acc_i  = (first ? c0 cur_i : acc_i) + ck t
//     acc_i += q_i V_i                                    (when q != 0: on the last stage, acc = A V)
//     dots[b, c] = sum over rows i in [32 b, 32 b + 32) of V_ic acc_ic, in double (when dots != 0;
//                  b < ceil(n / kChebRowsPerPartial); the caller sums the rows of dots)
// cur must not alias next or acc; V is required with q or dots (normally V = cur on the first stage).
// dtype_bits 32|64 (float|double for data, blocks and q), index_bits 32|64 (indptr/indices); nnz is only
// used to pick the lanes per row. Launches on `stream` (a cudaStream_t as an integer); bad arguments and a
// failed launch are a RuntimeError Status. Structure is validated by the caller.
constexpr int64_t kChebRowsPerPartial = 32;
Status tikhonov_cheb_step(int64_t n, int64_t nnz, int64_t F, std::uintptr_t indptr, std::uintptr_t indices,
                          std::uintptr_t data, std::uintptr_t cur, std::uintptr_t prev, std::uintptr_t next,
                          std::uintptr_t acc, std::uintptr_t V, std::uintptr_t q, std::uintptr_t dots, double c0,
                          double ck, bool first, int index_bits, int dtype_bits, std::uintptr_t stream);

}  // namespace fastnips::cuda
