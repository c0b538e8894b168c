// The LF-HTC fixpoint (lfhtc.h). Node v (observed parents P, unsolved) is solved when for some set L of
// controlled latent nodes (those with >= 4 children) and some Z ⊆ (S ∩ ch(L)) \ ({v} ∪ P), |Z| = |L|
// (S = solved nodes), with H = latent parents of {v} ∪ Z outside L,
//   Y = observed \ (((de({v} ∪ Z) ∪ de(H)) \ S) ∪ ch(H) ∪ Z ∪ {v})
// reaches P ∪ Z by a trek system without sided intersection whose left sides use latent edges only and
// whose right sides enter Z by no edge between observed nodes (one exact max-flow per (L, Z)).
// The criterion is monotone in S (a larger S only grows the Z pools and Y), so its fixpoint does not depend
// on the order nodes are tried in: SEMID solves the first solvable node and restarts; here every sweep
// goes on after a solved node (the same solved set, fewer sweeps), and rounds counts the solved nodes as
// SEMID's steps do.
#include "causal/lfhtc.h"

#include <algorithm>
#include <string>
#include <vector>

#include "causal/mixed_graph.h"
#include "causal/unitflow.h"
#include "common/interrupt.h"

namespace fastnips::causal {

using namespace detail;

namespace {

// The trek network of the latent digraph (sides per node: left in/out, right in/out; as trek.cpp's, no
// bidirected edges): left sides go up latent edges only; the right arcs between observed nodes are listed
// by head, so that a query can close those into Z.
struct LatentTrekNet {
  FlowNet net;
  std::vector<i32> src, tgt, in_off, in_arc, through;  // through: per observed node, its 3 inner arcs
  std::vector<uint8_t> is_parent;
  LatentTrekNet(const Graph& g, int n_obs)
      : net(2 + 4 * g.n), src(size_t(n_obs)), tgt(size_t(n_obs)), in_off(size_t(n_obs) + 1, 0),
        through(size_t(3) * n_obs), is_parent(size_t(n_obs), 0) {
    const int N = g.n;
    auto node = [N](int side, int v) { return 2 + side * N + v; };
    std::vector<std::pair<i32, i32>> obs_arcs;  // (head, arc)
    for (int v = 0; v < N; ++v) {
      if (v < n_obs) {
        src[v] = net.arc(0, node(0, v), 0);
        tgt[v] = net.arc(node(3, v), 1, 0);
      }
      const i32 left = net.arc(node(0, v), node(1, v)), right = net.arc(node(2, v), node(3, v)),
                top = net.arc(node(1, v), node(2, v));
      if (v < n_obs) {
        through[size_t(3) * v] = left;
        through[size_t(3) * v + 1] = top;
        through[size_t(3) * v + 2] = right;
      }
      for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e)
        if (g.pa[e] >= n_obs) net.arc(node(1, v), node(0, g.pa[e]));
      for (i32 e = g.ch_off[v]; e < g.ch_off[v + 1]; ++e) {
        const i32 w = g.ch[e], a = net.arc(node(3, v), node(2, w));
        if (v < n_obs) obs_arcs.emplace_back(w, a);
      }
    }
    for (const auto& [w, a] : obs_arcs) ++in_off[size_t(w) + 1];
    for (int w = 0; w < n_obs; ++w) in_off[w + 1] += in_off[w];
    in_arc.resize(obs_arcs.size());
    std::vector<i32> fill(in_off.begin(), in_off.end() - 1);
    for (const auto& [w, a] : obs_arcs) in_arc[size_t(fill[size_t(w)]++)] = a;
  }
  // Whether the sources Y reach every target (P ∪ Z) with the observed right arcs into Z closed.
  bool reaches(const std::vector<i32>& Y, const std::vector<i32>& P, const std::vector<i32>& Z) {
    net.cap = net.base;
    for (i32 a : Y) net.cap[size_t(src[a])] = 1;
    for (i32 b : P) net.cap[size_t(tgt[b])] = 1;
    for (i32 z : Z) {
      net.cap[size_t(tgt[z])] = 1;
      for (i32 k = in_off[z]; k < in_off[z + 1]; ++k) net.cap[size_t(in_arc[size_t(k)])] = 0;
    }
    // A parent that is a source reaches itself (the trek of one node): those paths first, the rest by
    // augmenting paths (which may reroute them).
    int flow = 0;
    for (i32 b : P) is_parent[size_t(b)] = 1;
    for (i32 a : Y)
      if (is_parent[size_t(a)]) {
        for (i32 e : {src[a], through[size_t(3) * a], through[size_t(3) * a + 1], through[size_t(3) * a + 2], tgt[a]})
          net.push(e);
        ++flow;
      }
    for (i32 b : P) is_parent[size_t(b)] = 0;
    const int need = int(P.size() + Z.size());
    return net.max_flow(0, 1, need, flow) == need;
  }
};

// Visits the k-subsets of items (ascending index combinations) until f returns true.
template <class F>
bool any_subset(const std::vector<i32>& items, int k, F&& f) {
  const int m = int(items.size());
  if (k > m) return false;
  std::vector<int> idx(static_cast<size_t>(k));
  for (int x = 0; x < k; ++x) idx[x] = x;
  std::vector<i32> pick(static_cast<size_t>(k));
  while (true) {
    for (int x = 0; x < k; ++x) pick[x] = items[size_t(idx[x])];
    if (f(pick)) return true;
    int x = k - 1;
    while (x >= 0 && idx[x] == m - k + x) --x;
    if (x < 0) return false;
    ++idx[x];
    for (int y = x + 1; y < k; ++y) idx[y] = idx[y - 1] + 1;
  }
}

// Whether the k targets Z can take k distinct tops in L (z's top is a latent parent of z in L): necessary, as
// a right side enters z by a latent edge h -> z only (the observed ones are closed), so its trek is
// y <- h -> z with h its top, and tops are on the (vertex-disjoint) right sides. Kuhn's matching, |L| <= 64.
bool tops_match(const std::vector<u64>& adj /* per z: bits of L's positions */) {
  const int k = int(adj.size());
  std::vector<int> owner(size_t(k), -1);
  for (int z = 0; z < k; ++z) {
    u64 seen = 0;
    auto augment = [&](auto&& self, int x) -> bool {
      for (u64 m = adj[size_t(x)] & ~seen; m; m &= m - 1) {
        const int h = __builtin_ctzll(m);
        seen |= u64(1) << h;
        if (owner[size_t(h)] < 0 || self(self, owner[size_t(h)])) {
          owner[size_t(h)] = x;
          return true;
        }
      }
      return false;
    };
    if (!augment(augment, z)) return false;
  }
  return true;
}

struct Lfhtc {
  const Graph& g;   // observed 0..n-1, latent n..N-1 (adjacency only)
  const Graph& go;  // the observed graph alone, with its de() rows (htr: no bidirected edges)
  int n, W;         // W words over the observed nodes
  LatentTrekNet net;
  std::vector<i32> controlled;  // latent nodes with >= 4 children, ascending
  std::vector<u64> chm, dem;    // per latent h (row h - n): ch(h) and de(h) = ⋃ de(c) over its children c
  std::vector<u64> solved, obs, base_reach, base_banned, reach, banned;  // W words over the observed nodes
  std::vector<int> l_pos;  // position of a latent node in L, -1 outside L
  std::vector<i32> Y;

  Lfhtc(const Graph& g_, const Graph& go_)
      : g(g_), go(go_), n(go_.n), W(go_.W), net(g_, go_.n), chm(size_t(g_.n - go_.n) * go_.W, 0), dem(chm),
        solved(size_t(W), 0), obs(size_t(W), 0), base_reach(size_t(W)), base_banned(size_t(W)), reach(size_t(W)),
        banned(size_t(W)), l_pos(size_t(g_.n), -1) {
    for (int h = n; h < g.n; ++h) {
      if (g.ch_off[h + 1] - g.ch_off[h] >= 4) controlled.push_back(h);
      u64* c = chm.data() + size_t(h - n) * W;
      u64* d = dem.data() + size_t(h - n) * W;
      for (i32 f = g.ch_off[h]; f < g.ch_off[h + 1]; ++f) {
        sb(c, g.ch[f]);
        const u64* r = go.htr_row(g.ch[f]);
        for (int w = 0; w < W; ++w) d[w] |= r[w];
      }
    }
    for (int v = 0; v < n; ++v) sb(obs.data(), v);
  }
  void or_row(std::vector<u64>& t, const u64* r) const {
    for (int w = 0; w < W; ++w) t[size_t(w)] |= r[w];
  }
  // x's share of the banned set: x, de(x), and ch(h) and de(h) of its latent parents h outside L.
  void add_node(std::vector<u64>& rch, std::vector<u64>& ban, int x) const {
    or_row(rch, go.htr_row(x));  // no bidirected edges: htrFrom(x) = de(x), x included
    sb(ban.data(), x);
    for (i32 e = g.pa_off[x]; e < g.pa_off[x + 1]; ++e) {
      const i32 h = g.pa[e];
      if (h < n || l_pos[size_t(h)] >= 0) continue;
      or_row(rch, dem.data() + size_t(h - n) * W);
      or_row(ban, chm.data() + size_t(h - n) * W);
    }
  }
  // Observed nodes outside (ban ∪ (rch \ S)).
  int free_count(const std::vector<u64>& rch, const std::vector<u64>& ban) const {
    int c = 0;
    for (int w = 0; w < W; ++w)
      c += __builtin_popcountll(obs[size_t(w)] & ~(ban[size_t(w)] | (rch[size_t(w)] & ~solved[size_t(w)])));
    return c;
  }
  // The (L, Z) query of the file comment; base_* hold v's share for this L.
  bool query(const std::vector<i32>& P, const std::vector<i32>& Z) {
    check_interrupt();
    if (Z.size() <= 64) {  // the tops precheck (a pruning only: larger sets go straight to the flow)
      std::vector<u64> adj(Z.size(), 0);
      for (size_t x = 0; x < Z.size(); ++x)
        for (i32 e = g.pa_off[Z[x]]; e < g.pa_off[Z[x] + 1]; ++e)
          if (g.pa[e] >= n && l_pos[size_t(g.pa[e])] >= 0) adj[x] |= u64(1) << l_pos[size_t(g.pa[e])];
      if (!tops_match(adj)) return false;
    }
    reach = base_reach;
    banned = base_banned;
    for (i32 z : Z) add_node(reach, banned, z);
    const size_t need = P.size() + Z.size();
    if (size_t(free_count(reach, banned)) < need) return false;
    Y.clear();
    for (int w = 0; w < W; ++w)
      for (u64 m = obs[size_t(w)] & ~(banned[size_t(w)] | (reach[size_t(w)] & ~solved[size_t(w)])); m; m &= m - 1)
        Y.push_back(i32(64 * w + __builtin_ctzll(m)));
    return net.reaches(Y, P, Z);
  }
  bool solves(int v) {
    std::vector<i32> P;
    for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e)
      if (g.pa[e] < n) P.push_back(g.pa[e]);
    const int nc = int(controlled.size());
    for (int k = 0; k <= nc; ++k) {
      const bool found = any_subset(controlled, k, [&](const std::vector<i32>& L) {
        check_interrupt();  // the per-L bound may skip every query of a long run
        for (int x = 0; x < k; ++x) l_pos[size_t(L[size_t(x)])] = x;
        std::fill(base_reach.begin(), base_reach.end(), 0);
        std::fill(base_banned.begin(), base_banned.end(), 0);
        add_node(base_reach, base_banned, v);
        bool ok = false;
        // Z only grows the banned set: v's share alone must leave room for |P| + k sources
        if (free_count(base_reach, base_banned) >= int(P.size()) + k) {
          std::vector<i32> pool;  // (S ∩ ch(L)) \ ({v} ∪ P), ascending
          for (i32 h : L)
            for (i32 f = g.ch_off[h]; f < g.ch_off[h + 1]; ++f) {
              const i32 c = g.ch[f];
              if (c != v && tb(solved.data(), c) && std::find(P.begin(), P.end(), c) == P.end()) pool.push_back(c);
            }
          std::sort(pool.begin(), pool.end());
          pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
          ok = any_subset(pool, k, [&](const std::vector<i32>& Z) { return query(P, Z); });
        }
        for (i32 h : L) l_pos[size_t(h)] = -1;
        return ok;
      });
      if (found) return true;
    }
    return false;
  }
};

}  // namespace

AncestralResult lfhtc_identify(int32_t n, int32_t n_latent, const int32_t* directed, int64_t n_dir,
                               const int32_t* latent, int64_t n_lat) {
  if (n < 0 || n_latent < 0) refuse("lfhtc: n and n_latent must be >= 0");
  if (i64(n) + n_latent > i64(0x7FFFFFFF) / 4 - 2) refuse("lfhtc: too many nodes");  // the trek network's 4N + 2
  if (n_lat < 0 || n_dir < 0 || n_dir + n_lat > i64(0x7FFFFFFF)) refuse("lfhtc: edge counts out of range");
  if (n_lat > 0 && latent == nullptr) refuse("lfhtc: null edge buffer");
  validate(n, directed, n_dir, nullptr, 0);
  std::vector<i64> keys(static_cast<size_t>(n_lat));
  std::vector<i32> used(static_cast<size_t>(n_latent), -1);  // latent -> node id (factors with a child only)
  int N = n;
  for (i64 e = 0; e < n_lat; ++e) {
    const i32 h = latent[2 * e], c = latent[2 * e + 1];
    if (h < 0 || h >= n_latent || c < 0 || c >= n)
      refuse("lfhtc: latent edge " + std::to_string(e) + " has a node id out of range");
    keys[size_t(e)] = i64(h) * n + c;
    if (used[size_t(h)] < 0) used[size_t(h)] = N++;
  }
  std::sort(keys.begin(), keys.end());
  if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) refuse("lfhtc: duplicate latent edge");
  std::vector<i32> edges(directed, directed + 2 * n_dir);
  for (i64 e = 0; e < n_lat; ++e) {
    edges.push_back(used[size_t(latent[2 * e])]);
    edges.push_back(latent[2 * e + 1]);
  }
  // bitsets over the observed nodes only (the observed graph's de() rows): memory O((n + factors) n / 64)
  const Graph g = build_graph(N, edges.data(), n_dir + n_lat, nullptr, 0, false, false);
  const Graph go = build_graph(n, directed, n_dir, nullptr, 0, false, true);
  Lfhtc s(g, go);
  AncestralResult r;
  r.node_solved.assign(size_t(n), 0);
  for (int v = 0; v < n; ++v) {
    if (go.npa(v) == 0) {  // no observed parent
      r.node_solved[size_t(v)] = 1;
      sb(s.solved.data(), v);
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int v = 0; v < n; ++v)
      if (!r.node_solved[size_t(v)] && s.solves(v)) {
        r.node_solved[size_t(v)] = 1;
        sb(s.solved.data(), v);
        ++r.rounds;
        changed = true;
      }
  }
  r.edge_solved = edges_of_nodes(r.node_solved, directed, n_dir);
  return r;
}

}  // namespace fastnips::causal
