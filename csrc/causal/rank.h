// Internal to the HTC solvers: the randomized rank method. M = Omega (I - Lambda)^{-1} over F_p at random
// parameters (compute_M), the incremental row-echelon basis that decides rank M[A_v, pa(v)] = |pa(v)| row by
// row (Basis), and the per-node solver of the fixpoint built on them (RankSolver). causal/rank.cpp; both
// fields (FieldM61, FieldGeneric) are instantiated there.
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "causal/field.h"
#include "causal/mixed_graph.h"

namespace fastnips::causal::detail {

// M = Omega (I - Lambda)^{-1} mod p, restricted to the columns of nodes that have a child (only those
// columns are ever read: they are the parents). Row-major n x m; colidx[w] = column of w or -1.
template <class F>
struct MMatrix {
  int m = 0;
  std::vector<i32> colidx;
  std::vector<u64> M;
};

// M for the graph at parameters drawn from `seed`; par: may use threads.
template <class F>
MMatrix<F> compute_M(const F& f, const Graph& g, u64 seed, bool par);

// Incremental reduced row echelon basis over F_p of vectors of length k.
// Columns are kept in a permuted order perm[0..k) (position -> original column) such that row i has its
// pivot at position i: row i = e_i + sum_{t >= r} b_i[t] e_t (positions < r other than i are implicitly 0
// and never read). All loops run over the contiguous free positions [r, k).
// Rejection of a row x that is already in the span costs O(r (k - r)) when done exactly; after one exact
// rejection a random null-space vector z is built (O(r (k - r))) and later rows are screened by x.z
// (O(k)) until the next acceptance. The screen errs only one way: x.z == 0 for an x outside the span
// happens with probability 1/p (a missed row, never a wrong pivot).
struct Scratch {
  std::vector<u64> x, y, cf;
  std::vector<const u64*> rows;
  void ensure(int k) {
    if (int(x.size()) < k + 1) {
      x.resize(k + 1);
      y.resize(k + 1);
      cf.resize(k + 1);
      rows.resize(k + 1);
    }
  }
};

struct Basis {
  int k = 0, r = 0;
  bool zvalid = false;
  std::vector<u64> b, z;
  std::vector<i32> perm, src;
  Rng rng;

  void reset(int k_, u64 seed);
  void release();
  // x: length k, in the current permuted order (x[t] = value at original column perm[t]).
  // Returns 0 rejected, 1 accepted, 2 accepted and now full rank.
  template <class F>
  int insert(const F& f, const u64* x, i32 src_id, Scratch& sc);
  int pivot_column(int i) const { return perm[i]; }  // original column of row i's pivot
  // e_{pivot(i)} in the row space <=> row i vanishes on every free position
  bool row_is_unit(int i) const {
    const u64* bi = b.data() + size_t(i) * k;
    for (int t = r; t < k; ++t)
      if (bi[t]) return false;
    return true;
  }

 private:
  template <class F>
  void build_screen(const F& f, Scratch& sc);
};

// ------------------------------------------------------------------------------------------------
// Per-node solvers. Interface: begin(v), insert(v, a, buf) -> 0 (no progress) / 1 (progress) / 2 (solved),
// sources(v) (sorted Y_v once solved), release(v).
template <class F>
struct RankSolver {
  const F f;
  const Graph& g;
  const MMatrix<F>& mm;
  u64 seed;
  std::vector<i32> pcol;  // pcol[pa_off[v] + j] = column of pa(v)[j] in M
  std::vector<Basis> st;
  struct Buf {
    Scratch sc;
  };

  RankSolver(const F& f_, const Graph& g_, const MMatrix<F>& mm_, u64 seed_)
      : f(f_), g(g_), mm(mm_), seed(seed_), pcol(g_.pa.size()), st(size_t(g_.n)) {
    if (!mm.colidx.empty())
      for (size_t i = 0; i < g.pa.size(); ++i) pcol[i] = mm.colidx[g.pa[i]];
  }
  Buf make_buf() const {
    Buf b;
    int kmax = 0;
    for (int v = 0; v < g.n; ++v) kmax = std::max(kmax, g.npa(v));
    b.sc.ensure(std::max(kmax, 1));
    return b;
  }
  void begin(int v) { st[v].reset(g.npa(v), mix_seed(seed, 0x5CEE4ULL, g.id(v))); }
  int insert(int v, int a, Buf& buf) {
    Basis& B = st[v];
    const int k = B.k;
    const u64* row = mm.M.data() + size_t(a) * mm.m;
    const i32* pc = pcol.data() + g.pa_off[v];
    const i32* pm = B.perm.data();
    u64* x = buf.sc.x.data();
    for (int t = 0; t < k; ++t) x[t] = row[pc[pm[t]]];
    return B.insert(f, x, a, buf.sc);
  }
  std::vector<i32> sources(int v) const {
    std::vector<i32> y = st[v].src;
    std::sort(y.begin(), y.end());
    return y;
  }
  void release(int v) { st[v].release(); }
};

}  // namespace fastnips::causal::detail
