// Batched dense Cholesky for generalised graph Tikhonov solves on block-diagonal Laplacians (many small
// graphs, e.g. a PyG mini-batch): the "dense" method of fastnips.graph.tikhonov_solve / tikhonov_factorize.
// Plain C++17 with Eigen and OpenMP: no Python, no pybind11.
//
// For every block b (graph) with m_b nodes, the dense m_b x m_b operator
//     A_b = p(L_b) + diag(q_b),   p(L_b) = sum_{k=0}^{K} cheb[k] T_k(L_b - I)
// is formed by the three-term Chebyshev recurrence (K sparse-times-dense products with the block's rows of
// L, in double), factorised A_b = C_b C_b^T by Eigen's LLT in the block's precision, and kept: a solve is
// then two triangular solves per block. Cost per block: about K nnz_b m_b (the polynomial) + m_b^3 / 3
// (Cholesky) flops, and m_b^2 F per solve of F columns. Blocks run in parallel (OpenMP, dynamic schedule,
// largest first).
//
// Blocks are given as a permutation: node order[offsets[b] + i] is local node i of block b, for
// i < m_b = offsets[b + 1] - offsets[b]. Nodes of one block need not be contiguous in L.
#pragma once
#include <cstdint>

#include "common/status.h"

namespace fastnips::graph {

// factor_offsets[b] = sum_{b' < b} m_b'^2 for b = 0..n_blocks (n_blocks + 1 entries); returns the total,
// the length of the `factors` array. Assumes offsets non-decreasing (checked by the kernels).
int64_t dense_factor_offsets(const int64_t* offsets, int64_t n_blocks, int64_t* factor_offsets);

// Factorise A_b = p(L_b) + diag(q_b) for every block.
//   L: n x n CSR (indptr[n + 1], indices[nnz], data[nnz]), symmetric, block-diagonal for the blocks (every
//      nonzero entry joins two nodes of one block; checked, kCrossBlock otherwise). Structure validated first.
//   cheb[degree + 1]: Chebyshev coefficients of p in t = lambda - 1 (as for tikhonov_solve_cg).
//   q[n] > 0. order[n], offsets[n_blocks + 1]: the blocks (see above; validated).
//   labels[n_blocks]: the graph id of each block, for messages (null: the block index).
//   factor_offsets: from dense_factor_offsets. factors[factor_offsets[n_blocks]] is overwritten: block b's
//   lower Cholesky factor C_b, column-major m_b x m_b at factors + factor_offsets[b], strict upper part 0.
// Every refusal is a ValueError: the structure of L ("L: ..."), the blocks (order, offsets), an entry of L
// joining two blocks, or a block whose A_b is not positive definite (the first failing one; all blocks are
// attempted).
template <typename T, typename I>
Status tikhonov_dense_factor(int64_t n, int64_t nnz, const I* indptr, const I* indices, const T* data,
                             const double* cheb, int64_t degree, const T* q, const int64_t* order,
                             const int64_t* offsets, int64_t n_blocks, const int64_t* labels,
                             const int64_t* factor_offsets, T* factors, int n_threads);

// Y = A^{-1} (s o B) with the factors of tikhonov_dense_factor, block by block: s = scale (e.g. q, which
// gives Y = (p(L) + Q)^{-1} Q B) or 1 when scale is null. B, Y: n x F row-major (may not alias).
template <typename T>
Status tikhonov_dense_solve(int64_t n, const int64_t* order, const int64_t* offsets, int64_t n_blocks,
                            const int64_t* factor_offsets, const T* factors, const T* scale, const T* B, int64_t F,
                            T* Y, int n_threads);

}  // namespace fastnips::graph
