// Half-trek criterion and edgewise identification; see htc.h for the contract and shared/notes/htc.md
// for the derivations (randomized rank formulation §1.4(1-4), incremental max-flow §1.4(5)).
#include "causal/htc.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#define FASTNIPS_HTC_OMP(x) _Pragma(#x)
#else
#define FASTNIPS_HTC_OMP(x)
#endif

namespace fastnips::causal {
namespace {

using u64 = std::uint64_t;
using i32 = std::int32_t;
using i64 = std::int64_t;
__extension__ typedef unsigned __int128 u128;

constexpr u64 kMersenne61 = (u64(1) << 61) - 1;

bool in_parallel() {
#ifdef _OPENMP
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}

// Threads inside one call only when not already inside a parallel region (htc_identify_many) and the
// work (~ (n + |D|) * n for the matrix M, (n + |D| + |B|) * n / 64 for the graph bitsets) dwarfs the cost of
// a few parallel regions.
bool use_threads(std::int64_t n, std::int64_t n_dir, std::int64_t n_bi) {
  return !in_parallel() && n >= 128 && (n + n_dir + n_bi) * n >= (std::int64_t(1) << 22);
}

// ------------------------------------------------------------------------------------------------
// Random numbers: splitmix64 for seeding, xoshiro256** for streams.
inline u64 splitmix64(u64& s) {
  u64 z = (s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

inline u64 mix_seed(u64 seed, u64 a, u64 b) {
  u64 s = seed;
  u64 x = splitmix64(s) ^ (a * 0xD1B54A32D192ED03ULL);
  x = splitmix64(x) ^ (b * 0xABC98388FB8FAC03ULL);
  return splitmix64(x);
}

struct Rng {
  u64 s[4];
  Rng() : Rng(0) {}
  explicit Rng(u64 seed) {
    u64 x = seed;
    for (auto& w : s) w = splitmix64(x);
  }
  static inline u64 rotl(u64 x, int k) { return (x << k) | (x >> (64 - k)); }
  inline u64 next() {
    const u64 result = rotl(s[1] * 5, 7) * 9;
    const u64 t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
  // uniform in [0, m), m >= 1
  inline u64 below(u64 m) {
    const u64 threshold = (u64(0) - m) % m;
    for (;;) {
      const u64 x = next();
      if (x >= threshold) return x % m;
    }
  }
};

// ------------------------------------------------------------------------------------------------
// Prime fields. Values are kept reduced in [0, P). `kBatch` products of two reduced values (plus one
// reduced value) can be summed in a u128 before a reduction is needed.
struct FieldM61 {
  static constexpr u64 P = kMersenne61;
  static constexpr int kBatch = 31;
  u64 p() const { return P; }
  static inline u64 fold(u64 x) {  // any x < 2^64
    x = (x & P) + (x >> 61);
    return x >= P ? x - P : x;
  }
  inline u64 red(u128 z) const {  // any z < 2^128
    const u64 t = (u64(z) & P) + (u64(z >> 61) & P) + u64(z >> 122);
    return fold(t);
  }
  inline u64 mul(u64 a, u64 b) const {
    const u128 z = u128(a) * b;  // < 2^122
    const u64 r = (u64(z) & P) + u64(z >> 61);
    return r >= P ? r - P : r;
  }
  inline u64 add(u64 a, u64 b) const {
    const u64 r = a + b;
    return r >= P ? r - P : r;
  }
  inline u64 sub(u64 a, u64 b) const { return a >= b ? a - b : a + (P - b); }
  inline u64 neg(u64 a) const { return a ? P - a : 0; }
  inline u64 muladd(u64 a, u64 b, u64 c) const {  // a + b*c, all reduced
    const u128 z = u128(b) * c + a;                // < 2^123
    const u64 r = (u64(z) & P) + u64(z >> 61);
    return r >= P ? r - P : r;
  }
};

struct FieldGeneric {  // any prime 3 <= P < 2^63
  u64 P;
  static constexpr int kBatch = 2;
  u64 p() const { return P; }
  inline u64 red(u128 z) const { return u64(z % P); }
  inline u64 mul(u64 a, u64 b) const { return u64((u128(a) * b) % P); }
  inline u64 add(u64 a, u64 b) const {
    const u64 r = a + b;
    return r >= P ? r - P : r;
  }
  inline u64 sub(u64 a, u64 b) const { return a >= b ? a - b : a + (P - b); }
  inline u64 neg(u64 a) const { return a ? P - a : 0; }
  inline u64 muladd(u64 a, u64 b, u64 c) const { return u64((u128(b) * c + a) % P); }
};

template <class F>
u64 field_pow(const F& f, u64 a, u64 e) {
  u64 r = 1 % f.p();
  while (e) {
    if (e & 1) r = f.mul(r, a);
    a = f.mul(a, a);
    e >>= 1;
  }
  return r;
}

template <class F>
inline u64 field_inv(const F& f, u64 a) {
  return field_pow(f, a, f.p() - 2);
}

template <class F>
inline u64 random_nonzero(const F& f, Rng& rng) {
  return 1 + rng.below(f.p() - 1);
}

// sum_j x[j] * y[j]
template <class F>
inline u64 dot(const F& f, const u64* x, const u64* y, int k) {
  u64 res = 0;
  int j = 0;
  while (j < k) {
    const int e = std::min(k, j + F::kBatch);
    u128 acc = res;
    for (; j < e; ++j) acc += u128(x[j]) * y[j];
    res = f.red(acc);
  }
  return res;
}

// Deterministic Miller-Rabin for 64-bit n.
bool is_prime_u64(u64 n) {
  if (n < 2) return false;
  for (u64 q : {2ULL, 3ULL, 5ULL, 7ULL, 11ULL, 13ULL, 17ULL, 19ULL, 23ULL, 29ULL, 31ULL, 37ULL}) {
    if (n % q == 0) return n == q;
  }
  u64 d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  auto mulm = [n](u64 a, u64 b) { return u64((u128(a) * b) % n); };
  auto powm = [&](u64 a, u64 e) {
    u64 r = 1;
    while (e) {
      if (e & 1) r = mulm(r, a);
      a = mulm(a, a);
      e >>= 1;
    }
    return r;
  };
  for (u64 a : {2ULL, 3ULL, 5ULL, 7ULL, 11ULL, 13ULL, 17ULL, 19ULL, 23ULL, 29ULL, 31ULL, 37ULL}) {
    u64 x = powm(a % n, d);
    if (x == 1 || x == n - 1) continue;
    bool comp = true;
    for (int r = 1; r < s; ++r) {
      x = mulm(x, x);
      if (x == n - 1) {
        comp = false;
        break;
      }
    }
    if (comp) return false;
  }
  return true;
}

u64 checked_prime(u64 prime) {
  if (prime == 0) return kMersenne61;
  if (prime < 3 || prime >= (u64(1) << 63) || !is_prime_u64(prime)) {
    throw std::invalid_argument("htc: prime must be 0 (=> 2^61-1) or a prime p with 3 <= p < 2^63, got " +
                                std::to_string(prime));
  }
  return prime;
}

// ------------------------------------------------------------------------------------------------
// Graph: CSR adjacency (sorted), and n x W bitsets.
inline bool tb(const u64* row, int i) { return (row[i >> 6] >> (i & 63)) & 1u; }
inline void sb(u64* row, int i) { row[i >> 6] |= u64(1) << (i & 63); }

struct Graph {
  int n = 0, W = 0;
  i64 n_dir = 0, n_bi = 0;
  std::vector<i32> pa_off, pa, pa_eid;  // parents of v, ascending; input edge index
  std::vector<i32> ch_off, ch, ch_eid;  // children of v, ascending
  std::vector<i32> sb_off, sib, sb_eid; // siblings of v, ascending; bidirected input index
  std::vector<u64> htr;   // n*W: SEMID htrFrom(v) = De({v} ∪ sib(v)) (includes v, sib(v))
  std::vector<u64> sibm;  // n*W: sib(v)
  std::vector<u64> pam;   // n*W: pa(v)
  std::vector<i32> scc;   // SCC id per node (Tarjan completion order = reverse topological order)
  int nscc = 0;
  std::vector<i32> scc_off, scc_mem;  // members of SCC c: scc_mem[scc_off[c] .. scc_off[c+1])
  int npa(int v) const { return pa_off[v + 1] - pa_off[v]; }
  const u64* htr_row(int v) const { return htr.data() + size_t(v) * W; }
  const u64* sib_row(int v) const { return sibm.data() + size_t(v) * W; }
  const u64* pa_row(int v) const { return pam.data() + size_t(v) * W; }
};

void build_csr(int n, const std::vector<std::pair<i32, i32>>& key_eid, const std::vector<i32>& owner,
               std::vector<i32>& off, std::vector<i32>& adj, std::vector<i32>& eid) {
  // key_eid[e] = (neighbor, edge id), owner[e] = node whose list it belongs to
  off.assign(size_t(n) + 1, 0);
  for (i32 o : owner) ++off[size_t(o) + 1];
  for (int v = 0; v < n; ++v) off[v + 1] += off[v];
  adj.resize(owner.size());
  eid.resize(owner.size());
  std::vector<i32> pos(off.begin(), off.end() - 1);
  for (size_t e = 0; e < owner.size(); ++e) {
    const i32 p = pos[owner[e]]++;
    adj[p] = key_eid[e].first;
    eid[p] = key_eid[e].second;
  }
  std::vector<std::pair<i32, i32>> tmp;
  for (int v = 0; v < n; ++v) {
    const i32 b = off[v], e = off[v + 1];
    if (e - b <= 1) continue;
    bool sorted = true;
    for (i32 i = b + 1; i < e; ++i) sorted = sorted && adj[i - 1] < adj[i];
    if (sorted) continue;
    tmp.clear();
    for (i32 i = b; i < e; ++i) tmp.emplace_back(adj[i], eid[i]);
    std::sort(tmp.begin(), tmp.end());
    for (i32 i = b; i < e; ++i) {
      adj[i] = tmp[i - b].first;
      eid[i] = tmp[i - b].second;
    }
  }
}

void validate(int n, const i32* dir, i64 nd, const i32* bi, i64 nb) {
  if (n < 0) throw std::invalid_argument("htc: n must be >= 0");
  if (nd < 0 || nb < 0) throw std::invalid_argument("htc: edge counts must be >= 0");
  if (nd > i64(0x7FFFFFFF) || 2 * nb > i64(0x7FFFFFFF))
    throw std::invalid_argument("htc: too many edges (at most 2^31-1 directed, 2^30-1 bidirected)");
  if ((nd > 0 && dir == nullptr) || (nb > 0 && bi == nullptr))
    throw std::invalid_argument("htc: null edge buffer");
  std::vector<u64> keys;
  keys.reserve(size_t(std::max(nd, nb)));
  for (i64 e = 0; e < nd; ++e) {
    const i32 t = dir[2 * e], h = dir[2 * e + 1];
    if (t < 0 || t >= n || h < 0 || h >= n)
      throw std::invalid_argument("htc: directed edge " + std::to_string(e) + " has a node id out of range");
    if (t == h) throw std::invalid_argument("htc: directed self loop at node " + std::to_string(t));
    keys.push_back(u64(t) * u64(n) + u64(h));
  }
  std::sort(keys.begin(), keys.end());
  if (std::adjacent_find(keys.begin(), keys.end()) != keys.end())
    throw std::invalid_argument("htc: duplicate directed edge");
  keys.clear();
  for (i64 e = 0; e < nb; ++e) {
    i32 a = bi[2 * e], b = bi[2 * e + 1];
    if (a < 0 || a >= n || b < 0 || b >= n)
      throw std::invalid_argument("htc: bidirected edge " + std::to_string(e) + " has a node id out of range");
    if (a == b) throw std::invalid_argument("htc: bidirected self loop at node " + std::to_string(a));
    if (a > b) std::swap(a, b);
    keys.push_back(u64(a) * u64(n) + u64(b));
  }
  std::sort(keys.begin(), keys.end());
  if (std::adjacent_find(keys.begin(), keys.end()) != keys.end())
    throw std::invalid_argument("htc: duplicate bidirected edge");
}

// Tarjan's SCC, iterative. comp[v] = SCC id; ids are assigned in completion order, which is a reverse
// topological order of the condensation (an SCC completes after every SCC it reaches).
int tarjan_scc(const Graph& g, std::vector<i32>& comp) {
  const int n = g.n;
  comp.assign(n, -1);
  std::vector<i32> idx(n, -1), low(n, 0), stk, cs_node, cs_it;
  std::vector<uint8_t> on(n, 0);
  stk.reserve(n);
  int counter = 0, nc = 0;
  for (int r = 0; r < n; ++r) {
    if (idx[r] >= 0) continue;
    cs_node.push_back(r);
    cs_it.push_back(g.ch_off[r]);
    idx[r] = low[r] = counter++;
    stk.push_back(r);
    on[r] = 1;
    while (!cs_node.empty()) {
      const i32 v = cs_node.back();
      i32& it = cs_it.back();
      if (it < g.ch_off[v + 1]) {
        const i32 w = g.ch[it++];
        if (idx[w] < 0) {
          idx[w] = low[w] = counter++;
          stk.push_back(w);
          on[w] = 1;
          cs_node.push_back(w);
          cs_it.push_back(g.ch_off[w]);
        } else if (on[w]) {
          low[v] = std::min(low[v], idx[w]);
        }
        continue;
      }
      if (low[v] == idx[v]) {
        for (;;) {
          const i32 w = stk.back();
          stk.pop_back();
          on[w] = 0;
          comp[w] = nc;
          if (w == v) break;
        }
        ++nc;
      }
      cs_node.pop_back();
      cs_it.pop_back();
      if (!cs_node.empty()) {
        const i32 u = cs_node.back();
        low[u] = std::min(low[u], low[v]);
      }
    }
  }
  return nc;
}

Graph build_graph(int n, const i32* dir, i64 nd, const i32* bi, i64 nb, bool par) {
  (void)par;
  Graph g;
  g.n = n;
  g.W = (n + 63) / 64;
  g.n_dir = nd;
  g.n_bi = nb;
  {
    std::vector<std::pair<i32, i32>> ke(static_cast<size_t>(nd));
    std::vector<i32> own(static_cast<size_t>(nd));
    for (i64 e = 0; e < nd; ++e) {
      ke[e] = {dir[2 * e], i32(e)};
      own[e] = dir[2 * e + 1];
    }
    build_csr(n, ke, own, g.pa_off, g.pa, g.pa_eid);
    for (i64 e = 0; e < nd; ++e) {
      ke[e] = {dir[2 * e + 1], i32(e)};
      own[e] = dir[2 * e];
    }
    build_csr(n, ke, own, g.ch_off, g.ch, g.ch_eid);
  }
  {
    std::vector<std::pair<i32, i32>> ke(static_cast<size_t>(2 * nb));
    std::vector<i32> own(static_cast<size_t>(2 * nb));
    for (i64 e = 0; e < nb; ++e) {
      ke[2 * e] = {bi[2 * e + 1], i32(e)};
      own[2 * e] = bi[2 * e];
      ke[2 * e + 1] = {bi[2 * e], i32(e)};
      own[2 * e + 1] = bi[2 * e + 1];
    }
    build_csr(n, ke, own, g.sb_off, g.sib, g.sb_eid);
  }
  const size_t NW = size_t(n) * g.W;
  g.htr.assign(NW, 0);
  g.sibm.assign(NW, 0);
  g.pam.assign(NW, 0);
  for (int v = 0; v < n; ++v) {
    for (i32 i = g.sb_off[v]; i < g.sb_off[v + 1]; ++i) sb(g.sibm.data() + size_t(v) * g.W, g.sib[i]);
    for (i32 i = g.pa_off[v]; i < g.pa_off[v + 1]; ++i) sb(g.pam.data() + size_t(v) * g.W, g.pa[i]);
  }
  // htrFrom(v) = De(v) ∪ ⋃_{s in sib(v)} De(s), with De(C) (C an SCC, De includes C) computed as bitsets
  // in reverse topological order of the condensation: O((n + |D| + |B|) n / 64).
  g.nscc = tarjan_scc(g, g.scc);
  {
    const int nc = g.nscc, W = g.W;
    g.scc_off.assign(size_t(nc) + 1, 0);
    g.scc_mem.resize(n);
    for (int v = 0; v < n; ++v) ++g.scc_off[g.scc[v] + 1];
    for (int c = 0; c < nc; ++c) g.scc_off[c + 1] += g.scc_off[c];
    {
      std::vector<i32> pos(g.scc_off.begin(), g.scc_off.end() - 1);
      for (int v = 0; v < n; ++v) g.scc_mem[pos[g.scc[v]]++] = v;
    }
    const std::vector<i32>& c_off = g.scc_off;
    const std::vector<i32>& c_mem = g.scc_mem;
    std::vector<u64> des(size_t(nc) * W, 0);
    for (int c = 0; c < nc; ++c) {  // Tarjan ids: every SCC reachable from c has a smaller id
      u64* dc = des.data() + size_t(c) * W;
      for (i32 i = c_off[c]; i < c_off[c + 1]; ++i) {
        const i32 x = c_mem[i];
        sb(dc, x);
        for (i32 e = g.ch_off[x]; e < g.ch_off[x + 1]; ++e) {
          const i32 cc = g.scc[g.ch[e]];
          if (cc == c) continue;
          const u64* d2 = des.data() + size_t(cc) * W;
          for (int w = 0; w < W; ++w) dc[w] |= d2[w];
        }
      }
    }
FASTNIPS_HTC_OMP(omp parallel for schedule(static) if (par))
    for (int v = 0; v < n; ++v) {
      u64* row = g.htr.data() + size_t(v) * W;
      const u64* dv = des.data() + size_t(g.scc[v]) * W;
      std::copy(dv, dv + W, row);
      for (i32 e = g.sb_off[v]; e < g.sb_off[v + 1]; ++e) {
        const u64* ds = des.data() + size_t(g.scc[g.sib[e]]) * W;
        for (int w = 0; w < W; ++w) row[w] |= ds[w];
      }
    }
  }
  return g;
}

// ------------------------------------------------------------------------------------------------
// M = Omega (I - Lambda)^{-1} mod p, restricted to the columns of nodes that have a child (only those
// columns are ever read: they are the parents). Row-major n x m; colidx[w] = column of w or -1.
//
// Column recurrence: M (I - Lambda) = Omega, i.e. M[:,k] = Omega[:,k] + sum_{j->k} lambda_jk M[:,j] (the
// parents j of k all have a child, so the recurrence is closed over the m stored columns). Columns are
// computed SCC by SCC in topological order of the condensation; inside a nontrivial SCC C,
// (I - Lambda_CC)^T M[:,C]^T = (Omega[:,C] + M[:,out] Lambda_{out,C})^T (one LU per SCC). Columns are built
// as rows of Mt = M^T and transposed once at the end. Cost O(n (|D| + m + sum_C |C|^2) + |B| + sum_C |C|^3)
// (Omega is sparse: O(n + |B|) to add).
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

template <class F>
struct MMatrix {
  int m = 0;
  std::vector<i32> colidx;
  std::vector<u64> M;
};

template <class F>
MMatrix<F> compute_M(const F& f, const Graph& g, u64 seed, bool par) {
  (void)par;
  const int n = g.n;
  MMatrix<F> R;
  R.colidx.assign(n, -1);
  int m = 0;
  for (int v = 0; v < n; ++v)
    if (g.ch_off[v + 1] > g.ch_off[v]) R.colidx[v] = m++;
  R.m = m;
  if (m == 0 || n == 0) return R;

  Rng rng(mix_seed(seed, 0x4D41545249584DULL, 0));
  // parameters: lambda per directed edge (input order), omega_vv per node, omega per bidirected edge
  std::vector<u64> lam_e(size_t(g.n_dir)), om_d(n), om_e(size_t(g.n_bi));
  for (auto& x : lam_e) x = random_nonzero(f, rng);
  for (auto& x : om_d) x = random_nonzero(f, rng);
  for (auto& x : om_e) x = random_nonzero(f, rng);

  const std::vector<i32>& comp = g.scc;
  const int nc = g.nscc;
  const std::vector<i32>& c_off = g.scc_off;
  const std::vector<i32>& c_mem = g.scc_mem;
  // LU factorizations P A = L U of A = (I - Lambda_CC)^T for nontrivial SCCs (partial pivoting on any
  // nonzero), resampling Lambda_CC while singular mod p. Row i of A: 1 on the diagonal, -lambda_{jk} at
  // column loc[j] for each parent j in C of k = mem[i]. Stored per SCC as an s x s array: below the
  // diagonal -L, on it d_i = 1/U_ii, above it -d_i U_ij; plus the row order lu_pr (position i holds local
  // row lu_pr[i]).
  std::vector<i64> lu_off(size_t(nc) + 1, 0), pr_off(size_t(nc) + 1, 0);
  for (int c = 0; c < nc; ++c) {
    const i64 s = c_off[c + 1] - c_off[c];
    lu_off[c + 1] = lu_off[c] + (s > 1 ? s * s : 0);
    pr_off[c + 1] = pr_off[c] + (s > 1 ? s : 0);
  }
  std::vector<u64> lu(size_t(lu_off[nc]));
  std::vector<i32> lu_pr(size_t(pr_off[nc]));
  std::vector<i32> loc(n, -1);
  int smax = 1;
  for (int c = 0; c < nc; ++c) {
    const int s = c_off[c + 1] - c_off[c];
    smax = std::max(smax, s);
    if (s == 1) continue;
    const i32* mem = c_mem.data() + c_off[c];
    for (int i = 0; i < s; ++i) loc[mem[i]] = i;
    u64* A = lu.data() + lu_off[c];
    i32* prow = lu_pr.data() + pr_off[c];
    bool ok = false;
    for (int attempt = 0; attempt < 10000 && !ok; ++attempt) {
      if (attempt > 0) {
        for (int i = 0; i < s; ++i) {
          const i32 k = mem[i];
          for (i32 e = g.ch_off[k]; e < g.ch_off[k + 1]; ++e)
            if (comp[g.ch[e]] == c) lam_e[g.ch_eid[e]] = random_nonzero(f, rng);
        }
      }
      std::fill(A, A + size_t(s) * s, 0);
      for (int i = 0; i < s; ++i) {
        prow[i] = i;
        A[size_t(i) * s + i] = 1;
        const i32 k = mem[i];
        for (i32 e = g.pa_off[k]; e < g.pa_off[k + 1]; ++e) {
          const i32 pp = g.pa[e];
          if (comp[pp] == c) A[size_t(i) * s + loc[pp]] = f.neg(lam_e[g.pa_eid[e]]);
        }
      }
      ok = true;
      for (int col = 0; col < s; ++col) {
        int piv = -1;
        for (int i = col; i < s; ++i)
          if (A[size_t(i) * s + col]) {
            piv = i;
            break;
          }
        if (piv < 0) {
          ok = false;
          break;
        }
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
    }
    if (!ok)
      throw std::runtime_error("htc: could not find a nonsingular (I - Lambda) mod p; use a larger prime");
    for (int i = 0; i < s; ++i) {
      u64* ri = A + size_t(i) * s;
      const u64 d = field_inv(f, ri[i]);
      for (int j = 0; j < i; ++j) ri[j] = f.neg(ri[j]);
      ri[i] = d;
      const u64 nd = f.neg(d);
      for (int j = i + 1; j < s; ++j) ri[j] = f.mul(nd, ri[j]);
    }
  }

  // Mt = M^T (m x n, row colidx[k] = column k of M), computed in stripes of its n columns (= rows of M,
  // which are independent), parallel over stripes.
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
  maxdeg = std::max(maxdeg, size_t(smax)) + 1;
  auto mt_row = [&](i32 k) { return Mt.data() + size_t(R.colidx[k]) * n; };
FASTNIPS_HTC_OMP(omp parallel if (par && nstripes > 1))
  {
    std::vector<u64> Rbuf(size_t(smax) * stripe), Ybuf(size_t(smax) * stripe), coef(maxdeg);
    std::vector<const u64*> rows(maxdeg);
FASTNIPS_HTC_OMP(omp for schedule(dynamic, 1))
    for (int st = 0; st < nstripes; ++st) {
      const int r0 = st * stripe, r1 = std::min(n, r0 + stripe), w = r1 - r0;
      // out[0..w) = Omega[r0..r1, k] + sum_{j->k, comp[j] != skip} lambda_jk M[r0..r1, j]
      auto col_into = [&](i32 k, int skip_comp, u64* out) {
        int nt = 0;
        for (i32 e = g.pa_off[k]; e < g.pa_off[k + 1]; ++e) {
          const i32 pp = g.pa[e];
          if (comp[pp] == skip_comp) continue;
          coef[nt] = lam_e[g.pa_eid[e]];
          rows[nt] = mt_row(pp) + r0;
          ++nt;
        }
        lincomb(f, w, nt, coef.data(), rows.data(), out);
        if (k >= r0 && k < r1) out[k - r0] = f.add(out[k - r0], om_d[k]);
        const i32* sb0 = g.sib.data() + g.sb_off[k];
        const i32* sb1 = g.sib.data() + g.sb_off[k + 1];
        for (const i32* q = std::lower_bound(sb0, sb1, r0); q != sb1 && *q < r1; ++q)
          out[*q - r0] = f.add(out[*q - r0], om_e[g.sb_eid[q - g.sib.data()]]);
      };
      for (int c = nc - 1; c >= 0; --c) {  // topological order: parents' SCCs have larger Tarjan ids
        const int s = c_off[c + 1] - c_off[c];
        const i32* mem = c_mem.data() + c_off[c];
        if (s == 1) {
          const i32 k = mem[0];
          if (R.colidx[k] >= 0) col_into(k, -1, mt_row(k) + r0);
          continue;
        }
        for (int i = 0; i < s; ++i) col_into(mem[i], c, Rbuf.data() + size_t(i) * w);
        const u64* A = lu.data() + lu_off[c];
        const i32* prow = lu_pr.data() + pr_off[c];
        // forward: Y_i = R_{prow[i]} - sum_{j<i} L_ij Y_j
        for (int i = 0; i < s; ++i) {
          const u64* ri = A + size_t(i) * s;
          int nt = 0;
          coef[nt] = 1;
          rows[nt++] = Rbuf.data() + size_t(prow[i]) * w;
          for (int j = 0; j < i; ++j)
            if (ri[j]) {
              coef[nt] = ri[j];
              rows[nt++] = Ybuf.data() + size_t(j) * w;
            }
          lincomb(f, w, nt, coef.data(), rows.data(), Ybuf.data() + size_t(i) * w);
        }
        // back: X_i = d_i Y_i - sum_{j>i} d_i U_ij X_j, X_i = M[r0..r1, mem[i]]
        for (int i = s - 1; i >= 0; --i) {
          const u64* ri = A + size_t(i) * s;
          int nt = 0;
          coef[nt] = ri[i];
          rows[nt++] = Ybuf.data() + size_t(i) * w;
          for (int j = i + 1; j < s; ++j)
            if (ri[j]) {
              coef[nt] = ri[j];
              rows[nt++] = mt_row(mem[j]) + r0;
            }
          lincomb(f, w, nt, coef.data(), rows.data(), mt_row(mem[i]) + r0);
        }
      }
    }
  }

  // M = transpose of Mt, in 64 x 64 tiles
  R.M.resize(size_t(n) * m);
  constexpr int T = 64;
  const int nty = (n + T - 1) / T;
FASTNIPS_HTC_OMP(omp parallel for schedule(static) if (par))
  for (int ty = 0; ty < nty; ++ty) {
    const int y0 = ty * T, y1 = std::min(n, y0 + T);
    for (int c0 = 0; c0 < m; c0 += T) {
      const int c1 = std::min(m, c0 + T);
      for (int y = y0; y < y1; ++y) {
        u64* dst = R.M.data() + size_t(y) * m;
        for (int c = c0; c < c1; ++c) dst[c] = Mt[size_t(c) * n + y];
      }
    }
  }
  return R;
}

// ------------------------------------------------------------------------------------------------
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

  void reset(int k_, u64 seed) {
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
  void release() {
    std::vector<u64>().swap(b);
    std::vector<u64>().swap(z);
    std::vector<i32>().swap(perm);
  }
  template <class F>
  void build_screen(const F& f, Scratch& sc) {
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
  // x: length k, in the current permuted order (x[t] = value at original column perm[t]).
  // Returns 0 rejected, 1 accepted, 2 accepted and now full rank.
  template <class F>
  int insert(const F& f, const u64* x, i32 src_id, Scratch& sc) {
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
  int pivot_column(int i) const { return perm[i]; }  // original column of row i's pivot
  // e_{pivot(i)} in the row space <=> row i vanishes on every free position
  bool row_is_unit(int i) const {
    const u64* bi = b.data() + size_t(i) * k;
    for (int t = r; t < k; ++t)
      if (bi[t]) return false;
    return true;
  }
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
  void begin(int v) { st[v].reset(g.npa(v), mix_seed(seed, 0x5CEE4ULL, u64(v))); }
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

// Exact incremental max-flow. Network for node v: L(x) (x in V), Rin(u) -> Rout(u) (capacity 1),
// s -> L(a) for allowed a, L(x) -> Rin(x), L(x) -> Rin(u) for u in sib(x), Rout(w) -> Rin(c) for w -> c,
// Rout(p) -> t for p in pa(v). All arcs capacity 1. Node ids: L(x) = x, Rin(u) = n+u, Rout(u) = 2n+u.
// Flow state (unit flows): fL[x] = u if L(x)->Rin(u) carries flow; fR[u] = c if Rout(u)->Rin(c) carries
// flow, n if Rout(u)->t does; pr[u] = x (L(x)) or n+y (Rout(y)) feeding Rin(u); -1 = none.
struct FlowSolver {
  const Graph& g;
  int n, W;
  std::vector<u64> anc;  // n*W: ancestors of u, u included (nodes that can reach u by a directed path)
  struct VS {
    std::vector<i32> fL, fR, pr, src;
    // 3 bitsets of W words (L, Rin, Rout): vertices known unable to reach t in the residual graph minus s.
    // Reset after every augmentation to "Rin/Rout of nodes that reach no parent of v".
    std::vector<u64> dead, rel;  // rel: W words, ancestors of pa(v)
    int flow = 0;
  };
  std::vector<VS> st;
  struct Buf {
    std::vector<i32> stk, it;
  };
  explicit FlowSolver(const Graph& g_) : g(g_), n(g_.n), W(g_.W), st(size_t(g_.n)) {
    // ancestors per SCC in topological order (decreasing Tarjan id)
    const int nc = g.nscc;
    const std::vector<i32>& c_off = g.scc_off;
    const std::vector<i32>& c_mem = g.scc_mem;
    std::vector<u64> ac(size_t(nc) * W, 0);
    for (int c = nc - 1; c >= 0; --c) {
      u64* t = ac.data() + size_t(c) * W;
      for (i32 i = c_off[c]; i < c_off[c + 1]; ++i) {
        const i32 x = c_mem[i];
        sb(t, x);
        for (i32 e = g.pa_off[x]; e < g.pa_off[x + 1]; ++e) {
          const i32 pc = g.scc[g.pa[e]];
          if (pc == c) continue;
          const u64* t2 = ac.data() + size_t(pc) * W;
          for (int w = 0; w < W; ++w) t[w] |= t2[w];
        }
      }
    }
    anc.resize(size_t(n) * W);
    for (int u = 0; u < n; ++u) {
      const u64* t = ac.data() + size_t(g.scc[u]) * W;
      std::copy(t, t + W, anc.data() + size_t(u) * W);
    }
  }
  Buf make_buf() const {
    Buf b;
    b.stk.resize(size_t(3) * n + 2);
    b.it.resize(size_t(3) * n + 2);
    return b;
  }
  void reset_dead(VS& s) const {
    u64* d = s.dead.data();
    std::fill(d, d + W, 0);
    for (int w = 0; w < W; ++w) d[W + w] = d[2 * W + w] = ~s.rel[w];
  }
  void begin(int v) {
    VS& s = st[v];
    s.fL.assign(n, -1);
    s.fR.assign(n, -1);
    s.pr.assign(n, -1);
    s.src.clear();
    s.rel.assign(W, 0);
    for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) {
      const u64* t = anc.data() + size_t(g.pa[e]) * W;
      for (int w = 0; w < W; ++w) s.rel[w] |= t[w];
    }
    s.dead.resize(size_t(3) * W);
    reset_dead(s);
    s.flow = 0;
  }
  int insert(int v, int a, Buf& buf) {
    VS& s = st[v];
    // a reaches no parent of v by a half-trek: no path can start at L(a)
    {
      const u64* h = g.htr_row(a);
      const u64* p = g.pa_row(v);
      bool any = false;
      for (int w = 0; w < W; ++w)
        if (h[w] & p[w]) {
          any = true;
          break;
        }
      if (!any) return 0;
    }
    u64* deadL = s.dead.data();
    u64* deadI = deadL + W;
    u64* deadO = deadL + 2 * W;
    i32* fL = s.fL.data();
    i32* fR = s.fR.data();
    i32* pr = s.pr.data();
    const u64* pm = g.pa_row(v);
    i32* stk = buf.stk.data();
    i32* it = buf.it.data();
    const int n2 = 2 * n;
    int top = 0;
    stk[0] = a;
    it[0] = 0;
    sb(deadL, a);
    bool found = false;
    while (top >= 0) {
      const i32 node = stk[top];
      i32 nxt = -1;
      if (node < n) {  // L(x): forward to Rin(x), Rin(sib)
        const i32 x = node;
        const i32 deg = 1 + g.sb_off[x + 1] - g.sb_off[x];
        while (it[top] < deg) {
          const i32 j = it[top]++;
          const i32 u = j == 0 ? x : g.sib[g.sb_off[x] + j - 1];
          if (u == fL[x] || tb(deadI, u)) continue;
          sb(deadI, u);
          nxt = n + u;
          break;
        }
      } else if (node < n2) {  // Rin(u): to Rout(u) if free, else back along the flow arc
        const i32 u = node - n;
        if (it[top] == 0) {
          it[top] = 1;
          const i32 p = pr[u];
          if (p < 0) {
            if (!tb(deadO, u)) {
              sb(deadO, u);
              nxt = n2 + u;
            }
          } else if (p < n) {
            if (!tb(deadL, p)) {
              sb(deadL, p);
              nxt = p;
            }
          } else if (!tb(deadO, p - n)) {
            sb(deadO, p - n);
            nxt = p + n;
          }
        }
      } else {  // Rout(u): t, back to Rin(u) if used, children
        const i32 u = node - n2;
        const i32 cb = g.ch_off[u], nch = g.ch_off[u + 1] - cb;
        for (;;) {
          const i32 j = it[top]++;
          if (j == 0) {
            if (tb(pm, u) && fR[u] != n) {
              found = true;
              break;
            }
            continue;
          }
          if (j == 1) {
            if (pr[u] >= 0 && !tb(deadI, u)) {
              sb(deadI, u);
              nxt = n + u;
              break;
            }
            continue;
          }
          if (j - 2 >= nch) break;
          const i32 c = g.ch[cb + j - 2];
          if (c == fR[u] || tb(deadI, c)) continue;
          sb(deadI, c);
          nxt = n + c;
          break;
        }
        if (found) break;
      }
      if (nxt < 0) {
        --top;
        continue;
      }
      ++top;
      stk[top] = nxt;
      it[top] = 0;
    }
    if (!found) return 0;
    // augment along stk[0..top] -> t
    for (int i = 0; i <= top; ++i) {
      const i32 x = stk[i];
      const i32 y = i < top ? stk[i + 1] : -1;
      if (x < n) {  // L(x) -> Rin(u)
        const i32 u = y - n;
        fL[x] = u;
        pr[u] = x;
      } else if (x < n2) {
        const i32 u = x - n;
        if (y >= n2 && y - n2 == u) {
          // Rin(u) -> Rout(u): vertex becomes used; pr[u] set by the entering arc
        } else if (y < n) {
          fL[y] = -1;  // cancel L(y) -> Rin(u)
        } else {
          fR[y - n2] = -1;  // cancel Rout(w) -> Rin(u)
        }
      } else {
        const i32 u = x - n2;
        if (y < 0) {
          fR[u] = n;
        } else if (y - n == u) {
          pr[u] = -1;  // cancel Rin(u) -> Rout(u)
        } else {
          const i32 c = y - n;
          fR[u] = c;
          pr[c] = n + u;
        }
      }
    }
    s.src.push_back(a);
    ++s.flow;
    reset_dead(s);
    return s.flow == g.npa(v) ? 2 : 1;
  }
  std::vector<i32> sources(int v) const {
    std::vector<i32> y = st[v].src;
    std::sort(y.begin(), y.end());
    return y;
  }
  void release(int v) {
    VS& s = st[v];
    std::vector<i32>().swap(s.fL);
    std::vector<i32>().swap(s.fR);
    std::vector<i32>().swap(s.pr);
    std::vector<u64>().swap(s.dead);
    std::vector<u64>().swap(s.rel);
  }
};

// ------------------------------------------------------------------------------------------------
// The fixpoint driver, shared by both solvers. Initial phase: every node with parents gets its initially
// allowed rows (V \ htrFrom(v)) ∪ (parentless \ sib(v)); then a FIFO worklist of solved nodes u offers u
// to every unsolved v with u in htrFrom(v) \ sib(v) (exactly the nodes that just became allowed).
template <class Solver>
void htc_fixpoint(const Graph& g, Solver& sol, HtcResult& res, bool par) {
  const int n = g.n;
  res.solved.assign(n, 0);
  res.level.assign(n, -1);
  res.sources.assign(n, {});
  res.order.clear();
  res.rounds = 0;
  res.tests = 0;
  std::vector<i32> todo;
  for (int v = 0; v < n; ++v) {
    if (g.npa(v) == 0) {
      res.solved[v] = 1;
      res.level[v] = 0;
      res.order.push_back(v);
    } else {
      todo.push_back(v);
    }
  }
  const int W = g.W;
  // rel(v) = {a : htrFrom(a) ∩ pa(v) != ∅}: the only rows that can be nonzero on pa(v); the others are
  // never offered. hanc(p) = {a : p in htrFrom(a)} = An(p) ∪ sib(An(p)), per SCC in topological order.
  std::vector<u64> rel(size_t(n) * W, 0);
  {
    const int nc = g.nscc;
    const std::vector<i32>& c_off = g.scc_off;
    const std::vector<i32>& c_mem = g.scc_mem;
    std::vector<u64> ha(size_t(nc) * W, 0);
    for (int c = nc - 1; c >= 0; --c) {
      u64* t = ha.data() + size_t(c) * W;
      for (i32 i = c_off[c]; i < c_off[c + 1]; ++i) {
        const i32 x = c_mem[i];
        sb(t, x);
        const u64* sx = g.sib_row(x);
        for (int w = 0; w < W; ++w) t[w] |= sx[w];
        for (i32 e = g.pa_off[x]; e < g.pa_off[x + 1]; ++e) {
          const i32 pc = g.scc[g.pa[e]];
          if (pc == c) continue;
          const u64* t2 = ha.data() + size_t(pc) * W;
          for (int w = 0; w < W; ++w) t[w] |= t2[w];
        }
      }
    }
FASTNIPS_HTC_OMP(omp parallel for schedule(static) if (par))
    for (int v = 0; v < n; ++v) {
      u64* rv = rel.data() + size_t(v) * W;
      for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) {
        const u64* t = ha.data() + size_t(g.scc[g.pa[e]]) * W;
        for (int w = 0; w < W; ++w) rv[w] |= t[w];
      }
    }
  }
  std::vector<u64> p0(W, 0);
  for (int v = 0; v < n; ++v)
    if (res.solved[v]) sb(p0.data(), v);
  const u64 last_mask = (n & 63) ? ((u64(1) << (n & 63)) - 1) : ~u64(0);
  std::vector<uint8_t> full(n, 0);
  i64 tests = 0;
  const int nt = int(todo.size());
FASTNIPS_HTC_OMP(omp parallel if (par && nt > 1) reduction(+ : tests))
  {
    auto buf = sol.make_buf();
FASTNIPS_HTC_OMP(omp for schedule(dynamic, 1))
    for (int t = 0; t < nt; ++t) {
      const int v = todo[t];
      sol.begin(v);
      const u64* hv = g.htr_row(v);
      const u64* sv = g.sib_row(v);
      const u64* rv = rel.data() + size_t(v) * W;
      // initially allowed: (V \ htrFrom(v)) ∪ (parentless \ sib(v)), ascending
      for (int w = 0; w < W && !full[v]; ++w) {
        u64 bits = rv[w] & (~hv[w] | (p0[w] & ~sv[w]));
        if (w == W - 1) bits &= last_mask;
        while (bits) {
          const int a = (w << 6) + __builtin_ctzll(bits);
          bits &= bits - 1;
          ++tests;
          if (sol.insert(v, a, buf) == 2) {
            full[v] = 1;
            break;
          }
        }
      }
    }
  }
  std::vector<i32> queue;
  std::vector<i32> unsolved;
  for (int v : todo) {
    if (full[v]) {
      res.solved[v] = 1;
      res.level[v] = 1;
      res.order.push_back(v);
      res.sources[v] = sol.sources(v);
      sol.release(v);
      queue.push_back(v);
    } else {
      unsolved.push_back(v);
    }
  }
  // Worklist, one Jacobi level at a time: queue[head, end) holds the nodes solved in the previous level.
  // Each unsolved v receives those nodes in queue order (the rows that just became allowed) until it is
  // solved; nodes solved in this level are appended ordered by (position of the row that completed
  // them, id), so the result does not depend on the number of threads.
  std::vector<i64> by(n, -1);
  size_t head = 0;
  while (head < queue.size() && !unsolved.empty()) {
    const size_t end = queue.size();
    const int nu = int(unsolved.size());
    const bool ppar = par && i64(nu) * i64(end - head) >= 4096;
    (void)ppar;
    i64 t2 = 0;
FASTNIPS_HTC_OMP(omp parallel if (ppar) reduction(+ : t2))
    {
      auto buf = sol.make_buf();
FASTNIPS_HTC_OMP(omp for schedule(dynamic, 1))
      for (int t = 0; t < nu; ++t) {
        const int v = unsolved[t];
        const u64* hv = g.htr_row(v);
        const u64* sv = g.sib_row(v);
        const u64* rv = rel.data() + size_t(v) * W;
        for (size_t q = head; q < end; ++q) {
          const int u = queue[q];
          if (!tb(hv, u) || tb(sv, u) || !tb(rv, u)) continue;
          ++t2;
          if (sol.insert(v, u, buf) == 2) {
            by[v] = i64(q);
            break;
          }
        }
      }
    }
    tests += t2;
    std::vector<std::pair<i64, i32>> newly;
    int w = 0;
    for (int t = 0; t < nu; ++t) {
      const int v = unsolved[t];
      if (by[v] >= 0)
        newly.emplace_back(by[v], v);
      else
        unsolved[w++] = v;
    }
    unsolved.resize(w);
    std::sort(newly.begin(), newly.end());
    for (const auto& pv : newly) {
      const int v = pv.second;
      res.solved[v] = 1;
      res.level[v] = res.level[queue[size_t(pv.first)]] + 1;
      res.order.push_back(v);
      res.sources[v] = sol.sources(v);
      sol.release(v);
      queue.push_back(v);
    }
    head = end;
  }
  for (int v : unsolved) sol.release(v);
  res.tests = tests;
  int r = 0;
  for (int v = 0; v < n; ++v) r = std::max(r, res.level[v]);
  res.rounds = r;
}

// Whether any node with parents has an initially allowed row; if none has, no node beyond the parentless
// ones can ever be solved and no rank test is needed (e.g. one giant strongly connected component).
bool any_initial_row(const Graph& g) {
  const int n = g.n, W = g.W;
  std::vector<u64> p0(W, 0);
  for (int v = 0; v < n; ++v)
    if (g.npa(v) == 0) sb(p0.data(), v);
  for (int v = 0; v < n; ++v) {
    if (g.npa(v) == 0) continue;
    const u64* h = g.htr_row(v);
    const u64* sv = g.sib_row(v);
    for (int w = 0; w < W; ++w) {
      const u64 valid = (w == W - 1 && (n & 63)) ? ((u64(1) << (n & 63)) - 1) : ~u64(0);
      if (((~h[w] | (p0[w] & ~sv[w])) & valid) != 0) return true;
    }
  }
  return false;
}

template <class F>
void htc_randomized(const F& f, const Graph& g, u64 seed, HtcResult& res, bool par) {
  const MMatrix<F> mm = any_initial_row(g) ? compute_M(f, g, seed, par) : MMatrix<F>{};
  RankSolver<F> sol(f, g, mm, seed);
  htc_fixpoint(g, sol, res, par);
}

HtcResult htc_plain(const Graph& g, const HtcOptions& opt, bool par) {
  HtcResult res;
  if (opt.method == Method::kMaxFlow) {
    FlowSolver sol(g);
    htc_fixpoint(g, sol, res, par);
  } else {
    const u64 p = checked_prime(opt.prime);
    if (p == kMersenne61)
      htc_randomized(FieldM61{}, g, opt.seed, res, par);
    else
      htc_randomized(FieldGeneric{p}, g, opt.seed, res, par);
  }
  return res;
}

// ------------------------------------------------------------------------------------------------
// Tian decomposition (SEMID MixedGraph$tianDecompose): strongly connected components are merged into
// bidirected-connected super components; each is run as its own mixed graph on internal ∪ incoming.
HtcResult htc_tian(const Graph& g, const HtcOptions& opt, bool par) {
  const int n = g.n;
  HtcResult res;
  res.solved.assign(n, 0);
  res.level.assign(n, -1);
  res.sources.assign(n, {});
  res.component.assign(n, -1);
  if (n == 0) return res;
  const std::vector<i32>& scc = g.scc;
  const int nc = g.nscc;
  // topological position: SCCs in topological order (reverse Tarjan completion), ties by node id
  std::vector<i32> topo(n);
  std::iota(topo.begin(), topo.end(), 0);
  std::stable_sort(topo.begin(), topo.end(), [&](i32 a, i32 b) { return scc[a] > scc[b]; });
  std::vector<i32> pos(n);
  for (int i = 0; i < n; ++i) pos[topo[i]] = i;
  // union-find: SCC members together, bidirected endpoints together
  std::vector<i32> uf(n);
  std::iota(uf.begin(), uf.end(), 0);
  auto find = [&](i32 x) {
    while (uf[x] != x) {
      uf[x] = uf[uf[x]];
      x = uf[x];
    }
    return x;
  };
  auto unite = [&](i32 a, i32 b) {
    a = find(a);
    b = find(b);
    if (a != b) uf[std::max(a, b)] = std::min(a, b);
  };
  {
    std::vector<i32> rep(nc, -1);
    for (int v = 0; v < n; ++v) {
      if (rep[scc[v]] < 0)
        rep[scc[v]] = v;
      else
        unite(rep[scc[v]], v);
    }
  }
  for (int v = 0; v < n; ++v)
    for (i32 e = g.sb_off[v]; e < g.sb_off[v + 1]; ++e) unite(v, g.sib[e]);
  // components ordered by smallest member (the root is the smallest member)
  std::vector<i32> cid(n, -1);
  int ncomp = 0;
  for (int v = 0; v < n; ++v) {
    const i32 r = find(v);
    if (r == v) cid[v] = ncomp++;
  }
  for (int v = 0; v < n; ++v) res.component[v] = cid[find(v)];
  res.components.assign(ncomp, {});
  for (int i = 0; i < n; ++i) {
    const i32 v = topo[i];
    res.components[res.component[v]].internal.push_back(v);
  }
  std::vector<i32> mark(n, -1), loc(n, -1);
  // parentless first
  for (int v = 0; v < n; ++v)
    if (g.npa(v) == 0) {
      res.solved[v] = 1;
      res.level[v] = 0;
      res.order.push_back(v);
    }
  for (int c = 0; c < ncomp; ++c) {
    TianComponent& tc = res.components[c];
    for (i32 v : tc.internal) mark[v] = c;
    for (i32 v : tc.internal)
      for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) {
        const i32 p = g.pa[e];
        if (mark[p] != c && mark[p] != -2 - c) {
          mark[p] = -2 - c;
          tc.incoming.push_back(p);
        }
      }
    std::sort(tc.incoming.begin(), tc.incoming.end(), [&](i32 a, i32 b) { return pos[a] < pos[b]; });
    tc.top_order.resize(tc.internal.size() + tc.incoming.size());
    std::merge(tc.internal.begin(), tc.internal.end(), tc.incoming.begin(), tc.incoming.end(),
               tc.top_order.begin(), [&](i32 a, i32 b) { return pos[a] < pos[b]; });
    const int m = int(tc.top_order.size());
    for (int i = 0; i < m; ++i) loc[tc.top_order[i]] = i;
    std::vector<i32> d, b;
    for (i32 v : tc.internal) {
      for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) {
        d.push_back(loc[g.pa[e]]);
        d.push_back(loc[v]);
      }
      for (i32 e = g.sb_off[v]; e < g.sb_off[v + 1]; ++e) {
        const i32 s = g.sib[e];
        if (s > v) {  // both internal (bidirected edges never leave a component)
          b.push_back(loc[v]);
          b.push_back(loc[s]);
        }
      }
    }
    const bool trivial = d.empty();
    if (!trivial) {
      const bool cpar = par && use_threads(m, i64(d.size() / 2), i64(b.size() / 2));
      Graph sg = build_graph(m, d.data(), i64(d.size() / 2), b.data(), i64(b.size() / 2), cpar);
      HtcOptions o = opt;
      o.tian = false;
      o.seed = mix_seed(opt.seed, 0x7419ULL, u64(c));
      HtcResult sr = htc_plain(sg, o, cpar);
      res.tests += sr.tests;
      res.rounds = std::max(res.rounds, sr.rounds);
      for (i32 lv : sr.order) {
        const i32 v = tc.top_order[lv];
        if (mark[v] != c || g.npa(v) == 0) continue;  // incoming nodes / parentless handled elsewhere
        res.solved[v] = 1;
        res.level[v] = sr.level[lv];
        res.order.push_back(v);
        std::vector<i32>& Y = res.sources[v];
        for (i32 ly : sr.sources[lv]) Y.push_back(tc.top_order[ly]);
        std::sort(Y.begin(), Y.end());
      }
    }
    for (i32 v : tc.top_order) loc[v] = -1;
  }
  return res;
}

// ------------------------------------------------------------------------------------------------
// Edgewise identification (SEMID edgewiseIdentifyStep, subsetSizeControl = Inf), Gauss-Seidel passes.
// For node v with unsolved parents U: allowed a: a != v, a not in sib(v), htrFrom(a) ∩ U != ∅,
// htrFrom(v) ∩ U_a = ∅. T(a) = (htrFrom(a) ∪ trFrom(U_a)) ∩ U. A_S = {a allowed : T(a) ⊆ S}.
// Maximal good set: S_0 = U, S_{k+1} = {w in S_k : e_w in rowspace M[A_{S_k}, U]} until stable.
template <class F>
void edgewise_run(const F& f, const Graph& g, u64 seed, EdgewiseResult& res, bool par) {
  const int n = g.n, W = g.W;
  const MMatrix<F> mm = compute_M(f, g, seed, par);
  res.edge_solved.assign(size_t(g.n_dir), 0);
  res.edge_step.assign(size_t(g.n_dir), -1);
  res.node_solved.assign(n, 0);
  res.steps.clear();
  res.rounds = 0;
  res.tests = 0;
  if (n == 0) return;
  // trFrom(u) = union of htrFrom(x) over the ancestors x of u (u included); per SCC, in topological
  // order (decreasing Tarjan id): tr(C) = ⋃_{x in C} htrFrom(x) ∪ ⋃_{p -> C} tr(scc(p)).
  std::vector<u64> tr(size_t(n) * W, 0);
  {
    const int nc = g.nscc;
    const std::vector<i32>& c_off = g.scc_off;
    const std::vector<i32>& c_mem = g.scc_mem;
    std::vector<u64> tc(size_t(nc) * W, 0);
    for (int c = nc - 1; c >= 0; --c) {
      u64* t = tc.data() + size_t(c) * W;
      for (i32 i = c_off[c]; i < c_off[c + 1]; ++i) {
        const i32 x = c_mem[i];
        const u64* hx = g.htr_row(x);
        for (int w = 0; w < W; ++w) t[w] |= hx[w];
        for (i32 e = g.pa_off[x]; e < g.pa_off[x + 1]; ++e) {
          const i32 pc = g.scc[g.pa[e]];
          if (pc == c) continue;
          const u64* t2 = tc.data() + size_t(pc) * W;
          for (int w = 0; w < W; ++w) t[w] |= t2[w];
        }
      }
    }
    for (int u = 0; u < n; ++u) {
      const u64* t = tc.data() + size_t(g.scc[u]) * W;
      std::copy(t, t + W, tr.data() + size_t(u) * W);
    }
  }
  // unsolved parents (with edge ids), masks
  std::vector<std::vector<i32>> U(n), Ue(n);
  std::vector<u64> Um(size_t(n) * W, 0), Rm(size_t(n) * W, 0);
  auto refresh = [&](int a) {
    u64* um = Um.data() + size_t(a) * W;
    u64* rm = Rm.data() + size_t(a) * W;
    std::fill(um, um + W, 0);
    const u64* h = g.htr_row(a);
    std::copy(h, h + W, rm);
    for (i32 u : U[a]) {
      sb(um, u);
      const u64* t = tr.data() + size_t(u) * W;
      for (int w = 0; w < W; ++w) rm[w] |= t[w];
    }
  };
  for (int v = 0; v < n; ++v) {
    for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) {
      U[v].push_back(g.pa[e]);
      Ue[v].push_back(g.pa_eid[e]);
    }
    refresh(v);
  }
  Basis B;
  Scratch sc;
  std::vector<i32> allowed, cols;
  std::vector<u64> S(W), S2(W);
  u64 call = 0;
  for (;;) {
    bool changed = false;
    for (int v = 0; v < n; ++v) {
      const int k = int(U[v].size());
      if (k == 0) continue;
      const u64* um = Um.data() + size_t(v) * W;
      const u64* hv = g.htr_row(v);
      const u64* sv = g.sib_row(v);
      allowed.clear();
      for (int a = 0; a < n; ++a) {
        if (a == v || tb(sv, a)) continue;
        const u64* ha = g.htr_row(a);
        const u64* ua = Um.data() + size_t(a) * W;
        bool reach = false, blocked = false;
        for (int w = 0; w < W; ++w) {
          reach = reach || (ha[w] & um[w]);
          blocked = blocked || (hv[w] & ua[w]);
        }
        if (reach && !blocked) allowed.push_back(a);
      }
      if (allowed.empty()) continue;
      cols.resize(k);
      for (int j = 0; j < k; ++j) cols[j] = mm.colidx[U[v][j]];
      sc.ensure(k);
      std::copy(um, um + W, S.begin());
      bool good = false;
      for (;;) {
        B.reset(k, mix_seed(seed, 0xED6EULL, call++));
        for (i32 a : allowed) {
          const u64* ra = Rm.data() + size_t(a) * W;
          bool ok = true;
          for (int w = 0; w < W; ++w)
            if (ra[w] & um[w] & ~S[w]) {
              ok = false;
              break;
            }
          if (!ok) continue;
          const u64* row = mm.M.data() + size_t(a) * mm.m;
          for (int t = 0; t < k; ++t) sc.x[t] = row[cols[B.perm[t]]];
          ++res.tests;
          if (B.insert(f, sc.x.data(), a, sc) == 2) break;
        }
        std::fill(S2.begin(), S2.end(), 0);
        bool any = false;
        for (int i = 0; i < B.r; ++i)
          if (B.row_is_unit(i)) {
            sb(S2.data(), U[v][B.pivot_column(i)]);
            any = true;
          }
        if (!any) break;
        if (S2 == S) {
          good = true;
          break;
        }
        S.swap(S2);
      }
      if (!good) continue;
      // identify S -> v from the pivot rows
      EdgewiseStep step;
      step.node = v;
      step.Y = B.src;
      std::sort(step.Y.begin(), step.Y.end());
      const i32 sid = i32(res.steps.size());
      std::vector<i32> nu, nue;
      for (int j = 0; j < k; ++j) {
        if (tb(S.data(), U[v][j])) {
          step.S.push_back(U[v][j]);
          res.edge_solved[Ue[v][j]] = 1;
          res.edge_step[Ue[v][j]] = sid;
        } else {
          nu.push_back(U[v][j]);
          nue.push_back(Ue[v][j]);
        }
      }
      res.steps.push_back(std::move(step));
      U[v].swap(nu);
      Ue[v].swap(nue);
      refresh(v);
      changed = true;
    }
    if (!changed) break;
    ++res.rounds;
  }
  for (int v = 0; v < n; ++v) res.node_solved[v] = U[v].empty() ? 1 : 0;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
HtcResult htc_identify(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                       int64_t n_bi, const HtcOptions& opt) {
  validate(n, directed, n_dir, bidirected, n_bi);
  if (opt.method == Method::kRandomized) checked_prime(opt.prime);
  const bool par = use_threads(n, n_dir, n_bi);
  const Graph g = build_graph(n, directed, n_dir, bidirected, n_bi, par);
  if (opt.tian) return htc_tian(g, opt, par);
  return htc_plain(g, opt, par);
}

EdgewiseResult edgewise_identify(int32_t n, const int32_t* directed, int64_t n_dir,
                                 const int32_t* bidirected, int64_t n_bi, const HtcOptions& opt) {
  validate(n, directed, n_dir, bidirected, n_bi);
  const u64 p = checked_prime(opt.prime);
  const bool par = use_threads(n, n_dir, n_bi);
  const Graph g = build_graph(n, directed, n_dir, bidirected, n_bi, par);
  EdgewiseResult res;
  if (p == kMersenne61)
    edgewise_run(FieldM61{}, g, opt.seed, res, par);
  else
    edgewise_run(FieldGeneric{p}, g, opt.seed, res, par);
  return res;
}

std::vector<HtcResult> htc_identify_many(const std::vector<int32_t>& ns, const int32_t* directed,
                                         const int64_t* dir_offsets, const int32_t* bidirected,
                                         const int64_t* bi_offsets, const HtcOptions& opt) {
  const i64 G = i64(ns.size());
  std::vector<HtcResult> out(static_cast<size_t>(G));
  if (G == 0) return out;
  if (dir_offsets == nullptr || bi_offsets == nullptr)
    throw std::invalid_argument("htc_identify_many: null offsets");
  for (i64 i = 0; i < G; ++i) {
    if (dir_offsets[i] < 0 || dir_offsets[i + 1] < dir_offsets[i] || bi_offsets[i] < 0 ||
        bi_offsets[i + 1] < bi_offsets[i])
      throw std::invalid_argument("htc_identify_many: offsets must start >= 0 and be nondecreasing");
  }
  std::vector<std::exception_ptr> errs(static_cast<size_t>(G));
FASTNIPS_HTC_OMP(omp parallel for schedule(dynamic))
  for (i64 i = 0; i < G; ++i) {
    try {
      const i64 d0 = dir_offsets[i], d1 = dir_offsets[i + 1];
      const i64 b0 = bi_offsets[i], b1 = bi_offsets[i + 1];
      out[size_t(i)] = htc_identify(ns[size_t(i)], directed ? directed + 2 * d0 : nullptr, d1 - d0,
                                    bidirected ? bidirected + 2 * b0 : nullptr, b1 - b0, opt);
    } catch (...) {
      errs[size_t(i)] = std::current_exception();
    }
  }
  for (auto& e : errs)
    if (e) std::rethrow_exception(e);
  return out;
}

}  // namespace fastnips::causal
