// The mixed graph of the HTC solvers (mixed_graph.h): validation, CSR adjacency, Tarjan's SCCs and the
// htrFrom bitsets; the Tian c-component ids.
#include "causal/mixed_graph.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "common/status.h"

namespace fastnips::causal::detail {
namespace {

bool in_parallel() {
#ifdef _OPENMP
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}

void build_csr(int n, const std::vector<std::pair<i32, i32>>& key_eid, const std::vector<i32>& owner,
               std::vector<i32>& off, std::vector<i32>& adj, std::vector<i32>& eid) {
  // key_eid[e] = (neighbor, edge id), owner[e] = node whose list it belongs to. Two stable counting passes
  // (by neighbor, then by owner) leave every list sorted by (neighbor, input position): O(n + |E|), no sort.
  const size_t m = owner.size();
  std::vector<i32> koff(size_t(n) + 1, 0), by_key(m);
  for (const auto& ke : key_eid) ++koff[size_t(ke.first) + 1];
  for (int v = 0; v < n; ++v) koff[v + 1] += koff[v];
  for (size_t e = 0; e < m; ++e) by_key[size_t(koff[size_t(key_eid[e].first)]++)] = i32(e);
  off.assign(size_t(n) + 1, 0);
  for (i32 o : owner) ++off[size_t(o) + 1];
  for (int v = 0; v < n; ++v) off[v + 1] += off[v];
  adj.resize(m);
  eid.resize(m);
  std::vector<i32> pos(off.begin(), off.end() - 1);
  for (const i32 e : by_key) {
    const i32 p = pos[size_t(owner[size_t(e)])]++;
    adj[size_t(p)] = key_eid[size_t(e)].first;
    eid[size_t(p)] = key_eid[size_t(e)].second;
  }
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

// Parents, children and siblings of every node as sorted CSR lists with their input edge ids.
void build_adjacency(Graph& g, const i32* dir, const i32* bi) {
  const int n = g.n;
  const i64 nd = g.n_dir, nb = g.n_bi;
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

// The members of every SCC (scc_off, scc_mem), from g.scc.
void group_sccs(Graph& g) {
  const int n = g.n, nc = g.nscc;
  g.scc_off.assign(size_t(nc) + 1, 0);
  g.scc_mem.resize(n);
  for (int v = 0; v < n; ++v) ++g.scc_off[g.scc[v] + 1];
  for (int c = 0; c < nc; ++c) g.scc_off[c + 1] += g.scc_off[c];
  std::vector<i32> pos(g.scc_off.begin(), g.scc_off.end() - 1);
  for (int v = 0; v < n; ++v) g.scc_mem[pos[g.scc[v]]++] = v;
}

// htrFrom(v) = De(v) ∪ ⋃_{s in sib(v)} De(s), with De(C) (C an SCC, De includes C) computed as bitsets
// in reverse topological order of the condensation: O((n + |D| + |B|) n / 64).
void build_htr(Graph& g, bool par) {
  (void)par;
  const int n = g.n, W = g.W;
  const std::vector<u64> des = scc_closure(g, Along::kChildren, [](i32 x, u64* row) { sb(row, x); });
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

}  // namespace

bool use_threads(int64_t n, int64_t n_dir, int64_t n_bi) {
  return !in_parallel() && n >= 128 && (n + n_dir + n_bi) * n >= (int64_t(1) << 22);
}

void check_edge_counts(const i32* dir, i64 nd, const i32* bi, i64 nb) {
  if (nd < 0 || nb < 0) refuse("htc: edge counts must be >= 0");
  if (nd > i64(0x7FFFFFFF) || 2 * nb > i64(0x7FFFFFFF))
    refuse("htc: too many edges (at most 2^31-1 directed, 2^30-1 bidirected)");
  if ((nd > 0 && dir == nullptr) || (nb > 0 && bi == nullptr))
    refuse("htc: null edge buffer");
}

void check_edge_ends(int n, const i32* edges, i64 m, const char* kind) {
  for (i64 e = 0; e < m; ++e) {
    const i32 a = edges[2 * e], b = edges[2 * e + 1];
    if (a < 0 || a >= n || b < 0 || b >= n)
      refuse("htc: " + std::string(kind) + " edge " + std::to_string(e) + " has a node id out of range");
    if (a == b) refuse("htc: " + std::string(kind) + " self loop at node " + std::to_string(a));
  }
}

void validate(int n, const i32* dir, i64 nd, const i32* bi, i64 nb) {
  if (n < 0) refuse("htc: n must be >= 0");
  check_edge_counts(dir, nd, bi, nb);
  // Duplicates in O(n + |E|): the edges grouped by their first node (a counting pass), then one stamp per
  // second node (stamp[h] == t + 1: h already seen with t).
  std::vector<i32> off(size_t(n) + 1), other, stamp(size_t(n), 0);
  auto has_duplicate = [&](i64 m, auto&& ends) {
    std::fill(off.begin(), off.end(), 0);
    for (i64 e = 0; e < m; ++e) ++off[size_t(ends(e).first) + 1];
    for (int v = 0; v < n; ++v) off[v + 1] += off[v];
    other.resize(size_t(m));
    for (i64 e = 0; e < m; ++e) {
      const auto [t, h] = ends(e);
      other[size_t(off[size_t(t)]++)] = h;
    }
    for (int v = n; v > 0; --v) off[v] = off[v - 1];  // off[t] was advanced to the end of t's group
    off[0] = 0;
    std::fill(stamp.begin(), stamp.end(), 0);
    for (int t = 0; t < n; ++t)
      for (i32 k = off[t]; k < off[t + 1]; ++k) {
        if (stamp[size_t(other[size_t(k)])] == t + 1) return true;
        stamp[size_t(other[size_t(k)])] = t + 1;
      }
    return false;
  };
  check_edge_ends(n, dir, nd, "directed");
  if (has_duplicate(nd, [dir](i64 e) { return std::pair<i32, i32>(dir[2 * e], dir[2 * e + 1]); }))
    refuse("htc: duplicate directed edge");
  check_edge_ends(n, bi, nb, "bidirected");
  if (has_duplicate(nb, [bi](i64 e) { return std::minmax(bi[2 * e], bi[2 * e + 1]); }))
    refuse("htc: duplicate bidirected edge");
}

Graph build_graph(int n, const i32* dir, i64 nd, const i32* bi, i64 nb, bool par, bool bitsets) {
  Graph g;
  g.n = n;
  g.W = (n + 63) / 64;
  g.n_dir = nd;
  g.n_bi = nb;
  build_adjacency(g, dir, bi);
  if (!bitsets) {
    g.nscc = tarjan_scc(g, g.scc);
    group_sccs(g);
    return g;
  }
  const size_t NW = size_t(n) * g.W;
  g.htr.assign(NW, 0);
  g.sibm.assign(NW, 0);
  g.pam.assign(NW, 0);
  for (int v = 0; v < n; ++v) {
    for (i32 i = g.sb_off[v]; i < g.sb_off[v + 1]; ++i) sb(g.sibm.data() + size_t(v) * g.W, g.sib[i]);
    for (i32 i = g.pa_off[v]; i < g.pa_off[v + 1]; ++i) sb(g.pam.data() + size_t(v) * g.W, g.pa[i]);
  }
  g.nscc = tarjan_scc(g, g.scc);
  group_sccs(g);
  build_htr(g, par);
  return g;
}

std::vector<u64> rows_per_node(const Graph& g, const std::vector<u64>& scc_rows) {
  const int W = g.W;
  std::vector<u64> out(size_t(g.n) * W);
  for (int u = 0; u < g.n; ++u) {
    const u64* t = scc_rows.data() + size_t(g.scc[u]) * W;
    std::copy(t, t + W, out.data() + size_t(u) * W);
  }
  return out;
}

// The Tian component of every node (union-find over SCC members and bidirected endpoints; the root is the
// smallest member, so ids by smallest member come out ascending); *ncomp gets their number.
std::vector<i32> tian_component_ids(const Graph& g, int* ncomp) {
  const int n = g.n;
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
  std::vector<i32> first(g.nscc, -1);
  for (int v = 0; v < n; ++v) {
    if (first[g.scc[v]] < 0)
      first[g.scc[v]] = v;
    else
      unite(v, first[g.scc[v]]);
  }
  for (int v = 0; v < n; ++v)
    for (i32 e = g.sb_off[v]; e < g.sb_off[v + 1]; ++e) unite(v, g.sib[e]);
  std::vector<i32> id(n, -1), comp(n);
  int k = 0;
  for (int v = 0; v < n; ++v)
    if (find(v) == v) id[v] = k++;
  for (int v = 0; v < n; ++v) comp[v] = id[find(v)];
  *ncomp = k;
  return comp;
}

}  // namespace fastnips::causal::detail
