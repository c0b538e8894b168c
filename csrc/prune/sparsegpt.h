// The SparseGPT column sweep (OBS with a shared Cholesky factor and lazy block updates) for
// fastnips.prune.sparsegpt_prune_, backend "cpp". Plain C++17 with OpenMP: no Python.
//
// Given the rows x cols weight W (row-major, updated in place) and U, the upper Cholesky factor of the damped
// inverse Hessian (cols x cols row-major, H^-1 = U^T U; prepared by the caller in float64), the columns are
// swept in blocks [i1, i2) of `blocksize`:
//
//   at block start (unstructured): score = W[:, j]^2 / U[j, j]^2 for j in the block; select the pruned set
//   for each column i of the block:
//       (N:M, when (i - i1) % group == 0: in each row prune the group - keep lowest scores of the group's
//        current columns)
//       d = U[i, i];  q = w masked (pruned -> 0);  e = (w - q) / d;  losses += (w - q)^2 / d^2 / 2
//       W[:, i:i2] -= e (x) U[i, i:i2]   (within the block);  W[:, i] = q
//   after the block: W[:, i2:] -= E U[i1:i2, i2:]   (E = the block's e columns: one GEMM per row tile)
//
// Rows are independent given U and the selection, so OpenMP runs row tiles (up to 64 rows) in parallel, each
// tile holding its block rows in a local buffer; the lazy update is a register-blocked rank-B update per tile
// (AVX-512 / AVX2 clones). Scope "row" and N:M need no synchronisation between blocks (each tile runs all
// blocks); scope "matrix" selects across all rows in a serial phase at every block start.
//
// Selection is exact and deterministic: the lowest (score, index) pairs are pruned, index = column within
// the block (row scope, N:M: position in the group) or flat row-major index within the rows x block (matrix).
#pragma once
#include <cstdint>

namespace fastnips::prune {

struct SparseGPTOptions {
  enum Mode : int { kRow = 0, kMatrix = 1, kNM = 2 };
  Mode mode = kRow;
  int64_t blocksize = 128;      // for N:M a multiple of group (the caller rounds it)
  const int64_t* counts = nullptr;  // unstructured: pruned per row (kRow) or per block (kMatrix), one per block
  int keep = 0, group = 0;      // N:M
  int n_threads = 0;            // <= 0: the OpenMP default
};

// W (rows x cols) in place; keep (rows x cols, uint8, 1 = kept) and losses (rows, float64, summed over the
// row's pruned columns of (w - q)^2 / d^2 / 2) are written. T is float or double.
template <typename T>
void sparsegpt_sweep(int64_t rows, int64_t cols, T* W, const T* U, const SparseGPTOptions& opt, uint8_t* keep,
                     double* losses);

}  // namespace fastnips::prune
