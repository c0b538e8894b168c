// The trek-separation search of one edge j -> i (trek.h), candidate for candidate as _ref_trek.py:
//   k = 1: the first four s with a_s != 0 and b_s = 0 (S = {s}, T = {}).
//   k = 2, 3: for every target set T of k-1 pool nodes (ascending combinations),
//     * a row s0 with Sigma_{s0,T} = 0, b_s0 = 0, a_s0 != 0 (the first) completes the first k-1 rows (in
//       ascending order) with nonsingular Sigma_{.,T} to S;
//     * every (k-1)-row set P with nonsingular Sigma_{P,T} solves mu = Sigma_{P,T}^{-1} b_P; the row sets that
//       share (T, mu) with at least one other form a group Z (their union); the first k rows of Z (ascending)
//       that raise the rank of [Sigma_{Z,T}, a_Z] form S when there are k of them.
//   Every candidate (S, T) is confirmed by two exact max-flows (SEMID getTrekSystem): size |S| onto
//   T ∪ {j}, size < |S| onto T ∪ {i} without the removed edges into i.
// Arithmetic mod q = 2^31 - 1 (Mersenne folding); the inverses of one target set's determinants by one batch
// inversion.
#include "causal/trek.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "causal/mixed_graph.h"
#include "causal/unitflow.h"
#include "common/interrupt.h"

namespace fastnips::causal {

using namespace detail;

namespace {

constexpr u64 kQ = kTrekPrime;

// Residues in [0, q); q = 2^31 - 1 is a Mersenne prime, so x mod q folds the bits above 31 back in.
u64 fold(u64 x) {
  x = (x & kQ) + (x >> 31);
  x = (x & kQ) + (x >> 31);
  return x >= kQ ? x - kQ : x;
}
u64 mulq(u64 x, u64 y) { return fold(x * y); }
u64 subq(u64 x, u64 y) { return x >= y ? x - y : x + kQ - y; }
u64 invq(u64 x) {
  u64 r = 1, e = kQ - 2;
  for (; e; e >>= 1, x = mulq(x, x))
    if (e & 1) r = mulq(r, x);
  return r;
}

// The trek network of one graph (SEMID getTrekSystem; sides per node: left in/out, right in/out), built
// once per edge query: right sides may not use u -> avoid_head for u with avoid_tail[u]. Source arcs
// s -> L_in(a) and target arcs R_out(b) -> t exist for every node, closed until a query opens them.
struct TrekNet {
  FlowNet net;
  std::vector<i32> src, tgt;
  TrekNet(const Graph& g, const std::vector<uint8_t>* avoid_tail, int avoid_head)
      : net(2 + 4 * g.n), src(size_t(g.n)), tgt(size_t(g.n)) {
    const int n = g.n;
    auto node = [n](int side, int v) { return 2 + side * n + v; };
    for (int v = 0; v < n; ++v) {
      src[v] = net.arc(0, node(0, v), 0);
      tgt[v] = net.arc(node(3, v), 1, 0);
      net.arc(node(0, v), node(1, v));
      net.arc(node(2, v), node(3, v));
      net.arc(node(1, v), node(2, v));
      for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) net.arc(node(1, v), node(0, g.pa[e]));
      for (i32 e = g.sb_off[v]; e < g.sb_off[v + 1]; ++e) net.arc(node(1, v), node(2, g.sib[e]));
      for (i32 e = g.ch_off[v]; e < g.ch_off[v + 1]; ++e) {
        const i32 w = g.ch[e];
        if (!(avoid_tail && w == avoid_head && (*avoid_tail)[v])) net.arc(node(3, v), node(2, w));
      }
    }
  }
  // Largest trek system without sided intersection from S onto targets.
  int size(const std::vector<i32>& S, const std::vector<i32>& targets) {
    net.cap = net.base;
    for (i32 a : S) net.cap[src[a]] = 1;
    for (i32 b : targets) net.cap[tgt[b]] = 1;
    return net.max_flow(0, 1, int(targets.size()));
  }
};

// Greedy row basis over F_q: the indices of the rows (in order) that raise the rank, at most `need`.
std::vector<int> greedy_rows(const std::vector<std::vector<u64>>& rows, int need) {
  std::vector<std::pair<int, std::vector<u64>>> basis;
  std::vector<int> chosen;
  for (size_t r = 0; r < rows.size() && int(chosen.size()) < need; ++r) {
    std::vector<u64> x = rows[r];
    for (const auto& [c, bv] : basis) {
      const u64 f = x[c];
      if (f)
        for (size_t k = 0; k < x.size(); ++k) x[k] = subq(x[k], mulq(f, bv[k]));
    }
    int piv = -1;
    for (size_t k = 0; k < x.size() && piv < 0; ++k)
      if (x[k]) piv = int(k);
    if (piv < 0) continue;
    const u64 inv = invq(x[piv]);
    for (auto& v : x) v = mulq(v, inv);
    basis.emplace_back(piv, std::move(x));
    chosen.push_back(int(r));
  }
  return chosen;
}

struct Search {
  const Graph& g;
  const TrekEdgeQuery& q;
  TrekNet& plain;  // the trek network
  TrekNet& cut;    // without the removed edges into i on the right sides
  u64 sig(int s, int t) const { return u64(q.sigma[size_t(s) * g.n + t]); }

  bool confirm(std::vector<i32> S, const std::vector<i32>& T) const {
    std::sort(S.begin(), S.end());
    std::vector<i32> tj(T), ti(T);
    tj.push_back(q.j);
    ti.push_back(q.i);
    const int k = int(S.size());
    return plain.size(S, tj) == k && cut.size(S, ti) < k;
  }
  std::vector<u64> row(int s, const std::vector<i32>& T, bool with_a) const {
    std::vector<u64> x;
    for (i32 t : T) x.push_back(sig(s, t));
    if (with_a) x.push_back(u64(q.a[s]));
    return x;
  }
  bool zero_row_candidate(const std::vector<i32>& T) const;
  bool grouped_candidates(const std::vector<i32>& T) const;
};

bool Search::zero_row_candidate(const std::vector<i32>& T) const {
  const int n = g.n;
  for (int s0 = 0; s0 < n; ++s0) {
    if (q.b[s0] != 0 || q.a[s0] == 0) continue;
    bool zero = true;
    for (i32 t : T) zero = zero && sig(s0, t) == 0;
    if (!zero) continue;
    std::vector<std::vector<u64>> rows;
    for (int s = 0; s < n; ++s) rows.push_back(row(s, T, false));
    const auto chosen = greedy_rows(rows, int(T.size()));
    if (int(chosen.size()) < int(T.size())) return false;
    std::vector<i32> S(chosen.begin(), chosen.end());
    S.push_back(s0);
    return confirm(S, T);
  }
  return false;
}

// The (T, mu) groups of the (k-1)-row sets (k-1 = |T| = 1 or 2), each checked as in the file comment.
bool Search::grouped_candidates(const std::vector<i32>& T) const {
  const int n = g.n, m = int(T.size());
  std::vector<std::pair<i32, i32>> P;  // row sets (second = -1 for one row), ascending as the reference's
  std::vector<u64> det;
  std::vector<i32> live;  // rows not zero on T: the only ones in a nonsingular row set (sparse graphs: few)
  for (int r = 0; r < n; ++r)
    if (sig(r, T[0]) || (m == 2 && sig(r, T[1]))) live.push_back(r);
  for (size_t x = 0; x < live.size(); ++x) {
    const i32 r0 = live[x];
    if (m == 1) {
      P.emplace_back(r0, -1);
      det.push_back(sig(r0, T[0]));
      continue;
    }
    for (size_t y = x + 1; y < live.size(); ++y) {
      const i32 r1 = live[y];
      const u64 d = subq(mulq(sig(r0, T[0]), sig(r1, T[1])), mulq(sig(r1, T[0]), sig(r0, T[1])));
      if (d) {
        P.emplace_back(r0, r1);
        det.push_back(d);
      }
    }
  }
  const size_t np = P.size();
  if (np < 2) return false;
  std::vector<u64> pre(np + 1, 1);  // batch inversion: one Fermat power for all determinants
  for (size_t k = 0; k < np; ++k) pre[k + 1] = mulq(pre[k], det[k]);
  u64 inv = invq(pre[np]);
  std::vector<std::pair<u64, i32>> key(np);
  for (size_t k = np; k-- > 0;) {
    const u64 dinv = mulq(inv, pre[k]);
    inv = mulq(inv, det[k]);
    const auto [r0, r1] = P[k];
    if (m == 1) {
      key[k] = {mulq(u64(q.b[r0]), dinv), i32(k)};
    } else {
      const u64 b0 = u64(q.b[r0]), b1 = u64(q.b[r1]);
      const u64 mu0 = mulq(subq(mulq(b0, sig(r1, T[1])), mulq(b1, sig(r0, T[1]))), dinv);
      const u64 mu1 = mulq(subq(mulq(sig(r0, T[0]), b1), mulq(sig(r1, T[0]), b0)), dinv);
      key[k] = {mu0 * kQ + mu1, i32(k)};
    }
  }
  std::sort(key.begin(), key.end());
  for (size_t st = 0; st < np;) {
    size_t end = st + 1;
    while (end < np && key[end].first == key[st].first) ++end;
    if (end - st >= 2) {
      std::vector<i32> Z;
      for (size_t k = st; k < end; ++k) {
        Z.push_back(P[size_t(key[k].second)].first);
        if (m == 2) Z.push_back(P[size_t(key[k].second)].second);
      }
      std::sort(Z.begin(), Z.end());
      Z.erase(std::unique(Z.begin(), Z.end()), Z.end());
      std::vector<std::vector<u64>> rows;
      for (i32 s : Z) rows.push_back(row(s, T, true));
      const auto chosen = greedy_rows(rows, m + 1);
      if (int(chosen.size()) == m + 1) {
        std::vector<i32> S;
        for (int c : chosen) S.push_back(Z[size_t(c)]);
        if (confirm(S, T)) return true;
      }
    }
    st = end;
  }
  return false;
}

}  // namespace

bool trek_edge_identified(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                          int64_t n_bi, const TrekEdgeQuery& q) {
  validate(n, directed, n_dir, bidirected, n_bi);
  const Graph g = build_graph(n, directed, n_dir, bidirected, n_bi, false, false);
  std::vector<uint8_t> avoid(size_t(n), 0);  // tails of the removed edges into i
  for (i32 p : q.removed) avoid[p] = 1;
  TrekNet plain(g, nullptr, -1), cut(g, &avoid, q.i);
  const Search s{g, q, plain, cut};
  int ones = 0;  // k = 1: the first four rows with a_s != 0 and b_s = 0
  for (int v = 0; v < n && ones < 4; ++v)
    if (q.a[v] != 0 && q.b[v] == 0) {
      ++ones;
      if (s.confirm({v}, {})) return true;
    }
  const int np = int(q.pool.size());
  for (int k = 2; k <= q.max_k; ++k) {
    for (int x = 0; x < np; ++x) {
      for (int y = (k == 3 ? x + 1 : np - 1); y < np; ++y) {  // T = {pool[x]} or {pool[x], pool[y]}
        check_interrupt();
        std::vector<i32> T{q.pool[size_t(x)]};
        if (k == 3) T.push_back(q.pool[size_t(y)]);
        if (s.zero_row_candidate(T) || s.grouped_candidates(T)) return true;
      }
    }
  }
  return false;
}

}  // namespace fastnips::causal
