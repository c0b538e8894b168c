#include "prune/sparsegpt.h"

#include <algorithm>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "prune/masks.h"

// The two hot loops carry AVX-512 and AVX2+FMA clones next to the baseline (the loader picks at run time, as
// FASTNIPS_CLONES in common/simd.h, plus the 512-bit clone: on CPUs that have it the lazy update runs about
// 2.5x faster than with AVX2).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define FASTNIPS_SGPT_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define FASTNIPS_SGPT_CLONES
#endif

namespace fastnips::prune {
namespace {

// W (nr x n, row stride ldw) -= E (nr x kb, row stride lde) * U (kb x n, row stride ldu): the lazy update of
// the columns right of a block (or of a sub-block inside the block) for one row tile. Register-blocked: 8 rows
// x (128 bytes of columns) accumulate over the kb inner products while the U panel stays in L1; remainder
// columns and rows take plain loops.
template <typename T>
FASTNIPS_SGPT_CLONES void rank_update(int64_t nr, int64_t n, int64_t kb, T* __restrict W, int64_t ldw,
                                      const T* __restrict E, int64_t lde, const T* __restrict U, int64_t ldu) {
  constexpr int R = 8, C = 128 / int(sizeof(T));
  int64_t j0 = 0;
  for (; j0 + C <= n; j0 += C) {
    int64_t r0 = 0;
    for (; r0 + R <= nr; r0 += R) {
      T acc[R][C] = {};
      for (int64_t k = 0; k < kb; ++k) {
        const T* u = U + k * ldu + j0;
        for (int r = 0; r < R; ++r) {
          const T e = E[(r0 + r) * lde + k];
          for (int c = 0; c < C; ++c) acc[r][c] += e * u[c];
        }
      }
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) W[(r0 + r) * ldw + j0 + c] -= acc[r][c];
    }
    for (; r0 < nr; ++r0) {
      T acc[C] = {};
      for (int64_t k = 0; k < kb; ++k) {
        const T e = E[r0 * lde + k];
        const T* u = U + k * ldu + j0;
        for (int c = 0; c < C; ++c) acc[c] += e * u[c];
      }
      for (int c = 0; c < C; ++c) W[r0 * ldw + j0 + c] -= acc[c];
    }
  }
  if (j0 < n) {
    for (int64_t r = 0; r < nr; ++r) {
      T* w = W + r * ldw;
      for (int64_t k = 0; k < kb; ++k) {
        const T e = E[r * lde + k];
        if (e == T(0)) continue;
        const T* u = U + k * ldu;
        for (int64_t j = j0; j < n; ++j) w[j] -= e * u[j];
      }
    }
  }
}

// Columns per sub-block of the in-block sweep: inside a sub-block the OBS steps are rank-1 updates of the
// sub-block's columns only; the sub-block's errors then reach the rest of the block through one rank-kSub update
// (rank_update), which turns most of the block's scalar work (nb^2 / 2 per row) into register-blocked FMAs.
constexpr int64_t kSub = 16;

// The column loop of one block for a row tile held in w1 (nr x nb, row-major): N:M selection at group starts,
// then per column the OBS step of every row (keep is the global mask, row r0 + r, column i1 + i). N:M
// sub-blocks are whole groups, so a group's scores always read fully updated weights.
template <typename T>
FASTNIPS_SGPT_CLONES void sweep_columns(int64_t nr, int64_t nb, int64_t cols, int64_t r0, int64_t i1,
                                        T* __restrict w1, T* __restrict err, const T* __restrict U,
                                        const SparseGPTOptions& opt, uint8_t* __restrict keep, double* losses,
                                        T* score) {
  const int g = opt.group, n_prune = opt.group - opt.keep;
  const int64_t sub = opt.mode == SparseGPTOptions::kNM ? g * ((kSub + g - 1) / g) : kSub;
  for (int64_t s0 = 0; s0 < nb; s0 += sub) {
    const int64_t s1 = std::min(nb, s0 + sub);
    for (int64_t i = s0; i < s1; ++i) {
      const T* urow = U + (i1 + i) * cols + i1;  // U[i1 + i, i1:i2]
      const T d = urow[i];
      if (opt.mode == SparseGPTOptions::kNM && i % g == 0) {
        for (int64_t r = 0; r < nr; ++r) {
          for (int l = 0; l < g; ++l) {
            const T dl = U[(i1 + i + l) * cols + i1 + i + l];
            const T w = w1[r * nb + i + l];
            score[l] = (w * w) / (dl * dl);
          }
          keep_group(score, 1, g, n_prune, keep + (r0 + r) * cols + i1 + i, 1);
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        T* wr = w1 + r * nb;
        const T w = wr[i];
        if (keep[(r0 + r) * cols + i1 + i] == 0) {
          wr[i] = T(0);
          if (w != T(0)) {
            const T e = w / d;
            losses[r0 + r] += double((w * w) / (d * d)) / 2.0;
            err[r * nb + i] = e;
            for (int64_t j = i + 1; j < s1; ++j) wr[j] -= e * urow[j];
          }
        }
      }
    }
    if (s1 < nb) rank_update(nr, nb - s1, s1 - s0, w1 + s1, nb, err + s0, nb, U + (i1 + s0) * cols + i1 + s1, cols);
  }
}

// Per-thread scratch for one row tile and one block.
template <typename T>
struct Scratch {
  std::vector<T> w1, err, score;
  std::vector<Key<T>> keys;
  Scratch(int64_t tile, int64_t block)
      : w1(size_t(tile * block)), err(size_t(tile * block)), score(size_t(block)), keys(size_t(block)) {}
};

// Rows [r0, r1) through block [i1, i2): select (row scope), sweep the block's columns in a local copy (N:M
// selects inside), write the block back, then apply the lazy update to the rows' columns right of the block.
// For kMatrix the block's keep entries are already selected; `count` is the per-row count of kRow.
template <typename T>
void tile_block(int64_t r0, int64_t r1, int64_t cols, int64_t i1, int64_t i2, int64_t count, T* W, const T* U,
                const SparseGPTOptions& opt, uint8_t* keep, double* losses, Scratch<T>& s) {
  const int64_t nb = i2 - i1, nr = r1 - r0;
  T* w1 = s.w1.data();
  T* err = s.err.data();
  T* score = s.score.data();
  for (int64_t r = 0; r < nr; ++r) std::copy(W + (r0 + r) * cols + i1, W + (r0 + r) * cols + i2, w1 + r * nb);
  std::fill(err, err + nr * nb, T(0));
  if (opt.mode == SparseGPTOptions::kRow) {
    for (int64_t r = 0; r < nr; ++r) {
      for (int64_t j = 0; j < nb; ++j) {
        const T d = U[(i1 + j) * cols + i1 + j];
        const T w = w1[r * nb + j];
        score[j] = (w * w) / (d * d);
      }
      keep_k_largest(score, nb, count, keep + (r0 + r) * cols + i1, s.keys.data());
    }
  }
  sweep_columns(nr, nb, cols, r0, i1, w1, err, U, opt, keep, losses, score);
  for (int64_t r = 0; r < nr; ++r) std::copy(w1 + r * nb, w1 + (r + 1) * nb, W + (r0 + r) * cols + i1);
  const int64_t rest = cols - i2;
  if (rest > 0 && std::any_of(err, err + nr * nb, [](T e) { return e != T(0); }))
    rank_update(nr, rest, nb, W + r0 * cols + i2, cols, err, nb, U + i1 * cols + i2, cols);
}

}  // namespace

template <typename T>
void sparsegpt_sweep(int64_t rows, int64_t cols, T* W, const T* U, const SparseGPTOptions& opt, uint8_t* keep,
                     double* losses) {
  std::fill(losses, losses + rows, 0.0);
  if (rows == 0 || cols == 0) return;
  const int64_t B = std::min(opt.blocksize, cols);
  const int64_t n_blocks = (cols + B - 1) / B;
  int threads = 1;
#ifdef _OPENMP
  // about rows * cols * B flops: below ~1e6 a thread costs more than it saves
  if (rows * cols * B >= (int64_t(1) << 20)) threads = opt.n_threads > 0 ? opt.n_threads : omp_get_max_threads();
#endif
  // row tiles: up to 64 rows (a 64 x 128 float block is 32 KB), at least 4 tiles per thread when rows allow
  const int64_t tile = std::clamp<int64_t>((rows + 4 * threads - 1) / (4 * threads), 8, 64);
  const int64_t n_tiles = (rows + tile - 1) / tile;
  threads = int(std::min<int64_t>(threads, n_tiles));

  if (opt.mode != SparseGPTOptions::kMatrix) {
    // rows are independent end to end: every tile runs all blocks, no barrier
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      Scratch<T> s(tile, B);
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < n_tiles; ++t) {
        const int64_t r0 = t * tile, r1 = std::min(rows, r0 + tile);
        for (int64_t b = 0; b < n_blocks; ++b) {
          const int64_t i1 = b * B, i2 = std::min(cols, i1 + B);
          tile_block(r0, r1, cols, i1, i2, opt.counts ? opt.counts[b] : 0, W, U, opt, keep, losses, s);
        }
      }
    }
    return;
  }
  // matrix scope: at each block start, one selection over the rows x block scores (serial), then the tiles
  std::vector<T> sc(size_t(rows * B));
  std::vector<uint8_t> kb(size_t(rows * B));
  const bool wide = sizeof(Key<T>) == 8 && rows * B >= (int64_t(1) << 32);  // the index outgrows 32 bits
  std::vector<Key<T>> keys(wide ? 0 : size_t(rows * B));
  std::vector<Key128> wide_keys(wide ? size_t(rows * B) : 0);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t i1 = b * B, i2 = std::min(cols, i1 + B), nb = i2 - i1;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < nb; ++j) {
        const T d = U[(i1 + j) * cols + i1 + j];
        const T w = W[r * cols + i1 + j];
        sc[size_t(r * nb + j)] = (w * w) / (d * d);
      }
    if (!wide) keep_k_largest(sc.data(), rows * nb, opt.counts[b], kb.data(), keys.data());
    else keep_k_largest(sc.data(), rows * nb, opt.counts[b], kb.data(), wide_keys.data());
    for (int64_t r = 0; r < rows; ++r) std::copy(kb.data() + r * nb, kb.data() + (r + 1) * nb, keep + r * cols + i1);
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      Scratch<T> s(tile, B);
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < n_tiles; ++t) {
        const int64_t r0 = t * tile, r1 = std::min(rows, r0 + tile);
        tile_block(r0, r1, cols, i1, i2, 0, W, U, opt, keep, losses, s);
      }
    }
  }
}

template void sparsegpt_sweep<float>(int64_t, int64_t, float*, const float*, const SparseGPTOptions&, uint8_t*,
                                     double*);
template void sparsegpt_sweep<double>(int64_t, int64_t, double*, const double*, const SparseGPTOptions&, uint8_t*,
                                      double*);

}  // namespace fastnips::prune
