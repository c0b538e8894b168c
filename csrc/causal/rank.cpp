// The randomized rank method of the HTC solvers (rank.h): M = Omega (I - Lambda)^{-1} mod p and the
// incremental row-echelon basis.
#include "causal/rank.h"

#include "common/interrupt.h"

namespace fastnips::causal::detail {
namespace {

// out[0..w) = sum_t coef[t] * rows[t][0..w), with the accumulators of 4 columns in registers and one
// reduction per F::kBatch terms.
template <class F>
void lincomb(const F& f, int w, int nt, const u64* coef, const u64* const* rows, u64* out) {
  int j = 0;
  for (; j + 4 <= w; j += 4) {
    u128 a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int cnt = 0;
    for (int t = 0; t < nt; ++t) {
      const u64 l = coef[t];
      const u64* r = rows[t] + j;
      a0 += u128(l) * r[0];
      a1 += u128(l) * r[1];
      a2 += u128(l) * r[2];
      a3 += u128(l) * r[3];
      if (++cnt == F::kBatch) {
        a0 = f.red(a0);
        a1 = f.red(a1);
        a2 = f.red(a2);
        a3 = f.red(a3);
        cnt = 0;
      }
    }
    out[j] = f.red(a0);
    out[j + 1] = f.red(a1);
    out[j + 2] = f.red(a2);
    out[j + 3] = f.red(a3);
  }
  for (; j < w; ++j) {
    u128 a0 = 0;
    int cnt = 0;
    for (int t = 0; t < nt; ++t) {
      a0 += u128(coef[t]) * rows[t][j];
      if (++cnt == F::kBatch) {
        a0 = f.red(a0);
        cnt = 0;
      }
    }
    out[j] = f.red(a0);
  }
}

// The LU factors of A = (I - Lambda_CC)^T for every nontrivial SCC C (partial pivoting on any nonzero),
// Lambda_CC resampled while singular mod p. Row i of A: 1 on the diagonal, -lambda_{jk} at column loc[j] for
// each parent j in C of k = mem[i]. Stored per SCC as an s x s array at lu_off[c]: below the diagonal -L, on
// it d_i = 1/U_ii, above it -d_i U_ij; plus the row order at pr_off[c] (position i holds local row
// lu_pr[i]).
struct SccLu {
  std::vector<i64> lu_off, pr_off;
  std::vector<u64> lu;
  std::vector<i32> lu_pr;
  int smax = 1;  // the size of the largest SCC
};

// Fills A (s x s) for SCC c from the current lambdas and eliminates in place; false when a column has no
// pivot (singular mod p).
template <class F>
bool lu_attempt(const F& f, const Graph& g, int c, const i32* mem, int s, const std::vector<i32>& loc,
                const std::vector<u64>& lam_e, u64* A, i32* prow) {
  std::fill(A, A + size_t(s) * s, 0);
  for (int i = 0; i < s; ++i) {
    prow[i] = i;
    A[size_t(i) * s + i] = 1;
    const i32 k = mem[i];
    for (i32 e = g.pa_off[k]; e < g.pa_off[k + 1]; ++e) {
      const i32 pp = g.pa[e];
      if (g.scc[pp] == c) A[size_t(i) * s + loc[pp]] = f.neg(lam_e[g.pa_eid[e]]);
    }
  }
  for (int col = 0; col < s; ++col) {
    check_interrupt();  // O(s^2) per column for a dense SCC; factor_sccs runs on the calling thread
    int piv = -1;
    for (int i = col; i < s; ++i)
      if (A[size_t(i) * s + col]) {
        piv = i;
        break;
      }
    if (piv < 0) return false;
    if (piv != col) {
      std::swap_ranges(A + size_t(piv) * s, A + size_t(piv + 1) * s, A + size_t(col) * s);
      std::swap(prow[piv], prow[col]);
    }
    const u64* pk = A + size_t(col) * s;
    const u64 iv = field_inv(f, pk[col]);
    for (int i = col + 1; i < s; ++i) {
      u64* ri = A + size_t(i) * s;
      if (!ri[col]) continue;
      const u64 l = f.mul(ri[col], iv);
      ri[col] = l;
      const u64 nl = f.neg(l);
      for (int j = col + 1; j < s; ++j)
        if (pk[j]) ri[j] = f.muladd(ri[j], nl, pk[j]);
    }
  }
  return true;
}

template <class F>
SccLu factor_sccs(const F& f, const Graph& g, std::vector<u64>& lam_e, Rng& rng) {
  const int nc = g.nscc;
  const std::vector<i32>& c_off = g.scc_off;
  SccLu lu;
  lu.lu_off.assign(size_t(nc) + 1, 0);
  lu.pr_off.assign(size_t(nc) + 1, 0);
  for (int c = 0; c < nc; ++c) {
    const i64 s = c_off[c + 1] - c_off[c];
    lu.lu_off[c + 1] = lu.lu_off[c] + (s > 1 ? s * s : 0);
    lu.pr_off[c + 1] = lu.pr_off[c] + (s > 1 ? s : 0);
  }
  lu.lu.resize(size_t(lu.lu_off[nc]));
  lu.lu_pr.resize(size_t(lu.pr_off[nc]));
  std::vector<i32> loc(g.n, -1);
  for (int c = 0; c < nc; ++c) {
    const int s = c_off[c + 1] - c_off[c];
    lu.smax = std::max(lu.smax, s);
    if (s == 1) continue;
    const i32* mem = g.scc_mem.data() + c_off[c];
    for (int i = 0; i < s; ++i) loc[mem[i]] = i;
    u64* A = lu.lu.data() + lu.lu_off[c];
    i32* prow = lu.lu_pr.data() + lu.pr_off[c];
    bool ok = false;
    for (int attempt = 0; attempt < 10000 && !ok; ++attempt) {
      if (attempt > 0)  // resample the lambdas inside C
        for (int i = 0; i < s; ++i) {
          const i32 k = mem[i];
          for (i32 e = g.ch_off[k]; e < g.ch_off[k + 1]; ++e)
            if (g.scc[g.ch[e]] == c) lam_e[g.ch_eid[e]] = random_nonzero(f, rng);
        }
      ok = lu_attempt(f, g, c, mem, s, loc, lam_e, A, prow);
    }
    if (!ok)
      throw StatusError(
          Status::runtime_error("htc: could not find a nonsingular (I - Lambda) mod p; use a larger prime"));
    for (int i = 0; i < s; ++i) {
      u64* ri = A + size_t(i) * s;
      const u64 d = field_inv(f, ri[i]);
      for (int j = 0; j < i; ++j) ri[j] = f.neg(ri[j]);
      ri[i] = d;
      const u64 nd = f.neg(d);
      for (int j = i + 1; j < s; ++j) ri[j] = f.mul(nd, ri[j]);
    }
  }
  return lu;
}

// The random parameters of M: lambda per directed edge (input order), omega_vv per node, omega per
// bidirected edge.
struct Params {
  std::vector<u64> lam_e, om_d, om_e;
};

// One stripe [r0, r1) of the n columns of Mt = M^T (m x n; node k's row at colidx[k] * n), i.e. rows
// r0..r1 of M, column by column SCC by SCC in topological order. Holds the scratch of one thread.
template <class F>
class Stripe {
 public:
  Stripe(const F& f, const Graph& g, const Params& prm, const SccLu& lu, const std::vector<i32>& colidx, u64* Mt,
         size_t maxdeg, int stripe)
      : f_(f), g_(g), prm_(prm), lu_(lu), colidx_(colidx), Mt_(Mt), coef_(maxdeg), rows_(maxdeg),
        Rbuf_(size_t(lu.smax) * stripe), Ybuf_(size_t(lu.smax) * stripe) {}

  void run(int r0, int r1) {
    r0_ = r0;
    w_ = r1 - r0;
    for (int c = g_.nscc - 1; c >= 0; --c) {  // topological order: parents' SCCs have larger Tarjan ids
      if (interrupt_requested()) return;         // compute_M raises after its region
      const int s = g_.scc_off[c + 1] - g_.scc_off[c];
      const i32* mem = g_.scc_mem.data() + g_.scc_off[c];
      if (s == 1) {
        if (colidx_[mem[0]] >= 0) col_into(mem[0], -1, mt_row(mem[0]) + r0_);
        continue;
      }
      for (int i = 0; i < s; ++i) col_into(mem[i], c, Rbuf_.data() + size_t(i) * w_);
      solve_scc(c, s, mem);
    }
  }

 private:
  u64* mt_row(i32 k) const { return Mt_ + size_t(colidx_[k]) * g_.n; }

  // out[0..w) = Omega[r0..r1, k] + sum_{j->k, comp[j] != skip} lambda_jk M[r0..r1, j]
  void col_into(i32 k, int skip_comp, u64* out) {
    const int r0 = r0_, r1 = r0_ + w_;
    int nt = 0;
    for (i32 e = g_.pa_off[k]; e < g_.pa_off[k + 1]; ++e) {
      const i32 pp = g_.pa[e];
      if (g_.scc[pp] == skip_comp) continue;
      coef_[nt] = prm_.lam_e[g_.pa_eid[e]];
      rows_[nt] = mt_row(pp) + r0;
      ++nt;
    }
    lincomb(f_, w_, nt, coef_.data(), rows_.data(), out);
    if (k >= r0 && k < r1) out[k - r0] = f_.add(out[k - r0], prm_.om_d[k]);
    const i32* sb0 = g_.sib.data() + g_.sb_off[k];
    const i32* sb1 = g_.sib.data() + g_.sb_off[k + 1];
    for (const i32* q = std::lower_bound(sb0, sb1, r0); q != sb1 && *q < r1; ++q)
      out[*q - r0] = f_.add(out[*q - r0], prm_.om_e[g_.sb_eid[q - g_.sib.data()]]);
  }

  // The columns of the nontrivial SCC c from their right-hand sides in Rbuf, by its LU factors.
  void solve_scc(int c, int s, const i32* mem) {
    const u64* A = lu_.lu.data() + lu_.lu_off[c];
    const i32* prow = lu_.lu_pr.data() + lu_.pr_off[c];
    // forward: Y_i = R_{prow[i]} - sum_{j<i} L_ij Y_j
    for (int i = 0; i < s; ++i) {
      if (interrupt_requested()) return;  // inside compute_M's region: it raises after the region
      const u64* ri = A + size_t(i) * s;
      int nt = 0;
      coef_[nt] = 1;
      rows_[nt++] = Rbuf_.data() + size_t(prow[i]) * w_;
      for (int j = 0; j < i; ++j)
        if (ri[j]) {
          coef_[nt] = ri[j];
          rows_[nt++] = Ybuf_.data() + size_t(j) * w_;
        }
      lincomb(f_, w_, nt, coef_.data(), rows_.data(), Ybuf_.data() + size_t(i) * w_);
    }
    // back: X_i = d_i Y_i - sum_{j>i} d_i U_ij X_j, X_i = M[r0..r1, mem[i]]
    for (int i = s - 1; i >= 0; --i) {
      if (interrupt_requested()) return;
      const u64* ri = A + size_t(i) * s;
      int nt = 0;
      coef_[nt] = ri[i];
      rows_[nt++] = Ybuf_.data() + size_t(i) * w_;
      for (int j = i + 1; j < s; ++j)
        if (ri[j]) {
          coef_[nt] = ri[j];
          rows_[nt++] = mt_row(mem[j]) + r0_;
        }
      lincomb(f_, w_, nt, coef_.data(), rows_.data(), mt_row(mem[i]) + r0_);
    }
  }

  const F& f_;
  const Graph& g_;
  const Params& prm_;
  const SccLu& lu_;
  const std::vector<i32>& colidx_;
  u64* Mt_;
  std::vector<u64> coef_;
  std::vector<const u64*> rows_;
  std::vector<u64> Rbuf_, Ybuf_;
  int r0_ = 0, w_ = 0;
};

// M (n x m) = the transpose of Mt (m x n), in 64 x 64 tiles.
void transpose(const std::vector<u64>& Mt, int n, int m, bool par, std::vector<u64>& M) {
  (void)par;
  M.resize(size_t(n) * m);
  constexpr int T = 64;
  const int nty = (n + T - 1) / T;
FASTNIPS_HTC_OMP(omp parallel for schedule(static) if (par))
  for (int ty = 0; ty < nty; ++ty) {
    const int y0 = ty * T, y1 = std::min(n, y0 + T);
    for (int c0 = 0; c0 < m; c0 += T) {
      const int c1 = std::min(m, c0 + T);
      for (int y = y0; y < y1; ++y) {
        u64* dst = M.data() + size_t(y) * m;
        for (int c = c0; c < c1; ++c) dst[c] = Mt[size_t(c) * n + y];
      }
    }
  }
}

}  // namespace

// Column recurrence: M (I - Lambda) = Omega, i.e. M[:,k] = Omega[:,k] + sum_{j->k} lambda_jk M[:,j] (the
// parents j of k all have a child, so the recurrence is closed over the m stored columns). Columns are
// computed SCC by SCC in topological order of the condensation; inside a nontrivial SCC C,
// (I - Lambda_CC)^T M[:,C]^T = (Omega[:,C] + M[:,out] Lambda_{out,C})^T (one LU per SCC). Columns are built
// as rows of Mt = M^T and transposed once at the end. Cost O(n (|D| + m + sum_C |C|^2) + |B| + sum_C |C|^3)
// (Omega is sparse: O(n + |B|) to add).
template <class F>
MMatrix<F> compute_M(const F& f, const Graph& g, u64 seed, bool par) {
  const int n = g.n;
  MMatrix<F> R;
  R.colidx.assign(n, -1);
  int m = 0;
  for (int v = 0; v < n; ++v)
    if (g.ch_off[v + 1] > g.ch_off[v]) R.colidx[v] = m++;
  R.m = m;
  if (m == 0 || n == 0) return R;

  Rng rng(mix_seed(seed, 0x4D41545249584DULL, 0));
  Params prm{std::vector<u64>(size_t(g.n_dir)), std::vector<u64>(size_t(g.id_count())),
             std::vector<u64>(size_t(g.n_bi))};
  for (auto& x : prm.lam_e) x = random_nonzero(f, rng);
  for (auto& x : prm.om_d) x = random_nonzero(f, rng);  // per node id of the caller's graph
  for (auto& x : prm.om_e) x = random_nonzero(f, rng);
  if (!g.ids.empty()) {  // a restricted graph: node k keeps the omega of its id
    std::vector<u64> om(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) om[size_t(k)] = prm.om_d[size_t(g.id(k))];
    prm.om_d.swap(om);
  }
  const SccLu lu = factor_sccs(f, g, prm.lam_e, rng);

  // Mt = M^T, computed in stripes of its n columns (= rows of M, which are independent), parallel over
  // stripes.
  std::vector<u64> Mt(size_t(m) * n);
  int nthreads = 1;
#ifdef _OPENMP
  if (par) nthreads = omp_get_max_threads();
#endif
  int stripe = n;
  if (nthreads > 1) {
    stripe = std::max(32, std::min(512, (n + 4 * nthreads - 1) / (4 * nthreads)));
    stripe = (stripe + 7) / 8 * 8;
  }
  const int nstripes = (n + stripe - 1) / stripe;
  size_t maxdeg = 1;
  for (int v = 0; v < n; ++v) maxdeg = std::max(maxdeg, size_t(g.pa_off[v + 1] - g.pa_off[v]));
  maxdeg = std::max(maxdeg, size_t(lu.smax)) + 1;
  const InterruptShare share;
FASTNIPS_HTC_OMP(omp parallel if (par && nstripes > 1))
  {
    const InterruptJoin join(share);
    Stripe<F> part(f, g, prm, lu, R.colidx, Mt.data(), maxdeg, stripe);
FASTNIPS_HTC_OMP(omp for schedule(dynamic, 1))
    for (int st = 0; st < nstripes; ++st) part.run(st * stripe, std::min(n, st * stripe + stripe));
  }
  check_interrupt();
  transpose(Mt, n, m, par, R.M);
  return R;
}

void Basis::reset(int k_, u64 seed) {
  k = k_;
  r = 0;
  zvalid = false;
  b.clear();
  z.assign(k, 0);
  perm.resize(k);
  std::iota(perm.begin(), perm.end(), 0);
  src.clear();
  rng = Rng(seed);
}

void Basis::release() {
  std::vector<u64>().swap(b);
  std::vector<u64>().swap(z);
  std::vector<i32>().swap(perm);
}

template <class F>
void Basis::build_screen(const F& f, Scratch& sc) {
  u64* cf = sc.cf.data();
  const int nf = k - r;
  for (int t = 0; t < nf; ++t) {
    cf[t] = rng.below(f.p());
    z[r + t] = cf[t];
  }
  for (int i = 0; i < r; ++i) {
    const u64* bi = b.data() + size_t(i) * k + r;
    z[i] = f.neg(dot(f, cf, bi, nf));
  }
  zvalid = true;
}

template <class F>
int Basis::insert(const F& f, const u64* x, i32 src_id, Scratch& sc) {
  if (r == 0) {
    bool nz = false;
    for (int j = 0; j < k; ++j)
      if (x[j]) {
        nz = true;
        break;
      }
    if (!nz) return 0;
  } else if (zvalid && dot(f, x, z.data(), k) == 0) {
    return 0;
  }
  // y = x - sum_i x[i] b_i on the free positions [r, k)
  const int nf = k - r;
  u64* y = sc.y.data();
  u64* coef = sc.cf.data();
  const u64** rows = sc.rows.data();
  int nt = 0;
  coef[nt] = 1;
  rows[nt++] = x + r;
  for (int i = 0; i < r; ++i) {
    if (!x[i]) continue;
    coef[nt] = f.neg(x[i]);
    rows[nt++] = b.data() + size_t(i) * k + r;
  }
  lincomb(f, nf, nt, coef, rows, y);
  int q = -1;
  for (int t = 0; t < nf; ++t)
    if (y[t]) {
      q = t;
      break;
    }
  if (q < 0) {  // x is in the span (exact)
    if (!zvalid) build_screen(f, sc);
    return 0;
  }
  // move the new pivot to position r
  if (q != 0) {
    std::swap(perm[r], perm[r + q]);
    std::swap(y[0], y[q]);
    for (int i = 0; i < r; ++i) {
      u64* bi = b.data() + size_t(i) * k;
      std::swap(bi[r], bi[r + q]);
    }
  }
  const u64 iv = field_inv(f, y[0]);
  y[0] = 1;
  for (int t = 1; t < nf; ++t)
    if (y[t]) y[t] = f.mul(y[t], iv);
  // eliminate position r from the existing rows
  for (int i = 0; i < r; ++i) {
    u64* bi = b.data() + size_t(i) * k + r;
    const u64 t0 = bi[0];
    if (!t0) continue;
    const u64 nt0 = f.neg(t0);
    bi[0] = 0;
    for (int t = 1; t < nf; ++t) bi[t] = f.muladd(bi[t], nt0, y[t]);
  }
  b.resize(size_t(r + 1) * k);
  u64* nr = b.data() + size_t(r) * k;
  std::fill(nr, nr + r, 0);
  std::copy(y, y + nf, nr + r);
  src.push_back(src_id);
  ++r;
  zvalid = false;
  return r == k ? 2 : 1;
}

template MMatrix<FieldM61> compute_M(const FieldM61&, const Graph&, u64, bool);
template MMatrix<FieldGeneric> compute_M(const FieldGeneric&, const Graph&, u64, bool);
template int Basis::insert(const FieldM61&, const u64*, i32, Scratch&);
template int Basis::insert(const FieldGeneric&, const u64*, i32, Scratch&);

}  // namespace fastnips::causal::detail
