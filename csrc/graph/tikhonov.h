// Generalised graph Tikhonov solves, Y = (p(L) + diag(q))^{-1} diag(q) X, for the cpp backend of
// fastnips.graph.tikhonov_solve. Plain C++17 with OpenMP: no Python, no pybind11.
//
// The polynomial arrives in the Chebyshev basis of the shifted variable t = lambda - 1 (the spectrum
// [0, 2] of a normalized Laplacian maps onto [-1, 1]):
//     p(L) = sum_{k=0}^{K} cheb[k] T_k(L - I),    T_0 = I, T_1 = M, T_{k+1} = 2 M T_k - T_{k-1}, M = L - I,
// so one application of p(L) to an n x w block costs K sparse products (the three-term recurrence), each
// fused with its vector epilogue. The Python layer converts Bernstein or monomial coefficients once.
#pragma once
#include <cstdint>

#include "common/status.h"

namespace fastnips::graph {

// How the Jacobi preconditioner M = diag(p(L)) + diag(q) obtains diag(p(L)).
//   kExact:     exactly, node by node, from the sparse vectors u_k = T_k(M) e_i, k <= ceil(K/2) (M = L - I):
//               T_{a+b} = 2 T_a T_b - T_{a-b} gives (T_{2a})_ii = 2 u_a.u_a - 1 and
//               (T_{2a-1})_ii = 2 u_a.u_{a-1} - (T_1)_ii. Cost: the ceil(K/2)-hop neighbourhoods, about
//               n d^{ceil(K/2)+1} random accesses for average degree d. Requires L symmetric.
//   kTruncated: the exact diagonal of the degree-2 part c_0 + c_1 T_1 + c_2 T_2 (one pass over L).
//               Measured on random, grid and skewed graphs it preconditions as well as the exact one
//               (iteration counts within +-2 of it, vs 1.5-2x more without a preconditioner).
//   kAuto:      kExact when K <= 2 or its cost, priced on 128 sampled nodes, is below about half a CG
//               iteration (K (nnz + n) F / 16 random accesses, or diagonal_work_limit when > 0); else
//               kTruncated. (n = 1e5, d = 8, K = 4, F = 16: the exact diagonal took as long as 3 CG
//               iterations and saved none.)
// Any positive diagonal keeps PCG exact: the choice moves the iteration count, never the solution.
// Entries are clamped at 0 before q is added.
enum class DiagonalMode : int { kAuto = 0, kExact = 1, kTruncated = 2 };

struct TikhonovOptions {
  double tol = 1e-10;                 // per column: stop when ||b - A y||_2 <= tol * ||b||_2, b = q * x
  int64_t maxiter = 1000;             // per column, all restarts together
  int n_threads = 0;                  // <= 0: the OpenMP default
  DiagonalMode diagonal = DiagonalMode::kAuto;
  int64_t diagonal_work_limit = 0;    // kAuto budget in random accesses; <= 0: K (nnz + n) F / 16
  int max_restarts = 2;               // re-runs from the true residual when the recursive one drifted
};

// Solve (p(L) + diag(q)) Y = diag(q) X for all F columns of X by Jacobi-preconditioned conjugate
// gradients, one CG per column, with the sparse products and vector updates fused over the block of
// still-active columns (converged columns leave the block; the block is compacted as it shrinks).
//   L: n x n CSR (indptr[n+1], indices[nnz], data[nnz]), symmetric with spectrum in [0, 2] (assumed;
//      a breakdown of CG, p^T A p <= 0, is a ValueError naming the column and iteration). The structure is
//      validated before any work (a ValueError prefixed "L: ").
//   cheb[degree + 1]: Chebyshev coefficients of p in t = lambda - 1 (see above).
//   q[n] > 0, X (n x F, row-major). Y (n x F, row-major) is overwritten with the solution.
//   iterations[F], residuals[F] (true relative residuals ||b - A y|| / ||b||, recomputed at the end;
//   0 for a zero right-hand side), jacobi_diagonal[n] (diag p(L) as used; may be null),
//   *diagonal_exact (may be null): whether that diagonal is exact (see DiagonalMode).
// Float32 runs keep the vectors in float32 and accumulate every dot product in double. Each column is solved
// for b_c / 2^e (2^e: the power of two at max |b_c|; exact), so tiny and huge right-hand sides neither underflow
// nor overflow in the norms; a non-finite q * X is a ValueError. Polls interrupt_requested() (common/interrupt.h)
// once per iteration and returns Status::interrupted() when asked (Y is then partial).
template <typename T, typename I>
Status tikhonov_solve_cg(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data,
                         const double* cheb, int64_t degree, const T* q, const T* X, int64_t F,
                         const TikhonovOptions& opt, T* Y, int64_t* iterations, double* residuals,
                         double* jacobi_diagonal, bool* diagonal_exact);

// Y = p(L) V for V (n x F, row-major): the polynomial operator alone (K fused sparse products).
template <typename T, typename I>
Status poly_apply(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data, const double* cheb,
                  int64_t degree, const T* V, int64_t F, T* Y, int n_threads);

}  // namespace fastnips::graph
